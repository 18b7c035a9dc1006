/* A PS group sized for the count the dlbrain set plans (opt_model.c's PS
 * model, DLRover's init-adjust): its memory for the job's end and its CPU
 * split over the new count. DLRover sizes a PS from its use minutes into
 * the job and keeps the CPU its recv-op rule gave at any count. */
#include "optimizer.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "opt_dlbrain.h"
#include "opt_plan.h"
#include "opt_util.h"

#define PS_CPU_MARGIN  4 /* DLRover's PS utilisation rule: ceil(max used) + 4 cores */
#define PS_CPU_SAMPLES 5 /* the newest samples a PS's mean CPU is taken over */

/* The PS memory of a plan's PS group sized for the job's end (after
 * DLRover's PS init-adjust in the dlbrain set). DLRover sets 1.2 x the PS's memory now, at the
 * job's first minutes; but a PS's memory grows while new embedding ids arrive (DLRover's own design
 * for DeepRec jobs sizes it from the growth per step times the steps
 * left), and the master asks about PS again only an hour after a change:
 * in the calibrated simulator 57 of 200 jobs' PS were OOMKilled so, one
 * each. Here each PS's memory line (opt_memory.c) is extrapolated to the
 * job's estimated end, the busiest PS's taken, spread over the new PS
 * count, plus dlbrain.ps.memory.headroom. A flat or falling line keeps the
 * PS's memory now; a job of unknown length is extrapolated over
 * dlbrain.memory.horizon.seconds. */
int dlb_opt_ps_memory_end(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t *newest;
    dlb_group_resource_t *g;
    double ahead, remaining, busiest = 0, need;
    const char *busiest_pod = NULL;
    size_t ps = 0;
    int count;

    if (!(g = dlb_plan_group(plan, "ps")) || st->window_cnt == 0)
        return 0;
    newest = &st->window[st->window_cnt - 1];
    ahead = dlb_mem_trend_ahead(in, &remaining);
    if (remaining > ahead) /* to the end, not just the horizon */
        ahead = remaining;
    for (size_t k = 0; k < newest->pods_cnt; k++) {
        const dlb_pod_usage_t *pod = &newest->pods[k];
        dlb_mem_trend_t f;
        double end;

        if (!dlb_is_ps(pod->type))
            continue;
        ps++;
        end = (double)pod->memory_used;
        if (dlb_mem_trend_fit(st, pod->name, pod->memory_requested, ahead, &f) && f.slope > 0 &&
            f.predicted > end)
            end = f.predicted;
        if (end > busiest) {
            busiest = end;
            busiest_pod = pod->name;
        }
    }
    if (!ps || busiest <= 0)
        return 0;
    count = g->count > 0 ? g->count : (int)ps;
    need = busiest * (double)ps / (double)count * (1.0 + tun->ps_memory_headroom);
    if (need >= (double)(INT64_MAX / 2))
        need = (double)(INT64_MAX / 2);
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       " dlbrain: PS memory %.2fGiB = the busiest PS (%s) at the job's end %.2fGiB "
                       "(its line %.0fs ahead%s) x %zu/%d PS x %.2f, for DLRover's %.2fGiB.",
                       DLB_GIB_F((int64_t)need), busiest_pod, DLB_GIB_F((int64_t)busiest), ahead,
                       remaining < 0 ? ", the job's length unknown" : "", ps, count,
                       1.0 + tun->ps_memory_headroom, DLB_GIB_F(g->resource.memory));
    g->resource.memory = (int64_t)llround(need);
    return 0;
}

/* The PS CPU for the plan's PS count: each PS's mean CPU used over the
 * newest PS_CPU_SAMPLES samples at the current PS count, the busiest's
 * spread over the new count, plus DLRover's margin of 4 cores (its PS
 * utilisation rule, ceil(max used) + 4). Only ever a cut of what the plan
 * or the PS pods ask: a PS that gets busier is the hot-PS rule's. Why: the
 * same cores split over twice the PS are half as busy, and DLRover's
 * init-adjust gives every PS 16 cores when it counts many receive ops per
 * PS, whatever they use. */
int dlb_opt_ps_cpu_split(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t *newest;
    dlb_group_resource_t *g;
    double busiest = 0, asked = 0, cpu;
    const char *busiest_pod = NULL;
    size_t ps = 0;
    int count;

    if (!(g = dlb_plan_group(plan, "ps")) || st->window_cnt == 0)
        return 0;
    newest = &st->window[st->window_cnt - 1];
    for (size_t k = 0; k < newest->pods_cnt; k++) {
        const dlb_pod_usage_t *pod = &newest->pods[k];
        double sum = 0;
        size_t n = 0;

        if (!dlb_is_ps(pod->type))
            continue;
        ps++;
        if (pod->cpu_requested > asked)
            asked = pod->cpu_requested;
        for (size_t i = st->window_cnt; i-- > 0 && n < PS_CPU_SAMPLES;) {
            const dlb_pod_usage_t *p = dlb_sample_pod(&st->window[i], pod->name);

            if (!p)
                break;
            sum += p->cpu_used;
            n++;
        }
        if (n && sum / (double)n > busiest) {
            busiest = sum / (double)n;
            busiest_pod = pod->name;
        }
    }
    if (!ps || !busiest_pod)
        return 0;
    if (g->resource.cpu > 0)
        asked = g->resource.cpu;
    count = g->count > 0 ? g->count : (int)ps;
    cpu = ceil(busiest * (double)ps / (double)count) + PS_CPU_MARGIN;
    if (!(asked > 0) || cpu >= asked)
        return 0;
    dlb_reason_appendf(
        plan->reason, sizeof(plan->reason),
        " dlbrain: PS CPU %g = ceil(the busiest PS (%s) mean %.2f x %zu/%d PS) + %d, "
        "for %g.",
        cpu, busiest_pod, busiest, ps, count, PS_CPU_MARGIN, asked);
    g->resource.cpu = cpu;
    return 0;
}
