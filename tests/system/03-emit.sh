#!/usr/bin/env bash
# dlbrain emit: a bad line is reported with its file, line number and field,
# the other lines still go out (each to its type's topic, keyed by job uid),
# and the exit status says whether a line was rejected.
. "$(dirname "$0")/helpers.sh"

sys_start_kafka 3
cat >"$SYS_DIR/in.jsonl" <<'JSON'
# a comment, then a blank line

{"type":"job_event","event_id":"e1","event_time_ms":1,"job_uid":"j1","state":"running"}
{"type":"runtime_sample","event_id":"r1","event_time_ms":2,"job_uid":"j1","pods":[{"name":"p","type":"worker","memory_used":"a"}]}
{"type":"plan_request","event_id":"q1","event_time_ms":3,"job_uid":"j1","stage":"job_stage_nope"}
{"type":"plan_request","event_id":"q2","event_time_ms":4,"job_uid":"j1","stage":"job_stage_create"}
{"type":"node_event","event_id":"k1","event_time_ms":5,"job_uid":"j2","kind":"oom_killed","pod_name":"j2-worker-0","pod_type":"worker"}
not json
JSON
rc=0
"$DLBRAIN" emit --strict "$SYS_DIR/in.jsonl" 2>"$SYS_DIR/emit.log" || rc=$?
expect_eq "exit status with rejected lines" 1 "$rc"
has() { grep -qF "$1" "$SYS_DIR/emit.log" && ok "reported: $1" || fail "missing in emit's log: $1"; }
has 'in.jsonl:4: pods[0].memory_used: expected an integer, got "a"; line skipped'
has 'in.jsonl:5: stage: unknown value "job_stage_nope"'
has 'in.jsonl:8: '
has '8 line(s), 3 event(s) sent, 3 rejected'

count() { kcat -C -b "$DLBRAIN_BROKERS" -t "dlbrain.$1" -e -q -f '%k\n' | sort | xargs; }
expect_eq "job-events keys" "j1" "$(count job-events)"
expect_eq "plan-requests keys" "j1" "$(count plan-requests)"
expect_eq "k8s-events keys" "j2" "$(count k8s-events)"
expect_eq "metrics (rejected line)" "" "$(count metrics)"
# Same key, same partition: one job's events stay in order on one partition.
expect_eq "partitions of j1" 1 "$( { kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.job-events -e -q -f '%p\n'; kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.plan-requests -e -q -f '%p\n'; } | sort -u | wc -l)"

# runtime_sample v2: pods[].speed is optional; a negative one is refused by name.
cat >"$SYS_DIR/speed.jsonl" <<'JSON'
{"type":"runtime_sample","event_id":"r2","event_time_ms":6,"job_uid":"j4","pods":[{"name":"j4-worker-0","type":"worker","speed":1.5},{"name":"j4-worker-1","type":"worker","speed":null},{"name":"j4-worker-2","type":"worker"}]}
{"type":"runtime_sample","event_id":"r3","event_time_ms":7,"job_uid":"j4","pods":[{"name":"j4-worker-0","type":"worker","speed":-1}]}
JSON
rc=0
"$DLBRAIN" emit --strict "$SYS_DIR/speed.jsonl" 2>"$SYS_DIR/emit3.log" || rc=$?
expect_eq "exit status with a negative pod speed" 1 "$rc"
grep -qF 'speed.jsonl:2: pods[0].speed: must be a finite non-negative number of steps/s (-1); line skipped' \
    "$SYS_DIR/emit3.log" && ok "reported: pods[0].speed" || fail "$(cat "$SYS_DIR/emit3.log")"
