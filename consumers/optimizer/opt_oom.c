/* The OOM memory plan: DLRover's worker-create OOM variant for workers (and
 * chief / evaluator, which are workers with a role), and its PS init-adjust
 * OOM variant for parameter servers (reference section 3). */
#include "optimizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_oom.h"
#include "opt_util.h"
#include "vec.h"

#define OOM_WORKER_STEP    ((int64_t)4000000000) /* DLRover adds 4e9 bytes, not 4 GiB */
#define OOM_HIST_NUM       6                     /* an OOM'd history pod needed >= used * 1.2 */
#define OOM_HIST_DEN       5
#define OOM_PS_BIG_MEMORY  (64 * DLB_GIB) /* above this, more PS rather than bigger PS */
#define OOM_PS_UNBALANCED  0.2            /* (max - avg) / max of PS memory_used */
#define OOM_ASSUMED_MEMORY (16 * DLB_GIB) /* what create gives a job without history */

const dlb_oom_plan_t *dlb_oom_find_answer(const dlb_opt_input_t *in, const char *pod,
                                          const char *event)
{
    size_t i;

    if (!event || !event[0])
        return NULL;
    for (i = in->oom_plans_cnt; i-- > 0;)
        if (!strcmp(in->oom_plans[i].pod_name, pod) &&
            !strcmp(in->oom_plans[i].oom_event_id, event))
            return &in->oom_plans[i];
    return NULL;
}

/* The pod status only keeps the time of the pod's newest node event, not of
 * its newest OOM; for a pod whose last event is the OOM the two agree, which is
 * the case that matters (an OOM'd pod is usually not heard of again). Ties go
 * to the smaller name so the pick never depends on the array order. With
 * skip_answered, answered OOMs only count when no unanswered one is left. */
static const dlb_pod_status_t *newest_oom_pod(const dlb_opt_input_t *in, int skip_answered)
{
    const dlb_job_state_t *st = in->job;
    const dlb_pod_status_t *best = NULL;
    int best_answered = 0;
    size_t i;

    for (i = 0; i < st->pods_cnt; i++) {
        const dlb_pod_status_t *p = &st->pods[i];
        int answered;

        if (p->oom_count <= 0)
            continue;
        answered = skip_answered && dlb_oom_find_answer(in, p->name, p->last_oom_event_id);
        if (best && answered != best_answered) {
            if (answered)
                continue; /* an unanswered OOM goes first */
        } else if (best && !(p->last_event_time_ms > best->last_event_time_ms ||
                             (p->last_event_time_ms == best->last_event_time_ms &&
                              strcmp(p->name, best->name) < 0))) {
            continue;
        }
        best = p;
        best_answered = answered;
    }
    return best;
}

/* OOMs of the job no plan has answered yet. */
static size_t unanswered_ooms(const dlb_opt_input_t *in)
{
    size_t n = 0;

    for (size_t i = 0; i < in->job->pods_cnt; i++) {
        const dlb_pod_status_t *p = &in->job->pods[i];

        n += p->oom_count > 0 && !dlb_oom_find_answer(in, p->name, p->last_oom_event_id);
    }
    return n;
}

const dlb_pod_usage_t *dlb_oom_window_pod(const dlb_job_state_t *st, const char *name)
{
    const dlb_pod_usage_t *p;

    for (size_t i = st->window_cnt; i-- > 0;)
        if ((p = dlb_sample_pod(&st->window[i], name)))
            return p;
    return NULL;
}

/* "<job>-worker-3" -> "worker": the token before a trailing all-digit token,
 * when it is a known pod type. DLRover and the training operators name pods
 * this way; it is only a fallback when neither node events nor samples said. */
