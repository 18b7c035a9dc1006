#!/usr/bin/env bash
# dlbrain config against a real PostgreSQL: rules of two files applied as one
# version, listed, shown as JSON and as YAML that applies back to the same
# checksum, changed, diffed and rolled back; concurrent applies get dense
# versions; and a bad file of any kind (YAML syntax, unknown key, wrong type,
# an id two files use, a missing file) is named with its line and nothing is
# applied.
. "$(dirname "$0")/helpers.sh"

sys_start_pg
export DLBRAIN_ENV=cfgtest
rules=$SYS_DIR/rules
mkdir -p "$rules"
cd "$rules"

# cfg NAME ARGS...: dlbrain config ARGS, stdout to NAME.out, stderr to
# NAME.log (checked for sanitizer reports on exit); its exit status in $rc.
cfg() {
    local name=$1
    shift
    rc=0
    "$DLBRAIN" config "$@" -q >"$SYS_DIR/$name.out" 2>"$SYS_DIR/$name.log" || rc=$?
}
out() { cat "$SYS_DIR/$1.out"; }
err() { cat "$SYS_DIR/$1.log"; }
versions() { sys_sql "SELECT count(*) || ' versions, ' || (SELECT count(*) FROM cfgtest.config_rules) || ' rules' FROM cfgtest.config_versions"; }
# The list without its CREATED(UTC) column, which is the wall clock.
list_now() {
    cfg list list
    [ "$rc" -eq 0 ] || echo "exit status $rc: $(err list)"
    out list | sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}/YYYY-MM-DD hh:mm:ss/'
}

cat >a.yaml <<'YAML'
# big batches for user1's ads jobs
id: big-batch
Priority: 10
Include:
  User: "user1"
  Group: [group2, group3]
Exclude:
  Cluster: "cluster4"
Configure:
  A: 1
  B: "C"
YAML
cat >b.yaml <<'YAML'
- id: lr
  Include: {app: ctr}
  Configure: {lr: 0.001, opt: {name: adam, beta: [0.9, 0.999]}}
- Include: {framework: tensorflow}
  Configure: {ps: 2, note: "tf: \"legacy\""}
YAML

# ---- apply two files: version 1 -------------------------------------------------
cfg apply1 apply a.yaml b.yaml -m "first rules"
expect_eq "apply exit status" 0 "$rc"
expect_eq "apply output" "applied version 1: 3 rules from 2 files (checksum 2ea4cc6bd1e5...)" "$(out apply1)"
expect_eq "rows" "1 versions, 3 rules" "$(versions)"
# The checksum is SHA-256 of the canonical JSON without file and line.
canonical='[{"id":"big-batch","priority":10,"include":{"user":["user1"],"group":["group2","group3"]},"exclude":{"cluster":["cluster4"]},"configure":{"A":1,"B":"C"}},{"id":"lr","priority":0,"include":{"app":["ctr"]},"exclude":{},"configure":{"lr":0.001,"opt":{"name":"adam","beta":[0.9,0.999]}}},{"id":"b.yaml#2","priority":0,"include":{"framework":["tensorflow"]},"exclude":{},"configure":{"ps":2,"note":"tf: \"legacy\""}}]'
expect_eq "checksum of version 1" "$(printf '%s' "$canonical" | sha256sum | cut -c1-64)" \
    "$(sys_sql "SELECT checksum FROM cfgtest.config_versions WHERE version = 1")"
expect_eq "rule rows of version 1 (position, id, file:line)" "0 big-batch a.yaml:2|1 lr b.yaml:1|2 b.yaml#2 b.yaml:4" \
    "$(sys_sql "SELECT string_agg(position || ' ' || rule_id || ' ' || file || ':' || line, '|' ORDER BY position) FROM cfgtest.config_rules WHERE version = 1")"
expect_eq "jsonb columns answer queries" "big-batch" \
    "$(sys_sql "SELECT rule_id FROM cfgtest.config_rules WHERE include @> '{\"user\": [\"user1\"]}'")"

# ---- list, show ----------------------------------------------------------------------
expect_eq "list" "VERSION  CREATED(UTC)         SOURCE  RULES  CHECKSUM      MESSAGE
1        YYYY-MM-DD hh:mm:ss  cli         3  2ea4cc6bd1e5  first rules" "$(list_now)"

