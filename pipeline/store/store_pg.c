/* The PostgreSQL store's history (store_pg.h): the events and plans every
 * consumer writes, and a job's state rebuilt from them. The connection is
 * store_pg_conn.c's, the migrations store_migrate.c's, the optimizer's reads
 * store_pg_read.c's. */
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
#include "err.h"
#include "log.h"

/* Bounds of the rebuild query: a job's history of job and node events is
 * normally tens to thousands of rows; these only stop a runaway job from
 * exhausting memory (the newest events win when a bound is hit). */
#define DLB_PG_MAX_JOB_EVENTS  10000
#define DLB_PG_MAX_NODE_EVENTS 100000

/* A job event is "newer" than the jobs row when (event time, event id) is
 * greater: the order dlb_job_state_apply() uses. A newer event's sections win;
 * an older (late) one only fills sections never reported. */
#define NEWER "(EXCLUDED.updated_ms, EXCLUDED.last_event_id) > (j.updated_ms, j.last_event_id)"
#define MERGE(c)                                                                                   \
    c " = CASE WHEN " NEWER " THEN COALESCE(EXCLUDED." c ", j." c ") ELSE COALESCE(j." c           \
      ", EXCLUDED." c ") END, "

/* An event id names one event of its job. The keys of the time-partitioned
 * tables (migration 012) hold the event time too, so a redelivery (same
 * time) meets its row through ON CONFLICT; an id the job already has at
 * another time is skipped by looking it up first, through each partition's
 * key (event_id, job_uid, ...), as the keys of migration 006 refused it. */
#define ID_IS_NEW(t) " WHERE NOT EXISTS (SELECT 1 FROM " t " WHERE event_id = $1 AND job_uid = $2)"

/* clang-format off */
/* The jobs row changes only when the event is new: the data-modifying CTE
 * returns no row for a duplicate, so the whole statement is idempotent. */
static const dlb_pg_stmt_t st_job = {DLB_PG_ST_JOB, "dlb_job",
    "WITH ins AS (INSERT INTO job_events (event_id, job_uid, event_time_ms, state, "
    "exit_reason, raw) SELECT $1, $2, $3::bigint, $4, $5, $6::bytea" ID_IS_NEW("job_events")
    " ON CONFLICT (job_uid, event_id, event_time_ms) DO NOTHING RETURNING 1) "
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
    "ELSE j.last_event_id END", 1};

/* The sample's pods into its row's pod_* arrays (migration 005), in the
 * order sent; a repeated pod name keeps its first copy (DISTINCT ON), as
 * runtime_pods' primary key did. */
static const dlb_pg_stmt_t st_runtime = {DLB_PG_ST_RUNTIME, "dlb_runtime",
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
    "ON CONFLICT (job_uid, event_time_ms, event_id) DO NOTHING", 1};

static const dlb_pg_stmt_t st_node = {DLB_PG_ST_NODE, "dlb_node",
    "INSERT INTO node_events (event_id, job_uid, event_time_ms, kind, pod_name, "
    "pod_type, pod_index, node_name, phase, reason, message, memory_requested, "
    "cpu_requested, raw) SELECT $1, $2, $3::bigint, $4, $5, $6, $7::integer, $8, $9, "
    "$10, $11, $12::bigint, $13::float8, $14::bytea" ID_IS_NEW("node_events")
    " ON CONFLICT (job_uid, event_id, event_time_ms) DO NOTHING", 1};

#define REQUEST_INSERT                                                                             \
    "INSERT INTO plan_requests (event_id, job_uid, event_time_ms, stage, oom_pod, "               \
    "raw) SELECT $1, $2, $3::bigint, $4, $5, $6::bytea" ID_IS_NEW("plan_requests")                \
    " ON CONFLICT (job_uid, event_id, event_time_ms) DO NOTHING"
static const dlb_pg_stmt_t st_request = {DLB_PG_ST_REQUEST, "dlb_request", REQUEST_INSERT};

/* The same insert, and the job's plan of id $7 as it was before it: a
 * data-modifying WITH runs to completion whether or not it is read, and the
 * plans table is not the one it writes. One round trip where an optimizer
 * made two for every request. */
