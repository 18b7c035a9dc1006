/* The environment registry (env_registry.h): schema dlbrain_registry, its
 * migrations, and the transactions that create, promote and drop. */
#include "env_registry.h"
#include "env_registry_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "conf.h"
#include "err.h"
#include "store_migrate.h"
#include "store_pg.h"
#include "store_pg_conn.h"

/* First key of pg_advisory_xact_lock(int, int) that changes to the registry
 * take (the second is hashtext of its schema), so two promotions never
 * interleave. Its migrations take store_migrate.c's lock on the same schema,
 * which no environment can share: dlb_env_name_check refuses the name. */
#define REG_CHANGE_LOCK_CLASS 0x656e76

#define S       DLB_ENV_REGISTRY_SCHEMA "."
#define MS(col) "(extract(epoch FROM " col ") * 1000)::bigint"
#define ENV_COLS                                                                                   \
    "name, kind, optimizer_set, settings::text, description, " MS("created_at") ", " MS(           \
        "changed_at") ", COALESCE(" MS("dropped_at") ", 0), standby"

/* Registry migrations, applied in order, each once (schema_migrations, which
 * records versions without names). The registry is not an environment's
 * schema, so these are not in pipeline/store/sql. */
static const dlb_pg_migration_t migrations[] = {
    /* environments and their history */
    {1, NULL,
     "CREATE TABLE " S "environments ("
     " name text COLLATE \"C\" PRIMARY KEY"
     "  CHECK (name ~ '^[a-z][a-z0-9_]*$' AND length(name) <= 48),"
     " kind text NOT NULL CHECK (kind IN ('real', 'virtual')),"
     " optimizer_set text NOT NULL CHECK (optimizer_set IN ('dlrover', 'dlbrain')),"
     " settings jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),"
     " description text NOT NULL DEFAULT '',"
     " created_at timestamptz NOT NULL DEFAULT now(),"
     " changed_at timestamptz NOT NULL DEFAULT now(),"
     " dropped_at timestamptz);"
     /* At most one live real environment, whatever a client does. */
     "CREATE UNIQUE INDEX environments_one_real ON " S "environments ((true))"
     " WHERE kind = 'real' AND dropped_at IS NULL;"
     "CREATE TABLE " S "env_history ("
     " id bigserial PRIMARY KEY,"
     " at timestamptz NOT NULL DEFAULT clock_timestamp(),"
     " action text NOT NULL CHECK (action IN ('create', 'promote', 'demote', 'drop')),"
     " name text COLLATE \"C\" NOT NULL,"
     " detail jsonb NOT NULL DEFAULT '{}',"
     " by_user text NOT NULL DEFAULT current_user);"
     "CREATE INDEX env_history_name_idx ON " S "env_history (name, id);"
     /* The history is an audit trail: like configuration versions
      * (003_config.sql), it is never changed. */
     "CREATE FUNCTION " S "env_history_immutable() RETURNS trigger LANGUAGE plpgsql AS $$"
     " BEGIN RAISE EXCEPTION '% on %: the environment history is append-only',"
     " TG_OP, TG_TABLE_NAME; END $$;"
     "CREATE TRIGGER env_history_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON " S
     "env_history FOR EACH STATEMENT EXECUTE FUNCTION " S "env_history_immutable();"},
    /* Automatic failover (env_roles.h): the pre-chosen standby, at most one
     * and never the real one; the pin a manual promotion sets; the lease of
     * the one process that decides; the actions that record them. */
    {2, NULL,
     "ALTER TABLE " S "environments ADD COLUMN standby boolean NOT NULL DEFAULT false,"
     " ADD CONSTRAINT environments_standby_virtual CHECK (NOT (standby AND kind = 'real'));"
     "CREATE UNIQUE INDEX environments_one_standby ON " S "environments ((true))"
     " WHERE standby AND dropped_at IS NULL;"
     "ALTER TABLE " S "env_history DROP CONSTRAINT env_history_action_check,"
     " ADD CONSTRAINT env_history_action_check CHECK (action IN ('create', 'promote', 'demote',"
     " 'drop', 'standby', 'unstandby', 'pin', 'unpin', 'mark'));"
     "CREATE TABLE " S "failover ("
     " id integer PRIMARY KEY CHECK (id = 1),"
     " pinned boolean NOT NULL DEFAULT false,"
     " lease_holder text,"
     " lease_until timestamptz);"
     "INSERT INTO " S "failover (id) VALUES (1);"},
};

