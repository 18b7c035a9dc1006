/* DLRover's worker resource optimizer (reference section 3; stages
 * job_stage_worker_initial and job_stage_worker_running): the worker count
 * from PS CPU utilisation, the speed trend and the phase; worker CPU and
 * memory from the workers' usage. */
#include "optimizer.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_util.h"

#define MIN_RECORDS       3    /* fewer usable records are start-up noise */
#define SINGULAR_SPAN     3    /* a spike is judged against records within +-3 */
#define SINGULAR_RISE     1.15 /* >= 15% above every neighbour: a spike */
#define PS_EXHAUSTED      0.95 /* PS CPU util above this: fewer workers */
#define PS_TARGET         0.8  /* PS CPU util workers are added up to */
#define DECREASE          4    /* workers removed when PS are exhausted */
#define SLOWDOWN          0.1  /* mean speed >= 10% lower after a change: decelerated */
#define SHORT_JOB_SEC     1800.0
#define SHORT_JOB_WORKERS 10 /* most workers for a short job */
#define INITIAL_MAX       32 /* most workers in the initial phase */
#define STABLE_STEP       4  /* most workers added by one plan in the stable phase */
#define MAX_REPLICA       60
#define CPU_MARGIN        1.0 /* cores on top of the workers' CPU */
#define CPU_FEW_RECORDS   6   /* fewer records: max of the last 3, else the mean */
#define CPU_LAST          3
#define MEMORY_MARGIN_NUM 1 /* memory margin = 20% of the max, at most 8 GiB */
#define MEMORY_MARGIN_DEN 5
#define MEMORY_MARGIN_MAX (8 * DLB_GIB)

/* CPU utilisation of a PS in a record, -1 when its request is unknown. */
static double ps_util(const dlb_pod_usage_t *p)
{
    return p->cpu_requested > 0 ? p->cpu_used / p->cpu_requested : -1;
}

/* A record is a singularity when one of its PS has a CPU utilisation >= 15%
 * above its utilisation in every other record within +-3 (of the records
 * with the same PS set; at least one such neighbour). */
static int is_singular(const dlb_runtime_sample_t *const *recs, size_t n, size_t i)
{
    const dlb_runtime_sample_t *r = recs[i];
    size_t k, j, lo = i > SINGULAR_SPAN ? i - SINGULAR_SPAN : 0;
    size_t hi = i + SINGULAR_SPAN < n - 1 ? i + SINGULAR_SPAN : n - 1;

    for (k = 0; k < r->pods_cnt; k++) {
        const dlb_pod_usage_t *p = &r->pods[k];
        double u = ps_util(p);
        size_t nb = 0;
        int spike = 1;

        if (!dlb_is_ps(p->type) || u <= 0)
            continue;
        for (j = lo; j <= hi && spike; j++) {
            const dlb_pod_usage_t *q;
            double v;

            if (j == i || !(q = dlb_sample_pod(recs[j], p->name)) || (v = ps_util(q)) < 0)
                continue;
            nb++;
            if (u < v * SINGULAR_RISE)
                spike = 0;
        }
        if (spike && nb)
            return 1;
    }
    return 0;
}

static double mean_speed(const dlb_runtime_sample_t *const *recs, size_t from, size_t to)
{
    double sum = 0;
    size_t i;

    for (i = from; i < to; i++)
        sum += recs[i]->speed;
    return to > from ? sum / (double)(to - from) : 0;
}

/* The phase DLRover's master sends (plan_request v2's config,
 * "optimizer.worker.optimize-phase"): 1 stable, 0 initial or sample, -1 when
 * the request says none (or something else). */
static int master_phase(const dlb_plan_request_t *req, const char **name)
{
    const char *p = dlb_plan_request_config(req, DLB_CONFIG_WORKER_PHASE);

    *name = p;
    if (p && !strcmp(p, "stable"))
        return 1;
    if (p && (!strcmp(p, "initial") || !strcmp(p, "sample")))
        return 0;
    return -1;
}