static const dlb_pg_stmt_t st_request_plan = {DLB_PG_ST_REQUEST_PLAN, "dlb_request_plan",
    "WITH ins AS (" REQUEST_INSERT ") SELECT raw FROM plans WHERE job_uid = $2 AND plan_id = $7"};

/* One plan per plan id and per trigger of a job, at any time: looked up
 * first, as for the events; the keys (each with the event time, the
 * request's) catch a redone batch. */
static const dlb_pg_stmt_t st_plan = {DLB_PG_ST_PLAN, "dlb_plan",
    "INSERT INTO plans (plan_id, job_uid, trigger_event_id, stage, optimizer, "
    "reason, event_time_ms, groups, pods, raw, actions) SELECT $1, $2, "
    "NULLIF($3, ''), $4, $5, $6, $7::bigint, $8::jsonb, $9::jsonb, $10::bytea, "
    "$11::jsonb WHERE NOT EXISTS (SELECT 1 FROM plans WHERE plan_id = $1 AND job_uid = $2) "
    "AND NOT EXISTS (SELECT 1 FROM plans WHERE trigger_event_id = NULLIF($3, '') "
    "AND job_uid = $2) ON CONFLICT DO NOTHING"};

/* Idempotent by (plan_id, pod_name, oom_event_id, job_uid), whatever the
 * time (the key holds it too, migration 012): a redone batch writes the same
 * rows. */
static const dlb_pg_stmt_t st_oom_plan = {DLB_PG_ST_OOM_PLAN, "dlb_oom_plan",
    "INSERT INTO oom_plans (job_uid, pod_name, oom_event_id, plan_id, memory, "
    "event_time_ms) SELECT $1, $2, $3, $4, $5::bigint, $6::bigint "
    "WHERE NOT EXISTS (SELECT 1 FROM oom_plans WHERE plan_id = $4 AND pod_name = $2 "
    "AND oom_event_id = $3 AND job_uid = $1) ON CONFLICT DO NOTHING"};

/* Every event of a job in replay order; each branch takes the newest rows
 * through its (job_uid, event_time_ms, event_id) index. */
static const dlb_pg_stmt_t st_job_replay = {DLB_PG_ST_JOB_REPLAY, "dlb_job_replay",
    "SELECT kind, raw FROM ("
    "(SELECT 'j' AS kind, event_time_ms, event_id, raw FROM job_events WHERE job_uid = $1 "
    "ORDER BY event_time_ms DESC, event_id DESC LIMIT $3::integer + 1) "
    "UNION ALL "
    /* Only the samples the window keeps (dlb_job_state_apply): the newest
     * $2 whose pods add up to at most $5, at least one. Decoding the others
     * to drop them cost seconds for a job of 16,384 pods a sample. */
    "(SELECT 'r', event_time_ms, event_id, raw FROM ("
    "SELECT event_time_ms, event_id, raw, row_number() OVER w AS n, "
    "sum(cardinality(pod_names)) OVER w AS pods FROM runtime_samples WHERE job_uid = $1 "
    "WINDOW w AS (ORDER BY event_time_ms DESC, event_id DESC ROWS UNBOUNDED PRECEDING) "
    "ORDER BY event_time_ms DESC, event_id DESC LIMIT $2::integer) r "
    "WHERE r.pods <= $5::bigint OR r.n = 1) "
    "UNION ALL "
    "(SELECT 'n', event_time_ms, event_id, raw FROM node_events WHERE job_uid = $1 "
    "ORDER BY event_time_ms DESC, event_id DESC LIMIT $4::integer + 1)"
    ") e ORDER BY event_time_ms, event_id"};
/* clang-format on */

/* ---- writes ---------------------------------------------------------------- */

static int pg_catalog(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    if (pg->cat)
        return 0;
    return dlb_catalog_new(&pg->cat, errstr, errstr_size);
}

int dlb_pg_raw_bytes(dlb_pg_t *pg, const dlb_event_t *ev, const void **raw, size_t *raw_len,
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
    return dlb_pg_run(pg, &st_job, 26, v, lens, DLB_PG_INPUT, NULL, errstr, errstr_size);
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
    err = dlb_pg_run(pg, &st_runtime, 7, v, lens, DLB_PG_INPUT, NULL, errstr, errstr_size);
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
    return dlb_pg_run(pg, &st_node, 14, v, lens, DLB_PG_INPUT, NULL, errstr, errstr_size);
}

