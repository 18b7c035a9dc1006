#!/usr/bin/env bash
# Configuration matching in the pipeline, against the mock Kafka cluster and
# real PostgreSQL and Redis: rules applied with `dlbrain config apply`, job
# events with meta and config requests answered on <env>.configs and in
# PostgreSQL with the matches worked out by hand below; a new rules version
# picked up by the running configurer without a restart; the Redis cache keyed
# by version (a new version never reads an old entry); Redis down slows
# matching but never breaks it; a redelivery changes nothing.
. "$(dirname "$0")/helpers.sh"

sys_start_pg
sys_start_redis
sys_start_kafka 1
rc() { redis-cli -h "$DLBRAIN_REDIS_HOST" -p "$DLBRAIN_REDIS_PORT" "$@"; }

# The rules (shared with 17-python-client.sh): default, ads-team, ads-big.
cp "$SYS_TOP/tests/system/data/rules-ads.yaml" "$SYS_DIR/base.yaml"
"$DLBRAIN" config apply -q "$SYS_DIR/base.yaml" >"$SYS_DIR/apply1.txt" || fail "config apply"
grep -q "applied version 1" "$SYS_DIR/apply1.txt" && ok "rules version 1 applied" ||
    fail "apply said: $(cat "$SYS_DIR/apply1.txt")"

"$DLBRAIN" configurer -X config.refresh.ms=300 -X consumer.poll.ms=100 >/dev/null \
    2>"$SYS_DIR/configurer.log" &
SYS_PIDS+=($!)

T0=1767312000000
emit() { "$DLBRAIN" emit --strict -q || fail "emit"; }
emit <<EOF
{"type":"job_event","event_id":"j1-e1","event_time_ms":$T0,"job_uid":"j1","meta":{"name":"ctr-a","user":"ana","group":"ads","app":"ctr","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tf"},"state":"created"}
{"type":"job_event","event_id":"j2-e1","event_time_ms":$T0,"job_uid":"j2","meta":{"name":"ctr-b","user":"bo","group":"ads","app":"ctr","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tf"},"state":"created"}
{"type":"config_request","event_id":"j3-c1","event_time_ms":$((T0 + 1000)),"job_uid":"j3","meta":{"name":"","user":"cy","group":"nlp","app":"","cluster":"c2","namespace":"","scenario":"","framework":""}}
{"type":"job_event","event_id":"j4-e1","event_time_ms":$T0,"job_uid":"j4","state":"created"}
{"type":"config_request","event_id":"j4-c1","event_time_ms":$((T0 + 1000)),"job_uid":"j4"}
{"type":"config_request","event_id":"j1-c1","event_time_ms":$((T0 + 2000)),"job_uid":"j1"}
EOF
"$DLBRAIN" configs -q --count 5 --timeout-ms 60000 --format json >"$SYS_DIR/m1.json" ||
    fail "the master did not receive 5 matches"

# trigger|version|rule ids|values, sorted. Worked out by hand:
# j1 (ana, ads, c1): in scope of all three; precedence ads-big (priority 10),
#   ads-team (priority 0, 1 attribute), default (0 attributes). Merged from the
#   lowest: default {ps:{cpu:8,memory:16}, log:info}, then ads-team merges ps
#   (cpu 12) and adds lr, then ads-big sets log: debug.
# j2 (bo): ads-big's Exclude (User bo) takes it out: ads-team, default.
# j3: only the request's attributes (nlp): default.
# j4: a job event without meta (no match of its own), a request without meta:
#   no attributes, only the rule without Include: default.
summarise() {
    jq -r '[.trigger_event_id, (.rules_version | tostring), (.rule_ids | join(",")),
            (.values | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(" "))] | join("|")' "$1" | sort
}
summarise "$SYS_DIR/m1.json" >"$SYS_DIR/got1"
cat >"$SYS_DIR/want1" <<'EOF'
j1-c1|1|ads-big,ads-team,default|log="debug" lr=0.01 ps={"cpu":12,"memory":16}
j1-e1|1|ads-big,ads-team,default|log="debug" lr=0.01 ps={"cpu":12,"memory":16}
j2-e1|1|ads-team,default|log="info" lr=0.01 ps={"cpu":12,"memory":16}
j3-c1|1|default|log="info" ps={"cpu":8,"memory":16}
j4-c1|1|default|log="info" ps={"cpu":8,"memory":16}
EOF
if diff -u "$SYS_DIR/want1" "$SYS_DIR/got1"; then ok "matches equal the hand-worked ones"; else fail "matches differ"; fi
expect_eq "match ids" "cfg-j1-c1 cfg-j1-e1 cfg-j2-e1 cfg-j3-c1 cfg-j4-c1" \
    "$(jq -r .event_id "$SYS_DIR/m1.json" | sort | xargs)"
sys_wait_count config_matches 5 30
expect_eq "config_matches rows" 5 "$(sys_count config_matches)"
expect_eq "stored match of j2" '["ads-team", "default"]' \
    "$(sys_sql "SELECT rule_ids FROM $(sys_schema).config_matches WHERE event_id = 'cfg-j2-e1'")"
# j1's two triggers share their attributes: one cache entry, the second a hit.
expect_eq "cached matches of version 1" 4 "$(rc --scan --pattern 'dlbrain:cfg:1:*' | wc -l)"

