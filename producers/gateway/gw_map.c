/* DLRover's Brain messages <-> dlbrain events (gw_map.h). */
#include "gw_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "err.h"
#include "vec.h"

/* ---- persist_metrics -> events ------------------------------------------- */

/* Copy a proto string into a fixed field, refusing what does not fit (a
 * job's identity cut short would be another job). */
static int put(char *dst, size_t cap, const char *src, const char *field, char *errstr, size_t size)
{
    size_t n = src ? strlen(src) : 0;

    if (n >= cap)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: %zu bytes, at most %zu", field, n,
                          cap - 1);
    memcpy(dst, src ? src : "", n + 1);
    return 0;
}

/* A heap copy of a proto string. */
static int dup(char **dst, const char *src, char *errstr, size_t size)
{
    if (!(*dst = strdup(src ? src : "")))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

/* The oneof field each MetricsType is carried in (brain.proto). */
static const struct {
    Brain__MetricsType type;
    Brain__JobMetrics__MetricsCase field;
    const char *name;
} metric_kinds[] = {
    {BRAIN__METRICS_TYPE__Training_Hyper_Params, BRAIN__JOB_METRICS__METRICS_TRAINING_HYPER_PARAMS,
     "training_hyper_params"},
    {BRAIN__METRICS_TYPE__Workflow_Feature, BRAIN__JOB_METRICS__METRICS_WORKFLOW_FEATURE,
     "workflow_feature"},
    {BRAIN__METRICS_TYPE__Training_Set_Feature, BRAIN__JOB_METRICS__METRICS_TRAINING_SET_FEATURE,
     "training_set_feature"},
    {BRAIN__METRICS_TYPE__Model_Feature, BRAIN__JOB_METRICS__METRICS_MODEL_FEATURE,
     "model_feature"},
    {BRAIN__METRICS_TYPE__Runtime_Info, BRAIN__JOB_METRICS__METRICS_RUNTIME_INFO, "runtime_info"},
    {BRAIN__METRICS_TYPE__Job_Exit_Reason, BRAIN__JOB_METRICS__METRICS_JOB_EXIT_REASON,
     "job_exit_reason"},
    {BRAIN__METRICS_TYPE__Optimization_Result, BRAIN__JOB_METRICS__METRICS_EXTRA_INFO,
     "extra_info"},
    {BRAIN__METRICS_TYPE__Type, BRAIN__JOB_METRICS__METRICS_TYPE, "type"},
    {BRAIN__METRICS_TYPE__Resource, BRAIN__JOB_METRICS__METRICS_RESOURCE, "resource"},
    {BRAIN__METRICS_TYPE__Customized_Data, BRAIN__JOB_METRICS__METRICS_CUSTOMIZED_DATA,
     "customized_data"},
    {BRAIN__METRICS_TYPE__Optimization, BRAIN__JOB_METRICS__METRICS_JOB_OPTIMIZATION,
     "job_optimization"},
};
#define NKINDS (sizeof(metric_kinds) / sizeof(metric_kinds[0]))

static const char *field_name(Brain__JobMetrics__MetricsCase c)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (metric_kinds[i].field == c)
            return metric_kinds[i].name;
    return "none";
}

/* DLRover names pods <job>-edljob-<type>-<index> (its Go Brain reads the
 * type and index back the same way); "master" is DLRover's chief. */
static int pod_type_index(const char *name, char *type, size_t type_size, int32_t *index)
{
    static const char *const types[] = {"ps", "worker", "chief", "evaluator", NULL};
    const char *dash = strrchr(name, '-'), *start;
    char *end;
    long v;

    if (!dash || !dash[1] || dash == name)
        return -1;
    v = strtol(dash + 1, &end, 10);
    if (*end || v < 0 || v > INT32_MAX)
        return -1;
    for (start = dash - 1; start > name && start[-1] != '-'; start--)
        ;
    for (const char *const *t = types; *t; t++)
        if (strlen(*t) == (size_t)(dash - start) && !strncmp(start, *t, (size_t)(dash - start))) {
            snprintf(type, type_size, "%s", *t);
            *index = (int32_t)v;
            return 0;
        }
    if (dash - start == 6 && !strncmp(start, "master", 6)) {
        snprintf(type, type_size, "chief");
        *index = (int32_t)v;
        return 0;
    }
    return -1;
}

