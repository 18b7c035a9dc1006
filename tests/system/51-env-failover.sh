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
#    and the next one after `env unpin` once the cool-down is over; `env
#    promote --no-pin` refused while pinned; the relay without the lease
#    reports the registry's pin and the same window as the decider;
#  - a switch whose markers `env promote` could not write (the broker
#    unreachable): exit status 3, then the relay holding the lease writes
#    them (`<switch>:<env>`, a mark row by failover) and they take effect;
#    no marker is ever copied into an environment.
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
# the history's actions and names, without the mark rows (checked at the end)
history_actions() { env_cli history | awk 'NR > 1 && $4 != "mark" {print $4, $5}' | paste -sd'|'; }
# promote_row NAME: NAME's newest promote row
promote_row() { env_cli history "$1" | awk '$4 == "promote"' | tail -n 1; }

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
# Late plans are judged too (the query runs every check), never enough to trip.
fo=(-X env.failover.window.s=120 -X env.failover.min.jobs=4 -X env.failover.threshold=0.5
    -X env.failover.cooldown.s=$cooldown -X env.failover.check.ms=300 -X env.failover.lease.s=3
    -X env.failover.late.ms=60000 -X env.failover.late.min.requests=1000000)
declare -A relay_pid
# start_relay NAME: a relay logging to NAME.log (appended), metrics on a free
# port; a static group member (NAME), so that one restarted after kill -9
# takes its partitions back at once instead of after a rebalance, and a short
# session for the partitions of one that stays away
start_relay() {
    "$DLBRAIN" relay -v -X relay.refresh.ms=300 -X consumer.poll.ms=100 "${fo[@]}" \
        -X group.instance.id="$1" -X session.timeout.ms=3000 -X heartbeat.interval.ms=500 \
        -X metrics.port=0 -X metrics.address=127.0.0.1 >/dev/null 2>>"$SYS_DIR/$1.log" &
    SYS_PIDS+=($!)
    relay_pid[$1]=$!
}
# kill_relay NAME: kill -9, and forget it
kill_relay() {
    local pid=${relay_pid[$1]} i
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    for i in "${!SYS_PIDS[@]}"; do [ "${SYS_PIDS[$i]}" = "$pid" ] && unset "SYS_PIDS[$i]"; done
    return 0
}
start_relay relay1
start_relay relay2
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
    leader=relay1 other=relay2 other_url=$url2
else
    leader=relay2 other=relay1 other_url=$url1
fi
ok "one relay of two decides ($leader)"
kill_relay "$leader"
: >"$SYS_DIR/$leader.log"
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
expect_eq "failed share at 1 of 4" 0.25 "$(metric "$url" dlbrain_failover_failed_ratio)"
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
    "$(history_actions | tr '|' '\n' | tail -n 2 | paste -sd'|')"
detail=$(promote_row green)
grep -q '"cause": "failover"' <<<"$detail" || fail "promote row: $detail"
grep -q '"jobs": 7' <<<"$detail" && grep -q '"failed": 4' <<<"$detail" ||
    fail "the promote row lacks the figures: $detail"
grep -q '4 of 7 jobs failed (57.1 %)' <<<"$detail" || fail "the promote row lacks the reason: $detail"
expect_eq "by" failover "$(promote_row green | awk '{print $6}')"
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
# Every relay reports what the registry says, not only the decider.
expect_eq "the restarted relay still waits" 0 "$(metric "$url_new" dlbrain_failover_leader)"
both() { [ "$(metric "$url" "$1") $(metric "$url_new" "$1")" = "$2 $2" ]; }
wait_for 10 "both relays to report the pin" both dlbrain_failover_pinned 1
wait_for 10 "both relays to report the pinned verdict" both 'dlbrain_failover_verdict{verdict="pinned"}' 1
wait_for 10 "both relays to report red's 5 jobs in the window" both dlbrain_failover_window_jobs 5
ok "the relay without the lease reports the pin and the window as the decider does"
# --no-pin would leave the pin in place: refused, nothing changes.
rows=$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history")
out=$(env_cli promote green --no-pin 2>&1) && fail "env promote --no-pin while pinned was accepted: $out"
grep -q "would leave the pin in place: nothing changed" <<<"$out" && grep -q "env unpin" <<<"$out" || fail "--no-pin while pinned: unclear error: $out"
expect_eq "history rows after the refusal" "$rows" "$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history")"
real_is red || fail "the refused promotion switched"
env_cli show red | grep -q '^failover: *off: pinned' || fail "env show after the refused --no-pin"
ok "env promote --no-pin while pinned is refused, nothing changed: $out"
env_cli unpin | grep -q unpinned || fail "env unpin"
wait_for 30 "the failover red -> green after unpin" real_is green
expect_eq "history from the manual promotion" "demote blue|promote red|unpin red|demote red|promote green" \
    "$(history_actions | tr '|' '\n' | grep -v standby | tail -n 5 | paste -sd'|')"
