/* PostgreSQL store and Redis cache against real servers.
 *
 * Run by tests/system/02-store.sh, which starts both and exports
 * DLBRAIN_PG_DSN, DLBRAIN_REDIS_HOST, DLBRAIN_REDIS_PORT, and DLB_REDIS_CTL /
 * DLB_REDIS_DIR to stop and restart Redis. Every test works in its own
 * PostgreSQL schema and Redis key prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis.h>
#include <libpq-fe.h>

#include <avro.h>
#include <cJSON.h>

#include "cache_redis.h"
#include "catalog.h"
#include "codec.h"
#include "codec_internal.h"
#include "conf.h"
#include "embedded.h"
#include "err.h"
#include "event.h"
#include "opt_plan.h"
#include "rules.h"
#include "state.h"
#include "store_config.h"
#include "store_pg.h"

#define T0      1700000000000LL
#define HOUR_MS 3600000LL
#define GIB     ((int64_t)1024 * 1024 * 1024)

static dlb_catalog_t *cat;
static char errstr[1024];

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);

    if (!v || !*v)
        fail_msg("%s is not set: run tests/system/02-store.sh", name);
    return v;
}

static size_t migrations_cnt(void)
{
    size_t n = 0;

    for (const dlb_embedded_t *m = dlb_embedded_migrations; m->name; m++)
        n++;
    return n;
}

/* ---- event builders ------------------------------------------------------ */

static void ev_job(dlb_event_t *ev, const char *id, const char *uid, int64_t t)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_JOB;
    snprintf(ev->u.job.event_id, DLB_ID_MAX, "%s", id);
    snprintf(ev->u.job.job_uid, DLB_ID_MAX, "%s", uid);
    ev->u.job.event_time_ms = t;
}

static void job_meta(dlb_event_t *ev, const char *scenario, const char *name)
{
    dlb_job_event_t *j = &ev->u.job;

    j->has_meta = 1;
    snprintf(j->meta.name, sizeof(j->meta.name), "%s", name);
    snprintf(j->meta.user, sizeof(j->meta.user), "alice");
    snprintf(j->meta.group, sizeof(j->meta.group), "ads");
    snprintf(j->meta.app, sizeof(j->meta.app), "trainer");
    snprintf(j->meta.cluster, sizeof(j->meta.cluster), "c1");
    snprintf(j->meta.ns, sizeof(j->meta.ns), "ml");
    snprintf(j->meta.scenario, sizeof(j->meta.scenario), "%s", scenario);
    snprintf(j->meta.framework, sizeof(j->meta.framework), "tensorflow");
}

static void job_state(dlb_event_t *ev, const char *state)
{
    ev->u.job.has_state = 1;
    snprintf(ev->u.job.state, sizeof(ev->u.job.state), "%s", state);
}

/* A sample with npods pods; the numbers derive from t so samples differ. */
static void ev_rt(dlb_event_t *ev, const char *id, const char *uid, int64_t t, int npods)
{
    dlb_runtime_sample_t *s = &ev->u.rt;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_RUNTIME;
    snprintf(s->event_id, DLB_ID_MAX, "%s", id);
    snprintf(s->job_uid, DLB_ID_MAX, "%s", uid);
    s->event_time_ms = t;
    s->global_step = (t - T0) / 100;
    s->speed = 12.25 + (double)((t / 1000) % 7);
    s->pods = calloc((size_t)npods, sizeof(*s->pods));
    assert_true(npods == 0 || s->pods != NULL);
    s->pods_cnt = (size_t)npods;
    for (int i = 0; i < npods; i++) {
        dlb_pod_usage_t *p = &s->pods[i];
        snprintf(p->name, sizeof(p->name), "%s-%s-%d", uid, i ? "worker" : "ps", i);
        snprintf(p->type, sizeof(p->type), "%s", i ? "worker" : "ps");
        p->index = i;
        p->cpu_used = 1.5 + i + (double)((t / 1000) % 5) / 10.0;
        p->cpu_requested = 8.0;
        p->memory_used = 3 * GIB + (t % 100000) * 1024 + i;
        p->memory_requested = 16 * GIB;
        /* runtime_sample v2: workers report their own speed, the PS does not.
         * A third is not exactly a double's decimal, so any text hop shows. */
        if (i) {
            p->has_speed = 1;
            p->speed = (double)i / 3.0 + (double)((t / 1000) % 11);
        }
    }
}

static void ev_node(dlb_event_t *ev, const char *id, const char *uid, int64_t t, const char *pod,
                    const char *kind)
{
    dlb_node_event_t *n = &ev->u.node;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_NODE;
    snprintf(n->event_id, DLB_ID_MAX, "%s", id);
    snprintf(n->job_uid, DLB_ID_MAX, "%s", uid);
    n->event_time_ms = t;
    snprintf(n->kind, sizeof(n->kind), "%s", kind);
    snprintf(n->pod_name, sizeof(n->pod_name), "%s", pod);
    snprintf(n->pod_type, sizeof(n->pod_type), "worker");
    n->pod_index = 1;
    snprintf(n->node_name, sizeof(n->node_name), "node-7");
    if (!strcmp(kind, "pod_phase")) {
        n->has_phase = 1;
        snprintf(n->phase, sizeof(n->phase), "Running");
    }
    snprintf(n->reason, sizeof(n->reason), "%s", !strcmp(kind, "oom_killed") ? "OOMKilled" : "");
    n->has_memory_requested = 1;
    n->memory_requested = 16 * GIB;
}

static void ev_req(dlb_event_t *ev, const char *id, const char *uid, int64_t t)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_PLAN_REQUEST;
    snprintf(ev->u.req.event_id, DLB_ID_MAX, "%s", id);
    snprintf(ev->u.req.job_uid, DLB_ID_MAX, "%s", uid);
    ev->u.req.event_time_ms = t;
    snprintf(ev->u.req.stage, sizeof(ev->u.req.stage), "%s", DLB_STAGE_CREATE);
    ev->u.req.has_oom_pod = 1;
    snprintf(ev->u.req.oom_pod, sizeof(ev->u.req.oom_pod), "%s-worker-1", uid);
}

static void ev_plan(dlb_event_t *ev, const char *plan_id, const char *uid, const char *trigger)
{
    dlb_plan_t *p = &ev->u.plan;
    dlb_group_resource_t *g;
    dlb_pod_resource_t *pr;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_PLAN;
    snprintf(p->plan_id, DLB_ID_MAX, "%s", plan_id);
    snprintf(p->event_id, DLB_ID_MAX, "%s", plan_id);
    snprintf(p->job_uid, DLB_ID_MAX, "%s", uid);
    snprintf(p->trigger_event_id, DLB_ID_MAX, "%s", trigger);
    p->event_time_ms = T0;
    snprintf(p->stage, sizeof(p->stage), "%s", DLB_STAGE_CREATE);
    snprintf(p->optimizer, sizeof(p->optimizer), "dlrover.ps_create");
    snprintf(p->reason, sizeof(p->reason), "cold start: no similar job");
    assert_non_null(g = dlb_plan_add_group(p, "ps"));
    g->count = 4;
    g->resource.cpu = 12.0;
    g->resource.memory = 16 * GIB;
    assert_non_null(pr = dlb_plan_add_pod(p, "w-0"));
    pr->resource.memory = 20 * GIB;
}

/* ---- equality ------------------------------------------------------------ */

static void assert_job_equal(const dlb_job_event_t *a, const dlb_job_event_t *b)
{
    assert_string_equal(a->event_id, b->event_id);
    assert_string_equal(a->job_uid, b->job_uid);
    assert_int_equal(a->event_time_ms, b->event_time_ms);
    assert_int_equal(a->has_meta, b->has_meta);
    if (a->has_meta) {
        assert_string_equal(a->meta.name, b->meta.name);
        assert_string_equal(a->meta.user, b->meta.user);
        assert_string_equal(a->meta.group, b->meta.group);
        assert_string_equal(a->meta.app, b->meta.app);
        assert_string_equal(a->meta.cluster, b->meta.cluster);
        assert_string_equal(a->meta.ns, b->meta.ns);
        assert_string_equal(a->meta.scenario, b->meta.scenario);
        assert_string_equal(a->meta.framework, b->meta.framework);
    }
    assert_int_equal(a->has_state, b->has_state);
    if (a->has_state)
        assert_string_equal(a->state, b->state);
    assert_int_equal(a->has_hyper_params, b->has_hyper_params);
    if (a->has_hyper_params) {
        assert_int_equal(a->hyper_params.batch_size, b->hyper_params.batch_size);
        assert_int_equal(a->hyper_params.epoch, b->hyper_params.epoch);
        assert_int_equal(a->hyper_params.max_steps, b->hyper_params.max_steps);
    }
    assert_int_equal(a->has_dataset, b->has_dataset);
    if (a->has_dataset) {
        assert_string_equal(a->dataset.name, b->dataset.name);
        assert_int_equal(a->dataset.size, b->dataset.size);
        assert_string_equal(a->dataset.storage, b->dataset.storage);
    }
    assert_int_equal(a->has_model, b->has_model);
    if (a->has_model) {
        assert_int_equal(a->model.variable_count, b->model.variable_count);
        assert_int_equal(a->model.op_count, b->model.op_count);
        assert_int_equal(a->model.total_variable_size, b->model.total_variable_size);
        assert_int_equal(a->model.recv_op_count, b->model.recv_op_count);
        assert_int_equal(a->model.flops, b->model.flops);
        assert_int_equal(a->model.embedding_dimension, b->model.embedding_dimension);
    }
    assert_int_equal(a->has_exit_reason, b->has_exit_reason);
    if (a->has_exit_reason)
        assert_string_equal(a->exit_reason, b->exit_reason);
}

static void assert_sample_equal(const dlb_runtime_sample_t *a, const dlb_runtime_sample_t *b)
{
    assert_string_equal(a->event_id, b->event_id);
    assert_string_equal(a->job_uid, b->job_uid);
    assert_int_equal(a->event_time_ms, b->event_time_ms);
    assert_int_equal(a->global_step, b->global_step);
    assert_true(a->speed == b->speed);
    assert_int_equal(a->pods_cnt, b->pods_cnt);
    for (size_t i = 0; i < a->pods_cnt; i++) {
        assert_string_equal(a->pods[i].name, b->pods[i].name);
        assert_string_equal(a->pods[i].type, b->pods[i].type);
        assert_int_equal(a->pods[i].index, b->pods[i].index);
        assert_true(a->pods[i].cpu_used == b->pods[i].cpu_used);
        assert_true(a->pods[i].cpu_requested == b->pods[i].cpu_requested);
        assert_int_equal(a->pods[i].memory_used, b->pods[i].memory_used);
        assert_int_equal(a->pods[i].memory_requested, b->pods[i].memory_requested);
        assert_int_equal(a->pods[i].has_speed, b->pods[i].has_speed);
        assert_true(a->pods[i].speed == b->pods[i].speed);
    }
}

static void assert_state_equal(const dlb_job_state_t *a, const dlb_job_state_t *b)
{
    assert_job_equal(&a->job, &b->job);
    assert_int_equal(a->created_ms, b->created_ms);
    assert_int_equal(a->window_cnt, b->window_cnt);
    for (size_t i = 0; i < a->window_cnt; i++)
        assert_sample_equal(&a->window[i], &b->window[i]);
    assert_int_equal(a->pods_cnt, b->pods_cnt);
    for (size_t i = 0; i < a->pods_cnt; i++) {
        const dlb_pod_status_t *p = &a->pods[i], *q = &b->pods[i];
        assert_string_equal(p->name, q->name);
        assert_string_equal(p->type, q->type);
        assert_int_equal(p->index, q->index);
        assert_string_equal(p->node_name, q->node_name);
        assert_string_equal(p->last_kind, q->last_kind);
        assert_string_equal(p->phase, q->phase);
        assert_int_equal(p->last_event_time_ms, q->last_event_time_ms);
        assert_int_equal(p->oom_count, q->oom_count);
        assert_string_equal(p->last_oom_event_id, q->last_oom_event_id);
        assert_int_equal(p->memory_requested, q->memory_requested);
        assert_string_equal(p->last_event_id, q->last_event_id);
    }
}

/* ---- PostgreSQL helpers --------------------------------------------------- */

static void schema_for(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "it_%s_%d", tag, (int)getpid());
}

static dlb_pg_t *pg_open(const char *schema)
{
    dlb_pg_t *pg = NULL;
    int err = dlb_pg_connect(&pg, env_or_fail("DLBRAIN_PG_DSN"), schema, errstr, sizeof(errstr));

    if (err)
        fail_msg("connect: %s", errstr);
    if (dlb_pg_migrate(pg, errstr, sizeof(errstr)))
        fail_msg("migrate: %s", errstr);
    return pg;
}

/* First cell of a query run in schema, as text ("" for NULL). */
__attribute__((format(printf, 2, 0))) static char *sql_vstr(const char *schema, const char *fmt,
                                                            va_list ap)
{
    static char out[4096];
    char sql[2048], path[256];
    PGconn *c = PQconnectdb(env_or_fail("DLBRAIN_PG_DSN"));
    PGresult *res;

    assert_int_equal(PQstatus(c), CONNECTION_OK);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    snprintf(path, sizeof(path), "SET search_path TO %s", schema);
    PQclear(PQexec(c, path));
    res = PQexec(c, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(res));
    assert_true(PQntuples(res) >= 1);
    snprintf(out, sizeof(out), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    PQfinish(c);
    return out;
}

__attribute__((format(printf, 2, 3))) static char *sql_str(const char *schema, const char *fmt, ...)
{
    va_list ap;
    char *out;

    va_start(ap, fmt);
    out = sql_vstr(schema, fmt, ap);
    va_end(ap);
    return out;
}

__attribute__((format(printf, 2, 3))) static int64_t sql_i64(const char *schema, const char *fmt,
                                                             ...)
{
    va_list ap;
    char *out;

    va_start(ap, fmt);
    out = sql_vstr(schema, fmt, ap);
    va_end(ap);
    return strtoll(out, NULL, 10);
}

static int64_t count_of(dlb_pg_t *pg, const char *table)
{
    int64_t n = -1;

    if (dlb_pg_count(pg, table, &n, errstr, sizeof(errstr)))
        fail_msg("count %s: %s", table, errstr);
    return n;
}

static void put(dlb_pg_t *pg, const dlb_event_t *ev, int with_raw)
{
    void *buf = NULL;
    size_t len = 0;

    if (with_raw && dlb_codec_encode(cat, ev, &buf, &len, errstr, sizeof(errstr)))
        fail_msg("encode: %s", errstr);
    if (dlb_pg_put_event(pg, ev, buf, len, errstr, sizeof(errstr)))
        fail_msg("put_event %s: %s", dlb_event_id(ev), errstr);
    free(buf);
}

/* ---- PostgreSQL tests ------------------------------------------------------ */

static void test_pg_migrate_twice(void **unused)
{
    char schema[64];
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "migrate");
    pg = pg_open(schema);
    assert_int_equal(dlb_pg_migrate(pg, errstr, sizeof(errstr)), 0);
    dlb_pg_destroy(pg);
    pg = pg_open(schema); /* a new process finds everything applied */
    assert_int_equal(count_of(pg, "schema_migrations"), (int64_t)migrations_cnt());
    assert_int_equal(
        sql_i64(schema, "SELECT count(*) FROM schema_migrations WHERE version = %s", "1"), 1);
    assert_string_equal(sql_str(schema, "SELECT name FROM schema_migrations WHERE version = 1"),
                        "001_init.sql");
    assert_int_equal(count_of(pg, "jobs"), 0);
    dlb_pg_destroy(pg);
}

typedef struct {
    const char *schema;
    int err;
    char errstr[512];
} mig_arg_t;

static void *migrate_thread(void *p)
{
    mig_arg_t *a = p;
    dlb_pg_t *pg = NULL;

    a->err = dlb_pg_connect(&pg, getenv("DLBRAIN_PG_DSN"), a->schema, a->errstr, sizeof(a->errstr));
    if (!a->err)
        a->err = dlb_pg_migrate(pg, a->errstr, sizeof(a->errstr));
    dlb_pg_destroy(pg);
    return NULL;
}

