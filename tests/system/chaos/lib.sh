# Shared by the chaos, outage and scaling tests (30-*.sh): source after
# helpers.sh. A real Kafka broker, PostgreSQL, Redis, the generated workload,
# optimizer processes that can be killed and restarted, and the verifier.
CHAOS_JOBS=${DLB_CHAOS_JOBS:-2000}
CHAOS_SAMPLES=${DLB_CHAOS_SAMPLES:-45}
CHAOS_DIR=$SYS_TOP/tests/system/chaos
# More gen.py options (30-chaos: --colliders), the messages the DLQ must end
# with (30-chaos: its hostile ones), and a command run after each part of the
# workload is published, given the part's number (30-chaos: the hostile part).
CHAOS_GEN_ARGS=()
CHAOS_DLQ_WANT=0
CHAOS_PART_HOOK=
declare -A OPT_PID=()
declare -A OPT_RUNS=()

# chaos_setup: servers, 12 partitions per topic, and the workload files.
chaos_setup() {
    sys_start_pg
    sys_start_redis
    sys_start_real_kafka 12
    python3 "$CHAOS_DIR/gen.py" --jobs "$CHAOS_JOBS" --samples "$CHAOS_SAMPLES" "${CHAOS_GEN_ARGS[@]}" \
        --out "$SYS_DIR/events.jsonl" --expect "$SYS_DIR/expect.txt"
    CHAOS_EVENTS=$(sed -n 's/^events //p' "$SYS_DIR/expect.txt")
    CHAOS_PLANS=$(grep -c '^plan ' "$SYS_DIR/expect.txt")
    CHAOS_SAMPLES_ROWS=$(sed -n 's/^rows runtime_samples //p' "$SYS_DIR/expect.txt")
}

# opt_start NAME: one optimizer as a static group member (group.instance.id)
# with a stable transactional.id, as a StatefulSet pod would run: a restarted
# instance takes its partitions back without a rebalance and fences the open
# transaction of the one it replaces.
# OPT_STATIC=0 starts dynamic members instead (the scaling test wants rebalances).
# Optimizer 2 decodes the next batch during this one's writes
# (consumer.decode.ahead=1), the others do not: both paths meet the same kills,
# rebalances and outages, in one group.
opt_start() {
    local name=$1 n=$((${OPT_RUNS[$1]:-0} + 1)) static=() ahead=0
    OPT_RUNS[$name]=$n
    shift
    [ "${OPT_STATIC:-1}" = 1 ] && static=(-X group.instance.id="chaos-$name")
    [ "$name" = 2 ] && ahead=1
    "$DLBRAIN" optimizer "${static[@]}" -X transactional.id="chaos-$name" \
        -X consumer.decode.ahead="$ahead" \
        -X session.timeout.ms=6000 -X heartbeat.interval.ms=1000 -X history.max.jobs=5 \
        -X consumer.retry.backoff.ms=500 "$@" \
        >/dev/null 2>"$SYS_DIR/opt-$name.$n.log" &
    OPT_PID[$name]=$!
}
# opt_hwm NAME: note the peak RSS so far (VmHWM, kB) of optimizer NAME in
# $SYS_DIR/rss.txt ("NAME kB run"), read just before it is killed or stopped.
opt_hwm() {
    local kb
    kb=$(awk '/^VmHWM:/ {print $2}' "/proc/${OPT_PID[$1]}/status" 2>/dev/null) || true
    [ -n "$kb" ] && echo "$1 $kb ${OPT_RUNS[$1]}" >>"$SYS_DIR/rss.txt"
    return 0
}
# opt_kill NAME: kill -9, as a crash or an OOM kill would; its time goes to
# $SYS_DIR/kills.txt ("kill MS NAME").
opt_kill() {
    opt_hwm "$1"
    echo "kill $(date +%s%3N) $1" >>"$SYS_DIR/kills.txt"
    kill -KILL "${OPT_PID[$1]}" 2>/dev/null || true
    wait "${OPT_PID[$1]}" 2>/dev/null || true
    unset "OPT_PID[$1]"
}
# opt_stop_all: SIGTERM every optimizer; each must exit 0.
opt_stop_all() {
    local name rc bad=0
    for name in "${!OPT_PID[@]}"; do opt_hwm "$name"; done
    for name in "${!OPT_PID[@]}"; do kill -TERM "${OPT_PID[$name]}" 2>/dev/null || true; done
    for name in "${!OPT_PID[@]}"; do
        rc=0
        wait "${OPT_PID[$name]}" || rc=$?
        [ "$rc" = 0 ] || { echo "FAIL - optimizer $name exited with $rc"; bad=1; }
        unset "OPT_PID[$name]"
    done
    return $bad
}
# Kill -9 whatever is left on exit (before helpers' cleanup runs).
chaos_cleanup() {
    local name
    for name in "${!OPT_PID[@]}"; do kill -KILL "${OPT_PID[$name]}" 2>/dev/null || true; done
}
# chaos_exit: the EXIT trap of the tests that source this file (trap chaos_exit
# EXIT): chaos_cleanup, then sys_cleanup with the script's status. set +e:
# under errexit the '(exit $rc)' that hands the status on ended the trap after
# a failure, so sys_cleanup never ran: no logs shown, every server left
# running, and ctest waiting for their output until its timeout.
chaos_exit() {
    local rc=$?
    chaos_cleanup
    set +e
    (exit "$rc")
    sys_cleanup
}

