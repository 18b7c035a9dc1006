/* The store's connection (store_pg.h): connect, reconnect, the search path
 * of its schema, transactions, and the runners of its statements (plain,
 * prepared, sent without waiting) with one classification of their failures
 * and the latency metric of each. */
#include "store_pg.h"
#include "store_pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "err.h"
#include "log.h"
#include "metrics.h"

/* libpq prints notices (e.g. "relation already exists, skipping") to stderr;
 * route them to the debug log. */
static void pg_notice(void *arg, const char *msg)
{
    size_t n = strlen(msg);

    (void)arg;
    while (n > 0 && msg[n - 1] == '\n')
        n--;
    dlb_dbg("postgresql: %.*s", (int)n, msg);
}

/* Fill errstr from a failed call and classify it. A lost connection, SQLSTATE
 * class 08 (connection exception) or 57P (operator intervention: shutdown,
 * crash recovery) is transient: the same work succeeds after a reconnect. */
static int pg_conn_fail(PGconn *conn, const PGresult *res, int flags, const char *what,
                        char *errstr, size_t errstr_size)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : "";
    int err = DLB_ERR_GENERIC;
    size_t n;

    if (!msg || !*msg)
        msg = PQerrorMessage(conn);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        n--;
    if (PQstatus(conn) == CONNECTION_BAD ||
        (state && (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3)))) {
        err = DLB_ERR_TRANSIENT;
        dlb_metrics_dep(DLB_DEP_POSTGRES, 0);
    } else if ((flags & DLB_PG_INPUT) && state &&
               (!strncmp(state, "22", 2) || !strncmp(state, "23", 2) || !strcmp(state, "P0001"))) {
        err = DLB_ERR_INVALID;
    }
    return dlb_seterr(errstr, errstr_size, err, "postgresql: %s: %.*s%s%s%s", what, (int)n, msg,
                      state ? " (SQLSTATE " : "", state ? state : "", state ? ")" : "");
}

/* 0 when res is a success (rows or none), else the failure classified. */
static int pg_result(PGconn *conn, const PGresult *res, int flags, const char *what, char *errstr,
                     size_t errstr_size)
{
    ExecStatusType st = PQresultStatus(res);

    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return 0;
    return pg_conn_fail(conn, res, flags, what, errstr, errstr_size);
}

static int pg_fail(dlb_pg_t *pg, const PGresult *res, const char *what, char *errstr,
                   size_t errstr_size)
{
    return pg_conn_fail(pg->conn, res, 0, what, errstr, errstr_size);
}

/* dlbrain_postgres_call_duration_seconds, per prepared statement, "query"
 * (any other statement) and "commit"; per thread, so no lock. */
#define PG_SLOT_QUERY  DLB_PG_ST__CNT
#define PG_SLOT_COMMIT (DLB_PG_ST__CNT + 1)
static _Thread_local dlb_metric_slot_t pg_slots[DLB_PG_ST__CNT + 2];

/* A call came back with err: its latency, and whether the server answered
 * (readiness: an error reply still means PostgreSQL is there, a lost
 * connection not). label names a prepared statement's slot. */
static void pg_observe(const dlb_pg_t *pg, int slot, const char *label, double t0, int err)
{
    dlb_metric_observe_since(
        dlb_metric_slot_histogram(&pg_slots[slot], "dlbrain_postgres_call_duration_seconds",
                                  "PostgreSQL round trips by statement (prepared statement name, "
                                  "query, commit)",
                                  "statement",
                                  DLB_LV(slot == PG_SLOT_QUERY    ? "query"
                                         : slot == PG_SLOT_COMMIT ? "commit"
                                                                  : label)),
        t0);
    dlb_metrics_dep(DLB_DEP_POSTGRES,
                    PQstatus(pg->conn) == CONNECTION_OK && err != DLB_ERR_TRANSIENT);
}

/* Parameters of one call: text, except binary where lens[i] > 0 (all text
 * when lens is NULL). @returns 0, or DLB_ERR_GENERIC naming what when there
 * are more than PARAMS_MAX. */
#define PARAMS_MAX 32
static int param_formats(int nparams, const int *lens, int formats[PARAMS_MAX], const char *what,
                         char *errstr, size_t errstr_size)
{
    if (nparams > PARAMS_MAX)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "%s: too many parameters", what);
    for (int i = 0; i < nparams; i++)
        formats[i] = lens && lens[i] > 0;
    return 0;
}

