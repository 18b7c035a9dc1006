/* The dlbrain memory trend (dlb_opt_memory_trend): least-squares line of each
 * pod's memory_used, extrapolated to now + horizon, VPA growth within DLRover's
 * caps. Samples a minute apart; memory in MiB so the arithmetic is exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlbrain_fixture.h"
#include "optimizer.h"

#define REQ (10240 * MIB) /* 10GiB; 0.9 of it is 9216MiB */

/* Four samples a minute apart (t = 0, 60, 120, 180 s) of one pod. */
#define RUN4(pod, m0, m1, m2, m3, req)                                                             \
    TSAMPLE("r1", 0, 1, MPOD(pod, "worker", (m0)*MIB, req)),                                       \
        TSAMPLE("r2", 60, 2, MPOD(pod, "worker", (m1)*MIB, req)),                                  \
        TSAMPLE("r3", 120, 3, MPOD(pod, "worker", (m2)*MIB, req)),                                 \
        TSAMPLE("r4", 180, 4, MPOD(pod, "worker", (m3)*MIB, req))

static const dlb_tuning_t short_horizon = {.hang_seconds = 600,
                                           .straggler_ratio = 0.5,
                                           .straggler_samples = 3,
                                           .memory_horizon_seconds = 600,
                                           .memory_trigger = 0.8,
                                           .scale_min_gain = 0.5,
                                           .scale_step_max = 8};

typedef struct trend_case {
    const char *name;
    dlb_job_state_t job;
    int64_t now_s;              /* request time */
    const dlb_tuning_t *tuning; /* NULL = defaults: 1800 s, 0.9 */
    struct {
        const char *pod;
        int64_t memory;
    } want[2]; /* expected pod entries, pod NULL ends */
    const char *reason;
    const char *absent; /* must not be in the reason; NULL = nothing */
} trend_case_t;

/* The line through 8000, 8050, 8100, 8150 MiB at x = -180, -120, -60, 0 s:
 * mean x = -90, mean y = 8075; Sxx = 90^2 + 30^2 + 30^2 + 90^2 = 18000;
 * Sxy = (-90)(-75) + (-30)(-25) + 30*25 + 90*75 = 15000 MiB s; slope = 15000/18000
 * MiB/s = 50 MiB/min. At now + 1800 s (x = 1800): 8075 + 15000 * 1890 / 18000 =
 * 8075 + 1575 = 9650 MiB > 0.9 * 10240 = 9216 MiB. VPA = max(9650 * 1.2 = 11580,
 * 9650 + 100) = 11580 MiB = 12142510080; cap = min(max(min(20480, 65536), 10240),
 * 10240 + 8192 = 18432) MiB -> 11580 MiB. */
#define RISING RUN4("j-worker-0", 8000, 8050, 8100, 8150, REQ)

