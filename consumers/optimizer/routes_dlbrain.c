/* The "dlbrain" optimizer set, the default: DLRover's formulas where they
 * are sound, and what DLRover-RM only describes where they are not.
 *
 * Running stages compose several optimizers into one plan, in this order:
 *   worker stages:  node failures, health, memory trend, worker model
 *   running stages: node failures, health, memory trend, hot PS, else PS
 *                   utilisation
 * OOM requests: the OOM answer, then node failures.
 * A pod gets one action: a pod replaced for its node's failure is not also
 * relaunched for a hang or replaced as a straggler. Node failures are not
 * answered at job_stage_ps_running: DLRover's Python master asks it with
 * _worker_running at the same instant, and an answer recorded by one plan is
 * only seen by later ones, so both would replace the same pods.
 * A hang (health relaunches the workers) ends the chain: a stopped job's
 * samples say nothing about memory or speed, and the relaunch comes first.
 * Stragglers do not: replacing one pod and sizing the group are independent.
 * plan->optimizer names the parts that fired (added a group, pod or action),
 * joined by '+', or the route's name when none did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt_oom.h"
#include "opt_plan.h"
#include "opt_util.h"
#include "routes.h"

/* A pod answered for an OOM event already (in->oom_plans) does not route
 * every later request to the OOM optimizer: only unanswered OOMs do, and a
 * request that names the pod, which gets the earlier answer again. */
int dlb_needs_oom_dlbrain(const dlb_opt_input_t *in)
{
    size_t i;

    if (dlb_req_names_oom(in->req))
        return 1;
    if (!strcmp(in->req->stage, DLB_STAGE_CREATE))
        return 0;
    for (i = 0; i < in->job->pods_cnt; i++) {
        const dlb_pod_status_t *p = &in->job->pods[i];

        if (p->oom_count > 0 && !dlb_oom_find_answer(in, p->name, p->last_oom_event_id))
            return 1;
    }
    return 0;
}

/* The parts of a composed plan that fired, "a+b". */
typedef struct chain {
    char fired[sizeof(((dlb_plan_t *)0)->optimizer)];
} chain_t;

/* Run one part. @returns 0 or its error; *did says whether it fired. */
static int run(const dlb_opt_input_t *in, dlb_plan_t *plan, chain_t *ch, const char *name,
               dlb_opt_fn fn, int *did)
{
    size_t g = plan->groups_cnt, p = plan->pods_cnt, a = plan->actions_cnt;
    size_t len = strlen(ch->fired);
    int err;

    if ((err = fn(in, plan)))
        return err;
    *did = plan->groups_cnt != g || plan->pods_cnt != p || plan->actions_cnt != a;
    if (*did)
        snprintf(ch->fired + len, sizeof(ch->fired) - len, "%s%s", len ? "+" : "", name);
    return 0;
}

static int hung(const dlb_plan_t *plan)
{
    size_t i;

    for (i = 0; i < plan->actions_cnt; i++)
        if (!strcmp(plan->actions[i].action, DLB_ACTION_RELAUNCH))
            return 1;
    return 0;
}

/* Two parts may size the same pod (memory trend and hot PS): one entry per
 * pod, with the larger of each, which satisfies both. */
static void merge_pods(dlb_plan_t *plan)
{
    size_t i, j;

    for (i = 0; i < plan->pods_cnt; i++) {
        dlb_resource_t *r = &plan->pods[i].resource;

        for (j = i + 1; j < plan->pods_cnt;) {
            const dlb_resource_t *o = &plan->pods[j].resource;

            if (strcmp(plan->pods[i].name, plan->pods[j].name)) {
                j++;
                continue;
            }
            if (o->cpu > r->cpu)
                r->cpu = o->cpu;
            if (o->memory > r->memory)
                r->memory = o->memory;
            memmove(&plan->pods[j], &plan->pods[j + 1],
                    (plan->pods_cnt - j - 1) * sizeof(plan->pods[0]));
            plan->pods_cnt--;
        }
    }
}

static int cmp_action(const void *a, const void *b)
{
    return strcmp(((const dlb_pod_action_t *)a)->pod, ((const dlb_pod_action_t *)b)->pod);
}

