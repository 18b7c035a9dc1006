/* DLRover's worker resource optimizer: each branch (PS exhausted, PS with
 * headroom in the initial and the stable phase, deceleration, singularity and
 * PS-set filtering, the caps) worked out by hand from reference section 3. */
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

#define GIB DLB_GIB

#define COUNT_OF(type, ...) (sizeof((type[]){__VA_ARGS__}) / sizeof(type))
/* A PS: name, cpu used, cpu requested. */
#define PS(n, cpu, creq)                                                                           \
    {                                                                                              \
        .name = n, .type = "ps", .cpu_used = cpu, .cpu_requested = creq                            \
    }
/* Workers: only their count, max CPU and max memory matter, not their names. */
#define WK(cpu, mem)                                                                               \
    {                                                                                              \
        .name = "j-worker", .type = "worker", .cpu_used = cpu, .memory_used = mem                  \
    }
#define WX2(c, m)  WK(c, m), WK(c, m)
#define WX4(c, m)  WX2(c, m), WX2(c, m)
#define WX5(c, m)  WX4(c, m), WK(c, m)
#define WX8(c, m)  WX4(c, m), WX4(c, m)
#define WX12(c, m) WX8(c, m), WX4(c, m)
#define WX58(c, m)                                                                                 \
    WX8(c, m), WX8(c, m), WX8(c, m), WX8(c, m), WX8(c, m), WX8(c, m), WX8(c, m), WX2(c, m)
/* A runtime sample: id, job speed (steps/s), pods. */
#define REC(id, spd, ...)                                                                          \
    {                                                                                              \
        .event_id = id, .speed = spd, .pods = (dlb_pod_usage_t[]){__VA_ARGS__},                    \
        .pods_cnt = COUNT_OF(dlb_pod_usage_t, __VA_ARGS__)                                         \
    }
#define WINDOW(...)                                                                                \
    .window = (dlb_runtime_sample_t[]){__VA_ARGS__},                                               \
    .window_cnt = COUNT_OF(dlb_runtime_sample_t, __VA_ARGS__)
#define HP(batch, dsize)                                                                           \
    .has_hyper_params = 1, .hyper_params = {.batch_size = batch, .epoch = 1}, .has_dataset = 1,    \
    .dataset = {.size = dsize}

/* 8G * 1.2: 8589934592 + ceil(8589934592 / 5) = 8589934592 + 1717986919 */
#define MEM_8G_MARGIN ((int64_t)10307921511)

typedef struct wr_case {
    const char *name;
    dlb_job_state_t job;
    int group; /* 1: a worker group is expected */
    int32_t count;
    double cpu;
    int64_t memory;
    const char *reason; /* expected substring */
} wr_case_t;

/* DLRover's own test: 3 records of 1 worker (PS at 1 of 10, speed 8, worker
 * 0.3 CPU / 10G), then 3 of 5 workers (PS at ps5 of 10, speed s5, workers
 * 0.35 CPU / 20G). */
#define DLR_BEFORE(id)         REC(id, 8, PS("j-ps-0", 1, 10), WK(0.3, 10 * GIB))
#define DLR_AFTER(id, ps5, s5) REC(id, s5, PS("j-ps-0", ps5, 10), WX5(0.35, 20 * GIB))
#define DLR_WINDOW(ps5, s5)                                                                        \
    WINDOW(DLR_BEFORE("r1"), DLR_BEFORE("r2"), DLR_BEFORE("r3"), DLR_AFTER("r4", ps5, s5),         \
           DLR_AFTER("r5", ps5, s5), DLR_AFTER("r6", ps5, s5))
/* A record of n workers at 2 CPU / 8G, the PS at c of 16, speed spd. */
#define INIT_REC(id, spd, c, ...) REC(id, spd, PS("j-ps-0", c, 16), __VA_ARGS__)