int dlb_pg_conn_exec(PGconn *conn, const char *sql, int nparams, const char *const *values,
                     const int *lens, int flags, PGresult **out, const char *what, char *errstr,
                     size_t errstr_size)
{
    int formats[PARAMS_MAX] = {0};
    PGresult *res;
    int err;

    if ((err = param_formats(nparams, lens, formats, what, errstr, errstr_size)))
        return err;
    res = PQexecParams(conn, sql, nparams, NULL, values, lens, lens ? formats : NULL,
                       flags & DLB_PG_BINARY);
    err = pg_result(conn, res, flags, what, errstr, errstr_size);
    if (out && !err)
        *out = res;
    else
        PQclear(res);
    return err;
}

int dlb_pg_conn_check_tables(PGconn *conn, const char *schema, const char *tables, int ntables,
                             char *errstr, size_t errstr_size)
{
    const char *values[2] = {schema, tables};
    PGresult *res;
    int err, n;

    if ((err = dlb_pg_conn_exec(
             conn,
             "SELECT t FROM unnest($2::text[]) AS t "
             "WHERE to_regclass(quote_ident($1) || '.' || quote_ident(t)) IS NULL "
             "ORDER BY t",
             2, values, NULL, 0, &res, "checking the tables", errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    if (n == ntables)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                         "schema \"%s\" has none of the pipeline's tables: no such environment",
                         schema);
    else if (n > 0)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                         "schema \"%s\" has no table %s: not a migrated environment", schema,
                         PQgetvalue(res, 0, 0));
    PQclear(res);
    return err;
}

int dlb_pg_conn_script(PGconn *conn, const char *sql, const char *what, char *errstr,
                       size_t errstr_size)
{
    PGresult *res = PQexec(conn, sql);
    int err = pg_result(conn, res, 0, what, errstr, errstr_size);

    PQclear(res);
    return err;
}

void dlb_pg_conn_rollback(PGconn *conn)
{
    if (PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) != PQTRANS_IDLE)
        PQclear(PQexec(conn, "ROLLBACK"));
}

int dlb_pg_conn_begin_locked(PGconn *conn, int lock_class, const char *key, char *errstr,
                             size_t errstr_size)
{
    char cls[24], what[128];
    const char *values[2] = {cls, key};
    int err;

    snprintf(cls, sizeof(cls), "%d", lock_class);
    snprintf(what, sizeof(what), "waiting for the lock of %s", key);
    if ((err = dlb_pg_conn_exec(conn, "BEGIN", 0, NULL, NULL, 0, NULL, "BEGIN", errstr,
                                errstr_size)) ||
        (err = dlb_pg_conn_exec(conn, "SELECT pg_advisory_xact_lock($1::integer, hashtext($2))", 2,
                                values, NULL, 0, NULL, what, errstr, errstr_size)))
        dlb_pg_conn_rollback(conn);
    return err;
}

int dlb_pg_conn_ident(PGconn *conn, const char *name, char **out, char *errstr, size_t errstr_size)
{
    char what[128];

    if ((*out = PQescapeIdentifier(conn, name, strlen(name))))
        return 0;
    snprintf(what, sizeof(what), "quoting \"%.64s\"", name);
    return pg_conn_fail(conn, NULL, 0, what, errstr, errstr_size);
}

int dlb_pg_exec(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, int flags, PGresult **out, const char *what, char *errstr,
                size_t errstr_size)
{
    double t0 = dlb_metric_now();
    int err;

    pg->writes++; /* any text statement may write what a history reads */
    err = dlb_pg_conn_exec(pg->conn, sql, nparams, values, lens, flags, out, what, errstr,
                           errstr_size);
    pg_observe(pg, PG_SLOT_QUERY, NULL, t0, err);
    return err;
}

