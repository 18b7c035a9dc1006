"""The dlrover-local consumer: an environment's plan requests answered by
DLRover 0.6.1's PSLocalOptimizer (adapter.py), fed the environment's runtime
samples and OOM events, plans published on <env>.plans in Kafka transactions.

Inputs: <env>.job-events, .metrics, .k8s-events and .plan-requests, every
partition assigned (no consumer group: one instance per environment),
read_committed, from the beginning. DLRover's master keeps its statistics in
memory and so does this consumer: a restart reads the inputs again from the
start and so rebuilds every job's statistics, and it first reads <env>.plans
(read_committed) to know which requests have a committed answer, which it does
not answer again. The transactional id <env>.dlrover_local fences an older
instance still running, so a request gets one committed plan.

Order: a request is answered once the consumer has read past every position
its dlb.after header names (the events its producer wrote before it); without
the header, ORDER_GRACE_S after it was read. Its job's statistics are then
exactly the events ordered before it by (event time, kind: job, node, metrics,
request), as the C optimizer orders a job's topics; later events wait for the
job's next request. A position the broker's log does not reach (a header
copied from another log) holds nothing: checked once a request has waited
ORDER_WAIT_S, with a warning. A job's requests are answered in the order they
were read.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from dlbrain_client import codec
from dlbrain_client.catalog import TOPICS
from dlbrain_client.events import EventError

from . import adapter

log = logging.getLogger("dlrover-local")

INPUTS = ("job_event", "node_event", "runtime_sample", "plan_request")
RANK = {t: i for i, t in enumerate(INPUTS)}  # ties in event time: job, node, metrics, request
TERMINAL = ("succeeded", "failed", "stopped")
ORDER_GRACE_S = 0.1  # consumer.order.grace.ms
ORDER_WAIT_S = 2.0  # consumer.order.wait.ms
AFTER_MAX_ITEMS = 8
AFTER_MAX_BYTES = 2048
_ENV_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


RETRY_S = 30.0  # how long a metadata or watermark call is retried
_TRANSIENT = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
              KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
              KafkaError.REQUEST_TIMED_OUT, KafkaError._ALL_BROKERS_DOWN}


def _transient(err: KafkaError) -> bool:
    return err.retriable() or err.code() in _TRANSIENT


def watermarks(client: Consumer, topic: str, partition: int) -> Tuple[int, int]:
    """(low, high) of a partition; a topic just created may have no leader
    for a moment, so transient errors are retried for RETRY_S."""
    deadline = time.monotonic() + RETRY_S
    while True:
        try:
            return client.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        except KafkaException as e:
            if not _transient(e.args[0]) or time.monotonic() >= deadline:
                raise RuntimeError(
                    f"{topic} [{partition}]: watermarks: {e.args[0].str()}") from None
            time.sleep(0.2)


def topic_partitions(client: Consumer, topic: str) -> Optional[List[int]]:
    """The partitions of topic, None when it does not exist; a topic whose
    metadata shows a transient error is asked again for RETRY_S."""
    deadline = time.monotonic() + RETRY_S
    while True:
        try:
            t = client.list_topics(topic, timeout=10).topics.get(topic)
            err = None if t is None else t.error
        except KafkaException as e:
            t, err = None, e.args[0]
        if err is None:
            return None if t is None else sorted(t.partitions)
        if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        if not _transient(err) or time.monotonic() >= deadline:
            raise RuntimeError(f"{topic}: metadata: {err.str()}")
        time.sleep(0.2)


class ConfigError(ValueError):
    """Bad settings: the message names the option."""


def check_env(name: str) -> str:
    """The environment name rules every dlbrain command applies (env/registry)."""
    if not _ENV_NAME.match(name) or name in ("public", "information_schema", "dlbrain_registry") \
            or name.startswith("pg_"):
        raise ConfigError(f"env: environment name '{name}' must be a-z, 0-9 and _, start with a "
                          "letter, at most 48 characters, and not public, information_schema, "
                          "pg_* or dlbrain_registry")
    return name


def parse_after(value: bytes) -> List[Tuple[str, int, int]]:
    """The dlb.after header: <topic>:<partition>:<offset> items joined by ','
    (docs/events.md). Raises ValueError naming the item."""
    if len(value) > AFTER_MAX_BYTES:
        raise ValueError(f"{len(value)} bytes, more than {AFTER_MAX_BYTES}")
    text = value.decode("utf-8")
    if not text:
        return []
    items = text.split(",")
    if len(items) > AFTER_MAX_ITEMS:
        raise ValueError(f"{len(items)} items, more than {AFTER_MAX_ITEMS}")
    out = []
    for i, item in enumerate(items, 1):
        parts = item.rsplit(":", 2)
        if len(parts) != 3 or not parts[0]:
            raise ValueError(f"item {i}: expected <topic>:<partition>:<offset>")
        if not parts[1].isdigit() or int(parts[1]) > 2**31 - 1:
            raise ValueError(f"item {i}: the partition is not a number from 0 to 2147483647")
        if not parts[2].isdigit() or int(parts[2]) > 2**63 - 1:
            raise ValueError(f"item {i}: the offset is not a number from 0 to 9223372036854775807")
        out.append((parts[0], int(parts[1]), int(parts[2])))
    return out


@dataclass
class Request:
    rec: Dict[str, Any]
    key: Tuple[int, int, int]
    after: Optional[List[Tuple[str, int, int]]]  # None: no header
    read_at: float
    where: str  # topic [partition] offset, for messages
    checked_at: float = 0.0  # when the log's end was last asked about


@dataclass
class Job:
    opt: adapter.JobOptimizer
    events: List[Tuple[Tuple[int, int, int], str, Dict[str, Any]]] = field(default_factory=list)
    requests: Deque[Request] = field(default_factory=deque)
    ended: bool = False


class DlroverLocal:
    """One environment's consumer. run() until stop() (SIGTERM/SIGINT)."""

    def __init__(self, env: str, brokers: str, limits: Any, kafka_conf: Dict[str, str],
                 poll_s: float = 0.05):
        self.env = check_env(env)
        self.limits = limits
        self.topics = {f"{env}.{TOPICS[t]}": t for t in INPUTS}
        self.plans_topic = f"{env}.{TOPICS['plan']}"
        self.poll_s = poll_s
        self.jobs: Dict[str, Job] = {}
        self.ended: Set[str] = set()
        self.answered: Set[str] = set()  # request event ids with a committed (or own) answer
        self.position: Dict[Tuple[str, int], int] = {}  # last offset read
        self.assigned: Set[Tuple[str, int]] = set()
        self.seq = 0
        self.stopping = False
        self.stats = {"read": 0, "undecodable": 0, "requests": 0, "answered": 0, "skipped": 0,
                      "rejected": 0, "transactions": 0}
        base = {"bootstrap.servers": brokers, "client.id": f"{env}.dlrover_local"}
        self.consumer_conf = dict(base, **{
            "group.id": f"{env}.dlrover_local",  # never joined nor committed: assign() only
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "fetch.wait.max.ms": 10,  # a tick waits for its plans: answer without delay
        })
        self.producer_conf = dict(base, **{
            "transactional.id": f"{env}.dlrover_local",
            "enable.idempotence": True,
            "linger.ms": 0,
        })
        for k, v in kafka_conf.items():
            self.consumer_conf[k] = v
            self.producer_conf[k] = v
        self.consumer: Optional[Consumer] = None
        self.producer: Optional[Producer] = None
        self.next_discovery = 0.0
        self.start_ends: Dict[Tuple[str, int], int] = {}
        self.caught_up = False

    # ---- start ------------------------------------------------------------
    def start(self) -> None:
        self.producer = Producer(self.producer_conf)
        try:
            self.producer.init_transactions(30)
        except KafkaException as e:
            raise ConfigError(f"init_transactions ({self.producer_conf['bootstrap.servers']}): "
                              f"{e.args[0].str()}") from None
        self.answered = self._committed_answers()
        log.info("%d request(s) of %s have a committed plan already", len(self.answered), self.env)
        self.consumer = Consumer(self.consumer_conf)
        self._discover(force=True)
        # Where the inputs ended at the start: reading past it is "caught up".
        for topic, part in self.assigned:
            lo, hi = watermarks(self.consumer, topic, part)
            if hi > lo:
                self.start_ends[(topic, part)] = hi

    def _committed_answers(self) -> Set[str]:
        """The trigger ids of every committed plan on <env>.plans: after the
        fence, what an older instance committed is all there is."""
        c = Consumer(dict(self.consumer_conf, **{"group.id": f"{self.env}.dlrover_local.scan"}))
        ids: Set[str] = set()
        try:
            ends = {}
            for p in topic_partitions(c, self.plans_topic) or ():
                lo, hi = watermarks(c, self.plans_topic, p)
                if hi > lo:
                    ends[p] = hi
            c.assign([TopicPartition(self.plans_topic, p, OFFSET_BEGINNING) for p in ends])
            deadline = time.monotonic() + 30
            while ends and time.monotonic() < deadline:
                for m in c.consume(500, 0.5):
                    if m.error():
                        continue
                    try:
                        ids.add(codec.decode(m.value() or b"")[1]["trigger_event_id"])
                    except (codec.DecodeError, KeyError):
                        pass
                # The position passes transaction markers too; read_committed
                # stops short of another producer's open transaction.
                for tp in c.position([TopicPartition(self.plans_topic, p) for p in ends]):
                    if tp.offset >= ends[tp.partition]:
                        del ends[tp.partition]
            if ends:
                log.warning("%s: partitions %s not read to their end within 30 s (an open "
                            "transaction?); their answers may be given again",
                            self.plans_topic, sorted(ends))
        finally:
            c.close()
        return ids

    def _discover(self, force: bool = False) -> None:
        """Assigns partitions of the input topics not assigned yet, from the
        beginning: topics created after the start (auto-creation on first
        write) and added partitions are picked up within a second."""
        now = time.monotonic()
        if not force and now < self.next_discovery:
            return
        missing = False
        try:
            md = self.consumer.list_topics(timeout=5)
        except KafkaException as e:
            log.warning("metadata: %s; retrying", e.args[0].str())
            self.next_discovery = now + 1.0
            return
        new = []
        for topic in self.topics:
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                missing = True
                continue
            for p in t.partitions:
                if (topic, p) not in self.assigned:
                    new.append(TopicPartition(topic, p, OFFSET_BEGINNING))
                    self.assigned.add((topic, p))
        if new:
            self.consumer.incremental_assign(new)
            log.info("reading %s", ", ".join(f"{tp.topic}[{tp.partition}]" for tp in new))
        self.next_discovery = now + (1.0 if missing else 10.0)

    # ---- the loop ---------------------------------------------------------
    def run(self) -> None:
        print("dlrover-local: ready", flush=True)
        while not self.stopping:
            self._discover()
            # consume() would wait out its timeout for a full batch: wait for
            # one message, then take what else is there.
            first = self.consumer.poll(self.poll_s)
            if first is not None:
                self._read(first)
                for m in self.consumer.consume(500, 0):
                    self._read(m)
            outbox = self._answer_ready()
            if outbox:
                self._publish(outbox)
            if not self.caught_up:
                self._check_caught_up()

    def _check_caught_up(self) -> None:
        if self.start_ends:
            tps = [TopicPartition(t, p) for t, p in self.start_ends]
            for tp in self.consumer.position(tps):
                if tp.offset >= self.start_ends[(tp.topic, tp.partition)]:
                    del self.start_ends[(tp.topic, tp.partition)]
        if not self.start_ends:
            self.caught_up = True
            log.info("caught up with the inputs as of the start: %s",
                     ", ".join(f"{k}={v}" for k, v in self.stats.items()))

    def stop(self) -> None:
        self.stopping = True

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
        if self.producer is not None:
            self.producer.flush(10)
        log.info("stopped: %s", ", ".join(f"{k}={v}" for k, v in self.stats.items()))

    def _job(self, uid: str) -> Job:
        j = self.jobs.get(uid)
        if j is None:
            j = self.jobs[uid] = Job(adapter.JobOptimizer(uid, self.limits))
        return j

    def _read(self, m: Any) -> None:
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                log.warning("kafka: %s", m.error().str())
            return
        topic, part, off = m.topic(), m.partition(), m.offset()
        self.position[(topic, part)] = off
        self.stats["read"] += 1
        where = f"{topic} [{part}] offset {off}"
        try:
            typ, rec = codec.decode(m.value() or b"")
            if typ != self.topics.get(topic):
                raise codec.DecodeError(f"a {typ} on the topic of {self.topics.get(topic)}")
            codec.normalize(typ, rec)  # the semantic checks the pipeline applies
        except (codec.DecodeError, EventError) as e:
            self.stats["undecodable"] += 1
            log.warning("%s: not a valid event (%s); skipped", where, e)
            return
        uid = rec["job_uid"]
        self.seq += 1
        key = (int(rec["event_time_ms"]), RANK[typ], self.seq)
        if typ == "plan_request":
            self._request(m, rec, key, where)
            return
        if uid in self.ended:
            return  # the job is over: nothing will ask about it again
        job = self._job(uid)
        job.events.append((key, typ, rec))
        if typ == "job_event" and rec.get("state") in TERMINAL:
            job.ended = True
            self._drop_if_done(uid, job)

    def _request(self, m: Any, rec: Dict[str, Any], key: Tuple[int, int, int], where: str) -> None:
        self.stats["requests"] += 1
        if rec["event_id"] in self.answered:
            self.stats["skipped"] += 1
            return
        after = None
        for name, value in m.headers() or ():
            if name == "dlb.after":
                try:
                    after = parse_after(value or b"")
                except (ValueError, UnicodeDecodeError) as e:
                    # The pipeline sends such a request to the DLQ, unanswered.
                    self.stats["rejected"] += 1
                    log.error("%s: request %s of job %s: header dlb.after: %s; not answered",
                              where, rec["event_id"], rec["job_uid"], e)
                    return
        uid = rec["job_uid"]
        if uid in self.ended:
            log.warning("%s: request %s of job %s after its end: answered on no statistics",
                        where, rec["event_id"], uid)
            self.ended.discard(uid)
        self._job(uid).requests.append(Request(rec, key, after, time.monotonic(), where))

    def _ready(self, r: Request, now: float) -> bool:
        if r.after is None:
            return now - r.read_at >= ORDER_GRACE_S
        behind = [(t, p, o) for t, p, o in r.after
                  if t in self.topics and self.position.get((t, p), -1) < o]
        if not behind or now - r.read_at < ORDER_WAIT_S or now - r.checked_at < ORDER_WAIT_S:
            return not behind
        r.checked_at = now
        past_end = []
        for t, p, o in behind:
            try:
                _, hi = self.consumer.get_watermark_offsets(TopicPartition(t, p), timeout=5)
            except KafkaException as e:
                log.warning("%s: request %s: %s [%d]: %s", r.where, r.rec["event_id"], t, p,
                            e.args[0].str())
                return False
            if o >= hi:
                past_end.append((t, p, o))
        if past_end:
            log.warning("%s: request %s: positions %s are past the end of their log and hold "
                        "nothing", r.where, r.rec["event_id"], past_end)
            r.after = [a for a in r.after if a not in past_end]
            return self._ready(r, now)
        log.warning("%s: request %s of job %s still waits for positions %s", r.where,
                    r.rec["event_id"], r.rec["job_uid"], behind)
        return False

    def _answer_ready(self) -> List[Tuple[str, bytes, str]]:
        now = time.monotonic()
        outbox = []
        for uid in list(self.jobs):
            job = self.jobs[uid]
            while job.requests and self._ready(job.requests[0], now):
                r = job.requests.popleft()
                self._apply_until(job, r.key)
                outcome = job.opt.ask(r.rec)
                plan = adapter.plan_event(r.rec, outcome)
                try:
                    frame = codec.encode("plan", plan)
                except EventError as e:
                    self.stats["rejected"] += 1
                    log.error("%s: request %s of job %s: the plan cannot be written (%s); "
                              "not answered", r.where, r.rec["event_id"], uid, e)
                    continue
                log.info("plan %s for job %s at %s by %s: %s", plan["plan_id"], uid,
                         plan["stage"], plan["optimizer"], plan["reason"])
                outbox.append((uid, frame, r.rec["event_id"]))
            if job.ended:
                self._drop_if_done(uid, job)
        return outbox

    def _apply_until(self, job: Job, key: Tuple[int, int, int]) -> None:
        """Feeds the job's events ordered before key, in order."""
        if not job.events:
            return
        job.events.sort(key=lambda e: e[0])
        n = 0
        for ekey, typ, rec in job.events:
            if ekey[:2] >= key[:2]:
                break
            if typ == "runtime_sample":
                job.opt.add_sample(rec)
            elif typ == "node_event":
                job.opt.add_node_event(rec)
            n += 1
        del job.events[:n]

    def _drop_if_done(self, uid: str, job: Job) -> None:
        if not job.requests:
            del self.jobs[uid]
            self.ended.add(uid)

    def _publish(self, outbox: List[Tuple[str, bytes, str]]) -> None:
        """One transaction: every plan of the batch, or none. A transaction
        that must be aborted is redone whole; a commit that failed for a
        retriable reason is retried; a fatal error (fenced) stops the consumer."""
        p = self.producer
        for attempt in range(1, 11):
            try:
                p.begin_transaction()
                for uid, frame, _ in outbox:
                    p.produce(self.plans_topic, value=frame, key=uid.encode())
                while True:
                    try:
                        p.commit_transaction(30)
                        break
                    except KafkaException as e:
                        if not e.args[0].retriable() or e.args[0].txn_requires_abort():
                            raise
                        log.warning("commit: %s; retried", e.args[0].str())
                break
            except KafkaException as e:
                err = e.args[0]
                if err.fatal() or not err.txn_requires_abort():
                    raise RuntimeError(f"transaction: {err.str()} (another instance for "
                                       f"{self.env} took over?)") from None
                log.warning("transaction (try %d): %s; aborted and redone", attempt, err.str())
                p.abort_transaction(30)
                time.sleep(min(1.0, 0.1 * attempt))
        else:
            raise RuntimeError("transaction: aborted 10 times; stopping")
        self.stats["transactions"] += 1
        self.stats["answered"] += len(outbox)
        self.answered.update(trigger for _, _, trigger in outbox)