/* Consumers starting together serialise on the advisory lock. */
static void test_pg_migrate_concurrent(void **unused)
{
    char schema[64];
    pthread_t th[6];
    mig_arg_t args[6];
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "concurrent");
    for (int i = 0; i < 6; i++) {
        args[i].schema = schema;
        args[i].err = -100;
        assert_int_equal(pthread_create(&th[i], NULL, migrate_thread, &args[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        if (args[i].err)
            fail_msg("migrator %d: %s", i, args[i].errstr);
    }
    pg = pg_open(schema);
    assert_int_equal(count_of(pg, "schema_migrations"), (int64_t)migrations_cnt());
    dlb_pg_destroy(pg);
}

static void test_pg_put_each_type_twice(void **unused)
{
    char schema[64];
    dlb_event_t job, rt, node, req, plan, cm;
    dlb_pod_action_t *act;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "put");
    pg = pg_open(schema);
    ev_job(&job, "j1", "u1", T0);
    job_meta(&job, "ctr", "deepfm");
    ev_rt(&rt, "s1", "u1", T0 + 1000, 3);
    ev_node(&node, "n1", "u1", T0 + 2000, "u1-worker-1", "oom_killed");
    ev_req(&req, "q1", "u1", T0 + 3000);
    ev_plan(&plan, "plan-q1", "u1", "q1");
    assert_non_null(act = dlb_plan_add_action(&plan.u.plan, "u1-worker-1", DLB_ACTION_REPLACE));
    snprintf(act->reason, sizeof(act->reason), "straggler");
    for (int round = 0; round < 2; round++) {
        /* The first round stores the caller's bytes, the second lets the store encode. */
        put(pg, &job, round == 0);
        put(pg, &rt, round == 0);
        put(pg, &node, round == 0);
        put(pg, &req, round == 0);
        put(pg, &plan, round == 0);
    }
    assert_int_equal(count_of(pg, "job_events"), 1);
    assert_int_equal(count_of(pg, "jobs"), 1);
    assert_int_equal(count_of(pg, "runtime_samples"), 1);
    assert_int_equal(count_of(pg, "runtime_pods"), 3);
    assert_int_equal(count_of(pg, "node_events"), 1);
    assert_int_equal(count_of(pg, "plan_requests"), 1);
    assert_int_equal(count_of(pg, "plans"), 1);

    /* Normalised columns. */
    assert_int_equal(sql_i64(schema, "SELECT memory_used FROM runtime_pods WHERE pod_name = '%s'",
                             "u1-worker-2"),
                     rt.u.rt.pods[2].memory_used);
    assert_string_equal(sql_str(schema, "SELECT cpu_requested FROM runtime_pods LIMIT 1"), "8");
    /* pods[].speed (runtime_sample v2): NULL when the pod reported none, else exact. */
    assert_string_equal(sql_str(schema,
                                "SELECT coalesce(speed::text, 'null') FROM runtime_pods "
                                "WHERE pod_name = '%s'",
                                "u1-ps-0"),
                        "null");
    assert_int_equal(sql_i64(schema,
                             "SELECT count(*) FROM runtime_pods WHERE pod_name = 'u1-worker-2' "
                             "AND speed = %.17g",
                             rt.u.rt.pods[2].speed),
                     1);
    assert_string_equal(sql_str(schema, "SELECT kind || '/' || pod_name || '/' || "
                                        "memory_requested FROM node_events"),
                        "oom_killed/u1-worker-1/17179869184");
    assert_string_equal(sql_str(schema, "SELECT coalesce(phase, 'null') FROM node_events"), "null");
    assert_string_equal(sql_str(schema, "SELECT stage || '/' || oom_pod FROM plan_requests"),
                        "job_stage_create/u1-worker-1");
    assert_string_equal(sql_str(schema, "SELECT groups->0->>'group' || '/' || "
                                        "(groups->0->>'count') || '/' || "
                                        "(groups->0->'resource'->>'memory') || '/' || "
                                        "(pods->0->>'name') FROM plans"),
                        "ps/4/17179869184/w-0");
    assert_string_equal(sql_str(schema, "SELECT actions::text FROM plans"),
                        "[{\"pod\": \"u1-worker-1\", \"action\": \"replace\", \"reason\": "
                        "\"straggler\"}]");
    /* The raw bytes are the framed event, with the newest schema of its type. */
    assert_string_equal(sql_str(schema, "SELECT encode(substr(raw, 1, 5), 'hex') FROM job_events"),
                        "000000000a"); /* job_event v2 */
    assert_string_equal(
        sql_str(schema, "SELECT encode(substr(raw, 1, 5), 'hex') FROM runtime_samples"),
        "000000000b"); /* runtime_sample v3 */
    assert_string_equal(sql_str(schema, "SELECT encode(substr(raw, 1, 5), 'hex') FROM plans"),
                        "0000000008");

    /* Not an input event. */
    memset(&cm, 0, sizeof(cm));
    cm.type = DLB_EV_CONFIG_MATCH;
    assert_int_equal(dlb_pg_put_event(pg, &cm, NULL, 0, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    dlb_event_clear(&rt);
    dlb_event_clear(&plan);
    dlb_pg_destroy(pg);
}

/* Every runtime row of a schema as one string, for comparing two schemas. */
static char *runtime_rows(const char *schema)
{
    static char out[4096];

    snprintf(out, sizeof(out), "%s",
             sql_str(schema,
                     "SELECT md5(string_agg(concat_ws('|', s.event_id, s.job_uid, s.event_time_ms, "
                     "s.global_step, s.speed, encode(s.raw, 'hex'), p.pod_name, p.pod_type, "
                     "p.pod_index, p.cpu_used, p.cpu_requested, p.memory_used, p.memory_requested, "
                     "coalesce(p.speed::text, 'null')), ',' ORDER BY s.event_id, p.pod_name)) "
                     "FROM runtime_samples s LEFT JOIN runtime_pods p USING (event_id)"));
    return out;
}

/* The samples both batch tests start from: s1 to s4 of jobs u1 and u2, s4
 * with a pod named twice (the first copy is kept); the even ones with their
 * frames (bufs, freed by the caller), the others encoded by the store. */
static void rt_batch_events(dlb_event_t *ev, const dlb_event_t **evs, const void **raws,
                            size_t *lens, void **bufs, size_t n)
{
    ev_rt(&ev[0], "s1", "u1", T0 + 1000, 3);
    ev_rt(&ev[1], "s2", "u2", T0 + 2000, 4);
    ev_rt(&ev[2], "s3", "u1", T0 + 3000, 0);
    ev_rt(&ev[3], "s4", "u2", T0 + 4000, 3);
    snprintf(ev[3].u.rt.pods[2].name, DLB_ID_MAX, "%s", ev[3].u.rt.pods[1].name);
    ev[3].u.rt.pods[2].cpu_used = 7.0;
    for (size_t i = 0; i < n; i++) {
        evs[i] = &ev[i];
        if (i % 2 == 0) {
            if (dlb_codec_encode(cat, &ev[i], &bufs[i], &lens[i], errstr, sizeof(errstr)))
                fail_msg("encode: %s", errstr);
            raws[i] = bufs[i];
        }
    }
}

/* The batch writer stores what the statement of one sample stores, once:
 * a sample repeated in the batch or stored before, and a pod repeated in a
 * sample (the first copy wins), change nothing. */
static void test_pg_runtime_batch(void **unused)
{
    char one[64], many[64], want[4096];
    dlb_event_t ev[5];
    const dlb_event_t *evs[5];
    const void *raws[5] = {0};
    size_t lens[5] = {0};
    void *bufs[5] = {0};
    dlb_pg_t *pg1, *pgn;
    (void)unused;

    schema_for(one, sizeof(one), "rtone");
    schema_for(many, sizeof(many), "rtmany");
    pg1 = pg_open(one);
    pgn = pg_open(many);
    ev_rt(&ev[4], "s1", "u1", T0 + 1000, 3); /* s1 again, in the same batch */
    rt_batch_events(ev, evs, raws, lens, bufs, 5);
    for (int i = 0; i < 5; i++)
        put(pg1, &ev[i], i % 2 == 0);
    snprintf(want, sizeof(want), "%s", runtime_rows(one));
    for (int round = 0; round < 2; round++) {
        assert_int_equal(dlb_pg_put_runtime_batch(pgn, evs, raws, lens, 5, errstr, sizeof(errstr)),
                         0);
        assert_int_equal(count_of(pgn, "runtime_samples"), 4);
        assert_int_equal(count_of(pgn, "runtime_pods"), 3 + 4 + 0 + 2);
        assert_string_equal(runtime_rows(many), want);
    }
    assert_int_equal(sql_i64(many, "SELECT count(*) FROM runtime_pods WHERE speed IS NULL"), 3);
    assert_int_equal(dlb_pg_put_runtime_batch(pgn, evs, NULL, NULL, 0, errstr, sizeof(errstr)), 0);
    /* Only runtime samples. */
    {
        dlb_event_t req;
        const dlb_event_t *bad[1] = {&req};
        ev_req(&req, "q1", "u1", T0);
        assert_int_equal(dlb_pg_put_runtime_batch(pgn, bad, NULL, NULL, 1, errstr, sizeof(errstr)),
                         DLB_ERR_INVALID);
        dlb_event_clear(&req);
    }
    for (int i = 0; i < 5; i++) {
        free(bufs[i]);
        dlb_event_clear(&ev[i]);
    }
    dlb_pg_destroy(pg1);
    dlb_pg_destroy(pgn);
}

/* COPY stores what the batch statement stores. A COPY meeting a stored
 * sample (a redelivery the positions did not announce) rolls back to its
 * savepoint and stores the batch with the statement instead: the rows stay
 * exact and the transaction's earlier writes stay. */
static void test_pg_runtime_copy(void **unused)
{
    char stmt[64], copy[64], want[4096];
    dlb_event_t ev[6], job;
    const dlb_event_t *evs[6];
    const void *raws[6] = {0};
    size_t lens[6] = {0};
    void *bufs[6] = {0};
    dlb_pg_t *pgs, *pgc;
    (void)unused;

    schema_for(stmt, sizeof(stmt), "rtstmt");
    schema_for(copy, sizeof(copy), "rtcopy");
    pgs = pg_open(stmt);
    pgc = pg_open(copy);
    ev_rt(&ev[4], "s5", "u1", T0 + 5000, 2);
    ev_rt(&ev[5], "s2", "u2", T0 + 2000, 4); /* s2 again */
    rt_batch_events(ev, evs, raws, lens, bufs, 6);
    assert_int_equal(dlb_pg_put_runtime_batch(pgs, evs, raws, lens, 5, errstr, sizeof(errstr)), 0);
    snprintf(want, sizeof(want), "%s", runtime_rows(stmt));

    /* Outside a transaction: refused, nothing sent. */
    assert_int_equal(dlb_pg_send_runtime_copy(pgc, evs, raws, lens, 4, errstr, sizeof(errstr)),
                     DLB_ERR_GENERIC);
    assert_int_equal(dlb_pg_begin(pgc, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_send_runtime_copy(pgc, evs, raws, lens, 4, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_wait_runtime_copy(pgc, evs, raws, lens, 4, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_commit(pgc, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pgc, "runtime_samples"), 4);
    assert_int_equal(count_of(pgc, "runtime_pods"), 3 + 4 + 0 + 2);

    /* s5 new, s2 stored, after another write of the same transaction. */
    ev_job(&job, "j1", "u1", T0);
    assert_int_equal(dlb_pg_begin(pgc, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_event(pgc, &job, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(
        dlb_pg_send_runtime_copy(pgc, evs + 4, raws + 4, lens + 4, 2, errstr, sizeof(errstr)), 0);
    assert_int_equal(
        dlb_pg_wait_runtime_copy(pgc, evs + 4, raws + 4, lens + 4, 2, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_commit(pgc, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pgc, "job_events"), 1);
    assert_string_equal(runtime_rows(copy), want);

    /* The whole batch again, as a redelivery: no change. */
    assert_int_equal(dlb_pg_begin(pgc, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_send_runtime_copy(pgc, evs, raws, lens, 6, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_wait_runtime_copy(pgc, evs, raws, lens, 6, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_commit(pgc, errstr, sizeof(errstr)), 0);
    assert_string_equal(runtime_rows(copy), want);

    /* Only runtime samples; the transaction is still usable after the refusal. */
    assert_int_equal(dlb_pg_begin(pgc, errstr, sizeof(errstr)), 0);
    {
        const dlb_event_t *bad[1] = {&job};
        assert_int_equal(dlb_pg_send_runtime_copy(pgc, bad, NULL, NULL, 1, errstr, sizeof(errstr)),
                         DLB_ERR_INVALID);
    }
    assert_int_equal(dlb_pg_commit(pgc, errstr, sizeof(errstr)), 0);
    dlb_event_clear(&job);
    for (int i = 0; i < 6; i++) {
        free(bufs[i]);
        dlb_event_clear(&ev[i]);
    }
    dlb_pg_destroy(pgs);
    dlb_pg_destroy(pgc);
}

/* Positions per group, each only ever moving forward. */
typedef struct pos_seen {
    char text[256];
} pos_seen_t;

static void pos_collect(void *arg, const dlb_pg_position_t *pos)
{
    pos_seen_t *s = arg;
    size_t n = strlen(s->text);

    snprintf(s->text + n, sizeof(s->text) - n, "%s:%d:%lld ", pos->topic, (int)pos->partition,
             (long long)pos->next_offset);
}

static const char *positions_of(dlb_pg_t *pg, const char *group)
{
    static pos_seen_t s;

    s.text[0] = '\0';
    if (dlb_pg_load_positions(pg, group, pos_collect, &s, errstr, sizeof(errstr)))
        fail_msg("load positions: %s", errstr);
    return s.text;
}

static void test_pg_positions(void **unused)
{
    char schema[64];
    dlb_pg_t *pg;
    const dlb_pg_position_t first[] = {{"t.metrics", 1, 5}, {"t.metrics", 0, 10}, {"t.jobs", 0, 3}};
    const dlb_pg_position_t later[] = {{"t.metrics", 0, 7}, {"t.metrics", 1, 12}};
    (void)unused;

    schema_for(schema, sizeof(schema), "positions");
    pg = pg_open(schema);
    assert_string_equal(positions_of(pg, "g1"), "");
    assert_int_equal(dlb_pg_save_positions(pg, "g1", first, 3, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_save_positions(pg, "g1", NULL, 0, errstr, sizeof(errstr)), 0);
    assert_string_equal(
        sql_str(schema, "SELECT string_agg(topic || ':' || kafka_partition || ':' || next_offset, "
                        "' ' ORDER BY topic, kafka_partition) FROM consumer_positions"),
        "t.jobs:0:3 t.metrics:0:10 t.metrics:1:5");
    /* Partition 0 does not move back to 7; partition 1 moves on to 12. */
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_save_positions(pg, "g1", later, 2, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(sql_i64(schema,
                             "SELECT next_offset FROM consumer_positions WHERE kafka_partition = 0 "
                             "AND topic = 't.metrics'"),
                     10);
    assert_int_equal(
        sql_i64(schema, "SELECT next_offset FROM consumer_positions WHERE kafka_partition = 1"),
        12);
    assert_int_equal(strlen(positions_of(pg, "g1")) > 0, 1);
    /* A rolled-back save leaves nothing; another group has its own. */
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_save_positions(pg, "g2", later, 2, errstr, sizeof(errstr)), 0);
    dlb_pg_rollback(pg);
    assert_string_equal(positions_of(pg, "g2"), "");
    assert_int_equal(dlb_pg_save_positions(pg, "g2", later, 1, errstr, sizeof(errstr)), 0);
    assert_string_equal(positions_of(pg, "g2"), "t.metrics:0:7 ");
    dlb_pg_destroy(pg);
}

/* The analysts' views (migration 011) on a job worked out by hand: created
 * at T0, running a minute later, succeeded at 10 min; two plans, an OOM the
 * second answered, one no plan answered; and a job that has not finished. */
static void test_pg_analyst_views(void **unused)
{
    char schema[64];
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "views");
    pg = pg_open(schema);
    assert_string_equal(
        sql_str(
            schema,
            "WITH j AS (INSERT INTO jobs (uid, name, scenario, state, exit_reason, created_ms, "
            "updated_ms, last_event_id) VALUES ('a', 'ctr', 's1', 'succeeded', 'Completed', 0, "
            "600000, 'e3'), ('b', 'nlp', 's1', 'running', NULL, 0, 1000, 'e2') RETURNING 1), "
            "e AS (INSERT INTO job_events (event_id, job_uid, event_time_ms, state, raw) VALUES "
            "('e1', 'a', 0, 'created', ''), ('e2', 'a', 60000, 'running', ''), "
            "('e3', 'a', 600000, 'succeeded', ''), ('e1', 'b', 0, 'pending', ''), "
            "('e2', 'b', 1000, 'running', '') RETURNING 1), "
            "r AS (INSERT INTO runtime_samples (event_id, job_uid, event_time_ms, "
            "global_step, speed, raw) VALUES ('r1', 'a', 100000, 1, 2.0, ''), "
            "('r2', 'a', 200000, 2, 4.0, ''), ('r3', 'a', 400000, 3, 6.0, '') RETURNING 1), "
            "p AS (INSERT INTO plans (plan_id, job_uid, trigger_event_id, stage, optimizer, "
            "reason, event_time_ms, groups, pods, raw, actions) VALUES ('plan-q1', 'a', 'q1', "
            "'job_stage_running', 'o', 'r1', 150000, '[]', '[]', '', '[]'), ('plan-q2', 'a', "
            "'q2', 'job_stage_running', 'oom', 'r2', 300000, '[]', '[]', '', "
            "'[{\"pod\": \"a-worker-0\", \"action\": \"replace\", \"reason\": \"x\"}]') "
            "RETURNING 1), "
            "n AS (INSERT INTO node_events (event_id, job_uid, event_time_ms, kind, pod_name, "
            "pod_type, pod_index, node_name, reason, message, memory_requested, raw) VALUES "
            "('k1', 'a', 250000, 'oom_killed', 'a-worker-0', 'worker', 0, 'n1', '', '', 8, ''), "
            "('k2', 'a', 350000, 'oom_killed', 'a-worker-1', 'worker', 1, 'n1', '', '', 8, ''), "
            "('k3', 'a', 360000, 'node_failed', 'a-worker-1', 'worker', 1, 'n1', '', '', 8, '') "
            "RETURNING 1), "
            "o AS (INSERT INTO oom_plans VALUES ('a', 'a-worker-0', 'k1', 'plan-q2', 12, "
            "300000) RETURNING 1) "
            "SELECT (SELECT count(*) FROM j) + (SELECT count(*) FROM e) + (SELECT count(*) "
            "FROM r) + (SELECT count(*) FROM p) + (SELECT count(*) FROM n) + (SELECT count(*) "
            "FROM o)"),
        "16");
    assert_string_equal(sql_str(schema,
                                "SELECT string_agg(concat_ws('|', job_uid, scenario, final_state, "
                                "jct_ms, pending_ms), ' ' ORDER BY job_uid) FROM job_outcomes"),
                        "a|s1|succeeded|600000|60000 b|s1|1000");
    assert_string_equal(
        sql_str(schema, "SELECT string_agg(concat_ws('|', oom_event_id, pod_name, memory_before, "
                        "coalesce(plan_id, '-'), memory_after, answered_after_ms, optimizer), ' ' "
                        "ORDER BY oom_ms) FROM oom_history"),
        "k1|a-worker-0|8|plan-q2|12|50000|oom k2|a-worker-1|8|-");
    assert_string_equal(
        sql_str(schema, "SELECT string_agg(concat_ws('|', plan_id, actions, "
                        "coalesce(next_plan_ms::text, '-'), ooms_after, speed_before, speed_after, "
                        "final_state, jct_ms), ' ' ORDER BY plan_ms) FROM plan_outcomes"),
        "plan-q1|0|300000|1|2|4|succeeded|600000 plan-q2|1|-|1|4|6|succeeded|600000");
    dlb_pg_destroy(pg);
}

/* plan_outcomes.ooms_after counts the OOM kills that came while the plan was
 * in effect: after its time, up to and with the next plan's. Job c: plan c1
 * at 100 s; OOM k1 at 200 s answered by plan c2 of the same ms (the
 * simulator's master asks at the kill's time), and k2, stamped 0.5 s later by
 * another clock, answered by c2 too; k3 at 300 s, the time of plan c3, which
 * did not answer it; k4 at 350 s. k1 came under c1, k3 under c2, k4 under c3:
 * no plan counts an OOM it answered. */
static void test_pg_plan_outcomes_ooms_after(void **unused)
{
    char schema[64];
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "oomsafter");
    pg = pg_open(schema);
    assert_string_equal(
        sql_str(
            schema,
            "WITH p AS (INSERT INTO plans (plan_id, job_uid, trigger_event_id, stage, "
            "optimizer, reason, event_time_ms, groups, pods, raw, actions) VALUES "
            "('plan-c1', 'c', 'q1', 'job_stage_worker_initial', 'model', '', 100000, '[]', "
            "'[]', '', '[]'), ('plan-c2', 'c', 'q2', 'job_stage_running', 'oom', '', 200000, "
            "'[]', '[]', '', '[]'), ('plan-c3', 'c', 'q3', 'job_stage_worker_running', "
            "'model', '', 300000, '[]', '[]', '', '[]') RETURNING 1), "
            "n AS (INSERT INTO node_events (event_id, job_uid, event_time_ms, kind, pod_name, "
            "pod_type, pod_index, node_name, reason, message, memory_requested, raw) VALUES "
            "('k1', 'c', 200000, 'oom_killed', 'c-worker-0', 'worker', 0, 'n1', '', '', 8, ''), "
            "('k2', 'c', 200500, 'oom_killed', 'c-worker-1', 'worker', 1, 'n1', '', '', 8, ''), "
            "('k3', 'c', 300000, 'oom_killed', 'c-worker-0', 'worker', 0, 'n1', '', '', 12, ''), "
            "('k4', 'c', 350000, 'oom_killed', 'c-worker-1', 'worker', 1, 'n1', '', '', 12, '') "
            "RETURNING 1), "
            "o AS (INSERT INTO oom_plans VALUES ('c', 'c-worker-0', 'k1', 'plan-c2', 12, "
            "200000), ('c', 'c-worker-1', 'k2', 'plan-c2', 12, 200000) RETURNING 1) "
            "SELECT (SELECT count(*) FROM p) + (SELECT count(*) FROM n) + "
            "(SELECT count(*) FROM o)"),
        "9");
    assert_string_equal(
        sql_str(schema, "SELECT string_agg(concat_ws('|', plan_id, coalesce(next_plan_ms::text, "
                        "'-'), ooms_after), ' ' ORDER BY plan_ms) FROM plan_outcomes"),
        "plan-c1|200000|1 plan-c2|300000|1 plan-c3|-|1");
    dlb_pg_destroy(pg);
}

static void test_pg_job_upsert_merges(void **unused)
{
    char schema[64];
    dlb_event_t a, b, c, d;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "upsert");
    pg = pg_open(schema);
    ev_job(&a, "a", "u1", T0 + 1000);
    job_meta(&a, "ctr", "first-name");
    job_state(&a, "created");
    ev_job(&b, "b", "u1", T0 + 3000);
    job_state(&b, "running");
    b.u.job.has_hyper_params = 1;
    b.u.job.hyper_params.batch_size = 512;
    b.u.job.hyper_params.epoch = 2;
    b.u.job.hyper_params.max_steps = 9000;
    /* Late: older than b. Its state loses, its dataset (never seen) is kept. */
    ev_job(&c, "c", "u1", T0 + 2000);
    job_state(&c, "pending");
    c.u.job.has_dataset = 1;
    snprintf(c.u.job.dataset.name, sizeof(c.u.job.dataset.name), "criteo");
    c.u.job.dataset.size = 45000000;
    put(pg, &a, 1);
    put(pg, &b, 1);
    put(pg, &c, 1);
    assert_string_equal(
        sql_str(schema,
                "SELECT concat_ws('|', scenario, name, state, batch_size, epoch, "
                "max_steps, dataset_name, dataset_size, created_ms - %s, updated_ms - "
                "%s, last_event_id) FROM jobs",
                "1700000000000", "1700000000000"),
        "ctr|first-name|running|512|2|9000|criteo|45000000|1000|3000|b");
    assert_string_equal(sql_str(schema, "SELECT coalesce(model_flops::text, 'null') || "
                                        "coalesce(exit_reason, 'null') FROM jobs"),
                        "nullnull");

    /* Newer meta wins, sections it lacks stay. */
    ev_job(&d, "d", "u1", T0 + 4000);
    job_meta(&d, "ctr2", "second-name");
    d.u.job.has_exit_reason = 1;
    snprintf(d.u.job.exit_reason, sizeof(d.u.job.exit_reason), "Completed");
    put(pg, &d, 1);
    put(pg, &a, 1); /* duplicate: no effect */
    assert_string_equal(
        sql_str(schema,
                "SELECT concat_ws('|', scenario, name, state, batch_size, dataset_name, "
                "exit_reason, created_ms - %s, last_event_id) FROM jobs",
                "1700000000000"),
        "ctr2|second-name|running|512|criteo|Completed|1000|d");
    assert_int_equal(count_of(pg, "job_events"), 4);
    assert_int_equal(count_of(pg, "jobs"), 1);
    dlb_pg_destroy(pg);
}

static void test_pg_plans_idempotent(void **unused)
{
    char schema[64];
    dlb_event_t p1, p2, p3, p4;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "plans");
    pg = pg_open(schema);
    ev_plan(&p1, "plan-q1", "u1", "q1");
    ev_plan(&p2, "plan-q1-again", "u1", "q1"); /* same trigger, another id */
    ev_plan(&p3, "plan-x", "u1", "");          /* no trigger: never conflicts on it */
    ev_plan(&p4, "plan-y", "u1", "");
    assert_int_equal(dlb_pg_put_plan(pg, &p1.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p1.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p2.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pg, "plans"), 1);
    assert_string_equal(sql_str(schema, "SELECT plan_id FROM plans"), "plan-q1");
    assert_int_equal(dlb_pg_put_plan(pg, &p3.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p4.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p4.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pg, "plans"), 3);
    assert_int_equal(sql_i64(schema, "SELECT count(*) FROM plans WHERE actions = '[]'::jsonb"), 3);

    /* The stored bytes come back as written: the first plan of the trigger. */
    {
        void *want = NULL, *got = NULL;
        size_t want_len = 0, got_len = 0;
        assert_int_equal(dlb_codec_encode(cat, &p1, &want, &want_len, errstr, sizeof(errstr)), 0);
        assert_int_equal(
            dlb_pg_get_plan(pg, "u1", "plan-q1", &got, &got_len, errstr, sizeof(errstr)), 0);
        assert_non_null(got);
        assert_int_equal(got_len, want_len);
        assert_memory_equal(got, want, want_len);
        free(got);
        free(want);
        assert_int_equal(
            dlb_pg_get_plan(pg, "u1", "plan-q1-again", &got, &got_len, errstr, sizeof(errstr)), 0);
        assert_null(got);
        assert_int_equal(got_len, 0);
    }
    /* A request stored with its plan read in the same statement: the plan
     * as dlb_pg_get_plan() returns it, the request once however often. */
    {
        dlb_event_t q;
        void *want = NULL, *got = NULL;
        size_t want_len = 0, got_len = 0;
        ev_req(&q, "q1", "u1", 1700000000000);
        assert_int_equal(dlb_codec_encode(cat, &p1, &want, &want_len, errstr, sizeof(errstr)), 0);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(dlb_pg_put_request(pg, &q, NULL, 0, "plan-q1", &got, &got_len, errstr,
                                                sizeof(errstr)),
                             0);
            assert_non_null(got);
            assert_int_equal(got_len, want_len);
            assert_memory_equal(got, want, want_len);
            free(got);
        }
        assert_int_equal(count_of(pg, "plan_requests"), 1);
        assert_int_equal(dlb_pg_put_request(pg, &q, NULL, 0, "plan-none", &got, &got_len, errstr,
                                            sizeof(errstr)),
                         0);
        assert_null(got);
        assert_int_equal(got_len, 0);
        assert_int_equal(
            dlb_pg_put_request(pg, &p1, NULL, 0, "plan-q1", &got, &got_len, errstr, sizeof(errstr)),
            DLB_ERR_INVALID);
        assert_null(got);
        free(want);
        dlb_event_clear(&q);
    }
    dlb_event_clear(&p1);
    dlb_event_clear(&p2);
    dlb_event_clear(&p3);
    dlb_event_clear(&p4);
    dlb_pg_destroy(pg);
}

static dlb_oom_plan_t oom_plan(const char *pod, const char *oom_ev, const char *plan_id,
                               int64_t memory, int64_t t)
{
    dlb_oom_plan_t op;

    memset(&op, 0, sizeof(op));
    snprintf(op.pod_name, sizeof(op.pod_name), "%s", pod);
    snprintf(op.oom_event_id, sizeof(op.oom_event_id), "%s", oom_ev);
    snprintf(op.plan_id, sizeof(op.plan_id), "%s", plan_id);
    op.memory = memory;
    op.event_time_ms = t;
    return op;
}

static void put_oom_plan(dlb_pg_t *pg, const char *uid, const dlb_oom_plan_t *op)
{
    if (dlb_pg_put_oom_plan(pg, uid, op, errstr, sizeof(errstr)))
        fail_msg("put_oom_plan %s/%s: %s", op->plan_id, op->pod_name, errstr);
}

/* With writes deferred (a stream's batch), a plan and its answered OOMs
 * are held until a read that could see them or the commit, and what is
 * stored is what writing each at once stores: the request of the plan's id
 * gets it back, the job's answers include the held one, a rollback drops
 * them, the first plan of a trigger wins. */
static void test_pg_deferred_writes(void **unused)
{
    char schema[64];
    dlb_event_t p1, p2, p3, q;
    dlb_oom_plan_t op = oom_plan("dj-worker-0", "dj-oom", "plan-d1", 20 * GIB, T0);
    dlb_oom_plan_t *ops = NULL;
    size_t ops_cnt = 0, got_len = 0, want_len = 0;
    void *got = NULL, *want = NULL;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "defer");
    pg = pg_open(schema);
    ev_plan(&p1, "plan-d1", "dj", "dj-oom");
    ev_plan(&p2, "plan-d2", "dj", "dj-oom"); /* the same trigger: not stored */
    ev_plan(&p3, "plan-d3", "dj", "");
    assert_int_equal(dlb_codec_encode(cat, &p1, &want, &want_len, errstr, sizeof(errstr)), 0);

    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_defer_writes(pg, 1, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p1.u.plan, want, want_len, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_oom_plan(pg, "dj", &op, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p2.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pg, "plans"), 0); /* held */
    assert_int_equal(
        dlb_pg_load_oom_plans(pg, "dj", T0 + 1, &ops, &ops_cnt, errstr, sizeof(errstr)), 0);
    assert_int_equal(ops_cnt, 1);
    assert_string_equal(ops[0].plan_id, "plan-d1");
    free(ops);
    assert_int_equal(count_of(pg, "plans"), 1);
    /* A redelivered request in the same batch: the held plan, flushed. */
    assert_int_equal(dlb_pg_put_plan(pg, &p3.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    ev_req(&q, "plan-d3", "dj", T0);
    assert_int_equal(
        dlb_pg_put_request(pg, &q, NULL, 0, "plan-d3", &got, &got_len, errstr, sizeof(errstr)), 0);
    assert_non_null(got);
    free(got);
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(sql_i64(schema, "SELECT count(*) FROM plans WHERE job_uid = 'dj'"), 2);
    assert_int_equal(sql_i64(schema, "SELECT count(*) FROM oom_plans WHERE job_uid = 'dj'"), 1);
    assert_int_equal(dlb_pg_get_plan(pg, "dj", "plan-d1", &got, &got_len, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    free(got);

    /* Rolled back: nothing held is written; committed: all of it. */
    dlb_event_clear(&p2);
    ev_plan(&p2, "plan-d4", "dj", "");
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p2.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    dlb_pg_rollback(pg);
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(sql_i64(schema, "SELECT count(*) FROM plans WHERE plan_id = 'plan-d4'"), 0);
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_put_plan(pg, &p2.u.plan, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(sql_i64(schema, "SELECT count(*) FROM plans WHERE plan_id = 'plan-d4'"), 1);
    assert_int_equal(dlb_pg_defer_writes(pg, 0, errstr, sizeof(errstr)), 0);
    free(want);
    dlb_event_clear(&q);
    dlb_event_clear(&p1);
    dlb_event_clear(&p2);
    dlb_event_clear(&p3);
    dlb_pg_destroy(pg);
}

/* Every history row a job (uid) stores with the shared id "x1" (plan
 * "plan-x1", match "cfg-x1"): one of each type, the runtime sample through
 * the batch writer when batch is set. */
static void put_job_x1(dlb_pg_t *pg, const char *uid, int batch)
{
    dlb_event_t job, rt, node, req, plan;
    dlb_config_match_t cm;
    dlb_oom_plan_t op;
    char pod[64];

    snprintf(pod, sizeof(pod), "%s-worker-1", uid);
    ev_job(&job, "x1", uid, T0);
    job_meta(&job, "ctr", uid);
    ev_rt(&rt, "x1", uid, T0 + 1000, 2);
    ev_node(&node, "x1", uid, T0 + 2000, pod, "oom_killed");
    ev_req(&req, "x1", uid, T0 + 3000);
    ev_plan(&plan, "plan-x1", uid, "x1");
    put(pg, &job, 1);
    if (batch) {
        const dlb_event_t *evs[1] = {&rt};
        if (dlb_pg_put_runtime_batch(pg, evs, NULL, NULL, 1, errstr, sizeof(errstr)))
            fail_msg("batch: %s", errstr);
    } else {
        put(pg, &rt, 1);
    }
    put(pg, &node, 1);
    put(pg, &req, 1);
    put(pg, &plan, 1);
    op = oom_plan(pod, "x1", "plan-x1", 20 * GIB, T0 + 3000);
    put_oom_plan(pg, uid, &op);
    memset(&cm, 0, sizeof(cm));
    snprintf(cm.event_id, sizeof(cm.event_id), "cfg-x1");
    snprintf(cm.job_uid, sizeof(cm.job_uid), "%s", uid);
    snprintf(cm.trigger_event_id, sizeof(cm.trigger_event_id), "x1");
    cm.event_time_ms = T0 + 1;
    if (dlb_cfg_put_match(pg, &cm, NULL, 0, errstr, sizeof(errstr)))
        fail_msg("put match: %s", errstr);
    dlb_event_clear(&job);
    dlb_event_clear(&rt);
    dlb_event_clear(&node);
    dlb_event_clear(&req);
    dlb_event_clear(&plan);
}

/* Event ids are unique per job, not across jobs (issue 18, finding 7): a
 * producer that knows or guesses another job's ids cannot make that job's
 * events, plans or matches be dropped as duplicates by writing them first.
 * A redelivery of either job's events still stores nothing. */
static void test_pg_event_ids_per_job(void **unused)
{
    static const char *const tables[] = {"job_events",    "runtime_samples", "node_events",
                                         "plan_requests", "plans",           "oom_plans",
                                         "config_matches"};
    char schema[64];
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "perjob");
    pg = pg_open(schema);
    put_job_x1(pg, "ua", 0);
    put_job_x1(pg, "ub", 1); /* the victim, second: its rows must not be taken for repeats */
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        if (count_of(pg, tables[t]) != 2)
            fail_msg("%s: %" PRId64 " rows, want one per job", tables[t], count_of(pg, tables[t]));
        assert_string_equal(
            sql_str(schema, "SELECT string_agg(job_uid, ',' ORDER BY job_uid) FROM %s", tables[t]),
            "ua,ub");
    }
    assert_int_equal(count_of(pg, "jobs"), 2);
    assert_string_equal(sql_str(schema, "SELECT string_agg(uid || ':' || name, ',' ORDER BY uid) "
                                        "FROM jobs"),
                        "ua:ua,ub:ub");
    assert_int_equal(count_of(pg, "runtime_pods"), 4);

    /* Redeliveries of both jobs, in both writers: nothing new. */
    put_job_x1(pg, "ub", 0);
    put_job_x1(pg, "ua", 1);
    put_job_x1(pg, "ub", 1);
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
        if (count_of(pg, tables[t]) != 2)
            fail_msg("%s: %" PRId64 " rows after redelivery, want 2", tables[t],
                     count_of(pg, tables[t]));
    assert_int_equal(count_of(pg, "runtime_pods"), 4);

    /* One batch carrying both jobs' sample "x2": both stored, once. */
    {
        dlb_event_t a, b;
        const dlb_event_t *evs[4] = {&a, &b, &a, &b};
        ev_rt(&a, "x2", "ua", T0 + 5000, 1);
        ev_rt(&b, "x2", "ub", T0 + 5000, 3);
        for (int round = 0; round < 2; round++)
            assert_int_equal(
                dlb_pg_put_runtime_batch(pg, evs, NULL, NULL, 4, errstr, sizeof(errstr)), 0);
        assert_int_equal(count_of(pg, "runtime_samples"), 4);
        assert_int_equal(
            sql_i64(schema,
                    "SELECT cardinality(pod_names) FROM runtime_samples WHERE job_uid = "
                    "'ub' AND event_id = '%s'",
                    "x2"),
            3);
        dlb_event_clear(&a);
        dlb_event_clear(&b);
    }

    /* A redelivered request or trigger is answered with its own job's plan
     * or match, never another job's of the same id. */
    {
        void *got = NULL;
        size_t got_len = 0;
        dlb_event_t ev;

        assert_int_equal(
            dlb_pg_get_plan(pg, "ub", "plan-x1", &got, &got_len, errstr, sizeof(errstr)), 0);
        assert_non_null(got);
        assert_int_equal(dlb_codec_decode(cat, got, got_len, &ev, errstr, sizeof(errstr)), 0);
        assert_string_equal(ev.u.plan.job_uid, "ub");
        dlb_event_clear(&ev);
        free(got);
        assert_int_equal(
            dlb_cfg_get_match(pg, "ub", "cfg-x1", &got, &got_len, errstr, sizeof(errstr)), 0);
        assert_non_null(got);
        assert_int_equal(dlb_codec_decode(cat, got, got_len, &ev, errstr, sizeof(errstr)), 0);
        assert_string_equal(ev.u.cm.job_uid, "ub");
        dlb_event_clear(&ev);
        free(got);
        assert_int_equal(
            dlb_pg_get_plan(pg, "uc", "plan-x1", &got, &got_len, errstr, sizeof(errstr)), 0);
        assert_null(got);
        assert_int_equal(
            dlb_cfg_get_match(pg, "uc", "cfg-x1", &got, &got_len, errstr, sizeof(errstr)), 0);
        assert_null(got);
    }

    /* Each job's rebuild sees its own events only. */
    {
        dlb_job_state_t st;
        assert_int_equal(dlb_pg_load_job_state(pg, "ub", 5, &st, errstr, sizeof(errstr)), 0);
        assert_string_equal(st.job.meta.name, "ub");
        assert_int_equal(st.window_cnt, 2);
        assert_string_equal(st.window[0].job_uid, "ub");
        assert_int_equal(st.window[1].pods_cnt, 3);
        assert_int_equal(st.pods_cnt, 1); /* node events make pods: ub-worker-1 */
        assert_int_equal(dlb_job_state_pod(&st, "ub-worker-1")->oom_count, 1);
        dlb_job_state_clear(&st);
    }
    dlb_pg_destroy(pg);
}

/* Answered OOMs: idempotent puts inside the caller's transaction, loaded as
 * of a time, oldest first, one job only. */
static void test_pg_oom_plans(void **unused)
{
    const dlb_oom_plan_t ops[] = {
        oom_plan("u1-worker-1", "n1", "plan-q3", 20 * GIB, T0 + 3000),
        oom_plan("u1-worker-1", "n0", "plan-q1", 18 * GIB, T0 + 1000),
        oom_plan("u1-worker-0", "n2", "plan-q2", 17 * GIB, T0 + 2000),
        oom_plan("u1-ps-0", "n3", "plan-q2", 33 * GIB, T0 + 2000), /* two pods, one plan */
        oom_plan("u1-worker-2", "n4", "plan-q4", 19 * GIB, T0 + 4000),
    };
    const size_t n = sizeof(ops) / sizeof(ops[0]);
    dlb_oom_plan_t *got = (dlb_oom_plan_t *)1, other;
    size_t cnt = 99;
    char schema[64];
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "oomplans");
    pg = pg_open(schema);
    assert_int_equal(count_of(pg, "oom_plans"), 0);
    assert_int_equal(
        dlb_pg_load_oom_plans(pg, "u1", T0 + 10000, &got, &cnt, errstr, sizeof(errstr)), 0);
    assert_null(got);
    assert_int_equal(cnt, 0);

    /* In a transaction, as the consumer writes them beside the plan: a
     * rollback leaves nothing, a commit everything; puts repeat harmlessly. */
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    for (size_t i = 0; i < n; i++)
        put_oom_plan(pg, "u1", &ops[i]);
    dlb_pg_rollback(pg);
    assert_int_equal(count_of(pg, "oom_plans"), 0);
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    for (size_t i = 0; i < n; i++)
        put_oom_plan(pg, "u1", &ops[i]);
    put_oom_plan(pg, "u1", &ops[0]);
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), 0);
    for (size_t i = 0; i < n; i++)
        put_oom_plan(pg, "u1", &ops[i]); /* a redone batch */
    /* Same (plan, pod, event) again with other values: the first row stays. */
    other = oom_plan("u1-worker-1", "n1", "plan-q3", 1, T0);
    put_oom_plan(pg, "u1", &other);
    other = oom_plan("u2-worker-0", "m1", "plan-r1", 5 * GIB, T0 + 500);
    put_oom_plan(pg, "u2", &other);
    assert_int_equal(count_of(pg, "oom_plans"), (int64_t)n + 1);
    /* Another event of the same plan and pod is another answer: a node
     * failure the plan answers beside the pod's OOM (memory 0, a replace). */
    other = oom_plan("u1-worker-2", "f4", "plan-q4", 0, T0 + 4000);
    put_oom_plan(pg, "u1", &other);
    put_oom_plan(pg, "u1", &other);
    assert_int_equal(count_of(pg, "oom_plans"), (int64_t)n + 2);

    /* Before T0 + 3000: the plans of T0 + 1000 and T0 + 2000 (ties by plan id,
     * then pod name); not the one at exactly T0 + 3000, not u2's. */
    assert_int_equal(dlb_pg_load_oom_plans(pg, "u1", T0 + 3000, &got, &cnt, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(cnt, 3);
    assert_string_equal(got[0].plan_id, "plan-q1");
    assert_string_equal(got[0].pod_name, "u1-worker-1");
    assert_string_equal(got[0].oom_event_id, "n0");
    assert_int_equal(got[0].memory, 18 * GIB);
    assert_int_equal(got[0].event_time_ms, T0 + 1000);
    assert_string_equal(got[1].plan_id, "plan-q2");
    assert_string_equal(got[1].pod_name, "u1-ps-0");
    assert_int_equal(got[1].memory, 33 * GIB);
    assert_string_equal(got[2].plan_id, "plan-q2");
    assert_string_equal(got[2].pod_name, "u1-worker-0");
    assert_string_equal(got[2].oom_event_id, "n2");
    free(got);
    assert_int_equal(dlb_pg_load_oom_plans(pg, "u1", T0 + 4001, &got, &cnt, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(cnt, n + 1);
    assert_string_equal(got[3].plan_id, "plan-q3");
    assert_string_equal(got[3].oom_event_id, "n1"); /* the first put of (plan-q3, worker-1, n1) */
    assert_int_equal(got[3].memory, 20 * GIB);
    /* plan-q4's two answers for worker-2, by event id */
    assert_string_equal(got[4].plan_id, "plan-q4");
    assert_string_equal(got[4].oom_event_id, "f4");
    assert_int_equal(got[4].memory, 0);
    assert_string_equal(got[5].plan_id, "plan-q4");
    assert_string_equal(got[5].oom_event_id, "n4");
    assert_int_equal(got[5].event_time_ms, T0 + 4000);
    free(got);
    assert_int_equal(dlb_pg_load_oom_plans(pg, "u1", T0 + 1000, &got, &cnt, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(cnt, 0);
    assert_null(got);
    assert_int_equal(dlb_pg_load_oom_plans(pg, "u2", T0 + 1000, &got, &cnt, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(cnt, 1);
    assert_string_equal(got[0].pod_name, "u2-worker-0");
    free(got);

    /* A row needs a job, a pod and a plan. */
    other = oom_plan("", "m1", "plan-r1", 1, T0);
    assert_int_equal(dlb_pg_put_oom_plan(pg, "u2", &other, errstr, sizeof(errstr)),
                     DLB_ERR_INVALID);
    other = oom_plan("p", "m1", "", 1, T0);
    assert_int_equal(dlb_pg_put_oom_plan(pg, "u2", &other, errstr, sizeof(errstr)),
                     DLB_ERR_INVALID);
    assert_int_equal(dlb_pg_put_oom_plan(pg, "", &ops[0], errstr, sizeof(errstr)), DLB_ERR_INVALID);
    assert_int_equal(count_of(pg, "oom_plans"), (int64_t)n + 2);
    dlb_pg_destroy(pg);
}

/* A schema of the first release (001 only, with rows) migrates to 002: old
 * rows read as "no speed" and "no actions", and new rows store both. */
static void test_pg_migrate_from_v1(void **unused)
{
    char schema[64], sql[512];
    const dlb_embedded_t *m1 = &dlb_embedded_migrations[0];
    PGconn *c = PQconnectdb(env_or_fail("DLBRAIN_PG_DSN"));
    dlb_event_t rt, plan;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "upgrade");
    assert_string_equal(m1->name, "001_init.sql");
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    snprintf(sql, sizeof(sql),
             "CREATE SCHEMA %s; SET search_path TO %s; CREATE TABLE schema_migrations (version "
             "integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT "
             "now()); INSERT INTO schema_migrations (version, name) VALUES (1, '001_init.sql');",
             schema, schema);
    PQclear(PQexec(c, sql));
    PQclear(PQexec(c, m1->data));
    PQclear(PQexec(c, "INSERT INTO runtime_samples VALUES ('s0', 'u1', 1, 1, 1.0, '\\x00'); "
                      "INSERT INTO runtime_pods VALUES ('s0', 'p', 'worker', 0, 1, 1, 1, 1); "
                      "INSERT INTO plans (plan_id, job_uid, stage, optimizer, reason, "
                      "event_time_ms, groups, pods, raw) VALUES ('plan-0', 'u1', 's', 'o', 'r', 1, "
                      "'[]', '[]', '\\x00')"));
    PQfinish(c);
    assert_int_equal(sql_i64(schema, "SELECT count(*) FROM runtime_pods"), 1);

    pg = pg_open(schema);
    assert_int_equal(count_of(pg, "schema_migrations"), (int64_t)migrations_cnt());
    assert_string_equal(sql_str(schema, "SELECT name FROM schema_migrations WHERE version = 2"),
                        "002_speed_actions_oom_plans.sql");
    assert_string_equal(sql_str(schema, "SELECT coalesce(speed::text, 'null') FROM runtime_pods"),
                        "null");
    assert_string_equal(sql_str(schema, "SELECT actions::text FROM plans"), "[]");
    assert_int_equal(count_of(pg, "oom_plans"), 0);
    ev_rt(&rt, "s1", "u1", T0, 2);
    put(pg, &rt, 1);
    ev_plan(&plan, "plan-1", "u1", "q1");
    assert_non_null(dlb_plan_add_action(&plan.u.plan, "u1-worker-0", DLB_ACTION_RELAUNCH));
    put(pg, &plan, 0);
    assert_int_equal(sql_i64(schema,
                             "SELECT count(*) FROM runtime_pods WHERE speed IS NOT NULL AND "
                             "event_id = 's1'"),
                     1);
    assert_string_equal(
        sql_str(schema, "SELECT actions->0->>'action' FROM plans WHERE plan_id = 'plan-1'"),
        "relaunch");
    dlb_event_clear(&rt);
    dlb_event_clear(&plan);
    dlb_pg_destroy(pg);
}

/* A schema at version 5 with rows in every history table migrates to per-job
 * keys (006): the rows stay, and another job may then use their ids. */
static void test_pg_migrate_keys_per_job(void **unused)
{
    static const char *const tables[] = {"job_events",    "runtime_samples", "node_events",
                                         "plan_requests", "plans",           "oom_plans",
                                         "config_matches"};
    char schema[64], sql[512];
    PGconn *c = PQconnectdb(env_or_fail("DLBRAIN_PG_DSN"));
    PGresult *res;
    dlb_event_t ev;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "upgrade6");
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    snprintf(sql, sizeof(sql),
             "CREATE SCHEMA %s; SET search_path TO %s; CREATE TABLE schema_migrations (version "
             "integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT "
             "now());",
             schema, schema);
    PQclear(PQexec(c, sql));
    for (int v = 1; v <= 5; v++) {
        const dlb_embedded_t *m = &dlb_embedded_migrations[v - 1];
        const char *values[2] = {NULL, m->name};
        char ver[8];

        snprintf(ver, sizeof(ver), "%d", v);
        values[0] = ver;
        res = PQexec(c, m->data);
        assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
        PQclear(PQexecParams(c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2,
                             NULL, values, NULL, NULL, 0));
    }
    res = PQexec(c, "INSERT INTO job_events VALUES ('x1', 'ua', 1, NULL, NULL, '\\x00'); "
                    "INSERT INTO runtime_samples (event_id, job_uid, event_time_ms, global_step, "
                    "speed, raw, pod_names, pod_types, pod_indexes, pod_cpu_used, "
                    "pod_cpu_requested, pod_memory_used, pod_memory_requested, pod_speeds) "
                    "VALUES ('x1', 'ua', 1, 1, 1.0, '\\x00', '{p}', '{worker}', '{0}', '{1}', "
                    "'{1}', '{1}', '{1}', '{NULL}'); "
                    "INSERT INTO node_events (event_id, job_uid, event_time_ms, kind, pod_name, "
                    "pod_type, pod_index, node_name, reason, message, raw) VALUES ('x1', 'ua', 1, "
                    "'oom_killed', 'p', 'worker', 0, 'n', '', '', '\\x00'); "
                    "INSERT INTO plan_requests VALUES ('x1', 'ua', 1, 's', NULL, '\\x00'); "
                    "INSERT INTO plans (plan_id, job_uid, trigger_event_id, stage, optimizer, "
                    "reason, event_time_ms, groups, pods, raw) VALUES ('plan-x1', 'ua', 'x1', "
                    "'s', 'o', 'r', 1, '[]', '[]', '\\x00'); "
                    "INSERT INTO oom_plans VALUES ('ua', 'p', 'x1', 'plan-x1', 1, 1); "
                    "INSERT INTO config_matches (event_id, job_uid, event_time_ms, rules_version, "
                    "rule_ids, values, raw) VALUES ('cfg-x1', 'ua', 1, 0, '[]', '{}', '\\x00');");
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        fail_msg("version 5 rows: %s", PQresultErrorMessage(res));
    PQclear(res);
    PQfinish(c);

    pg = pg_open(schema);
    assert_int_equal(count_of(pg, "schema_migrations"), (int64_t)migrations_cnt());
    assert_string_equal(sql_str(schema, "SELECT name FROM schema_migrations WHERE version = 6"),
                        "006_event_ids_per_job.sql");
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
        assert_int_equal(count_of(pg, tables[t]), 1);
    assert_string_equal(sql_str(schema, "SELECT job_uid || '/' || pod_name FROM runtime_pods"),
                        "ua/p");
    /* Job ub's events of the same ids are stored; ua's again are not. */
    put_job_x1(pg, "ub", 0);
    put_job_x1(pg, "ub", 1);
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
        assert_int_equal(count_of(pg, tables[t]), 2);
    ev_job(&ev, "x1", "ua", 1);
    put(pg, &ev, 1);
    assert_int_equal(count_of(pg, "job_events"), 2);
    dlb_pg_destroy(pg);
}

/* A v1 frame (schema id 2, no pods[].speed) from an older producer: stored
 * as sent, read back by the rebuild and the history without speeds. */
static void test_pg_v1_raw_rows(void **unused)
{
    const dlb_schema_entry_t *v1 = dlb_catalog_by_id(cat, 2);
    char schema[64], *json = NULL;
    dlb_event_t ev, want;
    dlb_job_state_t st;
    dlb_history_t h;
    cJSON *j, *pod;
    avro_value_t v;
    size_t sz = 0;
    uint8_t *buf;
    avro_writer_t w;
    dlb_pg_t *pg;
    (void)unused;

    assert_non_null(v1);
    schema_for(schema, sizeof(schema), "v1raw");
    pg = pg_open(schema);
    ev_job(&ev, "j", "u1", T0 - 1000);
    job_meta(&ev, "v1scn", "old");
    put(pg, &ev, 1);
    ev_rt(&ev, "s1", "u1", T0, 3);
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, errstr, sizeof(errstr)), 0);
    assert_non_null(j = cJSON_Parse(json));
    free(json);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "type");
    /* What v2 (speed) and v3 (PodMeta's rest) added is not in v1. */
    cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(j, "pods"))
    {
        static const char *const newer[] = {"speed",     "pod_ip",   "node_ip", "host_name",
                                            "namespace", "is_mixed", NULL};
        for (const char *const *k = newer; *k; k++)
            cJSON_DeleteItemFromObjectCaseSensitive(pod, *k);
    }
    assert_int_equal(avro_generic_value_new(v1->iface, &v), 0);
    if (dlb_json_to_avro(cat, v1, j, &v, "", errstr, sizeof(errstr)))
        fail_msg("v1 value: %s", errstr);
    cJSON_Delete(j);
    assert_int_equal(avro_value_sizeof(&v, &sz), 0);
    assert_non_null(buf = calloc(1, DLB_FRAME_HEADER + sz));
    buf[4] = 2;
    assert_non_null(w = avro_writer_memory((const char *)buf + DLB_FRAME_HEADER, (int64_t)sz));
    assert_int_equal(avro_value_write(w, &v), 0);
    avro_writer_free(w);
    avro_value_decref(&v);
    if (dlb_pg_put_event(pg, &ev, buf, DLB_FRAME_HEADER + sz, errstr, sizeof(errstr)))
        fail_msg("put: %s", errstr);
    free(buf);
    /* The columns come from the struct, the rebuild from the raw frame. */
    assert_string_equal(
        sql_str(schema, "SELECT encode(substr(raw, 1, 5), 'hex') FROM runtime_samples"),
        "0000000002");
    assert_int_equal(dlb_event_copy(&want, &ev), 0);
    for (size_t i = 0; i < want.u.rt.pods_cnt; i++) {
        want.u.rt.pods[i].has_speed = 0;
        want.u.rt.pods[i].speed = 0;
    }
    assert_int_equal(dlb_pg_load_job_state(pg, "u1", 5, &st, errstr, sizeof(errstr)), 0);
    assert_int_equal(st.window_cnt, 1);
    assert_sample_equal(&st.window[0], &want.u.rt);
    dlb_job_state_clear(&st);
    assert_int_equal(
        dlb_pg_load_history(pg, "v1scn", NULL, T0 + 1, 1, 10, 10, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 1);
    assert_int_equal(h.jobs[0].samples_cnt, 1);
    assert_sample_equal(&h.jobs[0].samples[0], &want.u.rt);
    dlb_history_clear(&h);
    dlb_event_clear(&want);
    dlb_event_clear(&ev);
    dlb_pg_destroy(pg);
}

/* A job of the history fixture: created at `created`, n samples one minute apart. */
static void hist_job(dlb_pg_t *pg, const char *uid, const char *scenario, int64_t created,
                     const char *state, const char *exit_reason, int n)
{
    dlb_event_t ev;
    char id[64];

    snprintf(id, sizeof(id), "%s-j", uid);
    ev_job(&ev, id, uid, created);
    job_meta(&ev, scenario, uid);
    if (state)
        job_state(&ev, state);
    if (exit_reason) {
        ev.u.job.has_exit_reason = 1;
        snprintf(ev.u.job.exit_reason, sizeof(ev.u.job.exit_reason), "%s", exit_reason);
    }
    put(pg, &ev, 1);
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%s-s%d", uid, i);
        ev_rt(&ev, id, uid, created + 60000 * (i + 1), 2);
        put(pg, &ev, 1);
        dlb_event_clear(&ev);
    }
}

static void test_pg_load_history(void **unused)
{
    const int64_t until = T0 + 1000 * HOUR_MS;
    char schema[64];
    dlb_history_t h;
    dlb_event_t ev;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "history");
    pg = pg_open(schema);
    hist_job(pg, "j1", "ctr", until - 10 * HOUR_MS, "succeeded", NULL, 5);
    hist_job(pg, "j2", "ctr", until - 2 * HOUR_MS, "running", NULL, 3);
    hist_job(pg, "j3", "ctr", until - 200 * HOUR_MS, "succeeded", NULL, 2); /* too old */
    hist_job(pg, "j4", "cv", until - 1 * HOUR_MS, "succeeded", NULL, 2);    /* other scenario */
    hist_job(pg, "j5", "ctr", until, "running", NULL, 1);                   /* not before until */
    hist_job(pg, "j6", "ctr", until - HOUR_MS / 2, "running", NULL, 2);     /* the asking job */
    hist_job(pg, "j7", "ctr", until - 5 * HOUR_MS, "failed", "Completed", 0);
    ev_node(&ev, "j2-n1", "j2", until - HOUR_MS, "j2-worker-1", "oom_killed");
    put(pg, &ev, 1);
    ev_node(&ev, "j2-n2", "j2", until - HOUR_MS + 1, "j2-worker-1", "oom_killed");
    put(pg, &ev, 1);
    ev_node(&ev, "j2-n3", "j2", until - HOUR_MS + 2, "j2-worker-0", "oom_killed");
    put(pg, &ev, 1);
    ev_node(&ev, "j2-n4", "j2", until - HOUR_MS + 3, "j2-ps-0", "pod_phase");
    put(pg, &ev, 1);

    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", "j6", until, 168, 10, 2, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 3);
    assert_string_equal(h.jobs[0].job_uid, "j2");
    assert_string_equal(h.jobs[1].job_uid, "j7");
    assert_string_equal(h.jobs[2].job_uid, "j1");
    assert_int_equal(h.jobs[0].created_ms, until - 2 * HOUR_MS);
    assert_string_equal(h.jobs[0].state, "running");
    assert_int_equal(h.jobs[0].completed, 0);
    assert_string_equal(h.jobs[1].exit_reason, "Completed");
    assert_int_equal(h.jobs[1].completed, 1);
    assert_string_equal(h.jobs[2].state, "succeeded");
    assert_int_equal(h.jobs[2].completed, 1);
    /* The newest max_samples, oldest first. */
    assert_int_equal(h.jobs[2].samples_cnt, 2);
    assert_string_equal(h.jobs[2].samples[0].event_id, "j1-s3");
    assert_string_equal(h.jobs[2].samples[1].event_id, "j1-s4");
    assert_int_equal(h.jobs[2].samples[1].pods_cnt, 2);
    assert_string_equal(h.jobs[2].samples[1].pods[1].name, "j1-worker-1");
    assert_int_equal(h.jobs[2].samples[1].pods[0].has_speed, 0);
    assert_int_equal(h.jobs[2].samples[1].pods[1].has_speed, 1);
    {
        dlb_event_t want;
        ev_rt(&want, "j1-s4", "j1", until - 10 * HOUR_MS + 60000 * 5, 2);
        assert_sample_equal(&h.jobs[2].samples[1], &want.u.rt);
        dlb_event_clear(&want);
    }
    assert_int_equal(h.jobs[0].samples_cnt, 2);
    assert_string_equal(h.jobs[0].samples[0].event_id, "j2-s1");
    assert_int_equal(h.jobs[1].samples_cnt, 0);
    assert_null(h.jobs[1].samples);
    /* OOM pods: distinct, sorted; the phase event does not count. */
    assert_int_equal(h.jobs[0].oom_pods_cnt, 2);
    assert_string_equal(h.jobs[0].oom_pods[0], "j2-worker-0");
    assert_string_equal(h.jobs[0].oom_pods[1], "j2-worker-1");
    assert_int_equal(h.jobs[1].oom_pods_cnt, 0);
    assert_int_equal(h.jobs[2].oom_pods_cnt, 0);
    dlb_history_clear(&h);

    /* Limits: newest job only; a 3-hour window; no samples. */
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", "j6", until, 168, 1, 60, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 1);
    assert_string_equal(h.jobs[0].job_uid, "j2");
    assert_int_equal(h.jobs[0].samples_cnt, 3);
    dlb_history_clear(&h);
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", "j6", until, 3, 10, 60, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 1);
    assert_string_equal(h.jobs[0].job_uid, "j2");
    dlb_history_clear(&h);
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 0, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 4); /* j6 is back */
    assert_string_equal(h.jobs[0].job_uid, "j6");
    assert_int_equal(h.jobs[0].samples_cnt, 0);
    dlb_history_clear(&h);
    /* No scenario: no similar jobs. */
    assert_int_equal(
        dlb_pg_load_history(pg, "", NULL, until, 168, 10, 10, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 0);
    assert_int_equal(
        dlb_pg_load_history(pg, "nlp", NULL, until, 168, 10, 10, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 0);
    assert_null(h.jobs);
    dlb_pg_destroy(pg);
}

/* A job's state, exit reason and OOM-killed pods as of the request, whether
 * the job's marks (migration 015) answer or the events must: a newer state
 * than the request is not seen, late and older events do not move the
 * marks, a deleted event does, and events before the job's row count. */
static void hist_state_at(dlb_pg_t *pg, int64_t until, const char *uid, const char *state,
                          const char *exit_reason, size_t ooms)
{
    dlb_history_t h;
    size_t k;

    assert_int_equal(
        dlb_pg_load_history(pg, "asof", NULL, until, 168, 10, 0, &h, errstr, sizeof(errstr)), 0);
    for (k = 0; k < h.jobs_cnt && strcmp(h.jobs[k].job_uid, uid); k++)
        ;
    assert_true(k < h.jobs_cnt);
    assert_string_equal(h.jobs[k].state, state);
    assert_string_equal(h.jobs[k].exit_reason, exit_reason);
    assert_int_equal(h.jobs[k].oom_pods_cnt, ooms);
    dlb_history_clear(&h);
}

static void test_pg_load_history_as_of(void **unused)
{
    const int64_t c = T0 + 10 * HOUR_MS;
    char schema[64];
    dlb_event_t ev;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "histasof");
    pg = pg_open(schema);
    hist_job(pg, "j1", "asof", c, "running", NULL, 0);
    ev_job(&ev, "j1-done", "j1", c + 100);
    job_state(&ev, "succeeded");
    ev.u.job.has_exit_reason = 1;
    snprintf(ev.u.job.exit_reason, sizeof(ev.u.job.exit_reason), "Completed");
    put(pg, &ev, 1);
    ev_node(&ev, "j1-oom", "j1", c + 50, "j1-worker-1", "oom_killed");
    put(pg, &ev, 1);

    hist_state_at(pg, c + 40, "j1", "running", "", 0);
    hist_state_at(pg, c + 60, "j1", "running", "", 1);
    hist_state_at(pg, c + 100, "j1", "running", "", 1);
    hist_state_at(pg, c + 101, "j1", "succeeded", "Completed", 1);
    /* A newer state, then a late one older than it. */
    ev_job(&ev, "j1-late", "j1", c + 150);
    job_state(&ev, "failed");
    put(pg, &ev, 1);
    ev_job(&ev, "j1-older", "j1", c + 120);
    job_state(&ev, "pending");
    put(pg, &ev, 1);
    hist_state_at(pg, c + 200, "j1", "failed", "Completed", 1);
    hist_state_at(pg, c + 130, "j1", "pending", "Completed", 1);
    assert_int_equal(sql_i64(schema, "SELECT last_state_ms FROM jobs WHERE uid = 'j1'"), c + 150);
    /* Deleted: the marks are read again from what is left. */
    sql_str(schema, "WITH d AS (DELETE FROM job_events WHERE event_id = 'j1-late' RETURNING 1) "
                    "SELECT count(*) FROM d");
    assert_int_equal(sql_i64(schema, "SELECT last_state_ms FROM jobs WHERE uid = 'j1'"), c + 120);
    hist_state_at(pg, c + 200, "j1", "pending", "Completed", 1);
    /* An OOM kill and a state before the job's first meta event. */
    ev_node(&ev, "j2-oom", "j2", c + 10, "j2-worker-1", "oom_killed");
    put(pg, &ev, 1);
    hist_job(pg, "j2", "asof", c + 20, NULL, NULL, 0);
    hist_state_at(pg, c + 30, "j2", "", "", 1);
    assert_int_equal(sql_i64(schema, "SELECT oom_max_ms FROM jobs WHERE uid = 'j2'"), c + 10);
    dlb_pg_destroy(pg);
}

/* Inside one transaction, the similar jobs of a scenario are read once
 * (the second request's read) and serve later requests that they answer
 * exactly: another connection's commit meanwhile is not seen, this
 * connection's own write is, and so is a request before the read. */
static size_t hist_at(dlb_pg_t *pg, int64_t until, const char *exclude, const char *uid,
                      char *state, size_t state_size)
{
    dlb_history_t h;
    size_t n;

    assert_int_equal(
        dlb_pg_load_history(pg, "memo", exclude, until, 168, 10, 5, &h, errstr, sizeof(errstr)), 0);
    state[0] = '\0';
    for (size_t k = 0; k < h.jobs_cnt; k++) {
        assert_true(h.jobs[k].created_ms < until);
        if (!strcmp(h.jobs[k].job_uid, uid)) {
            snprintf(state, state_size, "%s", h.jobs[k].state);
            assert_true(h.jobs[k].samples_cnt > 0);
        }
    }
    n = h.jobs_cnt;
    dlb_history_clear(&h);
    return n;
}

static void test_pg_history_memo(void **unused)
{
    const int64_t c = T0 + 10 * HOUR_MS;
    char schema[64], state[32];
    dlb_event_t ev;
    dlb_pg_t *pg, *other;
    (void)unused;

    schema_for(schema, sizeof(schema), "histmemo");
    pg = pg_open(schema);
    other = pg_open(schema);
    hist_job(pg, "j1", "memo", c - 2 * HOUR_MS, "running", NULL, 3);
    hist_job(pg, "j2", "memo", c - HOUR_MS, "running", NULL, 2);
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(hist_at(pg, c, NULL, "j1", state, sizeof(state)), 2);
    assert_int_equal(hist_at(pg, c + 1, NULL, "j1", state, sizeof(state)), 2);
    assert_string_equal(state, "running");
    /* Committed by another consumer after the read: this transaction's
     * later requests are answered as the one before them was. */
    hist_job(other, "j3", "memo", c - HOUR_MS / 2, "running", NULL, 1);
    assert_int_equal(hist_at(pg, c + 2, NULL, "j1", state, sizeof(state)), 2);
    /* This connection's own write is seen at once. */
    ev_job(&ev, "j1-failed", "j1", c + 3);
    job_state(&ev, "failed");
    put(pg, &ev, 1);
    assert_int_equal(hist_at(pg, c + 10, NULL, "j1", state, sizeof(state)), 3);
    assert_string_equal(state, "failed");
    assert_int_equal(hist_at(pg, c + 11, NULL, "j1", state, sizeof(state)), 3);
    assert_string_equal(state, "failed");
    assert_int_equal(hist_at(pg, c + 12, "j3", "j1", state, sizeof(state)), 2);
    /* Before the failure: as of then, whatever was read since. */
    assert_int_equal(hist_at(pg, c + 3, NULL, "j1", state, sizeof(state)), 3);
    assert_string_equal(state, "running");
    /* Before j3 was created: not in the answer. */
    assert_int_equal(hist_at(pg, c - HOUR_MS / 2, NULL, "j1", state, sizeof(state)), 2);
    dlb_pg_rollback(pg);
    /* Outside a transaction every request asks. */
    assert_int_equal(hist_at(pg, c + 20, NULL, "j1", state, sizeof(state)), 3);
    assert_string_equal(state, "running");
    dlb_pg_destroy(other);
    dlb_pg_destroy(pg);
}

/* With history.cache.mb, a second load of the same history is served from
 * the decoded samples of the first (the same memory, the same content), and
 * a sample deleted in between (retention) is left out though cached. */
static void test_pg_load_history_cached(void **unused)
{
    const int64_t until = T0 + 1000 * HOUR_MS;
    const dlb_pod_usage_t *first_pods;
    dlb_runtime_sample_t first;
    char schema[64];
    dlb_history_t h;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "history_cached");
    pg = pg_open(schema);
    dlb_pg_set_history_cache(pg, 1 << 20);
    hist_job(pg, "j1", "ctr", until - 10 * HOUR_MS, "succeeded", NULL, 5);
    hist_job(pg, "j2", "ctr", until - 2 * HOUR_MS, "running", NULL, 3);

    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 3, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 2);
    assert_int_equal(h.borrowed, 1);
    assert_string_equal(h.jobs[1].job_uid, "j1");
    assert_int_equal(h.jobs[1].samples_cnt, 3);
    first = h.jobs[1].samples[2];
    first_pods = first.pods;
    assert_string_equal(first.event_id, "j1-s4");
    dlb_history_clear(&h);

    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 3, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs[1].samples_cnt, 3);
    assert_ptr_equal(h.jobs[1].samples[2].pods, first_pods); /* from the cache */
    assert_sample_equal(&h.jobs[1].samples[2], &first);
    {
        dlb_event_t want;
        ev_rt(&want, "j1-s4", "j1", until - 10 * HOUR_MS + 60000 * 5, 2);
        assert_sample_equal(&h.jobs[1].samples[2], &want.u.rt);
        dlb_event_clear(&want);
    }
    dlb_history_clear(&h);

    sql_str(schema, "WITH d AS (DELETE FROM runtime_samples WHERE event_id = 'j1-s4' RETURNING 1) "
                    "SELECT count(*) FROM d");
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 3, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs[1].samples_cnt, 3);
    assert_string_equal(h.jobs[1].samples[0].event_id, "j1-s1");
    assert_string_equal(h.jobs[1].samples[2].event_id, "j1-s3");
    dlb_history_clear(&h);

    /* Warm now: a new sample is fetched by its key alone and decoded. */
    {
        dlb_event_t ev;
        ev_rt(&ev, "j1-s9", "j1", until - 10 * HOUR_MS + 60000 * 9, 2);
        put(pg, &ev, 1);
        dlb_event_clear(&ev);
        assert_int_equal(
            dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 3, &h, errstr, sizeof(errstr)), 0);
        assert_int_equal(h.jobs[1].samples_cnt, 3);
        assert_string_equal(h.jobs[1].samples[0].event_id, "j1-s2");
        ev_rt(&ev, "j1-s9", "j1", until - 10 * HOUR_MS + 60000 * 9, 2);
        assert_sample_equal(&h.jobs[1].samples[2], &ev.u.rt);
        dlb_event_clear(&ev);
        dlb_history_clear(&h);
    }
    dlb_pg_destroy(pg);
}

/* The sample keys of a job are kept between loads while jobs.samples_seq
 * (migration 014) says they have not changed and the load is later than the
 * newest: shown by adding a sample with the trigger off (not seen) and on
 * (seen). A load earlier than a job's newest sample asks again; a job's row
 * made after its samples starts from them; a DELETE counts as a change. */
static void test_pg_load_history_keys_kept(void **unused)
{
    const int64_t until = T0 + 1000 * HOUR_MS, j2_at = until - 2 * HOUR_MS;
    char schema[64];
    dlb_history_t h;
    dlb_event_t ev;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "history_keys");
    pg = pg_open(schema);
    dlb_pg_set_history_cache(pg, 1 << 20);
    hist_job(pg, "j1", "ctr", until - 10 * HOUR_MS, "succeeded", NULL, 5);
    hist_job(pg, "j2", "ctr", j2_at, "running", NULL, 3);
    assert_int_equal(sql_i64(schema, "SELECT samples_seq FROM jobs WHERE uid = 'j1'"), 5);
    assert_int_equal(sql_i64(schema, "SELECT samples_max_ms FROM jobs WHERE uid = 'j2'"),
                     j2_at + 3 * 60000);
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 4, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs[1].samples_cnt, 4);
    assert_int_equal(h.jobs[0].samples_cnt, 3);
    dlb_history_clear(&h);

    /* Unseen by the trigger: the kept keys serve, without it. */
    sql_str(schema,
            "ALTER TABLE runtime_samples DISABLE TRIGGER runtime_samples_mark_jobs; SELECT 1");
    ev_rt(&ev, "j1-s7", "j1", until - 10 * HOUR_MS + 60000 * 7, 2);
    put(pg, &ev, 1);
    dlb_event_clear(&ev);
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 4, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs[1].samples_cnt, 4);
    assert_string_equal(h.jobs[1].samples[3].event_id, "j1-s4");
    dlb_history_clear(&h);
    sql_str(schema,
            "ALTER TABLE runtime_samples ENABLE TRIGGER runtime_samples_mark_jobs; SELECT 1");

    /* Seen: both samples, as the table holds them. */
    ev_rt(&ev, "j1-s8", "j1", until - 10 * HOUR_MS + 60000 * 8, 2);
    put(pg, &ev, 1);
    dlb_event_clear(&ev);
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 4, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs[1].samples_cnt, 4);
    assert_string_equal(h.jobs[1].samples[2].event_id, "j1-s7");
    assert_string_equal(h.jobs[1].samples[3].event_id, "j1-s8");
    dlb_history_clear(&h);

    /* Earlier than j2's newest sample: asked, only what came before. */
    assert_int_equal(dlb_pg_load_history(pg, "ctr", NULL, j2_at + 2 * 60000 + 1, 168, 10, 4, &h,
                                         errstr, sizeof(errstr)),
                     0);
    assert_string_equal(h.jobs[0].job_uid, "j2");
    assert_int_equal(h.jobs[0].samples_cnt, 2);
    dlb_history_clear(&h);
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 4, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs[0].samples_cnt, 3);
    dlb_history_clear(&h);

    /* A DELETE is a change. */
    sql_str(schema, "WITH d AS (DELETE FROM runtime_samples WHERE event_id = 'j1-s8' RETURNING 1) "
                    "SELECT count(*) FROM d");
    assert_int_equal(
        dlb_pg_load_history(pg, "ctr", NULL, until, 168, 10, 4, &h, errstr, sizeof(errstr)), 0);
    assert_string_equal(h.jobs[1].samples[3].event_id, "j1-s7");
    dlb_history_clear(&h);

    /* Samples before the job's row, several in one statement. */
    sql_str(schema, "WITH i AS (INSERT INTO runtime_samples (event_id, job_uid, event_time_ms, "
                    "global_step, speed, raw) VALUES ('j3-a', 'j3', 5, 0, 0, ''), "
                    "('j3-b', 'j3', 7, 0, 0, ''), ('j1-x', 'j1', 1, 0, 0, '') RETURNING 1) "
                    "SELECT count(*) FROM i");
    assert_int_equal(sql_i64(schema, "SELECT samples_seq FROM jobs WHERE uid = 'j1'"), 8);
    hist_job(pg, "j3", "ctr", until - 5 * HOUR_MS, "succeeded", NULL, 0);
    assert_int_equal(sql_i64(schema, "SELECT samples_max_ms FROM jobs WHERE uid = 'j3'"), 7);
    assert_int_equal(sql_i64(schema, "SELECT samples_seq FROM jobs WHERE uid = 'j3'"), 0);
    dlb_pg_destroy(pg);
}

