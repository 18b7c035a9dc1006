#!/usr/bin/env bash
# The history partitioned by event time (migration 012, store.partition.*,
# docs/operations.md "PostgreSQL history retention"), against the mock Kafka
# cluster and real PostgreSQL and Redis:
# - an optimizer's start creates every history table's partitions up to
#   store.partition.ahead spans ahead of now;
# - a record whose time no partition covers (a far past through the
#   pipeline, a far future written directly) lands in the default partition
#   and is kept; a later maintenance with more spans ahead moves a record it
#   now covers out of the default partition into its own;
# - a consumer with store.retention.days drops a partition wholly older than
#   the window while newer rows stay, and deletes the default partition's old
#   rows, keeping the far future;
# - a schema at version 11 with rows in every history table is upgraded with
#   every row kept byte for byte (each table's rows hashed before and after),
#   in a partition per day, the views answering as before; then `dlbrain store
#   prune` counts (--dry-run) and drops its old days' partitions, keeping the
#   newer rows.
. "$(dirname "$0")/helpers.sh"

DAY=86400000
TABLES="job_events runtime_samples node_events plan_requests plans oom_plans config_matches"
# in_schema SCHEMA QUERY: the query with the schema first on the search path,
# as a consumer runs it (the history_* functions use the current schema).
in_schema() { PGOPTIONS="-c search_path=$1" sys_sql "$2"; }
# covered SCHEMA TABLE TIME: the partition holding TIME, or "" if none does.
covered() { in_schema "$1" "SELECT name FROM history_partitions('$2') WHERE lo <= $3 AND hi > $3"; }
# where SCHEMA TABLE EVENT_ID: the partition (table) the row is in.
where() { sys_sql "SELECT tableoid::regclass FROM $1.$2 WHERE event_id = '$3'" | sed 's/^.*\.//'; }

sys_start_all 1
S=$(sys_schema)
now=$(date +%s%3N)
old=$((now - 20 * DAY)) # past a 7-day window
new=$((now - 3600000))  # an hour ago
past=978307200000       # 2001-01-01: no partition covers it
future=4102444800000    # 2100-01-01: nor this
meta='"meta":{"name":"ctr","user":"ana","group":"ads","app":"ctr","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tf"}'
pods='"pods":[{"name":"PFX-worker-0","type":"worker","index":0,"cpu_used":3.0,"cpu_requested":8,"memory_used":8000000000,"memory_requested":8589934592}]'
# events TAG TIME JOB: a job event and two runtime samples.
events() {
    echo "{\"type\":\"job_event\",\"event_id\":\"$3-$1-e\",\"event_time_ms\":$2,\"job_uid\":\"$3\",$meta,\"state\":\"running\"}"
    for i in 1 2; do
        echo "{\"type\":\"runtime_sample\",\"event_id\":\"$3-$1-r$i\",\"event_time_ms\":$(($2 + i * 1000)),\"job_uid\":\"$3\",\"global_step\":$((i * 50)),\"speed\":5.0,${pods//PFX/$3}}"
    done
}
emit() { "$DLBRAIN" emit --strict -q || fail "emit"; }

