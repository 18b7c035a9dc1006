"""Kafka clients for a job master: publish a job's events, subscribe to its plans.

Publisher/Reporter behave as `dlbrain emit` (producers/emit/emit.c): each event is
encoded with the newest schema of its type and produced to <env>.<topic of the
type>, keyed by the job uid's UTF-8 bytes, by an idempotent producer with
librdkafka's default partitioner (consistent_random: CRC32 of the key), so a
job's events land on the same partitions as the C producers put them.
PlanSubscriber/ConfigSubscriber behave as `dlbrain plans`/`dlbrain configs`
(pipeline/subscribe/subscribe.c): a consumer group of their own, read_committed,
from the earliest offset, each id delivered once.
"""

from __future__ import annotations

import collections
import logging
import os
import time
import uuid
from typing import Any, Callable, Deque, Dict, Iterator, Mapping, Optional, Sequence, Set

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from .catalog import TOPICS, Catalog
from .codec import DecodeError, decode, encode
from .registry import RegistryBinding, RegistryUnavailable, pop_settings

log = logging.getLogger("dlbrain_client")

DeliveryCallback = Callable[[Optional[KafkaError], Any], None]

# How long a subscriber waits before it reads again a message whose schema id
# the registry did not answer for (C's agent: AGENT_SR_RETRY_MS).
REGISTRY_RETRY_S = 1.0


def _binding(env: str, catalog: Optional[Catalog], schema_registry: Optional[RegistryBinding],
             schema_registry_url: Optional[str], conf: Dict[str, Any]) -> Optional[RegistryBinding]:
    """The registry a client writes and reads ids with: a binding given, else
    one made from schema_registry_url, the schema.registry.* keys of conf
    (taken out of it) and the environment (DLBRAIN_SCHEMA_REGISTRY_*), else
    None (the catalog's ids)."""
    settings = pop_settings(conf)
    if schema_registry is not None:
        if schema_registry.env != env:
            raise ValueError(f"schema_registry is bound for env {schema_registry.env}, not {env}")
        return schema_registry
    if schema_registry_url is not None:
        settings["url"] = schema_registry_url
    return RegistryBinding.from_settings(env, settings, catalog=catalog)


