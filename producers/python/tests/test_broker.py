"""The client against the C pipeline on a real Apache Kafka broker, started
with PostgreSQL, Redis, an optimizer and a configurer (env "dlbrain") by
tests/system/17-python-client.sh; the environments "c2py" and "py2c" have the
pipeline's topics and nothing reading or writing them but these tests.

1. Python reports a job and asks for a create plan; the C optimizer answers;
   PlanSubscriber receives the exact cold-start plan, in the bytes PostgreSQL
   kept, which Python re-encodes identically.
2. C produces (`dlbrain emit` of the shared test vectors' JSON); Python reads
   the raw messages: the same bytes as its own encoding and as its
   re-encoding of what it decoded, the same keys, the same values; Python's
   producer puts each job on the same partition, and kcat reads Python's
   copies as the same bytes as C's.
3. Python produces; C reads: the optimizer keeps the same raw bytes in
   PostgreSQL and the decoded columns; the configurer answers a config request;
   `dlbrain plans` / `dlbrain configs` print what Python published.
4. read_committed: a plan in an aborted transaction reaches neither
   PlanSubscriber nor `dlbrain plans`.
5. schema.registry.url: a master bound to `dlbrain registry` gets its plan;
   a plan of an id only the registry knows waits through a registry outage
   and is delivered once it is back.
"""

import collections
import glob
import json
import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from dlbrain_client import (
    ConfigSubscriber,
    PlanSubscriber,
    Publisher,
    RegistryBinding,
    Reporter,
    decode,
    encode,
    from_json_line,
    normalize,
    peek,
)
from dlbrain_client.catalog import TOPICS

pytestmark = pytest.mark.broker
GiB = 1 << 30
RUN = uuid.uuid4().hex[:8]


def _sql(query):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", query], check=True,
                          capture_output=True, text=True).stdout.strip()


def _raw_row(table, key_col, key, timeout=60):
    """The raw frame PostgreSQL keeps for a row, waiting for it to be written."""
    deadline = time.monotonic() + timeout
    while True:
        hexed = _sql(f"SELECT encode(raw, 'hex') FROM dlbrain.{table} WHERE {key_col} = '{key}'")
        if hexed:
            return bytes.fromhex(hexed)
        if time.monotonic() > deadline:
            raise AssertionError(f"no row {key} in dlbrain.{table} within {timeout} s")
        time.sleep(0.2)


def _now_ms():
    return time.time_ns() // 1_000_000


def _corpus_lines(repo):
    base = os.path.join(repo, "tests", "fuzz", "corpus")
    lines = []
    for j in sorted(glob.glob(os.path.join(base, "fuzz_json", "*.json"))):
        name = os.path.basename(j)[:-5]
        if name.startswith(("fixture-", "pipeline-", "regress-")):
            with open(j) as f:
                lines.append((name, f.read().strip()))
    return lines


# ---- 1. Python asks, the C optimizer answers ----------------------------------------


def test_cold_start_plan(brokers):
    uid = f"py-cold-{RUN}"
    t0 = _now_ms()
    with PlanSubscriber(brokers, uid) as plans, Reporter(brokers, uid) as r:
        r.report_job(meta={"name": "ctr-py", "user": "ana", "group": "ads", "app": "ctr", "cluster": "c1",
                           "namespace": "ml", "scenario": f"never-seen-{RUN}", "framework": "tensorflow"},
                     state="created", event_time_ms=t0)
        req = r.request_plan("job_stage_create", event_time_ms=t0 + 1000)
        assert r.flush() == 2
        plan = plans.wait_for(req, timeout=120)
        msg = plans.last_message
    # DLRover's cold start: 4 PS x 12 CPU x 16 GiB, workers at 12 CPU x 16 GiB; the dlbrain set
    # (the default) keeps the user's worker count (0 = keep) where DLRover asks 1 worker, and,
    # with no similar worker to size from, the user's worker memory (0 = keep).
    res = {"cpu": 12.0, "memory": 16 * GiB, "gpu": 0, "gpu_type": "", "priority": ""}
    assert sorted(plan["groups"], key=lambda g: g["group"]) == [
        {"group": "ps", "count": 4, "resource": res},
        {"group": "worker", "count": 0, "resource": dict(res, memory=0)},
    ]
    assert plan["pods"] == [] and plan["actions"] == []
    assert plan["plan_id"] == plan["event_id"] == f"plan-{req}"
    assert (plan["job_uid"], plan["stage"], plan["trigger_event_id"]) == (uid, "job_stage_create", req)
    assert plan["event_time_ms"] == t0 + 1000
    assert plan["optimizer"] and plan["reason"]
    # C's bytes: keyed by the job uid, kept in PostgreSQL as sent, and what
    # Python writes for the values it read.
    assert msg.key() == uid.encode()
    assert _raw_row("plans", "plan_id", plan["plan_id"]) == msg.value()
    assert encode("plan", plan) == msg.value()


