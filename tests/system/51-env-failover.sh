#!/usr/bin/env bash
# Automatic failover between environments, against a real Kafka broker,
# PostgreSQL and Redis: blue (real) and green, red (virtual), an optimizer for
# blue and green, two relays with the failover decider.
#  - `env standby`: at most one, never the real one, in list, show and history;
#  - exactly one relay holds the lease and decides; when it is killed (-9) the
#    other takes the lease over;
#  - job failures driven into the real environment's stream trip the policy
#    (share over the window, minimum jobs): the real one becomes virtual and
#    the standby real in one transaction, with reason and figures in history;
#  - no switch inside the cool-down, none while pinned by a manual promotion,
#    and the next one after `env unpin` once the cool-down is over.
. "$(dirname "$0")/helpers.sh"

parts=2
cooldown=12
sys_start_pg
sys_start_redis
sys_start_real_kafka $parts
rc() { redis-cli -h "$DLBRAIN_REDIS_HOST" -p "$DLBRAIN_REDIS_PORT" "$@"; }
env_cli() { "$DLBRAIN" env "$@" -X topic.partitions=$parts -X relay.refresh.ms=300; }
# wait_for SECONDS WHAT COMMAND...: until the command succeeds
wait_for() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "timed out waiting for $what"
        sleep 0.3
    done
}
real_is() { [ "$(env_cli list | awk '$2 == "real" {print $1}')" = "$1" ]; }
history_actions() { env_cli history | awk 'NR > 1 {print $4, $5}' | paste -sd'|'; }

# ---- standby ------------------------------------------------------------------------
env_cli create blue --real --optimizer-set dlrover >/dev/null || fail "env create blue"
env_cli create green --optimizer-set dlbrain >/dev/null || fail "env create green"
env_cli create red --optimizer-set dlbrain >/dev/null || fail "env create red"
out=$(env_cli standby blue 2>&1) && fail "the real environment was accepted as the standby"
grep -q "blue is the real one" <<<"$out" || fail "standby real: unclear error: $out"
out=$(env_cli standby nosuch 2>&1) && fail "an unknown standby was accepted"
grep -q "no environment nosuch" <<<"$out" || fail "standby unknown: unclear error: $out"
out=$(env_cli standby 2>&1) && fail "standby without NAME or --clear was accepted"
ok "the real environment, an unknown one and nothing are refused as the standby"
env_cli standby green >/dev/null || fail "env standby green"
env_cli standby red | grep -q "red is the standby (was green)" || fail "env standby red"
env_cli standby red >/dev/null || fail "choosing the standby again"
expect_eq "env list: red is the standby" "blue real -|green virtual -|red virtual standby" \
    "$(env_cli list | awk 'NR > 1 {print $1, $2, $NF}' | paste -sd'|')"
env_cli show red | grep -q '^standby: *yes' || fail "env show red: $(env_cli show red)"
env_cli show blue | grep -q '^failover: *armed (real blue, standby red)' ||
    fail "env show blue: $(env_cli show blue)"
sys_sql "UPDATE dlbrain_registry.environments SET standby = true WHERE name = 'green'" 2>/dev/null &&
    fail "a second standby was accepted by the database"
env_cli standby --clear | grep -q "no standby (was red)" || fail "env standby --clear"
env_cli show blue | grep -q '^failover: *off: no standby' || fail "env show after clear"
env_cli standby green >/dev/null || fail "env standby green again"
expect_eq "history" "create blue|create green|create red|standby green|standby red|unstandby red|standby green" \
    "$(history_actions)"
env_cli history | awk '$4 == "standby" && $5 == "red"' | grep -q '"was": "green"' ||
    fail "the standby row does not say which one it replaced"
ok "one standby at a time, shown in list and show, every change in the history"

# ---- two relays, one decider ---------------------------------------------------------
env_cli show blue --format conf >"$SYS_DIR/blue.conf"
env_cli show green --format conf >"$SYS_DIR/green.conf"
sys_start_optimizer blue -c "$SYS_DIR/blue.conf"
sys_start_optimizer green -c "$SYS_DIR/green.conf"
fo=(-X env.failover.window.s=120 -X env.failover.min.jobs=4 -X env.failover.threshold=0.5
    -X env.failover.cooldown.s=$cooldown -X env.failover.check.ms=300 -X env.failover.lease.s=3)