env_cli history red | awk '$4 == "promote"' | tail -n 1 | grep -q '"pinned": true' ||
    fail "the manual promote row does not record the pin"
ok "env unpin: red's failures switch red -> green"

# ---- exactly once at the front across ten switches -------------------------------------
# A steady load of plan requests at the front while environments switch, five
# times by hand and five times by the policy, with the relays killed (-9) in
# between; then every request must have been answered at the front exactly once,
# by the environment of the newest switch marker before it in its partition.
for r in relay1 relay2; do kill_relay $r; done
# A switch whose markers env promote cannot write (no broker there) is recorded,
# says so with exit status 3, and gets them from the relay that takes the lease.
real_is green || fail "green is not real before the late switch"
rc=0
env_cli promote red --no-pin -b 127.0.0.1:1 >"$SYS_DIR/promote.out" 2>&1 || rc=$?
expect_eq "exit status of a promote without markers" 3 "$rc"
late_id=$(sed -n 's/.*switch \([0-9]*\) is recorded (red is real in the registry), but its markers are not in dlbrain\.\*.*/\1/p' "$SYS_DIR/promote.out")
[ -n "$late_id" ] || fail "promote without markers: $(cat "$SYS_DIR/promote.out")"
grep -q "green answers the front" "$SYS_DIR/promote.out" && grep -q "writes them" "$SYS_DIR/promote.out" &&
    grep -q "dlbrain env promote red' again" "$SYS_DIR/promote.out" || fail "promote without markers: $(cat "$SYS_DIR/promote.out")"
real_is red || fail "red is not real after its switch was recorded"
env_cli show red 2>&1 >/dev/null | grep "out of range" && fail "env show red: a column read out of range"
ok "env promote with the broker away: exit 3, switch $late_id recorded, red real, green answering until the markers"
fo=(-X env.failover.window.s=120 -X env.failover.min.jobs=4 -X env.failover.threshold=0.5
    -X env.failover.cooldown.s=5 -X env.failover.check.ms=300 -X env.failover.lease.s=3
    -X env.failover.late.ms=60000 -X env.failover.late.min.requests=1000000)
