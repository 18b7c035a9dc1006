#!/usr/bin/env bash
# The dlbrain set's view of the cluster through the real pipeline (mock Kafka
# with 2 partitions, real PostgreSQL and Redis): job events keep the Redis hash
# <env>:cluster (waiting jobs, and each running job's cores as of its newest
# worker plan); a worker plan reads it. Job a's window fits 1/speed = 4/w +
# 0.5/p + 0.1, p its PS pods (tests/unit/test_opt_model.c's EXACT): alone it grows 4 -> 11
# workers, but while job b waits for room a worker must add 0.7 of the speed
# per worker (dlbrain.scale.min.gain.busy) and worker 5 adds 0.696: a stays
# at 4. Once b has ended, a grows.
. "$(dirname "$0")/helpers.sh"

sys_start_all 2 -X optimizer.set=dlbrain
rc() { redis-cli -h "$DLBRAIN_REDIS_HOST" -p "$DLBRAIN_REDIS_PORT" "$@"; }
S=$(sys_schema)
t0=1767225600000
meta='"meta":{"name":"ctr","user":"ana","group":"ads","app":"ctr","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tensorflow"}'

# sample N W PS INV_SPEED: runtime sample N of job a, W workers of 2
# requested cores and PS PS pods of 16 cores each.
sample() {
    local n=$1 w=$2 p=$3 inv=$4 k pods=""
    for ((k = 0; k < w; k++)); do
        pods+="{\"name\":\"a-worker-$k\",\"type\":\"worker\",\"index\":$k,\"cpu_used\":2,\"cpu_requested\":2,\"memory_used\":4294967296,\"memory_requested\":8589934592},"
    done
    for ((k = 0; k < p; k++)); do
        pods+="{\"name\":\"a-ps-$k\",\"type\":\"ps\",\"index\":$k,\"cpu_used\":16,\"cpu_requested\":16,\"memory_used\":2147483648,\"memory_requested\":4294967296},"
    done
    local speed
    speed=$(awk -v i="$inv" 'BEGIN { printf "%.9f", 1 / i }')
    echo "{\"type\":\"runtime_sample\",\"event_id\":\"a-r$n\",\"event_time_ms\":$((t0 + n * 15000)),\"job_uid\":\"a\",\"global_step\":$((n * 100)),\"speed\":$speed,\"pods\":[${pods%,}]}"
}
emit() { "$DLBRAIN" emit --strict -q || fail "emit"; }
{
    echo "{\"type\":\"job_event\",\"event_id\":\"a-e\",\"event_time_ms\":$t0,\"job_uid\":\"a\",$meta,\"state\":\"running\"}"
    echo "{\"type\":\"job_event\",\"event_id\":\"b-e1\",\"event_time_ms\":$t0,\"job_uid\":\"b\",$meta,\"state\":\"created\"}"
    echo "{\"type\":\"job_event\",\"event_id\":\"b-e2\",\"event_time_ms\":$((t0 + 1000)),\"job_uid\":\"b\",\"state\":\"pending\"}"
    sample 1 1 1 4.6
    sample 2 2 1 2.6
    sample 3 4 1 1.6
    sample 4 8 2 0.85
    sample 5 4 2 1.35
    echo "{\"type\":\"plan_request\",\"event_id\":\"q1\",\"event_time_ms\":$((t0 + 90000)),\"job_uid\":\"a\",\"stage\":\"job_stage_worker_running\"}"
} | emit
sys_wait_count plans 1 60
reason=$(sys_sql "SELECT reason FROM $S.plans WHERE plan_id = 'plan-q1'")
case $reason in
*"1 other jobs wait for room: a worker must add 0.70 of the speed per worker, not 0.50."*)
    ok "b waits: a's plan says so" ;;
*) fail "plan-q1's reason: $reason" ;;
esac
case $reason in
*"workers 4 -> 4"*) ok "a kept at 4 workers" ;;
*) fail "a should keep 4 workers: $reason" ;;
esac
expect_eq "b's entry: waiting, no cores" "1 0 $((t0 + 1000))" "$(rc HGET "$S:cluster" b)"
expect_eq "a's entry: 4 x 2 + 2 x 16 cores at its plan" "0 40 $((t0 + 90000))" "$(rc HGET "$S:cluster" a)"

# b starts, then ends: its entry goes; a's next plan grows it as if alone.
{
    echo "{\"type\":\"job_event\",\"event_id\":\"b-e3\",\"event_time_ms\":$((t0 + 91000)),\"job_uid\":\"b\",\"state\":\"running\"}"
    echo "{\"type\":\"job_event\",\"event_id\":\"b-e4\",\"event_time_ms\":$((t0 + 92000)),\"job_uid\":\"b\",\"state\":\"succeeded\"}"
    echo "{\"type\":\"plan_request\",\"event_id\":\"q2\",\"event_time_ms\":$((t0 + 95000)),\"job_uid\":\"a\",\"stage\":\"job_stage_worker_running\"}"
} | emit
sys_wait_count plans 2 60
expect_eq "b's entry gone with its end" 0 "$(rc HEXISTS "$S:cluster" b)"
reason=$(sys_sql "SELECT reason FROM $S.plans WHERE plan_id = 'plan-q2'")
case $reason in
*"wait for room"*) fail "nobody waits any more: $reason" ;;
*"workers 4 -> 11"*) ok "b gone: a grows to 11" ;;
*) fail "a should grow to 11: $reason" ;;
esac

# A stray field in the hash is skipped, not a failure.
rc HSET "$S:cluster" junk "not an entry" >/dev/null
echo "{\"type\":\"plan_request\",\"event_id\":\"q3\",\"event_time_ms\":$((t0 + 96000)),\"job_uid\":\"a\",\"stage\":\"job_stage_worker_running\"}" | emit
sys_wait_count plans 3 60
case $(sys_sql "SELECT reason FROM $S.plans WHERE plan_id = 'plan-q3'") in
*"workers 4 -> 11"*) ok "a stray field in the hash is skipped" ;;
*) fail "plan-q3 after a stray field: $(sys_sql "SELECT reason FROM $S.plans WHERE plan_id = 'plan-q3'")" ;;
esac
ok "cluster view"
