/* The agent's public structs to the pipeline's events and back (plans).
 * Pure: no I/O, no agent state; ids and times are the caller's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "err.h"

/* A NULL string is "". Longer than the field: refused, naming the field. */
static int put(char *dst, size_t dst_size, const char *src, const char *field, char *errstr,
               size_t size)
{
    size_t n = src ? strlen(src) : 0;

    if (n >= dst_size)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: longer than %zu characters", field,
                          dst_size - 1);
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
    return 0;
}

#define PUT(dst, src, field) put(dst, sizeof(dst), src, field, errstr, size)

static int put_meta(const dlb_agent_meta_t *in, dlb_job_meta_t *m, char *errstr, size_t size)
{
    const char *const v[DLB_META_ATTRS] = {in->user, in->group,    in->app,       in->cluster,
                                           in->ns,   in->scenario, in->framework, in->name};
    char field[64];
    int err;

    /* dlb_meta_attr_names and dlb_meta_attr() share one order; v follows it. */
    for (size_t i = 0; i < DLB_META_ATTRS; i++) {
        snprintf(field, sizeof(field), "meta.%s", dlb_meta_attr_names[i]);
        if ((err = put(dlb_meta_attr(m, i), DLB_NAME_MAX, v[i], field, errstr, size)))
            return err;
    }
    return 0;
}

int agent_event_job(const dlb_agent_job_t *in, dlb_event_t *ev, char *errstr, size_t size)
{
    dlb_job_event_t *j = &ev->u.job;
    int err;

    ev->type = DLB_EV_JOB;
    if (in->meta) {
        j->has_meta = 1;
        if ((err = put_meta(in->meta, &j->meta, errstr, size)))
            return err;
    }
    if (in->state) {
        j->has_state = 1;
        if ((err = PUT(j->state, in->state, "state")))
            return err;
    }
    if (in->hyper_params) {
        j->has_hyper_params = 1;
        j->hyper_params.batch_size = in->hyper_params->batch_size;
        j->hyper_params.epoch = in->hyper_params->epoch;
        j->hyper_params.max_steps = in->hyper_params->max_steps;
    }
    if (in->dataset) {
        j->has_dataset = 1;
        j->dataset.size = in->dataset->size;
        if ((err = PUT(j->dataset.name, in->dataset->name, "dataset.name")) ||
            (err = PUT(j->dataset.storage, in->dataset->storage, "dataset.storage")))
            return err;
    }
    if (in->model) {
        j->has_model = 1;
        j->model.variable_count = in->model->variable_count;
        j->model.op_count = in->model->op_count;
        j->model.total_variable_size = in->model->total_variable_size;
        j->model.recv_op_count = in->model->recv_op_count;
        j->model.flops = in->model->flops;
        j->model.embedding_dimension = in->model->embedding_dimension;
    }
    if (in->exit_reason) {
        j->has_exit_reason = 1;
        if ((err = PUT(j->exit_reason, in->exit_reason, "exit_reason")))
            return err;
    }
    return 0;
}

