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
        # Bounded: a process that ignores SIGTERM fails the test naming it,
        # instead of holding the test until ctest's timeout says nothing.
        for _ in $(seq 1 $((${DLB_TEST_STOP_S:-60} * 10))); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "FAIL - background process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)) still running ${DLB_TEST_STOP_S:-60} s after SIGTERM: killed"
            # Where it is stuck, so that one failure is enough to fix it.
            if command -v gdb >/dev/null 2>&1; then
                echo "---- its threads' stacks"
                timeout 60 gdb -p "$pid" -batch -ex 'thread apply all bt' 2>/dev/null |
                    grep -E '^(Thread|#)' | head -n 200 || true
            fi
            kill -KILL "$pid" 2>/dev/null || true
            rc=1
        fi
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
    sys_stop_real_kafka "$rc"
    "$SYS_TOP/scripts/redis" stop --dir "$SYS_DIR/redis" >/dev/null 2>&1 || true
    "$SYS_TOP/scripts/pg" stop --dir "$SYS_DIR/pg" >/dev/null 2>&1 || true
    if [ "$rc" -ne 0 ] || [ "$SYS_FAILED" -ne 0 ]; then
        for f in "$SYS_DIR"/*.log; do
            [ -f "$f" ] || continue
            echo "---- tail of $(basename "$f")"
            tail -n 40 "$f"
        done
    fi
    if [ "${DLB_TEST_KEEP:-0}" = 1 ]; then
        echo "kept $SYS_DIR (DLB_TEST_KEEP=1)"
    else
        rm -rf "$SYS_DIR"
    fi
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
# sys_start_optimizer [NAME [OPTION...]]: one optimizer process logging to
# NAME.log; the options (e.g. -X message.max.bytes=4096) come last and win.
sys_start_optimizer() {
    local name=${1:-optimizer}
    [ $# -gt 0 ] && shift
    "$DLBRAIN" optimizer -X consumer.poll.ms=100 "$@" >/dev/null 2>"$SYS_DIR/$name.log" &
    SYS_PIDS+=($!)
}
# sys_start_all [PARTITIONS [OPTIMIZER OPTION...]]
sys_start_all() {
    local partitions=${1:-1}
    [ $# -gt 0 ] && shift
    sys_start_pg
    sys_start_redis
    sys_start_kafka "$partitions"
    sys_start_optimizer optimizer "$@"
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

# ---- hand-made Avro, for bytes `dlbrain emit` refuses to produce ------------
# The Avro 1.11 binary encoding, written to stdout (compose them in a { } group
# redirected to a file: the bytes include NULs, which shell variables cannot hold).
# av_long N: an int or long, zigzag varint.
av_long() {
    local z=$((($1 << 1) ^ ($1 >> 63))) fmt=''
    while ((z & ~0x7f)); do
        fmt+=$(printf '\\x%02x' $(((z & 0x7f) | 0x80)))
        z=$(((z >> 7) & 0x01ffffffffffffff)) # logical shift: z may look negative
    done
    fmt+=$(printf '\\x%02x' "$z")
    printf "$fmt"
}
# av_str S: a string (length, then the bytes; ASCII only).
av_str() {
    av_long "${#1}"
    printf '%s' "$1"
}
# av_double HEX: a double given as its IEEE-754 bits in 16 hex digits, most
# significant first (3ff0000000000000 is 1.0, 7ff8000000000000 a quiet NaN);
# Avro writes them little-endian.
av_double() {
    local fmt='' i
    for i in 14 12 10 8 6 4 2 0; do fmt+="\\x${1:$i:2}"; done
    printf "$fmt"
}
# av_frame ID: the Confluent header, magic 0 and the 4-byte big-endian schema id.
av_frame() {
    printf "$(printf '\\x00\\x%02x\\x%02x\\x%02x\\x%02x' $((($1 >> 24) & 255)) $((($1 >> 16) & 255)) \
        $((($1 >> 8) & 255)) $(($1 & 255)))"
}

# sys_dlq_read N TIMEOUT_S: wait until <env>.dlq holds N messages, then write
# them as kcat JSON envelopes (headers as a [name, value, ...] array) to
# $SYS_DIR/dlq.json and "key|value size" lines to $SYS_DIR/dlq.sizes.
sys_dlq_read() {
    local n=0 deadline=$((SECONDS + ${2:-30}))
    while [ "$SECONDS" -lt "$deadline" ]; do
        kcat -C -b "$DLBRAIN_BROKERS" -t "$(sys_schema).dlq" -e -q -J >"$SYS_DIR/dlq.json" 2>/dev/null || true
        n=$(wc -l <"$SYS_DIR/dlq.json")
        [ "$n" -ge "$1" ] && break
        sleep 0.2
    done
    [ "$n" -eq "$1" ] || fail "the DLQ holds $n messages, expected $1"
    kcat -C -b "$DLBRAIN_BROKERS" -t "$(sys_schema).dlq" -e -q -f '%k|%S\n' >"$SYS_DIR/dlq.sizes"
}

# ---- a real Apache Kafka broker (scripts/kafka) ---------------------------------
# sys_start_real_kafka PARTITIONS [PROXY_PORT]: a single-node KRaft broker in
# $SYS_DIR/kafka with the pipeline's topics of env ${DLBRAIN_ENV:-dlbrain},
# PARTITIONS each (default 12); exports DLBRAIN_BROKERS. With PROXY_PORT, a
# second listener advertised as 127.0.0.1:PROXY_PORT for a proxy there, which
# forwards to $DLB_KAFKA_PROXIED_TARGET (exported too; scripts/kafka --proxied).
# sys_cleanup stops it.
sys_start_real_kafka() {
    local parts=${1:-12} proxied=()
    [ -z "${2:-}" ] || proxied=(--proxied "$2")
    "$SYS_TOP/scripts/kafka" start --dir "$SYS_DIR/kafka" --partitions "$parts" "${proxied[@]}" \
        >/dev/null || fail "the Kafka broker did not start"
    "$SYS_TOP/scripts/kafka" topics --dir "$SYS_DIR/kafka" --env "$(sys_schema)" \
        --partitions "$parts" || fail "could not create the topics on the Kafka broker"
    # shellcheck disable=SC1091
    . "$SYS_DIR/kafka/env"
}
# sys_stop_real_kafka RC: called by sys_cleanup. On a failed test, show the
# broker's last warnings first (its dir, with server.log, is gone after stop).
sys_stop_real_kafka() {
    [ -d "$SYS_DIR/kafka" ] || return 0
    if [ "$1" -ne 0 ] || [ "$SYS_FAILED" -ne 0 ]; then
        echo "---- last warnings of the Kafka broker ($SYS_DIR/kafka/server.log)"
        grep -E '^\[[^]]*\] (WARN|ERROR|FATAL) ' "$SYS_DIR/kafka/server.log" 2>/dev/null | tail -n 20 || true
    fi
    "$SYS_TOP/scripts/kafka" stop --dir "$SYS_DIR/kafka" >/dev/null 2>&1 || true
}

# sys_log_port LOGNAME SED_EXPR: wait (10 s) until $SYS_DIR/LOGNAME.log has a
# line SED_EXPR (a sed s command printing the port with p) matches; sets port.
sys_log_port() {
    port=''
    for _ in $(seq 1 100); do
        # The log may not exist yet: the process has just been started.
        port=$(sed -n "$2" "$SYS_DIR/$1.log" 2>/dev/null | head -n 1) || true
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    return 1
}
# sys_metrics_url LOGNAME: the metrics URL a process logged at start
# (-X metrics.port=0 -X metrics.address=127.0.0.1), waited for; sets url
# and port.
sys_metrics_url() {
    sys_log_port "$1" 's|.*metrics: serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' ||
        fail "$1 did not log its metrics port"
    url=http://127.0.0.1:$port
}
# status PATH: the HTTP status code of $url PATH
status() { curl -s -o /dev/null -w '%{http_code}' "$url$1"; }
# wait_status PATH CODE TIMEOUT_S
wait_status() {
    local deadline=$((SECONDS + $3)) s
    while [ "$SECONDS" -lt "$deadline" ]; do
        s=$(status "$1")
        [ "$s" = "$2" ] && return 0
        sleep 0.2
    done
    fail "$1 answered $s, expected $2 within $3 s: $(curl -s "$url$1")"
}
