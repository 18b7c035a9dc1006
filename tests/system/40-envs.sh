#!/usr/bin/env bash
# Environments, the relay and promotion, against a real Kafka broker (topic
# creation and deletion through the Admin API, transactions), PostgreSQL and
# Redis: blue (real, optimizer set dlrover) and green (virtual, dlbrain) each
# run an optimizer; agents talk to the front prefix dlbrain through one relay.
#  - plans reach the front from blue only, while green answers the same input;
#  - `env promote green` with everything running: new requests are answered at
#    the front by green only;
#  - isolation: blue's topics, schema and Redis keys hold nothing of green's,
#    and the other way round;
#  - the history, the refusals (second real, front = environment, dropping the
#    real one) and `env drop --purge` (topics, schema and keys gone).
. "$(dirname "$0")/helpers.sh"
data=$SYS_TOP/tests/system/data
parts=3 # of the environments' topics; the relay re-partitions by key

sys_start_pg
sys_start_redis
# The front's topics, dlbrain.*, with one partition: its plans are then in one
# order, which front_records pairs kcat's headers with `dlbrain plans` by.
sys_start_real_kafka 1
rc() { redis-cli -h "$DLBRAIN_REDIS_HOST" -p "$DLBRAIN_REDIS_PORT" "$@"; }
env_cli() { "$DLBRAIN" env "$@" -X topic.partitions=$parts -X relay.refresh.ms=300; }

# ---- registry and resources ------------------------------------------------------
env_cli create blue --real --optimizer-set dlrover --description "production brain" >/dev/null ||
    fail "env create blue"
env_cli create green --optimizer-set dlbrain -s dlbrain.scale.step.max=4 \
    --description "candidate" >/dev/null || fail "env create green"
ok "created blue (real) and green (virtual)"

out=$(env_cli create red --real 2>&1) && fail "a second real environment was accepted"
grep -q "blue is real already" <<<"$out" || fail "second real: unclear error: $out"
ok "a second real environment is refused: $out"
out=$(env_cli create blue 2>&1) && fail "creating blue twice was accepted"
grep -q "exists already" <<<"$out" || fail "second create: unclear error: $out"
out=$(env_cli create Bad-Name 2>&1) && fail "a bad name was accepted"
grep -q "lower-case letter" <<<"$out" || fail "bad name: unclear error: $out"
out=$(env_cli create grey -s env=blue 2>&1) && fail "--set env= was accepted"
ok "duplicate, badly named and self-renaming environments are refused"

expect_eq "env list" "blue real dlrover|green virtual dlbrain" \
    "$(env_cli list | awk 'NR > 1 {print $1, $2, $3}' | paste -sd'|')"
env_cli show blue >"$SYS_DIR/show-blue" || fail "env show blue"
expect_eq "blue's topics with $parts partitions" 8 \
    "$(grep -cE "^  blue\.[a-z0-9-]+ +$parts partition" "$SYS_DIR/show-blue")"
grep -qE '^postgresql: +schema blue, [1-9][0-9]* table' "$SYS_DIR/show-blue" ||
    fail "env show: no schema blue with tables: $(cat "$SYS_DIR/show-blue")"
ok "env show blue: 8 topics, schema blue migrated"
env_cli show green --format conf >"$SYS_DIR/green.conf"
env_cli show blue --format conf >"$SYS_DIR/blue.conf"
expect_eq "green's consumer settings" "env=green|optimizer.set=dlbrain|dlbrain.scale.step.max=4" \
    "$(grep -v '^#' "$SYS_DIR/green.conf" | paste -sd'|')"

out=$("$DLBRAIN" relay -e blue 2>&1) && fail "a relay with front = blue ran"
grep -q "is a registered environment" <<<"$out" || fail "relay loop: unclear error: $out"
ok "a relay whose front is an environment refuses to run"

# ---- run: a relay, an optimizer per environment ----------------------------------
"$DLBRAIN" relay -v -X relay.refresh.ms=300 -X consumer.poll.ms=100 \
    >/dev/null 2>"$SYS_DIR/relay.log" &
SYS_PIDS+=($!)
sys_start_optimizer blue -c "$SYS_DIR/blue.conf"
sys_start_optimizer green -c "$SYS_DIR/green.conf"
green_pid=${SYS_PIDS[-1]}