/* The history reads at most 131,072 pods of samples (DLB_PG_MAX_HIST_PODS):
 * the newest jobs' newest samples that fit. */
static void test_pg_load_history_pods_bound(void **unused)
{
    const int64_t until = T0 + 1000 * HOUR_MS;
    char schema[64], id[64], uid[16];
    dlb_history_t h;
    dlb_event_t ev;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "histpods");
    pg = pg_open(schema);
    /* 3 jobs of 5 samples of 16,384 pods: 245,760 pods; 8 samples fit. */
    for (int j = 0; j < 3; j++) {
        snprintf(uid, sizeof(uid), "b%d", j);
        hist_job(pg, uid, "big", until - (10 - j) * HOUR_MS, "succeeded", NULL, 0);
        for (int i = 0; i < 5; i++) {
            snprintf(id, sizeof(id), "%s-s%d", uid, i);
            ev_rt(&ev, id, uid, until - (10 - j) * HOUR_MS + 60000 * (i + 1), 16384);
            put(pg, &ev, 1);
            dlb_event_clear(&ev);
        }
    }
    assert_int_equal(
        dlb_pg_load_history(pg, "big", NULL, until, 168, 10, 240, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs_cnt, 3);
    assert_string_equal(h.jobs[0].job_uid, "b2");
    assert_int_equal(h.jobs[0].samples_cnt, 5);
    assert_string_equal(h.jobs[1].job_uid, "b1");
    assert_int_equal(h.jobs[1].samples_cnt, 3); /* its newest, oldest first */
    assert_string_equal(h.jobs[1].samples[0].event_id, "b1-s2");
    assert_string_equal(h.jobs[1].samples[2].event_id, "b1-s4");
    assert_int_equal(h.jobs[1].samples[2].pods_cnt, 16384);
    assert_int_equal(h.jobs[2].samples_cnt, 0);
    dlb_history_clear(&h);
    /* Under the bound nothing changes: 2 samples of each. */
    assert_int_equal(
        dlb_pg_load_history(pg, "big", NULL, until, 168, 10, 2, &h, errstr, sizeof(errstr)), 0);
    assert_int_equal(h.jobs[0].samples_cnt + h.jobs[1].samples_cnt + h.jobs[2].samples_cnt, 6);
    dlb_history_clear(&h);
    dlb_pg_destroy(pg);
}

