/* Fixtures of the optimizer tests (test_opt_oom.c, test_opt_vpa.c,
 * test_opt_trend.c, test_opt_health.c, test_opt_model.c,
 * test_router_dlbrain.c): static compound literals, nothing to free. */
#ifndef DLB_TEST_DLBRAIN_FIXTURE_H
#define DLB_TEST_DLBRAIN_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "optimizer.h"

#define GIB DLB_GIB
#define MIB DLB_MIB

#define COUNT_OF(type, ...) (sizeof((type[]){__VA_ARGS__}) / sizeof(type))

/* A runtime sample's pod: name, type, memory used, memory requested. */
#define MPOD(n, t, used, req)                                                                      \
    {                                                                                              \
        .name = n, .type = t, .memory_used = used, .memory_requested = req                         \
    }
/* A worker that reports its own speed (steps/s). */
#define SPOD(n, spd)                                                                               \
    {                                                                                              \
        .name = n, .type = "worker", .has_speed = 1, .speed = spd                                  \
    }
/* A sample at t seconds, with its global step. */
#define TSAMPLE(id, t, step, ...)                                                                  \
    {                                                                                              \
        .event_id = id, .event_time_ms = (int64_t)(t)*1000, .global_step = step,                   \
        .pods = (dlb_pod_usage_t[]){__VA_ARGS__},                                                  \
        .pods_cnt = COUNT_OF(dlb_pod_usage_t, __VA_ARGS__)                                         \
    }
/* ... and the job's speed (steps/s). */
#define TSAMPLE_S(id, t, step, spd, ...)                                                           \
    {                                                                                              \
        .event_id = id, .event_time_ms = (int64_t)(t)*1000, .global_step = step, .speed = spd,     \
        .pods = (dlb_pod_usage_t[]){__VA_ARGS__},                                                  \
        .pods_cnt = COUNT_OF(dlb_pod_usage_t, __VA_ARGS__)                                         \
    }
#define SAMPLE(id, ...) TSAMPLE(id, 0, 0, __VA_ARGS__)
#define WINDOW(...)                                                                                \
    .window = (dlb_runtime_sample_t[]){__VA_ARGS__},                                               \
    .window_cnt = COUNT_OF(dlb_runtime_sample_t, __VA_ARGS__)
#define SAMPLES(...)                                                                               \
    .samples = (dlb_runtime_sample_t[]){__VA_ARGS__},                                              \
    .samples_cnt = COUNT_OF(dlb_runtime_sample_t, __VA_ARGS__)
#define OOMS(...)                                                                                  \
    .oom_pods = (char[][DLB_ID_MAX]){__VA_ARGS__},                                                 \
    .oom_pods_cnt = sizeof((char[][DLB_ID_MAX]){__VA_ARGS__}) / DLB_ID_MAX
#define HISTORY(...)                                                                               \
    {                                                                                              \
        .jobs = (dlb_hist_job_t[]){__VA_ARGS__}, .jobs_cnt = COUNT_OF(dlb_hist_job_t, __VA_ARGS__) \
    }
/* A pod status: name, type, time, OOM count, OOM event, memory requested. */
#define STATUS(n, t, time, ooms, ev, req)                                                          \
    {                                                                                              \
        .name = n, .type = t, .last_event_time_ms = time, .oom_count = ooms,                       \
        .last_oom_event_id = ev, .last_kind = "oom_killed", .memory_requested = req                \
    }
#define STATUSES(...)                                                                              \
    .pods = (dlb_pod_status_t[]){__VA_ARGS__}, .pods_cnt = COUNT_OF(dlb_pod_status_t, __VA_ARGS__)
/* Earlier OOM answers (table oom_plans): pod, OOM event, plan, memory. */
#define ANSWER(pod, ev, plan, mem)                                                                 \
    {                                                                                              \
        .pod_name = pod, .oom_event_id = ev, .plan_id = plan, .memory = mem                        \
    }
#define ANSWERS(...) (const dlb_oom_plan_t[]){__VA_ARGS__}, COUNT_OF(dlb_oom_plan_t, __VA_ARGS__)
#define NO_ANSWERS   NULL, 0

#define NOJOB                                                                                      \
    {                                                                                              \
        .pods_cnt = 0                                                                              \
    }
#define NOHIST                                                                                     \
    {                                                                                              \
        .jobs_cnt = 0                                                                              \
    }

static inline void fixture_plan_free(dlb_plan_t *plan)
{
    free(plan->groups);
    free(plan->pods);
    free(plan->actions);
    memset(plan, 0, sizeof(*plan));
}

/* Worker history shared by the OOM tests.
 * h1: w0 last memory_used 11G (its earlier 30G is not "last"), w1 last 12G;
 * h2: w0 was OOMKilled, last 20G -> 20G*1.2 = 24G = 25769803776 (exact);
 * the PS in h1 (90G) is not a worker. Max = 24G. */
#define HIST_WITH_OOM                                                                              \
    HISTORY({.job_uid = "h1",                                                                      \
             SAMPLES(SAMPLE("h1-r1", MPOD("h1-worker-0", "worker", 30 * GIB, 0),                   \
                            MPOD("h1-worker-1", "worker", 12 * GIB, 0),                            \
                            MPOD("h1-ps-0", "ps", 90 * GIB, 0)),                                   \
                     SAMPLE("h1-r2", MPOD("h1-worker-0", "worker", 11 * GIB, 0)))},                \
            {.job_uid = "h2",                                                                      \
             SAMPLES(SAMPLE("h2-r1", MPOD("h2-worker-0", "worker", 20 * GIB, 0))),                 \
             OOMS("h2-worker-0")})

#endif
