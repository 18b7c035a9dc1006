/* A workload from recorded history (sim_history.h): reading the rows from
 * the environment's PostgreSQL schema. */
#include "sim_history.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "store_pg.h"
#include "store_pg_conn.h"
#include "vec.h"

/* Samples per FETCH: memory stays flat whatever the range holds. */
#define HIST_FETCH_ROWS "5000"

/* clang-format off */
/* $1 the schema: a typo must not read as an environment without jobs. */
/* Jobs whose first job event is in [$1, $2), by arrival then uid (bytewise:
 * the "C" collation), the order the samples query walks them in. */
static const char sql_jobs[] =
    "SELECT uid, COALESCE(app, ''), COALESCE(scenario, ''), COALESCE(state, ''), "
    "COALESCE(exit_reason, ''), created_ms, COALESCE(batch_size, 0), "
    "COALESCE(model_variable_count, 0), COALESCE(model_op_count, 0), "
    "COALESCE(model_recv_op_count, 0), COALESCE(model_flops, 0), "
    "COALESCE(model_embedding_dimension, 0) "
    "FROM jobs WHERE created_ms >= $1::bigint AND created_ms < $2::bigint "
    "ORDER BY created_ms, uid";

/* Every sample of those jobs, its pods (the row's pod_* arrays) summed up
 * per type, through a cursor. */
static const char sql_declare[] =
    "DECLARE dlb_sim_history NO SCROLL CURSOR FOR SELECT j.uid, s.event_time_ms, s.global_step, s.speed, a.wk, a.ps, "
    "COALESCE(a.wk_cpu_used, 0), COALESCE(a.ps_cpu_used, 0), "
    "COALESCE(a.wk_mem_used, 0), COALESCE(a.ps_mem_used, 0), "
    "COALESCE(a.wk_cpu_req, 0), COALESCE(a.ps_cpu_req, 0), "
    "COALESCE(a.wk_mem_req, 0), COALESCE(a.ps_mem_req, 0) "
    "FROM jobs j JOIN runtime_samples s ON s.job_uid = j.uid "
    "CROSS JOIN LATERAL (SELECT "
    "count(*) FILTER (WHERE p.t = 'worker') AS wk, "
    "count(*) FILTER (WHERE p.t = 'ps') AS ps, "
    "avg(p.cu) FILTER (WHERE p.t = 'worker') AS wk_cpu_used, "
    "sum(p.cu) FILTER (WHERE p.t = 'ps') AS ps_cpu_used, "
    "max(p.mu) FILTER (WHERE p.t = 'worker') AS wk_mem_used, "
    "sum(p.mu) FILTER (WHERE p.t = 'ps') AS ps_mem_used, "
    "max(p.cr) FILTER (WHERE p.t = 'worker') AS wk_cpu_req, "
    "max(p.cr) FILTER (WHERE p.t = 'ps') AS ps_cpu_req, "
    "max(p.mr) FILTER (WHERE p.t = 'worker') AS wk_mem_req, "
    "max(p.mr) FILTER (WHERE p.t = 'ps') AS ps_mem_req "
    "FROM unnest(s.pod_types, s.pod_cpu_used, s.pod_cpu_requested, s.pod_memory_used, "
    "s.pod_memory_requested) AS p(t, cu, cr, mu, mr)) a "
    "WHERE j.created_ms >= $1::bigint AND j.created_ms < $2::bigint "
    "ORDER BY j.created_ms, j.uid, s.event_time_ms, s.event_id";
/* clang-format on */

