#!/usr/bin/env bash
# dlbrain gateway's HTTP Brain, the protocol of DLRover's main branch
# (DLROVER_BRAIN_PROTOCOL=http), with a client that speaks its schema exactly
# (tests/system/gateway/http_brain_client.py: DLRover's own client class is
# in no released package), against a gateway, an optimizer, mock Kafka and
# real PostgreSQL and Redis:
#  - POST /optimize at every stage a master asks: 201, a plan each, and the
#    plans are the optimizer's (its plans table), in bytes and cores; the
#    same request over gRPC gets the same groups;
#  - POST /job_config: the configuration rules in force (dlbrain config
#    apply), with the job's stored attributes completing the request's, as
#    the configurer does; a new rules version is taken up;
#  - no plan in time: 201 with success=false; bad requests: 400, 413 or 422
#    naming the field; GET 405, another path 404;
#  - half-open requests from 300 addresses leave /job_config answering;
#  - a gateway stopped with a call in flight answers it 503 and exits 0.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
GWDIR=$SYS_TOP/tests/system/gateway
CHECK=$GWDIR/http_brain_check.py
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"
"$PY" -c 'import pydantic, requests; from dlrover.proto import brain_pb2_grpc' 2>/dev/null ||
    fail "the venv lacks pydantic / requests / dlrover 0.6.1 (scripts/setup installs them)"
S=$(sys_schema)
JOB=job-http-1

sys_start_all 4
OPT_PID=${SYS_PIDS[-1]}
"$DLBRAIN" config apply "$SYS_TOP/tests/system/data/rules-ads.yaml" -m "ads rules" \
    >"$SYS_DIR/apply.log" 2>&1 || fail "config apply: $(tail -n 3 "$SYS_DIR/apply.log")"

# start_gateway NAME [OPTION...]: sets GRPC (host:port) and H (the HTTP Brain's base URL).
start_gateway() {
    local name=$1
    shift
    "$DLBRAIN" gateway -a 127.0.0.1:0 -X metrics.port=0 -X metrics.address=127.0.0.1 \
        -X gateway.http.address=127.0.0.1:0 "$@" >/dev/null 2>"$SYS_DIR/$name.log" &
    SYS_PIDS+=($!)
    GW_PID=$!
    sys_log_port "$name" 's|.*HTTP Brain (POST /optimize, /job_config) on http://127.0.0.1:\([0-9]*\).*|\1|p' ||
        fail "$name did not serve HTTP: $(tail -n 3 "$SYS_DIR/$name.log")"
    H=http://127.0.0.1:$port
    sys_log_port "$name" 's/.*serving brain.Brain on .* (port \([0-9]*\)).*/\1/p' || fail "no gRPC port"
    GRPC=127.0.0.1:$port
}
start_gateway gateway -X gateway.max.message.bytes=65536 -X config.refresh.ms=500
ok "gateway: HTTP Brain on $H, brain.Brain on $GRPC"
for _ in $(seq 1 300); do grep -q 'kafka: assigned' "$SYS_DIR/optimizer.log" && break; sleep 0.1; done

# ---- optimize: the master's stages, the optimizer's plans -------------------
cd "$GWDIR"
timeout 120 "$PY" "$CHECK" plans "$H" "$JOB" "$SYS_DIR/http-plans.json" ||
    fail "optimize over HTTP: see above"
sys_wait_count "plans WHERE job_uid = '$JOB'" 5 30
sys_sql "SELECT json_build_object('stage', stage, 'groups', groups, 'pods', pods)
         FROM $S.plans WHERE job_uid = '$JOB' ORDER BY event_time_ms, plan_id" >"$SYS_DIR/plans.jsonl"
