#!/usr/bin/env bash
# The Python master client (producers/python) against the C pipeline on a real
# Apache Kafka broker (scripts/kafka, 12 partitions per topic), with
# PostgreSQL, Redis, an optimizer and a configurer (env "dlbrain"); envs
# "c2py" and "py2c" get the pipeline's topics and nothing else reading or
# writing them. Runs producers/python/tests/test_broker.py with the venv of
# scripts/setup (.cache/venv, or $DLB_VENV):
#   C produces, Python consumes: `dlbrain emit` of the shared test vectors;
#     Python reads them raw, decodes them to the same values and re-encodes
#     them to the same bytes (Confluent header + Avro body), same keys, same
#     partitions.
#   Python produces, C consumes: the optimizer answers Python's plan requests
#     (PlanSubscriber, read_committed, receives the exact plan) and keeps
#     Python's frames byte for byte in PostgreSQL; the configurer answers a
#     config request; `dlbrain plans`/`configs` print what Python published;
#     kcat's raw copy of Python's messages equals C's for the same events.
#   read_committed: a plan written in an aborted transaction is never
#     delivered, to Python's subscriber nor to `dlbrain plans`.
#   schema.registry.url: a master bound to `dlbrain registry` (started by the
#     tests' fixture) gets the optimizer's plan; a plan framed with an id only
#     the registry knows (alias_proxy.py) waits through a registry outage and
#     is delivered once it is back.
. "$(dirname "$0")/helpers.sh"
case $DLBRAIN in /*) ;; *) DLBRAIN=$PWD/$DLBRAIN ;; esac # pytest runs in producers/python

VENV=${DLB_VENV:-$SYS_TOP/.cache/venv}
PY=$VENV/bin/python
[ -x "$PY" ] || fail "no Python venv at $VENV: run scripts/setup"
"$PY" -c 'import confluent_kafka, fastavro, pytest' 2>/dev/null ||
    fail "the venv $VENV lacks confluent-kafka, fastavro or pytest: run scripts/setup"

sys_start_pg
sys_start_redis
sys_start_real_kafka 12
for e in c2py py2c; do
    "$SYS_TOP/scripts/kafka" topics --dir "$SYS_DIR/kafka" --env "$e" --partitions 12 ||
        fail "could not create the topics of env $e"
done
ok "broker $DLBRAIN_BROKERS with the topics of envs dlbrain, c2py, py2c"

# The configuration rules of 14-configurer.sh, for the config request test.
"$DLBRAIN" config apply -q "$SYS_TOP/tests/system/data/rules-ads.yaml" >/dev/null || fail "config apply"
sys_start_optimizer optimizer
"$DLBRAIN" configurer -X consumer.poll.ms=100 >/dev/null 2>"$SYS_DIR/configurer.log" &
SYS_PIDS+=($!)

cd "$SYS_TOP/producers/python"
if DLBRAIN="$DLBRAIN" DLB_SOURCE_DIR="$SYS_TOP" "$PY" -m pytest -q -rs -p no:cacheprovider -m broker tests/test_broker.py; then
    ok "test_broker.py passed"
else
    fail "test_broker.py failed"
fi
echo "17-python-client: all checks passed"
