#!/usr/bin/env python3
"""Hostile producer of the chaos test (issue 18, "No message can stop the
pipeline"): bad messages of every kind mixed into the workload, a sampler of
the group's progress, and the checks and report of the soak. Runs with the
project's venv (confluent-kafka, fastavro, dlbrain_client).

  soak.py gen --env E --count N --seed S --out bad.jsonl
      N bad messages (about 1% of the workload), every kind, deterministic
      for a seed; each line: kind, topic, key, the value (base64), the DLQ
      stage and a regular expression its dlb.error.message must match.
  soak.py setup --brokers B --env E
      lets the input topics take 4 MiB messages, so an oversized message
      (more than the consumer's message.max.bytes, 1 MiB) reaches it.
  soak.py produce --brokers B --in bad.jsonl --part K --parts P --log produced.txt
      produces part K of P, appending "topic partition offset key" (the key's
      first 40 bytes) of each delivered message to the log.
  soak.py sample --brokers B --group G --env E --out samples.txt
      every 0.5 s until SIGTERM, a line "t_ms committed/end ..." of every input
      partition (the group's committed offset, the high watermark); every 2 s
      when it changed, "#owners t_ms topic:partition=group.instance.id ...".
  soak.py drained --samples samples.txt
      exit 0 when the last sample shows every input partition committed to
      its end.
  soak.py report --brokers B --env E --in bad.jsonl --produced produced.txt
                 --samples samples.txt --kills kills.txt --rss rss.txt
                 --verify verify.txt --out soak-report.txt
      reads <env>.dlq (read_committed), checks every bad message is in it
      exactly once (matched by the dlb.source.* headers) with the expected
      stage and reason, its value as sent or omitted with its size; works out
      the longest stalls and the peak RSS per optimizer slot, writes and
      prints the report, and exits 1 when a DLQ check fails (the goals are
      printed; the test asserts them).

A stall: an interval during which a partition had messages waiting beyond
the group's committed offset and that offset did not move; measured between
0.5 s samples, so it is exact to about half a second. A kill -9 of the
partition's owner (the static member that holds it) inside the interval is
named, so processing stalls and crash recoveries are told apart.
"""
import argparse
import base64
import collections
import io
import json
import math
import random
import re
import signal
import struct
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)
from dlbrain_client import codec
from dlbrain_client.catalog import default_catalog
from dlbrain_client.events import EventError, validate
from fastavro import schemaless_writer

GIB = 1024 ** 3
INPUTS = ("job-events", "metrics", "k8s-events", "plan-requests")
TYPE_TOPIC = {"job_event": "job-events", "runtime_sample": "metrics",
              "node_event": "k8s-events", "plan_request": "plan-requests"}
# The optimizer's default message.max.bytes (pipeline/base/conf.c).
MAX_BYTES = 1048576
TOPIC_MAX_BYTES = 4 * 1024 * 1024
# librdkafka's own message.max.bytes (1,000,000) is below the consumer's: a
# bad message between the two must still reach the DLQ.
NEAR_LIMIT_BYTES = 1040000
OVERSIZED_BYTES = 2 * 1024 * 1024

# Kinds and their share of the bad messages. Every kind appears at least once.
KINDS = [
    ("random", 14),       # random bytes; a third with a valid header, random body
    ("empty", 2),         # a null value (tombstone) or zero bytes
    ("json", 6),          # a JSON line produced as is
    ("magic", 6),         # magic byte not 0, Avro after it
    ("schema-id", 8),     # a schema id the catalog does not have
    ("wrong-type", 10),   # a valid event of a type the topic does not carry
    ("truncated", 10),    # a valid event cut short
    ("huge-count", 8),    # a list count past its limit, a uid past DLB_ID_MAX
    ("absurd", 16),       # valid Avro, values validation refuses
    ("bad-utf8", 8),      # a string that is not UTF-8
    ("nul-byte", 2),      # a string with a NUL, which PostgreSQL cannot store
    ("after-header", 2),  # a plan request whose dlb.after header is garbage
    ("oversized", 0),     # more than message.max.bytes (a fixed few)
    ("near-limit", 0),    # under message.max.bytes, over librdkafka's own
    ("huge-key", 0),      # a bad value under a 900 KB key
]
FIXED = {"oversized": 3, "near-limit": 3, "huge-key": 2}


