#!/usr/bin/env bash
# dlbrain sim's master asks what DLRover 0.6.1's master asks (issue 19).
# The simulator runs scripted workloads answered by a scripted Brain
# (tests/system/gateway/sim_conformance.py, answer()):
# tests/system/data/sim-conformance.csv with seeds 44 and 201 (a job whose PS
# gets plans and one whose PS never does, PS OOMs, worker OOMs before and
# after the first periodic ask; plans of worker and PS counts and
# resources, per-pod worker memory, OOMs at 64 GiB of worker 0 and of
# another worker, a worker's 4th OOM), and sim-conformance-plans.csv on a
# 128-core cluster with a check at every tick after a plan (a PS count that
# clears the speed records, a PS migration that waits for room and one that
# never gets it). Then DLRover's own master code, unchanged from PyPI,
# replays each job's history on a virtual clock through dlbrain gateway,
# answered by the same script: its optimizer and autoscaler loop, its PS and
# worker managers executing the plans, its job manager's OOM and early-stop
# rules. Every job's requests must be the same (stages, order, virtual times,
# worker phases, OOM pods), and its failure when the master stops it.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
CONF=$SYS_TOP/tests/system/gateway/sim_conformance.py
WL=$SYS_TOP/tests/system/data/sim-conformance.csv
WL_PLANS=$SYS_TOP/tests/system/data/sim-conformance-plans.csv
SEEDS=${DLB_CONFORMANCE_SEEDS:-44 201}
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"
"$PY" -c 'import dlrover.python.master.resource.job, grpc, confluent_kafka' 2>/dev/null ||
    fail "the venv lacks dlrover 0.6.1 / grpcio / confluent-kafka (scripts/setup installs them)"

sys_start_kafka 1
envs=(dl plans)
for s in $SEEDS; do envs+=("sim$s"); done

# The scripted Brain, for the simulator's environments and the gateway's.
"$PY" "$CONF" respond "$SYS_DIR/log.jsonl" "${envs[@]}" >"$SYS_DIR/respond.out" 2>"$SYS_DIR/respond.log" &
SYS_PIDS+=($!)
for _ in $(seq 1 100); do grep -q ready "$SYS_DIR/respond.out" && break; sleep 0.1; done
grep -q ready "$SYS_DIR/respond.out" || fail "the scripted Brain did not start: $(tail -n 3 "$SYS_DIR/respond.log")"

# A fetch waits 10 ms, not librdkafka's 500, for the next plan: one round trip per request.
"$DLBRAIN" gateway -e dl -a 127.0.0.1:0 -X metrics.port=0 -X gateway.optimize.timeout.ms=20000 \
    -X fetch.wait.max.ms=10 >/dev/null 2>"$SYS_DIR/gateway.log" &
SYS_PIDS+=($!)
port=''
for _ in $(seq 1 100); do
    port=$(sed -n 's/.*serving brain.Brain on .* (port \([0-9]*\)).*/\1/p' "$SYS_DIR/gateway.log" 2>/dev/null) || true
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || fail "the gateway did not start: $(tail -n 3 "$SYS_DIR/gateway.log")"

# The simulated runs, at once (each waits on its round trips, not on the CPU):
# ENV SEED WORKLOAD ASK_EVERY [sim options].
runs=()
for s in $SEEDS; do runs+=("sim$s $s $WL 300"); done
# A small cluster: a migrated PS waits for room, another never gets it. A check
# at every tick after a plan: a PS plan's reset of the speed records shows.
runs+=("plans ${SEEDS%% *} $WL_PLANS 30 --cluster-cores 128")
pids=()
for r in "${runs[@]}"; do
    # shellcheck disable=SC2086 # a run is a list of words
    set -- $r
    env=$1 seed=$2 wl=$3 every=$4
    shift 4
    "$DLBRAIN" sim -e "$env" -w "$wl" --seed "$seed" --ask-every "$every" --plan-timeout-ms 20000 \
        -X fetch.wait.max.ms=10 -X limits.memory.max.mib=131072 "$@" \
        --summary-json "$SYS_DIR/$env.json" 2>"$SYS_DIR/$env.log" &
    pids+=($!)
done
for i in "${!runs[@]}"; do
    wait "${pids[$i]}" || fail "dlbrain sim (${runs[$i]}) failed: $(tail -n 3 "$SYS_DIR/${runs[$i]%% *}.log")"
