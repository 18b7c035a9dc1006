#!/usr/bin/env bash
# scripts/compare end to end, on 5 jobs of a Pollux workload and two seeds: the
# arms dlrover, dlbrain, none (users' own requests, no plans) and dlrover-local
# (DLRover's own PSLocalOptimizer answering, its history copied by replay into
# the environment eval reads) each in fresh environments per run, a real broker
# (the script's own). The none arm's
# simulator ends in well under a second; the evaluation used to start then
# and see part of its jobs. Checks that every run's evaluation sees every job,
# sample and OOM each simulator sent (the script waits for `dlbrain env
# settle`: lag 0 and every event stored), and the aggregate over the runs.
. "$(dirname "$0")/helpers.sh"

mkdir -p "$SYS_DIR/wl"
cp "$SYS_TOP/data/pollux/workloads/workload-4.csv" "$SYS_DIR/wl/"
DLB_BUILD_DIR=${DLB_BUILD_DIR:-$SYS_TOP/build} "$SYS_TOP/scripts/compare" --workload "$SYS_DIR/wl" \
    --seeds 1,2 --jobs 5 --sets dlrover,dlbrain,none,dlrover-local --out "$SYS_DIR/out" -- --time-scale 0.2 \
    >"$SYS_DIR/compare.log" 2>&1 || fail "scripts/compare failed: $(tail -n 20 "$SYS_DIR/compare.log")"
n=$(grep -c "events stored, consumer group cmp_.*optimizer lag 0" "$SYS_DIR/compare.log" || true)
expect_eq "environments settled (2 runs x 4 arms)" 8 "$n"
for run in workload-4-s1 workload-4-s2; do
    d=$SYS_DIR/out/$run
    for arm in dlrover dlbrain none dlrover-local; do
        sim=$d/sim-$arm.json
        [ -f "$sim" ] || fail "no $sim"
        q() { jq -r --arg env "cmp_${arm//-/_}_workload_4_${run##*-}" ".envs[] | select(.env == \$env) | $1" "$d/eval.json"; }
        expect_eq "$run $arm: jobs evaluated" 5 "$(q .jobs.total)"
        expect_eq "$run $arm: finished" "$(jq -r '.succeeded + .failed' "$sim")" "$(q .jobs.finished)"
        expect_eq "$run $arm: runtime samples" "$(jq -r .samples "$sim")" "$(q .samples)"
        expect_eq "$run $arm: OOMs" "$(jq -r .ooms "$sim")" "$(q .ooms.total)"
        expect_eq "$run $arm: completion rate" "$(jq -r '.succeeded / .jobs' "$sim")" "$(q .completion_rate)"
        # The figures the simulator's summary has too, read from the history.
        # The simulator weighs a sample by the interval before it, eval by the
        # one after it: near, not equal (and 4 decimals in the summary).
        for k in worker_cpu_util worker_mem_util ps_cpu_util ps_mem_util; do
            sv=$(jq -r ".$k" "$sim") ev=$(q ".$k")
            jq -en --argjson a "$sv" --argjson b "$ev" \
                '($a == null and $b == null) or ($a != null and $b != null and (($a - $b) | fabs) < 0.001)' \
                >/dev/null || fail "$run $arm: $k: simulator $sv, eval $ev"
        done
        ok "$run $arm: worker and PS utilisation as the simulator's ($(q '[.worker_cpu_util, .ps_cpu_util] | map(. * 1000 | round / 1000)' | tr -d ' \n'))"
        expect_eq "$run $arm: pods OOM-killed" "$(jq -r .pods_oom_killed "$sim")" "$(q .pods_oom_killed)"
        # Both count the pods in a runtime sample.
        [ "$(q .pods)" -gt 0 ] || fail "$run $arm: eval counts no pod"
        expect_eq "$run $arm: pods" "$(jq -r .pods "$sim")" "$(q .pods)"
    done
    expect_eq "$run none: plans applied" 0 "$(jq -r .plans_applied "$d/sim-none.json")"
    [ "$(jq -r .plans_applied "$d/sim-dlbrain.json")" -gt 0 ] || fail "$run: dlbrain applied no plan"
    # DLRover's PSLocalOptimizer answered every request of its arm.
    expect_eq "$run dlrover-local: requests answered" "$(jq -r .plan_requests "$d/sim-dlrover-local.json")" \
        "$(jq -r .plans_received "$d/sim-dlrover-local.json")"
    [ "$(jq -r .plans_applied "$d/sim-dlrover-local.json")" -gt 0 ] || fail "$run: dlrover-local applied no plan"
