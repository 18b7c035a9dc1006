/* The master-side clamp (DLRover NodeResourceLimit), applied to every plan
 * last so no optimizer can ask for what a master would refuse. */
#include "optimizer.h"

#include <stdio.h>
#include <string.h>

#include "opt_util.h"

/* What was clamped, collected before it goes into the reason in one piece. */
typedef struct clamp_log {
    char text[DLB_REASON_MAX];
    int cnt;
} clamp_log_t;

static void clamp_cpu(const dlb_limits_t *l, double *cpu, const char *what, clamp_log_t *log)
{
    double old = *cpu;

    if (*cpu <= 0) /* 0 = keep */
        return;
    if (l->cpu_min > 0 && *cpu < l->cpu_min)
        *cpu = l->cpu_min;
    if (l->cpu_max > 0 && *cpu > l->cpu_max)
        *cpu = l->cpu_max;
    if (*cpu != old)
        dlb_reason_appendf(log->text, sizeof(log->text), "%s%s.cpu %g->%g", log->cnt++ ? ", " : "",
                           what, old, *cpu);
}

static void clamp_memory(const dlb_limits_t *l, int64_t *mem, const char *what, clamp_log_t *log)
{
    int64_t old = *mem;

    if (*mem <= 0)
        return;
    if (l->memory_min > 0 && *mem < l->memory_min)
        *mem = l->memory_min;
    if (l->memory_max > 0 && *mem > l->memory_max)
        *mem = l->memory_max;
    if (*mem != old)
        dlb_reason_appendf(log->text, sizeof(log->text), "%s%s.memory %.2fGiB->%.2fGiB",
                           log->cnt++ ? ", " : "", what, DLB_GIB_F(old), DLB_GIB_F(*mem));
}

static void clamp_count(int max, int32_t *count, const char *what, clamp_log_t *log)
{
    if (max <= 0 || *count <= max)
        return;
    dlb_reason_appendf(log->text, sizeof(log->text), "%s%s.count %d->%d", log->cnt++ ? ", " : "",
                       what, (int)*count, max);
    *count = max;
}

void dlb_limits_apply(const dlb_limits_t *limits, dlb_plan_t *plan)
{
    clamp_log_t log;
    size_t i;

    if (!limits || !plan)
        return;
    memset(&log, 0, sizeof(log));
    for (i = 0; i < plan->groups_cnt; i++) {
        dlb_group_resource_t *g = &plan->groups[i];

        clamp_cpu(limits, &g->resource.cpu, g->group, &log);
        clamp_memory(limits, &g->resource.memory, g->group, &log);
        if (!strcmp(g->group, "worker"))
            clamp_count(limits->max_workers, &g->count, g->group, &log);
        else if (!strcmp(g->group, "ps"))
            clamp_count(limits->max_ps, &g->count, g->group, &log);
    }
    for (i = 0; i < plan->pods_cnt; i++) {
        dlb_pod_resource_t *p = &plan->pods[i];

        clamp_cpu(limits, &p->resource.cpu, p->name, &log);
        clamp_memory(limits, &p->resource.memory, p->name, &log);
    }
    if (log.cnt)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason), "%sclamped: %s.",
                           dlb_reason_sep(plan->reason), log.text);
}
