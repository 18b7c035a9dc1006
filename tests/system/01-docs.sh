#!/usr/bin/env bash
# The documentation stays true: the settings table of docs/configuration.md and
# the commands table of docs/commands.md are what the code says, the README's
# first code block holds exactly the two commands and .ci/run runs the test
# command, the README and docs/commands.md name every command, every relative
# link of README.md and docs/*.md leads to a file (and heading) that exists,
# and the README stays short.
set -euo pipefail
top=${DLB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DLBRAIN=${DLBRAIN:-$top/build/dlbrain}
fail() { echo "FAIL - $*"; exit 1; }

conf_doc=docs/configuration.md
[ -f "$top/$conf_doc" ] || fail "$conf_doc is missing"
grep -q '^<!-- settings-reference' "$top/$conf_doc" || fail "$conf_doc has no <!-- settings-reference block"
sed -n '/^<!-- settings-reference/,/^<!-- \/settings-reference/p' "$top/$conf_doc" | sed '1d;$d' >/tmp/dlb-docs.$$
"$DLBRAIN" settings --reference | diff -u /tmp/dlb-docs.$$ - || { rm -f /tmp/dlb-docs.$$; fail "$conf_doc settings table differs from 'dlbrain settings --reference'"; }
rm -f /tmp/dlb-docs.$$
echo "ok - $conf_doc settings table matches the code"

cmd_doc=docs/commands.md
[ -f "$top/$cmd_doc" ] || fail "$cmd_doc is missing"
grep -qx '<!-- commands-reference -->' "$top/$cmd_doc" || fail "$cmd_doc has no <!-- commands-reference --> line"
grep -qx '<!-- /commands-reference -->' "$top/$cmd_doc" || fail "$cmd_doc has no <!-- /commands-reference --> line"
sed -n '/^<!-- commands-reference -->$/,/^<!-- \/commands-reference -->$/p' "$top/$cmd_doc" | sed '1d;$d' >/tmp/dlb-docs.$$
"$DLBRAIN" help --markdown | diff -u /tmp/dlb-docs.$$ - || {
    rm -f /tmp/dlb-docs.$$
    fail "$cmd_doc commands table differs from 'dlbrain help --markdown'; regenerate it: replace the lines between <!-- commands-reference --> and <!-- /commands-reference --> with that command's output"
}
rm -f /tmp/dlb-docs.$$
echo "ok - $cmd_doc commands table matches the code"

cmds=$(awk '/^```/{n++; next} n==1' "$top/README.md" | sed 's/ *#.*//')
[ "$(printf '%s\n' "$cmds" | wc -l)" = 2 ] || fail "the README's first code block is not two commands: $cmds"
[ "$(printf '%s\n' "$cmds" | sed -n 1p)" = "./scripts/demo" ] || fail "first command is not ./scripts/demo"
test_cmd=$(printf '%s\n' "$cmds" | sed -n 2p)
grep -qxF "$test_cmd" "$top/.ci/run" || fail ".ci/run does not run the README's test command '$test_cmd'"
echo "ok - README starts with the demo and test commands; .ci/run runs '$test_cmd'"
# A command's line starts with two spaces; its subcommands are on the next, indented further.
for c in $("$DLBRAIN" --help | awk '/^commands:/{f=1; next} f && !NF {exit} f && /^  [^ ]/ {print $1}'); do
    grep -q "dlbrain $c" "$top/README.md" || fail "command '$c' is not documented in the README"
    grep -q "^| \`dlbrain $c[ \`]" <(sed '/^<!-- commands-reference -->$/,/^<!-- \/commands-reference -->$/d' "$top/$cmd_doc") ||
        fail "command '$c' has no row of its own in $cmd_doc (beside the generated table)"
done
echo "ok - every dlbrain command is documented in the README and $cmd_doc"

# Every command takes the common options (-X key=value ...), as the README says:
# each parses -X (the first action of a command of actions), and the two that
# need no server refuse a bad setting, naming it, and run with good ones.
"$DLBRAIN" --help | awk '/^commands:/{f=1; next} f && !NF {exit}
    f && /^  [^ ]/ {if (c) print c " " first; c = $1; first = ""}
    f && /^   / {split($1, a, "|"); first = a[1]} END {print c " " first}' >/tmp/dlb-docs.$$
while read -r c sub; do
    "$DLBRAIN" $c $sub -X log.level=info --help >/dev/null 2>&1 </dev/null ||
        { rm -f /tmp/dlb-docs.$$; fail "'dlbrain $c $sub -X log.level=info --help' does not take -X key=value"; }
done </tmp/dlb-docs.$$
rm -f /tmp/dlb-docs.$$
for c in schemas simulate; do
    rc=0
    err=$("$DLBRAIN" $c -X log.level=loud 2>&1 >/dev/null </dev/null) || rc=$?
    [ "$rc" = 2 ] && grep -q 'log.level: "loud"' <<<"$err" ||
        fail "'dlbrain $c -X log.level=loud' exited $rc, not 2 naming the setting: $err"
done
"$DLBRAIN" schemas -X log.level=warn -e docs | grep -q '^ID ' || fail "'dlbrain schemas -X log.level=warn -e docs' lists no catalog"
"$DLBRAIN" simulate -X log.level=warn -e docs --expect --jobs 2 | grep -qx 'jobs=2' ||
    fail "'dlbrain simulate -X log.level=warn -e docs --expect --jobs 2' does not print jobs=2"
echo "ok - every dlbrain command takes -X key=value; schemas and simulate refuse a bad setting"

size=$(wc -c <"$top/README.md")
[ "$size" -lt 15360 ] || fail "README.md is $size bytes; keep it under 15360 (15 KB) and move detail to docs/"
echo "ok - README.md is $size bytes (< 15360)"

# Markdown outside fenced code blocks.
prose() { awk '/^[ \t]*```/{f=!f; next} !f' "$1"; }
# GitHub's anchor of a heading: lower case, punctuation dropped, spaces -> '-'.
anchors() { prose "$1" | sed -n 's/^#\{1,6\} \{1,\}//p' | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'; }
nlinks=0
for doc in "$top/README.md" "$top"/docs/*.md; do
    [ -e "$doc" ] || continue
    rel=${doc#"$top"/}
    dir=$(dirname "$doc")
    while IFS= read -r target; do
        target=${target%% *} # drop a link title: (path "title")
        case $target in
        '' | http://* | https://* | mailto:*) continue ;;
        esac
        path=${target%%#*}
        anchor=
        [ "$path" = "$target" ] || anchor=${target#*#}
        if [ -z "$path" ]; then file=$doc; else file=$dir/$path; fi
        [ -e "$file" ] || fail "$rel links to '$target': $path does not exist"
        if [ -n "$anchor" ]; then
            [ -f "$file" ] && case $file in *.md) true ;; *) false ;; esac ||
                fail "$rel links to '$target': an anchor into a file that is not Markdown"
            anchors "$file" | grep -qxF "$anchor" || fail "$rel links to '$target': no heading '#$anchor' in ${file#"$top"/}"
        fi
        nlinks=$((nlinks + 1))
    done < <(prose "$doc" | grep -o '\]([^)]*)' | sed 's/^](//; s/)$//')
done
echo "ok - $nlinks relative links of README.md and docs/*.md lead to files and headings that exist"
echo "01-docs: all checks passed"
