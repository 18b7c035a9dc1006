"""Are the dlrover-local consumer's plans the ones DLRover 0.6.1's code returns?

    dlrover_local_check.py ENV...     (brokers: $DLBRAIN_BROKERS)

Reads every environment's runtime samples, node events, plan requests and
plans from Kafka (read_committed, from the beginning), and checks:

* every request has exactly one committed plan, and every plan answers a
  request (trigger_event_id);
* each plan is what DLRover's PSLocalOptimizer (PyPI dlrover 0.6.1, called
  here without the consumer's code) returns for the same inputs: per job a new
  optimizer, whose LocalStatsReporter is given the job's samples up to each
  request in turn (those with a speed and a grown global step, as the master's
  reporting thread does), then generate_oom_recovery_plan
  with the pods' latest oom_killed events for an OOM request, else
  generate_opt_plan(stage, config). Memory compared in bytes (DLRover's MiB
  times 2^20), CPU and counts exactly; an exception must be an empty plan
  whose reason names it.

Prints per environment what was compared and which kinds of plans it saw, and
each difference (at most 10); exits 1 on any.
"""

import json
import os
import sys
from collections import Counter, defaultdict

os.environ.setdefault("DLROVER_LOG_LEVEL", "WARNING")

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition  # noqa: E402
from dlbrain_client import codec  # noqa: E402
from dlrover.python.common.node import Node, NodeResource  # noqa: E402
from dlrover.python.master.resource.local_optimizer import PSLocalOptimizer  # noqa: E402
from dlrover.python.master.stats.reporter import LocalStatsReporter  # noqa: E402
from dlrover.python.master.stats.training_metrics import RuntimeMetric  # noqa: E402
from dlrover.python.scheduler.job import ResourceLimits  # noqa: E402

MB = 1 << 20
# A job without spec.resourceLimits: 100 cores, 102400Mi in bytes (K8sJobArgs).
LIMITS = ResourceLimits(100.0, 102400 * MB)


