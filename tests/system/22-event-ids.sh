#!/usr/bin/env bash
# Event ids are unique per job, not across jobs (issue 18, finding 7): two jobs
# whose producers use the same event ids both get their rows and each its own
# plan (plan ids derive from request ids, so both are plan-q1), a master sees
# both, and a redelivery of every event changes no row and re-sends each job
# its own plan.
. "$(dirname "$0")/helpers.sh"

sys_start_all 1
T0=1767312000000
meta() { echo "\"meta\":{\"name\":\"$1\",\"user\":\"ana\",\"group\":\"ads\",\"app\":\"ctr\",\"cluster\":\"c1\",\"namespace\":\"ml\",\"scenario\":\"s1\",\"framework\":\"tf\"}"; }
events() {
    local j
    for j in ja jb; do
        echo "{\"type\":\"job_event\",\"event_id\":\"e1\",\"event_time_ms\":$T0,\"job_uid\":\"$j\",$(meta "$j-name"),\"state\":\"running\"}"
        echo "{\"type\":\"runtime_sample\",\"event_id\":\"r1\",\"event_time_ms\":$((T0 + 1000)),\"job_uid\":\"$j\",\"global_step\":50,\"speed\":5.0,\"pods\":[{\"name\":\"$j-worker-0\",\"type\":\"worker\",\"index\":0,\"cpu_used\":3.0,\"cpu_requested\":8,\"memory_used\":8000000000,\"memory_requested\":8589934592}]}"
        echo "{\"type\":\"node_event\",\"event_id\":\"n1\",\"event_time_ms\":$((T0 + 2000)),\"job_uid\":\"$j\",\"kind\":\"oom_killed\",\"pod_name\":\"$j-worker-0\",\"pod_type\":\"worker\",\"pod_index\":0,\"memory_requested\":8589934592}"
        echo "{\"type\":\"plan_request\",\"event_id\":\"q1\",\"event_time_ms\":$((T0 + 3000)),\"job_uid\":\"$j\",\"stage\":\"job_stage_running\",\"oom_pod\":\"$j-worker-0\"}"
    done
}
events | "$DLBRAIN" emit --strict -q || fail "emit"
"$DLBRAIN" plans -q --count 2 --timeout-ms 60000 --format json >"$SYS_DIR/plans1.json" ||
    fail "the master did not see two plans: $(cat "$SYS_DIR/plans1.json")"
expect_eq "one plan-q1 per job" "ja:plan-q1 jb:plan-q1" \
    "$(jq -r '"\(.job_uid):\(.plan_id)"' "$SYS_DIR/plans1.json" | sort | paste -sd' ')"
for t in job_events runtime_samples node_events plan_requests plans; do
    expect_eq "$t: a row per job" "ja,jb" "$(sys_sql "SELECT string_agg(job_uid, ',' ORDER BY job_uid) FROM $(sys_schema).$t")"
done
expect_eq "each job's own meta" "ja-name,jb-name" "$(sys_sql "SELECT string_agg(name, ',' ORDER BY uid) FROM $(sys_schema).jobs")"

# Every event again: the stored rows answer, nothing new is stored.
events | "$DLBRAIN" emit --strict -q || fail "emit again"
"$DLBRAIN" plans -q --all --count 4 --timeout-ms 60000 --format json >"$SYS_DIR/plans2.json" ||
    fail "the redelivered requests were not answered: $(cat "$SYS_DIR/plans2.json")"
expect_eq "each job re-sent its own plan" "ja:plan-q1 ja:plan-q1 jb:plan-q1 jb:plan-q1" \
    "$(jq -r '"\(.job_uid):\(.plan_id)"' "$SYS_DIR/plans2.json" | sort | paste -sd' ')"
expect_eq "plans re-sent byte for byte" 2 "$(jq -c . "$SYS_DIR/plans2.json" | sort -u | wc -l)"
for t in job_events runtime_samples node_events plan_requests plans; do
    expect_eq "$t after the redelivery" 2 "$(sys_count "$t")"
done
echo "22-event-ids: all checks passed"
