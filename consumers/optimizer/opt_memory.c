/* Memory models of the dlbrain set: how memory grows after an OOM (VPA's
 * bump within DLRover master's bounds) and where a pod's memory_used is
 * heading (a least-squares line over the window). The OOM plan (opt_vpa.c)
 * and the memory trend (opt_trend.c) both use both. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt_dlbrain.h"
#include "opt_plan.h"
#include "opt_util.h"

#define VPA_NUM      6 /* peak * 1.2: VPA's OOM bump ratio */
#define VPA_DEN      5
#define VPA_MIN_BUMP (100 * DLB_MIB)   /* VPA's minimum OOM bump */
#define CAP_MEMORY   (65536 * DLB_MIB) /* DLRover master: min(2 * current, 65536 MiB) */
#define CAP_STEP     (8192 * DLB_MIB)  /* DLRover master: each increment at most 8192 MiB */

dlb_vpa_growth_t dlb_vpa_grow(int64_t peak, int64_t current)
{
    dlb_vpa_growth_t g;
    int64_t twice = dlb_mem_scale(current, 2, 1), bumped = dlb_mem_add(peak, VPA_MIN_BUMP);

    g.vpa = dlb_mem_scale(peak, VPA_NUM, VPA_DEN);
    if (bumped > g.vpa)
        g.vpa = bumped;
    g.cap = twice < CAP_MEMORY ? twice : CAP_MEMORY;
    if (g.cap < current)
        g.cap = current;
    if (g.cap > dlb_mem_add(current, CAP_STEP))
        g.cap = dlb_mem_add(current, CAP_STEP);
    g.memory = g.vpa < g.cap ? g.vpa : g.cap;
    return g;
}

/* Sums of one line fit over the pod's points at window indices [from, to). */
static int line(const dlb_job_state_t *st, const char *name, size_t from, size_t to, double ahead_s,
                double *slope, double *predicted)
{
    const dlb_runtime_sample_t *newest = &st->window[st->window_cnt - 1];
    double sx = 0, sy = 0, mx, my, sxx = 0, sxy = 0, n = (double)(to - from);
    size_t i;

    for (i = from; i < to; i++) {
        sx += (double)(st->window[i].event_time_ms - newest->event_time_ms) / 1000.0;
        sy += (double)dlb_sample_pod(&st->window[i], name)->memory_used;
    }
    mx = sx / n;
    my = sy / n;
    for (i = from; i < to; i++) {
        double x = (double)(st->window[i].event_time_ms - newest->event_time_ms) / 1000.0 - mx;
        double y = (double)dlb_sample_pod(&st->window[i], name)->memory_used - my;

        sxx += x * x;
        sxy += x * y;
    }
    if (!(sxx > 0))
        return 0;
    *slope = sxy / sxx;
    *predicted = my + sxy * (ahead_s - mx) / sxx;
    return 1;
}

/* The points are the newest run of samples that hold the pod with the given
 * request: a sample without the pod, or with another request, is a relaunch,
 * and memory before a relaunch says nothing about the pod now. Times are
 * seconds since the newest sample. The prediction is computed as mean + Sxy *
 * dx / Sxx so exact input gives an exact answer.
 *
 * Memory that grows while caches warm up flattens once they are warm; a line
 * through the whole run would keep extrapolating the early rate (a pod at 12
 * GiB for ten minutes "predicted" at 17 GiB). So with >= 2 x 4 points the line
 * through the newest half is fitted too, and the flatter of the two lines
 * predicts: growth that has slowed is not projected at its old rate. */
int dlb_mem_trend_fit(const dlb_job_state_t *st, const char *name, int64_t requested,
                      double ahead_s, dlb_mem_trend_t *f)
{
    size_t i, first = st->window_cnt, half;
    double slope, predicted;

    memset(f, 0, sizeof(*f));
    f->requested = requested;
    if (st->window_cnt == 0)
        return 0;
    for (i = st->window_cnt; i-- > 0;) {
        const dlb_pod_usage_t *p = dlb_sample_pod(&st->window[i], name);

        if (!p || p->memory_requested != requested)
            break;
        if (i == st->window_cnt - 1)
            f->last_used = (double)p->memory_used;
        first = i;
        f->n++;
    }
    if (f->n < DLB_TREND_MIN_POINTS ||
        !line(st, name, first, st->window_cnt, ahead_s, &f->slope, &f->predicted))
        return 0;
    half = f->n / 2;
    if (half >= DLB_TREND_MIN_POINTS &&
        line(st, name, st->window_cnt - half, st->window_cnt, ahead_s, &slope, &predicted) &&
        slope < f->slope) {
        f->slope = slope;
        f->predicted = predicted;
        f->recent = half;
    }
    return 1;
}

double dlb_mem_trend_ahead(const dlb_opt_input_t *in, double *remaining)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t *newest = &st->window[st->window_cnt - 1];
    const dlb_runtime_sample_t **recs;
    double lag, ahead;
    int64_t now;
    size_t i;

    /* "Now" is the request's time; a request older than the newest sample
     * (clock skew between producers) extrapolates from that sample instead. */
    now = in->req->event_time_ms > newest->event_time_ms ? in->req->event_time_ms
                                                         : newest->event_time_ms;
    lag = (double)(now - newest->event_time_ms) / 1000.0;
    ahead = lag + (double)tun->memory_horizon_seconds;
    *remaining = -1;
    /* Memory after the job's end is needed by no one: the horizon stops
     * there. Without memory for the array, the horizon is not cut. */
    if ((recs = malloc(st->window_cnt * sizeof(*recs)))) {
        for (i = 0; i < st->window_cnt; i++)
            recs[i] = &st->window[i];
        *remaining = dlb_remaining_seconds(&st->job, recs, st->window_cnt);
        free(recs);
    }
    if (*remaining >= 0 && *remaining < ahead)
        ahead = *remaining;
    return ahead;
}
