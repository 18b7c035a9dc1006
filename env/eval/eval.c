/* The evaluator's figures: pure functions of one environment's history
 * (eval.h has the definitions). */
#include "eval.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "vec.h"

#define MS_PER_HOUR 3600000.0
#define GIB         1073741824.0

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double dlb_eval_quantile(const double *sorted, size_t n, double q)
{
    double h, frac;
    size_t i;

    if (!n)
        return NAN;
    if (q <= 0)
        return sorted[0];
    if (q >= 1)
        return sorted[n - 1];
    h = (double)(n - 1) * q;
    i = (size_t)h;
    frac = h - (double)i;
    if (i + 1 >= n)
        return sorted[n - 1];
    return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

void dlb_eval_dist(double *v, size_t n, dlb_eval_dist_t *out)
{
    double sum = 0;

    out->n = n;
    if (!n) {
        out->mean = out->p50 = out->p95 = out->max = NAN;
        out->sum = 0;
        return;
    }
    qsort(v, n, sizeof(*v), cmp_double);
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    out->sum = sum;
    out->mean = sum / (double)n;
    out->p50 = dlb_eval_quantile(v, n, 0.5);
    out->p95 = dlb_eval_quantile(v, n, 0.95);
    out->max = v[n - 1];
}

/* Median of n gaps, sorting them in place. */
static double gaps_median(double *g, size_t n)
{
    qsort(g, n, sizeof(*g), cmp_double);
    return dlb_eval_quantile(g, n, 0.5);
}

int dlb_eval_weights(const dlb_eval_sample_t *s, size_t n, double *w, char *errstr,
                     size_t errstr_size)
{
    double *gaps, env_median;
    size_t gaps_cnt = 0;

    if (!n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (s[i].job < s[i - 1].job || (s[i].job == s[i - 1].job && s[i].t_ms < s[i - 1].t_ms))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "sample %zu (job %" PRIu32 ", %" PRId64
                              " ms) is out of order: samples go by job, then time",
                              i, s[i].job, s[i].t_ms);
    if (!(gaps = malloc(n * sizeof(*gaps))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t a = 0, b; a < n; a = b) {
        size_t off = gaps_cnt;

        for (b = a + 1; b < n && s[b].job == s[a].job; b++) {
            w[b - 1] = (double)(s[b].t_ms - s[b - 1].t_ms);
            gaps[gaps_cnt++] = w[b - 1];
        }
        /* A lone sample waits for the environment's median (-1 marks it). */
        w[b - 1] = b - a > 1 ? gaps_median(gaps + off, gaps_cnt - off) : -1;
    }
    env_median = gaps_cnt ? gaps_median(gaps, gaps_cnt) : 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] < 0)
            w[i] = env_median;
    free(gaps);
    return 0;
}

static void jobs_figures(const dlb_eval_input_t *in, dlb_eval_figures_t *f, int64_t *first,
                         int64_t *last)
{
    size_t njct = 0, npend = 0;
    int64_t first_job = INT64_MAX, last_final = INT64_MIN;

    f->jobs = in->jobs_cnt;
    for (size_t i = 0; i < in->jobs_cnt; i++) {
        const dlb_eval_job_t *j = &in->jobs[i];

        if (j->first_ms < first_job)
            first_job = j->first_ms;
        if (j->running_ms > *last)
            *last = j->running_ms;
        if (j->final_ms >= 0) {
            f->finished++;
            f->succeeded += !strcmp(j->final_state, "succeeded");
            f->failed += !strcmp(j->final_state, "failed");
            f->stopped += !strcmp(j->final_state, "stopped");
            f->jct_s[njct++] = (double)(j->final_ms - j->first_ms) / 1000.0;
            if (j->final_ms > last_final)
                last_final = j->final_ms;
        } else {
            f->unfinished++;
        }
        if (j->running_ms >= 0) {
            int64_t from = j->queued_ms >= 0 ? j->queued_ms : j->first_ms;
            /* Events out of order (running before created) count as no wait. */
            f->pending_s[npend++] =
                j->running_ms > from ? (double)(j->running_ms - from) / 1000.0 : 0;
        } else {
            f->never_ran++;
        }
    }
    f->completion_rate = f->jobs ? (double)f->succeeded / (double)f->jobs : NAN;
    dlb_eval_dist(f->jct_s, njct, &f->jct);
    dlb_eval_dist(f->pending_s, npend, &f->pending);
    f->makespan_s = njct ? (double)(last_final - first_job) / 1000.0 : NAN;
    if (first_job < *first)
        *first = first_job;
    if (last_final > *last)
        *last = last_final;
}