/* The first nodes actions (node failures, in pod name order) win: later
 * actions for the same pods go. */
static void merge_actions(dlb_plan_t *plan, size_t nodes)
{
    size_t i, n = nodes;

    if (!nodes)
        return;
    for (i = nodes; i < plan->actions_cnt; i++)
        if (!bsearch(&plan->actions[i], plan->actions, nodes, sizeof(plan->actions[0]), cmp_action))
            plan->actions[n++] = plan->actions[i];
    plan->actions_cnt = n;
}

/* The router releases groups and pods when a route fails; actions too. */
static int finish(dlb_plan_t *plan, const chain_t *ch, size_t nodes, int err)
{
    if (err) {
        free(plan->actions);
        plan->actions = NULL;
        plan->actions_cnt = 0;
        return err;
    }
    merge_actions(plan, nodes);
    merge_pods(plan);
    if (ch->fired[0])
        snprintf(plan->optimizer, sizeof(plan->optimizer), "%s", ch->fired);
    return 0;
}

/* The stages that answer node failures: not create (no pods yet), not the
 * PS stages (_ps_running comes with _worker_running at the same instant). */
static int answers_nodes(const char *stage)
{
    return !strcmp(stage, DLB_STAGE_RUNNING) || !strcmp(stage, DLB_STAGE_WORKER_INITIAL) ||
           !strcmp(stage, DLB_STAGE_WORKER_RUNNING);
}

/* Node failures, then health. @returns 0 or an error; *nodes is the node
 * failures' actions, *stop 1 when the chain ends there (a hang). */
static int first_parts(const dlb_opt_input_t *in, dlb_plan_t *plan, chain_t *ch, size_t *nodes,
                       int *stop)
{
    int did, err;

    if (answers_nodes(in->req->stage) &&
        (err = run(in, plan, ch, "dlbrain.node_failure", dlb_opt_node_failures, &did)))
        return err;
    *nodes = plan->actions_cnt;
    if ((err = run(in, plan, ch, "dlbrain.health", dlb_opt_health, &did)))
        return err;
    *stop = hung(plan);
    return 0;
}

static int opt_worker(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    chain_t ch = {""};
    size_t nodes = 0;
    int did, stop = 0, err;

    if ((err = first_parts(in, plan, &ch, &nodes, &stop)) || stop)
        return finish(plan, &ch, nodes, err);
    if (!(err = run(in, plan, &ch, "dlbrain.memory_trend", dlb_opt_memory_trend, &did)))
        err = run(in, plan, &ch, "dlbrain.worker_model", dlb_opt_worker_model, &did);
    return finish(plan, &ch, nodes, err);
}

/* The PS group sized for its count: memory for the job's end, CPU split. */
static int ps_size(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    int err = dlb_opt_ps_memory_end(in, plan);

    return err ? err : dlb_opt_ps_cpu_split(in, plan);
}

/* The PS count from the throughput model, the group sized when it changes. */
static int ps_count(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    int err = dlb_opt_ps_model(in, plan);

    return err || !dlb_plan_group(plan, "ps") ? err : ps_size(in, plan);
}

static int opt_running(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    chain_t ch = {""};
    size_t nodes = 0;
    int did = 0, stop = 0, err;

    if ((err = first_parts(in, plan, &ch, &nodes, &stop)) || stop)
        return finish(plan, &ch, nodes, err);
    if (!(err = run(in, plan, &ch, "dlbrain.memory_trend", dlb_opt_memory_trend, &did)) &&
        !(err = run(in, plan, &ch, "dlrover.hot_ps", dlb_opt_hot_ps, &did)) && !did &&
        !(err = run(in, plan, &ch, "dlbrain.ps_model", ps_count, &did)) && !did)
        err = run(in, plan, &ch, "dlrover.ps_util", dlb_opt_ps_util, &did);
    return finish(plan, &ch, nodes, err);
}

/* An OOM request (or a job with an unanswered OOM) answers its node
 * failures too: the OOM route takes every request while an OOM is open, and
 * a failed pod should not wait for it. A pod this plan answers for its OOM
 * is replaced as well, with the plan's memory: its node failure may be the
 * very event that made it the newest OOM pod, and the next request may come
 * long after its pod would have been relaunched anyway. */
