"""Confluent-framed Avro <-> dicts, byte for byte as pipeline/codec.c.

A frame is magic byte 0, the schema id as 4 bytes big-endian, then the Avro
binary of the record. Records are plain dicts keyed by the schemas' field names
(the same shape as `dlbrain emit`'s JSON lines without "type"): memory in
bytes (int), CPU in cores (float), times in ms since the epoch (int), an
optional field None when absent, a config match's values a dict in wire order.

Encoding first completes and checks the record against the schema (unknown or
missing fields, types, int ranges, the C string limits), then runs the C
side's semantic validation (events.validate), so what this writes is what
`dlbrain emit` would write for the same values, or it raises EventError with
the message `dlbrain emit` would print.
"""

from __future__ import annotations

import io
import json
import struct
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple

from fastavro import schemaless_reader, schemaless_writer

from .catalog import TOPICS, Catalog, SchemaEntry, default_catalog
from .events import EventError, string_cap, validate


class WireIds(Protocol):
    """What the codec needs of a registry binding (registry.RegistryBinding,
    which imports this module): the id a schema has on the wire, and the
    catalog's id of an id read there."""

    def wire_id(self, catalog_id: int) -> int: ...

    def catalog_id(self, wire_id: int) -> int: ...

MAGIC = 0
HEADER = 5
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


class DecodeError(ValueError):
    """Bytes that are not a dlbrain event: bad framing, an unknown schema id or bad Avro."""