/* Events of one job in time order; dup marks events delivered twice. */
#define REBUILD_N 24
static void rebuild_events(dlb_event_t *evs)
{
    char id[32];

    for (int i = 0; i < REBUILD_N; i++) {
        int64_t t = T0 + 1000 * i;
        snprintf(id, sizeof(id), "e%02d", i);
        switch (i % 4) {
        case 0:
            ev_job(&evs[i], id, "u9", t);
            if (i == 0)
                job_meta(&evs[i], "ctr", "rebuild");
            job_state(&evs[i], i < 12 ? "pending" : "running");
            if (i == 8) {
                evs[i].u.job.has_model = 1;
                evs[i].u.job.model.recv_op_count = 321;
                evs[i].u.job.model.total_variable_size = 5 * GIB;
            }
            break;
        case 1:
        case 2:
            ev_rt(&evs[i], id, "u9", t, 1 + i % 3);
            break;
        default:
            ev_node(&evs[i], id, "u9", t, i % 8 == 3 ? "u9-worker-1" : "u9-ps-0",
                    i % 8 == 3 ? "oom_killed" : "pod_phase");
            break;
        }
    }
}

static void test_pg_load_job_state_equals_fold(void **unused)
{
    char schema[64];
    dlb_event_t evs[REBUILD_N];
    dlb_job_state_t mem = {0}, db = {0};
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "rebuild");
    pg = pg_open(schema);
    rebuild_events(evs);
    for (int i = 0; i < REBUILD_N; i++)
        assert_int_equal(dlb_job_state_apply(&mem, &evs[i], 5), 0);
    /* Stored in another order (a stride through the list), some twice. */
    for (int k = 0; k < REBUILD_N; k++) {
        int i = (k * 7) % REBUILD_N;
        put(pg, &evs[i], k % 2);
        if (i % 5 == 0)
            put(pg, &evs[i], 1);
    }
    assert_int_equal(dlb_pg_load_job_state(pg, "u9", 5, &db, errstr, sizeof(errstr)), 0);
    assert_int_equal(mem.window_cnt, 5);
    assert_int_equal(mem.pods_cnt, 2);
    assert_int_equal(dlb_job_state_pod(&mem, "u9-worker-1")->oom_count, 3);
    assert_int_equal(mem.created_ms, T0);
    assert_string_equal(mem.job.state, "running");
    assert_state_equal(&db, &mem);
    dlb_job_state_clear(&db);

    /* Unknown job: empty state that names the job. */
    assert_int_equal(dlb_pg_load_job_state(pg, "nobody", 5, &db, errstr, sizeof(errstr)), 0);
    assert_string_equal(db.job.job_uid, "nobody");
    assert_int_equal(db.window_cnt, 0);
    assert_int_equal(db.pods_cnt, 0);
    assert_int_equal(db.created_ms, 0);
    assert_int_equal(db.job.has_meta, 0);
    dlb_job_state_clear(&db);
    dlb_job_state_clear(&mem);
    for (int i = 0; i < REBUILD_N; i++)
        dlb_event_clear(&evs[i]);
    dlb_pg_destroy(pg);
}

