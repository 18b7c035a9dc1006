#include "store_pg.h"
#include "store_pg_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <libpq-fe.h>

#include "codec.h"
#include "embedded.h"
#include "err.h"
#include "log.h"
#include "metrics.h"

/* Bounds of the rebuild query: a job's history of job and node events is
 * normally tens to thousands of rows; these only stop a runaway job from
 * exhausting memory (the newest events win when a bound is hit). */
#define DLB_PG_MAX_JOB_EVENTS  10000
#define DLB_PG_MAX_NODE_EVENTS 100000
#define DLB_PG_MAX_HIST_JOBS   10000
#define DLB_PG_MAX_OOM_ROWS    100000
/* First key of pg_advisory_xact_lock(int, int) for migrations ("dlb"); the
 * second is hashtext(schema), so environments migrate independently. */
#define DLB_PG_LOCK_CLASS 0x646c62

/* Statements prepared lazily on first use (tables must exist to prepare). */
enum {
    ST_JOB,
    ST_RUNTIME,
    ST_NODE,
    ST_REQUEST,
    ST_PLAN,
    ST_JOB_REPLAY,
    ST_HIST_JOBS,
    ST_HIST_SAMPLES,
    ST_HIST_OOM,
    ST_GET_PLAN,
    ST_OOM_PLAN,
    ST_OOM_PLANS,
    ST__CNT
};

struct dlb_pg {
    PGconn *conn;
    char *schema;
    unsigned prepared; /* bit per ST_* prepared on this connection */
    int in_tx;         /* between dlb_pg_begin() and commit/rollback */
    /* dlb_pg_send() sent a statement dlb_pg_wait() has not collected */
    const char *pending_what;
    double pending_t0;
    dlb_catalog_t *cat; /* loaded on first decode/encode */
};

/* A job event is "newer" than the jobs row when (event time, event id) is
 * greater: the order dlb_job_state_apply() uses. A newer event's sections win;
 * an older (late) one only fills sections never reported. */
#define NEWER "(EXCLUDED.updated_ms, EXCLUDED.last_event_id) > (j.updated_ms, j.last_event_id)"
#define MERGE(c)                                                                                   \
    c " = CASE WHEN " NEWER " THEN COALESCE(EXCLUDED." c ", j." c ") ELSE COALESCE(j." c           \
      ", EXCLUDED." c ") END, "