/* Choices where the reference is silent:
 * - The phase is the master's when the request carries one (plan_request v2:
 *   "initial", "sample" or "stable"); else "initial" while the worker count
 *   never changed over the usable records, "stable" once it did (the only
 *   phase an older master's request can be given). DLRover's "sample" phase
 *   (still sampling, before any scaling) behaves as initial, as in DLRover.
 *   A stable phase without a worker-count change in the records has no speed
 *   change to judge: the count is kept.
 * - "Current" is the number of worker pods (type worker; chief and evaluator
 *   are their own groups) in the newest window sample.
 * - PS util is, per PS of the newest usable record, the mean of cpu_used /
 *   cpu_requested over the usable records of the current worker count (since
 *   the last change), and the rules use the hottest PS. No PS with a CPU
 *   request, or no PS CPU used: no count change.
 * - Decelerated / increased compare the mean job speed of the records since
 *   the last change with that of the run of records just before it.
 * - Initial phase: the count goes up to ceil(0.8/util * current), at most 10
 *   for a job estimated at <= 1800 s (dlb_est_job_seconds) and at most 32
 *   otherwise (unknown time = long), never below current: this branch only
 *   adds workers (DLRover sets exactly 10, which can remove workers from a
 *   job whose PS have headroom).
 * - Stable phase whose last change did not increase the speed: count kept
 *   (more workers did not help last time).
 * - Fewer than 3 usable records: no plan. No worker CPU (memory) figures: CPU
 *   (memory) kept. */
