#!/usr/bin/env bash
# The simulated world against production: `dlbrain sim --calibration` runs the
# none arm (users' own requests, no brain) on the four Pollux workloads with
# seeds 1-3 and holds each figure in its band of data/production/targets.csv
# (utilisation of each role and resource 0.08-0.45, at most 12% of pods
# OOM-killed, completion at least 60%). A world whose users ask far more than
# production's (--oversize 2.5) leaves the band and the check says so. No
# server: the simulator alone.
. "$(dirname "$0")/helpers.sh"

out=$SYS_DIR/calibration.md
"$DLBRAIN" sim --calibration "$SYS_TOP/data" -n 100 >"$out" 2>"$SYS_DIR/calibration.log" ||
    { cat "$out" "$SYS_DIR/calibration.log"; fail "the none arm left its band"; }
cat "$out"
for fig in worker_cpu_util worker_mem_util ps_cpu_util ps_mem_util pods_oom_killed_share \
    completion_rate; do
    grep -q "^| $fig | .* | in band |$" "$out" || fail "$fig is not reported in band"
done
expect_eq "runs" 12 "$(grep -c '^| workload-' "$out")"
ok "every figure in its band over 12 runs"

if "$DLBRAIN" sim --calibration "$SYS_TOP/data" -n 100 --oversize 2.5 >"$SYS_DIR/drift.md" \
    2>"$SYS_DIR/drift.log"; then
    cat "$SYS_DIR/drift.md"
    fail "users asking production's over-request to the power 2.5 passed the check"
fi
grep -q 'OUT OF BAND' "$SYS_DIR/drift.md" || fail "the drifted run names no figure out of band"
grep -q 'out of its band' "$SYS_DIR/drift.log" || fail "the drifted run says nothing on stderr"
ok "a drifted world fails: $(grep -c 'OUT OF BAND' "$SYS_DIR/drift.md") figures out of band"

"$DLBRAIN" sim --calibration "$SYS_DIR/nowhere" 2>"$SYS_DIR/missing.log" && fail "no data passed"
grep -q 'nowhere/production/targets.csv' "$SYS_DIR/missing.log" || fail "the error names no file"
ok "missing data named"
echo "57-sim-calibration: all checks passed"
