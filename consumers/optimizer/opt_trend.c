/* The dlbrain set's memory trend ("dlbrain.memory_trend"): raise a pod's
 * memory before it is OOMKilled, when the line through its recent memory_used
 * will pass its request within the horizon. DLRover only reacts after the OOM
 * (and its hot-PS rule only at 90% of the request, in steps of 8 GiB). */
#include "optimizer.h"

#include <math.h>
#include <string.h>

#include "err.h"
#include "opt_dlbrain.h"
#include "opt_util.h"

#define TREND_MIN_POINTS 4 /* a line through fewer says little about a trend */

/* Least-squares line of one pod's memory_used against time over its newest
 * samples, with what it predicts at the horizon. */
typedef struct trend_fit {
    size_t n;          /* samples used */
    int64_t requested; /* memory_requested in all of them */
    double last_used;  /* bytes in the newest sample */
    double slope;      /* bytes per second */
    double predicted;  /* bytes at now + horizon */
} trend_fit_t;

/* The points are the newest run of samples that hold the pod with the request
 * it has now: a sample without the pod, or with another request, is a
 * relaunch, and memory before a relaunch says nothing about the pod now.
 * Times are seconds since the newest sample. The prediction is computed as
 * mean + Sxy * dx / Sxx so exact input gives an exact answer.
 * @returns 0 when the points do not determine a line (< 4, or one time). */
static int fit(const dlb_job_state_t *st, const dlb_pod_usage_t *pod, double ahead_s,
               trend_fit_t *f)
{
    const dlb_runtime_sample_t *newest = &st->window[st->window_cnt - 1];
    double sx = 0, sy = 0, mx, my, sxx = 0, sxy = 0;
    size_t i, first = st->window_cnt;

    memset(f, 0, sizeof(*f));
    f->requested = pod->memory_requested;
    f->last_used = (double)pod->memory_used;
    for (i = st->window_cnt; i-- > 0;) {
        const dlb_pod_usage_t *p = dlb_sample_pod(&st->window[i], pod->name);

        if (!p || p->memory_requested != pod->memory_requested)
            break;
        first = i;
        sx += (double)(st->window[i].event_time_ms - newest->event_time_ms) / 1000.0;
        sy += (double)p->memory_used;
        f->n++;
    }
    if (f->n < TREND_MIN_POINTS)
        return 0;
    mx = sx / (double)f->n;
    my = sy / (double)f->n;
    for (i = first; i < st->window_cnt; i++) {
        double x = (double)(st->window[i].event_time_ms - newest->event_time_ms) / 1000.0 - mx;
        double y = (double)dlb_sample_pod(&st->window[i], pod->name)->memory_used - my;

        sxx += x * x;
        sxy += x * y;
    }
    if (!(sxx > 0))
        return 0;
    f->slope = sxy / sxx;
    f->predicted = my + sxy * (ahead_s - mx) / sxx;
    return 1;
}

int dlb_opt_memory_trend(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t *newest;
    size_t k, fitted = 0, short_run = 0, no_request = 0, fired = 0, capped = 0;
    int64_t now;
    double ahead_s;

    if (st->window_cnt == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sMemory trend: no runtime samples, nothing to change.",
                           dlb_reason_sep(plan->reason));
        return 0;
    }
    newest = &st->window[st->window_cnt - 1];
    /* "Now" is the request's time; a request older than the newest sample
     * (clock skew between producers) extrapolates from that sample instead. */
    now = in->req->event_time_ms > newest->event_time_ms ? in->req->event_time_ms
                                                         : newest->event_time_ms;
    ahead_s = (double)(now - newest->event_time_ms) / 1000.0 + (double)tun->memory_horizon_seconds;

    for (k = 0; k < newest->pods_cnt; k++) {
        const dlb_pod_usage_t *pod = &newest->pods[k];
        dlb_pod_resource_t *pr;
        dlb_vpa_growth_t g;
        trend_fit_t f;
        int64_t peak;

        if (pod->memory_requested <= 0) {
            no_request++;
            continue;
        }
        if (!fit(st, pod, ahead_s, &f)) {
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
                           "%sMemory trend: %s used %.2fGiB rising %.1fMiB/min over %zu samples, "
                           "predicted %.2fGiB in %.0fs > %.2f x request %.2fGiB: memory=%.2fGiB "
                           "(VPA %.2fGiB, cap %.2fGiB).",
                           dlb_reason_sep(plan->reason), pod->name, f.last_used / (double)DLB_GIB,
                           f.slope * 60.0 / (double)DLB_MIB, f.n, f.predicted / (double)DLB_GIB,
                           ahead_s, tun->memory_trigger, DLB_GIB_F(f.requested),
                           DLB_GIB_F(g.memory), DLB_GIB_F(g.vpa), DLB_GIB_F(g.cap));
    }
    /* A capped pod was predicted above the trigger, and said so: "none
     * predicted above" would contradict it. */
    if (!fired && !capped)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sMemory trend: %zu pods fitted, none predicted above %.2f x its "
                           "request in %.0fs (%zu with < %d samples at their request, %zu "
                           "without a request).",
                           dlb_reason_sep(plan->reason), fitted, tun->memory_trigger, ahead_s,
                           short_run, TREND_MIN_POINTS, no_request);
    return 0;
}
