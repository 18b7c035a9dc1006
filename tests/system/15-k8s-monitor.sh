#!/usr/bin/env bash
# dlbrain k8s-monitor against a replay of recorded Kubernetes API responses
# (tests/system/k8s/): list then watch pods, nodes and pod Events; resume after
# a dropped connection from the last resourceVersion; relist after 410 Gone
# (a watch ERROR event, then an HTTP 410); bad lines and a pod without the job
# label are logged and skipped; each node event is produced once, keyed by job
# uid. Then a kubeconfig naming a missing CA file: a clear log line, the
# monitor keeps retrying and connects once the file is there.
. "$(dirname "$0")/helpers.sh"
K8S="$SYS_TOP/tests/system/k8s"
JOB=3f6b2c1e-9a4d-4c1b-8e2f-5d7a9b0c1e2f

sys_start_kafka 1
# start_api NAME: a replay server; sets PORT
start_api() {
    python3 "$K8S/server.py" --script "$K8S/script.json" --log "$SYS_DIR/$1-requests.jsonl" \
        --port-file "$SYS_DIR/$1.port" --token monitor-token-0 2>"$SYS_DIR/$1-server.log" &
    SYS_PIDS+=($!)
    for _ in $(seq 1 100); do [ -s "$SYS_DIR/$1.port" ] && break; sleep 0.1; done
    [ -s "$SYS_DIR/$1.port" ] || fail "replay server $1 did not start"
    PORT=$(cat "$SYS_DIR/$1.port")
}
# kubeconfig FILE PORT [CA]
kubeconfig() {
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: replay
  cluster:
    server: http://127.0.0.1:$2
${3:+    certificate-authority: $3}
contexts:
- name: replay
  context: {cluster: replay, user: monitor, namespace: dlrover}
current-context: replay
users:
- name: monitor
  user:
    tokenFile: token
EOF
    printf 'monitor-token-0\n' >"$(dirname "$1")/token"
}
# wait_log FILE TEXT TIMEOUT_S
wait_log() {
    local deadline=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$deadline" ]; do
        grep -qF -- "$2" "$1" && return 0
        sleep 0.1
    done
    fail "not in $(basename "$1") within $3 s: $2"
}
requests() { # NAME RESOURCE WATCH: the resourceVersion of each such request, in order
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["resource"] == sys.argv[2] and r["watch"] == (sys.argv[3] == "watch"):
        print(r["params"].get("resourceVersion", "list") + ("" if r["auth"] else "(no token)"))' \
        "$SYS_DIR/$1-requests.jsonl" "$2" "$3" | xargs
}

# ---- the recorded story -----------------------------------------------------
start_api api
mkdir -p "$SYS_DIR/kube"
kubeconfig "$SYS_DIR/kube/config" "$PORT"
"$DLBRAIN" k8s-monitor -k "$SYS_DIR/kube/config" -X k8s.job.uid=owner -X k8s.backoff.ms=50 \
    2>"$SYS_DIR/monitor.log" &
MON=$!
SYS_PIDS+=($MON)
# the last recorded pod change: worker-0 deleted
wait_log "$SYS_DIR/monitor.log" "00000000a000-deleted: deleted" 30
wait_log "$SYS_DIR/monitor.log" "00000000c000-preempted: preempted" 10
wait_log "$SYS_DIR/monitor.log" "00000000b000-preempted: preempted" 10
kill -0 "$MON" 2>/dev/null && ok "the monitor kept running after the bad lines" || fail "the monitor died"

has() { grep -qF -- "$1" "$SYS_DIR/monitor.log" && ok "logged: $1" || fail "not logged: $1"; }
has 'pods watch line 2: not JSON ({"type":"MODIFIED","object":{"kind":"Pod" this is not JSON); line skipped, the watch goes on'
has 'pods watch line 3: pod dlrover/debug-shell: no label "elasticjob.dlrover/name": not a job pod; skipped'
has 'pods watch: connection lost after 5 line(s) (transfer closed with outstanding read data remaining), an unfinished line dropped; resuming from resourceVersion 104'
has 'pods watch line 1: 410 Gone (too old resource version: 104 (150)); relisting pods'
has 'pods watch: 410 Gone (too old resource version: 200 (250)); relisting pods'

