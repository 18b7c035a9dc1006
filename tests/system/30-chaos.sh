#!/usr/bin/env bash
# Chaos, in the shape of Kafka's transactions system test: 100k events of 2000
# jobs on 12 partitions, 3 optimizer processes, one killed with SIGKILL at a
# random moment at least 20 times during the run and restarted; then the
# plans topic (read_committed) must hold each expected plan exactly once, in
# per-job order, and PostgreSQL exactly the expected rows. Real broker.
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/chaos/lib.sh"
trap 'rc=$?; chaos_cleanup; (exit $rc); sys_cleanup' EXIT
MIN_KILLS=${DLB_CHAOS_KILLS:-20}

chaos_setup
for n in 1 2 3; do opt_start "$n"; done
start=$SECONDS
# Published over about 30 s, as a live cluster would, so the kills fall while
# work is still arriving.
chaos_emit_paced 10 3
ok "publishing $CHAOS_EVENTS events of $CHAOS_JOBS jobs in 10 parts, 3 s apart"
RANDOM=42
kills=0
deadline=$((SECONDS + ${DLB_CHAOS_TIMEOUT:-900}))
while ! chaos_stored; do
    [ "$SECONDS" -lt "$deadline" ] || fail "not done after ${DLB_CHAOS_TIMEOUT:-900}s ($(chaos_progress))"
    # at a random moment 0 .. 1.9 s from now
    sleep "$((RANDOM % 2)).$((RANDOM % 10))"
    chaos_stored && break
    victim=$((RANDOM % 3 + 1))
    opt_kill "$victim"
    kills=$((kills + 1))
    sleep "0.$((RANDOM % 10))"
    opt_start "$victim"
    [ $((kills % 5)) = 0 ] && chaos_progress "kills=$kills"
done
chaos_emitted || fail "the emitter still runs"
elapsed=$((SECONDS - start))
[ "$kills" -ge "$MIN_KILLS" ] || fail "only $kills kills happened before the work was done (want >= $MIN_KILLS)"
ok "$kills kill -9 of a random optimizer during the run; processing took ${elapsed}s"
chaos_verify chaos "$kills"
echo "30-chaos: all checks passed"
