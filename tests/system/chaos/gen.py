#!/usr/bin/env python3
"""Workload of the chaos, outage and scaling tests: JSON lines for `dlbrain emit`.

Each job: its meta (running), a create-plan request, SAMPLES runtime samples
15 s apart (2 PS + 4 workers), a worker OOM, an OOM plan request, and its end
(succeeded). Jobs start 1 s apart, events are written in event-time order
across jobs, as a cluster would report them. Deterministic for a seed.

  gen.py --jobs 2000 --samples 45 [--colliders 8] --out events.jsonl --expect expect.txt

expect.txt holds the rows each table must end with and one expected plan id
per line ("plan <job> <plan id> <request time>"), for the verifier.

--colliders N adds N more jobs whose uids collide with a victim's Redis keys
or their encoding if uids were not escaped (`chaos-00000:rt`,
`chaos-00000%3Art`, `chaos-00000:pods`, `chaos-00000:seen`, then the next
victim), running beside their victim in a scenario of their own (so they are
nobody's similar jobs). They are valid jobs, counted like the others, and
listed as "collider <uid> <victim uid>" lines.

--giants N adds N jobs one after the other in a scenario of their own, each
sample naming the 16,384 pods a sample may carry (2 PS and 16,382 workers
with their own speeds, about 800 KB a message), with a create plan (the
second one learns from the first's history), an OOM plan and a running plan.
Valid input a hostile or merely huge producer may send: memory and plan time
must stay bounded.
"""
import argparse
import json
import random

GIB = 1024 ** 3
T0 = 1767225600000  # 2026-01-01, fixed so every run is the same


COLLIDE = (":rt", "%3Art", ":pods", ":seen")


def job_events(rng, j, samples, uid=None):
    t = T0 + j * 1000
    scen = f"sc{j % 50}"
    if uid:  # a collider: beside its victim job j, half a second later
        t, scen = t + 500, "sc-collide"
    else:
        uid = f"chaos-{j:05d}"
    ev = []

    def add(kind, dt, body):
        body.update({"type": kind, "event_id": f"{uid}-{len(ev):03d}",
                     "event_time_ms": t + dt, "job_uid": uid})
        ev.append(body)

    add("job_event", 0, {"meta": {"name": uid, "user": f"u{j % 17}", "group": "g",
                                  "app": "a", "cluster": "c1", "namespace": "ml",
                                  "scenario": scen, "framework": "tensorflow"},
                         "state": "running"})
    add("plan_request", 1, {"stage": "job_stage_create"})
    for s in range(samples):
        pods = []
        for i in range(2):
            pods.append({"name": f"{uid}-ps-{i}", "type": "ps", "index": i,
                         "cpu_used": round(rng.uniform(1, 6), 2), "cpu_requested": 8,
                         "memory_used": int(rng.uniform(4, 12) * GIB),
                         "memory_requested": 16 * GIB})
        for i in range(4):
            pods.append({"name": f"{uid}-worker-{i}", "type": "worker", "index": i,
                         "cpu_used": round(rng.uniform(1, 7), 2), "cpu_requested": 8,
                         "memory_used": int(rng.uniform(2, 7) * GIB),
                         "memory_requested": 8 * GIB})
        add("runtime_sample", 15000 * (s + 1),
            {"global_step": 100 * (s + 1), "speed": round(rng.uniform(5, 20), 3), "pods": pods})
    end = 15000 * (samples + 1)
    add("node_event", end, {"kind": "oom_killed", "pod_name": f"{uid}-worker-0",
                            "pod_type": "worker", "pod_index": 0, "reason": "OOMKilled",
                            "memory_requested": 8 * GIB})
    add("plan_request", end + 1, {"stage": "job_stage_running", "oom_pod": f"{uid}-worker-0"})
    add("job_event", end + 2, {"state": "succeeded", "exit_reason": "Completed"})
    return uid, ev


GIANT_PODS = 16384
GIANT_SAMPLES = 6


