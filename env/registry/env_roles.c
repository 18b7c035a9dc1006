/* Standby, pin, lease and the automatic switch (env_roles.h). */
#include "env_roles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_registry_internal.h"
#include "err.h"
#include "store_pg_conn.h"

#define S       DLB_ENV_REG_S
#define MS(col) "(extract(epoch FROM " col ") * 1000)::bigint"

int dlb_env_roles_get(PGconn *pg, dlb_env_roles_t *out, char *errstr, size_t errstr_size)
{
    PGresult *res;
    int err;

    memset(out, 0, sizeof(*out));
    /* Ten columns, read by number below: keep the two in step. */
    if ((err = dlb_env_reg_exec(
             pg,
             "SELECT (SELECT name FROM " S "environments WHERE kind = 'real' AND dropped_at IS "
             "NULL), (SELECT name FROM " S "environments WHERE standby AND dropped_at IS NULL), "
             "f.pinned, COALESCE(f.lease_holder, ''), COALESCE(" MS(
                 "f.lease_until") ", 0), "
                                  "COALESCE(f.lease_until > now(), false), COALESCE(h.id, 0), "
                                  "COALESCE(" MS("h.at") ", 0), " MS(
                                      "now()") ", COALESCE(h.name, '') FROM " S
                                               "failover f LEFT JOIN (SELECT id, at, name FROM " S
                                               "env_history WHERE "
                                               "action = 'promote' ORDER BY id DESC LIMIT 1) h ON "
                                               "true",
             0, NULL, &res, "reading the failover roles", errstr, errstr_size)))
        return err;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "the registry's failover row is missing");
    }
    /* A column read past the end is NULL, which "%s" prints as "(null)": a
     * name no environment can have, written into markers and history. */
    if (PQnfields(res) != 10) {
        err = PQnfields(res);
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "reading the failover roles: %d columns, expected 10", err);
    }
    snprintf(out->real, sizeof(out->real), "%s", PQgetvalue(res, 0, 0));
    snprintf(out->standby, sizeof(out->standby), "%s", PQgetvalue(res, 0, 1));
    out->pinned = !strcmp(PQgetvalue(res, 0, 2), "t");
    snprintf(out->lease_holder, sizeof(out->lease_holder), "%s", PQgetvalue(res, 0, 3));
    out->lease_until_ms = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
    out->lease_live = !strcmp(PQgetvalue(res, 0, 5), "t");
    out->last_switch_id = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
    out->last_switch_ms = strtoll(PQgetvalue(res, 0, 7), NULL, 10);
    out->now_ms = strtoll(PQgetvalue(res, 0, 8), NULL, 10);
    snprintf(out->last_switch_env, sizeof(out->last_switch_env), "%s", PQgetvalue(res, 0, 9));
    PQclear(res);
    return 0;
}

/* Inside a change transaction: the live standby ("" if none), locked. */
static int standby_locked(PGconn *pg, char *name, size_t size, char *errstr, size_t errstr_size)
{
    PGresult *res;
    int err;

    if ((err = dlb_env_reg_exec(pg,
                                "SELECT name FROM " S "environments WHERE standby AND dropped_at "
                                "IS NULL FOR UPDATE",
                                0, NULL, &res, "looking up the standby", errstr, errstr_size)))
        return err;
    snprintf(name, size, "%s", PQntuples(res) ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
    return 0;
}

/* Lock environment name's row: DLB_ERR_NOTFOUND unless it exists and is
 * not dropped; *is_real says whether it is the real one. */
static int live_locked(PGconn *pg, const char *name, int *is_real, char *errstr, size_t errstr_size)
{
    int err, exists, live;

    if ((err = dlb_env_reg_env_locked(pg, name, &exists, &live, is_real, errstr, errstr_size)))
        return err;
    if (!live)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                          exists ? "environment %s was dropped; create it again first"
                                 : "no environment %s",
                          name);
    return 0;
}

