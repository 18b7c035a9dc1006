"""Does dlbrain sim's master ask what DLRover 0.6.1's master asks? (issue 19)

Three parts, each a subcommand (tests/system/45-sim-conformance.sh runs them):

respond LOG ENV...   The scripted Brain: answers every plan request of the
    ENVs on <env>.plans by a fixed script (answer() below) and logs each
    request as a JSON line to LOG, with every event of those ENVs (job
    events, samples, node events) as the simulated jobs' history. Runs
    until SIGTERM.

dlrover LOG ENV OUT [ASK_EVERY_S]  DLRover's own master code, unchanged from
    PyPI, replays each job of ENV's history on a virtual clock (Master
    below): PSJobResourceOptimizer (master/resource/job.py) with
    BrainResoureOptimizer through dlbrain gateway
    (DLROVER_BRAIN_SERVICE_ADDR), driven by PSTrainingAutoScaler's loop
    (master/node/job_auto_scaler.py) with DLRover's PerfMonitor, its
    ParameterServerManager and WorkerManager executing the plans the job got,
    and DistributedJobManager's node rules (master/node/dist_job_manager.py:
    _should_relaunch at each OOM, should_early_stop) with the
    TFPSNodeHandlingCallback its master registers. The gateway's requests
    are answered by the same script. Writes every request DLRover's master
    made (virtual time, stage, config, OOM pods) and the job's end when the
    master stopped it to OUT.

compare LOG ENV OUT  The simulator's requests of ENV (from LOG) against
    DLRover's (OUT), job by job: the same stages, in the same order, at the
    same virtual times, with the same config and OOM pods, and the same
    failure. Prints each job's sequence and exits 1 at the first difference.

Only the clock is DLRover's own business here: the modules' `time` is
replaced by a virtual clock (time and sleep), so an hour of a job replays in
seconds; no DLRover function is changed.
"""

import copy
import json
import os
import signal
import sys
import threading
import types
from collections import defaultdict
from datetime import datetime

PHASE = "optimizer.worker.optimize-phase"
GIB = 1 << 30
MIB = 1 << 20


def job_name(uid):
    """The workload name of a simulated job: its uid without the seed tag."""
    return uid.rsplit("-", 1)[0]


# ---- the scripted Brain --------------------------------------------------------
def answer(req, nth):
    """The plan answering req, the nth (from 1) request of its job with the
    same (stage, phase, OOM or not): (groups, pods). Empty = DLRover's "no
    plan". A group of count 0 and resources 0 keeps everything. By the
    job's name:
    - every OOM pod named gets 64 GiB;
    - gated*, hog*: "keep" PS plans (then PS waits an hour); the others none;
    - every 4th stable worker ask: "keep" (the next check waits 300 s);
    - grow*: at worker initial 6 workers of 5 cores and 8 GiB, at ps_initial
      2 PS, at the 2nd stable ask 5 workers;
    - wide*: starts with 96 GiB workers; at worker initial worker 1 gets
      64 GiB (it needs more: not relaunched at its OOM, the job goes on);
    - huge*: starts with 48 GiB workers (its one worker needs more than
      64 GiB: relaunched with 64 GiB, then not, and the job fails);
    - tight*: starts with 11 GiB workers, which outgrow them after the
      first check (those OOMs name no pod and get no memory: the 4th fails
      the job);
    - hog*, moving*, stuck*: start with 4-core, 8 GiB pods; at ps_initial PS 0 of moving* moves to a 16-core pod, of
      stuck* to a 32-core 64 GiB pod (the cluster has room for neither at
      once: one waits, the other never runs); hog* gets the 3 PS it has."""
    stage, phase = req["stage"], (req.get("config") or {}).get(PHASE)
    uid = req["job_uid"]
    name = job_name(uid)
    keep = lambda g: [{"group": g, "count": 0, "resource": {}}]  # noqa: E731
    group = lambda g, n=0, cpu=0, gib=0: {  # noqa: E731
        "group": g, "count": n, "resource": {"cpu": float(cpu), "memory": gib * GIB}}
    pod = lambda p, cpu=0, gib=0: {  # noqa: E731
        "name": "%s-%s" % (uid, p), "resource": {"cpu": float(cpu), "memory": gib * GIB}}
    if req.get("oom_pods"):
        return [], [{"name": p, "resource": {"memory": 64 * GIB}} for p in req["oom_pods"]]
    initial = stage == "job_stage_worker_initial" and phase == "initial"
    if stage == "job_stage_create":
        if name.startswith("wide"):
            return [group("worker", gib=96)], []
        if name.startswith("huge"):
            return [group("worker", gib=48)], []
        if name.startswith("tight"):
            return [group("worker", gib=11)], []
        if name.startswith(("hog", "moving", "stuck")):
            return [group("worker", cpu=4, gib=8), group("ps", cpu=4, gib=8)], []
        return keep("worker"), []
    if initial and name.startswith("grow"):
        return [group("worker", 6, 5, 8)], []
    if initial and name.startswith("wide"):
        return [], [pod("worker-1", gib=64)]
    if initial:
        return keep("worker"), []
    if stage == "job_stage_ps_initial":
        if name.startswith("grow"):
            return [group("ps", 2)], []
        if name.startswith("moving"):
            return [], [pod("ps-0", 16, 16)]
        if name.startswith("stuck"):
            return [], [pod("ps-0", 32, 64)]
        if name.startswith("hog"):
            return [group("ps", 3)], []  # the count it has: the master resets its records
    if stage in ("job_stage_ps_initial", "job_stage_ps_running"):
        # "gated" jobs get their PS plans (then PS waits an hour); the others never.
        return (keep("ps") if name.startswith(("gated", "hog")) else []), []
    if stage == "job_stage_worker_running" and name.startswith("grow") and nth == 2:
        return [group("worker", 5)], []
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
def seq(event_id):
    """A job's events are numbered in the order its simulator published them."""
    return int(event_id.rsplit("-", 1)[1])


