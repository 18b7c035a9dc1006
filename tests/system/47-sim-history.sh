#!/usr/bin/env bash
# Jobs from history: a simulation with the dlrover optimizer set records five
# jobs into environment "hist" (PostgreSQL holds their job events and runtime
# samples; the optimizer scales some of them from 1 to 10 and 18 workers; the
# dlrover set, whose create asks 1 worker, so that history has several counts
# at the PS the jobs start with: a replay runs each job at its first PS, and a
# count recorded only after a PS change is not reproduced, see
# docs/simulator.md "Jobs from history");
# `dlbrain sim --workload-from-env hist` then runs those jobs again and must
# give the same jobs in the same order at the same arrival offsets, each at
# the speed it showed there: for every (job, worker count) it runs at that
# history has, the median simulated speed within 5% of the recorded median
# (the simulator's jitter is 2%; samples where a worker is more than 1.3x and
# 0.02 steps/s slower than another, a straggler of the simulator's worker
# variation, are left out, history's speed has its own). Once without plans (each
# job at its first worker count), once with the optimizer in environment
# "trial", which scales the jobs again.
. "$(dirname "$0")/helpers.sh"

sys_start_pg
sys_start_redis
sys_start_kafka 1
sys_start_optimizer opt -X env=hist -X optimizer.set=dlrover
sys_start_optimizer opt-trial -X env=trial -X optimizer.set=dlbrain

WL=$SYS_DIR/wl.csv
cat >"$WL" <<'CSV'
arrival_s,name,model,dataset_size,epochs,batch_size,workers
0,ha,cifar10,50000,6,256,2
60,hb,ncf,2000000,2,32768,4
60,hc,bert,,,96,3
150,hd,imagenet,200000,1,512,4
300,he,cifar10,100000,2,128,1
CSV

"$DLBRAIN" sim -e hist -w "$WL" --seed 5 --plan-timeout-ms 20000 \
    --summary-json "$SYS_DIR/rec.json" 2>"$SYS_DIR/rec.log" || fail "recording run failed"