def read_topic(brokers, topic):
    """Every record of topic, read_committed, as (type, record, partition, offset)."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "dlrover-local-check",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    out = []
    try:
        t = c.list_topics(topic, timeout=10).topics.get(topic)
        if t is None or t.error is not None:
            return out
        ends = {}
        for p in t.partitions:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if hi > lo:
                ends[p] = hi
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        while ends:
            first = c.poll(1.0)
            for m in ([first] if first is not None else []) + c.consume(1000, 0):
                if m.error():
                    continue
                typ, rec = codec.decode(m.value())
                out.append((typ, rec, m.partition(), m.offset()))
            for tp in c.position([TopicPartition(topic, p) for p in ends]):
                if tp.offset >= ends[tp.partition]:
                    del ends[tp.partition]
    finally:
        c.close()
    return out


class Replay:
    """One job as a new DLRover master process sees it: its PSLocalOptimizer
    and the runtime statistics its reporter has been given so far."""

    def __init__(self, uid, samples, ooms):
        LocalStatsReporter._instance = None  # a new master process for this job
        self.opt = PSLocalOptimizer(uid, LIMITS)
        self.samples, self.ooms, self.last = list(samples), ooms, 0

    def feed_until(self, t):
        """Reports the samples up to t (ms) that have a speed and a grown step."""
        while self.samples and self.samples[0]["event_time_ms"] <= t:
            s = self.samples.pop(0)
            if not (s["speed"] > 0 and s["global_step"] > self.last):
                continue
            nodes = []
            for p in s["pods"]:
                n = Node(p["type"], p["index"], NodeResource(p["cpu_requested"],
                                                             p["memory_requested"] // MB),
                         name=p["name"])
                n.used_resource = NodeResource(round(p["cpu_used"], 2),
                                               (p["memory_used"] // MB) * MB)
                nodes.append(n)
            self.opt._stats_collector.report_runtime_stats(
                RuntimeMetric(nodes, s["global_step"], s["speed"], s["event_time_ms"] // 1000))
            self.last = s["global_step"]

    def expected(self, req):
        """(groups, pods, error) DLRover's PSLocalOptimizer gives req, the
        job's samples and OOM events as of the request."""
        t = req["event_time_ms"]
        self.feed_until(t)
        try:
            if req["oom_pods"]:
                nodes = []
                for pod in req["oom_pods"]:
                    ev = [e for e in self.ooms
                          if e["pod_name"] == pod and e["event_time_ms"] <= t][-1]
                    nodes.append(Node(ev["pod_type"], ev["pod_index"],
                                      NodeResource(ev["cpu_requested"],
                                                   ev["memory_requested"] // MB), name=pod))
                plan = self.opt.generate_oom_recovery_plan(nodes, req["stage"],
                                                           dict(req["config"]))
            else:
                plan = self.opt.generate_opt_plan(req["stage"], dict(req["config"]))
        except Exception as e:  # noqa: BLE001
            return [], [], type(e).__name__
        groups = [{"group": k, "count": max(0, int(g.count)),
                   "resource": {"cpu": float(g.node_resource.cpu),
                                "memory": int(round(g.node_resource.memory * MB))}}
                  for k, g in plan.node_group_resources.items()]
        pods = [{"name": k, "resource": {"cpu": float(r.cpu), "memory": int(round(r.memory * MB))}}
                for k, r in plan.node_resources.items()]
        return groups, pods, None


def got(plan):
    groups = [{"group": g["group"], "count": g["count"],
               "resource": {"cpu": g["resource"]["cpu"], "memory": g["resource"]["memory"]}}
              for g in plan["groups"]]
    pods = [{"name": p["name"], "resource": {"cpu": p["resource"]["cpu"],
                                             "memory": p["resource"]["memory"]}}
            for p in plan["pods"]]
    return groups, pods


def check_env(brokers, env):
    samples, ooms, reqs = defaultdict(list), defaultdict(list), []
    for typ, rec, _, _ in read_topic(brokers, f"{env}.metrics"):
        samples[rec["job_uid"]].append(rec)
    for typ, rec, _, _ in read_topic(brokers, f"{env}.k8s-events"):
        if rec["kind"] == "oom_killed":
            ooms[rec["job_uid"]].append(rec)
    reqs = [rec for _, rec, _, _ in read_topic(brokers, f"{env}.plan-requests")]
    plans = defaultdict(list)
    for _, rec, _, _ in read_topic(brokers, f"{env}.plans"):
        plans[rec["trigger_event_id"]].append(rec)
    for lst in list(samples.values()) + list(ooms.values()):
        lst.sort(key=lambda r: r["event_time_ms"])
    bad, kinds, jobs = [], Counter(), {}
    # A job's requests in event-time order (the simulator's; a partition keeps it).
    reqs.sort(key=lambda r: (r["job_uid"], r["event_time_ms"]))
    ids = {r["event_id"] for r in reqs}
    for trigger in plans:
        if trigger not in ids:
            bad.append(f"plan {plans[trigger][0]['plan_id']} answers no request")
    for req in reqs:
        rid, answers = req["event_id"], plans.get(req["event_id"], [])
        if len(answers) != 1:
            bad.append(f"request {rid} ({req['stage']}): {len(answers)} committed plans")
            continue
        plan = answers[0]
        uid = req["job_uid"]
        if uid not in jobs:
            jobs[uid] = Replay(uid, samples[uid], ooms[uid])
        want_g, want_p, err = jobs[uid].expected(req)
        have_g, have_p = got(plan)
        oom = bool(req["oom_pods"])
        meta = (plan["plan_id"], plan["event_time_ms"], plan["stage"], plan["job_uid"],
                plan["optimizer"])
        want_meta = ("plan-" + rid, req["event_time_ms"], req["stage"], req["job_uid"],
                     "dlrover_local.generate_oom_recovery_plan" if oom
                     else "dlrover_local.generate_opt_plan")
        if meta != want_meta:
            bad.append(f"request {rid}: plan {meta}, expected {want_meta}")
        if (have_g, have_p) != (want_g, want_p):
            bad.append(f"request {rid} ({req['stage']}): consumer {json.dumps([have_g, have_p])}"
                       f" DLRover {json.dumps([want_g, want_p])}")
        if err is not None and err not in plan["reason"]:
            bad.append(f"request {rid}: DLRover raised {err}, the reason says {plan['reason']!r}")
        what = ("oom " + req["stage"] + (" pods" if have_p else "")) if oom else (
            req["stage"] + " " + ("+".join(g["group"] for g in have_g) if have_g else
                                  "pods" if have_p else ("raised " + err) if err else "none"))
        kinds[what] += 1
    print(f"{env}: {len(reqs)} requests, {sum(len(v) for v in plans.values())} plans, "
          f"{len(bad)} difference(s) from DLRover's PSLocalOptimizer")
    for k in sorted(kinds):
        print(f"  {kinds[k]:5d}  {k}")
    for b in bad[:10]:
        print("  DIFFERENT: " + b)
    return kinds, bad


def main():
    brokers = os.environ["DLBRAIN_BROKERS"]
    bad = 0
    for env in sys.argv[1:]:
        _, b = check_env(brokers, env)
        bad += len(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
