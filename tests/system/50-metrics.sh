#!/usr/bin/env bash
# Metrics and logs of a running optimizer (mock Kafka, real PostgreSQL and
# Redis): /metrics parses as the Prometheus text format and follows dlbrain's
# naming rules (tests/system/prom_check.py), and its counters move with the
# work: events consumed and processed per topic, plans produced, a bad message
# in the DLQ and in the errors, PostgreSQL and Redis call latencies, batch
# latency, consumer lag per partition, rebalances, transactions. /healthz and
# /readyz answer 200 while all is well, /readyz 503 while PostgreSQL is down.
# One address holding 40 half-open requests leaves /healthz answering another
# address, and its connections are closed after the idle timeout.
# A metrics port in use stops a second process with a clear error. Every log
# line of the optimizer (--log-format json) is a JSON object. A relay's
# metrics (the failover decider's ratios among them) pass the same checks.
. "$(dirname "$0")/helpers.sh"

check=$SYS_TOP/tests/system/prom_check.py
sys_start_pg
sys_start_redis
sys_start_kafka 2
sys_start_optimizer optimizer --log-format json -X metrics.port=0 -X metrics.address=127.0.0.1 \
    -X http.max.per.address=8 \
    -X statistics.interval.ms=300
opt_pid=${SYS_PIDS[-1]}

sys_metrics_url optimizer
ok "metrics on $url (metrics.port=0)"

# scrape FILE: /metrics into FILE, checked
scrape() {
    curl -sf "$url/metrics" >"$1" || fail "GET /metrics failed"
    python3 "$check" "$1" >"$1.check" || fail "$1 is not valid: $(cat "$1.check")"
}
# value FILE SERIES: the sample's value (0 when absent)
value() { awk -v s="$2" '$1 == s { v = $2 } END { print v + 0 }' "$1"; }
# total FILE NAME: the sum over every series of a name (any labels)
total() { awk -v n="$1" 'BEGIN { re = "^" n "({|$)" } { split($0, f, " ") } f[1] ~ re { t += f[2] } END { print t + 0 }' "$2"; }
# expect_gt WHAT A B: A > B
expect_gt() { if awk -v a="$2" -v b="$3" 'BEGIN { exit !(a > b) }'; then ok "$1: $2 > $3"; else fail "$1: $2 is not > $3"; fi; }

wait_status /healthz 200 10
wait_status /readyz 200 30
ok "/healthz and /readyz answer 200 once the group assigned the optimizer"
[ "$(status /nothing)" = 404 ] || fail "an unknown path does not answer 404"

# One client holding many half-open requests (a request line, never the blank
# line that ends the headers) must not starve the kubelet: it gets at most the
# per-address limit of connections, the rest are closed at once, /healthz
# still answers another address at once, and the held ones are closed after
# the 5 s timeout. The flood comes from 127.0.0.2, the probe from 127.0.0.1.
python3 - "$port" 5 <<'PY' || fail "half-open connections starved /healthz or were not timed out"
import http.client, select, socket, sys, time
port, timeout_s = int(sys.argv[1]), float(sys.argv[2])
held = []
for _ in range(40):
    s = socket.socket()
    s.settimeout(2)
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: flood\r\n")
        held.append(s)
    except OSError:
        s.close()
start = time.monotonic()
probe = http.client.HTTPConnection("127.0.0.1", port, timeout=3, source_address=("127.0.0.1", 0))
try:
    probe.request("GET", "/healthz")
    status = probe.getresponse().status
except OSError as e:
    sys.exit(f"FAIL - /healthz from another address with 40 half-open requests held: {e!r}")
if status != 200:
    sys.exit(f"FAIL - /healthz answered {status} with 40 half-open requests held")
print(f"ok - /healthz answered 200 in {time.monotonic() - start:.2f} s beside 40 half-open requests")
open_socks, closed_at = list(held), []
while open_socks and time.monotonic() - start < timeout_s + 4:
    for s in select.select(open_socks, [], [], 0.2)[0]:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:
            open_socks.remove(s)
            s.close()
            closed_at.append(time.monotonic() - start)
if open_socks:
    sys.exit(f"FAIL - {len(open_socks)} half-open connections still open after {timeout_s + 4:.0f} s")
late = [t for t in closed_at if t > 1]
if len(late) > 8:
    sys.exit(f"FAIL - {len(late)} half-open connections of one address were held (at most 8)")
print(f"ok - {len(closed_at) - len(late)} closed at once, {len(late)} held until the timeout "
      f"(last closed at {max(closed_at):.1f} s)")