/* clang-format off */
static const struct {
    const char *name;
    const char *sql;
} stmts[ST__CNT] = {
    /* The jobs row changes only when the event is new: the data-modifying CTE
     * returns no row for a duplicate, so the whole statement is idempotent. */
    [ST_JOB] = {"dlb_job",
        "WITH ins AS (INSERT INTO job_events (event_id, job_uid, event_time_ms, state, "
        "exit_reason, raw) VALUES ($1, $2, $3::bigint, $4, $5, $6::bytea) "
        "ON CONFLICT (event_id) DO NOTHING RETURNING 1) "
        "INSERT INTO jobs AS j (uid, name, user_name, grp, app, cluster, namespace, scenario, "
        "framework, state, exit_reason, batch_size, epoch, max_steps, dataset_name, dataset_size, "
        "dataset_storage, model_variable_count, model_op_count, model_total_variable_size, "
        "model_recv_op_count, model_flops, model_embedding_dimension, created_ms, updated_ms, "
        "last_event_id) "
        "SELECT $2, $7, $8, $9, $10, $11, $12, $13, $14, $4, $5, $15::bigint, $16::bigint, "
        "$17::bigint, $18, $19::bigint, $20, $21::bigint, $22::bigint, $23::bigint, $24::bigint, "
        "$25::bigint, $26::bigint, $3::bigint, $3::bigint, $1 "
        "WHERE EXISTS (SELECT 1 FROM ins) "
        "ON CONFLICT (uid) DO UPDATE SET "
        MERGE("name") MERGE("user_name") MERGE("grp") MERGE("app") MERGE("cluster")
        MERGE("namespace") MERGE("scenario") MERGE("framework") MERGE("state")
        MERGE("exit_reason") MERGE("batch_size") MERGE("epoch") MERGE("max_steps")
        MERGE("dataset_name") MERGE("dataset_size") MERGE("dataset_storage")
        MERGE("model_variable_count") MERGE("model_op_count") MERGE("model_total_variable_size")
        MERGE("model_recv_op_count") MERGE("model_flops") MERGE("model_embedding_dimension")
        "created_ms = LEAST(j.created_ms, EXCLUDED.created_ms), "
        "updated_ms = CASE WHEN " NEWER " THEN EXCLUDED.updated_ms ELSE j.updated_ms END, "
        "last_event_id = CASE WHEN " NEWER " THEN EXCLUDED.last_event_id "
        "ELSE j.last_event_id END"},
    /* The sample's pods into its row's pod_* arrays (migration 005), in the
     * order sent; a repeated pod name keeps its first copy (DISTINCT ON), as
     * runtime_pods' primary key did. */
    [ST_RUNTIME] = {"dlb_runtime",
                    "INSERT INTO runtime_samples (event_id, job_uid, event_time_ms, global_step, "
                    "speed, raw, pod_names, pod_types, pod_indexes, pod_cpu_used, "
                    "pod_cpu_requested, pod_memory_used, pod_memory_requested, pod_speeds) "
                    "SELECT $1, $2, $3::bigint, $4::bigint, $5::float8, $6::bytea, "
                    "COALESCE(array_agg(p.name ORDER BY p.k), '{}'), "
                    "COALESCE(array_agg(p.type ORDER BY p.k), '{}'), "
                    "COALESCE(array_agg(p.index ORDER BY p.k), '{}'), "
                    "COALESCE(array_agg(p.cpu_used ORDER BY p.k), '{}'), "
                    "COALESCE(array_agg(p.cpu_requested ORDER BY p.k), '{}'), "
                    "COALESCE(array_agg(p.memory_used ORDER BY p.k), '{}'), "
                    "COALESCE(array_agg(p.memory_requested ORDER BY p.k), '{}'), "
                    "COALESCE(array_agg(p.speed ORDER BY p.k), '{}') "
                    "FROM (SELECT DISTINCT ON (name) * FROM ROWS FROM ("
                    "jsonb_to_recordset($7::jsonb) AS (name text, type text, index integer, "
                    "cpu_used float8, cpu_requested float8, memory_used bigint, "
                    "memory_requested bigint, speed float8)) WITH ORDINALITY "
                    "AS r(name, type, index, cpu_used, cpu_requested, memory_used, "
                    "memory_requested, speed, k) ORDER BY name, k) p "
                    "ON CONFLICT (event_id) DO NOTHING"},
    [ST_NODE] = {"dlb_node",
                 "INSERT INTO node_events (event_id, job_uid, event_time_ms, kind, pod_name, "
                 "pod_type, pod_index, node_name, phase, reason, message, memory_requested, "
                 "cpu_requested, raw) VALUES ($1, $2, $3::bigint, $4, $5, $6, $7::integer, $8, $9, "
                 "$10, $11, $12::bigint, $13::float8, $14::bytea) "
                 "ON CONFLICT (event_id) DO NOTHING"},
    [ST_REQUEST] = {"dlb_request",
                    "INSERT INTO plan_requests (event_id, job_uid, event_time_ms, stage, oom_pod, "
                    "raw) VALUES ($1, $2, $3::bigint, $4, $5, $6::bytea) "
                    "ON CONFLICT (event_id) DO NOTHING"},
    /* Conflicts on plan_id or trigger_event_id: a plan is computed once per trigger. */
    [ST_PLAN] = {"dlb_plan",
                 "INSERT INTO plans (plan_id, job_uid, trigger_event_id, stage, optimizer, "
                 "reason, event_time_ms, groups, pods, raw, actions) VALUES ($1, $2, "
                 "NULLIF($3, ''), $4, $5, $6, $7::bigint, $8::jsonb, $9::jsonb, $10::bytea, "
                 "$11::jsonb) ON CONFLICT DO NOTHING"},
    /* Every event of a job in replay order; each branch takes the newest rows
     * through its (job_uid, event_time_ms, event_id) index. */
    [ST_JOB_REPLAY] = {"dlb_job_replay",
                       "SELECT raw FROM ("
                       "(SELECT event_time_ms, event_id, raw FROM job_events WHERE job_uid = $1 "
                       "ORDER BY event_time_ms DESC, event_id DESC LIMIT $3::integer) "
                       "UNION ALL "
                       "(SELECT event_time_ms, event_id, raw FROM runtime_samples "
                       "WHERE job_uid = $1 ORDER BY event_time_ms DESC, event_id DESC "
                       "LIMIT $2::integer) "
                       "UNION ALL "
                       "(SELECT event_time_ms, event_id, raw FROM node_events WHERE job_uid = $1 "
                       "ORDER BY event_time_ms DESC, event_id DESC LIMIT $4::integer)"
                       ") e ORDER BY event_time_ms, event_id"},
    /* Everything "as of" $3, the request time, so that answering the same
     * request later (a redelivery, a replay) sees the same history: state and
     * exit reason from the newest job event before it, samples and OOMs before it. */
    [ST_HIST_JOBS] = {"dlb_hist_jobs",
                      "SELECT j.uid, j.created_ms, "
                      "COALESCE((SELECT e.state FROM job_events e WHERE e.job_uid = j.uid "
                      "AND e.state IS NOT NULL AND e.event_time_ms < $3::bigint "
                      "ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1), ''), "
                      "COALESCE((SELECT e.exit_reason FROM job_events e WHERE e.job_uid = j.uid "
                      "AND e.exit_reason IS NOT NULL AND e.event_time_ms < $3::bigint "
                      "ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1), '') "
                      "FROM jobs j WHERE j.scenario = $1 AND j.created_ms >= $2::bigint "
                      "AND j.created_ms < $3::bigint AND j.uid <> $4 "
                      "ORDER BY j.created_ms DESC, j.uid LIMIT $5::integer"},
    /* $1 is a JSON array of job uids; ord maps rows back to it (1-based). */
    [ST_HIST_SAMPLES] = {"dlb_hist_samples",
                         "SELECT j.ord::integer, s.raw "
                         "FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS j(uid, ord) "
                         "CROSS JOIN LATERAL (SELECT r.event_time_ms, r.event_id, r.raw "
                         "FROM runtime_samples r WHERE r.job_uid = j.uid "
                         "AND r.event_time_ms < $3::bigint "
                         "ORDER BY r.event_time_ms DESC, r.event_id DESC LIMIT $2::integer) s "
                         "ORDER BY j.ord, s.event_time_ms, s.event_id"},
    [ST_HIST_OOM] = {"dlb_hist_oom",
                     "SELECT DISTINCT j.ord::integer, n.pod_name "
                     "FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS j(uid, ord) "
                     "JOIN node_events n ON n.job_uid = j.uid AND n.kind = 'oom_killed' "
                     "AND n.pod_name <> '' AND n.event_time_ms < $3::bigint "
                     "ORDER BY 1, 2 LIMIT $2::integer"},
    [ST_GET_PLAN] = {"dlb_get_plan", "SELECT raw FROM plans WHERE plan_id = $1"},
    /* Idempotent by (plan_id, pod_name): a redone batch writes the same row. */
    [ST_OOM_PLAN] = {"dlb_oom_plan",
                     "INSERT INTO oom_plans (job_uid, pod_name, oom_event_id, plan_id, memory, "
                     "event_time_ms) VALUES ($1, $2, $3, $4, $5::bigint, $6::bigint) "
                     "ON CONFLICT DO NOTHING"},
    /* The newest $3 answers before $2, handed out oldest first. */
    [ST_OOM_PLANS] = {"dlb_oom_plans",
                      "SELECT pod_name, oom_event_id, plan_id, memory, event_time_ms FROM ("
                      "SELECT * FROM oom_plans WHERE job_uid = $1 AND event_time_ms < $2::bigint "
                      "ORDER BY event_time_ms DESC, plan_id DESC, pod_name DESC "
                      "LIMIT $3::integer) o ORDER BY event_time_ms, plan_id, pod_name"},
};
/* clang-format on */

/* libpq prints notices (e.g. "relation already exists, skipping") to stderr;
 * route them to the debug log. */
void dlb_pg_notice(void *arg, const char *msg)
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
int dlb_pg_conn_fail(PGconn *conn, const PGresult *res, const char *what, char *errstr,
                     size_t errstr_size)
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
    }
    return dlb_seterr(errstr, errstr_size, err, "postgresql: %s: %.*s%s%s%s", what, (int)n, msg,
                      state ? " (SQLSTATE " : "", state ? state : "", state ? ")" : "");
}

static int pg_fail(dlb_pg_t *pg, const PGresult *res, const char *what, char *errstr,
                   size_t errstr_size)
{
    return dlb_pg_conn_fail(pg->conn, res, what, errstr, errstr_size);
}

/* dlbrain_postgres_call_duration_seconds, per prepared statement, "query"
 * (any other statement) and "commit"; per thread, so no lock. */
#define PG_SLOT_QUERY  ST__CNT
#define PG_SLOT_COMMIT (ST__CNT + 1)
static _Thread_local dlb_metric_slot_t pg_slots[ST__CNT + 2];

/* A call came back: its latency, and whether the server answered (readiness:
 * an error reply still means PostgreSQL is there, a lost connection not). */