class DeliveryError(Exception):
    """Kafka did not take every event (flush timed out or a delivery failed)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Publisher:
    """Publishes events of any type and job to the pipeline's input topics.

    ``conf`` entries are librdkafka properties passed through untouched, e.g.
    ``Publisher(brokers, **{"security.protocol": "SSL"})``, except the
    ``schema.registry.*`` keys. With a schema registry (``schema_registry_url``,
    ``schema.registry.url`` or ``$DLBRAIN_SCHEMA_REGISTRY_URL``, or a
    RegistryBinding shared with other clients as ``schema_registry``),
    dlbrain's schemas are looked up or registered there at construction
    (RegistryError when it refuses one) and frames carry its ids
    (registry.py).
    """

    def __init__(self, brokers: str, env: str = "dlbrain", *, catalog: Optional[Catalog] = None,
                 schema_registry: Optional[RegistryBinding] = None,
                 schema_registry_url: Optional[str] = None, **conf: Any):
        settings: Dict[str, Any] = {
            "bootstrap.servers": brokers,
            # As the C producer: idempotence keeps per-partition order and drops
            # broker-side duplicates of retries; linger batches small messages.
            "enable.idempotence": True,
            "linger.ms": 5,
            "client.id": "dlbrain-python",
        }
        self.registry = _binding(env, catalog, schema_registry, schema_registry_url, conf)
        settings.update(conf)
        self.env = env
        self.catalog = catalog
        self.delivered = 0
        self._failures: list = []
        # (topic, partition) -> offset of the last event the broker acknowledged,
        # for the dlb.after header of plan requests (Reporter.request_plan).
        self._acked: Dict[tuple, int] = {}
        self._producer = Producer(settings)

    def topic(self, event_type: str) -> str:
        return f"{self.env}.{TOPICS[event_type]}"

    def _on_delivery(self, user_cb: Optional[DeliveryCallback]) -> DeliveryCallback:
        def cb(err: Optional[KafkaError], msg: Any) -> None:
            if err is None:
                self.delivered += 1
                where = (msg.topic(), msg.partition())
                if msg.offset() is not None and msg.offset() > self._acked.get(where, -1):
                    self._acked[where] = msg.offset()
            else:
                self._failures.append(f"{msg.topic()}: {err.str()}")
            if user_cb is not None:
                user_cb(err, msg)

        return cb

    def publish(self, event_type: str, record: Mapping[str, Any], *,
                on_delivery: Optional[DeliveryCallback] = None,
                schema_id: Optional[int] = None,
                headers: Optional[Sequence[tuple]] = None) -> str:
        """Encodes and produces one event; returns its event_id. A missing
        event_id becomes a random UUID and a missing event_time_ms the current
        time, as `dlbrain emit` does without --strict. Raises EventError for an
        event the pipeline would reject (nothing is sent then). schema_id: an
        older version of the type to write (default: the newest, as C does);
        on_delivery(err, msg): called from flush() or a later publish();
        headers: Kafka headers, (name, value) pairs."""
        rec = dict(record)
        rec.setdefault("event_id", str(uuid.uuid4()))
        rec.setdefault("event_time_ms", _now_ms())
        frame = encode(event_type, rec, schema_id=schema_id, catalog=self.catalog,
                       registry=self.registry)
        key = rec["job_uid"].encode("utf-8")
        cb = self._on_delivery(on_delivery)
        extra = {"headers": list(headers)} if headers is not None else {}
        try:
            self._producer.produce(self.topic(event_type), value=frame, key=key, on_delivery=cb,
                                   **extra)
        except BufferError:
            # The local queue is full: serve delivery reports to make room, then once more.
            self._producer.poll(1.0)
            self._producer.produce(self.topic(event_type), value=frame, key=key, on_delivery=cb,
                                   **extra)
        self._producer.poll(0)
        return rec["event_id"]

    def flush(self, timeout: float = 30.0) -> int:
        """Waits until every event is delivered; returns how many were delivered
        so far. Raises DeliveryError when some were not."""
        left = self._producer.flush(timeout)
        if self._failures:
            failures, self._failures = self._failures, []
            raise DeliveryError(f"{len(failures)} event(s) not delivered, first: {failures[0]}")
        if left:
            raise DeliveryError(f"{left} event(s) not delivered within {timeout} s")
        return self.delivered

    def close(self, timeout: float = 30.0) -> None:
        self.flush(timeout)

    def __enter__(self) -> "Publisher":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self._producer.flush(0)


class Reporter(Publisher):
    """What a job master reports about one job, and its requests for plans and
    configuration. Every method returns the event_id of what it published; a
    request's id is the trigger_event_id of its answer (a plan's id is
    ``plan-<request id>``)."""

    def __init__(self, brokers: str, job_uid: str, env: str = "dlbrain", *,
                 catalog: Optional[Catalog] = None, **conf: Any):
        super().__init__(brokers, env, catalog=catalog, **conf)  # schema_registry* among conf
        self.job_uid = job_uid

    def _send(self, event_type: str, fields: Dict[str, Any], event_id: Optional[str],
              event_time_ms: Optional[int], headers: Optional[Sequence[tuple]] = None) -> str:
        rec = {"job_uid": self.job_uid, **fields}
        if event_id is not None:
            rec["event_id"] = event_id
        if event_time_ms is not None:
            rec["event_time_ms"] = event_time_ms
        return self.publish(event_type, rec, headers=headers)

    def _after(self) -> str:
        """The dlb.after header value: the last acknowledged offset of this
        job's events on each topic and partition they went to."""
        request_topic = self.topic("plan_request")
        return ",".join(f"{t}:{p}:{o}" for (t, p), o in sorted(self._acked.items())
                        if t != request_topic)

    def report_job(self, *, meta: Optional[Mapping[str, str]] = None, state: Optional[str] = None,
                   hyper_params: Optional[Mapping[str, int]] = None,
                   dataset: Optional[Mapping[str, Any]] = None,
                   model: Optional[Mapping[str, Any]] = None, exit_reason: Optional[str] = None,
                   workflow: Optional[Mapping[str, Any]] = None, job_type: Optional[str] = None,
                   resource: Optional[str] = None, customized_data: Optional[str] = None,
                   optimization: Optional[str] = None,
                   event_id: Optional[str] = None, event_time_ms: Optional[int] = None) -> str:
        """A job event: any of its sections (None: not reported this time).
        meta: name, user, group, app, cluster, namespace, scenario, framework;
        hyper_params: batch_size, epoch, max_steps; dataset: name, size,
        storage, sparse_item_count, sparse_features, sparse_feature_groups,
        sparse_feature_shapes, dense_features, dense_feature_shapes (comma-joined
        strings), storage_size (bytes); model: variable_count, op_count,
        total_variable_size (bytes), recv_op_count, flops, embedding_dimension,
        max_variable_size (bytes), update_op_count, read_op_count,
        input_fetch_dur, kv_embedding_dims (list of ints), tensor_alloc_bytes
        (dict of tensor name -> bytes); workflow: job_name, user_id,
        code_address, workflow_id, node_id, odps_project, is_prod (bool);
        job_type: the distribution strategy; resource, customized_data and
        optimization: JSON texts, carried as given. A section's missing fields
        are "", 0, false or empty."""
        return self._send("job_event", {
            "meta": meta, "state": state, "hyper_params": hyper_params, "dataset": dataset,
            "model": model, "exit_reason": exit_reason, "workflow": workflow, "job_type": job_type,
            "resource": resource, "customized_data": customized_data, "optimization": optimization,
        }, event_id, event_time_ms)

    def report_sample(self, *, global_step: int = 0, speed: float = 0.0,
                      pods: Sequence[Mapping[str, Any]] = (), event_id: Optional[str] = None,
                      event_time_ms: Optional[int] = None) -> str:
        """A runtime sample. pods: dicts of name, type, index, cpu_used,
        cpu_requested (cores), memory_used, memory_requested (bytes) and
        optionally speed (steps/s of that worker alone), pod_ip, node_ip,
        host_name, namespace and is_mixed (DLRover's PodMeta)."""
        return self._send("runtime_sample", {"global_step": global_step, "speed": speed,
                                             "pods": list(pods)}, event_id, event_time_ms)

    def report_node_event(self, kind: str, *, pod_name: str = "", pod_type: str = "",
                          pod_index: int = 0, node_name: str = "", phase: Optional[str] = None,
                          reason: str = "", message: str = "",
                          memory_requested: Optional[int] = None,
                          cpu_requested: Optional[float] = None, event_id: Optional[str] = None,
                          event_time_ms: Optional[int] = None) -> str:
        """A pod or node event (kind: oom_killed, pod_phase, evicted, ...)."""
        return self._send("node_event", {
            "kind": kind, "pod_name": pod_name, "pod_type": pod_type, "pod_index": pod_index,
            "node_name": node_name, "phase": phase, "reason": reason, "message": message,
            "memory_requested": memory_requested, "cpu_requested": cpu_requested,
        }, event_id, event_time_ms)

    def request_plan(self, stage: str, oom_pod: Optional[str] = None, *,
                     oom_pods: Optional[Sequence[str]] = None,
                     config: Optional[Mapping[str, str]] = None,
                     event_id: Optional[str] = None, event_time_ms: Optional[int] = None) -> str:
        """Asks for a resource plan at a stage (job_stage_create, ...). An OOM
        request names the pod it follows (oom_pod) or every OOM pod (oom_pods,
        each answered in the one plan); either way both fields are sent,
        oom_pod the first of oom_pods, for readers that know only oom_pod.
        config: DLRover's customized_config, e.g.
        {"optimizer.worker.optimize-phase": "initial"}. Returns the request id.

        The events reported before are flushed first (DeliveryError when they
        cannot be), and the request names their positions in the header
        dlb.after: the optimizer answers once it has applied them, without the
        grace it gives a request that does not say what it depends on."""
        pods = list(oom_pods) if oom_pods is not None else ([oom_pod] if oom_pod is not None else [])
        if oom_pod is None and pods:
            oom_pod = pods[0]
        self.flush()
        return self._send("plan_request", {"stage": stage, "oom_pod": oom_pod, "oom_pods": pods,
                                           "config": dict(config or {})}, event_id, event_time_ms,
                          headers=[("dlb.after", self._after().encode())])

    def request_config(self, meta: Optional[Mapping[str, str]] = None, *,
                       event_id: Optional[str] = None, event_time_ms: Optional[int] = None) -> str:
        """Asks which configuration applies to the job (meta: attributes the
        asker knows; each empty one is taken from the job's events). Returns
        the request id."""
        return self._send("config_request", {"meta": meta}, event_id, event_time_ms)


