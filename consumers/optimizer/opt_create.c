/* The create-stage optimizers: DLRover's PS create and worker create, computed
 * from the runtime samples of similar history jobs (reference section 3). */
#include "optimizer.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_util.h"
#include "vec.h"

/* DLRover's defaults (go/brain optimizer config). */
#define PS_COLD_REPLICA   4
#define PS_COLD_CPU       12.0
#define PS_COLD_MEMORY    (16 * DLB_GIB)
#define PS_CPU_HEADROOM   4.0 /* cores added to the busiest PS's average */
#define PS_TOTAL_CPU_COEF 1.5 /* total PS CPU = job PS CPU * 1.5 */
#define PS_MAX_REPLICA    15  /* DLRover's cap on PS count; cpu is raised instead */
#define PS_MEMORY_NUM     6   /* memory = maxMem * 1.2 = 6/5 */
#define PS_MEMORY_DEN     5
#define WORKER_MIN_CPU    12.0
#define WORKER_MIN_MEMORY (16 * DLB_GIB)
#define WORKER_MEMORY_NUM 3 /* memory = max worker memory * 1.5 = 3/2 */
#define WORKER_MEMORY_DEN 2
#define WORKER_COUNT      1 /* DLRover starts with one worker and scales at runtime */

static const char *scenario_of(const dlb_opt_input_t *in)
{
    const dlb_job_event_t *job = &in->job->job;

    return job->has_meta && job->meta.scenario[0] ? job->meta.scenario : "(unknown)";
}

/* Per-PS running sum of cpu_used over one job's records. */
typedef struct ps_acc {
    const char *name;
    double cpu_sum;
    size_t records;
} ps_acc_t;

typedef struct ps_hist {
    size_t jobs;         /* jobs with at least one PS record */
    double max_cpu;      /* max over jobs and PS of a PS's mean cpu_used */
    double avg_job_cpu;  /* mean of the major cluster of the jobs' PS CPU */
    int64_t max_mem;     /* max memory_used of one PS in one record */
    int64_t max_job_mem; /* max total PS memory_used of one record */
} ps_hist_t;

static int ps_acc_add(ps_acc_t **acc, size_t *cnt, size_t *cap, const dlb_pod_usage_t *pod)
{
    size_t i;

    for (i = 0; i < *cnt; i++) {
        if (!strcmp((*acc)[i].name, pod->name)) {
            (*acc)[i].cpu_sum += pod->cpu_used;
            (*acc)[i].records++;
            return 0;
        }
    }
    if (dlb_vec_reserve((void **)acc, cap, *cnt + 1, sizeof(**acc)))
        return DLB_ERR_NOMEM;
    (*acc)[*cnt].name = pod->name;
    (*acc)[*cnt].cpu_sum = pod->cpu_used;
    (*acc)[*cnt].records = 1;
    (*cnt)++;
    return 0;
}

static int ps_history(const dlb_history_t *h, ps_hist_t *out)
{
    double *sums = NULL, *job_cpu = NULL;
    ps_acc_t *acc = NULL;
    size_t sums_cap = 0, acc_cnt, acc_cap = 0, i, j, k;
    int err = 0;

    memset(out, 0, sizeof(*out));
    if (h->jobs_cnt && !(job_cpu = calloc(h->jobs_cnt, sizeof(*job_cpu))))
        return DLB_ERR_NOMEM;
    for (i = 0; i < h->jobs_cnt; i++) {
        const dlb_hist_job_t *job = &h->jobs[i];
        size_t nsums = 0;

        if (dlb_vec_reserve((void **)&sums, &sums_cap, job->samples_cnt, sizeof(*sums))) {
            err = DLB_ERR_NOMEM;
            goto out;
        }
        acc_cnt = 0;
        for (j = 0; j < job->samples_cnt; j++) {
            const dlb_runtime_sample_t *s = &job->samples[j];
            double cpu = 0;
            int64_t mem = 0;
            int has_ps = 0;

            for (k = 0; k < s->pods_cnt; k++) {
                const dlb_pod_usage_t *pod = &s->pods[k];

                if (!dlb_is_ps(pod->type))
                    continue;
                has_ps = 1;
                cpu += pod->cpu_used;
                mem = dlb_mem_add(mem, pod->memory_used);
                if (pod->memory_used > out->max_mem)
                    out->max_mem = pod->memory_used;
                if ((err = ps_acc_add(&acc, &acc_cnt, &acc_cap, pod)))
                    goto out;
            }
            if (!has_ps)
                continue;
            sums[nsums++] = cpu;
            if (mem > out->max_job_mem)
                out->max_job_mem = mem;
        }
        if (nsums == 0)
            continue;
        job_cpu[out->jobs++] = dlb_major_cluster_mean(sums, nsums);
        for (k = 0; k < acc_cnt; k++) {
            double avg = acc[k].cpu_sum / (double)acc[k].records;

            if (avg > out->max_cpu)
                out->max_cpu = avg;
        }
    }
    out->avg_job_cpu = dlb_major_cluster_mean(job_cpu, out->jobs);
out:
    free(sums);
    free(job_cpu);
    free(acc);
    return err;
}