static int runtime_event(const Brain__RuntimeInfo *ri, int64_t now_ms, dlb_runtime_sample_t *rt,
                         char *errstr, size_t size)
{
    char field[64];

    rt->event_time_ms = ri->time_stamp > 0 ? ri->time_stamp * 1000 : now_ms;
    rt->global_step = ri->global_step;
    rt->speed = ri->speed;
    if (ri->n_running_pods && !(rt->pods = calloc(ri->n_running_pods, sizeof(*rt->pods))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < ri->n_running_pods; i++) {
        const Brain__PodMeta *pm = ri->running_pods[i];
        dlb_pod_usage_t *p = &rt->pods[rt->pods_cnt++];

        snprintf(field, sizeof(field), "runtime_info.running_pods[%zu].pod_name", i);
        if (put(p->name, sizeof(p->name), pm->pod_name, field, errstr, size))
            return DLB_ERR_INVALID;
        if (pod_type_index(p->name, p->type, sizeof(p->type), &p->index))
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "%s: \"%.64s\" does not end in -<ps|worker|chief|evaluator>-<index> "
                              "as DLRover names pods",
                              field, p->name);
        if (!isfinite(pm->cpu_usage) || !isfinite(pm->mem_usage) || pm->mem_usage > 9.2e18)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "runtime_info.running_pods[%zu]: cpu_usage or mem_usage out of range",
                              i);
        p->cpu_used = pm->cpu_usage;
        p->memory_used = (int64_t)pm->mem_usage; /* bytes, as DLRover reports them */
        p->is_mixed = pm->is_mixed;
        snprintf(field, sizeof(field), "runtime_info.running_pods[%zu]", i);
        if (put(p->pod_ip, sizeof(p->pod_ip), pm->pod_ip, "pod_ip", errstr, size) ||
            put(p->node_ip, sizeof(p->node_ip), pm->node_ip, "node_ip", errstr, size) ||
            put(p->host_name, sizeof(p->host_name), pm->host_name, "host_name", errstr, size) ||
            put(p->ns, sizeof(p->ns), pm->namespace_, "namespace", errstr, size)) {
            dlb_err_prepend(errstr, size, "%s.", field);
            return DLB_ERR_INVALID;
        }
    }
    return 0;
}