static void pg_observe(const dlb_pg_t *pg, int slot, double t0)
{
    dlb_metric_observe_since(
        dlb_metric_slot_histogram(&pg_slots[slot], "dlbrain_postgres_call_duration_seconds",
                                  "PostgreSQL round trips by statement (prepared statement name, "
                                  "query, commit)",
                                  "statement",
                                  DLB_LV(slot == PG_SLOT_QUERY    ? "query"
                                         : slot == PG_SLOT_COMMIT ? "commit"
                                                                  : stmts[slot].name)),
        t0);
    dlb_metrics_dep(DLB_DEP_POSTGRES, PQstatus(pg->conn) == CONNECTION_OK);
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

int dlb_pg_exec(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, int binary_result, PGresult **out, const char *what, char *errstr,
                size_t errstr_size)
{
    int formats[PARAMS_MAX] = {0};
    PGresult *res;
    ExecStatusType st;
    double t0;
    int err;

    if ((err = param_formats(nparams, lens, formats, what, errstr, errstr_size)))
        return err;
    t0 = dlb_metric_now();
    res = PQexecParams(pg->conn, sql, nparams, NULL, values, lens, lens ? formats : NULL,
                       binary_result);
    pg_observe(pg, PG_SLOT_QUERY, t0);
    st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        err = pg_fail(pg, res, what, errstr, errstr_size);
    if (out && !err)
        *out = res;
    else
        PQclear(res);
    return err;
}

int dlb_pg_send(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, const char *what, char *errstr, size_t errstr_size)
{
    int formats[PARAMS_MAX] = {0};
    int err;

    if (pg->pending_what)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "%s: sent while %s is still running", what, pg->pending_what);
    if ((err = param_formats(nparams, lens, formats, what, errstr, errstr_size)))
        return err;
    pg->pending_t0 = dlb_metric_now();
    if (!PQsendQueryParams(pg->conn, sql, nparams, NULL, values, lens, lens ? formats : NULL, 0))
        return pg_fail(pg, NULL, what, errstr, errstr_size);
    pg->pending_what = what;
    return 0;
}

int dlb_pg_wait(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    const char *what = pg->pending_what;
    PGresult *res;
    int err = 0;

    if (!what)
        return 0;
    pg->pending_what = NULL;
    /* Every result until NULL, or the connection is not free for the next. */
    while ((res = PQgetResult(pg->conn))) {
        ExecStatusType st = PQresultStatus(res);
        if (!err && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
            err = pg_fail(pg, res, what, errstr, errstr_size);
        PQclear(res);
        if (PQstatus(pg->conn) == CONNECTION_BAD)
            break;
    }
    pg_observe(pg, PG_SLOT_QUERY, pg->pending_t0);
    if (!err && PQstatus(pg->conn) == CONNECTION_BAD)
        err = pg_fail(pg, NULL, what, errstr, errstr_size);
    return err;
}

/* Run a statement that returns no rows (or whose rows are ignored). */
static int pg_command(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                      const char *what, char *errstr, size_t errstr_size)
{
    return dlb_pg_exec(pg, sql, nparams, values, NULL, 0, NULL, what, errstr, errstr_size);
}

static int pg_prepare(dlb_pg_t *pg, int st, char *errstr, size_t errstr_size)
{
    PGresult *res;
    int err = 0;

    if (pg->prepared & (1u << st))
        return 0;
    res = PQprepare(pg->conn, stmts[st].name, stmts[st].sql, 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        err = pg_fail(pg, res, stmts[st].name, errstr, errstr_size);
    else
        pg->prepared |= 1u << st;
    PQclear(res);
    return err;
}

/* Execute prepared statement st. Parameters are text except those with a
 * non-zero length in lens (binary, e.g. bytea). Results are binary when
 * binary_result is set. On success *out holds the result (caller PQclear()s). */
static int pg_run(dlb_pg_t *pg, int st, int nparams, const char *const *values, const int *lens,
                  int binary_result, PGresult **out, char *errstr, size_t errstr_size)
{
    int formats[PARAMS_MAX] = {0};
    PGresult *res;
    ExecStatusType rs;
    double t0;
    int err;

    if ((err = param_formats(nparams, lens, formats, stmts[st].name, errstr, errstr_size)) ||
        (err = pg_prepare(pg, st, errstr, errstr_size)))
        return err;
    t0 = dlb_metric_now();
    res = PQexecPrepared(pg->conn, stmts[st].name, nparams, values, lens, formats, binary_result);
    pg_observe(pg, st, t0);
    rs = PQresultStatus(res);
    if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
        err = pg_fail(pg, res, stmts[st].name, errstr, errstr_size);
        PQclear(res);
        return err;
    }
    if (out)
        *out = res;
    else
        PQclear(res);
    return 0;
}

static int pg_set_search_path(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    char *ident = PQescapeIdentifier(pg->conn, pg->schema, strlen(pg->schema));
    const char *values[1];
    int err;

    if (!ident)
        return pg_fail(pg, NULL, "quoting the schema name", errstr, errstr_size);
    values[0] = ident;
    err = pg_command(pg, "SELECT pg_catalog.set_config('search_path', $1, false)", 1, values,
                     "setting search_path", errstr, errstr_size);
    PQfreemem(ident);
    return err;
}

int dlb_pg_connect(dlb_pg_t **out, const char *dsn, const char *schema, char *errstr,
                   size_t errstr_size)
{
    /* dbname last: with expand_dbname its conninfo string may override the
     * defaults before it (e.g. its own connect_timeout). */
    const char *const keys[] = {"connect_timeout", "fallback_application_name", "dbname", NULL};
    const char *const vals[] = {"10", "dlbrain", dsn ? dsn : "", NULL};
    dlb_pg_t *pg;
    int err;

    PQconninfoOption *opts;
    char *perr = NULL;

    *out = NULL;
    if (!schema || !*schema)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "postgresql: empty schema name");
    /* A malformed DSN is a configuration error, not an outage to wait out. */
    if (dsn && *dsn) {
        if (!(opts = PQconninfoParse(dsn, &perr))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "postgresql: bad pg.dsn: %s",
                             perr ? perr : "out of memory");
            PQfreemem(perr);
            return err;
        }
        PQconninfoFree(opts);
    }
    if (!(pg = calloc(1, sizeof(*pg))) || !(pg->schema = strdup(schema))) {
        free(pg);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    pg->conn = PQconnectdbParams(keys, vals, 1);
    if (!pg->conn) {
        dlb_pg_destroy(pg);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    if (PQstatus(pg->conn) != CONNECTION_OK) {
        err = pg_fail(pg, NULL, "connect", errstr, errstr_size);
        dlb_pg_destroy(pg);
        return err;
    }
    PQsetNoticeProcessor(pg->conn, dlb_pg_notice, NULL);
    if ((err = pg_set_search_path(pg, errstr, errstr_size))) {
        dlb_pg_destroy(pg);
        return err;
    }
    *out = pg;
    return 0;
}

PGconn *dlb_pg_detach(dlb_pg_t *pg)
{
    PGconn *conn = pg->conn;

    pg->conn = NULL;
    dlb_pg_destroy(pg);
    return conn;
}

void dlb_pg_destroy(dlb_pg_t *pg)
{
    if (!pg)
        return;
    if (pg->conn)
        PQfinish(pg->conn);
    if (pg->cat)
        dlb_catalog_destroy(pg->cat);
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

int dlb_pg_begin(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    int err;

    if ((err = pg_ensure(pg, errstr, errstr_size)) ||
        (err = pg_command(pg, "BEGIN", 0, NULL, "BEGIN", errstr, errstr_size)))
        return err;
    pg->in_tx = 1;
    return 0;
}

int dlb_pg_commit(dlb_pg_t *pg, char *errstr, size_t errstr_size)
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
        dlb_pg_rollback(pg);
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
    pg_observe(pg, PG_SLOT_COMMIT, t0);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        err = pg_fail(pg, res, "COMMIT", errstr, errstr_size);
    else if (strcmp(PQcmdStatus(res), "COMMIT"))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "postgresql: COMMIT answered %s",
                         PQcmdStatus(res));
    PQclear(res);
    if (PQtransactionStatus(pg->conn) == PQTRANS_IDLE)
        pg->in_tx = 0;
    return err;
}

