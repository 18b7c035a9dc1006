/* The simulator against an optimizer set run in this process (`--plans
 * local`): no broker, no PostgreSQL. Each job's state is folded from the
 * events the simulator publishes, as the cache folds them; similar jobs'
 * history and the answered OOMs are kept in memory, as the consumer reads
 * them from PostgreSQL (as of the request). A quick what-if while changing an
 * optimizer; the measurement stays `scripts/compare`, which runs the real
 * pipeline. */
#include "sim_run.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "optimizer.h"
#include "state.h"
#include "vec.h"

typedef struct local_job {
    dlb_job_state_t st;
    dlb_oom_answers_t answers;
} local_job_t;

struct dlb_sim_local {
    const dlb_conf_t *conf;
    local_job_t *jobs; /* in order of first event */
    size_t cnt, cap;
    dlb_cluster_view_t cluster; /* as the consumers keep it in Redis */
};

static local_job_t *job_get(dlb_sim_local_t *l, const char *uid)
{
    local_job_t *j;

    for (size_t i = l->cnt; i-- > 0;)
        if (!strcmp(l->jobs[i].st.job.job_uid, uid))
            return &l->jobs[i];
    if (dlb_vec_reserve((void **)&l->jobs, &l->cap, l->cnt + 1, sizeof(*l->jobs)))
        return NULL;
    j = &l->jobs[l->cnt++];
    memset(j, 0, sizeof(*j));
    snprintf(j->st.job.job_uid, sizeof(j->st.job.job_uid), "%s", uid);
    return j;
}

static const char *event_job(const dlb_event_t *ev)
{
    switch (ev->type) {
    case DLB_EV_JOB:
        return ev->u.job.job_uid;
    case DLB_EV_NODE:
        return ev->u.node.job_uid;
    case DLB_EV_RUNTIME:
        return ev->u.rt.job_uid;
    default:
        return NULL;
    }
}

static int publish(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    dlb_sim_local_t *l = opaque;
    const char *uid = event_job(ev);
    local_job_t *j;

    if (!uid)
        return 0;
    if (!(j = job_get(l, uid)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "no memory for job %s", uid);
    if (dlb_job_state_apply(&j->st, ev, l->conf->window_size))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "no memory folding job %s", uid);
    if (ev->type == DLB_EV_JOB) {
        dlb_cluster_job_t e;
        int what = dlb_cluster_job_event(&ev->u.job, &e);

        if (what < 0)
            dlb_cluster_view_del(&l->cluster, uid);
        else if (what > 0 && dlb_cluster_view_put(&l->cluster, &e))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "no memory for job %s", uid);
    }
    return 0;
}

/* Jobs of the scenario created within history.hours before the request, newest
 * first, at most history.max.jobs, their samples before the request. The
 * samples and states are borrowed: only the arrays made here are freed. */
static int history_build(dlb_sim_local_t *l, const dlb_plan_request_t *req,
                         const dlb_job_state_t *self, dlb_history_t *h)
{
    const int64_t since = req->event_time_ms - (int64_t)l->conf->history_hours * 3600000;

    if (!(h->jobs = calloc(l->cnt ? l->cnt : 1, sizeof(*h->jobs))))
        return DLB_ERR_NOMEM;
    for (size_t i = l->cnt; i-- > 0 && h->jobs_cnt < (size_t)l->conf->history_max_jobs;) {
        const dlb_job_state_t *st = &l->jobs[i].st;
        dlb_hist_job_t *j = &h->jobs[h->jobs_cnt];
        size_t oom = 0;

        if (st == self || st->created_ms < since || st->created_ms >= req->event_time_ms ||
            strcmp(st->job.meta.scenario, self->job.meta.scenario))
            continue;
        snprintf(j->job_uid, sizeof(j->job_uid), "%s", st->job.job_uid);
        j->created_ms = st->created_ms;
        if (st->job.event_time_ms < req->event_time_ms) {
            snprintf(j->state, sizeof(j->state), "%s", st->job.state);
            if (st->job.has_exit_reason)
                snprintf(j->exit_reason, sizeof(j->exit_reason), "%s", st->job.exit_reason);
        }
        j->completed = !strcmp(j->state, "succeeded") || !strcmp(j->exit_reason, "Completed");
        j->samples = st->window;
        while (j->samples_cnt < st->window_cnt &&
               st->window[j->samples_cnt].event_time_ms < req->event_time_ms)
            j->samples_cnt++;
        for (size_t p = 0; p < st->pods_cnt; p++)
            oom += st->pods[p].oom_count > 0;
        if (oom && !(j->oom_pods = calloc(oom, sizeof(*j->oom_pods))))
            return DLB_ERR_NOMEM;
        for (size_t p = 0; p < st->pods_cnt; p++)
            if (st->pods[p].oom_count > 0)
                snprintf(j->oom_pods[j->oom_pods_cnt++], DLB_ID_MAX, "%s", st->pods[p].name);
        h->jobs_cnt++;
    }
    return 0;
}

