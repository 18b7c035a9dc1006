#!/usr/bin/env python3
"""Check a Prometheus text exposition (format 0.0.4) the way a scraper reads it,
plus dlbrain's naming rules. Usage: prom_check.py FILE; prints one line per
problem and exits 1 when there is any, else prints "ok N families, M samples".

Format: every sample belongs to a family whose # TYPE came first (once); names
and label names are valid; label values are quoted with only \\\\, \\" and \\n
escaped; values are floats (NaN, +Inf, -Inf allowed); no series twice; a
histogram's buckets are ascending in le, cumulative (never decreasing), end
with le="+Inf" equal to its _count, and have a _sum.
dlbrain's rules: names match ^dlbrain_[a-z0-9_]+$, counters end in _total,
a ratio (0..1) ends in _ratio, not _share, _fraction or _percent, no
high-cardinality label (job, uid, job_uid, event_id, pod, plan_id)."""
import math
import re
import sys

NAME = re.compile(r"^dlbrain_[a-z0-9_]+$")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
FORBIDDEN_LABELS = {"job", "uid", "job_uid", "event_id", "pod", "plan_id"}
# Prometheus' base unit of a ratio is the ratio (0..1), named _ratio.
RATIO_WORDS = ("_share", "_fraction", "_percent", "_percentage", "_pct")


def parse_labels(text):
    labels, pos = [], 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            return None
        labels.append((m.group(1), m.group(2)))
        pos = m.end()
    return labels


def main(path):
    problems, types, helps, seen = [], {}, set(), set()
    hist = {}  # (family, labels without le) -> {"buckets": [(le, v)], "sum": v, "count": v}
    samples = 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for no, line in enumerate(lines, 1):
        where = f"line {no}"
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            if name in helps:
                problems.append(f"{where}: second HELP for {name}")
            helps.add(name)
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                problems.append(f"{where}: bad TYPE line: {line}")
                continue
            name, typ = parts[2], parts[3]
            if name in types:
                problems.append(f"{where}: second TYPE for {name}")
            types[name] = typ
            if not NAME.match(name):
                problems.append(f"{where}: {name} does not match ^dlbrain_[a-z0-9_]+$")
            if typ == "counter" and not name.endswith("_total"):
                problems.append(f"{where}: counter {name} does not end in _total")
            if typ != "counter" and name.endswith("_total"):
                problems.append(f"{where}: {typ} {name} ends in _total")
            if name.endswith(RATIO_WORDS):
                problems.append(f"{where}: {name} is a ratio: name it ..._ratio (0..1)")
            continue
        if line.startswith("#") or not line:
            problems.append(f"{where}: unexpected line: {line!r}")
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append(f"{where}: not a sample: {line!r}")
            continue
        name, labels_text, value = m.group(1), m.group(3) or "", m.group(4)
        labels = parse_labels(labels_text)
        if labels is None:
            problems.append(f"{where}: bad labels: {labels_text!r}")
            continue
        try:
            v = float(value)
        except ValueError:
            problems.append(f"{where}: bad value {value!r}")
            continue
        samples += 1
        fam, suffix = name, ""
        if name not in types:
            for suf in ("_bucket", "_sum", "_count"):
                if name.endswith(suf) and types.get(name[: -len(suf)]) == "histogram":
                    fam, suffix = name[: -len(suf)], suf
        if fam not in types:
            problems.append(f"{where}: {name} has no TYPE before it")
            continue
        names = [k for k, _ in labels]
        if len(set(names)) != len(names):
            problems.append(f"{where}: repeated label in {line}")
        for k in names:
            if k in FORBIDDEN_LABELS:
                problems.append(f"{where}: high-cardinality label {k} in {name}")
        key = (name, tuple(sorted(labels)))
        if key in seen:
            problems.append(f"{where}: series twice: {line}")
        seen.add(key)
        if types[fam] == "histogram":
            if not suffix:
                problems.append(f"{where}: histogram sample without _bucket/_sum/_count")
                continue
            base = tuple(sorted((k, x) for k, x in labels if k != "le"))
            h = hist.setdefault((fam, base), {"buckets": [], "sum": None, "count": None})
            if suffix == "_bucket":
                le = dict(labels).get("le")
                if le is None:
                    problems.append(f"{where}: bucket without le")
                    continue
                h["buckets"].append((float(le), v))
            elif suffix == "_sum":
                h["sum"] = v
            else:
                h["count"] = v
        elif types[fam] == "counter" and (v < 0 or math.isnan(v)):
            problems.append(f"{where}: counter {name} is {value}")
    for (fam, base), h in hist.items():
        b = h["buckets"]
        what = f"histogram {fam}{dict(base)}"
        if not b or b[-1][0] != math.inf:
            problems.append(f"{what}: no le=\"+Inf\" bucket last")
            continue
        if any(b[i][0] >= b[i + 1][0] for i in range(len(b) - 1)):
            problems.append(f"{what}: le not ascending")
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            problems.append(f"{what}: buckets not cumulative")
        if h["count"] != b[-1][1]:
            problems.append(f"{what}: _count {h['count']} != +Inf bucket {b[-1][1]}")
        if h["sum"] is None:
            problems.append(f"{what}: no _sum")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"ok {len(types)} families, {samples} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