void dlb_pg_rollback(dlb_pg_t *pg)
{
    PGresult *res;
    char sub[256];

    /* A statement still running fails with the transaction: drain it. */
    (void)dlb_pg_wait(pg, sub, sizeof(sub));
    pg->in_tx = 0;
    if (PQstatus(pg->conn) != CONNECTION_OK || PQtransactionStatus(pg->conn) == PQTRANS_IDLE)
        return;
    res = PQexec(pg->conn, "ROLLBACK");
    PQclear(res);
}

/* ---- migrations ------------------------------------------------------------ */

/* "001_init.sql" -> 1; -1 when the name is not NNN_name.sql. */
static long migration_version(const char *name)
{
    char *end;
    size_t n = strlen(name);
    long v;

    if (name[0] < '0' || name[0] > '9' || n < 5 || strcmp(name + n - 4, ".sql"))
        return -1;
    v = strtol(name, &end, 10);
    return *end == '_' && v > 0 ? v : -1;
}

static int migration_applied(dlb_pg_t *pg, const char *qtable, long version, int *applied,
                             char *errstr, size_t errstr_size)
{
    char sql[512], ver[24];
    const char *values[1] = {ver};
    PGresult *res;
    int err = 0;

    snprintf(sql, sizeof(sql), "SELECT 1 FROM %s WHERE version = $1::integer", qtable);
    snprintf(ver, sizeof(ver), "%ld", version);
    res = PQexecParams(pg->conn, sql, 1, NULL, values, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        err = pg_fail(pg, res, "reading schema_migrations", errstr, errstr_size);
    else
        *applied = PQntuples(res) > 0;
    PQclear(res);
    return err;
}

/* Inside a transaction: wait for other migrators of this schema. */
static int migration_lock(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    char cls[24];
    const char *values[2] = {cls, pg->schema};

    snprintf(cls, sizeof(cls), "%d", DLB_PG_LOCK_CLASS);
    return pg_command(pg, "SELECT pg_advisory_xact_lock($1::integer, hashtext($2))", 2, values,
                      "taking the migration lock", errstr, errstr_size);
}

/* Schema and bookkeeping table, created under the lock. Existence is checked
 * first because CREATE SCHEMA IF NOT EXISTS still needs CREATE on the database,
 * which a production role may lack once the schema exists. */
static int migrate_bootstrap(dlb_pg_t *pg, const char *qschema, const char *qtable, char *errstr,
                             size_t errstr_size)
{
    const char *values[1] = {pg->schema};
    char sql[512];
    PGresult *res;
    int err, exists;

    if ((err = pg_command(pg, "BEGIN", 0, NULL, "BEGIN", errstr, errstr_size)) ||
        (err = migration_lock(pg, errstr, errstr_size)))
        goto out;
    res = PQexecParams(pg->conn, "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1", 1,
                       NULL, values, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        err = pg_fail(pg, res, "looking up the schema", errstr, errstr_size);
        PQclear(res);
        goto out;
    }
    exists = PQntuples(res) > 0;
    PQclear(res);
    if (!exists) {
        snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", qschema);
        if ((err = pg_command(pg, sql, 0, NULL, "creating the schema", errstr, errstr_size)))
            goto out;
    }
    snprintf(sql, sizeof(sql),
             "CREATE TABLE IF NOT EXISTS %s (version integer PRIMARY KEY, name text NOT NULL, "
             "applied_at timestamptz NOT NULL DEFAULT now())",
             qtable);
    if ((err = pg_command(pg, sql, 0, NULL, "creating schema_migrations", errstr, errstr_size)))
        goto out;
    err = pg_command(pg, "COMMIT", 0, NULL, "COMMIT", errstr, errstr_size);
out:
    if (err)
        dlb_pg_rollback(pg);
    return err;
}

static int migrate_one(dlb_pg_t *pg, const char *qtable, const dlb_embedded_t *m, long version,
                       char *errstr, size_t errstr_size)
{
    char sql[512], ver[24], what[192];
    const char *values[2] = {ver, m->name};
    PGresult *res;
    int err, applied = 0;

    snprintf(ver, sizeof(ver), "%ld", version);
    snprintf(what, sizeof(what), "migration %s", m->name);
    if ((err = pg_command(pg, "BEGIN", 0, NULL, "BEGIN", errstr, errstr_size)) ||
        (err = migration_lock(pg, errstr, errstr_size)) ||
        (err = migration_applied(pg, qtable, version, &applied, errstr, errstr_size)))
        goto out;
    if (applied) /* another process got there first */
        goto commit;
    /* The migration is trusted text compiled into the binary, possibly several
     * statements: the simple query protocol runs it inside our transaction. */
    res = PQexec(pg->conn, m->data);
    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
        err = pg_fail(pg, res, what, errstr, errstr_size);
        PQclear(res);
        goto out;
    }
    PQclear(res);
    snprintf(sql, sizeof(sql), "INSERT INTO %s (version, name) VALUES ($1::integer, $2)", qtable);
    if ((err = pg_command(pg, sql, 2, values, what, errstr, errstr_size)))
        goto out;
    dlb_info("postgresql: schema %s: applied migration %s", pg->schema, m->name);
commit:
    err = pg_command(pg, "COMMIT", 0, NULL, "COMMIT", errstr, errstr_size);
out:
    if (err)
        dlb_pg_rollback(pg);
    return err;
}

