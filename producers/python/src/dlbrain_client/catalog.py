"""The schema catalog: every schema version dlbrain knows, by Confluent id.

The package ships a copy of the repository's schemas/ (catalog.tsv and the
.avsc files it names); tests/test_schemas.py fails when the copy differs from
the repository's by one byte. Ids are stable forever: writers use the newest
id of a type, readers decode any id (an older writer is resolved to the newest
schema of its type, Avro's BACKWARD rules), exactly like pipeline/catalog.c.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, List, Optional

from fastavro import parse_schema

# Where each event type is published: <env>.<topic> (pipeline/codec/event.c, conf.h).
TOPICS = {
    "job_event": "job-events",
    "runtime_sample": "metrics",
    "node_event": "k8s-events",
    "plan_request": "plan-requests",
    "plan": "plans",
    "config_match": "configs",
    "config_request": "config-requests",
}


class CatalogError(Exception):
    """catalog.tsv or a schema it names cannot be loaded."""


def _strip_logical_types(node: Any) -> Any:
    # timestamp-millis does not change the wire format (a long); without the
    # annotation fastavro reads it as int milliseconds, as the C structs hold
    # it, instead of a datetime.
    if isinstance(node, dict):
        return {k: _strip_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical_types(v) for v in node]
    return node


@dataclass(frozen=True, eq=False)
class SchemaEntry:
    """One line of catalog.tsv (hashed by identity)."""

    id: int
    type: str
    file: str
    line: int
    schema: Dict[str, Any]  # the .avsc as JSON, logical types removed
    parsed: Any  # fastavro's parsed schema
    text: str = ""  # the .avsc as written: what a schema registry is given, as C gives it


class Catalog:
    """The catalog of a schema directory (default: the schemas shipped in the package).

    ``by_id(id)`` is any known version, ``newest(type)`` the one writers use.
    """

    def __init__(self, schema_dir: Optional[str] = None):
        self._by_id: Dict[int, SchemaEntry] = {}
        self._newest: Dict[str, SchemaEntry] = {}
        if schema_dir is None:
            base = resources.files("dlbrain_client").joinpath("schemas")
            read = lambda name: base.joinpath(name).read_text(encoding="utf-8")  # noqa: E731
            where = "dlbrain_client/schemas"
        else:
            read = lambda name: _read_file(os.path.join(schema_dir, name))  # noqa: E731
            where = schema_dir
        try:
            text = read("catalog.tsv")
        except OSError as e:
            raise CatalogError(f"{where}/catalog.tsv: {e}") from None
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 3 or not cols[0].isdigit():
                raise CatalogError(f"catalog.tsv:{lineno}: expected 'id<TAB>type<TAB>file'")
            sid, typ, fname = int(cols[0]), cols[1], cols[2]
            if typ not in TOPICS:
                raise CatalogError(f"catalog.tsv:{lineno}: unknown type '{typ}'")
            if sid in self._by_id:
                raise CatalogError(f"catalog.tsv:{lineno}: id {sid} given twice")
            try:
                text = read(fname)
                schema = _strip_logical_types(json.loads(text))
                # Each file on its own: JobMeta is defined in two files and
                # both plan versions are dlbrain.Plan.
                parsed = parse_schema(copy.deepcopy(schema), named_schemas={})
            except (OSError, ValueError) as e:
                raise CatalogError(f"catalog.tsv:{lineno}: {fname}: {e}") from None
            self._by_id[sid] = SchemaEntry(sid, typ, fname, lineno, schema, parsed, text)
        for sid in sorted(self._by_id):  # ascending: the highest id of a type wins
            e = self._by_id[sid]
            self._newest[e.type] = e
        if not self._by_id:
            raise CatalogError(f"{where}/catalog.tsv: no schemas")

    def by_id(self, schema_id: int) -> Optional[SchemaEntry]:
        return self._by_id.get(schema_id)

    def newest(self, event_type: str) -> SchemaEntry:
        try:
            return self._newest[event_type]
        except KeyError:
            raise CatalogError(f'no schema for "{event_type}" in the catalog') from None

    def ids(self) -> List[int]:
        return sorted(self._by_id)

    def types(self) -> List[str]:
        return sorted(self._newest)


def _read_file(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


_default: Optional[Catalog] = None


def default_catalog() -> Catalog:
    """The catalog of the shipped schemas, loaded once."""
    global _default
    if _default is None:
        _default = Catalog()
    return _default
