"""schema.registry.url: the client bound to a Confluent-compatible schema registry.

What the C side does (pipeline/schemareg/schemareg_client.c, the agent
library), through confluent-kafka's own SchemaRegistryClient: at start-up every
schema of the catalog is looked up under ``<env>.<topic>-value`` (POST
/subjects/{subject}), type by type and version by version in catalog order, and
registered (POST /subjects/{subject}/versions) when the registry lacks it; a
refusal (409 incompatible, 422 invalid) raises RegistryError naming subject,
version and the registry's reason. Frames are then written with the ids the
registry gave, and read with them; an id met that is none of them is fetched
once (GET /schemas/ids/{id}) and read as the catalog schema it equals (Avro's
Parsing Canonical Form), or refused as not dlbrain's. A registry that does not
answer for an unknown id raises RegistryUnavailable: a subscriber reads that
message again later instead of skipping it. Without a URL, the catalog's ids.

Settings, with the C side's names (a ``conf`` mapping, the keyword arguments of
Publisher/Reporter/Subscriber, or the environment):

====================================================  ===================================================
``schema.registry.url``                               ``DLBRAIN_SCHEMA_REGISTRY_URL``
``schema.registry.basic.auth.user.info``              ``DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO``
``schema.registry.basic.auth.user.info.file``         ``DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE``
``schema.registry.ssl.ca.location``                   ``DLBRAIN_SCHEMA_REGISTRY_SSL_CA_LOCATION``
``schema.registry.timeout.ms`` (default 10000)        ``DLBRAIN_SCHEMA_REGISTRY_TIMEOUT_MS``
====================================================  ===================================================
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, Mapping, MutableMapping, Optional

from fastavro.schema import to_parsing_canonical_form

from .catalog import TOPICS, Catalog, SchemaEntry, default_catalog
from .codec import DecodeError

PREFIX = "schema.registry."
KEYS = ("url", "basic.auth.user.info", "basic.auth.user.info.file", "ssl.ca.location",
        "timeout.ms")
SECRET_MAX = 511  # as the C side's schema.registry.basic.auth.user.info


class RegistryError(Exception):
    """The registry refused dlbrain's schemas, or could not be used: nothing started."""


class RegistryUnavailable(DecodeError):
    """An unknown schema id and a registry that did not answer: read the message again later."""


def _sr() -> Any:
    """confluent-kafka's Schema Registry client, imported when a registry is
    used: it needs the extra packages of confluent-kafka[schemaregistry]
    (dlbrain-client[registry]), which a client without a registry does not."""
    try:
        from confluent_kafka import schema_registry
        from confluent_kafka.schema_registry.error import SchemaRegistryError
    except ImportError as e:
        raise RegistryError(
            f"schema.registry.url needs confluent-kafka's schema registry client ({e}): "
            "pip install 'dlbrain-client[registry]'") from None
    return schema_registry, SchemaRegistryError


def _env_name(key: str) -> str:
    return "DLBRAIN_" + key.upper().replace(".", "_").replace("-", "_")


def _read_secret(where: str, path: str) -> str:
    """A secret file's content less trailing newlines, as the C side reads it."""
    try:
        with open(path, "rb") as f:
            data = f.read(SECRET_MAX + 3)
    except OSError as e:
        raise RegistryError(f"{where}: cannot read {path}: {e.strerror}") from None
    text = data.rstrip(b"\r\n")
    if len(text) > SECRET_MAX:
        raise RegistryError(f"{where}: {path} holds more than {SECRET_MAX} bytes")
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryError(f"{where}: {path} is not UTF-8") from None


def _shown(url: str) -> str:
    """url as a message may show it: credentials written into it are masked."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if sep and "@" in host:
        return f"{scheme}://***@{host.rpartition('@')[2]}{slash}{path}"
    return url


def pop_settings(conf: MutableMapping[str, Any]) -> Dict[str, Any]:
    """Takes the ``schema.registry.*`` keys out of conf (the rest is librdkafka's)."""
    out = {}
    for k in [k for k in conf if k.startswith(PREFIX)]:
        name = k[len(PREFIX):]
        if name not in KEYS:
            raise RegistryError(f"{k}: unknown schema registry setting (known: "
                                + ", ".join(PREFIX + x for x in KEYS) + ")")
        out[name] = conf.pop(k)
    return out


def client_conf(settings: Mapping[str, Any],
                environ: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, Any]]:
    """The SchemaRegistryClient configuration of settings (short names, as
    pop_settings returns them), completed from the environment; None when no
    URL is set anywhere. The credentials come from the setting, its file, or
    the environment's variable or file, in that order."""
    env = os.environ if environ is None else environ

    def get(name: str) -> Optional[str]:
        # A setting given, even empty (no registry), wins over the environment.
        if settings.get(name) is not None:
            return str(settings[name])
        return env.get(_env_name(PREFIX + name)) or None

    url = get("url")
    if not url:
        return None
    if not url.startswith(("http://", "https://")):
        raise RegistryError("schema.registry.url: expected an http:// or https:// URL")
    conf: Dict[str, Any] = {"url": url}
    user_info = settings.get("basic.auth.user.info") or None
    if user_info is not None:
        user_info = str(user_info)
    elif settings.get("basic.auth.user.info.file"):
        user_info = _read_secret(PREFIX + "basic.auth.user.info.file",
                                 str(settings["basic.auth.user.info.file"]))
    if user_info is None:
        user_info = env.get(_env_name(PREFIX + "basic.auth.user.info")) or None
    if user_info is None:
        var = _env_name(PREFIX + "basic.auth.user.info.file")
        if env.get(var):
            user_info = _read_secret(f"environment {var}", env[var])
    if user_info is not None:
        if ":" not in user_info:
            raise RegistryError("schema.registry.basic.auth.user.info: expected user:password")
        conf["basic.auth.user.info"] = user_info
    ca = get("ssl.ca.location")
    if ca:
        conf["ssl.ca.location"] = ca
    timeout = get("timeout.ms") or "10000"
    try:
        ms = int(timeout)
    except ValueError:
        ms = -1
    if not 100 <= ms <= 600000:
        raise RegistryError("schema.registry.timeout.ms: expected an integer 100..600000")
    conf["timeout"] = ms / 1000.0
    return conf