rs() { jq -r ".$1" "$SYS_DIR/rec.json"; }
expect_eq "recorded jobs" 5 "$(rs jobs)"
DLBRAIN_ENV=hist sys_wait_count "jobs WHERE state IN ('succeeded', 'failed')" 5 60
DLBRAIN_ENV=hist sys_wait_count runtime_samples "$(rs samples)" 60
ok "history: 5 jobs, $(rs samples) runtime samples"
counts=$(sys_sql "SELECT count(DISTINCT cardinality(array_positions(pod_types, 'worker')))
                  FROM hist.runtime_samples")
[ "$counts" -ge 2 ] || fail "history has $counts worker count(s); the test wants several"
ok "history has $counts worker counts"

# speeds SCHEMA CUT DROP: "uid|workers|median speed|samples" per job and
# worker count of the samples with a speed; with CUT, the run's tag is cut
# off the uid; with DROP, without the samples where a straggler of the
# simulation slows the job (a worker 1.3x and 0.02 steps/s slower than
# another). History keeps its own: its recorded speed has them in it, and
# the simulation from history runs at that speed.
speeds() {
    sys_sql "SELECT k || '|' || wk || '|' ||
                    percentile_disc(0.5) WITHIN GROUP (ORDER BY speed) || '|' || count(*)
             FROM (SELECT CASE WHEN $2 THEN regexp_replace(s.job_uid, '-[0-9a-f]{4}\$', '')
                               ELSE s.job_uid END AS k, a.wk, s.speed
                   FROM $1.runtime_samples s CROSS JOIN LATERAL
                       (SELECT count(*) FILTER (WHERE p.t = 'worker') AS wk,
                               max(p.v) FILTER (WHERE p.t = 'worker')
                               - min(p.v) FILTER (WHERE p.t = 'worker') AS spread,
                               max(p.v) FILTER (WHERE p.t = 'worker')
                               / NULLIF(min(p.v) FILTER (WHERE p.t = 'worker'), 0) AS ratio
                        FROM unnest(s.pod_types, s.pod_speeds) AS p(t, v)) a
                   WHERE s.speed > 0
                     AND (NOT $3 OR COALESCE(a.spread, 0) <= 0.02 OR a.ratio <= 1.3)) x
             GROUP BY k, wk ORDER BY k, wk"
}
# compare SIM: each of SIM's (job, workers) that history has within 5%;
# prints the number compared with more than one worker.
compare() {
    awk -F'|' 'NR == FNR { rec[$1 "|" $2] = $3; next }
        { k = $1 "|" $2
          if (!(k in rec)) { printf "%s workers: simulated %s, not in history\n", k, $3 >"/dev/stderr"; next }
          d = $3 / rec[k] - 1; if (d < 0) d = -d
          printf "%s workers: simulated %s (%d samples), recorded %s, %.1f%%\n", k, $3, $4, rec[k], d * 100 >"/dev/stderr"
          if (d > 0.05) bad = 1
          if ($2 > 1) multi++ }
        END { print multi + 0; exit bad }' "$SYS_DIR/rec.speeds" "$1"
}
speeds hist false false | sed 's/|[0-9]*$//' >"$SYS_DIR/rec.speeds"
sed "s/^/history: /" "$SYS_DIR/rec.speeds"

# Two jobs that never ran (no runtime sample): one among the others, one
# after them. They are left out and counted.
sys_sql "INSERT INTO hist.jobs (uid, app, created_ms, updated_ms, last_event_id)
         SELECT 'zz-mid', 'never', min(created_ms) + 1, min(created_ms) + 1, 'x' FROM hist.jobs
         UNION ALL
         SELECT 'zz-end', 'never', max(created_ms) + 1, max(created_ms) + 1, 'x' FROM hist.jobs"
RAN="EXISTS (SELECT 1 FROM hist.runtime_samples s WHERE s.job_uid = uid AND s.speed > 0)"

# Errors before anything runs.
rc=0
"$DLBRAIN" sim --workload-from-env nosuch --out /dev/null 2>"$SYS_DIR/err.log" || rc=$?
expect_eq "unknown environment: exit status" 1 "$rc"
grep -q 'no such environment' "$SYS_DIR/err.log" || fail "no reason given: $(cat "$SYS_DIR/err.log")"
rc=0
"$DLBRAIN" sim -w "$WL" --from -1h --out /dev/null 2>/dev/null || rc=$?
expect_eq "--from without --workload-from-env: exit status" 2 "$rc"

START=1704067200000
"$DLBRAIN" sim --workload-from-env hist --seed 9 --out "$SYS_DIR/h.jsonl" \
    --summary-json "$SYS_DIR/h.json" 2>"$SYS_DIR/h.log" || fail "simulation from history failed"
grep -q 'workload from hist: 5 jobs, [0-9]* speed points, 2 jobs without a speed left out' \
    "$SYS_DIR/h.log" || fail "no workload line: $(cat "$SYS_DIR/h.log")"
expect_eq "jobs from history" 5 "$(jq -r .jobs "$SYS_DIR/h.json")"
expect_eq "succeeded from history" 5 "$(jq -r .succeeded "$SYS_DIR/h.json")"

# Same jobs, same order, same offsets from the first arrival (uids gain the
# run's tag).
want=$(sys_sql "SELECT uid || '|' || (created_ms - min(created_ms) OVER ())
                FROM hist.jobs WHERE $RAN ORDER BY created_ms, uid")
got=$(jq -r --argjson t0 "$START" 'select(.type == "job_event" and .meta != null)
      | "\(.job_uid | sub("-[0-9a-f]{4}$"; ""))|\(.event_time_ms - $t0)"' "$SYS_DIR/h.jsonl")
expect_eq "jobs and arrival offsets" "$want" "$got"

# Speeds: the simulated median per (job, workers) against the recorded one.
jq -rs '[.[] | select(.type == "runtime_sample" and .speed > 0)
         | [.pods[] | select(.type == "worker")] as $w
         | ($w | map(.speed)) as $v
         | select(($v | max) - ($v | min) <= 0.02 or (($v | min) > 0 and ($v | max) / ($v | min) <= 1.3))
         | {k: "\(.job_uid | sub("-[0-9a-f]{4}$"; ""))|\($w | length)", v: .speed}]
        | group_by(.k)[] | "\(.[0].k)|\(map(.v) | sort | .[(length - 1) / 2 | floor])|\(length)"' \
    "$SYS_DIR/h.jsonl" >"$SYS_DIR/sim.speeds"
[ "$(wc -l <"$SYS_DIR/sim.speeds")" -eq 5 ] || fail "simulated speeds: $(cat "$SYS_DIR/sim.speeds")"
compare "$SYS_DIR/sim.speeds" >/dev/null || fail "a simulated speed is more than 5% off the recorded one"
ok "every job at its recorded speed (within 5%)"

# With the optimizer: the jobs scale again, to counts history has too.
"$DLBRAIN" sim -e trial --workload-from-env hist --seed 9 --plan-timeout-ms 20000 \
    --summary-json "$SYS_DIR/t.json" 2>"$SYS_DIR/t.log" || fail "trial run failed"
ts() { jq -r ".$1" "$SYS_DIR/t.json"; }
expect_eq "trial jobs succeeded" 5 "$(ts succeeded)"
expect_eq "trial plans missing" 0 "$(ts plans_missing)"
DLBRAIN_ENV=trial sys_wait_count runtime_samples "$(ts samples)" 60
speeds trial true true >"$SYS_DIR/trial.speeds"
multi=$(compare "$SYS_DIR/trial.speeds") ||
    fail "a speed of the trial run is more than 5% off the recorded one"
[ "$multi" -ge 1 ] || fail "the trial run met no recorded count above one worker"
ok "trial run at the recorded speeds, $multi (job, workers > 1) compared"

# --from: the jobs that arrived from then on.
second=$(sys_sql "SELECT created_ms FROM hist.jobs WHERE $RAN ORDER BY created_ms, uid OFFSET 1 LIMIT 1")
"$DLBRAIN" sim --workload-from-env hist --from "$second" --out "$SYS_DIR/f.jsonl" \
    --summary-json "$SYS_DIR/f.json" 2>"$SYS_DIR/f.log" || fail "--from run failed"
n=$(sys_sql "SELECT count(*) FROM hist.jobs WHERE created_ms >= $second AND $RAN")
expect_eq "jobs from --from" "$n" "$(jq -r .jobs "$SYS_DIR/f.json")"
echo "47-sim-history: all checks passed"
