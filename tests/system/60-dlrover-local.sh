#!/usr/bin/env bash
# The dlrover-local arm: DLRover 0.6.1's PSLocalOptimizer (PyPI, unchanged)
# answers the simulator's plan requests through Kafka
# (consumers/dlrover_local), and its plans are the ones DLRover's code returns
# for the same inputs. Two simulations of tests/system/data/sim-conformance.csv
# (seeds 44: a worker OOM before the first periodic ask; 201: a PS OOM) run
# against one consumer each; the consumer of seed 201 is killed with SIGKILL
# midway and started again, and the simulation must not miss a plan. Then
# tests/system/dlrover_local_check.py reads every environment's samples, OOM
# events, requests and plans back from Kafka (read_committed) and calls
# DLRover's PSLocalOptimizer afresh for each request with the job's samples and
# OOMs as of it: every request must have exactly one committed plan, equal to
# DLRover's (groups, pods, counts, CPU, memory in bytes). A consumer started
# once more after the end reads everything and answers nothing.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
MAIN=$SYS_TOP/consumers/dlrover_local/main.py
CHECK=$SYS_TOP/tests/system/dlrover_local_check.py
WL=$SYS_TOP/tests/system/data/sim-conformance.csv
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"
"$PY" -c 'import dlrover.python.master.resource.local_optimizer, confluent_kafka, dlbrain_client' \
    2>/dev/null || fail "the venv lacks dlrover 0.6.1 / confluent-kafka / dlbrain_client (scripts/setup)"

sys_start_kafka 3

# start_consumer NAME ENV: a consumer logging to NAME.log; its pid in cpid.
start_consumer() {
    "$PY" "$MAIN" -e "$2" -b "$DLBRAIN_BROKERS" >"$SYS_DIR/$1.out" 2>"$SYS_DIR/$1.log" &
    cpid=$!
    SYS_PIDS+=("$cpid")
    for _ in $(seq 1 200); do grep -qs ready "$SYS_DIR/$1.out" && return 0; sleep 0.1; done
    fail "the consumer $1 did not start: $(tail -n 3 "$SYS_DIR/$1.log")"
}
# forget PID: out of SYS_PIDS (a process killed on purpose).
forget() {
    local keep=() p
    for p in "${SYS_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    SYS_PIDS=("${keep[@]}")
}
stats() { grep -o "$2.*" "$SYS_DIR/$1.log" | tail -n 1; }

start_consumer c44 dl44
start_consumer c201 dl201
killed=$cpid
sims=()
for s in 44 201; do
    "$DLBRAIN" sim -e "dl$s" -w "$WL" --seed "$s" --plan-timeout-ms 20000 -X fetch.wait.max.ms=10 \
        --summary-json "$SYS_DIR/sim$s.json" 2>"$SYS_DIR/sim$s.log" &
    sims+=($!)
done

# Midway through seed 201: SIGKILL (an open transaction, plans never
# committed), then a new consumer, which fences the old one, reads the
# committed plans and the inputs from the start, and answers the rest.
for _ in $(seq 1 300); do [ "$(grep -c ' plan plan-' "$SYS_DIR/c201.log")" -ge 60 ] && break; sleep 0.1; done
[ "$(grep -c ' plan plan-' "$SYS_DIR/c201.log")" -ge 60 ] || fail "seed 201: no 60 plans within 30 s"
kill -KILL "$killed"
wait "$killed" 2>/dev/null || true
forget "$killed"
ok "seed 201: the consumer killed (SIGKILL) after $(grep -c ' plan plan-' "$SYS_DIR/c201.log") plans"
start_consumer c201b dl201

for i in 0 1; do
    s=$([ "$i" = 0 ] && echo 44 || echo 201)
    wait "${sims[i]}" || fail "dlbrain sim (seed $s) failed: $(tail -n 3 "$SYS_DIR/sim$s.log")"
    expect_eq "seed $s: plans missing" 0 "$(jq -r .plans_missing "$SYS_DIR/sim$s.json")"
    expect_eq "seed $s: plans received" "$(jq -r .plan_requests "$SYS_DIR/sim$s.json")" \
        "$(jq -r .plans_received "$SYS_DIR/sim$s.json")"
    ok "seed $s: $(grep '^sim:' "$SYS_DIR/sim$s.log" | grep -o 'plan_requests=[0-9]* .*ooms=[0-9]*')"
done
already=$(sed -n 's/.* \([0-9]*\) request(s) of dl201 have a committed plan already.*/\1/p' "$SYS_DIR/c201b.log")
[ "${already:-0}" -gt 0 ] || fail "the restarted consumer found no committed plan of its predecessor"
ok "seed 201: the restarted consumer skipped the $already requests its predecessor had answered"

"$PY" "$CHECK" dl44 dl201 >"$SYS_DIR/check.txt" 2>"$SYS_DIR/check.log" || {
    cat "$SYS_DIR/check.txt"
    fail "plans differ from DLRover's PSLocalOptimizer (or a request has no or several plans)"
}
cat "$SYS_DIR/check.txt"
ok "every request has one committed plan, the one DLRover's PSLocalOptimizer returns for its inputs"
has() { grep -qE "^ +[0-9]+  $2\$" "$SYS_DIR/check.txt" || fail "no plan shows $1"; ok "covered: $1"; }
has "create: worker and PS groups" "job_stage_create worker\+ps"
has "worker_initial: a worker group" "job_stage_worker_initial worker"
has "ps_initial: a PS group" "job_stage_ps_initial ps"
has "ps_running: a plan" "job_stage_ps_running (worker|ps|pods)"
has "worker_running: no plan (PSLocalOptimizer has none for it)" "job_stage_worker_running none"
has "a worker OOM at job_stage_create: the pod's memory" "oom job_stage_create pods"
has "a PS OOM at job_stage_ps_initial: the pod's memory" "oom job_stage_ps_initial pods"

# Once more from the start: everything read, nothing answered again.
start_consumer c201c dl201
for _ in $(seq 1 300); do grep -q 'caught up' "$SYS_DIR/c201c.log" && break; sleep 0.1; done
grep -q 'caught up' "$SYS_DIR/c201c.log" || fail "a new consumer did not catch up within 30 s"
kill -TERM "$cpid"
wait "$cpid" || fail "the consumer did not stop cleanly on SIGTERM"
forget "$cpid"
n=$(jq -r .plan_requests "$SYS_DIR/sim201.json")
line=$(stats c201c stopped:)
grep -q "requests=$n, answered=0, skipped=$n," <<<"$line" || fail "a third consumer answered again: $line"
ok "a third consumer read every request ($n) and answered none: $line"
echo "60-dlrover-local: all checks passed"