# start_relay NAME: a relay logging to NAME.log, metrics on a free port
start_relay() {
    "$DLBRAIN" relay -v -X relay.refresh.ms=300 -X consumer.poll.ms=100 "${fo[@]}" \
        -X metrics.port=0 -X metrics.address=127.0.0.1 >/dev/null 2>"$SYS_DIR/$1.log" &
    SYS_PIDS+=($!)
}
start_relay relay1
relay1_pid=${SYS_PIDS[-1]}
start_relay relay2
relay2_pid=${SYS_PIDS[-1]}
sys_metrics_url relay1
url1=$url
sys_metrics_url relay2
url2=$url
metric() { curl -sf "$1/metrics" | awk -v s="$2" '$1 == s { v = $2 } END { print v + 0 }'; }
leaders() { echo $(($(metric "$url1" dlbrain_failover_leader) + $(metric "$url2" dlbrain_failover_leader))); }
wait_for 30 "a relay to take the lease" grep -q "failover: took the lease" "$SYS_DIR/relay1.log" "$SYS_DIR/relay2.log"
sleep 2
expect_eq "relays holding the lease" 1 "$(leaders)"
if [ "$(metric "$url1" dlbrain_failover_leader)" = 1 ]; then
    leader=relay1 leader_pid=$relay1_pid other=relay2 other_url=$url2
else
    leader=relay2 leader_pid=$relay2_pid other=relay1 other_url=$url1
fi
ok "one relay of two decides ($leader)"
kill -KILL "$leader_pid"
wait "$leader_pid" 2>/dev/null || true
for i in "${!SYS_PIDS[@]}"; do [ "${SYS_PIDS[$i]}" = "$leader_pid" ] && unset "SYS_PIDS[$i]"; done
wait_for 30 "$other to take the lease over" grep -q "failover: took the lease" "$SYS_DIR/$other.log"
expect_eq "$other leads" 1 "$(metric "$other_url" dlbrain_failover_leader)"
ok "the lease moved to $other after $leader was killed (-9)"
start_relay "$leader"
sys_metrics_url "$leader"
url_new=$url
sleep 2
expect_eq "the restarted relay waits" 0 "$(metric "$url_new" dlbrain_failover_leader)"
url=$other_url

# ---- jobs finish in the real environment ---------------------------------------------
# finish TAG N STATE: N jobs TAG-1..N created and finished (STATE) now, at the front
n_emitted=0
finish() {
    local now i
    now=$(($(date +%s%3N)))
    for i in $(seq 1 "$2"); do
        printf '{"type":"job_event","event_id":"%s-%d-c","event_time_ms":%d,"job_uid":"%s-%d","meta":{"name":"j","user":"u","group":"g","app":"a","cluster":"c1","namespace":"ml","scenario":"s1","framework":"tensorflow"},"state":"created"}\n' \
            "$1" "$i" $((now - 1000)) "$1" "$i"
        printf '{"type":"job_event","event_id":"%s-%d-f","event_time_ms":%d,"job_uid":"%s-%d","state":"%s"}\n' \
            "$1" "$i" "$now" "$1" "$i" "$3"
    done >"$SYS_DIR/jobs.jsonl"
    "$DLBRAIN" emit --strict -q "$SYS_DIR/jobs.jsonl" || fail "emit $1"
}
# stored ENV TAG N: ENV's optimizer stored the N outcomes of TAG
stored() { [ "$(sys_sql "SELECT count(*) FROM $1.job_events WHERE event_id LIKE '$2-%-f'")" -ge "$3" ]; }

finish ok1 3 succeeded
finish bad1 1 failed
wait_for 60 "blue to store 4 outcomes" stored blue bad1 1
wait_for 30 "the policy to see 4 jobs" bash -c "[ \"\$(curl -sf $url/metrics | awk '\$1 == \"dlbrain_failover_window_jobs\" {print \$2}')\" = 4 ]"
expect_eq "failed share at 1 of 4" 0.25 "$(metric "$url" dlbrain_failover_failed_share)"
sleep 1
real_is blue || fail "a switch at 25 % failed"
ok "1 failed job of 4 (25 %) leaves blue real"

