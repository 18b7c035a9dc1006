/* DLRover's PS optimizers after create: PS init-adjust, hot PS and PS
 * utilisation shrink, each branch worked out by hand from the formulas in
 * reference section 3 (the arithmetic is in the comment above each case). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opt_util.h"
#include "optimizer.h"
#include "opt_plan.h"

#define GIB DLB_GIB

/* Fixtures as static compound literals: no allocation, nothing to free. */
#define COUNT_OF(type, ...) (sizeof((type[]){__VA_ARGS__}) / sizeof(type))
/* A PS of a runtime sample: name, cpu used / requested, memory used / requested. */
#define PS(n, cpu, creq, mem, mreq)                                                                \
    {                                                                                              \
        .name = n, .type = "ps", .cpu_used = cpu, .cpu_requested = creq, .memory_used = mem,       \
        .memory_requested = mreq                                                                   \
    }
#define WK(n, cpu, mem)                                                                            \
    {                                                                                              \
        .name = n, .type = "worker", .cpu_used = cpu, .memory_used = mem                           \
    }
#define W2 WK("j-worker-0", 1, GIB), WK("j-worker-1", 1, GIB)
#define W4 W2, WK("j-worker-2", 1, GIB), WK("j-worker-3", 1, GIB)
#define W8                                                                                         \
    W4, WK("j-worker-4", 1, GIB), WK("j-worker-5", 1, GIB), WK("j-worker-6", 1, GIB),              \
        WK("j-worker-7", 1, GIB)
#define W32 W8, W8, W8, W8 /* names repeat: only the count of worker pods matters here */
/* A runtime sample: id, job speed (steps/s), global step, pods. */
#define REC(id, spd, step, ...)                                                                    \
    {                                                                                              \
        .event_id = id, .speed = spd, .global_step = step,                                         \
        .pods = (dlb_pod_usage_t[]){__VA_ARGS__},                                                  \
        .pods_cnt = COUNT_OF(dlb_pod_usage_t, __VA_ARGS__)                                         \
    }
#define WINDOW(...)                                                                                \
    .window = (dlb_runtime_sample_t[]){__VA_ARGS__},                                               \
    .window_cnt = COUNT_OF(dlb_runtime_sample_t, __VA_ARGS__)
/* Job event sections: hyper-params and dataset size, model recv ops. */
#define HP(batch, epochs, max, dsize)                                                              \
    .has_hyper_params = 1,                                                                         \
    .hyper_params = {.batch_size = batch, .epoch = epochs, .max_steps = max}, .has_dataset = 1,    \
    .dataset = {.size = dsize}
#define MODEL(recv) .has_model = 1, .model = {.recv_op_count = recv}

typedef int (*opt_fn)(const dlb_opt_input_t *in, dlb_plan_t *plan);

typedef struct want_pod {
    const char *name;
    double cpu;
    int64_t memory;
} want_pod_t;

typedef struct ps_case {
    const char *name;
    opt_fn fn;
    dlb_job_state_t job;
    /* expected: a "ps" group (group = 1) and per-pod entries (name NULL ends) */
    int group;
    int32_t count;
    double cpu;
    int64_t memory;
    want_pod_t pods[4];
    const char *reason; /* expected substring */
} ps_case_t;

static void assert_cores(const char *what, double got, double want)
{
    if (fabs(got - want) > 1e-9) {
        print_error("%s cpu %.12g != %.12g\n", what, got, want);
        fail();
    }
}

static void plan_free(dlb_plan_t *plan)
{
    free(plan->groups);
    free(plan->pods);
    memset(plan, 0, sizeof(*plan));
}

/* ---- PS init-adjust ---------------------------------------------------------
 * Records for the count cases: 2 PS (ps-0 at c0, ps-1 at 4 cores), 4 workers,
 * job speed 4 steps/s -> per-worker speed 1 step/s. */
#define REC_I(id, c0)                                                                              \
    REC(id, 4, 0, PS("j-ps-0", c0, 16, 8 * GIB, 32 * GIB),                                         \
        PS("j-ps-1", 4, 16, 10 * GIB, 32 * GIB), W4)
/* ps-0 averages (4+5+6)/3 = 5, ps-1 4; record sums 8, 9, 10 -> max sum 10;
 * max memory 10G -> memory 12G = 12884901888.
 * recv 100 / 2 PS = 50 <= 150 -> psCPU = ceil(0.08*50)+4 = 8; busiest PS:
 * ceil(5)+4 = 9 > 8 -> psCPU 9.
 * freeRate = 9 / (5*2/15) = 13.5; hottest 5 - mean of others 4 = 1 -> cap
 * 9/1 = 9 -> freeRate 9; ceil(9*4 workers) = 36 >= any target. */
#define WINDOW_I WINDOW(REC_I("r1", 4), REC_I("r2", 5), REC_I("r3", 6))

