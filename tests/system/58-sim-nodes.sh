#!/usr/bin/env bash
# The simulator on nodes, through the CLI (no servers: --plans none --out):
# `--cluster-nodes data/pai/nodes.csv` runs the 64-node PAI sample, the
# built-in default (a run without the option gives the same bytes); the same
# seed gives the same bytes; every pod event names a node of the file, and
# no node ever holds more than it has; a pool run names drawn nodes; a bad
# file, a missing one and a pool size given with nodes are refused with exit
# status 2 and a message naming what is wrong.
. "$(dirname "$0")/helpers.sh"

WL=$SYS_TOP/data/pollux/workloads/workload-2.csv
NODES=$SYS_TOP/data/pai/nodes.csv

sim() { "$DLBRAIN" sim -w "$WL" -n 200 --seed 5 --plans none "$@"; }

sim --cluster-nodes "$NODES" --out "$SYS_DIR/a.jsonl" --summary-json "$SYS_DIR/a.json" \
    2>"$SYS_DIR/a.log" || fail "dlbrain sim --cluster-nodes failed"
grep '^sim:.* nodes=64 ' "$SYS_DIR/a.log" || fail "no nodes=64 in the summary line"
sim --cluster-nodes "$NODES" --out "$SYS_DIR/b.jsonl" 2>"$SYS_DIR/b.log" || fail "second run failed"
cmp -s "$SYS_DIR/a.jsonl" "$SYS_DIR/b.jsonl" || fail "same seed on nodes, different events"
ok "same seed on nodes, same $(wc -l <"$SYS_DIR/a.jsonl") events"
s() { jq -r ".$1" "$SYS_DIR/a.json"; }
expect_eq "nodes in the summary" 64 "$(s nodes)"
sim --out "$SYS_DIR/d.jsonl" 2>"$SYS_DIR/d.log" || fail "a run on the default cluster failed"
cmp -s "$SYS_DIR/a.jsonl" "$SYS_DIR/d.jsonl" || fail "the default cluster is not data/pai/nodes.csv"
ok "the default cluster is the built-in data/pai/nodes.csv"
[ "$(s unfinished)" = 0 ] || fail "$(s unfinished) jobs unfinished"
awk -v v="$(s pending_free_cpu_share)" 'BEGIN { exit !(v > 0 && v < 1) }' ||
    fail "pending_free_cpu_share $(s pending_free_cpu_share) not in (0, 1)"
ok "alloc_cpu_share $(s alloc_cpu_share), pending_free_cpu_share $(s pending_free_cpu_share)"

# Replay the pod events onto the file's nodes: a pod holds its request from
# its Running event until it is deleted or its job ends (--plans none: no pod
# is resized).
python3 - "$NODES" "$SYS_DIR/a.jsonl" <<'EOF' || fail "placement replay failed"
import csv, json, sys
cap, i = {}, 0
rows = [l for l in open(sys.argv[1]) if not l.lstrip().startswith("#")]
for r in csv.DictReader(rows):
    for _ in range(int(r["count"])):
        cap[f"{r['label']}-{i:04d}"] = (float(r["cpu_cores"]), float(r["memory_gib"]) * 2**30)
        i += 1
pods, used, seen = {}, {n: [0.0, 0.0] for n in cap}, set()
def give_back(name):
    n, c, m = pods.pop(name)
    used[n][0] -= c
    used[n][1] -= m
for line in open(sys.argv[2]):
    e = json.loads(line)
    if e["type"] == "job_event" and e["state"] in ("succeeded", "failed"):
        for p in [p for p in pods if p.startswith(e["job_uid"] + "-")]:
            give_back(p)
    if e["type"] != "node_event":
        continue
    n = e["node_name"]
    if n not in cap:
        sys.exit(f"{e['event_id']}: node {n} is not in the file")
    seen.add(n)
    if e["kind"] == "pod_phase" and e["reason"] == "Started":
        if e["pod_name"] in pods:
            sys.exit(f"{e['event_id']}: {e['pod_name']} started twice")
        pods[e["pod_name"]] = (n, e["cpu_requested"], e["memory_requested"])
        used[n][0] += e["cpu_requested"]
        used[n][1] += e["memory_requested"]
        if used[n][0] > cap[n][0] + 1e-9 or used[n][1] > cap[n][1]:
            sys.exit(f"{e['event_id']}: node {n} over its capacity: {used[n]} of {cap[n]}")
    elif e["kind"] == "deleted":
        give_back(e["pod_name"])
    elif pods.get(e["pod_name"], (n,))[0] != n:
        sys.exit(f"{e['event_id']}: {e['pod_name']} reported on {n}, placed elsewhere")
if pods:
    sys.exit(f"{len(pods)} pods still placed at the end")
print(f"ok - {len(seen)} of {len(cap)} nodes used, none over its capacity")
EOF

sim --cluster-cores 5280 --out "$SYS_DIR/pool.jsonl" --summary-json "$SYS_DIR/pool.json" 2>"$SYS_DIR/pool.log" ||
    fail "pool run failed"
expect_eq "nodes in a pool run's summary" 0 "$(jq -r .nodes "$SYS_DIR/pool.json")"
bad=$(jq -r 'select(.type == "node_event") | .node_name' "$SYS_DIR/pool.jsonl" | grep -cv '^sim-node-[0-9]\{3\}$' || true)
expect_eq "pool node names that are not drawn sim-node-NNN" 0 "$bad"

# refused WHAT WANT ARGS...: exit status 2 and WANT in the message.
refused() {
    local what=$1 want=$2 rc=0
    shift 2
    sim --out /dev/null "$@" 2>"$SYS_DIR/err.log" || rc=$?
    expect_eq "$what: exit status" 2 "$rc"
    grep -qF -- "$want" "$SYS_DIR/err.log" || fail "$what: no '$want' in: $(cat "$SYS_DIR/err.log")"
}
printf '# test\ncount,cpu_cores,memory_gib\n2,96,512\n1,96,lots\n' >"$SYS_DIR/bad.csv"
refused "a bad row" "$SYS_DIR/bad.csv:4: memory_gib 'lots'" --cluster-nodes "$SYS_DIR/bad.csv"
refused "a missing file" "$SYS_DIR/none.csv: No such file" --cluster-nodes "$SYS_DIR/none.csv"
refused "a pool size with nodes" "with --cluster-nodes the nodes are the cluster" \
    --cluster-nodes "$NODES" --cluster-cores 64
echo "58-sim-nodes: all checks passed"