int dlb_gw_metrics_event(const Brain__JobMetrics *m, const char *event_id, int64_t now_ms,
                         const char *scenario, dlb_event_t *ev, char *errstr, size_t size)
{
    const Brain__JobMeta *jm = m->job_meta;
    dlb_job_event_t *j = &ev->u.job;
    int err = 0;
    size_t k;

    memset(ev, 0, sizeof(*ev));
    if (!jm || !jm->uuid || !jm->uuid[0])
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "job_meta.uuid: missing (the job's uid keys every event)");
    for (k = 0; k < NKINDS && metric_kinds[k].type != m->metrics_type; k++)
        ;
    if (k == NKINDS)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "metrics_type: unknown value %d",
                          (int)m->metrics_type);
    if (m->metrics_case != metric_kinds[k].field)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "metrics_type says %s but the message carries %s", metric_kinds[k].name,
                          field_name(m->metrics_case));
    if (m->metrics_type == BRAIN__METRICS_TYPE__Optimization_Result)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "metrics_type: Optimization_Result has no meaning DLRover defines "
                          "(its Go Brain refuses it too)");

    if (m->metrics_type == BRAIN__METRICS_TYPE__Runtime_Info) {
        ev->type = DLB_EV_RUNTIME;
        if ((err = put(ev->u.rt.job_uid, sizeof(ev->u.rt.job_uid), jm->uuid, "job_meta.uuid",
                       errstr, size)) ||
            (err = put(ev->u.rt.event_id, sizeof(ev->u.rt.event_id), event_id, "event_id", errstr,
                       size)) ||
            (err = runtime_event(m->runtime_info, now_ms, &ev->u.rt, errstr, size)))
            goto out;
        err = dlb_event_validate(ev, errstr, size);
        goto out;
    }

    ev->type = DLB_EV_JOB;
    j->event_time_ms = now_ms;
    if ((err = put(j->job_uid, sizeof(j->job_uid), jm->uuid, "job_meta.uuid", errstr, size)) ||
        (err = put(j->event_id, sizeof(j->event_id), event_id, "event_id", errstr, size)))
        goto out;
    /* The identity as DLRover sends it (0.6.1 shifts it: name carries the
     * namespace, cluster the user; docs/gateway.md), and the similar-job key.
     * A message with the uuid alone carries no identity: its empty strings
     * must not overwrite the job's. */
    j->has_meta = (jm->name && jm->name[0]) || (jm->user && jm->user[0]) ||
                  (jm->cluster && jm->cluster[0]) || (jm->namespace_ && jm->namespace_[0]);
    if ((err = put(j->meta.name, sizeof(j->meta.name), jm->name, "job_meta.name", errstr, size)) ||
        (err = put(j->meta.user, sizeof(j->meta.user), jm->user, "job_meta.user", errstr, size)) ||
        (err = put(j->meta.cluster, sizeof(j->meta.cluster), jm->cluster, "job_meta.cluster",
                   errstr, size)) ||
        (err = put(j->meta.ns, sizeof(j->meta.ns), jm->namespace_, "job_meta.namespace", errstr,
                   size)) ||
        (err = put(j->meta.scenario, sizeof(j->meta.scenario), scenario, "scenario", errstr, size)))
        goto out;
    switch (m->metrics_type) {
    case BRAIN__METRICS_TYPE__Training_Hyper_Params: {
        const Brain__TrainingHyperParams *hp = m->training_hyper_params;
        j->has_hyper_params = 1;
        j->hyper_params.batch_size = hp->batch_size;
        j->hyper_params.epoch = hp->epoch;
        j->hyper_params.max_steps = hp->max_steps;
        break;
    }
    case BRAIN__METRICS_TYPE__Workflow_Feature: {
        const Brain__WorkflowFeature *wf = m->workflow_feature;
        dlb_workflow_t *w = &j->workflow;
        j->has_workflow = 1;
        w->is_prod = wf->is_prod;
        if ((err = put(w->job_name, sizeof(w->job_name), wf->job_name, "workflow_feature.job_name",
                       errstr, size)) ||
            (err = put(w->user_id, sizeof(w->user_id), wf->user_id, "workflow_feature.user_id",
                       errstr, size)) ||
            (err = put(w->workflow_id, sizeof(w->workflow_id), wf->workflow_id,
                       "workflow_feature.workflow_id", errstr, size)) ||
            (err = put(w->node_id, sizeof(w->node_id), wf->node_id, "workflow_feature.node_id",
                       errstr, size)) ||
            (err = put(w->odps_project, sizeof(w->odps_project), wf->odps_project,
                       "workflow_feature.odps_project", errstr, size)) ||
            (err = dup(&w->code_address, wf->code_address, errstr, size)))
            break;
        break;
    }
    case BRAIN__METRICS_TYPE__Training_Set_Feature: {
        const Brain__TrainingSetFeature *ds = m->training_set_feature;
        dlb_dataset_t *d = &j->dataset;
        j->has_dataset = 1;
        d->size = ds->dataset_size;
        d->sparse_item_count = ds->sparse_item_count;
        d->storage_size = ds->storage_size;
        if ((err = put(d->name, sizeof(d->name), ds->dataset_name,
                       "training_set_feature.dataset_name", errstr, size)) ||
            (err = dup(&d->sparse_features, ds->sparse_features, errstr, size)) ||
            (err = dup(&d->sparse_feature_groups, ds->sparse_feature_groups, errstr, size)) ||
            (err = dup(&d->sparse_feature_shapes, ds->sparse_feature_shapes, errstr, size)) ||
            (err = dup(&d->dense_features, ds->dense_features, errstr, size)) ||
            (err = dup(&d->dense_feature_shapes, ds->dense_feature_shapes, errstr, size)))
            break;
        break;
    }
    case BRAIN__METRICS_TYPE__Model_Feature: {
        const Brain__ModelFeature *mf = m->model_feature;
        dlb_model_t *md = &j->model;
        j->has_model = 1;
        md->variable_count = mf->variable_count;
        md->op_count = mf->op_count;
        md->total_variable_size = mf->total_variable_size;
        md->recv_op_count = mf->recv_op_count;
        md->flops = mf->flops;
        md->embedding_dimension = mf->embedding_dimension;
        md->max_variable_size = mf->max_variable_size;
        md->update_op_count = mf->update_op_count;
        md->read_op_count = mf->read_op_count;
        md->input_fetch_dur = mf->input_fetch_dur;
        if (mf->n_kv_embedding_dims) {
            if (!(md->kv_embedding_dims = calloc(mf->n_kv_embedding_dims, sizeof(int64_t)))) {
                err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
                break;
            }
            memcpy(md->kv_embedding_dims, mf->kv_embedding_dims,
                   mf->n_kv_embedding_dims * sizeof(int64_t));
            md->kv_embedding_dims_cnt = mf->n_kv_embedding_dims;
        }
        if (mf->n_tensor_alloc_bytes) {
            if (!(md->tensor_alloc_bytes =
                      calloc(mf->n_tensor_alloc_bytes, sizeof(*md->tensor_alloc_bytes)))) {
                err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
                break;
            }
            for (size_t i = 0; i < mf->n_tensor_alloc_bytes && !err; i++) {
                dlb_long_entry_t *e = &md->tensor_alloc_bytes[md->tensor_alloc_bytes_cnt++];
                e->value = mf->tensor_alloc_bytes[i]->value;
                if (!(e->key = strdup(
                          mf->tensor_alloc_bytes[i]->key ? mf->tensor_alloc_bytes[i]->key : "")))
                    err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            }
        }
        break;
    }
    case BRAIN__METRICS_TYPE__Job_Exit_Reason:
        j->has_exit_reason = 1;
        err = put(j->exit_reason, sizeof(j->exit_reason), m->job_exit_reason, "job_exit_reason",
                  errstr, size);
        break;
    case BRAIN__METRICS_TYPE__Type:
        j->has_job_type = 1;
        err = put(j->job_type, sizeof(j->job_type), m->type, "type", errstr, size);
        break;
    case BRAIN__METRICS_TYPE__Resource:
        j->has_resource = 1;
        err = dup(&j->resource, m->resource, errstr, size);
        break;
    case BRAIN__METRICS_TYPE__Customized_Data:
        j->has_customized_data = 1;
        err = dup(&j->customized_data, m->customized_data, errstr, size);
        break;
    case BRAIN__METRICS_TYPE__Optimization:
        j->has_optimization = 1;
        if (!(j->optimization = dlb_gw_optimization_json(m->job_optimization)))
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        break;
    default:
        break;
    }
    if (!err)
        err = dlb_event_validate(ev, errstr, size);