/* Ends every other connection of this test schema's application name. */
static void kill_dlbrain_backends(void)
{
    PGconn *c = PQconnectdb(env_or_fail("DLBRAIN_PG_DSN"));
    PGresult *res;

    assert_int_equal(PQstatus(c), CONNECTION_OK);
    res = PQexec(c, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = 'dlbrain' AND pid <> pg_backend_pid()");
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    assert_true(atoi(PQgetvalue(res, 0, 0)) >= 1);
    PQclear(res);
    PQfinish(c);
}

static void test_pg_errors(void **unused)
{
    char schema[64], dsn[256];
    dlb_event_t ev;
    dlb_pg_t *pg = NULL;
    int64_t n;
    (void)unused;

    /* Nobody listens on port 1. */
    snprintf(dsn, sizeof(dsn), "host=127.0.0.1 port=1 dbname=dlbrain connect_timeout=2");
    assert_int_equal(dlb_pg_connect(&pg, dsn, "x", errstr, sizeof(errstr)), DLB_ERR_TRANSIENT);
    assert_null(pg);
    assert_non_null(strstr(errstr, "connect"));

    /* A DSN libpq cannot parse is configuration, not an outage. */
    assert_int_equal(dlb_pg_connect(&pg, "host=127.0.0.1 bogus", "x", errstr, sizeof(errstr)),
                     DLB_ERR_CONF);
    assert_null(pg);

    schema_for(schema, sizeof(schema), "errors");
    pg = pg_open(schema);
    /* A real SQL error is not transient and names its SQLSTATE. */
    assert_int_equal(dlb_pg_count(pg, "no_such_table", &n, errstr, sizeof(errstr)),
                     DLB_ERR_GENERIC);
    assert_non_null(strstr(errstr, "42P01"));

    /* Connection killed inside a transaction: transient, and no silent autocommit after it. */
    ev_req(&ev, "r1", "u1", T0);
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    put(pg, &ev, 1);
    kill_dlbrain_backends();
    ev_req(&ev, "r2", "u1", T0);
    assert_int_equal(dlb_pg_put_event(pg, &ev, NULL, 0, errstr, sizeof(errstr)), DLB_ERR_TRANSIENT);
    assert_int_equal(dlb_pg_put_event(pg, &ev, NULL, 0, errstr, sizeof(errstr)), DLB_ERR_TRANSIENT);
    assert_int_not_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), 0);
    dlb_pg_rollback(pg);
    assert_int_equal(dlb_pg_reconnect(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pg, "plan_requests"), 0);
    /* The batch is redone on the new connection. */
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    put(pg, &ev, 1);
    ev_req(&ev, "r1", "u1", T0);
    put(pg, &ev, 1);
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pg, "plan_requests"), 2);

    /* Outside a transaction the next call reconnects by itself. */
    kill_dlbrain_backends();
    assert_int_equal(dlb_pg_count(pg, "plan_requests", &n, errstr, sizeof(errstr)),
                     DLB_ERR_TRANSIENT);
    assert_int_equal(dlb_pg_count(pg, "plan_requests", &n, errstr, sizeof(errstr)), 0);
    assert_int_equal(n, 2);

    /* A statement error aborts the transaction: COMMIT must not report success. */
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_count(pg, "no_such_table", &n, errstr, sizeof(errstr)),
                     DLB_ERR_GENERIC);
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), DLB_ERR_GENERIC);
    assert_non_null(strstr(errstr, "aborted"));
    assert_int_equal(dlb_pg_commit(pg, errstr, sizeof(errstr)), DLB_ERR_GENERIC);
    dlb_pg_destroy(pg);
}

