#!/usr/bin/env bash
# dlbrain eval on a tiny hand-computed workload: itest_eval writes it into
# environments a and b through the PostgreSQL store (the arithmetic is in
# tests/unit/test_eval.c and itest_eval.c); the table, the JSON figures and
# the HTML report (one well-formed <svg> per plot, nothing external) are checked.
. "$(dirname "$0")/helpers.sh"
build=${DLB_BUILD_DIR:-$SYS_TOP/build}
[ -x "$build/itest_eval" ] || fail "$build/itest_eval not built (set DLB_BUILD_DIR)"

sys_start_pg
export DLBRAIN_PG_DSN
"$build/itest_eval" >/dev/null 2>"$SYS_DIR/itest_eval.log" || fail "itest_eval could not write the workload"

out=$SYS_DIR/eval
"$DLBRAIN" eval a b --html "$out.html" --json "$out.json" --buckets 19 >"$out.txt" 2>"$SYS_DIR/eval.log" ||
    fail "dlbrain eval a b failed: $(cat "$SYS_DIR/eval.log")"
cat "$out.txt"

# ---- the table: one column per env, then b/a ---------------------------------
row() { grep -E "^$1  " "$out.txt" | sed -E "s/^$1 +//; s/ +/ /g"; }
expect_eq "table header" "a b b/a" "$(row figure)"
expect_eq "JCT mean row (1220 s, 1020 s)" "20m20s 17m00s 0.84x" "$(row 'JCT mean')"
expect_eq "JCT p95 row (1740 s, 1686 s)" "29m00s 28m06s 0.97x" "$(row 'JCT p95')"
expect_eq "repeated OOMs row" "2 0 0.00x" "$(row 'repeated OOMs')"
expect_eq "worker CPU utilisation row (600/840, 600/630)" "71.4% 95.2% 1.33x" "$(row 'worker CPU utilisation')"
expect_eq "pods OOM-killed share row (3 of 5)" "60.0% 60.0% 1.00x" "$(row 'pods OOM-killed share')"

# ---- the JSON figures ------------------------------------------------------------
# near(x; y): equal to 1e-9 (the figures are quotients of small sums).
jqf() { jq -e "def near(x; y): ((x - y) | if . < 0 then -. else . end) < 1e-9; $1" "$out.json" >/dev/null; }
check() { if jqf "$2"; then ok "$1"; else fail "$1: $(jq -c "$3" "$out.json")"; fi; }
check "bucket width 1900 s / 19 = 100 s" '.bucket_s == 100 and .buckets == 19' '.bucket_s'
check "env order" '[.envs[].env] == ["a", "b"]' '[.envs[].env]'
check "a jobs 5, finished 3 (2 ok, 1 failed), unfinished 2, never ran 1" \
    '.envs[0].jobs == {"total":5,"finished":3,"succeeded":2,"failed":1,"stopped":0,"unfinished":2,"never_ran":1}' \
    '.envs[0].jobs'
# JCT 660 1200 1800; b 600 660 1800.
check "a JCT mean 1220, p50 1200, p95 1740" \
    '.envs[0].jct_s | near(.mean; 1220) and near(.p50; 1200) and near(.p95; 1740) and .n == 3' '.envs[0].jct_s'
check "b JCT mean 1020, p50 660, p95 1686" \
    '.envs[1].jct_s | near(.mean; 1020) and near(.p50; 660) and near(.p95; 1686)' '.envs[1].jct_s'
check "makespan 1900 s" '.envs[0].makespan_s == 1900' '.envs[0].makespan_s'
# Pending 0 60 120 300.
check "a pending mean 120, p95 273, total 480" \
    '.envs[0].pending_s | near(.mean; 120) and near(.p95; 273) and near(.total; 480)' '.envs[0].pending_s'
# Two pods per sample, summed: CPU 810 / 1230 core-s (b: 810 / 1020), memory 720 / 1380 GiB-s.
check "a CPU utilisation 810/1230" 'near(.envs[0].cpu_util; 810/1230)' '.envs[0].cpu_util'
check "b CPU utilisation 810/1020" 'near(.envs[1].cpu_util; 810/1020)' '.envs[1].cpu_util'
check "a memory utilisation 720/1380" 'near(.envs[0].mem_util; 720/1380)' '.envs[0].mem_util'
check "a core-hours 1230/3600 requested, 810/3600 used" \
    '.envs[0].cpu_core_hours | near(.requested; 1230/3600) and near(.used; 810/3600)' '.envs[0].cpu_core_hours'
check "b core-hours 1020/3600 requested" 'near(.envs[1].cpu_core_hours.requested; 1020/3600)' \
    '.envs[1].cpu_core_hours'
check "a GiB-hours 1380/3600 requested, 720/3600 used" \
    '.envs[0].mem_gib_hours | near(.requested; 1380/3600) and near(.used; 720/3600)' '.envs[0].mem_gib_hours'
