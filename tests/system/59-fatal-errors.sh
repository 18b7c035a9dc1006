#!/usr/bin/env bash
# Health that tells the truth when a Kafka client fails for good, and a
# relay whose front has no topics.
#  - A Kafka client that failed for good (librdkafka's fatal error) serves
#    nothing more: each process replaces it or stops with a non-zero exit.
#    The mock cluster refuses the producer id (dlbrain mock-kafka
#    --fail-request 22:CLUSTER_AUTHORIZATION_FAILED, fatal for an idempotent
#    producer): the gateway and the Kubernetes monitor must stop, naming
#    it, instead of retrying a dead producer for ever at 200.
#  - On a real broker: a relay started before the front's topics exist
#    relays nothing (no answer forwarded to a missing topic, which failed
#    every transaction with "Message timed out" and had the producer fenced
#    every 12 s), /readyz answers 503 naming the missing topics while
#    /healthz stays 200 (it waits, it is not dead); once they are created
#    the waiting answer reaches the front and /readyz turns 200.
#  - `dlbrain plans` whose static membership (group.instance.id) another
#    member takes is fenced for good: it stops with an error instead of
#    waiting for ever.
#  - Two relays sharing a group.instance.id fence each other's consumer: a
#    fenced consumer is replaced (it used to be ignored, the relay relaying
#    nothing at 200), and the third fencing within a minute stops one,
#    naming the id.
. "$(dirname "$0")/helpers.sh"

# wait_exit PID TIMEOUT_S: until PID is gone; sets rc to its exit status.
wait_exit() {
    local deadline=$((SECONDS + $2))
    while kill -0 "$1" 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
    rc=0
    wait "$1" || rc=$?
}
# forget PID: drop PID from what sys_cleanup stops (it stopped, or is stopped here).
forget() {
    local keep=() p
    for p in "${SYS_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    SYS_PIDS=("${keep[@]}")
}
# mock_fatal NAME SPEC...: a mock cluster of its own (an injected error is
# answered to the first request of its API, from whichever client) with
# --fail-request SPEC for each; exports its DLBRAIN_BROKERS.
mock_fatal() {
    local name=$1 f=()
    shift
    for spec in "$@"; do f+=(--fail-request "$spec"); done
    rm -f "$SYS_DIR/bootstrap"
    "$DLBRAIN" mock-kafka -n 1 -p 1 -w "$SYS_DIR/bootstrap" "${f[@]}" \
        >/dev/null 2>"$SYS_DIR/mock-$name.log" &
    mock_pid=$!
    SYS_PIDS+=($mock_pid)
    for _ in $(seq 1 100); do [ -s "$SYS_DIR/bootstrap" ] && break; sleep 0.1; done
    [ -s "$SYS_DIR/bootstrap" ] || fail "mock-kafka for $name did not start"
    export DLBRAIN_BROKERS
    DLBRAIN_BROKERS=$(cat "$SYS_DIR/bootstrap")
}
mock_stop() {
    kill -TERM "$mock_pid"
    wait "$mock_pid" || fail "mock-kafka exited with status $?"
    forget "$mock_pid"
}
# stops_fatal NAME PID [LOG_PATTERN]: PID stops within 30 s, non-zero, its
# log naming the error (default: its producer refused).
stops_fatal() {
    local want=${3:-"failed for good (CLUSTER_AUTHORIZATION_FAILED).*; exiting"}
    wait_exit "$2" 30 || {
        SYS_PIDS+=("$2")
        fail "$1 still runs 30 s after its client failed for good: $(grep -c 'Fatal' "$SYS_DIR/$1.log") fatal line(s), last: $(tail -n 1 "$SYS_DIR/$1.log")"
    }
    [ "$rc" -ne 0 ] || fail "$1 exited with status 0 after its client failed for good"
    grep -q "$want" "$SYS_DIR/$1.log" ||
        fail "$1's log does not say why it stopped ($want): $(tail -n 3 "$SYS_DIR/$1.log")"
    ok "$1 stopped (status $rc) once its Kafka client failed for good, naming the error"
}