out:
    if (err)
        dlb_event_clear(ev);
    return err;
}

/* ---- event fields -> DLRover's ------------------------------------------- */

/* The event fields the mapping above fills, by the leading part of their
 * path, and what DLRover's message carried them in. */
static const struct {
    dlb_event_type_t type;
    const char *path; /* a whole field name, or a prefix ending in '.' or '[' */
    const char *source;
} field_sources[] = {
    {DLB_EV_JOB, "job_uid", "job_meta.uuid"},
    {DLB_EV_JOB, "meta.name", "job_meta.name"},
    {DLB_EV_JOB, "meta.user", "job_meta.user"},
    {DLB_EV_JOB, "meta.cluster", "job_meta.cluster"},
    {DLB_EV_JOB, "meta.namespace", "job_meta.namespace"},
    {DLB_EV_JOB, "hyper_params.", "training_hyper_params"},
    {DLB_EV_JOB, "workflow.", "workflow_feature"},
    {DLB_EV_JOB, "dataset.", "training_set_feature"},
    {DLB_EV_JOB, "model.", "model_feature"},
    {DLB_EV_JOB, "exit_reason", "job_exit_reason"},
    {DLB_EV_JOB, "job_type", "type"},
    {DLB_EV_JOB, "resource", "resource"},
    {DLB_EV_JOB, "customized_data", "customized_data"},
    {DLB_EV_JOB, "optimization", "job_optimization"},
    {DLB_EV_RUNTIME, "job_uid", "job_meta.uuid"},
    {DLB_EV_RUNTIME, "event_time_ms", "runtime_info.time_stamp"},
    {DLB_EV_RUNTIME, "pods[", "runtime_info.running_pods"},
    {DLB_EV_PLAN_REQUEST, "job_uid", "jobs[0].uid"},
    {DLB_EV_PLAN_REQUEST, "stage", "type"},
    {DLB_EV_PLAN_REQUEST, "oom_pod", "jobs[0].state.pods"},
    {DLB_EV_PLAN_REQUEST, "oom_pods", "jobs[0].state.pods"},
    {DLB_EV_PLAN_REQUEST, "oom_pods[", "jobs[0].state.pods"},
    {DLB_EV_PLAN_REQUEST, "config.", "config.customized_config"},
};

const char *dlb_gw_event_field_source(dlb_event_type_t type, const char *path)
{
    size_t n = strcspn(path, ": ");

    for (size_t i = 0; i < sizeof(field_sources) / sizeof(field_sources[0]); i++) {
        const char *f = field_sources[i].path;
        size_t k = strlen(f);
        int prefix = f[k - 1] == '.' || f[k - 1] == '[';

        if (field_sources[i].type == type &&
            (prefix ? n > k && !strncmp(path, f, k) : n == k && !strncmp(path, f, k)))
            return field_sources[i].source;
    }
    return NULL;
}

/* ---- optimize -> plan request -------------------------------------------- */