finish bad2 3 failed
wait_for 60 "the failover to green" real_is green
t_switch1=$SECONDS
grep -q "failover: switched blue -> green" "$SYS_DIR/$other.log" || fail "no switch line in $other.log"
grep -q "failover: switched" "$SYS_DIR/$leader.log" && fail "the relay without the lease switched too"
wait_for 30 "the relays to forward green" grep -q "now forwarding plans and configs of green (was blue)" "$SYS_DIR/$leader.log"
expect_eq "history of the failover" "demote blue|promote green" \
    "$(env_cli history | awk 'NR > 1 {print $4, $5}' | tail -n 2 | paste -sd'|')"
detail=$(env_cli history green | tail -n 1)
grep -q '"cause": "failover"' <<<"$detail" || fail "promote row: $detail"
grep -q '"jobs": 7' <<<"$detail" && grep -q '"failed": 4' <<<"$detail" ||
    fail "the promote row lacks the figures: $detail"
grep -q '4 of 7 jobs failed (57.1 %)' <<<"$detail" || fail "the promote row lacks the reason: $detail"
expect_eq "by" failover "$(env_cli history green | tail -n 1 | awk '{print $6}')"
expect_eq "green real and no longer the standby" "blue virtual -|green real -|red virtual -" \
    "$(env_cli list | awk 'NR > 1 {print $1, $2, $NF}' | paste -sd'|')"
env_cli show blue | grep -q '^failover: *off: no standby' || fail "env show after the failover"
expect_eq "switches counted by the decider" 1 "$(metric "$url" dlbrain_failover_switches_total)"
ok "4 failed jobs of 7 (57 %) switched blue -> green in one transaction, figures in the history"

# ---- cool-down: failures in green at once do not switch back --------------------------
env_cli standby blue >/dev/null || fail "env standby blue"
finish bad3 5 failed
wait_for 60 "green to store the failures" stored green bad3 5
wait_for 30 "the policy's cool-down verdict" bash -c "[ \"\$(curl -sf $url/metrics | awk '\$1 == \"dlbrain_failover_verdict{verdict=\\\"cooldown\\\"}\" {print \$2}')\" = 1 ]"
[ $((SECONDS - t_switch1)) -lt $cooldown ] || fail "the check took longer than the cool-down"
real_is green || fail "switched back inside the cool-down"
ok "5 failed jobs in green inside the cool-down: no switch"
wait_for $((cooldown + 30)) "the failover back to blue" real_is blue
[ $((SECONDS - t_switch1)) -ge $((cooldown - 1)) ] || fail "switched back after $((SECONDS - t_switch1)) s"
ok "after the cool-down ($cooldown s) the same failures switch green -> blue"

# ---- a manual promotion pins -----------------------------------------------------------
env_cli standby green >/dev/null || fail "env standby green"
env_cli promote red | grep -q "pinned" || fail "env promote red does not say it pins"
env_cli show red | grep -q '^failover: *off: pinned' || fail "env show after a manual promotion"
env_cli show red --format conf >"$SYS_DIR/red.conf"
sys_start_optimizer red -c "$SYS_DIR/red.conf"
sleep $((cooldown + 1))
finish bad4 5 failed
wait_for 60 "red to store the failures" stored red bad4 5
wait_for 30 "the policy's pinned verdict" bash -c "[ \"\$(curl -sf $url/metrics | awk '\$1 == \"dlbrain_failover_verdict{verdict=\\\"pinned\\\"}\" {print \$2}')\" = 1 ]"
real_is red || fail "switched while pinned"
ok "pinned by env promote: 5 failed jobs of red do not switch"
env_cli unpin | grep -q unpinned || fail "env unpin"
wait_for 30 "the failover red -> green after unpin" real_is green
expect_eq "history from the manual promotion" "demote blue|promote red|unpin red|demote red|promote green" \
    "$(env_cli history | awk 'NR > 1 {print $4, $5}' | grep -v standby | tail -n 5 | paste -sd'|')"
env_cli history red | awk '$4 == "promote"' | tail -n 1 | grep -q '"pinned": true' ||
    fail "the manual promote row does not record the pin"
ok "env unpin: red's failures switch red -> green"
