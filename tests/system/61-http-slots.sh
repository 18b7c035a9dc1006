#!/usr/bin/env bash
# What a client may hold of dlbrain's HTTP servers (http.*, pipeline/base/httpd.c):
# half-open requests that trickle a header line every second (so no idle
# timeout fires), opened again as soon as they are closed, from many loopback
# source addresses (tests/system/http/slots_attack.py), against `dlbrain
# registry`'s metrics endpoint and Schema Registry API:
#  - 70 addresses on the metrics port: /healthz still answers the kubelet's
#    probe within its 3 s (deploy/k8s) every time;
#  - 260 addresses on the registry: GET /subjects still answers within 3 s;
#  - 300 addresses x 16 connections (over both counts): /healthz answers;
#  - a connection that never completes its request is closed after
#    http.timeout.ms however it trickles, and the closed connections are
#    counted by reason in dlbrain_http_connections_closed_total.
# (The gateway's HTTP Brain stands on the same front: 62-gateway-http.sh.)
. "$(dirname "$0")/helpers.sh"

ATTACK=$SYS_TOP/tests/system/http/slots_attack.py

# start_registry NAME [OPTION...]: sets MPORT (metrics) and RPORT (registry).
start_registry() {
    local name=$1
    shift
    "$DLBRAIN" registry -a 127.0.0.1:0 -X registry.envs=dlbrain -X metrics.port=0 \
        -X metrics.address=127.0.0.1 "$@" >/dev/null 2>"$SYS_DIR/$name.log" &
    SYS_PIDS+=($!)
    sys_metrics_url "$name"
    MPORT=$port
    sys_log_port "$name" 's|.*Registry API (read-only) on http://127.0.0.1:\([0-9]*\)/.*|\1|p' ||
        fail "$name did not start: $(tail -n 3 "$SYS_DIR/$name.log")"
    RPORT=$port
}
# attack WHAT PORT [OPTION...]: slots_attack.py, its JSON in $SYS_DIR/attack.json
attack() {
    local what=$1
    shift
    python3 "$ATTACK" "$@" >"$SYS_DIR/attack.json" ||
        fail "$what: $(cat "$SYS_DIR/attack.json")"
    ok "$what: $(jq -r '"\(.answered)/\(.probes) answered, the longest in \(.max_wait_s) s, \(.attack_connections_open) attack connections held, \(.attack_connections_made) made"' "$SYS_DIR/attack.json")"
}

start_registry registry
ok "metrics on $MPORT, registry on $RPORT (http.* defaults)"

attack "/healthz beside 70 addresses' half-open requests" "$MPORT" --addresses 70 --seconds 8
attack "the registry beside 260 addresses' half-open requests" "$RPORT" --path /subjects \
    --addresses 260 --seconds 8
attack "/healthz beside 300 addresses x 16 half-open requests" "$MPORT" --addresses 300 \
    --per-address 16 --seconds 6
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$SYS_DIR/m.prom" || fail "GET /metrics"
python3 "$SYS_TOP/tests/system/prom_check.py" "$SYS_DIR/m.prom" >/dev/null ||
    fail "/metrics is not valid after the attacks"
for s in metrics registry; do
    n=$(awk -v k="dlbrain_http_connections_closed_total{server=\"$s\",reason=\"displaced\"}" \
        '$1 == k { print $2 }' "$SYS_DIR/m.prom")
    [ "${n:-0}" -gt 0 ] || fail "no displaced connection counted for the $s server"
    ok "$s: $n connections displaced, counted"
done
grep -q 'warn .*metrics: closed [0-9]* connection(s) to keep answering: [0-9]* displaced' \
    "$SYS_DIR/registry.log" || fail "no warning says connections were displaced"

# A request that never comes whole is closed after http.timeout.ms, counted
# from its first byte, not from its last: one header byte every 200 ms.
start_registry short -X http.timeout.ms=1000
python3 - "$MPORT" <<'PY' || fail "a trickled request was not closed after http.timeout.ms"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(0.2)
start = time.monotonic()
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
closed = None
while time.monotonic() - start < 6:
    try:
        s.sendall(b"X")
        if s.recv(4096) == b"":
            closed = time.monotonic() - start
            break
    except socket.timeout:
        continue
    except OSError:
        closed = time.monotonic() - start
        break
if closed is None or not 0.9 <= closed <= 2.5:
    sys.exit(f"FAIL - closed at {closed} s (expected about 1 s)")
print(f"ok - a request trickled a byte every 200 ms was closed at {closed:.2f} s (http.timeout.ms=1000)")
PY
grep -q 'closed 1 connection(s) to keep answering: .* 1 over http.timeout.ms=1000' "$SYS_DIR/short.log" ||
    sleep 11 # logged at most every 10 s
grep -q '1 over http.timeout.ms=1000' "$SYS_DIR/short.log" || fail "the timeout is not logged"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/healthz")" = 200 ] ||
    fail "/healthz does not answer after the timeout"
ok "a timed-out connection is logged; /healthz answers"
echo "61-http-slots: all checks passed"
