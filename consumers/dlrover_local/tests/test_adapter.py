"""The conversions between dlbrain's events and DLRover's PSLocalOptimizer
(adapter.py), and the consumer's ordering of a job's events before its
requests (consumer.py), without Kafka."""

import pytest
from dlbrain_client import codec
from dlrover.python.common.node import NodeGroupResource, NodeResource
from dlrover.python.master.resource.optimizer import ResourcePlan
from dlrover.python.master.stats.reporter import LocalStatsReporter

from dlrover_local import adapter
from dlrover_local.consumer import ConfigError, DlroverLocal, check_env, parse_after

MB, GIB = 1 << 20, 1 << 30
T0 = 1704067200000


def pod(name, typ, index, cpu_used, cpu_req, mem_used, mem_req):
    return {"name": name, "type": typ, "index": index, "cpu_used": cpu_used,
            "cpu_requested": cpu_req, "memory_used": mem_used, "memory_requested": mem_req,
            "speed": None}


def sample(t_s, step, speed, pods, uid="j"):
    return {"event_id": f"{uid}-s{t_s}", "event_time_ms": T0 + t_s * 1000, "job_uid": uid,
            "global_step": step, "speed": speed, "pods": pods}


def request(stage, t_s=0, oom_pods=(), config=None, uid="j", rid=None):
    return {"event_id": rid or f"{uid}-r{t_s}", "event_time_ms": T0 + t_s * 1000, "job_uid": uid,
            "stage": stage, "oom_pod": oom_pods[0] if oom_pods else None,
            "oom_pods": list(oom_pods), "config": dict(config or {})}


def job_pods(ps_cpu_used=2.0, ps_cpu_req=8.0):
    return [pod("j-ps-0", "ps", 0, ps_cpu_used, ps_cpu_req, 3 * GIB, 8 * GIB),
            pod("j-worker-0", "worker", 0, 3.0, 4.0, 5 * GIB, 16 * GIB),
            pod("j-worker-1", "worker", 1, 3.2, 4.0, 6 * GIB, 16 * GIB)]


# ---- units and limits ----------------------------------------------------------
def test_memory_quantities():
    assert adapter.memory_bytes("102400Mi") == 102400 * MB
    assert adapter.memory_bytes("100Gi") == 100 * GIB
    assert adapter.memory_bytes("8G") == 8 * 10**9
    assert adapter.memory_bytes("1073741824") == GIB
    with pytest.raises(adapter.AdapterError, match="memory quantity '12Xi'"):
        adapter.memory_bytes("12Xi")


def test_default_limits_are_dlrovers_in_cores_and_bytes():
    lim = adapter.default_limits()
    assert (lim.cpu, lim.memory) == (100.0, 100 * GIB)