expect_eq "metrics keys (the sample with pod speeds)" "j4" "$(count metrics)"
# Framed with the newest runtime_sample schema (id 11); pods[0].speed is union
# branch 1 (0x02) and 1.5 as a little-endian double, followed by the v3 fields
# (four empty strings and false); the other pods' speeds are null (0x00).
hex=$(kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.metrics -e -q -f '%s' | od -An -tx1 -v | tr -d ' \n')
expect_eq "schema id of the sample" 000000000b "${hex:0:10}"
case $hex in
*02000000000000f83f0000000000*) ok "pods[0].speed 1.5 and its v3 fields are in the frame" ;;
*) fail "pods[0].speed 1.5 not in the frame: $hex" ;;
esac
expect_eq "pods[2]: memory 0 and 0, speed null (branch 0), v3 fields empty, end of the array" \
    000000000000000000 "${hex: -18}"

# emit FILE, whose line 2 is bad: exit status 1 and MSG in the log.
rejects_line2() {
    local rc=0
    "$DLBRAIN" emit --strict "$1" 2>"$1.log" || rc=$?
    expect_eq "exit status of $(basename "$1")" 1 "$rc"
    grep -qF "$2" "$1.log" && ok "reported: $2" || fail "$(cat "$1.log")"
}
# The schema id of a topic's first message, in hex.
first_id() { kcat -C -b "$DLBRAIN_BROKERS" -t "dlbrain.$1" -e -q -c 1 -f '%s' | od -An -tx1 -N5 -v | tr -d ' \n'; }

# job_event v2 (id 10): DLRover's other JobMetrics fields; a bad one is refused by name.
cat >"$SYS_DIR/job.jsonl" <<'JSON'
{"type":"job_event","event_id":"e2","event_time_ms":8,"job_uid":"j5","job_type":"ParameterServerStrategy","workflow":{"is_prod":true},"model":{"kv_embedding_dims":[8],"tensor_alloc_bytes":{"t":1}},"customized_data":"{\"rdzv_round\": 1}"}
{"type":"job_event","event_id":"e3","event_time_ms":9,"job_uid":"j5","model":{"tensor_alloc_bytes":{"t":-1}}}
JSON
rejects_line2 "$SYS_DIR/job.jsonl" 'job.jsonl:2: model.tensor_alloc_bytes.t: negative (-1); line skipped'
expect_eq "job-events keys (with the v2 job event)" "j1 j5" "$(count job-events)"
expect_eq "schema id of job events" 000000000a "$(first_id job-events)"

# plan_request v2 (id 12): every OOM pod, oom_pod the first of them; DLRover's config.
cat >"$SYS_DIR/req.jsonl" <<'JSON'
{"type":"plan_request","event_id":"q3","event_time_ms":10,"job_uid":"j1","stage":"job_stage_worker_initial","oom_pod":"j1-worker-1","oom_pods":["j1-worker-1","j1-worker-0"],"config":{"optimizer.worker.optimize-phase":"sample"}}
{"type":"plan_request","event_id":"q4","event_time_ms":11,"job_uid":"j1","stage":"job_stage_running","oom_pods":["j1-worker-1"]}
JSON
rejects_line2 "$SYS_DIR/req.jsonl" 'req.jsonl:2: oom_pod: must be the first of oom_pods ("j1-worker-1"); line skipped'
expect_eq "schema id of plan requests" 000000000c "$(first_id plan-requests)"

rc=0
echo '{"type":"plan_request","job_uid":"j3","stage":"job_stage_create"}' | "$DLBRAIN" emit -q || rc=$?
expect_eq "generated event_id and time without --strict" 0 "$rc"
rc=0
echo '{"type":"plan_request","job_uid":"j3","stage":"job_stage_create"}' | "$DLBRAIN" emit --strict -q 2>"$SYS_DIR/emit2.log" || rc=$?
expect_eq "--strict needs event_id" 1 "$rc"
grep -q 'stdin:1: event_id' "$SYS_DIR/emit2.log" && ok "strict error names event_id" || fail "$(cat "$SYS_DIR/emit2.log")"
rc=0
"$DLBRAIN" emit --strict -q "$SYS_DIR/does-not-exist" 2>/dev/null || rc=$?
expect_eq "missing input file" 1 "$rc"
echo "03-emit: all checks passed"