# ---- 2. C produces, Python reads ---------------------------------------------------------


@pytest.fixture(scope="module")
def c_emitted(brokers, dlbrain, repo, tmp_path_factory):
    """The shared vectors' JSON lines as `dlbrain emit` published them to env
    c2py: [(name, type, record, message)] in file order."""
    lines = _corpus_lines(repo)
    path = tmp_path_factory.mktemp("c2py") / "events.jsonl"
    path.write_text("".join(line + "\n" for _, line in lines))
    subprocess.run([dlbrain, "emit", "--strict", "-q", "-e", "c2py", "-b", brokers, str(path)], check=True,
                   timeout=120)
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"c2py-raw-{RUN}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([f"c2py.{t}" for t in TOPICS.values()])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < len(lines) and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    consumer.close()
    assert len(got) == len(lines), f"read {len(got)} of the {len(lines)} emitted events"
    # One job's events of one type are on one partition, in the order emitted.
    by_stream = collections.defaultdict(list)
    for m in sorted(got, key=lambda m: (m.topic(), m.partition(), m.offset())):
        by_stream[(m.topic(), m.key())].append(m)
    out = []
    for name, line in lines:
        typ, rec = from_json_line(line)
        out.append((name, typ, rec, by_stream[(f"c2py.{TOPICS[typ]}", rec["job_uid"].encode())].pop(0)))
    return out


def test_c_bytes_equal_python_bytes(c_emitted):
    for name, typ, rec, msg in c_emitted:
        assert msg.key() == rec["job_uid"].encode("utf-8"), name
        assert msg.value() == encode(typ, rec), name
        got_type, got = decode(msg.value())
        assert (got_type, got) == (typ, normalize(typ, rec)), name
        # What Python decoded writes C's bytes again: header and body.
        assert encode(got_type, got) == msg.value(), name


@pytest.fixture(scope="module")
def py_published(brokers, c_emitted):
    """Python's Publisher publishes every event `dlbrain emit` published to
    c2py once more (same ids, same topics): {(topic, key): partition}."""
    py_part = {}
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)
        py_part[(msg.topic(), msg.key())] = msg.partition()

    with Publisher(brokers, "c2py") as pub:
        for name, typ, rec, _ in c_emitted:
            pub.publish(typ, rec, on_delivery=delivered)
        assert pub.flush() == len(c_emitted)
    assert not errors, errors
    return py_part


def test_same_partitions(c_emitted, py_published):
    c_part = {(msg.topic(), msg.key()): msg.partition() for _, _, _, msg in c_emitted}
    assert py_published == c_part
    # Meaningful only if the jobs spread over the partitions.
    assert len(set(c_part.values())) > 1


def _kcat_raw(brokers, topic):
    """Every message of a topic as kcat reads it: {(partition, key): [value, ...]} in offset order."""
    out = subprocess.run(["kcat", "-C", "-b", brokers, "-t", topic, "-e", "-q", "-f", "%p %o %K %S\n%k%s"],
                         check=True, capture_output=True, timeout=60).stdout
    streams = collections.defaultdict(list)
    pos = 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        part, off, klen, vlen = (int(x) for x in out[pos:nl].split())
        key = out[nl + 1:nl + 1 + klen]
        value = out[nl + 1 + klen:nl + 1 + klen + vlen]
        streams[(part, key)].append((off, value))
        pos = nl + 1 + klen + vlen
    return {k: [v for _, v in sorted(vs)] for k, vs in streams.items()}