static void history_free(dlb_history_t *h)
{
    for (size_t i = 0; i < h->jobs_cnt; i++)
        free(h->jobs[i].oom_pods);
    free(h->jobs);
}

static int plan_one(dlb_sim_local_t *l, const dlb_plan_request_t *req, dlb_plan_t *plan,
                    char *errstr, size_t errstr_size)
{
    const dlb_conf_t *conf = l->conf;
    local_job_t *j = job_get(l, req->job_uid);
    dlb_history_t hist = {0};
    dlb_oom_plan_t *before = NULL;
    dlb_opt_input_t in = {0};
    dlb_opt_needs_t needs;
    dlb_cluster_job_t self = {0};
    size_t nb = 0, first;
    char sub[512];
    int err = DLB_ERR_NOMEM;

    if (!j)
        goto out;
    needs = dlb_opt_needs(conf->optimizer_set, req, &j->st);
    if (needs.history && history_build(l, req, &j->st, &hist))
        goto out;
    /* As the consumer loads them: the answers of plans before the request's
     * time (a copy: in.answered grows). */
    if (!(before = malloc((j->answers.cnt + 1) * sizeof(*before))))
        goto out;
    for (size_t a = 0; a < j->answers.cnt; a++)
        if (j->answers.items[a].event_time_ms < req->event_time_ms)
            before[nb++] = j->answers.items[a];
    in.req = req;
    in.job = &j->st;
    in.history = &hist;
    in.limits = &conf->limits;
    in.tuning = &conf->tuning;
    in.oom_plans = before;
    in.oom_plans_cnt = nb;
    in.optimizer_set = conf->optimizer_set;
    in.answered = &j->answers;
    if (needs.cluster) {
        in.cluster = &l->cluster;
        in.cluster_out = &self;
    }
    first = j->answers.cnt;
    if ((err = dlb_router_plan(&in, plan, sub, sizeof(sub)))) {
        dlb_seterr(errstr, errstr_size, err, "planning %s: %s", req->event_id, sub);
        goto out;
    }
    dlb_dbg("plan %s for job %s at %s by %s: %s", plan->plan_id, req->job_uid, req->stage,
            plan->optimizer, plan->reason);
    if (self.time_ms && (err = dlb_cluster_view_put(&l->cluster, &self)))
        goto out;
    for (size_t a = first; a < j->answers.cnt; a++) {
        snprintf(j->answers.items[a].plan_id, sizeof(j->answers.items[a].plan_id), "%s",
                 plan->plan_id);
        j->answers.items[a].event_time_ms = req->event_time_ms;
    }
out:
    if (err == DLB_ERR_NOMEM)
        dlb_seterr(errstr, errstr_size, err, "no memory planning %s", req->event_id);
    free(before);
    history_free(&hist);
    return err;
}

static int exchange(void *opaque, const dlb_plan_request_t *reqs, size_t n, dlb_plan_t *plans,
                    char *errstr, size_t errstr_size)
{
    int err;

    for (size_t i = 0; i < n; i++)
        if ((err = plan_one(opaque, &reqs[i], &plans[i], errstr, errstr_size)))
            return err;
    return 0;
}

int dlb_sim_local_new(const dlb_conf_t *conf, dlb_sim_local_t **out, dlb_sim_io_t *io, char *errstr,
                      size_t errstr_size)
{
    dlb_sim_local_t *l = calloc(1, sizeof(*l));

    if (!l)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "no memory for the local optimizer");
    l->conf = conf;
    memset(io, 0, sizeof(*io));
    io->publish = publish;
    io->exchange = exchange;
    io->opaque = l;
    *out = l;
    return 0;
}

void dlb_sim_local_destroy(dlb_sim_local_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->cnt; i++) {
        dlb_job_state_clear(&l->jobs[i].st);
        free(l->jobs[i].answers.items);
    }
    free(l->jobs);
    dlb_cluster_view_clear(&l->cluster);
    free(l);
}
