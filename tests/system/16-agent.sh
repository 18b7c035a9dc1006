#!/usr/bin/env bash
# The C agent library as a training job uses it: installed with cmake --install,
# the example compiled against it with pkg-config, run against the mock cluster
# and a running optimizer: a plan for every stage it asked about, nothing
# dropped or failed. The library exports only dlb_agent_* symbols. Then the
# unit tests of the agent against a real Kafka broker, for what the mock cluster
# lacks (an aborted transaction's plan is never delivered).
. "$(dirname "$0")/helpers.sh"

BUILD=${DLB_BUILD_DIR:-$SYS_TOP/build}
PREFIX=$SYS_DIR/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >"$SYS_DIR/install.log" 2>&1 || fail "cmake --install failed"
PC=$(find "$PREFIX" -name dlbrain-agent.pc | head -n 1)
[ -n "$PC" ] || fail "no dlbrain-agent.pc installed under $PREFIX"
LIBDIR=$(dirname "$(dirname "$PC")")
[ -f "$PREFIX/include/dlbrain_agent.h" ] || fail "dlbrain_agent.h not installed"
[ -L "$LIBDIR/libdlbrain-agent.so.1" ] || fail "libdlbrain-agent.so.1 not installed"
ok "cmake --install put the header, the library and dlbrain-agent.pc under the prefix"

# Only the public functions, all in version DLBRAIN_AGENT_1.
others=$(nm -D --defined-only "$LIBDIR/libdlbrain-agent.so.1" | awk '{print $3}' |
    grep -v -E '^dlb_agent_[a-z0-9_]+@@DLBRAIN_AGENT_1$|^DLBRAIN_AGENT_1$' || true)
[ -z "$others" ] || fail "the library exports more than dlb_agent_*: $(echo "$others" | head -n 5)"
# ... and every function the header declares.
grep -oE '\bdlb_agent_[a-z0-9_]+\(' "$PREFIX/include/dlbrain_agent.h" | tr -d '(' | sort -u >"$SYS_DIR/declared"
nm -D --defined-only "$LIBDIR/libdlbrain-agent.so.1" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' |
    sort -u >"$SYS_DIR/exported"
diff "$SYS_DIR/declared" "$SYS_DIR/exported" >/dev/null ||
    fail "declared and exported functions differ: $(diff "$SYS_DIR/declared" "$SYS_DIR/exported" | grep '^[<>]' | tr '\n' ' ')"
ok "the library exports the $(wc -l <"$SYS_DIR/declared") functions of dlbrain_agent.h and nothing else"

# A sanitized build's library needs the sanitizer runtimes loaded first: the
# program is then built with the same flags (the library's only difference).
SAN=()
if grep -q '^DLB_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
    SAN=(-fsanitize=address,undefined)
fi
PKG_CONFIG_PATH=$(dirname "$PC")
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "${SAN[@]}" -o "$SYS_DIR/agent_example" \
    "$SYS_TOP/producers/agent/examples/agent_example.c" $(pkg-config --cflags --libs dlbrain-agent) ||
    fail "the example does not build with pkg-config --cflags --libs dlbrain-agent"
ok "the example builds with pkg-config"

sys_start_all 3
LD_LIBRARY_PATH=$LIBDIR timeout 120 "$SYS_DIR/agent_example" job-agent-1 30 \
    >"$SYS_DIR/example.out" 2>"$SYS_DIR/example.log" || fail "the example failed"
for stage in job_stage_create job_stage_worker_initial job_stage_running; do
    grep -q "^plan plan-.* stage $stage " "$SYS_DIR/example.out" || fail "no plan for $stage"
done
ok "a plan for each of the 3 stages requested"
stats=$(grep '^stats:' "$SYS_DIR/example.out")
expect_eq "stats" "stats: reported 34 sent 34 dropped 0 failed 0 plans 3" "$stats"

# The unit tests of the agent against a real broker (env agenttest).
"$SYS_TOP/scripts/kafka" start --dir "$SYS_DIR/kafka" --partitions 4 >/dev/null ||
    fail "the Kafka broker did not start"
"$SYS_TOP/scripts/kafka" topics --dir "$SYS_DIR/kafka" --env agenttest --partitions 4 ||
    fail "could not create the topics on the Kafka broker"
# shellcheck disable=SC1091
. "$SYS_DIR/kafka/env"
DLB_TEST_BROKERS=$DLBRAIN_BROKERS "$BUILD/test_agent" >"$SYS_DIR/test_agent.log" 2>&1 ||
    fail "test_agent against a real broker: $(grep -E 'ERROR|FAILED' "$SYS_DIR/test_agent.log" | head -n 5)"
grep -q '^\[       OK \] test_aborted_plan' "$SYS_DIR/test_agent.log" || fail "test_aborted_plan did not run"
ok "against a real broker: an aborted transaction's plan is never delivered"
echo "16-agent: all checks passed"
