"""schema.registry.url in the Python client, against `dlbrain registry` (the
binary of DLBRAIN; skipped without it) and the alias registry in front of it
(tests/system/registry/alias_proxy.py, plan v2 under id 1008 as well), through
confluent-kafka's own SchemaRegistryClient:

- binding: every catalog schema found under <env>.<topic>-value, frames
  written with the ids the registry holds for them;
- a subject the registry will not take, and a registry not there: RegistryError
  naming subject and version;
- reading an id only the registry knows: fetched once, read as the catalog
  schema it equals; an id of no schema refused; an outage while an unknown
  id is read is RegistryUnavailable, ids already known still read;
- settings: keys, files and environment variables, secrets never in messages.
"""

import struct

import pytest
from confluent_kafka.schema_registry import Schema

from dlbrain_client import (
    DecodeError,
    Publisher,
    RegistryBinding,
    RegistryError,
    RegistryUnavailable,
    decode,
    default_catalog,
    encode,
    peek,
)
from dlbrain_client.registry import client_conf, pop_settings

PLAN = {
    "event_id": "p-1", "event_time_ms": 1767312001000, "plan_id": "plan-q1", "job_uid": "j1",
    "stage": "job_stage_create", "optimizer": "t",
    "groups": [{"group": "worker", "count": 3, "resource": {"cpu": 2.0, "memory": 1 << 30}}],
    "reason": "test", "trigger_event_id": "q1",
}


def _reframe(frame, schema_id):
    return frame[:1] + struct.pack(">I", schema_id) + frame[5:]


def _gets(srv, schema_id):
    return srv.log().count(f"GET /schemas/ids/{schema_id} ")


def test_bind_writes_the_registrys_ids(dlbrain_registry):
    b = RegistryBinding("pyreg", conf={"url": dlbrain_registry.url})
    cat = default_catalog()
    for cid in cat.ids():
        e = cat.by_id(cid)
        got = b.client.lookup_schema(b.subject(e.type), Schema(e.text, "AVRO"))
        assert b.wire_id(cid) == got.schema_id  # dlbrain's registry: the catalog's own ids
        assert b.catalog_id(got.schema_id) == cid
    frame = encode("plan", PLAN, registry=b)
    assert peek(frame) == b.wire_id(cat.newest("plan").id)
    assert decode(frame, registry=b) == decode(frame)


def test_publisher_settings_keys(dlbrain_registry, monkeypatch):
    # The schema.registry.* keys are the binding's; the rest still go to librdkafka.
    p = Publisher("127.0.0.1:1", "pyreg", **{"schema.registry.url": dlbrain_registry.url,
                                             "schema.registry.timeout.ms": 3000, "acks": "all"})
    assert p.registry is not None and p.registry.env == "pyreg"
    assert p.registry.wire_id(8) == 8
    monkeypatch.delenv("DLBRAIN_SCHEMA_REGISTRY_URL", raising=False)
    assert Publisher("127.0.0.1:1", "pyreg").registry is None  # nothing set anywhere
    monkeypatch.setenv("DLBRAIN_SCHEMA_REGISTRY_URL", dlbrain_registry.url)
    assert Publisher("127.0.0.1:1", "pyreg").registry.wire_id(8) == 8
    assert Publisher("127.0.0.1:1", "pyreg", schema_registry_url="").registry is None


def test_refused_subject(dlbrain_registry):
    with pytest.raises(RegistryError) as e:
        RegistryBinding("nope", conf={"url": dlbrain_registry.url})
    assert "subject nope.job-events-value, version 1 (job_event.avsc)" in str(e.value)
    assert "read-only" in str(e.value)
    # The same through a Publisher's settings: nothing starts.
    with pytest.raises(RegistryError):
        Publisher("127.0.0.1:1", "nope", schema_registry_url=dlbrain_registry.url)


def test_no_registry_there(dlbrain_registry, tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there now
    with pytest.raises(RegistryError) as e:
        RegistryBinding("pyreg", conf={"url": f"http://127.0.0.1:{port}", "max.retries": 0})
    assert "subject pyreg.job-events-value, version 1 (job_event.avsc)" in str(e.value)


def test_resolve_an_alias_once(alias_registry):
    b = RegistryBinding("pyreg", conf={"url": alias_registry.url, "max.retries": 0})
    frame = encode("plan", PLAN)
    assert peek(frame) == 8
    alias = _reframe(frame, 1008)
    assert decode(alias, registry=b) == decode(frame)
    assert decode(alias, registry=b) == decode(frame)
    assert _gets(alias_registry, 1008) == 1
    # No such id: refused, and remembered as such.
    for _ in range(2):
        with pytest.raises(DecodeError, match="schema id 99 is not one of dlbrain's schemas"):
            decode(_reframe(frame, 99), registry=b)
    assert _gets(alias_registry, 99) == 1
    # The registry goes down: what is known still reads, an unknown id waits.
    alias_registry.stop()
    assert decode(alias, registry=b)[1]["plan_id"] == "plan-q1"
    with pytest.raises(RegistryUnavailable, match="schema id 1005: the schema registry did not answer"):
        decode(_reframe(frame, 1005), registry=b)


def test_settings(tmp_path):
    secret = tmp_path / "user-info"
    secret.write_text("ana:s3cr3t\n")
    conf = client_conf({"url": "https://sr:8081", "basic.auth.user.info.file": str(secret),
                        "ssl.ca.location": "/etc/ca.pem", "timeout.ms": "2500"}, environ={})
    assert conf == {"url": "https://sr:8081", "basic.auth.user.info": "ana:s3cr3t",
                    "ssl.ca.location": "/etc/ca.pem", "timeout": 2.5}
    env = {"DLBRAIN_SCHEMA_REGISTRY_URL": "http://env:8081",
           "DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE": str(secret)}
    assert client_conf({}, environ=env) == {"url": "http://env:8081",
                                            "basic.auth.user.info": "ana:s3cr3t", "timeout": 10.0}
    assert client_conf({}, environ={}) is None
    assert client_conf({"url": ""}, environ=env) is None  # given empty: no registry
    with pytest.raises(RegistryError) as e:
        client_conf({"url": "http://sr", "basic.auth.user.info.file": str(tmp_path / "none")},
                    environ={})
    assert "none" in str(e.value) and "s3cr3t" not in str(e.value)
    with pytest.raises(RegistryError, match="expected user:password"):
        client_conf({"url": "http://sr", "basic.auth.user.info": "s3cr3t"}, environ={})
    with pytest.raises(RegistryError, match="timeout.ms"):
        client_conf({"url": "http://sr", "timeout.ms": "5"}, environ={})
    with pytest.raises(RegistryError, match="http:// or https://"):
        client_conf({"url": "ftp://sr"}, environ={})
    conf = {"schema.registry.url": "http://sr", "acks": "all"}
    assert pop_settings(conf) == {"url": "http://sr"} and conf == {"acks": "all"}
    with pytest.raises(RegistryError, match="schema.registry.bogus"):
        pop_settings({"schema.registry.bogus": 1})