static int opt_oom(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    chain_t ch = {""};
    int did, err;

    if (!(err = run(in, plan, &ch, "dlbrain.oom", dlb_opt_oom_vpa, &did)) &&
        answers_nodes(in->req->stage))
        err = run(in, plan, &ch, "dlbrain.node_failure", dlb_opt_node_failures, &did);
    return finish(plan, &ch, 0, err);
}

/* DLRover's create (worker and PS resources from similar jobs), keeping the
 * worker count the user asked for. DLRover's worker create asks 1 worker
 * whenever completed jobs of the scenario exist, and the master then needs
 * an ask per 300 s to grow back, several for a job that asked 32: in the
 * simulator the jobs so cut spent hours at a few workers (one imagenet job
 * 35 h at 1 worker against 14 min at its 32). The count is the user's
 * knowledge of the job; the worker model changes it once the job's own
 * speeds say so.
 * Worker memory: DLRover's 1.5 x the similar workers' peak, without its
 * 16 GiB minimum and at most 8 GiB above the peak, as every other dlbrain
 * memory. With the user's count kept, the group holds its create memory
 * for every worker until the first ask; at 16 GiB for workers that peaked
 * at 5, 12 simulated runs held 1.006x DLRover's GiB-hours, without the
 * minimum 0.994x, OOMs 0.20x either way (docs/results/benchmarks-history.md,
 * 2026-11-26, the create and resize rework). */
#define CREATE_MEMORY_HEADROOM 0.5
#define CREATE_MEMORY_STEP_MAX (8 * DLB_GIB)

static int opt_create(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    dlb_group_resource_t *g;
    int64_t peak = 0, head, memory;
    size_t pods = 0;
    int err;

    if ((err = dlb_opt_create(in, plan)))
        return err;
    if (!(g = dlb_plan_group(plan, "worker")))
        return 0;
    if (g->count > 0) {
        g->count = 0;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " dlbrain: the worker count stays the user's (0 = keep).");
    }
    if ((err = dlb_oom_history_memory(in->history, "worker", &peak, &pods)))
        return err;
    if (peak <= 0) {
        g->resource.memory = 0;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " dlbrain: no similar worker has run, so the worker memory stays the "
                           "user's (0 = keep), not the 16GiB guess, until the job's own samples "
                           "size it.");
        return 0;
    }
    head = (int64_t)((double)peak * CREATE_MEMORY_HEADROOM);
    memory = dlb_mem_add(peak, head < CREATE_MEMORY_STEP_MAX ? head : CREATE_MEMORY_STEP_MAX);
    if (memory < g->resource.memory) {
        g->resource.memory = memory;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " dlbrain: worker memory %.2fGiB = the similar workers' peak %.2fGiB "
                           "x 1.5 (at most +8GiB), no 16GiB minimum.",
                           DLB_GIB_F(g->resource.memory), DLB_GIB_F(peak));
    }
    return 0;
}

/* DLRover's PS init-adjust, then the PS count from the throughput model,
 * then the group sized for that count. */
static int opt_ps_initial(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    int err;

    if ((err = dlb_opt_ps_initial(in, plan)) || (err = dlb_opt_ps_model(in, plan)))
        return err;
    return ps_size(in, plan);
}

static const dlb_route_t routes[] = {
    {DLB_STAGE_CREATE, "dlrover.create", opt_create},
    {DLB_STAGE_PS_INITIAL, "dlbrain.ps_initial", opt_ps_initial},
    {DLB_STAGE_WORKER_INITIAL, "dlbrain.worker", opt_worker},
    {DLB_STAGE_WORKER_RUNNING, "dlbrain.worker", opt_worker},
    {DLB_STAGE_RUNNING, "dlbrain.running", opt_running},
    {DLB_STAGE_PS_RUNNING, "dlbrain.running", opt_running},
    {NULL, NULL, NULL},
};

const dlb_opt_set_t dlb_set_dlbrain = {"dlbrain", dlb_needs_oom_dlbrain, "dlbrain.oom", opt_oom,
                                       routes};