static int request_event(const Brain__OptimizeRequest *r, const char *event_id, int64_t now_ms,
                         dlb_event_t *ev, char *errstr, size_t size)
{
    dlb_plan_request_t *q = &ev->u.req;
    const Brain__OptimizeJobMeta *job;
    int err;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_PLAN_REQUEST;
    if (r->n_jobs != 1)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "jobs: %zu given, one expected (DLRover's master asks for one job)",
                          r->n_jobs);
    job = r->jobs[0];
    if (!job->uid || !job->uid[0])
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "jobs[0].uid: missing");
    if (!r->type || !r->type[0])
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "type: missing (the stage, e.g. job_stage_create)");
    q->event_time_ms = now_ms;
    if ((err = put(q->job_uid, sizeof(q->job_uid), job->uid, "jobs[0].uid", errstr, size)) ||
        (err = put(q->event_id, sizeof(q->event_id), event_id, "event_id", errstr, size)) ||
        (err = put(q->stage, sizeof(q->stage), r->type, "type", errstr, size)))
        return err;
    if (job->state && job->state->n_pods &&
        !(q->oom_pods = calloc(job->state->n_pods, sizeof(*q->oom_pods))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if (job->state)
        for (size_t i = 0; i < job->state->n_pods; i++) {
            const Brain__PodState *ps = job->state->pods[i]->value;
            const char *name = ps && ps->name && ps->name[0] ? ps->name : job->state->pods[i]->key;

            if (!ps || !ps->is_oom)
                continue;
            if (!q->has_oom_pod) {
                q->has_oom_pod = 1;
                if ((err = put(q->oom_pod, sizeof(q->oom_pod), name, "jobs[0].state.pods[].name",
                               errstr, size)))
                    return err;
            }
            if (!(q->oom_pods[q->oom_pods_cnt++] = strdup(name ? name : "")))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        }
    if (r->config && r->config->n_customized_config) {
        const Brain__OptimizeConfig *oc = r->config;
        if (!(q->config = calloc(oc->n_customized_config, sizeof(*q->config))))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < oc->n_customized_config; i++) {
            dlb_str_entry_t *e = &q->config[q->config_cnt++];
            if (!(e->key =
                      strdup(oc->customized_config[i]->key ? oc->customized_config[i]->key : "")) ||
                !(e->value = strdup(
                      oc->customized_config[i]->value ? oc->customized_config[i]->value : "")))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        }
    }
    return dlb_event_validate(ev, errstr, size);
}

int dlb_gw_request_event(const Brain__OptimizeRequest *r, const char *event_id, int64_t now_ms,
                         dlb_event_t *ev, char *errstr, size_t size)
{
    int err = request_event(r, event_id, now_ms, ev, errstr, size);

    if (err)
        dlb_event_clear(ev);
    return err;
}

/* ---- plan -> OptimizeResponse -------------------------------------------- */

/* Every message of a response lives until it is packed: one list frees all. */
typedef struct pool {
    void **p;
    size_t n;
} pool_t;

static void *pool_new(pool_t *pl, size_t size)
{
    void *m = calloc(1, size), **slot;

    if (!m)
        return NULL;
    if (!(slot = dlb_vec_push((void **)&pl->p, &pl->n, sizeof(*pl->p)))) {
        free(m);
        return NULL;
    }
    *slot = m;
    return m;
}

static char *pool_str(pool_t *pl, const char *s)
{
    char *d = pool_new(pl, strlen(s) + 1);

    return d ? strcpy(d, s) : NULL;
}

static void pool_free(pool_t *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        free(pl->p[i]);
    free(pl->p);
}

static Brain__PodResource *pod_resource(pool_t *pl, const dlb_resource_t *r)
{
    Brain__PodResource *pr = pool_new(pl, sizeof(*pr));

    if (!pr)
        return NULL;
    brain__pod_resource__init(pr);
    pr->memory = r->memory; /* bytes: DLRover's master divides by 1 MiB */
    pr->cpu = (float)r->cpu;
    pr->gpu = (float)r->gpu;
    if (!(pr->gpu_type = pool_str(pl, r->gpu_type)) || !(pr->priority = pool_str(pl, r->priority)))
        return NULL;
    return pr;
}

static const dlb_group_resource_t *plan_group(const dlb_plan_t *p, const char *g)
{
    for (size_t i = 0; i < p->groups_cnt; i++)
        if (!strcmp(p->groups[i].group, g))
            return &p->groups[i];
    return NULL;
}

static const dlb_pod_resource_t *plan_pod(const dlb_plan_t *p, const char *name)
{
    for (size_t i = 0; i < p->pods_cnt; i++)
        if (!strcmp(p->pods[i].name, name))
            return &p->pods[i];
    return NULL;
}