# ---- fatal producers on the mock cluster ---------------------------------------
mock_fatal gateway 22:CLUSTER_AUTHORIZATION_FAILED
"$DLBRAIN" gateway -X metrics.port=0 -X metrics.address=127.0.0.1 \
    -X gateway.address=127.0.0.1:0 >/dev/null 2>"$SYS_DIR/gateway.log" &
stops_fatal gateway $!
mock_stop

mock_fatal k8s-monitor 22:CLUSTER_AUTHORIZATION_FAILED
mkdir -p "$SYS_DIR/kube"
printf 'monitor-token-0\n' >"$SYS_DIR/kube/token"
# No API server: the monitor retries it, which must not hide the dead producer.
cat >"$SYS_DIR/kube/config" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: none
  cluster: {server: "http://127.0.0.1:9"}
contexts:
- name: none
  context: {cluster: none, user: monitor, namespace: dlrover}
current-context: none
users:
- name: monitor
  user: {tokenFile: token}
EOF
"$DLBRAIN" k8s-monitor -k "$SYS_DIR/kube/config" -X k8s.backoff.ms=50 -X metrics.port=0 \
    -X metrics.address=127.0.0.1 >/dev/null 2>"$SYS_DIR/k8s-monitor.log" &
stops_fatal k8s-monitor $!
mock_stop

# ---- fenced consumers on the mock cluster --------------------------------------
# A static member whose group.instance.id another member took gets
# FENCED_INSTANCE_ID, fatal for a consumer: here the first JoinGroup answers it.
mock_fatal plans 11:FENCED_INSTANCE_ID
"$DLBRAIN" plans -X group.instance.id=follower-1 >/dev/null 2>"$SYS_DIR/plans.log" &
stops_fatal plans $! "failed for good (FENCED_INSTANCE_ID)"
mock_stop

# ---- a relay without the front's topics, on a real broker ------------------------
sys_start_pg
"$SYS_TOP/scripts/kafka" start --dir "$SYS_DIR/kafka" --partitions 1 >/dev/null ||
    fail "the Kafka broker did not start"
# shellcheck disable=SC1091
. "$SYS_DIR/kafka/env"
"$DLBRAIN" env create blue --real -X topic.partitions=1 >/dev/null 2>"$SYS_DIR/env.log" ||
    fail "env create blue: $(cat "$SYS_DIR/env.log")"
"$DLBRAIN" relay -X relay.refresh.ms=300 -X consumer.poll.ms=100 -X metrics.port=0 \
    -X metrics.address=127.0.0.1 >/dev/null 2>"$SYS_DIR/relay.log" &
relay=$!
SYS_PIDS+=($relay)
sys_metrics_url relay
# An answer of the real environment, due at the front's plans.
printf 'job-1:plan-of-blue\n' | kcat -P -b "$DLBRAIN_BROKERS" -t blue.plans -K: ||
    fail "kcat could not write to blue.plans"
wait_status /readyz 503 20
body=$(curl -s "$url/readyz")
grep -q "the front's topics .*dlbrain.plans.* do not exist" <<<"$body" ||
    fail "/readyz does not name the missing front topics: $body"
grep -q "relay: the front's topics .*dlbrain.plans.* do not exist" "$SYS_DIR/relay.log" ||
    fail "the relay's log does not name the missing front topics"
ok "a relay without the front's topics is not ready: $body"
sleep 12 # longer than transaction.timeout.ms: what timed out before would have by now
expect_eq "/healthz of the waiting relay" 200 "$(status /healthz)"
expect_eq "/readyz of the waiting relay" 503 "$(status /readyz)"
kill -0 "$relay" || fail "the relay stopped while the front's topics were missing"
if grep -E "Message timed out|failed for good|batch of .* failed" "$SYS_DIR/relay.log"; then
    fail "the relay relayed into the missing front topics"
