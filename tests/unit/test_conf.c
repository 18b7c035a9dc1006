/* Configuration: defaults, file, environment, -X, in that order; unknown keys
 * pass through to librdkafka; errors name file:line; secrets never printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void test_secrets(void **state)
{
    dlb_conf_t c;
    char path[256], err[256], *out = NULL;
    size_t len = 0;
    FILE *fp;
    (void)state;

    write_file("pw", "s3cret-from-file\n", path, sizeof(path));
    setenv("DLBRAIN_REDIS_PASSWORD_FILE", path, 1);
    dlb_conf_init(&c);
    assert_int_equal(dlb_conf_load_env(&c, err, sizeof(err)), 0);
    assert_string_equal(c.redis_password, "s3cret-from-file");
    assert_int_equal(dlb_conf_set_kv(&c, "sasl.password=kafka-secret", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_set_kv(&c, "pg.dsn=host=x password=pg-secret", err, sizeof(err)), 0);
    fp = open_memstream(&out, &len);
    dlb_conf_dump(&c, fp);
    fclose(fp);
    assert_null(strstr(out, "s3cret"));
    assert_null(strstr(out, "kafka-secret"));
    assert_null(strstr(out, "pg-secret"));
    assert_non_null(strstr(out, "redis.password=***"));
    assert_non_null(strstr(out, "sasl.password=***"));
    assert_non_null(strstr(out, "redis.port=6379"));
    free(out);
    unsetenv("DLBRAIN_REDIS_PASSWORD_FILE");
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
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_secrets),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
