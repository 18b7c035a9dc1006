#!/usr/bin/env bash
# dlbrain replay: three phases of events (A, B, C) go into the real
# environment src; B's time range is replayed into virtual environments from
# Kafka and from the PostgreSQL history. Per topic and job: count in = count
# out, the same records (key, value bytes) in the same order, each stamped
# when the replay produced it, nothing from A or C; a bad record (no event
# time: its record time stands for it) is copied unchanged; --speed paces the
# replay; replaying into the source, the real or an unregistered environment
# is refused. Event times against record times, retention and empty ranges:
# 56-replay-event-time.sh.
. "$(dirname "$0")/helpers.sh"

JOBS=${REPLAY_JOBS:-6}
PY=$(dlb_python)
sys_start_pg
sys_start_redis
# A real broker: `dlbrain env create` makes topics through the Admin API,
# which librdkafka 2.0.2's mock cluster does not answer.
sys_start_real_kafka 3

# env_create NAME real|virtual: registered, with its topics and schema.
env_create() { "$DLBRAIN" env create "$1" "--$2" -X topic.partitions=3 -q >/dev/null || fail "dlbrain env create $1 --$2"; }
rc=0
"$DLBRAIN" replay --from -1h --into nope -q 2>"$SYS_DIR/refuse0.log" || rc=$?
expect_eq "exit status of a replay into an unregistered environment" 2 "$rc"
grep -q 'refusing to replay into nope' "$SYS_DIR/refuse0.log" && ok "unregistered target refused" ||
    fail "$(cat "$SYS_DIR/refuse0.log")"
env_create src real
for e in dst dst2 dst3 dst4; do env_create "$e" virtual; done

now_ms() { date +%s%3N; }
# phase NAME ROUND: one event of each input type per job, event times from the
# clock now, ids "ev-NAME-ROUND-JOB-TYPE" (the ids sort in emit order).
phase() {
    local t j i=0
    t=$(now_ms)
    for j in $(seq 1 "$JOBS"); do
        printf '{"type":"job_event","event_id":"ev-%s%s-j%s-1je","event_time_ms":%s,"job_uid":"j%s","meta":{"name":"n%s","user":"u","group":"g","app":"a","cluster":"c","namespace":"ns","scenario":"s","framework":"tensorflow"},"state":"running"}\n' \
            "$1" "$2" "$j" $((t + i++)) "$j" "$j"
        printf '{"type":"runtime_sample","event_id":"ev-%s%s-j%s-2rt","event_time_ms":%s,"job_uid":"j%s","global_step":%s,"speed":1.5,"pods":[{"name":"j%s-worker-0","type":"worker","index":0,"cpu_used":1.0,"cpu_requested":4,"memory_used":1073741824,"memory_requested":2147483648}]}\n' \
            "$1" "$2" "$j" $((t + i++)) "$j" "$i" "$j"
        printf '{"type":"node_event","event_id":"ev-%s%s-j%s-3ne","event_time_ms":%s,"job_uid":"j%s","kind":"pod_phase","pod_name":"j%s-worker-0","pod_type":"worker","pod_index":0,"node_name":"node-1","phase":"Running","reason":"Started"}\n' \
            "$1" "$2" "$j" $((t + i++)) "$j" "$j"
        printf '{"type":"plan_request","event_id":"ev-%s%s-j%s-4pq","event_time_ms":%s,"job_uid":"j%s","stage":"job_stage_running"}\n' \
            "$1" "$2" "$j" $((t + i++)) "$j"
    done >"$SYS_DIR/$1$2.jsonl"
    "$DLBRAIN" emit --strict -q -e src "$SYS_DIR/$1$2.jsonl" || fail "emit of phase $1$2"
}

phase A 0
sleep 0.6
T1=$(now_ms)
sleep 0.1
phase B 0
sleep 0.7
phase B 1
# A record no consumer can decode, inside the range: copied as it is.
printf 'not avro \001\377' | kcat -P -b "$DLBRAIN_BROKERS" -t src.metrics -k j1 || fail "kcat produce"
sleep 0.7
phase B 2
sleep 0.7
phase B 3
sleep 0.1
T2=$(now_ms)
sleep 0.6
phase C 0
per_phase=$((JOBS * 4))
ok "published 6 phases of $per_phase events, B in [$T1, $T2)"