def _describe(v: Any) -> str:
    # A short rendering for messages, like C's: "a", 1.5, {"x":1}.
    try:
        s = json.dumps(v, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _expected(path: str, what: str, v: Any) -> EventError:
    return EventError(f"{path or '(top)'}: expected {what}, got {_describe(v)}")


def _what(node: Any, names: Mapping[str, Any]) -> str:
    t = node if isinstance(node, str) else node.get("type")
    if isinstance(node, str) and node in names:
        t = names[node]["type"]
    return {
        "string": "a string",
        "bytes": "a string",
        "int": "an integer",
        "long": "an integer",
        "float": "a number",
        "double": "a number",
        "boolean": "a boolean",
        "null": "null",
        "record": "an object",
        "map": "an object",
        "array": "an array",
    }.get(t, "a value")


class _Normalizer:
    """Walks one schema (its JSON) and a value: completes defaults, converts
    ints to floats for doubles, and raises EventError naming the path."""

    def __init__(self, schema: Mapping[str, Any]):
        self.names: Dict[str, Any] = {}
        self._collect(schema, schema.get("namespace", ""))

    def _collect(self, node: Any, ns: str) -> None:
        if isinstance(node, list):
            for b in node:
                self._collect(b, ns)
        elif isinstance(node, dict):
            t = node.get("type")
            if t == "record":
                ns = node.get("namespace", ns)
                full = node["name"] if "." in node["name"] else f"{ns}.{node['name']}"
                self.names[full] = dict(node, _full=full, _ns=ns)
                for f in node["fields"]:
                    self._collect(f["type"], ns)
            elif t == "array":
                self._collect(node["items"], ns)
            elif t == "map":
                self._collect(node["values"], ns)
            elif isinstance(t, (dict, list)):
                self._collect(t, ns)

    def resolve(self, node: Any, ns: str) -> Any:
        if isinstance(node, str) and node not in _PRIMITIVES:
            return self.names[node if "." in node else f"{ns}.{node}"]
        if isinstance(node, dict) and node.get("type") == "record":
            ns = node.get("namespace", ns)
            full = node["name"] if "." in node["name"] else f"{ns}.{node['name']}"
            return self.names[full]
        if isinstance(node, dict) and not isinstance(node.get("type"), str):
            return self.resolve(node["type"], ns)
        if isinstance(node, dict) and node["type"] in _PRIMITIVES:
            return node["type"]
        return node

    def value(self, node: Any, v: Any, path: str, ns: str, cap: Optional[int] = None) -> Any:
        node = self.resolve(node, ns)
        if isinstance(node, list):
            return self._union(node, v, path, ns, cap)
        if isinstance(node, str):
            return self._primitive(node, v, path, cap)
        t = node["type"]
        if t == "record":
            return self._record(node, v, path)
        if t == "array":
            if not isinstance(v, (list, tuple)):
                raise _expected(path, "an array", v)
            return [self.value(node["items"], x, f"{path}[{i}]", ns) for i, x in enumerate(v)]
        if t == "map":
            if not isinstance(v, Mapping):
                raise _expected(path, "an object", v)
            out = {}
            for k, x in v.items():
                if not isinstance(k, str):
                    raise _expected(path, "string keys", k)
                out[k] = self.value(node["values"], x, f"{path}.{k}" if path else k, ns)
            return out
        raise EventError(f"{path}: unsupported Avro type {t}")

    def _primitive(self, t: str, v: Any, path: str, cap: Optional[int]) -> Any:
        if t == "string":
            if not isinstance(v, str):
                raise _expected(path, "a string", v)
            if "\0" in v:
                raise EventError(f"{path}: contains a NUL byte")
            if cap is not None:
                n = len(v.encode("utf-8"))
                if n >= cap:
                    raise EventError(f"{path}: {n} bytes long, more than the limit of {cap - 1}")
            return v
        if t in ("int", "long"):
            if isinstance(v, bool) or not isinstance(v, int):
                if isinstance(v, float) and v.is_integer():
                    v = int(v)  # 8.0 where 8 is meant, as JSON allows
                else:
                    raise _expected(path, "an integer", v)
            lo, hi = _INT32 if t == "int" else _INT64
            if not lo <= v <= hi:
                rng = "a 32-bit int" if t == "int" else "a 64-bit long"
                raise EventError(f"{path}: {_describe(v)} is out of range ({rng})")
            return v
        if t in ("float", "double"):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _expected(path, "a number", v)
            return float(v)
        if t == "boolean":
            if not isinstance(v, bool):
                raise _expected(path, "a boolean", v)
            return v
        if t == "null":
            if v is not None:
                raise _expected(path, "null", v)
            return None
        raise EventError(f"{path}: unsupported Avro type {t}")

    def _union(self, branches: List[Any], v: Any, path: str, ns: str, cap: Optional[int]) -> Any:
        if v is None and "null" in branches:
            return None
        others = [b for b in branches if b != "null"]
        first: Optional[EventError] = None
        for b in others:
            try:
                return self.value(b, v, path, ns, cap)
            except EventError as e:
                first = first or e
        if len(others) == 1 and first is not None:
            raise first  # the usual ["null", T]: the message about T is the useful one
        raise _expected(path, " or ".join(_what(b, self.names) for b in others) or "null", v)

    def _record(self, node: Mapping[str, Any], v: Any, path: str) -> Dict[str, Any]:
        if not isinstance(v, Mapping):
            raise _expected(path, "an object", v)
        known = {f["name"] for f in node["fields"]}
        for k in v:
            if k not in known:
                raise EventError(f"{path + '.' if path else ''}{k}: unknown field")
        out: Dict[str, Any] = {}
        for f in node["fields"]:
            name = f["name"]
            fp = f"{path}.{name}" if path else name
            cap = string_cap(node["_full"], name)
            if name in v:
                out[name] = self.value(f["type"], v[name], fp, node["_ns"], cap)
            elif "default" in f:
                out[name] = self.value(f["type"], f["default"], fp, node["_ns"])
            elif isinstance(f["type"], list) and "null" in f["type"]:
                out[name] = None  # optional without a default still reads as "not given"
            else:
                raise EventError(f"{fp}: missing required field")
        return out


_normalizers: Dict[SchemaEntry, _Normalizer] = {}


def _entry(event_type: str, schema_id: Optional[int], catalog: Optional[Catalog]) -> SchemaEntry:
    if event_type not in TOPICS:
        raise EventError(f'type: unknown event type "{event_type}"')
    cat = catalog or default_catalog()
    if schema_id is None:
        return cat.newest(event_type)
    entry = cat.by_id(schema_id)
    if entry is None or entry.type != event_type:
        raise EventError(f"schema id {schema_id} is not a {event_type} schema")
    return entry


def _prepare(event_type: str, entry: SchemaEntry, record: Mapping[str, Any]) -> Dict[str, Any]:
    norm = _normalizers.get(entry)
    if norm is None:
        norm = _normalizers[entry] = _Normalizer(entry.schema)
    rec = norm.value(entry.schema, record, "", entry.schema.get("namespace", ""))
    validate(event_type, rec)
    return rec


def normalize(event_type: str, record: Mapping[str, Any], *, schema_id: Optional[int] = None,
              catalog: Optional[Catalog] = None) -> Dict[str, Any]:
    """The record completed with the schema's defaults and checked, as it will
    be written (and as a reader decodes it). Raises EventError."""
    return _prepare(event_type, _entry(event_type, schema_id, catalog), record)


def encode(event_type: str, record: Mapping[str, Any], *, schema_id: Optional[int] = None,
           catalog: Optional[Catalog] = None,
           registry: Optional[WireIds] = None) -> bytes:
    """One event as a Confluent frame with the newest schema of its type (or
    schema_id, an older version of the same type: a catalog id). The frame
    carries the catalog's id, or the id registry gave the schema. Raises
    EventError."""
    entry = _entry(event_type, schema_id, catalog)
    rec = _prepare(event_type, entry, record)
    buf = io.BytesIO()
    buf.write(struct.pack(">BI", MAGIC, registry.wire_id(entry.id) if registry else entry.id))
    schemaless_writer(buf, entry.parsed, rec)
    return buf.getvalue()


def peek(frame: bytes) -> int:
    """The schema id of a frame. Raises DecodeError on bad framing."""
    if len(frame) < HEADER:
        raise DecodeError(
            f"message of {len(frame)} bytes is shorter than the {HEADER}-byte Confluent header"
        )
    if frame[0] != MAGIC:
        hint = " (it looks like JSON)" if frame[0] == ord("{") else ""
        raise DecodeError(f"magic byte is 0x{frame[0]:02x}, not 0: not Confluent-framed Avro{hint}")
    return struct.unpack(">I", frame[1:5])[0]


def decode(frame: bytes, *, catalog: Optional[Catalog] = None,
           reader_schema_id: Optional[int] = None,
           registry: Optional[WireIds] = None) -> Tuple[str, Dict[str, Any]]:
    """(event type, record) of a frame of any catalog id, or of any id registry
    knows as one of dlbrain's schemas. The record is read with the newest
    schema of its type (an older writer resolved by Avro's rules: a field it
    lacks gets its default), or with reader_schema_id (a catalog id: what a
    reader that knows only an older version sees). Raises DecodeError
    (registry.RegistryUnavailable when the registry did not answer for an
    unknown id)."""
    cat = catalog or default_catalog()
    sid = peek(frame)
    writer = cat.by_id(registry.catalog_id(sid) if registry else sid)
    if writer is None:
        known = ", ".join(str(i) for i in cat.ids())
        raise DecodeError(f"schema id {sid} is not in the catalog (known: {known})")
    reader = cat.newest(writer.type) if reader_schema_id is None else cat.by_id(reader_schema_id)
    if reader is None or reader.type != writer.type:
        raise DecodeError(f"schema id {reader_schema_id} cannot read a {writer.type}")
    body = io.BytesIO(memoryview(frame)[HEADER:])
    try:
        if reader is writer:
            rec = schemaless_reader(body, writer.parsed, None)
        else:
            rec = schemaless_reader(body, writer.parsed, reader.parsed)
    except Exception as e:  # fastavro raises EOFError, ValueError, UnicodeDecodeError, ...
        raise DecodeError(f"Avro data (schema id {sid}): {type(e).__name__}: {e}") from None
    rest = len(frame) - HEADER - body.tell()
    if rest:
        raise DecodeError(
            f"{rest} trailing bytes after the record (offset {HEADER + body.tell()} of {len(frame)})"
        )
    return writer.type, rec


def from_json_line(line: str) -> Tuple[str, Dict[str, Any]]:
    """(type, record) of one `dlbrain emit` JSON line: an object with "type"."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise EventError(f"expected a JSON object, got {_describe(obj)}")
    obj = dict(obj)
    t = obj.pop("type", None)
    if not isinstance(t, str):
        raise EventError("type: missing" if t is None else f"type: expected a string, got {_describe(t)}")
    return t, obj


def to_json_line(event_type: str, record: Mapping[str, Any]) -> str:
    """The JSON line `dlbrain emit` reads for this event."""
    return json.dumps({"type": event_type, **record}, separators=(",", ":"), ensure_ascii=False)