int dlb_opt_worker_resource(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t **ps_recs = NULL, **recs = NULL;
    const dlb_runtime_sample_t *const *r;
    const char *hot_ps = "none";
    size_t n_ps, n = 0, i, k, change = 0, before = 0, seg, current = 0;
    size_t *counts = NULL;
    double max_util = -1, speed_before = 0, speed_after = 0, cpu_stat = 0, cpu = 0;
    int64_t max_mem = 0, memory = 0;
    int32_t count = 0;
    int err, stable, changed, told, decelerated = 0, increased = 0;
    const char *phase;

    if ((err = dlb_window_same_ps(st, &ps_recs, &n_ps)))
        return err;
    if (n_ps &&
        (!(recs = malloc(n_ps * sizeof(*recs))) || !(counts = malloc(n_ps * sizeof(*counts))))) {
        err = DLB_ERR_NOMEM;
        goto out;
    }
    for (i = 0; i < n_ps; i++)
        if (!is_singular(ps_recs, n_ps, i))
            recs[n++] = ps_recs[i];
    r = recs;
    if (n < MIN_RECORDS) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sWorker resource: %zu usable records (%zu of %zu with the newest PS "
                           "set, %zu singularity records dropped), need %d, nothing to change.",
                           dlb_reason_sep(plan->reason), n, n_ps, st->window_cnt, n_ps - n,
                           MIN_RECORDS);
        goto out;
    }
    current = dlb_sample_count(&st->window[st->window_cnt - 1], "worker");

    /* Phase: the last change of the worker count, and the run before it. */
    for (i = 0; i < n; i++) {
        counts[i] = dlb_sample_count(r[i], "worker");
        if (i > 0 && counts[i] != counts[i - 1])
            change = i;
    }
    changed = change > 0;
    told = master_phase(in->req, &phase);
    stable = told >= 0 ? told : changed;
    seg = change;
    if (changed) {
        for (before = change - 1; before > 0 && counts[before - 1] == counts[change - 1]; before--)
            ;
        speed_before = mean_speed(r, before, change);
        speed_after = mean_speed(r, change, n);
        decelerated = speed_before > 0 && speed_after <= speed_before * (1 - SLOWDOWN);
        increased = speed_after > speed_before;
    }

    /* PS util of the current worker count, the hottest PS. */
    for (k = 0; k < r[n - 1]->pods_cnt; k++) {
        const dlb_pod_usage_t *p = &r[n - 1]->pods[k];
        double sum = 0;
        size_t used = 0;

        if (!dlb_is_ps(p->type))
            continue;
        for (i = seg; i < n; i++) {
            const dlb_pod_usage_t *q = dlb_sample_pod(r[i], p->name);
            double u;

            if (q && (u = ps_util(q)) >= 0) {
                sum += u;
                used++;
            }
        }
        if (used && sum / (double)used > max_util) {
            max_util = sum / (double)used;
            hot_ps = p->name;
        }
    }

    /* Worker CPU and memory. */
    for (i = 0; i < n; i++) {
        double rec_cpu = 0;

        for (k = 0; k < r[i]->pods_cnt; k++) {
            const dlb_pod_usage_t *p = &r[i]->pods[k];

            if (strcmp(p->type, "worker"))
                continue;
            if (p->cpu_used > rec_cpu)
                rec_cpu = p->cpu_used;
            if (p->memory_used > max_mem)
                max_mem = p->memory_used;
        }
        if (n < CPU_FEW_RECORDS) {
            if (i + CPU_LAST >= n && rec_cpu > cpu_stat)
                cpu_stat = rec_cpu;
        } else {
            cpu_stat += rec_cpu;
        }
    }
    if (n >= CPU_FEW_RECORDS)
        cpu_stat /= (double)n;
    if (cpu_stat > 0)
        cpu = dlb_ceil_cores(cpu_stat + CPU_MARGIN);
    if (max_mem > 0) {
        int64_t margin = dlb_mem_scale(max_mem, MEMORY_MARGIN_NUM, MEMORY_MARGIN_DEN);

        memory = dlb_mem_add(max_mem, margin < MEMORY_MARGIN_MAX ? margin : MEMORY_MARGIN_MAX);
    }

    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sWorker resource: %zu usable records (%zu of %zu with the newest PS "
                       "set, %zu singularity records dropped), %zu workers now",
                       dlb_reason_sep(plan->reason), n, n_ps, st->window_cnt, n_ps - n, current);
    if (told >= 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "; phase %s (the master's)", phase);
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "; phase %s",
                           stable ? "stable" : "initial (worker count never changed)");
    if (changed)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%s workers %zu -> %zu, mean speed %.2f -> %.2f steps/s (%s)",
                           told >= 0 ? "; last change:" : ":", counts[change - 1], counts[change],
                           speed_before, speed_after,
                           decelerated ? "decelerated >= 10%"
                           : increased ? "increased"
                                       : "not increased");
    else if (stable)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           ", but the worker count never changed over the records");
    if (max_util < 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; no PS CPU utilisation (no PS with a CPU request), count kept");
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; max PS CPU util %.3f (%s, mean of %zu records)", max_util, hot_ps,
                           n - seg);

    if (max_util < 0) {
        /* said above */
    } else if (current == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           ", no worker pods in the newest sample, count kept");
    } else if (max_util > PS_EXHAUSTED) {
        size_t want = current > DECREASE ? current - DECREASE : 1;

        if (want < current)
            count = (int32_t)want;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " > 0.95, PS exhausted: replica=max(%zu-4, 1)=%zu%s", current, want,
                           count ? "" : ", count kept");
    } else if (max_util <= 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), ", PS idle, count kept");
    } else if (max_util >= PS_TARGET) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), " in [0.8, 0.95], count kept");
    } else if (decelerated) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " < 0.8 but the speed decelerated, count kept");
    } else {
        double want = dlb_ceil_cores(PS_TARGET / max_util * (double)current);

        dlb_reason_appendf(plan->reason, sizeof(plan->reason), " < 0.8: ceil(0.8/%.3f*%zu)=%g",
                           max_util, current, want);
        if (!stable) {
            double est = dlb_est_job_seconds(&st->job, r, n);
            double cap = est >= 0 && est <= SHORT_JOB_SEC ? SHORT_JOB_WORKERS : INITIAL_MAX;

            if (est >= 0)
                dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                                   ", estimated job time %.0fs %s 1800s -> at most %g", est,
                                   est <= SHORT_JOB_SEC ? "<=" : ">", cap);
            else
                dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                                   ", estimated job time unknown (taken as long) -> at most %g",
                                   cap);
            if (want > cap)
                want = cap;
            if (want < (double)current)
                want = (double)current;
        } else if (increased) {
            double step = want - (double)current;

            if (step > STABLE_STEP)
                step = STABLE_STEP;
            want = (double)current + step;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               ", stable and faster: %zu+min(4, that-%zu)=%g", current, current,
                               want);
        } else {
            want = (double)current;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%s",
                               changed ? ", but the last change did not increase the speed"
                                       : ", but no change of the count to judge the speed by");
        }
        if (want > MAX_REPLICA) {
            want = MAX_REPLICA;
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), ", capped at 60");
        }
        if (want != (double)current)
            count = (int32_t)want;
        if (count)
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), " -> %d workers", count);
        else
            dlb_reason_appendf(plan->reason, sizeof(plan->reason), ", count kept");
    }
    if (cpu > 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "; cpu=ceil(%s %.2f+1)=%g",
                           n < CPU_FEW_RECORDS ? "max worker CPU of the last 3 records"
                                               : "mean of the records' max worker CPU",
                           cpu_stat, cpu);
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "; no worker CPU figures, cpu kept");
    if (memory > 0)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; memory=max %.2fGiB+min(20%%, 8GiB)=%.2fGiB", DLB_GIB_F(max_mem),
                           DLB_GIB_F(memory));
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; no worker memory figures, memory kept");
    if (count == 0 && cpu == 0 && memory == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), ": nothing to change.");
    } else {
        dlb_group_resource_t *g = dlb_plan_group_get(plan, "worker");

        if (!g) {
            err = DLB_ERR_NOMEM;
            goto out;
        }
        g->count = count;
        g->resource.cpu = cpu;
        g->resource.memory = memory;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), ".");
    }
out:
    free(counts);
    free(recs);
    free(ps_recs);
    return err;
}