static const wr_case_t cases[] = {
    /* PS util since the change: 6/10 = 0.6 < 0.8; speed 8 -> 10, faster:
     * ceil(0.8/0.6*5) = ceil(6.67) = 7 -> 5 + min(4, 7-5) = 7.
     * (Over all 6 records the util would be 0.35 and the count 9.)
     * 6 records: cpu from the mean of the records' max worker CPU
     * (0.3*3 + 0.35*3)/6 = 0.325 (printed 0.33) -> ceil(1.325) = 2; memory 20G +
     * min(4G, 8G) = 24G. */
    {"stable and faster: DLRover's own test",
     {DLR_WINDOW(6, 10)},
     1,
     7,
     2,
     24 * GIB,
     "Worker resource: 6 usable records (6 of 6 with the newest PS set, 0 singularity records "
     "dropped), 5 workers now; phase stable: workers 1 -> 5, mean speed 8.00 -> 10.00 steps/s "
     "(increased); max PS CPU util 0.600 (j-ps-0, mean of 3 records) < 0.8: ceil(0.8/0.600*5)=7, "
     "stable and faster: 5+min(4, that-5)=7 -> 7 workers; cpu=ceil(mean of the records' max "
     "worker CPU 0.33+1)=2; memory=max 20.00GiB+min(20%, 8GiB)=24.00GiB."},
    /* util 2/10 = 0.2: ceil(0.8/0.2*5) = 20 -> 5 + min(4, 15) = 9 */
    {"stable and faster: at most 4 more",
     {DLR_WINDOW(2, 10)},
     1,
     9,
     2,
     24 * GIB,
     "ceil(0.8/0.200*5)=20, stable and faster: 5+min(4, that-5)=9 -> 9 workers"},
    /* no speed before the change (0): nothing to decelerate from, 0 -> 10 is
     * faster: as the first case, 7 */
    {"stable, no speed before the change",
     {WINDOW(REC("r1", 0, PS("j-ps-0", 1, 10), WK(0.3, 10 * GIB)),
             REC("r2", 0, PS("j-ps-0", 1, 10), WK(0.3, 10 * GIB)),
             REC("r3", 0, PS("j-ps-0", 1, 10), WK(0.3, 10 * GIB)), DLR_AFTER("r4", 6, 10),
             DLR_AFTER("r5", 6, 10), DLR_AFTER("r6", 6, 10))},
     1,
     7,
     2,
     24 * GIB,
     "phase stable: workers 1 -> 5, mean speed 0.00 -> 10.00 steps/s (increased)"},
    /* speed 8 -> 7: 7 <= 8*0.9 = 7.2, decelerated: count kept */
    {"stable, decelerated: count kept",
     {DLR_WINDOW(6, 7)},
     1,
     0,
     2,
     24 * GIB,
     "mean speed 8.00 -> 7.00 steps/s (decelerated >= 10%); max PS CPU util 0.600 (j-ps-0, mean "
     "of 3 records) < 0.8 but the speed decelerated, count kept; cpu=ceil("},
    /* speed 8 -> 7.5: > 7.2, not decelerated, but not faster: count kept */
    {"stable, not faster: count kept",
     {DLR_WINDOW(6, 7.5)},
     1,
     0,
     2,
     24 * GIB,
     "(not increased); max PS CPU util 0.600 (j-ps-0, mean of 3 records) < 0.8: "
     "ceil(0.8/0.600*5)=7, but the last change did not increase the speed, count kept"},
    /* counts 2, 2, 4, 4, 5, 5, 5 at speeds 100, 100, 8, 8, 10, 10, 10: the last
     * change is 4 -> 5, compared with the 4-worker run only: 8 -> 10, faster
     * (against all earlier records, mean 54, it would be decelerated).
     * util 0.6 -> 7 as in the first case; 7 records: cpu mean 0.35 -> 2. */
    {"stable: only the run before the last change counts",
     {WINDOW(REC("r1", 100, PS("j-ps-0", 6, 10), WX2(0.35, 20 * GIB)),
             REC("r2", 100, PS("j-ps-0", 6, 10), WX2(0.35, 20 * GIB)),
             REC("r3", 8, PS("j-ps-0", 6, 10), WX4(0.35, 20 * GIB)),
             REC("r4", 8, PS("j-ps-0", 6, 10), WX4(0.35, 20 * GIB)),
             REC("r5", 10, PS("j-ps-0", 6, 10), WX5(0.35, 20 * GIB)),
             REC("r6", 10, PS("j-ps-0", 6, 10), WX5(0.35, 20 * GIB)),
             REC("r7", 10, PS("j-ps-0", 6, 10), WX5(0.35, 20 * GIB)))},
     1,
     7,
     2,
     24 * GIB,
     "phase stable: workers 4 -> 5, mean speed 8.00 -> 10.00 steps/s (increased)"},
    /* 1 -> 58 workers, faster; util 4/10 = 0.4: ceil(0.8/0.4*58) = 116 ->
     * 58 + min(4, 58) = 62 -> capped at 60. 6 records: cpu mean 1 -> 2;
     * memory 1G + ceil(1G/5) = 1073741824 + 214748365 */
    {"stable: capped at 60 workers",
     {WINDOW(REC("r1", 1, PS("j-ps-0", 4, 10), WK(1, GIB)),
             REC("r2", 1, PS("j-ps-0", 4, 10), WK(1, GIB)),
             REC("r3", 1, PS("j-ps-0", 4, 10), WK(1, GIB)),
             REC("r4", 50, PS("j-ps-0", 4, 10), WX58(1, GIB)),
             REC("r5", 50, PS("j-ps-0", 4, 10), WX58(1, GIB)),
             REC("r6", 50, PS("j-ps-0", 4, 10), WX58(1, GIB)))},
     1,
     60,
     2,
     1288490189,
     "stable and faster: 58+min(4, that-58)=62, capped at 60 -> 60 workers"},
    /* initial, 8 workers, util 2/16 = 0.125: ceil(0.8/0.125*8) = ceil(51.2) =
     * 52; no hyper-params: job time unknown, long -> at most 32.
     * 3 records (< 6): cpu max of the last 3 = 2 -> 3; memory 8G*1.2 */
    {"initial, long job: at most 32",
     {WINDOW(INIT_REC("r1", 8, 2, WX8(2, 8 * GIB)), INIT_REC("r2", 8, 2, WX8(2, 8 * GIB)),
             INIT_REC("r3", 8, 2, WX8(2, 8 * GIB)))},
     1,
     32,
     3,
     MEM_8G_MARGIN,
     "phase initial (worker count never changed); max PS CPU util 0.125 (j-ps-0, mean of 3 "
     "records) < 0.8: ceil(0.8/0.125*8)=52, estimated job time unknown (taken as long) -> at most "
     "32 -> 32 workers; cpu=ceil(max worker CPU of the last 3 records 2.00+1)=3; "
     "memory=max 8.00GiB+min(20%, 8GiB)=9.60GiB."},
    /* 4 workers: ceil(0.8/0.125*4) = ceil(25.6) = 26; 4000/10 = 400 steps at
     * 4/4 = 1 step/s per worker = 400 s <= 1800 -> at most 10 */
    {"initial, short job: at most 10",
     {.job = {HP(10, 4000)},
      WINDOW(INIT_REC("r1", 4, 2, WX4(2, 8 * GIB)), INIT_REC("r2", 4, 2, WX4(2, 8 * GIB)),
             INIT_REC("r3", 4, 2, WX4(2, 8 * GIB)))},
     1,
     10,
     3,
     MEM_8G_MARGIN,
     "ceil(0.8/0.125*4)=26, estimated job time 400s <= 1800s -> at most 10 -> 10 workers"},
    /* 4000000/10 = 400000 s > 1800 -> at most 32 -> 26 */
    {"initial, known long job: at most 32",
     {.job = {HP(10, 4000000)},
      WINDOW(INIT_REC("r1", 4, 2, WX4(2, 8 * GIB)), INIT_REC("r2", 4, 2, WX4(2, 8 * GIB)),
             INIT_REC("r3", 4, 2, WX4(2, 8 * GIB)))},
     1,
     26,
     3,
     MEM_8G_MARGIN,
     "estimated job time 400000s > 1800s -> at most 32 -> 26 workers"},
    /* 12 workers, util 8/16 = 0.5: ceil(0.8/0.5*12) = ceil(19.2) = 20; short
     * job (400 steps at 12/12 = 1 -> 400 s): at most 10, but never below the
     * current 12 (DLRover would set 10) -> count kept */
    {"initial, short job: never fewer workers",
     {.job = {HP(10, 4000)},
      WINDOW(INIT_REC("r1", 12, 8, WX12(2, 8 * GIB)), INIT_REC("r2", 12, 8, WX12(2, 8 * GIB)),
             INIT_REC("r3", 12, 8, WX12(2, 8 * GIB)))},
     1,
     0,
     3,
     MEM_8G_MARGIN,
     "ceil(0.8/0.500*12)=20, estimated job time 400s <= 1800s -> at most 10, count kept"},
    /* util 15.5/16 = 0.97 > 0.95: 8 - 4 = 4 */
    {"PS exhausted: 4 fewer",
     {WINDOW(INIT_REC("r1", 8, 15.5, WX8(2, 8 * GIB)), INIT_REC("r2", 8, 15.5, WX8(2, 8 * GIB)),
             INIT_REC("r3", 8, 15.5, WX8(2, 8 * GIB)))},
     1,
     4,
     3,
     MEM_8G_MARGIN,
     "max PS CPU util 0.969 (j-ps-0, mean of 3 records) > 0.95, PS exhausted: "
     "replica=max(8-4, 1)=4;"},
    /* 3 workers: max(3-4, 1) = 1 */
    {"PS exhausted: at least 1",
     {WINDOW(INIT_REC("r1", 8, 15.5, WX2(2, 8 * GIB), WK(2, 8 * GIB)),
             INIT_REC("r2", 8, 15.5, WX2(2, 8 * GIB), WK(2, 8 * GIB)),
             INIT_REC("r3", 8, 15.5, WX2(2, 8 * GIB), WK(2, 8 * GIB)))},
     1,
     1,
     3,
     MEM_8G_MARGIN,
     "replica=max(3-4, 1)=1;"},
    /* 1 worker: already 1, count kept */
    {"PS exhausted: 1 worker stays",
     {WINDOW(INIT_REC("r1", 8, 15.5, WK(2, 8 * GIB)), INIT_REC("r2", 8, 15.5, WK(2, 8 * GIB)),
             INIT_REC("r3", 8, 15.5, WK(2, 8 * GIB)))},
     1,
     0,
     3,
     MEM_8G_MARGIN,
     "replica=max(1-4, 1)=1, count kept;"},
    /* util 14/16 = 0.875 in [0.8, 0.95]: count kept. Memory 50G: margin
     * min(10G, 8G) = 8G -> 58G */
    {"PS well used: count kept; memory margin at most 8GiB",
     {WINDOW(INIT_REC("r1", 8, 14, WX4(2, 50 * GIB)), INIT_REC("r2", 8, 14, WX4(2, 50 * GIB)),
             INIT_REC("r3", 8, 14, WX4(2, 50 * GIB)))},
     1,
     0,
     3,
     58 * GIB,
     "max PS CPU util 0.875 (j-ps-0, mean of 3 records) in [0.8, 0.95], count kept; cpu=ceil(max "
     "worker CPU of the last 3 records 2.00+1)=3; memory=max 50.00GiB+min(20%, "
     "8GiB)=58.00GiB."},
    /* r3: PS at 8/16 = 0.5 >= 1.15 * 0.125 of all 4 neighbours: a singularity,
     * dropped (with its worker at 7 CPU). Usable r1 r2 r4 r5, util 0.125 ->
     * ceil(0.8/0.125*4) = 26 (long); cpu: max of the last 3 usable (r2 r4 r5)
     * 3 -> 4 (with r3 it would be 8) */
    {"singularity records are dropped",
     {WINDOW(INIT_REC("r1", 4, 2, WX4(3, 8 * GIB)), INIT_REC("r2", 4, 2, WX4(3, 8 * GIB)),
             INIT_REC("r3", 4, 8, WX2(3, 8 * GIB), WK(3, 8 * GIB), WK(7, 8 * GIB)),
             INIT_REC("r4", 4, 2, WX4(3, 8 * GIB)), INIT_REC("r5", 4, 2, WX4(3, 8 * GIB)))},
     1,
     26,
     4,
     MEM_8G_MARGIN,
     "Worker resource: 4 usable records (5 of 5 with the newest PS set, 1 singularity records "
     "dropped), 4 workers now; phase initial (worker count never changed); max PS CPU util 0.125 "
     "(j-ps-0, mean of 4 records) < 0.8: ceil(0.8/0.125*4)=26"},
    /* PS at 2, 2, 8, 8, 8: r3 is not above r4 and r5, a step not a spike;
     * util (0.125*2 + 0.5*3)/5 = 0.35 -> ceil(0.8/0.35*4) = ceil(9.14) = 10 */
    {"a step up is not a singularity",
     {WINDOW(INIT_REC("r1", 4, 2, WX4(3, 8 * GIB)), INIT_REC("r2", 4, 2, WX4(3, 8 * GIB)),
             INIT_REC("r3", 4, 8, WX4(3, 8 * GIB)), INIT_REC("r4", 4, 8, WX4(3, 8 * GIB)),
             INIT_REC("r5", 4, 8, WX4(3, 8 * GIB)))},
     1,
     10,
     4,
     MEM_8G_MARGIN,
     "5 usable records (5 of 5 with the newest PS set, 0 singularity records dropped)"},
    /* 3 records, the middle one a spike: 2 usable, too few */
    {"a singularity leaves too few records",
     {WINDOW(INIT_REC("r1", 4, 2, WX4(3, 8 * GIB)), INIT_REC("r2", 4, 8, WX4(3, 8 * GIB)),
             INIT_REC("r3", 4, 2, WX4(3, 8 * GIB)))},
     0,
     0,
     0,
     0,
     "Worker resource: 2 usable records (3 of 3 with the newest PS set, 1 singularity records "
     "dropped), need 3, nothing to change."},
    /* r1 r2 had a second PS (j-ps-1 at 0.99) and 2 workers: ignored, so the
     * phase is initial (4 workers throughout) and the util 0.125 -> 26 */
    {"records of another PS set are dropped",
     {WINDOW(REC("r1", 2, PS("j-ps-0", 2, 16), PS("j-ps-1", 15.84, 16), WX2(3, 8 * GIB)),
             REC("r2", 2, PS("j-ps-0", 2, 16), PS("j-ps-1", 15.84, 16), WX2(3, 8 * GIB)),
             INIT_REC("r3", 4, 2, WX4(3, 8 * GIB)), INIT_REC("r4", 4, 2, WX4(3, 8 * GIB)),
             INIT_REC("r5", 4, 2, WX4(3, 8 * GIB)))},
     1,
     26,
     4,
     MEM_8G_MARGIN,
     "3 usable records (3 of 5 with the newest PS set, 0 singularity records dropped), 4 workers "
     "now; phase initial"},
    {"2 records are too few",
     {WINDOW(INIT_REC("r1", 4, 2, WX4(3, 8 * GIB)), INIT_REC("r2", 4, 2, WX4(3, 8 * GIB)))},
     0,
     0,
     0,
     0,
     "2 usable records (2 of 2 with the newest PS set, 0 singularity records dropped), need 3"},
    {"no samples",
     {.window_cnt = 0},
     0,
     0,
     0,
     0,
     "Worker resource: 0 usable records (0 of 0 with the newest PS set, 0 singularity records "
     "dropped), need 3, nothing to change."},
    /* PS at 2 of 16 (0.125), but no worker pods: nothing to scale, count kept;
     * no worker figures either: nothing to change */
    {"no worker pods in the newest sample: count kept",
     {WINDOW(INIT_REC("r1", 4, 2, ), INIT_REC("r2", 4, 2, ), INIT_REC("r3", 4, 2, ))},
     0,
     0,
     0,
     0,
     "Worker resource: 3 usable records (3 of 3 with the newest PS set, 0 singularity records "
     "dropped), 0 workers now; phase initial (worker count never changed); max PS CPU util 0.125 "
     "(j-ps-0, mean of 3 records), no worker pods in the newest sample, count kept; no worker CPU "
     "figures, cpu kept; no worker memory figures, memory kept: nothing to change."},
    /* j-ps-1 has no CPU request: no utilisation of its own (not 5/0); j-ps-0 at
     * 2/16 = 0.125 decides: ceil(0.8/0.125*4) = 26 (job time unknown: at most
     * 32); cpu ceil(3+1) = 4, memory 8G*1.2 */
    {"a PS without a CPU request has no utilisation",
     {WINDOW(REC("r1", 4, PS("j-ps-1", 5, 0), PS("j-ps-0", 2, 16), WX4(3, 8 * GIB)),
             REC("r2", 4, PS("j-ps-1", 5, 0), PS("j-ps-0", 2, 16), WX4(3, 8 * GIB)),
             REC("r3", 4, PS("j-ps-1", 5, 0), PS("j-ps-0", 2, 16), WX4(3, 8 * GIB)))},
     1,
     26,
     4,
     MEM_8G_MARGIN,
     "max PS CPU util 0.125 (j-ps-0, mean of 3 records) < 0.8: ceil(0.8/0.125*4)=26, estimated "
     "job time unknown (taken as long) -> at most 32 -> 26 workers"},
    /* PS at 0 of 16: util 0, idle, count kept (0.8/0 has no meaning); the
     * workers report memory but no CPU: memory 8G*1.2 only */
    {"PS idle: count kept",
     {WINDOW(INIT_REC("r1", 4, 0, WX4(0, 8 * GIB)), INIT_REC("r2", 4, 0, WX4(0, 8 * GIB)),
             INIT_REC("r3", 4, 0, WX4(0, 8 * GIB)))},
     1,
     0,
     0,
     MEM_8G_MARGIN,
     "max PS CPU util 0.000 (j-ps-0, mean of 3 records), PS idle, count kept; no worker CPU "
     "figures, cpu kept; memory=max 8.00GiB+min(20%, 8GiB)=9.60GiB."},
    /* no PS (an allreduce job): no util, count kept; cpu 3 -> 4, memory 8G*1.2 */
    {"no PS: count kept, CPU and memory planned",
     {WINDOW(REC("r1", 4, WX4(3, 8 * GIB)), REC("r2", 4, WX4(3, 8 * GIB)),
             REC("r3", 4, WX4(3, 8 * GIB)))},
     1,
     0,
     4,
     MEM_8G_MARGIN,
     "no PS CPU utilisation (no PS with a CPU request), count kept; cpu=ceil(max worker CPU of "
     "the last 3 records 3.00+1)=4"},
    /* no PS, workers report nothing: nothing to plan */
    {"no figures: nothing to change",
     {WINDOW(REC("r1", 4, WX4(0, 0)), REC("r2", 4, WX4(0, 0)), REC("r3", 4, WX4(0, 0)))},
     0,
     0,
     0,
     0,
     "count kept; no worker CPU figures, cpu kept; no worker memory figures, memory kept: nothing "
     "to change."},
};