def histories(log_path, env):
    """Per job of env: arrival, start, end (ms), its pods at the start, all
    its events in the order the simulator published them, and the
    simulator's own requests (with its failure, when it failed after it
    started)."""
    jobs = {}

    def job(uid):
        return jobs.setdefault(uid, {"uid": uid, "arrival": None, "start": None, "end": None,
                                     "failed": None, "pods": {}, "events": [], "asks": []})
    for line in open(log_path):
        e = json.loads(line)
        if e["env"] == env:
            job(e["job_uid"])["events"].append(e)
    for j in jobs.values():
        j["events"].sort(key=lambda e: seq(e["event_id"]))
        for e in j["events"]:
            t = e["event_time_ms"]
            if e["type"] == "job_event":
                if e.get("state") == "created":
                    j["arrival"] = t
                elif e.get("state") == "running":
                    j["start"] = t
                elif e.get("state") in ("succeeded", "failed"):
                    j["end"] = t
                    if e["state"] == "failed" and j["start"] is not None:
                        j["failed"] = e.get("exit_reason")
                        j["asks"].append(fail_line(t, e.get("exit_reason")))
            elif e["type"] == "node_event":
                if e["kind"] == "pod_phase" and j["start"] == t and e["pod_name"] not in j["pods"]:
                    j["pods"][e["pod_name"]] = e
            elif e["type"] == "plan_request":
                j["asks"].append(ask_line(t, e["stage"], e.get("config") or {},
                                          e.get("oom_pods") or []))
    return [jobs[u] for u in sorted(jobs)]


SIM_START_MS = 1704067200000  # dlbrain sim's virtual start, 2024-01-01T00:00:00Z


def ask_line(t_ms, stage, config, oom_pods):
    """One request as compared: virtual seconds since the simulation's start,
    stage, config, OOM pods."""
    cfg = ",".join("%s=%s" % kv for kv in sorted(config.items())) or "-"
    return "%6.0f %-25s %-40s %s" % ((t_ms - SIM_START_MS) / 1000.0, stage, cfg,
                                     " ".join(sorted(oom_pods)) or "-")


def fail_line(t_ms, reason):
    """The master failed the job (after it started)."""
    return "%6.0f %-25s %s" % ((t_ms - SIM_START_MS) / 1000.0, "(job fails)", reason)


def note_line(t_ms, what):
    """Something DLRover's master could not follow in the history: never
    in the simulator's sequence, so it is a difference."""
    return "%6.0f %-25s %s" % ((t_ms - SIM_START_MS) / 1000.0, "(replay)", what)


