"""The events the gateway produced for one job, as `dlbrain emit` JSON lines
for another job: the same content and times through the native path.

Usage: native_events.py FROM_UID TO_UID SCENARIO < rows > events.jsonl
rows: "event_time_ms|rank|raw hex" lines (psql), any order; they are sorted
by time, then rank (the optimizer's tie order: job, metrics, requests).
"""

import sys

from dlbrain_client import codec

src, dst, scenario = sys.argv[1:4]
rows = []
for line in sys.stdin:
    t, rank, hexraw = line.strip().split("|")
    rows.append((int(t), int(rank), bytes.fromhex(hexraw)))
for t, rank, raw in sorted(rows, key=lambda r: (r[0], r[1])):
    etype, rec = codec.decode(raw)
    rec["job_uid"] = dst
    rec["event_id"] = "native-" + rec["event_id"]
    if rec.get("meta"):
        rec["meta"]["scenario"] = scenario
    for pod in rec.get("pods") or []:
        pod["name"] = pod["name"].replace(src, dst)
    if rec.get("oom_pod"):
        rec["oom_pod"] = rec["oom_pod"].replace(src, dst)
    if rec.get("oom_pods"):
        rec["oom_pods"] = [p.replace(src, dst) for p in rec["oom_pods"]]
    print(codec.to_json_line(etype, rec))
