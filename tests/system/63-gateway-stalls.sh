#!/usr/bin/env bash
# dlbrain gateway against clients that stall: raw HTTP/2 connections
# (tests/system/gateway/stall.py, the h2 library, no gRPC) whose calls send
# their headers and part of a message and never more, more of them than
# gateway.max.calls, held open and refilled as the gateway ends them. Beside
# them, DLRover 0.6.1's own client (no deadline, as its master calls) must
# still be answered, within twice gateway.stall.timeout.ms:
#  - per connection, the gateway advertises gateway.max.calls.per.connection
#    (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS);
#  - by time, every stalled call is ended after gateway.stall.timeout.ms
#    (DEADLINE_EXCEEDED) and counted in dlbrain_gateway_stalled_total;
#  - in all, gateway.max.calls still bounds the calls served at once;
#  - calls whose client never takes the answer (no HTTP/2 flow-control
#    window) are ended after gateway.stall.timeout.ms too.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
GWDIR=$SYS_TOP/tests/system/gateway
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"
"$PY" -c 'import h2, grpc, dlrover.python.brain.client' 2>/dev/null ||
    fail "the venv lacks h2 / grpcio / dlrover 0.6.1 (scripts/setup installs them)"
STALL_MS=3000
CONNS=12
STREAMS=100 # 12 x 100 = 1,200 stalled calls, beyond gateway.max.calls (1,024)

sys_start_kafka 4
"$DLBRAIN" gateway -a 127.0.0.1:0 -X metrics.port=0 -X metrics.address=127.0.0.1 \
    -X gateway.stall.timeout.ms=$STALL_MS >/dev/null 2>"$SYS_DIR/gateway.log" &
SYS_PIDS+=($!)
GW_PID=$!
sys_log_port gateway 's/.*serving brain.Brain on .* (port \([0-9]*\)).*/\1/p' ||
    fail "the gateway did not start: $(tail -n 3 "$SYS_DIR/gateway.log")"
GW=127.0.0.1:$port
sys_metrics_url gateway
ok "gateway serving at $GW (gateway.max.calls 1024, gateway.stall.timeout.ms $STALL_MS)"

# A good call with nobody stalling, for comparison.
out=$(timeout 30 "$PY" "$GWDIR/stall.py" good "$GW" job-calm-1 2>"$SYS_DIR/good0.log") ||
    fail "DLRover's client with nobody stalling: $(tail -n 3 "$SYS_DIR/good0.log")"
ok "DLRover's client alone: answered in ${out#ok } s"

# ---- the attack ------------------------------------------------------------------
HOLD=16
"$PY" "$GWDIR/stall.py" attack "$GW" $CONNS $STREAMS $HOLD "$SYS_DIR/attack.json" --refill \
    >"$SYS_DIR/attack.out" 2>"$SYS_DIR/attack.log" &
ATTACK=$!
for _ in $(seq 1 100); do grep -q '^ready' "$SYS_DIR/attack.out" && break; sleep 0.1; done
grep -q '^ready' "$SYS_DIR/attack.out" || fail "the stalling client did not open its streams: $(tail -n 3 "$SYS_DIR/attack.log")"
ok "stalling client: $(sed -n 's/^ready //p' "$SYS_DIR/attack.out") calls open on $CONNS connections, each sent headers and 10 of 100 bytes"
sleep 1

