#!/usr/bin/env bash
# Secrets are never taken from argv, never stored with an environment and never
# printed (issue 18, finding 7), through the dlbrain binary:
#  - -X with a secret (redis.password, a pg.dsn with a password, librdkafka's
#    credentials) stops a command with exit status 2 and an error naming the
#    environment variable and the .file setting to use, without echoing it;
#  - from the environment and from .file settings they work, and `settings` /
#    `-D` print them masked (a pg.dsn keeps all but its password);
#  - a .file longer than the secret can be, or not a regular file, is an error
#    naming the setting, never a cut secret;
#  - `env create --set` refuses a secret before it connects anywhere, and a
#    secret stored before that rule (written here with SQL) is masked by
#    `env show` (text and conf) and `env history`;
#  - a malformed pg.dsn's error does not quote the DSN.
. "$(dirname "$0")/helpers.sh"

secret=Xy-not-for-printing-42
# refused WHAT HINT COMMAND...: exit status 2, HINT in the error, no secret anywhere
refused() {
    local what=$1 hint=$2 rc=0
    shift 2
    "$@" >"$SYS_DIR/out" 2>"$SYS_DIR/err" || rc=$?
    [ "$rc" = 2 ] || fail "$what: exit status $rc, expected 2: $(cat "$SYS_DIR/err")"
    grep -qF -- "$hint" "$SYS_DIR/err" || fail "$what: no '$hint' in the error: $(cat "$SYS_DIR/err")"
    ! grep -q -- "$secret" "$SYS_DIR/out" "$SYS_DIR/err" || fail "$what: the secret was printed"
    ok "$what: refused ($(head -c 90 "$SYS_DIR/err")...)"
}
# printed WHAT COMMAND...: succeeds, output to $SYS_DIR/out, no secret in it
printed() {
    local what=$1
    shift
    "$@" >"$SYS_DIR/out" 2>"$SYS_DIR/err" || fail "$what: failed: $(cat "$SYS_DIR/err")"
    ! grep -q -- "$secret" "$SYS_DIR/out" "$SYS_DIR/err" || fail "$what: the secret was printed: $(grep -- "$secret" "$SYS_DIR/out" "$SYS_DIR/err")"
}
has() { grep -qxF -- "$1" "$SYS_DIR/out" || fail "no line '$1' in: $(cat "$SYS_DIR/out")"; }

# ---- -X ------------------------------------------------------------------------
refused "-X redis.password" "DLBRAIN_REDIS_PASSWORD, or redis.password.file=PATH" \
    "$DLBRAIN" settings -X "redis.password=$secret"
refused "-X sasl.password on a service (-D)" "-X sasl.password: a secret is not taken from the command line" \
    "$DLBRAIN" optimizer -X "sasl.password=$secret" -D
refused "-X ssl.key.password" "DLBRAIN_SSL_KEY_PASSWORD" \
    "$DLBRAIN" configurer -X "ssl.key.password=$secret" -D
refused "-X pg.dsn with password=" "PGPASSWORD or PGPASSFILE" \
    "$DLBRAIN" settings -X "pg.dsn=host=db user=u password=$secret"
refused "-X pg.dsn as a URI with a password" "DLBRAIN_PG_DSN or in a file named by pg.dsn.file" \
    "$DLBRAIN" settings -X "pg.dsn=postgresql://u:$secret@db/x"
printed "-X pg.dsn without a password" "$DLBRAIN" settings -X "pg.dsn=host=db user=u" \
    -X sasl.kerberos.keytab=/etc/krb5.keytab
has "pg.dsn=host=db user=u"
has "sasl.kerberos.keytab=/etc/krb5.keytab"
ok "-X pg.dsn without a password and a path to a secret are accepted"

# ---- environment and files, printed masked ------------------------------------------
printf '%s\n' "$secret" >"$SYS_DIR/redis-pw"
printf '%s' "$secret" >"$SYS_DIR/kafka-pw"
printed "secrets from the environment and files" env DLBRAIN_SASL_USERNAME="$secret" \
    DLBRAIN_SSL_KEY_PASSWORD_FILE="$SYS_DIR/kafka-pw" \
    DLBRAIN_PG_DSN="postgresql://dlbrain:$secret@db:5432/dlbrain?sslpassword=$secret" \
    "$DLBRAIN" optimizer -D -X redis.password.file="$SYS_DIR/redis-pw" \
    -X sasl.password.file="$SYS_DIR/kafka-pw"
has "redis.password=***"
has "sasl.username=***"
has "sasl.password=***"
has "ssl.key.password=***"
has "pg.dsn=postgresql://dlbrain:***@db:5432/dlbrain?sslpassword=***"
ok "-D prints every secret masked, the DSN but its passwords"
printed "pg.dsn key=value form" env DLBRAIN_PG_DSN="host=db password='$secret' dbname=d" \
    "$DLBRAIN" settings