# a: j0-worker-0 three times, j0-worker-1, j1's j0-worker-0; b: once each; pod_phase ignored.
check "a OOMs 5 of 3 pods, 2 repeated" '.envs[0].ooms == {"total":5,"pods":3,"repeated":2}' '.envs[0].ooms'
check "b OOMs 3 of 3 pods, none repeated" '.envs[1].ooms == {"total":3,"pods":3,"repeated":0}' '.envs[1].ooms'
# By pod type (test_eval.c, test_roles): worker CPU 600 / 840 core-s (b 600 / 630),
# memory 450 / 720 GiB-s; ps (j0's alone) CPU 120 / 270, memory 210 / 540; j2's
# chief-0 counts in the totals only.
check "a worker utilisation: CPU 600/840, memory 450/720" \
    '.envs[0] | near(.worker_cpu_util; 600/840) and near(.worker_mem_util; 450/720)' \
    '.envs[0] | [.worker_cpu_util, .worker_mem_util]'
check "a PS utilisation: CPU 120/270, memory 210/540" \
    '.envs[0] | near(.ps_cpu_util; 120/270) and near(.ps_mem_util; 210/540)' \
    '.envs[0] | [.ps_cpu_util, .ps_mem_util]'
check "b worker CPU utilisation 600/630, PS as a" \
    '.envs[1] | near(.worker_cpu_util; 600/630) and near(.ps_cpu_util; 120/270)' \
    '.envs[1] | [.worker_cpu_util, .ps_cpu_util]'
# Pods: worker-0 and ps-0 of j0, worker-0 of j1, worker-0 and chief-0 of j2 (a
# name in three jobs is three pods; j0's three samples, one pod each); the 3 pods
# OOM-killed of a (job uid + pod name) are no pods of the samples.
check "a pods 5, 3 OOM-killed (60%)" \
    '.envs[0] | .pods == 5 and .pods_oom_killed == 3 and near(.pods_oom_killed_share; 0.6)' \
    '.envs[0] | [.pods, .pods_oom_killed, .pods_oom_killed_share]'
check "completion rate 2 of 5 (j0 and j2 succeeded)" \
    '[.envs[].completion_rate] == [0.4, 0.4]' '[.envs[].completion_rate]'
check "a plans 6 of 7 requests, by stage and optimizer" \
    '.envs[0].plan_requests == 7 and .envs[0].plans == {"total":6,
      "by_stage":{"job_stage_create":3,"job_stage_running":3},"by_optimizer":{"opt_a":4,"opt_b":2}}' \
    '.envs[0].plans'
check "b plans 2 of 2 requests" '.envs[1].plan_requests == 2 and .envs[1].plans.total == 2' '.envs[1].plans'
# Bucket 1 ([100, 200) s): 590 core-s requested, 430 used.
check "a series bucket 1: 5.9 cores requested, 4.3 used" \
    '.envs[0].series | near(.cpu_requested[1]; 5.9) and near(.cpu_used[1]; 4.3) and (.cpu_util | length) == 19' \
    '.envs[0].series.cpu_requested[:4]'
check "a series: nothing after 330 s" '.envs[0].series.cpu_util[5] == null' '.envs[0].series.cpu_util'

# ---- the HTML report ----------------------------------------------------------------
python3 - "$out.html" <<'EOF' || fail "the HTML report is not as expected"
import re, sys, xml.etree.ElementTree as ET
html = open(sys.argv[1], encoding="utf-8").read()
svgs = re.findall(r"<svg .*?</svg>", html, re.S)
assert len(svgs) == 8, f"{len(svgs)} <svg> elements, expected 8"
for s in svgs:
    root = ET.fromstring(s)  # well-formed XML, or this raises
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg", root.tag
    assert root.find(ns + "title") is not None, "a plot without a title"
    assert root.findall(f".//{ns}polyline") or root.findall(f".//{ns}circle"), "a plot without data"
for title in ("Job completion time (CDF)", "Pending time (CDF)", "Per-job CPU utilisation (CDF)",
              "Per-job memory utilisation (CDF)", "CPU utilisation over time",
              "Memory utilisation over time", "CPU over time", "Memory over time"):
    assert f"<title>{title}</title>" in html, f"no plot titled {title}"
for bad in ("<script", "src=", "href=", "@import", "url(http"):
    assert bad not in html, f"the report is not self-contained: {bad}"
assert "20m20s" in html and "0.84x" in html, "the table is missing"
assert re.search(r"<tr><td>worker CPU utilisation</td><td>71\.4%</td><td>95\.2%</td>"
                 r"<td class=\"better\">1\.33x</td></tr>", html), "no worker CPU utilisation row"
for label in ("worker memory utilisation", "PS CPU utilisation", "PS memory utilisation", "pods",
              "pods OOM-killed share", "completion rate"):
    assert f"<tr><td>{label}</td>" in html, f"no {label} row"
for label in ("JCT", "pending", "job CPU utilisation", "job memory utilisation"):
    assert f"<tr><td>{label}</td><td style=" in html, f"no {label} distribution"
print("ok - HTML: 8 well-formed SVG plots, the distributions table, self-contained")
EOF

# ---- an unknown environment is an error, not an empty column --------------------
if "$DLBRAIN" eval a nosuch >"$out.err.txt" 2>&1; then fail "eval of a missing environment succeeded"; fi
grep -q 'nosuch.*no such environment' "$out.err.txt" || fail "unexpected error: $(cat "$out.err.txt")"
ok "an unknown environment is refused"
if "$DLBRAIN" eval >/dev/null 2>&1; then fail "eval without an environment succeeded"; fi
ok "eval without an environment is a usage error"