def _kcat_meta(brokers, topic):
    """(key, partition, offset, headers) of every message of a topic, as kcat prints them
    (headers: name=value joined by ',')."""
    out = subprocess.run(["kcat", "-C", "-b", brokers, "-t", topic, "-e", "-q", "-f", "%k\t%p\t%o\t%h\n"],
                         capture_output=True, check=True, text=True).stdout
    return [tuple(line.split("\t")) for line in out.splitlines() if line.strip()]


def test_kcat_sees_the_same_bytes(brokers, c_emitted, py_published):
    # On each topic, each job's stream is C's messages followed by Python's
    # copies: raw, through the broker, the two halves are the same bytes.
    want = collections.defaultdict(list)
    for _, typ, rec, msg in c_emitted:
        want[(msg.topic(), msg.partition(), msg.key())].append(msg.value())
    seen = 0
    for topic in sorted({t for t, _, _ in want}):
        for (part, key), values in _kcat_raw(brokers, topic).items():
            c_values = want[(topic, part, key)]
            assert values == c_values + c_values, (topic, part, key)
            seen += len(values)
    assert seen == 2 * len(c_emitted)


def test_plan_and_config_subscribers_read_c(brokers, c_emitted, py_published):
    # Subscribed after py_published re-published every event once more
    # (same ids): each id is delivered once, the copies counted as repeats.
    want_plans = [normalize(t, r) for _, t, r, _ in c_emitted if t == "plan" and r["job_uid"] == "uid-42"]
    assert len(want_plans) == 3  # plan-full-v1, plan-full, plan-min: all plan id "plan-1"
    with PlanSubscriber(brokers, "uid-42", env="c2py", all=True) as plans:
        got = [plans.poll(30) for _ in range(len(want_plans))]
    assert got == want_plans
    assert got[1]["actions"][0] == {"pod": "uid-42-worker-3", "action": "replace",
                                    "reason": "0.4 steps/s against a median of 2.1"}
    with PlanSubscriber(brokers, "uid-42", env="c2py") as plans:
        assert plans.poll(30) == want_plans[0]
        assert plans.poll(3) is None
        assert plans.repeats == 2 * len(want_plans) - 1
    want_cfg = [normalize(t, r) for _, t, r, _ in c_emitted if t == "config_match"]
    with ConfigSubscriber(brokers, "uid-42", env="c2py", all=True) as cfg:
        got = [cfg.poll(30) for _ in range(len(want_cfg))]
    assert got == want_cfg
    assert list(got[0]["values"]) == ["ps.memory", "optimizer.flags"]


# ---- 3. Python produces, C reads ------------------------------------------------------------


