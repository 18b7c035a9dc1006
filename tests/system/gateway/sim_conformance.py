"""Does dlbrain sim's master ask what DLRover 0.6.1's master asks? (issue 19)

Three parts, each a subcommand (tests/system/45-sim-conformance.sh runs them):

respond LOG ENV...   The scripted Brain: answers every plan request of the
    ENVs on <env>.plans by a fixed script (answer() below) and logs each
    request as a JSON line to LOG, with every event of those ENVs (job
    events, samples, node events) as the simulated jobs' history. Runs
    until SIGTERM.

dlrover LOG ENV OUT  DLRover's own master code, unchanged from PyPI, replays
    each job of ENV's history on a virtual clock: PSJobResourceOptimizer
    (dlrover/python/master/resource/job.py) with BrainResoureOptimizer
    through dlbrain gateway (DLROVER_BRAIN_SERVICE_ADDR), driven by
    PSTrainingAutoScaler._periodic_optimize_running_resource
    (master/node/job_auto_scaler.py) with DLRover's PerfMonitor fed the
    job's global steps, and adjust_oom_resource at each OOM the simulator
    asked about. The gateway's requests are answered by the same script.
    Writes every request DLRover's master made (virtual time, stage, config,
    OOM pods) to OUT.

compare LOG ENV OUT  The simulator's requests of ENV (from LOG) against
    DLRover's (OUT), job by job: the same stages, in the same order, at the
    same virtual times, with the same config and OOM pods. Prints each job's
    sequence and exits 1 at the first difference.

Only the clock is DLRover's own business here: the modules' `time` is
replaced by a virtual clock (time and sleep), so an hour of a job replays in
seconds; no DLRover function is changed.
"""

import json
import os
import signal
import sys
import types
from collections import defaultdict

PHASE = "optimizer.worker.optimize-phase"
GIB = 1 << 30


def job_name(uid):
    """The workload name of a simulated job: its uid without the seed tag."""
    return uid.rsplit("-", 1)[0]


# ---- the scripted Brain --------------------------------------------------------
def answer(req, nth):
    """The plan answering req, the nth (from 1) request of its job with the
    same (stage, phase, OOM or not): (groups, pods). Empty = DLRover's "no
    plan". Non-empty answers change nothing in a job (a group of count 0 and
    resources 0 keeps everything), except an OOM pod's answer: 64 GiB."""
    stage, phase = req["stage"], (req.get("config") or {}).get(PHASE)
    name = job_name(req["job_uid"])
    keep = lambda g: [{"group": g, "count": 0, "resource": {}}]  # noqa: E731
    if req.get("oom_pods"):
        return [], [{"name": p, "resource": {"memory": 64 * GIB}} for p in req["oom_pods"]]
    if stage == "job_stage_create":
        return keep("worker"), []
    if stage == "job_stage_worker_initial" and phase == "initial":
        return keep("worker"), []
    if stage in ("job_stage_ps_initial", "job_stage_ps_running"):
        # "gated" jobs get their PS plans (then PS waits an hour); the others never.
        return (keep("ps") if name.startswith("gated") else []), []
    if stage == "job_stage_worker_running" and nth % 4 == 0:
        return keep("worker"), []  # every 4th stable ask: the next waits 300 s
    return [], []  # the sample phase, the other stable asks


def respond(log_path, envs):
    from confluent_kafka import Consumer, Producer
    from dlbrain_client import codec
    from dlbrain_client.catalog import TOPICS

    brokers = os.environ["DLBRAIN_BROKERS"]
    kinds = ["plan_request", "job_event", "runtime_sample", "node_event"]
    topics = ["%s.%s" % (e, TOPICS[k]) for e in envs for k in kinds]
    # Topics appear when first written to: look for them often.
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": "conformance-%d" % os.getpid(),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": 200, "fetch.wait.max.ms": 10})
    consumer.subscribe(topics)
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 0})
    counts = defaultdict(int)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(log_path, "w") as log:
        print("ready", flush=True)
        while not stop:
            m = consumer.poll(0.05)
            if m is None or m.error():
                continue
            env = m.topic().split(".", 1)[0]
            t, rec = codec.decode(m.value())
            log.write(json.dumps({"env": env, "type": t, **rec}, sort_keys=True) + "\n")
            log.flush()
            if t != "plan_request":
                continue
            phase = (rec.get("config") or {}).get(PHASE)
            key = (env, rec["job_uid"], rec["stage"], phase, bool(rec.get("oom_pods")))
            counts[key] += 1
            groups, pods = answer(rec, counts[key])
            pid = "plan-" + rec["event_id"]
            plan = {"event_id": pid, "event_time_ms": rec["event_time_ms"], "plan_id": pid,
                    "job_uid": rec["job_uid"], "stage": rec["stage"], "groups": groups,
                    "pods": pods, "actions": [], "optimizer": "conformance.script",
                    "reason": "scripted", "trigger_event_id": rec["event_id"]}
            producer.produce("%s.plans" % env, codec.encode("plan", plan), key=rec["job_uid"])
            producer.flush(10)
    consumer.close()