start_relay relay1
start_relay relay2
late_marked() { [ "$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history WHERE action = 'mark' AND (detail->>'switch')::bigint = $1")" -ge 1 ]; }
wait_for 60 "the relay holding the lease to mark switch $late_id" late_marked "$late_id"
expect_eq "the late mark row: name, by" "red failover" \
    "$(sys_sql "SELECT name || ' ' || by_user FROM dlbrain_registry.env_history WHERE action = 'mark' AND (detail->>'switch')::bigint = $late_id")"
expect_eq "markers of switch $late_id in dlbrain.plan-requests" "$parts" \
    "$(kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.plan-requests -e -q -f '%h\n' | grep -c "dlb\.switch=$late_id:red$")"
grep -q "failover: switch $late_id (red real) has no markers in dlbrain.\* after 10 s; writing them" "$SYS_DIR"/relay*.log ||
    fail "no relay said it wrote the markers of switch $late_id"
ok "the relay holding the lease wrote switch $late_id's markers ($late_id:red, a mark row by failover)"
env_cli standby --clear >/dev/null
jobs=(lj1 lj2 lj3 lj4 lj5 lj6)
for j in "${jobs[@]}"; do
    printf '{"type":"job_event","event_id":"%s-c","event_time_ms":%d,"job_uid":"%s","meta":{"name":"%s","user":"u","group":"g","app":"a","cluster":"c1","namespace":"ml","scenario":"s9","framework":"tensorflow"},"state":"created"}\n' \
        "$j" "$(date +%s%3N)" "$j" "$j"
done >"$SYS_DIR/load-jobs.jsonl"
"$DLBRAIN" emit --strict -q "$SYS_DIR/load-jobs.jsonl" || fail "emit the load's jobs"
# the load: 6 requests (one per job) a round, until load.stop exists
: >"$SYS_DIR/sent"
(
    n=0
    while [ ! -e "$SYS_DIR/load.stop" ]; do
        n=$((n + 1))
        now=$(date +%s%3N)
        for k in "${!jobs[@]}"; do
            printf '{"type":"plan_request","event_id":"ld%d-%d","event_time_ms":%d,"job_uid":"%s","stage":"job_stage_create"}\n' \
                "$n" "$k" "$now" "${jobs[$k]}"
        done >"$SYS_DIR/load.jsonl"
        "$DLBRAIN" emit --strict -q "$SYS_DIR/load.jsonl" || exit 1
        for k in "${!jobs[@]}"; do echo "ld$n-$k"; done >>"$SYS_DIR/sent"
        sleep 0.2
    done
) &
load_pid=$!
manual() { # manual ENV: env promote ENV --no-pin, checked
    env_cli promote "$1" --no-pin >"$SYS_DIR/promote.out" 2>&1 || fail "env promote $1: $(cat "$SYS_DIR/promote.out")"
    grep -q "switch [0-9]* marked in $((5 * parts)) partition(s) of dlbrain" "$SYS_DIR/promote.out" ||
        fail "env promote $1 wrote no markers: $(cat "$SYS_DIR/promote.out")"
    real_is "$1" || fail "$1 is not real after env promote"
    sleep 2
}
late() { # late ENV: env promote ENV --no-pin with the front's broker away while the relays run
    local rc=0
    env_cli promote "$1" --no-pin -b 127.0.0.1:1 >"$SYS_DIR/promote.out" 2>&1 || rc=$?
    # giving up on Kafka takes 30 s; the relay with the lease marks a switch 10 s old
    expect_eq "env promote $1 with the broker away (the relay wrote the markers)" 0 "$rc"
    grep -q "marked in dlbrain.\* by the relay holding the failover lease" "$SYS_DIR/promote.out" ||
        fail "env promote $1: $(cat "$SYS_DIR/promote.out")"
    real_is "$1" || fail "$1 is not real after env promote"
    sleep 2
}
auto() { # auto FROM TO TAG: TO standby, FROM's jobs fail after the cool-down, TO real
    env_cli standby "$2" >/dev/null || fail "env standby $2"
    sleep 6
    real_is "$1" || fail "switched away from $1 before its jobs failed"
    finish "$3" 4 failed
    wait_for 60 "the failover $1 -> $2" real_is "$2"
    sleep 2
}
switches0=$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history WHERE action = 'promote'")
manual blue
kill_relay relay1
lines=$(wc -l <"$SYS_DIR/relay1.log")
start_relay relay1
# the stamps of its partitions come back from the offsets the group committed
restamped() { tail -n +$((lines + 1)) "$SYS_DIR/relay1.log" | grep -q "(switch [1-9][0-9]*, as committed)"; }
wait_for 30 "the restarted relay to read its stamps from the committed offsets" restamped
manual green
auto green blue c3
kill_relay relay2; start_relay relay2
late red
auto red green c5
manual blue
kill_relay relay1; start_relay relay1
auto blue red c7
manual green
kill_relay relay2; start_relay relay2
auto green blue c9
manual red
touch "$SYS_DIR/load.stop"
wait "$load_pid" || fail "the load generator failed"
expect_eq "switches in this part" 10 \
    "$(($(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history WHERE action = 'promote'") - switches0))"
expect_eq "of them automatic" 4 \
    "$(sys_sql "SELECT count(*) FROM (SELECT * FROM dlbrain_registry.env_history WHERE action = 'promote' ORDER BY id DESC LIMIT 10) h WHERE detail->>'cause' = 'failover'")"
sent=$(wc -l <"$SYS_DIR/sent")
ok "$sent requests sent through 10 switches (6 manual, one of them marked late by a relay, 4 by the policy) and 4 relay kills"

