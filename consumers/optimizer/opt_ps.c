/* DLRover's PS optimizers after create (reference section 3): PS init-adjust
 * (job_stage_ps_initial), hot PS and PS utilisation shrink (running stages).
 * All three read only the window samples whose PS set equals the newest
 * sample's: a record of another PS layout says nothing about this one. */
#include "optimizer.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_util.h"

/* PS init-adjust: DLRover's defaults. */
#define INIT_DEFAULT_CPU     16.0  /* psCPU for big (or unknown) models */
#define INIT_SMALL_RECV_OPS  150.0 /* recv ops per PS at most this: a small model */
#define INIT_CPU_PER_RECV_OP 0.08
#define INIT_CPU_MARGIN      4.0 /* cores on top of the op estimate and of the busiest PS */
#define INIT_SHORT_JOB_SEC   1800.0
#define INIT_TARGET_SHORT    10.0 /* workers a short job is sized for */
#define INIT_TARGET_LONG     20.0
#define INIT_MAX_PS          15 /* DLRover's PS count limit; freeRate spreads load over it */
#define PS_MEMORY_NUM        6  /* memory = max used * 1.2 = 6/5 */
#define PS_MEMORY_DEN        5

/* Hot PS. */
#define HOT_RECORDS        3
#define HOT_CPU_UTIL       0.8  /* avg CPU / request above this: CPU-hot */
#define HOT_MEMORY_UTIL    0.9  /* used / request above this in every record: memory-hot */
#define HOT_TARGET_WORKERS 32.0 /* PS CPU is scaled to serve this many workers */
#define HOT_MAX_CPU        32.0 /* no PS is planned past this many cores */
#define HOT_MEMORY_ADD     (8 * DLB_GIB)

/* PS utilisation shrink. */
#define UTIL_MIN_RECORDS   3
#define UTIL_MIN_REMAINING 3600.0 /* a PS restart is not worth it closer to the end */
#define UTIL_MANY_WORKERS  32
#define UTIL_BUSY          0.8  /* max PS CPU / request */
#define UTIL_BIG_PS_CPU    25.6 /* 0.8 * 32 cores */
#define UTIL_LOW           0.4  /* PS below this max CPU / request shrink */
#define UTIL_CPU_MARGIN    4.0

/* One PS of the newest record, over a run of records of the same PS set. */
typedef struct ps_stat {
    const dlb_pod_usage_t *pod; /* in the newest record: name and requests */
    double cpu_avg;             /* mean cpu_used */
    double cpu_max;             /* max cpu_used */
    int64_t mem_max;            /* max memory_used */
    double mem_ratio_min;       /* min memory_used / memory_requested, 0 if a request is 0 */
} ps_stat_t;

/* Stats of every PS of recs[n - 1] over recs[first .. n - 1]. Same PS set in
 * every record, so each PS is in each record; a missing one is skipped. */
static int ps_stats(const dlb_runtime_sample_t *const *recs, size_t first, size_t n,
                    ps_stat_t **out, size_t *cnt)
{
    const dlb_runtime_sample_t *newest = recs[n - 1];
    ps_stat_t *ps;
    size_t nps = dlb_sample_count(newest, "ps"), i, j, k = 0;

    *out = NULL;
    *cnt = 0;
    if (nps == 0)
        return 0;
    if (!(ps = calloc(nps, sizeof(*ps))))
        return DLB_ERR_NOMEM;
    for (i = 0; i < newest->pods_cnt; i++) {
        ps_stat_t *s;
        size_t used = 0;

        if (!dlb_is_ps(newest->pods[i].type))
            continue;
        s = &ps[k++];
        s->pod = &newest->pods[i];
        s->mem_ratio_min = -1;
        for (j = first; j < n; j++) {
            const dlb_pod_usage_t *p = dlb_sample_pod(recs[j], s->pod->name);
            double ratio;

            if (!p)
                continue;
            used++;
            s->cpu_avg += p->cpu_used;
            if (p->cpu_used > s->cpu_max)
                s->cpu_max = p->cpu_used;
            if (p->memory_used > s->mem_max)
                s->mem_max = p->memory_used;
            ratio =
                p->memory_requested > 0 ? (double)p->memory_used / (double)p->memory_requested : 0;
            if (s->mem_ratio_min < 0 || ratio < s->mem_ratio_min)
                s->mem_ratio_min = ratio;
        }
        if (used)
            s->cpu_avg /= (double)used;
        if (s->mem_ratio_min < 0)
            s->mem_ratio_min = 0;
    }
    *out = ps;
    *cnt = k;
    return 0;
}

