#!/usr/bin/env bash
# One case per kind of bad input on the input topics: each lands in <env>.dlq
# exactly once with headers naming where it came from, the stage that refused
# it, the error class and a message naming the field, and the plan request sent
# right after it is still answered. 11-dlq covers the first garbage variants
# (magic byte 1, schema id 99, a cut string, 2 bytes); these are the other
# shapes bad input takes in practice.
#
# The bad bytes are written by hand with the av_* helpers of helpers.sh (Avro's
# binary encoding), since `dlbrain emit` validates what it sends. A good
# runtime sample written with the same helpers goes first and must be stored:
# it shows the helpers write what the optimizer reads, so every rejection
# below is about the one bad value, not the encoding.
. "$(dirname "$0")/helpers.sh"

# 4096 makes a 10 KiB frame oversized (the default is 1 MiB).
max_bytes=4096
sys_start_all 1 -X message.max.bytes=$max_bytes
env=$(sys_schema)
T0=1767312000000
"$DLBRAIN" plans -q --format json --count 14 --timeout-ms 180000 >"$SYS_DIR/plans.json" \
    2>"$SYS_DIR/plans.log" &
SYS_PIDS+=($!)

# ---- encoders ---------------------------------------------------------------
# IEEE-754 bits of the doubles used below.
D1=3ff0000000000000   # 1.0
D2=4000000000000000   # 2.0
D4=4010000000000000   # 4.0
DNAN=7ff8000000000000 # quiet NaN
DM2=c000000000000000  # -2.0

# Runtime sample (schema 2, or SCHEMA) up to its pods: event_id, event_time_ms,
# job_uid, global_step, speed (SPEED_BITS).
# rt_head EVENT_ID JOB SPEED_BITS [SCHEMA]
rt_head() {
    av_frame "${4:-2}"
    av_str "$1"
    av_long "$T0"
    av_str "$2"
    av_long 100
    av_double "$3"
}
# The start of a PodUsage: name, type, index, cpu_used 2.0, cpu_requested 4.0.
pod_head() {
    av_str "$1"
    av_str worker
    av_long "$2"
    av_double $D2
    av_double $D4
}
# rt_sample EVENT_ID JOB SPEED_BITS MEMORY_USED [PODS]: a whole runtime sample
# of PODS workers (default 1), each using MEMORY_USED of 8 GiB requested.
rt_sample() {
    local i n=${5:-1}
    rt_head "$1" "$2" "$3"
    av_long "$n" # one array block of n items
    for ((i = 0; i < n; i++)); do
        pod_head "$2-worker-$i" "$i"
        av_long "$4"
        av_long 8589934592
    done
    av_long 0 # end of the array
}
# rt_sample_v2 EVENT_ID JOB POD_SPEED_BITS: a runtime sample of schema 7
# (runtime_sample v2) with one worker reporting its own speed.
rt_sample_v2() {
    rt_head "$1" "$2" $D1 7
    av_long 1
    pod_head "$2-worker-0" 0
    av_long 6442450944
    av_long 8589934592
    av_long 1 # pods[0].speed: union branch 1, a double
    av_double "$3"
    av_long 0
}
# plan_request EVENT_ID JOB STAGE (schema 4), oom_pod null (union branch 0).
plan_request() {
    av_frame 4
    av_str "$1"
    av_long "$T0"
    av_str "$2"
    av_str "$3"
    av_long 0
}

# ---- the cases ----------------------------------------------------------------
declare -A next_offset want_topic want_offset want_stage want_class want_msg
cases=()