def giant_events(rng, k):
    uid = f"giant-{k:02d}"
    t = T0 + k * (GIANT_SAMPLES + 2) * 15000
    ev = []

    def add(kind, dt, body):
        body.update({"type": kind, "event_id": f"{uid}-{len(ev):03d}",
                     "event_time_ms": t + dt, "job_uid": uid})
        ev.append(body)

    add("job_event", 0, {"meta": {"name": uid, "user": "u-giant", "group": "g", "app": "a",
                                  "cluster": "c1", "namespace": "ml", "scenario": "sc-giant",
                                  "framework": "tensorflow"}, "state": "running"})
    add("plan_request", 1, {"stage": "job_stage_create"})
    for s in range(GIANT_SAMPLES):
        pods = [{"name": f"g{k}-ps-{i}", "type": "ps", "index": i,
                 "cpu_used": round(rng.uniform(1, 6), 2), "cpu_requested": 8,
                 "memory_used": int(rng.uniform(4, 12) * GIB), "memory_requested": 16 * GIB}
                for i in range(2)]
        pods += [{"name": f"g{k}-{i:05d}", "type": "worker", "index": i,
                  "cpu_used": round(rng.uniform(1, 7), 1), "cpu_requested": 8,
                  "memory_used": rng.randrange(2, 7) * GIB, "memory_requested": 8 * GIB,
                  "speed": round(rng.uniform(0.5, 1), 2)}
                 for i in range(GIANT_PODS - 2)]
        add("runtime_sample", 15000 * (s + 1),
            {"global_step": 100 * (s + 1), "speed": round(rng.uniform(5, 20), 3), "pods": pods})
    end = 15000 * (GIANT_SAMPLES + 1)
    add("node_event", end, {"kind": "oom_killed", "pod_name": f"g{k}-00000", "pod_type": "worker",
                            "pod_index": 0, "reason": "OOMKilled", "memory_requested": 8 * GIB})
    add("plan_request", end + 1, {"stage": "job_stage_running", "oom_pod": f"g{k}-00000"})
    add("plan_request", end + 2, {"stage": "job_stage_running"})
    add("job_event", end + 3, {"state": "succeeded", "exit_reason": "Completed"})
    return uid, ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=45)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--colliders", type=int, default=0)
    ap.add_argument("--giants", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--expect", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    allev, plans = [], []
    rows = dict(jobs=0, job_events=0, runtime_samples=0, runtime_pods=0, node_events=0,
                plan_requests=0, plans=0)
    victims = [a.jobs * (i // len(COLLIDE)) // max(1, a.colliders // len(COLLIDE) + 1)
               for i in range(a.colliders)]
    colliders = [(f"chaos-{v:05d}{COLLIDE[i % len(COLLIDE)]}", v) for i, v in enumerate(victims)]
    grng = random.Random(a.seed + 1000)  # the giants leave the others' draws alone
    for j, cuid in ([(j, None) for j in range(a.jobs)] + [(v, c) for c, v in colliders] +
                    [(-1 - k, None) for k in range(a.giants)]):
        uid, ev = job_events(rng, j, a.samples, cuid) if j >= 0 else giant_events(grng, -1 - j)
        rows["jobs"] += 1
        for e in ev:
            k = e["type"]
            if k == "job_event":
                rows["job_events"] += 1
            elif k == "runtime_sample":
                rows["runtime_samples"] += 1
                rows["runtime_pods"] += len(e["pods"])
            elif k == "node_event":
                rows["node_events"] += 1
            elif k == "plan_request":
                rows["plan_requests"] += 1
                rows["plans"] += 1
                plans.append((uid, "plan-" + e["event_id"], e["event_time_ms"]))
        allev.extend(ev)
    allev.sort(key=lambda e: (e["event_time_ms"], e["event_id"]))
    with open(a.out, "w") as f:
        for e in allev:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    with open(a.expect, "w") as f:
        f.write(f"events {len(allev)}\n")
        for k, v in rows.items():
            f.write(f"rows {k} {v}\n")
        for uid, pid, t in plans:
            f.write(f"plan {uid} {pid} {t}\n")
        for cuid, v in colliders:
            f.write(f"collider {cuid} chaos-{v:05d}\n")


if __name__ == "__main__":
    main()
