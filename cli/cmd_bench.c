/* dlbrain bench: how fast plans are made.
 *
 *   optimizer  the optimizer core alone (dlb_router_plan, a pure function) on
 *              the inputs a recording of events gives each of its plan requests
 *   roundtrip  end to end: plan request produced -> plan received by a master,
 *              through a running `dlbrain optimizer`, against the raw Kafka
 *              produce -> consume round trip on the same broker in the same run
 *
 * scripts/bench makes the recording and starts the servers. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "catalog.h"
#include "cmd.h"
#include "codec.h"
#include "common.h"
#include "err.h"
#include "kafka.h"
#include "log.h"
#include "optimizer.h"
#include "state.h"

#define NSTAGES 6 /* dlb_stages[] */
/* Per-call durations kept for percentiles; calls beyond it still count. */
#define LAT_CAP ((size_t)4 << 20)

static void usage(FILE *fp)
{
    fprintf(fp, "usage: dlbrain bench optimizer --events FILE [options]\n"
                "       dlbrain bench roundtrip [options]\n\n"
                "optimizer: plans per second of the optimizer core alone (dlb_router_plan, one\n"
                "core, no I/O). FILE holds events as JSON lines ('dlbrain emit' input, with\n"
                "event_id and event_time_ms), e.g. from 'dlbrain simulate'. Each job's events\n"
                "are folded in event-time order (ties: job, node, metrics, requests, as the\n"
                "consumer merges them) with the job-state fold of the cache; each plan request\n"
                "gets the state as of its time, the job's OOMs already answered, and, when it\n"
                "needs it, the history PostgreSQL would give it: jobs of the same scenario\n"
                "created in the history.hours before it, newest history.max.jobs, samples and\n"
                "OOMs before it. Then dlb_router_plan runs on each stage's requests in turn.\n"
                "  -E, --events FILE     the recording (required)\n"
                "  -s, --seconds N       timed seconds per optimizer set (default 2), split\n"
                "                        evenly over the stages present\n"
                "  -S, --set NAME        dlrover or dlbrain (default: both)\n"
                "  -P, --plans-out FILE  also write each request's plan (JSON lines with\n"
                "                        \"set\")\n\n"
                "roundtrip: a producer sends plan requests at a steady rate into a running\n"
                "'dlbrain optimizer' (after job meta and a few runtime samples per job); a\n"
                "master subscribed to <env>.plans (read_committed, own group) records each\n"
                "request-produced -> plan-received latency. Baseline, first, in the same run:\n"
                "the same bytes at the same rate through a plain topic <env>.bench-raw (no\n"
                "optimizer), produce -> consume. Both use the same client settings (-X).\n"
                "  -r, --rate R          requests per second (default 100)\n"
                "  -s, --seconds S       seconds per path (default 10)\n"
                "  -n, --jobs N          jobs the requests go round (default 50)\n"
                "  -k, --samples K       runtime samples per job before the requests (default 3)\n"
                "      --stage STAGE     stage of the requests (default job_stage_running)\n"
                "  -w, --warmup-ms MS    longest wait for the optimizer to answer a first request\n"
                "                        of every job (default 60000)\n"
                "  -d, --drain-ms MS     wait after the last request for late answers (default\n"
                "                        10000); what is still missing then counts as lost\n"
                "  -l, --label TEXT      what the run is on, e.g. mock or real (printed)\n\n"
                "both:\n"
                "  -j, --json FILE       also write the results as JSON\n" CLI_COMMON_HELP);
}

static int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* ---- durations -------------------------------------------------------------- */

typedef struct lat {
    int64_t *v; /* ns */
    size_t n, cap;
    int64_t count, sum, max;
    int sorted;
} lat_t;

static int lat_add(lat_t *l, int64_t ns)
{
    l->count++;
    l->sum += ns;
    if (ns > l->max)
        l->max = ns;
    if (l->n >= LAT_CAP)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        int64_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return DLB_ERR_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = ns;
    l->sorted = 0;
    return 0;
}

/* Nearest-rank percentile, p in (0, 100]. */
static double lat_pct(lat_t *l, double p)
{
    size_t i;

    if (!l->n)
        return 0;
    if (!l->sorted) {
        qsort(l->v, l->n, sizeof(*l->v), cmp_i64);
        l->sorted = 1;
    }
    i = (size_t)(p / 100.0 * (double)l->n + 0.999999);
    i = i < 1 ? 0 : i - 1;
    return (double)l->v[i < l->n ? i : l->n - 1];
}

static double lat_mean(const lat_t *l)
{
    return l->count ? (double)l->sum / (double)l->count : 0;
}

static void lat_free(lat_t *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int write_json(const char *path, cJSON *root)
{
    char *text = cJSON_Print(root);
    int rc;

    if (!text) {
        dlb_err("--json %s: out of memory", path);
        return -1;
    }
    rc = cli_write_file(path, text);
    if (rc)
        dlb_err("--json %s: %s", path, strerror(errno));
    cJSON_free(text);
    return rc;
}

/* ==== optimizer ================================================================ */

typedef struct bev {
    dlb_event_t ev;
    int rank; /* the consumer's tie order: job, node, metrics, request */
} bev_t;

typedef struct bjob {
    const char *uid;
    bev_t **evs; /* into the sorted array, this job's run */
    size_t evs_cnt;
    char scenario[DLB_NAME_MAX];
    int64_t created_ms;
    int has_job;
    dlb_runtime_sample_t *samples; /* shallow copies in time order: pods are borrowed */
    size_t samples_cnt;
    dlb_oom_plan_t *answered; /* OOMs answered so far in the reference run */
    size_t answered_cnt, answered_cap;
} bjob_t;

typedef struct breq {
    const dlb_plan_request_t *req;
    bjob_t *job;
    int stage;
    dlb_job_state_t st;
    dlb_history_t hist; /* samples borrowed from the jobs: hist_release() */
    dlb_oom_plan_t *oom_plans;
    size_t oom_plans_cnt;
    char optimizer[64]; /* who answered in the reference run of the current set */
    int skip;           /* the router refused it */
} breq_t;

typedef struct stat {
    char name[64];
    size_t requests;
    lat_t lat;
} stat_t;

typedef struct obench {
    const dlb_conf_t *conf;
    const dlb_catalog_t *cat;
    bev_t *evs;
    size_t evs_cnt;
    bev_t **sorted;
    bjob_t *jobs;
    size_t jobs_cnt;
    breq_t *reqs;
    size_t reqs_cnt;
} obench_t;

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
    for (int i = 0; i < NSTAGES && dlb_stages[i]; i++)
        if (!strcmp(dlb_stages[i], stage))
            return i;
    return -1;
}

