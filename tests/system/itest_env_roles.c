/* The registry's failover roles against a real PostgreSQL
 * (env/registry/env_roles.h): what dlb_env_roles_get reads, the pin and
 * env promote --no-pin, who a mark row names and which ones count.
 *
 * Run by tests/system/54-env-roles.sh, which starts PostgreSQL and exports
 * DLBRAIN_PG_DSN. Every test starts from an empty registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "env_registry.h"
#include "env_roles.h"
#include "err.h"

static char errstr[1024];
static int notices; /* libpq's own notices: a column read out of range is one */

static void notice_count(void *arg, const char *message)
{
    (void)arg;
    fprintf(stderr, "libpq notice: %s", message);
    notices++;
}

static void sql(PGconn *pg, const char *q)
{
    PGresult *res = PQexec(pg, q);

    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", q, PQerrorMessage(pg));
    PQclear(res);
}

static void create(PGconn *pg, const char *name, dlb_env_kind_t kind)
{
    dlb_env_t env = {.kind = kind, .optimizer_set = "dlrover"};

    snprintf(env.name, sizeof(env.name), "%s", name);
    if (dlb_env_create(pg, &env, "tester", errstr, sizeof(errstr)))
        fail_msg("create %s: %s", name, errstr);
}

/* A fresh registry with blue real and green, red virtual. */
static int setup(void **state)
{
    const char *dsn = getenv("DLBRAIN_PG_DSN");
    PGconn *pg = NULL;

    if (!dsn || !*dsn)
        fail_msg("DLBRAIN_PG_DSN is not set: run tests/system/54-env-roles.sh");
    if (dlb_env_registry_connect(dsn, &pg, errstr, sizeof(errstr)))
        fail_msg("connect: %s", errstr);
    sql(pg, "SET client_min_messages = warning");
    sql(pg, "DROP SCHEMA IF EXISTS " DLB_ENV_REGISTRY_SCHEMA " CASCADE");
    if (dlb_env_registry_migrate(pg, errstr, sizeof(errstr)))
        fail_msg("migrate: %s", errstr);
    PQsetNoticeProcessor(pg, notice_count, NULL);
    notices = 0;
    create(pg, "blue", DLB_ENV_REAL);
    create(pg, "green", DLB_ENV_VIRTUAL);
    create(pg, "red", DLB_ENV_VIRTUAL);
    *state = pg;
    return 0;
}

static int teardown(void **state)
{
    PQfinish(*state);
    return 0;
}

static size_t history_cnt(PGconn *pg)
{
    dlb_env_change_t *ch = NULL;
    size_t n = 0;

    if (dlb_env_history(pg, NULL, &ch, &n, errstr, sizeof(errstr)))
        fail_msg("history: %s", errstr);
    dlb_env_history_free(ch, n);
    return n;
}

/* The newest history row's action, name, who and detail into the arguments. */
static void history_last(PGconn *pg, char *action, char *name, char *by, char *detail, size_t size)
{
    dlb_env_change_t *ch = NULL;
    size_t n = 0;

    if (dlb_env_history(pg, NULL, &ch, &n, errstr, sizeof(errstr)) || !n)
        fail_msg("history: %s", n ? errstr : "empty");
    snprintf(action, 16, "%s", ch[n - 1].action);
    snprintf(name, DLB_ENV_NAME_MAX + 1, "%s", ch[n - 1].name);
    snprintf(by, 64, "%s", ch[n - 1].by_user);
    snprintf(detail, size, "%s", ch[n - 1].detail);
    dlb_env_history_free(ch, n);
}

/* The roles name the environment the newest switch made real: the failover
 * decider writes a late switch's markers and mark row for it. */
static void test_roles_last_switch(void **state)
{
    PGconn *pg = *state;
    dlb_env_roles_t roles;
    char was[DLB_ENV_NAME_MAX + 1];
    int64_t id = 0, id2 = 0;

    assert_int_equal(dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr)), 0);
    assert_string_equal(roles.real, "blue");
    assert_int_equal(roles.last_switch_id, 0);
    assert_string_equal(roles.last_switch_env, "");
    assert_int_equal(
        dlb_env_promote(pg, "green", 0, "tester", was, sizeof(was), &id, errstr, sizeof(errstr)),
        0);
    assert_true(id > 0);
    assert_string_equal(was, "blue");
    assert_int_equal(dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr)), 0);
    assert_string_equal(roles.real, "green");
    assert_int_equal(roles.last_switch_id, id);
    assert_string_equal(roles.last_switch_env, "green");
    assert_true(roles.last_switch_ms > 0 && roles.now_ms >= roles.last_switch_ms);
    assert_int_equal(roles.pinned, 0);
    assert_int_equal(
        dlb_env_promote(pg, "red", 1, "tester", was, sizeof(was), &id2, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr)), 0);
    assert_int_equal(roles.last_switch_id, id2);
    assert_string_equal(roles.last_switch_env, "red");
    assert_int_equal(roles.pinned, 1);
    assert_int_equal(notices, 0);
}

/* --no-pin while pinned: refused, and nothing changes (no row saying
 * "pinned": false beside a registry that stays pinned). */
