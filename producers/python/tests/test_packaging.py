"""The package builds as a wheel that stands alone: schemas inside, importable
from the wheel file, dependencies declared."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy: an in-tree build leaves build/ and *.egg-info behind.
    src = tmp / "src"
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True)
    (whl,) = (tmp / "dist").glob("dlbrain_client-*.whl")
    return whl


def test_wheel_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    schemas = sorted(f for f in os.listdir(os.path.join(PKG, "src", "dlbrain_client", "schemas")))
    for f in schemas:
        assert f"dlbrain_client/schemas/{f}" in names
    assert "dlbrain_client/py.typed" in names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "Name: dlbrain-client" in text
    assert "Requires-Dist: confluent-kafka" in text and "Requires-Dist: fastavro" in text


def test_wheel_works_alone(wheel, repo):
    frame = os.path.join(repo, "tests", "fuzz", "corpus", "fuzz_codec", "fixture-plan-full.bin")
    code = (
        "import sys, dlbrain_client as d\n"
        f"assert d.__file__.startswith({str(wheel)!r}), d.__file__\n"
        f"t, rec = d.decode(open({frame!r}, 'rb').read())\n"
        "assert t == 'plan' and rec['actions'][0]['action'] == 'replace'\n"
        "assert d.encode(t, rec) == open(" + repr(frame) + ", 'rb').read()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(wheel))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd="/")
