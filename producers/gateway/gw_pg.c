/* get_job_metrics: a job's history from the environment's PostgreSQL
 * schema, as the JSON DLRover's Go Brain returned (json.Marshal of its
 * job_metrics row: Go field names, every value a string, the feature
 * columns JSON text themselves). The features come from the job's stored
 * events (every field DLRover sent is in them), the runtime records (the
 * newest 60 samples, pod usage by type and index) from one statement. */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "codec.h"
#include "err.h"
#include "gw_internal.h"
#include "log.h"
#include "store_pg.h"
#include "store_pg_conn.h"

/* The Go Brain kept 60 runtime records a job (MaxRuntimeInfoRecords). How
 * many job events there are, and the runtime records as JSON. */
static const char runtime_sql[] =
    "WITH rt AS (SELECT * FROM runtime_samples WHERE job_uid = $1 "
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
    "SELECT (SELECT count(*) FROM job_events WHERE job_uid = $1), "
    "  COALESCE((SELECT json_agg(r ORDER BY event_time_ms, event_id)::text FROM rec), '')";

/* The job's events, oldest first: folded as the Go Brain merged its columns. */
static const char events_sql[] =
    "SELECT raw FROM job_events WHERE job_uid = $1 ORDER BY event_time_ms, event_id";

/* What the job events say, folded: each section as DLRover's Go Brain kept
 * it (hyper-params and the dataset merge non-zero fields, the rest is
 * replaced; optimizations are appended). */
typedef struct fold {
    dlb_job_event_t j; /* sections as folded (heap parts owned) */
    cJSON *optimizations;
} fold_t;

/* Swap a whole section in: the fold's old one goes to e, which the caller
 * clears with its heap parts. */
static void swap_in(int *has, int e_has, void *field, void *e_field, size_t size)
{
    unsigned char tmp[sizeof(dlb_model_t) > sizeof(dlb_workflow_t) ? sizeof(dlb_model_t)
                                                                   : sizeof(dlb_workflow_t)];

    if (!e_has || size > sizeof(tmp))
        return;
    memcpy(tmp, field, size);
    memcpy(field, e_field, size);
    memcpy(e_field, tmp, size);
    *has = 1;
}
#define SWAP(has, field) swap_in(&j->has, e->has, &j->field, &e->field, sizeof(j->field))

/* A dataset text replaces the fold's when it is not empty. */
static void take_text(char **dst, char **src)
{
    if (*src && **src) {
        free(*dst);
        *dst = *src;
        *src = NULL;
    }
}

static int fold_event(fold_t *f, dlb_job_event_t *e)
{
    dlb_job_event_t *j = &f->j;

    if (e->has_hyper_params) {
        dlb_hyper_params_t *h = &j->hyper_params;
        j->has_hyper_params = 1;
        h->batch_size = e->hyper_params.batch_size ? e->hyper_params.batch_size : h->batch_size;
        h->epoch = e->hyper_params.epoch ? e->hyper_params.epoch : h->epoch;
        h->max_steps = e->hyper_params.max_steps ? e->hyper_params.max_steps : h->max_steps;
    }
    if (e->has_dataset) {
        dlb_dataset_t *d = &j->dataset, *n = &e->dataset;
        j->has_dataset = 1;
        if (n->name[0])
            memcpy(d->name, n->name, sizeof(d->name));
        d->size = n->size ? n->size : d->size;
        d->sparse_item_count = n->sparse_item_count ? n->sparse_item_count : d->sparse_item_count;
        d->storage_size = n->storage_size ? n->storage_size : d->storage_size;
        take_text(&d->sparse_features, &n->sparse_features);
        take_text(&d->sparse_feature_groups, &n->sparse_feature_groups);
        take_text(&d->sparse_feature_shapes, &n->sparse_feature_shapes);
        take_text(&d->dense_features, &n->dense_features);
        take_text(&d->dense_feature_shapes, &n->dense_feature_shapes);
    }
    SWAP(has_meta, meta);
    SWAP(has_exit_reason, exit_reason);
    SWAP(has_job_type, job_type);
    SWAP(has_model, model);
    SWAP(has_workflow, workflow);
    SWAP(has_resource, resource);
    SWAP(has_customized_data, customized_data);
    if (e->has_optimization && e->optimization) {
        cJSON *o = cJSON_Parse(e->optimization);
        if (o && !cJSON_AddItemToArray(f->optimizations, o)) {
            cJSON_Delete(o);
            return -1;
        }
    }
    return 0;
}
#undef SWAP

