"""The shared test vectors: tests/fuzz/corpus holds, for every fixture event of
the C tests (each type with and without its optional parts, old writer
versions, the pipeline fixture's lines), the frame the C codec wrote
(fuzz_codec/NAME.bin) and the event as JSON (fuzz_json/NAME.json), written by
tests/fuzz/seed_corpus.c. Python must write the same bytes for the JSON and
read the same values from the bytes."""

import glob
import json
import math
import os

import pytest

from dlbrain_client import DecodeError, decode, default_catalog, encode, from_json_line, normalize, peek
from dlbrain_client.codec import to_json_line


def _corpus(repo):
    base = os.path.join(repo, "tests", "fuzz", "corpus")
    pairs = []
    for j in sorted(glob.glob(os.path.join(base, "fuzz_json", "*.json"))):
        name = os.path.basename(j)[:-5]
        b = os.path.join(base, "fuzz_codec", name + ".bin")
        # Hash-named files are libFuzzer's own finds, not twins.
        if os.path.exists(b) and not all(c in "0123456789abcdef" for c in name):
            pairs.append((name, j, b))
    return pairs


REPO = os.environ.get("DLB_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PAIRS = _corpus(REPO)


def _read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def _within(want, got):
    """Every value of want is in got (got may hold more: defaults)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _within(v, got[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(map(_within, want, got))
    return want == got and type(want) in (type(got), int)


def test_corpus_is_there():
    names = {p[0] for p in PAIRS}
    types = {n.split("-")[1] for n in names if n.startswith("fixture-")}
    assert types == {"job_event", "runtime_sample", "node_event", "plan_request", "plan",
                     "config_match", "config_request"}
    assert {"fixture-plan-full-v1", "fixture-runtime_sample-full-v1", "fixture-runtime_sample-full-v2",
            "fixture-job_event-full-v1", "fixture-plan_request-full-v1"} <= names
    assert len(PAIRS) >= 30


@pytest.mark.parametrize("name,json_path,bin_path", PAIRS, ids=[p[0] for p in PAIRS])
def test_encode_equals_c(name, json_path, bin_path):
    typ, rec = from_json_line(_read(json_path))
    c_bytes = _read(bin_path, "rb")
    # The same schema id the C writer used (the newest, or the old one of a -v1 vector).
    assert encode(typ, rec, schema_id=peek(c_bytes)) == c_bytes
    if peek(c_bytes) == default_catalog().newest(typ).id:
        assert encode(typ, rec) == c_bytes


@pytest.mark.parametrize("name,json_path,bin_path", PAIRS, ids=[p[0] for p in PAIRS])
def test_decode_equals_json(name, json_path, bin_path):
    typ, rec = from_json_line(_read(json_path))
    c_bytes = _read(bin_path, "rb")
    got_type, got = decode(c_bytes)
    assert got_type == typ
    # Read with the newest schema: the JSON's fields, plus the defaults of what
    # an older writer lacks (actions [], pods[].speed None).
    assert got == normalize(typ, rec)
    assert _within(rec, got)
    assert set(got) == {f["name"] for f in default_catalog().newest(typ).schema["fields"]}
    # Read with the writer's own schema: exactly the JSON.
    _, own = decode(c_bytes, reader_schema_id=peek(c_bytes))
    assert own == normalize(typ, rec, schema_id=peek(c_bytes))
    # And back: what was read writes the same bytes.
    assert encode(typ, own, schema_id=peek(c_bytes)) == c_bytes


def test_old_writers_resolved():
    by_name = {p[0]: p for p in PAIRS}
    _, plan = decode(_read(by_name["fixture-plan-full-v1"][2], "rb"))
    assert plan["actions"] == [] and len(plan["pods"]) == 2
    _, rt = decode(_read(by_name["fixture-runtime_sample-full-v1"][2], "rb"))
    assert [p["speed"] for p in rt["pods"]] == [None, None, None]
    assert {(p["pod_ip"], p["namespace"], p["is_mixed"]) for p in rt["pods"]} == {("", "", False)}
    _, rt = decode(_read(by_name["fixture-runtime_sample-full-v2"][2], "rb"))
    assert [p["speed"] for p in rt["pods"]] == [None, 4.25, 8.5]
    assert [p["pod_ip"] for p in rt["pods"]] == ["", "", ""]
    _, rt = decode(_read(by_name["fixture-runtime_sample-full"][2], "rb"))
    assert [(p["pod_ip"], p["is_mixed"]) for p in rt["pods"]] == [
        ("10.0.0.10", False), ("10.0.0.11", False), ("10.0.0.12", True)]
    # A v2 plan read by a master that knows only v1 (reader schema id 5).
    _, v1 = decode(_read(by_name["fixture-plan-full"][2], "rb"), reader_schema_id=5)
    assert "actions" not in v1 and v1["plan_id"] == "plan-1"


def test_types_of_values():
    by_name = {p[0]: p for p in PAIRS}
    _, plan = decode(_read(by_name["fixture-plan-full"][2], "rb"))
    g = plan["groups"][0]
    assert type(g["count"]) is int and type(g["resource"]["cpu"]) is float
    assert type(g["resource"]["memory"]) is int and type(plan["event_time_ms"]) is int
    _, cm = decode(_read(by_name["fixture-config_match-full"][2], "rb"))
    # Map entries in wire order, which is the order C added them.
    assert list(cm["values"]) == ["ps.memory", "optimizer.flags"]
    assert json.loads(cm["values"]["optimizer.flags"]) == ["a", {"b": 1}]
    # job_event v2: a list of ints, a map in wire order, a bool, JSON texts as strings.
    _, job = decode(_read(by_name["fixture-job_event-full"][2], "rb"))
    assert job["model"]["kv_embedding_dims"] == [8, 16, 32]
    assert list(job["model"]["tensor_alloc_bytes"].items()) == [("embedding/user_id/part_0", 2**30),
                                                               ("dense/kernel", 4096)]
    assert job["workflow"]["is_prod"] is True and job["dataset"]["storage_size"] == 5 * 2**30
    assert json.loads(job["resource"]) == {"worker": {"count": 2, "cpu": 8}}
    # plan_request v2: every OOM pod in order, the config in wire order.
    _, req = decode(_read(by_name["fixture-plan_request-full"][2], "rb"))
    assert req["oom_pod"] == req["oom_pods"][0] and req["oom_pods"] == ["uid-42-worker-3", "uid-42-worker-1"]
    assert list(req["config"].items()) == [("optimizer.worker.optimize-phase", "sample"), ("optimizer.ps.flags", "")]
    _, v1 = decode(_read(by_name["fixture-plan_request-full"][2], "rb"), reader_schema_id=4)
    assert set(v1) == {"event_id", "event_time_ms", "job_uid", "stage", "oom_pod"}
    # An older reader (job_event v1, id 1) sees only what it knows.
    _, v1 = decode(_read(by_name["fixture-job_event-full"][2], "rb"), reader_schema_id=1)
    assert "workflow" not in v1 and set(v1["model"]) == {
        "variable_count", "op_count", "total_variable_size", "recv_op_count", "flops", "embedding_dimension"}


def test_doubles_exact():
    line = _read(os.path.join(REPO, "tests", "fuzz", "corpus", "fuzz_json", "regress-double-ulp.json"))
    typ, rec = from_json_line(line)
    _, back = decode(encode(typ, rec))
    assert back["speed"] == 0.30000000000000004
    for v in (0.1, 1 / 3, 5e-324, 1.7976931348623157e308, -0.0, 2.0**53 + 2):
        _, back = decode(encode("runtime_sample", {**rec, "pods": [
            {"name": "p", "type": "worker", "cpu_used": abs(v), "speed": abs(v)}]}))
        assert back["pods"][0]["cpu_used"] == abs(v) and math.copysign(1, back["pods"][0]["cpu_used"]) == 1


def test_longs_full_range():
    rec = {"event_id": "e", "event_time_ms": 2**63 - 1, "job_uid": "j", "model": {"flops": 2**63 - 1}}
    _, back = decode(encode("job_event", rec))
    assert back["event_time_ms"] == 2**63 - 1 and back["model"]["flops"] == 2**63 - 1


def test_unicode_strings():
    rec = {"event_id": "é-1", "event_time_ms": 1, "job_uid": "任务-1",
           "meta": {"name": "模型 ü 🚀", "user": "\u00e9"}}
    frame = encode("job_event", rec)
    assert "任务-1".encode("utf-8") in frame and "🚀".encode("utf-8") in frame
    assert decode(frame)[1]["meta"]["name"] == "模型 ü 🚀"
    assert from_json_line(to_json_line("job_event", rec)) == ("job_event", rec)


@pytest.mark.parametrize("frame,msg", [
    (b"\x00\x00\x00", "shorter than the 5-byte Confluent header"),
    (b'{"type":"x"}', "not Confluent-framed Avro (it looks like JSON)"),
    (b"\x00\x00\x00\x00\x63\x02a", "schema id 99 is not in the catalog (known: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)"),
    (b"\x00\x00\x00\x00\x04\x02a", "Avro data (schema id 4)"),
])
def test_bad_frames(frame, msg):
    with pytest.raises(DecodeError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        decode(frame)


def test_trailing_bytes():
    frame = encode("plan_request", {"event_id": "e", "event_time_ms": 1, "job_uid": "j", "stage": "job_stage_create"})
    with pytest.raises(DecodeError, match="1 trailing bytes"):
        decode(frame + b"\x00")


def test_c_fuzz_finds_do_not_crash():
    # libFuzzer's corpus entries: Python decodes each or raises DecodeError.
    for path in glob.glob(os.path.join(REPO, "tests", "fuzz", "corpus", "fuzz_codec", "*")):
        try:
            decode(_read(path, "rb"))
        except DecodeError:
            pass
