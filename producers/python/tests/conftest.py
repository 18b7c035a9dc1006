"""Shared by the client's tests. They import the package from ../src (no
install needed) and find the repository, the `dlbrain` binary and the servers
from the environment the system test scripts set:

  DLB_SOURCE_DIR   the repository (default: three levels up)
  DLBRAIN          the dlbrain binary (tests comparing with C skip without it)
  DLBRAIN_BROKERS  a Kafka broker with the pipeline's topics (broker tests)
  PGHOST, ...      the PostgreSQL the optimizer writes to (broker tests)
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

REPO = os.environ.get("DLB_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", "..", ".."))


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def dlbrain():
    path = os.environ.get("DLBRAIN")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("DLBRAIN (the dlbrain binary) is not set")
    return path


@pytest.fixture(scope="session")
def brokers():
    b = os.environ.get("DLBRAIN_BROKERS")
    if not b:
        pytest.skip("DLBRAIN_BROKERS is not set (run tests/system/17-python-client.sh)")
    return b


class Server:
    """A server process of a test: `dlbrain registry`, or the alias registry
    in front of it (tests/system/registry/alias_proxy.py); stopped and started
    again on the same port to play an outage."""

    def __init__(self, argv, port_of, log_path):
        self.argv, self.port_of, self.log_path = argv, port_of, log_path
        self.port = 0
        self.proc = None

    def start(self):
        import re
        import subprocess
        import time

        argv = [a.replace("{port}", str(self.port)) for a in self.argv]
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.port_of == "stdout":
                line = self.proc.stdout.readline()
                if line.strip().isdigit():
                    self.port = int(line)
                    return self
            else:
                with open(self.log_path) as f:
                    found = re.findall(self.port_of, f.read())
                if found:
                    self.port = int(found[-1])
                    return self
                time.sleep(0.1)
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"{argv[0]} did not start: see {self.log_path}")

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def log(self):
        with open(self.log_path) as f:
            return f.read()


@pytest.fixture(scope="session")
def dlbrain_registry(dlbrain, tmp_path_factory):
    """`dlbrain registry` serving envs dlbrain, pyreg, c2py and py2c (no PostgreSQL)."""
    log = str(tmp_path_factory.mktemp("registry") / "registry.log")
    srv = Server([dlbrain, "registry", "-a", "127.0.0.1:0",
                  "-X", "registry.envs=dlbrain,pyreg,c2py,py2c"],
                 r"Registry API \(read-only\) on http://127\.0\.0\.1:(\d+)/", log).start()
    yield srv
    srv.stop()


@pytest.fixture
def alias_registry(dlbrain_registry, tmp_path):
    """A registry that also serves plan v2 (catalog id 8) under id 1008, as one
    where another tool registered it; its log has one line per request."""
    proxy = os.path.join(REPO, "tests", "system", "registry", "alias_proxy.py")
    srv = Server([sys.executable, proxy, "{port}", dlbrain_registry.url, "1008", "8"], "stdout",
                 str(tmp_path / "alias.log")).start()
    yield srv
    srv.stop()
