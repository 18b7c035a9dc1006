#!/usr/bin/env bash
# dlbrain replay by event time, against a real broker: events of 2024 that
# were recorded now (a simulation of the past, late reports) go into the real
# environment src, with events an hour either side of the range and events
# whose time runs ahead of their record's.
#  - The same event-time range replayed from Kafka and from the PostgreSQL
#    history copies the same events, and nothing outside the range.
#  - Replayed records are stamped when produced (CreateTime = now), so the
#    broker's retention keeps them as long as new ones: on target topics with
#    retention.ms of a minute they outlive a probe record stamped 2024, which
#    the broker deletes; optimizers started only then still get every event,
#    with its 2024 event time.
#  - From Kafka, the read starts event.time.skew.s (or --max-ahead) before
#    --from by record time: records stamped earlier are not read at all; with
#    --max-late it stops that long after --to.
#  - A replay that copies nothing says so and exits 3, unless --allow-empty.
. "$(dirname "$0")/helpers.sh"

VENV=${DLB_VENV:-$SYS_TOP/.cache/venv}
PY=$VENV/bin/python
[ -x "$PY" ] || fail "no Python venv at $VENV: run scripts/setup"
JOBS=4
PARTS=2
sys_start_pg
sys_start_redis
sys_start_real_kafka "$PARTS"

env_create() { "$DLBRAIN" env create "$1" "--$2" -X topic.partitions=$PARTS -q >/dev/null || fail "dlbrain env create $1 --$2"; }
env_create src real
for e in dstk dstp dste; do env_create "$e" virtual; done
now_ms() { date +%s%3N; }

# kafka.py: small admin and read helpers on confluent-kafka.
cat >"$SYS_DIR/kafka.py" <<'PY'
import sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

boot, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
admin = AdminClient({"bootstrap.servers": boot})


def partitions(topic):
    return sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions)


if cmd == "stamped":  # TOPIC TS KEY VALUE: one record per partition, stamped TS
    p = Producer({"bootstrap.servers": boot})
    for part in partitions(args[0]):
        p.produce(args[0], key=args[2], value=args[3], partition=part, timestamp=int(args[1]))
    sys.exit(1 if p.flush(30) else 0)
elif cmd == "retention":  # MS TOPIC...: retention.ms of each topic
    res = [ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
        ConfigEntry("retention.ms", args[0], incremental_operation=AlterConfigOpType.SET)])
        for t in args[1:]]
    for f in admin.incremental_alter_configs(res).values():
        f.result()
elif cmd == "create":  # TOPIC RETENTION_MS
    f = admin.create_topics([NewTopic(args[0], 1, 1, config={"retention.ms": args[1]})])
    for x in f.values():
        x.result()
elif cmd == "start":  # TOPIC: the log start offset of partition 0
    c = Consumer({"bootstrap.servers": boot, "group.id": "probe"})
    print(c.get_watermark_offsets(TopicPartition(args[0], 0), timeout=10)[0])
    c.close()