int dlb_pg_send(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, int flags, const char *what, char *errstr, size_t errstr_size)
{
    int formats[PARAMS_MAX] = {0};
    int err;

    if (pg->pending_what)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "%s: sent while %s is still running", what, pg->pending_what);
    if ((err = param_formats(nparams, lens, formats, what, errstr, errstr_size)))
        return err;
    pg->writes++; /* any text statement may write what a history reads */
    pg->pending_t0 = dlb_metric_now();
    if (!PQsendQueryParams(pg->conn, sql, nparams, NULL, values, lens, lens ? formats : NULL, 0))
        return pg_fail(pg, NULL, what, errstr, errstr_size);
    pg->pending_what = what;
    pg->pending_flags = flags;
    return 0;
}

int dlb_pg_send_copy(dlb_pg_t *pg, const char *sql, const char *data, size_t len, int flags,
                     const char *what, char *errstr, size_t errstr_size)
{
    PGresult *res;
    int err = 0;

    if (pg->pending_what)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "%s: sent while %s is still running", what, pg->pending_what);
    pg->writes++;
    pg->pending_t0 = dlb_metric_now();
    if (!PQsendQuery(pg->conn, sql))
        return pg_fail(pg, NULL, what, errstr, errstr_size);
    /* The statements before the COPY answer first, then the COPY asks for
     * its data; an error ends the query: drain it so the connection is free. */
    while ((res = PQgetResult(pg->conn)) && PQresultStatus(res) != PGRES_COPY_IN) {
        if (!err)
            err = pg_result(pg->conn, res, flags, what, errstr, errstr_size);
        PQclear(res);
        res = NULL; /* a lost connection leaves the loop with nothing to clear */
        if (PQstatus(pg->conn) == CONNECTION_BAD)
            break;
    }
    if (!res) {
        if (!err)
            err = pg_fail(pg, NULL, what, errstr, errstr_size);
        pg_observe(pg, PG_SLOT_QUERY, NULL, pg->pending_t0, err);
        return err;
    }
    PQclear(res);
    /* An error of the data arrives with the COPY's result, in dlb_pg_wait(). */
    while (len > 0) {
        int chunk = len > (1u << 30) ? 1 << 30 : (int)len;

        if (PQputCopyData(pg->conn, data, chunk) != 1)
            break;
        data += chunk;
        len -= (size_t)chunk;
    }
    if (len > 0 || PQputCopyEnd(pg->conn, NULL) != 1) {
        err = pg_fail(pg, NULL, what, errstr, errstr_size);
        while ((res = PQgetResult(pg->conn)) && PQstatus(pg->conn) != CONNECTION_BAD)
            PQclear(res);
        PQclear(res);
        return err;
    }
    pg->pending_what = what;
    pg->pending_flags = flags;
    return 0;
}

int dlb_pg_busy(dlb_pg_t *pg)
{
    if (!pg->pending_what || !PQconsumeInput(pg->conn))
        return 0;
    return PQisBusy(pg->conn);
}

int dlb_pg_wait(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    const char *what = pg->pending_what;
    PGresult *res;
    int err = 0;

    pg->wait_state[0] = '\0';
    if (!what)
        return 0;
    pg->pending_what = NULL;
    /* Every result until NULL, or the connection is not free for the next. */
    while ((res = PQgetResult(pg->conn))) {
        if (!err &&
            (err = pg_result(pg->conn, res, pg->pending_flags, what, errstr, errstr_size))) {
            const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            snprintf(pg->wait_state, sizeof(pg->wait_state), "%s", state ? state : "");
        }
        PQclear(res);
        if (PQstatus(pg->conn) == CONNECTION_BAD)
            break;
    }
    if (!err && PQstatus(pg->conn) == CONNECTION_BAD)
        err = pg_fail(pg, NULL, what, errstr, errstr_size);
    pg_observe(pg, PG_SLOT_QUERY, NULL, pg->pending_t0, err);
    return err;
}

const char *dlb_pg_wait_state(const dlb_pg_t *pg)
{
    return pg->wait_state;
}

/* Run a statement that returns no rows (or whose rows are ignored). */
static int pg_command(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                      const char *what, char *errstr, size_t errstr_size)
{
    return dlb_pg_exec(pg, sql, nparams, values, NULL, 0, NULL, what, errstr, errstr_size);
}