/* Arrays are sized once, from counts known before filling them. */
static void *pool_array(pool_t *pl, size_t n, size_t elem)
{
    return pool_new(pl, (n ? n : 1) * elem);
}

static int add_group(pool_t *pl, Brain__JobResource *res, const char *name, int32_t count,
                     const dlb_resource_t *r)
{
    Brain__JobResource__TaskGroupResourcesEntry *e = pool_new(pl, sizeof(*e));
    Brain__TaskGroupResource *tg = pool_new(pl, sizeof(*tg));

    if (!e || !tg)
        return -1;
    brain__job_resource__task_group_resources_entry__init(e);
    brain__task_group_resource__init(tg);
    tg->count = count;
    if (!(e->key = pool_str(pl, name)) || !(tg->resource = pod_resource(pl, r)))
        return -1;
    e->value = tg;
    res->task_group_resources[res->n_task_group_resources++] = e;
    return 0;
}

static int add_pod(pool_t *pl, Brain__JobResource *res, const char *name, const dlb_resource_t *r)
{
    Brain__JobResource__PodResourcesEntry *e = pool_new(pl, sizeof(*e));

    if (!e)
        return -1;
    brain__job_resource__pod_resources_entry__init(e);
    if (!(e->key = pool_str(pl, name)) || !(e->value = pod_resource(pl, r)))
        return -1;
    res->pod_resources[res->n_pod_resources++] = e;
    return 0;
}

/* PodState and JobState customized_data entries have the same layout. */
static int add_kv(pool_t *pl, Brain__PodState__CustomizedDataEntry **arr, size_t *n, const char *k,
                  const char *v)
{
    Brain__PodState__CustomizedDataEntry *e = pool_new(pl, sizeof(*e));

    if (!e)
        return -1;
    brain__pod_state__customized_data_entry__init(e);
    if (!(e->key = pool_str(pl, k)) || !(e->value = pool_str(pl, v)))
        return -1;
    arr[(*n)++] = e;
    return 0;
}

/* The OOM pods of a request: every one (v2), or the one of a v1 writer
 * (then in *one, the caller's: the mapping keeps no state of its own). */
static size_t oom_pods(const dlb_plan_request_t *req, const char **one, const char *const **names)
{
    if (req->oom_pods_cnt) {
        *names = (const char *const *)req->oom_pods;
        return req->oom_pods_cnt;
    }
    *one = req->oom_pod;
    *names = one;
    return req->has_oom_pod ? 1 : 0;
}

/* The plan's resources as DLRover's master reads them. Two answers it can
 * only read one way: a worker OOM (asked at job_stage_create) is read from
 * the "worker" group alone (a non-empty plan without it crashes the master),
 * a PS OOM (asked at job_stage_ps_initial) from pod_resources[<that pod>]
 * alone; dlbrain's answer is copied to where DLRover looks (for several
 * worker OOMs, the largest memory). */
static int fill_resource(pool_t *pl, const dlb_plan_request_t *req, const dlb_plan_t *plan,
                         Brain__JobResource *res)
{
    const char *one, *const *names;
    size_t n = oom_pods(req, &one, &names);
    const dlb_group_resource_t *ps = plan_group(plan, "ps");
    const dlb_pod_resource_t *worker_oom = NULL;
    int at_create = !strcmp(req->stage, DLB_STAGE_CREATE);
    int at_ps_initial = !strcmp(req->stage, DLB_STAGE_PS_INITIAL);

    if (!(res->task_group_resources =
              pool_array(pl, plan->groups_cnt + 1, sizeof(*res->task_group_resources))) ||
        !(res->pod_resources = pool_array(pl, plan->pods_cnt + n, sizeof(*res->pod_resources))))
        return -1;
    for (size_t i = 0; i < plan->groups_cnt; i++)
        if (add_group(pl, res, plan->groups[i].group, plan->groups[i].count,
                      &plan->groups[i].resource))
            return -1;
    for (size_t i = 0; i < plan->pods_cnt; i++)
        if (add_pod(pl, res, plan->pods[i].name, &plan->pods[i].resource))
            return -1;
    for (size_t i = 0; i < n; i++) {
        const dlb_pod_resource_t *answer = plan_pod(plan, names[i]);

        if (at_create && answer &&
            (!worker_oom || answer->resource.memory > worker_oom->resource.memory))
            worker_oom = answer;
        if (at_ps_initial && !answer && ps && add_pod(pl, res, names[i], &ps->resource))
            return -1;
    }
    if (worker_oom && !plan_group(plan, "worker") &&
        add_group(pl, res, "worker", 0, &worker_oom->resource))
        return -1;
    return 0;
}