static const ps_case_t initial_cases[] = {
    /* DLRover's own test: recv 249 / 2 PS = 124.5 <= 150 ->
     * psCPU = ceil(0.08*124.5)+4 = ceil(9.96)+4 = 14; PS averages (6+10)/2 = 8
     * and (10+8)/2 = 9 -> ceil(9)+4 = 13 < 14 -> 14. No worker pods: count kept.
     * Memory max 10G * 1.2 = 12884901888. */
    {"ps_initial: small model, psCPU from recv ops, no workers",
     dlb_opt_ps_initial,
     {.job = {MODEL(249)},
      WINDOW(REC("r1", 0, 0, PS("j-ps-0", 6, 16, 4 * GIB, 0), PS("j-ps-1", 10, 16, 5 * GIB, 0)),
             REC("r2", 0, 0, PS("j-ps-0", 10, 16, 10 * GIB, 0), PS("j-ps-1", 8, 16, 6 * GIB, 0)))},
     1,
     0,
     14,
     12 * (int64_t)GIB,
     {{NULL}},
     "recv_op_count 249 / 2 PS = 124.50 <= 150 per PS -> psCPU=ceil(0.08*124.50)+4=14, at least "
     "ceil(busiest PS avg CPU 9.00 (j-ps-1))+4=13 -> psCPU=14; no worker pods in the newest "
     "sample, PS count kept; memory=max PS memory 10.00GiB*1.2=12.00GiB -> ps count kept, cpu 14, "
     "memory 12.00GiB."},
    /* recv 100 / 2 = 50 -> ceil(4)+4 = 8; ps-0 averages (9+10)/2 = 9.5 ->
     * ceil(9.5)+4 = 14 > 8 -> 14. No memory figures: memory kept (0). */
    {"ps_initial: the busiest PS raises psCPU",
     dlb_opt_ps_initial,
     {.job = {MODEL(100)},
      WINDOW(REC("r1", 0, 0, PS("j-ps-0", 9, 16, 0, 0), PS("j-ps-1", 1, 16, 0, 0)),
             REC("r2", 0, 0, PS("j-ps-0", 10, 16, 0, 0), PS("j-ps-1", 1, 16, 0, 0)))},
     1,
     0,
     14,
     0,
     {{NULL}},
     "at least ceil(busiest PS avg CPU 9.50 (j-ps-0))+4=14 -> psCPU=14; no worker pods in the "
     "newest sample, PS count kept; no PS memory figures, memory kept -> ps count kept, cpu 14, "
     "memory kept."},
    /* recv 400 / 2 = 200 > 150 -> 16; ceil(1)+4 = 5 < 16 -> 16 */
    {"ps_initial: big model -> 16 CPU",
     dlb_opt_ps_initial,
     {.job = {MODEL(400)},
      WINDOW(REC("r1", 0, 0, PS("j-ps-0", 1, 16, GIB, 0), PS("j-ps-1", 1, 16, GIB, 0)))},
     1,
     0,
     16,
     1288490189, /* ceil(1073741824 * 1.2) = ceil(1288490188.8) */
     {{NULL}},
     "recv_op_count 400 / 2 PS = 200.00 > 150 per PS -> psCPU=16"},
    /* no model section: recv ops unknown -> 16 (not DLRover's 0 ops -> 4) */
    {"ps_initial: recv ops unknown -> 16 CPU",
     dlb_opt_ps_initial,
     {WINDOW(REC("r1", 0, 0, PS("j-ps-0", 1, 16, GIB, 0), PS("j-ps-1", 1, 16, GIB, 0)))},
     1,
     0,
     16,
     1288490189,
     {{NULL}},
     "recv_op_count unknown -> psCPU=16"},
    /* recv_op_count 0 is as good as unknown -> 16, not ceil(0)+4 = 4 */
    {"ps_initial: recv ops 0 -> 16 CPU",
     dlb_opt_ps_initial,
     {.job = {MODEL(0)},
      WINDOW(REC("r1", 0, 0, PS("j-ps-0", 1, 16, GIB, 0), PS("j-ps-1", 1, 16, GIB, 0)))},
     1,
     0,
     16,
     1288490189,
     {{NULL}},
     "recv_op_count unknown -> psCPU=16"},
    /* 4 workers, but the PS used no CPU yet: max sum 0, the count formula has
     * nothing to scale; psCPU = max(16, ceil(0)+4 = 4) = 16; memory 1G*1.2 */
    {"ps_initial: no PS CPU used yet, count kept",
     dlb_opt_ps_initial,
     {WINDOW(REC("r1", 4, 0, PS("j-ps-0", 0, 16, GIB, 0), PS("j-ps-1", 0, 16, GIB, 0), W4))},
     1,
     0,
     16,
     1288490189,
     {{NULL}},
     "at least ceil(busiest PS avg CPU 0.00 (j-ps-0))+4=4 -> psCPU=16; no PS CPU used yet, PS "
     "count kept; memory=max PS memory 1.00GiB*1.2=1.20GiB -> ps count kept, cpu 16, memory "
     "1.20GiB."},
    /* PS at 6 and 5.5, 4 workers: psCPU = max(16, ceil(6)+4 = 10) = 16;
     * freeRate = 16 / (6*2/15) = 20; the gap 6 - 5.5 = 0.5 would cap it at
     * 16/0.5 = 32 >= 20: no cap. ceil(20*4) = 80 >= 20 (job time unknown);
     * replica = ceil(20/4 * 11.5/16) = ceil(3.59) = 4 */
    {"ps_initial: a small gap does not cap freeRate",
     dlb_opt_ps_initial,
     {WINDOW(REC("r1", 4, 0, PS("j-ps-0", 6, 16, 0, 0), PS("j-ps-1", 5.5, 16, 0, 0), W4))},
     1,
     4,
     16,
     0,
     {{NULL}},
     "freeRate=psCPU/(maxPSCPU*2/15)=20.00; replica=ceil(20/4 workers*max PS CPU sum "
     "11.50/psCPU)=4; no PS memory figures, memory kept -> ps count 4, cpu 16, memory kept."},
    /* steps 10000/10*1 = 1000; per-worker speed 4/4 = 1 -> 1000 s <= 1800 ->
     * target 10; 36 >= 10 keeps it; replica = ceil(10/4 * 10/9) = ceil(2.78) = 3 */
    {"ps_initial: short job -> target 10 workers",
     dlb_opt_ps_initial,
     {.job = {HP(10, 1, 0, 10000), MODEL(100)}, WINDOW_I},
     1,
     3,
     9,
     12 * (int64_t)GIB,
     {{NULL}},
     "estimated job time 1000s (steps / per-worker speed) <= 1800s -> target 10 workers; "
     "freeRate=psCPU/(maxPSCPU*2/15)=13.50, capped at psCPU/(hottest 5.00 - mean of others "
     "4.00)=9.00; replica=ceil(10/4 workers*max PS CPU sum 10.00/psCPU)=3; memory=max PS memory "
     "10.00GiB*1.2=12.00GiB -> ps count 3, cpu 9, memory 12.00GiB."},
    /* steps 1e6/10 = 100000 -> 100000 s > 1800 -> target 20;
     * replica = ceil(20/4 * 10/9) = ceil(5.56) = 6 */
    {"ps_initial: long job -> target 20 workers",
     dlb_opt_ps_initial,
     {.job = {HP(10, 1, 0, 1000000), MODEL(100)}, WINDOW_I},
     1,
     6,
     9,
     12 * (int64_t)GIB,
     {{NULL}},
     "estimated job time 100000s (steps / per-worker speed) > 1800s -> target 20 workers"},
    /* max_steps caps 100000 steps at 1500 -> 1500 s <= 1800 -> target 10 -> 3 */
    {"ps_initial: max_steps caps the steps",
     dlb_opt_ps_initial,
     {.job = {HP(10, 1, 1500, 1000000), MODEL(100)}, WINDOW_I},
     1,
     3,
     9,
     12 * (int64_t)GIB,
     {{NULL}},
     "estimated job time 1500s"},
    /* 2 epochs: 10000/10*2 = 2000 s > 1800 -> target 20 -> 6 */
    {"ps_initial: epochs multiply the steps",
     dlb_opt_ps_initial,
     {.job = {HP(10, 2, 0, 10000), MODEL(100)}, WINDOW_I},
     1,
     6,
     9,
     12 * (int64_t)GIB,
     {{NULL}},
     "estimated job time 2000s"},
    /* no hyper-params: job time unknown, taken as long -> target 20 -> 6 */
    {"ps_initial: unknown job time is a long job",
     dlb_opt_ps_initial,
     {.job = {MODEL(100)}, WINDOW_I},
     1,
     6,
     9,
     12 * (int64_t)GIB,
     {{NULL}},
     "estimated job time unknown (no steps or no speed), taken as long -> target 20 workers"},
    /* ps-0 averages 9, ps-1 3, record sums 12; recv 100 -> 8, ceil(9)+4 = 13.
     * freeRate = 13 / (9*2/15) = 10.83; gap 9-3 = 6 -> cap 13/6 = 2.17;
     * ceil(2.17*4) = ceil(8.67) = 9 < 20 -> target 9;
     * replica = ceil(9/4 * 12/13) = ceil(2.08) = 3 */
    {"ps_initial: an unbalanced PS reduces the target",
     dlb_opt_ps_initial,
     {.job = {MODEL(100)},
      WINDOW(REC("r1", 4, 0, PS("j-ps-0", 9, 16, 0, 0), PS("j-ps-1", 3, 16, 0, 0), W4),
             REC("r2", 4, 0, PS("j-ps-0", 9, 16, 0, 0), PS("j-ps-1", 3, 16, 0, 0), W4))},
     1,
     3,
     13,
     0,
     {{NULL}},
     "capped at psCPU/(hottest 9.00 - mean of others 3.00)=2.17, target reduced to "
     "ceil(freeRate*4)=9; replica=ceil(9/4 workers*max PS CPU sum 12.00/psCPU)=3"},
    /* balanced 2 PS at 12 cores, 1 worker: psCPU = ceil(12)+4 = 16;
     * freeRate = 16 / (12*2/15) = 10 (no gap, no cap); ceil(10*1) = 10 < 20 ->
     * target 10; replica = ceil(10/1 * 24/16) = 15 */
    {"ps_initial: freeRate reduces the target of a balanced job",
     dlb_opt_ps_initial,
     {WINDOW(REC("r1", 1, 0, PS("j-ps-0", 12, 16, 0, 0), PS("j-ps-1", 12, 16, 0, 0),
                 WK("j-worker-0", 1, 0)))},
     1,
     15,
     16,
     0,
     {{NULL}},
     "freeRate=psCPU/(maxPSCPU*2/15)=10.00, target reduced to ceil(freeRate*1)=10; "
     "replica=ceil(10/1 workers*max PS CPU sum 24.00/psCPU)=15"},
    /* 3 PS at 12: freeRate = 16 / (12*3/15) = 6.67 -> target ceil(6.67) = 7;
     * replica = ceil(7/1 * 36/16) = ceil(15.75) = 16 -> capped at 15 */
    {"ps_initial: replica capped at 15",
     dlb_opt_ps_initial,
     {WINDOW(REC("r1", 1, 0, PS("j-ps-0", 12, 16, 0, 0), PS("j-ps-1", 12, 16, 0, 0),
                 PS("j-ps-2", 12, 16, 0, 0), WK("j-worker-0", 1, 0)))},
     1,
     15,
     16,
     0,
     {{NULL}},
     "replica=ceil(7/1 workers*max PS CPU sum 36.00/psCPU)=16, capped at 15"},
    /* the first record has another PS set (j-ps-2) and is ignored: with it,
     * ps-0 would average 12 and psCPU be ceil(12.67)+4 = 17, memory 48G.
     * Without it: the DLRover test case again -> 14 CPU, 12G. */
    {"ps_initial: records of another PS set are ignored",
     dlb_opt_ps_initial,
     {.job = {MODEL(249)},
      WINDOW(REC("r0", 0, 0, PS("j-ps-0", 20, 16, 40 * GIB, 0), PS("j-ps-1", 20, 16, GIB, 0),
                 PS("j-ps-2", 30, 16, GIB, 0)),
             REC("r1", 0, 0, PS("j-ps-0", 6, 16, 4 * GIB, 0), PS("j-ps-1", 10, 16, 5 * GIB, 0)),
             REC("r2", 0, 0, PS("j-ps-0", 10, 16, 10 * GIB, 0), PS("j-ps-1", 8, 16, 6 * GIB, 0)))},
     1,
     0,
     14,
     12 * (int64_t)GIB,
     {{NULL}},
     "PS init-adjust: 2 records with the 2 PS of the newest sample"},
    /* no runtime sample at all */
    {"ps_initial: no samples, nothing to change",
     dlb_opt_ps_initial,
     {.job = {MODEL(100)}},
     0,
     0,
     0,
     0,
     {{NULL}},
     "PS init-adjust: no runtime sample with PS pods yet, nothing to change."},
    /* samples without PS (an allreduce job) */
    {"ps_initial: no PS in the samples, nothing to change",
     dlb_opt_ps_initial,
     {WINDOW(REC("r1", 4, 0, W4))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "no runtime sample with PS pods yet"},
};

/* ---- hot PS -------------------------------------------------------------------
 * PS request 8 CPU / 16G. ps-0 at 7, 7, 7.3 in the last 3 records averages
 * 7.1: 7.1/8 = 0.8875 > 0.8, CPU-hot; ps-1 at 2: 0.25. */
#define HOT0(id, c0, m0, m1, ...)                                                                  \
    REC(id, 1, 0, PS("j-ps-0", c0, 8, m0, 16 * GIB), PS("j-ps-1", 2, 8, m1, 16 * GIB), __VA_ARGS__)

static const ps_case_t hot_cases[] = {
    /* 8 workers: coeff = 32/8 = 4; ps-0 7.1*4 = 28.4 <= 32 -> ceil = 29 > 8;
     * ps-1 2*4 = 8, not > 8. The oldest record (ps-0 at 1) is not in the last 3:
     * with it ps-0 would average 5.575, 0.70, not hot. */
    {"hot_ps: CPU-hot PS gets ceil(avg*32/workers)",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r0", 1, GIB, GIB, W8), HOT0("r1", 7, GIB, GIB, W8), HOT0("r2", 7, GIB, GIB, W8),
             HOT0("r3", 7.3, GIB, GIB, W8))},
     0,
     0,
     0,
     0,
     {{"j-ps-0", 29, 0}},
     "Hot PS: last 3 of 4 records with the newest PS set (2 PS, 8 workers): CPU-hot "
     "(avg/request > 0.8): j-ps-0 7.10/8; coeff=32/8 workers=4.000; CPU ceil(avg*coeff): "
     "j-ps-0 8->29."},
    /* 2 workers: coeff 16; ps-0 7.1*16 = 113.6 > 32 -> coeff = 32/7.1 = 4.507;
     * ps-0 -> 32; ps-1 2*4.507 = 9.01 -> 10 > 8, raised too (every PS) */
    {"hot_ps: coeff capped so no PS passes 32 cores",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 7, GIB, GIB, W2), HOT0("r2", 7, GIB, GIB, W2),
             HOT0("r3", 7.3, GIB, GIB, W2))},
     0,
     0,
     0,
     0,
     {{"j-ps-0", 32, 0}, {"j-ps-1", 10, 0}},
     "coeff=32/2 workers=16.000, capped to 4.507 so no PS passes 32 cores; CPU "
     "ceil(avg*coeff): j-ps-0 8->32 j-ps-1 8->10."},
    /* ps-2 (request 64) averages 30, 0.47, not hot, but caps coeff at
     * 32/30 = 1.067: ps-0 7.1*1.067 = 7.57 -> 8, ps-1 -> 3, ps-2 -> 32: none
     * above its request (DLRover caps on hot PS only and would plan ps-2 at
     * ceil(30*4) = 120 cores). */
    {"hot_ps: the cap binds on every PS, nothing above request",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 7, GIB, GIB, PS("j-ps-2", 30, 64, GIB, 64 * GIB), W8),
             HOT0("r2", 7, GIB, GIB, PS("j-ps-2", 30, 64, GIB, 64 * GIB), W8),
             HOT0("r3", 7.3, GIB, GIB, PS("j-ps-2", 30, 64, GIB, 64 * GIB), W8))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "capped to 1.067 so no PS passes 32 cores; CPU ceil(avg*coeff): none above its request; "
     "nothing to change."},
    /* ps-1 used 15G of 16G (0.9375 > 0.9) in all 3 -> 16G + 8G = 24G;
     * ps-0 at 15G, 15G, 14G: 0.875 in the last, not hot. CPU: ps-0 at 1 -> cool */
    {"hot_ps: memory-hot PS gets +8GiB",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 1, 15 * GIB, 15 * GIB, W8), HOT0("r2", 1, 15 * GIB, 15 * GIB, W8),
             HOT0("r3", 1, 14 * GIB, 15 * GIB, W8))},
     0,
     0,
     0,
     0,
     {{"j-ps-1", 0, 24 * GIB}},
     ": memory-hot (used/request > 0.9 in all 3), +8GiB: j-ps-1 16.00GiB->24.00GiB."},
    /* ps-0 CPU-hot (-> 29 as in the first case) and memory-hot (15G of 16G in
     * all 3 -> 24G): one pod entry with both */
    {"hot_ps: CPU- and memory-hot PS, one entry",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 7, 15 * GIB, GIB, W8), HOT0("r2", 7, 15 * GIB, GIB, W8),
             HOT0("r3", 7.3, 15 * GIB, GIB, W8))},
     0,
     0,
     0,
     0,
     {{"j-ps-0", 29, 24 * GIB}},
     "j-ps-0 8->29; memory-hot (used/request > 0.9 in all 3), +8GiB: j-ps-0 "
     "16.00GiB->24.00GiB."},
    /* ps-0 at 6: 0.75; memory 14G/16G = 0.875: nothing hot */
    {"hot_ps: nothing hot",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 6, 14 * GIB, GIB, W8), HOT0("r2", 6, 14 * GIB, GIB, W8),
             HOT0("r3", 6, 14 * GIB, GIB, W8))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "no PS hot (max avg CPU/request 0.75 of j-ps-0, not > 0.8; max memory used/request in all "
     "3 0.88 of j-ps-0, not > 0.9), nothing to change."},
    {"hot_ps: 2 records are too few",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 8, 16 * GIB, GIB, W8), HOT0("r2", 8, 16 * GIB, GIB, W8))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "Hot PS: 2 records with the newest PS set, need 3, nothing to change."},
    /* the newest record added j-ps-2: only 1 record of that PS set */
    {"hot_ps: PS set changed in the newest record",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 8, GIB, GIB, W8), HOT0("r2", 8, GIB, GIB, W8), HOT0("r3", 8, GIB, GIB, W8),
             HOT0("r4", 8, GIB, GIB, PS("j-ps-2", 1, 8, GIB, 16 * GIB), W8))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "Hot PS: 1 records with the newest PS set, need 3"},
    /* r4 has another PS set and is skipped: the last 3 of the newest set are
     * r2, r3, r5 (ps-0 at 7, 7, 7.3 -> hot -> 29); with r4 (ps-0 at 0.5) they
     * would be r3, r4, r5, average 4.93, not hot */
    {"hot_ps: records of another PS set are skipped",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 1, GIB, GIB, W8), HOT0("r2", 7, GIB, GIB, W8), HOT0("r3", 7, GIB, GIB, W8),
             HOT0("r4", 0.5, GIB, GIB, PS("j-ps-2", 1, 8, GIB, 16 * GIB), W8),
             HOT0("r5", 7.3, GIB, GIB, W8))},
     0,
     0,
     0,
     0,
     {{"j-ps-0", 29, 0}},
     "last 3 of 4 records with the newest PS set"},
    /* CPU-hot but no worker pods: 32/0 has no meaning, CPU kept */
    {"hot_ps: CPU-hot without workers, CPU kept",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 7, GIB, GIB, ), HOT0("r2", 7, GIB, GIB, ), HOT0("r3", 7.3, GIB, GIB, ))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "j-ps-0 7.10/8; no worker pods in the newest sample, CPU kept; nothing to change."},
    /* j-ps-2 has no CPU request (and used none): never hot, no CPU planned; the
     * others as in the first case -> j-ps-0 29 */
    {"hot_ps: a PS without a CPU request is left alone",
     dlb_opt_hot_ps,
     {WINDOW(HOT0("r1", 7, GIB, GIB, PS("j-ps-2", 0, 0, GIB, 0), W8),
             HOT0("r2", 7, GIB, GIB, PS("j-ps-2", 0, 0, GIB, 0), W8),
             HOT0("r3", 7.3, GIB, GIB, PS("j-ps-2", 0, 0, GIB, 0), W8))},
     0,
     0,
     0,
     0,
     {{"j-ps-0", 29, 0}},
     "Hot PS: last 3 of 3 records with the newest PS set (3 PS, 8 workers): CPU-hot "
     "(avg/request > 0.8): j-ps-0 7.10/8; coeff=32/8 workers=4.000; CPU ceil(avg*coeff): "
     "j-ps-0 8->29."},
    /* no PS has a CPU request: no CPU utilisation at all; memory 1G/16G = 0.06 */
    {"hot_ps: no CPU requests, nothing hot",
     dlb_opt_hot_ps,
     {WINDOW(REC("r1", 1, 0, PS("j-ps-0", 7, 0, GIB, 16 * GIB), W8),
             REC("r2", 1, 0, PS("j-ps-0", 7, 0, GIB, 16 * GIB), W8),
             REC("r3", 1, 0, PS("j-ps-0", 7, 0, GIB, 16 * GIB), W8))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "no PS hot (max avg CPU/request 0.00 of none, not > 0.8; max memory used/request in all 3 "
     "0.06 of j-ps-0, not > 0.9), nothing to change."},
    {"hot_ps: no PS",
     dlb_opt_hot_ps,
     {WINDOW(REC("r1", 1, 0, W4))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "Hot PS: no PS pods in the newest runtime sample, nothing to change."},
};

/* ---- PS utilisation ------------------------------------------------------------
 * ps-0 (request 40) at 26 in every record: averages 26 >= 25.6, the trigger;
 * its util 26/40 = 0.65 is not low.
 * ps-1 (request 16 CPU / 16G) max 3: 3/16 = 0.19 < 0.4 -> cpu ceil(3)+4 = 7
 * < 16; memory max 5G * 1.2 = 6G = 6442450944 < 16G.
 * ps-2 (request 4 CPU / 8G) max 1.5: 0.375 < 0.4 -> ceil(1.5)+4 = 6 >= 4, a
 * shrink never grows: CPU kept; memory 2G * 1.2 = ceil(2576980377.6) =
 * 2576980378 < 8G. */
#define UTIL_REC(id, step, c1)                                                                     \
    REC(id, 1, step, PS("j-ps-0", 26, 40, 8 * GIB, 16 * GIB),                                      \
        PS("j-ps-1", c1, 16, 5 * GIB, 16 * GIB), PS("j-ps-2", 1.5, 4, 2 * GIB, 8 * GIB), W4)
#define UTIL_WINDOW(s1, s2, s3)                                                                    \
    WINDOW(UTIL_REC("r1", s1, 2), UTIL_REC("r2", s2, 3), UTIL_REC("r3", s3, 2.5))
/* 32 workers; ps-0 (request 16) max 14: 0.875 > 0.8 with >= 32 workers, the
 * trigger; ps-1 (request 16 / 8G) max 4: 0.25 -> cpu ceil(4)+4 = 8; memory
 * 8G*1.2 = 9.6G >= 8G, kept. */
#define BUSY_REC(id, c0, c1)                                                                       \
    REC(id, 1, 0, PS("j-ps-0", c0, 16, GIB, 8 * GIB), PS("j-ps-1", c1, 16, 8 * GIB, 8 * GIB), W32)

static const ps_case_t util_cases[] = {
    {"ps_util: a PS averaging >= 25.6 cores triggers the shrink",
     dlb_opt_ps_util,
     {UTIL_WINDOW(0, 0, 0)},
     0,
     0,
     0,
     0,
     {{"j-ps-1", 7, 6 * GIB}, {"j-ps-2", 0, 2576980378}},
     "PS utilisation: 3 records with the newest PS set (3 PS, 4 workers), remaining time unknown "
     "(taken as long); max PS CPU util 0.65 (j-ps-0), busiest PS avg 26.00 CPU (j-ps-0); shrink PS "
     "with max CPU/request < 0.4 to ceil(max)+4 CPU, max memory*1.2: j-ps-1 (max 3.00/16) cpu "
     "16->7 memory 16.00GiB->6.00GiB j-ps-2 (max 1.50/4) memory 8.00GiB->2.40GiB."},
    /* steps 100000/10 = 10000; done 1000; mean speed of the 3 records 1 ->
     * 9000 s >= 3600: shrinks as above */
    {"ps_util: remaining time >= 3600 s",
     dlb_opt_ps_util,
     {.job = {HP(10, 1, 0, 100000)}, UTIL_WINDOW(800, 900, 1000)},
     0,
     0,
     0,
     0,
     {{"j-ps-1", 7, 6 * GIB}, {"j-ps-2", 0, 2576980378}},
     "remaining time 9000s"},
    /* done 9000: (10000-9000)/1 = 1000 s < 3600 */
    {"ps_util: remaining time < 3600 s",
     dlb_opt_ps_util,
     {.job = {HP(10, 1, 0, 100000)}, UTIL_WINDOW(8800, 8900, 9000)},
     0,
     0,
     0,
     0,
     {{NULL}},
     "PS utilisation: remaining time 1000s < 3600s, not worth a PS restart, nothing to change."},
    /* done past the steps: remaining 0 */
    {"ps_util: steps done",
     dlb_opt_ps_util,
     {.job = {HP(10, 1, 0, 100000)}, UTIL_WINDOW(9000, 10000, 10100)},
     0,
     0,
     0,
     0,
     {{NULL}},
     "remaining time 0s < 3600s"},
    /* ps-0 at 20 (0.5 of 40), 4 workers: neither trigger */
    {"ps_util: not triggered",
     dlb_opt_ps_util,
     {WINDOW(REC("r1", 1, 0, PS("j-ps-0", 20, 40, 0, 0), PS("j-ps-1", 1, 16, 0, 0), W4),
             REC("r2", 1, 0, PS("j-ps-0", 20, 40, 0, 0), PS("j-ps-1", 1, 16, 0, 0), W4),
             REC("r3", 1, 0, PS("j-ps-0", 20, 40, 0, 0), PS("j-ps-1", 1, 16, 0, 0), W4))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "max PS CPU util 0.50 (j-ps-0), busiest PS avg 20.00 CPU (j-ps-0): neither (>= 32 workers "
     "and util > 0.8) nor a PS averaging >= 25.6 CPU, nothing to change."},
    {"ps_util: 32 busy workers trigger the shrink",
     dlb_opt_ps_util,
     {WINDOW(BUSY_REC("r1", 13, 3), BUSY_REC("r2", 14, 4), BUSY_REC("r3", 13, 3))},
     0,
     0,
     0,
     0,
     {{"j-ps-1", 8, 0}},
     "(2 PS, 32 workers), remaining time unknown (taken as long); max PS CPU util 0.88 (j-ps-0)"},
    /* ps-0 max 12.8/16 = 0.8, not > 0.8: 32 workers are not enough */
    {"ps_util: util 0.8 is not above 0.8",
     dlb_opt_ps_util,
     {WINDOW(BUSY_REC("r1", 12, 3), BUSY_REC("r2", 12.8, 4), BUSY_REC("r3", 12, 3))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "max PS CPU util 0.80 (j-ps-0), busiest PS avg 12.27 CPU (j-ps-0): neither"},
    {"ps_util: 2 records are too few",
     dlb_opt_ps_util,
     {WINDOW(UTIL_REC("r1", 0, 2), UTIL_REC("r2", 0, 3))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "PS utilisation: 2 records with the newest PS set, need 3, nothing to change."},
    /* r0 has another PS set (j-ps-9), with ps-1 at 10 of 16 (0.63, not low):
     * ignored, so ps-1's max is 3 and it shrinks as in the first case */
    {"ps_util: records of another PS set are ignored",
     dlb_opt_ps_util,
     {WINDOW(REC("r0", 1, 0, PS("j-ps-0", 26, 40, 0, 0), PS("j-ps-1", 10, 16, 0, 0),
                 PS("j-ps-2", 1, 4, 0, 0), PS("j-ps-9", 1, 4, 0, 0), W4),
             UTIL_REC("r1", 0, 2), UTIL_REC("r2", 0, 3), UTIL_REC("r3", 0, 2.5))},
     0,
     0,
     0,
     0,
     {{"j-ps-1", 7, 6 * GIB}, {"j-ps-2", 0, 2576980378}},
     "3 records with the newest PS set (3 PS, 4 workers)"},
    /* triggered, but no PS is low: nothing to shrink */
    {"ps_util: triggered, nothing low",
     dlb_opt_ps_util,
     {WINDOW(REC("r1", 1, 0, PS("j-ps-0", 26, 40, 0, 0), W4),
             REC("r2", 1, 0, PS("j-ps-0", 26, 40, 0, 0), W4),
             REC("r3", 1, 0, PS("j-ps-0", 26, 40, 0, 0), W4))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "max memory*1.2: none, nothing to change."},
    /* j-ps-0 (26 of 40) triggers, listed last. j-ps-1 (1.5 of 4 CPU, 2G of
     * 2G): 0.375 < 0.4 but ceil(1.5)+4 = 6 >= 4 and 2G*1.2 >= 2G: nothing to
     * shrink, skipped. j-ps-2: no CPU request, left alone. j-ps-3 (1 of 8, no
     * memory figures) and j-ps-4 (1 of 8, 1G used, no memory request): CPU
     * ceil(1)+4 = 5 < 8, memory kept. Util max 0.65 (j-ps-0 over j-ps-1's 0.375);
     * busiest avg 26 (j-ps-0, after 1.5 of j-ps-1). */
    {"ps_util: nothing to shrink, no CPU request, no memory figures",
     dlb_opt_ps_util,
     {WINDOW(REC("r1", 1, 0, PS("j-ps-1", 1.5, 4, 2 * GIB, 2 * GIB),
                 PS("j-ps-2", 1, 0, GIB, 8 * GIB), PS("j-ps-3", 1, 8, 0, 0),
                 PS("j-ps-4", 1, 8, GIB, 0), PS("j-ps-0", 26, 40, 8 * GIB, 16 * GIB), W4),
             REC("r2", 1, 0, PS("j-ps-1", 1.5, 4, 2 * GIB, 2 * GIB),
                 PS("j-ps-2", 1, 0, GIB, 8 * GIB), PS("j-ps-3", 1, 8, 0, 0),
                 PS("j-ps-4", 1, 8, GIB, 0), PS("j-ps-0", 26, 40, 8 * GIB, 16 * GIB), W4),
             REC("r3", 1, 0, PS("j-ps-1", 1.5, 4, 2 * GIB, 2 * GIB),
                 PS("j-ps-2", 1, 0, GIB, 8 * GIB), PS("j-ps-3", 1, 8, 0, 0),
                 PS("j-ps-4", 1, 8, GIB, 0), PS("j-ps-0", 26, 40, 8 * GIB, 16 * GIB), W4))},
     0,
     0,
     0,
     0,
     {{"j-ps-3", 5, 0}, {"j-ps-4", 5, 0}},
     "PS utilisation: 3 records with the newest PS set (5 PS, 4 workers), remaining time unknown "
     "(taken as long); max PS CPU util 0.65 (j-ps-0), busiest PS avg 26.00 CPU (j-ps-0); shrink PS "
     "with max CPU/request < 0.4 to ceil(max)+4 CPU, max memory*1.2: j-ps-3 (max 1.00/8) cpu 8->5 "
     "j-ps-4 (max 1.00/8) cpu 8->5."},
    /* no CPU requests: no utilisation; a PS averaging 26 cores still triggers,
     * but nothing has a utilisation to be low */
    {"ps_util: no CPU requests, triggered by a big PS",
     dlb_opt_ps_util,
     {WINDOW(REC("r1", 1, 0, PS("j-ps-0", 26, 0, 8 * GIB, 16 * GIB), W4),
             REC("r2", 1, 0, PS("j-ps-0", 26, 0, 8 * GIB, 16 * GIB), W4),
             REC("r3", 1, 0, PS("j-ps-0", 26, 0, 8 * GIB, 16 * GIB), W4))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "max PS CPU util 0.00 (none), busiest PS avg 26.00 CPU (j-ps-0); shrink PS with max "
     "CPU/request < 0.4 to ceil(max)+4 CPU, max memory*1.2: none, nothing to change."},
    {"ps_util: no PS in the samples",
     dlb_opt_ps_util,
     {WINDOW(REC("r1", 4, 0, W4), REC("r2", 4, 0, W4), REC("r3", 4, 0, W4))},
     0,
     0,
     0,
     0,
     {{NULL}},
     "PS utilisation: no PS pods in the newest runtime sample, nothing to change."},
    {"ps_util: no PS",
     dlb_opt_ps_util,
     {.window_cnt = 0},
     0,
     0,
     0,
     0,
     {{NULL}},
     "PS utilisation: no PS pods in the newest runtime sample, nothing to change."},
};

static void run_cases(const ps_case_t *cases, size_t n)
{
    size_t i, k;

    for (i = 0; i < n; i++) {
        const ps_case_t *c = &cases[i];
        static const dlb_history_t no_history = {.jobs_cnt = 0};
        dlb_plan_request_t req = {
            .event_id = "req-1", .job_uid = "job-1", .stage = DLB_STAGE_RUNNING};
        dlb_opt_input_t in = {.req = &req, .job = &c->job, .history = &no_history};
        dlb_plan_t plan = {0};

        print_message("case %s\n", c->name);
        assert_int_equal(c->fn(&in, &plan), 0);
        print_message("  %s\n", plan.reason);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\"\n   lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        if (c->group) {
            assert_int_equal(plan.groups_cnt, 1);
            assert_string_equal(plan.groups[0].group, "ps");
            assert_int_equal(plan.groups[0].count, c->count);
            assert_cores("ps", plan.groups[0].resource.cpu, c->cpu);
            assert_int_equal(plan.groups[0].resource.memory, c->memory);
        } else {
            assert_int_equal(plan.groups_cnt, 0);
        }
        for (k = 0; k < 4 && c->pods[k].name; k++) {
            assert_true(k < plan.pods_cnt);
            assert_string_equal(plan.pods[k].name, c->pods[k].name);
            assert_cores(c->pods[k].name, plan.pods[k].resource.cpu, c->pods[k].cpu);
            assert_int_equal(plan.pods[k].resource.memory, c->pods[k].memory);
        }
        assert_int_equal(plan.pods_cnt, k);
        plan_free(&plan);
    }
}

static void test_ps_initial(void **state)
{
    (void)state;
    run_cases(initial_cases, sizeof(initial_cases) / sizeof(initial_cases[0]));
}

static void test_hot_ps(void **state)
{
    (void)state;
    run_cases(hot_cases, sizeof(hot_cases) / sizeof(hot_cases[0]));
}

static void test_ps_util(void **state)
{
    (void)state;
    run_cases(util_cases, sizeof(util_cases) / sizeof(util_cases[0]));
}

/* In a composed plan, hot PS adds its own pod entries and leaves those of an
 * optimizer that ran before alone (the composer merges them), and its
 * sentence follows the earlier one. */
static void test_hot_ps_appends(void **state)
{
    const dlb_job_state_t job = {WINDOW(HOT0("r1", 7, GIB, GIB, W8), HOT0("r2", 7, GIB, GIB, W8),
                                        HOT0("r3", 7.3, GIB, GIB, W8))};
    static const dlb_history_t no_history = {.jobs_cnt = 0};
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "job-1"};
    dlb_opt_input_t in = {.req = &req, .job = &job, .history = &no_history};
    dlb_plan_t plan = {.reason = "Earlier."};
    dlb_pod_resource_t *p;

    (void)state;
    assert_non_null(p = dlb_plan_add_pod(&plan, "j-ps-0"));
    p->resource.memory = 20 * GIB;
    assert_int_equal(dlb_opt_hot_ps(&in, &plan), 0);
    assert_int_equal(plan.pods_cnt, 2);
    assert_int_equal(plan.pods[0].resource.memory, 20 * GIB);
    assert_true(plan.pods[0].resource.cpu == 0);
    assert_string_equal(plan.pods[1].name, "j-ps-0");
    assert_cores("j-ps-0", plan.pods[1].resource.cpu, 29);
    assert_int_equal(strncmp(plan.reason, "Earlier. Hot PS: ", 17), 0);
    plan_free(&plan);
}

/* ---- the window helpers ---------------------------------------------------------- */

typedef struct steps_case {
    const char *name;
    dlb_job_event_t job;
    double steps;
} steps_case_t;

static void test_total_steps(void **state)
{
    static const steps_case_t cases[] = {
        /* 10000 / 10 * 3 */
        {"size / batch * epochs", {HP(10, 3, 0, 10000)}, 3000},
        /* 10005 / 10 = 1000.5: a last partial batch counts as a fraction */
        {"partial batch", {HP(10, 1, 0, 10005)}, 1000.5},
        {"unset epoch is 1", {HP(10, 0, 0, 10000)}, 1000},
        {"max_steps caps", {HP(10, 1, 700, 10000)}, 700},
        {"max_steps above the epochs does not raise", {HP(10, 1, 5000, 10000)}, 1000},
        {"max_steps alone", {HP(0, 0, 700, 0)}, 700},
        {"no batch size, no max_steps: unknown", {HP(0, 1, 0, 10000)}, -1},
        {"nothing known", {.has_meta = 0}, -1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("case %s\n", cases[i].name);
        assert_true(dlb_job_total_steps(&cases[i].job) == cases[i].steps);
    }
}

/* Per-worker speed over the newest 5 records with workers: r1 (speed 100,
 * 1 worker) is the 6th newest and left out; r7 has no workers and is skipped.
 * r2..r6: 4/4, 4/4, 8/4, 4/2, 2/2 -> 1, 1, 2, 2, 1 -> mean 1.4.
 * 1400 steps / 1.4 = 1000 s. Remaining: (1400 - 700) / mean job speed of the
 * newest 5 (r3..r7: 4, 8, 4, 2, 0 -> 3.6) = 194.4 s. */
static void test_job_seconds(void **state)
{
    const dlb_runtime_sample_t recs[] = {
        REC("r1", 100, 0, WK("w", 1, 0)),
        REC("r2", 4, 100, W4),
        REC("r3", 4, 200, W4),
        REC("r4", 8, 300, W4),
        REC("r5", 4, 400, W2),
        REC("r6", 2, 500, W2),
        REC("r7", 0, 700, PS("j-ps-0", 1, 1, 0, 0)),
    };
    const dlb_runtime_sample_t *ptrs[7];
    dlb_job_event_t job = {HP(0, 0, 1400, 0)}, none = {.has_meta = 0};
    size_t i;

    (void)state;
    for (i = 0; i < 7; i++)
        ptrs[i] = &recs[i];
    assert_true(fabs(dlb_est_job_seconds(&job, ptrs, 7) - 1000) < 1e-9);
    assert_true(fabs(dlb_remaining_seconds(&job, ptrs, 7) - 700 / 3.6) < 1e-9);
    /* unknown steps, or no speed: -1 */
    assert_true(dlb_est_job_seconds(&none, ptrs, 7) == -1);
    assert_true(dlb_remaining_seconds(&none, ptrs, 7) == -1);
    assert_true(dlb_est_job_seconds(&job, ptrs + 6, 1) == -1);
    assert_true(dlb_remaining_seconds(&job, ptrs + 6, 1) == -1);
    assert_true(dlb_remaining_seconds(&job, ptrs, 0) == -1);
    /* steps done: 0 whatever the speed */
    job.hyper_params.max_steps = 700;
    assert_true(dlb_remaining_seconds(&job, ptrs, 7) == 0);
}

static void test_same_ps(void **state)
{
    const dlb_runtime_sample_t a =
        REC("a", 0, 0, PS("p0", 0, 0, 0, 0), WK("w0", 0, 0), PS("p1", 0, 0, 0, 0));
    const dlb_runtime_sample_t b = REC("b", 0, 0, PS("p1", 0, 0, 0, 0), PS("p0", 0, 0, 0, 0));
    const dlb_runtime_sample_t c = REC("c", 0, 0, PS("p1", 0, 0, 0, 0), PS("p2", 0, 0, 0, 0));
    const dlb_runtime_sample_t d = REC("d", 0, 0, PS("p1", 0, 0, 0, 0));
    /* p0 as a worker is not the PS p0 */
    const dlb_runtime_sample_t e = REC("e", 0, 0, PS("p1", 0, 0, 0, 0), WK("p0", 0, 0));
    const dlb_runtime_sample_t f = REC("f", 0, 0, WK("w0", 0, 0));
    const dlb_runtime_sample_t g = REC("g", 0, 0, WK("w1", 0, 0));
    /* a PS listed twice: p0, p0 is not the set p0, p1, either way round */
    const dlb_runtime_sample_t h = REC("h", 0, 0, PS("p0", 0, 0, 0, 0), PS("p0", 0, 0, 0, 0));

    (void)state;
    assert_true(dlb_sample_same_ps(&a, &b)); /* order and workers do not matter */
    assert_false(dlb_sample_same_ps(&a, &c));
    assert_false(dlb_sample_same_ps(&a, &d));
    assert_false(dlb_sample_same_ps(&d, &a));
    assert_false(dlb_sample_same_ps(&e, &a));
    assert_true(dlb_sample_same_ps(&f, &g)); /* both without PS */
    assert_false(dlb_sample_same_ps(&h, &b));
    assert_false(dlb_sample_same_ps(&b, &h));
    assert_true(dlb_sample_same_ps(&h, &h));
    assert_int_equal(dlb_sample_count(&a, "ps"), 2);
    assert_int_equal(dlb_sample_count(&a, "worker"), 1);
    assert_ptr_equal(dlb_sample_pod(&a, "p1"), &a.pods[2]);
    assert_null(dlb_sample_pod(&a, "p9"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ps_initial),  cmocka_unit_test(test_hot_ps),
        cmocka_unit_test(test_ps_util),     cmocka_unit_test(test_hot_ps_appends),
        cmocka_unit_test(test_total_steps), cmocka_unit_test(test_job_seconds),
        cmocka_unit_test(test_same_ps),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
