#include "opt_util.h"

#include "optimizer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "utf8.h"

void dlb_reason_appendf(char *reason, size_t size, const char *fmt, ...)
{
    size_t len;
    va_list ap;
    int n;

    if (!reason || size == 0)
        return;
    len = strnlen(reason, size);
    if (len >= size) { /* not terminated: repair rather than run off the end */
        reason[size - 1] = '\0';
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(reason + len, size - len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < size - len)
        return;
    /* Cut: mark it, where there is room for the mark, after the last whole
     * character (a pod name's, a value's): half of one is not UTF-8, which
     * our decoder and PostgreSQL refuse in the plan. */
    if (size >= 4)
        memcpy(reason + dlb_utf8_cut(reason, strlen(reason), size - 4), "...", 4);
}

const char *dlb_reason_sep(const char *reason)
{
    return reason[0] ? " " : "";
}

int64_t dlb_mem_scale(int64_t mem, int64_t num, int64_t den)
{
    if (mem <= 0 || num <= 0 || den <= 0)
        return 0;
    if (mem > (INT64_MAX - (den - 1)) / num)
        return INT64_MAX;
    return (mem * num + den - 1) / den;
}

int64_t dlb_mem_add(int64_t a, int64_t b)
{
    if (a > INT64_MAX - b)
        return INT64_MAX;
    return a + b;
}

double dlb_ceil_cores(double x)
{
    /* 1e-9 cores is far below any CPU quota Kubernetes can express (1m). */
    return ceil(x - 1e-9);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The major cluster, as DLRover's PS create uses it to ignore spikes and idle
 * records: sort the n values ascending; start a window [lo, hi] at the lower
 * median m = (n - 1) / 2; while the window holds no more than half of the
 * values (hi - lo + 1 <= n / 2), extend it by one value, on the side whose next
 * value is closer to the median value v[m] (on a tie, the lower side); the
 * mean of the window is the result. The window ends with n / 2 + 1 values, the
 * smallest count that is more than 50%. Everything is decided by value order,
 * so the same multiset always gives the same result. */
double dlb_major_cluster_mean(double *v, size_t n)
{
    size_t lo, hi, m, i;
    double sum = 0;

    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    m = (n - 1) / 2;
    lo = hi = m;
    while (hi - lo + 1 <= n / 2) {
        if (lo == 0)
            hi++;
        else if (hi == n - 1)
            lo--;
        else if (v[m] - v[lo - 1] <= v[hi + 1] - v[m])
            lo--;
        else
            hi++;
    }
    for (i = lo; i <= hi; i++)
        sum += v[i];
    return sum / (double)(hi - lo + 1);
}

int dlb_is_ps(const char *type)
{
    return type && !strcmp(type, "ps");
}

const dlb_tuning_t *dlb_opt_tuning(const dlb_opt_input_t *in)
{
    /* Keep in step with the defaults of the dlbrain.* keys in conf.c. */
    static const dlb_tuning_t defaults = {
        .hang_seconds = 600,
        .straggler_ratio = 0.5,
        .straggler_samples = 3,
        .memory_horizon_seconds = 1800,
        .memory_trigger = 0.9,
        .scale_min_gain = 0.5,
        .scale_min_gain_busy = 0.7,
        .scale_step_max = 8,
        .restart_seconds = 60,
        .resize_min_change = 0.1,
        .history_headroom = 0.1,
        .cut_horizon_seconds = 900,
        .cluster_stale_seconds = 86400,
        .ps_memory_headroom = 0.1,
        .ps_probe_share = 0.3,
    };

    return in && in->tuning ? in->tuning : &defaults;
}

size_t dlb_sample_count(const dlb_runtime_sample_t *s, const char *type)
{
    size_t i, n = 0;

    for (i = 0; i < s->pods_cnt; i++)
        if (!strcmp(s->pods[i].type, type))
            n++;
    return n;
}

const dlb_pod_usage_t *dlb_sample_pod(const dlb_runtime_sample_t *s, const char *name)
{
    size_t i, lo = 0, hi = s->pods_cnt;

    if (!s->pods_by_name) {
        for (i = 0; i < s->pods_cnt; i++)
            if (!strcmp(s->pods[i].name, name))
                return &s->pods[i];
        return NULL;
    }
    /* The first pod of that name, as the scan finds it: the index is sorted
     * by name, then position. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(s->pods[s->pods_by_name[mid]].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->pods_cnt && !strcmp(s->pods[s->pods_by_name[lo]].name, name))
        return &s->pods[s->pods_by_name[lo]];
    return NULL;
}

/* 1 when every PS name of a is the name of a PS in b. */
static int ps_names_in(const dlb_runtime_sample_t *a, const dlb_runtime_sample_t *b)
{
    size_t i;

    for (i = 0; i < a->pods_cnt; i++) {
        const dlb_pod_usage_t *p;

        if (!dlb_is_ps(a->pods[i].type))
            continue;
        if (!(p = dlb_sample_pod(b, a->pods[i].name)) || !dlb_is_ps(p->type))
            return 0;
    }
    return 1;
}

/* Both ways: equal counts and a in b alone would call {p0, p0} the same set
 * as {p0, p1} when a sample lists a PS twice. */
int dlb_sample_same_ps(const dlb_runtime_sample_t *a, const dlb_runtime_sample_t *b)
{
    if (dlb_sample_count(a, "ps") != dlb_sample_count(b, "ps"))
        return 0;
    return ps_names_in(a, b) && ps_names_in(b, a);
}

int dlb_window_same_ps(const dlb_job_state_t *st, const dlb_runtime_sample_t ***out, size_t *cnt)
{
    const dlb_runtime_sample_t **recs, *newest;
    size_t i, n = 0;

    *out = NULL;
    *cnt = 0;
    if (st->window_cnt == 0)
        return 0;
    if (!(recs = malloc(st->window_cnt * sizeof(*recs))))
        return DLB_ERR_NOMEM;
    newest = &st->window[st->window_cnt - 1];
    for (i = 0; i < st->window_cnt; i++)
        if (dlb_sample_same_ps(&st->window[i], newest))
            recs[n++] = &st->window[i];
    *out = recs;
    *cnt = n;
    return 0;
}

double dlb_job_total_steps(const dlb_job_event_t *job)
{
    const dlb_hyper_params_t *hp = &job->hyper_params;
    double steps = -1;

    if (job->has_hyper_params && job->has_dataset && hp->batch_size > 0 && job->dataset.size > 0)
        steps = (double)job->dataset.size / (double)hp->batch_size *
                (double)(hp->epoch > 0 ? hp->epoch : 1);
    if (job->has_hyper_params && hp->max_steps > 0 && (steps < 0 || steps > (double)hp->max_steps))
        steps = (double)hp->max_steps;
    return steps;
}

/* DLRover averages speeds over its newest 5 records. */
#define SPEED_RECORDS 5

double dlb_est_job_seconds(const dlb_job_event_t *job, const dlb_runtime_sample_t *const *recs,
                           size_t n)
{
    double steps = dlb_job_total_steps(job), sum = 0;
    size_t i, used = 0;

    if (steps < 0)
        return -1;
    for (i = n; i-- > 0 && used < SPEED_RECORDS;) {
        size_t workers = dlb_sample_count(recs[i], "worker");

        if (workers == 0)
            continue;
        sum += recs[i]->speed / (double)workers;
        used++;
    }
    if (used == 0 || sum <= 0)
        return -1;
    return steps / (sum / (double)used);
}

double dlb_remaining_seconds(const dlb_job_event_t *job, const dlb_runtime_sample_t *const *recs,
                             size_t n)
{
    double steps = dlb_job_total_steps(job), sum = 0, left;
    size_t i, used = 0;

    if (steps < 0 || n == 0)
        return -1;
    left = steps - (double)recs[n - 1]->global_step;
    if (left <= 0)
        return 0;
    for (i = n; i-- > 0 && used < SPEED_RECORDS; used++)
        sum += recs[i]->speed;
    if (sum <= 0)
        return -1;
    return left / (sum / (double)used);
}
