#!/usr/bin/env bash
# The README stays true: its settings table is what the code says, its first
# code block holds exactly the two commands, and .ci/run runs the test command.
set -euo pipefail
top=${DLB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DLBRAIN=${DLBRAIN:-$top/build/dlbrain}
fail() { echo "FAIL - $*"; exit 1; }

sed -n '/^<!-- settings-reference/,/^<!-- \/settings-reference/p' "$top/README.md" | sed '1d;$d' >/tmp/dlb-docs.$$
"$DLBRAIN" settings --reference | diff -u /tmp/dlb-docs.$$ - || { rm -f /tmp/dlb-docs.$$; fail "README settings table differs from 'dlbrain settings --reference'"; }
rm -f /tmp/dlb-docs.$$
echo "ok - README settings table matches the code"

cmds=$(awk '/^```/{n++; next} n==1' "$top/README.md" | sed 's/ *#.*//')
[ "$(printf '%s\n' "$cmds" | wc -l)" = 2 ] || fail "the README's first code block is not two commands: $cmds"
[ "$(printf '%s\n' "$cmds" | sed -n 1p)" = "./scripts/demo" ] || fail "first command is not ./scripts/demo"
test_cmd=$(printf '%s\n' "$cmds" | sed -n 2p)
grep -qxF "$test_cmd" "$top/.ci/run" || fail ".ci/run does not run the README's test command '$test_cmd'"
echo "ok - README starts with the demo and test commands; .ci/run runs '$test_cmd'"
for c in $("$DLBRAIN" --help | awk '/^commands:/{f=1; next} f && !NF {exit} f {print $1}'); do
    grep -q "dlbrain $c" "$top/README.md" || fail "command '$c' is not documented in the README"
done
echo "ok - every dlbrain command is documented"
echo "01-docs: all checks passed"