# good_request NAME: a valid plan request of job good-NAME; waits for its plan.
good_request() {
    local deadline=$((SECONDS + 60))
    printf '{"type":"plan_request","event_id":"good-%s","event_time_ms":%s,"job_uid":"good-%s","stage":"job_stage_create"}\n' \
        "$1" "$((T0 + ${#cases[@]}))" "$1" | "$DLBRAIN" emit --strict -q ||
        fail "emit of the good request after $1"
    next_offset[plan-requests]=$((${next_offset[plan-requests]:-0} + 1))
    until grep -q "\"plan_id\":\"plan-good-$1\"" "$SYS_DIR/plans.json"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "no plan for the good request after $1"
        sleep 0.1
    done
    ok "$1: the next good request got its plan"
}

# bad_case NAME TOPIC STAGE CLASS MESSAGE [HEADER]: produce $SYS_DIR/NAME.bin
# to <env>.TOPIC with key NAME (and kcat header HEADER, name=value), then a
# good request. MESSAGE is the exact dlb.error.message, or its beginning when
# it ends in '*'.
bad_case() {
    local name=$1 topic=$2 hdr=()
    [ -n "${6:-}" ] && hdr=(-H "$6")
    cases+=("$name")
    want_topic[$name]=$env.$topic
    want_offset[$name]=${next_offset[$topic]:-0}
    want_stage[$name]=$3
    want_class[$name]=$4
    want_msg[$name]=$5
    next_offset[$topic]=$((${next_offset[$topic]:-0} + 1))
    kcat -P -b "$DLBRAIN_BROKERS" -t "$env.$topic" -k "$name" "${hdr[@]}" "$SYS_DIR/$name.bin" ||
        fail "kcat could not produce $name"
    good_request "$name"
}
size() { stat -c %s "$SYS_DIR/$1.bin"; }

# Control: the helpers' bytes decode and validate.
rt_sample ctl-r1 ctl $D1 6442450944 >"$SYS_DIR/control.bin"
kcat -P -b "$DLBRAIN_BROKERS" -t "$env.metrics" -k ctl "$SYS_DIR/control.bin" ||
    fail "kcat could not produce the control sample"
rt_sample_v2 ctl-r2 ctl $D2 >"$SYS_DIR/control-v2.bin"
kcat -P -b "$DLBRAIN_BROKERS" -t "$env.metrics" -k ctl "$SYS_DIR/control-v2.bin" ||
    fail "kcat could not produce the v2 control sample"
next_offset[metrics]=2
sys_wait_count runtime_pods 2 60
ok "runtime samples of schemas 2 and 7 written by the av_* helpers are accepted"
expect_eq "the v2 control's pod speed" 2 \
    "$(sys_sql "SELECT speed FROM $env.runtime_pods WHERE event_id = 'ctl-r2'")"

# (a) Oversized: a real-looking sample of 175 workers, over message.max.bytes.
# The DLQ copy keeps the headers but not the body (it would not fit either).
rt_sample big-r1 train-ctr-7f3a9 $D1 6442450944 175 >"$SYS_DIR/oversized.bin"
[ "$(size oversized)" -ge 10240 ] || fail "the oversized frame is only $(size oversized) bytes"
bad_case oversized metrics decode invalid \
    "message of $(size oversized) bytes exceeds message.max.bytes $max_bytes"

# (b) Unknown schema id: a job event from a producer with a newer schema (the
# next id after the newest this binary knows).
new_id=$(($("$DLBRAIN" schemas | awk 'NR > 1 {print $1}' | sort -n | tail -1) + 1))
{
    av_frame "$new_id"
    av_str schema-e1
    av_long "$T0"
    av_str schema-job
    printf '\0\0\0\0\0\0' # meta, state, hyper_params, dataset, model, exit_reason: null
} >"$SYS_DIR/schema-id.bin"
bad_case schema-id job-events decode schema_id "schema id $new_id is not in the catalog (known: *"

# (c) Truncated Avro: the message ends after pods[0].cpu_requested.
{
    rt_head trunc-r1 trunc $D1
    av_long 1
    pod_head trunc-worker-0 0
} >"$SYS_DIR/truncated.bin"
bad_case truncated metrics decode decode \
    "pods[0].memory_used: truncated Avro data: 1 more bytes needed at offset $(size truncated), 0 left"

