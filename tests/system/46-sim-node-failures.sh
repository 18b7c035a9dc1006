#!/usr/bin/env bash
# Node failures end to end: the simulator fails nodes at a seeded rate
# (--node-failures) and asks for a plan at each failure; the dlbrain
# optimizer, through Kafka, Redis and PostgreSQL, answers with replace
# actions naming the node event, records each answer once (oom_plans,
# memory 0), and no failed pod waits: not for the master's late relaunch,
# nor for a later request (a pod whose OOM the same plan answers too). The
# same seed in a fresh environment gives the same summary.
. "$(dirname "$0")/helpers.sh"

WL=${DLB_SIM_WORKLOAD:-$SYS_TOP/data/pollux/workloads/workload-4.csv}
[ -f "$WL" ] || fail "no workload at $WL"

sys_start_pg
sys_start_redis
sys_start_kafka 1
sys_start_optimizer opt-a -X env=nodea -X optimizer.set=dlbrain
sys_start_optimizer opt-b -X env=nodeb -X optimizer.set=dlbrain

# run ENV OUT: one simulation, its summary in OUT.json, its log in OUT.log.
run() {
    "$DLBRAIN" sim -e "$1" -w "$WL" -n 6 --seed 5 --time-scale 0.2 --node-failures 1 \
        --plan-timeout-ms 20000 --summary-json "$SYS_DIR/$2.json" 2>"$SYS_DIR/$2.log" ||
        fail "dlbrain sim in $1 failed"
    grep '^sim:' "$SYS_DIR/$2.log" || fail "no summary line"
}
run nodea a
s() { jq -r ".$1" "$SYS_DIR/a.json"; }
expect_eq "plans missing" 0 "$(s plans_missing)"
[ "$(s node_failures)" -gt 0 ] || fail "no node failed"
[ "$(s node_replaced)" -gt 0 ] || fail "no failed pod was replaced"
expect_eq "failed pods relaunched late" 0 "$(s node_relaunched)"
# Each failed pod is replaced at the instant of its failure: no pod-second
# waits on a dead node (a replace put off to a later request would).
expect_eq "pod-seconds waiting for a replace" 0 "$(s node_down_s)"
ok "$(s node_failures) node failures, $(s node_replaced) replaced by plans"

SCHEMA=nodea
sys_wait_count_in() { DLBRAIN_ENV=$SCHEMA sys_wait_count "$@"; }
sys_wait_count_in plans "$(s plan_requests)" 60
sys_wait_count_in "node_events WHERE kind = 'node_not_ready'" "$(s node_failures)" 60
# Every replaced pod: one answer row (memory 0) per (pod, node event), and
# the plan that wrote it carries the replace with the event in its reason.
n=$(sys_sql "SELECT count(DISTINCT (pod_name, oom_event_id)) FROM $SCHEMA.oom_plans
             WHERE memory = 0")
[ "$n" -ge "$(s node_replaced)" ] || fail "$n node-failure answers < $(s node_replaced) replaced"
d=$(sys_sql "SELECT count(*) FROM (SELECT pod_name, oom_event_id FROM $SCHEMA.oom_plans
             WHERE memory = 0 GROUP BY 1, 2 HAVING count(DISTINCT event_time_ms) > 1) x")
expect_eq "failures answered at two instants" 0 "$d"
n=$(sys_sql "SELECT count(*) FROM $SCHEMA.oom_plans o JOIN $SCHEMA.plans p
             ON p.plan_id = o.plan_id AND p.job_uid = o.job_uid
             CROSS JOIN LATERAL jsonb_array_elements(p.actions) a
             WHERE o.memory = 0 AND a->>'pod' = o.pod_name AND a->>'action' = 'replace'
             AND a->>'reason' LIKE 'node_not_ready % (event ' || o.oom_event_id || '%'")
expect_eq "answers whose plan replaces the pod, naming the event" \
    "$(sys_sql "SELECT count(*) FROM $SCHEMA.oom_plans WHERE memory = 0")" "$n"
ok "each node failure answered once, by a replace naming it"

run nodeb b
strip() { jq -c 'del(.wall_s, .speedup)' "$1"; }
expect_eq "same seed, same summary" "$(strip "$SYS_DIR/a.json")" "$(strip "$SYS_DIR/b.json")"
echo "46-sim-node-failures: all checks passed"
