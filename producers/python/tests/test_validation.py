"""Python rejects what the C side rejects, with the same message: each bad
event below is encoded by Python and fed to `dlbrain emit --strict` (with no
broker: a rejected line never reaches Kafka), and both must print the message
of the table."""

import json
import math
import re
import subprocess

import pytest

from dlbrain_client import EventError, Reporter, encode, from_json_line
from dlbrain_client.events import STAGES

H = '"event_id":"e1","event_time_ms":1767312000000,"job_uid":"j1"'
POD = '"name":"j1-worker-0","type":"worker","index":0,"cpu_used":1.0,"cpu_requested":2,"memory_used":5,"memory_requested":9'
RES = '"cpu":1,"memory":2,"gpu":0,"gpu_type":"","priority":""'
PLAN = H + ',"plan_id":"p1","stage":"job_stage_create","optimizer":"o","reason":"r","trigger_event_id":"q1"'

CASES = [
    ('{"type":"plan_request",' + H + ',"stage":"nope"}',
     'stage: unknown value "nope" (expected one of ' + ", ".join(STAGES) + ")"),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","oom_pod":""}', "oom_pod: must not be empty"),
    ('{"type":"plan_request",' + H + "}", "stage: missing required field"),
    # plan_request v2: every OOM pod (oom_pod the first of them), DLRover's config.
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","oom_pods":["j1-worker-1"]}',
     'oom_pod: must be the first of oom_pods ("j1-worker-1")'),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","oom_pod":"a","oom_pods":["a",""]}',
     "oom_pods[1]: must not be empty"),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","oom_pods":["' + "p" * 128 + '"]}',
     "oom_pods[0]: 128 bytes long, more than the limit of 127"),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","oom_pod":"a","oom_pods":['
     + ",".join(['"a"'] * 1025) + "]}", "oom_pods: 1025 items, more than the limit of 1024"),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","config":{"":"x"}}',
     "config: a key must not be empty"),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","config":{"k":"' + "v" * 1025 + '"}}',
     "config.k: 1025 bytes long, more than the limit of 1024"),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","config":{'
     + ",".join(f'"k{i}":"v"' for i in range(257)) + "}}", "config: 257 items, more than the limit of 256"),
    ('{"type":"plan_request",' + H + ',"stage":"job_stage_running","config":{"k":1}}',
     "config.k: expected a string, got 1"),
    ('{"type":"job_event","event_id":"","event_time_ms":1,"job_uid":"j1"}', "event_id: must not be empty"),
    ('{"type":"job_event","event_id":"e","event_time_ms":1,"job_uid":""}', "job_uid: must not be empty"),
    ('{"type":"job_event","event_id":"e","event_time_ms":-1,"job_uid":"j"}', "event_time_ms: negative (-1)"),
    ('{"type":"job_event",' + H + ',"state":"runing"}',
     'state: unknown value "runing" (expected one of created, pending, running, succeeded, failed, stopped)'),
    ('{"type":"job_event",' + H + ',"exit_reason":"Oops"}',
     'exit_reason: unknown value "Oops" (expected one of Completed, CodeError, WorkerOOM, WorkerError, PSOOM, '
     "PSError, EvaluatorOOM, EvaluatorError, UnknownError, HangError, RdzvTimeout, PendingTimeout, "
     "UncompletedTimeout, NodeCheckFailed)"),
    # job_event v2: DLRover's other JobMetrics fields, and the bounds of C's heap parts.
    ('{"type":"job_event",' + H + ',"dataset":{"storage_size":-1}}', "dataset.storage_size: negative (-1)"),
    ('{"type":"job_event",' + H + ',"model":{"input_fetch_dur":-4}}', "model.input_fetch_dur: negative (-4)"),
    ('{"type":"job_event",' + H + ',"model":{"kv_embedding_dims":[8,-1]}}', "model.kv_embedding_dims[1]: negative (-1)"),
    ('{"type":"job_event",' + H + ',"model":{"kv_embedding_dims":[' + ",".join(["8"] * 65537) + ']}}',
     "model.kv_embedding_dims: 65537 items, more than the limit of 65536"),
    ('{"type":"job_event",' + H + ',"model":{"tensor_alloc_bytes":{"a/b":-2}}}',
     "model.tensor_alloc_bytes.a/b: negative (-2)"),
    ('{"type":"job_event",' + H + ',"model":{"tensor_alloc_bytes":{"' + "t" * 1025 + '":1}}}',
     "model.tensor_alloc_bytes: a key of 1025 bytes, more than the limit of 1024"),
    ('{"type":"job_event",' + H + ',"model":{"tensor_alloc_bytes":{"a":"x"}}}',
     'model.tensor_alloc_bytes.a: expected an integer, got "x"'),
    ('{"type":"job_event",' + H + ',"workflow":{"is_prod":"yes"}}', 'workflow.is_prod: expected a boolean, got "yes"'),
    ('{"type":"job_event",' + H + ',"workflow":{"job_name":"' + "n" * 256 + '"}}',
     "workflow.job_name: 256 bytes long, more than the limit of 255"),
    ('{"type":"job_event",' + H + ',"customized_data":"' + "c" * 262145 + '"}',
     "customized_data: 262145 bytes long, more than the limit of 262144"),
    ('{"type":"job_event",' + H + ',"dataset":{"sparse_features":"' + "f," * 131073 + '"}}',
     "dataset.sparse_features: 262146 bytes long, more than the limit of 262144"),
    ('{"type":"job_event",' + H + ',"resource":{"worker":1}}', 'resource: expected a string, got {"worker":1}'),
    ('{"type":"job_event",' + H + ',"hyper_params":{"batch_size":-1}}', "hyper_params.batch_size: negative (-1)"),
    ('{"type":"job_event",' + H + ',"dataset":{"size":-2}}', "dataset.size: negative (-2)"),
    ('{"type":"job_event",' + H + ',"model":{"flops":-3}}', "model.flops: negative (-3)"),
    ('{"type":"job_event",' + H + ',"meta":{"nme":"x"}}', "meta.nme: unknown field"),
    ('{"type":"job_event",' + H + ',"meta":"x"}', 'meta: expected an object, got "x"'),
    ('{"type":"job_event",' + H + ',"meta":{"name":"' + "x" * 300 + '"}}',
     "meta.name: 300 bytes long, more than the limit of 255"),
    ('{"type":"job_event",' + H + ',"meta":{"name":"' + "é" * 130 + '"}}',
     "meta.name: 260 bytes long, more than the limit of 255"),
    ('{"type":"job_event","event_id":"' + "e" * 128 + '","event_time_ms":1,"job_uid":"j"}',
     "event_id: 128 bytes long, more than the limit of 127"),
    ('{"type":"runtime_sample",' + H + ',"speed":-1.5}',
     "speed: must be a finite non-negative number of steps/s (-1.5)"),
    ('{"type":"runtime_sample",' + H + ',"global_step":-7}', "global_step: negative (-7)"),
    ('{"type":"runtime_sample",' + H + ',"pods":3}', "pods: expected an array, got 3"),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD + '},{' + POD.replace('"worker"', '"gpu"') + "}]}",
     'pods[1].type: unknown value "gpu" (expected one of ps, worker, chief, evaluator)'),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD.replace('"memory_used":5', '"memory_used":-5') + "}]}",
     "pods[0].memory_used: negative (-5)"),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD.replace('"memory_used":5', '"memory_used":"a"') + "}]}",
     'pods[0].memory_used: expected an integer, got "a"'),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD.replace('"index":0', '"index":-1') + "}]}",
     "pods[0].index: negative (-1)"),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD.replace('"cpu_used":1.0', '"cpu_used":-0.25') + "}]}",
     "pods[0].cpu_used: must be a finite non-negative number of cores (-0.25)"),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD + ',"speed":-2.5}]}',
     "pods[0].speed: must be a finite non-negative number of steps/s (-2.5)"),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD.replace('"j1-worker-0"', '""') + "}]}",
     "pods[0].name: must not be empty"),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD + ',"namespace":"' + "n" * 64 + '"}]}',
     "pods[0].namespace: 64 bytes long, more than the limit of 63"),
    ('{"type":"runtime_sample",' + H + ',"pods":[{' + POD + ',"is_mixed":"no"}]}',
     'pods[0].is_mixed: expected a boolean, got "no"'),
    ('{"type":"node_event",' + H + ',"kind":"oom_killed"}', "pod_name: must not be empty"),
    ('{"type":"node_event",' + H + ',"kind":"exploded","pod_name":"p"}',
     'kind: unknown value "exploded" (expected one of pod_phase, node_phase, oom_killed, evicted, node_not_ready, '
     "preempted, deleted, error, hardware_error, no_heartbeat)"),
    ('{"type":"node_event",' + H + ',"kind":"evicted","pod_name":"p","pod_type":"gpu"}',
     'pod_type: unknown value "gpu" (expected one of ps, worker, chief, evaluator)'),
    ('{"type":"node_event",' + H + ',"kind":"evicted","pod_name":"p","pod_index":-1}', "pod_index: negative (-1)"),
    ('{"type":"node_event",' + H + ',"kind":"evicted","pod_name":"p","pod_index":2147483648}',
     "pod_index: 2147483648 is out of range (a 32-bit int)"),
    ('{"type":"node_event",' + H + ',"kind":"evicted","pod_name":"p","memory_requested":-1}',
     "memory_requested: negative (-1)"),
    ('{"type":"node_event",' + H + ',"kind":"evicted","pod_name":"p","cpu_requested":-1}',
     "cpu_requested: must be a finite non-negative number of cores (-1)"),
    ('{"type":"node_event",' + H + ',"kind":"evicted","pod_name":"p","cpu_requested":"x"}',
     'cpu_requested: expected a number, got "x"'),
    ('{"type":"plan",' + PLAN.replace('"plan_id":"p1"', '"plan_id":""') + "}", "plan_id: must not be empty"),
    ('{"type":"plan",' + PLAN.replace('"optimizer":"o"', '"optimizer":""') + "}", "optimizer: must not be empty"),
    ('{"type":"plan",' + PLAN + ',"groups":[{"group":"x","count":1,"resource":{' + RES + "}}]}",
     'groups[0].group: unknown value "x" (expected one of ps, worker, chief, evaluator)'),
    ('{"type":"plan",' + PLAN + ',"groups":[{"group":"ps","count":-1,"resource":{' + RES + "}}]}",
     "groups[0].count: negative (-1)"),
    ('{"type":"plan",' + PLAN + ',"groups":[{"group":"ps","count":1,"resource":{' + RES.replace('"cpu":1', '"cpu":-1') + "}}]}",
     "groups[0].resource.cpu: must be a finite non-negative number of cores (-1)"),
    ('{"type":"plan",' + PLAN + ',"groups":[{"group":"ps","count":1,"resource":{' + RES.replace('"gpu":0', '"gpu":-1') + "}}]}",
     "groups[0].resource.gpu: negative (-1)"),
    ('{"type":"plan",' + PLAN + ',"groups":[{"group":"ps","count":1}]}', "groups[0].resource: missing required field"),
    ('{"type":"plan",' + PLAN + ',"pods":[{"name":"p","resource":{' + RES.replace('"memory":2', '"memory":-2') + "}}]}",
     "pods[0].resource.memory: negative (-2)"),
    ('{"type":"plan",' + PLAN + ',"actions":[{"pod":"p","action":"kill","reason":""}]}',
     'actions[0].action: unknown value "kill" (expected one of relaunch, replace)'),
    ('{"type":"plan",' + PLAN + ',"actions":[{"pod":"","action":"replace","reason":""}]}',
     "actions[0].pod: must not be empty"),
    ('{"type":"config_match",' + H + ',"rules_version":-1}', "rules_version: negative (-1)"),
    ('{"type":"config_match",' + H + ',"values":{"a":1}}', 'values.a: expected a string, got 1'),
    ('{"type":"bogus",' + H + "}", 'type: unknown event type "bogus"'),
]


