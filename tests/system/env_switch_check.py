#!/usr/bin/env python3
"""Check exactly once at the front across switches (docs/environments.md,
"Exactly once across a switch"), from what the broker and the registry hold.

usage: env_switch_check.py REQUESTS PLANS MARKS SENT

REQUESTS, PLANS: a front topic read by kcat with -f '%p %o %S %h\\n%s' (a
text line, then the value's bytes): dlbrain.plan-requests from its start,
dlbrain.plans. MARKS: the detail of every "mark" history row, one JSON object
a line. SENT: the request ids the test sent, one a line.

The rule: a request is for the environment of the newest switch marker before
it in its partition (a marker of an older switch than one read already does
not count). Checks: every dlb.switch header is "<switch>:<environment>"
(a malformed marker would name no one); every sent request is in the front
topic once and after a marker; every one has exactly one answer at the front, from the environment
the rule names (its dlb.env header); no answer to anything else; each mark
row's offsets are markers of its switch. Prints a summary; exit 1 on any
failure, naming the first ones."""
import json
import re
import sys

RID = re.compile(rb"ld[0-9]+-[0-9]+")
SWITCH = re.compile(r"dlb\.switch=([0-9]+):([a-z][a-z0-9_]*)(?:,|$)")
ANY_SWITCH = re.compile(r"dlb\.switch=([^,]*)")
ENV = re.compile(r"dlb\.env=([a-z][a-z0-9_]*)")


def records(path):
    """(partition, offset, headers, value) of a kcat dump."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        head = data[pos:nl].decode()
        part, off, size, hdrs = (head.split(" ", 3) + [""])[:4]
        size = max(int(size), 0)
        value = data[nl + 1:nl + 1 + size]
        pos = nl + 1 + size
        yield int(part), int(off), hdrs, value


def main():
    req_path, plans_path, marks_path, sent_path = sys.argv[1:5]
    errors = []
    stamp = {}        # partition -> (switch, env)
    expected = {}     # request id -> env
    markers = {}      # (partition, offset) -> switch
    switches = set()
    for part, off, hdrs, value in records(req_path):
        m = SWITCH.search(hdrs)
        if not m and ANY_SWITCH.search(hdrs):
            errors.append(f"a malformed marker at [{part}] {off}: {hdrs!r}")
            continue
        if m:
            sw, env = int(m.group(1)), m.group(2)
            markers[(part, off)] = sw
            switches.add(sw)
            if sw > stamp.get(part, (0, ""))[0]:
                stamp[part] = (sw, env)
            continue
        ids = set(RID.findall(value))
        if len(ids) != 1:
            continue  # not one of the test's requests
        rid = ids.pop().decode()
        if rid in expected:
            errors.append(f"request {rid} is in the front topic twice")
        if part not in stamp:
            errors.append(f"request {rid} at [{part}] {off} precedes every marker")
        expected[rid] = stamp.get(part, (0, "?"))[1]
    with open(sent_path) as f:
        sent = {line.strip() for line in f if line.strip()}
    for rid in sorted(sent - set(expected)):
        errors.append(f"request {rid} was sent but is not in the front topic")
    answers = {}
    for part, off, hdrs, value in records(plans_path):
        ids = set(RID.findall(value))
        m = ENV.search(hdrs)
        if len(ids) != 1 or not m:
            errors.append(f"front plan at [{part}] {off}: ids {sorted(ids)}, headers {hdrs!r}")
            continue
        answers.setdefault(ids.pop().decode(), []).append(m.group(1))
    per_env = {}
    for rid, env in sorted(expected.items()):
        got = answers.get(rid, [])
        if got != [env]:
            errors.append(f"request {rid} is {env}'s by the rule; answered at the front by {got}")
        per_env[env] = per_env.get(env, 0) + 1
    for rid in sorted(set(answers) - set(expected)):
        errors.append(f"an answer at the front to {rid}, which is no request of the front")
    rows = 0
    with open(marks_path) as f:
        for line in f:
            if not line.strip():
                continue
            d = json.loads(line)
            rows += 1
            topic = d["front"] + ".plan-requests"
            for part, off in d["offsets"].get(topic, {}).items():
                if markers.get((int(part), int(off))) != d["switch"]:
                    errors.append(f"mark row of switch {d['switch']}: {topic} [{part}] {off} "
                                  f"is not its marker")
    print(f"{len(expected)} requests, {sum(len(a) for a in answers.values())} front answers, "
          f"{len(switches)} switches marked ({rows} mark rows, {len(markers)} markers), "
          f"by environment: " + ", ".join(f"{e} {n}" for e, n in sorted(per_env.items())))
    for e in errors[:20]:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