int dlb_pg_migrate(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    char *qschema = NULL, qtable[256];
    long prev = 0;
    int err;

    if ((err = pg_ensure(pg, errstr, errstr_size)))
        return err;
    if (!(qschema = PQescapeIdentifier(pg->conn, pg->schema, strlen(pg->schema))))
        return pg_fail(pg, NULL, "quoting the schema name", errstr, errstr_size);
    snprintf(qtable, sizeof(qtable), "%s.schema_migrations", qschema);
    if ((err = migrate_bootstrap(pg, qschema, qtable, errstr, errstr_size)))
        goto out;
    for (const dlb_embedded_t *m = dlb_embedded_migrations; m->name; m++) {
        long version = migration_version(m->name);
        int applied = 0;

        if (version <= prev) {
            err =
                dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                           "migration %s: name must be NNN_name.sql with NNN increasing", m->name);
            goto out;
        }
        prev = version;
        /* Cheap check first, so starting many consumers takes no lock at all. */
        if ((err = migration_applied(pg, qtable, version, &applied, errstr, errstr_size)))
            goto out;
        if (!applied && (err = migrate_one(pg, qtable, m, version, errstr, errstr_size)))
            goto out;
    }
out:
    PQfreemem(qschema);
    return err;
}

/* ---- writes ---------------------------------------------------------------- */

static int pg_catalog(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    if (pg->cat)
        return 0;
    return dlb_catalog_new(&pg->cat, errstr, errstr_size);
}

/* The framed bytes to store: the caller's, or the event encoded now. */
static int raw_bytes(dlb_pg_t *pg, const dlb_event_t *ev, const void **raw, size_t *raw_len,
                     void **owned, char *errstr, size_t errstr_size)
{
    int err;

    *owned = NULL;
    if (*raw && *raw_len > 0)
        return 0;
    if ((err = pg_catalog(pg, errstr, errstr_size)) ||
        (err = dlb_codec_encode(pg->cat, ev, owned, raw_len, errstr, errstr_size)))
        return err;
    *raw = *owned;
    return 0;
}

int dlb_pg_raw_bytes(dlb_pg_t *pg, const dlb_event_t *ev, const void **raw, size_t *raw_len,
                     void **owned, char *errstr, size_t errstr_size)
{
    return raw_bytes(pg, ev, raw, raw_len, owned, errstr, errstr_size);
}

#define I64(buf, v) (snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)(v)), (const char *)buf)
#define DBL(buf, v) (snprintf(buf, sizeof(buf), "%.17g", (double)(v)), (const char *)buf)

static int put_job(dlb_pg_t *pg, const dlb_job_event_t *e, const void *raw, size_t raw_len,
                   char *errstr, size_t errstr_size)
{
    char t[24], hp[3][24], ds[24], md[6][24];
    const char *v[26] = {0};
    int lens[26] = {0};

    v[0] = e->event_id;
    v[1] = e->job_uid;
    v[2] = I64(t, e->event_time_ms);
    v[3] = e->has_state ? e->state : NULL;
    v[4] = e->has_exit_reason ? e->exit_reason : NULL;
    v[5] = raw;
    lens[5] = (int)raw_len;
    if (e->has_meta) {
        v[6] = e->meta.name;
        v[7] = e->meta.user;
        v[8] = e->meta.group;
        v[9] = e->meta.app;
        v[10] = e->meta.cluster;
        v[11] = e->meta.ns;
        v[12] = e->meta.scenario;
        v[13] = e->meta.framework;
    }
    if (e->has_hyper_params) {
        v[14] = I64(hp[0], e->hyper_params.batch_size);
        v[15] = I64(hp[1], e->hyper_params.epoch);
        v[16] = I64(hp[2], e->hyper_params.max_steps);
    }
    if (e->has_dataset) {
        v[17] = e->dataset.name;
        v[18] = I64(ds, e->dataset.size);
        v[19] = e->dataset.storage;
    }
    if (e->has_model) {
        v[20] = I64(md[0], e->model.variable_count);
        v[21] = I64(md[1], e->model.op_count);
        v[22] = I64(md[2], e->model.total_variable_size);
        v[23] = I64(md[3], e->model.recv_op_count);
        v[24] = I64(md[4], e->model.flops);
        v[25] = I64(md[5], e->model.embedding_dimension);
    }
    return pg_run(pg, ST_JOB, 26, v, lens, 0, NULL, errstr, errstr_size);
}

