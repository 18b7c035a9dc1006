/* The router: request stage + job state -> which optimizers run (reference
 * section 1), then the master-side clamp. One table per optimizer set, so a
 * new stage or a new set is a new row, not new control flow. */
#include "optimizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_util.h"
#include "routes.h"

static const dlb_opt_set_t *const dlb_opt_sets[] = {&dlb_set_dlrover, &dlb_set_dlbrain, NULL};

static const dlb_opt_set_t *find_set(const char *name)
{
    for (size_t i = 0; name && dlb_opt_sets[i]; i++)
        if (!strcmp(dlb_opt_sets[i]->name, name))
            return dlb_opt_sets[i];
    return NULL;
}

static const dlb_route_t *find_route(const dlb_opt_set_t *set, const char *stage)
{
    const dlb_route_t *r;

    for (r = set->routes; r->stage; r++)
        if (!strcmp(r->stage, stage))
            return r;
    return NULL;
}

static void plan_release(dlb_plan_t *plan)
{
    free(plan->groups);
    free(plan->pods);
    memset(plan, 0, sizeof(*plan));
}

int dlb_router_plan(const dlb_opt_input_t *in, dlb_plan_t *plan, char *errstr, size_t errstr_size)
{
    const dlb_plan_request_t *req;
    const dlb_opt_set_t *set;
    const dlb_route_t *route;
    int err;

    memset(plan, 0, sizeof(*plan));
    if (!in || !in->req || !in->job || !in->history)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "router: missing input");
    req = in->req;
    if (!(set = find_set(in->optimizer_set)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "optimizer set \"%s\": unknown (dlrover or dlbrain)",
                          in->optimizer_set ? in->optimizer_set : "(null)");
    if (!dlb_in_list(dlb_stages, req->stage))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "stage \"%s\": unknown",
                          req->stage);

    dlb_plan_id(req, plan->plan_id, sizeof(plan->plan_id));
    memcpy(plan->event_id, plan->plan_id, sizeof(plan->event_id));
    plan->event_time_ms = req->event_time_ms;
    memcpy(plan->job_uid, req->job_uid, sizeof(plan->job_uid));
    memcpy(plan->stage, req->stage, sizeof(plan->stage));
    memcpy(plan->trigger_event_id, req->event_id, sizeof(plan->trigger_event_id));

    if (set->needs_oom(in)) {
        snprintf(plan->optimizer, sizeof(plan->optimizer), "%s", set->oom_optimizer);
        err = set->oom(in, plan);
    } else if ((route = find_route(set, req->stage))) {
        snprintf(plan->optimizer, sizeof(plan->optimizer), "%s", route->optimizer);
        err = route->run(in, plan);
    } else {
        snprintf(plan->optimizer, sizeof(plan->optimizer), "none");
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "no optimizer for stage %s in set %s yet, nothing to change.",
                           req->stage, set->name);
        err = 0;
    }
    if (err) {
        plan_release(plan);
        return dlb_seterr(errstr, errstr_size, err, "optimizer for stage %s: %s", req->stage,
                          dlb_err_name(err));
    }
    dlb_limits_apply(in->limits, plan);
    return 0;
}

int dlb_req_names_oom(const dlb_plan_request_t *req)
{
    if (req->has_oom_pod && req->oom_pod[0])
        return 1;
    for (size_t i = 0; i < req->oom_pods_cnt; i++)
        if (req->oom_pods[i] && req->oom_pods[i][0])
            return 1;
    return 0;
}

int dlb_opt_job_has_oom(const dlb_plan_request_t *req, const dlb_job_state_t *st)
{
    if (req->has_oom_pod || dlb_req_names_oom(req))
        return 1;
    for (size_t i = 0; i < st->pods_cnt; i++)
        if (st->pods[i].oom_count > 0)
            return 1;
    return 0;
}

static int has_node_failure(const dlb_job_state_t *st)
{
    for (size_t i = 0; i < st->pods_cnt; i++)
        if (st->pods[i].fail_event_id[0])
            return 1;
    return 0;
}

dlb_opt_needs_t dlb_opt_needs(const char *optimizer_set, const dlb_plan_request_t *req,
                              const dlb_job_state_t *st)
{
    int dlbrain = optimizer_set && !strcmp(optimizer_set, "dlbrain");
    int create = !strcmp(req->stage, DLB_STAGE_CREATE), oom = dlb_opt_job_has_oom(req, st);
    dlb_opt_needs_t n;

    n.history = create || oom || dlbrain;
    n.answers = oom || (dlbrain && has_node_failure(st));
    /* Not at the running stages: most requests there are OOMs (in the chaos
     * soak 2,225 of 2,229), which the OOM route answers without the cluster,
     * and reading every job's entry for each of them made batches slower. The
     * PS model there grows PS as if nobody waited (opt_model.c). */
    n.cluster = dlbrain && (!strcmp(req->stage, DLB_STAGE_WORKER_INITIAL) ||
                            !strcmp(req->stage, DLB_STAGE_WORKER_RUNNING) ||
                            !strcmp(req->stage, DLB_STAGE_PS_INITIAL));
    return n;
}