# ---- DLRover's master, replaying one job ---------------------------------------
class DL:
    """DLRover's modules, imported once, their clocks virtual."""

    def __init__(self, clock):
        import dlrover.python.common.node as node
        import dlrover.python.master.monitor.perf_monitor as perf
        import dlrover.python.master.node.dist_job_manager as jm
        import dlrover.python.master.node.event_callback as cb
        import dlrover.python.master.node.job_auto_scaler as scaler
        import dlrover.python.master.node.job_context as job_context
        import dlrover.python.master.node.ps as ps
        import dlrover.python.master.node.status_flow as status_flow
        import dlrover.python.master.node.training_node as training_node
        import dlrover.python.master.node.worker as worker
        import dlrover.python.master.resource.job as job
        from dlrover.python.common import constants
        from dlrover.python.scheduler.job import NodeArgs
        self.node, self.perf, self.jm, self.cb, self.scaler = node, perf, jm, cb, scaler
        self.ps, self.worker, self.job, self.c = ps, worker, job, constants
        self.training_node, self.status_flow, self.NodeArgs = training_node, status_flow, NodeArgs
        self.job_context = job_context.get_job_context()
        fake_time = types.SimpleNamespace(time=lambda: clock.now, sleep=clock.sleep,
                                          monotonic=lambda: clock.now)
        for mod in (node, perf, jm, scaler, ps, training_node, worker, job):
            mod.time = fake_time


class Clock:
    def __init__(self):
        self.now, self.on_sleep = 0.0, None

    def sleep(self, s):
        self.now += s
        if self.on_sleep:
            self.on_sleep(self.now)


def dlrover(log_path, env, out_path, ask_every_s=300):
    from dlrover.python.brain.client import GlobalBrainClient
    from dlrover.python.common.global_context import Context

    client = GlobalBrainClient.BRAIN_CLIENT
    if not client.available():
        sys.exit("DLRover's client found no Brain at DLROVER_BRAIN_SERVICE_ADDR")
    ctx = Context.singleton_instance()
    # A Kubernetes job's replica specs default autoScale to "true" (kubernetes.py).
    ctx.auto_worker_enabled = ctx.auto_ps_enabled = True
    ctx.seconds_interval_to_optimize = ask_every_s  # the simulator's --ask-every
    clock = Clock()
    dl = DL(clock)

    lines = []
    send = client.request_optimization

    def recorded(request):
        pods = [n for n, p in request.jobs[0].state.pods.items() if p.is_oom]
        lines.append(ask_line(clock.now * 1000.0, request.type,
                              dict(request.config.customized_config), pods))
        return send(request)
    client.request_optimization = recorded

    result = {}
    for h in histories(log_path, env):
        lines.clear()
        m = Master(h, clock, dl, lines)
        m.run()
        result[h["uid"]] = {"requests": list(lines), "notes": m.notes}
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


