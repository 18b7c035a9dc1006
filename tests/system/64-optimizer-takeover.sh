#!/usr/bin/env bash
# An optimizer killed for good (kill -9, never restarted: a node lost), with
# plan requests arriving on every partition through the gateway: the group
# must hand its partitions to the other optimizer and every partition must be
# answered again within 10 s of the kill, exactly once. The optimizers run as
# deploy/k8s/optimizer.yaml runs them: dynamic members of <env>.optimizer with
# dlbrain's defaults, no -X of their own.
#  - per partition, the call in flight at the kill and the first call started
#    after it get their plans within 10 s of the kill, and no call started
#    after it waits longer or goes without a plan;
#  - every plan request on the topic has exactly one plan on <env>.plans
#    (read_committed), none twice.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
GWDIR=$SYS_TOP/tests/system/gateway
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"
"$PY" -c 'import grpc, confluent_kafka, dlbrain_client; from dlrover.proto import brain_pb2' 2>/dev/null ||
    fail "the venv lacks grpcio / confluent-kafka / dlrover / dlbrain_client (scripts/setup installs them)"
PARTS=6
GOAL_S=10
S=$(sys_schema)

sys_start_pg
sys_start_redis
sys_start_real_kafka $PARTS
for n in 1 2; do
    "$DLBRAIN" optimizer >/dev/null 2>"$SYS_DIR/optimizer$n.log" &
    SYS_PIDS+=($!)
done
OPT1=${SYS_PIDS[-2]}
for n in 1 2; do
    for _ in $(seq 1 300); do grep -q "kafka: assigned [1-9]" "$SYS_DIR/optimizer$n.log" && break; sleep 0.1; done
done
"$DLBRAIN" gateway -a 127.0.0.1:0 -X metrics.port=0 -X gateway.optimize.timeout.ms=60000 \
    >/dev/null 2>"$SYS_DIR/gateway.log" &
SYS_PIDS+=($!)
sys_log_port gateway 's/.*serving brain.Brain on .* (port \([0-9]*\)).*/\1/p' ||
    fail "the gateway did not start: $(tail -n 3 "$SYS_DIR/gateway.log")"
GW=127.0.0.1:$port
# Both optimizers in the group, each with its share: the last rebalance each
# logged gave it partitions.
last_rebalance() { grep -E "kafka: (assigned|[0-9]+ partition\(s\) revoked)" "$SYS_DIR/optimizer$1.log" | tail -n 1; }
shared=0
for _ in $(seq 1 300); do
    if last_rebalance 1 | grep -q "assigned [1-9]" && last_rebalance 2 | grep -q "assigned [1-9]"; then
        shared=1
        break
    fi
    sleep 0.1
done
[ "$shared" = 1 ] || fail "the two optimizers did not share the partitions: $(last_rebalance 1); $(last_rebalance 2)"
ok "two optimizers share the $PARTS partitions; gateway at $GW (gateway.optimize.timeout.ms 60 s: a call waits for the takeover)"

"$PY" "$GWDIR/takeover.py" calls "$GW" $PARTS "$SYS_DIR/kill" "$SYS_DIR/takeover.json" 40 \
    >"$SYS_DIR/takeover.out" 2>"$SYS_DIR/takeover.log" &
DRIVER=$!
for _ in $(seq 1 600); do grep -q '^steady' "$SYS_DIR/takeover.out" && break; sleep 0.1; done
grep -q '^steady' "$SYS_DIR/takeover.out" || fail "the calls never got plans on every partition: $(tail -n 3 "$SYS_DIR/takeover.log")"
ok "plans answered on every partition"
sleep 2

# kill -9 optimizer 1, for good (cleanup must not wait for it).
date +%s%3N >"$SYS_DIR/kill"
kill -KILL "$OPT1"
wait "$OPT1" 2>/dev/null || true
for i in "${!SYS_PIDS[@]}"; do [ "${SYS_PIDS[$i]}" = "$OPT1" ] && unset "SYS_PIDS[$i]"; done
ok "optimizer 1 killed (kill -9)"
wait "$DRIVER" || fail "the calls failed: $(tail -n 3 "$SYS_DIR/takeover.log")"

"$PY" - "$SYS_DIR/takeover.json" $GOAL_S <<'EOF' || fail "a partition was not answered again within $GOAL_S s of the kill"
import json, sys
t = json.load(open(sys.argv[1]))
goal = float(sys.argv[2])
bad = []
def s(x, none):
    return "%.3f s after the kill" % x if isinstance(x, float) else none if x is None else x
for p, r in sorted(t["partitions"].items(), key=lambda x: int(x[0])):
    print("  partition %s: call in flight at the kill answered %s; first call after it answered "
          "%s; longest call after it %.3f s; %d calls after it, %d without a plan %s"
          % (p, s(r["in_flight_answered_s"], "(none in flight)"), s(r["first_plan_s"], "never"),
             r["longest_s"],
             r["calls_after_kill"], r["failed_after_kill"], r["reasons"] or ""))
    fl = r["in_flight_answered_s"]
    if r["first_plan_s"] is None or r["first_plan_s"] > goal or r["longest_s"] > goal \
            or r["failed_after_kill"] or fl == "never" or (fl is not None and fl > goal):
        bad.append(p)
worst = max(float("inf") if r["first_plan_s"] is None else r["first_plan_s"]
            for r in t["partitions"].values())
print("takeover: the last partition answered again %s (goal %.0f s)"
      % (s(worst, "") if worst < float("inf") else "never", goal))
sys.exit(1 if bad else 0)
EOF
ok "every partition answered again within $GOAL_S s of the kill"

# Exactly once: every plan request produced has one plan, none has two.
reqs=$(kcat -C -b "$DLBRAIN_BROKERS" -t "$S.plan-requests" -e -q -f '%o\n' | wc -l)
out=''
for _ in $(seq 1 60); do
    out=$("$PY" "$GWDIR/takeover.py" plans "$DLBRAIN_BROKERS" "$S.plans" 2>"$SYS_DIR/plans.log") ||
        fail "reading $S.plans: $(tail -n 3 "$SYS_DIR/plans.log")"
    [ "$out" = "plans $reqs distinct $reqs" ] && break
    sleep 1
done
expect_eq "plans on $S.plans (read_committed) for $reqs plan requests" "plans $reqs distinct $reqs" "$out"
expect_eq "plans stored" "$reqs" "$(sys_count plans)"
echo "64-optimizer-takeover: all checks passed"