static int cmp_bev(const void *a, const void *b)
{
    const bev_t *x = *(bev_t *const *)a, *y = *(bev_t *const *)b;
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

static int load_events(obench_t *b, const char *path, char *errstr, size_t size)
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
        bev_t *e;
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!len || line[0] == '#')
            continue;
        if (b->evs_cnt == evs_cap) {
            size_t ncap = evs_cap ? 2 * evs_cap : 4096;
            bev_t *n = realloc(b->evs, ncap * sizeof(*n));
            if (!n) {
                err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
                goto out;
            }
            b->evs = n;
            evs_cap = ncap;
        }
        e = &b->evs[b->evs_cnt];
        memset(e, 0, sizeof(*e));
        /* Strict: a generated id or time would make the bench differ per run. */
        if ((err = dlb_json_to_event(b->cat, line, (size_t)len, 0, &e->ev, sub, sizeof(sub)))) {
            dlb_seterr(errstr, size, err, "%s:%zu: %s", path, lineno, sub);
            goto out;
        }
        if ((e->rank = type_rank(e->ev.type)) < 0) {
            dlb_warn("%s:%zu: a %s is not an input event; line skipped", path, lineno,
                     dlb_event_type_name(e->ev.type));
            dlb_event_clear(&e->ev);
            continue;
        }
        b->evs_cnt++;
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
static int index_jobs(obench_t *b, char *errstr, size_t size)
{
    size_t i, start;

    if (!(b->sorted = malloc((b->evs_cnt ? b->evs_cnt : 1) * sizeof(*b->sorted))) ||
        !(b->jobs = calloc(b->evs_cnt ? b->evs_cnt : 1, sizeof(*b->jobs))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (i = 0; i < b->evs_cnt; i++)
        b->sorted[i] = &b->evs[i];
    qsort(b->sorted, b->evs_cnt, sizeof(*b->sorted), cmp_bev);
    for (start = 0; start < b->evs_cnt; start = i) {
        bjob_t *j = &b->jobs[b->jobs_cnt++];
        size_t ns = 0;

        j->uid = dlb_event_job_uid(&b->sorted[start]->ev);
        for (i = start; i < b->evs_cnt && !strcmp(dlb_event_job_uid(&b->sorted[i]->ev), j->uid);
             i++) {
            const dlb_event_t *ev = &b->sorted[i]->ev;
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
        j->evs = &b->sorted[start];
        j->evs_cnt = i - start;
        if (ns && !(j->samples = malloc(ns * sizeof(*j->samples))))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < j->evs_cnt; k++)
            if (j->evs[k]->ev.type == DLB_EV_RUNTIME)
                j->samples[j->samples_cnt++] = j->evs[k]->ev.u.rt;
    }
    return 0;
}

/* The consumer loads history for a create request and for any request of a
 * job with an OOM (consumers/optimizer/consumer.c, wants_history). */
static int job_has_oom(const dlb_plan_request_t *req, const dlb_job_state_t *st)
{
    if (req->has_oom_pod)
        return 1;
    for (size_t i = 0; i < st->pods_cnt; i++)
        if (st->pods[i].oom_count > 0)
            return 1;
    return 0;
}

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
    const bjob_t *x = *(const bjob_t *const *)a, *y = *(const bjob_t *const *)b;

    if (x->created_ms != y->created_ms)
        return x->created_ms > y->created_ms ? -1 : 1;
    return strcmp(x->uid, y->uid);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* One history job as of until_ms, as dlb_pg_load_history() reads it. */
static int hist_job(const bjob_t *j, int64_t until_ms, int max_samples, dlb_hist_job_t *h)
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
    qsort(h->oom_pods, h->oom_pods_cnt, sizeof(*h->oom_pods), cmp_id);
    n = 0;
    for (size_t k = 0; k < h->oom_pods_cnt; k++)
        if (!n || strcmp(h->oom_pods[n - 1], h->oom_pods[k]))
            memmove(h->oom_pods[n++], h->oom_pods[k], DLB_ID_MAX);
    h->oom_pods_cnt = n;
    return 0;
}

static int build_history(const obench_t *b, const bjob_t *self, int64_t until_ms,
                         dlb_history_t *out)
{
    const dlb_conf_t *conf = b->conf;
    int64_t from = until_ms - (int64_t)conf->history_hours * 3600000;
    const bjob_t **cand;
    size_t n = 0;
    int err = 0;

    memset(out, 0, sizeof(*out));
    if (!self->scenario[0] || conf->history_max_jobs <= 0 || conf->history_hours <= 0)
        return 0;
    if (!(cand = malloc(b->jobs_cnt * sizeof(*cand))))
        return DLB_ERR_NOMEM;
    for (size_t i = 0; i < b->jobs_cnt; i++) {
        const bjob_t *j = &b->jobs[i];
        if (j != self && j->has_job && !strcmp(j->scenario, self->scenario) &&
            j->created_ms >= from && j->created_ms < until_ms)
            cand[n++] = j;
    }
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
static int build_requests(obench_t *b, char *errstr, size_t size)
{
    size_t n = 0;

    for (size_t i = 0; i < b->evs_cnt; i++)
        n += b->evs[i].ev.type == DLB_EV_PLAN_REQUEST;
    if (!n)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "the recording holds no plan request");
    if (!(b->reqs = calloc(n, sizeof(*b->reqs))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (size_t ji = 0; ji < b->jobs_cnt; ji++) {
        bjob_t *j = &b->jobs[ji];
        for (size_t k = 0; k < j->evs_cnt; k++) {
            const dlb_event_t *ev = &j->evs[k]->ev;
            breq_t *r;
            if (ev->type != DLB_EV_PLAN_REQUEST)
                continue;
            r = &b->reqs[b->reqs_cnt++];
            r->req = &ev->u.req;
            r->job = j;
            if ((r->stage = stage_index(r->req->stage)) < 0)
                return dlb_seterr(errstr, size, DLB_ERR_INVALID, "request %s: unknown stage %s",
                                  r->req->event_id, r->req->stage);
            /* Everything the consumer folded before the request: the job's
             * earlier events in merge order. */
            for (size_t m = 0; m < k; m++)
                if (j->evs[m]->ev.type != DLB_EV_PLAN_REQUEST &&
                    dlb_job_state_apply(&r->st, &j->evs[m]->ev, b->conf->window_size))
                    return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            if ((!strcmp(r->req->stage, DLB_STAGE_CREATE) || job_has_oom(r->req, &r->st)) &&
                build_history(b, j, r->req->event_time_ms, &r->hist))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        }
    }
    return 0;
}

static void input_of(const obench_t *b, const breq_t *r, const char *set, dlb_oom_plan_t *answered,
                     dlb_opt_input_t *in)
{
    memset(in, 0, sizeof(*in));
    in->req = r->req;
    in->job = &r->st;
    in->history = &r->hist;
    in->limits = &b->conf->limits;
    in->tuning = &b->conf->tuning;
    in->oom_plans = r->oom_plans;
    in->oom_plans_cnt = r->oom_plans_cnt;
    in->optimizer_set = set;
    in->answered = answered;
}

/* Plan every request once, in each job's order, as the consumer would: the
 * OOMs a plan answers are what later requests of the job see. Fills each
 * request's oom_plans and optimizer for the timed runs. */
static int reference_run(obench_t *b, const char *set, FILE *plans_out, char *errstr, size_t size)
{
    char sub[512];

    for (size_t i = 0; i < b->jobs_cnt; i++)
        b->jobs[i].answered_cnt = 0;
    for (size_t i = 0; i < b->reqs_cnt; i++) {
        breq_t *r = &b->reqs[i];
        bjob_t *j = r->job;
        dlb_event_t pe = {.type = DLB_EV_PLAN};
        dlb_oom_plan_t answered;
        dlb_opt_input_t in;
        int err;

        free(r->oom_plans);
        r->oom_plans = NULL;
        r->oom_plans_cnt = 0;
        if (job_has_oom(r->req, &r->st) && j->answered_cnt) {
            if (!(r->oom_plans = malloc(j->answered_cnt * sizeof(*r->oom_plans))))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            for (size_t k = 0; k < j->answered_cnt; k++)
                if (j->answered[k].event_time_ms < r->req->event_time_ms)
                    r->oom_plans[r->oom_plans_cnt++] = j->answered[k];
        }
        memset(&answered, 0, sizeof(answered));
        input_of(b, r, set, &answered, &in);
        r->skip = 0;
        if ((err = dlb_router_plan(&in, &pe.u.plan, sub, sizeof(sub)))) {
            if (err != DLB_ERR_INVALID)
                return dlb_seterr(errstr, size, err, "set %s, request %s: %s", set,
                                  r->req->event_id, sub);
            dlb_warn("set %s, request %s: %s; left out of the timing", set, r->req->event_id, sub);
            r->skip = 1;
            continue;
        }
        snprintf(r->optimizer, sizeof(r->optimizer), "%s", pe.u.plan.optimizer);
        if (answered.pod_name[0]) {
            if (j->answered_cnt == j->answered_cap) {
                size_t cap = j->answered_cap ? 2 * j->answered_cap : 4;
                dlb_oom_plan_t *a = realloc(j->answered, cap * sizeof(*a));
                if (!a) {
                    dlb_event_clear(&pe);
                    return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
                }
                j->answered = a;
                j->answered_cap = cap;
            }
            snprintf(answered.plan_id, sizeof(answered.plan_id), "%s", pe.u.plan.plan_id);
            answered.event_time_ms = r->req->event_time_ms;
            j->answered[j->answered_cnt++] = answered;
        }
        if (plans_out) {
            char *text = NULL;
            cJSON *o = NULL;
            if ((err = dlb_event_to_json(b->cat, &pe, &text, sub, sizeof(sub))) ||
                !(o = cJSON_Parse(text)) || !cJSON_AddStringToObject(o, "set", set)) {
                free(text);
                cJSON_Delete(o);
                dlb_event_clear(&pe);
                return dlb_seterr(errstr, size, err ? err : DLB_ERR_NOMEM, "plan %s as JSON: %s",
                                  pe.u.plan.plan_id, err ? sub : "out of memory");
            }
            free(text);
            if (!(text = cJSON_PrintUnformatted(o)) || fprintf(plans_out, "%s\n", text) < 0) {
                cJSON_free(text);
                cJSON_Delete(o);
                dlb_event_clear(&pe);
                return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "writing plans failed");
            }
            cJSON_free(text);
            cJSON_Delete(o);
        }
        dlb_event_clear(&pe);
    }
    return 0;
}

static stat_t *stat_get(stat_t *stats, size_t *cnt, size_t cap, const char *name)
{
    for (size_t i = 0; i < *cnt; i++)
        if (!strcmp(stats[i].name, name))
            return &stats[i];
    if (*cnt >= cap)
        return NULL;
    memset(&stats[*cnt], 0, sizeof(stats[*cnt]));
    snprintf(stats[*cnt].name, sizeof(stats[*cnt].name), "%s", name);
    return &stats[(*cnt)++];
}

static cJSON *stat_json(stat_t *s, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    double mean = lat_mean(&s->lat);

    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, key, s->name);
    cJSON_AddNumberToObject(o, "requests", (double)s->requests);
    cJSON_AddNumberToObject(o, "calls", (double)s->lat.count);
    cJSON_AddNumberToObject(o, "plans_per_s", mean > 0 ? 1e9 / mean : 0);
    cJSON_AddNumberToObject(o, "mean_us", mean / 1e3);
    cJSON_AddNumberToObject(o, "p50_us", lat_pct(&s->lat, 50) / 1e3);
    cJSON_AddNumberToObject(o, "p99_us", lat_pct(&s->lat, 99) / 1e3);
    cJSON_AddNumberToObject(o, "max_us", (double)s->lat.max / 1e3);
    return o;
}

static void stat_print(const char *set, const char *label, stat_t *s)
{
    double mean = lat_mean(&s->lat);

    printf("%-8s %-58s %8zu %10.0f %9.2f %9.2f %9.2f %11" PRId64 "\n", set, label, s->requests,
           mean > 0 ? 1e9 / mean : 0, mean / 1e3, lat_pct(&s->lat, 50) / 1e3,
           lat_pct(&s->lat, 99) / 1e3, s->lat.count);
}

/* Time dlb_router_plan on each stage's requests in turn, seconds split evenly
 * over the stages present. Per call: the plan and its release. */
static int timed_run(obench_t *b, const char *set, double seconds, cJSON *jsets, char *errstr,
                     size_t size)
{
    stat_t stages[NSTAGES], opts[64];
    size_t opts_cnt = 0, present = 0, counted = 0;
    double mix_ns = 0;
    char sub[512];
    int err = 0;
    cJSON *jset = NULL, *arr;

    memset(stages, 0, sizeof(stages));
    for (int s = 0; s < NSTAGES; s++)
        snprintf(stages[s].name, sizeof(stages[s].name), "%s", dlb_stages[s]);
    for (size_t i = 0; i < b->reqs_cnt; i++)
        if (!b->reqs[i].skip) {
            stat_t *o = stat_get(opts, &opts_cnt, 64, b->reqs[i].optimizer);
            if (o)
                o->requests++;
            present += stages[b->reqs[i].stage].requests++ == 0;
        }
    for (int s = 0; s < NSTAGES && !cli_stop; s++) {
        int64_t budget = (int64_t)(seconds * 1e9 / (double)(present ? present : 1)), t_end;
        if (!stages[s].requests)
            continue;
        t_end = mono_ns() + budget;
        do {
            for (size_t i = 0; i < b->reqs_cnt; i++) {
                breq_t *r = &b->reqs[i];
                dlb_event_t pe = {.type = DLB_EV_PLAN};
                dlb_oom_plan_t answered;
                dlb_opt_input_t in;
                stat_t *o;
                int64_t t0, t1;
                if (r->stage != s || r->skip)
                    continue;
                memset(&answered, 0, sizeof(answered));
                input_of(b, r, set, &answered, &in);
                t0 = mono_ns();
                err = dlb_router_plan(&in, &pe.u.plan, sub, sizeof(sub));
                dlb_event_clear(&pe);
                t1 = mono_ns();
                if (err) {
                    err = dlb_seterr(errstr, size, err, "set %s, request %s: %s", set,
                                     r->req->event_id, sub);
                    goto out;
                }
                o = stat_get(opts, &opts_cnt, 64, r->optimizer);
                if (lat_add(&stages[s].lat, t1 - t0) || (o && lat_add(&o->lat, t1 - t0))) {
                    err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
                    goto out;
                }
            }
        } while (mono_ns() < t_end && !cli_stop);
    }
    /* "all": the mean time per plan weighted by the recording's stage mix. */
    for (int s = 0; s < NSTAGES; s++)
        if (stages[s].requests && stages[s].lat.count) {
            mix_ns += (double)stages[s].requests * lat_mean(&stages[s].lat);
            counted += stages[s].requests;
        }
    mix_ns = counted ? mix_ns / (double)counted : 0;
    printf("%-8s %-58s %8zu %10.0f %9.2f %9s %9s %11s\n", set, "all (the recording's stage mix)",
           counted, mix_ns > 0 ? 1e9 / mix_ns : 0, mix_ns / 1e3, "-", "-", "-");
    for (int s = 0; s < NSTAGES; s++)
        if (stages[s].requests)
            stat_print(set, stages[s].name, &stages[s]);
    for (size_t i = 0; i < opts_cnt; i++) {
        char label[sizeof(opts[i].name) + 16];
        snprintf(label, sizeof(label), "  answered by %.63s", opts[i].name);
        stat_print(set, label, &opts[i]);
    }
    if (jsets) {
        if (!(jset = cJSON_CreateObject()) || !cJSON_AddItemToArray(jsets, jset)) {
            cJSON_Delete(jset);
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        cJSON_AddStringToObject(jset, "set", set);
        cJSON_AddNumberToObject(jset, "requests", (double)counted);
        cJSON_AddNumberToObject(jset, "plans_per_s", mix_ns > 0 ? 1e9 / mix_ns : 0);
        cJSON_AddNumberToObject(jset, "mean_us", mix_ns / 1e3);
        if ((arr = cJSON_AddArrayToObject(jset, "stages")))
            for (int s = 0; s < NSTAGES; s++)
                if (stages[s].requests)
                    cJSON_AddItemToArray(arr, stat_json(&stages[s], "stage"));
        if ((arr = cJSON_AddArrayToObject(jset, "optimizers")))
            for (size_t i = 0; i < opts_cnt; i++)
                cJSON_AddItemToArray(arr, stat_json(&opts[i], "optimizer"));
    }
out:
    for (int s = 0; s < NSTAGES; s++)
        lat_free(&stages[s].lat);
    for (size_t i = 0; i < opts_cnt; i++)
        lat_free(&opts[i].lat);
    return err;
}

static void obench_free(obench_t *b)
{
    for (size_t i = 0; i < b->reqs_cnt; i++) {
        dlb_job_state_clear(&b->reqs[i].st);
        hist_release(&b->reqs[i].hist);
        free(b->reqs[i].oom_plans);
    }
    free(b->reqs);
    for (size_t i = 0; i < b->jobs_cnt; i++) {
        free(b->jobs[i].samples);
        free(b->jobs[i].answered);
    }
    free(b->jobs);
    free(b->sorted);
    for (size_t i = 0; i < b->evs_cnt; i++)
        dlb_event_clear(&b->evs[i].ev);
    free(b->evs);
}

static int bench_optimizer(const dlb_conf_t *conf, const char *events, const char *only_set,
                           double seconds, const char *plans_path, const char *json_path)
{
    static const char *const sets[] = {"dlrover", "dlbrain", NULL};
    obench_t b = {0};
    dlb_catalog_t *cat = NULL;
    FILE *plans_out = NULL;
    cJSON *root = NULL, *jsets = NULL;
    char errstr[512];
    int rc = 1, err;

    b.conf = conf;
    if ((err = dlb_catalog_new(&cat, errstr, sizeof(errstr))))
        goto fail;
    b.cat = cat;
    if ((err = load_events(&b, events, errstr, sizeof(errstr))) ||
        (err = index_jobs(&b, errstr, sizeof(errstr))) ||
        (err = build_requests(&b, errstr, sizeof(errstr))))
        goto fail;
    if (plans_path && !(plans_out = fopen(plans_path, "w"))) {
        dlb_err("--plans-out %s: %s", plans_path, strerror(errno));
        goto out;
    }
    if (json_path) {
        if (!(root = cJSON_CreateObject()) || !(jsets = cJSON_AddArrayToObject(root, "sets"))) {
            dlb_err("out of memory");
            goto out;
        }
        cJSON_AddStringToObject(root, "benchmark", "optimizer");
        cJSON_AddStringToObject(root, "events_file", events);
        cJSON_AddNumberToObject(root, "events", (double)b.evs_cnt);
        cJSON_AddNumberToObject(root, "jobs", (double)b.jobs_cnt);
        cJSON_AddNumberToObject(root, "plan_requests", (double)b.reqs_cnt);
        cJSON_AddNumberToObject(root, "seconds_per_set", seconds);
    }
    printf("optimizer bench: %s: %zu events, %zu jobs, %zu plan requests; %.3g s per set;\n"
           "window %d samples, history %d h / %d jobs; one core, per call: dlb_router_plan and "
           "the plan's release\n\n",
           events, b.evs_cnt, b.jobs_cnt, b.reqs_cnt, seconds, conf->window_size,
           conf->history_hours, conf->history_max_jobs);
    printf("%-8s %-58s %8s %10s %9s %9s %9s %11s\n", "SET", "STAGE / OPTIMIZER", "REQUESTS",
           "PLANS/S", "MEAN_US", "P50_US", "P99_US", "CALLS");
    for (int i = 0; sets[i] && !cli_stop; i++) {
        if (only_set && strcmp(only_set, sets[i]))
            continue;
        if ((err = reference_run(&b, sets[i], plans_out, errstr, sizeof(errstr))) ||
            (err = timed_run(&b, sets[i], seconds, jsets, errstr, sizeof(errstr))))
            goto fail;
        fflush(stdout);
    }
    if (plans_out && fclose(plans_out)) {
        plans_out = NULL;
        dlb_err("--plans-out %s: %s", plans_path, strerror(errno));
        goto out;
    }
    plans_out = NULL;
    if (root && write_json(json_path, root))
        goto out;
    rc = cli_stop ? 1 : 0;
    goto out;
fail:
    dlb_err("%s", errstr);
out:
    if (plans_out)
        fclose(plans_out);
    cJSON_Delete(root);
    obench_free(&b);
    if (cat)
        dlb_catalog_destroy(cat);
    return rc;
}

/* ==== roundtrip ================================================================ */

typedef struct path {
    const char *name;
    char topic[256];       /* where the requests go */
    char prefix[64];       /* event id prefix of this path's requests */
    rd_kafka_t *consumer;  /* where the answers come from */
    dlb_event_type_t want; /* the answer's type: a plan, or the request itself */
    long n;                /* requests to send */
    int64_t *sent_ns;      /* per request, 0 = not sent */
    unsigned char *got;
    lat_t lat;
    long sent, received, repeats;
} path_t;

typedef struct rbench {
    const dlb_conf_t *conf;
    const dlb_catalog_t *cat;
    rd_kafka_t *producer;
    char tag[32];
    long jobs, samples;
    const char *stage;
    size_t msg_bytes;
} rbench_t;

static void job_uid(const rbench_t *r, long i, char *buf, size_t size)
{
    snprintf(buf, size, "bench-%s-j%04ld", r->tag, i);
}

/* Encode and produce one event. */
static int produce(rbench_t *r, const char *topic, dlb_event_t *ev, size_t *len_out, char *errstr,
                   size_t size)
{
    void *buf = NULL;
    size_t len = 0;
    int err;

    if ((err = dlb_codec_encode(r->cat, ev, &buf, &len, errstr, size)))
        return err;
    while ((err = dlb_kafka_produce(r->producer, topic, dlb_event_job_uid(ev), buf, len, errstr,
                                    size)) &&
           rd_kafka_outq_len(r->producer) > 0 && !cli_stop)
        rd_kafka_poll(r->producer, 10); /* queue full: let deliveries drain */
    free(buf);
    if (len_out)
        *len_out = len;
    return err;
}

/* Meta and a few runtime samples per job, in the past, so the requests find
 * a job to plan for: 2 PS and 4 workers each. */
static int setup_jobs(rbench_t *r, char *errstr, size_t size)
{
    char topic[256];
    int64_t now = wall_ms();
    dlb_pod_usage_t pods[6];
    int err;

    for (long i = 0; i < r->jobs; i++) {
        dlb_event_t ev = {.type = DLB_EV_JOB};
        dlb_job_event_t *je = &ev.u.job;
        snprintf(je->event_id, sizeof(je->event_id), "bench-%s-j%04ld-meta", r->tag, i);
        je->event_time_ms = now - (r->samples + 2) * 15000;
        job_uid(r, i, je->job_uid, sizeof(je->job_uid));
        je->has_meta = 1;
        snprintf(je->meta.name, sizeof(je->meta.name), "bench-%ld", i);
        snprintf(je->meta.user, sizeof(je->meta.user), "bench");
        snprintf(je->meta.scenario, sizeof(je->meta.scenario), "bench-roundtrip");
        snprintf(je->meta.framework, sizeof(je->meta.framework), "tensorflow");
        je->has_state = 1;
        snprintf(je->state, sizeof(je->state), "running");
        if ((err = produce(r, dlb_conf_topic(r->conf, DLB_TOPIC_JOB_EVENTS, topic, sizeof(topic)),
                           &ev, NULL, errstr, size)))
            return err;
        for (long k = 0; k < r->samples; k++) {
            dlb_event_t s = {.type = DLB_EV_RUNTIME};
            dlb_runtime_sample_t *rt = &s.u.rt;
            memset(pods, 0, sizeof(pods));
            for (int p = 0; p < 6; p++) {
                int ps = p < 2;
                snprintf(pods[p].name, sizeof(pods[p].name), "%.100s-%s-%d", je->job_uid,
                         ps ? "ps" : "worker", ps ? p : p - 2);
                snprintf(pods[p].type, sizeof(pods[p].type), "%s", ps ? "ps" : "worker");
                pods[p].index = ps ? p : p - 2;
                pods[p].cpu_used = ps ? 4.0 : 3.0;
                pods[p].cpu_requested = 8.0;
                pods[p].memory_used = (ps ? 12 : 6) * DLB_GIB;
                pods[p].memory_requested = 16 * DLB_GIB;
                pods[p].has_speed = !ps;
                pods[p].speed = ps ? 0 : 2.5;
            }
            snprintf(rt->event_id, sizeof(rt->event_id), "bench-%s-j%04ld-s%ld", r->tag, i, k);
            rt->event_time_ms = now - (r->samples - k) * 15000;
            snprintf(rt->job_uid, sizeof(rt->job_uid), "%s", je->job_uid);
            rt->global_step = 1000 + 150 * k;
            rt->speed = 10.0;
            rt->pods = pods;
            rt->pods_cnt = 6;
            if ((err = produce(r, dlb_conf_topic(r->conf, DLB_TOPIC_METRICS, topic, sizeof(topic)),
                               &s, NULL, errstr, size)))
                return err;
        }
    }
    return dlb_kafka_flush(r->producer, 30000, errstr, size);
}

static int send_request(rbench_t *r, path_t *p, const char *id, long job, char *errstr, size_t size,
                        int64_t *sent_ns)
{
    dlb_event_t ev = {.type = DLB_EV_PLAN_REQUEST};
    dlb_plan_request_t *q = &ev.u.req;
    size_t len;
    int err;

    snprintf(q->event_id, sizeof(q->event_id), "%s", id);
    q->event_time_ms = wall_ms();
    job_uid(r, job, q->job_uid, sizeof(q->job_uid));
    snprintf(q->stage, sizeof(q->stage), "%s", r->stage);
    if (sent_ns)
        *sent_ns = mono_ns();
    if ((err = produce(r, p->topic, &ev, &len, errstr, size)))
        return err;
    r->msg_bytes = len;
    return 0;
}

/* The request id an answer is for, or NULL when it is not this path's. */
static const char *answer_id(const path_t *p, const dlb_event_t *ev)
{
    const char *id;

    if (ev->type != p->want)
        return NULL;
    id = ev->type == DLB_EV_PLAN ? ev->u.plan.trigger_event_id : ev->u.req.event_id;
    return strncmp(id, p->prefix, strlen(p->prefix)) ? NULL : id;
}

/* Poll one answer (waiting at most timeout_ms). @returns its request id in
 * id (empty when none or not ours) and its receive time. */
static void poll_answer(rbench_t *r, path_t *p, int timeout_ms, char *id, size_t id_size,
                        int64_t *at)
{
    rd_kafka_message_t *m;
    dlb_event_t ev = {0};
    char sub[256];
    const char *a;

    id[0] = '\0';
    rd_kafka_poll(r->producer, 0);
    if (!(m = rd_kafka_consumer_poll(p->consumer, timeout_ms)))
        return;
    *at = mono_ns();
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            dlb_warn("kafka: %s; continuing", rd_kafka_message_errstr(m));
    } else if (!dlb_codec_decode(r->cat, m->payload, m->len, &ev, sub, sizeof(sub)) &&
               (a = answer_id(p, &ev))) {
        snprintf(id, id_size, "%s", a);
    }
    dlb_event_clear(&ev);
    rd_kafka_message_destroy(m);
}

/* Until every job got an answer to a first request (a plan path) or one probe
 * came back (raw): the consumer is assigned and at the end, the optimizer is
 * up and has the jobs. Unanswered firsts are sent again (new ids) every 3 s:
 * with auto.offset.reset=latest an answer written before the assignment is
 * never seen. */
static int warm_up(rbench_t *r, path_t *p, long firsts, long timeout_ms, char *errstr, size_t size)
{
    unsigned char *done = calloc((size_t)firsts, 1);
    int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000, resend = 0;
    long left = firsts, attempt = 0;
    char id[DLB_ID_MAX], want[DLB_ID_MAX];
    int err = 0;

    if (!done)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    while (left > 0 && !cli_stop) {
        int64_t now = mono_ns(), at;
        if (now > deadline) {
            err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                             "%s: %ld of %ld warm-up request(s) unanswered after %ld ms (is "
                             "'dlbrain optimizer' running on these brokers?)",
                             p->name, left, firsts, timeout_ms);
            goto out;
        }
        if (now >= resend) {
            for (long i = 0; i < firsts; i++) {
                if (done[i])
                    continue;
                snprintf(want, sizeof(want), "%sw%ld-%ld", p->prefix, i, attempt);
                if ((err = send_request(r, p, want, i, errstr, size, NULL)))
                    goto out;
            }
            attempt++;
            resend = now + (int64_t)3000 * 1000000;
        }
        poll_answer(r, p, 100, id, sizeof(id), &at);
        if (id[0] == '\0' || strncmp(id + strlen(p->prefix), "w", 1))
            continue;
        {
            long i = strtol(id + strlen(p->prefix) + 1, NULL, 10);
            if (i >= 0 && i < firsts && !done[i]) {
                done[i] = 1;
                left--;
            }
        }
    }
    /* Answers to re-sent firsts may still come: they are told apart by id. */
out:
    free(done);
    return err;
}

