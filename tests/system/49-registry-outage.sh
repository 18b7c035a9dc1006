#!/usr/bin/env bash
# A schema registry outage holds a record back; it does not dead-letter it
# (issue 22, item 2). The optimizer binds to a platform registry
# (tests/system/registry/alias_proxy.py in front of `dlbrain registry`) that
# also knows plan_request under an id of its own, 9001. With the registry
# down, a plan request framed with id 9001 arrives: the optimizer cannot learn
# the id, logs why, and retries the batch; nothing goes to the DLQ and no plan
# is written. The registry comes back on the same port: the request is
# answered, once, and the DLQ stays empty.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
PROXY=$SYS_TOP/tests/system/registry/alias_proxy.py
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"

sys_start_pg
sys_start_redis
sys_start_kafka 1

"$DLBRAIN" registry -a 127.0.0.1:0 >/dev/null 2>"$SYS_DIR/registry.log" &
SYS_PIDS+=($!)
sys_log_port registry 's|.*Registry API (read-only) on http://127.0.0.1:\([0-9]*\)/.*|\1|p' ||
    fail "the registry did not start: $(tail -n 3 "$SYS_DIR/registry.log")"
up=http://127.0.0.1:$port
pr_id=$(curl -s "$up/subjects/dlbrain.plan-requests-value/versions/latest" | jq -r .id)
[ -n "$pr_id" ] && [ "$pr_id" != null ] || fail "no plan_request schema at $up"

start_proxy() { # PORT
    "$PY" "$PROXY" "$1" "$up" 9001 "$pr_id" >"$SYS_DIR/proxy.out" 2>>"$SYS_DIR/proxy.log" &
    proxy=$!
    SYS_PIDS+=($proxy)
    for _ in $(seq 1 100); do [ -s "$SYS_DIR/proxy.out" ] && break; sleep 0.1; done
    pport=$(head -n 1 "$SYS_DIR/proxy.out")
    [ -n "$pport" ] || fail "the registry proxy did not start: $(grep -v '" 200 -' "$SYS_DIR/proxy.log" | tail -n 5)"
}
start_proxy 0
reg=http://127.0.0.1:$pport
expect_eq "the platform registry knows id 9001" "$(curl -s "$up/schemas/ids/$pr_id" | jq -c .)" \
    "$(curl -s "$reg/schemas/ids/9001" | jq -c .)"

logged() { # PATTERN: waits up to 10 s for the optimizer to log it
    for _ in $(seq 1 100); do
        grep -q "$1" "$SYS_DIR/optimizer.log" && return 0
        sleep 0.1
    done
    return 1
}
sys_start_optimizer optimizer -X schema.registry.url="$reg" -X consumer.retry.backoff.ms=300
logged "found or registered under" ||
    fail "the optimizer did not bind to the registry: $(tail -n 3 "$SYS_DIR/optimizer.log")"
ok "the optimizer bound to the platform registry"

# The request's bytes as dlbrain frames them (into a scratch topic), then
# id 9001 in bytes 1-4 of the frame.
printf '%s\n' '{"type":"plan_request","event_id":"ro-q1","event_time_ms":1767225601000,"job_uid":"ro-1","stage":"job_stage_create"}' |
    "$DLBRAIN" emit -e scratch --strict -q || fail "emit rejected the request"
kcat -C -b "$DLBRAIN_BROKERS" -t scratch.plan-requests -c 1 -e -q -f '%s' >"$SYS_DIR/frame.bin" ||
    fail "could not read the framed request back"
printf '\x00\x00\x00\x23\x29' | dd of="$SYS_DIR/frame.bin" bs=1 seek=0 count=5 conv=notrunc status=none
expect_eq "the frame's schema id" "0000002329" "$(head -c 5 "$SYS_DIR/frame.bin" | od -An -tx1 | tr -d ' \n')"

kill "$proxy"
wait "$proxy" 2>/dev/null || true
kcat -P -b "$DLBRAIN_BROKERS" -t dlbrain.plan-requests -k ro-1 "$SYS_DIR/frame.bin" ||
    fail "could not produce the request"

logged "schema id 9001: the schema registry did not answer" ||
    fail "no outage logged: $(tail -n 3 "$SYS_DIR/optimizer.log")"
ok "the outage is logged with the id"
sleep 3 # several retries
# The DLQ with kcat (any record, aborted or not, would be one too many);
# plans as a master reads them (read_committed, every copy).
dlq_count() { kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.dlq -e -q 2>/dev/null | wc -l; }
plans() { # N TIMEOUT_MS: the plans' ids, one a line
    "$DLBRAIN" plans -q -a -n "$1" -t "$2" --format json 2>/dev/null | jq -r .plan_id
}
expect_eq "DLQ records while the registry is down" 0 "$(dlq_count)"
expect_eq "plans while the registry is down" "" "$(plans 1 2000)"
[ "$(grep -c "rewinding and retrying" "$SYS_DIR/optimizer.log")" -ge 2 ] ||
    fail "the batch was not retried: $(grep -c "rewinding and retrying" "$SYS_DIR/optimizer.log")"
ok "the batch is retried, nothing dead-lettered"

start_proxy "$pport"
expect_eq "the plan once the registry is back" plan-ro-q1 "$(plans 1 60000)"
expect_eq "plans, every copy, 5 s later" plan-ro-q1 "$(plans 2 5000)"
expect_eq "DLQ records after the outage" 0 "$(dlq_count)"
echo "49-registry-outage: all checks passed"