int agent_event_sample(const dlb_agent_sample_t *in, dlb_event_t *ev, char *errstr, size_t size)
{
    dlb_runtime_sample_t *rt = &ev->u.rt;
    char field[64];
    int err;

    ev->type = DLB_EV_RUNTIME;
    rt->global_step = in->global_step;
    rt->speed = in->speed;
    if (in->pods_cnt && !in->pods)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "pods: NULL with pods_cnt %zu",
                          in->pods_cnt);
    if (in->pods_cnt && !(rt->pods = calloc(in->pods_cnt, sizeof(*rt->pods))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    rt->pods_cnt = in->pods_cnt;
    for (size_t i = 0; i < in->pods_cnt; i++) {
        const dlb_agent_pod_usage_t *p = &in->pods[i];
        dlb_pod_usage_t *o = &rt->pods[i];

        snprintf(field, sizeof(field), "pods[%zu].name", i);
        if ((err = PUT(o->name, p->name, field)))
            return err;
        snprintf(field, sizeof(field), "pods[%zu].type", i);
        if ((err = PUT(o->type, p->type, field)))
            return err;
        o->index = p->index;
        o->cpu_used = p->cpu_used;
        o->cpu_requested = p->cpu_requested;
        o->memory_used = p->memory_used;
        o->memory_requested = p->memory_requested;
        o->has_speed = p->has_speed != 0;
        o->speed = p->has_speed ? p->speed : 0;
    }
    return 0;
}

int agent_event_node(const dlb_agent_node_event_t *in, dlb_event_t *ev, char *errstr, size_t size)
{
    dlb_node_event_t *n = &ev->u.node;
    int err;

    ev->type = DLB_EV_NODE;
    n->pod_index = in->pod_index;
    n->has_phase = in->phase != NULL;
    n->has_memory_requested = in->memory_requested != 0;
    n->memory_requested = in->memory_requested;
    n->has_cpu_requested = in->cpu_requested != 0;
    n->cpu_requested = in->cpu_requested;
    if ((err = PUT(n->kind, in->kind, "kind")) ||
        (err = PUT(n->pod_name, in->pod_name, "pod_name")) ||
        (err = PUT(n->pod_type, in->pod_type, "pod_type")) ||
        (err = PUT(n->node_name, in->node_name, "node_name")) ||
        (err = PUT(n->phase, in->phase, "phase")) || (err = PUT(n->reason, in->reason, "reason")) ||
        (err = PUT(n->message, in->message, "message")))
        return err;
    return 0;
}

int agent_event_request(const char *stage, const char *oom_pod, dlb_event_t *ev, char *errstr,
                        size_t size)
{
    dlb_plan_request_t *r = &ev->u.req;
    int err;

    ev->type = DLB_EV_PLAN_REQUEST;
    r->has_oom_pod = oom_pod != NULL;
    if ((err = PUT(r->stage, stage, "stage")) || (err = PUT(r->oom_pod, oom_pod, "oom_pod")))
        return err;
    /* plan_request v2: oom_pods names it too (ABI 1 asks about one pod). */
    if (oom_pod) {
        if (!(r->oom_pods = calloc(1, sizeof(*r->oom_pods))) || !(r->oom_pods[0] = strdup(oom_pod)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        r->oom_pods_cnt = 1;
    }
    return 0;
}

static void view_resource(const dlb_resource_t *r, dlb_agent_resource_t *o)
{
    o->cpu = r->cpu;
    o->memory = r->memory;
    o->gpu = r->gpu;
    o->gpu_type = r->gpu_type;
    o->priority = r->priority;
}

agent_plan_t *agent_plan_new(dlb_event_t *ev)
{
    agent_plan_t *p = calloc(1, sizeof(*p));
    const dlb_plan_t *pl;

    if (!p)
        return NULL;
    p->ev = *ev;
    memset(ev, 0, sizeof(*ev));
    pl = &p->ev.u.plan;
    if ((pl->groups_cnt && !(p->groups = calloc(pl->groups_cnt, sizeof(*p->groups)))) ||
        (pl->pods_cnt && !(p->pods = calloc(pl->pods_cnt, sizeof(*p->pods)))) ||
        (pl->actions_cnt && !(p->actions = calloc(pl->actions_cnt, sizeof(*p->actions))))) {
        dlb_agent_plan_destroy(&p->pub);
        return NULL;
    }
    for (size_t i = 0; i < pl->groups_cnt; i++) {
        p->groups[i].group = pl->groups[i].group;
        p->groups[i].count = pl->groups[i].count;
        view_resource(&pl->groups[i].resource, &p->groups[i].resource);
    }
    for (size_t i = 0; i < pl->pods_cnt; i++) {
        p->pods[i].name = pl->pods[i].name;
        view_resource(&pl->pods[i].resource, &p->pods[i].resource);
    }
    for (size_t i = 0; i < pl->actions_cnt; i++) {
        p->actions[i].pod = pl->actions[i].pod;
        p->actions[i].action = pl->actions[i].action;
        p->actions[i].reason = pl->actions[i].reason;
    }
    p->pub = (dlb_agent_plan_t){
        .plan_id = pl->plan_id,
        .request_id = pl->trigger_event_id,
        .job_uid = pl->job_uid,
        .stage = pl->stage,
        .event_time_ms = pl->event_time_ms,
        .groups = p->groups,
        .groups_cnt = pl->groups_cnt,
        .pods = p->pods,
        .pods_cnt = pl->pods_cnt,
        .actions = p->actions,
        .actions_cnt = pl->actions_cnt,
        .optimizer = pl->optimizer,
        .reason = pl->reason,
    };
    return p;
}

void dlb_agent_plan_destroy(dlb_agent_plan_t *plan)
{
    agent_plan_t *p = (agent_plan_t *)plan;

    if (!p)
        return;
    free(p->groups);
    free(p->pods);
    free(p->actions);
    dlb_event_clear(&p->ev);
    free(p);
}
