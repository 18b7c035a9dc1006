/* An environment's settings in the registry: a secret is refused before it is
 * stored (the history keeps it for good), and one stored before that rule is
 * masked wherever env show and env history print it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "env_registry.h"
#include "err.h"

static void test_check(void **state)
{
    static const struct {
        const char *settings;
        const char *msg; /* NULL: accepted */
    } cases[] = {
        {NULL, NULL},
        {"", NULL},
        {"{}", NULL},
        {"{\"dlbrain.scale.step.max\": \"4\", \"redis.host\": \"r\"}", NULL},
        {"{\"pg.dsn\": \"host=db user=u\"}", NULL},
        {"{\"redis.password\": \"\"}", NULL},
        {"{\"redis.password.file\": \"/run/secrets/redis\"}", NULL},
        {"{\"redis.password\": 7}", NULL}, /* not a string: never a setting */
        {"{\"redis.password\": \"r-secret\"}",
         "redis.password: a secret is not stored with an environment"},
        {"{\"a\": \"b\", \"pg.dsn\": \"host=db password=p-secret\"}",
         "pg.dsn: a password is not stored with an environment"},
        {"{\"pg.dsn\": \"postgresql://u:p-secret@db/x\"}", "PGPASSWORD"},
        {"{\"sasl.password\": \"k-secret\"}", "DLBRAIN_SASL_PASSWORD, or sasl.password.file"},
        {"{\"ssl.key.pem\": \"k-secret\"}", "ssl.key.pem: a secret"},
        {"[1]", "not a JSON object"},
        {"{", "not a JSON object"},
    };
    char err[512];
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc;

        err[0] = '\0';
        rc = dlb_env_settings_check(cases[i].settings, err, sizeof(err));
        if (!cases[i].msg && rc)
            fail_msg("%s refused: %s", cases[i].settings, err);
        if (cases[i].msg && (rc != DLB_ERR_INVALID || !strstr(err, cases[i].msg)))
            fail_msg("%s: got %d \"%s\", want \"%s\"", cases[i].settings, rc, err, cases[i].msg);
        assert_null(strstr(err, "-secret"));
    }
}

static void test_mask(void **state)
{
    static const struct {
        const char *json, *masked;
    } cases[] = {
        /* Nothing to mask: the text itself, as PostgreSQL printed it. */
        {"{\"a\": \"b\", \"purge\": true}", "{\"a\": \"b\", \"purge\": true}"},
        {"{}", "{}"},
        {"[\"redis.password\"]", "[\"redis.password\"]"},
        {"{\"redis.password\": \"\"}", "{\"redis.password\": \"\"}"},
        {"{\"redis.password\": \"r\", \"x\": \"y\"}", "{\"redis.password\":\"***\",\"x\":\"y\"}"},
        {"{\"x\": \"y\", \"redis.password\": \"longer than three\"}",
         "{\"x\":\"y\",\"redis.password\":\"***\"}"},
        /* JSON text may repeat a key: each one is masked. */
        {"{\"redis.password\": \"a\", \"redis.password\": \"b\"}",
         "{\"redis.password\":\"***\",\"redis.password\":\"***\"}"},
        {"{\"pg.dsn\": \"host=db password=p\"}", "{\"pg.dsn\":\"host=db password=***\"}"},
        /* A history row's detail: the settings are nested. */
        {"{\"kind\": \"virtual\", \"settings\": {\"sasl.password\": \"k\", \"pg.dsn\": "
         "\"postgres://u:p@h/d\"}, \"revived\": false}",
         "{\"kind\":\"virtual\",\"settings\":{\"sasl.password\":\"***\",\"pg.dsn\":"
         "\"postgres://u:***@h/d\"},\"revived\":false}"},
    };
    char *out;
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(dlb_env_json_mask(cases[i].json, &out), 0);
        if (strcmp(out, cases[i].masked))
            fail_msg("%s: masked as %s, want %s", cases[i].json, out, cases[i].masked);
        free(out);
    }
    assert_int_equal(dlb_env_json_mask("{", &out), DLB_ERR_DECODE);
    assert_null(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
