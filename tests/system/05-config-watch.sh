#!/usr/bin/env bash
# A Kubernetes ConfigMap as a source of configuration rules: `dlbrain config
# watch DIR` syncs a directory laid out as the kubelet mounts a ConfigMap
# (keys are links into ..data, a link to the current generation, swapped with
# one rename) into PostgreSQL versions; and `dlbrain config match` answers a
# dry run against a version. Real PostgreSQL.
. "$(dirname "$0")/helpers.sh"

sys_start_pg
cm=$SYS_DIR/configmap
mkdir -p "$cm"
versions() { sys_sql "SELECT count(*) FROM $(sys_schema).config_versions" 2>/dev/null || echo 0; }

# generation NAME: write the files given on stdin ("file<TAB>line" rows are
# not needed: each heredoc below is one file) into ..NAME and swap ..data to it
# atomically, as the kubelet does.
gen_write() { mkdir -p "$cm/..$1" && cat >"$cm/..$1/$2"; }
gen_swap() {
    ln -sfn "..$1" "$cm/..data_tmp" && mv -T "$cm/..data_tmp" "$cm/..data"
    for f in "$cm/..$1"/*; do ln -sfn "..data/$(basename "$f")" "$cm/$(basename "$f")"; done
}

gen_write g1 base.yaml <<'EOF'
id: default
Configure:
  log: info
EOF
gen_write g1 teams.yaml <<'EOF'
id: ads-team
Include:
  Group: ads
Configure:
  lr: 0.01
EOF
gen_swap g1

# An empty directory is refused (a mount not populated yet looks the same).
mkdir -p "$SYS_DIR/empty"
if "$DLBRAIN" config watch -q --once "$SYS_DIR/empty" 2>"$SYS_DIR/empty.log"; then
    fail "an empty directory was synced"
fi
grep -q "no \*.yaml or \*.yml files; nothing synced" "$SYS_DIR/empty.log" && ok "empty directory refused" ||
    fail "empty directory: $(cat "$SYS_DIR/empty.log")"
expect_eq "versions after the empty directory" 0 "$(versions)"

"$DLBRAIN" config watch --interval-ms 200 "$cm" >/dev/null 2>"$SYS_DIR/watch.log" &
watch_pid=$!
SYS_PIDS+=($watch_pid)
wait_versions() {
    local deadline=$((SECONDS + 30))
    until [ "$(versions)" = "$1" ]; do
        [ "$SECONDS" -lt "$deadline" ] || fail "expected $1 versions, have $(versions): $(tail -n 3 "$SYS_DIR/watch.log")"
        sleep 0.2
    done
}
wait_versions 1
expect_eq "version 1's source and rules" "configmap:$cm|2|default,ads-team" \
    "$(sys_sql "SELECT v.source || '|' || v.rules || '|' || string_agg(r.rule_id, ',' ORDER BY r.position)
                FROM $(sys_schema).config_versions v JOIN $(sys_schema).config_rules r USING (version)
                WHERE v.version = 1 GROUP BY v.source, v.rules")"

# A new generation with a changed file: version 2.
gen_write g2 base.yaml <<'EOF'
id: default
Configure:
  log: warn
EOF
cp "$cm/..g1/teams.yaml" "$cm/..g2/teams.yaml"
gen_swap g2
wait_versions 2
ok "a changed ConfigMap became version 2"

# A new generation with the same rules (files rewritten): no version.
mkdir -p "$cm/..g3" && cp "$cm/..g2/"*.yaml "$cm/..g3/"
gen_swap g3
deadline=$((SECONDS + 30))
until grep -q "its rules are those of version 2 already" "$SYS_DIR/watch.log"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the rewritten generation was not looked at"
    sleep 0.2
done
expect_eq "versions after a rewrite with the same rules" 2 "$(versions)"

# An invalid generation: refused with file:line, the versions stay.
mkdir -p "$cm/..g4" && cp "$cm/..g3/"*.yaml "$cm/..g4/"
printf 'id: broken\nPriority: high\n' >"$cm/..g4/teams.yaml"
gen_swap g4
deadline=$((SECONDS + 30))
until grep -q "teams.yaml:2:11: Priority must be an integer" "$SYS_DIR/watch.log"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the invalid generation was not reported: $(tail -n 3 "$SYS_DIR/watch.log")"
    sleep 0.2
done
sleep 1
expect_eq "versions after an invalid generation" 2 "$(versions)"
expect_eq "the invalid generation reported once" 1 "$(grep -c 'Priority must be an integer' "$SYS_DIR/watch.log")"

# Dry runs against versions 1 and 2.
expect_eq "match against version 1" 'rules version 1: 2 of 2 rules in scope, highest first: ads-team, default
  log = "info"  (default)
  lr = 0.01  (ads-team)' "$("$DLBRAIN" config match -q -V 1 user=ana group=ads)"
expect_eq "match against the newest" 'rules version 2: 1 of 2 rules in scope, highest first: default
  log = "warn"  (default)' "$("$DLBRAIN" config match -q group=nlp)"
if "$DLBRAIN" config match -q colour=blue 2>/dev/null; then fail "an unknown attribute was accepted"; fi
ok "an unknown attribute is refused"
# Only regular files inside the directory are read (issue 18): a link out of
# it (absolute, or relative through ..) and a FIFO named x.yaml are skipped
# with a warning naming them, and the watch goes on with the other files. The
# old watcher read the linked file and blocked for ever in open() on the FIFO.
mkdir -p "$SYS_DIR/outside"
printf 'id: leaked-OUTSIDE-MARK\nConfigure:\n  token: OUTSIDE-MARK\n' >"$SYS_DIR/outside/secret.yaml"
ln -s "$SYS_DIR/outside/secret.yaml" "$cm/leak.yaml"
ln -s ../outside/secret.yaml "$cm/leak2.yaml"
mkfifo "$cm/x.yaml"
mkdir -p "$cm/..g5" && cp "$cm/..g3/"*.yaml "$cm/..g5/"
printf 'id: extra\nConfigure:\n  debug: true\n' >"$cm/..g5/extra.yaml"
gen_swap g5
wait_versions 3
expect_eq "version 3: the rules of the regular files inside, nothing else" "default,extra,ads-team" \
    "$(sys_sql "SELECT string_agg(rule_id, ',' ORDER BY position) FROM $(sys_schema).config_rules WHERE version = 3")"
for w in "leak.yaml: a link to a file outside the directory; skipped" \
    "leak2.yaml: a link to a file outside the directory; skipped" \
    "x.yaml: a FIFO, not a regular file; skipped"; do
    grep -qF "$w" "$SYS_DIR/watch.log" && ok "warned: $w" || fail "no warning '$w': $(tail -n 5 "$SYS_DIR/watch.log")"
done
kill -0 "$watch_pid" 2>/dev/null && ok "the watch goes on" || fail "the watcher stopped"

# An invalid file is named with line and column and what is wrong; its text
# (here a marker in the offending key) never reaches the log.
mkdir -p "$cm/..g6" && cp "$cm/..g5/"*.yaml "$cm/..g6/"
printf 'id: extra\nINSIDE-MARK-k3y: 1\n' >"$cm/..g6/extra.yaml"
gen_swap g6
deadline=$((SECONDS + 30))
until grep -qF "extra.yaml:2:1: unknown key (expected id, Priority, Include, Exclude or Configure)" "$SYS_DIR/watch.log"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the invalid file was not reported: $(tail -n 3 "$SYS_DIR/watch.log")"
    sleep 0.2
done
expect_eq "versions after the invalid file" 3 "$(versions)"
expect_eq "log lines quoting a file's text" 0 "$(grep -c 'MARK' "$SYS_DIR/watch.log")"

# A file past the size limit refuses the round with a clear error, unread.
mkdir -p "$SYS_DIR/big"
printf 'id: small\n' >"$SYS_DIR/big/a.yaml"
truncate -s 5M "$SYS_DIR/big/b.yaml"
if "$DLBRAIN" config watch -q --once "$SYS_DIR/big" 2>"$SYS_DIR/big.log"; then
    fail "a file past the size limit was synced"
fi
grep -qF "b.yaml: larger than the limit of 4194304 bytes for a rules file; not read" "$SYS_DIR/big.log" &&
    ok "a file past the size limit refused" || fail "size limit: $(cat "$SYS_DIR/big.log")"
expect_eq "versions after the large file" 3 "$(versions)"
echo "05-config-watch: all checks passed"