/* ---- configuration versions and matches (store_config.h) -------------------------- */

static void cm_init(dlb_config_match_t *m, const char *id, int64_t version, char **ids,
                    size_t ids_cnt, dlb_config_value_t *values, size_t values_cnt,
                    const char *trigger)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->event_id, sizeof(m->event_id), "%s", id);
    snprintf(m->job_uid, sizeof(m->job_uid), "u1");
    m->event_time_ms = T0;
    m->rules_version = version;
    m->rule_ids = ids;
    m->rule_ids_cnt = ids_cnt;
    m->values = values;
    m->values_cnt = values_cnt;
    snprintf(m->trigger_event_id, sizeof(m->trigger_event_id), "%s", trigger);
}

/* The framed bytes of m as the configurer sends them. */
static void cm_encode(const dlb_config_match_t *m, void **buf, size_t *len)
{
    dlb_event_t ev = {.type = DLB_EV_CONFIG_MATCH};

    ev.u.cm = *m; /* shallow: encoding only reads it */
    if (dlb_codec_encode(cat, &ev, buf, len, errstr, sizeof(errstr)))
        fail_msg("encode: %s", errstr);
}

static void assert_match_bytes(dlb_pg_t *pg, const char *id, const void *want, size_t want_len)
{
    void *got = NULL;
    size_t got_len = 0;

    assert_int_equal(dlb_cfg_get_match(pg, "u1", id, &got, &got_len, errstr, sizeof(errstr)), 0);
    assert_non_null(got);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    free(got);
}

static void test_cfg_matches(void **unused)
{
    char schema[64], *ids[] = {"big-batch", "lr"};
    dlb_config_value_t values[] = {
        {"A", "1"}, {"opt", "{\"name\":\"adam\",\"beta\":[0.9,0.999]}"}, {"note", "\"tf\""}};
    dlb_config_match_t m, again, none;
    void *raw = NULL, *raw0 = NULL, *got = (void *)1;
    size_t len = 0, len0 = 0, got_len = 1;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "cfgmatch");
    pg = pg_open(schema);
    cm_init(&m, "cm-1", 3, ids, 2, values, 3, "req-1");
    cm_encode(&m, &raw, &len);

    /* Put then get: the bytes as sent. */
    assert_int_equal(dlb_cfg_put_match(pg, &m, raw, len, errstr, sizeof(errstr)), 0);
    assert_match_bytes(pg, "cm-1", raw, len);

    /* The same event id again, even with other content: nothing changes. */
    cm_init(&again, "cm-1", 4, ids, 1, values, 1, "req-2");
    assert_int_equal(dlb_cfg_put_match(pg, &again, NULL, 0, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_cfg_put_match(pg, &m, raw, len, errstr, sizeof(errstr)), 0);
    assert_int_equal(count_of(pg, "config_matches"), 1);
    assert_match_bytes(pg, "cm-1", raw, len);
    assert_string_equal(sql_str(schema,
                                "SELECT concat_ws('|', job_uid, event_time_ms - %s, "
                                "rules_version, trigger_event_id) FROM config_matches",
                                "1700000000000"),
                        "u1|0|3|req-1");

    /* Unknown id: no bytes, no error. */
    assert_int_equal(dlb_cfg_get_match(pg, "u1", "nope", &got, &got_len, errstr, sizeof(errstr)),
                     0);
    assert_null(got);
    assert_int_equal(got_len, 0);

    /* rules_version 0 (no rules yet), nothing matched, no trigger; the store encodes. */
    cm_init(&none, "cm-0", 0, NULL, 0, NULL, 0, "");
    assert_int_equal(dlb_cfg_put_match(pg, &none, NULL, 0, errstr, sizeof(errstr)), 0);
    cm_encode(&none, &raw0, &len0);
    assert_match_bytes(pg, "cm-0", raw0, len0);
    assert_string_equal(sql_str(schema,
                                "SELECT concat_ws('|', rules_version, rule_ids::text, "
                                "values::text, coalesce(trigger_event_id, 'null')) "
                                "FROM config_matches WHERE event_id = '%s'",
                                "cm-0"),
                        "0|[]|{}|null");
    assert_int_equal(count_of(pg, "config_matches"), 2);

    /* rule_ids and values are jsonb that answers queries. */
    assert_string_equal(sql_str(schema, "SELECT rule_ids::text FROM config_matches "
                                        "WHERE event_id = 'cm-1'"),
                        "[\"big-batch\", \"lr\"]");
    assert_string_equal(sql_str(schema, "SELECT (rule_ids = '[\"big-batch\",\"lr\"]'::jsonb AND "
                                        "values = '{\"A\":1,\"opt\":{\"name\":\"adam\",\"beta\":"
                                        "[0.9,0.999]},\"note\":\"tf\"}'::jsonb)::text "
                                        "FROM config_matches WHERE event_id = 'cm-1'"),
                        "true");
    assert_string_equal(sql_str(schema,
                                "SELECT concat_ws('|', rule_ids->>0, values->'opt'->>'name',"
                                " values->'opt'->'beta'->>1, values->>'note') "
                                "FROM config_matches WHERE event_id = 'cm-1'"),
                        "big-batch|adam|0.999|tf");
    assert_int_equal(sql_i64(schema, "SELECT count(*) FROM config_matches WHERE rule_ids ? "
                                     "'lr' AND values @> '{\"A\": 1}'"),
                     1);

    /* A match needs its event id. */
    cm_init(&again, "", 1, NULL, 0, NULL, 0, "");
    assert_int_equal(dlb_cfg_put_match(pg, &again, NULL, 0, errstr, sizeof(errstr)),
                     DLB_ERR_INVALID);
    free(raw);
    free(raw0);
    dlb_pg_destroy(pg);
}

/* Rules from YAML text, and their canonical JSON (flags as dlb_rules_to_json()). */
static void rules_of(const char *name, const char *yaml, dlb_rules_t *rs)
{
    if (dlb_rules_parse(name, yaml, strlen(yaml), rs, errstr, sizeof(errstr)))
        fail_msg("parse: %s", errstr);
}

static char *rules_json(const dlb_rules_t *rs, unsigned flags)
{
    char *json = NULL;

    if (dlb_rules_to_json(rs, flags, &json, errstr, sizeof(errstr)))
        fail_msg("to_json: %s", errstr);
    return json;
}

/* The rules of a version (0: the newest) as canonical JSON; *loaded the version. */
static char *loaded_json(dlb_pg_t *pg, int64_t version, int64_t *loaded)
{
    dlb_rules_t rs;
    char *json;

    if (dlb_cfg_load(pg, version, &rs, loaded, errstr, sizeof(errstr)))
        fail_msg("load %" PRId64 ": %s", version, errstr);
    json = rules_json(&rs, 0);
    dlb_rules_clear(&rs);
    return json;
}