int dlb_env_standby_set(PGconn *pg, const char *name, const char *by_user, char *was,
                        size_t was_size, char *errstr, size_t errstr_size)
{
    char cur[DLB_ENV_NAME_MAX + 1];
    int err, is_real;

    if (was && was_size)
        was[0] = '\0';
    if ((err = dlb_env_reg_begin(pg, errstr, errstr_size)))
        return err;
    if (name) {
        if ((err = live_locked(pg, name, &is_real, errstr, errstr_size)))
            goto out;
        if (is_real) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "environment %s is the real one: the standby is the virtual "
                             "environment that takes over from it",
                             name);
            goto out;
        }
    }
    if ((err = standby_locked(pg, cur, sizeof(cur), errstr, errstr_size)))
        goto out;
    if (was && was_size)
        snprintf(was, was_size, "%s", cur);
    if (name ? !strcmp(cur, name) : !cur[0]) /* nothing changes */
        return dlb_env_reg_commit(pg, errstr, errstr_size);
    /* Clear first: the unique index admits one live standby at any moment. */
    if (cur[0] &&
        (err = dlb_env_reg_exec(pg, "UPDATE " S "environments SET standby = false WHERE standby", 0,
                                NULL, NULL, "clearing the standby", errstr, errstr_size)))
        goto out;
    if (name) {
        const char *values[1] = {name};
        if ((err =
                 dlb_env_reg_exec(pg, "UPDATE " S "environments SET standby = true WHERE name = $1",
                                  1, values, NULL, "choosing the standby", errstr, errstr_size)) ||
            (err = dlb_env_reg_history_add(
                 pg, "standby", name, "jsonb_build_object('was', NULLIF($4::text, ''))",
                 (const char *const[]){cur}, 1, by_user, errstr, errstr_size)))
            goto out;
    } else if ((err = dlb_env_reg_history_add(pg, "unstandby", cur, "'{}'::jsonb", NULL, 0, by_user,
                                              errstr, errstr_size))) {
        goto out;
    }
    return dlb_env_reg_commit(pg, errstr, errstr_size);
out:
    dlb_pg_conn_rollback(pg);
    return err;
}

/* Inside a change transaction: whether the choice is pinned, locked. */
static int pinned_locked(PGconn *pg, int *pinned, char *errstr, size_t size)
{
    PGresult *res;
    int err;

    if ((err = dlb_env_reg_exec(pg, "SELECT pinned FROM " S "failover FOR UPDATE", 0, NULL, &res,
                                "reading the pin", errstr, size)))
        return err;
    *pinned = PQntuples(res) && !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    return 0;
}

int dlb_env_reg_pin_locked(PGconn *pg, int pinned, const char *real, const char *by_user,
                           char *errstr, size_t size)
{
    const char *values[1] = {pinned ? "t" : "f"};
    int err, cur;

    if ((err = pinned_locked(pg, &cur, errstr, size)))
        return err;
    if (cur == !!pinned)
        return 0;
    if ((err = dlb_env_reg_exec(pg, "UPDATE " S "failover SET pinned = $1::boolean", 1, values,
                                NULL, "setting the pin", errstr, size)))
        return err;
    return dlb_env_reg_history_add(pg, pinned ? "pin" : "unpin", real, "'{}'::jsonb", NULL, 0,
                                   by_user, errstr, size);
}

int dlb_env_pin_set(PGconn *pg, int pinned, const char *by_user, char *errstr, size_t errstr_size)
{
    char real[DLB_ENV_NAME_MAX + 1];
    int err;

    if ((err = dlb_env_reg_begin(pg, errstr, errstr_size)))
        return err;
    if ((err = dlb_env_reg_real_locked(pg, real, sizeof(real), errstr, errstr_size)) ||
        (err = dlb_env_reg_pin_locked(pg, pinned, real, by_user, errstr, errstr_size))) {
        dlb_pg_conn_rollback(pg);
        return err;
    }
    return dlb_env_reg_commit(pg, errstr, errstr_size);
}

