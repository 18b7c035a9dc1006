#!/usr/bin/env bash
# The checks of 10-pipeline.sh (exact plans, exact row counts, a redelivery
# changes nothing) against a real single-node Apache Kafka broker (KRaft,
# scripts/kafka) with 12 partitions per topic, instead of the mock cluster, and
# with the default optimizer set, dlbrain (10-pipeline runs dlrover).
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/pipeline-checks.sh"

sys_pipeline_checks real dlbrain
echo "20-real-broker: all checks passed"