# ---- the simulated jobs' history ------------------------------------------------
def histories(log_path, env):
    """Per job of env: arrival, start, end (ms), pods at start, samples
    [(ms, global_step)], OOMs [(ms, pod, type, cpu, memory)] the simulator
    asked about (not the one that failed the job: DLRover does not ask past
    max_relaunch_count either), and the simulator's own requests."""
    jobs = {}

    def job(uid):
        return jobs.setdefault(uid, {"uid": uid, "arrival": None, "start": None, "end": None,
                                     "pods": {}, "samples": [], "ooms": [], "asks": []})
    ooms_of = defaultdict(int)
    for line in open(log_path):
        e = json.loads(line)
        if e["env"] != env:
            continue
        j, t = job(e["job_uid"]), e["event_time_ms"]
        if e["type"] == "job_event":
            if e.get("state") == "created":
                j["arrival"] = t
            elif e.get("state") == "running":
                j["start"] = t
            elif e.get("state") in ("succeeded", "failed"):
                j["end"] = t
        elif e["type"] == "node_event":
            pod = (e["pod_name"], e["pod_type"], e["cpu_requested"], e["memory_requested"])
            if e["kind"] == "pod_phase" and j["start"] == t and e["pod_name"] not in j["pods"]:
                j["pods"][e["pod_name"]] = pod
            elif e["kind"] == "oom_killed":
                ooms_of[e["pod_name"]] += 1
                if ooms_of[e["pod_name"]] <= 3:  # the simulator's max_relaunch
                    j["ooms"].append((t,) + pod)
        elif e["type"] == "runtime_sample":
            j["samples"].append((t, e["global_step"]))
        elif e["type"] == "plan_request":
            j["asks"].append(ask_line(t, e["stage"], e.get("config") or {}, e.get("oom_pods") or []))
    return [jobs[u] for u in sorted(jobs)]


SIM_START_MS = 1704067200000  # dlbrain sim's virtual start, 2024-01-01T00:00:00Z


def ask_line(t_ms, stage, config, oom_pods):
    """One request as compared: virtual seconds since the simulation's start,
    stage, config, OOM pods."""
    cfg = ",".join("%s=%s" % kv for kv in sorted(config.items())) or "-"
    return "%6.0f %-25s %-40s %s" % ((t_ms - SIM_START_MS) / 1000.0, stage, cfg,
                                     " ".join(sorted(oom_pods)) or "-")


# ---- DLRover's master, replaying one job ---------------------------------------
def dlrover(log_path, env, out_path):
    import dlrover.python.master.monitor.perf_monitor as dl_perf
    import dlrover.python.master.node.job_auto_scaler as dl_scaler
    import dlrover.python.master.resource.job as dl_job
    from dlrover.python.brain.client import GlobalBrainClient
    from dlrover.python.common.constants import OptimizeMode
    from dlrover.python.common.global_context import Context
    from dlrover.python.common.node import Node, NodeGroupResource, NodeResource

    client = GlobalBrainClient.BRAIN_CLIENT
    if not client.available():
        sys.exit("DLRover's client found no Brain at DLROVER_BRAIN_SERVICE_ADDR")
    ctx = Context.singleton_instance()
    # A Kubernetes job's replica specs default autoScale to "true" (kubernetes.py).
    ctx.auto_worker_enabled = ctx.auto_ps_enabled = True

    clock = types.SimpleNamespace(now=0.0, on_sleep=None)

    def sleep(s):
        clock.now += s
        if clock.on_sleep:
            clock.on_sleep(clock.now)

    fake_time = types.SimpleNamespace(time=lambda: clock.now, sleep=sleep,
                                      monotonic=lambda: clock.now)
    for mod in (dl_job, dl_scaler, dl_perf):
        mod.time = fake_time

    asks = []
    send = client.request_optimization

    def recorded(request):
        pods = [n for n, p in request.jobs[0].state.pods.items() if p.is_oom]
        asks.append(ask_line(clock.now * 1000.0, request.type,
                             dict(request.config.customized_config), pods))
        return send(request)
    client.request_optimization = recorded

    result = {}
    for h in histories(log_path, env):
        asks.clear()
        replay(h, clock, dl_job, dl_scaler, dl_perf, Node, NodeGroupResource, NodeResource,
               OptimizeMode)
        result[h["uid"]] = list(asks)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