/* One parameterised statement of the registry, text in and out; *out (if
 * given) to PQclear(). Bad JSON and a broken constraint are the caller's
 * invalid input. */
int dlb_env_reg_exec(PGconn *pg, const char *sql, int nparams, const char *const *values,
                     PGresult **out, const char *what, char *errstr, size_t size)
{
    return dlb_pg_conn_exec(pg, sql, nparams, values, NULL, DLB_PG_INPUT, out, what, errstr, size);
}

/* BEGIN, then wait for other changers of the registry. */
int dlb_env_reg_begin(PGconn *pg, char *errstr, size_t size)
{
    return dlb_pg_conn_begin_locked(pg, REG_CHANGE_LOCK_CLASS, DLB_ENV_REGISTRY_SCHEMA, errstr,
                                    size);
}

int dlb_env_reg_commit(PGconn *pg, char *errstr, size_t size)
{
    int err = dlb_env_reg_exec(pg, "COMMIT", 0, NULL, NULL, "COMMIT", errstr, size);
    if (err)
        dlb_pg_conn_rollback(pg);
    return err;
}

int dlb_env_registry_connect(const char *dsn, PGconn **out, char *errstr, size_t errstr_size)
{
    dlb_pg_t *pg;
    int err;

    /* store_pg's connect: its DSN checks, timeout, notices and error classes. */
    *out = NULL;
    if ((err = dlb_pg_connect(&pg, dsn, DLB_ENV_REGISTRY_SCHEMA, errstr, errstr_size)))
        return err;
    *out = dlb_pg_detach(pg);
    return 0;
}

int dlb_env_registry_migrate(PGconn *pg, char *errstr, size_t errstr_size)
{
    return dlb_pg_migrate_run(pg, DLB_ENV_REGISTRY_SCHEMA, migrations,
                              sizeof(migrations) / sizeof(migrations[0]), errstr, errstr_size);
}

int dlb_env_name_check(const char *name, char *errstr, size_t errstr_size)
{
    static const char *const reserved[] = {DLB_ENV_REGISTRY_SCHEMA, "public", "information_schema",
                                           NULL};
    size_t n = name ? strlen(name) : 0;

    if (!n)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "environment name is empty");
    if (n > DLB_ENV_NAME_MAX)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "environment name '%.64s%s' is longer than %d characters", name,
                          n > 64 ? "..." : "", DLB_ENV_NAME_MAX);
    if (name[0] < 'a' || name[0] > 'z')
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "environment name '%s' must start with a lower-case letter a-z", name);
    for (size_t i = 1; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "environment name '%s' may hold only a-z, 0-9 and _ (it names "
                              "topics, a PostgreSQL schema and Redis keys), not '%c' at %zu",
                              name, c >= 0x20 && c < 0x7f ? c : '?', i + 1);
    }
    /* PostgreSQL refuses pg_* schema names; the others are schemas that a
     * purge (DROP SCHEMA ... CASCADE) must never touch. */
    if (!strncmp(name, "pg_", 3))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "environment name '%s': pg_ names are reserved by PostgreSQL", name);
    for (const char *const *r = reserved; *r; r++)
        if (!strcmp(name, *r))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "environment name '%s' is reserved", name);
    return 0;
}

