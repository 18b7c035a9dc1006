"""What makes an event valid, as the C side judges it.

The allowed values come from pipeline/codec/event.c, the string limits from the
fixed-size buffers of pipeline/codec/event.h, and every message is worded as C words
it ("pods[0].memory_used: negative (-5)"), so an event this package accepts is
one the consumers accept, and a rejection reads the same on both sides.
tests/test_validation.py runs `dlbrain emit` on the same bad events and
compares the messages.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

STAGES = (
    "job_stage_create",
    "job_stage_ps_initial",
    "job_stage_worker_initial",
    "job_stage_running",
    "job_stage_ps_running",
    "job_stage_worker_running",
)
JOB_STATES = ("created", "pending", "running", "succeeded", "failed", "stopped")
EXIT_REASONS = (
    "Completed",
    "CodeError",
    "WorkerOOM",
    "WorkerError",
    "PSOOM",
    "PSError",
    "EvaluatorOOM",
    "EvaluatorError",
    "UnknownError",
    "HangError",
    "RdzvTimeout",
    "PendingTimeout",
    "UncompletedTimeout",
    "NodeCheckFailed",
)
NODE_KINDS = (
    "pod_phase",
    "node_phase",
    "oom_killed",
    "evicted",
    "node_not_ready",
    "preempted",
    "deleted",
    "error",
    "hardware_error",
    "no_heartbeat",
)
POD_TYPES = ("ps", "worker", "chief", "evaluator")
POD_ACTIONS = ("relaunch", "replace")

# event.h: DLB_ID_MAX 128, DLB_NAME_MAX 256, DLB_REASON_MAX 1024 and the
# smaller char arrays; a value must leave room for C's NUL terminator. C's heap
# texts hold at most DLB_TEXT_MAX bytes (the cap is one more), its lists and
# maps at most DLB_LIST_MAX items, its map keys at most DLB_KEY_MAX bytes.
_ID, _NAME, _REASON = 128, 256, 1024
TEXT_MAX, LIST_MAX, KEY_MAX = 256 * 1024, 65536, 1024
OOM_PODS_MAX, CONFIG_MAX = 1024, 256
_TEXT = TEXT_MAX + 1
_META = {f: _NAME for f in ("name", "user", "group", "app", "cluster", "namespace", "scenario", "framework")}
_FEATURE_LISTS = ("sparse_features", "sparse_feature_groups", "sparse_feature_shapes", "dense_features",
                  "dense_feature_shapes")
STRING_CAPS: Dict[str, Dict[str, int]] = {
    "dlbrain.JobEvent": {
        "event_id": _ID,
        "job_uid": _ID,
        "state": 32,
        "exit_reason": 32,
        "job_type": _NAME,
        "resource": _TEXT,
        "customized_data": _TEXT,
        "optimization": _TEXT,
    },
    "dlbrain.JobMeta": _META,
    "dlbrain.DatasetFeatures": {"name": _NAME, "storage": _NAME, **{f: _TEXT for f in _FEATURE_LISTS}},
    "dlbrain.WorkflowFeatures": {
        "job_name": _NAME,
        "user_id": _NAME,
        "code_address": _TEXT,
        "workflow_id": _NAME,
        "node_id": _NAME,
        "odps_project": _NAME,
    },
    "dlbrain.RuntimeSample": {"event_id": _ID, "job_uid": _ID},
    "dlbrain.PodUsage": {"name": _ID, "type": 16, "pod_ip": 48, "node_ip": 48, "host_name": _ID, "namespace": 64},
    "dlbrain.NodeEvent": {
        "event_id": _ID,
        "job_uid": _ID,
        "kind": 32,
        "pod_name": _ID,
        "pod_type": 16,
        "node_name": _ID,
        "phase": 32,
        "reason": _NAME,
        "message": _REASON,
    },
    "dlbrain.PlanRequest": {"event_id": _ID, "job_uid": _ID, "stage": 64, "oom_pod": _ID},
    # oom_pods items and config keys and values: heap strings, checked in _request.
    "dlbrain.Plan": {
        "event_id": _ID,
        "plan_id": _ID,
        "job_uid": _ID,
        "stage": 64,
        "optimizer": 64,
        "reason": _REASON,
        "trigger_event_id": _ID,
    },
    "dlbrain.GroupResource": {"group": 16},
    "dlbrain.Resource": {"gpu_type": 64, "priority": 32},
    "dlbrain.PodResource": {"name": _ID},
    "dlbrain.PodAction": {"pod": _ID, "action": 16, "reason": _NAME},
    # rule ids and the values map are heap strings in C: no limit.
    "dlbrain.ConfigMatch": {"event_id": _ID, "job_uid": _ID, "trigger_event_id": _ID},
    "dlbrain.ConfigRequest": {"event_id": _ID, "job_uid": _ID},
}


class EventError(ValueError):
    """An event the pipeline would reject; the message names the field, e.g.
    ``pods[1].memory_used: negative (-5)``."""


def _g(v: float) -> str:
    # C's printf %g
    return f"{v:g}"


def _need_id(field: str, v: str) -> None:
    if not v:
        raise EventError(f"{field}: must not be empty")


def _need_listed(field: str, allowed: Sequence[str], v: str) -> None:
    if v not in allowed:
        raise EventError(f'{field}: unknown value "{v}" (expected one of {", ".join(allowed)})')


def _need_cpu(field: str, v: float) -> None:
    if not math.isfinite(v) or v < 0:
        raise EventError(f"{field}: must be a finite non-negative number of cores ({_g(v)})")


def _need_nonneg(field: str, v: int) -> None:
    if v < 0:
        raise EventError(f"{field}: negative ({v})")


def _need_speed(field: str, v: float) -> None:
    if not math.isfinite(v) or v < 0:
        raise EventError(f"{field}: must be a finite non-negative number of steps/s ({_g(v)})")


def _need_count(field: str, n: int, limit: int) -> None:
    if n > limit:
        raise EventError(f"{field}: {n} items, more than the limit of {limit}")


def _model_lists(m: Mapping[str, Any]) -> None:
    # .get: a record of an older schema version (job_event v1) lacks them.
    dims, tensors = m.get("kv_embedding_dims", ()), m.get("tensor_alloc_bytes", {})
    _need_count("model.kv_embedding_dims", len(dims), LIST_MAX)
    _need_count("model.tensor_alloc_bytes", len(tensors), LIST_MAX)
    for i, d in enumerate(dims):
        _need_nonneg(f"model.kv_embedding_dims[{i}]", d)
    for k, v in tensors.items():
        n = len(k.encode("utf-8"))
        if n > KEY_MAX:
            raise EventError(f"model.tensor_alloc_bytes: a key of {n} bytes, more than the limit of {KEY_MAX}")
        _need_nonneg(f"model.tensor_alloc_bytes.{k}", v)


def _resource(prefix: str, r: Mapping[str, Any]) -> None:
    _need_cpu(f"{prefix}.cpu", r["cpu"])
    _need_nonneg(f"{prefix}.memory", r["memory"])
    _need_nonneg(f"{prefix}.gpu", r["gpu"])


def _job(e: Mapping[str, Any]) -> None:
    if e["state"] is not None:
        _need_listed("state", JOB_STATES, e["state"])
    if e["exit_reason"] is not None:
        _need_listed("exit_reason", EXIT_REASONS, e["exit_reason"])
    for section, fields in (
        ("hyper_params", ("batch_size", "epoch", "max_steps")),
        ("dataset", ("size", "sparse_item_count", "storage_size")),
        (
            "model",
            (
                "variable_count",
                "op_count",
                "total_variable_size",
                "recv_op_count",
                "flops",
                "embedding_dimension",
                "max_variable_size",
                "update_op_count",
                "read_op_count",
                "input_fetch_dur",
            ),
        ),
    ):
        if e[section] is not None:
            for f in fields:
                _need_nonneg(f"{section}.{f}", e[section].get(f, 0))
    if e["model"] is not None:
        _model_lists(e["model"])


def _runtime(e: Mapping[str, Any]) -> None:
    _need_nonneg("global_step", e["global_step"])
    _need_speed("speed", e["speed"])
    for i, p in enumerate(e["pods"]):
        _need_id(f"pods[{i}].name", p["name"])
        _need_listed(f"pods[{i}].type", POD_TYPES, p["type"])
        _need_nonneg(f"pods[{i}].index", p["index"])
        _need_cpu(f"pods[{i}].cpu_used", p["cpu_used"])
        _need_cpu(f"pods[{i}].cpu_requested", p["cpu_requested"])
        _need_nonneg(f"pods[{i}].memory_used", p["memory_used"])
        _need_nonneg(f"pods[{i}].memory_requested", p["memory_requested"])
        if p.get("speed") is not None:
            _need_speed(f"pods[{i}].speed", p["speed"])


def _node(e: Mapping[str, Any]) -> None:
    _need_listed("kind", NODE_KINDS, e["kind"])
    if e["pod_type"]:
        _need_listed("pod_type", POD_TYPES, e["pod_type"])
    # Everything but a node-level event is about a pod.
    if e["kind"] not in ("node_phase", "node_not_ready"):
        _need_id("pod_name", e["pod_name"])
    _need_nonneg("pod_index", e["pod_index"])
    if e["memory_requested"] is not None:
        _need_nonneg("memory_requested", e["memory_requested"])
    if e["cpu_requested"] is not None:
        _need_cpu("cpu_requested", e["cpu_requested"])


def _need_text(field: str, v: str, limit: int) -> None:
    n = len(v.encode("utf-8"))
    if n > limit:
        raise EventError(f"{field}: {n} bytes long, more than the limit of {limit}")


def _request(e: Mapping[str, Any]) -> None:
    _need_listed("stage", STAGES, e["stage"])
    if e["oom_pod"] is not None:
        _need_id("oom_pod", e["oom_pod"])
    # .get: a record of plan_request v1 lacks them.
    pods, config = e.get("oom_pods", ()), e.get("config", {})
    _need_count("oom_pods", len(pods), OOM_PODS_MAX)
    _need_count("config", len(config), CONFIG_MAX)
    for i, p in enumerate(pods):
        _need_id(f"oom_pods[{i}]", p)
        _need_text(f"oom_pods[{i}]", p, _ID - 1)
    if pods and e["oom_pod"] != pods[0]:
        raise EventError(f'oom_pod: must be the first of oom_pods ("{pods[0]}")')
    for k, v in config.items():
        if not k:
            raise EventError("config: a key must not be empty")
        n = len(k.encode("utf-8"))
        if n > KEY_MAX:
            raise EventError(f"config: a key of {n} bytes, more than the limit of {KEY_MAX}")
        _need_text(f"config.{k}", v, KEY_MAX)


def _plan(e: Mapping[str, Any]) -> None:
    _need_id("plan_id", e["plan_id"])
    _need_listed("stage", STAGES, e["stage"])
    _need_id("optimizer", e["optimizer"])
    for i, g in enumerate(e["groups"]):
        _need_listed(f"groups[{i}].group", POD_TYPES, g["group"])
        _need_nonneg(f"groups[{i}].count", g["count"])
        _resource(f"groups[{i}].resource", g["resource"])
    for i, p in enumerate(e["pods"]):
        _need_id(f"pods[{i}].name", p["name"])
        _resource(f"pods[{i}].resource", p["resource"])
    for i, a in enumerate(e.get("actions", ())):
        _need_id(f"actions[{i}].pod", a["pod"])
        _need_listed(f"actions[{i}].action", POD_ACTIONS, a["action"])


def validate(event_type: str, e: Mapping[str, Any]) -> None:
    """Semantic checks of a complete record (every field present), in the
    order of dlb_event_validate. Raises EventError."""
    _need_id("event_id", e["event_id"])
    _need_id("job_uid", e["job_uid"])
    if e["event_time_ms"] < 0:
        raise EventError(f"event_time_ms: negative ({e['event_time_ms']})")
    if event_type == "job_event":
        _job(e)
    elif event_type == "runtime_sample":
        _runtime(e)
    elif event_type == "node_event":
        _node(e)
    elif event_type == "plan_request":
        _request(e)
    elif event_type == "plan":
        _plan(e)
    elif event_type == "config_match":
        if e["rules_version"] < 0:
            raise EventError(f"rules_version: negative ({e['rules_version']})")


def string_cap(record_name: str, field: str) -> Optional[int]:
    """The C buffer size of a string field (the longest value is one byte less)."""
    return STRING_CAPS.get(record_name, {}).get(field)


__all__: Tuple[str, ...] = (
    "EventError",
    "validate",
    "string_cap",
    "STAGES",
    "JOB_STATES",
    "EXIT_REASONS",
    "NODE_KINDS",
    "POD_TYPES",
    "POD_ACTIONS",
)