static void plan_free(dlb_plan_t *plan)
{
    free(plan->groups);
    free(plan->pods);
    memset(plan, 0, sizeof(*plan));
}

static void test_worker_resource(void **state)
{
    static const dlb_history_t no_history = {.jobs_cnt = 0};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const wr_case_t *c = &cases[i];
        dlb_plan_request_t req = {
            .event_id = "req-1", .job_uid = "job-1", .stage = DLB_STAGE_WORKER_RUNNING};
        dlb_opt_input_t in = {.req = &req, .job = &c->job, .history = &no_history};
        dlb_plan_t plan = {0};

        print_message("case %s\n", c->name);
        assert_int_equal(dlb_opt_worker_resource(&in, &plan), 0);
        print_message("  %s\n", plan.reason);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\"\n   lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        assert_int_equal(plan.pods_cnt, 0);
        if (!c->group) {
            assert_int_equal(plan.groups_cnt, 0);
            continue;
        }
        assert_int_equal(plan.groups_cnt, 1);
        assert_string_equal(plan.groups[0].group, "worker");
        assert_int_equal(plan.groups[0].count, c->count);
        if (fabs(plan.groups[0].resource.cpu - c->cpu) > 1e-9) {
            print_error("cpu %.12g != %.12g\n", plan.groups[0].resource.cpu, c->cpu);
            fail();
        }
        assert_int_equal(plan.groups[0].resource.memory, c->memory);
        plan_free(&plan);
    }
}