/* Send p->n requests at rate/s and record each one's round trip. */
static int run_path(rbench_t *r, path_t *p, double rate, long drain_ms, char *errstr, size_t size)
{
    int64_t start = mono_ns(), last_sent = 0;
    long next = 0;
    char id[DLB_ID_MAX], want[DLB_ID_MAX];
    int err;

    while (!cli_stop) {
        int64_t now = mono_ns(), at = 0, due;
        int timeout;
        while (next < p->n && start + (int64_t)((double)next * 1e9 / rate) <= now) {
            snprintf(want, sizeof(want), "%sq%ld", p->prefix, next);
            if ((err = send_request(r, p, want, next % r->jobs, errstr, size, &p->sent_ns[next])))
                return err;
            p->sent++;
            next++;
            last_sent = mono_ns();
            now = last_sent;
        }
        if (next >= p->n && (p->received >= p->n || now - last_sent > (int64_t)drain_ms * 1000000))
            break;
        due = next < p->n ? start + (int64_t)((double)next * 1e9 / rate) : now + 100000000;
        timeout = (int)((due - now) / 1000000);
        timeout = timeout < 0 ? 0 : timeout > 100 ? 100 : timeout;
        poll_answer(r, p, timeout, id, sizeof(id), &at);
        if (id[0] && id[strlen(p->prefix)] == 'q') {
            long i = strtol(id + strlen(p->prefix) + 1, NULL, 10);
            if (i < 0 || i >= p->n || !p->sent_ns[i])
                continue;
            if (p->got[i]) {
                p->repeats++; /* at least once on the mock cluster */
                continue;
            }
            p->got[i] = 1;
            p->received++;
            if (lat_add(&p->lat, at - p->sent_ns[i]))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        }
    }
    return 0;
}