static int type_from_name(const char *name, char *type, size_t size)
{
    const char *dash, *start, *p;
    size_t len;

    if (!(dash = strrchr(name, '-')) || !dash[1])
        return 0;
    for (p = dash + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    for (start = dash; start > name && start[-1] != '-'; start--)
        ;
    len = (size_t)(dash - start);
    if (len == 0 || len >= size)
        return 0;
    memcpy(type, start, len);
    type[len] = '\0';
    return dlb_in_list(dlb_pod_types, type);
}

int dlb_oom_set_memory(dlb_plan_t *plan, const char *group, const char *pod, int64_t memory)
{
    dlb_group_resource_t *g;
    dlb_pod_resource_t *p;

    if (group) {
        if (!(g = dlb_plan_group_get(plan, group)))
            return DLB_ERR_NOMEM;
        if (memory > g->resource.memory)
            g->resource.memory = memory;
    }
    if (!(p = dlb_plan_add_pod(plan, pod)))
        return DLB_ERR_NOMEM;
    p->resource.memory = memory;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* An OOMKilled pod's usage stopped at its limit, hence the x 1.2. A pod
 * counts with its newest sample's usage (dlb_hist_job_last_pods, which the
 * history loader keeps between requests for jobs whose samples did not
 * change: walking up to 100 jobs x 240 samples of pods for every plan
 * request was 30% of the optimizer's time in a simulation of 200 jobs). */
int dlb_oom_history_memory(const dlb_history_t *h, const char *type, int64_t *max_mem, size_t *pods)
{
    const char **oom = NULL;
    size_t oom_cap = 0, i, k;
    int err = 0;

    *max_mem = 0;
    *pods = 0;
    for (i = 0; i < h->jobs_cnt && !err; i++) {
        const dlb_hist_job_t *job = &h->jobs[i];
        const dlb_hist_pod_t *last = job->last_pods;
        dlb_hist_pod_t *own = NULL;
        size_t cnt = job->last_pods_cnt;

        if (!job->has_last_pods) {
            if ((err = dlb_hist_job_last_pods(job, &own, &cnt)))
                break;
            last = own;
        }
        if (dlb_vec_reserve((void **)&oom, &oom_cap, job->oom_pods_cnt, sizeof(*oom))) {
            free(own);
            err = DLB_ERR_NOMEM;
            break;
        }
        for (k = 0; k < job->oom_pods_cnt; k++)
            oom[k] = job->oom_pods[k];
        if (job->oom_pods_cnt > 1)
            qsort(oom, job->oom_pods_cnt, sizeof(*oom), name_cmp);
        for (k = 0; k < cnt; k++) {
            const char *name = last[k].name;
            int64_t m = last[k].memory_used;

            if (strcmp(last[k].type, type))
                continue;
            (*pods)++;
            if (job->oom_pods_cnt && bsearch(&name, oom, job->oom_pods_cnt, sizeof(*oom), name_cmp))
                m = dlb_mem_scale(m, OOM_HIST_NUM, OOM_HIST_DEN);
            if (m > *max_mem)
                *max_mem = m;
        }
        free(own);
    }
    free(oom);
    return err;
}

static int worker_oom(const dlb_opt_input_t *in, dlb_plan_t *plan, const dlb_oom_target_t *t)
{
    const char *name = t->name, *type = t->type;
    const char *oom_event = t->event[0] ? t->event : "unknown";
    const dlb_pod_status_t *st_pod = t->st_pod;
    const dlb_pod_usage_t *wp = dlb_oom_window_pod(in->job, name);
    int64_t hist_mem, cur, bumped, memory;
    const char *cur_src;
    size_t hist_pods;
    int err;

    if ((err = dlb_oom_history_memory(in->history, type, &hist_mem, &hist_pods)))
        return err;
    /* The request at the OOM (node events carry it) first: it is fixed per OOM
     * event, so asking again for the same OOM gives the same memory instead of
     * bumping an already bumped pod once more (DLRover issue #302). */
    if (st_pod && st_pod->memory_requested > 0) {
        cur = st_pod->memory_requested;
        cur_src = "requested at its node events";
    } else if (wp && wp->memory_requested > 0) {
        cur = wp->memory_requested;
        cur_src = "requested in its newest runtime sample";
    } else if (wp && wp->memory_used > 0) {
        cur = wp->memory_used;
        cur_src = "used in its newest runtime sample";
    } else {
        cur = OOM_ASSUMED_MEMORY;
        cur_src = "unknown, assumed the cold-start size";
    }
    bumped = dlb_mem_add(cur, OOM_WORKER_STEP);
    memory = hist_mem > bumped ? hist_mem : bumped;
    if ((err = dlb_oom_set_memory(plan, type, name, memory)) ||
        (err = dlb_oom_answer(in, plan, t, memory)))
        return err;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%s%s %s OOMKilled (event %s): current memory %.2fGiB (%s); history: %zu "
                       "%s pods of %zu jobs, max last memory %.2fGiB (x1.2 if OOMKilled); "
                       "memory=max(history, current+4e9 bytes)=%.2fGiB for the %s group and pod.",
                       dlb_reason_sep(plan->reason), type, name, oom_event, DLB_GIB_F(cur), cur_src,
                       hist_pods, type, in->history->jobs_cnt, DLB_GIB_F(hist_mem),
                       DLB_GIB_F(memory), type);
    return 0;
}

static int ps_oom(const dlb_opt_input_t *in, dlb_plan_t *plan, const dlb_oom_target_t *t)
{
    const char *name = t->name, *oom_event = t->event[0] ? t->event : "unknown";
    const dlb_pod_status_t *st_pod = t->st_pod;
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t *s = NULL;
    dlb_group_resource_t *g;
    int64_t max_used = 0, sum_used = 0, cur;
    size_t i, k, n = 0;
    double avg;

    for (i = st->window_cnt; i-- > 0 && !n;) {
        s = &st->window[i];
        for (k = 0; k < s->pods_cnt; k++) {
            if (!dlb_is_ps(s->pods[k].type))
                continue;
            n++;
            sum_used = dlb_mem_add(sum_used, s->pods[k].memory_used);
            if (s->pods[k].memory_used > max_used)
                max_used = s->pods[k].memory_used;
        }
    }

    if (n == 0) {
        /* No runtime data: count the PS the node events told of (at least the
         * OOM'd one) and take the OOM'd PS's request as the PS size. */
        const char *cur_src = "requested at its node events";

        for (i = 0; i < st->pods_cnt; i++)
            if (dlb_is_ps(st->pods[i].type))
                n++;
        if (!st_pod || !dlb_is_ps(st_pod->type))
            n++; /* the OOM'd PS, when its node events did not count it (none, or no type) */
        cur = st_pod ? st_pod->memory_requested : 0;
        if (cur == 0)
            for (i = 0; i < st->pods_cnt; i++)
                if (dlb_is_ps(st->pods[i].type) && st->pods[i].memory_requested > cur)
                    cur = st->pods[i].memory_requested;
        if (cur == 0) {
            cur = OOM_ASSUMED_MEMORY;
            cur_src = "unknown, assumed the cold-start size";
        } else if (!st_pod || st_pod->memory_requested == 0) {
            cur_src = "largest PS request at node events";
        }
        if (cur >= OOM_PS_BIG_MEMORY) {
            if (!(g = dlb_plan_group_get(plan, "ps")) || dlb_oom_answer(in, plan, t, 0))
                return DLB_ERR_NOMEM;
            if (g->count < (int32_t)(2 * n)) /* several PS OOMs: one doubling */
                g->count = (int32_t)(2 * n);
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               "%sps %s OOMKilled (event %s), no runtime samples: PS memory "
                               "%.2fGiB (%s) >= 64GiB, so double the PS count %zu -> %d.",
                               dlb_reason_sep(plan->reason), name, oom_event, DLB_GIB_F(cur),
                               cur_src, n, g->count);
            return 0;
        }
        if (dlb_oom_set_memory(plan, "ps", name, dlb_mem_scale(cur, 2, 1)) ||
            dlb_oom_answer(in, plan, t, dlb_mem_scale(cur, 2, 1)))
            return DLB_ERR_NOMEM;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sps %s OOMKilled (event %s), no runtime samples: PS memory %.2fGiB "
                           "(%s) < 64GiB, so double it -> %.2fGiB.",
                           dlb_reason_sep(plan->reason), name, oom_event, DLB_GIB_F(cur), cur_src,
                           DLB_GIB_F(dlb_mem_scale(cur, 2, 1)));
        return 0;
    }

    avg = (double)sum_used / (double)n;
    if (max_used > 0 && ((double)max_used - avg) / (double)max_used > OOM_PS_UNBALANCED) {
        /* One PS holds more of the model than the others: more PS would not
         * move its hot shard, a bigger PS does. */
        int64_t memory = dlb_mem_scale(max_used, 2, 1);

        if (dlb_oom_set_memory(plan, "ps", name, memory) || dlb_oom_answer(in, plan, t, memory))
            return DLB_ERR_NOMEM;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sps %s OOMKilled (event %s): sample %s shows %zu PS with memory used "
                           "max %.2fGiB avg %.2fGiB, (max-avg)/max=%.2f > 0.2 (unbalanced), so "
                           "memory=2*max=%.2fGiB.",
                           dlb_reason_sep(plan->reason), name, oom_event, s->event_id, n,
                           DLB_GIB_F(max_used), avg / (double)DLB_GIB,
                           ((double)max_used - avg) / (double)max_used, DLB_GIB_F(memory));
        return 0;
    }
    if (!(g = dlb_plan_group_get(plan, "ps")) || dlb_oom_answer(in, plan, t, 0))
        return DLB_ERR_NOMEM;
    if (g->count < (int32_t)(2 * n))
        g->count = (int32_t)(2 * n);
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sps %s OOMKilled (event %s): sample %s shows %zu PS with memory used max "
                       "%.2fGiB avg %.2fGiB, balanced, so double the PS count %zu -> %d.",
                       dlb_reason_sep(plan->reason), name, oom_event, s->event_id, n,
                       DLB_GIB_F(max_used), avg / (double)DLB_GIB, n, g->count);
    return 0;
}