/* The entry for pod among those this optimizer added (from index first on),
 * appended when absent. Entries of optimizers that ran before in a composed
 * plan are not touched: the composer merges them. */
static dlb_pod_resource_t *pod_get(dlb_plan_t *plan, size_t first, const char *name)
{
    size_t i;

    for (i = first; i < plan->pods_cnt; i++)
        if (!strcmp(plan->pods[i].name, name))
            return &plan->pods[i];
    return dlb_plan_add_pod(plan, name);
}

/* ---- PS init-adjust --------------------------------------------------------
 *
 * Choices where the reference is silent:
 * - It adjusts running PS from their samples: no PS sample yet, no change.
 * - recv_op_count unknown (no model section, or 0): psCPU = 16, the size
 *   DLRover gives models that are not small; DLRover's 0 ops -> 4 cores would
 *   starve a PS whose model we simply were not told about.
 * - Unknown estimated job time (no dataset size / batch size / max_steps, or
 *   no speed yet) counts as a long job (target 20): a job with no known end
 *   is usually one that runs until stopped.
 * - No worker pods in the newest sample, or no PS CPU used yet: the count
 *   formula has nothing to scale, the count is kept (0); CPU and memory are
 *   still planned.
 * - freeRate's cap (hottest PS - mean of the others) applies with 2 or more
 *   PS and only when the hottest is above that mean (else it does not bind).
 * - The count is 1..15 (DLRover's PS limit). */
