/* Configuration: defaults, file, environment, -X, in that order; unknown keys
 * pass through to librdkafka; errors name file:line; secrets never printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "err.h"
#include "log.h"

static char tmpdir[] = "/tmp/dlb-conf-XXXXXX";

static void write_file(const char *name, const char *text, char *path, size_t size)
{
    FILE *fp;

    snprintf(path, size, "%s/%s", tmpdir, name);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_defaults(void **state)
{
    dlb_conf_t c;
    char topic[64], buf[64];
    (void)state;

    dlb_conf_init(&c);
    dlb_conf_finish(&c);
    assert_string_equal(c.env, "dlbrain");
    assert_string_equal(c.group_id, "");
    assert_string_equal(dlb_conf_group(&c, "optimizer", buf, sizeof(buf)), "dlbrain.optimizer");
    assert_string_equal(c.pg_schema, "dlbrain");
    assert_int_equal(c.redis_port, 6379);
    assert_int_equal(c.window_size, 60);
    assert_int_equal(c.history_hours, 168);
    /* DLRover NodeResourceLimit */
    assert_true(c.limits.cpu_min == 4.0 && c.limits.cpu_max == 32.0);
    assert_int_equal(c.limits.memory_min, 6144 * DLB_MIB);
    assert_int_equal(c.limits.memory_max, 65536 * DLB_MIB);
    assert_int_equal(c.limits.max_workers, 60);
    assert_int_equal(c.limits.max_ps, 15);
    assert_int_equal(c.log_level, DLB_LOG_INFO);
    assert_string_equal(dlb_conf_topic(&c, DLB_TOPIC_PLANS, topic, sizeof(topic)), "dlbrain.plans");
    dlb_conf_destroy(&c);
}