static int pg_prepare(dlb_pg_t *pg, const dlb_pg_stmt_t *st, char *errstr, size_t errstr_size)
{
    PGresult *res;
    int err = 0;

    if (pg->prepared & (1u << st->id))
        return 0;
    res = PQprepare(pg->conn, st->name, st->sql, 0, NULL);
    if (!(err = pg_result(pg->conn, res, 0, st->name, errstr, errstr_size)))
        pg->prepared |= 1u << st->id;
    PQclear(res);
    return err;
}

int dlb_pg_run(dlb_pg_t *pg, const dlb_pg_stmt_t *st, int nparams, const char *const *values,
               const int *lens, int flags, PGresult **out, char *errstr, size_t errstr_size)
{
    int formats[PARAMS_MAX] = {0};
    PGresult *res;
    double t0;
    int err;

    if ((err = param_formats(nparams, lens, formats, st->name, errstr, errstr_size)) ||
        (err = pg_prepare(pg, st, errstr, errstr_size)))
        return err;
    t0 = dlb_metric_now();
    pg->runs++;
    if (st->history)
        pg->writes++;
    res = PQexecPrepared(pg->conn, st->name, nparams, values, lens, formats, flags & DLB_PG_BINARY);
    err = pg_result(pg->conn, res, flags, st->name, errstr, errstr_size);
    pg_observe(pg, st->id, st->name, t0, err);
    if (out && !err)
        *out = res;
    else
        PQclear(res);
    return err;
}

int dlb_pg_run_all(dlb_pg_t *pg, const dlb_pg_call_t *calls, size_t n, char *errstr,
                   size_t errstr_size)
{
    int formats[PARAMS_MAX] = {0};
    size_t sent = 0, got = 0, ends = 0;
    PGresult *res;
    double t0;
    int err;

    if (!n)
        return 0;
    if ((err = dlb_pg_wait(pg, errstr, errstr_size)))
        return err;
    for (size_t i = 0; i < n; i++)
        if ((err = param_formats(calls[i].nparams, calls[i].lens, formats, calls[i].st->name,
                                 errstr, errstr_size)) ||
            (err = pg_prepare(pg, calls[i].st, errstr, errstr_size)))
            return err;
    t0 = dlb_metric_now();
    if (!PQenterPipelineMode(pg->conn))
        return pg_fail(pg, NULL, "entering pipeline mode", errstr, errstr_size);
    for (; sent < n; sent++) {
        const dlb_pg_call_t *c = &calls[sent];
        (void)param_formats(c->nparams, c->lens, formats, c->st->name, errstr, errstr_size);
        if (!PQsendQueryPrepared(pg->conn, c->st->name, c->nparams, c->values, c->lens, formats, 0))
            break;
    }
    if (sent < n || !PQpipelineSync(pg->conn)) {
        err = pg_fail(pg, NULL, calls[sent < n ? sent : n - 1].st->name, errstr, errstr_size);
        goto out;
    }
    /* Each statement's result then NULL; after the first error the others
     * answer PIPELINE_ABORTED, and the sync ends the round. */
    while (got <= n) {
        if (!(res = PQgetResult(pg->conn))) {
            if (PQstatus(pg->conn) == CONNECTION_BAD) {
                if (!err)
                    err = pg_fail(pg, NULL, calls[got < n ? got : n - 1].st->name, errstr,
                                  errstr_size);
                break;
            }
            if (++ends > n + 1) { /* never more ends than statements */
                if (!err)
                    err =
                        dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                                   "postgresql: %zu statements in one round answered %zu", n, got);
                break;
            }
            continue; /* the end of one statement's results */
        }
        if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            break;
        }
        if (got < n) {
            if (!err && PQresultStatus(res) != PGRES_PIPELINE_ABORTED)
                err = pg_result(pg->conn, res, calls[got].flags, calls[got].st->name, errstr,
                                errstr_size);
            pg->runs++;
            pg_observe(pg, calls[got].st->id, calls[got].st->name, t0, err);
        }
        got++;
        PQclear(res);
    }
out:
    if (PQstatus(pg->conn) != CONNECTION_BAD && !PQexitPipelineMode(pg->conn) && !err)
        err = pg_fail(pg, NULL, "leaving pipeline mode", errstr, errstr_size);
    return err;
}