/* used / requested, NaN when nothing was requested. */
static double util(double used, double req)
{
    return req > 0 ? used / req : NAN;
}

/* One job's sums, closed into f's per-job utilisations when its samples end
 * (the samples are sorted by job). */
static void job_util_close(dlb_eval_figures_t *f, const dlb_eval_use_t *j)
{
    if (j->cpu_req > 0)
        f->job_cpu_util[f->job_cpu.n++] = j->cpu_used / j->cpu_req;
    if (j->mem_req > 0)
        f->job_mem_util[f->job_mem.n++] = j->mem_used / j->mem_req;
}

static int usage_figures(const dlb_eval_input_t *in, dlb_eval_figures_t *f, int64_t *first,
                         int64_t *last, char *errstr, size_t errstr_size)
{
    double cu = 0, cr = 0, mu = 0, mr = 0, *w;
    dlb_eval_use_t role[DLB_EVAL_ROLES] = {0}, job = {0};
    size_t njobs = 0;
    int err;

    f->samples = in->samples_cnt;
    f->cpu_util = f->mem_util = NAN;
    f->worker_cpu_util = f->worker_mem_util = f->ps_cpu_util = f->ps_mem_util = NAN;
    dlb_eval_dist(NULL, 0, &f->job_cpu);
    dlb_eval_dist(NULL, 0, &f->job_mem);
    if (!in->samples_cnt)
        return 0;
    for (size_t i = 0; i < in->samples_cnt; i++)
        njobs += !i || in->samples[i].job != in->samples[i - 1].job;
    if (!(f->job_cpu_util = malloc(njobs * sizeof(*f->job_cpu_util))) ||
        !(f->job_mem_util = malloc(njobs * sizeof(*f->job_mem_util))) ||
        !(w = malloc(in->samples_cnt * sizeof(*w))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if ((err = dlb_eval_weights(in->samples, in->samples_cnt, w, errstr, errstr_size))) {
        free(w);
        return err;
    }
    for (size_t i = 0; i < in->samples_cnt; i++) {
        const dlb_eval_sample_t *s = &in->samples[i];
        int64_t end = s->t_ms + (int64_t)llround(w[i]);

        if (i && s->job != in->samples[i - 1].job) {
            job_util_close(f, &job);
            memset(&job, 0, sizeof(job));
        }
        job.cpu_used += s->cpu_used * w[i];
        job.cpu_req += s->cpu_req * w[i];
        job.mem_used += s->mem_used * w[i];
        job.mem_req += s->mem_req * w[i];
        cu += s->cpu_used * w[i];
        cr += s->cpu_req * w[i];
        mu += s->mem_used * w[i];
        mr += s->mem_req * w[i];
        for (size_t r = 0; r < DLB_EVAL_ROLES; r++) {
            role[r].cpu_used += s->role[r].cpu_used * w[i];
            role[r].cpu_req += s->role[r].cpu_req * w[i];
            role[r].mem_used += s->role[r].mem_used * w[i];
            role[r].mem_req += s->role[r].mem_req * w[i];
        }
        if (s->t_ms < *first)
            *first = s->t_ms;
        if (end > *last)
            *last = end;
    }
    free(w);
    job_util_close(f, &job);
    dlb_eval_dist(f->job_cpu_util, f->job_cpu.n, &f->job_cpu);
    dlb_eval_dist(f->job_mem_util, f->job_mem.n, &f->job_mem);
    f->cpu_util = util(cu, cr);
    f->mem_util = util(mu, mr);
    f->worker_cpu_util = util(role[DLB_EVAL_WORKER].cpu_used, role[DLB_EVAL_WORKER].cpu_req);
    f->worker_mem_util = util(role[DLB_EVAL_WORKER].mem_used, role[DLB_EVAL_WORKER].mem_req);
    f->ps_cpu_util = util(role[DLB_EVAL_PS].cpu_used, role[DLB_EVAL_PS].cpu_req);
    f->ps_mem_util = util(role[DLB_EVAL_PS].mem_used, role[DLB_EVAL_PS].mem_req);
    f->cpu_req_core_h = cr / MS_PER_HOUR;
    f->cpu_used_core_h = cu / MS_PER_HOUR;
    f->mem_req_gib_h = mr / GIB / MS_PER_HOUR;
    f->mem_used_gib_h = mu / GIB / MS_PER_HOUR;
    return 0;
}

static int cmp_oom(const void *a, const void *b)
{
    const dlb_eval_oom_t *x = *(const dlb_eval_oom_t *const *)a;
    const dlb_eval_oom_t *y = *(const dlb_eval_oom_t *const *)b;
    int c = strcmp(x->job_uid, y->job_uid);

    return c ? c : strcmp(x->pod, y->pod);
}

static int oom_figures(const dlb_eval_input_t *in, dlb_eval_figures_t *f, char *errstr,
                       size_t errstr_size)
{
    const dlb_eval_oom_t **p;

    f->ooms = (int64_t)in->ooms_cnt;
    f->pods = in->pods;
    f->oom_pods_share = in->pods > 0 ? 0 : NAN;
    if (!in->ooms_cnt)
        return 0;
    if (!(p = malloc(in->ooms_cnt * sizeof(*p))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < in->ooms_cnt; i++)
        p[i] = &in->ooms[i];
    qsort(p, in->ooms_cnt, sizeof(*p), cmp_oom);
    for (size_t i = 0; i < in->ooms_cnt; i++)
        f->oom_pods += !i || cmp_oom(&p[i - 1], &p[i]);
    /* Every OOM of a pod but its first is a repeat. */
    f->repeated_ooms = f->ooms - f->oom_pods;
    f->oom_pods_share = in->pods > 0 ? (double)f->oom_pods / (double)in->pods : NAN;
    free(p);
    return 0;
}

/* Add count to the entry named name (stage or optimizer, by which) of *list. */
static int count_add(dlb_eval_count_t **list, size_t *cnt, int by_stage, const char *name,
                     int64_t count)
{
    dlb_eval_count_t *l = *list, *e;

    for (size_t i = 0; i < *cnt; i++)
        if (!strcmp(by_stage ? l[i].stage : l[i].optimizer, name)) {
            l[i].count += count;
            return 0;
        }
    if (!(e = dlb_vec_push((void **)list, cnt, sizeof(*e))))
        return DLB_ERR_NOMEM;
    snprintf(by_stage ? e->stage : e->optimizer, sizeof(e->stage), "%s", name);
    e->count = count;
    return 0;
}

static int cmp_count_name(const void *a, const void *b)
{
    const dlb_eval_count_t *x = a, *y = b;
    int c = strcmp(x->stage, y->stage);

    return c ? c : strcmp(x->optimizer, y->optimizer);
}

static int plan_figures(const dlb_eval_input_t *in, dlb_eval_figures_t *f, char *errstr,
                        size_t errstr_size)
{
    f->plan_requests = in->plan_requests;
    for (size_t i = 0; i < in->plans_cnt; i++) {
        const dlb_eval_count_t *c = &in->plans[i];

        f->plans += c->count;
        if (count_add(&f->by_stage, &f->by_stage_cnt, 1, c->stage, c->count) ||
            count_add(&f->by_optimizer, &f->by_optimizer_cnt, 0, c->optimizer, c->count))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    if (f->by_stage)
        qsort(f->by_stage, f->by_stage_cnt, sizeof(*f->by_stage), cmp_count_name);
    if (f->by_optimizer)
        qsort(f->by_optimizer, f->by_optimizer_cnt, sizeof(*f->by_optimizer), cmp_count_name);
    return 0;
}

int dlb_eval_compute(const dlb_eval_input_t *in, dlb_eval_figures_t *f, char *errstr,
                     size_t errstr_size)
{
    int64_t first = INT64_MAX, last = INT64_MIN;
    char env[sizeof(f->env)];
    /* malloc(0) may return NULL: keep one slot. */
    size_t slots = in->jobs_cnt ? in->jobs_cnt : 1;
    int err;

    memcpy(env, f->env, sizeof(env));
    memset(f, 0, sizeof(*f));
    memcpy(f->env, env, sizeof(env));
    f->jct_s = malloc(slots * sizeof(*f->jct_s));
    f->pending_s = malloc(slots * sizeof(*f->pending_s));
    if (!f->jct_s || !f->pending_s) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto fail;
    }
    jobs_figures(in, f, &first, &last);
    if ((err = usage_figures(in, f, &first, &last, errstr, errstr_size)) ||
        (err = oom_figures(in, f, errstr, errstr_size)) ||
        (err = plan_figures(in, f, errstr, errstr_size)))
        goto fail;
    if (first <= last) {
        f->start_ms = first;
        f->end_ms = last;
    }
    return 0;
fail:
    dlb_eval_figures_clear(f);
    return err;
}

int64_t dlb_eval_bucket_ms(const dlb_eval_figures_t *f, size_t cnt, size_t buckets)
{
    int64_t span = 0, w;

    for (size_t i = 0; i < cnt; i++)
        if (f[i].end_ms - f[i].start_ms > span)
            span = f[i].end_ms - f[i].start_ms;
    if (!buckets)
        buckets = 1;
    w = (span + (int64_t)buckets - 1) / (int64_t)buckets;
    w = (w + 999) / 1000 * 1000;
    return w < 1000 ? 1000 : w;
}

int dlb_eval_series(const dlb_eval_input_t *in, int64_t bucket_ms, size_t buckets,
                    dlb_eval_figures_t *f, char *errstr, size_t errstr_size)
{
    dlb_eval_series_t *sr = &f->series;
    double *block, *w = NULL, width = (double)bucket_ms;
    int err = 0;

    if (bucket_ms <= 0 || !buckets)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "series: %zu buckets of %" PRId64 " ms", buckets, bucket_ms);
    free(sr->cpu_util);
    memset(sr, 0, sizeof(*sr));
    if (!(block = calloc(6 * buckets, sizeof(*block))) ||
        (in->samples_cnt && !(w = malloc(in->samples_cnt * sizeof(*w))))) {
        free(block);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    /* One block, freed through cpu_util (dlb_eval_figures_clear). */
    sr->buckets = buckets;
    sr->bucket_ms = bucket_ms;
    sr->cpu_util = block;
    sr->mem_util = block + buckets;
    sr->cpu_req = block + 2 * buckets;
    sr->cpu_used = block + 3 * buckets;
    sr->mem_req = block + 4 * buckets;
    sr->mem_used = block + 5 * buckets;
    if (in->samples_cnt &&
        (err = dlb_eval_weights(in->samples, in->samples_cnt, w, errstr, errstr_size)))
        goto out;
    /* Sums of value x overlap (ms) per bucket first, means after. */
    for (size_t i = 0; i < in->samples_cnt; i++) {
        const dlb_eval_sample_t *s = &in->samples[i];
        double a = (double)(s->t_ms - f->start_ms), b = a + w[i];

        if (w[i] <= 0 || a < 0)
            continue;
        for (size_t k = (size_t)(a / width); k < buckets && (double)k * width < b; k++) {
            double lo = fmax(a, (double)k * width), hi = fmin(b, (double)(k + 1) * width);
            double ov = hi - lo;

            if (ov <= 0)
                continue;
            sr->cpu_req[k] += s->cpu_req * ov;
            sr->cpu_used[k] += s->cpu_used * ov;
            sr->mem_req[k] += s->mem_req * ov;
            sr->mem_used[k] += s->mem_used * ov;
        }
    }
    for (size_t k = 0; k < buckets; k++) {
        sr->cpu_util[k] = sr->cpu_req[k] > 0 ? sr->cpu_used[k] / sr->cpu_req[k] : NAN;
        sr->mem_util[k] = sr->mem_req[k] > 0 ? sr->mem_used[k] / sr->mem_req[k] : NAN;
        sr->cpu_req[k] /= width;
        sr->cpu_used[k] /= width;
        sr->mem_req[k] /= width;
        sr->mem_used[k] /= width;
    }
out:
    free(w);
    return err;
}

void dlb_eval_figures_clear(dlb_eval_figures_t *f)
{
    free(f->jct_s);
    free(f->pending_s);
    free(f->job_cpu_util);
    free(f->job_mem_util);
    free(f->by_stage);
    free(f->by_optimizer);
    free(f->series.cpu_util);
    memset(f, 0, sizeof(*f));
}