int dlb_oom_answer(const dlb_opt_input_t *in, const dlb_plan_t *plan, const dlb_oom_target_t *t,
                   int64_t memory)
{
    dlb_oom_answers_t *out = in->answered;
    dlb_oom_plan_t *a;

    if (!out || !t->event[0])
        return 0; /* no event id: nothing to key the answer by */
    if (!(a = dlb_vec_push((void **)&out->items, &out->cnt, sizeof(*a))))
        return DLB_ERR_NOMEM;
    memset(a, 0, sizeof(*a));
    snprintf(a->pod_name, sizeof(a->pod_name), "%s", t->name);
    snprintf(a->oom_event_id, sizeof(a->oom_event_id), "%s", t->event);
    snprintf(a->plan_id, sizeof(a->plan_id), "%s", plan->plan_id);
    a->memory = memory;
    a->event_time_ms = plan->event_time_ms;
    return 0;
}

/* Type and OOM event of target t (name set): 1, or 0 with a sentence on
 * plan->reason when its type is unknown. */
static int oom_resolve(const dlb_opt_input_t *in, dlb_oom_target_t *t, dlb_plan_t *plan)
{
    const dlb_pod_usage_t *wp;

    t->event = t->st_pod ? t->st_pod->last_oom_event_id : "";
    /* Type: node events name it; else a runtime sample; else the pod name. */
    if (t->st_pod && t->st_pod->type[0])
        snprintf(t->type, sizeof(t->type), "%s", t->st_pod->type);
    else if ((wp = dlb_oom_window_pod(in->job, t->name)) && wp->type[0])
        snprintf(t->type, sizeof(t->type), "%s", wp->type);
    else if (!type_from_name(t->name, t->type, sizeof(t->type)))
        t->type[0] = '\0';
    if (!t->type[0]) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sOOM of pod %s: its type is unknown (no node event, no runtime "
                           "sample, name not <job>-<type>-<index>), nothing to change.",
                           dlb_reason_sep(plan->reason), t->name);
        return 0;
    }
    return 1;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The pods the request names, each once, in name order. */