cfg showjson show 1 -f json
expect_eq "show -f json exit status" 0 "$rc"
expect_eq "show -f json" '[
  {
    "id": "big-batch",
    "priority": 10,
    "include": {
      "user": [
        "user1"
      ],
      "group": [
        "group2",
        "group3"
      ]
    },
    "exclude": {
      "cluster": [
        "cluster4"
      ]
    },
    "configure": {
      "A": 1,
      "B": "C"
    },
    "file": "a.yaml",
    "line": 2
  },
  {
    "id": "lr",
    "priority": 0,
    "include": {
      "app": [
        "ctr"
      ]
    },
    "exclude": {},
    "configure": {
      "lr": 0.001,
      "opt": {
        "name": "adam",
        "beta": [
          0.9,
          0.999
        ]
      }
    },
    "file": "b.yaml",
    "line": 1
  },
  {
    "id": "b.yaml#2",
    "priority": 0,
    "include": {
      "framework": [
        "tensorflow"
      ]
    },
    "exclude": {},
    "configure": {
      "ps": 2,
      "note": "tf: \"legacy\""
    },
    "file": "b.yaml",
    "line": 4
  }
]' "$(out showjson)"

cfg showyaml show
expect_eq "show exit status" 0 "$rc"
expect_eq "show (YAML, the newest)" "# dlbrain configuration version 1, 3 rules, checksum $(printf '%s' "$canonical" | sha256sum | cut -c1-64)
--- # a.yaml:2
id: \"big-batch\"
Priority: 10
Include:
  user: [\"user1\"]
  group: [\"group2\", \"group3\"]
Exclude:
  cluster: [\"cluster4\"]
Configure:
  \"A\": 1
  \"B\": \"C\"
--- # b.yaml:1
id: \"lr\"
Priority: 0
Include:
  app: [\"ctr\"]
Configure:
  \"lr\": 0.001
  \"opt\": {\"name\": \"adam\", \"beta\": [0.9, 0.999]}
--- # b.yaml:4
id: \"b.yaml#2\"
Priority: 0
Include:
  framework: [\"tensorflow\"]
Configure:
  \"ps\": 2
  \"note\": \"tf: \\\"legacy\\\"\"" "$(out showyaml)"

# ---- the YAML shown applies back to the same checksum (in another schema) ----
cp "$SYS_DIR/showyaml.out" shown.yaml
cfg copy apply shown.yaml -e cfgcopy
expect_eq "the shown YAML applied in another environment" \
    "applied version 1: 3 rules from 1 file (checksum 2ea4cc6bd1e5...)" "$(out copy)"
expect_eq "its rules, from one file" "0 big-batch shown.yaml:3|1 lr shown.yaml:14|2 b.yaml#2 shown.yaml:22" \
    "$(sys_sql "SELECT string_agg(position || ' ' || rule_id || ' ' || file || ':' || line, '|' ORDER BY position) FROM cfgcopy.config_rules")"

# ---- a changed file: version 2, and the diff ----------------------------------------
cat >b.yaml <<'YAML'
- id: lr
  Include: {app: ctr, Name: "ctr-*"}
  Configure: {lr: 0.002, opt: {name: adam, beta: [0.9, 0.999]}}
- id: ps
  Priority: -1
  Include: {framework: tensorflow}
  Exclude: {namespace: [kube-system]}
  Configure: {ps: 4}
YAML
cfg apply2 apply a.yaml b.yaml -m "faster lr"
expect_eq "apply of changed rules" "applied version 2: 3 rules from 2 files (checksum ba0855268b94...)" "$(out apply2)"
cfg diff12 diff 1 2
expect_eq "diff 1 2 exit status" 0 "$rc"
expect_eq "diff 1 2" '- b.yaml#2
~ lr
    include.name: (none) -> ["ctr-*"]
    configure.lr: 0.001 -> 0.002
+ ps (b.yaml:4)' "$(out diff12)"
cfg diff21 diff 2 1
expect_eq "diff 2 1" '- ps
~ lr
    include.name: ["ctr-*"] -> (none)
    configure.lr: 0.002 -> 0.001
+ b.yaml#2 (b.yaml:4)' "$(out diff21)"

# ---- rollback: version 3 holds version 1's rules ----------------------------------------
cfg rollback rollback 1 -m "lr too high"
expect_eq "rollback 1" "applied version 3: rollback of version 1, 3 rules (checksum 2ea4cc6bd1e5...)" "$(out rollback)"
expect_eq "checksum of version 3 is version 1's" \
    "$(sys_sql "SELECT checksum FROM cfgtest.config_versions WHERE version = 1")" \
    "$(sys_sql "SELECT checksum FROM cfgtest.config_versions WHERE version = 3")"
cfg diff13 diff 1 3
expect_eq "diff 1 3" "no differences" "$(out diff13)"
cfg showjson3 show 3 -f json
expect_eq "rules of version 3 are version 1's, file and line included" "$(out showjson)" "$(out showjson3)"

# ---- the same rules again: a new version that says so --------------------------------------
cfg apply4 apply shown.yaml
expect_eq "re-apply of the shown YAML" "applied version 4: 3 rules from 1 file (checksum 2ea4cc6bd1e5...)
same rules as version 3" "$(out apply4)"
cfg diff34 diff 3 4
expect_eq "diff 3 4 (only files and lines differ)" "no differences" "$(out diff34)"
expect_eq "list after the rollback" "VERSION  CREATED(UTC)         SOURCE         RULES  CHECKSUM      MESSAGE
1        YYYY-MM-DD hh:mm:ss  cli                3  2ea4cc6bd1e5  first rules
2        YYYY-MM-DD hh:mm:ss  cli                3  ba0855268b94  faster lr
3        YYYY-MM-DD hh:mm:ss  rollback of 1      3  2ea4cc6bd1e5  lr too high
4        YYYY-MM-DD hh:mm:ss  cli                3  2ea4cc6bd1e5" "$(list_now)"
expect_eq "rows" "4 versions, 12 rules" "$(versions)"

# ---- versions are never changed -----------------------------------------------------------
if sys_sql "UPDATE cfgtest.config_versions SET message = 'x' WHERE version = 1" 2>"$SYS_DIR/update.err"; then
    fail "an UPDATE of config_versions was accepted"
fi
grep -qF "UPDATE on config_versions: configuration versions are never changed" "$SYS_DIR/update.err" &&
    ok "UPDATE of a version refused" || fail "UPDATE refused with: $(cat "$SYS_DIR/update.err")"
if sys_sql "DELETE FROM cfgtest.config_rules WHERE version = 1" 2>"$SYS_DIR/delete.err"; then
    fail "a DELETE from config_rules was accepted"
fi
ok "DELETE of rules refused"

# ---- bad input: a message naming file:line, exit 1, nothing applied ----------------------
# reject NAME EXPECTED-STDERR FILE...
reject() {
    local name=$1 want=$2
    shift 2
    cfg "$name" apply "$@"
    expect_eq "$name: exit status" 1 "$rc"
    expect_eq "$name: message" "$want" "$(err "$name")"
    expect_eq "$name: nothing applied" "4 versions, 12 rules" "$(versions)"
}
printf 'id: ok\n---\nInclude: {user: [a, b}\n' >syntax.yaml
reject bad-yaml "config apply: syntax.yaml:3:22: while parsing a flow sequence: did not find expected ',' or ']'; nothing applied" \
    a.yaml syntax.yaml
printf 'id: ok\nInclude: {user: a}\nColour: red\n' >key.yaml
reject unknown-key 'config apply: key.yaml:3:1: unknown key (expected id, Priority, Include, Exclude or Configure); nothing applied' \
    a.yaml key.yaml
printf -- '- id: p\n  Priority: high\n' >type.yaml
reject wrong-type "config apply: type.yaml:2:13: Priority must be an integer; nothing applied" a.yaml type.yaml
printf 'Include: {user: u}\n---\nid: big-batch\nConfigure: {A: 2}\n' >dup.yaml
reject duplicate-id 'config apply: dup.yaml:3: duplicate rule id (first at a.yaml:2); nothing applied' \
    b.yaml a.yaml dup.yaml
reject missing-file "config apply: nope.yaml: No such file or directory; nothing applied" a.yaml nope.yaml

cfg show9 show 9
expect_eq "show of no such version" "1|config show: postgresql: no configuration version 9" "$rc|$(err show9)"
cfg rollback9 rollback 9
expect_eq "rollback to no such version" "1|config rollback: postgresql: no configuration version 9" "$rc|$(err rollback9)"
cfg usage diff 1
expect_eq "diff with one version is a usage error" 2 "$rc"
cfg usage2 list -m x
expect_eq "an option the action does not take" "2|config list: no option -m" "$rc|$(err usage2 | head -n 1)"
expect_eq "rows" "4 versions, 12 rules" "$(versions)"

# ---- concurrent applies are serialised: dense versions, none lost --------------------------
pids=()
for i in 1 2 3 4 5 6; do
    "$DLBRAIN" config apply a.yaml -q -m "parallel $i" >"$SYS_DIR/par$i.out" 2>"$SYS_DIR/par$i.log" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a concurrent apply failed: $(cat "$SYS_DIR"/par*.log)"; done
expect_eq "versions after 6 concurrent applies" "5 6 7 8 9 10" \
    "$(cat "$SYS_DIR"/par*.out | sed -n 's/^applied version \([0-9]*\):.*/\1/p' | sort -n | xargs)"
expect_eq "rows" "10 versions, 18 rules" "$(versions)"

echo "04-config: all checks passed"