def test_optimizer_keeps_python_bytes(brokers):
    uid = f"py-in-{RUN}"
    t0 = _now_ms()
    meta = {"name": "模型-ü", "user": "ana", "group": "ads", "app": "ctr", "cluster": "c1", "namespace": "ml",
            "scenario": f"py-{RUN}", "framework": "tensorflow"}
    events = [
        ("job_event", "job_events", {
            "event_id": f"{uid}-e1", "event_time_ms": t0, "job_uid": uid, "meta": meta, "state": "running",
            "hyper_params": {"batch_size": 512, "epoch": 2, "max_steps": 10000},
            "dataset": {"name": "clicks", "size": 1000000, "storage": "odps"},
            "model": {"variable_count": 100, "op_count": 2000, "total_variable_size": GiB, "recv_op_count": 64,
                      "flops": 2**53 + 1, "embedding_dimension": 16},
            "exit_reason": None}),
        ("runtime_sample", "runtime_samples", {
            "event_id": f"{uid}-r1", "event_time_ms": t0 + 15000, "job_uid": uid, "global_step": 50,
            "speed": 0.30000000000000004, "pods": [
                {"name": f"{uid}-worker-0", "type": "worker", "index": 0, "cpu_used": 3.25, "cpu_requested": 8,
                 "memory_used": 8000000000, "memory_requested": 8 * GiB, "speed": 1.5},
                {"name": f"{uid}-ps-0", "type": "ps", "index": 0, "cpu_used": 1.0, "cpu_requested": 4,
                 "memory_used": GiB, "memory_requested": 4 * GiB}]}),
        ("node_event", "node_events", {
            "event_id": f"{uid}-k1", "event_time_ms": t0 + 20000, "job_uid": uid, "kind": "oom_killed",
            "pod_name": f"{uid}-worker-0", "pod_type": "worker", "pod_index": 0, "node_name": "node-7",
            "phase": "Failed", "reason": "OOMKilled", "message": "exceeded — limit", "memory_requested": 8 * GiB,
            "cpu_requested": 7.5}),
        ("plan_request", "plan_requests", {
            "event_id": f"{uid}-q1", "event_time_ms": t0 + 21000, "job_uid": uid, "stage": "job_stage_running",
            "oom_pod": f"{uid}-worker-0", "oom_pods": [f"{uid}-worker-0"]}),
    ]
    with Reporter(brokers, uid) as r:
        r.report_job(**{k: v for k, v in events[0][2].items() if k not in ("job_uid",)})
        r.report_sample(**{k: v for k, v in events[1][2].items() if k not in ("job_uid",)})
        r.report_node_event(**{k: v for k, v in events[2][2].items() if k not in ("job_uid",)})
        r.request_plan("job_stage_running", oom_pod=f"{uid}-worker-0", event_id=f"{uid}-q1",
                       event_time_ms=t0 + 21000)
        r.flush()
    for typ, table, rec in events:
        assert _raw_row(table, "event_id", rec["event_id"]) == encode(typ, rec), table
    # The request named where the job's three events landed (dlb.after), so the
    # optimizer answered once it had applied them.
    landed = {}
    for topic in ("job-events", "metrics", "k8s-events", "plan-requests"):
        for key, part, offset, headers in _kcat_meta(brokers, f"dlbrain.{topic}"):
            if key == uid:
                landed[topic] = (part, offset, headers)
    assert landed["plan-requests"][2] == "dlb.after=" + ",".join(
        f"dlbrain.{t}:{landed[t][0]}:{landed[t][1]}" for t in ("job-events", "k8s-events", "metrics"))
    # And C decoded the same values.
    assert _sql(f"SELECT name || '|' || scenario FROM dlbrain.jobs WHERE uid = '{uid}'") == f"模型-ü|py-{RUN}"
    assert _sql(f"SELECT speed FROM dlbrain.runtime_samples WHERE event_id = '{uid}-r1'") == "0.30000000000000004"
    assert _sql(f"SELECT pod_name || '|' || speed FROM dlbrain.runtime_pods WHERE event_id = '{uid}-r1' "
                "AND speed IS NOT NULL") == f"{uid}-worker-0|1.5"
    assert _sql(f"SELECT message || '|' || cpu_requested || '|' || memory_requested FROM dlbrain.node_events "
                f"WHERE event_id = '{uid}-k1'") == f"exceeded — limit|7.5|{8 * GiB}"
    assert _sql(f"SELECT stage || '|' || oom_pod FROM dlbrain.plan_requests WHERE event_id = '{uid}-q1'") == \
        f"job_stage_running|{uid}-worker-0"
    # The OOM request is answered too (its memory is the optimizer's business).
    with PlanSubscriber(brokers, uid) as plans:
        plan = plans.wait_for(f"{uid}-q1", timeout=120)
    assert plan["plan_id"] == f"plan-{uid}-q1" and plan["stage"] == "job_stage_running"