const char *dlb_env_kind_name(dlb_env_kind_t kind)
{
    return kind == DLB_ENV_REAL ? "real" : "virtual";
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* One row of ENV_COLS into out. */
static int row_env(const PGresult *res, int row, dlb_env_t *out, char *errstr, size_t size)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", PQgetvalue(res, row, 0));
    out->kind = !strcmp(PQgetvalue(res, row, 1), "real") ? DLB_ENV_REAL : DLB_ENV_VIRTUAL;
    snprintf(out->optimizer_set, sizeof(out->optimizer_set), "%s", PQgetvalue(res, row, 2));
    out->created_ms = strtoll(PQgetvalue(res, row, 5), NULL, 10);
    out->changed_ms = strtoll(PQgetvalue(res, row, 6), NULL, 10);
    out->dropped_ms = strtoll(PQgetvalue(res, row, 7), NULL, 10);
    out->standby = !strcmp(PQgetvalue(res, row, 8), "t");
    if (!(out->settings = dup_str(PQgetvalue(res, row, 3))) ||
        !(out->description = dup_str(PQgetvalue(res, row, 4)))) {
        dlb_env_clear(out);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    return 0;
}

static int env_get(PGconn *pg, const char *name, int include_dropped, dlb_env_t *out, char *errstr,
                   size_t size)
{
    const char *values[1] = {name};
    PGresult *res;
    int err;

    memset(out, 0, sizeof(*out));
    if ((err = dlb_env_reg_exec(pg, "SELECT " ENV_COLS " FROM " S "environments WHERE name = $1", 1,
                                values, &res, "looking up an environment", errstr, size)))
        return err;
    if (PQntuples(res) == 0)
        err = dlb_seterr(errstr, size, DLB_ERR_NOTFOUND, "no environment %s", name);
    else if ((err = row_env(res, 0, out, errstr, size)))
        ;
    else if (!include_dropped && out->dropped_ms) {
        dlb_env_clear(out);
        err = dlb_seterr(errstr, size, DLB_ERR_NOTFOUND, "environment %s was dropped", name);
    }
    PQclear(res);
    return err;
}

int dlb_env_get(PGconn *pg, const char *name, dlb_env_t *out, char *errstr, size_t errstr_size)
{
    return env_get(pg, name, 0, out, errstr, errstr_size);
}

int dlb_env_get_any(PGconn *pg, const char *name, dlb_env_t *out, char *errstr, size_t errstr_size)
{
    return env_get(pg, name, 1, out, errstr, errstr_size);
}

int dlb_env_real(PGconn *pg, char *name, size_t name_size, char *errstr, size_t errstr_size)
{
    PGresult *res;
    int err;

    if ((err = dlb_env_reg_exec(
             pg,
             "SELECT name FROM " S "environments WHERE kind = 'real' AND dropped_at IS "
             "NULL",
             0, NULL, &res, "looking up the real environment", errstr, errstr_size)))
        return err;
    if (PQntuples(res) == 0)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "no environment is real");
    else
        snprintf(name, name_size, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return err;
}

int dlb_env_list_all(PGconn *pg, int include_dropped, dlb_env_t **out, size_t *cnt, char *errstr,
                     size_t errstr_size)
{
    const char *values[1] = {include_dropped ? "t" : "f"};
    dlb_env_t *envs = NULL;
    PGresult *res;
    size_t n;
    int err;

    *out = NULL;
    *cnt = 0;
    if ((err = dlb_env_reg_exec(pg,
                                "SELECT " ENV_COLS " FROM " S "environments WHERE $1::boolean OR "
                                "dropped_at IS NULL ORDER BY name",
                                1, values, &res, "listing environments", errstr, errstr_size)))
        return err;
    n = (size_t)PQntuples(res);
    if (n && !(envs = calloc(n, sizeof(*envs)))) {
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if ((err = row_env(res, (int)i, &envs[i], errstr, errstr_size))) {
            dlb_env_list_free(envs, i);
            PQclear(res);
            return err;
        }
    }
    PQclear(res);
    *out = envs;
    *cnt = n;
    return 0;
}

int dlb_env_list(PGconn *pg, dlb_env_t **out, size_t *cnt, char *errstr, size_t errstr_size)
{
    return dlb_env_list_all(pg, 0, out, cnt, errstr, errstr_size);
}

/* Inside a change transaction: the live real environment into real ("" if none). */
int dlb_env_reg_real_locked(PGconn *pg, char *real, size_t real_size, char *errstr, size_t size)
{
    int err = dlb_env_real(pg, real, real_size, errstr, size);

    if (err == DLB_ERR_NOTFOUND) {
        real[0] = '\0';
        return 0;
    }
    return err;
}

int dlb_env_reg_history_add(PGconn *pg, const char *action, const char *name,
                            const char *detail_sql, const char *const *detail_values,
                            int detail_cnt, const char *by_user, char *errstr, size_t size)
{
    /* $1 action, $2 name, $3 by_user, $4.. the detail's parameters */
    const char *values[8] = {action, name, by_user};
    char sql[1024];

    for (int i = 0; i < detail_cnt && i < 5; i++)
        values[3 + i] = detail_values[i];
    snprintf(sql, sizeof(sql),
             "INSERT INTO " S "env_history (action, name, by_user, detail) VALUES ($1, $2, "
             "COALESCE($3, current_user), %s)",
             detail_sql);
    return dlb_env_reg_exec(pg, sql, 3 + detail_cnt, values, NULL, "recording the history", errstr,
                            size);
}

int dlb_env_settings_check(const char *settings, char *errstr, size_t errstr_size)
{
    cJSON *obj, *it;
    int err = 0;

    if (!settings || !*settings)
        return 0;
    if (!(obj = cJSON_Parse(settings)) || !cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "settings are not a JSON object");
    }
    cJSON_ArrayForEach(it, obj)
    {
        /* Only strings are settings (print_conf of cmd_env.c skips the rest). */
        if (cJSON_IsString(it) && dlb_conf_refuse_secret(DLB_CONF_FROM_REGISTRY, it->string,
                                                         it->valuestring, errstr, errstr_size)) {
            err = DLB_ERR_INVALID;
            break;
        }
    }
    cJSON_Delete(obj);
    return err;
}

