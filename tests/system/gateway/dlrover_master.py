"""DLRover 0.6.1's own master code against dlbrain gateway, unchanged.

Run with DLROVER_BRAIN_SERVICE_ADDR=host:port (read once, when DLRover's
brain client module is first imported). Every report goes through DLRover's
BrainReporter or BrainClient; every plan through BrainResoureOptimizer, the
class DLRover's master uses in cluster mode. Where DLRover's client cannot
send what it means to (docs/gateway.md), the message it means is built with
DLRover's generated brain_pb2 and sent through its own client.

Usage: dlrover_master.py JOB_UID OUT_JSON [SAMPLES_BASE_S]
Writes OUT_JSON: the plans as DLRover's master read them, in call order, and
get_job_metrics' answer. Exits non-zero when a DLRover call raised.
"""

import json
import sys
import time
import types

from dlrover.proto import brain_pb2
from dlrover.python.brain.client import GlobalBrainClient
from dlrover.python.common.node import Node, NodeResource
from dlrover.python.master.resource.brain_optimizer import BrainResoureOptimizer
from dlrover.python.master.resource.job import JobResource
from dlrover.python.master.stats.reporter import BrainReporter, JobMeta
from dlrover.python.common.comm import ModelInfo, OpStats, TensorStats
from dlrover.python.master.stats.training_metrics import TrainingHyperParams

uid, out_path = sys.argv[1], sys.argv[2]
base_s = int(sys.argv[3]) if len(sys.argv) > 3 else int(time.time()) - 600

client = GlobalBrainClient.BRAIN_CLIENT
if not client.available():
    sys.exit("DLRover's client found no Brain at DLROVER_BRAIN_SERVICE_ADDR")

# The JobMeta as DLRover's JobMetricCollector builds it (its arguments shift:
# name gets the namespace, cluster the user).
job_meta = JobMeta(uid, "ns-train", "", "alice", "")
reporter = BrainReporter.singleton_instance(job_meta)

# ---- every MetricsType -------------------------------------------------------
reporter.report_job_type("ParameterServerStrategy")
reporter.report_training_hyper_params(TrainingHyperParams(batch_size=512, epoch=3, max_steps=0))
reporter.report_model_info(
    ModelInfo(tensor_stats=TensorStats(variable_count=120, total_variable_size=3 << 30),
              op_stats=OpStats(op_count=4500))
)
# DLRover's full model feature (BrainClient.report_model_feature, all but
# embedding_dimension), which no 0.6.1 caller uses.
tensor = types.SimpleNamespace(variable_count=120, total_variable_size=3 << 30,
                               max_variable_size=1 << 30, kv_embedding_dims=[8, 16],
                               tensor_alloc_bytes={"embedding": 1 << 29, "dense": 1 << 20})
ops = types.SimpleNamespace(op_count=4500, update_op_count=300, read_op_count=900,
                            input_fetch_dur=25, flops=7 << 30, recv_op_count=1200)
client.report_model_feature(job_meta, tensor, ops)
# BrainReporter's workflow report (the JobMeta's name and user), then the
# client's full one, which replaces it as the Go Brain replaced it.
reporter.report_job_meta()
client.report_workflow_feature(job_meta, types.SimpleNamespace(
    job_name="ctr-train", user_id="alice", code_address="git://repo/ctr", workflow_id="wf-7",
    node_id="n-3", odps_project="ads", is_prod=True))
# DLRover's caller hands report_training_set_metric an object without these
# attributes (AttributeError, so 0.6.1 never sends it); the client method
# itself builds the message from an object that has them.
client.report_training_set_metric(job_meta, types.SimpleNamespace(
    dataset_size=1000000, dataset_name="clicks-30d", storage_size=5 << 30,
    sparse_features=types.SimpleNamespace(item_count=3, feature_names=["u", "i", "c"],
                                          feature_groups=[1, 1, 2], feature_shapes=[8, 8, 4]),
    dense_features=types.SimpleNamespace(feature_names=["age", "price"], feature_shapes=[1, 1])))