class Master:
    """One job's master as DLRover's DistributedJobManager and dist_master
    assemble it, without threads, Kubernetes or a training task manager:
    the history plays Kubernetes and the workers. Pods keep the simulator's
    names: where DLRover's master relaunches a pod under a new name, the
    replay goes on with the node it had, as the pod's events name it."""

    def __init__(self, h, clock, dl, lines):
        self.h, self.clock, self.dl, self.lines = h, clock, dl, lines
        self.uid = h["uid"]
        self.stopped = None
        self.seen_step = -1
        self.live = set()      # the simulator's workers that train
        self.alias = {}        # simulator pod name -> (type, DLRover node id)
        self.migrating = {}    # simulator PS name -> new node id
        self.raw = [None]      # the Brain's last plan, before the master reads it
        self.notes = []        # what the master did besides asking, for the record

    # -- nodes --
    def node_name(self, kind, i):
        return "%s-%s-%d" % (self.uid, kind, i)

    def node_of(self, name):
        kind, i = self.alias.get(name) or (name.rsplit("-", 2)[1], int(name.rsplit("-", 1)[1]))
        return self.dl.job_context.get_mutable_job_nodes(kind).get(i)

    def set_status(self, node, status):
        node.update_status(status)  # the job context's own node, as DLRover's managers keep

    def run(self):
        dl, h, c = self.dl, self.h, self.dl.c
        NodeType, NodeStatus = c.NodeType, c.NodeStatus
        from dlrover.python.common.node import NodeGroupResource, NodeResource
        pods = list(h["pods"].values())

        def group(kind):
            of = [p for p in pods if p["pod_type"] == kind]
            if not of:
                return NodeGroupResource(0, NodeResource(0, 0))
            return NodeGroupResource(len(of), NodeResource(of[0]["cpu_requested"],
                                                           of[0]["memory_requested"] // MIB))
        clock = self.clock
        clock.on_sleep = None
        clock.now = h["arrival"] / 1000.0
        dl.job_context.clear_job_nodes()
        dl.job_context.update_job_stage(c.JobStage.JOB_INIT)
        res = dl.job.JobResource()
        res.node_group_resources[NodeType.WORKER] = group("worker")
        res.node_group_resources[NodeType.PS] = group("ps")
        self.opt = opt = dl.job.PSJobResourceOptimizer(
            res.node_group_resources[NodeType.WORKER], res.node_group_resources[NodeType.PS],
            c.OptimizeMode.CLUSTER, job_uuid=self.uid)
        gen = opt._resource_optimizer.generate_opt_plan

        def keep_raw(stage, config={}):
            plan = gen(stage, config)
            self.raw[0] = copy.deepcopy(plan)
            return plan
        opt._resource_optimizer.generate_opt_plan = keep_raw
        opt.init_job_resource(res)  # job_stage_create, as the master starts
        if h["start"] is None:
            return
        clock.now = h["start"] / 1000.0

        # The job's nodes as DistributedJobManager._init_nodes makes them: the
        # default critical nodes of a PS job (criticalNodes unset for workers:
        # worker 0; "all" for PS, so that a PS the master cannot recover stops
        # the job at once, as the master does with the PS it creates itself).
        args = types.SimpleNamespace(
            distribution_strategy=c.DistributionStrategy.PS,
            node_args={NodeType.WORKER: dl.NodeArgs(res.node_group_resources[NodeType.WORKER],
                                                    restart_count=3, critical_nodes=""),
                       NodeType.PS: dl.NodeArgs(res.node_group_resources[NodeType.PS],
                                                restart_count=3, critical_nodes="all")})
        svc = lambda kind, i: self.node_name(kind, i) + ":2222"  # noqa: E731
        nodes = res.init_job_node_meta(3, svc, self.node_name)
        dl.training_node.set_critical_node(nodes, args.node_args[NodeType.PS].critical_nodes == "all",
                                           3, dl.training_node.get_critical_worker_index(args))
        start = datetime.fromtimestamp(clock.now)
        for kind in nodes:
            for node in nodes[kind].values():
                pod = h["pods"][node.name]
                node.config_resource.cpu = pod["cpu_requested"]
                node.config_resource.memory = pod["memory_requested"] // MIB
                node.status, node.create_time, node.start_time = NodeStatus.RUNNING, start, start
        dl.job_context.update_job_nodes(nodes)
        self.ps = dl.ps.ParameterServerManager(res, 3, svc, self.node_name)
        self.workers = dl.worker.WorkerManager(res, 3, svc, self.node_name)
        self.perf = perf = dl.perf.PerfMonitor()
        for p in pods:
            if p["pod_type"] == "worker":
                self.live.add(p["pod_name"])
                perf.add_running_worker(NodeType.WORKER, self.node_of(p["pod_name"]).id)
        perf.set_target_worker_num(len(self.live))
        # The autoscaler as start_auto_scaling makes it, without its thread:
        # the loop runs here. It executes the Brain's plan as the simulator
        # applied it, before PSJobResourceOptimizer keeps the user's counts
        # and PS resources in it (the simulator applies plans as they come).
        scaler = object.__new__(dl.scaler.PSTrainingAutoScaler)
        scaler._job_resource, scaler._job_optimizer, scaler._perf_monitor = res, opt, perf
        scaler._ps_manager, scaler._worker_manager = self.ps, self.workers
        scaler._scaler = types.SimpleNamespace(scale=lambda plan: None)
        scaler._scale_interval = 30
        scaler._job_context = dl.job_context
        scaler._suggested_stop = False
        scaler._autoscaling_started = True
        execute = dl.scaler.PSTrainingAutoScaler.execute_job_optimization_plan
        scaler.execute_job_optimization_plan = lambda plan: (
            plan and not plan.empty() and self.executed(execute(scaler, self.raw[0])))
        self.scaler = scaler
        # The job manager's node rules, with the callback dist_master adds for a PS job.
        master = types.SimpleNamespace(
            perf_monitor=perf,
            elastic_ps_service=types.SimpleNamespace(inc_global_cluster_version=lambda: None),
            sync_service=types.SimpleNamespace(remove_exited_worker_sync=lambda *a: None),
            task_manager=types.SimpleNamespace(training_started=lambda: self.seen_step > 0),
            request_stop=self.request_stop)
        jm = object.__new__(dl.jm.DistributedJobManager)
        jm._job_args, jm._job_resource, jm._job_optimizer = args, res, opt
        jm._job_context = dl.job_context
        jm._ps_manager, jm._worker_manager, jm._perf_monitor = self.ps, self.workers, perf
        jm._enable_relaunch_node = True
        jm._wait_pending_relaunch = False
        jm._lock = threading.Lock()
        jm._event_reporter = types.SimpleNamespace(report=lambda *a, **k: None)
        jm._node_event_callbacks = [dl.cb.TFPSNodeHandlingCallback(master)]
        self.jm = jm

        self.events = [e for e in h["events"] if e["event_time_ms"] > h["start"] or
                       e["type"] == "runtime_sample"]
        clock.on_sleep = self.at
        self.at(clock.now)
        dl.scaler.PSTrainingAutoScaler._periodic_optimize_running_resource(scaler)
        clock.on_sleep = None

    def request_stop(self, success, reason, msg=""):
        if self.stopped is None:
            self.stopped = reason
            self.lines.append(fail_line(self.clock.now * 1000.0, reason))
        self.scaler._autoscaling_started = False

    def note(self, what):
        self.notes.append("%6.0f %s" % (self.clock.now - SIM_START_MS / 1000.0, what))

    def executed(self, plan):
        """After the master executed a plan: the new pods it created."""
        NodeType = self.dl.c.NodeType
        raw = self.raw[0]
        for kind, g in sorted(raw.node_group_resources.items()):
            if g.count > 0:
                self.note("executed: %d %s (%g cores, %d GiB)" % (
                    g.count, kind, g.node_resource.cpu, g.node_resource.memory // 1024))
        for name, r in sorted(raw.node_resources.items()):
            self.note("executed: %s to %g cores, %d GiB" % (name, r.cpu, r.memory // 1024))
        for name in raw.node_resources:
            kind, i = name.rsplit("-", 2)[1], int(name.rsplit("-", 1)[1])
            if kind == NodeType.PS and i in self.ps._migrated_ps_nodes:
                new = self.ps._migrated_ps_nodes[i]
                # The scaler creates its pod now; it is pending until it runs.
                new.create_time = datetime.fromtimestamp(self.clock.now)
                self.migrating[name] = new.id
            elif kind == NodeType.WORKER:
                # migrate_workers: a new pod for it, which runs as the simulator
                # restarts the pod.
                for node in self.dl.job_context.get_mutable_job_nodes(kind).values():
                    if node.rank_index == i and node.status == self.dl.c.NodeStatus.INITIAL:
                        self.set_status(node, self.dl.c.NodeStatus.RUNNING)
                        self.alias[name] = (kind, node.id)
        return plan

    # -- the history, as the master hears of it --
    def at(self, now):
        """Everything of the job up to the loop's check at now: the tick's
        OOMs, sample and migrated PS, in the simulator's order; the pods a
        plan started or deleted at a tick before; then the job manager's
        early-stop check."""
        t = round(now * 1000)
        while self.events and self.stopped is None:
            e = self.events[0]
            after_check = e["type"] == "node_event" and e.get("reason") in ("Started", "ScaledDown")
            if e["event_time_ms"] > t or (after_check and e["event_time_ms"] == t):
                break
            self.events.pop(0)
            self.event(e)
        if self.stopped is None:
            stop, reason, _ = self.jm.should_early_stop()
            if stop:
                self.request_stop(False, reason)
        if self.h["end"] is not None and t >= self.h["end"]:
            self.scaler._autoscaling_started = False

    def event(self, e):
        c = self.dl.c
        NodeType, NodeStatus = c.NodeType, c.NodeStatus
        t = e["event_time_ms"]
        if e["type"] == "runtime_sample":
            step = e["global_step"]
            if step > self.seen_step:
                # The workers register with the speed monitor when they fetch
                # a training task (task_manager.py): while the job trains.
                for name in self.live:
                    self.perf.add_running_worker(NodeType.WORKER, self.node_of(name).id)
                self.seen_step = step
            self.perf.collect_global_step(step, t / 1000.0)
            return
        if e["type"] != "node_event":
            return
        name, kind = e["pod_name"], e["pod_type"]
        if e["kind"] == "oom_killed":
            self.oom(e)
        elif e["kind"] == "pod_phase" and e.get("reason") == "Migrated":
            new_id = self.migrating.pop(name, None)
            if new_id is None:
                self.lines.append(note_line(t, "%s ran migrated: no migration of it" % name))
                return
            node = self.ps._get_mutable_nodes()[new_id]
            self.set_status(node, NodeStatus.RUNNING)
            # The workers see the new PS cluster and report it ready (servicer.py).
            self.ps.get_next_training_ps_cluster()
            self.ps.process_after_ps_cluster_ready()
            self.alias[name] = (NodeType.PS, new_id)
            since = node.create_time.timestamp()
            self.note("migration of %s over after %.0f s" % (name, self.clock.now - since))
        elif e["kind"] == "pod_phase" and e.get("reason") == "Started":
            node = self.node_of(name)
            if node is None or node.status != NodeStatus.INITIAL:
                self.lines.append(note_line(t, "%s started: the master made no such pod" % name))
                return
            self.set_status(node, NodeStatus.RUNNING)
            if kind == NodeType.WORKER:
                self.live.add(name)
        elif e["kind"] == "deleted":
            node = self.node_of(name)
            if node is None:
                self.lines.append(note_line(t, "%s deleted: the master has no such pod" % name))
                return
            flow = self.dl.status_flow.get_node_state_flow(node.status, "DELETED",
                                                          NodeStatus.DELETED)
            self.set_status(node, NodeStatus.DELETED)
            if flow:
                self.jm._process_node_events(flow, node)
            self.live.discard(name)

    def oom(self, e):
        """An OOMKilled pod as DistributedJobManager._process_event takes it:
        the callbacks of its failure, then _should_relaunch (which asks the
        Brain through adjust_oom_resource when it relaunches)."""
        c = self.dl.c
        NodeStatus = c.NodeStatus
        node = self.node_of(e["pod_name"])
        flow = node and self.dl.status_flow.get_node_state_flow(node.status, "MODIFIED",
                                                                NodeStatus.FAILED)
        if not flow:
            self.lines.append(note_line(e["event_time_ms"], "%s OOMKilled: the master has no "
                                        "such pod running" % e["pod_name"]))
            return
        node.name = e["pod_name"]
        node.config_resource.cpu = e["cpu_requested"]
        node.config_resource.memory = e["memory_requested"] // MIB
        node.update_status(flow.to_status)
        node.set_exit_reason(c.NodeExitReason.OOM)
        self.jm._process_node_events(flow, node)
        relaunch = self.jm._should_relaunch(node, flow)
        self.note("%s OOMKilled at %d GiB: %s" % (
            e["pod_name"], e["memory_requested"] // GIB,
            "relaunched" if relaunch else "not relaunched"))
        if relaunch:
            node.update_status(NodeStatus.RUNNING)  # relaunched, under its name
        else:
            self.live.discard(e["pod_name"])


# ---- the comparison -------------------------------------------------------------
def compare(log_path, env, out_path):
    theirs = json.load(open(out_path))
    bad = 0
    for h in histories(log_path, env):
        ours, want = h["asks"], theirs.get(h["uid"], {}).get("requests", [])
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
        # What DLRover's master did besides asking.
        for n in theirs.get(h["uid"], {}).get("notes", []):
            print("   DLRover's master at " + n)
    return 1 if bad else 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "respond":
        respond(sys.argv[2], sys.argv[3:])
    elif cmd == "dlrover":
        dlrover(sys.argv[2], sys.argv[3], sys.argv[4],
                int(sys.argv[5]) if len(sys.argv) > 5 else 300)
    elif cmd == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit("usage: sim_conformance.py respond|dlrover|compare ...")
