#!/usr/bin/env bash
# Outages on the real broker: PostgreSQL stopped for 12 s, Redis stopped for
# 12 s, the Kafka broker restarted, all while events arrive. The optimizers
# must pause or degrade, say so in their logs, recover by themselves, and the
# verifier must find nothing lost or doubled.
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/chaos/lib.sh"
trap chaos_exit EXIT

chaos_setup
opt_start 1
opt_start 2
chaos_emit_paced 12 3
ok "publishing $CHAOS_EVENTS events of $CHAOS_JOBS jobs in 12 parts, 3 s apart"
sleep 3

chaos_progress "PostgreSQL down"
"$SYS_TOP/scripts/pg" stop --dir "$SYS_DIR/pg" --keep >/dev/null
sleep 12
"$SYS_TOP/scripts/pg" start --dir "$SYS_DIR/pg" >/dev/null
chaos_progress "PostgreSQL back"
sleep 3

chaos_progress "Redis down"
"$SYS_TOP/scripts/redis" stop --dir "$SYS_DIR/redis" --keep >/dev/null
sleep 12
"$SYS_TOP/scripts/redis" start --dir "$SYS_DIR/redis" --port "$DLBRAIN_REDIS_PORT" >/dev/null
chaos_progress "Redis back"
sleep 3

chaos_progress "Kafka broker restarting"
"$SYS_TOP/scripts/kafka" stop --dir "$SYS_DIR/kafka" --keep >/dev/null
sleep 3
"$SYS_TOP/scripts/kafka" start --dir "$SYS_DIR/kafka" >/dev/null
chaos_progress "Kafka broker back"

chaos_wait_stored 600 "the outages"
ok "all events processed after the outages"
logs=$(cat "$SYS_DIR"/opt-*.log)
for what in "PostgreSQL paused the optimizers:rewinding and retrying" \
    "Redis down was served from PostgreSQL:serving job state from PostgreSQL until Redis is back"; do
    grep -qF "${what#*:}" <<<"$logs" && ok "${what%%:*} (logged)" || fail "no log line for: ${what%%:*}"
done
chaos_verify outages 0
echo "31-outages: all checks passed"
