#!/usr/bin/env bash
# The job simulator against a real optimizer: 10 jobs of a Pollux workload
# (workload-4 starts with a BERT job, whose workers need more memory than
# DLRover's cold-start 16 GiB, so an OOM is certain) run to their end in lock-step
# with the dlbrain optimizer set; plans are requested and applied, an OOM is
# answered with more memory, and a second run with the same seed in a fresh
# environment gives the same summary.
. "$(dirname "$0")/helpers.sh"

WL=${DLB_SIM_WORKLOAD:-$SYS_TOP/data/pollux/workloads/workload-4.csv}
[ -f "$WL" ] || fail "no workload at $WL"

sys_start_pg
sys_start_redis
sys_start_kafka 1
sys_start_optimizer opt-a -X env=sima -X optimizer.set=dlbrain
sys_start_optimizer opt-b -X env=simb -X optimizer.set=dlbrain

# run ENV OUT: one simulation, its summary in OUT.json, its log in OUT.log.
run() {
    "$DLBRAIN" sim -e "$1" -w "$WL" -n 10 --seed 7 --time-scale 0.2 --plan-timeout-ms 20000 \
        --summary-json "$SYS_DIR/$2.json" 2>"$SYS_DIR/$2.log" || fail "dlbrain sim in $1 failed"
    grep '^sim:' "$SYS_DIR/$2.log" || fail "no summary line"
}
run sima a
s() { jq -r ".$1" "$SYS_DIR/a.json"; }
expect_eq "jobs" 10 "$(s jobs)"
expect_eq "jobs ended (succeeded + failed)" 10 "$(($(s succeeded) + $(s failed)))"
[ "$(s succeeded)" -ge 8 ] || fail "only $(s succeeded) of 10 jobs succeeded"
ok "$(s succeeded) succeeded"
[ "$(s plan_requests)" -gt 30 ] || fail "only $(s plan_requests) plan requests"
expect_eq "plans missing" 0 "$(s plans_missing)"
expect_eq "plans received = requests" "$(s plan_requests)" "$(s plans_received)"
[ "$(s plans_applied)" -gt 0 ] || fail "no plan was applied"
ok "$(s plans_applied) plans applied"
[ "$(s ooms)" -gt 0 ] || fail "no OOM"
[ "$(s oom_answered)" -ge 1 ] || fail "no OOM was answered with more memory"
ok "$(s ooms) OOMs, $(s oom_answered) answered with more memory"

# What the evaluator reads: every job's history in the environment's tables.
# The simulator ends when its last events are acknowledged by Kafka, not when
# the optimizer has stored them: wait for them, then check exact counts.
SCHEMA=sima
sys_wait_count_in() { DLBRAIN_ENV=$SCHEMA sys_wait_count "$@"; }
sys_wait_count_in "jobs WHERE state IN ('succeeded', 'failed')" 10 60
n=$(sys_sql "SELECT count(*) FROM $SCHEMA.jobs WHERE state IN ('succeeded', 'failed')")
expect_eq "ended jobs in PostgreSQL" 10 "$n"
sys_wait_count_in plans "$(s plan_requests)" 60
sys_wait_count_in "node_events WHERE kind = 'oom_killed'" "$(s ooms)" 60
n=$(sys_sql "SELECT count(*) FROM $SCHEMA.node_events WHERE kind = 'oom_killed'")
expect_eq "oom_killed node events in PostgreSQL" "$(s ooms)" "$n"

run simb b
strip() { jq -c 'del(.wall_s, .speedup)' "$1"; }
expect_eq "same seed, same summary" "$(strip "$SYS_DIR/a.json")" "$(strip "$SYS_DIR/b.json")"
echo "42-sim: all checks passed"