# (d) Wrong magic byte: a JSON line produced as is, the usual mistake.
printf '{"type":"plan_request","event_id":"json-q1","event_time_ms":%s,"job_uid":"json","stage":"job_stage_create"}' \
    "$T0" >"$SYS_DIR/magic.bin"
bad_case magic plan-requests decode framing \
    "magic byte is 0x7b, not 0: not Confluent-framed Avro (it looks like JSON)"

# (e) Negative memory: an agent's sign bug in pods[0].memory_used.
rt_sample neg-r1 neg $D1 -8589934592 >"$SYS_DIR/negative-memory.bin"
bad_case negative-memory metrics validate invalid "pods[0].memory_used: negative (-8589934592)"

# (f) NaN speed (a division by a zero interval, say).
rt_sample nan-r1 nan $DNAN 6442450944 >"$SYS_DIR/nan-speed.bin"
bad_case nan-speed metrics validate invalid \
    "speed: must be a finite non-negative number of steps/s (nan)"

# (f2) Negative per-pod speed (runtime_sample v2): a worker's own steps/s.
rt_sample_v2 negspeed-r1 negspeed $DM2 >"$SYS_DIR/negative-pod-speed.bin"
bad_case negative-pod-speed metrics validate invalid \
    "pods[0].speed: must be a finite non-negative number of steps/s (-2)"

# (g) Unknown stage: a newer master's stage.
plan_request stage-q1 stage job_stage_autoscale >"$SYS_DIR/unknown-stage.bin"
bad_case unknown-stage plan-requests validate invalid \
    'stage: unknown value "job_stage_autoscale" (expected one of job_stage_create, job_stage_ps_initial, job_stage_worker_initial, job_stage_running, job_stage_ps_running, job_stage_worker_running)'

# (h) An output on an input topic: a valid plan (schema 5) sent to plan-requests.
{
    av_frame 5
    av_str plan-x1
    av_long "$T0"
    av_str plan-x1 # plan_id
    av_str plan-job
    av_str job_stage_create
    av_long 0 # groups: []
    av_long 0 # pods: []
    av_str dlrover.ps_create
    av_str "cold start"
    av_str x1 # trigger_event_id
} >"$SYS_DIR/plan-as-input.bin"
bad_case plan-as-input plan-requests decode invalid "schema id 5 is a plan, which $env.plan-requests does not carry"

# (i) A good plan request under a dlb.after header that is not one: the
# request is refused whole (its ordering cannot be honoured), naming the item.
plan_request after-garbage after-garbage job_stage_create >"$SYS_DIR/after-garbage.bin"
bad_case after-garbage plan-requests decode invalid \
    "header dlb.after: item 1: expected <topic>:<partition>:<offset>" "dlb.after=garbage"
plan_request after-offset after-offset job_stage_create >"$SYS_DIR/after-offset.bin"
bad_case after-offset plan-requests decode invalid \
    "header dlb.after: item 2: the offset is not a number from 0 to 9223372036854775807" \
    "dlb.after=$env.metrics:0:1,$env.job-events:0:99999999999999999999"

# (j) A job uid that is not UTF-8 (c3 28: a lead byte, then '('). PostgreSQL
# would refuse it only after the record was taken (SQLSTATE 22021), and the
# batch would be retried for ever: the decoder refuses it, naming the byte.
{
    av_frame 4
    av_str utf8-uid
    av_long "$T0"
    av_long 6
    printf 'bad-\xc3\x28'
    av_str job_stage_create
    av_long 0
} >"$SYS_DIR/utf8-uid.bin"
bad_case utf8-uid plan-requests decode decode "job_uid: not UTF-8: byte 5 of 6 is 0xc3"