# dump ENV: every record of ENV's input topics as "topic key timestamp
# sha256(value) event-id" lines, each topic and key in its order (a key stays
# on one partition, and kcat keeps each partition's order).
cat >"$SYS_DIR/dump.py" <<'PY'
import hashlib, re, sys
topic, data = sys.argv[1], sys.stdin.buffer.read()
pos = 0
while pos < len(data):
    nl = data.index(b"\n", pos)
    key, ts, size = data[pos:nl].decode().split(" ")
    value = data[nl + 1:nl + 1 + int(size)]
    pos = nl + 1 + int(size) + 1
    m = re.search(rb"ev-[A-Za-z0-9-]+", value)
    print(topic, key, ts, hashlib.sha256(value).hexdigest()[:16], m.group(0).decode() if m else "-")
PY
dump() {
    local t
    for t in job-events metrics k8s-events plan-requests; do
        kcat -C -b "$DLBRAIN_BROKERS" -t "$1.$t" -e -q -f '%k %T %S\n%s\n' 2>/dev/null |
            "$PY" "$SYS_DIR/dump.py" "$t"
    done
}
# per_job FILE: group lines by topic and key keeping their order (sort -s),
# without the record timestamps: a copy is stamped when it was produced.
per_job() { cut -d' ' -f1,2,4,5 "$1" | sort -s -k1,2; }
# stamped_since FILE T: every record of FILE has a timestamp of T or later.
stamped_since() { awk -v t="$2" '$3 < t {bad++} END {exit bad > 0}' "$1"; }

dump src >"$SYS_DIR/src.all"
expect_eq "records in src" $((per_phase * 6 + 1)) "$(wc -l <"$SYS_DIR/src.all")"
# The range is of event times: phase B's events, and the bad record, whose
# record time is in the range.
awk -v a="$T1" -v b="$T2" '$5 ~ /^ev-B/ || ($5 == "-" && $3 >= a && $3 < b)' "$SYS_DIR/src.all" >"$SYS_DIR/src.range"
expect_eq "records of src in [T1, T2)" $((per_phase * 4 + 1)) "$(wc -l <"$SYS_DIR/src.range")"

# ---- Kafka, as fast as possible, the source from the registry (src is real) ----
t_rep=$(now_ms)
"$DLBRAIN" replay --from "$T1" --to "$T2" --into dst --progress >"$SYS_DIR/summary.txt" 2>"$SYS_DIR/replay.log" ||
    fail "replay into dst: $(cat "$SYS_DIR/replay.log")"
cat "$SYS_DIR/summary.txt"
grep -q 'ETA' "$SYS_DIR/replay.log" && ok "--progress draws the bar" || fail "no progress bar: $(cat "$SYS_DIR/replay.log")"
grep -q '^replay src -> dst from kafka' "$SYS_DIR/summary.txt" && ok "the real environment is the default source" ||
    fail "summary: $(cat "$SYS_DIR/summary.txt")"
grep -q "^jobs: $JOBS, in = out for every job: yes" "$SYS_DIR/summary.txt" && ok "summary: in = out for $JOBS jobs" ||
    fail "summary: $(cat "$SYS_DIR/summary.txt")"
expect_eq "summary total line" "total $((per_phase * 4 + 1)) $((per_phase * 4 + 1))" \
    "$(awk '$1 == "total" {print $1, $2, $3}' "$SYS_DIR/summary.txt")"
expect_eq "summary metrics line (with the bad record)" "metrics $((JOBS * 4 + 1)) $((JOBS * 4 + 1))" \
    "$(awk '$1 == "metrics" {print $1, $2, $3}' "$SYS_DIR/summary.txt")"

dump dst >"$SYS_DIR/dst.all"
expect_eq "records in dst" $((per_phase * 4 + 1)) "$(wc -l <"$SYS_DIR/dst.all")"
for p in A C; do
    expect_eq "records of phase $p in dst" 0 "$(grep -c " ev-$p" "$SYS_DIR/dst.all" || true)"
done
count_per_job() { awk '{n[$1" "$2]++} END {for (k in n) print k, n[k]}' "$1" | sort; }
if diff -u <(count_per_job "$SYS_DIR/src.range") <(count_per_job "$SYS_DIR/dst.all"); then
    ok "count in = count out per topic and job"
else
    fail "counts per topic and job differ"
fi
if diff -u <(per_job "$SYS_DIR/src.range") <(per_job "$SYS_DIR/dst.all"); then
    ok "per topic and job: same keys, value bytes, event ids, same order"
else
    fail "replayed records differ from the source's"
fi
stamped_since "$SYS_DIR/dst.all" "$t_rep" && ok "every copy stamped when the replay produced it" ||
    fail "a copy has a timestamp before the replay started ($t_rep): $(sort -n -k3 "$SYS_DIR/dst.all" | head -n 1)"
expect_eq "the bad record, byte for byte" "$(grep ' -$' "$SYS_DIR/src.range" | cut -d' ' -f1,2,4)" \
    "$(grep ' -$' "$SYS_DIR/dst.all" | cut -d' ' -f1,2,4)"