static int64_t cell_i64(const PGresult *res, int row, int col)
{
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static double cell_num(const PGresult *res, int row, int col)
{
    return strtod(PQgetvalue(res, row, col), NULL);
}

static int load_jobs(PGconn *conn, const char *const *range, dlb_sim_history_t *h, char *errstr,
                     size_t errstr_size)
{
    PGresult *res;
    int err, n;

    if ((err = dlb_pg_conn_exec(conn, sql_jobs, 2, range, NULL, 0, &res, "loading jobs", errstr,
                                errstr_size)))
        return err;
    n = PQntuples(res);
    if (!(h->jobs = calloc(n > 0 ? (size_t)n : 1, sizeof(*h->jobs)))) {
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        dlb_sim_hist_job_t *j = &h->jobs[i];

        snprintf(j->uid, sizeof(j->uid), "%s", PQgetvalue(res, i, 0));
        snprintf(j->app, sizeof(j->app), "%s", PQgetvalue(res, i, 1));
        snprintf(j->scenario, sizeof(j->scenario), "%s", PQgetvalue(res, i, 2));
        snprintf(j->state, sizeof(j->state), "%s", PQgetvalue(res, i, 3));
        snprintf(j->exit_reason, sizeof(j->exit_reason), "%s", PQgetvalue(res, i, 4));
        j->created_ms = cell_i64(res, i, 5);
        j->batch_size = cell_i64(res, i, 6);
        j->variable_count = cell_i64(res, i, 7);
        j->op_count = cell_i64(res, i, 8);
        j->recv_op_count = cell_i64(res, i, 9);
        j->flops = cell_i64(res, i, 10);
        j->embedding_dimension = cell_i64(res, i, 11);
    }
    h->jobs_cnt = (size_t)n;
    PQclear(res);
    return 0;
}

/* Row i of a samples result into *s. */
static void sample_row(const PGresult *res, int i, dlb_sim_hist_sample_t *s)
{
    s->t_ms = cell_i64(res, i, 1);
    s->global_step = cell_i64(res, i, 2);
    s->speed = cell_num(res, i, 3);
    s->workers = (int)cell_i64(res, i, 4);
    s->ps = (int)cell_i64(res, i, 5);
    s->wk_cpu_used = cell_num(res, i, 6);
    s->ps_cpu_used = cell_num(res, i, 7);
    s->wk_mem_used = cell_i64(res, i, 8);
    s->ps_mem_used = cell_i64(res, i, 9);
    s->wk_cpu_req = cell_num(res, i, 10);
    s->ps_cpu_req = cell_num(res, i, 11);
    s->wk_mem_req = cell_i64(res, i, 12);
    s->ps_mem_req = cell_i64(res, i, 13);
}

/* The samples through a cursor, job by job: each job's go to the builder
 * when the next job's start (a job without any is added with none). Only
 * one job's samples and one FETCH are in memory. */
static int stream_samples(PGconn *conn, const char *const *range, const dlb_sim_history_t *h,
                          dlb_sim_history_builder_t *b, char *errstr, size_t errstr_size)
{
    dlb_sim_hist_sample_t *buf = NULL;
    size_t n = 0, cap = 0, job = 0;
    int err, done = 0;

    if ((err = dlb_pg_conn_exec(conn, sql_declare, 2, range, NULL, 0, NULL, "declare cursor",
                                errstr, errstr_size)))
        return err;
    while (!err && !done && b->wl.n < b->cap) {
        PGresult *res;
        int rows;

        if ((err = dlb_pg_conn_exec(conn, "FETCH " HIST_FETCH_ROWS " FROM dlb_sim_history", 0, NULL,
                                    NULL, 0, &res, "fetch", errstr, errstr_size)))
            break;
        rows = PQntuples(res);
        done = rows == 0;
        for (int i = 0; i < rows && !err; i++) {
            const char *uid = PQgetvalue(res, i, 0);

            /* Both queries walk the jobs in one order, in one snapshot. */
            while (!err && job < h->jobs_cnt && strcmp(h->jobs[job].uid, uid)) {
                err = dlb_sim_history_add(b, &h->jobs[job++], buf, n);
                n = 0;
            }
            if (err)
                break;
            if (job == h->jobs_cnt) {
                err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                                 "runtime sample of job %s out of the jobs' order", uid);
                break;
            }
            if (dlb_vec_reserve((void **)&buf, &cap, n + 1, sizeof(*buf))) {
                err = DLB_ERR_NOMEM;
                break;
            }
            sample_row(res, i, &buf[n]);
            buf[n++].job = job;
        }
        PQclear(res);
    }
    /* The last job with samples, then those after it without any. */
    while (!err && job < h->jobs_cnt && b->wl.n < b->cap) {
        err = dlb_sim_history_add(b, &h->jobs[job++], buf, n);
        n = 0;
    }
    free(buf);
    if (err == DLB_ERR_NOMEM)
        dlb_seterr(errstr, errstr_size, err, "out of memory");
    return err;
}

int dlb_sim_history_read(const char *dsn, const char *schema, int64_t from_ms, int64_t to_ms,
                         size_t max_jobs, dlb_sim_workload_t *wl, dlb_sim_history_stats_t *stats,
                         char *errstr, size_t errstr_size)
{
    char from[32], to[32];
    const char *range[2] = {from, to};
    dlb_sim_history_t h = {0};
    dlb_sim_history_builder_t b = {0};
    dlb_pg_t *pg = NULL;
    PGconn *conn = NULL;
    int err;

    memset(wl, 0, sizeof(*wl));
    memset(stats, 0, sizeof(*stats));
    snprintf(from, sizeof(from), "%" PRId64, from_ms);
    snprintf(to, sizeof(to), "%" PRId64, to_ms);
    /* The store's connection, search_path set to the environment's schema. */
    if ((err = dlb_pg_connect(&pg, dsn, schema, errstr, errstr_size)))
        return err;
    conn = dlb_pg_detach(pg);
    if ((err = dlb_pg_conn_check_tables(conn, schema, "{jobs,runtime_samples}", 2, errstr,
                                        errstr_size)))
        goto out;
    /* One snapshot: the pipeline may be writing meanwhile. */
    if ((err = dlb_pg_conn_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL,
                                NULL, 0, NULL, "begin", errstr, errstr_size)))
        goto out;
    if ((err = load_jobs(conn, range, &h, errstr, errstr_size)) ||
        (err = dlb_sim_history_begin(&b, h.jobs_cnt, max_jobs, errstr, errstr_size)) ||
        (err = stream_samples(conn, range, &h, &b, errstr, errstr_size))) {
        dlb_pg_conn_rollback(conn);
        goto out;
    }
    if ((err = dlb_pg_conn_exec(conn, "COMMIT", 0, NULL, NULL, 0, NULL, "commit", errstr,
                                errstr_size)))
        goto out;
    err = dlb_sim_history_end(&b, wl, stats, errstr, errstr_size);
out:
    PQfinish(conn);
    dlb_sim_workload_free(&b.wl);
    dlb_sim_history_free(&h);
    return err;
}
