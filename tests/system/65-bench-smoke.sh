#!/usr/bin/env bash
# Every benchmark of scripts/bench at a tiny size, so a broken benchmark fails
# the suite (the numbers themselves are not judged: 2 shared cores).
#  - `scripts/bench all` on the mock broker (optimizer, roundtrip, gateway,
#    matcher, rebuild, decode, config, ingest, scale): each prints its result
#    table and ratio lines, and its JSON section holds positive rates;
#  - `scripts/bench replay --broker real` (it needs the Admin API): the
#    replay from PostgreSQL and from Kafka both ran, with their ratio.
. "$(dirname "$0")/helpers.sh"

command -v jq >/dev/null || fail "no jq (scripts/setup installs it)"
export TMPDIR=$SYS_DIR # the bench's run dirs, removed with the test's
OUT=$SYS_DIR/all.txt
J=$SYS_DIR/all.json

# has FILE REGEX WHAT: FILE has a line matching the extended REGEX.
has() {
    grep -Eq -- "$2" "$1" || fail "$3: no line /$2/ in the bench's output: $(cat "$1")"
}
# json FILE FILTER WHAT: jq FILTER is true of FILE.
json() {
    jq -e "$2" "$1" >/dev/null || fail "$3: not true of the bench's JSON: $2"
}

"$SYS_TOP/scripts/bench" all --seconds 1 --warmup 0 --rate 50 --rates 50 --jobs 20 --samples 1000 \
    --partitions 2 --json "$J" >"$OUT" 2>"$SYS_DIR/all.err" ||
    fail "scripts/bench all failed: $(cat "$SYS_DIR/all.err")"

has "$OUT" '^dlbrain +all \(the recording' optimizer
json "$J" '.optimizer.sets | length == 2 and all(.[]; .plans_per_s > 0)' optimizer
ok "optimizer: plans/s of both optimizer sets"

has "$OUT" '^plan request -> plan \(optimizer\) +50 +50 ' roundtrip
has "$OUT" '^ratio \(optimizer / raw\) +[0-9.]+x' roundtrip
json "$J" '.roundtrip.ratio.p99 > 0 and .roundtrip.ratio.p50 > 0' roundtrip
ok "roundtrip: every request answered, optimizer/raw ratios"

has "$OUT" '^ratio \(gateway / raw\) +[0-9.]+x' gateway
has "$OUT" '^ratio \(HTTP Brain / raw\) +[0-9.]+x' gateway
has "$OUT" '^ +50 .* (met|missed), (met|missed)$' gateway
json "$J" '.gateway | length == 1 and .[0].ratio_gateway.p99 > 0 and .[0].ratio_gateway_http.p99 > 0' gateway
ok "gateway: gRPC and HTTP ratios over raw at 50/s"

json "$J" '.matcher.rows | length == 3 and
    all(.[]; .matcher.matches_per_s > 0 and .scan.matches_per_s > 0 and .speedup > 0)' matcher
has "$OUT" '^10000 +scan ' matcher
ok "matcher: matcher and scan at 10, 1,000 and 10,000 rules"

json "$J" '[.rebuild.sizes[].pods] == [1024, 4096, 16384] and
    all(.rebuild.sizes[]; .rebuild_ms > 0 and .sorted_inserts_ms > 0)' rebuild
has "$OUT" '^ +16384 +[0-9.]+ ms +[0-9.]+ ms +[0-9]+x$' rebuild
ok "rebuild: both ways at three sizes, with the ratio"

json "$J" '.decode.messages == 1000 and .decode.ratio > 0' decode
has "$OUT" '^ratio kept / built +[0-9.]+x' decode
ok "decode: both decoders over 1000 messages, with the ratio"

json "$J" '.config["cold Redis cache"].requests == 20 and .config["warm Redis cache"].requests == 20 and
    .config["cold Redis cache"].matches_per_s > 0 and .config["warm Redis cache"].matches_per_s > 0' config
ok "config: cold and warm passes, every request matched"

json "$J" '.ingest.samples == 1000 and .ingest.ratio > 0 and .ingest.pipeline.msgs_per_s > 0' ingest
has "$OUT" '^pipeline \(decode, Redis, PostgreSQL\) +1000 ' ingest
has "$OUT" '^ratio \(pipeline / raw\) +[0-9.]+$' ingest
ok "ingest: raw and pipeline rates over 1000 samples, with the ratio"

for n in 1 2 4; do
    has "$OUT" "^$n +$n +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+x +[0-9.]+$" "scale ($n partitions)"
done
json "$J" '[.scale[].partitions] == [1, 2, 4] and all(.scale[]; .consumers == .partitions and
    .pipeline.msgs_per_s > 0 and .ratio > 0)' scale
ok "scale: 1, 2 and 4 partitions, with the speed-up"
json "$J" '.rss | length > 0 and all(.[]; .peak_rss_bytes > 0)' rss

R=$SYS_DIR/replay.txt
"$SYS_TOP/scripts/bench" replay --broker real --samples 1000 --jobs 20 --json "$SYS_DIR/replay.json" >"$R" \
    2>"$SYS_DIR/replay.err" ||
    fail "scripts/bench replay failed: $(cat "$SYS_DIR/replay.err")"
json "$SYS_DIR/replay.json" '.replay.samples == 1000 and .replay.copy_events_per_s > 0 and
    .replay.replay_events_per_s > 0 and .replay.replay_kafka_events_per_s > 0 and .replay.ratio > 0' replay
has "$R" '^ratio replay/COPY: [0-9.]+$' replay
ok "replay: from PostgreSQL and from Kafka on the real broker, with the ratio"
echo "65-bench-smoke: all checks passed"
