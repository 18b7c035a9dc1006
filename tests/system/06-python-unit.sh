#!/usr/bin/env bash
# The Python master client's tests that need no servers
# (producers/python/tests, all but test_broker.py), with the venv of
# scripts/setup (.cache/venv, or $DLB_VENV): the shared test vectors encode to
# C's bytes and decode to C's values, bad events are rejected with the
# messages of `dlbrain emit --strict`, the package's schemas are the
# repository's byte for byte and agree with `dlbrain schemas`, and the wheel
# stands alone. Then the dlrover-local consumer's
# (consumers/dlrover_local/tests): its conversions between dlbrain's events and
# DLRover's PSLocalOptimizer, and its order of a job's events before a request.
set -euo pipefail
top=${DLB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
venv=${DLB_VENV:-$top/.cache/venv}
[ -x "$venv/bin/python" ] || { echo "FAIL - no Python venv at $venv: run scripts/setup"; exit 1; }
dlbrain=${DLBRAIN:-$top/build/dlbrain}
case $dlbrain in /*) ;; *) dlbrain=$PWD/$dlbrain ;; esac
cd "$top/producers/python"
DLBRAIN=$dlbrain DLB_SOURCE_DIR=$top \
    "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider -m 'not broker' tests
cd "$top/consumers/dlrover_local"
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests
echo "06-python-unit: all checks passed"