def _kv(text: str) -> Tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"'{text}': expected KEY=VALUE")
    k, v = text.split("=", 1)
    return k, v


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="dlrover-local",
        description="Answer an environment's plan requests with DLRover 0.6.1's PSLocalOptimizer "
                    "(PyPI dlrover, unchanged), fed the environment's runtime samples and OOMs "
                    "as DLRover's master feeds it.")
    ap.add_argument("-e", "--env", default=os.environ.get("DLBRAIN_ENV", "dlbrain"),
                    help="environment (topics <env>.*); default $DLBRAIN_ENV or dlbrain")
    ap.add_argument("-b", "--brokers", default=os.environ.get("DLBRAIN_BROKERS", "localhost:9092"),
                    help="Kafka bootstrap servers; default $DLBRAIN_BROKERS or localhost:9092")
    dl = adapter.default_limits()
    ap.add_argument("--limit-cpu", type=float, default=dl.cpu,
                    help="every job's resourceLimits.cpu, cores (DLRover's default: %(default)s)")
    ap.add_argument("--limit-memory", default=None,
                    help="every job's resourceLimits.memory, a quantity such as 100Gi "
                         "(DLRover's default: 102400Mi)")
    ap.add_argument("-X", dest="kafka", action="append", type=_kv, default=[],
                    help="a librdkafka property for both clients, KEY=VALUE")
    ap.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    a = ap.parse_args(argv)

    logging.basicConfig(level=logging.WARNING)
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s dlrover-local: %(message)s"))
    log.handlers = [h]
    log.propagate = False
    log.setLevel(a.log_level.upper())
    try:
        if not a.limit_cpu > 0:
            raise ConfigError(f"--limit-cpu: {a.limit_cpu:g} is not a positive number of cores")
        mem = dl.memory if a.limit_memory is None else adapter.memory_bytes(a.limit_memory)
        if mem <= 0:
            raise ConfigError(f"--limit-memory: {a.limit_memory} is not a positive quantity")
        limits = adapter.ResourceLimits(a.limit_cpu, mem, dl.gpu_num)
        c = DlroverLocal(a.env, a.brokers, limits, dict(a.kafka))
    except (ConfigError, adapter.AdapterError) as e:
        print(f"dlrover-local: {e}; nothing started", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: c.stop())
    signal.signal(signal.SIGINT, lambda *_: c.stop())
    log.info("env %s, brokers %s, limits %g cores, %d MiB", a.env, a.brokers, limits.cpu,
             limits.memory // adapter.MB)
    try:
        c.start()
        c.run()
    except (ConfigError, RuntimeError, KafkaException) as e:
        log.error("%s", e)
        return 1
    finally:
        c.close()
    return 0
