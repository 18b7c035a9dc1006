#!/usr/bin/env bash
# The job simulator against a real optimizer: 10 jobs of a Pollux workload
# (workload-4, seed 7, a fifth of the length: the ncf jobs' PS memory rises
# faster than the PS sizing at ps_initial foresaw, so OOMs are certain, the
# same each run) run to their end in lock-step
# with the dlbrain optimizer set; plans are requested and applied, an OOM is
# answered with more memory (and plan_outcomes.ooms_after counts it for the
# plan in effect, not for the plan that answered it), and a second run with
# the same seed in a fresh environment gives the same summary.
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
# At least create, ps_initial and worker_initial for each job.
[ "$(s plan_requests)" -ge 30 ] || fail "only $(s plan_requests) plan requests"
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
# The simulated master asks for an OOM plan at the kill's time: the plan that
# answered an OOM must not count it in plan_outcomes.ooms_after, the plan in
# effect when it came must.
. "$SYS_TOP/tests/system/analysts-checks.sh"
analysts_check_views "$SCHEMA"

run simb b
strip() { jq -c 'del(.wall_s, .speedup)' "$1"; }
expect_eq "same seed, same summary" "$(strip "$SYS_DIR/a.json")" "$(strip "$SYS_DIR/b.json")"
# The baseline arm of scripts/compare: no plans applied, so the simulator ends
# in a fraction of a second, long before its optimizer has stored what it sent;
# an evaluation right then saw a fraction of the jobs. The mock cluster keeps
# no offsets committed in a transaction, so `dlbrain env settle` (lag 0 and
# every event stored) can only fail here: its success is 44-compare.sh, on a
# real broker. Here: once PostgreSQL holds every event the simulator counted,
# the evaluator sees every job, and settle names what is missing.
sys_start_optimizer opt-c -X env=simc -X optimizer.set=dlrover
"$DLBRAIN" sim -e simc -w "$WL" -n 10 --seed 7 --time-scale 0.2 --plans none \
    --summary-json "$SYS_DIR/c.json" 2>"$SYS_DIR/c.log" || fail "dlbrain sim --plans none failed"
events=$(jq -r .events "$SYS_DIR/c.json")
[ "$events" -gt 100 ] || fail "only $events events"
stored() {
    sys_sql "SELECT (SELECT count(*) FROM simc.job_events) + (SELECT count(*) FROM simc.runtime_samples)
        + (SELECT count(*) FROM simc.node_events) + (SELECT count(*) FROM simc.plan_requests)"
}
deadline=$((SECONDS + 60))
while [ "$(stored)" -lt "$events" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
expect_eq "events stored (job, runtime, node events and plan requests)" "$events" "$(stored)"
"$DLBRAIN" eval simc --json "$SYS_DIR/c-eval.json" >/dev/null || fail "dlbrain eval simc failed"
e() { jq -r ".envs[0].$1" "$SYS_DIR/c-eval.json"; }
expect_eq "jobs evaluated" 10 "$(e jobs.total)"
expect_eq "finished jobs evaluated" "$(jq -r '.succeeded + .failed' "$SYS_DIR/c.json")" "$(e jobs.finished)"
expect_eq "runtime samples evaluated" "$(jq -r .samples "$SYS_DIR/c.json")" "$(e samples)"
expect_eq "OOMs evaluated" "$(jq -r .ooms "$SYS_DIR/c.json")" "$(e ooms.total)"
# A count that is never reached fails, naming the environment and both counts.
if "$DLBRAIN" env settle simc --events $((events + 5)) --timeout 1 >"$SYS_DIR/settle.out" 2>&1; then
    fail "env settle succeeded on a count never reached"
fi
grep -q "simc: not settled after [0-9]* s: $events of $((events + 5)) events stored in PostgreSQL (5 missing)" \
    "$SYS_DIR/settle.out" || fail "env settle failed without the counts: $(cat "$SYS_DIR/settle.out")"
ok "a count never reached fails loudly: $(cat "$SYS_DIR/settle.out")"
if "$DLBRAIN" env settle simc --events $((events - 1)) --timeout 1 >"$SYS_DIR/settle.out" 2>&1; then
    fail "env settle succeeded with more events stored than expected"
fi
grep -q "simc: $events events stored in PostgreSQL, more than the $((events - 1)) expected" \
    "$SYS_DIR/settle.out" || fail "env settle: $(cat "$SYS_DIR/settle.out")"
ok "more events than expected fails at once"
if "$DLBRAIN" env settle nosuch --timeout 1 >"$SYS_DIR/settle.out" 2>&1; then
    fail "env settle succeeded for an environment that does not exist"
fi
grep -q "nosuch: no PostgreSQL schema" "$SYS_DIR/settle.out" || fail "env settle nosuch: $(cat "$SYS_DIR/settle.out")"
ok "an unknown environment is refused"
echo "42-sim: all checks passed"