/* What DLRover cannot read (actions, reason, which optimizer) rides in the
 * plan's job echo, where a reader of the response finds it. */
static Brain__OptimizeJobMeta *job_echo(pool_t *pl, const dlb_plan_request_t *req,
                                        const dlb_plan_t *plan)
{
    Brain__OptimizeJobMeta *job = pool_new(pl, sizeof(*job));
    Brain__JobState *st = pool_new(pl, sizeof(*st));
    Brain__PodState__CustomizedDataEntry **cd;

    if (!job || !st || !(cd = pool_array(pl, 3, sizeof(*cd))) ||
        !(st->pods = pool_array(pl, plan->actions_cnt, sizeof(*st->pods))))
        return NULL;
    brain__optimize_job_meta__init(job);
    brain__job_state__init(st);
    if (!(job->uid = pool_str(pl, req->job_uid)))
        return NULL;
    job->state = st;
    st->timestamp = plan->event_time_ms;
    st->customized_data = (Brain__JobState__CustomizedDataEntry **)cd;
    if (add_kv(pl, cd, &st->n_customized_data, "plan_id", plan->plan_id) ||
        add_kv(pl, cd, &st->n_customized_data, "optimizer", plan->optimizer) ||
        add_kv(pl, cd, &st->n_customized_data, "reason", plan->reason))
        return NULL;
    for (size_t i = 0; i < plan->actions_cnt; i++) {
        Brain__JobState__PodsEntry *e = pool_new(pl, sizeof(*e));
        Brain__PodState *ps = pool_new(pl, sizeof(*ps));

        if (!e || !ps)
            return NULL;
        brain__job_state__pods_entry__init(e);
        brain__pod_state__init(ps);
        if (!(ps->customized_data = pool_array(pl, 2, sizeof(*ps->customized_data))) ||
            !(e->key = pool_str(pl, plan->actions[i].pod)) ||
            !(ps->name = pool_str(pl, plan->actions[i].pod)) ||
            add_kv(pl, ps->customized_data, &ps->n_customized_data, "action",
                   plan->actions[i].action) ||
            add_kv(pl, ps->customized_data, &ps->n_customized_data, "action_reason",
                   plan->actions[i].reason))
            return NULL;
        e->value = ps;
        st->pods[st->n_pods++] = e;
    }
    return job;
}

int dlb_gw_plan_response(const dlb_plan_request_t *req, const dlb_plan_t *plan, const char *reason,
                         uint8_t **out, size_t *out_len, char *errstr, size_t size)
{
    Brain__OptimizeResponse resp = BRAIN__OPTIMIZE_RESPONSE__INIT;
    Brain__Response status = BRAIN__RESPONSE__INIT;
    Brain__JobOptimizePlan jp = BRAIN__JOB_OPTIMIZE_PLAN__INIT, *plans[1] = {&jp};
    Brain__JobResource res = BRAIN__JOB_RESOURCE__INIT;
    pool_t pl = {0};
    int err = DLB_ERR_NOMEM;

    *out = NULL;
    resp.response = &status;
    status.success = plan != NULL;
    status.reason = (char *)(plan ? plan->reason : reason ? reason : "");
    if (plan) {
        jp.timestamp = plan->event_time_ms > 0 ? (uint64_t)plan->event_time_ms : 0;
        jp.resource = &res;
        if (fill_resource(&pl, req, plan, &res) || !(jp.job = job_echo(&pl, req, plan)))
            goto out;
        resp.n_job_optimize_plans = 1;
        resp.job_optimize_plans = plans;
    }
    *out_len = brain__optimize_response__get_packed_size(&resp);
    if (!(*out = malloc(*out_len ? *out_len : 1)))
        goto out;
    brain__optimize_response__pack(&resp, *out);
    err = 0;
out:
    pool_free(&pl);
    if (err)
        dlb_seterr(errstr, size, err, "out of memory building the optimize response");
    return err;
}

/* ---- JobOptimization -> JSON text ----------------------------------------- */

/* As DLRover's Go Brain stored it (encoding/json of its protoc-gen-go
 * struct: snake_case names, zero values left out). */
static cJSON *str_map_json(Brain__OptimizeConfig__CustomizedConfigEntry **e, size_t n)
{
    cJSON *o = cJSON_CreateObject();

    for (size_t i = 0; o && i < n; i++)
        if (!cJSON_AddStringToObject(o, e[i]->key, e[i]->value)) {
            cJSON_Delete(o);
            return NULL;
        }
    return o;
}