# DLRover's own client, twice during the attack (no deadline: old code hung).
for k in 1 2; do
    out=$(timeout 30 "$PY" "$GWDIR/stall.py" good "$GW" "job-stall-$k" 2>"$SYS_DIR/good$k.log") ||
        fail "DLRover's client during the attack was not answered within 30 s: $(tail -n 3 "$SYS_DIR/good$k.log")"
    secs=${out#ok }
    awk -v s="$secs" -v l=$((2 * STALL_MS)) 'BEGIN { exit !(s * 1000 <= l) }' ||
        fail "DLRover's client during the attack answered after $secs s (limit: twice gateway.stall.timeout.ms)"
    ok "DLRover's client during the attack ($k): answered in $secs s"
    sleep 2
done
wait "$ATTACK" || fail "the stalling client failed: $(tail -n 3 "$SYS_DIR/attack.log")"

"$PY" - "$SYS_DIR/attack.json" $STREAMS $STALL_MS $CONNS <<'EOF' || fail "the stalled calls: $(cat "$SYS_DIR/attack.json")"
import json, sys
a = json.load(open(sys.argv[1]))
streams, stall_s, conns = int(sys.argv[2]), int(sys.argv[3]) / 1000, int(sys.argv[4])
print("attack:", json.dumps(a, sort_keys=True))
assert a["advertised"] == streams, ("SETTINGS_MAX_CONCURRENT_STREAMS", a["advertised"])
assert a["connections_alive"] == conns, a          # the gateway ends calls, not connections
assert a["ended"] >= 1200, a                        # every stalled call ended by the gateway ...
assert a["statuses"].get("4", 0) >= 1200, a         # ... with DEADLINE_EXCEEDED
assert a["open_s_max"] <= 2 * stall_s + 1.5, a      # ... a held one within the stall timeout (+ the sweep),
                                                    # one queued behind gateway.max.calls within two
assert a["oldest_open_s"] <= 2 * stall_s + 1.5, a  # none open longer at the end either
EOF
ok "every stalled call ended by the gateway, DEADLINE_EXCEEDED, within twice gateway.stall.timeout.ms of its first byte (+1.5 s); connections kept"

stalled=$(curl -s "$url/metrics" | sed -n 's/^dlbrain_gateway_stalled_total{phase="request"} //p')
[ "${stalled%.*}" -ge 1200 ] || fail "dlbrain_gateway_stalled_total{phase=\"request\"} = $stalled, expected >= 1200"
ok "dlbrain_gateway_stalled_total{phase=\"request\"} = $stalled"

# ---- clients that never take their answer ------------------------------------------
# Whole calls on connections that open no flow-control window: their answers
# cannot be sent, so they would hold their places for ever.
"$PY" "$GWDIR/stall.py" attack "$GW" 2 50 $((2 * STALL_MS / 1000 + 3)) "$SYS_DIR/noread.json" \
    --no-read >"$SYS_DIR/noread.out" 2>"$SYS_DIR/noread.log" ||
    fail "the client that takes no answer failed: $(tail -n 3 "$SYS_DIR/noread.log")"
"$PY" - "$SYS_DIR/noread.json" $STALL_MS <<'EOF' || fail "calls whose answer is not taken: $(cat "$SYS_DIR/noread.json")"
import json, sys
a = json.load(open(sys.argv[1]))
stall_s = int(sys.argv[2]) / 1000
print("no-read:", json.dumps(a, sort_keys=True))
assert a["opened"] == 100 and a["ended"] == 100 and a["still_open"] == 0, a
assert a["statuses"].get("4", 0) == 100, a          # DEADLINE_EXCEEDED
assert a["open_s_max"] <= stall_s + 2.5, a          # the stall timeout after the answer (+ Kafka's ack)
EOF
answer=$(curl -s "$url/metrics" | sed -n 's/^dlbrain_gateway_stalled_total{phase="answer"} //p')
expect_eq "dlbrain_gateway_stalled_total{phase=\"answer\"}" 100 "${answer%.*}"
ok "100 calls whose answer was never taken ended by the gateway after gateway.stall.timeout.ms"

# Once the attack is gone, a call is served at once again.
out=$(timeout 30 "$PY" "$GWDIR/stall.py" good "$GW" job-after-1 2>"$SYS_DIR/good3.log") ||
    fail "DLRover's client after the attack: $(tail -n 3 "$SYS_DIR/good3.log")"
awk -v s="${out#ok }" 'BEGIN { exit !(s < 1) }' || fail "after the attack, a call took ${out#ok } s"
ok "after the attack: answered in ${out#ok } s"
kill -0 "$GW_PID" 2>/dev/null || fail "the gateway died"
echo "63-gateway-stalls: all checks passed"