def test_configurer_answers_python(brokers):
    # The rules of 17-python-client.sh: default, ads-team, ads-big (tests/system/14-configurer.sh's).
    uid = f"py-cfg-{RUN}"
    with ConfigSubscriber(brokers, uid) as cfg, Reporter(brokers, uid) as r:
        req = r.request_config(meta={"user": "ana", "group": "ads", "cluster": "c1"})
        r.flush()
        match = cfg.wait_for(req, timeout=120)
        raw = cfg.last_message.value()
    assert match["event_id"] == f"cfg-{req}" and match["job_uid"] == uid
    assert match["rules_version"] == 1
    assert match["rule_ids"] == ["ads-big", "ads-team", "default"]
    assert {k: json.loads(v) for k, v in match["values"].items()} == {
        "log": "debug", "lr": 0.01, "ps": {"cpu": 12, "memory": 16}}
    assert _raw_row("config_matches", "event_id", match["event_id"]) == raw
    assert encode("config_match", match) == raw  # the map in C's order, re-encoded alike


def _c_reads(dlbrain, brokers, what, uid, n):
    out = subprocess.run([dlbrain, what, "-q", "-e", "py2c", "-b", brokers, "-j", uid, "-n", str(n),
                          "-t", "60000", "-f", "json"], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    recs = [json.loads(line) for line in out.splitlines() if line.strip()]
    for rec in recs:
        rec.pop("type", None)
    return recs


def test_c_subscribers_read_python(brokers, dlbrain):
    uid = f"py-out-{RUN}"
    plan = {
        "event_id": f"plan-{uid}-q1", "event_time_ms": 1767312021000, "plan_id": f"plan-{uid}-q1",
        "job_uid": uid, "stage": "job_stage_running",
        "groups": [{"group": "worker", "count": 3, "resource": {"cpu": 4.5, "memory": 12589934592, "gpu": 1,
                                                                 "gpu_type": "a100", "priority": "high"}}],
        "pods": [{"name": f"{uid}-worker-0", "resource": {"cpu": 0, "memory": 10307921511}}],
        "actions": [{"pod": f"{uid}-worker-2", "action": "replace", "reason": "0.4 steps/s — straggler"}],
        "optimizer": "py.test", "reason": "réason ✓", "trigger_event_id": f"{uid}-q1"}
    old = dict(plan, event_id=f"plan-{uid}-q0", plan_id=f"plan-{uid}-q0", trigger_event_id=f"{uid}-q0")
    del old["actions"]
    match = {"event_id": f"cfg-{uid}-c1", "event_time_ms": 1767312022000, "job_uid": uid, "rules_version": 3,
             "rule_ids": ["z-rule", "a-rule"], "values": {"zeta": '"z"', "alpha": "[1,2]", "mid": '{"b":1,"a":2}'},
             "trigger_event_id": f"{uid}-c1"}
    with Publisher(brokers, "py2c") as pub:
        pub.publish("plan", old, schema_id=5)  # an older writer: plan v1
        pub.publish("plan", plan)
        pub.publish("config_match", match)
    got = _c_reads(dlbrain, brokers, "plans", uid, 2)
    assert got == [dict(normalize("plan", old), actions=[]), normalize("plan", plan)]
    got = _c_reads(dlbrain, brokers, "configs", uid, 1)
    assert got == [normalize("config_match", match)]
    assert list(got[0]["values"]) == ["zeta", "alpha", "mid"]  # C kept the wire order


# ---- 4. read_committed ------------------------------------------------------------------------


def test_aborted_plan_never_delivered(brokers, dlbrain):
    # A plan in an aborted transaction, then one in a committed transaction,
    # both for the same job on py2c.plans (the optimizer writes its plans
    # transactionally; a crash between produce and commit leaves such a plan).
    uid = f"py-txn-{RUN}"

    def plan(n):
        return {"event_id": f"plan-{uid}-q{n}", "event_time_ms": 1767312000000 + n, "plan_id": f"plan-{uid}-q{n}",
                "job_uid": uid, "stage": "job_stage_create",
                "groups": [{"group": "worker", "count": n, "resource": {"cpu": 2.0, "memory": GiB, "gpu": 0,
                                                                          "gpu_type": "", "priority": ""}}],
                "pods": [], "actions": [], "optimizer": "py.test", "reason": f"try {n}",
                "trigger_event_id": f"{uid}-q{n}"}

    aborted, committed = plan(1), plan(2)
    producer = Producer({"bootstrap.servers": brokers, "transactional.id": f"py-txn-{RUN}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("py2c.plans", key=uid.encode(), value=encode("plan", aborted))
    producer.flush(30)  # on the broker, in the log, not committed
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce("py2c.plans", key=uid.encode(), value=encode("plan", committed))
    producer.commit_transaction(30)

    # A read_uncommitted reader sees both: the aborted plan is really in the log.
    raw = Consumer({"bootstrap.servers": brokers, "group.id": f"py-txn-raw-{RUN}", "auto.offset.reset": "earliest",
                    "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    raw.subscribe(["py2c.plans"])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 2 and time.monotonic() < deadline:
        m = raw.poll(0.5)
        if m is not None and not m.error() and m.key() == uid.encode():
            seen.append(decode(m.value())[1]["plan_id"])
    raw.close()
    assert seen == [aborted["plan_id"], committed["plan_id"]]

    # The client's subscription (read_committed) delivers only the committed
    # one: first (the aborted plan is before it on the same partition, so it
    # can come only before it), and nothing after it.
    for every_copy in (False, True):
        with PlanSubscriber(brokers, uid, env="py2c", all=every_copy) as plans:
            assert plans.poll(30) == committed
            with pytest.raises(TimeoutError):
                plans.wait_for(aborted["trigger_event_id"], timeout=2)
    # And so does C's.
    assert _c_reads(dlbrain, brokers, "plans", uid, 1) == [committed]


def test_registry_bound_round_trip(brokers, dlbrain_registry):
    # A master bound to a schema registry (`dlbrain registry`, started by the
    # fixture): its events and request carry the registry's ids, the C
    # optimizer answers, the bound subscriber reads the plan.
    uid = f"py-sr-{RUN}"
    t0 = _now_ms()
    with Reporter(brokers, uid, schema_registry_url=dlbrain_registry.url) as r, \
            PlanSubscriber(brokers, uid, schema_registry=r.registry) as plans:
        assert r.registry is not None and plans.registry is r.registry
        r.report_job(meta={"name": "sr", "user": "ana", "scenario": "ctr"}, state="created",
                     event_time_ms=t0)
        req = r.request_plan("job_stage_create", event_time_ms=t0 + 1000)
        plan = plans.wait_for(req, timeout=120)
        msg = plans.last_message
    assert plan["job_uid"] == uid and plan["plan_id"] == f"plan-{req}"
    assert peek(msg.value()) == r.registry.wire_id(8)  # plan v2, as the registry numbers it


def test_registry_outage_holds_the_message(brokers, alias_registry, caplog):
    # A plan framed with an id only the registry knows (1008: plan v2 under
    # another id) reaches a bound subscriber while the registry is down: it is
    # read again, not skipped, and delivered once the registry is back.
    uid = f"py-sr-out-{RUN}"
    rec = {"event_id": f"plan-{uid}", "event_time_ms": _now_ms(), "plan_id": f"plan-{uid}",
           "job_uid": uid, "stage": "job_stage_create",
           "groups": [{"group": "worker", "count": 2, "resource": {"cpu": 1.0, "memory": GiB}}],
           "optimizer": "py.test", "reason": "alias", "trigger_event_id": f"{uid}-q"}
    frame = encode("plan", rec)
    binding = RegistryBinding("py2c", conf={"url": alias_registry.url, "max.retries": 0})
    with PlanSubscriber(brokers, uid, env="py2c", schema_registry=binding) as plans:
        alias_registry.stop()
        p = Producer({"bootstrap.servers": brokers})
        p.produce("py2c.plans", key=uid.encode(), value=frame[:1] + (1008).to_bytes(4, "big") + frame[5:])
        assert p.flush(30) == 0
        with caplog.at_level("WARNING", logger="dlbrain_client"):
            assert plans.poll(10) is None  # waiting for the registry, not skipped
        assert "read again in 1 s: schema id 1008: the schema registry did not answer" in caplog.text
        alias_registry.start()  # on the same port
        got = plans.poll(30)
    assert got == decode(frame)[1]
    assert alias_registry.log().count("GET /schemas/ids/1008 ") == 1
