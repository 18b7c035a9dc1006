# The end-to-end checks of 10-pipeline.sh (mock Kafka) and 20-real-broker.sh
# (a real Apache Kafka broker): source it after helpers.sh, then call
#   sys_pipeline_checks mock|real dlrover|dlbrain
# emit -> optimizer -> plans topic + PostgreSQL + Redis: exact plans, exact row
# counts, and a second delivery of the same events changes no row and no plan.
# The broker kind: the mock cluster gets 1 partition, the real broker 12 (the
# default of the pipeline's topics), so the ordering across co-partitioned
# topics and the group assignment are exercised for real. The optimizer set
# changes only the OOM job's plans (pipeline.expected says which).

sys_pipeline_summarise() {
    jq -r '[.trigger_event_id, .stage,
            ([.groups | sort_by(.group)[] | "\(.group):\(.count):\(.resource.cpu):\(.resource.memory)"] | join(" ")),
            ([.pods[] | "\(.name):\(.resource.cpu):\(.resource.memory)"] | join(" "))] | join("|")' "$1" | sort
}

sys_pipeline_counts() {
    local t
    for t in jobs job_events runtime_samples runtime_pods node_events plan_requests plans oom_plans; do
        printf '%s=%s ' "$t" "$(sys_count $t)"
    done
}

sys_pipeline_rc() { redis-cli -h "$DLBRAIN_REDIS_HOST" -p "$DLBRAIN_REDIS_PORT" "$@"; }

# sys_pipeline_checks KIND SET: KIND is mock (librdkafka's mock cluster) or
# real; SET the optimizer set.
sys_pipeline_checks() {
    local kind=$1 set=$2 data=$SYS_TOP/tests/system/data want_counts oom_rows
    case $set in
    dlrover) oom_rows=3 ;; # every request of n3 answers the OOM again (and records it)
    dlbrain) oom_rows=1 ;; # the OOM is answered once; q2 repeats that answer
    *) fail "sys_pipeline_checks: unknown optimizer set '$set'" ;;
    esac
    case $kind in
    mock) sys_start_all 1 -X optimizer.set="$set" ;;
    real)
        sys_start_pg
        sys_start_redis
        sys_start_real_kafka 12
        sys_start_optimizer optimizer -X optimizer.set="$set"
        ;;
    *) fail "sys_pipeline_checks: unknown broker kind '$kind'" ;;
    esac

    "$DLBRAIN" emit --strict -q "$data/pipeline.jsonl" || fail "emit rejected a fixture line"
    ok "emit published the fixture"

    "$DLBRAIN" plans -q --count 5 --timeout-ms 60000 --format json >"$SYS_DIR/plans1.json" ||
        fail "the master did not receive 5 plans"
    sys_pipeline_summarise "$SYS_DIR/plans1.json" >"$SYS_DIR/got"
    grep -v '^#' "$data/pipeline.expected" | grep -vE '^(dlrover|dlbrain) ' >"$SYS_DIR/want" || true
    sed -n "s/^$set //p" "$data/pipeline.expected" >>"$SYS_DIR/want"
    sort -o "$SYS_DIR/want" "$SYS_DIR/want"
    if diff -u "$SYS_DIR/want" "$SYS_DIR/got"; then
        ok "plans of set $set equal the hand-worked expectations"
    else
        fail "plans differ"
    fi

    expect_eq "plan ids" "plan-n1-q1 plan-n2-q1 plan-n3-q1 plan-n3-q2 plan-n3-q3" \
        "$(jq -r .plan_id "$SYS_DIR/plans1.json" | sort | xargs)"
    expect_eq "every plan has a reason" 0 "$(jq -r 'select(.reason == "") | .plan_id' "$SYS_DIR/plans1.json" | wc -l)"
    expect_eq "optimizer set" "$set" "$(jq -r 'select(.trigger_event_id == "n3-q1") | .optimizer | sub("[.].*"; "")' "$SYS_DIR/plans1.json")"

    sys_wait_count plans 5 30
    want_counts="jobs=4 job_events=5 runtime_samples=3 runtime_pods=10 node_events=1 plan_requests=5 plans=5 oom_plans=$oom_rows "
    expect_eq "row counts" "$want_counts" "$(sys_pipeline_counts)"
    expect_eq "merged job h1" "s1|succeeded|Completed|512" \
        "$(sys_sql "SELECT scenario||'|'||state||'|'||exit_reason||'|'||batch_size FROM $(sys_schema).jobs WHERE uid='h1'")"

    expect_eq "redis window of h1" 2 "$(sys_pipeline_rc ZCARD dlbrain:job:h1:rt)"
    expect_eq "redis window of n3" 1 "$(sys_pipeline_rc ZCARD dlbrain:job:n3:rt)"

    # At-least-once redelivery: the same events again must change nothing but
    # re-send the same plans (same ids, same content).
    "$DLBRAIN" emit --strict -q "$data/pipeline.jsonl" || fail "second emit"
    "$DLBRAIN" plans -q --all --count 10 --timeout-ms 60000 --format json >"$SYS_DIR/plans2.json" ||
        fail "the master did not receive the 5 re-sent plans"
    expect_eq "distinct plans after redelivery" 5 "$(sort -u "$SYS_DIR/plans2.json" | wc -l)"
    sys_wait_count plan_requests 5 5
    sleep 1
    expect_eq "row counts after redelivery" "$want_counts" "$(sys_pipeline_counts)"
    expect_eq "redis window of n3 after redelivery" 1 "$(sys_pipeline_rc ZCARD dlbrain:job:n3:rt)"
    expect_eq "OOM counted once" 1 "$(sys_pipeline_rc HGET dlbrain:job:n3:pods n3-worker-0 | jq .oom_count)"
}