static void test_no_pin_while_pinned(void **state)
{
    PGconn *pg = *state;
    dlb_env_roles_t roles;
    char was[DLB_ENV_NAME_MAX + 1], action[16], name[DLB_ENV_NAME_MAX + 1], by[64], detail[512];
    int64_t id = 0;
    size_t rows;

    assert_int_equal(dlb_env_pin_set(pg, 1, "tester", errstr, sizeof(errstr)), 0);
    rows = history_cnt(pg);
    assert_int_equal(
        dlb_env_promote(pg, "green", 0, "tester", was, sizeof(was), &id, errstr, sizeof(errstr)),
        DLB_ERR_INVALID);
    assert_non_null(strstr(errstr, "pinned"));
    assert_non_null(strstr(errstr, "env unpin"));
    assert_int_equal(id, 0);
    /* promoting the real one with --no-pin would leave it pinned too */
    assert_int_equal(
        dlb_env_promote(pg, "blue", 0, "tester", was, sizeof(was), &id, errstr, sizeof(errstr)),
        DLB_ERR_INVALID);
    assert_int_equal(history_cnt(pg), rows);
    assert_int_equal(dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr)), 0);
    assert_string_equal(roles.real, "blue");
    assert_int_equal(roles.pinned, 1);

    /* with the pin: the row says pinned, and so is the registry */
    assert_int_equal(
        dlb_env_promote(pg, "green", 1, "tester", was, sizeof(was), &id, errstr, sizeof(errstr)),
        0);
    history_last(pg, action, name, by, detail, sizeof(detail));
    assert_string_equal(action, "promote");
    assert_non_null(strstr(detail, "\"pinned\": true"));
    assert_int_equal(dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr)), 0);
    assert_int_equal(roles.pinned, 1);

    /* unpinned first: --no-pin promotes, and the row says what is so */
    assert_int_equal(dlb_env_pin_set(pg, 0, "tester", errstr, sizeof(errstr)), 0);
    assert_int_equal(
        dlb_env_promote(pg, "red", 0, "tester", was, sizeof(was), &id, errstr, sizeof(errstr)), 0);
    history_last(pg, action, name, by, detail, sizeof(detail));
    assert_string_equal(action, "promote");
    assert_string_equal(name, "red");
    assert_non_null(strstr(detail, "\"pinned\": false"));
    assert_int_equal(dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr)), 0);
    assert_string_equal(roles.real, "red");
    assert_int_equal(roles.pinned, 0);
}

/* A mark row names who wrote the markers: the promoting user, or failover. */
static void test_mark_by(void **state)
{
    PGconn *pg = *state;
    char action[16], name[DLB_ENV_NAME_MAX + 1], by[64], detail[512];

    assert_int_equal(dlb_env_mark_record(pg, "green", "{\"switch\": 5, \"front\": \"dlbrain\"}",
                                         "alice", errstr, sizeof(errstr)),
                     0);
    history_last(pg, action, name, by, detail, sizeof(detail));
    assert_string_equal(action, "mark");
    assert_string_equal(name, "green");
    assert_string_equal(by, "alice");
    assert_int_equal(dlb_env_mark_record(pg, "red", "{\"switch\": 6, \"front\": \"dlbrain\"}",
                                         "failover", errstr, sizeof(errstr)),
                     0);
    history_last(pg, action, name, by, detail, sizeof(detail));
    assert_string_equal(by, "failover");
}

static void mark_row(PGconn *pg, const char *name, int64_t id, const char *front)
{
    char q[512];

    snprintf(q, sizeof(q),
             "INSERT INTO " DLB_ENV_REGISTRY_SCHEMA ".env_history (action, name, by_user, detail) "
             "VALUES ('mark', '%s', 'tester', '{\"switch\": %lld, \"front\": \"%s\"}')",
             name, (long long)id, front);
    sql(pg, q);
}

/* Which switches count as marked at a front: a mark row naming another
 * environment than its switch promoted (the "(null)" rows an older dlbrain
 * wrote, whose markers no relay took for a switch) does not, so the
 * decider marks that switch again. */
static void test_mark_last(void **state)
{
    PGconn *pg = *state;
    char was[DLB_ENV_NAME_MAX + 1];
    int64_t id = 0, marked = -1;

    assert_int_equal(
        dlb_env_promote(pg, "green", 0, "tester", was, sizeof(was), &id, errstr, sizeof(errstr)),
        0);
    assert_int_equal(dlb_env_mark_last(pg, "dlbrain", &marked, errstr, sizeof(errstr)), 0);
    assert_int_equal(marked, 0);
    mark_row(pg, "(null)", id, "dlbrain");
    assert_int_equal(dlb_env_mark_last(pg, "dlbrain", &marked, errstr, sizeof(errstr)), 0);
    assert_int_equal(marked, 0);
    mark_row(pg, "green", id, "other");
    assert_int_equal(dlb_env_mark_last(pg, "dlbrain", &marked, errstr, sizeof(errstr)), 0);
    assert_int_equal(marked, 0);
    mark_row(pg, "green", id, "dlbrain");
    assert_int_equal(dlb_env_mark_last(pg, "dlbrain", &marked, errstr, sizeof(errstr)), 0);
    assert_int_equal(marked, id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roles_last_switch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_pin_while_pinned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mark_by, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mark_last, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
