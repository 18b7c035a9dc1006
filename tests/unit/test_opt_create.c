/* Create-stage optimizers: DLRover's PS create and worker create, each case
 * worked out by hand from the formulas in reference section 3. */
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

/* Fixtures as static compound literals: no allocation, nothing to free. */
#define COUNT_OF(type, ...) (sizeof((type[]){__VA_ARGS__}) / sizeof(type))
#define PS(n, cpu, mem)                                                                            \
    {                                                                                              \
        .name = n, .type = "ps", .cpu_used = cpu, .memory_used = mem                               \
    }
#define WK(n, cpu, mem)                                                                            \
    {                                                                                              \
        .name = n, .type = "worker", .cpu_used = cpu, .memory_used = mem                           \
    }
#define SAMPLE(id, ...)                                                                            \
    {                                                                                              \
        .event_id = id, .pods = (dlb_pod_usage_t[]){__VA_ARGS__},                                  \
        .pods_cnt = COUNT_OF(dlb_pod_usage_t, __VA_ARGS__)                                         \
    }
#define HJOB(uid, done, ...)                                                                       \
    {                                                                                              \
        .job_uid = uid, .completed = done, .samples = (dlb_runtime_sample_t[]){__VA_ARGS__},       \
        .samples_cnt = COUNT_OF(dlb_runtime_sample_t, __VA_ARGS__)                                 \
    }
#define HISTORY(...)                                                                               \
    {                                                                                              \
        .jobs = (dlb_hist_job_t[]){__VA_ARGS__}, .jobs_cnt = COUNT_OF(dlb_hist_job_t, __VA_ARGS__) \
    }

/* 20 PS of one record, all with the same usage. */
#define PS20(cpu, mem)                                                                             \
    PS("c-ps-0", cpu, mem), PS("c-ps-1", cpu, mem), PS("c-ps-2", cpu, mem),                        \
        PS("c-ps-3", cpu, mem), PS("c-ps-4", cpu, mem), PS("c-ps-5", cpu, mem),                    \
        PS("c-ps-6", cpu, mem), PS("c-ps-7", cpu, mem), PS("c-ps-8", cpu, mem),                    \
        PS("c-ps-9", cpu, mem), PS("c-ps-10", cpu, mem), PS("c-ps-11", cpu, mem),                  \
        PS("c-ps-12", cpu, mem), PS("c-ps-13", cpu, mem), PS("c-ps-14", cpu, mem),                 \
        PS("c-ps-15", cpu, mem), PS("c-ps-16", cpu, mem), PS("c-ps-17", cpu, mem),                 \
        PS("c-ps-18", cpu, mem), PS("c-ps-19", cpu, mem)

static void assert_cores(double got, double want)
{
    if (fabs(got - want) > 1e-9) {
        print_error("cpu %.12g != %.12g\n", got, want);
        fail();
    }
}

static void plan_free(dlb_plan_t *plan)
{
    free(plan->groups);
    free(plan->pods);
    memset(plan, 0, sizeof(*plan));
}

static dlb_job_state_t job_ads = {.job = {.has_meta = 1, .meta = {.scenario = "ads"}}};
static const dlb_plan_request_t req_create = {
    .event_id = "req-1", .job_uid = "job-1", .stage = DLB_STAGE_CREATE};

/* ---- the major cluster ---------------------------------------------------- */

typedef struct mc_case {
    const char *name;
    double v[8];
    size_t n;
    double want;
} mc_case_t;

static const mc_case_t mc_cases[] = {
    {"empty", {0}, 0, 0},
    {"one value", {5}, 1, 5},
    /* n=2: the window needs 2 values, both */
    {"two values", {100, 1}, 2, 50.5},
    /* sorted 0.5 5 6 7 30, median 6; 5 and 7 tie at distance 1, lower first:
     * [5,6]; then 7 (1) beats 0.5 (5.5): [5,6,7] -> 6 */
    {"idle and spike dropped", {30, 6, 0.5, 7, 5}, 5, 6},
    /* sorted 6 7 40, median 7; 6 (1) beats 40 (33): [6,7] -> 6.5 */
    {"outlier job dropped", {40, 6, 7}, 3, 6.5},
    /* sorted 1 2 3 4, lower median 2 (index 1), need 3: 1 and 3 tie -> [1,2];
     * lo at 0 so 3: [1,2,3] -> 2 */
    {"even count, tie goes low", {4, 3, 2, 1}, 4, 2},
    /* sorted 1 5 9, median 5, need 2: 1 and 9 tie at distance 4, lower side
     * wins: [1,5] -> 3 (taking 9 would give 7) */
    {"tie at the last step goes low", {9, 1, 5}, 3, 3},
    /* sorted 10 10 10 11 50 60, median index 2, need 4: 10 (0) < 11 (1) twice,
     * then lo at 0 so 11: [10,10,10,11] -> 41/4 = 10.25 */
    {"duplicates", {60, 10, 50, 10, 11, 10}, 6, 10.25},
};

