#!/usr/bin/env bash
# Retention of the PostgreSQL history (store.retention.*), against the mock
# Kafka cluster and real PostgreSQL and Redis: `dlbrain store prune` counts
# (--dry-run) and deletes the rows older than its window and nothing newer,
# refuses a window it cannot keep; an optimizer with store.retention.days
# prunes on its own every store.retention.interval.s; afterwards a job whose
# old rows went still gets its plan from what remains.
. "$(dirname "$0")/helpers.sh"

sys_start_all 1
S=$(sys_schema)
now=$(date +%s%3N)
old=$((now - 20 * 86400000)) # 20 days ago: past a 7-day window
new=$((now - 3600000))       # an hour ago
meta='"meta":{"name":"ctr","user":"ana","group":"ads","app":"ctr","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tf"}'
pods='"pods":[{"name":"PFX-worker-0","type":"worker","index":0,"cpu_used":3.0,"cpu_requested":8,"memory_used":8000000000,"memory_requested":8589934592}]'
# events TAG TIME JOB...: a job event and two runtime samples of each job.
events() {
    local tag=$1 t=$2 j
    shift 2
    for j in "$@"; do
        echo "{\"type\":\"job_event\",\"event_id\":\"$j-$tag-e\",\"event_time_ms\":$t,\"job_uid\":\"$j\",$meta,\"state\":\"running\"}"
        for i in 1 2; do
            echo "{\"type\":\"runtime_sample\",\"event_id\":\"$j-$tag-r$i\",\"event_time_ms\":$((t + i * 1000)),\"job_uid\":\"$j\",\"global_step\":$((i * 50)),\"speed\":5.0,${pods//PFX/$j}}"
        done
    done
}
emit() { "$DLBRAIN" emit --strict -q || fail "emit"; }
# jo: all old; jn: old and new (its meta is in its old job event).
{ events a "$old" jo jn; events b "$new" jn; } | emit
sys_wait_count runtime_samples 6 60
sys_wait_count job_events 3 60

# ---- dlbrain store prune ---------------------------------------------------------
"$DLBRAIN" store prune -q -d 7 --dry-run >"$SYS_DIR/dry.txt" 2>&1 || fail "dry run: $(cat "$SYS_DIR/dry.txt")"
cnt() { awk -v t="$2" '$1 == t {print $2}' "$1"; }
expect_eq "dry run: old runtime samples" 4 "$(cnt "$SYS_DIR/dry.txt" runtime_samples)"
expect_eq "dry run: old job events" 2 "$(cnt "$SYS_DIR/dry.txt" job_events)"
expect_eq "dry run deletes nothing" 6 "$(sys_count runtime_samples)"
rc=0
"$DLBRAIN" store prune -q >"$SYS_DIR/none.txt" 2>&1 || rc=$?
expect_eq "no window: usage error" 2 "$rc"
grep -q "history is kept forever" "$SYS_DIR/none.txt" && ok "no window: says why" ||
    fail "no window: $(cat "$SYS_DIR/none.txt")"
rc=0
"$DLBRAIN" store prune -q -d 3 >"$SYS_DIR/short.txt" 2>&1 || rc=$?
expect_eq "3 days < history.hours: refused" 2 "$rc"
rc=0
"$DLBRAIN" store prune -q -e nosuch -d 7 >"$SYS_DIR/nosuch.txt" 2>&1 || rc=$?
expect_eq "unknown environment: refused" 1 "$rc"
expect_eq "unknown environment: no schema created" 0 \
    "$(sys_sql "SELECT count(*) FROM pg_namespace WHERE nspname = 'nosuch'")"
"$DLBRAIN" store prune -q -d 7 >"$SYS_DIR/prune.txt" 2>&1 || fail "prune: $(cat "$SYS_DIR/prune.txt")"
expect_eq "pruned runtime samples" 4 "$(cnt "$SYS_DIR/prune.txt" runtime_samples)"
expect_eq "runtime samples left (jn's new)" "jn" "$(sys_sql "SELECT string_agg(DISTINCT job_uid, ',') FROM $S.runtime_samples")"
expect_eq "runtime samples left" 2 "$(sys_count runtime_samples)"
expect_eq "job events left" 1 "$(sys_count job_events)"
expect_eq "jobs registry kept" 2 "$(sys_count jobs)"

# ---- a consumer prunes on its own ---------------------------------------------
{ events c "$old" jo; } | emit
sys_wait_count runtime_samples 4 60
# A group of its own, read from the end: joining the first optimizer's group
# would rebalance it, and the mock cluster keeps no offsets committed in a
# transaction, so it would read every input again and store again the rows
# this prune removes.
sys_start_optimizer optimizer2 -X group.id=retention-2 -X auto.offset.reset=latest \
    -X store.retention.days=7 -X store.retention.interval.s=1
deadline=$((SECONDS + 60))
while [ "$(sys_count runtime_samples)" != 2 ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
expect_eq "the consumer pruned the old samples" 2 "$(sys_count runtime_samples)"
# jo's 3 new old rows: its 2 samples and its job event (a round may stop
# short on a busy machine and leave the rest to the next: the lines add up).
removed() { sed -n 's/.*retention: removed \([0-9]*\) history row(s) older than.*/\1/p' "$SYS_DIR/optimizer2.log" | paste -sd+ | bc; }
deadline=$((SECONDS + 10))
while [ "$(removed)" != 3 ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
expect_eq "the consumer logged its prune" 3 "$(removed)"

# ---- what remains still serves: jn's plan ------------------------------------------
echo "{\"type\":\"plan_request\",\"event_id\":\"jn-q1\",\"event_time_ms\":$((new + 10000)),\"job_uid\":\"jn\",\"stage\":\"job_stage_running\"}" | emit
"$DLBRAIN" plans -q --count 1 --timeout-ms 60000 --format json >"$SYS_DIR/plans.json" ||
    fail "no plan for jn after the prune"
expect_eq "plan after prune" "plan-jn-q1" "$(jq -r .plan_id "$SYS_DIR/plans.json")"
for i in 1 2; do kill -0 "${SYS_PIDS[$i]}" || fail "optimizer $i died"; done
ok "optimizers still running"
echo "21-retention: all checks passed"