static int pg_set_search_path(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    const char *values[1];
    char *ident;
    int err;

    if ((err = dlb_pg_conn_ident(pg->conn, pg->schema, &ident, errstr, errstr_size)))
        return err;
    values[0] = ident;
    err = pg_command(pg, "SELECT pg_catalog.set_config('search_path', $1, false)", 1, values,
                     "setting search_path", errstr, errstr_size);
    PQfreemem(ident);
    return err;
}

/* libpq quotes the part of a DSN it could not parse, which may be (or run
 * into) the password: "invalid percent-encoded token: "%zzsecret"". Keep the
 * reason, an unknown option's name and one-character parts ("="); every other
 * quoted part becomes "...". No trailing newline. */
static void dsn_error_redact(const char *msg, char *out, size_t size)
{
    int keep = strncmp(msg, "invalid connection option", 25) == 0;
    size_t n = 0;

    while (*msg && n + 6 < size) {
        const char *end = *msg == '"' ? strchr(msg + 1, '"') : NULL;

        if (end && !keep && end - msg > 2) {
            memcpy(out + n, "\"...\"", 5);
            n += 5;
            msg = end + 1;
            continue;
        }
        do
            out[n++] = *msg++;
        while (end && msg <= end && n + 6 < size);
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        n--;
    out[n] = '\0';
}

int dlb_pg_open(PGconn **out, const char *dsn, char *errstr, size_t errstr_size)
{
    /* dbname last: with expand_dbname its conninfo string may override the
     * defaults before it (e.g. its own connect_timeout). */
    const char *const keys[] = {"connect_timeout", "fallback_application_name", "dbname", NULL};
    const char *const vals[] = {"10", "dlbrain", dsn ? dsn : "", NULL};
    PQconninfoOption *opts;
    char *perr = NULL;
    PGconn *conn;
    int err;

    *out = NULL;
    /* A malformed DSN is a configuration error, not an outage to wait out. */
    if (dsn && *dsn) {
        if (!(opts = PQconninfoParse(dsn, &perr))) {
            char why[256];

            dsn_error_redact(perr ? perr : "out of memory", why, sizeof(why));
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "postgresql: bad pg.dsn: %s", why);
            PQfreemem(perr);
            return err;
        }
        PQconninfoFree(opts);
    }
    if (!(conn = PQconnectdbParams(keys, vals, 1)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if (PQstatus(conn) != CONNECTION_OK) {
        err = pg_conn_fail(conn, NULL, 0, "connect", errstr, errstr_size);
        PQfinish(conn);
        return err;
    }
    PQsetNoticeProcessor(conn, pg_notice, NULL);
    *out = conn;
    return 0;
}

int dlb_pg_connect(dlb_pg_t **out, const char *dsn, const char *schema, char *errstr,
                   size_t errstr_size)
{
    dlb_pg_t *pg;
    int err;

    *out = NULL;
    if (!schema || !*schema)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "postgresql: empty schema name");
    if (!(pg = calloc(1, sizeof(*pg))) || !(pg->schema = strdup(schema))) {
        free(pg);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    if ((err = dlb_pg_open(&pg->conn, dsn, errstr, errstr_size)) ||
        (err = pg_set_search_path(pg, errstr, errstr_size))) {
        dlb_pg_conn_free(pg);
        return err;
    }
    *out = pg;
    return 0;
}

void dlb_pg_conn_free(dlb_pg_t *pg)
{
    if (!pg)
        return;
    if (pg->conn)
        PQfinish(pg->conn);
    if (pg->cat)
        dlb_catalog_destroy(pg->cat);
    dlb_pg_hcache_free(pg->hcache);
    dlb_lru_free(pg->hkeys);
    free(pg->schema);
    free(pg);
}

int dlb_pg_reconnect(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    /* The caller gave up its transaction, if any, and what it sent. */
    pg->in_tx = 0;
    if (pg->pending_what && PQstatus(pg->conn) == CONNECTION_OK) {
        char sub[256];
        (void)dlb_pg_wait(pg, sub, sizeof(sub));
    }
    pg->pending_what = NULL;
    /* A healthy connection is kept: callers reconnect after any failed batch. */
    if (PQstatus(pg->conn) == CONNECTION_OK)
        return 0;
    PQreset(pg->conn);
    pg->prepared = 0;
    if (PQstatus(pg->conn) != CONNECTION_OK)
        return pg_fail(pg, NULL, "reconnect", errstr, errstr_size);
    return pg_set_search_path(pg, errstr, errstr_size);
}

/* Reconnect a lost connection before a call, but never inside the caller's
 * transaction: its earlier writes died with the connection, and carrying on
 * in autocommit would let a later COMMIT "succeed" without them. */
static int pg_ensure(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    if (PQstatus(pg->conn) == CONNECTION_OK)
        return 0;
    if (pg->in_tx)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                          "postgresql: connection lost inside a transaction: %s",
                          PQerrorMessage(pg->conn));
    return dlb_pg_reconnect(pg, errstr, errstr_size);
}

int dlb_pg_ensure(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    return pg_ensure(pg, errstr, errstr_size);
}

int dlb_pg_in_tx(const dlb_pg_t *pg)
{
    return pg->in_tx;
}

/* PostgreSQL keeps the plan it settles on for a prepared statement (a
 * generic one after five runs) until an ANALYZE of its tables invalidates it.
 * An environment's tables start empty, so that plan is made for a few rows
 * (sequential scans) and kept while they grow, until autovacuum first
 * analyzes them, up to autovacuum_naptime (a minute) into a run: PostgreSQL
 * spent twice the CPU until then
 * (docs/operations.md#a-new-environments-first-minute).
 * Dropping the plans each time the connection's runs double, from
 * REPLAN_FIRST, keeps every plan one made for tables at least half their
 * size, at the cost of a dozen round trips in a connection's life. */
#define REPLAN_FIRST 256

int dlb_pg_sql_begin(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    int err;

    if ((err = pg_ensure(pg, errstr, errstr_size)))
        return err;
    if (!pg->replan_at)
        pg->replan_at = REPLAN_FIRST;
    if (pg->runs >= pg->replan_at) {
        if ((err = pg_command(pg, "DISCARD PLANS", 0, NULL, "DISCARD PLANS", errstr, errstr_size)))
            return err;
        pg->replan_at *= 2;
    }
    if ((err = pg_command(pg, "BEGIN", 0, NULL, "BEGIN", errstr, errstr_size)))
        return err;
    pg->in_tx = 1;
    return 0;
}

int dlb_pg_sql_commit(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    PGresult *res;
    double t0;
    int err = 0;

    /* COMMIT of an aborted transaction answers "ROLLBACK" with success, and
     * outside a transaction only warns: both must fail here. */
    switch (PQtransactionStatus(pg->conn)) {
    case PQTRANS_INTRANS:
        break;
    case PQTRANS_INERROR:
        dlb_pg_sql_rollback(pg);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "postgresql: COMMIT: the transaction was aborted by an earlier error");
    case PQTRANS_IDLE:
        pg->in_tx = 0;
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "postgresql: COMMIT: no transaction in progress");
    default:
        return pg_fail(pg, NULL, "COMMIT", errstr, errstr_size);
    }
    t0 = dlb_metric_now();
    res = PQexec(pg->conn, "COMMIT");
    err = pg_result(pg->conn, res, 0, "COMMIT", errstr, errstr_size);
    pg_observe(pg, PG_SLOT_COMMIT, NULL, t0, err);
    if (!err && strcmp(PQcmdStatus(res), "COMMIT"))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "postgresql: COMMIT answered %s",
                         PQcmdStatus(res));
    PQclear(res);
    if (PQtransactionStatus(pg->conn) == PQTRANS_IDLE)
        pg->in_tx = 0;
    return err;
}

void dlb_pg_sql_rollback(dlb_pg_t *pg)
{
    char sub[256];

    /* A statement still running fails with the transaction: drain it. */
    (void)dlb_pg_wait(pg, sub, sizeof(sub));
    pg->in_tx = 0;
    dlb_pg_conn_rollback(pg->conn);
}

int dlb_pg_first_bytes(const PGresult *res, void **raw, size_t *raw_len, char *errstr,
                       size_t errstr_size)
{
    size_t len;

    *raw = NULL;
    *raw_len = 0;
    if (PQntuples(res) < 1)
        return 0;
    len = (size_t)PQgetlength(res, 0, 0);
    if (!(*raw = malloc(len ? len : 1)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    memcpy(*raw, PQgetvalue(res, 0, 0), len);
    *raw_len = len;
    return 0;
}