int dlb_opt_ps_initial(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_job_event_t *job = &in->job->job;
    const dlb_runtime_sample_t **recs = NULL;
    const ps_stat_t *hottest = NULL;
    ps_stat_t *ps = NULL;
    dlb_group_resource_t *g;
    size_t n, nps = 0, workers, i, j;
    double cpu, floor_cpu, sum_avg = 0, max_sum = 0;
    int64_t max_mem = 0;
    int err;

    if ((err = dlb_window_same_ps(in->job, &recs, &n)))
        return err;
    if (n && (err = ps_stats(recs, 0, n, &ps, &nps)))
        goto out;
    if (nps == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS init-adjust: no runtime sample with PS pods yet, nothing to "
                           "change.",
                           dlb_reason_sep(plan->reason));
        goto out;
    }
    for (i = 0; i < nps; i++) {
        sum_avg += ps[i].cpu_avg;
        if (!hottest || ps[i].cpu_avg > hottest->cpu_avg)
            hottest = &ps[i];
        if (ps[i].mem_max > max_mem)
            max_mem = ps[i].mem_max;
    }
    for (j = 0; j < n; j++) {
        double sum = 0;

        for (i = 0; i < recs[j]->pods_cnt; i++)
            if (dlb_is_ps(recs[j]->pods[i].type))
                sum += recs[j]->pods[i].cpu_used;
        if (sum > max_sum)
            max_sum = sum;
    }
    workers = dlb_sample_count(recs[n - 1], "worker");

    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sPS init-adjust: %zu records with the %zu PS of the newest sample, %zu "
                       "workers; ",
                       dlb_reason_sep(plan->reason), n, nps, workers);
    if (job->has_model && job->model.recv_op_count > 0) {
        double per_ps = (double)job->model.recv_op_count / (double)nps;

        if (per_ps <= INIT_SMALL_RECV_OPS) {
            cpu = dlb_ceil_cores(INIT_CPU_PER_RECV_OP * per_ps) + INIT_CPU_MARGIN;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               "recv_op_count %lld / %zu PS = %.2f <= 150 per PS -> "
                               "psCPU=ceil(0.08*%.2f)+4=%g",
                               (long long)job->model.recv_op_count, nps, per_ps, per_ps, cpu);
        } else {
            cpu = INIT_DEFAULT_CPU;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               "recv_op_count %lld / %zu PS = %.2f > 150 per PS -> psCPU=%g",
                               (long long)job->model.recv_op_count, nps, per_ps, cpu);
        }
    } else {
        cpu = INIT_DEFAULT_CPU;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "recv_op_count unknown -> psCPU=%g",
                           cpu);
    }
    floor_cpu = dlb_ceil_cores(hottest->cpu_avg) + INIT_CPU_MARGIN;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       ", at least ceil(busiest PS avg CPU %.2f (%s))+4=%g", hottest->cpu_avg,
                       hottest->pod->name, floor_cpu);
    if (cpu < floor_cpu)
        cpu = floor_cpu;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason), " -> psCPU=%g", cpu);

    if (!(g = dlb_plan_group_get(plan, "ps"))) {
        err = DLB_ERR_NOMEM;
        goto out;
    }
    g->resource.cpu = cpu;
    g->resource.memory = dlb_mem_scale(max_mem, PS_MEMORY_NUM, PS_MEMORY_DEN);

    if (workers == 0 || max_sum <= 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "; %s, PS count kept",
                           workers == 0 ? "no worker pods in the newest sample"
                                        : "no PS CPU used yet");
    } else {
        double est = dlb_est_job_seconds(job, recs, n), target, free_rate, reduced, replica;

        if (est >= 0 && est <= INIT_SHORT_JOB_SEC) {
            target = INIT_TARGET_SHORT;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               "; estimated job time %.0fs (steps / per-worker speed) <= 1800s "
                               "-> target %g workers",
                               est, target);
        } else {
            target = INIT_TARGET_LONG;
            if (est >= 0)
                dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                                   "; estimated job time %.0fs (steps / per-worker speed) > "
                                   "1800s -> target %g workers",
                                   est, target);
            else
                dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                                   "; estimated job time unknown (no steps or no speed), taken "
                                   "as long -> target %g workers",
                                   target);
        }
        /* hottest->cpu_avg > 0: the records used some PS CPU. */
        free_rate = cpu / (hottest->cpu_avg * (double)nps / (double)INIT_MAX_PS);
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; freeRate=psCPU/(maxPSCPU*%zu/15)=%.2f", nps, free_rate);
        if (nps >= 2) {
            double others = (sum_avg - hottest->cpu_avg) / (double)(nps - 1);
            double gap = hottest->cpu_avg - others;

            if (gap > 0 && cpu / gap < free_rate) {
                free_rate = cpu / gap;
                dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                                   ", capped at psCPU/(hottest %.2f - mean of others %.2f)=%.2f",
                                   hottest->cpu_avg, others, free_rate);
            }
        }
        reduced = dlb_ceil_cores(free_rate * (double)workers);
        if (reduced < target) {
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               ", target reduced to ceil(freeRate*%zu)=%g", workers, reduced);
            target = reduced;
        }
        replica = dlb_ceil_cores(target / (double)workers * max_sum / cpu);
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; replica=ceil(%g/%zu workers*max PS CPU sum %.2f/psCPU)=%g", target,
                           workers, max_sum, replica);
        if (replica > INIT_MAX_PS) {
            replica = INIT_MAX_PS;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), ", capped at 15");
        }
        if (replica < 1)
            replica = 1;
        g->count = (int32_t)replica;
    }
    if (g->resource.memory > 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; memory=max PS memory %.2fGiB*1.2=%.2fGiB", DLB_GIB_F(max_mem),
                           DLB_GIB_F(g->resource.memory));
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; no PS memory figures, memory kept");
    dlb_reason_appendf(plan->reason, sizeof(plan->reason), " -> ps count ");
    if (g->count > 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%d", g->count);
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "kept");
    dlb_reason_appendf(plan->reason, sizeof(plan->reason), ", cpu %g, memory ", g->resource.cpu);
    if (g->resource.memory > 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%.2fGiB.",
                           DLB_GIB_F(g->resource.memory));
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "kept.");
out:
    free(ps);
    free(recs);
    return err;
}