# ---- a new version, picked up without a restart ------------------------------
sed -e 's/^  log: info$/  log: warn/' "$SYS_DIR/base.yaml" >"$SYS_DIR/v2.yaml"
"$DLBRAIN" config apply -q "$SYS_DIR/v2.yaml" >"$SYS_DIR/apply2.txt" || fail "config apply v2"
deadline=$((SECONDS + 30))
until grep -q "rules version 2 in force" "$SYS_DIR/configurer.log"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the configurer did not pick up version 2"
    sleep 0.2
done
ok "the running configurer picked up version 2"
emit <<EOF
{"type":"config_request","event_id":"j2-c2","event_time_ms":$((T0 + 3000)),"job_uid":"j2"}
EOF
"$DLBRAIN" configs -q --job j2 --count 2 --timeout-ms 60000 --format json >"$SYS_DIR/m2.json" ||
    fail "no match for j2's second request"
summarise <(jq -c 'select(.trigger_event_id == "j2-c2")' "$SYS_DIR/m2.json") >"$SYS_DIR/got2"
# Version 2's default says log: warn; j2 is still out of ads-big.
echo 'j2-c2|2|ads-team,default|log="warn" lr=0.01 ps={"cpu":12,"memory":16}' >"$SYS_DIR/want2"
if diff -u "$SYS_DIR/want2" "$SYS_DIR/got2"; then ok "version 2 answers with its own values"; else fail "version 2 match differs"; fi
expect_eq "cached matches of version 2" 1 "$(rc --scan --pattern 'dlbrain:cfg:2:*' | wc -l)"

# ---- Redis down: slower, not broken --------------------------------------------
"$SYS_TOP/scripts/redis" stop --dir "$SYS_DIR/redis" >/dev/null
emit <<EOF
{"type":"config_request","event_id":"j1-c3","event_time_ms":$((T0 + 4000)),"job_uid":"j1"}
EOF
"$DLBRAIN" configs -q --job j1 --count 3 --timeout-ms 60000 --format json >"$SYS_DIR/m3.json" ||
    fail "no match while Redis is down"
expect_eq "match of j1 with Redis down" 'ads-big,ads-team,default|log="debug"' \
    "$(jq -r 'select(.trigger_event_id == "j1-c3") | "\(.rule_ids | join(","))|log=\(.values.log)"' "$SYS_DIR/m3.json")"
grep -q "redis: .* failed" "$SYS_DIR/configurer.log" && ok "the outage is logged" ||
    fail "no log line about Redis being down"
"$SYS_TOP/scripts/redis" start --dir "$SYS_DIR/redis" --port "$DLBRAIN_REDIS_PORT" >/dev/null

# ---- redelivery: nothing new, the same bytes again -------------------------------
emit <<EOF
{"type":"config_request","event_id":"j3-c1","event_time_ms":$((T0 + 1000)),"job_uid":"j3","meta":{"name":"","user":"cy","group":"nlp","app":"","cluster":"c2","namespace":"","scenario":"","framework":""}}
EOF
"$DLBRAIN" configs -q --all --job j3 --count 2 --timeout-ms 60000 --format json >"$SYS_DIR/m4.json" ||
    fail "the redelivered request was not answered again"
expect_eq "the same match twice" 1 "$(sort -u "$SYS_DIR/m4.json" | wc -l)"
sleep 1
expect_eq "config_matches rows after redelivery" 7 "$(sys_count config_matches)"
# ---- an invalid environment name: refused at start, nothing named after it -------
# Every command that names topics, consumer groups, a schema or Redis keys
# after the env setting refuses a name `dlbrain env create` refuses, before it
# connects to anything (issue 18). The servers are up: the old commands ran.
bad=blue-green
for cmd in optimizer configurer relay gateway k8s-monitor plans configs mock-kafka \
    "emit /dev/null" "sim -n 1 -w $SYS_TOP/data/pollux/workloads/workload-1.csv" \
    "replay --from -1h --into green"; do
    # shellcheck disable=SC2086 # the command and its arguments
    st=0
    timeout 20 "$DLBRAIN" $cmd -e "$bad" -X metrics.port=-1 >/dev/null 2>"$SYS_DIR/badenv.log" || st=$?
    { [ "$st" = 1 ] || [ "$st" = 2 ]; } &&
        grep -qF "configuration: env: environment name '$bad' may hold only a-z, 0-9 and _" "$SYS_DIR/badenv.log" &&
        ok "${cmd%% *} refuses env $bad" ||
        fail "${cmd%% *} with env $bad: exit $st, $(head -c 300 "$SYS_DIR/badenv.log")"
done
DLBRAIN_ENV='jobs*' timeout 20 "$DLBRAIN" optimizer -X metrics.port=-1 >/dev/null 2>"$SYS_DIR/badenv.log" &&
    fail "an optimizer ran with DLBRAIN_ENV='jobs*'"
grep -qF "environment name 'jobs*' may hold only" "$SYS_DIR/badenv.log" &&
    ok "DLBRAIN_ENV='jobs*' refused" || fail "DLBRAIN_ENV='jobs*': $(cat "$SYS_DIR/badenv.log")"
expect_eq "Redis keys named after $bad" "" "$(rc --scan --pattern "$bad*")"
expect_eq "schemas named after $bad" 0 \
    "$(sys_sql "SELECT count(*) FROM pg_namespace WHERE nspname IN ('$bad', 'blue_green')")"
expect_eq "topics named after $bad" 0 \
    "$(kcat -L -b "$DLBRAIN_BROKERS" -J 2>/dev/null | jq "[.topics[].topic | select(startswith(\"$bad.\"))] | length")"
echo "14-configurer: all checks passed"