/* Apply, load, rollback, list at the C level (tests/system/04-config.sh drives the CLI). */
static void test_cfg_versions(void **unused)
{
    char schema[64], *j1, *j2, *got, *bare;
    dlb_rules_t r1, r2, rs;
    dlb_cfg_version_t v1, v2, v3, v, *list = NULL;
    int64_t loaded = -1;
    size_t n = 0;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "cfg");
    pg = pg_open(schema);
    /* Nothing applied yet. */
    assert_int_equal(dlb_cfg_latest(pg, &v, errstr, sizeof(errstr)), 0);
    assert_int_equal(v.version, 0);
    assert_int_equal(dlb_cfg_load(pg, 0, &rs, &loaded, errstr, sizeof(errstr)), 0);
    assert_int_equal(rs.cnt, 0);
    assert_int_equal(loaded, 0);

    rules_of("a.yaml",
             "id: big\nPriority: 10\nInclude: {user: u1}\nConfigure: {A: 1}\n---\n"
             "Include: {app: ctr}\nConfigure: {lr: 0.001}\n",
             &r1);
    rules_of("b.yaml", "id: big\nPriority: 20\nInclude: {user: [u1, u2]}\nConfigure: {A: 2}\n",
             &r2);
    j1 = rules_json(&r1, 0);
    j2 = rules_json(&r2, 0);

    assert_int_equal(dlb_cfg_apply(pg, &r1, "cli", "first", &v1, errstr, sizeof(errstr)), 0);
    assert_int_equal(v1.version, 1);
    assert_int_equal(v1.rules, 2);
    /* The checksum: SHA-256 of the JSON without file and line (no quote in it to escape). */
    bare = rules_json(&r1, DLB_RULES_JSON_NO_SOURCE);
    assert_string_equal(
        sql_str(schema, "SELECT encode(sha256(convert_to('%s', 'UTF8')), 'hex')", bare),
        v1.checksum);
    free(bare);
    assert_int_equal(dlb_cfg_apply(pg, &r2, "configmap:/rules", NULL, &v2, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(v2.version, 2);
    assert_string_not_equal(v2.checksum, v1.checksum);

    /* Loads give back the rules with file and line, byte for byte. */
    got = loaded_json(pg, 1, &loaded);
    assert_string_equal(got, j1);
    assert_int_equal(loaded, 1);
    free(got);
    got = loaded_json(pg, 0, &loaded);
    assert_string_equal(got, j2);
    assert_int_equal(loaded, 2);
    free(got);

    /* A rollback is a new version with the old rules and checksum. */
    assert_int_equal(dlb_cfg_rollback(pg, 1, "undo", &v3, errstr, sizeof(errstr)), 0);
    assert_int_equal(v3.version, 3);
    assert_int_equal(v3.rollback_of, 1);
    assert_int_equal(v3.rules, 2);
    assert_string_equal(v3.source, "rollback");
    assert_string_equal(v3.checksum, v1.checksum);
    got = loaded_json(pg, 0, &loaded);
    assert_string_equal(got, j1);
    assert_int_equal(loaded, 3);
    free(got);

    assert_int_equal(dlb_cfg_list(pg, &list, &n, errstr, sizeof(errstr)), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(list[i].version, (int64_t)i + 1);
    assert_string_equal(list[0].message, "first");
    assert_string_equal(list[1].source, "configmap:/rules");
    assert_string_equal(list[1].message, "");
    assert_string_equal(list[2].message, "undo");
    assert_true(list[0].created_ms <= list[2].created_ms);
    free(list);
    assert_int_equal(dlb_cfg_latest(pg, &v, errstr, sizeof(errstr)), 0);
    assert_int_equal(v.version, 3);

    /* Unknown versions; nothing added by the failed rollback. */
    assert_int_equal(dlb_cfg_get(pg, 99, &v, errstr, sizeof(errstr)), DLB_ERR_NOTFOUND);
    assert_int_equal(dlb_cfg_load(pg, 99, &rs, &loaded, errstr, sizeof(errstr)), DLB_ERR_NOTFOUND);
    assert_int_equal(dlb_cfg_rollback(pg, 99, NULL, &v, errstr, sizeof(errstr)), DLB_ERR_NOTFOUND);
    assert_int_equal(v.version, 0);
    assert_int_equal(count_of(pg, "config_versions"), 3);
    assert_int_equal(count_of(pg, "config_rules"), 5);

    /* No rules at all is a version too: how every rule is removed. */
    memset(&rs, 0, sizeof(rs));
    assert_int_equal(dlb_cfg_apply(pg, &rs, "cli", "empty", &v, errstr, sizeof(errstr)), 0);
    assert_int_equal(v.version, 4);
    assert_int_equal(v.rules, 0);
    got = loaded_json(pg, 0, &loaded);
    assert_string_equal(got, "[]");
    assert_int_equal(loaded, 4);
    free(got);

    free(j1);
    free(j2);
    dlb_rules_clear(&r1);
    dlb_rules_clear(&r2);
    dlb_pg_destroy(pg);
}

/* ---- retention (dlb_pg_prune) ------------------------------------------------ */

#define PRUNE_CUT ((int64_t)(T0 + 10 * HOUR_MS))

/* Every history row of job "uo" is older than PRUNE_CUT; job "un" has old
 * and new rows: its meta and first samples are old, its state, later samples,
 * OOM, request, plan and match new. Fills evs with un's events that are new. */
static size_t prune_fixture(dlb_pg_t *pg, dlb_event_t *evs)
{
    static const char *const uids[] = {"uo", "un"};
    dlb_config_match_t cm;
    dlb_oom_plan_t op;
    dlb_event_t ev;
    char id[32];
    size_t n = 0;

    for (int j = 0; j < 2; j++) {
        const char *uid = uids[j];
        ev_job(&ev, "e1", uid, T0);
        job_meta(&ev, "ctr", uid);
        job_state(&ev, "pending");
        put(pg, &ev, 1);
        for (int i = 0; i < 3; i++) {
            snprintf(id, sizeof(id), "s%d", i);
            ev_rt(&ev, id, uid, T0 + 1000 * (i + 1), 2);
            put(pg, &ev, 1);
            dlb_event_clear(&ev);
        }
        ev_node(&ev, "n1", uid, T0 + 5000, "w-0", "pod_phase");
        put(pg, &ev, 1);
        ev_req(&ev, "q1", uid, T0 + 6000);
        put(pg, &ev, 1);
        ev_plan(&ev, "plan-q1", uid, "q1"); /* event time T0 */
        put(pg, &ev, 0);
        dlb_event_clear(&ev);
        op = oom_plan("w-0", "n1", "plan-q1", GIB, T0 + 6000);
        put_oom_plan(pg, uid, &op);
        memset(&cm, 0, sizeof(cm));
        snprintf(cm.event_id, sizeof(cm.event_id), "cfg-e1");
        snprintf(cm.job_uid, sizeof(cm.job_uid), "%s", uid);
        cm.event_time_ms = T0;
        if (dlb_cfg_put_match(pg, &cm, NULL, 0, errstr, sizeof(errstr)))
            fail_msg("put match: %s", errstr);
    }
    /* un's new rows: exactly at the cut-off is new (not "older than"). */
    ev_job(&evs[n], "e2", "un", PRUNE_CUT);
    job_state(&evs[n], "running");
    put(pg, &evs[n++], 1);
    for (int i = 3; i < 6; i++) {
        snprintf(id, sizeof(id), "s%d", i);
        ev_rt(&evs[n], id, "un", PRUNE_CUT + 1000 * i, 3);
        put(pg, &evs[n++], 1);
    }
    ev_node(&evs[n], "n2", "un", PRUNE_CUT + 7000, "un-worker-1", "oom_killed");
    put(pg, &evs[n++], 1);
    ev_req(&ev, "q2", "un", PRUNE_CUT + 8000);
    put(pg, &ev, 1);
    ev_plan(&ev, "plan-q2", "un", "q2");
    ev.u.plan.event_time_ms = PRUNE_CUT + 8000;
    put(pg, &ev, 0);
    dlb_event_clear(&ev);
    op = oom_plan("un-worker-1", "n2", "plan-q2", 2 * GIB, PRUNE_CUT + 8000);
    put_oom_plan(pg, "un", &op);
    memset(&cm, 0, sizeof(cm));
    snprintf(cm.event_id, sizeof(cm.event_id), "cfg-e2");
    snprintf(cm.job_uid, sizeof(cm.job_uid), "un");
    cm.event_time_ms = PRUNE_CUT + 1;
    if (dlb_cfg_put_match(pg, &cm, NULL, 0, errstr, sizeof(errstr)))
        fail_msg("put match: %s", errstr);
    return n;
}

/* Retention removes exactly the history older than the cut-off, in batches,
 * and leaves the jobs registry, the configuration rules and what a job's
 * rebuild needs of the rest. */
static void test_pg_prune(void **unused)
{
    /* Old rows per table: 2 jobs x (1 job event, 3 samples, 1 node event, 1
     * request, 1 plan, 1 answered OOM, 1 match); new rows: un's. */
    static const int64_t old_rows[DLB_PG_HISTORY_TABLES] = {2, 6, 2, 2, 2, 2, 2};
    static const int64_t new_rows[DLB_PG_HISTORY_TABLES] = {1, 3, 1, 1, 1, 1, 1};
    dlb_pg_prune_opts_t o = {.before_ms = PRUNE_CUT, .batch_rows = 2};
    dlb_pg_prune_result_t r;
    dlb_job_state_t db = {0}, mem = {0};
    dlb_cfg_version_t v;
    dlb_event_t evs[8];
    dlb_rules_t rs;
    char schema[64];
    size_t n;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "prune");
    pg = pg_open(schema);
    n = prune_fixture(pg, evs);
    rules_of("r.yaml", "id: r1\nPriority: 10\nInclude: {user: [alice]}\nConfigure: {A: 1}\n", &rs);
    assert_int_equal(dlb_cfg_apply(pg, &rs, "cli", "kept", &v, errstr, sizeof(errstr)), 0);
    dlb_rules_clear(&rs);

    /* A dry run counts and deletes nothing. */
    o.dry_run = 1;
    assert_int_equal(dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr)), 0);
    assert_int_equal(r.done, 1);
    assert_int_equal(r.busy, 0);
    for (size_t t = 0; t < DLB_PG_HISTORY_TABLES; t++) {
        if (r.rows[t] != old_rows[t])
            fail_msg("dry run, %s: %" PRId64 " rows, want %" PRId64, dlb_pg_history_table(t),
                     r.rows[t], old_rows[t]);
        assert_int_equal(count_of(pg, dlb_pg_history_table(t)), old_rows[t] + new_rows[t]);
    }
    assert_int_equal(r.total, 18);

    /* The prune, two rows a batch. */
    o.dry_run = 0;
    assert_int_equal(dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr)), 0);
    assert_int_equal(r.done, 1);
    assert_int_equal(r.total, 18);
    for (size_t t = 0; t < DLB_PG_HISTORY_TABLES; t++) {
        assert_int_equal(r.rows[t], old_rows[t]);
        if (count_of(pg, dlb_pg_history_table(t)) != new_rows[t])
            fail_msg("%s: %" PRId64 " rows left, want %" PRId64, dlb_pg_history_table(t),
                     count_of(pg, dlb_pg_history_table(t)), new_rows[t]);
        assert_int_equal(sql_i64(schema, "SELECT count(*) FROM %s WHERE event_time_ms < %" PRId64,
                                 dlb_pg_history_table(t), PRUNE_CUT),
                         0);
    }
    assert_int_equal(count_of(pg, "runtime_pods"), 9);
    /* Not history: the registry and the rules stay whole. */
    assert_int_equal(count_of(pg, "jobs"), 2);
    assert_int_equal(count_of(pg, "config_versions"), 1);
    assert_int_equal(count_of(pg, "config_rules"), 1);
    /* Nothing left to do. */
    assert_int_equal(dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr)), 0);
    assert_int_equal(r.done, 1);
    assert_int_equal(r.total, 0);

    /* un's rebuild from PostgreSQL is the fold of what remains; uo has none. */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(dlb_job_state_apply(&mem, &evs[i], 5), 0);
    assert_int_equal(dlb_pg_load_job_state(pg, "un", 5, &db, errstr, sizeof(errstr)), 0);
    assert_state_equal(&db, &mem);
    assert_string_equal(db.job.state, "running");
    assert_int_equal(db.window_cnt, 3);
    assert_int_equal(dlb_job_state_pod(&db, "un-worker-1")->oom_count, 1);
    dlb_job_state_clear(&db);
    dlb_job_state_clear(&mem);
    assert_int_equal(dlb_pg_load_job_state(pg, "uo", 5, &db, errstr, sizeof(errstr)), 0);
    assert_string_equal(db.job.job_uid, "uo");
    assert_int_equal(db.window_cnt, 0);
    dlb_job_state_clear(&db);
    /* The answered OOM and the plan a redelivered request would get stay. */
    {
        dlb_oom_plan_t *ops = NULL;
        size_t cnt = 0;
        void *raw = NULL;
        size_t raw_len = 0;
        assert_int_equal(
            dlb_pg_load_oom_plans(pg, "un", PRUNE_CUT + 9000, &ops, &cnt, errstr, sizeof(errstr)),
            0);
        assert_int_equal(cnt, 1);
        assert_string_equal(ops[0].plan_id, "plan-q2");
        free(ops);
        assert_int_equal(
            dlb_pg_get_plan(pg, "un", "plan-q2", &raw, &raw_len, errstr, sizeof(errstr)), 0);
        assert_non_null(raw);
        free(raw);
    }

    /* Not inside a transaction, never batches of no rows. */
    assert_int_equal(dlb_pg_begin(pg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    dlb_pg_rollback(pg);
    o.batch_rows = 0;
    assert_int_equal(dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    for (size_t i = 0; i < n; i++)
        dlb_event_clear(&evs[i]);
    dlb_pg_destroy(pg);
}

typedef struct {
    const char *schema;
    dlb_pg_prune_opts_t o;
    dlb_pg_prune_result_t r;
    int err;
    char errstr[512];
} prune_arg_t;

static void *prune_thread(void *p)
{
    prune_arg_t *a = p;
    dlb_pg_t *pg = NULL;

    a->err = dlb_pg_connect(&pg, getenv("DLBRAIN_PG_DSN"), a->schema, a->errstr, sizeof(a->errstr));
    if (!a->err)
        a->err = dlb_pg_prune(pg, &a->o, &a->r, a->errstr, sizeof(a->errstr));
    dlb_pg_destroy(pg);
    return NULL;
}

/* Two prunes of one environment never run at once: while one holds the
 * lock, another returns busy having done nothing, or waits for it and then
 * finds nothing left; a budget ends a prune early, and the next resumes. */
static void test_pg_prune_one_at_a_time(void **unused)
{
    enum { ROWS = 4000 };
    prune_arg_t a = {0}, b = {0};
    dlb_pg_prune_opts_t o = {.before_ms = PRUNE_CUT, .batch_rows = 1};
    dlb_pg_prune_result_t r;
    pthread_t th, th2;
    char schema[64];
    int64_t left, calls = 0, total = 0;
    dlb_pg_t *pg;
    (void)unused;

    schema_for(schema, sizeof(schema), "prunelock");
    pg = pg_open(schema);
    assert_string_equal(sql_str(schema,
                                "WITH x AS (INSERT INTO plan_requests SELECT 'r' || i, "
                                "'ul', %" PRId64 ", 's', NULL, '\\x00' FROM "
                                "generate_series(1, %d) i RETURNING 1) SELECT count(*) "
                                "FROM x",
                                (int64_t)T0, ROWS),
                        "4000");

    /* A, one row a batch, is slow enough to be caught holding the lock. */
    a.schema = schema;
    a.o = o;
    assert_int_equal(pthread_create(&th, NULL, prune_thread, &a), 0);
    while ((left = count_of(pg, "plan_requests")) == ROWS)
        usleep(1000);
    assert_true(left > 0);
    assert_int_equal(dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr)), 0);
    assert_int_equal(r.busy, 1);
    assert_int_equal(r.total, 0);
    /* B waits for A's end, then has nothing left to do. */
    b.schema = schema;
    b.o = o;
    b.o.wait = 1;
    assert_int_equal(pthread_create(&th2, NULL, prune_thread, &b), 0);
    pthread_join(th, NULL);
    pthread_join(th2, NULL);
    if (a.err || b.err)
        fail_msg("prunes: %s / %s", a.errstr, b.errstr);
    assert_true(a.r.done && !a.r.busy);
    assert_int_equal(a.r.total, ROWS);
    assert_true(b.r.done && !b.r.busy);
    assert_int_equal(b.r.total, 0);
    assert_int_equal(count_of(pg, "plan_requests"), 0);

    /* A budget of 1 ms stops after a batch or a few; the next call resumes. */
    sql_str(schema,
            "WITH x AS (INSERT INTO plan_requests SELECT 'r' || i, 'ul', %" PRId64
            ", 's', NULL, '\\x00' FROM generate_series(1, %d) i RETURNING 1) SELECT count(*) "
            "FROM x",
            (int64_t)T0, ROWS);
    o.budget_ms = 1;
    do {
        assert_int_equal(dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr)), 0);
        assert_int_equal(r.busy, 0);
        assert_true(r.total >= 1 || r.done);
        total += r.total;
        calls++;
    } while (!r.done);
    assert_int_equal(total, ROWS);
    assert_true(calls > 1);
    assert_int_equal(count_of(pg, "plan_requests"), 0);
    dlb_pg_destroy(pg);
}

/* ---- Redis ------------------------------------------------------------------ */

static void redis_conf(dlb_conf_t *conf, const char *tag, int window)
{
    dlb_conf_init(conf);
    snprintf(conf->env, sizeof(conf->env), "it%d-%s", (int)getpid(), tag);
    snprintf(conf->redis_host, sizeof(conf->redis_host), "%s", env_or_fail("DLBRAIN_REDIS_HOST"));
    conf->redis_port = atoi(env_or_fail("DLBRAIN_REDIS_PORT"));
    conf->window_size = window;
}

static dlb_redis_t *redis_open(const dlb_conf_t *conf)
{
    dlb_redis_t *r = NULL;

    if (dlb_redis_connect(&r, conf, cat, errstr, sizeof(errstr)))
        fail_msg("redis connect: %s", errstr);
    return r;
}

/* A raw command on a side connection; returns the integer reply. */
static long long redis_int(int db, const char *fmt, const char *arg)
{
    redisContext *c =
        redisConnect(env_or_fail("DLBRAIN_REDIS_HOST"), atoi(env_or_fail("DLBRAIN_REDIS_PORT")));
    redisReply *rep;
    long long v;

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    if (db)
        freeReplyObject(redisCommand(c, "SELECT %d", db));
    rep = redisCommand(c, fmt, arg);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    v = rep->integer;
    freeReplyObject(rep);
    redisFree(c);
    return v;
}

static void seed_empty(dlb_redis_t *r, const char *uid)
{
    dlb_job_state_t st = {0};

    snprintf(st.job.job_uid, sizeof(st.job.job_uid), "%s", uid);
    if (dlb_redis_store_job(r, &st, errstr, sizeof(errstr)))
        fail_msg("store: %s", errstr);
}

static void apply(dlb_redis_t *r, const dlb_event_t *ev)
{
    if (dlb_redis_apply_event(r, ev, errstr, sizeof(errstr)))
        fail_msg("apply %s: %s", dlb_event_id(ev), errstr);
}

/* Job u1 was given samples s1..s7 (2 pods each) with a window of 3: its
 * window holds s5, s6, s7 and its key expires in a week. */