static void test_major_cluster(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(mc_cases) / sizeof(mc_cases[0]); i++) {
        double v[8];

        memcpy(v, mc_cases[i].v, sizeof(v));
        print_message("case %s\n", mc_cases[i].name);
        assert_cores(dlb_major_cluster_mean(v, mc_cases[i].n), mc_cases[i].want);
    }
}

/* ---- PS create ------------------------------------------------------------ */

typedef struct ps_case {
    const char *name;
    dlb_history_t history;
    int32_t count;
    double cpu;
    int64_t memory;
    const char *reason; /* expected substring */
} ps_case_t;

static const ps_case_t ps_cases[] = {
    {"cold start, no history", {0}, 4, 12, 16 * GIB, "PS create: cold start"},
    {"cold start, history without PS samples",
     HISTORY(HJOB("h1", 1, SAMPLE("r1", WK("h1-worker-0", 8, 10 * GIB)))), 4, 12, 16 * GIB,
     "cold start (no PS samples in 1 history jobs of scenario ads)"},
    /* record sums 0.5 5 6 7 30 -> major cluster [5,6,7] -> job avg 6 (= avgJobPSCPU);
     * ps-0 avg (0.25+3+3.5+4+20.25)/5 = 6.2, ps-1 avg 17.5/5 = 3.5 -> maxCPU 6.2;
     * maxMem 10G, maxJobPSMem 10G+7G = 17G.
     * cpu = 6.2+4 = 10.2; total = 6*1.5 = 9; replica = ceil(9/10.2) = 1;
     * 10G*1 < 17G -> maxMem = 17G; memory = ceil(17G*1.2) = ceil(21904333209.6) */
    {"one job, idle and spike records dropped, maxJobPSMem bump",
     HISTORY(HJOB("h1", 0, SAMPLE("r1", PS("h1-ps-0", 0.25, 2 * GIB), PS("h1-ps-1", 0.25, 2 * GIB)),
                  SAMPLE("r2", PS("h1-ps-0", 3, 8 * GIB), PS("h1-ps-1", 2, 6 * GIB)),
                  SAMPLE("r3", PS("h1-ps-0", 3.5, 8 * GIB), PS("h1-ps-1", 2.5, 6 * GIB)),
                  SAMPLE("r4", PS("h1-ps-0", 4, 9 * GIB), PS("h1-ps-1", 3, 7 * GIB)),
                  SAMPLE("r5", PS("h1-ps-0", 20.25, 10 * GIB), PS("h1-ps-1", 9.75, 7 * GIB)))),
     1, 10.2, 21904333210, "history of 1 jobs in scenario ads: maxCPU=6.20 avgJobPSCPU=6.00"},
    /* job sums 6, 7, 40 -> major cluster [6,7] -> avgJobPSCPU 6.5 (h3 dropped);
     * maxCPU = max(4,2,3.5,3.5,4) = 4; maxMem 12G; maxJobPSMem 24G (h2).
     * cpu = 8; total = 9.75; replica = ceil(9.75/8) = 2;
     * 12G*2 = 24G is not < 24G -> no bump; memory = ceil(12G*1.2) = ceil(15461882265.6).
     * The worker in h1 and the worker-only record in h2 change nothing. */
    {"three jobs, outlier job dropped, no bump at equality",
     HISTORY(HJOB("h1", 1,
                  SAMPLE("r1", PS("h1-ps-0", 4, 10 * GIB), PS("h1-ps-1", 2, 6 * GIB),
                         WK("h1-worker-0", 30, 50 * GIB))),
             HJOB("h2", 0, SAMPLE("r1", WK("h2-worker-0", 1, GIB)),
                  SAMPLE("r2", PS("h2-ps-0", 3.5, 12 * GIB), PS("h2-ps-1", 3.5, 12 * GIB))),
             HJOB("h3", 1,
                  SAMPLE("r1", PS("h3-ps-0", 4, GIB), PS("h3-ps-1", 4, GIB), PS("h3-ps-2", 4, GIB),
                         PS("h3-ps-3", 4, GIB), PS("h3-ps-4", 4, GIB), PS("h3-ps-5", 4, GIB),
                         PS("h3-ps-6", 4, GIB), PS("h3-ps-7", 4, GIB), PS("h3-ps-8", 4, GIB),
                         PS("h3-ps-9", 4, GIB)))),
     2, 8, 15461882266, "history of 3 jobs in scenario ads: maxCPU=4.00 avgJobPSCPU=6.50"},
    /* 20 PS x 6 cores: sum 120 = avgJobPSCPU; maxCPU 6; maxMem 3G, maxJobPSMem 60G.
     * cpu = 10; total = 180; replica = ceil(18) = 18 > 15 -> 15, cpu = ceil(180/15) = 12;
     * 3G*15 = 45G < 60G -> maxMem = 4G; memory = ceil(4G*1.2) = ceil(5153960755.2) */
    {"replica above 15 capped", HISTORY(HJOB("c", 1, SAMPLE("r1", PS20(6, 3 * GIB)))), 15, 12,
     5153960756, "capped at 15 PS with cpu=ceil(total/15), maxMem raised to"},
    /* 20 PS x 4 cores: sum 80; cpu = 8; total = 120; replica = 120/8 = 15 exactly: not
     * capped, cpu stays 8; 3G*15 = 45G < 60G -> maxMem 4G -> memory 5153960756 */
    {"replica exactly 15 not capped", HISTORY(HJOB("c", 1, SAMPLE("r1", PS20(4, 3 * GIB)))), 15, 8,
     5153960756, "replica=ceil(avgJobPSCPU*1.5/cpu), maxMem raised"},
    /* idle PS: maxCPU 0 -> cpu 4; total 0 -> replica 0, raised to 1;
     * maxMem 1G = maxJobPSMem -> memory = ceil(1G*1.2) = ceil(1288490188.8) */
    {"idle PS history still gives one PS",
     HISTORY(HJOB("i", 1, SAMPLE("r1", PS("i-ps-0", 0, GIB)))), 1, 4, 1288490189,
     "1 PS x 4 CPU x 1.20GiB"},
    /* PS samples without memory figures: sum 2+4 = 6 = avgJobPSCPU; maxCPU 4;
     * cpu = 8; total = 9; replica = ceil(9/8) = 2; maxMem = maxJobPSMem = 0, so
     * maxMem*1.2 = 0, which would mean "keep": the cold-start 16G instead */
    {"history without PS memory figures: cold-start memory",
     HISTORY(HJOB("m", 1, SAMPLE("r1", PS("m-ps-0", 2, 0), PS("m-ps-1", 4, 0)))), 2, 8, 16 * GIB,
     "maxMem=0.00GiB maxJobPSMem=0.00GiB; cpu=maxCPU+4, replica=ceil(avgJobPSCPU*1.5/cpu), "
     "memory=the cold-start size (no PS memory in history): 2 PS x 8 CPU x 16.00GiB."},
};