static void test_precedence(void **state)
{
    dlb_conf_t c;
    char path[256], err[256], buf[64];
    (void)state;

    write_file("a.conf",
               "# comment\n\n env = from-file \nredis.port=7000\nbatch.num.messages=77\n"
               "state.window.size=10\n",
               path, sizeof(path));
    setenv("DLBRAIN_REDIS_PORT", "7001", 1);
    setenv("DLBRAIN_STATE_WINDOW_SIZE", "11", 1);
    dlb_conf_init(&c);
    assert_int_equal(dlb_conf_load_file(&c, path, err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_load_env(&c, err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_set_kv(&c, "state.window.size=12", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_set_kv(&c, "bootstrap.servers=h:1", err, sizeof(err)), 0);
    dlb_conf_finish(&c);
    assert_string_equal(c.env, "from-file"); /* file over default */
    assert_int_equal(c.redis_port, 7001);    /* environment over file */
    assert_int_equal(c.window_size, 12);     /* -X over environment */
    assert_string_equal(c.brokers, "h:1");   /* alias of brokers */
    assert_string_equal(dlb_conf_group(&c, "configurer", buf, sizeof(buf)), "from-file.configurer");
    assert_string_equal(c.pg_schema, "from_file"); /* '-' is not an identifier char */
    /* Unknown keys go to librdkafka untouched. */
    assert_int_equal(c.kafka_cnt, 1);
    assert_string_equal(c.kafka[0].key, "batch.num.messages");
    assert_string_equal(c.kafka[0].value, "77");
    assert_int_equal(dlb_conf_set(&c, "batch.num.messages", "78", err, sizeof(err)), 0);
    assert_int_equal(c.kafka_cnt, 1);
    assert_string_equal(c.kafka[0].value, "78");
    unsetenv("DLBRAIN_REDIS_PORT");
    unsetenv("DLBRAIN_STATE_WINDOW_SIZE");
    dlb_conf_destroy(&c);
}

static void test_errors(void **state)
{
    static const struct {
        const char *kv;
        const char *msg;
    } bad[] = {
        {"redis.port=abc", "redis.port: \"abc\" is not an integer"},
        {"redis.port=-1", "redis.port: \"-1\" is not an integer"},
        {"limits.cpu.max=-3", "limits.cpu.max: \"-3\" is not a non-negative number"},
        {"log.level=loud", "log.level: \"loud\" is not one of"},
        {"log.format=xml", "log.format: \"xml\" is not text or json"},
        {"noequals", "expected key=value"},
        {"=v", "expected key=value"},
    };
    dlb_conf_t c;
    char path[256], err[256];
    (void)state;

    dlb_conf_init(&c);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(dlb_conf_set_kv(&c, bad[i].kv, err, sizeof(err)), DLB_ERR_CONF);
        if (!strstr(err, bad[i].msg))
            fail_msg("%s: got \"%s\", want \"%s\"", bad[i].kv, err, bad[i].msg);
    }
    write_file("bad.conf", "env=x\n\nredis.db=zero\n", path, sizeof(path));
    assert_int_equal(dlb_conf_load_file(&c, path, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "bad.conf:3: redis.db"));
    write_file("bad2.conf", "just words\n", path, sizeof(path));
    assert_int_equal(dlb_conf_load_file(&c, path, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "bad2.conf:1: expected key=value"));
    assert_int_equal(dlb_conf_load_file(&c, "/nonexistent/x.conf", err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "/nonexistent/x.conf: cannot open"));
    setenv("DLBRAIN_REDIS_DB", "x", 1);
    assert_int_equal(dlb_conf_load_env(&c, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "environment DLBRAIN_REDIS_DB: redis.db"));
    unsetenv("DLBRAIN_REDIS_DB");
    dlb_conf_destroy(&c);
}

/* Every secret of the list conf.c keeps, as a user would name it. */
static const char *const kafka_secrets[] = {
    "sasl.username",
    "sasl.password",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.password",
};
#define N_KAFKA_SECRETS (sizeof(kafka_secrets) / sizeof(kafka_secrets[0]))

static char *dump(const dlb_conf_t *c)
{
    char *out = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len);

    assert_non_null(fp);
    dlb_conf_dump(c, fp);
    fclose(fp);
    return out;
}

/* store.retention.*: off by default; a window shorter than history.hours's
 * look-back, or batches of no rows, are refused with what to change;
 * store.partition.*: a day's span and 3 ahead, values out of range refused. */
static void test_retention(void **state)
{
    dlb_conf_t c;
    char err[256];
    int64_t w = -1;
    (void)state;

    dlb_conf_init(&c);
    assert_int_equal(c.retention.days, 0);
    assert_int_equal(c.retention.interval_s, 3600);
    assert_int_equal(c.retention.batch_rows, 5000);
    assert_int_equal(dlb_conf_retention(&c, &w, err, sizeof(err)), 0);
    assert_int_equal(w, 0);
    assert_int_equal(dlb_conf_set_kv(&c, "store.retention.days=7", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_retention(&c, &w, err, sizeof(err)), 0);
    assert_int_equal(w, 7 * 86400000LL);
    assert_int_equal(dlb_conf_set_kv(&c, "store.retention.days=6", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_retention(&c, &w, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "store.retention.days=6 keeps less than history.hours=168"));
    assert_non_null(strstr(err, "keep at least 7 days"));
    assert_int_equal(w, 0);
    assert_int_equal(dlb_conf_set_kv(&c, "history.hours=144", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_retention(&c, &w, err, sizeof(err)), 0);
    assert_int_equal(w, 6 * 86400000LL);
    assert_int_equal(dlb_conf_set_kv(&c, "store.retention.batch.rows=0", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_retention(&c, &w, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "store.retention.batch.rows: 0 is not at least 1"));
    assert_int_equal(dlb_conf_set_kv(&c, "store.retention.batch.rows=100", err, sizeof(err)), 0);
    assert_int_equal(c.retention.span_hours, 24);
    assert_int_equal(c.retention.ahead, 3);
    assert_int_equal(dlb_conf_set_kv(&c, "store.partition.span.hours=0", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_non_null(
        strstr(err, "store.partition.span.hours: \"0\" is not an integer in [1, 8760]"));
    assert_int_equal(c.retention.span_hours, 24);
    assert_int_equal(dlb_conf_set_kv(&c, "store.partition.span.hours=6", err, sizeof(err)), 0);
    assert_int_equal(c.retention.span_hours, 6);
    assert_int_equal(dlb_conf_set_kv(&c, "store.partition.ahead=1001", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_int_equal(c.retention.ahead, 3);
    assert_int_equal(dlb_conf_set_kv(&c, "store.partition.ahead=0", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_retention(&c, &w, err, sizeof(err)), 0);
    dlb_conf_destroy(&c);
}

/* producer.txn.call.*: 30 s and 10 tries by default; values out of their
 * range are refused naming it, and leave the setting as it was. */
static void test_txn_call(void **state)
{
    dlb_conf_t c;
    char err[256];
    (void)state;

    dlb_conf_init(&c);
    assert_int_equal(c.txn_call_timeout_ms, 30000);
    assert_int_equal(c.txn_call_tries, 10);
    assert_int_equal(dlb_conf_set_kv(&c, "producer.txn.call.timeout.ms=100", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_set_kv(&c, "producer.txn.call.tries=1", err, sizeof(err)), 0);
    assert_int_equal(c.txn_call_timeout_ms, 100);
    assert_int_equal(c.txn_call_tries, 1);
    assert_int_equal(dlb_conf_set_kv(&c, "producer.txn.call.timeout.ms=99", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(err, "producer.txn.call.timeout.ms: \"99\" is not an integer in [100, "
                                "3600000]"));
    assert_int_equal(dlb_conf_set_kv(&c, "producer.txn.call.timeout.ms=3600001", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_int_equal(dlb_conf_set_kv(&c, "producer.txn.call.tries=0", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(err, "producer.txn.call.tries: \"0\" is not an integer in [1, 1000]"));
    assert_int_equal(dlb_conf_set_kv(&c, "producer.txn.call.tries=1001", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_int_equal(c.txn_call_timeout_ms, 100);
    assert_int_equal(c.txn_call_tries, 1);
    dlb_conf_destroy(&c);
}

static void test_secrets(void **state)
{
    dlb_conf_t c;
    char path[256], err[256], line[128], *out;
    (void)state;

    write_file("pw", "s3cret-from-file\n", path, sizeof(path));
    setenv("DLBRAIN_REDIS_PASSWORD_FILE", path, 1);
    dlb_conf_init(&c);
    assert_int_equal(dlb_conf_load_env(&c, err, sizeof(err)), 0);
    assert_string_equal(c.redis_password, "s3cret-from-file");
    for (size_t i = 0; i < N_KAFKA_SECRETS; i++)
        assert_int_equal(dlb_conf_set(&c, kafka_secrets[i], "kafka-secret", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_set(&c, "sasl.kerberos.keytab", "/etc/krb5.keytab", err, sizeof(err)),
                     0);
    assert_int_equal(dlb_conf_set(&c, "pg.dsn", "host=x password=pg-secret", err, sizeof(err)), 0);
    out = dump(&c);
    assert_null(strstr(out, "s3cret"));
    assert_null(strstr(out, "kafka-secret"));
    assert_null(strstr(out, "pg-secret"));
    assert_non_null(strstr(out, "redis.password=***\n"));
    for (size_t i = 0; i < N_KAFKA_SECRETS; i++) {
        snprintf(line, sizeof(line), "\n%s=***\n", kafka_secrets[i]);
        if (!strstr(out, line))
            fail_msg("%s is not masked: %s", kafka_secrets[i], out);
    }
    /* A DSN keeps all but its password; a path to a secret is no secret. */
    assert_non_null(strstr(out, "\npg.dsn=host=x password=***\n"));
    assert_non_null(strstr(out, "\nsasl.kerberos.keytab=/etc/krb5.keytab\n"));
    assert_non_null(strstr(out, "redis.port=6379"));
    free(out);
    assert_int_equal(dlb_conf_set(&c, "pg.dsn", "postgresql://u:pg-secret@h/db", err, sizeof(err)),
                     0);
    out = dump(&c);
    assert_null(strstr(out, "pg-secret"));
    assert_non_null(strstr(out, "\npg.dsn=postgresql://u:***@h/db\n"));
    free(out);
    unsetenv("DLBRAIN_REDIS_PASSWORD_FILE");
    dlb_conf_destroy(&c);
}

/* -X is argv, which every local user reads: a secret there is refused, naming
 * the environment variable and the file setting to use instead. */
static void test_secret_argv(void **state)
{
    static const struct {
        const char *kv;
        const char *hint; /* in the error */
    } refused[] = {
        {"redis.password=r-secret", "DLBRAIN_REDIS_PASSWORD, or redis.password.file=PATH"},
        {"pg.dsn=host=h password=pw-secret", "PGPASSWORD"},
        {"pg.dsn=host=h sslpassword=pw-secret", "DLBRAIN_PG_DSN"},
        {"pg.dsn=postgresql://u:pw-secret@h/db", "pg.dsn.file"},
        {"pg.dsn=postgres://h/db?sslmode=require&password=pw-secret", "PGPASSFILE"},
    };
    static const char *const allowed[] = {
        "redis.password=", /* empty: nothing to hide */
        "pg.dsn=host=h user=u dbname=d",
        "pg.dsn=host=h password=''",
        "pg.dsn=postgresql://u@h:5432/db?sslmode=require",
        "pg.dsn=",
        "sasl.mechanism=PLAIN",
        "sasl.kerberos.keytab=/etc/krb5.keytab", /* paths to a secret */
        "ssl.key.location=/etc/tls/key.pem",
    };
    dlb_conf_t c;
    char err[512], kv[128], want[128];
    (void)state;

    dlb_conf_init(&c);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        err[0] = '\0';
        assert_int_equal(dlb_conf_set_kv(&c, refused[i].kv, err, sizeof(err)), DLB_ERR_CONF);
        if (!strstr(err, "command line") || !strstr(err, refused[i].hint) ||
            strstr(err, "secret\""))
            fail_msg("%s: got \"%s\"", refused[i].kv, err);
        assert_null(strstr(err, "-secret"));
    }
    for (size_t i = 0; i < N_KAFKA_SECRETS; i++) {
        snprintf(kv, sizeof(kv), "%s=k-secret", kafka_secrets[i]);
        err[0] = '\0';
        assert_int_equal(dlb_conf_set_kv(&c, kv, err, sizeof(err)), DLB_ERR_CONF);
        snprintf(want, sizeof(want), "-X %s: a secret is not taken from the command line",
                 kafka_secrets[i]);
        if (!strstr(err, want) || !strstr(err, "DLBRAIN_") || !strstr(err, ".file=PATH"))
            fail_msg("%s: got \"%s\"", kv, err);
        assert_null(strstr(err, "k-secret"));
    }
    assert_string_equal(c.redis_password, "");
    assert_string_equal(c.pg_dsn, "");
    assert_int_equal(c.kafka_cnt, 0);
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        if (dlb_conf_set_kv(&c, allowed[i], err, sizeof(err)))
            fail_msg("%s refused: %s", allowed[i], err);
    /* The file settings name a path, which may be on the command line. */
    assert_int_equal(dlb_conf_set_kv(&c, "redis.password.file=/nonexistent/pw", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(err, "redis.password.file: cannot open /nonexistent/pw"));
    /* The registry's refusal gives its own reason. */
    assert_int_equal(
        dlb_conf_refuse_secret(DLB_CONF_FROM_REGISTRY, "sasl.password", "x", err, sizeof(err)),
        DLB_ERR_CONF);
    assert_non_null(strstr(err, "sasl.password: a secret is not stored with an environment"));
    assert_int_equal(
        dlb_conf_refuse_secret(DLB_CONF_FROM_REGISTRY, "sasl.mechanism", "PLAIN", err, sizeof(err)),
        0);
    dlb_conf_destroy(&c);
}

/* A libpq DSN printed with its passwords masked, in both of libpq's forms. */
static void test_secret_dsn(void **state)
{
    static const struct {
        const char *dsn, *masked;
        int secret;
    } cases[] = {
        {"host=h password=pw dbname=d", "host=h password=*** dbname=d", 1},
        {"password=pw", "password=***", 1},
        {"host=h  password = 'p w\\'x' user=u", "host=h  password = *** user=u", 1},
        {"password=a\\ b user=u", "password=*** user=u", 1},
        {"sslpassword=k host=h password=p2", "sslpassword=*** host=h password=***", 1},
        {"host=h password='' user=u", "host=h password='' user=u", 0},
        {"host=h passfile=/home/u/.pgpass", "host=h passfile=/home/u/.pgpass", 0},
        {"user=password dbname=password", "user=password dbname=password", 0},
        {"postgresql://u:pw@h:5432/d", "postgresql://u:***@h:5432/d", 1},
        {"postgres://u:pw@h1,h2:5433/d?sslmode=require&password=x2",
         "postgres://u:***@h1,h2:5433/d?sslmode=require&password=***", 1},
        {"postgresql://h/d?pass%77ord=x", "postgresql://h/d?pass%77ord=***", 1},
        {"postgresql://u@h/d", "postgresql://u@h/d", 0},
        {"postgresql://u:@h/d", "postgresql://u:@h/d", 0},
        {"postgresql://h/d@x:y", "postgresql://h/d@x:y", 0}, /* '/' first: no user information */
        /* What libpq refuses is masked from where it goes wrong. */
        {"host=h some words", "host=h ***", 0},
        {"host='h password=pw", "host=***", 0},
        {"", "", 0},
    };
    char buf[256];
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *m = dlb_conf_mask("pg.dsn", cases[i].dsn, buf, sizeof(buf));
        if (strcmp(m, cases[i].masked))
            fail_msg("%s: masked as \"%s\", want \"%s\"", cases[i].dsn, m, cases[i].masked);
        if (dlb_conf_secret("pg.dsn", cases[i].dsn) != cases[i].secret)
            fail_msg("%s: secret %d, want %d", cases[i].dsn, !cases[i].secret, cases[i].secret);
    }
    /* A short buffer cuts the copy, never writes past it, never shows a password. */
    assert_string_equal(dlb_conf_mask("pg.dsn", "host=h password=pw", buf, 10), "host=h pa");
    assert_string_equal(dlb_conf_mask("pg.dsn", "host=h password=pw", buf, 18),
                        "host=h password=*");
    assert_string_equal(dlb_conf_mask("pg.dsn", "host=h", NULL, 0), "***");
    assert_string_equal(dlb_conf_mask("redis.password", "x", buf, sizeof(buf)), "***");
    assert_string_equal(dlb_conf_mask("redis.password", "", buf, sizeof(buf)), "");
    assert_string_equal(dlb_conf_mask("redis.host", "h", buf, sizeof(buf)), "h");
    /* The allocating one is never cut, however much masking grows a DSN. */
    {
        static const char *const dup[][3] = {
            {"pg.dsn", "password=a sslpassword=b x y", "password=*** sslpassword=*** ***"},
            {"redis.password", "x", "***"},
            {"redis.password", "", ""},
            {"redis.host", "h", "h"},
        };
        for (size_t i = 0; i < sizeof(dup) / sizeof(dup[0]); i++) {
            char *m = dlb_conf_mask_dup(dup[i][0], dup[i][1]);
            assert_non_null(m);
            assert_string_equal(m, dup[i][2]);
            free(m);
        }
    }
}

/* <secret>.file and DLBRAIN_<SECRET>[_FILE]: whole regular files, or an error. */
static void test_secret_files(void **state)
{
    dlb_conf_t c;
    char path[256], err[512], big[70000];
    (void)state;

    dlb_conf_init(&c);
    /* librdkafka's secrets: from a file, from the environment, from its file. */
    write_file("sasl", "sasl-from-file\r\n", path, sizeof(path));
    assert_int_equal(dlb_conf_set_kv(&c,
                                     "sasl.username.file="
                                     "/nonexistent",
                                     err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_int_equal(dlb_conf_set(&c, "sasl.password.file", path, err, sizeof(err)), 0);
    assert_int_equal(c.kafka_cnt, 1);
    assert_string_equal(c.kafka[0].key, "sasl.password");
    assert_string_equal(c.kafka[0].value, "sasl-from-file");
    setenv("DLBRAIN_SASL_USERNAME", "user-from-env", 1);
    setenv("DLBRAIN_SSL_KEY_PEM", "", 1); /* empty: leaves librdkafka's property out */
    write_file("keypw", "key-pw", path, sizeof(path));
    setenv("DLBRAIN_SSL_KEY_PASSWORD_FILE", path, 1);
    assert_int_equal(dlb_conf_load_env(&c, err, sizeof(err)), 0);
    unsetenv("DLBRAIN_SASL_USERNAME");
    unsetenv("DLBRAIN_SSL_KEY_PEM");
    unsetenv("DLBRAIN_SSL_KEY_PASSWORD_FILE");
    assert_int_equal(c.kafka_cnt, 3);
    assert_string_equal(c.kafka[1].key, "sasl.username");
    assert_string_equal(c.kafka[1].value, "user-from-env");
    assert_string_equal(c.kafka[2].key, "ssl.key.password");
    assert_string_equal(c.kafka[2].value, "key-pw");

    /* As long as the field holds, with or without a final newline... */
    memset(big, 'a', sizeof(big));
    big[255] = '\n';
    big[256] = '\0';
    write_file("pw255", big, path, sizeof(path));
    assert_int_equal(dlb_conf_set(&c, "redis.password.file", path, err, sizeof(err)), 0);
    assert_int_equal(strlen(c.redis_password), 255);
    /* ...one byte more is an error naming key, file and limit; nothing is cut. */
    strcpy(c.redis_password, "before");
    big[255] = 'a';
    big[256] = '\n';
    big[257] = '\0';
    write_file("pw256", big, path, sizeof(path));
    assert_int_equal(dlb_conf_set(&c, "redis.password.file", path, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "redis.password.file: "));
    assert_non_null(strstr(err, "pw256 holds more than 255 bytes"));
    assert_string_equal(c.redis_password, "before");
    memset(big, 'a', sizeof(big));
    big[1024] = '\0';
    write_file("dsn1024", big, path, sizeof(path));
    assert_int_equal(dlb_conf_set(&c, "pg.dsn.file", path, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "pg.dsn.file: "));
    assert_non_null(strstr(err, "holds more than 1023 bytes"));
    big[1024] = 'a';
    big[sizeof(big) - 1] = '\0';
    write_file("pem-too-long", big, path, sizeof(path));
    assert_int_equal(dlb_conf_set(&c, "ssl.key.pem.file", path, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "ssl.key.pem.file: "));
    assert_non_null(strstr(err, "holds more than 65536 bytes"));
    big[60000] = '\0';
    write_file("pem", big, path, sizeof(path));
    assert_int_equal(dlb_conf_set(&c, "ssl.key.pem.file", path, err, sizeof(err)), 0);
    assert_int_equal(strlen(c.kafka[3].value), 60000);

    /* Only a regular file: not a directory, a FIFO (which would block) or a device. */
    assert_int_equal(dlb_conf_set(&c, "redis.password.file", tmpdir, err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(err, "is not a regular file"));
    snprintf(path, sizeof(path), "%s/fifo", tmpdir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(dlb_conf_set(&c, "pg.dsn.file", path, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "pg.dsn.file: "));
    assert_non_null(strstr(err, "fifo is not a regular file"));
    assert_int_equal(dlb_conf_set(&c, "sasl.password.file", "/dev/zero", err, sizeof(err)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(err, "/dev/zero is not a regular file"));
    write_file("nul", "", path, sizeof(path));
    {
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fwrite("ab\0cd", 1, 5, fp);
        fclose(fp);
    }
    assert_int_equal(dlb_conf_set(&c, "redis.password.file", path, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "holds a NUL byte"));
    /* An environment variable's error names it. */
    setenv("DLBRAIN_SASL_PASSWORD_FILE", tmpdir, 1);
    assert_int_equal(dlb_conf_load_env(&c, err, sizeof(err)), DLB_ERR_CONF);
    unsetenv("DLBRAIN_SASL_PASSWORD_FILE");
    assert_non_null(strstr(err, "environment DLBRAIN_SASL_PASSWORD_FILE: sasl.password.file: "));
    dlb_conf_destroy(&c);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_errors),       cmocka_unit_test(test_retention),
        cmocka_unit_test(test_txn_call),     cmocka_unit_test(test_secrets),
        cmocka_unit_test(test_secret_argv),  cmocka_unit_test(test_secret_dsn),
        cmocka_unit_test(test_secret_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
