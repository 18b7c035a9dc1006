#include "recording.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "err.h"
#include "log.h"
#include "vec.h"

typedef struct rec_event {
    dlb_event_t ev;
    int rank; /* the consumer's tie order: job, node, metrics, request */
} rec_event_t;

typedef struct rec_job {
    const char *uid;
    rec_event_t **evs; /* into the sorted array, this job's run */
    size_t evs_cnt;
    char scenario[DLB_NAME_MAX];
    int64_t created_ms;
    int has_job;
    dlb_runtime_sample_t *samples; /* shallow copies in time order: pods are borrowed */
    size_t samples_cnt;
    dlb_oom_plan_t *answered; /* OOMs answered so far in this replay */
    size_t answered_cnt, answered_cap;
} rec_job_t;

typedef struct rec_req {
    const dlb_plan_request_t *req;
    rec_job_t *job;
    int stage;
    dlb_job_state_t st;
    dlb_history_t hist; /* samples borrowed from the jobs: hist_release() */
    dlb_oom_plan_t *oom_plans;
    size_t oom_plans_cnt;
    int oom_plans_set; /* oom_plans fixed for this replay */
} rec_req_t;

struct dlb_recording {
    const dlb_conf_t *conf;
    rec_event_t *evs;
    size_t evs_cnt;
    rec_event_t **sorted;
    rec_job_t *jobs;
    size_t jobs_cnt;
    rec_req_t *reqs;
    size_t reqs_cnt;
};

static int type_rank(dlb_event_type_t t)
{
    switch (t) {
    case DLB_EV_JOB:
        return 0;
    case DLB_EV_NODE:
        return 1;
    case DLB_EV_RUNTIME:
        return 2;
    case DLB_EV_PLAN_REQUEST:
        return 3;
    default:
        return -1;
    }
}

static int stage_index(const char *stage)
{
    for (int i = 0; dlb_stages[i]; i++)
        if (!strcmp(dlb_stages[i], stage))
            return i;
    return -1;
}

static int cmp_event(const void *a, const void *b)
{
    const rec_event_t *x = *(rec_event_t *const *)a, *y = *(rec_event_t *const *)b;
    int64_t tx = dlb_event_time_ms(&x->ev), ty = dlb_event_time_ms(&y->ev);
    int c = strcmp(dlb_event_job_uid(&x->ev), dlb_event_job_uid(&y->ev));

    if (c)
        return c;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(dlb_event_id(&x->ev), dlb_event_id(&y->ev));
}

static int load_events(dlb_recording_t *rec, const char *path, const dlb_catalog_t *cat,
                       char *errstr, size_t size)
{
    FILE *fp = fopen(path, "r");
    char *line = NULL, sub[512];
    size_t cap = 0, lineno = 0, evs_cap = 0;
    ssize_t len;
    int err = 0;

    if (!fp)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: cannot open: %s", path,
                          strerror(errno));
    while ((len = getline(&line, &cap, fp)) >= 0) {
        rec_event_t *e;
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!len || line[0] == '#')
            continue;
        if (dlb_vec_reserve((void **)&rec->evs, &evs_cap, rec->evs_cnt + 1, sizeof(*rec->evs))) {
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        e = &rec->evs[rec->evs_cnt];
        memset(e, 0, sizeof(*e));
        /* Strict: a generated id or time would make a replay differ per run. */
        if ((err = dlb_json_to_event(cat, line, (size_t)len, 0, &e->ev, sub, sizeof(sub)))) {
            dlb_seterr(errstr, size, err, "%s:%zu: %s", path, lineno, sub);
            goto out;
        }
        if ((e->rank = type_rank(e->ev.type)) < 0) {
            dlb_warn("%s:%zu: a %s is not an input event; line skipped", path, lineno,
                     dlb_event_type_name(e->ev.type));
            dlb_event_clear(&e->ev);
            continue;
        }
        rec->evs_cnt++;
    }
    if (ferror(fp))
        err =
            dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: read error: %s", path, strerror(errno));
out:
    free(line);
    fclose(fp);
    return err;
}

