#!/usr/bin/env bash
# Chaos, in the shape of Kafka's transactions system test: 100k events of 2000
# jobs on 12 partitions, 3 optimizer processes, one killed with SIGKILL at a
# random moment at least 20 times during the run and restarted; then the
# plans topic (read_committed) must hold each expected plan exactly once, in
# per-job order, and PostgreSQL exactly the expected rows. Real broker.
#
# It is also the hostile-producer soak of issue 18 ("No message can stop the
# pipeline"): with each part of the workload, a part of about 1% as many bad
# messages (chaos/soak.py: random bytes, JSON, a wrong magic byte, unknown
# schema ids, a valid event of a type the topic does not carry, truncated
# Avro, counts past their limits, absurd values, bad UTF-8, NUL bytes, a
# garbage dlb.after header, messages over message.max.bytes, one under it but
# over librdkafka's own limit, a 900 KB key), 8 more good jobs whose uids
# collide with a victim's Redis keys (`chaos-00000:rt`, `chaos-00000%3Art`
# ...), and 2 good "giant" jobs whose samples name the 16,384 pods a sample
# may carry (valid, ~950 KB each: memory and plan time must stay bounded;
# the second's create plan reads the first's history). Every bad message must be in <env>.dlq exactly once with its stage and
# reason, none in PostgreSQL or the plans topic; the colliders and their
# victims must each be exact. A sampler notes the group's committed offsets
# and the partitions' ends every 0.5 s; the report (soak-report.txt, kept in
# the build dir) gives the longest stall of any partition and the peak RSS of
# each optimizer slot. Goals: no stall over 10 s, peak RSS under 256 MiB.
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/chaos/lib.sh"
trap chaos_exit EXIT
MIN_KILLS=${DLB_CHAOS_KILLS:-20}
# Whole seconds added before each kill. The sanitizer pass sets it: there an
# optimizer takes longer to restart and rejoin than the 1.5 s between kills,
# so the group rebalanced without pause and the plans advanced only in the
# rare longer gaps (290 kills and 484 s for 300 jobs, plans stuck at 572 of
# 614 for 280 s, in CI on 2026-11-27).
KILL_GAP=${DLB_CHAOS_KILL_GAP:-0}
PARTS=10
PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
SOAK=(timeout 300 "$PY" "$SYS_TOP/tests/system/chaos/soak.py")
[ -x "$PY" ] || fail "no Python venv at ${PY%/bin/python}: run scripts/setup"

# Colliders: 4 per victim, at least one victim, 8 on the full workload.
colliders=$((CHAOS_JOBS / 1000 * 4))
[ "$colliders" -ge 4 ] || colliders=4
CHAOS_GEN_ARGS=(--colliders "$colliders" --giants 2)
chaos_setup
env=$(sys_schema)
"${SOAK[@]}" gen --env "$env" --count $((CHAOS_EVENTS / 100)) --out "$SYS_DIR/bad.jsonl"
CHAOS_DLQ_WANT=$(wc -l <"$SYS_DIR/bad.jsonl")
"${SOAK[@]}" setup --brokers "$DLBRAIN_BROKERS" --env "$env" ||
    fail "could not raise the input topics' max.message.bytes"
hostile_part() {
    "${SOAK[@]}" produce --brokers "$DLBRAIN_BROKERS" --in "$SYS_DIR/bad.jsonl" \
        --part "$1" --parts "$PARTS" --log "$SYS_DIR/produced.txt"
}
CHAOS_PART_HOOK=hostile_part
: >"$SYS_DIR/kills.txt"
: >"$SYS_DIR/rss.txt"
"$PY" "$SYS_TOP/tests/system/chaos/soak.py" sample --brokers "$DLBRAIN_BROKERS" \
    --group "$env.optimizer" --env "$env" --out "$SYS_DIR/samples.txt" 2>"$SYS_DIR/sampler.log" &
SYS_PIDS+=($!)
sampler=$!

for n in 1 2 3; do opt_start "$n"; done
start=$SECONDS
# Published over about 30 s, as a live cluster would, so the kills fall while
# work is still arriving.
chaos_emit_paced "$PARTS" 3
ok "publishing $CHAOS_EVENTS events of $CHAOS_JOBS jobs ($colliders colliders, 2 giants) and $CHAOS_DLQ_WANT bad messages in $PARTS parts, 3 s apart"
RANDOM=42
kills=0
deadline=$((SECONDS + ${DLB_CHAOS_TIMEOUT:-900}))
while ! chaos_stored; do
    [ "$SECONDS" -lt "$deadline" ] || fail "not done after ${DLB_CHAOS_TIMEOUT:-900}s ($(chaos_progress))"
    # at a random moment 0 .. 1.9 s from now (plus DLB_CHAOS_KILL_GAP s)
    sleep "$((RANDOM % 2 + KILL_GAP)).$((RANDOM % 10))"
    chaos_stored && break
    victim=$((RANDOM % 3 + 1))
    opt_kill "$victim"
    kills=$((kills + 1))
    sleep "0.$((RANDOM % 10))"
    opt_start "$victim"
    [ $((kills % 5)) = 0 ] && chaos_progress "kills=$kills"