# ---- partitions ahead, made at start ---------------------------------------
ahead=$((now + 3 * DAY))
deadline=$((SECONDS + 60))
while [ -z "$(covered "$S" config_matches "$ahead")" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
for t in $TABLES; do
    [ -n "$(covered "$S" "$t" "$now")" ] || fail "$t: no partition holds now"
    [ -n "$(covered "$S" "$t" "$ahead")" ] || fail "$t: no partition 3 days ahead"
    [ -z "$(covered "$S" "$t" $((now + 5 * DAY)))" ] || fail "$t: a partition 5 days ahead (ahead is 3)"
done
ok "every history table has partitions from now to 3 days ahead, none further"
grep -q "retention: created 35 history partition(s) of 24 h, up to 3 ahead" "$SYS_DIR/optimizer.log" &&
    ok "the optimizer logged them" || fail "no partitions logged: $(grep retention "$SYS_DIR/optimizer.log")"

# An old day's partition, as an operator could make one (or an upgrade did).
for t in job_events runtime_samples; do
    expect_eq "$t: an old day's partition made" 1 \
        "$(in_schema "$S" "SELECT history_partitions_ensure('$t', $DAY, $old, $old + 1)")"
done
{ events a "$old" jo; events b "$new" jn; events c "$past" jpast; } | emit
sys_wait_count runtime_samples 6 60
sys_wait_count job_events 3 60
expect_eq "an old sample in its day's partition" "$(covered "$S" runtime_samples $((old + 1000)))" \
    "$(where "$S" runtime_samples jo-a-r1)"
expect_eq "a new sample in its day's partition" "$(covered "$S" runtime_samples $((new + 1000)))" \
    "$(where "$S" runtime_samples jn-b-r1)"
expect_eq "a sample of 2001 in the default partition" runtime_samples_default \
    "$(where "$S" runtime_samples jpast-c-r1)"
expect_eq "a job event of 2001 in the default partition" job_events_default \
    "$(where "$S" job_events jpast-c-e)"
# Written directly: 2100 is more than a day ahead, which validation refuses.
sys_sql "INSERT INTO $S.runtime_samples (event_id, job_uid, event_time_ms, global_step, speed, raw)
         VALUES ('jfut-r1', 'jfut', $future, 1, 1.0, '\\x00')" >/dev/null
expect_eq "a sample of 2100 in the default partition" runtime_samples_default \
    "$(where "$S" runtime_samples jfut-r1)"
soon=$((now + 5 * DAY))
sys_sql "INSERT INTO $S.job_events (event_id, job_uid, event_time_ms, raw)
         VALUES ('jsoon-e', 'jsoon', $soon, '\\x00')" >/dev/null
expect_eq "an event 5 days ahead in the default partition" job_events_default \
    "$(where "$S" job_events jsoon-e)"

# ---- a maintenance with 6 days ahead: the record it covers moves ------------
# The maintenance-only optimizers read nothing: a group of their own, from the
# end. Joining the first one's group would rebalance it, and the mock cluster
# keeps no offsets committed in a transaction, so it would read every input
# again and store again the rows the retention below removes.
alone="-X auto.offset.reset=latest -X group.id"
sys_start_optimizer optimizer2 $alone=partitions-2 -X store.partition.ahead=6
deadline=$((SECONDS + 60))
while [ -z "$(covered "$S" config_matches $((now + 6 * DAY)))" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
expect_eq "the event 5 days ahead moved to its partition" "$(covered "$S" job_events "$soon")" \
    "$(where "$S" job_events jsoon-e)"
expect_eq "2001 kept in the default partition" runtime_samples_default "$(where "$S" runtime_samples jpast-c-r1)"
expect_eq "2100 kept in the default partition" runtime_samples_default "$(where "$S" runtime_samples jfut-r1)"
expect_eq "job events: all kept" 4 "$(sys_count job_events)"
expect_eq "runtime samples: all kept" 7 "$(sys_count runtime_samples)"

# ---- retention: the old partition dropped, the default's old rows deleted ---
oldpart=$(covered "$S" runtime_samples $((old + 1000)))
sys_start_optimizer optimizer3 $alone=partitions-3 -X store.retention.days=7 -X store.retention.interval.s=1
deadline=$((SECONDS + 60))
while [ "$(sys_count runtime_samples)/$(sys_count job_events)" != 3/2 ] && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.2
done
expect_eq "samples left: jn's two and 2100's" "jfut-r1,jn-b-r1,jn-b-r2" \
    "$(sys_sql "SELECT string_agg(event_id, ',' ORDER BY event_id) FROM $S.runtime_samples")"
expect_eq "job events left: jn's and the one 5 days ahead" "jn-b-e,jsoon-e" \
    "$(sys_sql "SELECT string_agg(event_id, ',' ORDER BY event_id) FROM $S.job_events")"
expect_eq "the old partition is gone" 0 \
    "$(sys_sql "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '$S' AND c.relname = '$oldpart'")"
expect_eq "no partition wholly older than the window left" 0 \
    "$(in_schema "$S" "SELECT count(*) FROM unnest(string_to_array('$TABLES', ' ')) t, history_partitions(t) p WHERE p.hi <= $((now - 7 * DAY))")"
# 2 old samples and 1 old job event in dropped partitions, the 2 samples and
# the job event of 2001 from the default partitions (a round may stop short
# on a busy machine and leave the rest to the next: the lines add up).
expect_eq "the consumer logged its prune" 6 \
    "$(sed -n 's/.*retention: removed \([0-9]*\) history row(s) older than.*/\1/p' "$SYS_DIR/optimizer3.log" | paste -sd+ | bc)"
# Said from the second round on (interval 1 s), not at start.
deadline=$((SECONDS + 30))
until grep -q "retention: 1 history row(s) in the default partitions" "$SYS_DIR/optimizer3.log" ||
    [ "$SECONDS" -ge "$deadline" ]; do sleep 0.2; done
grep -q "retention: 1 history row(s) in the default partitions" "$SYS_DIR/optimizer3.log" &&
    ok "the consumer reported the row kept in a default partition" ||
    fail "default partition not reported: $(grep retention "$SYS_DIR/optimizer3.log")"

# ---- upgrade: a schema at version 11 with rows in every history table -------
U=up11
sys_sql "CREATE SCHEMA $U; CREATE TABLE $U.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())" >/dev/null
for f in "$SYS_TOP"/pipeline/store/sql/0[01][0-9]_*.sql; do
    v=$((10#$(basename "$f" | cut -c1-3)))
    [ "$v" -le 11 ] || continue
    { echo "SET search_path = $U; BEGIN;"; cat "$f"; echo "INSERT INTO schema_migrations (version, name) VALUES ($v, '$(basename "$f")'); COMMIT;"; } |
        psql -X -q -v ON_ERROR_STOP=1 >/dev/null || fail "migration $f at version 11"
done
expect_eq "schema at version 11" 11 "$(sys_sql "SELECT max(version) FROM $U.schema_migrations")"
# Rows 20 and 19 days ago, an hour ago and in 2001: 4 times, 3 of them older
# than a 7-day window; every history table, 12 rows each (24 samples).
in_schema "$U" "
INSERT INTO jobs (uid, scenario, state, created_ms, updated_ms, last_event_id)
SELECT 'u' || j, 's1', 'running', $old, $new, 'e' || j FROM generate_series(1, 3) j;
CREATE TEMP TABLE ts AS SELECT k, t FROM unnest(ARRAY[$old, $((old + DAY)), $new, $past]::bigint[]) WITH ORDINALITY AS x(t, k);
INSERT INTO job_events (event_id, job_uid, event_time_ms, state, raw, received_at)
SELECT 'e' || k || '-' || j, 'u' || j, t + j, 'running', '\\x0102', '2026-01-01Z' FROM ts, generate_series(1, 3) j;
INSERT INTO runtime_samples (event_id, job_uid, event_time_ms, global_step, speed, raw, received_at, pod_names, pod_types,
    pod_indexes, pod_cpu_used, pod_cpu_requested, pod_memory_used, pod_memory_requested, pod_speeds)
SELECT 'r' || k || '-' || j || '-' || i, 'u' || j, t + 10 * i + j, i, 1.5 * i, '\\x0304', '2026-01-01Z',
    ARRAY['w0', 'w1'], ARRAY['worker', 'worker'], ARRAY[0, 1], ARRAY[1.0, 2.0], ARRAY[4.0, 4.0],
    ARRAY[10, 20]::bigint[], ARRAY[40, 40]::bigint[], ARRAY[0.5, NULL]::float8[]
FROM ts, generate_series(1, 3) j, generate_series(1, 2) i;
INSERT INTO node_events (event_id, job_uid, event_time_ms, kind, pod_name, pod_type, pod_index, node_name, reason, message, memory_requested, raw, received_at)
SELECT 'n' || k || '-' || j, 'u' || j, t + 100 + j, 'oom_killed', 'w0', 'worker', 0, 'node-1', 'OOMKilled', '', 40, '\\x05', '2026-01-01Z' FROM ts, generate_series(1, 3) j;
INSERT INTO plan_requests (event_id, job_uid, event_time_ms, stage, oom_pod, raw, received_at)
SELECT 'q' || k || '-' || j, 'u' || j, t + 200 + j, 'job_stage_running', 'w0', '\\x06', '2026-01-01Z' FROM ts, generate_series(1, 3) j;
INSERT INTO plans (plan_id, job_uid, trigger_event_id, stage, optimizer, reason, event_time_ms, groups, pods, raw, actions, created_at)
SELECT 'plan-q' || k || '-' || j, 'u' || j, 'q' || k || '-' || j, 'job_stage_running', 'oom', 'an OOM', t + 200 + j, '[]', '[]', '\\x07', '[]', '2026-01-01Z' FROM ts, generate_series(1, 3) j;
INSERT INTO oom_plans (job_uid, pod_name, oom_event_id, plan_id, memory, event_time_ms)
SELECT 'u' || j, 'w0', 'n' || k || '-' || j, 'plan-q' || k || '-' || j, 80, t + 200 + j FROM ts, generate_series(1, 3) j;
INSERT INTO config_matches (event_id, job_uid, event_time_ms, rules_version, rule_ids, values, trigger_event_id, raw, received_at)
SELECT 'cfg-' || k || '-' || j, 'u' || j, t + 300 + j, 1, '[\"r1\"]', '{\"k\": 1}', 'c' || k || '-' || j, '\\x08', '2026-01-01Z' FROM ts, generate_series(1, 3) j;
SELECT 1" >/dev/null
# hash SCHEMA TABLE [WHERE]: the row count and an md5 of the rows as text.
hash() {
    sys_sql "SELECT '$2 ' || count(*) || ' ' || md5(coalesce(string_agg(r::text, ';' ORDER BY r::text), '')) FROM $1.$2 r ${3:-}"
}
# hashes SCHEMA [WHERE]: every history table's; without WHERE, the views'
# too (runtime_pods and the analysts' of migration 011).
hashes() {
    local t
    for t in $TABLES; do hash "$1" "$t" "${2:-}"; done
    if [ -z "${2:-}" ]; then
        for t in runtime_pods job_outcomes oom_history plan_outcomes; do hash "$1" "$t"; done
    fi
}
hashes "$U" >"$SYS_DIR/before.txt"
hashes "$U" "WHERE event_time_ms >= $((now - 7 * DAY))" >"$SYS_DIR/before-new.txt"
grep -q "^runtime_samples 24 " "$SYS_DIR/before.txt" || fail "rows at version 11: $(cat "$SYS_DIR/before.txt")"

# The upgrade (any command migrates; this one also counts, deleting nothing).
"$DLBRAIN" store prune -q -e "$U" -d 7 --dry-run >"$SYS_DIR/dry.txt" 2>&1 || fail "dry run: $(cat "$SYS_DIR/dry.txt")"
newest=$(find "$SYS_TOP/pipeline/store/sql" -name '[0-9][0-9][0-9]_*.sql' | sed 's|.*/||' | sort | tail -n 1)
expect_eq "schema at the newest version" "$((10#${newest:0:3}))" "$(sys_sql "SELECT max(version) FROM $U.schema_migrations")"
hashes "$U" >"$SYS_DIR/after.txt"
diff "$SYS_DIR/before.txt" "$SYS_DIR/after.txt" >/dev/null &&
    ok "every row of every table and view kept byte for byte" ||
    fail "rows changed by the upgrade: $(diff "$SYS_DIR/before.txt" "$SYS_DIR/after.txt")"
for t in $TABLES; do
    expect_eq "$t partitioned" p "$(sys_sql "SELECT relkind FROM pg_class WHERE oid = '$U.$t'::regclass")"
    expect_eq "$t: a partition per day of its rows" \
        "$(sys_sql "SELECT count(DISTINCT floor(event_time_ms / $DAY.0)) FROM $U.$t")" \
        "$(in_schema "$U" "SELECT count(*) FROM history_partitions('$t')")"
    expect_eq "$t: nothing in the default partition" 0 "$(sys_sql "SELECT count(*) FROM $U.${t}_default")"
done
# A sample of each of the 4 times and 3 jobs, twice: 18 older than 7 days.
cnt() { awk -v t="$2" '$1 == t {print $2}' "$1"; }
for t in $TABLES; do
    expect_eq "dry run: $t" "$([ "$t" = runtime_samples ] && echo 18 || echo 9)" "$(cnt "$SYS_DIR/dry.txt" "$t")"
done
expect_eq "dry run deletes nothing" 24 "$(sys_sql "SELECT count(*) FROM $U.runtime_samples")"

"$DLBRAIN" store prune -q -e "$U" -d 7 >"$SYS_DIR/prune.txt" 2>&1 || fail "prune: $(cat "$SYS_DIR/prune.txt")"
for t in $TABLES; do
    expect_eq "pruned: $t" "$([ "$t" = runtime_samples ] && echo 18 || echo 9)" "$(cnt "$SYS_DIR/prune.txt" "$t")"
    expect_eq "$t: only the newest day's partitions left" \
        "$(sys_sql "SELECT count(DISTINCT floor(event_time_ms / $DAY.0)) FROM $U.$t")" \
        "$(in_schema "$U" "SELECT count(*) FROM history_partitions('$t')")"
done
hashes "$U" "WHERE event_time_ms >= $((now - 7 * DAY))" >"$SYS_DIR/after-new.txt"
diff "$SYS_DIR/before-new.txt" "$SYS_DIR/after-new.txt" >/dev/null &&
    ok "the rows newer than the window kept byte for byte" ||
    fail "newer rows changed by the prune: $(diff "$SYS_DIR/before-new.txt" "$SYS_DIR/after-new.txt")"
for i in 1 2 3; do kill -0 "${SYS_PIDS[$i]}" || fail "optimizer $i died"; done
ok "optimizers still running"
echo "52-partitions: all checks passed"