/* JSON number from an int64 without going through double. */
static cJSON *json_i64(int64_t v)
{
    char buf[24];

    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

/* JSON number from a double with the digits that read back exactly (cJSON
 * may settle for 15); not finite (never valid here): null. */
static cJSON *json_dbl(double v)
{
    char buf[32];

    if (!isfinite(v))
        return cJSON_CreateNull();
    snprintf(buf, sizeof(buf), "%.17g", v);
    return cJSON_CreateRaw(buf);
}

static int json_add(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return -1;
    cJSON_AddItemToObject(obj, key, item);
    return 0;
}

static char *pods_json(const dlb_runtime_sample_t *s)
{
    cJSON *arr = cJSON_CreateArray();
    char *out = NULL;

    if (!arr)
        return NULL;
    for (size_t i = 0; i < s->pods_cnt; i++) {
        const dlb_pod_usage_t *p = &s->pods[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto out;
        cJSON_AddItemToArray(arr, o);
        if (json_add(o, "name", cJSON_CreateString(p->name)) ||
            json_add(o, "type", cJSON_CreateString(p->type)) ||
            json_add(o, "index", cJSON_CreateNumber(p->index)) ||
            json_add(o, "cpu_used", cJSON_CreateNumber(p->cpu_used)) ||
            json_add(o, "cpu_requested", cJSON_CreateNumber(p->cpu_requested)) ||
            json_add(o, "memory_used", json_i64(p->memory_used)) ||
            json_add(o, "memory_requested", json_i64(p->memory_requested)) ||
            json_add(o, "speed", p->has_speed ? json_dbl(p->speed) : cJSON_CreateNull()))
            goto out;
    }
    out = cJSON_PrintUnformatted(arr);
out:
    cJSON_Delete(arr);
    return out;
}

static int put_runtime(dlb_pg_t *pg, const dlb_runtime_sample_t *s, const void *raw, size_t raw_len,
                       char *errstr, size_t errstr_size)
{
    char t[24], step[24], speed[32];
    const char *v[7];
    int lens[7] = {0}, err;
    char *pods = pods_json(s);

    if (!pods)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    v[0] = s->event_id;
    v[1] = s->job_uid;
    v[2] = I64(t, s->event_time_ms);
    v[3] = I64(step, s->global_step);
    v[4] = DBL(speed, s->speed);
    v[5] = raw;
    lens[5] = (int)raw_len;
    v[6] = pods;
    err = pg_run(pg, ST_RUNTIME, 7, v, lens, 0, NULL, errstr, errstr_size);
    cJSON_free(pods);
    return err;
}

static int put_node(dlb_pg_t *pg, const dlb_node_event_t *e, const void *raw, size_t raw_len,
                    char *errstr, size_t errstr_size)
{
    char t[24], idx[24], mem[24], cpu[32];
    const char *v[14];
    int lens[14] = {0};

    v[0] = e->event_id;
    v[1] = e->job_uid;
    v[2] = I64(t, e->event_time_ms);
    v[3] = e->kind;
    v[4] = e->pod_name;
    v[5] = e->pod_type;
    v[6] = I64(idx, e->pod_index);
    v[7] = e->node_name;
    v[8] = e->has_phase ? e->phase : NULL;
    v[9] = e->reason;
    v[10] = e->message;
    v[11] = e->has_memory_requested ? I64(mem, e->memory_requested) : NULL;
    v[12] = e->has_cpu_requested ? DBL(cpu, e->cpu_requested) : NULL;
    v[13] = raw;
    lens[13] = (int)raw_len;
    return pg_run(pg, ST_NODE, 14, v, lens, 0, NULL, errstr, errstr_size);
}

static int put_request(dlb_pg_t *pg, const dlb_plan_request_t *e, const void *raw, size_t raw_len,
                       char *errstr, size_t errstr_size)
{
    char t[24];
    const char *v[6];
    int lens[6] = {0};

    v[0] = e->event_id;
    v[1] = e->job_uid;
    v[2] = I64(t, e->event_time_ms);
    v[3] = e->stage;
    v[4] = e->has_oom_pod ? e->oom_pod : NULL;
    v[5] = raw;
    lens[5] = (int)raw_len;
    return pg_run(pg, ST_REQUEST, 6, v, lens, 0, NULL, errstr, errstr_size);
}

static cJSON *resource_json(const dlb_resource_t *r)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        return NULL;
    if (json_add(o, "cpu", cJSON_CreateNumber(r->cpu)) ||
        json_add(o, "memory", json_i64(r->memory)) ||
        json_add(o, "gpu", cJSON_CreateNumber(r->gpu)) ||
        json_add(o, "gpu_type", cJSON_CreateString(r->gpu_type)) ||
        json_add(o, "priority", cJSON_CreateString(r->priority))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* groups, pods and actions of a plan as JSON arrays, in the Avro field names. */
static int plan_json(const dlb_plan_t *plan, char **groups, char **pods, char **actions)
{
    cJSON *g = cJSON_CreateArray(), *p = cJSON_CreateArray(), *a = cJSON_CreateArray();
    int err = DLB_ERR_NOMEM;

    *groups = *pods = *actions = NULL;
    if (!g || !p || !a)
        goto out;
    for (size_t i = 0; i < plan->groups_cnt; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto out;
        cJSON_AddItemToArray(g, o);
        if (json_add(o, "group", cJSON_CreateString(plan->groups[i].group)) ||
            json_add(o, "count", cJSON_CreateNumber(plan->groups[i].count)) ||
            json_add(o, "resource", resource_json(&plan->groups[i].resource)))
            goto out;
    }
    for (size_t i = 0; i < plan->pods_cnt; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto out;
        cJSON_AddItemToArray(p, o);
        if (json_add(o, "name", cJSON_CreateString(plan->pods[i].name)) ||
            json_add(o, "resource", resource_json(&plan->pods[i].resource)))
            goto out;
    }
    for (size_t i = 0; i < plan->actions_cnt; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto out;
        cJSON_AddItemToArray(a, o);
        if (json_add(o, "pod", cJSON_CreateString(plan->actions[i].pod)) ||
            json_add(o, "action", cJSON_CreateString(plan->actions[i].action)) ||
            json_add(o, "reason", cJSON_CreateString(plan->actions[i].reason)))
            goto out;
    }
    if (!(*groups = cJSON_PrintUnformatted(g)) || !(*pods = cJSON_PrintUnformatted(p)) ||
        !(*actions = cJSON_PrintUnformatted(a))) {
        cJSON_free(*groups);
        cJSON_free(*pods);
        *groups = *pods = NULL;
        goto out;
    }
    err = 0;
out:
    cJSON_Delete(g);
    cJSON_Delete(p);
    cJSON_Delete(a);
    return err;
}

int dlb_pg_put_plan(dlb_pg_t *pg, const dlb_plan_t *plan, const void *raw, size_t raw_len,
                    char *errstr, size_t errstr_size)
{
    char t[24], *groups = NULL, *pods = NULL, *actions = NULL;
    const char *v[11];
    int lens[11] = {0}, err;
    void *owned = NULL;

    if ((err = pg_ensure(pg, errstr, errstr_size)))
        return err;
    if (!raw || !raw_len) {
        dlb_event_t ev = {.type = DLB_EV_PLAN};
        ev.u.plan = *plan; /* shallow: encode only reads it */
        if ((err = raw_bytes(pg, &ev, &raw, &raw_len, &owned, errstr, errstr_size)))
            return err;
    }
    if ((err = plan_json(plan, &groups, &pods, &actions))) {
        err = dlb_seterr(errstr, errstr_size, err, "out of memory");
        goto out;
    }
    v[0] = plan->plan_id;
    v[1] = plan->job_uid;
    v[2] = plan->trigger_event_id;
    v[3] = plan->stage;
    v[4] = plan->optimizer;
    v[5] = plan->reason;
    v[6] = I64(t, plan->event_time_ms);
    v[7] = groups;
    v[8] = pods;
    v[9] = raw;
    lens[9] = (int)raw_len;
    v[10] = actions;
    err = pg_run(pg, ST_PLAN, 11, v, lens, 0, NULL, errstr, errstr_size);
out:
    cJSON_free(groups);
    cJSON_free(pods);
    cJSON_free(actions);
    free(owned);
    return err;
}

int dlb_pg_put_event(dlb_pg_t *pg, const dlb_event_t *ev, const void *raw, size_t raw_len,
                     char *errstr, size_t errstr_size)
{
    void *owned = NULL;
    int err;

    if (ev->type == DLB_EV_PLAN)
        return dlb_pg_put_plan(pg, &ev->u.plan, raw, raw_len, errstr, errstr_size);
    if (ev->type != DLB_EV_JOB && ev->type != DLB_EV_RUNTIME && ev->type != DLB_EV_NODE &&
        ev->type != DLB_EV_PLAN_REQUEST)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: %s events are not stored", dlb_event_type_name(ev->type));
    if (raw_len > (size_t)INT32_MAX)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "postgresql: event too large");
    if ((err = pg_ensure(pg, errstr, errstr_size)) ||
        (err = raw_bytes(pg, ev, &raw, &raw_len, &owned, errstr, errstr_size)))
        return err;
    switch (ev->type) {
    case DLB_EV_JOB:
        err = put_job(pg, &ev->u.job, raw, raw_len, errstr, errstr_size);
        break;
    case DLB_EV_RUNTIME:
        err = put_runtime(pg, &ev->u.rt, raw, raw_len, errstr, errstr_size);
        break;
    case DLB_EV_NODE:
        err = put_node(pg, &ev->u.node, raw, raw_len, errstr, errstr_size);
        break;
    default:
        err = put_request(pg, &ev->u.req, raw, raw_len, errstr, errstr_size);
        break;
    }
    free(owned);
    return err;
}

int dlb_pg_put_oom_plan(dlb_pg_t *pg, const char *job_uid, const dlb_oom_plan_t *op, char *errstr,
                        size_t errstr_size)
{
    char mem[24], t[24];
    const char *v[6];
    int err;

    if (!job_uid[0] || !op->pod_name[0] || !op->plan_id[0])
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: an answered OOM needs a job uid, a pod name and a plan id");
    if ((err = pg_ensure(pg, errstr, errstr_size)))
        return err;
    v[0] = job_uid;
    v[1] = op->pod_name;
    v[2] = op->oom_event_id;
    v[3] = op->plan_id;
    v[4] = I64(mem, op->memory);
    v[5] = I64(t, op->event_time_ms);
    return pg_run(pg, ST_OOM_PLAN, 6, v, NULL, 0, NULL, errstr, errstr_size);
}

/* ---- reads ----------------------------------------------------------------- */

int dlb_pg_load_oom_plans(dlb_pg_t *pg, const char *job_uid, int64_t before_ms,
                          dlb_oom_plan_t **out, size_t *cnt, char *errstr, size_t errstr_size)
{
    char before[24], lim[24];
    const char *v[3] = {job_uid, before, lim};
    dlb_oom_plan_t *ops = NULL;
    PGresult *res = NULL;
    int err, n;

    *out = NULL;
    *cnt = 0;
    snprintf(before, sizeof(before), "%" PRId64, before_ms);
    snprintf(lim, sizeof(lim), "%d", DLB_PG_MAX_OOM_ROWS);
    if ((err = pg_ensure(pg, errstr, errstr_size)) ||
        (err = pg_run(pg, ST_OOM_PLANS, 3, v, NULL, 0, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    if (n > 0 && !(ops = calloc((size_t)n, sizeof(*ops)))) {
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        dlb_oom_plan_t *o = &ops[i];
        snprintf(o->pod_name, sizeof(o->pod_name), "%s", PQgetvalue(res, i, 0));
        snprintf(o->oom_event_id, sizeof(o->oom_event_id), "%s", PQgetvalue(res, i, 1));
        snprintf(o->plan_id, sizeof(o->plan_id), "%s", PQgetvalue(res, i, 2));
        o->memory = strtoll(PQgetvalue(res, i, 3), NULL, 10);
        o->event_time_ms = strtoll(PQgetvalue(res, i, 4), NULL, 10);
    }
    PQclear(res);
    *out = ops;
    *cnt = (size_t)n;
    return 0;
}

int dlb_pg_get_plan(dlb_pg_t *pg, const char *plan_id, void **raw, size_t *raw_len, char *errstr,
                    size_t errstr_size)
{
    const char *v[1] = {plan_id};
    PGresult *res = NULL;
    int err;

    *raw = NULL;
    *raw_len = 0;
    if ((err = pg_ensure(pg, errstr, errstr_size)) ||
        (err = pg_run(pg, ST_GET_PLAN, 1, v, NULL, 1, &res, errstr, errstr_size)))
        return err;
    err = dlb_pg_first_bytes(res, raw, raw_len, errstr, errstr_size);
    PQclear(res);
    return err;
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

static uint32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;

    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static int decode_cell(dlb_pg_t *pg, const PGresult *res, int row, int col, dlb_event_t *ev,
                       char *errstr, size_t errstr_size)
{
    char sub[256];
    int err;

    if ((err = pg_catalog(pg, errstr, errstr_size)))
        return err;
    err = dlb_codec_decode(pg->cat, PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col),
                           ev, sub, sizeof(sub));
    if (err)
        dlb_seterr(errstr, errstr_size, err, "postgresql: a stored event does not decode: %s", sub);
    return err;
}

int dlb_pg_load_job_state(dlb_pg_t *pg, const char *job_uid, int window_size, dlb_job_state_t *out,
                          char *errstr, size_t errstr_size)
{
    char win[24], jmax[24], nmax[24];
    const char *v[4] = {job_uid, win, jmax, nmax};
    dlb_job_state_t st = {0};
    PGresult *res = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    if ((err = pg_ensure(pg, errstr, errstr_size)))
        return err;
    snprintf(win, sizeof(win), "%d", window_size < 1 ? 1 : window_size);
    snprintf(jmax, sizeof(jmax), "%d", DLB_PG_MAX_JOB_EVENTS);
    snprintf(nmax, sizeof(nmax), "%d", DLB_PG_MAX_NODE_EVENTS);
    if ((err = pg_run(pg, ST_JOB_REPLAY, 4, v, NULL, 1, &res, errstr, errstr_size)))
        return err;
    for (int i = 0; i < PQntuples(res); i++) {
        dlb_event_t ev = {0};
        if ((err = decode_cell(pg, res, i, 0, &ev, errstr, errstr_size)))
            goto out;
        err = dlb_job_state_apply(&st, &ev, window_size);
        dlb_event_clear(&ev);
        if (err) {
            dlb_seterr(errstr, errstr_size, err, "out of memory");
            goto out;
        }
    }
    /* An unknown job still names itself, so the state can be cached. */
    if (!st.job.job_uid[0])
        snprintf(st.job.job_uid, sizeof(st.job.job_uid), "%s", job_uid);
    *out = st;
    memset(&st, 0, sizeof(st));
out:
    PQclear(res);
    dlb_job_state_clear(&st);
    return err;
}

/* JSON array of the history jobs' uids: the parameter of the per-job queries. */
static char *uids_json(const dlb_history_t *h)
{
    cJSON *arr = cJSON_CreateArray();
    char *out = NULL;

    if (!arr)
        return NULL;
    for (size_t i = 0; i < h->jobs_cnt; i++) {
        cJSON *s = cJSON_CreateString(h->jobs[i].job_uid);
        if (!s)
            goto out;
        cJSON_AddItemToArray(arr, s);
    }
    out = cJSON_PrintUnformatted(arr);
out:
    cJSON_Delete(arr);
    return out;
}

static int hist_jobs(dlb_pg_t *pg, const char *scenario, const char *exclude_uid, int64_t until_ms,
                     int hours, int max_jobs, dlb_history_t *h, char *errstr, size_t errstr_size)
{
    char from[24], until[24], lim[24];
    const char *v[5] = {scenario, from, until, exclude_uid ? exclude_uid : "", lim};
    PGresult *res = NULL;
    int err, n;

    snprintf(from, sizeof(from), "%" PRId64, until_ms - (int64_t)hours * 3600000);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    snprintf(lim, sizeof(lim), "%d", max_jobs);
    if ((err = pg_run(pg, ST_HIST_JOBS, 5, v, NULL, 0, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    if (n > 0 && !(h->jobs = calloc((size_t)n, sizeof(*h->jobs)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = &h->jobs[i];
        snprintf(j->job_uid, sizeof(j->job_uid), "%s", PQgetvalue(res, i, 0));
        j->created_ms = strtoll(PQgetvalue(res, i, 1), NULL, 10);
        snprintf(j->state, sizeof(j->state), "%s", PQgetvalue(res, i, 2));
        snprintf(j->exit_reason, sizeof(j->exit_reason), "%s", PQgetvalue(res, i, 3));
        j->completed = !strcmp(j->state, "succeeded") || !strcmp(j->exit_reason, "Completed");
    }
    h->jobs_cnt = (size_t)n;
out:
    PQclear(res);
    return err;
}

/* Row i's 1-based ordinal (first column, binary int4) as an index into h->jobs. */
static dlb_hist_job_t *hist_row_job(dlb_history_t *h, const PGresult *res, int i)
{
    uint32_t ord = be32(PQgetvalue(res, i, 0));

    return ord >= 1 && ord <= h->jobs_cnt ? &h->jobs[ord - 1] : NULL;
}

static int hist_samples(dlb_pg_t *pg, const char *uids, int max_samples, int64_t until_ms,
                        dlb_history_t *h, char *errstr, size_t errstr_size)
{
    char lim[24], until[24];
    const char *v[3] = {uids, lim, until};
    PGresult *res = NULL;
    int err, n;

    snprintf(lim, sizeof(lim), "%d", max_samples);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    if ((err = pg_run(pg, ST_HIST_SAMPLES, 3, v, NULL, 1, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    /* Rows come grouped by job: size each job's array before filling it. */
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        if (j)
            j->samples_cnt++;
    }
    for (size_t k = 0; k < h->jobs_cnt; k++) {
        dlb_hist_job_t *j = &h->jobs[k];
        if (j->samples_cnt && !(j->samples = calloc(j->samples_cnt, sizeof(*j->samples)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        j->samples_cnt = 0;
    }
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        dlb_event_t ev = {0};
        if (!j)
            continue;
        if ((err = decode_cell(pg, res, i, 1, &ev, errstr, errstr_size)))
            goto out;
        if (ev.type != DLB_EV_RUNTIME) {
            dlb_event_clear(&ev);
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE,
                             "postgresql: runtime_samples row of job %s holds a %s", j->job_uid,
                             dlb_event_type_name(ev.type));
            goto out;
        }
        /* The sample takes over the decoded pods array. */
        j->samples[j->samples_cnt++] = ev.u.rt;
    }
out:
    PQclear(res);
    return err;
}

static int hist_oom(dlb_pg_t *pg, const char *uids, int64_t until_ms, dlb_history_t *h,
                    char *errstr, size_t errstr_size)
{
    char lim[24], until[24];
    const char *v[3] = {uids, lim, until};
    PGresult *res = NULL;
    int err, n;

    snprintf(lim, sizeof(lim), "%d", DLB_PG_MAX_OOM_ROWS);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    if ((err = pg_run(pg, ST_HIST_OOM, 3, v, NULL, 1, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        if (j)
            j->oom_pods_cnt++;
    }
    for (size_t k = 0; k < h->jobs_cnt; k++) {
        dlb_hist_job_t *j = &h->jobs[k];
        if (j->oom_pods_cnt && !(j->oom_pods = calloc(j->oom_pods_cnt, sizeof(*j->oom_pods)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        j->oom_pods_cnt = 0;
    }
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        if (j)
            snprintf(j->oom_pods[j->oom_pods_cnt++], DLB_ID_MAX, "%s", PQgetvalue(res, i, 1));
    }
out:
    PQclear(res);
    return err;
}

int dlb_pg_load_history(dlb_pg_t *pg, const char *scenario, const char *exclude_uid,
                        int64_t until_ms, int hours, int max_jobs, int max_samples,
                        dlb_history_t *out, char *errstr, size_t errstr_size)
{
    dlb_history_t h = {0};
    char *uids = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    /* No scenario, no similarity key: every optimizer then cold-starts. */
    if (!scenario || !*scenario || max_jobs <= 0 || hours <= 0)
        return 0;
    if (max_jobs > DLB_PG_MAX_HIST_JOBS)
        max_jobs = DLB_PG_MAX_HIST_JOBS;
    if ((err = pg_ensure(pg, errstr, errstr_size)) ||
        (err = hist_jobs(pg, scenario, exclude_uid, until_ms, hours, max_jobs, &h, errstr,
                         errstr_size)))
        goto out;
    if (!h.jobs_cnt)
        goto done;
    if (!(uids = uids_json(&h))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((max_samples > 0 &&
         (err = hist_samples(pg, uids, max_samples, until_ms, &h, errstr, errstr_size))) ||
        (err = hist_oom(pg, uids, until_ms, &h, errstr, errstr_size)))
        goto out;
done:
    *out = h;
    memset(&h, 0, sizeof(h));
out:
    cJSON_free(uids);
    dlb_history_clear(&h);
    return err;
}

int dlb_pg_count(dlb_pg_t *pg, const char *table, int64_t *count, char *errstr, size_t errstr_size)
{
    char *ident, sql[256];
    PGresult *res;
    int err = 0;

    if ((err = pg_ensure(pg, errstr, errstr_size)))
        return err;
    if (!(ident = PQescapeIdentifier(pg->conn, table, strlen(table))))
        return pg_fail(pg, NULL, "quoting the table name", errstr, errstr_size);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", ident);
    PQfreemem(ident);
    res = PQexecParams(pg->conn, sql, 0, NULL, NULL, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        err = pg_fail(pg, res, "count", errstr, errstr_size);
    else
        *count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return err;
}
