#!/usr/bin/env bash
# The C agent library as a training job uses it: installed with cmake --install,
# the example compiled against it with pkg-config, run against the mock cluster
# and a running optimizer: a plan for every stage it asked about, nothing
# dropped or failed. The library exports only dlb_agent_* symbols and links no
# libmicrohttpd. The same run bound to `dlbrain registry` with
# DLBRAIN_SCHEMA_REGISTRY_URL; an environment the registry refuses stops the
# agent at open, naming subject and version. Then the unit tests of the agent
# against a real Kafka broker, for what the mock cluster lacks (an aborted
# transaction's plan is never delivered), with a registry that also serves
# plan v2 under id 1008 (tests/system/registry/alias_proxy.py): such plans are
# delivered, the id asked of the registry once.
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
# The registry client (libcurl) is in; the metrics server (libmicrohttpd) is not.
needed=$(readelf -d "$LIBDIR/libdlbrain-agent.so.1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | xargs)
case " $needed " in *libmicrohttpd*) fail "the library links libmicrohttpd: $needed" ;; esac
case " $needed " in *libcurl*) ;; *) fail "the library does not link libcurl: $needed" ;; esac
ok "the library needs $needed"

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

# schema.registry.url from the environment: dlbrain's registry endpoint holds
# every schema under the catalog's ids, so the agent binds by lookup.
"$DLBRAIN" registry -a 127.0.0.1:0 -X registry.envs=dlbrain,agenttest >/dev/null 2>"$SYS_DIR/registry.log" &
SYS_PIDS+=($!)
sys_log_port registry 's|.*Registry API (read-only) on http://127.0.0.1:\([0-9]*\)/.*|\1|p' ||
    fail "the registry did not start: $(tail -n 3 "$SYS_DIR/registry.log")"
SR=http://127.0.0.1:$port
DLBRAIN_SCHEMA_REGISTRY_URL=$SR LD_LIBRARY_PATH=$LIBDIR timeout 120 "$SYS_DIR/agent_example" job-agent-sr 30 \
    >"$SYS_DIR/example-sr.out" 2>"$SYS_DIR/example-sr.log" || fail "the example bound to $SR failed"
grep -q "schema registry $SR: dlbrain's schemas found or registered under dlbrain.<topic>-value" \
    "$SYS_DIR/example-sr.log" || fail "the agent did not bind: $(head -n 3 "$SYS_DIR/example-sr.log")"
for stage in job_stage_create job_stage_worker_initial job_stage_running; do
    grep -q "^plan plan-.* stage $stage " "$SYS_DIR/example-sr.out" || fail "bound: no plan for $stage"
done
expect_eq "stats of the bound agent" "stats: reported 34 sent 34 dropped 0 failed 0 plans 3" \
    "$(grep '^stats:' "$SYS_DIR/example-sr.out")"
# An environment whose subjects the registry will not take: no agent.
if DLBRAIN_ENV=nope DLBRAIN_SCHEMA_REGISTRY_URL=$SR LD_LIBRARY_PATH=$LIBDIR timeout 60 \
    "$SYS_DIR/agent_example" job-agent-nope 1 >/dev/null 2>"$SYS_DIR/example-nope.log"; then
    fail "the agent opened though the registry refused its subjects"
fi
grep -q "subject nope.job-events-value, version 1 (job_event.avsc): .*read-only.*; agent not started" \
    "$SYS_DIR/example-nope.log" || fail "the open error: $(cat "$SYS_DIR/example-nope.log")"
ok "bound to the registry by DLBRAIN_SCHEMA_REGISTRY_URL: the same plans; a refused subject is an open error"

# The unit tests of the agent against a real broker (env agenttest).
"$SYS_TOP/scripts/kafka" start --dir "$SYS_DIR/kafka" --partitions 4 >/dev/null ||
    fail "the Kafka broker did not start"
"$SYS_TOP/scripts/kafka" topics --dir "$SYS_DIR/kafka" --env agenttest --partitions 4 ||
    fail "could not create the topics on the Kafka broker"
# shellcheck disable=SC1091
. "$SYS_DIR/kafka/env"
# A registry that also holds plan v2 (catalog id 8) under id 1008, as one
# where another tool registered it: what the agent must resolve.
python3 "$SYS_TOP/tests/system/registry/alias_proxy.py" 0 "$SR" 1008 8 >"$SYS_DIR/proxy.out" 2>"$SYS_DIR/proxy.log" &
SYS_PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$SYS_DIR/proxy.out" ] && break; sleep 0.1; done
pport=$(head -n 1 "$SYS_DIR/proxy.out")
[ -n "$pport" ] || fail "the alias registry did not start: $(tail -n 3 "$SYS_DIR/proxy.log")"
DLB_TEST_BROKERS=$DLBRAIN_BROKERS DLB_TEST_SR_ALIAS_URL=http://127.0.0.1:$pport "$BUILD/test_agent" \
    >"$SYS_DIR/test_agent.log" 2>&1 ||
    fail "test_agent against a real broker: $(grep -E 'ERROR|FAILED' "$SYS_DIR/test_agent.log" | head -n 5)"
grep -q '^\[       OK \] test_aborted_plan' "$SYS_DIR/test_agent.log" || fail "test_aborted_plan did not run"
ok "against a real broker: an aborted transaction's plan is never delivered"
grep -q '^\[       OK \] test_registry_alias' "$SYS_DIR/test_agent.log" || fail "test_registry_alias did not run"
expect_eq "requests for schema id 1008" 1 "$(grep -c 'GET /schemas/ids/1008 ' "$SYS_DIR/proxy.log")"
ok "plans framed with an id only the registry knows are delivered, the id fetched once"
echo "16-agent: all checks passed"
