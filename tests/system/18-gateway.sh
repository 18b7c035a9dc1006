#!/usr/bin/env bash
# dlbrain gateway as DLRover's masters meet it: DLRover 0.6.1 from PyPI, its
# own code unchanged (tests/system/gateway/dlrover_master.py), against a
# gateway, an optimizer and a real Kafka broker.
#  - every MetricsType arrives whole (the raw events in PostgreSQL decode to
#    every field sent) and the jobs row has what the optimizers read;
#  - every stage the master asks, with the worker phases, and a worker and a
#    PS OOM: the plans DLRover's master reads are the optimizer's plans in
#    DLRover's units, and the same events sent through the native path
#    (dlbrain emit) get the same plans;
#  - get_job_metrics answers the Go Brain's JSON;
#  - bad input gets a clear status and changes nothing; a plan that does not
#    come in time is success=false, a client deadline is honoured;
#  - two gateways behind one address each answer their own calls and read
#    no plans partition once nothing waits.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
GWDIR=$SYS_TOP/tests/system/gateway
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"
"$PY" -c 'import dlrover.python.brain.client, grpc' 2>/dev/null ||
    fail "the venv lacks dlrover 0.6.1 / grpcio (scripts/setup installs them)"
UID1=job-gw-1
S=$(sys_schema)

sys_start_pg
sys_start_redis
sys_start_real_kafka 4
sys_start_optimizer optimizer
OPT_PID=${SYS_PIDS[-1]}

# start_gateway NAME [OPTION...]: sets GW to host:port once it serves.
start_gateway() {
    local name=$1 port=''
    shift
    "$DLBRAIN" gateway -a 127.0.0.1:0 -X metrics.port=0 "$@" >/dev/null 2>"$SYS_DIR/$name.log" &
    SYS_PIDS+=($!)
    for _ in $(seq 1 100); do
        port=$(sed -n 's/.*serving brain.Brain on .* (port \([0-9]*\)).*/\1/p' "$SYS_DIR/$name.log" 2>/dev/null) || true
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || fail "$name did not start: $(tail -n 3 "$SYS_DIR/$name.log")"
    GW=127.0.0.1:$port
}
# metric NAME SERIES: the value of an unlabelled series on NAME's /metrics.
metric() {
    local port
    port=$(sed -n 's|.*metrics: serving http://[^:]*:\([0-9]*\)/metrics.*|\1|p' "$SYS_DIR/$1.log")
    "$PY" -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1]).read().decode().splitlines():
    if l.split(" ")[0] == sys.argv[2]: print(l.split(" ")[1])' "$port" "$2"
}

start_gateway gateway1
GW1=$GW
GW1_PID=${SYS_PIDS[-1]}
ok "gateway serving at $GW1"

# ---- DLRover's own master code ----------------------------------------------
DLROVER_BRAIN_SERVICE_ADDR=$GW1 timeout 300 "$PY" "$GWDIR/dlrover_master.py" "$UID1" \
    "$SYS_DIR/dlrover.json" >"$SYS_DIR/dlrover.log" 2>&1 ||
    fail "DLRover's code failed: $(grep -v '^ ' "$SYS_DIR/dlrover.log" | tail -n 5)"
ok "DLRover's BrainReporter, BrainClient and BrainResoureOptimizer ran against the gateway"

sys_wait_count "job_events WHERE job_uid = '$UID1'" 11 60
sys_wait_count "runtime_samples WHERE job_uid = '$UID1'" 6 60
sys_wait_count "plans WHERE job_uid = '$UID1'" 8 60
expect_eq "stages asked, in order" \
    "job_stage_create job_stage_worker_initial job_stage_ps_initial job_stage_ps_running job_stage_worker_initial job_stage_worker_running job_stage_create job_stage_ps_initial" \
    "$(sys_sql "SELECT string_agg(stage, ' ' ORDER BY event_time_ms, event_id) FROM $S.plan_requests WHERE job_uid = '$UID1'")"
expect_eq "OOM pods asked" "$UID1-edljob-worker-0 $UID1-edljob-ps-1" \
    "$(sys_sql "SELECT string_agg(oom_pod, ' ' ORDER BY event_time_ms) FROM $S.plan_requests WHERE job_uid = '$UID1' AND oom_pod IS NOT NULL")"