done
a=$SYS_DIR/out/aggregate.json
expect_eq "aggregate: runs" '["workload-4-s1","workload-4-s2"]' "$(jq -c .runs "$a")"
expect_eq "aggregate: arms" '["dlrover","dlbrain","none","dlrover-local"]' "$(jq -c '.arms | keys_unsorted' "$a")"
expect_eq "aggregate: jobs per arm" '[5,5,5,5]' "$(jq -c '[.arms[].jobs]' "$a")"
expect_eq "aggregate: ratios" '["dlbrain/dlrover","dlbrain/none","dlbrain/dlrover-local","dlrover/dlrover-local"]' \
    "$(jq -c '.ratios | keys_unsorted' "$a")"
# A ratio's mean and worst are those of its per-run values.
r=$(jq -c '.ratios["dlbrain/dlrover"].jct_mean_s' "$a")
expect_eq "JCT mean ratio: runs" 2 "$(jq '.runs | length' <<<"$r")"
expect_eq "JCT mean ratio: worst = max of the runs" "$(jq '.runs | max' <<<"$r")" "$(jq .worst <<<"$r")"
jq -e '(.mean - (.runs | add / length)) | fabs < 1e-9' <<<"$r" >/dev/null || fail "JCT mean ratio: mean is not that of the runs: $r"
ok "JCT mean ratio: mean of the runs"
r=$(jq -c '.ratios["dlbrain/none"].cpu_util' "$a")
expect_eq "CPU utilisation ratio: worst = min of the runs" "$(jq '.runs | min' <<<"$r")" "$(jq .worst <<<"$r")"
grep -q '^JCT p95 ' "$SYS_DIR/out/aggregate.txt" || fail "no JCT p95 row in aggregate.txt"
grep -q '^worker CPU utilisation ' "$SYS_DIR/out/aggregate.txt" || fail "no worker CPU utilisation row in aggregate.txt"
expect_eq "worker CPU utilisation ratio: runs" 2 "$(jq '.ratios["dlbrain/dlrover"].worker_cpu_util.n' "$a")"
# The simulator's own figures: replaces and relaunches no pod needed.
for arm in dlbrain dlrover; do
    want=$(jq -s 'map(.replaces_unneeded) | add / length' "$SYS_DIR/out"/workload-4-s*/sim-$arm.json)
    expect_eq "$arm: replaces not needed, mean of the runs' simulators" "$want" "$(jq ".arms.$arm.replaces_unneeded" "$a")"
done
grep -q '^relaunches not needed ' "$SYS_DIR/out/aggregate.txt" || fail "no 'relaunches not needed' row in aggregate.txt"
# The per-run goals against both baselines: each run's ratio, held iff no run is over.
for base in dlrover dlrover-local; do
    for k in jct_p50_s pending_mean_s; do
        g=$(jq -c --arg n "dlbrain/$base" --arg k "$k" '.goals[$n][$k]' "$a")
        # Each run's ratio where the baseline is not 0 (there, 0 or a miss).
        jq -e --argjson r "$(jq -c --arg n "dlbrain/$base" --arg k "$k" '.ratios[$n][$k].runs' "$a")" \
            '(.runs | length) == 2 and ([range(2)] | all(. as $i | $r[$i] == null or $r[$i] == $g.runs[$i]))' \
            --argjson g "$g" <<<"$g" >/dev/null || fail "goal dlbrain/$base $k: runs $g"
        jq -e '.held == ((.missed | length) == 0) and
               ((.missed | length) == ([.runs[] | select(. == null or . > $most)] | length))' \
            --argjson most "$(jq .most <<<"$g")" <<<"$g" >/dev/null || fail "goal dlbrain/$base $k: $g"
    done
    grep -q "^goal dlbrain/$base JCT p50 <= 1.00x in every run: " "$SYS_DIR/out/aggregate.txt" ||
        fail "no JCT p50 goal line for dlbrain/$base in aggregate.txt"
done
ok "aggregate: $(head -n 1 "$SYS_DIR/out/aggregate.txt")"
echo "44-compare: all checks passed"