/* ---- hot PS ------------------------------------------------------------------
 *
 * Choices where the reference is silent:
 * - Fewer than 3 records with the newest PS set: not enough to call a PS hot
 *   (CPU and memory alike), no change.
 * - A PS's request is its request in the newest record; a PS without a CPU
 *   (memory) request cannot be CPU- (memory-) hot nor get a CPU (memory) plan.
 * - The 32-core cap binds on every PS, not only the hot ones as in DLRover's
 *   local optimizer: no PS is planned past 32 cores.
 * - CPU-hot PS with no worker pods in the newest sample: 32 / 0 workers has
 *   no meaning, only memory is planned. */
int dlb_opt_hot_ps(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_runtime_sample_t **recs = NULL;
    ps_stat_t *ps = NULL;
    const ps_stat_t *top_cpu = NULL, *top_mem = NULL;
    size_t n, nps = 0, workers, i, cpu_hot = 0, mem_hot = 0, planned = 0;
    size_t first_pod = plan->pods_cnt;
    double coeff = 0, top_cpu_util = 0;
    int err, capped = 0;

    if ((err = dlb_window_same_ps(in->job, &recs, &n)))
        return err;
    if (n == 0 || dlb_sample_count(recs[n - 1], "ps") == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sHot PS: no PS pods in the newest runtime sample, nothing to "
                           "change.",
                           dlb_reason_sep(plan->reason));
        goto out;
    }
    if (n < HOT_RECORDS) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sHot PS: %zu records with the newest PS set, need %d, nothing to "
                           "change.",
                           dlb_reason_sep(plan->reason), n, HOT_RECORDS);
        goto out;
    }
    if ((err = ps_stats(recs, n - HOT_RECORDS, n, &ps, &nps)))
        goto out;
    workers = dlb_sample_count(recs[n - 1], "worker");
    for (i = 0; i < nps; i++) {
        double req = ps[i].pod->cpu_requested;

        if (req > 0 && (!top_cpu || ps[i].cpu_avg / req > top_cpu_util)) {
            top_cpu = &ps[i];
            top_cpu_util = ps[i].cpu_avg / req;
        }
        if (req > 0 && ps[i].cpu_avg / req > HOT_CPU_UTIL)
            cpu_hot++;
        if (!top_mem || ps[i].mem_ratio_min > top_mem->mem_ratio_min)
            top_mem = &ps[i];
        if (ps[i].mem_ratio_min > HOT_MEMORY_UTIL)
            mem_hot++;
    }
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sHot PS: last %d of %zu records with the newest PS set (%zu PS, %zu "
                       "workers)",
                       dlb_reason_sep(plan->reason), HOT_RECORDS, n, nps, workers);
    if (!cpu_hot && !mem_hot) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           ": no PS hot (max avg CPU/request %.2f of %s, not > 0.8; max memory "
                           "used/request in all 3 %.2f of %s, not > 0.9), nothing to change.",
                           top_cpu_util, top_cpu ? top_cpu->pod->name : "none",
                           top_mem->mem_ratio_min, top_mem->pod->name);
        goto out;
    }

    if (cpu_hot) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), ": CPU-hot (avg/request > 0.8):");
        for (i = 0; i < nps; i++)
            if (ps[i].pod->cpu_requested > 0 &&
                ps[i].cpu_avg / ps[i].pod->cpu_requested > HOT_CPU_UTIL)
                dlb_reason_appendf(plan->reason, sizeof(plan->reason), " %s %.2f/%g",
                                   ps[i].pod->name, ps[i].cpu_avg, ps[i].pod->cpu_requested);
    }
    if (cpu_hot && workers == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; no worker pods in the newest sample, CPU kept");
    } else if (cpu_hot) {
        coeff = HOT_TARGET_WORKERS / (double)workers;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "; coeff=32/%zu workers=%.3f",
                           workers, coeff);
        for (i = 0; i < nps; i++) {
            if (ps[i].cpu_avg > 0 && ps[i].cpu_avg * coeff > HOT_MAX_CPU) {
                coeff = HOT_MAX_CPU / ps[i].cpu_avg;
                capped = 1;
            }
        }
        if (capped)
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               ", capped to %.3f so no PS passes 32 cores", coeff);
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "; CPU ceil(avg*coeff):");
        for (i = 0; i < nps; i++) {
            double want = dlb_ceil_cores(ps[i].cpu_avg * coeff);
            dlb_pod_resource_t *p;

            if (ps[i].pod->cpu_requested <= 0 || want <= ps[i].pod->cpu_requested)
                continue;
            if (!(p = pod_get(plan, first_pod, ps[i].pod->name))) {
                err = DLB_ERR_NOMEM;
                goto out;
            }
            p->resource.cpu = want;
            planned++;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), " %s %g->%g", ps[i].pod->name,
                               ps[i].pod->cpu_requested, want);
        }
        if (!planned)
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), " none above its request");
    }
    if (mem_hot) {
        dlb_reason_appendf(
            plan->reason, sizeof(plan->reason),
            "%s memory-hot (used/request > 0.9 in all 3), +8GiB:", cpu_hot ? ";" : ":");
        for (i = 0; i < nps; i++) {
            int64_t req = ps[i].pod->memory_requested, memory;
            dlb_pod_resource_t *p;

            if (ps[i].mem_ratio_min <= HOT_MEMORY_UTIL || req <= 0)
                continue;
            memory = dlb_mem_add(req, HOT_MEMORY_ADD);
            if (!(p = pod_get(plan, first_pod, ps[i].pod->name))) {
                err = DLB_ERR_NOMEM;
                goto out;
            }
            p->resource.memory = memory;
            planned++;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), " %s %.2fGiB->%.2fGiB",
                               ps[i].pod->name, DLB_GIB_F(req), DLB_GIB_F(memory));
        }
    }
    dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%s",
                       planned ? "." : "; nothing to change.");
