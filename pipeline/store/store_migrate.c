/* Schema migrations (store_migrate.h): the runner, and an environment's
 * schema migrated with the embedded pipeline/store/sql/NNN_*.sql files. */
#include "store_migrate.h"
#include "store_pg.h"
#include "store_pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "embedded.h"
#include "err.h"
#include "log.h"

/* First key of pg_advisory_xact_lock(int, int) for migrations ("dlb"); the
 * second is hashtext(schema), so schemas migrate independently. */
#define MIGRATE_LOCK_CLASS 0x646c62

/* One run over one schema. */
typedef struct migrate {
    PGconn *conn;
    const char *schema;
    char *qschema; /* quoted as an identifier, to PQfreemem() */
    char qtable[256];
    int named; /* schema_migrations has a name column */
} migrate_t;

static int migration_applied(const migrate_t *mg, int version, int *applied, char *errstr,
                             size_t errstr_size)
{
    char sql[512], ver[24];
    const char *values[1] = {ver};
    PGresult *res;
    int err;

    snprintf(sql, sizeof(sql), "SELECT 1 FROM %s WHERE version = $1::integer", mg->qtable);
    snprintf(ver, sizeof(ver), "%d", version);
    if ((err = dlb_pg_conn_exec(mg->conn, sql, 1, values, NULL, 0, &res,
                                "reading schema_migrations", errstr, errstr_size)))
        return err;
    *applied = PQntuples(res) > 0;
    PQclear(res);
    return 0;
}

/* COMMIT the migration's transaction, or roll back after err. */
static int migrate_end(const migrate_t *mg, int err, char *errstr, size_t errstr_size)
{
    if (!err)
        err = dlb_pg_conn_exec(mg->conn, "COMMIT", 0, NULL, NULL, 0, NULL, "COMMIT", errstr,
                               errstr_size);
    if (err)
        dlb_pg_conn_rollback(mg->conn);
    return err;
}

/* Schema and bookkeeping table, created under the lock. Existence is checked
 * first because CREATE SCHEMA IF NOT EXISTS still needs CREATE on the database,
 * which a production role may lack once the schema exists. */
static int migrate_bootstrap(const migrate_t *mg, char *errstr, size_t errstr_size)
{
    const char *values[1] = {mg->schema};
    char sql[512];
    PGresult *res;
    int err, exists;

    if ((err = dlb_pg_conn_begin_locked(mg->conn, MIGRATE_LOCK_CLASS, mg->schema, errstr,
                                        errstr_size)))
        return err;
    if ((err = dlb_pg_conn_exec(
             mg->conn, "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1", 1, values, NULL,
             0, &res, "looking up the schema", errstr, errstr_size)))
        goto out;
    exists = PQntuples(res) > 0;
    PQclear(res);
    if (!exists) {
        snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", mg->qschema);
        if ((err = dlb_pg_conn_exec(mg->conn, sql, 0, NULL, NULL, 0, NULL, "creating the schema",
                                    errstr, errstr_size)))
            goto out;
    }
    snprintf(sql, sizeof(sql),
             "CREATE TABLE IF NOT EXISTS %s (version integer PRIMARY KEY, %sapplied_at "
             "timestamptz NOT NULL DEFAULT now())",
             mg->qtable, mg->named ? "name text NOT NULL, " : "");
    err = dlb_pg_conn_exec(mg->conn, sql, 0, NULL, NULL, 0, NULL, "creating schema_migrations",
                           errstr, errstr_size);
out:
    return migrate_end(mg, err, errstr, errstr_size);
}

static int migrate_one(const migrate_t *mg, const dlb_pg_migration_t *m, const char *what,
                       char *errstr, size_t errstr_size)
{
    char sql[512], ver[24];
    const char *values[2] = {ver, m->name};
    int err, applied = 0;

    snprintf(ver, sizeof(ver), "%d", m->version);
    if ((err = dlb_pg_conn_begin_locked(mg->conn, MIGRATE_LOCK_CLASS, mg->schema, errstr,
                                        errstr_size)))
        return err;
    if ((err = migration_applied(mg, m->version, &applied, errstr, errstr_size)) || applied)
        goto out; /* applied: another process got there first */
    if ((err = dlb_pg_conn_script(mg->conn, m->sql, what, errstr, errstr_size)))
        goto out;
    snprintf(sql, sizeof(sql), "INSERT INTO %s (version%s) VALUES ($1::integer%s)", mg->qtable,
             mg->named ? ", name" : "", mg->named ? ", $2" : "");
    if ((err = dlb_pg_conn_exec(mg->conn, sql, mg->named ? 2 : 1, values, NULL, 0, NULL, what,
                                errstr, errstr_size)))
        goto out;
    dlb_info("postgresql: schema %s: applied %s", mg->schema, what);
out:
    return migrate_end(mg, err, errstr, errstr_size);
}

int dlb_pg_migrate_run(PGconn *conn, const char *schema, const dlb_pg_migration_t *migrations,
                       size_t cnt, char *errstr, size_t errstr_size)
{
    migrate_t mg = {.conn = conn, .schema = schema, .named = cnt > 0 && migrations[0].name};
    char what[192];
    int err, prev = 0;

    for (size_t i = 0; i < cnt; i++) {
        const dlb_pg_migration_t *m = &migrations[i];
        if (m->version <= prev || !m->name != !mg.named)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                              "migration %d of schema %s: versions must increase, and every "
                              "migration of a schema have a name or none",
                              m->version, schema);
        prev = m->version;
    }
    if ((err = dlb_pg_conn_ident(conn, schema, &mg.qschema, errstr, errstr_size)))
        return err;
    snprintf(mg.qtable, sizeof(mg.qtable), "%s.schema_migrations", mg.qschema);
    if ((err = migrate_bootstrap(&mg, errstr, errstr_size)))
        goto out;
    for (size_t i = 0; i < cnt; i++) {
        const dlb_pg_migration_t *m = &migrations[i];
        int applied = 0;

        if (m->name)
            snprintf(what, sizeof(what), "migration %s", m->name);
        else
            snprintf(what, sizeof(what), "migration %d", m->version);
        /* Cheap check first, so starting many consumers takes no lock at all. */
        if ((err = migration_applied(&mg, m->version, &applied, errstr, errstr_size)) ||
            (!applied && (err = migrate_one(&mg, m, what, errstr, errstr_size))))
            goto out;
    }
out:
    PQfreemem(mg.qschema);
    return err;
}

/* "001_init.sql" -> 1; -1 when the name is not NNN_name.sql. */
static int migration_version(const char *name)
{
    char *end;
    size_t n = strlen(name);
    long v;

    if (name[0] < '0' || name[0] > '9' || n < 5 || strcmp(name + n - 4, ".sql"))
        return -1;
    v = strtol(name, &end, 10);
    return *end == '_' && v > 0 && v <= 999999 ? (int)v : -1;
}

int dlb_pg_migrate(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    dlb_pg_migration_t *ms;
    size_t n = 0;
    int err;

    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)))
        return err;
    while (dlb_embedded_migrations[n].name)
        n++;
    if (!(ms = calloc(n ? n : 1, sizeof(*ms))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const dlb_embedded_t *e = &dlb_embedded_migrations[i];
        ms[i] = (dlb_pg_migration_t){migration_version(e->name), e->name, e->data};
        if (ms[i].version < 0) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                             "migration %s: name must be NNN_name.sql", e->name);
            goto out;
        }
    }
    err = dlb_pg_migrate_run(pg->conn, pg->schema, ms, n, errstr, errstr_size);
out:
    free(ms);
    return err;
}
