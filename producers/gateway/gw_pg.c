/* get_job_metrics: a job's history from the environment's PostgreSQL
 * schema, as the JSON DLRover's Go Brain returned (json.Marshal of its
 * job_metrics row: Go field names, every value a string, the feature
 * columns JSON text themselves, JobRuntime the newest 60 samples with
 * per-type pod usage keyed by pod index). One statement builds it. */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "gw_internal.h"
#include "log.h"
#include "store_pg.h"
#include "store_pg_conn.h"

/* The Go Brain kept 60 runtime records a job (MaxRuntimeInfoRecords). */
static const char job_metrics_sql[] =
    "WITH j AS (SELECT * FROM jobs WHERE uid = $1), "
    "rt AS (SELECT * FROM runtime_samples WHERE job_uid = $1 "
    "       ORDER BY event_time_ms DESC, event_id DESC LIMIT 60), "
    "rec AS (SELECT rt.event_time_ms, rt.event_id, json_build_object("
    "  'global_step', rt.global_step, 'time_stamp', rt.event_time_ms / 1000, "
    "  'speed', round(rt.speed::numeric, 2), "
    "  'worker_memory', (SELECT COALESCE(json_object_agg(p.i, p.mem), '{}') FROM unnest("
    "     rt.pod_types, rt.pod_indexes, rt.pod_memory_used) p(t, i, mem) WHERE p.t = 'worker'), "
    "  'worker_cpu', (SELECT COALESCE(json_object_agg(p.i, p.cpu), '{}') FROM unnest("
    "     rt.pod_types, rt.pod_indexes, rt.pod_cpu_used) p(t, i, cpu) WHERE p.t = 'worker'), "
    "  'ps_memory', (SELECT COALESCE(json_object_agg(p.i, p.mem), '{}') FROM unnest("
    "     rt.pod_types, rt.pod_indexes, rt.pod_memory_used) p(t, i, mem) WHERE p.t = 'ps'), "
    "  'ps_cpu', (SELECT COALESCE(json_object_agg(p.i, p.cpu), '{}') FROM unnest("
    "     rt.pod_types, rt.pod_indexes, rt.pod_cpu_used) p(t, i, cpu) WHERE p.t = 'ps')) AS r "
    "  FROM rt) "
    "SELECT json_build_object("
    "  'UID', j.uid, "
    "  'HyperParamsFeature', CASE WHEN j.batch_size IS NULL AND j.epoch IS NULL "
    "     AND j.max_steps IS NULL THEN '' ELSE json_build_object('batch_size', "
    "     COALESCE(j.batch_size, 0), 'epoch', COALESCE(j.epoch, 0), 'max_steps', "
    "     COALESCE(j.max_steps, 0))::text END, "
    "  'JobFeature', CASE WHEN COALESCE(j.name, '') = '' AND COALESCE(j.user_name, '') = '' "
    "     THEN '' ELSE json_build_object('user_id', COALESCE(j.user_name, ''), 'job_name', "
    "     COALESCE(j.name, ''), 'cluster', COALESCE(j.cluster, ''))::text END, "
    "  'DatasetFeature', CASE WHEN j.dataset_size IS NULL AND j.dataset_name IS NULL "
    "     THEN '' ELSE json_build_object('dataset_size', COALESCE(j.dataset_size, 0), "
    "     'dataset_name', COALESCE(j.dataset_name, ''))::text END, "
    "  'ModelFeature', CASE WHEN j.model_variable_count IS NULL AND j.model_op_count IS NULL "
    "     THEN '' ELSE json_build_object('variable_count', COALESCE(j.model_variable_count, 0), "
    "     'op_count', COALESCE(j.model_op_count, 0), 'embedding_dimension', "
    "     COALESCE(j.model_embedding_dimension, 0), 'total_variable_size', "
    "     COALESCE(j.model_total_variable_size, 0), 'flops', COALESCE(j.model_flops, 0), "
    "     'recv_op_count', COALESCE(j.model_recv_op_count, 0))::text END, "
    "  'JobRuntime', COALESCE((SELECT json_agg(r ORDER BY event_time_ms, event_id)::text "
    "     FROM rec), ''), "
    "  'ExitReason', COALESCE(j.exit_reason, ''), "
    "  'Optimization', '', 'Resource', '', 'CustomizedData', '', 'Type', '')::text "
    "FROM j";

/* The connection: opened when first needed, opened again after a failure. */
static PGconn *conn_get(gw_t *gw, char *errstr, size_t size)
{
    dlb_pg_t *pg = NULL;

    if (gw->pg && PQstatus(gw->pg) == CONNECTION_OK)
        return gw->pg;
    gw_pg_close(gw);
    if (dlb_pg_connect(&pg, gw->conf->pg_dsn, gw->conf->pg_schema, errstr, size)) {
        dlb_metrics_dep(DLB_DEP_POSTGRES, 0);
        return NULL;
    }
    gw->pg = dlb_pg_detach(pg);
    return gw->pg;
}

int gw_pg_job_metrics(gw_t *gw, const char *job_uid, char **json, char *errstr, size_t size)
{
    const char *const values[] = {job_uid};
    PGresult *res = NULL;
    PGconn *conn;
    int err;

    *json = NULL;
    if (!(conn = conn_get(gw, errstr, size)))
        return DLB_ERR_TRANSIENT;
    err = dlb_pg_conn_exec(conn, job_metrics_sql, 1, values, NULL, 0, &res, "job metrics", errstr,
                           size);
    dlb_metrics_dep(DLB_DEP_POSTGRES, err != DLB_ERR_TRANSIENT);
    if (err) {
        if (err == DLB_ERR_TRANSIENT)
            gw_pg_close(gw);
        return err;
    }
    if (PQntuples(res) == 0) {
        PQclear(res);
        return DLB_ERR_NOTFOUND;
    }
    if (!(*json = strdup(PQgetvalue(res, 0, 0))))
        err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    PQclear(res);
    return err;
}

void gw_pg_close(gw_t *gw)
{
    if (gw->pg)
        PQfinish(gw->pg);
    gw->pg = NULL;
}