static void test_ps_create(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ps_cases) / sizeof(ps_cases[0]); i++) {
        const ps_case_t *c = &ps_cases[i];
        dlb_opt_input_t in = {.req = &req_create, .job = &job_ads, .history = &c->history};
        dlb_plan_t plan = {0};

        print_message("case %s\n", c->name);
        assert_int_equal(dlb_opt_ps_create(&in, &plan), 0);
        assert_int_equal(plan.groups_cnt, 1);
        assert_int_equal(plan.pods_cnt, 0);
        assert_string_equal(plan.groups[0].group, "ps");
        assert_int_equal(plan.groups[0].count, c->count);
        assert_cores(plan.groups[0].resource.cpu, c->cpu);
        assert_int_equal(plan.groups[0].resource.memory, c->memory);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        plan_free(&plan);
    }
}

/* The reason of one case in full, so its wording is pinned down once. */
static void test_ps_create_reason(void **state)
{
    dlb_opt_input_t in = {.req = &req_create, .job = &job_ads, .history = &ps_cases[2].history};
    dlb_plan_t plan = {0};

    (void)state;
    assert_int_equal(dlb_opt_ps_create(&in, &plan), 0);
    assert_string_equal(plan.reason,
                        "PS create: history of 1 jobs in scenario ads: maxCPU=6.20 "
                        "avgJobPSCPU=6.00 maxMem=10.00GiB maxJobPSMem=17.00GiB; cpu=maxCPU+4, "
                        "replica=ceil(avgJobPSCPU*1.5/cpu), maxMem raised to "
                        "maxJobPSMem/replica=17.00GiB, memory=maxMem*1.2: 1 PS x 10.2 CPU x "
                        "20.40GiB.");
    plan_free(&plan);
}

/* ---- worker create -------------------------------------------------------- */