# front_dump TOPIC FILE: the whole topic, as env_switch_check.py reads it
front_dump() { kcat -C -b "$DLBRAIN_BROKERS" -t "$1" -e -q -f '%p %o %S %h\n%s' >"$2"; }
front_plans() { kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.plans -e -q -f '%o\n' | wc -l; }
wait_for 120 "every request answered at the front" bash -c "[ \$(kcat -C -b '$DLBRAIN_BROKERS' -t dlbrain.plans -e -q -f '%o\n' | wc -l) -ge $sent ]"
sleep 5 # a duplicate would show up by now: the relays forward within a batch
front_dump dlbrain.plan-requests "$SYS_DIR/requests.dump"
front_dump dlbrain.plans "$SYS_DIR/plans.dump"
sys_sql "SELECT detail FROM dlbrain_registry.env_history WHERE action = 'mark' ORDER BY id" >"$SYS_DIR/marks.jsonl"
python3 "$SYS_TOP/tests/system/env_switch_check.py" "$SYS_DIR/requests.dump" "$SYS_DIR/plans.dump" \
    "$SYS_DIR/marks.jsonl" "$SYS_DIR/sent" >"$SYS_DIR/check.out" || fail "exactly once at the front: $(cat "$SYS_DIR/check.out")"
ok "every request answered at the front exactly once, by the environment of its partition's newest marker: $(head -n 1 "$SYS_DIR/check.out")"
expect_eq "promote rows without a mark row" 0 \
    "$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history p WHERE action = 'promote' AND NOT EXISTS (SELECT 1 FROM dlbrain_registry.env_history m WHERE m.action = 'mark' AND (m.detail->>'switch')::bigint = p.id)")"
expect_eq "automatic switches closer than the cool-down to the switch before" 0 \
    "$(sys_sql "SELECT count(*) FROM (SELECT detail->>'cause' AS cause, at - lag(at) OVER (ORDER BY id) AS gap FROM dlbrain_registry.env_history WHERE action = 'promote') h WHERE cause = 'failover' AND gap < interval '5 s'")"
ok "every switch is marked in the history; no automatic switch inside the cool-down"
me=${USER:-$(id -un)}
expect_eq "mark rows not by $me or failover" 0 \
    "$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history WHERE action = 'mark' AND by_user NOT IN ('$me', 'failover')")"
expect_eq "mark rows of automatic switches not by failover" 0 \
    "$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history m JOIN dlbrain_registry.env_history p ON p.id = (m.detail->>'switch')::bigint WHERE m.action = 'mark' AND p.detail->>'cause' = 'failover' AND m.by_user <> 'failover'")"
[ "$(sys_sql "SELECT count(*) FROM dlbrain_registry.env_history WHERE action = 'mark' AND by_user = '$me'")" -ge 5 ] ||
    fail "the mark rows of env promote do not name $me"
ok "mark rows name who wrote the markers: $me (env promote) or failover (the relay)"
# markers are read, never copied: no environment's topic holds one, no DLQ
# holds anything, and none was malformed (the front's DLQ is empty)
for e in blue green red; do
    for t in job-events metrics k8s-events plan-requests config-requests; do
        expect_eq "markers copied into $e.$t" 0 \
            "$(kcat -C -b "$DLBRAIN_BROKERS" -t "$e.$t" -e -q -f '%h\n' | grep -c 'dlb\.switch=' || true)"
    done
    expect_eq "records in $e.dlq" 0 "$(kcat -C -b "$DLBRAIN_BROKERS" -t "$e.dlq" -e -q -f '%o\n' | wc -l)"
done
expect_eq "records in dlbrain.dlq" 0 "$(kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.dlq -e -q -f '%o\n' | wc -l)"
grep -h "out of range" "$SYS_DIR"/relay*.log && fail "libpq: a column read out of range"
ok "no marker in any environment's topics, nothing dead-lettered, no column read out of range"
grep -h "failover: .*reading the" "$SYS_DIR"/relay*.log && fail "the decider could not read its inputs"
ok "the decider read the job outcomes and the plan requests (late plans) without an error"

# ---- the evaluator marks the switches on its plots over time ------------------------------
"$DLBRAIN" eval blue green --html "$SYS_DIR/eval.html" >/dev/null 2>"$SYS_DIR/eval.log" ||
    fail "dlbrain eval blue green: $(cat "$SYS_DIR/eval.log")"
marks=$(grep -o '<g class="mark">' "$SYS_DIR/eval.html" | wc -l)
[ "$marks" -ge 4 ] || fail "the evaluator's plots mark $marks switch(es)"
grep -q 'real (failover)' "$SYS_DIR/eval.html" || fail "no automatic switch marked on the plots"
ok "the evaluator's plots over time mark the switches ($marks marks over 4 plots)"
