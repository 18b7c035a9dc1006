#!/usr/bin/env bash
# A commit whose answer is lost (issue 18, finding 6), on a real broker: the
# optimizer reaches the broker only through tests/system/kafka_proxy.py, which
# forwards one EndTxn of a batch with plans (the broker commits it) and then
# holds every producer connection. The optimizer retries the commit
# (producer.txn.call.tries x producer.txn.call.timeout.ms, kept short here),
# cannot abort, replaces its producer and must go on from the offsets the
# broker says the group committed, not redo the batch: redone, its plans would
# go out a second time with the same ids. Then every plan must be on the plans
# topic (read_committed) exactly once and PostgreSQL must hold exactly the
# expected rows (tests/system/chaos/verify.py).
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/chaos/lib.sh"
trap chaos_exit EXIT
CHAOS_JOBS=${DLB_COMMIT_JOBS:-200}
CHAOS_SAMPLES=5
# Each job: meta, a create request, 5 samples, an OOM, an OOM request, its
# end: 2,000 events and 400 plans, published in 5 parts 2 s apart, so the
# second transaction with plans falls with work still arriving.
NTH=2

# wait_log FILE TEXT TIMEOUT_S WHAT [N]: wait until FILE has more than N
# (default 0) lines with TEXT.
wait_log() {
    local deadline=$((SECONDS + $3)) n
    while :; do
        n=$(grep -cF -- "$2" "$1" 2>/dev/null || true)
        [ "${n:-0}" -gt "${5:-0}" ] && return 0
        [ "$SECONDS" -lt "$deadline" ] || fail "$4: no new '$2' in $(basename "$1") within $3 s"
        sleep 0.2
    done
}

start=$SECONDS
sys_start_pg
sys_start_redis
proxy_port=$(dlb_free_port) || fail "no free port"
sys_start_real_kafka 12 "$proxy_port"
[ -n "${DLB_KAFKA_PROXIED_TARGET:-}" ] || fail "scripts/kafka wrote no DLB_KAFKA_PROXIED_TARGET"
python3 "$SYS_TOP/tests/system/kafka_proxy.py" --listen "$proxy_port" \
    --upstream "$DLB_KAFKA_PROXIED_TARGET" --trigger-topic "$(sys_schema).plans" --nth "$NTH" \
    --hold 180 >"$SYS_DIR/proxy.log" 2>&1 &
PROXY=$!
SYS_PIDS+=("$PROXY")
wait_log "$SYS_DIR/proxy.log" "listening on" 20 "the proxy"
ok "broker with a listener advertised at the proxy (127.0.0.1:$proxy_port -> $DLB_KAFKA_PROXIED_TARGET)"

python3 "$CHAOS_DIR/gen.py" --jobs "$CHAOS_JOBS" --samples "$CHAOS_SAMPLES" \
    --out "$SYS_DIR/events.jsonl" --expect "$SYS_DIR/expect.txt"
CHAOS_EVENTS=$(sed -n 's/^events //p' "$SYS_DIR/expect.txt")
CHAOS_PLANS=$(grep -c '^plan ' "$SYS_DIR/expect.txt")
CHAOS_SAMPLES_ROWS=$(sed -n 's/^rows runtime_samples //p' "$SYS_DIR/expect.txt")

# Three tries of 2 s: the commit is given up about 7 s after the trigger.
opt_start 1 -X brokers="127.0.0.1:$proxy_port" -X producer.txn.call.timeout.ms=2000 \
    -X producer.txn.call.tries=3
log=$SYS_DIR/opt-1.1.log
chaos_emit_paced 5 2
ok "publishing $CHAOS_EVENTS events of $CHAOS_JOBS jobs ($CHAOS_PLANS plan requests) in 5 parts, 2 s apart"

wait_log "$SYS_DIR/proxy.log" "trigger: EndTxn commit" 120 "the lost commit answer"
ok "the proxy forwarded EndTxn commit #$NTH of a transaction with plans and holds its answer"
# A replacement before the trigger (a slow machine) must not release it early.
replaced=$(grep -cF "replacing the transactional producer" "$log" || true)
wait_log "$log" "replacing the transactional producer" 120 "the producer replaced" "$replaced"
ok "the optimizer gave the commit up and replaced its producer"
kill -USR1 "$PROXY"
wait_log "$SYS_DIR/proxy.log" "released (SIGUSR1)" 10 "the proxy's release"
sed -n 's/.*kafka_proxy: \(released.*\)/  proxy \1/p' "$SYS_DIR/proxy.log"

chaos_wait_stored 180 "the release"
ok "all events processed after the release"
# sed reads it all: with pipefail, head's early exit would fail the script.
grep -E "kafka transaction: (commit|abort)|replacing|committed up to|going back" "$log" |
    sed -n '1,8s/^/  optimizer: /p'
chaos_verify commit-unknown 0
grep -qF "the group committed up to" "$log" ||
    fail "the optimizer did not go on from the group's committed offsets (no 'the group committed up to' line)"
ok "the optimizer went on from the offsets the broker says the group committed"
echo "23-commit-unknown: all checks passed in $((SECONDS - start)) s"