@pytest.mark.parametrize("line,msg", CASES)
def test_python_rejects(line, msg):
    typ, rec = from_json_line(line)
    with pytest.raises(EventError) as e:
        encode(typ, rec)
    assert str(e.value) == msg


def test_c_rejects_the_same(dlbrain):
    lines = "".join(line + "\n" for line, _ in CASES)
    p = subprocess.run([dlbrain, "emit", "--strict", "-b", "127.0.0.1:1", "-t", "1000"], input=lines,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    got = {}
    for m in re.finditer(r"stdin:(\d+): (.*); line skipped$", p.stderr, re.M):
        got[int(m.group(1))] = m.group(2)
    for n, (line, msg) in enumerate(CASES, 1):
        assert got.get(n) == msg, f"line {n}: {line[:80]}"


def test_python_only_checks():
    base = {"event_id": "e", "event_time_ms": 1, "job_uid": "j"}
    # JSON cannot say these; Python can.
    with pytest.raises(EventError, match=r"^meta.name: contains a NUL byte$"):
        encode("job_event", {**base, "meta": {"name": "a\0b"}})
    with pytest.raises(EventError, match=r"^speed: must be a finite non-negative number of steps/s \(nan\)$"):
        encode("runtime_sample", {**base, "speed": math.nan})
    with pytest.raises(EventError, match=r"^cpu_requested: must be a finite non-negative number of cores \(inf\)$"):
        encode("node_event", {**base, "kind": "evicted", "pod_name": "p", "cpu_requested": math.inf})
    with pytest.raises(EventError, match=r"^pod_index: expected an integer, got true$"):
        encode("node_event", {**base, "kind": "evicted", "pod_name": "p", "pod_index": True})
    with pytest.raises(EventError, match=r"^event_time_ms: 9223372036854775808 is out of range"):
        encode("job_event", {**base, "event_time_ms": 2**63})
    # An int where a double is meant, and a whole float where an int is meant, as JSON allows.
    assert encode("node_event", {**base, "kind": "evicted", "pod_name": "p", "cpu_requested": 2, "pod_index": 3.0}) == \
        encode("node_event", {**base, "kind": "evicted", "pod_name": "p", "cpu_requested": 2.0, "pod_index": 3})


def test_json_line_roundtrip():
    line = CASES[0][0].replace('"nope"', '"job_stage_create"')
    typ, rec = from_json_line(line)
    assert json.loads(line) == {"type": typ, **rec}
    encode(typ, rec)


def test_request_plan_fields(monkeypatch):
    # What Reporter.request_plan sends (nothing reaches a broker: publish is replaced).
    r = Reporter("127.0.0.1:1", "j1")
    sent = []
    monkeypatch.setattr(r, "publish", lambda typ, rec, **kw: sent.append((typ, rec)) or rec["event_id"])
    r.request_plan("job_stage_create", event_id="q0", event_time_ms=1)
    r.request_plan("job_stage_running", "j1-worker-0", event_id="q1", event_time_ms=2)
    r.request_plan("job_stage_worker_initial", oom_pods=["j1-worker-2", "j1-worker-1"],
                   config={"optimizer.worker.optimize-phase": "initial"}, event_id="q2", event_time_ms=3)
    assert [(rec["oom_pod"], rec["oom_pods"], rec["config"]) for _, rec in sent] == [
        (None, [], {}),
        ("j1-worker-0", ["j1-worker-0"], {}),
        ("j1-worker-2", ["j1-worker-2", "j1-worker-1"], {"optimizer.worker.optimize-phase": "initial"}),
    ]
    for typ, rec in sent:
        encode(typ, rec)  # each is valid