class RegistryBinding:
    """dlbrain's catalog bound to a registry for one environment (see the
    module's doc). ``wire_id(catalog_id)`` is what a frame says;
    ``catalog_id(wire_id)`` reads a frame's id back, resolving unknown ones.
    One binding may serve a Reporter and its subscribers (thread-safe).

    ``client`` is a SchemaRegistryClient, or built from ``conf`` (its own
    configuration: url, basic.auth.user.info, ssl.ca.location, timeout)."""

    def __init__(self, env: str = "dlbrain", *, conf: Optional[Mapping[str, Any]] = None,
                 client: Any = None, catalog: Optional[Catalog] = None):
        sr, self._error = _sr()
        self._schema = sr.Schema
        if client is None:
            if not conf or not conf.get("url"):
                raise RegistryError("a schema registry needs a url")
            try:
                client = sr.SchemaRegistryClient(dict(conf))
            except (ValueError, TypeError) as e:  # its messages name no secret
                raise RegistryError(f"schema registry: {e}") from None
        self.client = client
        self.env = env
        self.catalog = catalog or default_catalog()
        self.url = _shown((conf or {}).get("url") or "(client)")
        self._lock = threading.Lock()
        self._wire: Dict[int, int] = {}  # catalog id -> wire id
        self._read: Dict[int, int] = {}  # wire id -> catalog id (0: not dlbrain's)
        self._canonical = {e.id: to_parsing_canonical_form(json.loads(e.text))
                           for e in (self.catalog.by_id(i) for i in self.catalog.ids())}
        self._bind()

    @classmethod
    def from_settings(cls, env: str, settings: Mapping[str, Any], *,
                      catalog: Optional[Catalog] = None,
                      environ: Optional[Mapping[str, str]] = None) -> Optional["RegistryBinding"]:
        """A binding when a URL is set (settings or environment), else None."""
        conf = client_conf(settings, environ)
        return None if conf is None else cls(env, conf=conf, catalog=catalog)

    def subject(self, event_type: str) -> str:
        return f"{self.env}.{TOPICS[event_type]}-value"

    def _bind(self) -> None:
        for event_type in TOPICS:
            subject = self.subject(event_type)
            entries = [self.catalog.by_id(i) for i in self.catalog.ids()]
            version = 0
            for e in entries:
                if e is None or e.type != event_type:
                    continue
                version += 1
                self._wire[e.id] = self._bind_one(subject, e, version)
        for cid, wid in self._wire.items():
            self._read[wid] = cid

    def _bind_one(self, subject: str, e: SchemaEntry, version: int) -> int:
        schema = self._schema(e.text, "AVRO")
        where = f"subject {subject}, version {version} ({e.file})"
        try:
            return self.client.lookup_schema(subject, schema).schema_id
        except self._error as err:
            if err.http_status_code != 404 or err.error_code not in (40401, 40403):
                raise RegistryError(f"schema registry {self.url}: {where}: {err}") from None
        except Exception as err:  # unreachable (httpx's errors), timeouts
            raise RegistryError(f"schema registry {self.url}: {where}: {err}") from None
        try:
            return self.client.register_schema(subject, schema)
        except self._error as err:
            if err.http_status_code in (409, 422):
                raise RegistryError(
                    f"schema registry: subject {subject} refuses dlbrain's version {version} "
                    f"({e.file}, catalog id {e.id}): {err.error_message}") from None
            raise RegistryError(f"schema registry {self.url}: {where}: {err}") from None
        except Exception as err:
            raise RegistryError(f"schema registry {self.url}: {where}: {err}") from None

    def wire_id(self, catalog_id: int) -> int:
        """The id a frame of this catalog schema carries."""
        return self._wire.get(catalog_id, catalog_id)

    def catalog_id(self, wire_id: int) -> int:
        """The catalog id of a frame's schema id. Raises DecodeError (not one of
        dlbrain's schemas) or RegistryUnavailable (ask again later)."""
        with self._lock:
            cid = self._read.get(wire_id)
        if cid is None:
            try:
                text = self.client.get_schema(wire_id).schema_str
            except self._error as err:
                if err.http_status_code == 404:
                    cid = 0
                elif err.http_status_code >= 500:
                    raise RegistryUnavailable(
                        f"schema id {wire_id}: the schema registry did not answer: {err}") from None
                else:
                    raise DecodeError(f"schema id {wire_id}: the schema registry: {err}") from None
            except Exception as err:  # unreachable (httpx's errors), timeouts
                raise RegistryUnavailable(
                    f"schema id {wire_id}: the schema registry did not answer: {err}") from None
            else:
                cid = self._match(text)
            with self._lock:  # ids never change in a registry: remembered for good
                self._read.setdefault(wire_id, cid)
        if not cid:
            raise DecodeError(
                f"schema id {wire_id} is not one of dlbrain's schemas in the schema registry")
        return cid

    def _match(self, text: str) -> int:
        try:
            canonical = to_parsing_canonical_form(json.loads(text))
        except Exception:  # not Avro, or not JSON: not dlbrain's
            return 0
        for cid, c in self._canonical.items():
            if c == canonical:
                return cid
        return 0
