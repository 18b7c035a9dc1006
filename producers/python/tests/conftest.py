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