/* ---- the Go Brain's JSON: its field names, every value a string ------------ */

static int add_text(cJSON *o, const char *key, cJSON *value)
{
    char *text = value ? cJSON_PrintUnformatted(value) : NULL;
    int ok = cJSON_AddStringToObject(o, key, text ? text : "") != NULL;

    cJSON_free(text);
    cJSON_Delete(value);
    return ok ? 0 : -1;
}

#define NUM(o, k, v) cJSON_AddNumberToObject(o, k, (double)(v))
#define STR(o, k, v) cJSON_AddStringToObject(o, k, (v) ? (v) : "")

static cJSON *hyper_json(const dlb_job_event_t *j)
{
    cJSON *o;

    if (!j->has_hyper_params || !(o = cJSON_CreateObject()))
        return NULL;
    NUM(o, "batch_size", j->hyper_params.batch_size);
    NUM(o, "epoch", j->hyper_params.epoch);
    if (j->hyper_params.max_steps)
        NUM(o, "max_steps", j->hyper_params.max_steps);
    return o;
}

static cJSON *workflow_json(const dlb_job_event_t *j)
{
    const dlb_workflow_t *w = &j->workflow;
    cJSON *o;

    if (!j->has_workflow || !(o = cJSON_CreateObject()))
        return NULL;
    STR(o, "user_id", w->user_id);
    STR(o, "job_name", w->job_name);
    STR(o, "code_address", w->code_address);
    STR(o, "workflow_id", w->workflow_id);
    if (w->node_id[0])
        STR(o, "node_id", w->node_id);
    if (w->odps_project[0])
        STR(o, "odps_project", w->odps_project);
    if (w->is_prod)
        cJSON_AddTrueToObject(o, "is_prod");
    return o;
}

static cJSON *dataset_json(const dlb_job_event_t *j)
{
    const dlb_dataset_t *d = &j->dataset;
    cJSON *o;

    if (!j->has_dataset || !(o = cJSON_CreateObject()))
        return NULL;
    NUM(o, "dataset_size", d->size);
    STR(o, "dataset_name", d->name);
    if (d->sparse_item_count)
        NUM(o, "sparse_item_count", d->sparse_item_count);
    if (d->sparse_features)
        STR(o, "sparse_features", d->sparse_features);
    if (d->sparse_feature_groups)
        STR(o, "sparse_feature_groups", d->sparse_feature_groups);
    if (d->sparse_feature_shapes)
        STR(o, "sparse_feature_shapes", d->sparse_feature_shapes);
    if (d->dense_features)
        STR(o, "dense_features", d->dense_features);
    if (d->dense_feature_shapes)
        STR(o, "dense_feature_shapes", d->dense_feature_shapes);
    if (d->storage_size)
        NUM(o, "storage_size", d->storage_size);
    return o;
}

static cJSON *model_json(const dlb_job_event_t *j)
{
    const dlb_model_t *m = &j->model;
    cJSON *o, *a;

    if (!j->has_model || !(o = cJSON_CreateObject()))
        return NULL;
    NUM(o, "variable_count", m->variable_count);
    NUM(o, "op_count", m->op_count);
    if (m->embedding_dimension)
        NUM(o, "embedding_dimension", m->embedding_dimension);
    if (m->total_variable_size)
        NUM(o, "total_variable_size", m->total_variable_size);
    if (m->max_variable_size)
        NUM(o, "max_variable_size", m->max_variable_size);
    if (m->update_op_count)
        NUM(o, "update_op_count", m->update_op_count);
    if (m->read_op_count)
        NUM(o, "read_op_count", m->read_op_count);
    if (m->input_fetch_dur)
        NUM(o, "input_fetch_dur", m->input_fetch_dur);
    if (m->flops)
        NUM(o, "flops", m->flops);
    if (m->recv_op_count)
        NUM(o, "recv_op_count", m->recv_op_count);
    if (m->kv_embedding_dims_cnt && (a = cJSON_AddArrayToObject(o, "kv_embedding_dims")))
        for (size_t i = 0; i < m->kv_embedding_dims_cnt; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)m->kv_embedding_dims[i]));
    if (m->tensor_alloc_bytes_cnt && (a = cJSON_AddObjectToObject(o, "tensor_alloc_bytes")))
        for (size_t i = 0; i < m->tensor_alloc_bytes_cnt; i++)
            NUM(a, m->tensor_alloc_bytes[i].key, m->tensor_alloc_bytes[i].value);
    return o;
}