# ---- paced: N x real time ----------------------------------------------------
span=$(awk 'NR == 1 || $3 < lo {lo = $3} $3 > hi {hi = $3} END {print hi - lo}' "$SYS_DIR/src.range")
speed=4
t0=$(now_ms)
"$DLBRAIN" replay --from "$T1" --to "$T2" --source src --into dst3 --speed "$speed" -q 2>"$SYS_DIR/replay3.log" ||
    fail "paced replay: $(cat "$SYS_DIR/replay3.log")"
took=$(($(now_ms) - t0))
want=$((span / speed))
echo "# --speed $speed over a span of $span ms: took $took ms, expected about $want ms"
[ "$took" -ge $((want / 2)) ] && ok "--speed $speed took at least half of span/$speed" ||
    fail "--speed $speed took $took ms, expected about $want"
dump dst3 >"$SYS_DIR/dst3.all"
if diff -u <(per_job "$SYS_DIR/src.range") <(per_job "$SYS_DIR/dst3.all"); then
    ok "the paced replay copied the same records"
else
    fail "paced replay differs"
fi

# ---- from the PostgreSQL history ----------------------------------------------
# The optimizer of src stores every accepted input event with its raw frame.
DLBRAIN_ENV=src sys_start_optimizer optimizer-src
for table in job_events runtime_samples node_events plan_requests; do
    DLBRAIN_ENV=src sys_wait_count "$table" $((JOBS * 6)) 60
done
ok "the history of src holds every event"
t_rep2=$(now_ms)
"$DLBRAIN" replay --from "$T1" --to "$T2" --source src --into dst2 --from-pg >"$SYS_DIR/summary2.txt" 2>"$SYS_DIR/replay2.log" ||
    fail "replay from PostgreSQL: $(cat "$SYS_DIR/replay2.log")"
grep -q "^replay src -> dst2 from postgresql" "$SYS_DIR/summary2.txt" && ok "summary names the history" ||
    fail "$(cat "$SYS_DIR/summary2.txt")"
dump dst2 >"$SYS_DIR/dst2.all"
# The history keeps decodable events only.
ids() { awk '$5 != "-" {print $1, $2, $4, $5}' "$1" | sort -s -k1,2; }
expect_eq "records in dst2" $((per_phase * 4)) "$(wc -l <"$SYS_DIR/dst2.all")"
if diff -u <(ids "$SYS_DIR/dst.all") <(ids "$SYS_DIR/dst2.all"); then
    ok "from PostgreSQL: the same per-job sequences of events (ids and value bytes)"
else
    fail "the history replay differs from the topic replay"
fi
stamped_since "$SYS_DIR/dst2.all" "$t_rep2" && ok "from PostgreSQL: every copy stamped when produced" ||
    fail "a copy from PostgreSQL has a timestamp before the replay started ($t_rep2): $(sort -n -k3 "$SYS_DIR/dst2.all" | head -n 1)"
# The same range a second time adds the same records again: a replay copies,
# the target's consumers drop what they already have by event id.
"$DLBRAIN" replay --from "$T1" --to "$T2" --source src --into dst4 --from-pg --topics metrics,job-events -q ||
    fail "replay of two topics"
dump dst4 >"$SYS_DIR/dst4.all"
expect_eq "--topics: only those topics" "job-events metrics" "$(cut -d' ' -f1 "$SYS_DIR/dst4.all" | sort -u | xargs)"

# ---- refusals -------------------------------------------------------------------
refused() { # WHAT PATTERN ARGS...
    local what=$1 pattern=$2 rc=0
    shift 2
    "$DLBRAIN" replay --from "$T1" --to "$T2" -q "$@" 2>"$SYS_DIR/refused.log" || rc=$?
    [ "$rc" -eq 2 ] && grep -q "$pattern" "$SYS_DIR/refused.log" && ok "refused: $what" ||
        fail "$what: exit $rc, $(cat "$SYS_DIR/refused.log")"
}
refused "into the source" "refusing to replay src into itself" --into src
refused "into the real environment" "it is the real environment" --source dst --into src
refused "into an unregistered environment" "refusing to replay into nope" --into nope
refused "an empty range" "empty time range" --from "$T2" --to "$T1" --into dst
refused "a bad time" "RFC 3339" --from yesterday --into dst
refused "config-requests from the history" "PostgreSQL does not keep it" --into dst --from-pg --topics config-requests
refused "an output topic" "not an event topic" --into dst --topics plans
expect_eq "topics of the refused target" "" "$(kcat -L -b "$DLBRAIN_BROKERS" 2>/dev/null | grep -o 'topic "nope[.][^"]*"' || true)"
echo "41-replay: all checks passed"