def replay(h, clock, dl_job, dl_scaler, dl_perf, Node, NodeGroupResource, NodeResource,
           OptimizeMode):
    pods = list(h["pods"].values())

    def group(kind):
        of = [p for p in pods if p[1] == kind]
        if not of:
            return NodeGroupResource(0, NodeResource(0, 0))
        return NodeGroupResource(len(of), NodeResource(of[0][2], of[0][3] // (1 << 20)))
    clock.on_sleep = None
    clock.now = h["arrival"] / 1000.0
    opt = dl_job.PSJobResourceOptimizer(group("worker"), group("ps"), OptimizeMode.CLUSTER,
                                        job_uuid=h["uid"])
    opt.init_job_resource(dl_job.JobResource())  # job_stage_create, as the master starts
    if h["start"] is None:
        return
    perf = dl_perf.PerfMonitor()
    index = lambda name: int(name.rsplit("-", 1)[1])  # noqa: E731
    for p in pods:
        if p[1] == "worker":
            perf.add_running_worker("worker", index(p[0]))
    perf.set_target_worker_num(sum(1 for p in pods if p[1] == "worker"))
    # The autoscaler as start_auto_scaling makes it, without its threads:
    # the loop runs here, its plans are read but not executed.
    scaler = object.__new__(dl_scaler.PSTrainingAutoScaler)
    scaler._job_optimizer = opt
    scaler._perf_monitor = perf
    scaler._ps_manager = types.SimpleNamespace(exist_migrated_ps_nodes=lambda: False)
    scaler._scale_interval = 30
    scaler._autoscaling_started = True
    scaler.execute_job_optimization_plan = lambda plan: None
    ooms, samples = list(h["ooms"]), list(h["samples"])
    nodes = {}

    def at(now):
        t = round(now * 1000)
        # A tick's OOMs, then its sample, then the loop's check (the simulator's order).
        while ooms and ooms[0][0] <= t:
            _, name, kind, cpu, mem = ooms.pop(0)
            node = nodes.setdefault(name, Node(kind, index(name), NodeResource(cpu, mem >> 20),
                                               name=name))
            opt.adjust_oom_resource(node)
        while samples and samples[0][0] <= t:
            st, step = samples.pop(0)
            perf.collect_global_step(step, st / 1000.0)
        if h["end"] is not None and t >= h["end"]:
            scaler._autoscaling_started = False
    clock.now = h["start"] / 1000.0
    clock.on_sleep = at
    at(clock.now)
    dl_scaler.PSTrainingAutoScaler._periodic_optimize_running_resource(scaler)
    clock.on_sleep = None


# ---- the comparison -------------------------------------------------------------
def compare(log_path, env, out_path):
    theirs = json.load(open(out_path))
    bad = 0
    for h in histories(log_path, env):
        ours, want = h["asks"], theirs.get(h["uid"], [])
        print("== %s: %d requests by the simulator, %d by DLRover's master" % (
            h["uid"], len(ours), len(want)))
        for k in range(max(len(ours), len(want))):
            a = ours[k] if k < len(ours) else "(none)"
            b = want[k] if k < len(want) else "(none)"
            if a != b:
                print("   first difference at request %d:\n     sim:     %s\n     DLRover: %s"
                      % (k + 1, a, b))
                bad += 1
                break
            print("   " + a)
    return 1 if bad else 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "respond":
        respond(sys.argv[2], sys.argv[3:])
    elif cmd == "dlrover":
        dlrover(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit("usage: sim_conformance.py respond|dlrover|compare ...")