expect_eq "jobs row (scenario, hyper-params, dataset, model, exit reason)" \
    "dlrover|512|3|clicks-30d|1000000|120|4500|3221225472|1200|7516192768|Completed" \
    "$(sys_sql "SELECT scenario, batch_size, epoch, dataset_name, dataset_size, model_variable_count, model_op_count, model_total_variable_size, model_recv_op_count, model_flops, exit_reason FROM $S.jobs WHERE uid = '$UID1'")"

# Every field sent is in the stored events (decoded by the Python client).
sys_sql "SELECT encode(raw, 'hex') FROM $S.job_events WHERE job_uid = '$UID1' UNION ALL
         SELECT encode(raw, 'hex') FROM $S.runtime_samples WHERE job_uid = '$UID1'" >"$SYS_DIR/raw.hex"
"$PY" - "$SYS_DIR/raw.hex" >"$SYS_DIR/fields.txt" <<'EOF' || fail "stored events do not decode"
import sys
from dlbrain_client import codec
seen = set()
for line in open(sys.argv[1]):
    t, rec = codec.decode(bytes.fromhex(line.strip()))
    def walk(prefix, v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(prefix + "." + k if prefix else k, x)
        elif isinstance(v, list):
            for x in v:
                walk(prefix + "[]", x)
        elif v not in (None, "", 0, 0.0, False, [], {}):
            seen.add(t + ":" + prefix)
    walk("", rec)
print("\n".join(sorted(seen)))
EOF
for f in job_event:hyper_params.batch_size job_event:hyper_params.epoch job_event:dataset.name \
    job_event:dataset.size job_event:dataset.sparse_item_count job_event:dataset.sparse_features \
    job_event:dataset.sparse_feature_groups job_event:dataset.sparse_feature_shapes \
    job_event:dataset.dense_features job_event:dataset.dense_feature_shapes \
    job_event:dataset.storage_size job_event:model.variable_count job_event:model.op_count \
    job_event:model.total_variable_size job_event:model.max_variable_size \
    job_event:model.update_op_count job_event:model.read_op_count job_event:model.input_fetch_dur \
    job_event:model.recv_op_count job_event:model.flops job_event:model.kv_embedding_dims[] \
    job_event:model.tensor_alloc_bytes.embedding job_event:workflow.job_name \
    job_event:workflow.user_id job_event:workflow.code_address job_event:workflow.workflow_id \
    job_event:workflow.node_id job_event:workflow.odps_project job_event:workflow.is_prod \
    job_event:job_type job_event:resource job_event:customized_data job_event:optimization \
    job_event:exit_reason job_event:meta.name job_event:meta.cluster job_event:meta.scenario \
    runtime_sample:global_step runtime_sample:speed runtime_sample:pods[].name \
    runtime_sample:pods[].cpu_used runtime_sample:pods[].memory_used runtime_sample:pods[].pod_ip \
    runtime_sample:pods[].node_ip runtime_sample:pods[].host_name runtime_sample:pods[].namespace; do
    grep -qxF "$f" "$SYS_DIR/fields.txt" || fail "no stored event carries $f"
done
ok "the stored events carry every field DLRover sent"

# The plans as DLRover's master read them = the optimizer's plans in
# DLRover's units (memory bytes -> MiB floored, group CPU ceil, pod CPU floor).
sys_sql "SELECT json_build_object('stage', stage, 'groups', groups, 'pods', pods)
         FROM $S.plans WHERE job_uid = '$UID1' ORDER BY event_time_ms, plan_id" >"$SYS_DIR/plans.jsonl"
"$PY" - "$SYS_DIR/dlrover.json" "$SYS_DIR/plans.jsonl" <<'EOF' || fail "DLRover read other plans than the optimizer made"
import json, math, sys
read = json.load(open(sys.argv[1]))["plans"]
made = [json.loads(l) for l in open(sys.argv[2])]
assert len(read) == len(made) == 8, (len(read), len(made))
for r, m in zip(read, made):
    assert r["stage"] == m["stage"], (r["stage"], m["stage"])
    want_g = {g["group"]: {"count": g["count"], "cpu": math.ceil(g["resource"]["cpu"]),
                           "memory": g["resource"]["memory"] // (1 << 20)} for g in m["groups"]}
    want_p = {p["name"]: {"cpu": int(p["resource"]["cpu"]),
                          "memory": p["resource"]["memory"] // (1 << 20)} for p in m["pods"]}
    got = r["plan"] or {"groups": {}, "pods": {}}
    # A worker OOM is read from the worker group alone: the gateway copies
    # the pod's answer there when the plan has none (docs/gateway.md).
    if r.get("oom_pod") and r["stage"] == "job_stage_create" and "worker" not in want_g:
        want_g["worker"] = {"count": 0, **want_p[r["oom_pod"]]}
        want_g["worker"]["cpu"] = math.ceil(want_g["worker"]["cpu"])
    assert got["groups"] == want_g, (r["stage"], got["groups"], want_g)
    assert got["pods"] == want_p, (r["stage"], got["pods"], want_p)
print("ok")
EOF
ok "the 8 plans DLRover's master read are the optimizer's, in DLRover's units"
grep -q '"memory": 6144' "$SYS_DIR/dlrover.json" || fail "no worker memory in the plans DLRover read"

# The same events through the native path, for another job: the same plans.
sys_sql "SELECT event_time_ms || '|0|' || encode(raw, 'hex') FROM $S.job_events WHERE job_uid = '$UID1'
         UNION ALL SELECT event_time_ms || '|2|' || encode(raw, 'hex') FROM $S.runtime_samples WHERE job_uid = '$UID1'
         UNION ALL SELECT event_time_ms || '|3|' || encode(raw, 'hex') FROM $S.plan_requests WHERE job_uid = '$UID1'" |
    "$PY" "$GWDIR/native_events.py" "$UID1" native-1 native >"$SYS_DIR/native.jsonl" ||
    fail "could not turn the gateway's events into emit lines"
"$DLBRAIN" emit --strict <"$SYS_DIR/native.jsonl" >/dev/null 2>"$SYS_DIR/emit.log" ||
    fail "dlbrain emit refused the native events: $(tail -n 3 "$SYS_DIR/emit.log")"
sys_wait_count "plans WHERE job_uid = 'native-1'" 8 60
plans_of() {
    sys_sql "SELECT stage || ' ' || replace(groups::text || pods::text || actions::text, '$1', 'JOB')
             FROM $S.plans WHERE job_uid = '$1' ORDER BY event_time_ms, plan_id"
}
[ "$(plans_of "$UID1")" = "$(plans_of native-1)" ] ||
    fail "the native path made other plans: $(diff <(plans_of "$UID1") <(plans_of native-1) | head -n 6)"
ok "the same events through dlbrain emit get the same 8 plans"

# get_job_metrics, through DLRover's BrainClient, once everything is stored.
sys_wait_count "job_events WHERE job_uid = '$UID1' AND exit_reason = 'Completed'" 1 60
DLROVER_BRAIN_SERVICE_ADDR=$GW1 "$PY" -c '
import sys
from dlrover.python.brain.client import GlobalBrainClient
r = GlobalBrainClient.BRAIN_CLIENT.get_job_metrics(sys.argv[1])
assert r.response.success, r.response.reason
print(r.job_metrics)' "$UID1" >"$SYS_DIR/job_metrics.json" 2>"$SYS_DIR/job_metrics.log" ||
    fail "get_job_metrics: $(tail -n 3 "$SYS_DIR/job_metrics.log")"
"$PY" - "$SYS_DIR/job_metrics.json" <<'EOF' || fail "get_job_metrics did not answer the Go Brain's JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert sorted(j) == sorted(["UID", "HyperParamsFeature", "JobFeature", "DatasetFeature",
    "ModelFeature", "JobRuntime", "ExitReason", "Optimization", "Resource", "CustomizedData",
    "Type"]), sorted(j)
assert all(isinstance(v, str) for v in j.values()), j
assert json.loads(j["HyperParamsFeature"]) == {"batch_size": 512, "epoch": 3}, j
wf = json.loads(j["JobFeature"])
assert wf["job_name"] == "ctr-train" and wf["code_address"] == "git://repo/ctr" and wf["is_prod"], wf
ds = json.loads(j["DatasetFeature"])
assert ds["dataset_size"] == 1000000 and ds["sparse_features"] == "u,i,c", ds
assert ds["dense_feature_shapes"] == "1,1" and ds["storage_size"] == 5 << 30, ds
mf = json.loads(j["ModelFeature"])
assert mf["variable_count"] == 120 and mf["recv_op_count"] == 1200, mf
assert mf["kv_embedding_dims"] == [8, 16], mf
assert mf["tensor_alloc_bytes"] == {"embedding": 1 << 29, "dense": 1 << 20}, mf
assert j["Type"] == "ParameterServerStrategy" and j["ExitReason"] == "Completed", j
assert json.loads(j["CustomizedData"]) == {"init_training_time": 12, "rdzv_round": 1}, j
assert "node_group_resources" in json.loads(j["Resource"]), j["Resource"]
opt = json.loads(j["Optimization"])
assert len(opt) == 1 and opt[0]["config"]["optimizer_config_retriever"] == "base_config_retriever", opt
rt = json.loads(j["JobRuntime"])
assert len(rt) == 6 and rt[0]["global_step"] == 1000, rt[0]
assert rt[0]["ps_memory"] == {"0": 6 << 30, "1": 5 << 30}, rt[0]
assert rt[0]["worker_cpu"] == {"0": 3, "1": 3.5}, rt[0]
EOF
ok "get_job_metrics (DLRover's client) answers the Go Brain's JSON: every feature, the runtime records"

# ---- bad input, deadlines ------------------------------------------------------
before=$(sys_count job_events)
"$PY" "$GWDIR/calls.py" bad "$GW1" >"$SYS_DIR/bad.txt" 2>&1 || fail "bad-input calls: $(tail -n 3 "$SYS_DIR/bad.txt")"
expect_bad() {
    local line
    line=$(grep "^$1 " "$SYS_DIR/bad.txt") || fail "no answer to $1"
    case "$line" in "$1 $2 "*"$3"*) ok "$1: $2 ($3)" ;; *) fail "$1: expected $2 ... $3, got: $line" ;; esac
}
expect_bad malformed INVALID_ARGUMENT "do not parse as brain.JobMetrics"
# What a consumer would send to the DLQ is refused before it is acknowledged,
# by the consumers' own checks, naming DLRover's field and the event's.
expect_bad non-utf8-uid INVALID_ARGUMENT "job_meta.uuid: the job_event it becomes fails the consumers' decode check: job_uid: not UTF-8"
expect_bad non-utf8-name INVALID_ARGUMENT "workflow_feature: the job_event it becomes fails the consumers' decode check: workflow.job_name: not UTF-8"
expect_bad non-utf8-optimize INVALID_ARGUMENT "jobs[0].uid: the plan_request it becomes fails the consumers' decode check: job_uid: not UTF-8"
expect_bad future-sample INVALID_ARGUMENT "runtime_info.time_stamp: the runtime_sample it becomes fails the consumers' validate check: event_time_ms"
expect_bad malformed-optimize INVALID_ARGUMENT "do not parse as brain.OptimizeRequest"
expect_bad no-uid INVALID_ARGUMENT "job_meta.uuid: missing"
expect_bad type-mismatch INVALID_ARGUMENT "metrics_type says model_feature but the message carries type"
expect_bad long-uid INVALID_ARGUMENT "job_meta.uuid: 300 bytes, at most 127"
expect_bad bad-pod-name INVALID_ARGUMENT "does not end in -<ps|worker|chief|evaluator>-<index>"
expect_bad unknown-stage INVALID_ARGUMENT "stage"
expect_bad no-job INVALID_ARGUMENT "jobs: 0 given"
expect_bad no-job-uuid INVALID_ARGUMENT "job_uuid: missing"
expect_bad unknown-method UNIMPLEMENTED "unknown method /brain.Brain/get_config"
expect_bad oversized RESOURCE_EXHAUSTED ""
expect_bad good OK ""
sys_wait_count "job_events WHERE job_uid = 'job-bad-1'" 1 30
expect_eq "events the bad calls added (only the good one)" "$((before + 1))" "$(sys_count job_events)"
# The good call was stored after every bad one: the optimizer read past them.
sys_dlq_read 0 1
ok "nothing the gateway acknowledged went to the DLQ"

# No optimizer: no plan comes; the gateway's budget, then a client's nearer deadline.
start_gateway gateway-late -X gateway.optimize.timeout.ms=800
kill -STOP "$OPT_PID"
"$PY" "$GWDIR/calls.py" optimize "$GW" job-late-1 job_stage_create >"$SYS_DIR/late.json" 2>&1 ||
    fail "an optimize call without an optimizer: $(tail -n 3 "$SYS_DIR/late.json")"
kill -CONT "$OPT_PID"
"$PY" - "$SYS_DIR/late.json" <<'EOF' || fail "a plan that did not come: $(cat "$SYS_DIR/late.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "OK" and r["success"] is False and r["plans"] == 0, r
assert "no plan for job_stage_create within 800 ms" in r["reason"], r
assert 0.7 < r["seconds"] < 3, r
EOF
ok "no plan in gateway.optimize.timeout.ms: success=false, the reason, no plan ($(sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$SYS_DIR/late.json") s)"
kill -STOP "$OPT_PID"
"$PY" "$GWDIR/calls.py" optimize "$GW1" job-late-2 job_stage_create 0.4 >"$SYS_DIR/late2.json" 2>&1 ||
    fail "a call with a 0.4 s deadline: $(tail -n 3 "$SYS_DIR/late2.json")"