PY

scrape "$SYS_DIR/m1"
ok "first scrape: $(cat "$SYS_DIR/m1.check")"
expect_eq "build info" 1 "$(value "$SYS_DIR/m1" 'dlbrain_build_info{version="'"$("$DLBRAIN" --version | awk '{print $NF}')"'",command="optimizer"}')"

"$DLBRAIN" emit --strict -q "$SYS_TOP/tests/system/data/pipeline.jsonl" || fail "emit"
printf '\x01\x00\x00\x00\x04abcdef' >"$SYS_DIR/bad-magic"
kcat -P -b "$DLBRAIN_BROKERS" -t dlbrain.plan-requests -p 0 -k bad "$SYS_DIR/bad-magic" ||
    fail "kcat could not produce the bad message"

deadline=$((SECONDS + 60))
while :; do
    scrape "$SYS_DIR/m2"
    [ "$(total dlbrain_outputs_produced_total "$SYS_DIR/m2")" -ge 5 ] &&
        [ "$(total dlbrain_dlq_messages_total "$SYS_DIR/m2")" -ge 1 ] && break
    [ "$SECONDS" -lt "$deadline" ] || fail "5 plans and 1 DLQ message not counted within 60 s"
    sleep 0.3
done
ok "second scrape: $(cat "$SYS_DIR/m2.check")"
m1=$SYS_DIR/m1 m2=$SYS_DIR/m2
for t in job-events metrics k8s-events plan-requests; do
    expect_gt "consumed from dlbrain.$t" \
        "$(value "$m2" "dlbrain_messages_consumed_total{topic=\"dlbrain.$t\"}")" \
        "$(value "$m1" "dlbrain_messages_consumed_total{topic=\"dlbrain.$t\"}")"
done
expect_eq "plan requests processed" 5 "$(value "$m2" 'dlbrain_events_processed_total{topic="dlbrain.plan-requests"}')"
expect_eq "plans produced" 5 "$(value "$m2" 'dlbrain_outputs_produced_total{topic="dlbrain.plans"}')"
expect_eq "DLQ: the bad message, decode stage" 1 \
    "$(value "$m2" 'dlbrain_dlq_messages_total{topic="dlbrain.plan-requests",stage="decode"}')"
expect_eq "errors of class decode" 1 "$(value "$m2" 'dlbrain_errors_total{class="decode"}')"
expect_gt "PostgreSQL calls timed" "$(total dlbrain_postgres_call_duration_seconds_count "$m2")" \
    "$(total dlbrain_postgres_call_duration_seconds_count "$m1")"
expect_gt "Redis calls timed" "$(total dlbrain_redis_call_duration_seconds_count "$m2")" \
    "$(total dlbrain_redis_call_duration_seconds_count "$m1")"
expect_gt "batches timed" "$(value "$m2" dlbrain_batch_duration_seconds_count)" 0
expect_gt "events timed" "$(value "$m2" dlbrain_event_duration_seconds_count)" 0
expect_gt "transactions committed" "$(value "$m2" 'dlbrain_kafka_transactions_total{result="committed"}')" 0
expect_gt "rebalances (assign)" "$(value "$m2" 'dlbrain_kafka_rebalances_total{event="assign"}')" 0
expect_eq "partitions assigned" 8 "$(value "$m2" dlbrain_kafka_assigned_partitions)"
expect_eq "PostgreSQL up" 1 "$(value "$m2" 'dlbrain_dependency_up{dependency="postgres"}')"
# Lag per assigned partition, from librdkafka's statistics every 300 ms: every
# partition of every input topic, and none left once all is consumed.
deadline=$((SECONDS + 30))
while :; do
    scrape "$SYS_DIR/m3"
    n=$(grep -c '^dlbrain_kafka_consumer_lag{' "$SYS_DIR/m3" || true)
    lag=$(total dlbrain_kafka_consumer_lag "$SYS_DIR/m3")
    [ "$n" = 8 ] && [ "$lag" = 0 ] && break
    [ "$SECONDS" -lt "$deadline" ] || fail "lag series: $n (expected 8), total lag $lag (expected 0)"
    sleep 0.3
done
grep -q '^dlbrain_kafka_consumer_lag{topic="dlbrain.plan-requests",partition="1"} 0$' "$SYS_DIR/m3" ||
    fail "no lag series for dlbrain.plan-requests [1]"
ok "consumer lag: 8 partition series, all 0 once consumed"