reporter.report_customized_data({"init_training_time": 12, "rdzv_round": 1})
reporter.report_job_resource(JobResource())

# Runtime info as report_runtime_info means to send it (it writes the field
# running_nodes, which brain.proto calls running_pods): built with DLRover's
# brain_pb2 and sent through its client.
pods = [("%s-edljob-ps-0" % uid, 2.5, 6 << 30), ("%s-edljob-ps-1" % uid, 2.0, 5 << 30),
        ("%s-edljob-worker-0" % uid, 3.0, 4 << 30), ("%s-edljob-worker-1" % uid, 3.5, 4 << 30)]
for k in range(6):
    m = brain_pb2.JobMetrics()
    m.data_store = "base_datastore"
    m.job_meta.uuid = uid
    m.metrics_type = brain_pb2.MetricsType.Runtime_Info
    ri = m.runtime_info
    ri.global_step = 1000 * (k + 1)
    ri.time_stamp = base_s + 30 * k
    ri.speed = 33.3
    for name, cpu, mem in pods:
        pm = ri.running_pods.add()
        pm.pod_name, pm.pod_ip, pm.node_ip = name, "10.0.0.%d" % (k + 1), "192.168.1.2"
        pm.host_name, pm.namespace, pm.is_mixed = "node-2", "ns-train", False
        pm.cpu_usage, pm.mem_usage = cpu, mem + k * (64 << 20)
    client.report_metrics(m)

# An Optimization record, which no 0.6.1 code sends.
m = brain_pb2.JobMetrics()
m.data_store = "base_datastore"
m.job_meta.uuid = uid
m.metrics_type = brain_pb2.MetricsType.Optimization
m.job_optimization.timestamp = base_s
m.job_optimization.config.optimizer_config_retriever = "base_config_retriever"
client.report_metrics(m)

# ---- plans, as the master's stage machine asks for them ----------------------
def as_read(plan):
    if plan is None:
        return None
    return {
        "groups": {t: {"count": g.count, "cpu": g.node_resource.cpu,
                       "memory": g.node_resource.memory}
                   for t, g in sorted(plan.node_group_resources.items())},
        "pods": {n: {"cpu": r.cpu, "memory": r.memory}
                 for n, r in sorted(plan.node_resources.items())},
    }

opt = BrainResoureOptimizer(uid, None)
phase = "optimizer.worker.optimize-phase"
plans = []
for stage, cfg in [("job_stage_create", {}),
                   ("job_stage_worker_initial", {phase: "initial"}),
                   ("job_stage_ps_initial", {}),
                   ("job_stage_ps_running", {}),
                   ("job_stage_worker_initial", {phase: "sample"}),
                   ("job_stage_worker_running", {phase: "stable"})]:
    t0 = time.monotonic()
    plan = opt.generate_opt_plan(stage, cfg)
    plans.append({"call": "generate_opt_plan", "stage": stage, "config": cfg,
                  "seconds": round(time.monotonic() - t0, 3), "plan": as_read(plan)})

worker = Node("worker", 0, NodeResource(4, 8192), name="%s-edljob-worker-0" % uid)
ps = Node("ps", 1, NodeResource(4, 8192), name="%s-edljob-ps-1" % uid)
for node, stage in [(worker, "job_stage_create"), (ps, "job_stage_ps_initial")]:
    t0 = time.monotonic()
    plan = opt.generate_oom_recovery_plan([node], stage)
    plans.append({"call": "generate_oom_recovery_plan", "stage": stage, "oom_pod": node.name,
                  "seconds": round(time.monotonic() - t0, 3), "plan": as_read(plan)})

reporter.report_job_exit_reason("Completed")

res = client.get_job_metrics(uid)
out = {"plans": plans, "job_metrics": {"success": res.response.success,
                                       "reason": res.response.reason,
                                       "json": json.loads(res.job_metrics or "{}")}}
with open(out_path, "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