kill -CONT "$OPT_PID"
# Honoured either way the issue allows, never a hang: success=false with the
# reason just before the deadline, or, when the gateway's answer cannot beat
# it (the first call on a plans partition asks the broker where it ends on
# the gRPC thread, slow under the sanitizers on a loaded machine), gRPC's own
# DEADLINE_EXCEEDED at the deadline.
"$PY" - "$SYS_DIR/late2.json" <<'EOF' || fail "a 0.4 s client deadline: $(cat "$SYS_DIR/late2.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["seconds"] < 2, r
assert (r["status"] == "OK" and r["success"] is False) or r["status"] == "DEADLINE_EXCEEDED", r
EOF
ok "a client's 0.4 s deadline is honoured: $(sed -n 's/.*"status": "\([A-Z_]*\)".*/\1/p' "$SYS_DIR/late2.json") in $(sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$SYS_DIR/late2.json") s"
kill -STOP "$OPT_PID"
gone=$("$PY" "$GWDIR/calls.py" gone "$GW1" 2>&1) || fail "a cancelling client: $gone"
expect_eq "a client that goes away before its plan" cancelled "$gone"
kill -CONT "$OPT_PID"
# A call whose client deadline passed first (late2's DEADLINE_EXCEEDED) is
# one the gateway saw cancelled too: gRPC cancels it on the server side.
want_cancelled=1
grep -q '"status": "DEADLINE_EXCEEDED"' "$SYS_DIR/late2.json" && want_cancelled=2
for _ in $(seq 1 50); do [ "$(metric gateway1 dlbrain_gateway_cancelled_total)" = "$want_cancelled" ] && break; sleep 0.1; done
expect_eq "calls the gateway saw cancelled" "$want_cancelled" "$(metric gateway1 dlbrain_gateway_cancelled_total)"
kill -0 "$GW1_PID" 2>/dev/null || fail "the gateway died"

# ---- two gateways -----------------------------------------------------------
start_gateway gateway2
GW2=$GW
out=$("$PY" "$GWDIR/calls.py" spread "$GW1,$GW2" 20 2>&1) || fail "spread calls: $(echo "$out" | tail -n 3)"
expect_eq "20 jobs' create plans through two gateways" "ok 20" "$(echo "$out" | tail -n 1)"
p1=$(metric gateway1 dlbrain_gateway_plans_total)
p2=$(metric gateway2 dlbrain_gateway_plans_total)
[ "${p1%.*}" -ge 10 ] && [ "${p2%.*}" -ge 10 ] || fail "plans answered per gateway: $p1 and $p2"
ok "each gateway answered its own calls ($p1 and $p2 plans)"
# Partitions are read on for gateway.plans.linger.ms (5 s) after their last
# waiter, then no more.
for g in gateway1 gateway2; do
    for _ in $(seq 1 150); do [ "$(metric $g dlbrain_gateway_plans_partitions)" = 0 ] && break; sleep 0.1; done
    expect_eq "$g: plans partitions read once nothing waits (after the linger)" 0 \
        "$(metric $g dlbrain_gateway_plans_partitions)"
done
echo "18-gateway: all checks passed"
