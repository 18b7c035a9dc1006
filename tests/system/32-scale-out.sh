#!/usr/bin/env bash
# Scaling out and in on the real broker: optimizer processes join and leave
# the consumer group while events arrive (1 -> 2 -> 3 -> 2 -> 1 members, every
# change a rebalance); every job stays served, exactly once, in per-job order.
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/chaos/lib.sh"
trap chaos_exit EXIT
export OPT_STATIC=0

chaos_setup
opt_start 1
chaos_emit_paced 12 3
ok "publishing $CHAOS_EVENTS events of $CHAOS_JOBS jobs in 12 parts, 3 s apart"
step() {
    sleep 6
    chaos_progress "$1"
}
step "adding member 2"; opt_start 2
step "adding member 3"; opt_start 3
step "removing member 1"; kill -TERM "${OPT_PID[1]}"; wait "${OPT_PID[1]}" || fail "member 1 did not stop cleanly"; unset "OPT_PID[1]"
step "removing member 2"; kill -TERM "${OPT_PID[2]}"; wait "${OPT_PID[2]}" || fail "member 2 did not stop cleanly"; unset "OPT_PID[2]"
chaos_wait_stored 600 "scaling"
rebalances=$(cat "$SYS_DIR"/opt-*.log | grep -c "kafka: assigned" || true)
[ "$rebalances" -ge 5 ] && ok "$rebalances assignments across the members" || fail "only $rebalances assignments"
served=$(grep -l "optimizer: plan plan-" "$SYS_DIR"/opt-*.log | wc -l)
[ "$served" -ge 2 ] && ok "$served member incarnations answered plan requests" || fail "only $served members answered"
chaos_verify scale-out 0
echo "32-scale-out: all checks passed"