done
chaos_emitted || fail "the emitter still runs"
elapsed=$((SECONDS - start))
[ "$kills" -ge "$MIN_KILLS" ] || fail "only $kills kills happened before the work was done (want >= $MIN_KILLS)"
ok "$kills kill -9 of a random optimizer during the run; processing took ${elapsed}s"
# The bad messages behind the last good ones: every input partition
# committed to its end (the sampler's last line) before the DLQ is read.
drained=$((SECONDS + 120))
until "$PY" "$SYS_TOP/tests/system/chaos/soak.py" drained --samples "$SYS_DIR/samples.txt"; do
    [ "$SECONDS" -lt "$drained" ] || fail "input partitions not committed to their end after 120 s: $(tail -n 1 "$SYS_DIR/samples.txt")"
    sleep 1
done
ok "every input partition committed to its end"
chaos_verify chaos "$kills"

# ---- the colliders: their own jobs, their victims untouched ----------------------
r=(redis-cli -h "$DLBRAIN_REDIS_HOST" -p "$DLBRAIN_REDIS_PORT")
# key UID: the Redis key of a job (uid percent-encoded, as dlb_redis_job_key)
key() { printf '%s:job:%s' "$env" "$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")"; }
per_job() {
    local t out=""
    for t in job_events runtime_samples node_events plan_requests plans; do
        out+="$t=$(sys_sql "SELECT count(*) FROM $env.$t WHERE job_uid = '$1'") "
    done
    echo "${out% }"
}
want_rows="job_events=2 runtime_samples=$CHAOS_SAMPLES node_events=1 plan_requests=2 plans=2"
declare -A checked=()
hits=0
while read -r _ cuid vuid; do
    for uid in "$cuid" "$vuid"; do
        [ -z "${checked[$uid]:-}" ] || continue
        checked[$uid]=1
        got=$(per_job "$uid")
        [ "$got" = "$want_rows" ] || fail "$uid: rows [$got], expected [$want_rows]"
        got=$(sys_sql "SELECT name FROM $env.jobs WHERE uid = '$uid'")
        [ "$got" = "$uid" ] || fail "$uid: jobs row named [$got]"
        k=$(key "$uid")
        # Each key of the job has its own type or is absent (a miss): a
        # collider written unescaped would put its hash on the victim's ZSET.
        got="$("${r[@]}" TYPE "$k") $("${r[@]}" TYPE "$k:rt") $("${r[@]}" TYPE "$k:pods") $("${r[@]}" TYPE "$k:seen")"
        [[ $got =~ ^(hash|none)\ (zset|none)\ (hash|none)\ (set|none)$ ]] ||
            fail "$uid: Redis key types [$got] of $k"
        [ "$("${r[@]}" HEXISTS "$k" v)" = 1 ] || continue
        hits=$((hits + 1))
        got="$("${r[@]}" ZCARD "$k:rt") $("${r[@]}" HGET "$k:pods" "$uid-worker-0" | jq .oom_count)"
        [ "$got" = "$CHAOS_SAMPLES 1" ] || fail "$uid: cached window and OOM count [$got]"
    done
done < <(grep '^collider ' "$SYS_DIR/expect.txt")
ok "$colliders colliders and their victims: each its own rows and Redis keys, exact ($hits of ${#checked[@]} cached)"
expect_eq "rows of bad messages in PostgreSQL" 0 "$(sys_sql "SELECT
    (SELECT count(*) FROM $env.jobs WHERE uid LIKE 'bad-%') +
    (SELECT count(*) FROM $env.job_events WHERE job_uid LIKE 'bad-%' OR event_id LIKE 'bad-%') +
    (SELECT count(*) FROM $env.runtime_samples WHERE job_uid LIKE 'bad-%' OR event_id LIKE 'bad-%') +
    (SELECT count(*) FROM $env.node_events WHERE job_uid LIKE 'bad-%' OR event_id LIKE 'bad-%') +
    (SELECT count(*) FROM $env.plan_requests WHERE job_uid LIKE 'bad-%' OR event_id LIKE 'bad-%') +
    (SELECT count(*) FROM $env.plans WHERE job_uid LIKE 'bad-%')")"