/* With plan_id, the job's plan of that id comes back in *res (st_request_plan). */
static int put_request(dlb_pg_t *pg, const dlb_plan_request_t *e, const void *raw, size_t raw_len,
                       const char *plan_id, PGresult **res, char *errstr, size_t errstr_size)
{
    char t[24];
    const char *v[7];
    int lens[7] = {0};

    v[0] = e->event_id;
    v[1] = e->job_uid;
    v[2] = I64(t, e->event_time_ms);
    v[3] = e->stage;
    v[4] = e->has_oom_pod ? e->oom_pod : NULL;
    v[5] = raw;
    lens[5] = (int)raw_len;
    v[6] = plan_id;
    if (!plan_id)
        return dlb_pg_run(pg, &st_request, 6, v, lens, DLB_PG_INPUT, NULL, errstr, errstr_size);
    return dlb_pg_run(pg, &st_request_plan, 7, v, lens, DLB_PG_INPUT | DLB_PG_BINARY, res, errstr,
                      errstr_size);
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

    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)))
        return err;
    if (!raw || !raw_len) {
        dlb_event_t ev = {.type = DLB_EV_PLAN};
        ev.u.plan = *plan; /* shallow: encode only reads it */
        if ((err = dlb_pg_raw_bytes(pg, &ev, &raw, &raw_len, &owned, errstr, errstr_size)))
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
    err = dlb_pg_write(pg, &st_plan, 11, v, lens, DLB_PG_INPUT, errstr, errstr_size);
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
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_raw_bytes(pg, ev, &raw, &raw_len, &owned, errstr, errstr_size)))
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
        err = put_request(pg, &ev->u.req, raw, raw_len, NULL, NULL, errstr, errstr_size);
        break;
    }
    free(owned);
    return err;
}

int dlb_pg_put_request(dlb_pg_t *pg, const dlb_event_t *ev, const void *raw, size_t raw_len,
                       const char *plan_id, void **plan, size_t *plan_len, char *errstr,
                       size_t errstr_size)
{
    PGresult *res = NULL;
    void *owned = NULL;
    int err;

    *plan = NULL;
    *plan_len = 0;
    if (ev->type != DLB_EV_PLAN_REQUEST)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: a %s event is not a plan request",
                          dlb_event_type_name(ev->type));
    if (raw_len > (size_t)INT32_MAX)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "postgresql: event too large");
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_raw_bytes(pg, ev, &raw, &raw_len, &owned, errstr, errstr_size)))
        return err;
    /* The same request earlier in this transaction: its plan is looked up
     * where it is stored. */
    if (dlb_pg_deferred(pg, &st_plan, 1, ev->u.req.job_uid, 0, plan_id) &&
        (err = dlb_pg_flush(pg, errstr, errstr_size))) {
        free(owned);
        return err;
    }
    if (!(err = put_request(pg, &ev->u.req, raw, raw_len, plan_id, &res, errstr, errstr_size)))
        err = dlb_pg_first_bytes(res, plan, plan_len, errstr, errstr_size);
    PQclear(res);
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
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)))
        return err;
    v[0] = job_uid;
    v[1] = op->pod_name;
    v[2] = op->oom_event_id;
    v[3] = op->plan_id;
    v[4] = I64(mem, op->memory);
    v[5] = I64(t, op->event_time_ms);
    return dlb_pg_write(pg, &st_oom_plan, 6, v, NULL, DLB_PG_INPUT, errstr, errstr_size);
}

/* ---- a job's state ---------------------------------------------------------- */

