#!/usr/bin/env bash
# PostgreSQL store and Redis cache against real servers: starts its own
# throw-away PostgreSQL and Redis on free ports in a temp dir, runs the cmocka
# program itest_store against them, and stops both on exit, pass or fail.
set -euo pipefail
top=${DLB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DLB_PROG=02-store
. "$top/scripts/lib.sh"
build=${DLB_BUILD_DIR:-$top/build}
[ -x "$build/itest_store" ] || dlb_die "$build/itest_store not built (set DLB_BUILD_DIR)"

dir=$(mktemp -d /tmp/dlbrain-store.XXXXXX)
# The postgres user runs the server from inside this dir.
chmod 755 "$dir"
cleanup() {
    local rc=$?
    "$top/scripts/redis" stop --dir "$dir/redis" >/dev/null 2>&1 || true
    "$top/scripts/pg" stop --dir "$dir/pg" >/dev/null 2>&1 || true
    if [ "$rc" -ne 0 ]; then
        for f in "$dir"/pg/server.log "$dir"/redis/redis.log; do
            [ -f "$f" ] && { echo "---- tail of $f"; tail -n 30 "$f"; }
        done
    fi
    rm -rf "$dir"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$top/scripts/pg" start --dir "$dir/pg" >/dev/null
"$top/scripts/redis" start --dir "$dir/redis" >/dev/null
# shellcheck disable=SC1091
. "$dir/pg/env"
# shellcheck disable=SC1091
. "$dir/redis/env"
# The Redis outage test stops and restarts this server with these.
export DLB_REDIS_CTL=$top/scripts/redis
export DLB_REDIS_DIR DLBRAIN_PG_DSN DLBRAIN_REDIS_HOST DLBRAIN_REDIS_PORT

"$build/itest_store"