out:
    free(ps);
    free(recs);
    return err;
}

/* ---- PS utilisation shrink ----------------------------------------------------
 *
 * Choices where the reference is silent:
 * - "Max PS CPU util" is the max over PS of max cpu_used / request over the
 *   records with the newest PS set (the same ratio that picks who shrinks);
 *   "averages" are means over those records.
 * - Remaining time = (steps - newest global_step) / mean speed of the newest
 *   5 records; unknown (no steps or no speed) counts as long enough, like the
 *   unknown job time of PS init-adjust.
 * - It only shrinks: a PS keeps its CPU when ceil(max)+4 is not below its
 *   request (a 4-core PS at 1.5 would otherwise grow to 6), and its memory
 *   unless max used * 1.2 is below its request; a PS without a CPU request
 *   has no utilisation and is left alone. Growth is hot PS's and OOM's job. */
int dlb_opt_ps_util(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_runtime_sample_t **recs = NULL;
    ps_stat_t *ps = NULL;
    const ps_stat_t *busiest = NULL, *biggest = NULL;
    size_t n, nps = 0, workers, i, planned = 0, first_pod = plan->pods_cnt;
    double remaining, max_util = 0;
    int err;

    if ((err = dlb_window_same_ps(in->job, &recs, &n)))
        return err;
    if (n == 0 || dlb_sample_count(recs[n - 1], "ps") == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS utilisation: no PS pods in the newest runtime sample, nothing to "
                           "change.",
                           dlb_reason_sep(plan->reason));
        goto out;
    }
    if (n < UTIL_MIN_RECORDS) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS utilisation: %zu records with the newest PS set, need %d, "
                           "nothing to change.",
                           dlb_reason_sep(plan->reason), n, UTIL_MIN_RECORDS);
        goto out;
    }
    remaining = dlb_remaining_seconds(&in->job->job, recs, n);
    if (remaining >= 0 && remaining < UTIL_MIN_REMAINING) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS utilisation: remaining time %.0fs < 3600s, not worth a PS "
                           "restart, nothing to change.",
                           dlb_reason_sep(plan->reason), remaining);
        goto out;
    }
    if ((err = ps_stats(recs, 0, n, &ps, &nps)))
        goto out;
    workers = dlb_sample_count(recs[n - 1], "worker");
    for (i = 0; i < nps; i++) {
        double req = ps[i].pod->cpu_requested;

        if (req > 0 && (!busiest || ps[i].cpu_max / req > max_util)) {
            busiest = &ps[i];
            max_util = ps[i].cpu_max / req;
        }
        if (!biggest || ps[i].cpu_avg > biggest->cpu_avg)
            biggest = &ps[i];
    }
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sPS utilisation: %zu records with the newest PS set (%zu PS, %zu "
                       "workers), remaining time ",
                       dlb_reason_sep(plan->reason), n, nps, workers);
    if (remaining >= 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%.0fs", remaining);
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "unknown (taken as long)");
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "; max PS CPU util %.2f (%s), busiest PS avg %.2f CPU (%s)", max_util,
                       busiest ? busiest->pod->name : "none", biggest->cpu_avg, biggest->pod->name);
    if (!((workers >= UTIL_MANY_WORKERS && max_util > UTIL_BUSY) ||
          biggest->cpu_avg >= UTIL_BIG_PS_CPU)) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           ": neither (>= 32 workers and util > 0.8) nor a PS averaging >= 25.6 "
                           "CPU, nothing to change.");
        goto out;
    }
    dlb_reason_appendf(
        plan->reason, sizeof(plan->reason),
        "; shrink PS with max CPU/request < 0.4 to ceil(max)+4 CPU, max memory*1.2:");
    for (i = 0; i < nps; i++) {
        const dlb_pod_usage_t *pod = ps[i].pod;
        double cpu = dlb_ceil_cores(ps[i].cpu_max) + UTIL_CPU_MARGIN;
        int64_t memory = dlb_mem_scale(ps[i].mem_max, PS_MEMORY_NUM, PS_MEMORY_DEN);
        dlb_pod_resource_t *p;

        if (pod->cpu_requested <= 0 || ps[i].cpu_max / pod->cpu_requested >= UTIL_LOW)
            continue;
        if (cpu >= pod->cpu_requested)
            cpu = 0;
        if (memory <= 0 || pod->memory_requested <= 0 || memory >= pod->memory_requested)
            memory = 0;
        if (cpu == 0 && memory == 0)
            continue;
        if (!(p = pod_get(plan, first_pod, pod->name))) {
            err = DLB_ERR_NOMEM;
            goto out;
        }
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), " %s (max %.2f/%g)", pod->name,
                           ps[i].cpu_max, pod->cpu_requested);
        if (cpu > 0) {
            p->resource.cpu = cpu;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), " cpu %g->%g",
                               pod->cpu_requested, cpu);
        }
        if (memory > 0) {
            p->resource.memory = memory;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), " memory %.2fGiB->%.2fGiB",
                               DLB_GIB_F(pod->memory_requested), DLB_GIB_F(memory));
        }
        planned++;
    }
    dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%s",
                       planned ? "." : " none, nothing to change.");
out:
    free(ps);
    free(recs);
    return err;
}