/* The master's phase (plan_request v2's config) decides the branch when it
 * says one; without it (or with one DLRover does not have) the phase is
 * inferred from the worker count, as for an older master. */
typedef struct phase_case {
    const char *name;
    const char *phase; /* config["optimizer.worker.optimize-phase"], NULL = none */
    dlb_job_state_t job;
    int32_t count;
    const char *reason;
} phase_case_t;

static const phase_case_t phase_cases[] = {
    /* util 0.2: ceil(0.8/0.2*5) = 20; initial: at most 32 -> 20 (inferred stable: 9) */
    {"initial, although the count changed",
     "initial",
     {DLR_WINDOW(2, 10)},
     20,
     "phase initial (the master's); last change: workers 1 -> 5, mean speed 8.00 -> 10.00 "
     "steps/s (increased); max PS CPU util 0.200 (j-ps-0, mean of 3 records) < 0.8: "
     "ceil(0.8/0.200*5)=20, estimated job time unknown (taken as long) -> at most 32 -> 20 "
     "workers"},
    {"sample is initial", "sample", {DLR_WINDOW(2, 10)}, 20, "phase sample (the master's);"},
    {"stable, as inferred",
     "stable",
     {DLR_WINDOW(2, 10)},
     9,
     "phase stable (the master's); last change: workers 1 -> 5"},
    /* 8 workers throughout, util 0.125: inferred initial -> 32; stable: no
     * change to judge the speed by -> count kept */
    {"stable without a change: count kept",
     "stable",
     {WINDOW(INIT_REC("r1", 8, 2, WX8(2, 8 * GIB)), INIT_REC("r2", 8, 2, WX8(2, 8 * GIB)),
             INIT_REC("r3", 8, 2, WX8(2, 8 * GIB)))},
     0,
     "phase stable (the master's), but the worker count never changed over the records; max PS "
     "CPU util 0.125 (j-ps-0, mean of 3 records) < 0.8: ceil(0.8/0.125*8)=52, but no change of "
     "the count to judge the speed by, count kept"},
    {"an unknown phase is inferred",
     "warm-up",
     {WINDOW(INIT_REC("r1", 8, 2, WX8(2, 8 * GIB)), INIT_REC("r2", 8, 2, WX8(2, 8 * GIB)),
             INIT_REC("r3", 8, 2, WX8(2, 8 * GIB)))},
     32,
     "phase initial (worker count never changed); max PS CPU util 0.125"},
    {"no phase: inferred", NULL, {DLR_WINDOW(2, 10)}, 9, "; phase stable: workers 1 -> 5"},
};

