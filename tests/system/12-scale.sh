#!/usr/bin/env bash
# README command 1 at a larger shape: the demo with two optimizer processes in
# one consumer group over four partitions per topic. Every job's plan request
# must be answered with that job's own earlier events (sent to other topics in
# the same burst) already folded in, whichever member owns the partitions.
# The demo's own jobs (its default seed and count), so its PostgreSQL, kept and
# started again, holds the history docs/analysts.md's queries name: each must
# run as written and return rows, and plan_outcomes.ooms_after must agree with
# the tables (analysts-checks.sh).
set -euo pipefail
top=${DLB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${DLB_BUILD_DIR:-$top/build}
dir=$(mktemp -d /tmp/dlbrain-scale.XXXXXX)
# The demo's run dir goes in here; the postgres user reaches its data dir.
chmod 755 "$dir"
out=$dir/plans.jsonl
cleanup() {
    local rc=$? run
    for run in "$dir"/dlbrain-demo.*; do
        [ -d "$run/pg" ] && "$top/scripts/pg" stop --dir "$run/pg" >/dev/null 2>&1
    done
    [ "${KEEP:-0}" = 1 ] && echo "kept $dir" || rm -rf "$dir"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL - $*"; tail -n 30 "$out.log"; exit 1; }
ok() { echo "ok - $*"; }

DLBRAIN_ENV=dlbrain TMPDIR=$dir DLB_BUILD_DIR=$build "$top/scripts/demo" --optimizers 2 \
    --partitions 4 --jobs 24 --seed 1 --keep --plans-out "$out" >"$out.log" 2>&1 ||
    fail "the demo failed"
# The last line is the kept run dir (stderr); the summary is the one before.
summary=$(grep -E "^[0-9]+ jobs, " "$out.log" | tail -n 1)
case $summary in
*", 0 in DLQ") ok "demo: $summary" ;;
*) fail "unexpected summary: $summary" ;;
esac
want=$("$build/dlbrain" simulate --phase history --jobs 12 --seed 1 --expect | sed -n 's/^plan_requests=//p')
want=$((want + $("$build/dlbrain" simulate --phase live --jobs 24 --seed 1 --expect | sed -n 's/^plan_requests=//p')))
got=$(grep -c . "$out")
[ "$got" = "$want" ] && ok "$got plans for $want requests" || fail "$got plans for $want requests"
[ "$(jq -r .plan_id "$out" | sort -u | wc -l)" = "$want" ] && ok "plan ids unique" || fail "duplicate plan ids"
n=$(jq -r '.reason' "$out" | grep -cE 'scenario \(unknown\)|event unknown|assumed' || true)
[ "$n" = 0 ] && ok "no plan computed without its job's meta or OOM event" || fail "$n plans lacked their job's state"
n=$(jq -r 'select(.job_uid | test("^(ctr|rec)-l")) | select(.stage == "job_stage_create") | .reason' "$out" |
    grep -c "cold start" || true)
[ "$n" = 0 ] && ok "live jobs of known scenarios planned from history" || fail "$n live create plans were cold starts"
n=$(jq -r 'select(.optimizer | test("[.]oom$")) | .plan_id' "$out" | wc -l)
[ "$n" -ge 2 ] && ok "$n OOM plans" || fail "only $n OOM plans"
# The demo shows every stage, and each optimizer of the default set changes
# something for the job whose situation it is there for.
for st in create ps_initial worker_initial running ps_running worker_running; do
    n=$(jq -r --arg st "job_stage_$st" 'select(.stage == $st) | .plan_id' "$out" | wc -l)
    [ "$n" -ge 1 ] && ok "$n plans at job_stage_$st" || fail "no plan at job_stage_$st"
done
for o in dlrover.create dlbrain.ps_initial dlbrain.oom dlbrain.worker_model dlbrain.memory_trend \
    dlbrain.health dlrover.hot_ps dlrover.ps_util; do
    n=$(jq -r --arg o "$o" 'select(.optimizer | split("+") | index($o))
        | select((.groups | length) + (.pods | length) + ((.actions // []) | length) > 0) | .plan_id' "$out" | wc -l)
    [ "$n" -ge 1 ] && ok "$o changed something in $n plans" || fail "no plan where $o changed something"
done
n=$(jq -r '.actions // [] | .[] | .action' "$out" | sort -u | xargs)
[ "$n" = "relaunch replace" ] && ok "plan actions: $n" || fail "plan actions: [$n], want relaunch and replace"

# The analysts' page on the demo's history: the demo stopped its PostgreSQL
# and kept the data; start it again on it.
run=$(echo "$dir"/dlbrain-demo.*)
[ -d "$run/pg/data" ] || fail "the demo kept no PostgreSQL data in $dir"
"$top/scripts/pg" start --dir "$run/pg" >/dev/null || fail "PostgreSQL did not start on the demo's data"
# shellcheck disable=SC1091
. "$run/pg/env"
. "$top/tests/system/analysts-checks.sh"
analysts_check_docs
analysts_check_views dlbrain
echo "12-scale: all checks passed"