# wait_for SECONDS WHAT COMMAND...: until the command succeeds
wait_for() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "timed out waiting for $what"
        sleep 0.3
    done
}
# plans_of ENV N FILE: the first N plans of ENV.plans, as JSON lines
plans_of() {
    "$DLBRAIN" plans -q -e "$1" --all --count "$2" --timeout-ms 60000 --format json >"$3" ||
        fail "$1.plans did not reach $2 plans"
}
# front_records: "dlb.env|trigger|optimizer" of every plan at the front (the
# header the relay adds, the plan's fields), sorted
front_records() {
    local n
    n=$(kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.plans -e -q -f '%h\n' | wc -l)
    paste -d'|' \
        <(kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.plans -e -q -f '%h\n' | sed 's/.*dlb\.env=\([a-z0-9_]*\).*/\1/') \
        <("$DLBRAIN" plans -q --all --count "$n" --timeout-ms 30000 --format json |
            jq -r '"\(.trigger_event_id)|\(.optimizer)"') | sort
}
# the "N not forwarded" of the relay's debug lines add up to at least $1
dropped_at_least() { [ "$(grep -o '[0-9]* not forwarded' "$SYS_DIR/relay.log" | awk '{s += $1} END {print s + 0}')" -ge "$1" ]; }

wait_for 60 "the relay to subscribe" grep -q "dlbrain.\* -> 2 environment(s): blue, green" "$SYS_DIR/relay.log"
"$DLBRAIN" emit --strict -q "$data/pipeline.jsonl" || fail "emit to the front"
ok "the fixture went to the front (dlbrain.*)"

plans_of blue 5 "$SYS_DIR/blue1.json"
plans_of green 5 "$SYS_DIR/green1.json"
plans_of dlbrain 5 "$SYS_DIR/front1.json"
ok "both environments answered the front's input; the front got 5 plans"
# Green's 5 answers were read and not forwarded, so none can surface later.
wait_for 60 "the relay to drop green's answers" dropped_at_least 5
expect_eq "front plans, from blue only" \
    "blue|n1-q1|dlrover.create|blue|n2-q1|dlrover.create|blue|n3-q1|dlrover.oom|blue|n3-q2|dlrover.oom|blue|n3-q3|dlrover.oom" \
    "$(front_records | paste -sd'|')"

# ---- promote green while everything runs -----------------------------------------
env_cli promote green >"$SYS_DIR/promote.out" || fail "env promote green"
grep -q "green is real (blue is virtual now)" "$SYS_DIR/promote.out" ||
    fail "promote said: $(cat "$SYS_DIR/promote.out")"
wait_for 30 "the relay to switch" grep -q "now forwarding plans and configs of green (was blue)" "$SYS_DIR/relay.log"
ok "the relay switched to green without a restart"
cat >"$SYS_DIR/after.jsonl" <<'EOF'
{"type":"job_event","event_id":"p1-e1","event_time_ms":1767315600000,"job_uid":"p1","meta":{"name":"ctr-d","user":"ed","group":"ads","app":"ctr","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tensorflow"},"state":"created"}
{"type":"plan_request","event_id":"p1-q1","event_time_ms":1767315601000,"job_uid":"p1","stage":"job_stage_create"}
{"type":"plan_request","event_id":"n3-q4","event_time_ms":1767315602000,"job_uid":"n3","stage":"job_stage_running","oom_pod":"n3-worker-0"}
EOF
"$DLBRAIN" emit --strict -q "$SYS_DIR/after.jsonl" || fail "emit after the promotion"
plans_of blue 7 "$SYS_DIR/blue2.json"
plans_of green 7 "$SYS_DIR/green2.json"
plans_of dlbrain 7 "$SYS_DIR/front2.json"
wait_for 60 "the relay to drop blue's new answers" dropped_at_least 7
sleep 1
expect_eq "front plans after the promotion: the new ones from green only" \
    "blue|n1-q1|dlrover.create|blue|n2-q1|dlrover.create|blue|n3-q1|dlrover.oom|blue|n3-q2|dlrover.oom|blue|n3-q3|dlrover.oom|green|n3-q4|dlbrain.oom|green|p1-q1|dlrover.create" \
    "$(front_records | paste -sd'|')"
expect_eq "green's answer to n3-q4 at the front (dlbrain's VPA memory)" 10307921511 \
    "$(jq -r 'select(.trigger_event_id == "n3-q4") | .pods[0].resource.memory' "$SYS_DIR/front2.json")"

# ---- isolation -------------------------------------------------------------------
expect_eq "blue.plans: 7 plans, one per request" 7 "$(jq -r .plan_id "$SYS_DIR/blue2.json" | sort -u | wc -l)"
expect_eq "blue.plans: only blue's (dlrover) OOM answers" "dlrover.oom" \
    "$(jq -r 'select(.job_uid == "n3") | .optimizer' "$SYS_DIR/blue2.json" | sort -u | paste -sd' ')"
expect_eq "green.plans: only green's (dlbrain) OOM answers" "dlbrain.oom" \
    "$(jq -r 'select(.job_uid == "n3" and .trigger_event_id != "n3-q3") | .optimizer' "$SYS_DIR/green2.json" | sort -u | paste -sd' ')"
expect_eq "blue's schema: its 7 plans, none of green's" "7|0" \
    "$(sys_sql "SELECT count(*) || '|' || count(*) FILTER (WHERE optimizer LIKE 'dlbrain.%') FROM blue.plans")"