# PostgreSQL down: the next event fails its batch and /readyz says so; the
# loop keeps coming round (retrying), so /healthz stays 200.
"$SYS_TOP/scripts/pg" stop --dir "$SYS_DIR/pg" --keep >/dev/null
echo '{"type":"plan_request","event_id":"m-q1","event_time_ms":1767312001000,"job_uid":"m1","stage":"job_stage_create"}' |
    "$DLBRAIN" emit --strict -q || fail "emit while PostgreSQL is down"
wait_status /readyz 503 30
curl -s "$url/readyz" | grep -q 'postgres down' || fail "/readyz does not name PostgreSQL"
[ "$(status /healthz)" = 200 ] || fail "/healthz failed while PostgreSQL was down"
scrape "$SYS_DIR/m4"
expect_eq "PostgreSQL down in the metrics" 0 "$(value "$SYS_DIR/m4" 'dlbrain_dependency_up{dependency="postgres"}')"
expect_gt "errors of class postgres" "$(value "$SYS_DIR/m4" 'dlbrain_errors_total{class="postgres"}')" 0
ok "/readyz 503 and /healthz 200 while PostgreSQL is down"
"$SYS_TOP/scripts/pg" start --dir "$SYS_DIR/pg" >/dev/null
wait_status /readyz 200 60
deadline=$((SECONDS + 60))
until [ "$(value <(curl -s "$url/metrics") 'dlbrain_outputs_produced_total{topic="dlbrain.plans"}')" = 6 ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the request sent during the outage got no plan"
    sleep 0.3
done
ok "PostgreSQL back: /readyz 200, the request sent during the outage answered"

# The same port again: a second process stops at once and says why.
rc=0
"$DLBRAIN" optimizer -X metrics.port="$port" -X metrics.address=127.0.0.1 >/dev/null \
    2>"$SYS_DIR/second.log" || rc=$?
expect_eq "exit status with the metrics port taken" 1 "$rc"
grep -q "metrics: cannot listen on 127.0.0.1:$port: Address already in use; set metrics.port" \
    "$SYS_DIR/second.log" || fail "no clear error: $(cat "$SYS_DIR/second.log")"
ok "a taken metrics port is an error naming it"
rc=0
"$DLBRAIN" optimizer -X metrics.port=-1 -D | grep -qx 'metrics.port=-1' || fail "metrics.port=-1 not accepted"
"$DLBRAIN" optimizer -X metrics.port=65536 -D >/dev/null 2>&1 || rc=$?
expect_eq "metrics.port out of range refused" 2 "$rc"

kill -0 "$opt_pid" || fail "the optimizer died"
python3 - "$SYS_DIR/optimizer.log" <<'PY' || fail "the optimizer's log has lines that are not JSON"
import json, sys
n = 0
for no, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    o = json.loads(line)
    assert set(o) == {"ts", "level", "program", "msg"}, (no, line)
    assert o["level"] in ("error", "warn", "info", "debug") and o["program"] == "optimizer", (no, line)
    n += 1
print(f"ok - {n} log lines, each a JSON object with ts, level, program, msg")
PY
grep -q '"level":"warn".*bad message at dlbrain.plan-requests \[0\] offset [0-9]* (decode, framing).*sent to the DLQ' \
    "$SYS_DIR/optimizer.log" || fail "the DLQ warning does not say where and what happens next"
ok "the bad message's log line names topic, partition, offset and the DLQ"

# The relay's metrics (the failover decider's among them) follow the same
# rules; its ratios are 0..1 and named _ratio.
"$DLBRAIN" relay -X metrics.port=0 -X metrics.address=127.0.0.1 >/dev/null 2>"$SYS_DIR/relay.log" &
SYS_PIDS+=($!)
sys_metrics_url relay
wait_for_relay=$((SECONDS + 30))
until grep -q "failover: " "$SYS_DIR/relay.log"; do
    [ "$SECONDS" -lt "$wait_for_relay" ] || fail "the relay's failover decider did not run"
    sleep 0.2
done
scrape "$SYS_DIR/relay.prom"
for f in dlbrain_failover_failed_ratio dlbrain_failover_late_ratio dlbrain_failover_threshold_ratio; do
    grep -q "^# TYPE $f gauge$" "$SYS_DIR/relay.prom" || fail "the relay exports no gauge $f"
done
expect_eq "dlbrain_failover_threshold_ratio" 0.5 "$(value "$SYS_DIR/relay.prom" dlbrain_failover_threshold_ratio)"
ok "the relay's metrics pass the checks: $(cat "$SYS_DIR/relay.prom.check")"
echo "50-metrics: all checks passed"