def test_runtime_metric_as_the_collector_builds_it():
    m = adapter.runtime_metric(sample(30, 12, 0.5, [
        pod("j-ps-0", "ps", 0, 1.234, 8.0, 3 * GIB + 123, 16 * GIB + 5)]))
    assert (m.global_step, m.speed, m.timestamp) == (12, 0.5, (T0 + 30000) // 1000)
    (n,) = m.running_nodes
    assert (n.type, n.id, n.name) == ("ps", 0, "j-ps-0")
    # Requested: the master's node config, cores and MiB.
    assert (n.config_resource.cpu, n.config_resource.memory) == (8.0, 16384)
    # Used: the agent's whole MiB, times MemoryUnit.MB; CPU rounded as update_resource_usage does.
    assert (n.used_resource.cpu, n.used_resource.memory) == (1.23, 3 * GIB)


def test_samples_reported_as_the_reporting_thread_does():
    j = adapter.JobOptimizer("j", adapter.default_limits())
    assert not j.add_sample(sample(30, 0, 0.0, job_pods()))  # no step, no speed
    assert j.add_sample(sample(60, 10, 0.3, job_pods()))
    assert not j.add_sample(sample(90, 10, 0.3, job_pods()))  # the step did not grow
    assert not j.add_sample(sample(120, 20, 0.0, job_pods()))  # stalled
    assert j.add_sample(sample(150, 30, 0.3, job_pods()))
    assert (j.samples, j.reported) == (5, 2)
    assert [s.global_step for s in j.opt._stats_collector.get_runtime_stats()] == [10, 30]


def test_each_job_has_its_own_reporter():
    before = LocalStatsReporter._instance
    a = adapter.JobOptimizer("a", adapter.default_limits())
    b = adapter.JobOptimizer("b", adapter.default_limits())
    assert a.opt._stats_collector is not b.opt._stats_collector
    assert LocalStatsReporter._instance is before  # the singleton is left as it was
    a.add_sample(sample(30, 5, 0.2, job_pods(), uid="a"))
    assert len(a.opt._stats_collector.get_runtime_stats()) == 1
    assert b.opt._stats_collector.get_runtime_stats() == []


# ---- what DLRover answers ------------------------------------------------------
def test_create_plan_with_dlrovers_default_limits():
    """16 cores (100 / 5, at most 16) and memory 0: PSLocalOptimizer caps the
    bytes of the limit at 8 * 1024 (meant as MiB) and then divides by 2^20.
    0 is "keep" in a dlbrain plan, as it is for DLRover's master."""
    j = adapter.JobOptimizer("j", adapter.default_limits())
    ev = adapter.plan_event(request("job_stage_create"), j.ask(request("job_stage_create")))
    assert ev["groups"] == [
        {"group": "worker", "count": 1, "resource": {"cpu": 16, "memory": 0}},
        {"group": "ps", "count": 1, "resource": {"cpu": 16, "memory": 0}}]
    assert ev["pods"] == [] and ev["optimizer"] == adapter.OPT_PLAN
    assert "PSLocalOptimizer.generate_opt_plan(job_stage_create)" in ev["reason"]


def test_oom_request_doubles_the_pods_memory():
    j = adapter.JobOptimizer("j", adapter.default_limits())
    j.add_node_event({"kind": "oom_killed", "pod_name": "j-ps-0", "pod_type": "ps",
                      "pod_index": 0, "cpu_requested": 8.0, "memory_requested": 12 * GIB})
    req = request("job_stage_ps_initial", oom_pods=["j-ps-0"])
    ev = adapter.plan_event(req, j.ask(req))
    assert ev["optimizer"] == adapter.OOM_PLAN and ev["groups"] == []
    assert ev["pods"] == [{"name": "j-ps-0", "resource": {"cpu": 8.0, "memory": 24 * GIB}}]


def test_oom_node_from_the_event_else_the_sample():
    n = adapter.oom_node("x-worker-3", None, pod("x-worker-3", "worker", 3, 1, 4.0, 1, 10 * GIB))
    assert (n.type, n.id, n.config_resource.cpu, n.config_resource.memory) == \
        ("worker", 3, 4.0, 10240)
    ev = {"pod_type": "ps", "pod_index": 1, "cpu_requested": None, "memory_requested": 6 * GIB}
    n = adapter.oom_node("x-ps-1", ev, pod("x-ps-1", "ps", 1, 1, 2.0, 1, 4 * GIB))
    assert (n.type, n.id, n.config_resource.cpu, n.config_resource.memory) == ("ps", 1, 2.0, 6144)
    n = adapter.oom_node("x-ps-2", None, None)
    assert (n.type, n.id, n.config_resource.memory) == ("ps", 2, 0)


def test_worker_plan_from_samples():
    j = adapter.JobOptimizer("j", adapter.default_limits())
    for k in range(3):
        j.add_sample(sample(30 * (k + 1), 10 * (k + 1), 0.3, job_pods()))
    req = request("job_stage_worker_initial", config={"optimizer.worker.optimize-phase": "initial"})
    ev = adapter.plan_event(req, j.ask(req))
    (g,) = ev["groups"]
    # PS CPU 2/8 = 25%: workers x 0.9/0.25, memory 1.5 x the largest worker's, in bytes.
    assert g["group"] == "worker" and g["count"] == 7
    assert g["resource"]["cpu"] == pytest.approx(3.1)
    assert g["resource"]["memory"] == int(1.5 * 6 * GIB) // MB * MB


def test_dlrovers_exception_is_an_empty_plan_naming_it():
    j = adapter.JobOptimizer("j", adapter.default_limits())
    j.add_sample(sample(30, 10, 0.3, job_pods(ps_cpu_req=0.0)))  # a PS without a CPU request
    req = request("job_stage_worker_initial")
    out = j.ask(req)
    assert out.plan is None and out.error.startswith("ZeroDivisionError")
    ev = adapter.plan_event(req, out)
    assert ev["groups"] == [] and ev["pods"] == []
    assert "raised ZeroDivisionError" in ev["reason"]
    codec.encode("plan", ev)


# ---- ResourcePlan -> plan ------------------------------------------------------
def test_plan_conversion_mib_to_bytes_and_what_is_not_applied():
    plan = ResourcePlan()
    plan.node_group_resources["worker"] = NodeGroupResource(-2, NodeResource(2.5, 4096.0))
    plan.node_group_resources["ps"] = NodeGroupResource(3, NodeResource(7.9, 10240))
    plan.node_resources["j-ps-0"] = NodeResource(3.25, 0.0)
    req = request("job_stage_ps_running", rid="r-1")
    ev = adapter.plan_event(req, adapter.Outcome(adapter.OPT_PLAN, plan, samples=4))
    assert ev["groups"] == [
        {"group": "worker", "count": 0, "resource": {"cpu": 2.5, "memory": 4 * GIB}},
        {"group": "ps", "count": 3, "resource": {"cpu": 7.9, "memory": 10 * GIB}}]
    assert ev["pods"] == [{"name": "j-ps-0", "resource": {"cpu": 3.25, "memory": 0}}]
    assert "worker count -2 read as 0" in ev["reason"]
    assert (ev["plan_id"], ev["event_id"], ev["trigger_event_id"]) == \
        ("plan-r-1", "plan-r-1", "r-1")
    assert (ev["stage"], ev["event_time_ms"], ev["actions"]) == ("job_stage_ps_running", T0, [])
    _, back = codec.decode(codec.encode("plan", ev))
    assert back["groups"][0]["resource"]["memory"] == 4 * GIB


def test_plan_id_as_the_c_optimizer_derives_it():
    assert adapter.plan_id("req-\U0001F600-1") == "plan-req-\U0001F600-1"
    # pipeline/base/id.c dlb_id_derive on the same 127-byte id (a 4-byte
    # character at byte 110), printed by the C function.
    rid = "a" * 110 + "\U0001F600" + "a" * 12 + "z"
    assert adapter.plan_id(rid) == "plan-" + "a" * 105 + "~97c77b6126deeb4e"
    assert len(adapter.plan_id(rid).encode()) <= 127


# ---- the consumer's order, without Kafka ---------------------------------------
class Msg:
    """What the consumer reads of a Kafka message."""

    def __init__(self, topic, partition, offset, value, headers=None):
        self._t, self._p, self._o, self._v, self._h = topic, partition, offset, value, headers

    def topic(self): return self._t
    def partition(self): return self._p
    def offset(self): return self._o
    def value(self): return self._v
    def headers(self): return self._h
    def error(self): return None


def test_a_request_sees_the_events_before_it_and_waits_for_its_positions():
    c = DlroverLocal("t1", "127.0.0.1:1", adapter.default_limits(), {})
    samples = [sample(30 * k, 10 * k, 0.3, job_pods()) for k in (1, 2, 3)]
    # The request at 60 s, read before the samples, after two of them by its header.
    req = request("job_stage_ps_initial", t_s=60)
    c._read(Msg("t1.plan-requests", 0, 0, codec.encode("plan_request", req),
                [("dlb.after", b"t1.metrics:0:1")]))
    c._read(Msg("t1.metrics", 0, 0, codec.encode("runtime_sample", samples[0])))
    assert c._answer_ready() == []  # metrics offset 1 not read yet
    c._read(Msg("t1.metrics", 0, 1, codec.encode("runtime_sample", samples[1])))
    c._read(Msg("t1.metrics", 0, 2, codec.encode("runtime_sample", samples[2])))
    (out,) = c._answer_ready()
    _, plan = codec.decode(out[1])
    assert plan["trigger_event_id"] == req["event_id"]
    assert "on 2 runtime stat(s)" in plan["reason"]  # not the sample at 90 s
    assert len(c.jobs["j"].events) == 1  # kept for the job's next request


def test_bad_dlb_after_header_and_env_names():
    assert parse_after(b"") == []
    assert parse_after(b"e.metrics:2:40,e.k8s-events:0:7") == [("e.metrics", 2, 40),
                                                                ("e.k8s-events", 0, 7)]
    with pytest.raises(ValueError, match="item 2: the offset is not a number"):
        parse_after(b"e.metrics:2:40,e.k8s-events:0:x")
    assert check_env("cmp_dlrover_local") == "cmp_dlrover_local"
    with pytest.raises(ConfigError, match="environment name 'cmp-x'"):
        check_env("cmp-x")


class Watermarks:
    """The consumer's one question to Kafka here: where a partition's log ends."""

    def __init__(self, high):
        self.high = high

    def get_watermark_offsets(self, tp, timeout=None):
        return 0, self.high


def test_a_position_past_the_logs_end_holds_nothing():
    c = DlroverLocal("t2", "127.0.0.1:1", adapter.default_limits(), {})
    c.consumer = Watermarks(2)
    s0 = sample(30, 10, 0.3, job_pods())
    c._read(Msg("t2.metrics", 0, 0, codec.encode("runtime_sample", s0)))
    req = request("job_stage_ps_initial", t_s=60, rid="past")
    c._read(Msg("t2.plan-requests", 0, 0, codec.encode("plan_request", req),
                [("dlb.after", b"t2.metrics:0:9")]))
    req2 = request("job_stage_ps_initial", t_s=60, uid="k", rid="behind")
    c._read(Msg("t2.plan-requests", 0, 1, codec.encode("plan_request", req2),
                [("dlb.after", b"t2.metrics:0:1")]))
    assert c._answer_ready() == []  # both wait at first
    for r in (c.jobs["j"].requests[0], c.jobs["k"].requests[0]):
        r.read_at -= 3  # ORDER_WAIT_S later
    (out,) = c._answer_ready()  # offset 9 is past the end (2): answered; offset 1 is not
    assert out[2] == "past"
    assert [r.rec["event_id"] for r in c.jobs["k"].requests] == ["behind"]