static int named_pods(const dlb_plan_request_t *req, const char ***names, size_t *n)
{
    const char **v = malloc((req->oom_pods_cnt + 1) * sizeof(*v));
    size_t k = 0;

    *names = v;
    *n = 0;
    if (!v)
        return DLB_ERR_NOMEM;
    if (req->has_oom_pod && req->oom_pod[0])
        v[k++] = req->oom_pod;
    for (size_t i = 0; i < req->oom_pods_cnt; i++)
        if (req->oom_pods[i] && req->oom_pods[i][0])
            v[k++] = req->oom_pods[i];
    qsort(v, k, sizeof(*v), cmp_name);
    for (size_t i = 0; i < k; i++)
        if (!*n || strcmp(v[*n - 1], v[i]))
            v[(*n)++] = v[i];
    return 0;
}

/* The OOMs to answer (dlb_oom_each()): a malloc'ed array of *n. */
static int oom_targets(const dlb_opt_input_t *in, int skip_answered, dlb_oom_target_t **targets,
                       size_t *n, dlb_plan_t *plan)
{
    const char **names = NULL;
    dlb_oom_target_t *t;
    size_t cnt;
    int err;

    *targets = NULL;
    *n = 0;
    if ((err = named_pods(in->req, &names, &cnt)))
        return err;
    if (!(t = calloc(cnt ? cnt : 1, sizeof(*t)))) {
        free(names);
        return DLB_ERR_NOMEM;
    }
    if (cnt > 1)
        dlb_reason_appendf(
            plan->reason, sizeof(plan->reason),
            "%sThe request names %zu OOM pods, each answered:", dlb_reason_sep(plan->reason), cnt);
    for (size_t i = 0; i < cnt; i++) {
        t[*n].name = names[i];
        t[*n].st_pod = dlb_job_state_pod(in->job, names[i]);
        *n += (size_t)oom_resolve(in, &t[*n], plan);
    }
    if (!cnt && skip_answered && unanswered_ooms(in) > 1) {
        /* A request naming no pod (DLRover's master after its first check)
         * answers every open OOM: answering only the newest left the others
         * open when a tick brought several, each of its plans picking the
         * same pod (an answer is seen by later batches only). */
        size_t open = unanswered_ooms(in);
        dlb_oom_target_t *all = calloc(open, sizeof(*all));

        if (!all) {
            free(names);
            free(t);
            return DLB_ERR_NOMEM;
        }
        free(t);
        t = all;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sThe request names no OOM pod; the job has %zu unanswered OOMs, each "
                           "answered:",
                           dlb_reason_sep(plan->reason), open);
        for (size_t i = 0; i < in->job->pods_cnt; i++) {
            const dlb_pod_status_t *p = &in->job->pods[i];

            if (p->oom_count <= 0 || dlb_oom_find_answer(in, p->name, p->last_oom_event_id))
                continue;
            t[*n].name = p->name;
            t[*n].st_pod = p;
            *n += (size_t)oom_resolve(in, &t[*n], plan);
        }
    } else if (!cnt) {
        if ((t->st_pod = newest_oom_pod(in, skip_answered))) {
            t->name = t->st_pod->name;
            *n = (size_t)oom_resolve(in, t, plan);
        } else {
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               "%sOOM: no OOM pod in the request or the job state, nothing to "
                               "change.",
                               dlb_reason_sep(plan->reason));
        }
    }
    free(names);
    *targets = t;
    return 0;
}

int dlb_oom_each(const dlb_opt_input_t *in, int skip_answered, dlb_oom_one_fn one, dlb_plan_t *plan)
{
    dlb_oom_target_t *t;
    size_t n;
    int err;

    if ((err = oom_targets(in, skip_answered, &t, &n, plan)))
        return err;
    for (size_t i = 0; i < n && !err; i++)
        err = one(in, plan, &t[i]);
    free(t);
    return err;
}

static int dlrover_one(const dlb_opt_input_t *in, dlb_plan_t *plan, const dlb_oom_target_t *t)
{
    return dlb_is_ps(t->type) ? ps_oom(in, plan, t) : worker_oom(in, plan, t);
}

/* DLRover answers every request for an OOM afresh (no record of earlier
 * answers); it still reports the answers so the two sets store the same
 * rows. Several OOM pods: each answered as DLRover answers one. */
int dlb_opt_oom(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    return dlb_oom_each(in, 0, dlrover_one, plan);
}