/* Masks the secrets among obj's strings and its objects'. @returns how many,
 * or DLB_ERR_NOMEM. A masked string is a new item: cJSON_SetValuestring of
 * Debian's cJSON 1.7.15 does not replace a longer value. */
static int mask_object(cJSON *obj)
{
    cJSON *it, *next, *masked;
    int n = 0, sub;

    for (it = obj->child; it; it = next) {
        next = it->next;
        if (cJSON_IsObject(it)) {
            if ((sub = mask_object(it)) < 0)
                return sub;
            n += sub;
        } else if (it->string && cJSON_IsString(it) &&
                   dlb_conf_secret(it->string, it->valuestring)) {
            char *buf = dlb_conf_mask_dup(it->string, it->valuestring);

            masked = buf ? cJSON_CreateString(buf) : NULL;
            free(buf);
            if (!masked)
                return DLB_ERR_NOMEM;
            /* The key moves to the new item: by pointer, not by name, as JSON
             * text may repeat a key. */
            masked->string = it->string;
            it->string = NULL;
            cJSON_ReplaceItemViaPointer(obj, it, masked);
            n++;
        }
    }
    return n;
}

int dlb_env_json_mask(const char *json, char **out)
{
    cJSON *root = cJSON_Parse(json);
    int n;

    *out = NULL;
    if (!root)
        return DLB_ERR_DECODE;
    n = cJSON_IsObject(root) ? mask_object(root) : 0;
    if (n >= 0)
        *out = n ? cJSON_PrintUnformatted(root) : dup_str(json);
    cJSON_Delete(root);
    return *out ? 0 : DLB_ERR_NOMEM;
}