/* A field that is text already (DLRover sends JSON texts): as it came. */
static int add_str(cJSON *o, const char *key, int has, const char *v)
{
    return cJSON_AddStringToObject(o, key, has && v ? v : "") ? 0 : -1;
}

static char *metrics_json(const char *uid, const fold_t *f, const char *runtime)
{
    const dlb_job_event_t *j = &f->j;
    cJSON *o = cJSON_CreateObject();
    char *out = NULL;

    if (!o || !cJSON_AddStringToObject(o, "UID", uid) ||
        add_text(o, "HyperParamsFeature", hyper_json(j)) ||
        add_text(o, "JobFeature", workflow_json(j)) ||
        add_text(o, "DatasetFeature", dataset_json(j)) ||
        add_text(o, "ModelFeature", model_json(j)) || !STR(o, "JobRuntime", runtime) ||
        add_str(o, "ExitReason", j->has_exit_reason, j->exit_reason) ||
        add_text(o, "Optimization",
                 cJSON_GetArraySize(f->optimizations) ? cJSON_Duplicate(f->optimizations, 1)
                                                      : NULL) ||
        add_str(o, "Resource", j->has_resource, j->resource) ||
        add_str(o, "CustomizedData", j->has_customized_data, j->customized_data) ||
        add_str(o, "Type", j->has_job_type, j->job_type))
        goto out;
    out = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    return out;
}
#undef NUM
#undef STR

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
    fold_t f = {.optimizations = cJSON_CreateArray()};
    PGresult *rt = NULL, *ev = NULL;
    PGconn *conn;
    int err;

    *json = NULL;
    if (!f.optimizations)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if (!(conn = conn_get(gw, errstr, size))) {
        err = DLB_ERR_TRANSIENT;
        goto out;
    }
    if ((err = dlb_pg_conn_exec(conn, runtime_sql, 1, values, NULL, 0, &rt, "job runtime", errstr,
                                size)) ||
        (err = dlb_pg_conn_exec(conn, events_sql, 1, values, NULL, DLB_PG_BINARY, &ev, "job events",
                                errstr, size))) {
        if (err == DLB_ERR_TRANSIENT)
            gw_pg_close(gw);
        goto out;
    }
    if (!strcmp(PQgetvalue(rt, 0, 0), "0") && !PQgetvalue(rt, 0, 1)[0]) {
        err = DLB_ERR_NOTFOUND;
        goto out;
    }
    for (int i = 0; i < PQntuples(ev); i++) {
        char sub[512];
        dlb_event_t e;
        int derr;

        pthread_mutex_lock(&gw->lock);
        derr = dlb_codec_decode(gw->cat, PQgetvalue(ev, i, 0), (size_t)PQgetlength(ev, i, 0), &e,
                                sub, sizeof(sub));
        pthread_mutex_unlock(&gw->lock);
        if (derr) { /* stored by a consumer that decoded it: not expected */
            dlb_warn("gateway: a stored job event of %s does not decode: %s; left out", job_uid,
                     sub);
            continue;
        }
        if (e.type == DLB_EV_JOB && fold_event(&f, &e.u.job)) {
            dlb_event_clear(&e);
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        dlb_event_clear(&e);
    }
    if (!(*json = metrics_json(job_uid, &f, PQgetvalue(rt, 0, 1))))
        err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
out:
    PQclear(rt);
    PQclear(ev);
    dlb_job_event_clear(&f.j);
    cJSON_Delete(f.optimizations);
    return err;
}

void gw_pg_close(gw_t *gw)
{
    if (gw->pg)
        PQfinish(gw->pg);
    gw->pg = NULL;
}