int dlb_opt_ps_create(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    dlb_group_resource_t *g;
    ps_hist_t ph;
    double cpu, total, replica;
    int64_t max_mem, memory;
    int err, capped = 0, mem_raised = 0, mem_cold = 0;

    if ((err = ps_history(in->history, &ph)))
        return err;
    if (!(g = dlb_plan_group_get(plan, "ps")))
        return DLB_ERR_NOMEM;

    if (ph.jobs == 0) {
        g->count = PS_COLD_REPLICA;
        g->resource.cpu = PS_COLD_CPU;
        g->resource.memory = PS_COLD_MEMORY;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS create: cold start (no PS samples in %zu history jobs of scenario "
                           "%s): %d PS x %g CPU x %.2fGiB.",
                           dlb_reason_sep(plan->reason), in->history->jobs_cnt, scenario_of(in),
                           g->count, g->resource.cpu, DLB_GIB_F(g->resource.memory));
        return 0;
    }

    cpu = ph.max_cpu + PS_CPU_HEADROOM;
    total = ph.avg_job_cpu * PS_TOTAL_CPU_COEF;
    replica = dlb_ceil_cores(total / cpu);
    if (replica > PS_MAX_REPLICA) {
        replica = PS_MAX_REPLICA;
        cpu = dlb_ceil_cores(total / PS_MAX_REPLICA);
        capped = 1;
    }
    /* PS with no measurable CPU still needs one PS to hold the model. */
    if (replica < 1)
        replica = 1;
    max_mem = ph.max_mem;
    if (dlb_mem_scale(max_mem, (int64_t)replica, 1) < ph.max_job_mem) {
        max_mem = dlb_mem_scale(ph.max_job_mem, 1, (int64_t)replica);
        mem_raised = 1;
    }
    memory = dlb_mem_scale(max_mem, PS_MEMORY_NUM, PS_MEMORY_DEN);
    /* History without memory figures says nothing about memory: 0 would mean
     * "keep" and a new job has nothing to keep, so use the cold-start size. */
    if (memory == 0) {
        memory = PS_COLD_MEMORY;
        mem_cold = 1;
    }

    g->count = (int32_t)replica;
    g->resource.cpu = cpu;
    g->resource.memory = memory;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sPS create: history of %zu jobs in scenario %s: maxCPU=%.2f "
                       "avgJobPSCPU=%.2f maxMem=%.2fGiB maxJobPSMem=%.2fGiB; cpu=maxCPU+4, "
                       "replica=ceil(avgJobPSCPU*1.5/cpu)",
                       dlb_reason_sep(plan->reason), ph.jobs, scenario_of(in), ph.max_cpu,
                       ph.avg_job_cpu, DLB_GIB_F(ph.max_mem), DLB_GIB_F(ph.max_job_mem));
    if (capped)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           ", capped at %d PS with cpu=ceil(total/%d)", PS_MAX_REPLICA,
                           PS_MAX_REPLICA);
    if (mem_raised)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           ", maxMem raised to maxJobPSMem/replica=%.2fGiB", DLB_GIB_F(max_mem));
    dlb_reason_appendf(plan->reason, sizeof(plan->reason), ", memory=%s: %d PS x %g CPU x %.2fGiB.",
                       mem_cold ? "the cold-start size (no PS memory in history)" : "maxMem*1.2",
                       g->count, g->resource.cpu, DLB_GIB_F(g->resource.memory));
    return 0;
}

int dlb_opt_worker_create(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_history_t *h = in->history;
    dlb_group_resource_t *g;
    size_t completed = 0, i, j, k;
    double max_cpu = 0, cpu;
    int64_t max_mem = 0, memory;
    int samples = 0;

    for (i = 0; i < h->jobs_cnt; i++) {
        const dlb_hist_job_t *job = &h->jobs[i];

        /* A failed or still running job's peak says nothing about what a
         * successful run needs (an OOM'd job peaks at its limit). */
        if (!job->completed)
            continue;
        completed++;
        for (j = 0; j < job->samples_cnt; j++) {
            const dlb_runtime_sample_t *s = &job->samples[j];

            for (k = 0; k < s->pods_cnt; k++) {
                const dlb_pod_usage_t *pod = &s->pods[k];

                if (strcmp(pod->type, "worker"))
                    continue;
                samples = 1;
                if (pod->cpu_used > max_cpu)
                    max_cpu = pod->cpu_used;
                if (pod->memory_used > max_mem)
                    max_mem = pod->memory_used;
            }
        }
    }

    memory = dlb_mem_scale(max_mem, WORKER_MEMORY_NUM, WORKER_MEMORY_DEN);
    if (memory < WORKER_MIN_MEMORY)
        memory = WORKER_MIN_MEMORY;
    cpu = dlb_ceil_cores(max_cpu);
    if (cpu < WORKER_MIN_CPU)
        cpu = WORKER_MIN_CPU;

    if (!(g = dlb_plan_group_get(plan, "worker")))
        return DLB_ERR_NOMEM;
    g->count = WORKER_COUNT;
    g->resource.cpu = cpu;
    g->resource.memory = memory;
    if (!samples)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sWorker create: cold start (no worker samples in %zu completed of %zu "
                           "history jobs of scenario %s): %d worker x %g CPU x %.2fGiB.",
                           dlb_reason_sep(plan->reason), completed, h->jobs_cnt, scenario_of(in),
                           g->count, g->resource.cpu, DLB_GIB_F(g->resource.memory));
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sWorker create: history of %zu completed jobs (of %zu) in scenario "
                           "%s: max worker memory %.2fGiB, max worker CPU %.2f; "
                           "memory=max(max*1.5, 16GiB), cpu=max(ceil(max), 12): "
                           "%d worker x %g CPU x %.2fGiB.",
                           dlb_reason_sep(plan->reason), completed, h->jobs_cnt, scenario_of(in),
                           DLB_GIB_F(max_mem), max_cpu, g->count, g->resource.cpu,
                           DLB_GIB_F(g->resource.memory));
    return 0;
}

/* DLRover runs worker create and PS create and merges their plans. */
int dlb_opt_create(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    int err;

    if ((err = dlb_opt_worker_create(in, plan)))
        return err;
    return dlb_opt_ps_create(in, plan);
}
