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
