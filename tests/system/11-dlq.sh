#!/usr/bin/env bash
# Garbage on the input topics lands in the dead-letter topic with headers naming
# where it came from and why, and the next good event still yields its plan.
. "$(dirname "$0")/helpers.sh"

sys_start_all 1
topic=dlbrain.plan-requests
# Each file is one Kafka message (kcat -P sends a file whole).
printf '\x01\x00\x00\x00\x04abcdef' >"$SYS_DIR/bad-magic"        # magic byte 1
printf '\x00\x00\x00\x00\x63abcdef' >"$SYS_DIR/bad-schema"       # schema id 99
printf '\x00\x00\x00\x00\x04\x0aab' >"$SYS_DIR/bad-truncated"    # string of 5 bytes, 2 present
printf 'xy' >"$SYS_DIR/bad-short"                                # shorter than the header
for f in bad-magic bad-schema bad-truncated bad-short; do
    kcat -P -b "$DLBRAIN_BROKERS" -t "$topic" -k "job-$f" "$SYS_DIR/$f" ||
        fail "kcat could not produce $f"
done
# Valid Avro, invalid value: a stage no optimizer knows, encoded by hand
# (emit refuses to send it). Fields: event_id "x1", time 0, job_uid "jx", stage "bogus", oom_pod null.
printf '\x00\x00\x00\x00\x04\x04x1\x00\x04jx\x0abogus\x00' >"$SYS_DIR/bad-stage"
kcat -P -b "$DLBRAIN_BROKERS" -t "$topic" -k jx "$SYS_DIR/bad-stage"
# Under the consumer's message.max.bytes (1 MiB) but over the producer's own
# (librdkafka's 1,000,000): its DLQ copy goes without the body, which would
# not fit, instead of failing the batch on every retry.
head -c 1039998 /dev/zero | tr '\0' ' ' | sed 's/^/{/; s/$/}/' | tr -d '\n' >"$SYS_DIR/bad-big"
kcat -P -b "$DLBRAIN_BROKERS" -X message.max.bytes=2000000 -t "$topic" -k job-bad-big "$SYS_DIR/bad-big" ||
    fail "kcat could not produce bad-big"
# A key that big leaves no room either: the copy goes without body and key.
{
    printf 'job-bad-key-'
    head -c 999900 /dev/zero | tr '\0' k
    printf '|xy\n'
} | kcat -P -b "$DLBRAIN_BROKERS" -X message.max.bytes=2000000 -t "$topic" -K '|' ||
    fail "kcat could not produce bad-key"

echo '{"type":"plan_request","event_id":"good-q1","event_time_ms":1767312001000,"job_uid":"good","stage":"job_stage_create"}' |
    "$DLBRAIN" emit --strict -q || fail "emit of the good request"

"$DLBRAIN" plans -q --count 1 --timeout-ms 60000 --format json >"$SYS_DIR/plans.json" ||
    fail "no plan for the good request after the garbage"
expect_eq "plan after garbage" "plan-good-q1" "$(jq -r .plan_id "$SYS_DIR/plans.json")"

kcat -C -b "$DLBRAIN_BROKERS" -t dlbrain.dlq -e -q -f '%k|%h|%S\n' >"$SYS_DIR/dlq.txt"
expect_eq "messages in the DLQ" 7 "$(wc -l <"$SYS_DIR/dlq.txt")"
cls() { grep "^$1|" "$SYS_DIR/dlq.txt" | tr ',' '\n' | sed -n "s/^.*dlb.error.class=//p"; }
expect_eq "wrong magic byte" framing "$(cls job-bad-magic)"
expect_eq "unknown schema id" schema_id "$(cls job-bad-schema)"
expect_eq "truncated Avro" decode "$(cls job-bad-truncated)"
expect_eq "too short" framing "$(cls job-bad-short)"
expect_eq "unknown stage" invalid "$(cls jx)"
expect_eq "near the size limit" framing "$(cls job-bad-big)"
big=$(grep '^job-bad-big|' "$SYS_DIR/dlq.txt")
case $big in *"dlb.value.omitted.bytes=$(stat -c %s "$SYS_DIR/bad-big")"*"|-1") ok "the big one's copy omits its body" ;;
    *) fail "the big one's copy: $big" ;; esac
key=$(grep '^|' "$SYS_DIR/dlq.txt")
case $key in *"dlb.error.class=framing"*"dlb.key.omitted.bytes=999912"*"|-1") ok "the big key's copy omits key and body" ;;
    *) fail "the big key's copy: $key" ;; esac
line=$(grep '^job-bad-schema|' "$SYS_DIR/dlq.txt")
for h in "dlb.source.topic=$topic" dlb.source.partition=0 dlb.source.offset=1 dlb.stage=decode "dlb.error.message="; do
    case $line in *"$h"*) ok "header $h" ;; *) fail "header $h missing in: $line" ;; esac
done
case $line in *"99"*) ok "error message names the schema id" ;; *) fail "message lacks the id: $line" ;; esac
expect_eq "plan_requests persisted (good only)" 1 "$(sys_count plan_requests)"
kill -0 "${SYS_PIDS[1]}" || fail "the optimizer died"
ok "optimizer still running"
echo "11-dlq: all checks passed"
