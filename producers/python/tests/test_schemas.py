"""The package's copy of the schemas is the repository's, byte for byte."""

import os

from dlbrain_client import Catalog, default_catalog
from dlbrain_client.catalog import TOPICS

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "src", "dlbrain_client", "schemas")
FIX = "cp schemas/catalog.tsv schemas/*.avsc producers/python/src/dlbrain_client/schemas/"


def _files(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".avsc") or f == "catalog.tsv")


def test_same_files(repo):
    theirs = _files(os.path.join(repo, "schemas"))
    assert _files(SHIPPED) == theirs, f"the package's schemas differ from schemas/; run: {FIX}"


def test_same_bytes(repo):
    for name in _files(os.path.join(repo, "schemas")):
        with open(os.path.join(repo, "schemas", name), "rb") as a, open(os.path.join(SHIPPED, name), "rb") as b:
            assert a.read() == b.read(), f"{name} differs from schemas/{name}; run: {FIX}"


def test_catalog_ids(repo):
    shipped, theirs = default_catalog(), Catalog(os.path.join(repo, "schemas"))
    assert shipped.ids() == theirs.ids()
    assert shipped.types() == sorted(TOPICS)
    # The newest version of each type is what writers use (docs/events.md: Schema versions).
    assert {t: shipped.newest(t).id for t in shipped.types()} == {
        "job_event": 10, "runtime_sample": 11, "node_event": 3, "plan_request": 12, "plan": 8,
        "config_match": 6, "config_request": 9,
    }


def test_schemas_command_agrees(dlbrain):
    # `dlbrain schemas ID` prints the schema JSON the C side embedded.
    import json
    import subprocess

    table = subprocess.run([dlbrain, "schemas"], check=True, capture_output=True, text=True).stdout
    rows = [line.split() for line in table.splitlines()[1:] if line.strip()]
    assert [(int(r[0]), r[1], r[3] == "yes") for r in rows] == [
        (sid, default_catalog().by_id(sid).type, default_catalog().newest(default_catalog().by_id(sid).type).id == sid)
        for sid in default_catalog().ids()
    ]
    for sid in default_catalog().ids():
        out = subprocess.run([dlbrain, "schemas", str(sid)], check=True, capture_output=True, text=True).stdout
        with open(os.path.join(SHIPPED, default_catalog().by_id(sid).file), encoding="utf-8") as f:
            assert json.loads(out) == json.loads(f.read()), f"schema id {sid}"