/* Sort by job and time, cut into jobs, and give each job what history needs. */
static int index_jobs(dlb_recording_t *rec, char *errstr, size_t size)
{
    size_t i, start;

    if (!(rec->sorted = malloc((rec->evs_cnt ? rec->evs_cnt : 1) * sizeof(*rec->sorted))) ||
        !(rec->jobs = calloc(rec->evs_cnt ? rec->evs_cnt : 1, sizeof(*rec->jobs))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (i = 0; i < rec->evs_cnt; i++)
        rec->sorted[i] = &rec->evs[i];
    qsort(rec->sorted, rec->evs_cnt, sizeof(*rec->sorted), cmp_event);
    for (start = 0; start < rec->evs_cnt; start = i) {
        rec_job_t *j = &rec->jobs[rec->jobs_cnt++];
        size_t ns = 0;

        j->uid = dlb_event_job_uid(&rec->sorted[start]->ev);
        for (i = start; i < rec->evs_cnt && !strcmp(dlb_event_job_uid(&rec->sorted[i]->ev), j->uid);
             i++) {
            const dlb_event_t *ev = &rec->sorted[i]->ev;
            if (ev->type == DLB_EV_RUNTIME)
                ns++;
            if (ev->type == DLB_EV_JOB) {
                if (!j->has_job)
                    j->created_ms = ev->u.job.event_time_ms;
                j->has_job = 1;
                /* PostgreSQL's jobs row keeps the newest meta's scenario. */
                if (ev->u.job.has_meta)
                    snprintf(j->scenario, sizeof(j->scenario), "%s", ev->u.job.meta.scenario);
            }
        }
        j->evs = &rec->sorted[start];
        j->evs_cnt = i - start;
        if (ns && !(j->samples = malloc(ns * sizeof(*j->samples))))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < j->evs_cnt; k++)
            if (j->evs[k]->ev.type == DLB_EV_RUNTIME)
                j->samples[j->samples_cnt++] = j->evs[k]->ev.u.rt;
    }
    return 0;
}

/* Not dlb_history_clear(): the samples are borrowed from the jobs. */
static void hist_release(dlb_history_t *h)
{
    for (size_t i = 0; i < h->jobs_cnt; i++)
        free(h->jobs[i].oom_pods);
    free(h->jobs);
    memset(h, 0, sizeof(*h));
}

/* Newest first, ties by uid: ORDER BY created_ms DESC, uid. */
static int cmp_hist_job(const void *a, const void *b)
{
    const rec_job_t *x = *(const rec_job_t *const *)a, *y = *(const rec_job_t *const *)b;

    if (x->created_ms != y->created_ms)
        return x->created_ms > y->created_ms ? -1 : 1;
    return strcmp(x->uid, y->uid);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* One history job as of until_ms, as dlb_pg_load_history() reads it. */
static int hist_job(const rec_job_t *j, int64_t until_ms, int max_samples, dlb_hist_job_t *h)
{
    size_t first, end = 0, n = 0;

    snprintf(h->job_uid, sizeof(h->job_uid), "%s", j->uid);
    h->created_ms = j->created_ms;
    for (size_t k = 0; k < j->evs_cnt; k++) {
        const dlb_event_t *ev = &j->evs[k]->ev;
        if (dlb_event_time_ms(ev) >= until_ms)
            break;
        if (ev->type == DLB_EV_JOB && ev->u.job.has_state)
            snprintf(h->state, sizeof(h->state), "%s", ev->u.job.state);
        if (ev->type == DLB_EV_JOB && ev->u.job.has_exit_reason)
            snprintf(h->exit_reason, sizeof(h->exit_reason), "%s", ev->u.job.exit_reason);
        if (ev->type == DLB_EV_NODE && !strcmp(ev->u.node.kind, "oom_killed") &&
            ev->u.node.pod_name[0])
            n++;
    }
    h->completed = !strcmp(h->state, "succeeded") || !strcmp(h->exit_reason, "Completed");
    while (end < j->samples_cnt && j->samples[end].event_time_ms < until_ms)
        end++;
    first = end > (size_t)max_samples ? end - (size_t)max_samples : 0;
    h->samples = end > first ? &j->samples[first] : NULL;
    h->samples_cnt = end - first;
    if (!n)
        return 0;
    if (!(h->oom_pods = calloc(n, sizeof(*h->oom_pods))))
        return DLB_ERR_NOMEM;
    for (size_t k = 0; k < j->evs_cnt; k++) {
        const dlb_event_t *ev = &j->evs[k]->ev;
        if (dlb_event_time_ms(ev) >= until_ms)
            break;
        if (ev->type == DLB_EV_NODE && !strcmp(ev->u.node.kind, "oom_killed") &&
            ev->u.node.pod_name[0])
            snprintf(h->oom_pods[h->oom_pods_cnt++], DLB_ID_MAX, "%s", ev->u.node.pod_name);
    }
    /* DISTINCT pod names, sorted. */
    if (h->oom_pods_cnt)
        qsort(h->oom_pods, h->oom_pods_cnt, sizeof(*h->oom_pods), cmp_id);
    n = 0;
    for (size_t k = 0; k < h->oom_pods_cnt; k++)
        if (!n || strcmp(h->oom_pods[n - 1], h->oom_pods[k]))
            memmove(h->oom_pods[n++], h->oom_pods[k], DLB_ID_MAX);
    h->oom_pods_cnt = n;
    return 0;
}

/* scenario: the requesting job's as of the request (its folded state), as
 * the consumer passes st.job.meta.scenario; a meta that comes later in the
 * recording is not known yet. */
static int build_history(const dlb_recording_t *rec, const rec_job_t *self, const char *scenario,
                         int64_t until_ms, dlb_history_t *out)
{
    const dlb_conf_t *conf = rec->conf;
    int64_t from = until_ms - (int64_t)conf->history_hours * 3600000;
    const rec_job_t **cand;
    size_t n = 0;
    int err = 0;

    memset(out, 0, sizeof(*out));
    if (!scenario[0] || conf->history_max_jobs <= 0 || conf->history_hours <= 0)
        return 0;
    if (!(cand = malloc(rec->jobs_cnt * sizeof(*cand))))
        return DLB_ERR_NOMEM;
    for (size_t i = 0; i < rec->jobs_cnt; i++) {
        const rec_job_t *j = &rec->jobs[i];
        if (j != self && j->has_job && !strcmp(j->scenario, scenario) && j->created_ms >= from &&
            j->created_ms < until_ms)
            cand[n++] = j;
    }
    if (n)
        qsort(cand, n, sizeof(*cand), cmp_hist_job);
    if (n > (size_t)conf->history_max_jobs)
        n = (size_t)conf->history_max_jobs;
    if (n && !(out->jobs = calloc(n, sizeof(*out->jobs))))
        err = DLB_ERR_NOMEM;
    for (size_t i = 0; i < n && !err; i++) {
        out->jobs_cnt++;
        err = hist_job(cand[i], until_ms, 4 * conf->window_size, &out->jobs[i]);
    }
    free(cand);
    if (err)
        hist_release(out);
    return err;
}

/* Every plan request with the job state and history as of its time. */
static int build_requests(dlb_recording_t *rec, char *errstr, size_t size)
{
    size_t n = 0;

    for (size_t i = 0; i < rec->evs_cnt; i++)
        n += rec->evs[i].ev.type == DLB_EV_PLAN_REQUEST;
    if (!n)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "the recording holds no plan request");
    if (!(rec->reqs = calloc(n, sizeof(*rec->reqs))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (size_t ji = 0; ji < rec->jobs_cnt; ji++) {
        rec_job_t *j = &rec->jobs[ji];
        for (size_t k = 0; k < j->evs_cnt; k++) {
            const dlb_event_t *ev = &j->evs[k]->ev;
            rec_req_t *r;
            if (ev->type != DLB_EV_PLAN_REQUEST)
                continue;
            r = &rec->reqs[rec->reqs_cnt++];
            r->req = &ev->u.req;
            r->job = j;
            if ((r->stage = stage_index(r->req->stage)) < 0)
                return dlb_seterr(errstr, size, DLB_ERR_INVALID, "request %s: unknown stage %s",
                                  r->req->event_id, r->req->stage);
            /* Everything the consumer folded before the request: the job's
             * earlier events in merge order. */
            if (dlb_job_state_begin_rebuild(&r->st))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            for (size_t m = 0; m < k; m++)
                if (j->evs[m]->ev.type != DLB_EV_PLAN_REQUEST &&
                    dlb_job_state_apply(&r->st, &j->evs[m]->ev, rec->conf->window_size))
                    return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            dlb_job_state_end_rebuild(&r->st);
            /* The dlbrain set asks for history at more stages than dlrover;
             * dlrover's optimizers read none there, so one recording serves both. */
            if (dlb_opt_needs("dlbrain", r->req, &r->st).history &&
                build_history(rec, j, r->st.job.meta.scenario, r->req->event_time_ms, &r->hist))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        }
    }
    return 0;
}

int dlb_recording_load(dlb_recording_t **out, const char *path, const dlb_conf_t *conf,
                       const dlb_catalog_t *cat, char *errstr, size_t errstr_size)
{
    dlb_recording_t *rec;
    int err;

    *out = NULL;
    if (!(rec = calloc(1, sizeof(*rec))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    rec->conf = conf;
    if ((err = load_events(rec, path, cat, errstr, errstr_size)) ||
        (err = index_jobs(rec, errstr, errstr_size)) ||
        (err = build_requests(rec, errstr, errstr_size))) {
        dlb_recording_free(rec);
        return err;
    }
    *out = rec;
    return 0;
}

void dlb_recording_free(dlb_recording_t *rec)
{
    if (!rec)
        return;
    for (size_t i = 0; i < rec->reqs_cnt; i++) {
        dlb_job_state_clear(&rec->reqs[i].st);
        hist_release(&rec->reqs[i].hist);
        free(rec->reqs[i].oom_plans);
    }
    free(rec->reqs);
    for (size_t i = 0; i < rec->jobs_cnt; i++) {
        free(rec->jobs[i].samples);
        free(rec->jobs[i].answered);
    }
    free(rec->jobs);
    free(rec->sorted);
    for (size_t i = 0; i < rec->evs_cnt; i++)
        dlb_event_clear(&rec->evs[i].ev);
    free(rec->evs);
    free(rec);
}

size_t dlb_recording_events(const dlb_recording_t *rec)
{
    return rec->evs_cnt;
}

size_t dlb_recording_jobs(const dlb_recording_t *rec)
{
    return rec->jobs_cnt;
}

size_t dlb_recording_requests(const dlb_recording_t *rec)
{
    return rec->reqs_cnt;
}

const dlb_plan_request_t *dlb_recording_request(const dlb_recording_t *rec, size_t i)
{
    return rec->reqs[i].req;
}

int dlb_recording_stage(const dlb_recording_t *rec, size_t i)
{
    return rec->reqs[i].stage;
}

void dlb_recording_rewind(dlb_recording_t *rec)
{
    for (size_t i = 0; i < rec->jobs_cnt; i++)
        rec->jobs[i].answered_cnt = 0;
    for (size_t i = 0; i < rec->reqs_cnt; i++)
        rec->reqs[i].oom_plans_set = 0;
}

/* The job's OOMs answered before the request, oldest first, as
 * dlb_pg_load_oom_plans() gives them. */
static int fix_oom_plans(rec_req_t *r)
{
    const rec_job_t *j = r->job;

    free(r->oom_plans);
    r->oom_plans = NULL;
    r->oom_plans_cnt = 0;
    if (dlb_opt_job_has_oom(r->req, &r->st) && j->answered_cnt) {
        if (!(r->oom_plans = malloc(j->answered_cnt * sizeof(*r->oom_plans))))
            return DLB_ERR_NOMEM;
        for (size_t k = 0; k < j->answered_cnt; k++)
            if (j->answered[k].event_time_ms < r->req->event_time_ms)
                r->oom_plans[r->oom_plans_cnt++] = j->answered[k];
    }
    r->oom_plans_set = 1;
    return 0;
}

int dlb_recording_input(dlb_recording_t *rec, size_t i, const char *set,
                        dlb_oom_answers_t *answered, dlb_opt_input_t *in)
{
    rec_req_t *r = &rec->reqs[i];
    int err;

    if (!r->oom_plans_set && (err = fix_oom_plans(r)))
        return err;
    if (answered)
        memset(answered, 0, sizeof(*answered));
    memset(in, 0, sizeof(*in));
    in->req = r->req;
    in->job = &r->st;
    in->history = &r->hist;
    in->limits = &rec->conf->limits;
    in->tuning = &rec->conf->tuning;
    in->oom_plans = r->oom_plans;
    in->oom_plans_cnt = r->oom_plans_cnt;
    in->optimizer_set = set;
    in->answered = answered;
    return 0;
}

int dlb_recording_answer(dlb_recording_t *rec, size_t i, const dlb_plan_t *plan,
                         const dlb_oom_answers_t *answered)
{
    rec_req_t *r = &rec->reqs[i];
    rec_job_t *j = r->job;
    dlb_oom_plan_t *a;

    for (size_t k = 0; k < answered->cnt; k++) {
        if (dlb_vec_reserve((void **)&j->answered, &j->answered_cap, j->answered_cnt + 1,
                            sizeof(*j->answered)))
            return DLB_ERR_NOMEM;
        a = &j->answered[j->answered_cnt++];
        *a = answered->items[k];
        snprintf(a->plan_id, sizeof(a->plan_id), "%s", plan->plan_id);
        a->event_time_ms = r->req->event_time_ms;
    }
    return 0;
}