static const trend_case_t trend_cases[] = {
    {"rising past the trigger",
     {WINDOW(TSAMPLE("r1", 0, 1, MPOD("j-worker-0", "worker", 8000 * MIB, REQ),
                     MPOD("j-ps-0", "ps", 4 * GIB, 8 * GIB)),
             TSAMPLE("r2", 60, 2, MPOD("j-worker-0", "worker", 8050 * MIB, REQ),
                     MPOD("j-ps-0", "ps", 4 * GIB, 8 * GIB)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-0", "worker", 8100 * MIB, REQ),
                     MPOD("j-ps-0", "ps", 4 * GIB, 8 * GIB)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 8150 * MIB, REQ),
                     MPOD("j-ps-0", "ps", 4 * GIB, 8 * GIB)))},
     180,
     NULL,
     {{"j-worker-0", 12142510080}},
     "Memory trend: j-worker-0 used 7.96GiB rising 50.0MiB/min over 4 samples, predicted 9.42GiB "
     "in 1800s > 0.90 x request 10.00GiB: memory=11.31GiB (VPA 11.31GiB, cap 18.00GiB)."},
    /* request a minute after the newest sample: x = 1860, 8075 + 15000 * 1950 / 18000 =
     * 9700 MiB; * 1.2 = 11640 MiB = 12205424640 */
    {"now is the request time",
     {WINDOW(RISING)},
     240,
     NULL,
     {{"j-worker-0", 12205424640}},
     "predicted 9.47GiB in 1860s"},
    /* 4096, 4608, 5120, 5632 MiB: 512 MiB/min, 5632 + 512 * 30 = 20992 MiB;
     * VPA 20992 * 1.2 = 25190.4 MiB > cap 18432 MiB = 19327352832 */
    {"growth capped at +8GiB",
     {WINDOW(RUN4("j-worker-0", 4096, 4608, 5120, 5632, REQ))},
     180,
     NULL,
     {{"j-worker-0", 18 * GIB}},
     "memory=18.00GiB (VPA 24.60GiB, cap 18.00GiB)"},
    /* both pods of one window: 11580 MiB and the 18 GiB cap */
    {"two pods",
     {WINDOW(TSAMPLE("r1", 0, 1, MPOD("j-worker-0", "worker", 8000 * MIB, REQ),
                     MPOD("j-worker-1", "worker", 4096 * MIB, REQ)),
             TSAMPLE("r2", 60, 2, MPOD("j-worker-0", "worker", 8050 * MIB, REQ),
                     MPOD("j-worker-1", "worker", 4608 * MIB, REQ)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-0", "worker", 8100 * MIB, REQ),
                     MPOD("j-worker-1", "worker", 5120 * MIB, REQ)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 8150 * MIB, REQ),
                     MPOD("j-worker-1", "worker", 5632 * MIB, REQ)))},
     180,
     NULL,
     {{"j-worker-0", 12142510080}, {"j-worker-1", 18 * GIB}},
     "Memory trend: j-worker-1 used 5.50GiB rising 512.0MiB/min"},
    /* 600 s horizon, trigger 0.8: 8075 + 15000 * 690 / 18000 = 8650 MiB > 8192 MiB;
     * 8650 * 1.2 = 10380 MiB = 10884218880 */
    {"tuning: horizon and trigger",
     {WINDOW(RISING)},
     180,
     &short_horizon,
     {{"j-worker-0", 10884218880}},
     "predicted 8.45GiB in 600s > 0.80 x request 10.00GiB: memory=10.14GiB"},
    /* 70G request = 71680 MiB, trigger 0.9 -> 64512 MiB. 64000..64150 MiB: as
     * RISING, 64075 + 1575 = 65650 MiB predicted > 64512. VPA 65650 * 1.2 = 78780
     * MiB, but cap = min(max(min(143360, 65536), 71680), 71680 + 8192) = 71680 MiB,
     * the request itself (no growth past 64GiB): no entry, and no "none predicted
     * above" after the sentence that says it was */
    {"predicted above the trigger, but the cap allows no growth",
     {WINDOW(RUN4("j-worker-0", 64000, 64050, 64100, 64150, 70 * GIB))},
     180,
     NULL,
     {{NULL}},
     "Memory trend: j-worker-0 used 62.65GiB rising 50.0MiB/min, predicted 64.11GiB in 1800s > "
     "0.90 x request 70.00GiB, but the cap allows no growth past 70.00GiB.",
     "none predicted above"},
    /* Warm-up over: 8000, 8300, 8600, 8900, then 9000 x 4 MiB, a minute apart (x = -420..0).
     * All 8: mean x -210, mean y 69800 / 8 = 8725; Sxx = 2 (210^2 + 150^2 + 90^2 + 30^2) =
     * 151200; Sxy = 152250 + 63750 + 11250 - 5250 + 8250 + 24750 + 41250 + 57750 = 354000,
     * slope 2.34 MiB/s, at 1800 s 8725 + 354000 * 2010 / 151200 = 13431 MiB > 9216: the old
     * rule fired. The newest half (4 points) is flat (slope 0 < 2.34): it predicts 9000 MiB,
     * not rising, nothing to change. */
    {"growth that has stopped is not extrapolated",
     {WINDOW(TSAMPLE("r1", 0, 1, MPOD("j-worker-0", "worker", 8000 * MIB, REQ)),
             TSAMPLE("r2", 60, 2, MPOD("j-worker-0", "worker", 8300 * MIB, REQ)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-0", "worker", 8600 * MIB, REQ)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 8900 * MIB, REQ)),
             TSAMPLE("r5", 240, 5, MPOD("j-worker-0", "worker", 9000 * MIB, REQ)),
             TSAMPLE("r6", 300, 6, MPOD("j-worker-0", "worker", 9000 * MIB, REQ)),
             TSAMPLE("r7", 360, 7, MPOD("j-worker-0", "worker", 9000 * MIB, REQ)),
             TSAMPLE("r8", 420, 8, MPOD("j-worker-0", "worker", 9000 * MIB, REQ)))},
     420,
     NULL,
     {{NULL}},
     "Memory trend: 1 pods fitted, none predicted above 0.90"},
    /* 8000, 8300, 8600, 8900, then 9150, 9200, 9250, 9300 MiB. All 8: mean y 8837.5,
     * Sxy = 175875 + 80625 + 21375 - 1875 + 9375 + 32625 + 61875 + 97125 = 477000, slope
     * 477000 / 151200 = 3.15 MiB/s. The newest half is RISING's line shifted by 1150 MiB:
     * slope 15000 / 18000 = 0.83 MiB/s (50 MiB/min) < 3.15, so it predicts: 9225 + 1575 =
     * 10800 MiB > 9216; VPA 10800 * 1.2 = 12960 MiB = 13589544960 (cap 18432 MiB) */
    {"slowing growth: the newest half's line predicts",
     {WINDOW(TSAMPLE("r1", 0, 1, MPOD("j-worker-0", "worker", 8000 * MIB, REQ)),
             TSAMPLE("r2", 60, 2, MPOD("j-worker-0", "worker", 8300 * MIB, REQ)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-0", "worker", 8600 * MIB, REQ)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 8900 * MIB, REQ)),
             TSAMPLE("r5", 240, 5, MPOD("j-worker-0", "worker", 9150 * MIB, REQ)),
             TSAMPLE("r6", 300, 6, MPOD("j-worker-0", "worker", 9200 * MIB, REQ)),
             TSAMPLE("r7", 360, 7, MPOD("j-worker-0", "worker", 9250 * MIB, REQ)),
             TSAMPLE("r8", 420, 8, MPOD("j-worker-0", "worker", 9300 * MIB, REQ)))},
     420,
     NULL,
     {{"j-worker-0", 13589544960}},
     "rising 50.0MiB/min over 8 samples (the newest half's slope, flatter), predicted 10.55GiB "
     "in 1800s > 0.90 x request 10.00GiB: memory=12.66GiB"},
    /* RISING at 1 step/s, steps 1..4 of 304 (dataset 304, batch 1, 1 epoch): 300 steps
     * left = 300 s < 1800 s. At x = 300: 8075 + 15000 * 390 / 18000 = 8400 MiB < 9216 MiB:
     * the job ends before the pod would need more, no restart for it */
    {"the horizon stops at the job's estimated end",
     {.job = {.has_hyper_params = 1,
              .hyper_params = {.batch_size = 1, .epoch = 1},
              .has_dataset = 1,
              .dataset = {.size = 304}},
      WINDOW(TSAMPLE_S("r1", 0, 1, 1.0, MPOD("j-worker-0", "worker", 8000 * MIB, REQ)),
             TSAMPLE_S("r2", 60, 2, 1.0, MPOD("j-worker-0", "worker", 8050 * MIB, REQ)),
             TSAMPLE_S("r3", 120, 3, 1.0, MPOD("j-worker-0", "worker", 8100 * MIB, REQ)),
             TSAMPLE_S("r4", 180, 4, 1.0, MPOD("j-worker-0", "worker", 8150 * MIB, REQ)))},
     180,
     NULL,
     {{NULL}},
     "none predicted above 0.90 x its request in 300s (0 with < 4 samples at their request, 0 "
     "without a request) (the horizon cut at the job's estimated end)."},
    /* a run of 0, 0, 0, 4e18 bytes (3814697265625 MiB): mean 1e18, Sxy =
     * 90e18 + 30e18 - 30e18 + 270e18 = 360e18, predicted 1e18 + 360e18 * 1890 /
     * 18000 = 3.88e19 bytes, past INT64_MAX / 2: the peak is held there (no
     * overflow converting it), VPA saturates at INT64_MAX = 8589934592.00GiB,
     * the cap 10G + 8G = 18G decides */
    {"an absurd prediction is held below INT64_MAX",
     {WINDOW(RUN4("j-worker-0", 0, 0, 0, 3814697265625, REQ))},
     180,
     NULL,
     {{"j-worker-0", 18 * GIB}},
     "memory=18.00GiB (VPA 8589934592.00GiB, cap 18.00GiB)."},
    /* four samples at one time (t = 180): Sxx = 0, no line; counted with the
     * pods that have no line */
    {"points at a single time",
     {WINDOW(TSAMPLE("r1", 180, 1, MPOD("j-worker-0", "worker", 8000 * MIB, REQ)),
             TSAMPLE("r2", 180, 2, MPOD("j-worker-0", "worker", 8050 * MIB, REQ)),
             TSAMPLE("r3", 180, 3, MPOD("j-worker-0", "worker", 8100 * MIB, REQ)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 8150 * MIB, REQ)))},
     180,
     NULL,
     {{NULL}},
     "Memory trend: 0 pods fitted, none predicted above 0.90 x its request in 1800s (1 with < 4 "
     "samples at their request, 0 without a request)."},
    {"three points are too few",
     {WINDOW(TSAMPLE("r2", 60, 2, MPOD("j-worker-0", "worker", 4096 * MIB, REQ)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-0", "worker", 8192 * MIB, REQ)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 9999 * MIB, REQ)))},
     180,
     NULL,
     {{NULL}},
     "Memory trend: 0 pods fitted, none predicted above 0.90 x its request in 1800s (1 with < 4 "
     "samples at their request, 0 without a request)."},
    /* r2 lacks the pod (relaunched): only r3..r5 count */
    {"a sample without the pod ends the run",
     {WINDOW(TSAMPLE("r1", 0, 1, MPOD("j-worker-0", "worker", 1000 * MIB, REQ)),
             TSAMPLE("r2", 60, 2, MPOD("j-ps-0", "ps", GIB, 8 * GIB)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-0", "worker", 4096 * MIB, REQ)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 8192 * MIB, REQ)),
             TSAMPLE("r5", 240, 5, MPOD("j-worker-0", "worker", 9999 * MIB, REQ)))},
     240,
     NULL,
     {{NULL}},
     "(1 with < 4 samples at their request"},
    /* r1, r2 at 8G, r3..r5 at 10G: the pod was resized, only 3 points */
    {"a new request ends the run",
     {WINDOW(TSAMPLE("r1", 0, 1, MPOD("j-worker-0", "worker", 1000 * MIB, 8 * GIB)),
             TSAMPLE("r2", 60, 2, MPOD("j-worker-0", "worker", 2000 * MIB, 8 * GIB)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-0", "worker", 4096 * MIB, REQ)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-0", "worker", 8192 * MIB, REQ)),
             TSAMPLE("r5", 240, 5, MPOD("j-worker-0", "worker", 9999 * MIB, REQ)))},
     240,
     NULL,
     {{NULL}},
     "(1 with < 4 samples at their request"},
    /* flat at 9500 MiB > 9216: predicted 9500 above the trigger, but slope 0 */
    {"flat above the trigger",
     {WINDOW(RUN4("j-worker-0", 9500, 9500, 9500, 9500, REQ))},
     180,
     NULL,
     {{NULL}},
     "Memory trend: 1 pods fitted, none predicted above 0.90"},
    /* 9900, 9880, 9860, 9840: Sxy = -6000, slope -20 MiB/min; predicted
     * 9870 - 6000 * 1890 / 18000 = 9240 MiB > 9216, but falling */
    {"falling, still above the trigger",
     {WINDOW(RUN4("j-worker-0", 9900, 9880, 9860, 9840, REQ))},
     180,
     NULL,
     {{NULL}},
     "Memory trend: 1 pods fitted, none predicted above 0.90"},
    /* 5000..5030: 10 MiB/min, 5030 + 300 = 5330 MiB < 9216 */
    {"rising, below the trigger",
     {WINDOW(RUN4("j-worker-0", 5000, 5010, 5020, 5030, REQ))},
     180,
     NULL,
     {{NULL}},
     "Memory trend: 1 pods fitted"},
    {"no request: nothing to compare with",
     {WINDOW(RUN4("j-worker-0", 4096, 4608, 5120, 5632, 0))},
     180,
     NULL,
     {{NULL}},
     "0 with < 4 samples at their request, 1 without a request"},
    {"no samples",
     NOJOB,
     0,
     NULL,
     {{NULL}},
     "Memory trend: no runtime samples, nothing to change."},
};

static void test_trend_table(void **state)
{
    size_t i, k;

    (void)state;
    for (i = 0; i < sizeof(trend_cases) / sizeof(trend_cases[0]); i++) {
        const trend_case_t *c = &trend_cases[i];
        static const dlb_history_t none = {0};
        dlb_plan_request_t req = {.event_id = "req-1",
                                  .event_time_ms = c->now_s * 1000,
                                  .job_uid = "j",
                                  .stage = "job_stage_running"};
        dlb_opt_input_t in = {.req = &req, .job = &c->job, .history = &none, .tuning = c->tuning};
        dlb_plan_t plan = {0};

        print_message("case %s\n", c->name);
        assert_int_equal(dlb_opt_memory_trend(&in, &plan), 0);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        if (c->absent && strstr(plan.reason, c->absent)) {
            print_error("reason \"%s\" has \"%s\"\n", plan.reason, c->absent);
            fail();
        }
        for (k = 0; k < 2 && c->want[k].pod; k++) {
            assert_true(k < plan.pods_cnt);
            assert_string_equal(plan.pods[k].name, c->want[k].pod);
            assert_int_equal(plan.pods[k].resource.memory, c->want[k].memory);
            assert_true(plan.pods[k].resource.cpu == 0);
        }
        assert_int_equal(plan.pods_cnt, k);
        assert_int_equal(plan.groups_cnt, 0);
        assert_int_equal(plan.actions_cnt, 0);
        fixture_plan_free(&plan);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trend_table),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