# chaos_emit_paced CHUNKS GAP_S: publish the workload in CHUNKS parts GAP_S
# apart in the background, as a live cluster reports over time; CHAOS_EMITTER
# is its pid. chaos_emitted is true once it is done (and fails the test if
# emit failed).
chaos_emit_paced() {
    local chunks=$1 gap=$2
    split -n "l/$chunks" -d "$SYS_DIR/events.jsonl" "$SYS_DIR/chunk."
    (
        i=0
        for f in "$SYS_DIR"/chunk.*; do
            "$DLBRAIN" emit --strict -q "$f" || exit 1
            if [ -n "$CHAOS_PART_HOOK" ]; then $CHAOS_PART_HOOK "$i" || exit 1; fi
            i=$((i + 1))
            sleep "$gap"
        done
    ) &
    CHAOS_EMITTER=$!
}
chaos_emitted() {
    kill -0 "$CHAOS_EMITTER" 2>/dev/null && return 1
    wait "$CHAOS_EMITTER" || fail "emit of the workload (or a part hook) failed"
    CHAOS_EMITTER=$$ # waited for: later calls see a live pid-less "done"
    return 0
}

# chaos_stored: true once PostgreSQL holds every plan and every sample.
chaos_stored() {
    [ "${CHAOS_EMITTER:-$$}" = $$ ] || ! kill -0 "$CHAOS_EMITTER" 2>/dev/null || return 1
    [ "$(sys_count plans 2>/dev/null || echo 0)" -ge "$CHAOS_PLANS" ] &&
        [ "$(sys_count runtime_samples 2>/dev/null || echo 0)" -ge "$CHAOS_SAMPLES_ROWS" ]
}
# chaos_wait_stored SECONDS AFTER: until every plan and sample is stored, or
# fail naming what was missing SECONDS s AFTER (e.g. "the outages").
chaos_wait_stored() {
    local deadline=$((SECONDS + $1))
    until chaos_stored; do
        [ "$SECONDS" -lt "$deadline" ] || fail "not done $1 s after $2 ($(chaos_progress))"
        sleep 1
    done
}
chaos_progress() {
    echo "  t=${SECONDS}s plans=$(sys_count plans 2>/dev/null || echo 0)/$CHAOS_PLANS samples=$(sys_count runtime_samples 2>/dev/null || echo 0)/$CHAOS_SAMPLES_ROWS $*"
}

# chaos_read_plans FILE: the whole plans topic, read_committed, every copy.
chaos_read_plans() {
    "$DLBRAIN" plans -q --all --timeout-ms 8000 --format json >"$1" 2>"$SYS_DIR/reader.log" || true
}

# chaos_verify LABEL KILLS: wait (up to 90 s) until the topic shows every plan
# id (a plan is stored in PostgreSQL before its Kafka transaction commits, so
# the topic may lag), stop the optimizers cleanly, then verify topic, tables
# and Redis.
chaos_verify() {
    local label=$1 kills=$2 deadline=$((SECONDS + 90)) distinct=0
    while :; do
        chaos_read_plans "$SYS_DIR/plans.jsonl"
        distinct=$(jq -r .plan_id "$SYS_DIR/plans.jsonl" | sort -u | wc -l)
        [ "$distinct" -ge "$CHAOS_PLANS" ] && break
        [ "$SECONDS" -lt "$deadline" ] || break
        chaos_progress "topic distinct plans=$distinct"
        sleep 2
    done
    opt_stop_all || fail "an optimizer did not stop cleanly"
    chaos_read_plans "$SYS_DIR/plans.jsonl"
    for t in jobs job_events runtime_samples runtime_pods node_events plan_requests plans; do
        echo "$t $(sys_count $t)"
    done >"$SYS_DIR/rows.txt"
    # The summary also goes to verify.txt, for 30-chaos's report.
    python3 "$CHAOS_DIR/verify.py" --expect "$SYS_DIR/expect.txt" --plans "$SYS_DIR/plans.jsonl" \
        --rows "$SYS_DIR/rows.txt" --kills "$kills" --label "$label" | tee "$SYS_DIR/verify.txt" ||
        fail "$label: the outputs are not exactly once"
    ok "$label: every plan exactly once on the topic, in per-job order; PostgreSQL rows exact"
    local dlq
    dlq=$(kcat -C -b "$DLBRAIN_BROKERS" -t "$(sys_schema).dlq" -e -q -X isolation.level=read_committed -f '.\n' | wc -l)
    expect_eq "$label: messages in the DLQ" "$CHAOS_DLQ_WANT" "$dlq"
    # A job state Redis serves as a hit (its hash has the completeness marker
    # "v") must be exact: a redelivered OOM counted once, a redelivered sample
    # not growing the window, nothing missed while Redis was away. A job with
    # no marker is a miss, rebuilt from PostgreSQL when needed.
    local j uid bad=0 hits=0 sampled=0 r
    r=(redis-cli -h "$DLBRAIN_REDIS_HOST" -p "$DLBRAIN_REDIS_PORT")
    for j in $(seq 0 $((CHAOS_JOBS / 40)) $((CHAOS_JOBS - 1))); do
        sampled=$((sampled + 1))
        uid=$(printf 'chaos-%05d' "$j")
        [ "$("${r[@]}" HEXISTS "dlbrain:job:$uid" v)" = 1 ] || continue
        hits=$((hits + 1))
        [ "$("${r[@]}" HGET "dlbrain:job:$uid:pods" "$uid-worker-0" | jq .oom_count)" = 1 ] || bad=$((bad + 1))
        [ "$("${r[@]}" ZCARD "dlbrain:job:$uid:rt")" = "$CHAOS_SAMPLES" ] || bad=$((bad + 1))
    done
    echo "  $label: $hits of $sampled sampled jobs are cache hits"
    expect_eq "$label: cached job states that are not exact" 0 "$bad"
}
