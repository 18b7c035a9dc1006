#!/usr/bin/env bash
# emit -> optimizer (set dlrover) -> plans topic + PostgreSQL + Redis, against the mock Kafka
# cluster and real PostgreSQL and Redis: exact plans, exact row counts, and a
# second delivery of the same events changes no row and no plan. The checks are
# in pipeline-checks.sh, shared with 20-real-broker.sh.
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/pipeline-checks.sh"

sys_pipeline_checks mock dlrover

# Requests with the dlb.after header, written by hand (kcat): n4's names the
# offset of its meta on job-events, and gets the plan of s1's history (as n1):
# the header's positions map onto the optimizer's input topics. n5's names a
# position far past the end of job-events (a crafted header): it holds
# nothing, and n5 gets its plan (a cold start: n5 has no meta). The rule
# itself (a position holds a request whatever the clocks say) is
# tests/unit/test_barrier.c.
env=$(sys_schema)
# plan_request v1 (schema 4) in Avro's binary encoding, oom_pod null
request_bin() {
    av_frame 4
    av_str "$1-q1"
    av_long 1767312000000
    av_str "$1"
    av_str job_stage_create
    av_long 0
}
request_bin n4 >"$SYS_DIR/n4-q1.bin"
request_bin n5 >"$SYS_DIR/n5-q1.bin"
"$DLBRAIN" plans -q --job n4 --job n5 --count 2 --timeout-ms 60000 --format json \
    >"$SYS_DIR/n45.json" &
plans_pid=$!
sleep 1 # the subscription starts at the end of <env>.plans
printf '{"type":"job_event","event_id":"n4-e1","event_time_ms":1767311999000,"job_uid":"n4","meta":{"name":"ctr-d","user":"ed","group":"ads","app":"ctr","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tensorflow"},"state":"created"}\n' |
    "$DLBRAIN" emit --strict -q || fail "emit of n4's meta"
meta_at=$(kcat -C -b "$DLBRAIN_BROKERS" -t "$env.job-events" -o -1 -e -q -f '%o\n' | tail -1)
kcat -P -b "$DLBRAIN_BROKERS" -t "$env.plan-requests" -k n4 -H "dlb.after=$env.job-events:0:$meta_at" \
    "$SYS_DIR/n4-q1.bin" || fail "kcat could not produce n4's request"
kcat -P -b "$DLBRAIN_BROKERS" -t "$env.plan-requests" -k n5 -H "dlb.after=$env.job-events:0:1000000" \
    "$SYS_DIR/n5-q1.bin" || fail "kcat could not produce n5's request"
wait "$plans_pid" || fail "no plans for n4 and n5"
expect_eq "plans of requests with dlb.after" \
    "n4-q1|job_stage_create|ps:2:6.75:12884901888 worker:1:12:17179869184|
n5-q1|job_stage_create|ps:4:12:17179869184 worker:1:12:17179869184|" \
    "$(sys_pipeline_summarise "$SYS_DIR/n45.json")"
echo "10-pipeline: all checks passed"