int dlb_env_create(PGconn *pg, const dlb_env_t *env, const char *by_user, char *errstr,
                   size_t errstr_size)
{
    const char *kind = dlb_env_kind_name(env->kind);
    const char *settings = env->settings && *env->settings ? env->settings : "{}";
    const char *desc = env->description ? env->description : "";
    const char *values[5] = {env->name, kind, env->optimizer_set, settings, desc};
    char real[DLB_ENV_NAME_MAX + 1];
    PGresult *res = NULL;
    int err, revived = 0;

    if ((err = dlb_env_name_check(env->name, errstr, errstr_size)))
        return err;
    if (strcmp(env->optimizer_set, "dlrover") && strcmp(env->optimizer_set, "dlbrain"))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "optimizer set '%s' is not dlrover or dlbrain", env->optimizer_set);
    if ((err = dlb_env_settings_check(settings, errstr, errstr_size)))
        return err;
    if ((err = dlb_env_reg_begin(pg, errstr, errstr_size)))
        return err;
    if ((err = dlb_env_reg_exec(
             pg, "SELECT dropped_at IS NULL FROM " S "environments WHERE name = $1", 1, values,
             &res, "looking up the environment", errstr, errstr_size)))
        goto out;
    if (PQntuples(res) > 0) {
        if (!strcmp(PQgetvalue(res, 0, 0), "t")) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "environment %s exists already",
                             env->name);
            goto out;
        }
        revived = 1;
    }
    PQclear(res);
    res = NULL;
    if (env->kind == DLB_ENV_REAL) {
        if ((err = dlb_env_reg_real_locked(pg, real, sizeof(real), errstr, errstr_size)))
            goto out;
        if (real[0]) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "environment %s is real already and at most one can be: create %s "
                             "--virtual, then 'dlbrain env promote %s'",
                             real, env->name, env->name);
            goto out;
        }
    }
    if ((err = dlb_env_reg_exec(
             pg,
             "INSERT INTO " S "environments (name, kind, optimizer_set, settings, "
             "description) VALUES ($1, $2, $3, $4::jsonb, $5) ON CONFLICT (name) DO "
             "UPDATE SET kind = EXCLUDED.kind, optimizer_set = EXCLUDED.optimizer_set, "
             "settings = EXCLUDED.settings, description = EXCLUDED.description, "
             "created_at = now(), changed_at = now(), dropped_at = NULL",
             5, values, NULL, "registering the environment", errstr, errstr_size)))
        goto out;
    if ((err = dlb_env_reg_history_add(
             pg, "create", env->name,
             "jsonb_build_object('kind', $4::text, 'optimizer_set', $5::text, "
             "'settings', $6::jsonb, 'description', $7::text, 'revived', $8::boolean)",
             (const char *const[]){kind, env->optimizer_set, settings, desc, revived ? "t" : "f"},
             5, by_user, errstr, errstr_size)))
        goto out;
    return dlb_env_reg_commit(pg, errstr, errstr_size);
out:
    PQclear(res);
    dlb_pg_conn_rollback(pg);
    return err;
}

/* Inside a change transaction: name's kind and whether it is live. */
int dlb_env_reg_env_locked(PGconn *pg, const char *name, int *exists, int *live, int *real,
                           char *errstr, size_t size)
{
    const char *values[1] = {name};
    PGresult *res;
    int err;

    if ((err = dlb_env_reg_exec(pg,
                                "SELECT kind, dropped_at IS NULL FROM " S
                                "environments WHERE name = $1 "
                                "FOR UPDATE",
                                1, values, &res, "looking up the environment", errstr, size)))
        return err;
    *exists = PQntuples(res) > 0;
    *live = *exists && !strcmp(PQgetvalue(res, 0, 1), "t");
    *real = *exists && !strcmp(PQgetvalue(res, 0, 0), "real");
    PQclear(res);
    return 0;
}

int dlb_env_reg_set_kind(PGconn *pg, const char *name, const char *kind, char *errstr, size_t size)
{
    const char *values[2] = {name, kind};

    return dlb_env_reg_exec(
        pg, "UPDATE " S "environments SET kind = $2, changed_at = now() WHERE name = $1", 2, values,
        NULL, "changing the environment's kind", errstr, size);
}