def frame(sid, rec):
    """Avro binary of rec under schema sid, without any validation."""
    entry = default_catalog().by_id(sid)
    buf = io.BytesIO()
    buf.write(struct.pack(">BI", 0, sid))
    schemaless_writer(buf, entry.parsed, rec)
    return buf.getvalue()


def zigzag(n):
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7f:
        out.append((z & 0x7f) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def av_str(s):
    b = s.encode() if isinstance(s, str) else s
    return zigzag(len(b)) + b


class Gen:
    def __init__(self, env, seed):
        self.env = env
        self.rng = random.Random(seed)
        self.cat = default_catalog()
        self.now = int(time.time() * 1000)
        # Event times inside the workload's (2026-01-01 on): refused ones must
        # be refused for what they are, not for a time.
        self.t0 = 1767225600000

    def good(self, etype, key, n):
        """A complete, valid record of etype for job `key` (checked by the
        client's own validation, the mirror of the C side's)."""
        t = self.t0 + n * 37
        base = {"event_id": key, "event_time_ms": t, "job_uid": key}
        if etype == "job_event":
            base.update(meta={"name": key, "user": "mallory", "scenario": "sc-bad"},
                        state="running")
        elif etype == "runtime_sample":
            base.update(global_step=100, speed=10.0,
                        pods=[{"name": f"{key}-worker-{i}", "type": "worker", "index": i,
                               "cpu_used": 1.5, "cpu_requested": 4.0,
                               "memory_used": 2 * GIB, "memory_requested": 4 * GIB}
                              for i in range(2)])
        elif etype == "node_event":
            base.update(kind="oom_killed", pod_name=f"{key}-worker-0", pod_type="worker",
                        pod_index=0, reason="OOMKilled", memory_requested=8 * GIB)
        elif etype == "plan_request":
            base.update(stage="job_stage_running", oom_pod=f"{key}-worker-0",
                        oom_pods=[f"{key}-worker-0"])
        return codec.normalize(etype, base)

    def msg(self, kind, n, etype, value, stage, reason, key=None, headers=None):
        key = key or f"bad-{kind}-{n:04d}"
        m = {"kind": kind, "topic": f"{self.env}.{TYPE_TOPIC[etype]}", "key": key,
             "stage": stage, "reason": reason}
        if value is None:
            m["null"] = True
        else:
            m["value"] = base64.b64encode(value).decode()
        if headers:
            m["headers"] = headers
        return m

    def any_type(self, n):
        return list(TYPE_TOPIC)[n % 4]

    # ---- the kinds ---------------------------------------------------------
    def k_random(self, n):
        etype = self.any_type(n)
        key = f"bad-random-{n:04d}"
        if n % 3 == 2:
            # A valid header of the topic's type, then garbage: avro-c and the
            # scan must refuse it without reading past the end. A body that
            # happens to decode and validate (short ones can) is drawn again.
            sid = self.cat.newest(etype).id
            while True:
                body = self.rng.randbytes(self.rng.randint(1, 200))
                v = struct.pack(">BI", 0, sid) + body
                try:
                    t, rec = codec.decode(v)
                    validate(t, rec)
                except (codec.DecodeError, EventError, Exception):
                    break
            return self.msg("random", n, etype, v, "decode|validate", ".")
        v = self.rng.randbytes(self.rng.randint(1, 400))
        if len(v) < 5:
            reason = rf"^message of {len(v)} bytes is shorter than the 5-byte Confluent header$"
        elif v[0] != 0:
            reason = rf"^magic byte is 0x{v[0]:02x}, not 0: not Confluent-framed Avro"
        else:
            sid = struct.unpack(">i", v[1:5])[0]
            reason = rf"^schema id {sid} is not in the catalog|^schema id {sid} is a "
            if self.cat.by_id(sid) and self.cat.by_id(sid).type == etype:
                reason = "."
        return self.msg("random", n, etype, v, "decode", reason, key)

    def k_empty(self, n):
        etype = self.any_type(n)
        v = None if n % 2 else b""
        return self.msg("empty", n, etype, v, "decode",
                        r"^message of 0 bytes is shorter than the 5-byte Confluent header$")

    def k_json(self, n):
        etype = self.any_type(n)
        key = f"bad-json-{n:04d}"
        v = json.dumps(dict(self.good(etype, key, n), type=etype)).encode()
        return self.msg("json", n, etype, v, "decode",
                        r"^magic byte is 0x7b, not 0: not Confluent-framed Avro \(it looks like JSON\)$")

    def k_magic(self, n):
        etype = self.any_type(n)
        key = f"bad-magic-{n:04d}"
        v = bytearray(codec.encode(etype, self.good(etype, key, n)))
        v[0] = 1 + n % 0x7a  # 0x01 .. 0x7a: never 0, never '{'
        return self.msg("magic", n, etype, bytes(v), "decode",
                        rf"^magic byte is 0x{v[0]:02x}, not 0: not Confluent-framed Avro$")

    def k_schema_id(self, n):
        etype = self.any_type(n)
        key = f"bad-schema-id-{n:04d}"
        v = bytearray(codec.encode(etype, self.good(etype, key, n)))
        sid = [0, max(self.cat.ids()) + 1, 99, 2 ** 31 - 1, -1, -2 ** 31][n % 6]
        v[1:5] = struct.pack(">i", sid)
        return self.msg("schema-id", n, etype, bytes(v), "decode",
                        rf"^schema id {sid} is not in the catalog \(known: ")

    def k_wrong_type(self, n):
        # A valid event of another type: a plan or config match (outputs), a
        # config request (the configurer's), or another input's type.
        etype = self.any_type(n // 4)
        key = f"bad-wrong-type-{n:04d}"
        choice = n % 4
        if choice == 0:
            v = codec.encode("plan", {"event_id": key, "event_time_ms": self.t0,
                                      "plan_id": f"plan-{key}", "job_uid": key,
                                      "stage": "job_stage_create", "groups": [], "pods": [],
                                      "actions": [], "optimizer": "dlrover.ps_create",
                                      "reason": "cold start", "trigger_event_id": key})
            wtype = "plan"
        elif choice == 1:
            v = codec.encode("config_request", {"event_id": key, "event_time_ms": self.t0,
                                                "job_uid": key, "meta": {"name": key}})
            wtype = "config_request"
        elif choice == 2:
            v = codec.encode("config_match", {"event_id": key, "event_time_ms": self.t0,
                                              "job_uid": key, "rules_version": 1,
                                              "rule_ids": ["r1"], "values": {"a": "1"},
                                              "trigger_event_id": key})
            wtype = "config_match"
        else:
            wtype = self.any_type(n // 4 + 1)  # another input's type
            v = codec.encode(wtype, self.good(wtype, key, n))
        sid = struct.unpack(">I", v[1:5])[0]
        return self.msg("wrong-type", n, etype, v, "decode",
                        rf"^schema id {sid} is a {wtype}, which {re.escape(self.env)}\."
                        rf"{TYPE_TOPIC[etype]} does not carry$")

    def k_truncated(self, n):
        etype = self.any_type(n)
        key = f"bad-truncated-{n:04d}"
        v = codec.encode(etype, self.good(etype, key, n))
        cut = self.rng.randint(6, len(v) - 1)
        return self.msg("truncated", n, etype, v[:cut], "decode",
                        r"^\S+: truncated Avro data: \d+ more bytes needed at offset \d+, \d+ left$")

    def k_huge_count(self, n):
        key = f"bad-huge-count-{n:04d}"
        head = lambda sid: (struct.pack(">BI", 0, sid) + av_str(key) + zigzag(self.t0)  # noqa
                            + av_str(key))
        c = n % 6
        if c == 0:  # a runtime sample declaring 20,000 pods in a few bytes
            v = head(11) + zigzag(100) + struct.pack("<d", 1.0) + zigzag(20000)
            return self.msg("huge-count", n, "runtime_sample", v, "decode",
                            r"^pods: 20000 items, more than the limit of 16384$")
        if c == 1:  # 2^62 pods in a negative-count block
            v = head(11) + zigzag(100) + struct.pack("<d", 1.0) + zigzag(-(2 ** 62)) + zigzag(8)
            return self.msg("huge-count", n, "runtime_sample", v, "decode",
                            rf"^pods: {2 ** 62} items, more than the limit of 16384$")
        if c == 2:  # a plan request naming 100,000 OOM pods
            v = head(12) + av_str("job_stage_running") + zigzag(0) + zigzag(100000)
            return self.msg("huge-count", n, "plan_request", v, "decode",
                            r"^oom_pods: 100000 items, more than the limit of 1024$")
        if c == 3:  # a plan request with a 10,000-entry config map
            v = head(12) + av_str("job_stage_running") + zigzag(0) + zigzag(0) + zigzag(10000)
            return self.msg("huge-count", n, "plan_request", v, "decode",
                            r"^config: 10000 items, more than the limit of 256$")
        if c == 4:  # a string claiming 2^60 bytes
            v = struct.pack(">BI", 0, 3) + av_str(key) + zigzag(self.t0) + zigzag(2 ** 60)
            return self.msg("huge-count", n, "node_event", v, "decode",
                            rf"^job_uid: truncated Avro data: {2 ** 60} more bytes needed at "
                            rf"offset {len(v)}, 0 left$")
        # a job uid of 4 KiB, past DLB_ID_MAX (128)
        rec = self.good("job_event", key, n)
        rec["job_uid"] = key + "-" + "u" * 4096
        return self.msg("huge-count", n, "job_event", frame(10, rec), "decode",
                        rf"^job_uid: {len(rec['job_uid'])} bytes long, more than the limit of 127$")

    def k_absurd(self, n):
        key = f"bad-absurd-{n:04d}"
        c = n % 12
        if c in (0, 1, 2, 3, 4):
            etype = "runtime_sample"
            rec = self.good(etype, key, n)
            if c == 0:
                rec["pods"][1]["memory_used"] = -8 * GIB
            elif c == 1:
                rec["speed"] = math.nan
            elif c == 2:
                rec["speed"] = math.inf
            elif c == 3:
                rec["pods"][0]["cpu_used"] = -1.0
            else:
                rec["global_step"] = -5
        elif c in (5, 6):
            etype = "plan_request"
            rec = self.good(etype, key, n)
            rec["stage"] = "job_stage_autoscale" if c == 5 else ""
        elif c == 7:
            etype = "job_event"
            rec = self.good(etype, key, n)
            rec["state"] = "exploded"
        elif c == 8:
            etype = "node_event"
            rec = self.good(etype, key, n)
            rec["kind"] = "abducted"
        elif c == 9:
            etype = "node_event"
            rec = self.good(etype, key, n)
            rec["pod_index"] = -3
        elif c == 10:
            etype = self.any_type(n)
            rec = self.good(etype, key, n)
            rec["event_time_ms"] = -1
        else:
            # Days ahead of now: refused by event.time.skew.s (1 day) against
            # the record's timestamp, which the producer leaves to now.
            etype = self.any_type(n)
            rec = self.good(etype, key, n)
            rec["event_time_ms"] = self.now + 3 * 86400000
            v = frame(self.cat.newest(etype).id, rec)
            return self.msg("absurd", n, etype, v, "validate",
                            rf"^event_time_ms {rec['event_time_ms']} is \d+ s ahead of its "
                            r"record's timestamp \d+ \(more than event.time.skew.s 86400\)$")
        try:
            validate(etype, rec)
            raise SystemExit(f"soak.py: absurd case {c} validates")
        except EventError as e:
            reason = "^" + re.escape(str(e)) + "$"
        return self.msg("absurd", n, etype, frame(self.cat.newest(etype).id, rec), "validate",
                        reason)

    def utf8_bad(self, n, kind, bad):
        """A valid event whose job uid, event id or first pod name ends in
        `bad`, patched into the Avro bytes over a placeholder of its length."""
        etype = self.any_type(n)
        key = f"bad-{kind}-{n:04d}"
        rec = self.good(etype, key, n)
        fields = ["job_uid", "event_id"] + (["pods"] if etype == "runtime_sample" else [])
        field = fields[n % len(fields)]
        ph = "~" * len(bad)
        if field == "pods":
            good, path = rec["pods"][0]["name"], "pods[0].name"
            rec["pods"][0]["name"] = good + ph
        else:
            good, path = rec[field], field
            rec[field] = good + ph
        v = frame(self.cat.newest(etype).id, rec)
        pat = (good + ph).encode()
        assert v.count(pat) == 1, (kind, n)
        i = v.index(pat) + len(good)
        return etype, v[:i] + bad + v[i + len(bad):], path, good.encode() + bad

    def k_bad_utf8(self, n):
        bad = [b"\xc3\x28", b"\xff", b"\xed\xa0\x80", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80",
               b"\x80"][n % 6]
        etype, v, path, whole = self.utf8_bad(n, "bad-utf8", bad)
        off = whole.index(bad)
        return self.msg("bad-utf8", n, etype, v, "decode",
                        rf"^{re.escape(path)}: not UTF-8: byte {off + 1} of {len(whole)} is "
                        rf"0x{bad[0]:02x}$")

    def k_nul_byte(self, n):
        etype, v, path, _ = self.utf8_bad(n, "nul-byte", b"\x00")
        return self.msg("nul-byte", n, etype, v, "decode",
                        rf"^{re.escape(path)}: contains a NUL byte$")

    def k_after_header(self, n):
        key = f"bad-after-header-{n:04d}"
        v = codec.encode("plan_request", self.good("plan_request", key, n))
        hdr, reason = [("garbage", r"^header dlb\.after: item 1: expected "
                                   r"<topic>:<partition>:<offset>$"),
                       (f"{self.env}.metrics:0:99999999999999999999",
                        r"^header dlb\.after: item 1: the offset is not a number")][n % 2]
        return self.msg("after-header", n, "plan_request", v, "decode", reason,
                        headers=[["dlb.after", hdr]])

    def k_oversized(self, n):
        # A real-looking sample of many pods, over message.max.bytes.
        etype = "runtime_sample"
        key = f"bad-oversized-{n:04d}"
        rec = self.good(etype, key, n)
        pod = rec["pods"][0]
        rec["pods"] = [dict(pod, name=f"{key}-worker-{i:05d}-" + "p" * 120, index=i)
                       for i in range(OVERSIZED_BYTES // 160)]
        v = frame(self.cat.newest(etype).id, rec)
        return self.msg("oversized", n, etype, v, "decode",
                        rf"^message of {len(v)} bytes exceeds message\.max\.bytes {MAX_BYTES}$")

    def k_near_limit(self, n):
        # Bad bytes the consumer's size check lets through: its DLQ copy does
        # not fit librdkafka's message.max.bytes (1,000,000), so it must go
        # without its body, not fail the batch for ever.
        etype = self.any_type(n)
        v = b"{" + b" " * (NEAR_LIMIT_BYTES - 2) + b"}"
        return self.msg("near-limit", n, etype, v, "decode",
                        r"^magic byte is 0x7b, not 0: not Confluent-framed Avro \(it looks like JSON\)$")

    def k_huge_key(self, n):
        etype = self.any_type(n)
        key = f"bad-huge-key-{n:04d}-" + "k" * 900000
        return self.msg("huge-key", n, etype, b"\x00\x00\x00\x00", "decode",
                        r"^message of 4 bytes is shorter than the 5-byte Confluent header$",
                        key=key)

    def all(self, count):
        weights = sum(w for _, w in KINDS)
        out = []
        for kind, w in KINDS:
            k = FIXED.get(kind) or max(1, round(count * w / weights))
            fn = getattr(self, "k_" + kind.replace("-", "_"))
            out.extend(fn(i) for i in range(k))
        self.rng.shuffle(out)
        return out


def cmd_gen(a):
    msgs = Gen(a.env, a.seed).all(a.count)
    with open(a.out, "w") as f:
        for m in msgs:
            f.write(json.dumps(m) + "\n")
    print(f"soak: {len(msgs)} bad messages of {len({m['kind'] for m in msgs})} kinds")


def cmd_setup(a):
    admin = AdminClient({"bootstrap.servers": a.brokers})
    res = [ConfigResource(ResourceType.TOPIC, f"{a.env}.{t}", incremental_configs=[
        ConfigEntry("max.message.bytes", str(TOPIC_MAX_BYTES),
                    incremental_operation=AlterConfigOpType.SET)]) for t in INPUTS]
    for f in admin.incremental_alter_configs(res).values():
        f.result(timeout=30)


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def cmd_produce(a):
    msgs = load(a.inp)
    part = [m for i, m in enumerate(msgs) if i % a.parts == a.part]
    p = Producer({"bootstrap.servers": a.brokers, "message.max.bytes": TOPIC_MAX_BYTES + 4096,
                  "linger.ms": 5, "enable.idempotence": True})
    out = open(a.log, "a")
    failed = []

    def dr(err, msg):
        key = (msg.key() or b"")[:40].decode()
        if err:
            failed.append(f"{key}: {err}")
        else:
            out.write(f"{msg.topic()} {msg.partition()} {msg.offset()} {key}\n")

    for m in part:
        value = None if m.get("null") else base64.b64decode(m["value"])
        hdrs = [(h, v.encode()) for h, v in m.get("headers", [])]
        p.produce(m["topic"], value=value, key=m["key"].encode(), headers=hdrs or None,
                  on_delivery=dr)
        p.poll(0)
    if p.flush(60):
        failed.append("not all delivered within 60 s")
    out.close()
    if failed:
        sys.exit("soak.py produce: " + "; ".join(failed[:5]))


def cmd_sample(a):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    # read_uncommitted: the committed offsets as they are, not a wait for an
    # open transaction's (librdkafka asks for stable offsets under
    # read_committed).
    c = Consumer({"bootstrap.servers": a.brokers, "group.id": a.group,
                  "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    admin = AdminClient({"bootstrap.servers": a.brokers})
    md = c.list_topics(timeout=30)
    tps = [TopicPartition(f"{a.env}.{t}", p) for t in INPUTS
           for p in sorted(md.topics[f"{a.env}.{t}"].partitions)]
    owners, next_owners = None, 0.0
    with open(a.out, "w") as f:
        f.write("# " + " ".join(f"{tp.topic}:{tp.partition}" for tp in tps) + "\n")
        f.flush()
        while not stop:
            t0 = time.time()
            if t0 >= next_owners:
                # Who owns what (group.instance.id), every 2 s: a static
                # member keeps its partitions across its restarts.
                next_owners = t0 + 2
                try:
                    g = admin.describe_consumer_groups([a.group])[a.group].result(timeout=5)
                    now = {f"{tp.topic}:{tp.partition}": m.group_instance_id or m.member_id
                           for m in g.members for tp in m.assignment.topic_partitions}
                    if now and now != owners:
                        owners = now
                        f.write(f"#owners {int(t0 * 1000)} " + " ".join(
                            f"{k}={v}" for k, v in sorted(now.items())) + "\n")
                except Exception:  # the group not there yet, the broker busy
                    pass
            try:
                com = {(tp.topic, tp.partition): tp.offset for tp in c.committed(tps, timeout=5)}
                ends = [c.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in tps]
            except KafkaException:
                time.sleep(0.5)  # the broker busy: this sample is skipped
                continue
            row = [f"{max(com[(tp.topic, tp.partition)], 0)}/{e}" for tp, e in zip(tps, ends)]
            f.write(f"{int(t0 * 1000)} " + " ".join(row) + "\n")
            f.flush()
            time.sleep(max(0.0, 0.5 - (time.time() - t0)))
    c.close()


def read_samples(path, owners=None):
    """Partition names, sample rows, and (into owners) each partition's
    owners over time: name -> [(ms, group.instance.id), ...]."""
    names, rows = [], []
    for line in open(path):
        if line.startswith("#owners "):
            f = line.split()
            for kv in f[2:]:
                k, v = kv.split("=", 1)
                if owners is not None:
                    owners.setdefault(k, []).append((int(f[1]), v))
            continue
        if line.startswith("#"):
            names = line[1:].split()
            continue
        f = line.split()
        rows.append((int(f[0]), [tuple(int(x) for x in v.split("/")) for v in f[1:]]))
    return names, rows


def cmd_drained(a):
    _, rows = read_samples(a.samples)
    sys.exit(0 if rows and all(c >= e for c, e in rows[-1][1]) else 1)


def stalls(names, rows):
    """Every stall: (seconds, to 0.1 as reported, partition, start ms, end ms)."""
    out = []
    for i, name in enumerate(names):
        since, held = None, None
        for t, vals in rows:
            c, e = vals[i]
            if e > c and c == held and since is not None:
                continue
            if since is not None:
                out.append((round((t - since) / 1000, 1), name, since, t))
            since, held = (t, c) if e > c else (None, None)
        if since is not None:
            out.append((round((rows[-1][0] - since) / 1000, 1), name, since, rows[-1][0]))
    return sorted(out, reverse=True)


def read_dlq(brokers, env):
    c = Consumer({"bootstrap.servers": brokers, "group.id": "soak-dlq-reader",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.partition.eof": True,
                  "fetch.max.bytes": TOPIC_MAX_BYTES * 2})
    topic = f"{env}.dlq"
    md = c.list_topics(topic, timeout=30)
    parts = sorted(md.topics[topic].partitions)
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    eof, out, deadline = set(), [], time.time() + 120
    while len(eof) < len(parts) and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                continue
            raise KafkaException(m.error())
        h = {}
        for k, v in m.headers() or []:
            h[k] = v.decode(errors="replace") if v is not None else None
        out.append({"key": m.key(), "value": m.value(), "headers": h})
    c.close()
    if len(eof) < len(parts):
        sys.exit("soak.py report: the DLQ was not read to its end within 120 s")
    return out


def cmd_report(a):
    msgs = load(a.inp)
    produced = {}
    for line in open(a.produced):
        t, p, o, key = line.split(" ", 3)
        produced[(t, int(p), int(o))] = key.rstrip("\n")
    by_key = {m["key"][:40]: m for m in msgs}
    dlq = read_dlq(a.brokers, a.env)
    seen = collections.Counter()
    wrong, strays, sent = [], [], collections.Counter(m["kind"] for m in msgs)
    found = collections.Counter()
    for d in dlq:
        h = d["headers"]
        src = (h.get("dlb.source.topic"), int(h.get("dlb.source.partition", -1)),
               int(h.get("dlb.source.offset", -1)))
        key40 = produced.get(src)
        m = by_key.get(key40) if key40 is not None else None
        if m is None:
            strays.append(f"{src} key {(d['key'] or b'')[:40]!r}: {h.get('dlb.error.message')}")
            continue
        seen[src] += 1
        if seen[src] == 1:
            found[m["kind"]] += 1
        msg = h.get("dlb.error.message") or ""
        problems = []
        if not re.fullmatch(m["stage"], h.get("dlb.stage") or ""):
            problems.append(f"stage {h.get('dlb.stage')} (want {m['stage']})")
        if not re.search(m["reason"], msg):
            problems.append(f"message [{msg}] (want /{m['reason']}/)")
        size = 0 if m.get("null") else len(base64.b64decode(m["value"]))
        omitted = h.get("dlb.value.omitted.bytes")
        if omitted is not None:
            if int(omitted) != size or d["value"]:
                problems.append(f"dlb.value.omitted.bytes {omitted}, value {len(d['value'] or b'')}"
                                f" bytes (sent {size})")
        elif len(d["value"] or b"") != size:
            problems.append(f"value of {len(d['value'] or b'')} bytes, sent {size}")
        if m["kind"] in ("oversized", "near-limit") and omitted is None:
            problems.append("no dlb.value.omitted.bytes")
        if problems:
            wrong.append(f"{m['kind']} {key40}: " + "; ".join(problems))
    repeated = sum(n - 1 for n in seen.values() if n > 1)
    missing = len(produced) - len(seen)
    kill_times = []
    for line in open(a.kills):
        f = line.split()
        if f and f[0] == "kill":
            kill_times.append((int(f[1]), f[2]))
    owners = {}
    names, rows = read_samples(a.samples, owners)
    st = stalls(names, rows)
    t_start = rows[0][0] if rows else 0

    def owner(name, t):
        """The slot (chaos-N's N) that owned partition name at t, or None."""
        o = None
        for ms, who in owners.get(name, []):
            if ms <= t or o is None:
                o = who
        return o.rsplit("-", 1)[-1] if o else None

    def kills_in(s, own=True):
        """Kills inside stall s (from 0.5 s before its first sample, which
        may be that late): of the partition's owner, or of any slot."""
        sec, name, t0, t1 = s
        who = owner(name, t0)
        return [k for k in kill_times if t0 - 500 <= k[0] <= t1 and (not own or k[1] == who)]

    def fmt_stall(s):
        sec, name, t0, t1 = s
        own, every = kills_in(s), kills_in(s, own=False)
        who = owner(name, t0)
        why = (f"{len(own)} kill(s) of its owner, optimizer {who}, inside it" if own else
               f"no kill of its owner{', optimizer ' + who if who else ''} inside it")
        if len(every) > len(own):
            why += f" ({len(every) - len(own)} of other optimizers)"
        return (f"{sec:.1f} s on {name.rsplit(':', 1)[0]} [{name.rsplit(':', 1)[1]}], "
                f"t={(t0 - t_start) / 1000:.1f}..{(t1 - t_start) / 1000:.1f} s, {why}")

    none = (0.0, "-:-", t_start, t_start)
    worst = st[0] if st else none
    calm = [s for s in st if not kills_in(s)]
    worst_calm = calm[0] if calm else none
    single = [s for s in st if len(kills_in(s)) == 1]
    worst_single = single[0] if single else none
    rss = collections.defaultdict(list)
    for line in open(a.rss):
        slot, kb = line.split()[:2]
        rss[slot].append(int(kb))
    verify = open(a.verify).read().strip()
    vals = dict(kv.split("=", 1) for kv in verify.split() if "=" in kv)

    lines = [
        f"soak: good events={vals.get('events')} lost plans={vals.get('lost')} "
        f"rows={vals.get('rows')} plans duplicated={vals.get('duplicated')} "
        f"unexpected={vals.get('unexpected')} (verify.py)",
        f"soak: bad messages sent={len(msgs)} delivered={len(produced)} in DLQ once="
        f"{sum(found.values())} missing={missing} repeated={repeated} wrong={len(wrong)} "
        f"stray={len(strays)}",
        "soak: by kind (sent/in DLQ): " + ", ".join(f"{k} {sent[k]}/{found[k]}" for k, _ in KINDS),
        f"soak: kills={len(kill_times)}; samples={len(rows)} every 0.5 s of {len(names)} "
        f"input partitions",
        f"soak: longest stall: {fmt_stall(worst)}",
        f"soak: longest stall after one kill -9 of its owner (not killed again): "
        f"{fmt_stall(worst_single)}",
        f"soak: longest stall with no kill of its owner inside it: {fmt_stall(worst_calm)}",
        "soak: stalls over 10 s: " + str(sum(1 for s in st if s[0] > 10)),
        "soak: peak RSS (VmHWM, max over each slot's runs): " + ", ".join(
            f"optimizer {s} {max(v) / 1024:.1f} MiB ({len(v)} runs)" for s, v in sorted(rss.items())),
        f"soak: numbers: stall_s={worst[0]:.1f} stall_one_kill_s={worst_single[0]:.1f} "
        f"stall_calm_s={worst_calm[0]:.1f} owner_kills_in_stall={len(kills_in(worst))} "
        f"rss_kb={max((max(v) for v in rss.values()), default=0)}",
        "soak: goals: no stall over 10 s: " + ("met" if worst[0] <= 10 else "NOT met") +
        f" ({worst[0]:.1f} s); peak RSS under 256 MiB: " +
        ("met" if rss and max(max(v) for v in rss.values()) < 256 * 1024 else "NOT met"),
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
        for w in wrong[:20]:
            f.write(f"  wrong: {w}\n")
        for s in strays[:20]:
            f.write(f"  stray: {s}\n")
        for s in st[:5]:
            f.write(f"  stall: {fmt_stall(s)}\n")
    print(open(a.out).read(), end="")
    ok = not (missing or repeated or wrong or strays or len(produced) != len(msgs))
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--env", required=True)
    g.add_argument("--count", type=int, required=True)
    g.add_argument("--seed", type=int, default=18)
    g.add_argument("--out", required=True)
    s = sub.add_parser("setup")
    s.add_argument("--brokers", required=True)
    s.add_argument("--env", required=True)
    p = sub.add_parser("produce")
    p.add_argument("--brokers", required=True)
    p.add_argument("--in", dest="inp", required=True)
    p.add_argument("--part", type=int, default=0)
    p.add_argument("--parts", type=int, default=1)
    p.add_argument("--log", required=True)
    m = sub.add_parser("sample")
    m.add_argument("--brokers", required=True)
    m.add_argument("--group", required=True)
    m.add_argument("--env", required=True)
    m.add_argument("--out", required=True)
    d = sub.add_parser("drained")
    d.add_argument("--samples", required=True)
    r = sub.add_parser("report")
    for k in ("brokers", "env", "produced", "samples", "kills", "rss", "verify", "out"):
        r.add_argument("--" + k, required=True)
    r.add_argument("--in", dest="inp", required=True)
    a = ap.parse_args()
    globals()["cmd_" + a.cmd](a)


if __name__ == "__main__":
    main()
