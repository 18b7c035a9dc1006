"""DLRover 0.6.1's PSLocalOptimizer, unchanged, behind dlbrain's events.

DLRover's master without a Brain (optimize mode ``single-job``, the default)
builds ``PSLocalOptimizer(job_uuid, resource_limits)`` (master/resource/job.py,
new_ps_resource_optimizer). The optimizer reads the runtime statistics the
master's JobMetricCollector hands to the process's LocalStatsReporter
(master/stats/job_collector.py, collect_runtime_stats and
report_runtime_stats_periodically), and the master calls it where it would call
the Brain: ``generate_opt_plan(stage, config)`` for its periodic and start-up
asks, ``generate_oom_recovery_plan([node], stage)`` for an OOM
(PSJobResourceOptimizer.adjust_oom_resource). This module does what the master
does around it, and no more:

* A runtime sample becomes the RuntimeMetric collect_runtime_stats builds: one
  Node per pod, its requested CPU and memory as the master's node holds them
  (cores, MiB), its used CPU in cores and its used memory as the agent reports
  it (whole MiB, resource.py get_used_memory) times MemoryUnit.MB, as the
  collector multiplies it. The reporting thread reports a sample when the job
  has a speed and its global step grew since the last report; so does this.
* An OOM request's pods become the Nodes the master passes: name, type, index
  and the requested CPU and memory (MiB) of the pod's latest ``oom_killed``
  event (or, lacking one, of its latest runtime sample).
* A ResourcePlan (memory in MiB, as DLRover's plans are) becomes a dlbrain plan
  (memory in bytes).

DLRover's master process serves one job, so its LocalStatsReporter is a process
singleton; this consumer serves many jobs, so each job's optimizer is built
while its own reporter stands as that singleton (JobOptimizer). No DLRover
function is replaced or wrapped.
"""

from __future__ import annotations

import copy
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

# DLRover logs every plan at INFO (indented JSON); its logger takes its level
# from DLROVER_LOG_LEVEL when first imported. WARNING unless the user says.
os.environ.setdefault("DLROVER_LOG_LEVEL", "WARNING")

from dlrover.python.common.constants import (  # noqa: E402
    DefaultResourceLimits,
    MemoryUnit,
    NodeType,
)
from dlrover.python.common.node import Node, NodeResource  # noqa: E402
from dlrover.python.master.resource.local_optimizer import PSLocalOptimizer  # noqa: E402
from dlrover.python.master.resource.optimizer import ResourcePlan  # noqa: E402
from dlrover.python.master.stats.reporter import JobMeta, LocalStatsReporter  # noqa: E402
from dlrover.python.master.stats.training_metrics import RuntimeMetric  # noqa: E402
from dlrover.python.scheduler.job import ResourceLimits  # noqa: E402

MB = MemoryUnit.MB
OPT_PLAN = "dlrover_local.generate_opt_plan"
OOM_PLAN = "dlrover_local.generate_oom_recovery_plan"
ID_MAX = 128  # C's DLB_ID_MAX: an id is at most 127 bytes
REASON_MAX = 1024
_ID_HASH_LEN = 17  # "~" and 16 hex digits (pipeline/base/id.h)

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$")
_FACTORS = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


class AdapterError(ValueError):
    """An input this adapter cannot turn into what DLRover's code takes."""


def memory_bytes(text: str) -> int:
    """A Kubernetes memory quantity ("102400Mi", "100Gi", "8G", "1073741824")
    in bytes, as DLRover's K8sJobArgs reads spec.resourceLimits.memory."""
    m = _QUANTITY.match(str(text).strip())
    if not m:
        raise AdapterError(f"memory quantity '{text}': expected a number with an optional "
                           "Ki, Mi, Gi, Ti, k, M, G or T suffix")
    return int(float(m.group(1)) * _FACTORS[m.group(2)])


def default_limits() -> ResourceLimits:
    """What a DLRover job without spec.resourceLimits gets (K8sJobArgs with
    DefaultResourceLimits): CPU in cores, rounded to 0.1, memory in bytes."""
    return ResourceLimits(round(float(DefaultResourceLimits.CPU_LIMIT), 1),
                          memory_bytes(DefaultResourceLimits.MEMORY_LIMIT),
                          int(DefaultResourceLimits.GPU_LIMIT))


def new_optimizer(job_uid: str, limits: ResourceLimits) -> PSLocalOptimizer:
    """DLRover's PSLocalOptimizer for one job, reading a LocalStatsReporter of
    its own: the constructor takes LocalStatsReporter.singleton_instance(),
    which is the job's reporter while it runs, as in a master serving this job
    alone."""
    reporter = LocalStatsReporter(JobMeta(job_uid))
    saved = LocalStatsReporter._instance
    LocalStatsReporter._instance = reporter
    try:
        opt = PSLocalOptimizer(job_uid, limits)
    finally:
        LocalStatsReporter._instance = saved
    if opt._stats_collector is not reporter:  # a DLRover that builds it otherwise
        raise AdapterError("PSLocalOptimizer did not take the job's LocalStatsReporter")
    return opt