fi
ok "it relays nothing meanwhile: no timed out message, no failed batch, no fenced producer"

"$SYS_TOP/scripts/kafka" topics --dir "$SYS_DIR/kafka" --env dlbrain --partitions 1 ||
    fail "could not create the front's topics"
wait_status /readyz 200 60
front=''
deadline=$((SECONDS + 30))
while [ -z "$front" ] && [ "$SECONDS" -lt "$deadline" ]; do
    front=$(kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.plans -X isolation.level=read_committed \
        -e -q -f '%k %s %h\n')
    [ -n "$front" ] || sleep 0.3
done
expect_eq "the front's plans once its topics exist" "job-1 plan-of-blue dlb.env=blue" "$front"
grep -q "relay: the front's topics exist now" "$SYS_DIR/relay.log" ||
    fail "the relay did not log that the front's topics exist"
ok "with the front's topics created the waiting answer reached the front, /readyz 200"


# ---- two relays sharing a group.instance.id --------------------------------------
# The relay above leaves the group to these two. A new member with a live
# one's group.instance.id fences it (FENCED_INSTANCE_ID, fatal for the
# consumer): the fenced relay replaces its consumer, which fences the other,
# and so on; the third fencing within a minute stops one, naming the id,
# and the other relays on.
kill -TERM "$relay"
wait "$relay" || fail "the relay exited with status $? on SIGTERM"
forget "$relay"
shared=(-X relay.refresh.ms=300 -X consumer.poll.ms=100 -X group.instance.id=relay-shared
    -X session.timeout.ms=6000 -X heartbeat.interval.ms=500)
"$DLBRAIN" relay "${shared[@]}" >/dev/null 2>"$SYS_DIR/shared1.log" &
s1=$!
SYS_PIDS+=($s1)
for _ in $(seq 1 100); do grep -q "kafka: assigned" "$SYS_DIR/shared1.log" && break; sleep 0.2; done
grep -q "kafka: assigned" "$SYS_DIR/shared1.log" || fail "the first relay was assigned nothing"
"$DLBRAIN" relay "${shared[@]}" >/dev/null 2>"$SYS_DIR/shared2.log" &
s2=$!
SYS_PIDS+=($s2)
deadline=$((SECONDS + 120))
stopped=''
while [ -z "$stopped" ]; do
    [ "$SECONDS" -lt "$deadline" ] ||
        fail "neither relay sharing a group.instance.id stopped within 120 s: $(grep -c 'replacing it' "$SYS_DIR/shared1.log") and $(grep -c 'replacing it' "$SYS_DIR/shared2.log") replacement(s)"
    kill -0 "$s1" 2>/dev/null || stopped=1
    kill -0 "$s2" 2>/dev/null || stopped=2
    sleep 0.3
done
pids=("$s1" "$s2")
rc=0
wait "${pids[$((stopped - 1))]}" || rc=$?
forget "${pids[$((stopped - 1))]}"
[ "$rc" -ne 0 ] || fail "the fenced relay exited with status 0"
grep -q "group.instance.id relay-shared was fenced 3 times within 60 s" "$SYS_DIR/shared$stopped.log" ||
    fail "shared$stopped.log does not say why it stopped: $(tail -n 3 "$SYS_DIR/shared$stopped.log")"
[ "$(grep -c "failed for good (FENCED_INSTANCE_ID).*; replacing it" "$SYS_DIR/shared$stopped.log")" = 2 ] ||
    fail "the fenced relay did not replace its consumer twice before stopping"
sleep 2
kill -0 "${pids[$((2 - stopped))]}" || fail "the other relay sharing the id stopped too"
ok "of two relays sharing group.instance.id, one replaced its fenced consumer twice, then stopped (status $rc) naming the id"
echo "59-fatal-errors: all checks passed"