expect_eq "green's schema: its 7 plans, none of blue's" "7|0" \
    "$(sys_sql "SELECT count(*) || '|' || count(*) FILTER (WHERE optimizer LIKE 'dlrover.oom%') FROM green.plans")"
expect_eq "the front's schema was never created (no consumer of its own)" 0 \
    "$(sys_sql "SELECT count(*) FROM pg_namespace WHERE nspname = 'dlbrain'")"
expect_eq "Redis key prefixes" "blue green" \
    "$(rc --scan | cut -d: -f1 | sort -u | paste -sd' ')"
[ "$(rc --scan --pattern 'green:job:n3:*' | wc -l)" -gt 0 ] || fail "green's optimizer wrote no green:job:n3:* key"
ok "green's optimizer keeps its state under green:, blue's under blue:"
kcat -C -b "$DLBRAIN_BROKERS" -t blue.plans -e -q -f '%h\n' | grep -q dlb.env &&
    fail "a relayed record reached blue.plans"
ok "the relay never wrote into an environment's plans"

# ---- history and drop ------------------------------------------------------------
expect_eq "history" "create blue|create green|demote blue|promote green|mark green" \
    "$(env_cli history | awk 'NR > 1 {print $4, $5}' | paste -sd'|')"
out=$(env_cli drop green 2>&1) && fail "dropping the real environment was accepted"
grep -q "is the real one" <<<"$out" || fail "drop real: unclear error: $out"
ok "the real environment cannot be dropped: $out"
env_cli promote blue >/dev/null || fail "promote blue back"
wait_for 30 "the relay to switch back" grep -q "now forwarding plans and configs of blue (was green)" "$SYS_DIR/relay.log"

kill -TERM "$green_pid"
wait "$green_pid" || fail "green's optimizer did not stop cleanly"
unset 'SYS_PIDS[-1]'
env_cli drop green --purge >"$SYS_DIR/drop.out" || fail "env drop green --purge: $(cat "$SYS_DIR/drop.out")"
grep -q "deleted 8 topic(s) green" "$SYS_DIR/drop.out" || fail "drop: $(cat "$SYS_DIR/drop.out")"
wait_for 30 "green's topics to go" bash -c "! kcat -L -b '$DLBRAIN_BROKERS' | grep -q 'topic \"green\.'"
expect_eq "green's schema" 0 "$(sys_sql "SELECT count(*) FROM pg_namespace WHERE nspname = 'green'")"
expect_eq "green's Redis keys" 0 "$(rc --scan --pattern 'green:*' | wc -l)"
expect_eq "blue untouched" "7" "$(sys_sql "SELECT count(*) FROM blue.plans")"
[ "$(rc --scan --pattern 'blue:*' | wc -l)" -gt 0 ] || fail "the purge of green deleted blue's keys"
expect_eq "env list after the drop" "blue" "$(env_cli list | awk 'NR > 1 {print $1}' | paste -sd' ')"
expect_eq "env list --all" "blue -|green 20" "$(env_cli list --all | awk 'NR > 1 {print $1, substr($8, 1, 2)}' | paste -sd'|')"
expect_eq "history after the drop" \
    "create blue|create green|demote blue|promote green|mark green|demote green|promote blue|mark blue|drop green" \
    "$(env_cli history | awk 'NR > 1 {print $4, $5}' | paste -sd'|')"
env_cli history green | grep -q '"purge": true' || fail "the drop's detail does not record the purge"
out=$(env_cli promote green 2>&1) && fail "promoting a dropped environment was accepted"
grep -q "was dropped" <<<"$out" || fail "promote dropped: unclear error: $out"
ok "a dropped environment cannot be promoted"
wait_for 30 "the relay to let green go" grep -q "dlbrain.\* -> 1 environment(s): blue" "$SYS_DIR/relay.log"
sys_sql "UPDATE dlbrain_registry.env_history SET by_user = 'x'" 2>/dev/null &&
    fail "the history accepted an UPDATE"
ok "the history is append-only"
env_cli create green --optimizer-set dlrover >/dev/null || fail "creating a dropped name again"
expect_eq "green again, virtual" "blue real|green virtual" \
    "$(env_cli list | awk 'NR > 1 {print $1, $2}' | paste -sd'|')"
env_cli history green | tail -n 1 | grep -q '"revived": true' || fail "the re-create is not recorded as revived"
# routes_now TEXT: the relay's newest routing line says TEXT
routes_now() { grep 'relay: dlbrain\.\* -> ' "$SYS_DIR/relay.log" | tail -n 1 | grep -qF "$1"; }
wait_for 30 "the relay to take green back" routes_now "2 environment(s): blue, green"
ok "a dropped name can be created again, and the relay relays to it"
echo "40-envs: all checks passed"