# (k) A count no struct takes: a runtime sample declaring 20,000 pods in a few
# bytes. avro-c would allocate a value per item before the struct side's
# limit saw them; the scan refuses the count first.
{
    rt_head pods-count pods-count $D1
    av_long 20000
} >"$SYS_DIR/pods-count.bin"
bad_case pods-count metrics decode decode "pods: 20000 items, more than the limit of 16384"

# (l) An event time days ahead of the broker's timestamp (an agent's clock
# set a year ahead, or a producer pushing the barrier open): beyond
# event.time.skew.s (1 day) of the record's timestamp it is refused.
future=$(($(date +%s) * 1000 + 3 * 86400000))
T0=$future rt_sample future-r1 future $D1 6442450944 >"$SYS_DIR/future-time.bin"
bad_case future-time metrics validate invalid "event_time_ms $future is *"

# ---- the dead-letter topic ------------------------------------------------------
sys_dlq_read "${#cases[@]}" 30
# hdr KEY NAME: the values of header NAME of the DLQ messages with key KEY.
hdr() {
    jq -r --arg k "$1" --arg h "$2" \
        'select(.key == $k) | .headers as $a | range(0; $a | length; 2) | select($a[.] == $h) | $a[. + 1]' \
        "$SYS_DIR/dlq.json"
}
expect_eq "distinct keys in the DLQ" "${#cases[@]}" "$(jq -r .key "$SYS_DIR/dlq.json" | sort -u | wc -l)"
for c in "${cases[@]}"; do
    expect_eq "$c: dlb.source.topic" "${want_topic[$c]}" "$(hdr "$c" dlb.source.topic)"
    expect_eq "$c: dlb.source.partition" 0 "$(hdr "$c" dlb.source.partition)"
    expect_eq "$c: dlb.source.offset" "${want_offset[$c]}" "$(hdr "$c" dlb.source.offset)"
    expect_eq "$c: dlb.stage" "${want_stage[$c]}" "$(hdr "$c" dlb.stage)"
    expect_eq "$c: dlb.error.class" "${want_class[$c]}" "$(hdr "$c" dlb.error.class)"
    msg=$(hdr "$c" dlb.error.message)
    want=${want_msg[$c]}
    if [[ $want == *'*' ]]; then [[ $msg == "${want%'*'}"* ]]; else [[ $msg == "$want" ]]; fi ||
        fail "$c: dlb.error.message: expected [$want], got [$msg]"
    ok "$c: dlb.error.message = $msg"
    if [ "$c" = oversized ]; then
        expect_eq "$c: dlb.value.omitted.bytes" "$(size "$c")" "$(hdr "$c" dlb.value.omitted.bytes)"
        expect_eq "$c: DLQ value size (omitted)" "$c|-1" "$(grep "^$c|" "$SYS_DIR/dlq.sizes")"
    else
        expect_eq "$c: no dlb.value.omitted.bytes" "" "$(hdr "$c" dlb.value.omitted.bytes)"
        expect_eq "$c: DLQ value size (the message as sent)" "$c|$(size "$c")" \
            "$(grep "^$c|" "$SYS_DIR/dlq.sizes")"
    fi
done

# ---- nothing bad was stored, everything good was --------------------------------
wait "${SYS_PIDS[-1]}" || fail "dlbrain plans did not get its ${#cases[@]} plans"
unset 'SYS_PIDS[-1]'
expect_eq "plans received" "$(printf 'plan-good-%s\n' "${cases[@]}" | sort | xargs)" \
    "$(jq -r .plan_id "$SYS_DIR/plans.json" | sort | xargs)"
expect_eq "rows stored" "job_events=0 runtime_samples=2 plan_requests=${#cases[@]}" \
    "job_events=$(sys_count job_events) runtime_samples=$(sys_count runtime_samples) plan_requests=$(sys_count plan_requests)"
kill -0 "${SYS_PIDS[1]}" || fail "the optimizer died"
ok "optimizer still running"
echo "13-bad-input: all checks passed"