def sample_node(pod: Mapping[str, Any]) -> Node:
    """A runtime sample's pod as the master's Node: requested resources as the
    node's config (cores, MiB), usage as the agent reports it (cores, whole MiB)."""
    node = Node(pod["type"], int(pod.get("index", 0)),
                config_resource=NodeResource(float(pod.get("cpu_requested", 0.0)),
                                             int(pod.get("memory_requested", 0)) // MB),
                name=pod["name"])
    node.update_resource_usage(float(pod.get("cpu_used", 0.0)),
                               int(pod.get("memory_used", 0)) // MB)
    return node


def runtime_metric(sample: Mapping[str, Any]) -> RuntimeMetric:
    """The RuntimeMetric JobMetricCollector.collect_runtime_stats makes of the
    master's running nodes at this sample (used memory times MemoryUnit.MB)."""
    metric = RuntimeMetric([], global_step=int(sample.get("global_step", 0)),
                           speed=float(sample.get("speed", 0.0)),
                           timestamp=int(sample["event_time_ms"]) // 1000)
    for pod in sample.get("pods") or ():
        node_sample = copy.deepcopy(sample_node(pod))
        node_sample.used_resource.memory *= MB
        metric.running_nodes.append(node_sample)
    return metric


def oom_node(pod_name: str, event: Optional[Mapping[str, Any]],
             sample_pod: Optional[Mapping[str, Any]]) -> Node:
    """The Node the master passes to adjust_oom_resource for pod_name: from its
    oom_killed event (type, index, requested CPU and memory), what the event
    lacks from the pod's latest runtime sample; 0 where neither says."""
    cpu: Optional[float] = None
    mem: Optional[int] = None
    typ, index = "", 0
    if event is not None:
        typ, index = event.get("pod_type") or "", int(event.get("pod_index") or 0)
        cpu, mem = event.get("cpu_requested"), event.get("memory_requested")
    if sample_pod is not None:
        typ = typ or sample_pod.get("type", "")
        index = index if event is not None else int(sample_pod.get("index", 0))
        cpu = cpu if cpu is not None else sample_pod.get("cpu_requested")
        mem = mem if mem is not None else sample_pod.get("memory_requested")
    if not typ:
        # DLRover's pod names end in -<type>-<index> (scheduler/kubernetes.py get_pod_name).
        m = re.search(r"-(ps|worker|chief|evaluator)-([0-9]+)$", pod_name)
        typ, index = (m.group(1), int(m.group(2))) if m else (NodeType.WORKER, 0)
    return Node(typ, index, config_resource=NodeResource(float(cpu or 0.0), int(mem or 0) // MB),
                name=pod_name)


@dataclass
class Outcome:
    """What DLRover's code returned for one request."""

    method: str  # OPT_PLAN or OOM_PLAN
    plan: Optional[ResourcePlan]  # None: it raised (error says what)
    error: str = ""
    samples: int = 0  # runtime statistics the reporter held


@dataclass
class JobOptimizer:
    """One job's PSLocalOptimizer and what its master knows of the job."""

    job_uid: str
    limits: ResourceLimits
    opt: PSLocalOptimizer = field(init=False)
    reported_step: int = 0  # report_runtime_stats_periodically's global_step
    samples: int = 0  # runtime samples read
    reported: int = 0  # ... of which reported to the LocalStatsReporter
    oom_events: Dict[str, Mapping[str, Any]] = field(default_factory=dict)
    last_pods: Dict[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.opt = new_optimizer(self.job_uid, self.limits)

    def add_sample(self, sample: Mapping[str, Any]) -> bool:
        """Feeds one runtime sample as the master's collector and its 15 s
        reporting thread do: reported when the job has a speed and its global
        step grew. Returns whether it was reported."""
        self.samples += 1
        for pod in sample.get("pods") or ():
            self.last_pods[pod["name"]] = pod
        step, speed = int(sample.get("global_step", 0)), float(sample.get("speed", 0.0))
        if speed <= 0 or step <= self.reported_step:
            return False
        self.opt._stats_collector.report_runtime_stats(runtime_metric(sample))
        self.reported_step = step
        self.reported += 1
        return True

    def add_node_event(self, event: Mapping[str, Any]) -> None:
        if event.get("kind") == "oom_killed" and event.get("pod_name"):
            self.oom_events[event["pod_name"]] = event

    def ask(self, request: Mapping[str, Any]) -> Outcome:
        """What DLRover's optimizer answers the request: the OOM recovery plan
        for the pods an OOM request names, else the plan of its stage with its
        config (DLRover's customized_config). An exception is an outcome: the
        master logs it and applies nothing (job_auto_scaler.py catches it)."""
        stage, config = request["stage"], dict(request.get("config") or {})
        pods = list(request.get("oom_pods") or ())
        if not pods and request.get("oom_pod"):
            pods = [request["oom_pod"]]
        n = len(self.opt._stats_collector.get_runtime_stats())
        try:
            if pods:
                nodes = [oom_node(p, self.oom_events.get(p), self.last_pods.get(p)) for p in pods]
                return Outcome(OOM_PLAN, self.opt.generate_oom_recovery_plan(nodes, stage, config),
                               samples=n)
            return Outcome(OPT_PLAN, self.opt.generate_opt_plan(stage, config), samples=n)
        except Exception as e:  # noqa: BLE001 - DLRover's own failure is the answer
            return Outcome(OOM_PLAN if pods else OPT_PLAN, None, f"{type(e).__name__}: {e}", n)


# ---- ResourcePlan -> dlbrain plan ---------------------------------------------
def derive_id(prefix: str, ident: str, size: int = ID_MAX) -> str:
    """pipeline/base/id.c dlb_id_derive: prefix + ident when it fits in
    size - 1 bytes, else its head and "~" + FNV-1a 64 of the whole ident."""
    pre, raw = prefix.encode(), ident.encode()
    if len(pre) + len(raw) < size:
        return prefix + ident
    h = 1469598103934665603
    for b in raw:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    head = _utf8_cut(raw, size - 1 - len(pre) - _ID_HASH_LEN)
    return f"{prefix}{head.decode()}~{h:016x}"


def _utf8_cut(raw: bytes, limit: int) -> bytes:
    """The longest head of raw within limit bytes that ends on a character."""
    if len(raw) <= limit:
        return raw
    cut = raw[:limit]
    while cut:
        try:
            cut.decode()
            return cut
        except UnicodeDecodeError:
            cut = cut[:-1]
    return cut


def plan_id(request_event_id: str) -> str:
    """The plan id the C optimizer gives a request's answer (router.c dlb_plan_id)."""
    return derive_id("plan-", request_event_id)


def _count(v: Any, what: str, notes: List[str]) -> int:
    n = int(v)
    if n < 0:
        # The master applies a group only when its count is > 0 (job_auto_scaler.py).
        notes.append(f"{what} count {n} read as 0 (kept)")
        return 0
    return n


def _resource(cpu: Any, memory_mib: Any, what: str, notes: List[str]) -> Dict[str, Any]:
    c, m = float(cpu or 0.0), float(memory_mib or 0.0)
    if not math.isfinite(c) or c < 0:
        notes.append(f"{what} cpu {c:g} read as 0 (kept)")
        c = 0.0
    if not math.isfinite(m) or m < 0:
        notes.append(f"{what} memory {m:g} MiB read as 0 (kept)")
        m = 0.0
    return {"cpu": c, "memory": int(round(m * MB))}


def _fmt_res(r: Mapping[str, Any]) -> str:
    return f"{r['cpu']:g} cpu, {r['memory'] // MB} MiB"


def plan_body(plan: Optional[ResourcePlan]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]],
                                                       List[str]]:
    """(groups, pods, notes) of a DLRover ResourcePlan in dlbrain's terms:
    memory from MiB to bytes, DLRover's order kept. A negative or non-finite
    value, which the master would not apply, is 0 ("keep"), with a note."""
    groups: List[Dict[str, Any]] = []
    pods: List[Dict[str, Any]] = []
    notes: List[str] = []
    if plan is None:
        return groups, pods, notes
    for typ, g in plan.node_group_resources.items():
        res = g.node_resource
        groups.append({"group": typ, "count": _count(g.count, typ, notes),
                       "resource": _resource(res.cpu, res.memory, typ, notes)})
    for name, res in plan.node_resources.items():
        pods.append({"name": name, "resource": _resource(res.cpu, res.memory, name, notes)})
    return groups, pods, notes


def plan_event(request: Mapping[str, Any], outcome: Outcome) -> Dict[str, Any]:
    """The dlbrain plan answering request: DLRover's plan, its id derived from
    the request's as the C optimizer derives it, the request's event time and
    stage, and a reason saying which DLRover function gave what."""
    groups, pods, notes = plan_body(outcome.plan)
    pid = plan_id(request["event_id"])
    call = (f"PSLocalOptimizer.{outcome.method.split('.', 1)[1]}({request['stage']}"
            + (f", {len(request.get('oom_pods') or [request.get('oom_pod')])} OOM pod(s)"
               if outcome.method == OOM_PLAN else "") + ")")
    if outcome.plan is None:
        what = f"raised {outcome.error}; no plan, as the master logs it and goes on"
    elif not groups and not pods:
        what = "no plan"
    else:
        what = "; ".join([f"{g['group']} {g['count']} x ({_fmt_res(g['resource'])})"
                          for g in groups]
                         + [f"{p['name']} ({_fmt_res(p['resource'])})" for p in pods])
    reason = f"DLRover 0.6.1 {call} on {outcome.samples} runtime stat(s): {what}"
    if notes:
        reason += " [" + "; ".join(notes) + "]"
    raw = reason.encode()
    if len(raw) >= REASON_MAX:
        reason = _utf8_cut(raw, REASON_MAX - 4).decode() + "..."
    return {
        "event_id": pid,
        "event_time_ms": int(request["event_time_ms"]),
        "plan_id": pid,
        "job_uid": request["job_uid"],
        "stage": request["stage"],
        "groups": groups,
        "pods": pods,
        "actions": [],
        "optimizer": outcome.method,
        "reason": reason,
        "trigger_event_id": request["event_id"],
    }