expect_eq "plans of bad messages on the plans topic" 0 \
    "$(jq -r 'select(.job_uid | startswith("bad-")) | .plan_id' "$SYS_DIR/plans.jsonl" | wc -l)"

# ---- the soak's report ----------------------------------------------------------
kill -TERM "$sampler"
wait "$sampler" || fail "the sampler failed: $(tail -n 3 "$SYS_DIR/sampler.log")"
unset 'SYS_PIDS[-1]'
report_ok=1
"${SOAK[@]}" report --brokers "$DLBRAIN_BROKERS" --env "$env" --in "$SYS_DIR/bad.jsonl" \
    --produced "$SYS_DIR/produced.txt" --samples "$SYS_DIR/samples.txt" \
    --kills "$SYS_DIR/kills.txt" --rss "$SYS_DIR/rss.txt" --verify "$SYS_DIR/verify.txt" \
    --out "$SYS_DIR/soak-report.txt" || report_ok=0
[ -n "${DLB_BUILD_DIR:-}" ] && cp "$SYS_DIR/soak-report.txt" "$DLB_BUILD_DIR/soak-report.txt"
[ "$report_ok" = 1 ] || fail "bad messages not each in the DLQ once with their reason (soak-report.txt)"
ok "every bad message in the DLQ exactly once, with its stage and reason"

# Stalls (the sampler also notes which optimizer owns each partition). A
# bad message must never hold a partition: a stall with no kill of the
# partition's owner inside it is processing (a batch, the ordering barrier's
# wait of at most consumer.order.wait.ms) and must stay under 10 s. A kill -9
# stops the owner's partitions until its restart (the same group.instance.id:
# no rebalance, no session timeout to wait out) has fenced its predecessor's
# transaction and committed a batch: after one kill that must take under
# 10 s too. The loop above may kill the same slot again before its restart
# commits anything, so the longest stall of all, kills included, is
# reported, and over 10 s only noted.
# Under the sanitizers (3 to 10 times slower, shadow memory) a restart's
# first commit and the peak RSS are not the optimizer's: they are reported,
# not checked, and a calm stall is held to 30 s.
sanitized=0
grep -aq __asan_init "$DLBRAIN" && sanitized=1
nums=$(sed -n 's/^soak: numbers: //p' "$SYS_DIR/soak-report.txt")
num() { sed "s/.*$1=\([0-9.]*\).*/\1/" <<<"$nums"; }
le10() { awk -v s="$1" 'BEGIN { exit !(s <= 10) }'; }
# (Under the sanitizers the calm stall is held to 30 s: a batch of the
# 16,384-pod jobs runs 3 to 10 times slower there, and 10.0 s was seen.)
calm_limit=10
[ "$sanitized" = 1 ] && calm_limit=30
awk -v s="$(num stall_calm_s)" -v l="$calm_limit" 'BEGIN { exit !(s <= l) }' ||
    fail "a partition stalled $(num stall_calm_s) s with no kill of its owner inside (limit: $calm_limit s)"
ok "longest stall with no kill of the partition's owner inside it: $(num stall_calm_s) s (limit: $calm_limit s; goal: 10 s)"
if [ "$sanitized" = 1 ]; then
    echo "  longest stall after one kill -9 of the owner $(num stall_one_kill_s) s under the sanitizers: the 10 s goal is not checked"
else
    le10 "$(num stall_one_kill_s)" ||
        fail "one kill -9 stalled a partition $(num stall_one_kill_s) s (goal: 10 s)"
    ok "longest stall after one kill -9 of the owner: $(num stall_one_kill_s) s (goal: 10 s)"
fi
if le10 "$(num stall_s)"; then
    ok "longest stall of any partition, kills included: $(num stall_s) s (goal: 10 s)"
else
    echo "NOTE - longest stall $(num stall_s) s, over the 10 s goal: $(num owner_kills_in_stall) kill -9s" \
        "of its owner fell inside it, each before the restarted owner committed a batch" \
        "($(sed -n 's/^soak: longest stall: //p' "$SYS_DIR/soak-report.txt"))"
fi

# Peak RSS: the goal is for the normal build; a sanitizer's shadow memory and
# quarantine are not the optimizer's.
peak=$(sort -k2,2n "$SYS_DIR/rss.txt" | tail -n 1 | awk '{print $2}')
if [ "$sanitized" = 1 ]; then
    echo "  peak RSS $((peak / 1024)) MiB under the sanitizers: the 256 MiB goal is not checked"
else
    [ "$peak" -lt $((256 * 1024)) ] || fail "peak RSS of an optimizer $((peak / 1024)) MiB, goal < 256 MiB"
    ok "peak RSS of every optimizer run under 256 MiB ($((peak / 1024)) MiB)"
fi
echo "30-chaos: all checks passed"