"$PY" - "$SYS_DIR/http-plans.json" "$SYS_DIR/plans.jsonl" <<'EOF' || fail "the HTTP answers are not the optimizer's plans"
import json, sys
read = json.load(open(sys.argv[1]))
made = [json.loads(l) for l in open(sys.argv[2])]
assert len(read) == len(made) == 5, (len(read), len(made))
for r, m in zip(read, made):
    assert r["stage"] == m["stage"], (r["stage"], m["stage"])
    want_g = {g["group"]: {"count": g["count"], "memory": g["resource"]["memory"],
                           "cpu": g["resource"]["cpu"], "gpu": float(g["resource"].get("gpu") or 0),
                           "gpu_type": g["resource"].get("gpu_type") or "", "priority": 0}
              for g in m["groups"]}
    want_p = {p["name"]: {"memory": p["resource"]["memory"], "cpu": p["resource"]["cpu"],
                          "gpu": float(p["resource"].get("gpu") or 0),
                          "gpu_type": p["resource"].get("gpu_type") or "", "priority": 0}
              for p in m["pods"]}
    got_g = {k: {"count": v["count"], **v["resource"]} for k, v in r["groups"].items()}
    assert got_g == want_g, (r["stage"], got_g, want_g)
    assert r["pods"] == want_p, (r["stage"], r["pods"], want_p)
print("ok - the 5 answers are the optimizer's plans, memory in bytes, CPU in cores")
EOF
expect_eq "plan requests stored (stage order)" \
    "job_stage_create job_stage_worker_initial job_stage_ps_initial job_stage_ps_running job_stage_worker_running" \
    "$(sys_sql "SELECT string_agg(stage, ' ' ORDER BY event_time_ms, event_id) FROM $S.plan_requests WHERE job_uid = '$JOB'")"
# The same request over gRPC: the same groups (the same path, rendered as brain.proto).
"$PY" "$CHECK" grpc "$GRPC" "$JOB" job_stage_create >"$SYS_DIR/grpc.json" || fail "gRPC optimize"
"$PY" - "$SYS_DIR/http-plans.json" "$SYS_DIR/grpc.json" <<'EOF' || fail "gRPC and HTTP answers differ"
import json, sys
http = json.load(open(sys.argv[1]))[0]["groups"]
grpc = json.load(open(sys.argv[2]))
assert {k: {"count": v["count"], "memory": v["resource"]["memory"], "cpu": v["resource"]["cpu"]}
        for k, v in http.items()} == grpc, (http, grpc)
print("ok - job_stage_create over gRPC gets the same groups:", grpc)
EOF

# ---- job_config: the rules in force, the job's stored attributes -----------
echo '{"type":"job_event","event_id":"cfg-job-1-e1","event_time_ms":1767225600000,"job_uid":"cfg-job-1","meta":{"name":"ctr-x","user":"","group":"ads","app":"ctr","cluster":"","namespace":"ml","scenario":"s1","framework":"tensorflow"},"state":"created"}' |
    "$DLBRAIN" emit --strict -q || fail "emit"
sys_wait_count "jobs WHERE uid = 'cfg-job-1'" 1 30
"$PY" "$CHECK" config "$H" "$SYS_DIR/configs.json" || fail "get_config"
"$PY" - "$SYS_DIR/configs.json" <<'EOF' || fail "the configurations are not the rules' matches"
import json, sys
c = json.load(open(sys.argv[1]))
default = {"log": "info", "ps": '{"cpu":8,"memory":16}'}
assert c["ana-c1"]["configs"] == default, c["ana-c1"]
assert c["empty"]["configs"] == default, c["empty"]
# group ads from the job's events: ads-team (ps cpu 12 merged, lr), ads-big (log debug)
assert c["known"]["configs"] == {"log": "debug", "lr": "0.01", "ps": '{"cpu":12,"memory":16}'}, c["known"]
assert c["known"]["reason"] == "rules version 1: 3 rule(s) in scope, first ads-big", c["known"]
assert c["known-bo"]["configs"] == {"log": "info", "lr": "0.01", "ps": '{"cpu":12,"memory":16}'}, c["known-bo"]
print("ok - job_configs are the rules' matches, the stored group completing the request")
EOF
"$DLBRAIN" config match user=cy cluster=c1 group=ads app=ctr namespace=ml scenario=s1 \
    framework=tensorflow name=ctr-x >"$SYS_DIR/match.txt" 2>&1 ||
    fail "config match: $(cat "$SYS_DIR/match.txt")"
