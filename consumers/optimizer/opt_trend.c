/* The dlbrain set's memory trend ("dlbrain.memory_trend"): raise a pod's
 * memory before it is OOMKilled, when the line through its recent memory_used
 * will pass its request within the horizon. DLRover only reacts after the OOM
 * (and its hot-PS rule only at 90% of the request, in steps of 8 GiB). */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_dlbrain.h"
#include "opt_util.h"

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

int dlb_opt_memory_trend(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t *newest;
    size_t k, fitted = 0, short_run = 0, no_request = 0, fired = 0, capped = 0;
    double ahead_s, remaining;

    if (st->window_cnt == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sMemory trend: no runtime samples, nothing to change.",
                           dlb_reason_sep(plan->reason));
        return 0;
    }
    newest = &st->window[st->window_cnt - 1];
    ahead_s = dlb_mem_trend_ahead(in, &remaining);

    for (k = 0; k < newest->pods_cnt; k++) {
        const dlb_pod_usage_t *pod = &newest->pods[k];
        dlb_pod_resource_t *pr;
        dlb_vpa_growth_t g;
        dlb_mem_trend_t f;
        int64_t peak;

        if (pod->memory_requested <= 0) {
            no_request++;
            continue;
        }
        if (!dlb_mem_trend_fit(st, pod->name, pod->memory_requested, ahead_s, &f)) {
            short_run++;
            continue;
        }
        fitted++;
        if (!(f.slope > 0) || !(f.predicted > tun->memory_trigger * (double)f.requested))
            continue;
        /* Bytes: round the prediction; a finite double above INT64_MAX/2
         * cannot be a real pod, but must not overflow the conversion. */
        peak =
            f.predicted < (double)(INT64_MAX / 2) ? (int64_t)llround(f.predicted) : INT64_MAX / 2;
        g = dlb_vpa_grow(peak, f.requested);
        if (g.memory <= f.requested) {
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               "%sMemory trend: %s used %.2fGiB rising %.1fMiB/min, predicted "
                               "%.2fGiB in %.0fs > %.2f x request %.2fGiB, but the cap allows no "
                               "growth past %.2fGiB.",
                               dlb_reason_sep(plan->reason), pod->name, DLB_GIB_F(f.last_used),
                               f.slope * 60.0 / (double)DLB_MIB, f.predicted / (double)DLB_GIB,
                               ahead_s, tun->memory_trigger, DLB_GIB_F(f.requested),
                               DLB_GIB_F(g.cap));
            capped++;
            continue;
        }
        if (!(pr = dlb_plan_add_pod(plan, pod->name)))
            return DLB_ERR_NOMEM;
        pr->resource.memory = g.memory;
        fired++;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sMemory trend: %s used %.2fGiB rising %.1fMiB/min over %zu samples%s, "
                           "predicted %.2fGiB in %.0fs > %.2f x request %.2fGiB: memory=%.2fGiB "
                           "(VPA %.2fGiB, cap %.2fGiB).",
                           dlb_reason_sep(plan->reason), pod->name, f.last_used / (double)DLB_GIB,
                           f.slope * 60.0 / (double)DLB_MIB, f.n,
                           f.recent ? " (the newest half's slope, flatter)" : "",
                           f.predicted / (double)DLB_GIB, ahead_s, tun->memory_trigger,
                           DLB_GIB_F(f.requested), DLB_GIB_F(g.memory), DLB_GIB_F(g.vpa),
                           DLB_GIB_F(g.cap));
    }
    /* A capped pod was predicted above the trigger, and said so: "none
     * predicted above" would contradict it. */
    if (!fired && !capped)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sMemory trend: %zu pods fitted, none predicted above %.2f x its "
                           "request in %.0fs (%zu with < %d samples at their request, %zu "
                           "without a request)%s.",
                           dlb_reason_sep(plan->reason), fitted, tun->memory_trigger, ahead_s,
                           short_run, DLB_TREND_MIN_POINTS, no_request,
                           remaining >= 0 && ahead_s == remaining
                               ? " (the horizon cut at the job's estimated end)"
                               : "");
    return 0;
}