has "pg.dsn=host=db password=*** dbname=d"
ok "settings masks a key=value DSN's password"

# ---- .file: whole regular files only ---------------------------------------------------
head -c 300 /dev/zero | tr '\0' 'p' >"$SYS_DIR/long-pw"
refused "a 300-byte redis.password.file" "redis.password.file: $SYS_DIR/long-pw holds more than 255 bytes" \
    "$DLBRAIN" settings -X redis.password.file="$SYS_DIR/long-pw"
refused "a directory as pg.dsn.file" "environment DLBRAIN_PG_DSN_FILE: pg.dsn.file: $SYS_DIR is not a regular file" \
    env DLBRAIN_PG_DSN_FILE="$SYS_DIR" "$DLBRAIN" settings
mkfifo "$SYS_DIR/fifo"
refused "a FIFO as sasl.password.file" "is not a regular file" \
    timeout 10 "$DLBRAIN" settings -X sasl.password.file="$SYS_DIR/fifo"

# ---- a malformed DSN: libpq quotes what it could not parse, which may be the password
for dsn in "postgresql://u:%zz$secret@db/d" "host=db password=a $secret" "host=db password $secret"; do
    rc=0
    DLBRAIN_PG_DSN="$dsn" "$DLBRAIN" store prune --days 8 >"$SYS_DIR/out" 2>"$SYS_DIR/err" || rc=$?
    [ "$rc" != 0 ] || fail "store prune with a malformed DSN succeeded"
    grep -q "bad pg.dsn" "$SYS_DIR/err" || fail "no 'bad pg.dsn' in: $(cat "$SYS_DIR/err")"
    ! grep -q -- "$secret" "$SYS_DIR/out" "$SYS_DIR/err" || fail "a malformed DSN's error printed the secret: $(cat "$SYS_DIR/err")"
done
ok "a malformed DSN is named bad without its text ($(cat "$SYS_DIR/err"))"

# ---- env create, show, history ------------------------------------------------------
refused "env create --set redis.password" "--set redis.password: a secret is not stored with an environment" \
    "$DLBRAIN" env create grey -s "redis.password=$secret"
refused "env create --set pg.dsn with a password" "--set pg.dsn: a password is not stored" \
    "$DLBRAIN" env create grey -s "pg.dsn=host=db password=$secret"
refused "env create --set sasl.password" "DLBRAIN_SASL_PASSWORD" \
    "$DLBRAIN" env create grey -s "sasl.password=$secret"

sys_start_pg
sys_start_kafka 1
"$DLBRAIN" env list >/dev/null || fail "env list (creates the registry)"
# What an older dlbrain could store: secrets among the settings, and in the
# create row of the history.
settings="{\"redis.password\": \"$secret\", \"pg.dsn\": \"host=db password=$secret\", \"dlbrain.scale.step.max\": \"4\"}"
sys_sql "INSERT INTO dlbrain_registry.environments (name, kind, optimizer_set, settings)
         VALUES ('old', 'virtual', 'dlbrain', '$settings')" >/dev/null
sys_sql "INSERT INTO dlbrain_registry.env_history (action, name, detail)
         VALUES ('create', 'old', jsonb_build_object('kind', 'virtual', 'settings', '$settings'::jsonb))" >/dev/null
printed "env show old" "$DLBRAIN" env show old
grep -q '^settings: .*"redis.password":"\*\*\*"' "$SYS_DIR/out" || fail "env show: $(cat "$SYS_DIR/out")"
grep -q '"pg.dsn":"host=db password=\*\*\*"' "$SYS_DIR/out" || fail "env show: $(cat "$SYS_DIR/out")"
ok "env show masks the stored secrets"
printed "env show old --format conf" "$DLBRAIN" env show old --format conf
has "dlbrain.scale.step.max=4"
grep -q '^# redis.password=\*\*\* (a secret, not printed' "$SYS_DIR/out" ||
    fail "env show --format conf: $(cat "$SYS_DIR/out")"
grep -q '^# pg.dsn=host=db password=\*\*\* (a secret' "$SYS_DIR/out" ||
    fail "env show --format conf: $(cat "$SYS_DIR/out")"
ok "env show --format conf prints the stored secrets as comments"
printed "env history old" "$DLBRAIN" env history old
grep -q '"redis.password":"\*\*\*"' "$SYS_DIR/out" || fail "env history: $(cat "$SYS_DIR/out")"
ok "env history masks the stored secrets"
echo "08-secrets: all checks passed"
