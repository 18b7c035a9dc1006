"""Optimize calls on every partition, around a kill -9 of an optimizer.

Usage:
  takeover.py calls ADDR PARTS KILL_FILE OUT_JSON [AFTER_S]
      One thread per partition of the plan topics calls brain.Brain/optimize
      (job_stage_create, each call a new job whose uid hashes to that
      partition, as librdkafka's consistent_random partitioner does: CRC-32
      modulo the partition count), one call after the other, no deadline of
      its own. Prints "steady" once every partition had 3 plans in a row,
      then waits for KILL_FILE to hold the kill's time (epoch ms, written by
      the caller just before kill -9), goes on AFTER_S seconds (default 40)
      and writes OUT_JSON: per partition the calls (start, end, plan or not)
      and, relative to the kill, when the first call started after it got
      its plan, and the longest call started after it.
  takeover.py plans BROKERS TOPIC
      Reads TOPIC whole (read_committed) and prints "plans N distinct D":
      every plan message and the distinct (job, plan id) among them.
"""

import json
import os
import sys
import threading
import time
import zlib

PATH = "/brain.Brain/optimize"


def uids_for(part, parts, tag):
    k = 0
    while True:
        uid = "job-take-%s-%d" % (tag, k)
        k += 1
        if zlib.crc32(uid.encode()) % parts == part:
            yield uid


def calls(addr, parts, kill_file, out_path, after_s):
    import grpc
    from dlrover.proto import brain_pb2

    ch = grpc.insecure_channel(addr)
    stub = ch.unary_unary(PATH)
    lock = threading.Lock()
    log = {p: [] for p in range(parts)}
    busy = {}  # partition -> start of its call still waiting for an answer
    stop = threading.Event()
    tag = "%x" % int(time.time() * 1000)

    def run(p):
        for uid in uids_for(p, parts, tag):
            if stop.is_set():
                return
            req = brain_pb2.OptimizeRequest()
            req.type = "job_stage_create"
            req.config.data_store = "base_datastore"
            req.jobs.add().uid = uid
            t0 = time.time()
            with lock:
                busy[p] = t0
            try:
                resp = brain_pb2.OptimizeResponse.FromString(stub(req.SerializeToString(),
                                                                  timeout=120))
                plan = bool(resp.response.success and resp.job_optimize_plans)
                why = resp.response.reason
            except grpc.RpcError as e:
                plan, why = False, "%s %s" % (e.code().name, e.details())
            with lock:
                del busy[p]
                log[p].append((t0, time.time(), plan, why))

    threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in range(parts)]
    for t in threads:
        t.start()
    while True:
        with lock:
            if all(len(v) >= 3 and all(c[2] for c in v[-3:]) for v in log.values()):
                break
        time.sleep(0.1)
    print("steady", flush=True)
    while not (os.path.exists(kill_file) and open(kill_file).read().strip()):
        time.sleep(0.05)
    kill = int(open(kill_file).read().strip()) / 1000.0
    time.sleep(max(0.0, kill + after_s - time.time()))
    stop.set()
    now = time.time()
    with lock:
        # A call still waiting: plan None, waiting until now. It is no
        # failure (every partition has one in progress), but counts in the
        # longest wait, and has no plan.
        snap = {p: list(v) + ([(busy[p], now, None, "")] if p in busy else [])
                for p, v in log.items()}
    out = {"kill": kill, "partitions": {}}
    for p, v in snap.items():
        after = [c for c in v if c[0] >= kill]
        first = next((c for c in after if c[2]), None)
        flight = next((c for c in v if c[0] < kill <= c[1]), None)
        out["partitions"][str(p)] = {
            "calls": len(v),
            "calls_after_kill": len(after),
            # answered without a plan (success=false, an error status)
            "failed_after_kill": sum(1 for c in after if c[2] is False),
            # when the first call started after the kill got its plan
            "first_plan_s": round(first[1] - kill, 3) if first else None,
            # the longest call started after the kill (one still waiting: until now)
            "longest_s": round(max([c[1] - c[0] for c in after] or [0]), 3),
            # the call in flight at the kill, if any: when it got its plan
            # (None: none was in flight; "never": no plan by the end)
            "in_flight_answered_s": None if flight is None
            else round(flight[1] - kill, 3) if flight[2] else "never",
            "reasons": sorted({c[3] for c in after if c[2] is False})[:3],
        }
    with open(out_path, "w") as f:
        json.dump(out, f, sort_keys=True)
    ch.close()


def plans(brokers, topic):
    from confluent_kafka import Consumer, TopicPartition
    from dlbrain_client import codec

    c = Consumer({"bootstrap.servers": brokers, "group.id": "takeover-check",
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    md = c.list_topics(topic, timeout=10).topics[topic]
    c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
    left, n, seen = set(md.partitions), 0, set()
    while left:
        m = c.poll(5)
        if m is None:
            sys.exit("no end of %s within 5 s" % topic)
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                left.discard(m.partition())
                continue
            sys.exit(str(m.error()))
        t, rec = codec.decode(m.value())
        n += 1
        seen.add((rec["job_uid"], rec["plan_id"]))
    c.close()
    print("plans %d distinct %d" % (n, len(seen)))


if __name__ == "__main__":
    if sys.argv[1] == "calls":
        calls(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5],
              float(sys.argv[6]) if len(sys.argv) > 6 else 40)
    elif sys.argv[1] == "plans":
        plans(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