static void assert_window_567(dlb_redis_t *r, const dlb_conf_t *conf)
{
    dlb_job_state_t st;
    char key[256];
    int found = -1;

    snprintf(key, sizeof(key), "%s:job:u1:rt", conf->env);
    assert_int_equal(redis_int(0, "ZCARD %s", key), 3);
    assert_true(redis_int(0, "TTL %s", key) > 604000);
    assert_int_equal(dlb_redis_load_job(r, "u1", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_string_equal(st.job.job_uid, "u1");
    assert_int_equal(st.window_cnt, 3);
    assert_string_equal(st.window[0].event_id, "s5");
    assert_string_equal(st.window[1].event_id, "s6");
    assert_string_equal(st.window[2].event_id, "s7");
    assert_int_equal(st.window[2].pods_cnt, 2);
    dlb_job_state_clear(&st);
}

static void test_redis_window_trims(void **unused)
{
    const int64_t order[] = {3, 1, 7, 5, 2, 6, 4};
    dlb_conf_t conf;
    dlb_redis_t *r;
    (void)unused;

    redis_conf(&conf, "trim", 3);
    r = redis_open(&conf);
    seed_empty(r, "u1");
    for (int i = 0; i < 7; i++) {
        dlb_event_t ev;
        char id[16];
        snprintf(id, sizeof(id), "s%" PRId64, order[i]);
        ev_rt(&ev, id, "u1", T0 + 1000 * order[i], 2);
        apply(r, &ev);
        dlb_event_clear(&ev);
    }
    assert_window_567(r, &conf);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
}

/* Big samples: the window keeps the newest whose pods fit
 * DLB_WINDOW_PODS_MAX, and the Redis load and the PostgreSQL rebuild, which
 * decode only those (and the samples of the time where the bound falls),
 * give the window of folding them all. Two samples share a time: ties go by
 * event id ("s3aa" before "s3z"), although Redis orders their members the
 * other way (by their bytes, whose length prefix puts the shorter id first). */
static void test_big_window_same_everywhere(void **unused)
{
    static const struct {
        const char *id;
        int t, pods;
    } in[] = {{"s1", 1000, 16384}, {"s2", 2000, 16384}, {"s3aa", 3000, 16384}, {"s3z", 3000, 100},
              {"s4b", 3500, 48},   {"s4", 4000, 16384}, {"s5", 5000, 16384},   {"s6", 6000, 16384}};
    /* s6 to s4b hold 49,200 pods: s3z (100) fits, s3aa (16,384) does not.
     * Redis, newest first, meets s3aa first: stopping there would lose s3z. */
    static const char *const want[] = {"s3z", "s4b", "s4", "s5", "s6"};
    dlb_job_state_t mem = {0}, st;
    char schema[64];
    dlb_conf_t conf;
    dlb_redis_t *r;
    dlb_pg_t *pg;
    int found = -1;
    (void)unused;

    schema_for(schema, sizeof(schema), "bigwin");
    pg = pg_open(schema);
    redis_conf(&conf, "bigwin", 60);
    r = redis_open(&conf);
    seed_empty(r, "u1");
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        dlb_event_t ev;
        ev_rt(&ev, in[i].id, "u1", T0 + in[i].t, in[i].pods);
        apply(r, &ev);
        put(pg, &ev, 1);
        assert_int_equal(dlb_job_state_apply(&mem, &ev, 60), 0);
        dlb_event_clear(&ev);
    }
    assert_int_equal(mem.window_cnt, 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(mem.window[i].event_id, want[i]);
    assert_int_equal(dlb_redis_load_job(r, "u1", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_int_equal(st.window_cnt, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(st.window[i].event_id, want[i]);
        assert_sample_equal(&st.window[i], &mem.window[i]);
    }
    dlb_job_state_clear(&st);
    assert_int_equal(dlb_pg_load_job_state(pg, "u1", 60, &st, errstr, sizeof(errstr)), 0);
    assert_int_equal(st.window_cnt, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(st.window[i].event_id, want[i]);
        assert_sample_equal(&st.window[i], &mem.window[i]);
    }
    dlb_job_state_clear(&st);
    dlb_job_state_clear(&mem);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
    dlb_pg_destroy(pg);
}

/* Samples applied as a batch leave the window one-by-one leaves: the newest
 * window_size of them, whatever their order; applying them again changes
 * nothing, also when the second time they come with the frames they arrived
 * in (stored as they are, they must be the bytes an encoding gives). */
static void test_redis_samples_batch(void **unused)
{
    const int64_t order[] = {3, 1, 7, 5, 2, 6, 4};
    dlb_event_t ev[8];
    const dlb_event_t *evs[8];
    const void *raws[8];
    void *bufs[8];
    size_t lens[8];
    dlb_conf_t conf;
    dlb_redis_t *r;
    dlb_job_state_t st;
    int found = -1;
    (void)unused;

    redis_conf(&conf, "batch", 3);
    r = redis_open(&conf);
    seed_empty(r, "u1");
    seed_empty(r, "u2");
    for (int i = 0; i < 7; i++) {
        char id[16];
        snprintf(id, sizeof(id), "s%" PRId64, order[i]);
        ev_rt(&ev[i], id, "u1", T0 + 1000 * order[i], 2);
        evs[i] = &ev[i];
    }
    ev_rt(&ev[7], "t1", "u2", T0, 1);
    evs[7] = &ev[7];
    for (int i = 0; i < 8; i++) {
        assert_int_equal(dlb_codec_encode(cat, evs[i], &bufs[i], &lens[i], errstr, sizeof(errstr)),
                         0);
        raws[i] = bufs[i];
    }
    assert_int_equal(dlb_redis_apply_samples(r, evs, NULL, NULL, 8, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_redis_apply_samples(r, evs, raws, lens, 8, errstr, sizeof(errstr)), 0);
    for (int i = 0; i < 8; i++)
        free(bufs[i]);
    assert_window_567(r, &conf);
    assert_int_equal(dlb_redis_load_job(r, "u2", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_int_equal(st.window_cnt, 1);
    assert_string_equal(st.window[0].event_id, "t1");
    dlb_job_state_clear(&st);
    for (int i = 0; i < 8; i++)
        dlb_event_clear(&ev[i]);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
}

static void test_redis_duplicates(void **unused)
{
    dlb_conf_t conf;
    dlb_redis_t *r;
    dlb_job_state_t st;
    dlb_event_t s1, n1, n2, n3;
    char key[256];
    int found;
    (void)unused;

    redis_conf(&conf, "dup", 60);
    r = redis_open(&conf);
    seed_empty(r, "u1");
    ev_rt(&s1, "s1", "u1", T0, 3);
    ev_node(&n1, "n1", "u1", T0 + 10, "w-1", "oom_killed");
    ev_node(&n2, "n2", "u1", T0 + 20, "w-1", "pod_phase");
    ev_node(&n3, "n3", "u1", T0 + 30, "w-1", "oom_killed");
    apply(r, &s1);
    apply(r, &s1);
    apply(r, &n1);
    apply(r, &n1);
    apply(r, &n2);
    apply(r, &n1); /* redelivered after a newer event: ":folded" catches it */
    apply(r, &n3);
    apply(r, &n3);
    snprintf(key, sizeof(key), "%s:job:u1:rt", conf.env);
    assert_int_equal(redis_int(0, "ZCARD %s", key), 1);
    snprintf(key, sizeof(key), "%s:job:u1:folded", conf.env);
    assert_int_equal(redis_int(0, "ZCARD %s", key), 3);
    assert_int_equal(dlb_redis_load_job(r, "u1", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_int_equal(st.window_cnt, 1);
    assert_int_equal(st.pods_cnt, 1);
    assert_int_equal(st.pods[0].oom_count, 2);
    assert_string_equal(st.pods[0].last_oom_event_id, "n3");
    assert_string_equal(st.pods[0].last_kind, "oom_killed");
    assert_string_equal(st.pods[0].phase, "Running");
    assert_int_equal(st.pods[0].memory_requested, 16 * GIB);
    dlb_job_state_clear(&st);
    dlb_event_clear(&s1);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
}

/* A job's folded node event ids stay bounded (issue 18): past
 * max(2048, 4 x consumer.batch.size) node events the oldest ids leave
 * ":folded", while a redelivery of every event still kept, a late OOM
 * included, changes nothing. A store (a rebuild) deletes format 2's unbounded
 * ":seen" set. */
static void test_redis_folded_bounded(void **unused)
{
    enum { CAP = 2048, N = CAP + 300, LATE = N - 1000 };
    dlb_job_state_t mem = {0}, got;
    dlb_event_t ev, oom_a, oom_b;
    dlb_conf_t conf;
    dlb_redis_t *r;
    char key[256], id[32], pod[16];
    int found = -1;
    (void)unused;

    redis_conf(&conf, "bound", 60);
    conf.batch_size = 100; /* 4 x 100 is below the floor of 2048 */
    r = redis_open(&conf);
    snprintf(key, sizeof(key), "%s:job:u1:seen", conf.env);
    assert_int_equal(redis_int(0, "SADD %s left-by-format-2", key), 1);
    seed_empty(r, "u1");
    assert_int_equal(redis_int(0, "EXISTS %s", key), 0);

    /* Two late OOMs of w-0, older than its other events: the first becomes
     * its newest OOM, the second is caught only by ":folded". */
    ev_node(&oom_a, "oom-a", "u1", T0 + 10, "w-0", "oom_killed");
    ev_node(&oom_b, "oom-b", "u1", T0 + 20, "w-0", "oom_killed");
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "n%d", i);
        snprintf(pod, sizeof(pod), "w-%d", i % 8);
        ev_node(&ev, id, "u1", T0 + 1000 + i, pod, "pod_phase");
        apply(r, &ev);
        assert_int_equal(dlb_job_state_apply(&mem, &ev, 60), 0);
        if (i == LATE) {
            apply(r, &oom_a);
            apply(r, &oom_b);
            assert_int_equal(dlb_job_state_apply(&mem, &oom_a, 60), 0);
            assert_int_equal(dlb_job_state_apply(&mem, &oom_b, 60), 0);
        }
    }
    snprintf(key, sizeof(key), "%s:job:u1:folded", conf.env);
    assert_int_equal(redis_int(0, "ZCARD %s", key), CAP);
    assert_true(redis_int(0, "TTL %s", key) > 604000);

    /* Redelivered: the late OOMs and everything folded after them. */
    apply(r, &oom_b);
    apply(r, &oom_a);
    for (int i = LATE; i < N; i++) {
        snprintf(id, sizeof(id), "n%d", i);
        snprintf(pod, sizeof(pod), "w-%d", i % 8);
        ev_node(&ev, id, "u1", T0 + 1000 + i, pod, "pod_phase");
        apply(r, &ev);
    }
    assert_int_equal(redis_int(0, "ZCARD %s", key), CAP);
    assert_int_equal(dlb_redis_load_job(r, "u1", &got, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_state_equal(&got, &mem);
    assert_string_equal(got.pods[0].name, "w-0");
    assert_int_equal(got.pods[0].oom_count, 2);
    assert_string_equal(got.pods[0].last_oom_event_id, "oom-a");
    dlb_job_state_clear(&got);
    dlb_job_state_clear(&mem);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
}

/* The cache path (seed, apply event by event, load) equals the in-memory fold,
 * and store_job/load_job round-trip a full state. */
static void test_redis_round_trip(void **unused)
{
    dlb_event_t evs[REBUILD_N];
    dlb_job_state_t mem = {0}, got, half = {0};
    dlb_conf_t conf;
    dlb_redis_t *r;
    int found = 0;
    (void)unused;

    redis_conf(&conf, "rt", 5);
    r = redis_open(&conf);
    rebuild_events(evs);
    seed_empty(r, "u9");
    for (int i = 0; i < REBUILD_N; i++) {
        assert_int_equal(dlb_job_state_apply(&mem, &evs[i], 5), 0);
        apply(r, &evs[i]);
        if (i == REBUILD_N / 2)
            apply(r, &evs[0]); /* a redelivery mid-stream */
    }
    assert_int_equal(dlb_redis_load_job(r, "u9", &got, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_state_equal(&got, &mem);
    dlb_job_state_clear(&got);

    /* Store a state folded from the first half, then load it back exactly. */
    for (int i = 0; i < REBUILD_N / 2; i++)
        assert_int_equal(dlb_job_state_apply(&half, &evs[i], 5), 0);
    assert_int_equal(dlb_redis_store_job(r, &half, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_redis_load_job(r, "u9", &got, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_state_equal(&got, &half);
    dlb_job_state_clear(&got);
    /* Folding the second half onto the stored state gets to the same place. */
    for (int i = REBUILD_N / 2; i < REBUILD_N; i++)
        apply(r, &evs[i]);
    assert_int_equal(dlb_redis_load_job(r, "u9", &got, &found, errstr, sizeof(errstr)), 0);
    assert_state_equal(&got, &mem);

    dlb_job_state_clear(&got);
    dlb_job_state_clear(&half);
    dlb_job_state_clear(&mem);
    for (int i = 0; i < REBUILD_N; i++)
        dlb_event_clear(&evs[i]);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
}

static void test_redis_miss(void **unused)
{
    dlb_conf_t conf;
    dlb_redis_t *r;
    dlb_job_state_t st;
    dlb_event_t ev;
    int found = -1;
    (void)unused;

    redis_conf(&conf, "miss", 60);
    r = redis_open(&conf);
    assert_int_equal(dlb_redis_load_job(r, "nobody", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 0);
    assert_int_equal(st.window_cnt, 0);
    assert_null(st.pods);

    /* Events folded into a job never seeded are not a complete state: still a miss. */
    ev_job(&ev, "j1", "fresh", T0);
    job_state(&ev, "running");
    apply(r, &ev);
    ev_rt(&ev, "s1", "fresh", T0, 1);
    apply(r, &ev);
    dlb_event_clear(&ev);
    found = -1;
    assert_int_equal(dlb_redis_load_job(r, "fresh", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 0);
    assert_int_equal(st.window_cnt, 0);
    seed_empty(r, "fresh");
    assert_int_equal(dlb_redis_load_job(r, "fresh", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_int_equal(st.window_cnt, 0); /* the seed replaced the partial state */
    assert_int_equal(st.job.has_state, 0);
    dlb_job_state_clear(&st);

    /* A corrupt entry is dropped and reported as a miss. */
    {
        char key[256];
        snprintf(key, sizeof(key), "%s:job:fresh:pods", conf.env);
        redisContext *c = redisConnect(conf.redis_host, conf.redis_port);
        freeReplyObject(redisCommand(c, "HSET %s w-0 {broken", key));
        redisFree(c);
    }
    found = -1;
    assert_int_equal(dlb_redis_load_job(r, "fresh", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 0);

    /* An entry of cache format 1 (window members framed as runtime_sample v1)
     * is a miss too: its job is rebuilt once from PostgreSQL in the current format. */
    seed_empty(r, "old");
    ev_rt(&ev, "s1", "old", T0, 2);
    apply(r, &ev);
    dlb_event_clear(&ev);
    {
        char key[256];
        snprintf(key, sizeof(key), "%s:job:old", conf.env);
        assert_int_equal(redis_int(0, "HSET %s v 1", key), 0);
    }
    found = -1;
    assert_int_equal(dlb_redis_load_job(r, "old", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 0);
    seed_empty(r, "old");
    assert_int_equal(dlb_redis_load_job(r, "old", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    dlb_job_state_clear(&st);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
}

/* Keys go to the configured database; a password is sent when set. */
static void test_redis_db_and_auth(void **unused)
{
    dlb_conf_t conf;
    dlb_redis_t *r = NULL;
    char key[256];
    redisContext *c;
    (void)unused;

    redis_conf(&conf, "db", 60);
    conf.redis_db = 3;
    r = redis_open(&conf);
    seed_empty(r, "u1");
    snprintf(key, sizeof(key), "%s:job:u1", conf.env);
    assert_int_equal(redis_int(3, "EXISTS %s", key), 1);
    assert_int_equal(redis_int(0, "EXISTS %s", key), 0);
    dlb_redis_destroy(r);

    c = redisConnect(conf.redis_host, conf.redis_port);
    freeReplyObject(redisCommand(c, "CONFIG SET requirepass s3cret"));
    r = NULL;
    assert_int_equal(dlb_redis_connect(&r, &conf, cat, errstr, sizeof(errstr)), DLB_ERR_TRANSIENT);
    assert_null(r);
    snprintf(conf.redis_password, sizeof(conf.redis_password), "s3cret");
    r = redis_open(&conf);
    seed_empty(r, "u2");
    dlb_redis_destroy(r);
    freeReplyObject(redisCommand(c, "CONFIG SET requirepass %s", ""));
    redisFree(c);
    dlb_conf_destroy(&conf);
}

static int redis_ctl(const char *action)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "'%s' %s --dir '%s' --port %s %s >/dev/null",
             env_or_fail("DLB_REDIS_CTL"), action, env_or_fail("DLB_REDIS_DIR"),
             env_or_fail("DLBRAIN_REDIS_PORT"), strcmp(action, "stop") ? "" : "--keep");
    return system(cmd);
}

static void test_redis_down_then_back(void **unused)
{
    dlb_conf_t conf;
    dlb_redis_t *r, *r2 = NULL;
    dlb_job_state_t st;
    dlb_event_t ev;
    int found;
    (void)unused;

    redis_conf(&conf, "down", 60);
    r = redis_open(&conf);
    seed_empty(r, "u1");
    assert_int_equal(redis_ctl("stop"), 0);

    ev_rt(&ev, "s1", "u1", T0, 1);
    assert_int_equal(dlb_redis_apply_event(r, &ev, errstr, sizeof(errstr)), DLB_ERR_TRANSIENT);
    assert_int_equal(dlb_redis_load_job(r, "u1", &st, &found, errstr, sizeof(errstr)),
                     DLB_ERR_TRANSIENT);
    assert_int_equal(found, 0);
    assert_int_equal(dlb_redis_store_job(r, &st, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    assert_int_equal(dlb_redis_connect(&r2, &conf, cat, errstr, sizeof(errstr)), DLB_ERR_TRANSIENT);
    assert_null(r2);

    assert_int_equal(redis_ctl("start"), 0);
    /* Same handle, reconnected; the restarted Redis is empty (no persistence). */
    assert_int_equal(dlb_redis_load_job(r, "u1", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 0);
    seed_empty(r, "u1");
    assert_int_equal(dlb_redis_apply_event(r, &ev, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_redis_load_job(r, "u1", &st, &found, errstr, sizeof(errstr)), 0);
    assert_int_equal(found, 1);
    assert_int_equal(st.window_cnt, 1);
    dlb_job_state_clear(&st);
    dlb_event_clear(&ev);
    dlb_redis_destroy(r);
    dlb_conf_destroy(&conf);
}

static int setup(void **unused)
{
    (void)unused;
    if (dlb_catalog_new(&cat, errstr, sizeof(errstr))) {
        fprintf(stderr, "catalog: %s\n", errstr);
        return -1;
    }
    return 0;
}

static int teardown(void **unused)
{
    (void)unused;
    dlb_catalog_destroy(cat);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_migrate_twice),
        cmocka_unit_test(test_pg_migrate_concurrent),
        cmocka_unit_test(test_pg_put_each_type_twice),
        cmocka_unit_test(test_pg_runtime_batch),
        cmocka_unit_test(test_pg_runtime_copy),
        cmocka_unit_test(test_pg_positions),
        cmocka_unit_test(test_pg_analyst_views),
        cmocka_unit_test(test_pg_plan_outcomes_ooms_after),
        cmocka_unit_test(test_pg_job_upsert_merges),
        cmocka_unit_test(test_pg_plans_idempotent),
        cmocka_unit_test(test_pg_oom_plans),
        cmocka_unit_test(test_pg_event_ids_per_job),
        cmocka_unit_test(test_pg_migrate_from_v1),
        cmocka_unit_test(test_pg_migrate_keys_per_job),
        cmocka_unit_test(test_pg_v1_raw_rows),
        cmocka_unit_test(test_pg_load_history),
        cmocka_unit_test(test_pg_load_history_as_of),
        cmocka_unit_test(test_pg_history_memo),
        cmocka_unit_test(test_pg_deferred_writes),
        cmocka_unit_test(test_pg_load_history_cached),
        cmocka_unit_test(test_pg_load_history_keys_kept),
        cmocka_unit_test(test_pg_load_history_pods_bound),
        cmocka_unit_test(test_pg_load_job_state_equals_fold),
        cmocka_unit_test(test_pg_errors),
        cmocka_unit_test(test_cfg_matches),
        cmocka_unit_test(test_cfg_versions),
        cmocka_unit_test(test_pg_prune),
        cmocka_unit_test(test_pg_prune_one_at_a_time),
        cmocka_unit_test(test_redis_window_trims),
        cmocka_unit_test(test_big_window_same_everywhere),
        cmocka_unit_test(test_redis_samples_batch),
        cmocka_unit_test(test_redis_duplicates),
        cmocka_unit_test(test_redis_folded_bounded),
        cmocka_unit_test(test_redis_round_trip),
        cmocka_unit_test(test_redis_miss),
        cmocka_unit_test(test_redis_db_and_auth),
        cmocka_unit_test(test_redis_down_then_back),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