typedef struct worker_case {
    const char *name;
    dlb_history_t history;
    double cpu;
    int64_t memory;
    const char *reason;
} worker_case_t;

static const worker_case_t worker_cases[] = {
    {"cold start, no history",
     {0},
     12,
     16 * GIB,
     "Worker create: cold start (no worker samples in 0 completed of 0 history jobs of scenario "
     "ads): 1 worker x 12 CPU x 16.00GiB."},
    /* only failed / running jobs: ignored -> max 0 -> 16G, 12 CPU */
    {"cold start, only unfinished history",
     HISTORY(HJOB("f", 0, SAMPLE("r1", WK("f-worker-0", 30, 60 * GIB))),
             HJOB("r", 0, SAMPLE("r1", WK("r-worker-0", 20, 40 * GIB)))),
     12, 16 * GIB, "cold start (no worker samples in 0 completed of 2 history jobs"},
    /* completed: max worker memory 12G (c1 w1), max cpu 13.2 (c2);
     * memory = 12G*1.5 = 18G = 19327352832 > 16G; cpu = ceil(13.2) = 14 > 12.
     * The failed job's 60G / 30 cores and the PS's 40 cores are ignored. */
    {"completed history, failed job ignored",
     HISTORY(HJOB("c1", 1,
                  SAMPLE("r1", WK("c1-worker-0", 6, 10 * GIB), WK("c1-worker-1", 7, 12 * GIB),
                         PS("c1-ps-0", 40, 80 * GIB))),
             HJOB("f", 0, SAMPLE("r1", WK("f-worker-0", 30, 60 * GIB))),
             HJOB("c2", 1, SAMPLE("r1", WK("c2-worker-0", 13.2, 4 * GIB)))),
     14, 19327352832,
     "history of 2 completed jobs (of 3) in scenario ads: max worker memory 12.00GiB, max "
     "worker CPU 13.20"},
    /* small completed job: 8G*1.5 = 12G < 16G -> 16G; ceil(3.5) = 4 < 12 -> 12 */
    {"completed history below the floors",
     HISTORY(HJOB("c", 1, SAMPLE("r1", WK("c-worker-0", 3.5, 8 * GIB)))), 12, 16 * GIB,
     "1 worker x 12 CPU x 16.00GiB"},
    /* the maxima of different workers: w0 14 cores / 8G, w1 10 cores / 20G ->
     * cpu ceil(14) = 14, memory 20G*1.5 = 30G = 32212254720 */
    {"completed history, CPU and memory maxima of different workers",
     HISTORY(
         HJOB("c", 1, SAMPLE("r1", WK("c-worker-0", 14, 8 * GIB), WK("c-worker-1", 10, 20 * GIB)))),
     14, 32212254720, "max worker memory 20.00GiB, max worker CPU 14.00"},
};

static void test_worker_create(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(worker_cases) / sizeof(worker_cases[0]); i++) {
        const worker_case_t *c = &worker_cases[i];
        dlb_opt_input_t in = {.req = &req_create, .job = &job_ads, .history = &c->history};
        dlb_plan_t plan = {0};

        print_message("case %s\n", c->name);
        assert_int_equal(dlb_opt_worker_create(&in, &plan), 0);
        assert_int_equal(plan.groups_cnt, 1);
        assert_int_equal(plan.pods_cnt, 0);
        assert_string_equal(plan.groups[0].group, "worker");
        assert_int_equal(plan.groups[0].count, 1);
        assert_cores(plan.groups[0].resource.cpu, c->cpu);
        assert_int_equal(plan.groups[0].resource.memory, c->memory);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        plan_free(&plan);
    }
}

/* Both optimizers into one plan: groups in call order, sentences joined. */
static void test_create_merge(void **state)
{
    static const dlb_history_t none = {0};
    dlb_opt_input_t in = {.req = &req_create, .job = &job_ads, .history = &none};
    dlb_plan_t plan = {0};

    (void)state;
    assert_int_equal(dlb_opt_worker_create(&in, &plan), 0);
    assert_int_equal(dlb_opt_ps_create(&in, &plan), 0);
    assert_int_equal(plan.groups_cnt, 2);
    assert_string_equal(plan.groups[0].group, "worker");
    assert_string_equal(plan.groups[1].group, "ps");
    assert_non_null(strstr(plan.reason, "16.00GiB. PS create: cold start"));
    plan_free(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_major_cluster),    cmocka_unit_test(test_ps_create),
        cmocka_unit_test(test_ps_create_reason), cmocka_unit_test(test_worker_create),
        cmocka_unit_test(test_create_merge),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
