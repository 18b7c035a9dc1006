#!/usr/bin/env bash
# consumer.decode.ahead against the mock Kafka cluster and real PostgreSQL and
# Redis: a backlog of runtime samples with plan requests behind it, taken in by
# one optimizer that decodes the next batch while PostgreSQL stores this one
# (env ahead1) and one that decodes each message as it is polled (env ahead0).
# Each request's plan depends on its job's newest sample (half the jobs' PS turn
# hot in it), so one answered before all of its job's samples were applied
# (a sample taken ahead and not decoded yet) would differ. Both must store every
# sample once and answer every request with the same plan; the first must have
# decoded messages ahead (its debug lines say how many), the second none.
. "$(dirname "$0")/helpers.sh"

jobs=40
samples=60 # per job: 2,400 samples, batches of up to 500 after the ramp

sys_start_pg
sys_start_redis
sys_start_kafka 1

# The backlog: every job's meta, its samples (interleaved across jobs, one
# every 10 s each), then the requests, each after its own job's samples.
python3 - "$jobs" "$samples" >"$SYS_DIR/backlog.jsonl" <<'EOF'
import json, sys
jobs, samples = int(sys.argv[1]), int(sys.argv[2])
t0 = 1767312000000
meta = {"name": "ctr", "user": "u", "group": "ads", "app": "ctr", "cluster": "c1",
        "namespace": "ml", "scenario": "ahead", "framework": "tensorflow"}
def out(o):
    print(json.dumps(o))
for j in range(jobs):
    out({"type": "job_event", "event_id": f"j{j}-e1", "event_time_ms": t0 + j,
         "job_uid": f"j{j}", "meta": meta, "state": "running"})
for k in range(samples):
    for j in range(jobs):
        # Even jobs' PS turn hot in their last sample only: the average of the
        # last three records is then over 0.8 of the request (hot PS, a
        # per-pod CPU in the plan); odd jobs' never do.
        hot = j % 2 == 0 and k == samples - 1
        pods = [{"name": f"j{j}-{t}-{i}", "type": t, "index": i,
                 "cpu_used": 20.0 if hot and t == "ps" else 2.0 + 0.01 * k,
                 "cpu_requested": 8, "memory_used": (2 + i) << 30,
                 "memory_requested": 16 << 30} for t in ("ps", "worker") for i in range(2)]
        out({"type": "runtime_sample", "event_id": f"j{j}-r{k}",
             "event_time_ms": t0 + 10000 * (k + 1) + j, "job_uid": f"j{j}",
             "global_step": 100 * (k + 1), "speed": 10.0, "pods": pods})
for j in range(jobs):
    out({"type": "plan_request", "event_id": f"j{j}-q1",
         "event_time_ms": t0 + 10000 * samples + 5000 + j, "job_uid": f"j{j}",
         "stage": "job_stage_running"})
EOF

# Messages are decoded ahead only while PostgreSQL has not answered the
# batch's COPY yet, and on an idle machine it often answers before the Redis
# round trip is back; on a loaded one the round trip can outlast it every
# time. A statement trigger that sleeps 50 ms makes ahead1's PostgreSQL slow,
# as a busy server is, so the window is there in every batch. The schema is
# made first (`config list` migrates it, as every command that opens it does)
# so the trigger is in place before the first batch.
out=$("$DLBRAIN" config list -e ahead1 2>&1) || fail "config list -e ahead1: $out"
sys_sql "CREATE FUNCTION ahead1.slow_copy() RETURNS trigger LANGUAGE plpgsql AS
             \$\$ BEGIN PERFORM pg_sleep(0.05); RETURN NULL; END \$\$;
         CREATE TRIGGER slow_copy BEFORE INSERT ON ahead1.runtime_samples
             FOR EACH STATEMENT EXECUTE FUNCTION ahead1.slow_copy()" >/dev/null ||
    fail "a trigger that slows ahead1's COPY"

for env in ahead1 ahead0; do
    DLBRAIN_ENV=$env "$DLBRAIN" emit --strict -q "$SYS_DIR/backlog.jsonl" ||
        fail "emit rejected a line of the backlog ($env)"
done
ok "backlog of $((jobs * samples)) samples and $jobs requests in each environment"

for env in ahead1 ahead0; do
    export DLBRAIN_ENV=$env
    sys_start_optimizer "optimizer-$env" -X consumer.decode.ahead="${env#ahead}" -X log.level=debug \
        -X consumer.batch.size=20 -X consumer.order.wait.ms=60000
    sys_wait_count runtime_samples $((jobs * samples)) 120
    sys_wait_count plans "$jobs" 120
    expect_eq "$env: samples stored once" "$((jobs * samples)) $((jobs * samples))" \
        "$(sys_sql "SELECT count(*) || ' ' || count(DISTINCT event_id) FROM $env.runtime_samples")"
    expect_eq "$env: pods stored" $((jobs * samples * 4)) "$(sys_count runtime_pods)"
    expect_eq "$env: one plan a request" "$jobs $jobs" \
        "$(sys_sql "SELECT count(*) || ' ' || count(DISTINCT trigger_event_id) FROM $env.plans")"
    sys_sql "SELECT trigger_event_id || '|' || groups::text || '|' || pods::text
             FROM $env.plans ORDER BY trigger_event_id" >"$SYS_DIR/summary-$env"
done
unset DLBRAIN_ENV

ahead=$(sed -n 's/.*(decoding \([0-9]*\) message(s) ahead meanwhile.*/\1/p' "$SYS_DIR/optimizer-ahead1.log" |
    awk '{n += $1} END {print n + 0}')
[ "$ahead" -gt 0 ] || fail "ahead1 decoded no message ahead (its debug lines say 0)"
ok "ahead1 decoded $ahead message(s) while PostgreSQL stored the batch before them"
expect_eq "ahead0 decoded nothing ahead" 0 \
    "$(sed -n 's/.*(decoding \([0-9]*\) message(s) ahead meanwhile.*/\1/p' "$SYS_DIR/optimizer-ahead0.log" |
        awk '{n += $1} END {print n + 0}')"

# The plans must depend on each job's newest sample, or the comparison proves
# nothing: two kinds, the even jobs' (hot PS) and the odd jobs'.
expect_eq "kinds of plans (even jobs hot in their last sample, odd jobs not)" 2 \
    "$(sed 's/j[0-9]*-/J-/g' "$SYS_DIR/summary-ahead0" | cut -d'|' -f2- | sort -u | wc -l)"
if diff -u "$SYS_DIR/summary-ahead0" "$SYS_DIR/summary-ahead1"; then
    ok "the $jobs plans are the same with and without decoding ahead"
else
    fail "decoding ahead changed plans"
fi
echo "53-decode-ahead: all checks passed"
