#!/usr/bin/env bash
# emit -> optimizer (set dlrover) -> plans topic + PostgreSQL + Redis, against the mock Kafka
# cluster and real PostgreSQL and Redis: exact plans, exact row counts, and a
# second delivery of the same events changes no row and no plan. The checks are
# in pipeline-checks.sh, shared with 20-real-broker.sh.
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/pipeline-checks.sh"

sys_pipeline_checks mock dlrover
echo "10-pipeline: all checks passed"
