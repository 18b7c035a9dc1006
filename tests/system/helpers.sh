# Shared by the numbered system tests (kcat style): source it, then call
# sys_start_all to get a private PostgreSQL, Redis, mock Kafka and optimizer.
# Everything lives in one temp dir and is stopped on exit, pass or fail.
set -euo pipefail
SYS_TOP=${DLB_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
DLBRAIN=${DLBRAIN:-$SYS_TOP/build/dlbrain}
DLB_PROG=$(basename "$0" .sh)
. "$SYS_TOP/scripts/lib.sh"

SYS_DIR=$(mktemp -d /tmp/dlbrain-test.XXXXXX)
# The postgres user runs the server from inside this dir.
chmod 755 "$SYS_DIR"
SYS_PIDS=()
SYS_FAILED=0

sys_cleanup() {
    local rc=$? prc f
    for pid in "${SYS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    # Background servers must stop cleanly on SIGTERM: a crash, a leak report
    # (LeakSanitizer exits non-zero) or any sanitizer finding fails the test.
    for pid in "${SYS_PIDS[@]}"; do
        prc=0
        wait "$pid" 2>/dev/null || prc=$?
        if [ "$prc" -ne 0 ] && [ "$rc" -eq 0 ]; then
            echo "FAIL - background process $pid exited with status $prc"
            rc=1
        fi
    done
    for f in "$SYS_DIR"/*.log; do
        [ -f "$f" ] || continue
        if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f"; then
            echo "FAIL - sanitizer report in $(basename "$f")"
            rc=1
        fi
    done
    "$SYS_TOP/scripts/redis" stop --dir "$SYS_DIR/redis" >/dev/null 2>&1 || true
    "$SYS_TOP/scripts/pg" stop --dir "$SYS_DIR/pg" >/dev/null 2>&1 || true
    if [ "$rc" -ne 0 ] || [ "$SYS_FAILED" -ne 0 ]; then
        for f in "$SYS_DIR"/*.log; do
            [ -f "$f" ] || continue
            echo "---- tail of $(basename "$f")"
            tail -n 40 "$f"
        done
    fi
    rm -rf "$SYS_DIR"
    exit "$rc"
}
trap sys_cleanup EXIT
trap 'exit 130' INT TERM

ok() { echo "ok - $*"; }
fail() {
    echo "FAIL - $*"
    SYS_FAILED=1
    exit 1
}
# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
    if [ "$2" = "$3" ]; then ok "$1 = $3"; else fail "$1: expected [$2], got [$3]"; fi
}

sys_start_pg() {
    "$SYS_TOP/scripts/pg" start --dir "$SYS_DIR/pg" >/dev/null
    # shellcheck disable=SC1091
    . "$SYS_DIR/pg/env"
}
sys_start_redis() {
    "$SYS_TOP/scripts/redis" start --dir "$SYS_DIR/redis" >/dev/null
    # shellcheck disable=SC1091
    . "$SYS_DIR/redis/env"
}
# sys_start_kafka PARTITIONS
sys_start_kafka() {
    "$DLBRAIN" mock-kafka -n 1 -p "${1:-1}" -w "$SYS_DIR/bootstrap" >/dev/null 2>"$SYS_DIR/mock-kafka.log" &
    SYS_PIDS+=($!)
    for _ in $(seq 1 100); do [ -s "$SYS_DIR/bootstrap" ] && break; sleep 0.1; done
    [ -s "$SYS_DIR/bootstrap" ] || fail "mock-kafka did not start"
    export DLBRAIN_BROKERS
    DLBRAIN_BROKERS=$(cat "$SYS_DIR/bootstrap")
}
# sys_start_optimizer [NAME]: one optimizer process logging to NAME.log
sys_start_optimizer() {
    "$DLBRAIN" optimizer -X consumer.poll.ms=100 >/dev/null 2>"$SYS_DIR/${1:-optimizer}.log" &
    SYS_PIDS+=($!)
}
sys_start_all() {
    sys_start_pg
    sys_start_redis
    sys_start_kafka "${1:-1}"
    sys_start_optimizer
}
# sys_sql QUERY: one value
sys_sql() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }
sys_schema() { echo "${DLBRAIN_ENV:-dlbrain}"; }
sys_count() { sys_sql "SELECT count(*) FROM $(sys_schema).$1"; }
# sys_wait_count TABLE N TIMEOUT_S
sys_wait_count() {
    local n deadline=$((SECONDS + ${3:-60}))
    while [ "$SECONDS" -lt "$deadline" ]; do
        n=$(sys_count "$1" 2>/dev/null || echo -1)
        [ "$n" -ge "$2" ] && return 0
        sleep 0.2
    done
    fail "table $1 has ${n:-?} rows, expected $2 within ${3:-60}s"
}