int dlb_env_lease_take(PGconn *pg, const char *holder, int64_t lease_ms, int *held, char *errstr,
                       size_t errstr_size)
{
    char ms[32];
    const char *values[2] = {holder, ms};
    PGresult *res;
    int err;

    *held = 0;
    snprintf(ms, sizeof(ms), "%lld", (long long)lease_ms);
    /* One statement: the row lock serialises contenders, so exactly one
     * holds a live lease at any moment. */
    if ((err = dlb_env_reg_exec(pg,
                                "UPDATE " S "failover SET lease_holder = $1, lease_until = now() + "
                                "$2::bigint * interval '1 millisecond' WHERE lease_holder IS NULL "
                                "OR lease_holder = $1 OR lease_until <= now() RETURNING 1",
                                2, values, &res, "taking the failover lease", errstr, errstr_size)))
        return err;
    *held = PQntuples(res) == 1;
    PQclear(res);
    return 0;
}

int dlb_env_lease_release(PGconn *pg, const char *holder, char *errstr, size_t errstr_size)
{
    const char *values[1] = {holder};

    return dlb_env_reg_exec(pg,
                            "UPDATE " S "failover SET lease_until = now() WHERE lease_holder = $1",
                            1, values, NULL, "releasing the failover lease", errstr, errstr_size);
}

int dlb_env_failover_switch(PGconn *pg, const char *holder, const char *expect_real,
                            int64_t cooldown_ms, const char *detail, char *now_real,
                            size_t now_real_size, int64_t *switch_id, char *errstr,
                            size_t errstr_size)
{
    char real[DLB_ENV_NAME_MAX + 1], standby[DLB_ENV_NAME_MAX + 1], ms[32];
    const char *values[2] = {holder, ms};
    PGresult *res = NULL;
    int err;

    now_real[0] = '\0';
    *switch_id = 0;
    snprintf(ms, sizeof(ms), "%lld", (long long)cooldown_ms);
    if ((err = dlb_env_reg_begin(pg, errstr, errstr_size)))
        return err;
    /* Every condition again, under the registry's lock: what the decider
     * read may be stale (a manual promotion, a pin, another holder). */
    if ((err = dlb_env_reg_exec(
             pg,
             "SELECT lease_holder = $1 AND lease_until > now(), pinned, COALESCE((SELECT max(at) "
             "> now() - $2::bigint * interval '1 millisecond' FROM " S "env_history WHERE action "
             "= 'promote'), false) FROM " S "failover FOR UPDATE",
             2, values, &res, "checking the failover lease", errstr, errstr_size)))
        goto out;
    if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "t")) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                         "not switching: %s does not hold the failover lease", holder);
        goto out;
    }
    if (!strcmp(PQgetvalue(res, 0, 1), "t")) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                         "not switching: a manual promotion pinned the real environment");
        goto out;
    }
    if (!strcmp(PQgetvalue(res, 0, 2), "t")) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                         "not switching: the last switch is younger than the cool-down");
        goto out;
    }
    PQclear(res);
    res = NULL;
    if ((err = dlb_env_reg_real_locked(pg, real, sizeof(real), errstr, errstr_size)) ||
        (err = standby_locked(pg, standby, sizeof(standby), errstr, errstr_size)))
        goto out;
    if (strcmp(real, expect_real)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                         "not switching: %s is not the real environment any more (%s is)",
                         expect_real, real[0] ? real : "none");
        goto out;
    }
    if (!standby[0]) {
        err =
            dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "not switching: no standby is chosen");
        goto out;
    }
    if ((err = dlb_env_reg_switch(pg, standby, real, "failover", detail, "failover", switch_id,
                                  errstr, errstr_size)))
        goto out;
    if ((err = dlb_env_reg_commit(pg, errstr, errstr_size)))
        return err;
    snprintf(now_real, now_real_size, "%s", standby);
    return 0;
