#!/usr/bin/env python3
"""Verifier of the chaos, outage and scaling tests (the shape of Kafka's own
transactions system test): the plans topic, read with read_committed, must hold
exactly the expected plan ids, each once, and each job's plans in the order of
its requests; PostgreSQL must hold exactly the expected rows.

  verify.py --expect expect.txt --plans plans.jsonl --rows rows.txt [--kills N] [--label L]

plans.jsonl: `dlbrain plans --all -f json` output, in the order it was read.
rows.txt: "table count" lines from PostgreSQL. Prints one summary line with the
numbers and exits non-zero on any loss, duplicate, disorder or row mismatch.
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect", required=True)
    ap.add_argument("--plans", required=True)
    ap.add_argument("--rows", required=True)
    ap.add_argument("--kills", type=int, default=0)
    ap.add_argument("--label", default="verify")
    a = ap.parse_args()

    events, want_rows, want_plans = 0, {}, {}
    job_requests = collections.defaultdict(list)
    for line in open(a.expect):
        f = line.split()
        if f[0] == "events":
            events = int(f[1])
        elif f[0] == "rows":
            want_rows[f[1]] = int(f[2])
        elif f[0] == "plan":
            want_plans[f[2]] = (f[1], int(f[3]))
            job_requests[f[1]].append(f[2])

    got = [json.loads(l) for l in open(a.plans) if l.strip()]
    seen = collections.Counter(p["plan_id"] for p in got)
    duplicated = sum(n - 1 for n in seen.values() if n > 1)
    lost = sorted(set(want_plans) - set(seen))
    unexpected = sorted(set(seen) - set(want_plans))
    # Per-job order: the job's plans, in topic order, follow its requests' times.
    per_job = collections.defaultdict(list)
    for p in got:
        per_job[p["job_uid"]].append(p["event_time_ms"])
    disordered = sorted(j for j, ts in per_job.items() if ts != sorted(ts))
    rows = {}
    for line in open(a.rows):
        f = line.split()
        if len(f) == 2:
            rows[f[0]] = int(f[1])
    row_diff = {t: (n, rows.get(t)) for t, n in want_rows.items() if rows.get(t) != n}

    print(f"{a.label}: events={events} kills={a.kills} plans expected={len(want_plans)} "
          f"received={len(got)} distinct={len(seen)} lost={len(lost)} duplicated={duplicated} "
          f"unexpected={len(unexpected)} jobs_out_of_order={len(disordered)} "
          f"rows={'exact' if not row_diff else 'WRONG'}")
    ok = not (lost or duplicated or unexpected or disordered or row_diff)
    if lost:
        print(f"  lost (first 5): {lost[:5]}")
    if duplicated:
        print(f"  duplicated (first 5): {[k for k, n in seen.items() if n > 1][:5]}")
    if unexpected:
        print(f"  unexpected (first 5): {unexpected[:5]}")
    if disordered:
        print(f"  out of order (first 5): {disordered[:5]}")
    for t, (w, g) in row_diff.items():
        print(f"  table {t}: expected {w} rows, found {g}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