done

# DLRover's replays, at once: each through the gateway, answered by the same script.
pids=()
for r in "${runs[@]}"; do
    # shellcheck disable=SC2086
    set -- $r
    env=$1 every=$4
    expect_eq "$env: plans missing" 0 "$(jq -r .plans_missing "$SYS_DIR/$env.json")"
    ok "$env: $(grep '^sim:' "$SYS_DIR/$env.log" | grep -o 'plan_requests=[0-9]* .*ooms=[0-9]*')"
    # The history is complete once the scripted Brain logged every event.
    n=$(jq -r .events "$SYS_DIR/$env.json")
    for _ in $(seq 1 300); do
        [ "$(grep -c "\"env\": \"$env\"" "$SYS_DIR/log.jsonl")" -ge "$n" ] && break
        sleep 0.1
    done
    expect_eq "$env: events in the history" "$n" "$(grep -c "\"env\": \"$env\"" "$SYS_DIR/log.jsonl")"
    DLROVER_BRAIN_SERVICE_ADDR=127.0.0.1:$port timeout 500 "$PY" "$CONF" dlrover "$SYS_DIR/log.jsonl" \
        "$env" "$SYS_DIR/dlrover-$env.json" "$every" >"$SYS_DIR/dlrover-$env.log" 2>&1 &
    pids+=($!)
done
for i in "${!runs[@]}"; do
    env=${runs[$i]%% *}
    wait "${pids[$i]}" ||
        fail "DLRover's code failed ($env): $(grep -v '^ ' "$SYS_DIR/dlrover-$env.log" | tail -n 5)"
    ok "$env: DLRover's optimizer, autoscaler loop, PS and worker managers and node rules replayed every job"
done
for r in "${runs[@]}"; do
    env=${r%% *}
    "$PY" "$CONF" compare "$SYS_DIR/log.jsonl" "$env" "$SYS_DIR/dlrover-$env.json" >"$SYS_DIR/compare-$env.txt" || {
        cat "$SYS_DIR/compare-$env.txt"
        fail "$env: the simulator's master asked otherwise than DLRover's"
    }
    cat "$SYS_DIR/compare-$env.txt"
    ok "$env: every job asked the same stages, in the same order, at the same times, with the same settings, and failed alike"
done

# What the scripts covered, over both seeds: each rule of DLRover's master.
all=$(cat "$SYS_DIR"/compare*.txt)
has() { grep -qE -e "$2" <<<"$all" || fail "no request shows $1"; ok "covered: $1"; }
has "worker_initial in the initial phase" "job_stage_worker_initial +optimizer.worker.optimize-phase=initial +-$"
has "worker_initial in the sample phase" "job_stage_worker_initial +optimizer.worker.optimize-phase=sample"
has "worker_running in the stable phase" "job_stage_worker_running +optimizer.worker.optimize-phase=stable"
has "ps_initial and ps_running" "job_stage_ps_running +- +-$"
has "a worker OOM at job_stage_create" "job_stage_create +- +[^ ]*-worker-[0-9]+$"
has "a PS OOM at job_stage_ps_initial" "job_stage_ps_initial +- +[^ ]*-ps-[0-9]+$"
has "a plan of more workers with their resources, executed" "executed: 6 worker \\(5 cores, 8 GiB\\)"
has "a plan of fewer workers, executed" "executed: 5 worker "
has "a plan of more PS, executed" "executed: 2 ps "
has "a per-pod worker plan, executed" "executed: [^ ]*-worker-1 to "
has "a worker's 4th OOM: its relaunches spent" "-worker-0 OOMKilled at [0-9]+ GiB: not relaunched"
has "an OOM at 64 GiB of worker 0: not relaunched, not asked about" "-worker-0 OOMKilled at 64 GiB: not relaunched"
has "the job failing of it" "\\(job fails\\) +(WorkerOOM|CodeError)"
has "an OOM at 64 GiB of another worker: the job goes on without it" "-worker-[1-9][0-9]* OOMKilled at 64 GiB: not relaunched"
has "a PS migration waiting for room, with no check for longer than --ask-every" \
    "migration of [^ ]*-ps-0 over after ([4-9][0-9][0-9]|[0-9]{4,}) s"
has "a migrated PS pending too long failing the job" "\\(job fails\\) +PendingTimeout"
echo "45-sim-conformance: all checks passed"