class Subscriber:
    """Decoded events of one output topic, for one job (or all when job_uid is
    None), read_committed, each event_id once unless all=True.

    Iterate for ever, or poll(timeout) for the next one (None on timeout), or
    wait_for(request_id, timeout) for the answer to a request. The Kafka
    message of the last event returned is ``last_message`` (raw bytes:
    ``last_message.value()``). A schema registry is set as for Publisher;
    an id it does not answer for is not skipped: that message is read again
    every REGISTRY_RETRY_S."""

    def __init__(self, brokers: str, job_uid: Optional[str], env: str, topic: str,
                 event_type: str, *, group_id: Optional[str] = None, from_beginning: bool = True,
                 all: bool = False, catalog: Optional[Catalog] = None,
                 schema_registry: Optional[RegistryBinding] = None,
                 schema_registry_url: Optional[str] = None, **conf: Any):
        settings: Dict[str, Any] = {
            "bootstrap.servers": brokers,
            # A group of its own, so every subscriber sees every output.
            "group.id": group_id
            or f"{env}.master.py.{os.getpid()}.{int(time.time())}.{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest" if from_beginning else "latest",
            "client.id": "dlbrain-python",
        }
        self.registry = _binding(env, catalog, schema_registry, schema_registry_url, conf)
        settings.update(conf)
        self.job_uid = job_uid
        self.topic = f"{env}.{topic}"
        self.event_type = event_type
        self.catalog = catalog
        self.all = all
        self.repeats = 0
        self.last_message: Any = None
        self._key = job_uid.encode("utf-8") if job_uid is not None else None
        self._seen: Set[str] = set()
        self._pending: Deque[Any] = collections.deque()
        self._consumer = Consumer(settings)
        self._consumer.subscribe([self.topic])

    def _accept(self, msg: Any) -> Optional[Dict[str, Any]]:
        if msg.error():
            if msg.error().code() != KafkaError._PARTITION_EOF:
                log.warning("kafka: %s; continuing", msg.error())
            return None
        if self._key is not None and msg.key() is not None and msg.key() != self._key:
            return None  # another job's
        try:
            typ, rec = decode(msg.value() or b"", catalog=self.catalog, registry=self.registry)
        except RegistryUnavailable:
            raise  # _next reads it again
        except DecodeError as e:
            log.warning("%s offset %d: not a %s (%s); skipped", self.topic, msg.offset(),
                        self.event_type, e)
            return None
        if typ != self.event_type:
            log.warning("%s offset %d: not a %s (%s); skipped", self.topic, msg.offset(),
                        self.event_type, typ)
            return None
        if self.job_uid is not None and rec["job_uid"] != self.job_uid:
            return None
        if not self.all:
            if rec["event_id"] in self._seen:
                self.repeats += 1
                return None
            self._seen.add(rec["event_id"])
        return rec

    def _next(self, deadline: Optional[float]) -> Optional[tuple]:
        while True:
            wait = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
            msg = self._consumer.poll(wait)
            if msg is not None:
                try:
                    rec = self._accept(msg)
                except RegistryUnavailable as e:
                    self._read_again(msg, e, deadline)
                    rec = None
                if rec is not None:
                    return rec, msg
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _read_again(self, msg: Any, why: Exception, deadline: Optional[float]) -> None:
        """A registry outage says nothing of the message: back to it, a while later."""
        log.warning("%s [%d] offset %d: read again in %.0f s: %s", self.topic, msg.partition(),
                    msg.offset(), REGISTRY_RETRY_S, why)
        self._consumer.seek(TopicPartition(msg.topic(), msg.partition(), msg.offset()))
        wait = REGISTRY_RETRY_S
        if deadline is not None:
            wait = max(0.0, min(wait, deadline - time.monotonic()))
        time.sleep(wait)

    def poll(self, timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The next event, waiting at most timeout seconds (None: for ever)."""
        if self._pending:
            rec, self.last_message = self._pending.popleft()
            return rec
        got = self._next(None if timeout is None else time.monotonic() + timeout)
        if got is None:
            return None
        rec, self.last_message = got
        return rec

    def wait_for(self, trigger_event_id: str, timeout: float = 60.0) -> Dict[str, Any]:
        """The event answering the request trigger_event_id; others read
        meanwhile stay queued for poll(). Raises TimeoutError."""
        for i, (rec, msg) in enumerate(self._pending):
            if rec.get("trigger_event_id") == trigger_event_id:
                del self._pending[i]
                self.last_message = msg
                return rec
        deadline = time.monotonic() + timeout
        while True:
            got = self._next(deadline)
            if got is None:
                raise TimeoutError(
                    f"no {self.event_type} answering {trigger_event_id} on {self.topic} "
                    f"within {timeout} s"
                )
            if got[0].get("trigger_event_id") == trigger_event_id:
                rec, self.last_message = got
                return rec
            self._pending.append(got)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        while True:
            rec = self.poll(None)
            if rec is not None:
                yield rec

    def close(self) -> None:
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError):
            pass

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class PlanSubscriber(Subscriber):
    """Resource plans of one job from <env>.plans (plan v1 and v2 decode
    alike: a v1 plan has actions == [])."""

    def __init__(self, brokers: str, job_uid: Optional[str], env: str = "dlbrain", **kw: Any):
        super().__init__(brokers, job_uid, env, TOPICS["plan"], "plan", **kw)


class ConfigSubscriber(Subscriber):
    """Configuration matches of one job from <env>.configs (values: a dict of
    JSON texts, in the order the configurer wrote them)."""

    def __init__(self, brokers: str, job_uid: Optional[str], env: str = "dlbrain", **kw: Any):
        super().__init__(brokers, job_uid, env, TOPICS["config_match"], "config_match", **kw)