int dlb_env_reg_switch(PGconn *pg, const char *name, const char *real, const char *cause,
                       const char *detail, const char *by_user, int64_t *switch_id, char *errstr,
                       size_t size)
{
    const char *values[6] = {name, real, cause, detail && *detail ? detail : "{}", by_user};
    PGresult *res;
    int err;

    /* Demote first: the unique index admits one live real at any moment. */
    if (real[0] &&
        ((err = dlb_env_reg_set_kind(pg, real, "virtual", errstr, size)) ||
         (err = dlb_env_reg_history_add(
              pg, "demote", real, "jsonb_build_object('for', $4::text, 'cause', $5::text)",
              (const char *const[]){name, cause}, 2, by_user, errstr, size))))
        return err;
    /* The standby that takes over is one no longer: the check constraint
     * keeps a real environment from being the standby. */
    if ((err = dlb_env_reg_exec(pg,
                                "UPDATE " S "environments SET kind = 'real', standby = false, "
                                "changed_at = now() WHERE name = $1",
                                1, values, NULL, "promoting the environment", errstr, size)))
        return err;
    if ((err = dlb_env_reg_exec(
             pg,
             "INSERT INTO " S "env_history (action, name, by_user, detail) VALUES ('promote', $1, "
             "COALESCE($5, current_user), jsonb_build_object('was', NULLIF($2::text, ''), "
             "'cause', $3::text) || $4::jsonb) RETURNING id",
             5, values, &res, "recording the history", errstr, size)))
        return err;
    if (switch_id)
        *switch_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

int dlb_env_drop(PGconn *pg, const char *name, int purge, const char *by_user, char *errstr,
                 size_t errstr_size)
{
    const char *values[1] = {name};
    int err, exists, live, is_real;

    if ((err = dlb_env_reg_begin(pg, errstr, errstr_size)))
        return err;
    if ((err = dlb_env_reg_env_locked(pg, name, &exists, &live, &is_real, errstr, errstr_size)))
        goto out;
    if (!exists) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "no environment %s", name);
        goto out;
    }
    if (live && is_real) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                         "environment %s is the real one: promote another environment first", name);
        goto out;
    }
    if (!live && !purge)
        return dlb_env_reg_commit(pg, errstr, errstr_size);
    if ((err = dlb_env_reg_exec(
             pg,
             "UPDATE " S "environments SET dropped_at = COALESCE(dropped_at, now()), "
             "standby = false WHERE name = $1",
             1, values, NULL, "dropping the environment", errstr, errstr_size)) ||
        (err = dlb_env_reg_history_add(pg, "drop", name, "jsonb_build_object('purge', $4::boolean)",
                                       (const char *const[]){purge ? "t" : "f"}, 1, by_user, errstr,
                                       errstr_size)))
        goto out;
    return dlb_env_reg_commit(pg, errstr, errstr_size);
out:
    dlb_pg_conn_rollback(pg);
    return err;
}

int dlb_env_history(PGconn *pg, const char *name, dlb_env_change_t **out, size_t *cnt, char *errstr,
                    size_t errstr_size)
{
    const char *values[1] = {name};
    dlb_env_change_t *ch = NULL;
    PGresult *res;
    size_t n;
    int err;

    *out = NULL;
    *cnt = 0;
    if ((err = dlb_env_reg_exec(
             pg,
             "SELECT id, " MS("at") ", action, name, detail::text, by_user FROM " S
                                    "env_history WHERE $1::text IS NULL OR name = $1 ORDER BY id",
             1, values, &res, "reading the history", errstr, errstr_size)))
        return err;
    n = (size_t)PQntuples(res);
    if (n && !(ch = calloc(n, sizeof(*ch)))) {
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        int r = (int)i;
        ch[i].id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        ch[i].at_ms = strtoll(PQgetvalue(res, r, 1), NULL, 10);
        snprintf(ch[i].action, sizeof(ch[i].action), "%s", PQgetvalue(res, r, 2));
        snprintf(ch[i].name, sizeof(ch[i].name), "%s", PQgetvalue(res, r, 3));
        snprintf(ch[i].by_user, sizeof(ch[i].by_user), "%s", PQgetvalue(res, r, 5));
        if (!(ch[i].detail = dup_str(PQgetvalue(res, r, 4)))) {
            dlb_env_history_free(ch, i);
            PQclear(res);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        }
    }
    PQclear(res);
    *out = ch;
    *cnt = n;
    return 0;
}

void dlb_env_clear(dlb_env_t *env)
{
    if (!env)
        return;
    free(env->settings);
    free(env->description);
    env->settings = NULL;
    env->description = NULL;
}

void dlb_env_list_free(dlb_env_t *envs, size_t cnt)
{
    for (size_t i = 0; envs && i < cnt; i++)
        dlb_env_clear(&envs[i]);
    free(envs);
}

void dlb_env_history_free(dlb_env_change_t *changes, size_t cnt)
{
    for (size_t i = 0; changes && i < cnt; i++)
        free(changes[i].detail);
    free(changes);
}

int dlb_env_registry_open(const char *dsn, PGconn **pg, char *errstr, size_t errstr_size)
{
    int err;

    if (*pg && PQstatus(*pg) != CONNECTION_OK) {
        PQfinish(*pg);
        *pg = NULL;
    }
    if (*pg)
        return 0;
    if ((err = dlb_env_registry_connect(dsn, pg, errstr, errstr_size)))
        return err;
    if ((err = dlb_env_registry_migrate(*pg, errstr, errstr_size))) {
        PQfinish(*pg);
        *pg = NULL;
    }
    return err;
}