static void test_worker_phase(void **state)
{
    static const dlb_history_t no_history = {.jobs_cnt = 0};

    (void)state;
    for (size_t i = 0; i < sizeof(phase_cases) / sizeof(phase_cases[0]); i++) {
        const phase_case_t *c = &phase_cases[i];
        dlb_str_entry_t config[] = {{"optimizer.ps.other", "x"},
                                    {DLB_CONFIG_WORKER_PHASE, (char *)c->phase}};
        dlb_plan_request_t req = {.event_id = "req-1",
                                  .job_uid = "job-1",
                                  .stage = DLB_STAGE_WORKER_INITIAL,
                                  .config = config,
                                  .config_cnt = c->phase ? 2 : 1};
        dlb_opt_input_t in = {.req = &req, .job = &c->job, .history = &no_history};
        dlb_plan_t plan = {0};

        print_message("case %s\n", c->name);
        assert_int_equal(dlb_opt_worker_resource(&in, &plan), 0);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\"\n   lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        /* Only a phase DLRover has is taken as the master's. */
        assert_int_equal(!!strstr(plan.reason, "(the master's)"),
                         c->phase && strcmp(c->phase, "warm-up") != 0);
        assert_int_equal(plan.groups_cnt, 1);
        assert_int_equal(plan.groups[0].count, c->count);
        plan_free(&plan);
    }
}

/* Same input, same plan; the input is not written. */
static void test_worker_resource_deterministic(void **state)
{
    const dlb_job_state_t job = {DLR_WINDOW(6, 10)};
    static const dlb_history_t no_history = {.jobs_cnt = 0};
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "job-1"};
    dlb_opt_input_t in = {.req = &req, .job = &job, .history = &no_history};
    dlb_plan_t a = {0}, b = {0};

    (void)state;
    assert_int_equal(dlb_opt_worker_resource(&in, &a), 0);
    assert_int_equal(dlb_opt_worker_resource(&in, &b), 0);
    assert_string_equal(a.reason, b.reason);
    assert_int_equal(a.groups_cnt, 1);
    assert_memory_equal(&a.groups[0], &b.groups[0], sizeof(a.groups[0]));
    assert_true(job.window[5].pods[0].cpu_used == 6);
    plan_free(&a);
    plan_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_resource),
        cmocka_unit_test(test_worker_phase),
        cmocka_unit_test(test_worker_resource_deterministic),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
