/* The dlbrain set's node failures ("dlbrain.node_failure"): a pod that was
 * evicted, preempted, lost its heartbeat or sits on a node reported NotReady
 * or with a hardware error, and has not come back since, is replaced on
 * another node; where a whole node failed, every pod of the job on it is.
 *
 * DLRover's master only relaunches a pod once Kubernetes has failed or
 * deleted it: for a NotReady node that is after the node's not-ready
 * toleration (300 s by default) when the taint manager evicts its pods, and
 * a heartbeat timeout later for a pod that stopped reporting. Its Brain reads
 * no node events at all. Here the first plan request after the report
 * answers it.
 *
 * Everything is "as of" the request: a failure or a recovery after its time
 * is not seen. Each (pod, failure event) is answered once: the answer is
 * recorded with the OOM answers (oom_plans, memory 0) and a later plan does
 * not repeat it. A plan that answers the pod's OOM too records both (a row
 * per plan, pod and event): the pod is replaced with the plan's memory. */
#include "optimizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "opt_oom.h"
#include "opt_plan.h"
#include "opt_util.h"
#include "vec.h"

static int cmp_event(int64_t t1, const char *id1, int64_t t2, const char *id2)
{
    if (t1 != t2)
        return t1 < t2 ? -1 : 1;
    return strcmp(id1, id2);
}

/* Pod p's back-or-gone event as of T, NULL-kind "" when none. */
static int back_seen(const dlb_pod_status_t *p, int64_t t_ms)
{
    return p->back_event_id[0] && p->back_time_ms <= t_ms;
}

/* 1 when p came back (or went) after the failure (time, id), as of t_ms. */
static int back_after(const dlb_pod_status_t *p, int64_t time, const char *id, int64_t t_ms)
{
    return back_seen(p, t_ms) && cmp_event(p->back_time_ms, p->back_event_id, time, id) > 0;
}

/* 1 when p's own newest failure stands as of t_ms. */
static int failed(const dlb_pod_status_t *p, int64_t t_ms)
{
    return p->fail_event_id[0] && p->fail_time_ms <= t_ms &&
           !back_after(p, p->fail_time_ms, p->fail_event_id, t_ms);
}

/* 1 when p left the node before (or without) its failure: deleted or done. */
static int gone(const dlb_pod_status_t *p, int64_t t_ms)
{
    return back_seen(p, t_ms) &&
           (!strcmp(p->back_kind, "deleted") || !strcmp(p->back_kind, "Succeeded"));
}

/* Event time as UTC, to the millisecond: the same text wherever it runs. */
static void fmt_time(int64_t ms, char *buf, size_t size)
{
    time_t s = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;

    if (!gmtime_r(&s, &tm)) {
        snprintf(buf, size, "%lld ms", (long long)ms);
        return;
    }
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms - (int64_t)s * 1000));
}

static int record_answer(const dlb_opt_input_t *in, const dlb_plan_t *plan, const char *pod,
                         const char *event)
{
    dlb_oom_answers_t *out = in->answered;
    dlb_oom_plan_t *a;

    if (!out)
        return 0;
    if (!(a = dlb_vec_push((void **)&out->items, &out->cnt, sizeof(*a))))
        return DLB_ERR_NOMEM;
    memset(a, 0, sizeof(*a));
    snprintf(a->pod_name, sizeof(a->pod_name), "%s", pod);
    snprintf(a->oom_event_id, sizeof(a->oom_event_id), "%s", event);
    snprintf(a->plan_id, sizeof(a->plan_id), "%s", plan->plan_id);
    a->event_time_ms = plan->event_time_ms; /* memory 0: a replace, not a size */
    return 0;
}

/* The newest whole-node failure standing on q's node that q has not come
 * back from, among the nf failed pods nodes[] (pod positions); NULL if none. */
static const dlb_pod_status_t *node_cause(const dlb_job_state_t *st, const size_t *nodes, size_t nf,
                                          const dlb_pod_status_t *q, int64_t t_ms)
{
    const dlb_pod_status_t *best = NULL;

    if (!q->node_name[0] || gone(q, t_ms))
        return NULL;
    for (size_t i = 0; i < nf; i++) {
        const dlb_pod_status_t *f = &st->pods[nodes[i]];

        if (strcmp(f->fail_node, q->node_name) ||
            back_after(q, f->fail_time_ms, f->fail_event_id, t_ms))
            continue;
        if (!best || cmp_event(f->fail_time_ms, f->fail_event_id, best->fail_time_ms,
                               best->fail_event_id) > 0)
            best = f;
    }
    return best;
}

int dlb_opt_node_failures(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_job_state_t *st = in->job;
    const int64_t t_ms = in->req->event_time_ms;
    size_t i, nf = 0, replaced = 0, answered = 0;
    size_t *nodes = NULL;
    int err = 0;

    /* The pods whose failure took their whole node, standing as of now. */
    for (i = 0; i < st->pods_cnt; i++) {
        const dlb_pod_status_t *p = &st->pods[i];

        if (failed(p, t_ms) && dlb_node_failure_kind(p->fail_kind) == 2 && p->fail_node[0]) {
            if (!nodes && !(nodes = malloc(st->pods_cnt * sizeof(*nodes))))
                return DLB_ERR_NOMEM;
            nodes[nf++] = i;
        }
    }
    /* Pods in name order (the state's), each once: its own failure first. */
    for (i = 0; i < st->pods_cnt; i++) {
        const dlb_pod_status_t *q = &st->pods[i];
        const dlb_pod_status_t *f = failed(q, t_ms) ? q : node_cause(st, nodes, nf, q, t_ms);
        dlb_pod_action_t *a;
        char when[96];

        if (!f)
            continue;
        if (dlb_oom_find_answer(in, q->name, f->fail_event_id)) {
            answered++;
            continue;
        }
        if (!(a = dlb_plan_add_action(plan, q->name, DLB_ACTION_REPLACE))) {
            err = DLB_ERR_NOMEM;
            goto out;
        }
        fmt_time(f->fail_time_ms, when, sizeof(when));
        if (f == q)
            dlb_reason_appendf(a->reason, sizeof(a->reason), "%s on node %s at %s (event %s)",
                               f->fail_kind, f->fail_node[0] ? f->fail_node : "(unknown)", when,
                               f->fail_event_id);
        else
            dlb_reason_appendf(a->reason, sizeof(a->reason),
                               "%s of its node %s at %s (event %s, pod %s)", f->fail_kind,
                               f->fail_node, when, f->fail_event_id, f->name);
        if ((err = record_answer(in, plan, q->name, f->fail_event_id)))
            goto out;
        if (replaced < 4)
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%sNode failure: %s %s.",
                               dlb_reason_sep(plan->reason), q->name, a->reason);
        replaced++;
    }
    if (replaced > 4)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), " And %zu more.", replaced - 4);
    if (replaced)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Replace %zu pods on other nodes (%zu answered by earlier plans).",
                           replaced, answered);
    else if (answered)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sNode failures: %zu pods answered by earlier plans, none new.",
                           dlb_reason_sep(plan->reason), answered);
out:
    free(nodes);
    return err;
}
