/* Environment names: they become topic prefixes, a PostgreSQL schema that a
 * purge drops with CASCADE, and a Redis key prefix matched by SCAN, so the
 * check is strict and its refusals say why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "env_registry.h"
#include "err.h"

static void test_valid(void **state)
{
    static const char *const ok[] = {"blue",     "green", "dlbrain", "a",
                                     "canary_2", "x9_",   "prod",    NULL};
    char errstr[256];
    (void)state;

    for (const char *const *n = ok; *n; n++) {
        errstr[0] = '\0';
        assert_int_equal(dlb_env_name_check(*n, errstr, sizeof(errstr)), 0);
    }
}

static void test_longest(void **state)
{
    char name[DLB_ENV_NAME_MAX + 2], errstr[256];
    (void)state;

    memset(name, 'a', sizeof(name));
    name[DLB_ENV_NAME_MAX] = '\0';
    assert_int_equal(dlb_env_name_check(name, errstr, sizeof(errstr)), 0);
    name[DLB_ENV_NAME_MAX] = 'a';
    name[DLB_ENV_NAME_MAX + 1] = '\0';
    assert_int_equal(dlb_env_name_check(name, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    assert_non_null(strstr(errstr, "longer than 48"));
}

/* Each refusal names its reason. */
static void test_invalid(void **state)
{
    static const struct {
        const char *name;
        const char *why;
    } bad[] = {
        {"", "empty"},
        {"Blue", "lower-case letter"},
        {"1blue", "lower-case letter"},
        {"_blue", "lower-case letter"},
        {"blue-green", "not '-'"},
        {"blue.green", "not '.'"},
        {"bl ue", "not ' '"},
        {"blue*", "not '*'"},  /* would be a glob in SCAN MATCH blue*:* */
        {"blue:x", "not ':'"}, /* would split the Redis key prefix */
        {"blUe", "not 'U'"},
        {"caf\xc3\xa9", "not '?'"},
        {"dlbrain_registry", "reserved"},
        {"public", "reserved"},
        {"information_schema", "reserved"},
        {"pg_temp", "pg_ names are reserved"},
        {NULL, NULL},
    };
    char errstr[256];
    (void)state;

    for (int i = 0; bad[i].name; i++) {
        errstr[0] = '\0';
        assert_int_equal(dlb_env_name_check(bad[i].name, errstr, sizeof(errstr)), DLB_ERR_INVALID);
        if (!strstr(errstr, bad[i].why))
            fail_msg("'%s': expected \"%s\" in \"%s\"", bad[i].name, bad[i].why, errstr);
    }
    assert_int_equal(dlb_env_name_check(NULL, errstr, sizeof(errstr)), DLB_ERR_INVALID);
}

/* The registry's schema name is refused, whatever the caller's buffer size. */
static void test_small_errstr(void **state)
{
    char errstr[8];
    (void)state;

    assert_int_equal(dlb_env_name_check(DLB_ENV_REGISTRY_SCHEMA, errstr, sizeof(errstr)),
                     DLB_ERR_INVALID);
    assert_true(strlen(errstr) < sizeof(errstr));
}

static void test_kind_names(void **state)
{
    (void)state;
    assert_string_equal(dlb_env_kind_name(DLB_ENV_REAL), "real");
    assert_string_equal(dlb_env_kind_name(DLB_ENV_VIRTUAL), "virtual");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),      cmocka_unit_test(test_longest),
        cmocka_unit_test(test_invalid),    cmocka_unit_test(test_small_errstr),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