int dlb_pg_decode_cell(dlb_pg_t *pg, const PGresult *res, int row, int col, dlb_event_t *ev,
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
    char win[24], jmax[24], nmax[24], pods[24];
    const char *v[5] = {job_uid, win, jmax, nmax, pods};
    dlb_job_state_t st = {0};
    PGresult *res = NULL;
    int err, over_jobs = 0, over_nodes = 0;

    memset(out, 0, sizeof(*out));
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)))
        return err;
    snprintf(win, sizeof(win), "%d", window_size < 1 ? 1 : window_size);
    snprintf(jmax, sizeof(jmax), "%d", DLB_PG_MAX_JOB_EVENTS);
    snprintf(nmax, sizeof(nmax), "%d", DLB_PG_MAX_NODE_EVENTS);
    snprintf(pods, sizeof(pods), "%d", DLB_WINDOW_PODS_MAX);
    if ((err =
             dlb_pg_run(pg, &st_job_replay, 5, v, NULL, DLB_PG_BINARY, &res, errstr, errstr_size)))
        return err;
    if ((err = dlb_job_state_begin_rebuild(&st))) {
        dlb_seterr(errstr, errstr_size, err, "out of memory");
        goto out;
    }
    /* One row past each bound says the bound was hit; that row is the
     * oldest of its kind, so the first one met in time order. */
    for (int i = 0; i < PQntuples(res); i++) {
        const char *kind = PQgetvalue(res, i, 0);
        over_jobs += *kind == 'j';
        over_nodes += *kind == 'n';
    }
    over_jobs = over_jobs > DLB_PG_MAX_JOB_EVENTS;
    over_nodes = over_nodes > DLB_PG_MAX_NODE_EVENTS;
    if (over_jobs || over_nodes)
        dlb_warn("job %s: more than %d job events or %d node events stored; its state is "
                 "rebuilt from the newest ones only (older ones are refused, the history "
                 "keeps them)",
                 job_uid, DLB_PG_MAX_JOB_EVENTS, DLB_PG_MAX_NODE_EVENTS);
    for (int i = 0; i < PQntuples(res); i++) {
        const char *kind = PQgetvalue(res, i, 0);
        dlb_event_t ev = {0};
        if (*kind == 'j' && over_jobs) {
            over_jobs = 0;
            continue;
        }
        if (*kind == 'n' && over_nodes) {
            over_nodes = 0;
            continue;
        }
        if ((err = dlb_pg_decode_cell(pg, res, i, 1, &ev, errstr, errstr_size)))
            goto out;
        err = dlb_job_state_apply(&st, &ev, window_size);
        dlb_event_clear(&ev);
        if (err) {
            dlb_seterr(errstr, errstr_size, err, "out of memory");
            goto out;
        }
    }
    dlb_job_state_end_rebuild(&st);
    if (st.pods_refused)
        dlb_warn("job %s: %zu node event(s) name pods past the %d a job's state keeps; not "
                 "folded into its state (the history keeps them)",
                 job_uid, st.pods_refused, DLB_JOB_PODS_MAX);
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

int dlb_pg_job_meta(dlb_pg_t *pg, const char *job_uid, dlb_job_meta_t *meta, int *found,
                    char *errstr, size_t errstr_size)
{
    /* In the order of dlb_meta_attr_names. */
    static const char sql[] = "SELECT COALESCE(user_name, ''), COALESCE(grp, ''), "
                              "COALESCE(app, ''), COALESCE(cluster, ''), "
                              "COALESCE(namespace, ''), COALESCE(scenario, ''), "
                              "COALESCE(framework, ''), COALESCE(name, '') "
                              "FROM jobs WHERE uid = $1";
    const char *const values[] = {job_uid};
    PGresult *res;
    int err;

    memset(meta, 0, sizeof(*meta));
    *found = 0;
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_exec(pg, sql, 1, values, NULL, 0, &res, "job meta", errstr, errstr_size)))
        return err;
    if (PQntuples(res) == 1) {
        *found = 1;
        for (int i = 0; i < DLB_META_ATTRS && i < PQnfields(res); i++)
            snprintf(dlb_meta_attr(meta, (size_t)i), DLB_NAME_MAX, "%s", PQgetvalue(res, 0, i));
    }
    PQclear(res);
    return 0;
}

int dlb_pg_count(dlb_pg_t *pg, const char *table, int64_t *count, char *errstr, size_t errstr_size)
{
    char *ident, sql[256];
    PGresult *res;
    int err;

    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_conn_ident(pg->conn, table, &ident, errstr, errstr_size)))
        return err;
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", ident);
    PQfreemem(ident);
    if ((err = dlb_pg_exec(pg, sql, 0, NULL, NULL, 0, &res, "count", errstr, errstr_size)))
        return err;
    *count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}