static int create_topic(rd_kafka_t *rk, const char *name, int partitions, int replication,
                        char *errstr, size_t size)
{
    rd_kafka_NewTopic_t *nt;
    rd_kafka_queue_t *q;
    rd_kafka_AdminOptions_t *opts;
    rd_kafka_event_t *ev;
    const rd_kafka_topic_result_t **res;
    size_t cnt;
    char sub[512];
    int err = 0;

    if (!(nt = rd_kafka_NewTopic_new(name, partitions, replication, sub, sizeof(sub))))
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "topic %s: %s", name, sub);
    q = rd_kafka_queue_new(rk);
    opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(opts, 5000, NULL, 0);
    rd_kafka_AdminOptions_set_operation_timeout(opts, 5000, NULL, 0);
    rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
    if (!(ev = rd_kafka_queue_poll(q, 7000))) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "creating topic %s: no answer", name);
    } else if (rd_kafka_event_error(ev)) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "creating topic %s: %s", name,
                         rd_kafka_event_error_string(ev));
    } else {
        res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
        for (size_t i = 0; i < cnt; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                err = dlb_seterr(errstr, size, DLB_ERR_GENERIC, "creating topic %s: %s", name,
                                 rd_kafka_topic_result_error_string(res[i]));
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    return err;
}

static int subscribe(const dlb_conf_t *conf, const char *topic, const char *tag, const char *role,
                     rd_kafka_t **out, char *errstr, size_t size)
{
    /* A master's settings: read_committed, its own group, only what comes
     * from now on. */
    static const char *const extra[] = {"isolation.level", "read_committed", "auto.offset.reset",
                                        "latest", NULL};
    rd_kafka_topic_partition_list_t *sub;
    char group[256];
    rd_kafka_resp_err_t e;
    int err;

    snprintf(group, sizeof(group), "%s.bench.%s.%s", conf->env, tag, role);
    if ((err = dlb_kafka_consumer_new(conf, group, extra, out, errstr, size)))
        return err;
    sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    e = rd_kafka_subscribe(*out, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "subscribing to %s: %s", topic,
                          rd_kafka_err2str(e));
    return 0;
}

static void path_free(path_t *p)
{
    if (p->consumer) {
        rd_kafka_consumer_close(p->consumer);
        rd_kafka_destroy(p->consumer);
    }
    free(p->sent_ns);
    free(p->got);
    lat_free(&p->lat);
}

static cJSON *path_json(path_t *p)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "path", p->name);
    cJSON_AddStringToObject(o, "topic", p->topic);
    cJSON_AddNumberToObject(o, "sent", (double)p->sent);
    cJSON_AddNumberToObject(o, "received", (double)p->received);
    cJSON_AddNumberToObject(o, "lost", (double)(p->sent - p->received));
    cJSON_AddNumberToObject(o, "repeats", (double)p->repeats);
    cJSON_AddNumberToObject(o, "p50_ms", lat_pct(&p->lat, 50) / 1e6);
    cJSON_AddNumberToObject(o, "p99_ms", lat_pct(&p->lat, 99) / 1e6);
    cJSON_AddNumberToObject(o, "max_ms", (double)p->lat.max / 1e6);
    cJSON_AddNumberToObject(o, "mean_ms", lat_mean(&p->lat) / 1e6);
    return o;
}