out:
    PQclear(res);
    dlb_pg_conn_rollback(pg);
    return err;
}

int dlb_env_mark_record(PGconn *pg, const char *env, const char *detail, const char *by_user,
                        char *errstr, size_t errstr_size)
{
    /* Not a change of the registry: no lock, one statement. */
    return dlb_env_reg_history_add(pg, "mark", env, "$4::jsonb", (const char *const[]){detail}, 1,
                                   by_user, errstr, errstr_size);
}

int dlb_env_mark_last(PGconn *pg, const char *front, int64_t *switch_id, char *errstr,
                      size_t errstr_size)
{
    const char *values[1] = {front};
    PGresult *res;
    int err;

    *switch_id = 0;
    /* Only a mark row naming what its switch promoted counts: one that does
     * not (markers an older dlbrain wrote as "<id>:(null)", which no relay
     * takes for a switch) leaves the switch to be marked again. */
    if ((err = dlb_env_reg_exec(
             pg,
             "SELECT COALESCE(max(p.id), 0) FROM " S "env_history m JOIN " S
             "env_history p ON p.action = 'promote' AND p.name = m.name AND p.id = "
             "(m.detail->>'switch')::bigint WHERE m.action = 'mark' AND m.detail->>'front' = $1",
             1, values, &res, "reading the switch markers", errstr, errstr_size)))
        return err;
    *switch_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

int dlb_env_promote(PGconn *pg, const char *name, int pin, const char *by_user, char *was,
                    size_t was_size, int64_t *switch_id, char *errstr, size_t errstr_size)
{
    char real[DLB_ENV_NAME_MAX + 1];
    int err, is_real;

    if (was_size)
        was[0] = '\0';
    if (switch_id)
        *switch_id = 0;
    if ((err = dlb_env_reg_begin(pg, errstr, errstr_size)))
        return err;
    if ((err = live_locked(pg, name, &is_real, errstr, errstr_size)))
        goto out;
    /* Not pinning leaves a pin someone set in place: the promote row would
     * say "pinned": false while automatic failover stays off. Re-arming it
     * is a decision of its own (unpin), not a side effect of a flag. */
    if (!pin) {
        int pinned;

        if ((err = pinned_locked(pg, &pinned, errstr, errstr_size)))
            goto out;
        if (pinned) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "the choice is pinned (automatic failover off until 'dlbrain env "
                             "unpin'), and promoting %s with --no-pin would leave the pin in "
                             "place: nothing changed; unpin first to arm automatic failover "
                             "again, or promote without --no-pin to keep it pinned",
                             name);
            goto out;
        }
    }
    if (is_real) { /* nothing to switch: promoting twice is not an error */
        if (pin && (err = dlb_env_reg_pin_locked(pg, 1, name, by_user, errstr, errstr_size)))
            goto out;
        return dlb_env_reg_commit(pg, errstr, errstr_size);
    }
    if ((err = dlb_env_reg_real_locked(pg, real, sizeof(real), errstr, errstr_size)) ||
        (err = dlb_env_reg_switch(pg, name, real, "manual",
                                  pin ? "{\"pinned\": true}" : "{\"pinned\": false}", by_user,
                                  switch_id, errstr, errstr_size)))
        goto out;
    /* The pin is in the promote row's detail; no row of its own. */
    if (pin && (err = dlb_env_reg_exec(pg, "UPDATE " S "failover SET pinned = true", 0, NULL, NULL,
                                       "pinning", errstr, errstr_size)))
        goto out;
    if ((err = dlb_env_reg_commit(pg, errstr, errstr_size)))
        return err;
    snprintf(was, was_size, "%s", real);
    return 0;
out:
    dlb_pg_conn_rollback(pg);
    return err;
}