static int add_i64(cJSON *o, const char *k, int64_t v)
{
    return !v || cJSON_AddNumberToObject(o, k, (double)v) ? 0 : -1;
}

static int add_str(cJSON *o, const char *k, const char *v)
{
    return !v || !v[0] || cJSON_AddStringToObject(o, k, v) ? 0 : -1;
}

static cJSON *pod_resource_json(const Brain__PodResource *r)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || add_i64(o, "memory", r->memory) ||
        (r->cpu && !cJSON_AddNumberToObject(o, "cpu", r->cpu)) ||
        (r->gpu && !cJSON_AddNumberToObject(o, "gpu", r->gpu)) ||
        add_str(o, "gpu_type", r->gpu_type) || add_str(o, "priority", r->priority)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *job_state_json(const Brain__JobState *st)
{
    cJSON *o = cJSON_CreateObject(), *pods = NULL;

    if (!o || add_i64(o, "timestamp", st->timestamp) ||
        (st->speed && !cJSON_AddNumberToObject(o, "speed", st->speed)))
        goto fail;
    if (st->n_pods) {
        if (!(pods = cJSON_AddObjectToObject(o, "pods")))
            goto fail;
        for (size_t i = 0; i < st->n_pods; i++) {
            const Brain__PodState *ps = st->pods[i]->value;
            cJSON *p = cJSON_CreateObject();

            if (!p || !cJSON_AddItemToObject(pods, st->pods[i]->key, p)) {
                cJSON_Delete(p);
                goto fail;
            }
            if (ps && (add_str(p, "name", ps->name) || add_str(p, "uid", ps->uid) ||
                       add_str(p, "type", ps->type) ||
                       (ps->is_oom && !cJSON_AddTrueToObject(p, "is_oom"))))
                goto fail;
        }
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

char *dlb_gw_optimization_json(const Brain__JobOptimization *jo)
{
    cJSON *o = cJSON_CreateObject(), *x;
    char *out = NULL;

    if (!o || add_i64(o, "timestamp", jo->timestamp))
        goto out;
    if (jo->config) {
        const Brain__OptimizeConfig *c = jo->config;
        if (!(x = cJSON_AddObjectToObject(o, "config")) ||
            add_str(x, "optimizer_config_retriever", c->optimizer_config_retriever) ||
            add_str(x, "data_store", c->data_store) ||
            add_str(x, "brain_processor", c->brain_processor) ||
            (c->n_customized_config &&
             !cJSON_AddItemToObject(x, "customized_config",
                                    str_map_json(c->customized_config, c->n_customized_config))))
            goto out;
    }
    if (jo->plan && jo->plan->resource) {
        const Brain__JobResource *r = jo->plan->resource;
        cJSON *plan = cJSON_AddObjectToObject(o, "plan"), *res, *tg = NULL, *pr = NULL;

        if (!plan || add_i64(plan, "timestamp", (int64_t)jo->plan->timestamp) ||
            !(res = cJSON_AddObjectToObject(plan, "resource")) ||
            (r->n_task_group_resources &&
             !(tg = cJSON_AddObjectToObject(res, "task_group_resources"))) ||
            (r->n_pod_resources && !(pr = cJSON_AddObjectToObject(res, "pod_resources"))))
            goto out;
        for (size_t i = 0; i < r->n_task_group_resources; i++) {
            const Brain__TaskGroupResource *g = r->task_group_resources[i]->value;
            cJSON *e = cJSON_CreateObject();

            if (!e || !cJSON_AddItemToObject(tg, r->task_group_resources[i]->key, e)) {
                cJSON_Delete(e);
                goto out;
            }
            if (g && (add_i64(e, "count", g->count) ||
                      (g->resource &&
                       !cJSON_AddItemToObject(e, "resource", pod_resource_json(g->resource)))))
                goto out;
        }
        for (size_t i = 0; i < r->n_pod_resources; i++)
            if (r->pod_resources[i]->value &&
                !cJSON_AddItemToObject(pr, r->pod_resources[i]->key,
                                       pod_resource_json(r->pod_resources[i]->value)))
                goto out;
    }
    if (jo->n_job_states) {
        cJSON *a = cJSON_AddArrayToObject(o, "job_states");
        if (!a)
            goto out;
        for (size_t i = 0; i < jo->n_job_states; i++)
            if (!cJSON_AddItemToArray(a, job_state_json(jo->job_states[i])))
                goto out;
    }
    out = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    return out;
}