static void path_print(path_t *p)
{
    printf("%-36s %7ld %9ld %6ld %9.2f %9.2f %9.2f %9.2f\n", p->name, p->sent, p->received,
           p->sent - p->received, lat_pct(&p->lat, 50) / 1e6, lat_pct(&p->lat, 99) / 1e6,
           (double)p->lat.max / 1e6, lat_mean(&p->lat) / 1e6);
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

static int bench_roundtrip(const dlb_conf_t *conf, double rate, long seconds, long jobs,
                           long samples, const char *stage, long warmup_ms, long drain_ms,
                           const char *label, const char *json_path)
{
    rbench_t r = {0};
    path_t raw = {.name = "kafka produce -> consume (raw topic)", .want = DLB_EV_PLAN_REQUEST};
    path_t plans = {.name = "plan request -> plan (optimizer)", .want = DLB_EV_PLAN};
    path_t *paths[] = {&raw, &plans};
    dlb_catalog_t *cat = NULL;
    cJSON *root = NULL;
    char errstr[512], topic[256];
    long n = (long)(rate * (double)seconds);
    int rc = 1, err;

    r.conf = conf;
    r.jobs = jobs;
    r.samples = samples;
    r.stage = stage;
    snprintf(r.tag, sizeof(r.tag), "%lx%x", (unsigned long)time(NULL), (unsigned)getpid());
    cli_signals_install();
    if ((err = dlb_catalog_new(&cat, errstr, sizeof(errstr))))
        goto fail;
    r.cat = cat;
    if ((err = dlb_kafka_producer_new(conf, NULL, &r.producer, errstr, sizeof(errstr))))
        goto fail;
    dlb_conf_topic(conf, "bench-raw", raw.topic, sizeof(raw.topic));
    dlb_conf_topic(conf, DLB_TOPIC_PLAN_REQUESTS, plans.topic, sizeof(plans.topic));
    snprintf(raw.prefix, sizeof(raw.prefix), "bench-%s-x", r.tag);
    snprintf(plans.prefix, sizeof(plans.prefix), "bench-%s-", r.tag);
    /* The mock cluster of librdkafka 2.0 does not answer CreateTopics; it
     * creates a topic when a producer first asks for its metadata. */
    if (create_topic(r.producer, raw.topic, conf->partitions, conf->replication, errstr,
                     sizeof(errstr)))
        dlb_warn("%s; relying on the broker creating %s on first use", errstr, raw.topic);
    snprintf(topic, sizeof(topic), "%sc", raw.prefix);
    if ((err = send_request(&r, &raw, topic, 0, errstr, sizeof(errstr), NULL)) ||
        (err = dlb_kafka_flush(r.producer, 30000, errstr, sizeof(errstr))) ||
        (err = subscribe(conf, raw.topic, r.tag, "raw", &raw.consumer, errstr, sizeof(errstr))) ||
        (err = subscribe(conf, dlb_conf_topic(conf, DLB_TOPIC_PLANS, topic, sizeof(topic)), r.tag,
                         "master", &plans.consumer, errstr, sizeof(errstr))))
        goto fail;
    for (int i = 0; i < 2; i++) {
        paths[i]->n = n;
        if (!(paths[i]->sent_ns = calloc((size_t)n, sizeof(int64_t))) ||
            !(paths[i]->got = calloc((size_t)n, 1))) {
            err = dlb_seterr(errstr, sizeof(errstr), DLB_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    dlb_info("run %s: %ld jobs x %ld samples, then %ld requests at %g/s per path", r.tag, jobs,
             samples, n, rate);
    if ((err = setup_jobs(&r, errstr, sizeof(errstr))) ||
        (err = warm_up(&r, &raw, 1, warmup_ms, errstr, sizeof(errstr))) ||
        (err = run_path(&r, &raw, rate, drain_ms, errstr, sizeof(errstr))) ||
        (err = warm_up(&r, &plans, jobs, warmup_ms, errstr, sizeof(errstr))) ||
        (err = run_path(&r, &plans, rate, drain_ms, errstr, sizeof(errstr))))
        goto fail;
    if (cli_stop)
        goto out;

    printf("roundtrip bench%s%s: %g requests/s for %ld s per path, %ld jobs x %ld samples, stage "
           "%s,\n%zu-byte requests, brokers %s\n\n",
           label ? " on " : "", label ? label : "", rate, seconds, jobs, samples, stage,
           r.msg_bytes, conf->brokers);
    printf("%-36s %7s %9s %6s %9s %9s %9s %9s\n", "PATH", "SENT", "RECEIVED", "LOST", "P50_MS",
           "P99_MS", "MAX_MS", "MEAN_MS");
    path_print(&raw);
    path_print(&plans);
    printf("%-36s %7s %9s %6s %8.1fx %8.1fx %8.1fx %8.1fx\n", "ratio (optimizer / raw)", "", "", "",
           ratio(lat_pct(&plans.lat, 50), lat_pct(&raw.lat, 50)),
           ratio(lat_pct(&plans.lat, 99), lat_pct(&raw.lat, 99)),
           ratio((double)plans.lat.max, (double)raw.lat.max),
           ratio(lat_mean(&plans.lat), lat_mean(&raw.lat)));
    if (plans.repeats || raw.repeats)
        printf("(repeated deliveries ignored: raw %ld, plans %ld)\n", raw.repeats, plans.repeats);
    fflush(stdout);
    if (json_path) {
        cJSON *ro;
        if (!(root = cJSON_CreateObject()) || !(ro = cJSON_CreateObject())) {
            dlb_err("out of memory");
            goto out;
        }
        cJSON_AddStringToObject(root, "benchmark", "roundtrip");
        cJSON_AddStringToObject(root, "label", label ? label : "");
        cJSON_AddStringToObject(root, "brokers", conf->brokers);
        cJSON_AddNumberToObject(root, "rate", rate);
        cJSON_AddNumberToObject(root, "seconds", (double)seconds);
        cJSON_AddNumberToObject(root, "jobs", (double)jobs);
        cJSON_AddNumberToObject(root, "samples_per_job", (double)samples);
        cJSON_AddStringToObject(root, "stage", stage);
        cJSON_AddNumberToObject(root, "message_bytes", (double)r.msg_bytes);
        cJSON_AddItemToObject(root, "raw", path_json(&raw));
        cJSON_AddItemToObject(root, "plans", path_json(&plans));
        cJSON_AddNumberToObject(ro, "p50", ratio(lat_pct(&plans.lat, 50), lat_pct(&raw.lat, 50)));
        cJSON_AddNumberToObject(ro, "p99", ratio(lat_pct(&plans.lat, 99), lat_pct(&raw.lat, 99)));
        cJSON_AddNumberToObject(ro, "max", ratio((double)plans.lat.max, (double)raw.lat.max));
        cJSON_AddNumberToObject(ro, "mean", ratio(lat_mean(&plans.lat), lat_mean(&raw.lat)));
        cJSON_AddItemToObject(root, "ratio", ro);
        if (write_json(json_path, root))
            goto out;
    }
    /* Lost answers fail the run: a latency table over what came back hides them. */
    rc = raw.received == raw.sent && plans.received == plans.sent ? 0 : 1;
    if (rc)
        dlb_err("answers missing after %ld ms: raw %ld of %ld, plans %ld of %ld", drain_ms,
                raw.received, raw.sent, plans.received, plans.sent);
    goto out;
fail:
    dlb_err("%s", errstr);
out:
    cJSON_Delete(root);
    path_free(&raw);
    path_free(&plans);
    dlb_kafka_producer_destroy(r.producer);
    if (cat)
        dlb_catalog_destroy(cat);
    return rc;
}

/* ==== options ================================================================== */

int cmd_bench_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"events", required_argument, 0, 'E'},
                                             {"seconds", required_argument, 0, 's'},
                                             {"set", required_argument, 0, 'S'},
                                             {"plans-out", required_argument, 0, 'P'},
                                             {"rate", required_argument, 0, 'r'},
                                             {"jobs", required_argument, 0, 'n'},
                                             {"samples", required_argument, 0, 'k'},
                                             {"stage", required_argument, 0, 'T'},
                                             {"warmup-ms", required_argument, 0, 'w'},
                                             {"drain-ms", required_argument, 0, 'd'},
                                             {"label", required_argument, 0, 'l'},
                                             {"json", required_argument, 0, 'j'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    const char *mode, *events = NULL, *set = NULL, *plans_path = NULL, *json_path = NULL,
                      *label = NULL, *stage = DLB_STAGE_RUNNING;
    long seconds = -1, rate = 100, jobs = 50, samples = 3, warmup_ms = 60000, drain_ms = 10000;
    cli_opts_t o = {0};
    dlb_conf_t conf;
    int c, rc;

    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    mode = argv[1];
    if (strcmp(mode, "optimizer") && strcmp(mode, "roundtrip")) {
        fprintf(stderr, "bench: unknown benchmark '%s' (optimizer or roundtrip)\n", mode);
        return 2;
    }
    argc--;
    argv++;
    while ((c = getopt_long(argc, argv, "E:s:S:P:r:n:k:w:d:l:j:" CLI_COMMON_SHORT, longopts,
                            NULL)) != -1) {
        long *target = NULL, lo = 1, hi = 1000000000;
        switch (c) {
        case 'E':
            events = optarg;
            break;
        case 'S':
            if (strcmp(optarg, "dlrover") && strcmp(optarg, "dlbrain")) {
                fprintf(stderr, "bench: --set: '%s' is not dlrover or dlbrain\n", optarg);
                return 2;
            }
            set = optarg;
            break;
        case 'P':
            plans_path = optarg;
            break;
        case 'j':
            json_path = optarg;
            break;
        case 'l':
            label = optarg;
            break;
        case 'T':
            if (stage_index(optarg) < 0) {
                fprintf(stderr, "bench: --stage: '%s' is not a stage\n", optarg);
                return 2;
            }
            stage = optarg;
            break;
        case 's':
            target = &seconds;
            hi = 86400;
            break;
        case 'r':
            target = &rate;
            hi = 1000000;
            break;
        case 'n':
            target = &jobs;
            hi = 9999;
            break;
        case 'k':
            target = &samples;
            lo = 0;
            hi = 60;
            break;
        case 'w':
            target = &warmup_ms;
            break;
        case 'd':
            target = &drain_ms;
            lo = 0;
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
        if (target && parse_long(optarg, lo, hi, target)) {
            fprintf(stderr, "bench: -%c: '%s' is not an integer in %ld..%ld\n", c, optarg, lo, hi);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!strcmp(mode, "optimizer") && !events) {
        fprintf(stderr, "bench optimizer: --events FILE is required\n");
        return 2;
    }
    if ((long)rate * (seconds < 0 ? 10 : seconds) > 50000000) {
        fprintf(stderr, "bench roundtrip: --rate x --seconds is more than 50000000 requests\n");
        return 2;
    }
    if (cli_conf_build(&o, &conf, "bench"))
        return 2;
    if (!strcmp(mode, "optimizer")) {
        cli_signals_install();
        rc = bench_optimizer(&conf, events, set, seconds < 0 ? 2.0 : (double)seconds, plans_path,
                             json_path);
    } else {
        rc = bench_roundtrip(&conf, (double)rate, seconds < 0 ? 10 : seconds, jobs, samples, stage,
                             warmup_ms, drain_ms, label, json_path);
    }
    dlb_conf_destroy(&conf);
    return rc;
}