grep -q 'ads-big' "$SYS_DIR/match.txt" || fail "dlbrain config match disagrees: $(cat "$SYS_DIR/match.txt")"
ok "dlbrain config match gives the same rules for the job"
printf 'id: only\nConfigure:\n  log: warn\n' >"$SYS_DIR/v2.yaml"
"$DLBRAIN" config apply "$SYS_DIR/v2.yaml" >/dev/null 2>&1 || fail "config apply v2"
for _ in $(seq 1 50); do
    out=$(curl -s -X POST -d '{"job":{"user":"ana"}}' "$H/job_config")
    [ "$out" = '{"response":{"success":true,"reason":"rules version 2: 1 rule(s) in scope, first only"},"job_configs":{"log":"warn"}}' ] && break
    sleep 0.1
done
expect_eq "/job_config after a new version" \
    '{"response":{"success":true,"reason":"rules version 2: 1 rule(s) in scope, first only"},"job_configs":{"log":"warn"}}' "$out"

# ---- bad input, no plan in time --------------------------------------------
"$PY" "$CHECK" bad "$H" || fail "bad requests"
kill -STOP "$OPT_PID"
"$PY" "$CHECK" no-plan "$H" job-http-late || { kill -CONT "$OPT_PID"; fail "no plan in time"; }
kill -CONT "$OPT_PID"

# ---- half-open requests from 300 addresses ---------------------------------
python3 "$SYS_TOP/tests/system/http/slots_attack.py" "${H##*:}" --path /job_config --method POST \
    --body '{"job":{"user":"ana"}}' --addresses 300 --per-address 4 --seconds 6 \
    >"$SYS_DIR/attack.json" || fail "/job_config under half-open requests: $(cat "$SYS_DIR/attack.json")"
ok "/job_config beside 300 addresses' half-open requests: $(jq -r '"\(.answered)/\(.probes) answered, the longest in \(.max_wait_s) s"' "$SYS_DIR/attack.json")"

# ---- stopping with a call in flight ----------------------------------------
# The attack's last connections, still in the listen queue when it ends, are
# accepted for seconds after on a loaded machine, each displacing the longest
# waiting client: the call below would be one of them. Wait until they are gone.
sys_metrics_url gateway
held() { curl -s "$url/metrics" | sed -n 's/^dlbrain_http_connections{server="gateway.http"} \([0-9]*\).*/\1/p'; }
deadline=$((SECONDS + 60))
until [ "$(held)" = 0 ] || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.2; done
expect_eq "HTTP Brain connections held once the attack is over" 0 "$(held)"
acked() { curl -s "$url/metrics" | sed -n 's/^dlbrain_gateway_events_total \([0-9]*\).*/\1/p'; }
acked0=$(acked)
kill -STOP "$OPT_PID"
"$PY" - "$H" >"$SYS_DIR/stop.txt" 2>&1 <<'EOF' &
import requests, sys
r = requests.post(sys.argv[1] + "/optimize", json={"type": "job_stage_create", "job": {"uuid": "job-http-stop"}}, timeout=30)
print(r.status_code, r.json().get("detail", r.text))
EOF
client=$!
# The call waits for its plan (gateway.optimize.timeout.ms is 5 s) once its
# request is in Kafka: stop then.
deadline=$((SECONDS + 30))
until [ "$(acked)" -gt "$acked0" ] || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.1; done
[ "$(acked)" -gt "$acked0" ] || fail "the call's plan request was not acknowledged: $(cat "$SYS_DIR/stop.txt")"
kill -TERM "$GW_PID"
rc=0
wait "$GW_PID" || rc=$?
kill -CONT "$OPT_PID"
wait "$client" || fail "the client in flight: $(cat "$SYS_DIR/stop.txt")"
expect_eq "gateway exit status, stopped with a call in flight" 0 "$rc"
expect_eq "the call in flight" "503 the gateway is stopping" "$(cat "$SYS_DIR/stop.txt")"
echo "62-gateway-http: all checks passed"