elif cmd == "read":  # TOPIC...: "records, log start offsets, timestamp types, min ts, max ts"
    c = Consumer({"bootstrap.servers": boot, "group.id": "read", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    n = starts = 0
    lo, hi, types, want = None, None, set(), {}
    for t in args:
        for part in partitions(t):
            low, high = c.get_watermark_offsets(TopicPartition(t, part), timeout=10)
            starts += low
            if high > low:
                want[(t, part)] = high
    c.assign([TopicPartition(t, p, 0) for (t, p) in want])
    deadline = time.time() + 30
    while want and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        kind, ts = m.timestamp()
        types.add({0: "none", 1: "create", 2: "logappend"}[kind])
        lo = ts if lo is None else min(lo, ts)
        hi = ts if hi is None else max(hi, ts)
        n += 1
        if m.offset() + 1 >= want.get((m.topic(), m.partition()), 0):
            want.pop((m.topic(), m.partition()), None)
    c.close()
    if want:
        sys.exit(f"read: {sorted(want)} not read to their end in 30 s")
    print(n, starts, ",".join(sorted(types)) or "-", lo if lo is not None else "-",
          hi if hi is not None else "-")
PY
kpy() { "$PY" "$SYS_DIR/kafka.py" "$DLBRAIN_BROKERS" "$@"; }

# Stamped three days ago and first on every partition of src.metrics (not
# events: their record time stands for their event time), before anything
# else, so a read that starts a day before --from by record time skips them.
NOW0=$(now_ms)
kpy stamped src.metrics $((NOW0 - 3 * 86400000)) stale 'stale record' || fail "produce the stale records"

OLD=1704067200000 # 2024-01-01T00:00:00Z
A=$OLD
B=$((OLD + 3600000))
AHEAD=$((NOW0 + 600000)) # ten minutes ahead of the clock: within event.time.skew.s
meta='"meta":{"name":"n","user":"u","group":"g","app":"a","cluster":"c","namespace":"ns","scenario":"s","framework":"tensorflow"}'
sample() { # ID TIME JOB
    printf '{"type":"runtime_sample","event_id":"%s","event_time_ms":%s,"job_uid":"%s","global_step":1,"speed":1.5,"pods":[{"name":"%s-worker-0","type":"worker","index":0,"cpu_used":1.0,"cpu_requested":4,"memory_used":1073741824,"memory_requested":2147483648}]}\n' "$1" "$2" "$3" "$3"
}
for j in $(seq 1 "$JOBS"); do
    t=$((A + j * 1000))
    printf '{"type":"job_event","event_id":"in-j%s-1","event_time_ms":%s,"job_uid":"j%s",%s,"state":"running"}\n' "$j" "$t" "$j" "$meta"
    sample "in-j$j-2" $((t + 100)) "j$j"
    sample "in-j$j-3" $((t + 200)) "j$j"
    printf '{"type":"node_event","event_id":"in-j%s-4","event_time_ms":%s,"job_uid":"j%s","kind":"pod_phase","pod_name":"j%s-worker-0","pod_type":"worker","pod_index":0,"node_name":"node-1","phase":"Running","reason":"Started"}\n' "$j" $((t + 300)) "$j" "$j"
    sample "before-j$j" $((A - 3600000 + j)) "j$j" # an hour before the range
    sample "after-j$j" $((B + j)) "j$j"            # at and after its end
    sample "ahead-j$j" $((AHEAD + j)) "j$j"
done >"$SYS_DIR/events.jsonl"
"$DLBRAIN" emit --strict -q -e src "$SYS_DIR/events.jsonl" || fail "emit"
IN=$((JOBS * 4))
ALL=$((JOBS * 7))
ok "src: $ALL events recorded now, $IN of them with event times in [2024-01-01T00:00Z, +1h)"

DLBRAIN_ENV=src sys_start_optimizer optimizer-src
DLBRAIN_ENV=src sys_wait_count runtime_samples $((JOBS * 5)) 60
DLBRAIN_ENV=src sys_wait_count node_events "$JOBS" 60
DLBRAIN_ENV=src sys_wait_count job_events "$JOBS" 60
ok "the history of src holds every event"

# A minute of retention on the targets' input topics.
inputs() { echo "$1.job-events $1.metrics $1.k8s-events $1.plan-requests"; }
# shellcheck disable=SC2046
kpy retention 60000 $(inputs dstk) $(inputs dstp) || fail "set retention.ms"

# total FILE: "in out skipped" of the summary's total line.
total() { awk '$1 == "total" {print $2, $3, $4}' "$1"; }

# ---- the same range from Kafka and from PostgreSQL ------------------------------------
T_REP=$(now_ms)
"$DLBRAIN" replay --from 2024-01-01T00:00:00Z --to 2024-01-01T01:00:00Z --source src --into dstk \
    >"$SYS_DIR/k.txt" 2>"$SYS_DIR/k.log" || fail "replay from Kafka: $(cat "$SYS_DIR/k.log")"
cat "$SYS_DIR/k.txt"
# Read: every record stamped from a day before --from on, so all of them.
expect_eq "from Kafka: in, out, skipped" "$IN $IN $((ALL + PARTS - IN))" "$(total "$SYS_DIR/k.txt")"
grep -q '^event times: 2024-01-01T00:00:01.000Z .. 2024-01-01T00:00:0' "$SYS_DIR/k.txt" &&
    ok "the summary gives the event times replayed" || fail "summary: $(cat "$SYS_DIR/k.txt")"
"$DLBRAIN" replay --from 2024-01-01T00:00:00Z --to 2024-01-01T01:00:00Z --source src --into dstp \
    --from-pg >"$SYS_DIR/p.txt" 2>"$SYS_DIR/p.log" || fail "replay from PostgreSQL: $(cat "$SYS_DIR/p.log")"
cat "$SYS_DIR/p.txt"
expect_eq "from PostgreSQL: in, out, skipped" "$IN $IN 0" "$(total "$SYS_DIR/p.txt")"

# ---- the broker's retention -----------------------------------------------------------
# A probe stamped 2024 in a topic with the same minute of retention: once the
# broker deleted it, it has applied retention to the targets' topics too.
kpy create probe 60000 || fail "create the probe topic"
kpy stamped probe "$OLD" probe 'stamped 2024' || fail "produce the probe"
deadline=$((SECONDS + 60))
until [ "$(kpy start probe)" -gt 0 ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the broker did not delete the probe stamped 2024 within 60 s"
    sleep 0.5
done
sleep 1
ok "the broker deleted a record stamped 2024 from a topic with a minute of retention"
T_END=$(now_ms)
for e in dstk dstp; do
    # shellcheck disable=SC2046
    read -r n starts types lo hi <<<"$(kpy read $(inputs "$e"))" || fail "read $e"
    expect_eq "$e: records kept, none deleted (log start offsets)" "$IN 0" "$n $starts"
    expect_eq "$e: timestamp type" create "$types"
    [ "$lo" -ge "$T_REP" ] && [ "$hi" -le "$T_END" ] &&
        ok "$e: every record stamped when the replay produced it ($lo..$hi within $T_REP..$T_END)" ||
        fail "$e: record timestamps $lo..$hi, the replay ran from $T_REP"
done

# Optimizers started only now get every event, with its event time.
# rows SCHEMA [WHERE]: "job/event id/event time" of every stored event.
rows() {
    sys_sql "SELECT string_agg(x, ' ' ORDER BY x) FROM (
        SELECT job_uid || '/' || event_id || '/' || event_time_ms AS x FROM $1.job_events ${2:-}
        UNION ALL SELECT job_uid || '/' || event_id || '/' || event_time_ms FROM $1.runtime_samples ${2:-}
        UNION ALL SELECT job_uid || '/' || event_id || '/' || event_time_ms FROM $1.node_events ${2:-}
        UNION ALL SELECT job_uid || '/' || event_id || '/' || event_time_ms FROM $1.plan_requests ${2:-}) u"
}
want=$(rows src "WHERE event_time_ms >= $A AND event_time_ms < $B")
for e in dstk dstp; do
    DLBRAIN_ENV=$e sys_start_optimizer "optimizer-$e"
done
for e in dstk dstp; do
    DLBRAIN_ENV=$e sys_wait_count runtime_samples $((JOBS * 2)) 60
    DLBRAIN_ENV=$e sys_wait_count node_events "$JOBS" 60
    DLBRAIN_ENV=$e sys_wait_count job_events "$JOBS" 60
    expect_eq "$e: the events of the range with their event times" "$want" "$(rows "$e")"
done

# ---- event time ahead of record time ------------------------------------------------
"$DLBRAIN" replay --from $((AHEAD - 300000)) --to $((AHEAD + 300000)) --source src --into dste \
    >"$SYS_DIR/a.txt" 2>"$SYS_DIR/a.log" || fail "replay of the events ahead: $(cat "$SYS_DIR/a.log")"
# The stale records, stamped more than event.time.skew.s (a day) before
# --from, are not read: not even skipped.
expect_eq "ahead of the record time: in, out, skipped" "$JOBS $JOBS $((ALL - JOBS))" "$(total "$SYS_DIR/a.txt")"

# ---- nothing in the range -------------------------------------------------------------
empty() { # WHAT WANT_RC PATTERN ARGS...
    local what=$1 want=$2 pattern=$3 rc=0
    shift 3
    "$DLBRAIN" replay --source src --into dste "$@" >"$SYS_DIR/e.txt" 2>"$SYS_DIR/e.log" || rc=$?
    [ "$rc" -eq "$want" ] && grep -q -- "$pattern" "$SYS_DIR/e.log" && ok "$what: exit $rc, $(grep -o -- "$pattern.*" "$SYS_DIR/e.log" | head -n 1)" ||
        fail "$what: exit $rc (expected $want), $(cat "$SYS_DIR/e.log")"
}
empty "an empty range from Kafka" 3 "nothing to replay" --from 2023-01-01T00:00:00Z --to 2023-01-02T00:00:00Z
grep -q "none of the $((ALL + PARTS)) records read from src's topics has an event time in" "$SYS_DIR/e.log" ||
    fail "the reason does not say what was read: $(cat "$SYS_DIR/e.log")"
empty "an empty range from PostgreSQL" 3 "nothing to replay" --from 2023-01-01T00:00:00Z --to 2023-01-02T00:00:00Z --from-pg
empty "records later than --max-late" 3 "(--max-late) were not read" --from 2024-01-01T00:00:00Z --to 2024-01-01T01:00:00Z --max-late 1h
empty "events further ahead than --max-ahead" 3 "(--max-ahead) were not read" --from $((AHEAD - 300000)) --to $((AHEAD + 300000)) --max-ahead 1m
rc=0
"$DLBRAIN" replay --source src --into dste --from 2023-01-01T00:00:00Z --to 2023-01-02T00:00:00Z \
    --allow-empty >"$SYS_DIR/e.txt" 2>"$SYS_DIR/e.log" || rc=$?
expect_eq "--allow-empty: exit status of an empty replay" 0 "$rc"
expect_eq "--allow-empty: summary" "0 0 $((ALL + PARTS))" "$(total "$SYS_DIR/e.txt")"
echo "56-replay-event-time: all checks passed"
