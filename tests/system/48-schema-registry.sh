#!/usr/bin/env bash
# Standard Kafka tooling reads dlbrain's topics (issue 22): `dlbrain registry`
# serves the Confluent Schema Registry API over the schema catalog on a real
# broker's pipeline. confluent-kafka's own AvroSerializer (PyPI, unchanged)
# finds its schema by lookup and writes plan requests the optimizer answers
# or dead-letters; its AvroDeserializer + SchemaRegistryClient then decode
# <env>.plans, <env>.metrics and <env>.dlq, and get the same records as
# dlbrain's own decoder and as `dlbrain plans` (tests/system/registry/sr_check.py).
# An environment created while the registry runs gets its subjects. A process
# with schema.registry.url binds to it at start-up; one it refuses does not start.
. "$(dirname "$0")/helpers.sh"

PY=${DLB_VENV:-$SYS_TOP/.cache/venv}/bin/python
CHECK=$SYS_TOP/tests/system/registry/sr_check.py
CT=application/vnd.schemaregistry.v1+json
[ -x "$PY" ] || fail "no Python venv at $PY (scripts/setup makes it)"
"$PY" -c 'import confluent_kafka.schema_registry.avro' 2>/dev/null ||
    fail "the venv lacks confluent-kafka[avro] (scripts/setup installs it)"

sys_start_pg
sys_start_redis
sys_start_real_kafka 1
sys_start_optimizer optimizer

# Env dlbrain and every live environment of the registry, re-read every 200 ms.
"$DLBRAIN" registry -a 127.0.0.1:0 -X registry.refresh.ms=200 >/dev/null 2>"$SYS_DIR/registry.log" &
SYS_PIDS+=($!)
sys_log_port registry 's|.*Registry API (read-only) on http://127.0.0.1:\([0-9]*\)/.*|\1|p' ||
    fail "the registry did not start: $(tail -n 3 "$SYS_DIR/registry.log")"
url=http://127.0.0.1:$port
ok "dlbrain registry serves $url"

# The REST shapes over HTTP (every route's shape: tests/unit/test_schemareg.c).
expect_eq "content type" "$CT" "$(curl -s -o /dev/null -w '%{content_type}' "$url/subjects")"
expect_eq "subjects" 8 "$(curl -s "$url/subjects" | jq -r '.[]' | grep -c '^dlbrain\..*-value$')"
expect_eq "versions of dlbrain.plans-value" "[1,2]" "$(curl -s "$url/subjects/dlbrain.plans-value/versions")"
expect_eq "latest of dlbrain.metrics-value" "3 11" \
    "$(curl -s "$url/subjects/dlbrain.metrics-value/versions/latest" | jq -r '"\(.version) \(.id)"')"
[ "$("$DLBRAIN" schemas 11 | jq -c .)" = "$(curl -s "$url/schemas/ids/11" | jq -r .schema | jq -c .)" ] ||
    fail "GET /schemas/ids/11 is not the catalog's schema 11"
ok "GET /schemas/ids/11 is dlbrain schemas 11"
expect_eq "unknown id" "404 40403" \
    "$(curl -s -o "$SYS_DIR/e.json" -w '%{http_code}' "$url/schemas/ids/99") $(jq .error_code "$SYS_DIR/e.json")"
expect_eq "unknown subject" "404 40401" \
    "$(curl -s -o "$SYS_DIR/e.json" -w '%{http_code}' "$url/subjects/nope.plans-value/versions") $(jq .error_code "$SYS_DIR/e.json")"
expect_eq "registering" "405 405" \
    "$(curl -s -o "$SYS_DIR/e.json" -w '%{http_code}' -X POST -H "Content-Type: $CT" \
        --data '{"schema":"\"string\""}' "$url/subjects/dlbrain.plans-value/versions") $(jq .error_code "$SYS_DIR/e.json")"
expect_eq "deleting" 405 "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$url/subjects/dlbrain.plans-value")"
expect_eq "global compatibility" BACKWARD "$(curl -s "$url/config" | jq -r .compatibilityLevel)"

# A new environment's subjects appear within registry.refresh.ms.
"$DLBRAIN" env create sr2 --virtual >"$SYS_DIR/env.log" 2>&1 || fail "env create sr2: $(tail -n 3 "$SYS_DIR/env.log")"
for _ in $(seq 1 50); do
    curl -s "$url/subjects" | jq -e 'index("sr2.plans-value")' >/dev/null && break
    sleep 0.1
done
expect_eq "subjects of env sr2" 8 "$(curl -s "$url/subjects" | jq -r '.[]' | grep -c '^sr2\..*-value$')"

# Records: the fixture through emit, confluent-kafka's serializer's through the registry.
"$DLBRAIN" emit --strict -q "$SYS_TOP/tests/system/data/pipeline.jsonl" || fail "emit rejected a fixture line"
"$PY" "$CHECK" produce "$url" "$DLBRAIN_BROKERS" dlbrain || fail "confluent-kafka could not produce"
"$DLBRAIN" plans -q --count 6 --timeout-ms 90000 --format json >"$SYS_DIR/plans.json" ||
    fail "the master did not receive 6 plans (5 of the fixture, 1 of confluent-kafka's request)"
expect_eq "plan of the serializer's request" 1 "$(jq -r 'select(.plan_id == "plan-sr-q1") | .plan_id' "$SYS_DIR/plans.json" | wc -l)"
sys_dlq_read 3 60
expect_eq "dead-lettered keys" "sr-bad sr-magic sr-unknown-id" "$(jq -r .key "$SYS_DIR/dlq.json" | sort | xargs)"

"$PY" "$CHECK" compare "$url" "$DLBRAIN_BROKERS" dlbrain "$DLBRAIN" "$SYS_DIR/plans.json" ||
    fail "confluent-kafka's deserializer and dlbrain's decoder disagree"

# schema.registry.url: a process binds dlbrain's schemas at start-up (found by
# lookup here: this registry holds them, under the catalog's ids).
"$DLBRAIN" plans --count 6 --timeout-ms 60000 --format json -X schema.registry.url="$url" \
    >"$SYS_DIR/plans-sr.json" 2>"$SYS_DIR/plans-sr.log" || fail "a master bound to the registry got no plans"
grep -q "found or registered under dlbrain.<topic>-value" "$SYS_DIR/plans-sr.log" ||
    fail "the bound master did not log its binding: $(tail -n 3 "$SYS_DIR/plans-sr.log")"
expect_eq "plans of a master bound to the registry" "$(jq -c . "$SYS_DIR/plans.json" | sort | md5sum)" \
    "$(jq -c . "$SYS_DIR/plans-sr.json" | sort | md5sum)"
# A registry that will not take a subject stops a process at start-up, naming it.
if "$DLBRAIN" emit -e nope -X schema.registry.url="$url" </dev/null 2>"$SYS_DIR/emit-sr.log"; then
    fail "emit started though the registry refused its subjects"
fi
grep -q "subject nope.job-events-value, version 1 (job_event.avsc): .*read-only.*; nothing started" \
    "$SYS_DIR/emit-sr.log" || fail "the start-up error: $(cat "$SYS_DIR/emit-sr.log")"
ok "a subject the registry refuses is a start-up error naming subject and version"
echo "48-schema-registry: all checks passed"
