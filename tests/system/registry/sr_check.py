"""confluent-kafka's own Schema Registry client and Avro serdes, unchanged
from PyPI, against `dlbrain registry` (tests/system/48-schema-registry.sh).

  sr_check.py produce URL BROKERS ENV
      AvroSerializer (auto.register.schemas off: it looks the schema up by
      POST /subjects/<env>.plan-requests-value) writes a good plan request
      and one whose stage no optimizer knows (-> the DLQ); two messages
      that are not dlbrain's Avro go to the DLQ too (wrong magic byte,
      unknown schema id).
  sr_check.py compare URL BROKERS ENV DLBRAIN PLANS_JSON
      Reads <env>.plans, <env>.metrics and <env>.dlq from the start, decodes
      every value with AvroDeserializer + SchemaRegistryClient at URL and
      with dlbrain's own decoder (dlbrain schemas --decode, the consumers'
      dlb_codec_decode), and checks both give the same records (or both
      refuse the same messages); the plans also equal what `dlbrain plans`
      (a job master's subscriber) printed to PLANS_JSON.
"""
import datetime
import json
import subprocess
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

TOPICS = ("plans", "metrics", "dlq")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def fail(msg):
    print(f"FAIL - {msg}")
    sys.exit(1)


def produce(url, brokers, env):
    sr = SchemaRegistryClient({"url": url})
    subject = f"{env}.plan-requests-value"
    latest = sr.get_latest_version(subject)
    ser = AvroSerializer(sr, latest.schema.schema_str, conf={"auto.register.schemas": False})
    topic = f"{env}.plan-requests"
    ctx = SerializationContext(topic, MessageField.VALUE)
    now = int(time.time() * 1000)
    base = {"event_time_ms": now, "oom_pod": None, "oom_pods": [], "config": {}}
    good = ser(dict(base, event_id="sr-q1", job_uid="sr-good", stage="job_stage_create"), ctx)
    bad = ser(dict(base, event_id="sr-q2", job_uid="sr-bad", stage="bogus"), ctx)
    schema_id = int.from_bytes(good[1:5], "big")
    if good[0] != 0 or schema_id != latest.schema_id:
        fail(f"the serializer framed id {schema_id}, the registry's latest is {latest.schema_id}")
    print(f"ok - AvroSerializer found {subject} version {latest.version} (id {schema_id}) by lookup")
    p = Producer({"bootstrap.servers": brokers})
    for key, value in (("sr-good", good), ("sr-bad", bad),
                       ("sr-magic", b"\x01\x00\x00\x00\x0cxyz"),
                       ("sr-unknown-id", b"\x00\x00\x00\x00\x63xyz")):
        p.produce(topic, key=key, value=value)
    if p.flush(30):
        fail("the producer could not deliver")
    print("ok - produced 2 serialized plan requests and 2 foreign messages")


def read_all(brokers, topic):
    """Every committed value of topic, partition by partition, in order."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": f"sr-check-{time.time_ns()}",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    md = c.list_topics(topic, timeout=30).topics[topic]
    parts = sorted(md.partitions)
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    out, deadline = [], time.time() + 60
    while time.time() < deadline:
        pos = {tp.partition: tp.offset for tp in c.position([TopicPartition(topic, p) for p in parts])}
        if all(pos[p] >= ends[p] for p in parts):
            break
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append(m)
    else:
        fail(f"{topic}: not read to its end offsets {ends} within 60 s")
    c.close()
    return out


def plain(v):
    """fastavro gives a timestamp-millis long as a datetime (the schemas'
    logicalType); dlbrain's JSON keeps the long. The same instant either way."""
    if isinstance(v, datetime.datetime):
        return (v - EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def native(dlbrain, values):
    hexes = "".join((v or b"").hex() + "\n" for v in values)
    r = subprocess.run([dlbrain, "schemas", "--decode"], input=hexes, capture_output=True,
                       text=True, check=True)
    lines = r.stdout.splitlines()
    if len(lines) != len(values):
        fail(f"dlbrain schemas --decode printed {len(lines)} lines for {len(values)} messages")
    return [json.loads(line) for line in lines]


def compare(url, brokers, env, dlbrain, plans_json):
    sr = SchemaRegistryClient({"url": url})
    deser = AvroDeserializer(sr)
    decoded_plans = {}
    for short in TOPICS:
        topic = f"{env}.{short}"
        msgs = read_all(brokers, topic)
        nat = native(dlbrain, [m.value() for m in msgs])
        same = refused = 0
        ids = set()
        for m, n in zip(msgs, nat):
            where = f"{topic}[{m.partition()}]@{m.offset()}"
            try:
                rec = plain(deser(m.value(), SerializationContext(topic, MessageField.VALUE)))
                err = None
            except Exception as e:  # SerializationError, SchemaRegistryError
                rec, err = None, f"{type(e).__name__}: {e}"
            if "error" in n:
                if err is None:
                    fail(f"{where}: the registry's client decoded {rec}, dlbrain refused: {n['error']}")
                refused += 1
                continue
            if err is not None:
                fail(f"{where}: dlbrain decoded it, the registry's client refused: {err}")
            typ = n.pop("type")
            if rec != n:
                fail(f"{where}: records differ\n  registry client: {rec}\n  dlbrain:         {n}")
            ids.add(int.from_bytes(m.value()[1:5], "big"))
            same += 1
            if short == "plans":
                decoded_plans[rec["plan_id"]] = rec
            if short != "dlq" and typ != {"plans": "plan", "metrics": "runtime_sample"}[short]:
                fail(f"{where}: a {typ} on {topic}")
        print(f"ok - {topic}: {same} record(s) decoded the same by both (schema ids "
              f"{sorted(ids)}), {refused} refused by both")
        if same == 0:
            fail(f"{topic}: nothing decoded")
        if short == "dlq" and refused < 2:
            fail(f"{topic}: the two foreign messages were not refused by both")
    with open(plans_json) as f:
        subscribed = [json.loads(line) for line in f if line.strip()]
    for p in subscribed:
        p.pop("type", None)
        got = decoded_plans.get(p["plan_id"])
        if got != p:
            fail(f"plan {p['plan_id']}: dlbrain plans printed {p}, the registry client read {got}")
    print(f"ok - the {len(subscribed)} plan(s) dlbrain plans printed equal the registry client's")


def main(argv):
    if len(argv) == 5 and argv[1] == "produce":
        produce(*argv[2:])
    elif len(argv) == 7 and argv[1] == "compare":
        compare(*argv[2:])
    else:
        fail(f"usage: {argv[0]} produce URL BROKERS ENV | compare URL BROKERS ENV DLBRAIN PLANS_JSON")


if __name__ == "__main__":
    main(sys.argv)