# list at 100; watch from 100 drops; resumed from 104 (the last object before
# the drop, after a BOOKMARK at 103); ERROR 410 -> relist (200); watch from
# 200 gets HTTP 410 -> relist (300); watch from 300.
expect_eq "pods lists" "list list list" "$(requests api pods list)"
expect_eq "pods watches resume from" "100 104 200 300" "$(requests api pods watch)"
expect_eq "nodes watches resume from" "100" "$(requests api nodes watch)"
expect_eq "events watches resume from" "100" "$(requests api events watch)"
order=$(python3 -c 'import json,sys
print(" ".join(("w" if r["watch"] else "l") + r["params"].get("resourceVersion", "") for r in map(json.loads, open(sys.argv[1])) if r["resource"] == "pods"))' "$SYS_DIR/api-requests.jsonl")
expect_eq "pods requests in order" "l w100 w104 l w200 l w300" "$order"
expect_eq "pods label selector (the job label exists)" "elasticjob.dlrover/name" \
    "$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["params"]["labelSelector"])' "$SYS_DIR/api-requests.jsonl")"
# (The first pods watch, not the second request: the nodes and events lists
# may come between.)
expect_eq "watch params" "true 300" \
    "$(python3 -c 'import json,sys
r = [r for r in map(json.loads, open(sys.argv[1])) if r["resource"] == "pods" and r["watch"]][0]
print(r["params"]["allowWatchBookmarks"], r["params"]["timeoutSeconds"])' "$SYS_DIR/api-requests.jsonl")"

kill -TERM "$MON"
rc=0
wait "$MON" || rc=$?
expect_eq "exit status after SIGTERM" 0 "$rc"
has "stopped: "

kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.k8s-events -e -q -f '%R%s' | python3 "$K8S/node_events.py" \
    >"$SYS_DIR/events.txt"
W0=0b1c2d3e-0000-4000-8000-00000000a000
W1=0b1c2d3e-0000-4000-8000-00000000a001
PS0=0b1c2d3e-0000-4000-8000-00000000b000
C0=0b1c2d3e-0000-4000-8000-00000000c000
cat >"$SYS_DIR/expected.txt" <<EOF
$W0-phase-Running pod_phase mnist-edljob-worker-0 worker $JOB node-1 Running
$PS0-phase-Pending pod_phase mnist-edljob-ps-0 ps $JOB - Pending
$W1-phase-Running pod_phase mnist-edljob-worker-1 worker $JOB node-2 Running
$C0-phase-Running pod_phase mnist-edljob-master-0 chief $JOB node-3 Running
$PS0-phase-Running pod_phase mnist-edljob-ps-0 ps $JOB node-2 Running
$W0-oom-2596308127fe2e57 oom_killed mnist-edljob-worker-0 worker $JOB node-1 Running
$W1-deleted deleted mnist-edljob-worker-1 worker $JOB node-2 Running
$PS0-evicted evicted mnist-edljob-ps-0 ps $JOB node-2 Failed
$PS0-phase-Failed pod_phase mnist-edljob-ps-0 ps $JOB node-2 Failed
$W0-deleted deleted mnist-edljob-worker-0 worker $JOB node-1 Running
$C0-notready-dd7aca895802f9a5 node_not_ready mnist-edljob-master-0 chief $JOB node-3 NotReady
$C0-preempted preempted mnist-edljob-master-0 chief $JOB node-3 Running
$PS0-preempted preempted mnist-edljob-ps-0 ps $JOB node-2 Running
EOF
# pods, nodes and Events are watched concurrently: compare as sets
if diff -u <(sort "$SYS_DIR/expected.txt") <(sort "$SYS_DIR/events.txt"); then
    ok "the 13 node events, each once: kinds, pods, job uid, nodes, phases"
else
    fail "node events differ (expected -, produced +)"
fi
expect_eq "keys (the job uid)" "$JOB" \
    "$(kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.k8s-events -e -q -f '%k\n' | sort -u | xargs)"
# one pod's events keep their order: worker-0 ran, was OOM-killed, was deleted
expect_eq "worker-0's events in order" "pod_phase oom_killed deleted" \
    "$(awk -v p=mnist-edljob-worker-0 '$3 == p {print $2}' "$SYS_DIR/events.txt" | xargs)"

# ---- a kubeconfig naming a CA file that is not there ---------------------------
start_api api2
mkdir -p "$SYS_DIR/kube2"
kubeconfig "$SYS_DIR/kube2/config" "$PORT" ca.crt
mport=$(dlb_free_port)
url=http://127.0.0.1:$mport
"$DLBRAIN" k8s-monitor -k "$SYS_DIR/kube2/config" -e other -X k8s.backoff.ms=50 \
    -X k8s.backoff.max.ms=200 -X metrics.port="$mport" 2>"$SYS_DIR/monitor2.log" &
MON=$!
SYS_PIDS+=($MON)
wait_log "$SYS_DIR/monitor2.log" "pods list: certificate-authority $SYS_DIR/kube2/ca.crt: cannot read: No such file or directory; retrying in" 10
sleep 0.5
kill -0 "$MON" 2>/dev/null && ok "the monitor keeps retrying without its CA file" || fail "the monitor died"
[ ! -s "$SYS_DIR/api2-requests.jsonl" ] && ok "no request without the CA" || fail "requests made without the CA"
# Nothing to deliver, yet ready: /readyz waits for Kafka to have answered
# once (503 "no dependency has answered yet" before), and the monitor asks
# the broker rather than wait for a delivery that a quiet cluster never makes.
wait_status /readyz 200 15
curl -s "$url/readyz" | grep -q "kafka up" && ok "/readyz 200 (kafka up) with nothing delivered" ||
    fail "/readyz does not say kafka up: $(curl -s "$url/readyz")"
# an http:// server: curl ignores the CA; the point is that the file now exists
cp "$K8S/script.json" "$SYS_DIR/kube2/ca.crt"
wait_log "$SYS_DIR/monitor2.log" "pods listed at resourceVersion 100; watching" 10
ok "connected once the CA file appeared"
kill -TERM "$MON"
rc=0
wait "$MON" || rc=$?
expect_eq "exit status after SIGTERM" 0 "$rc"
grep -qF monitor-token-0 "$SYS_DIR/monitor.log" "$SYS_DIR/monitor2.log" && fail "the token was logged" || ok "the token is never logged"
echo "15-k8s-monitor: all checks passed"
