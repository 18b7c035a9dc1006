/* The dlbrain worker model (dlb_opt_worker_model): 1/speed = a/w + b/p + c by
 * NNLS from the job's window, then workers added while one more pays
 * (>= scale_min_gain of the speed per worker), else removed. Windows are
 * synthetic: speed = 1 / (a/w + b/p + c) for chosen a, b, c, so the fit is
 * known by construction. With k = b/p + c at today's p, the (w+1)-th worker
 * adds a / (a + k (w+1)) of the speed per worker at w (see opt_model.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlbrain_fixture.h"
#include "opt_dlbrain.h"
#include "optimizer.h"
#include "opt_plan.h"

/* One sample: w workers, ps PS of ps_cpu requested cores each, 1/speed. */
typedef struct mspec {
    int workers;
    int ps;
    double ps_cpu;
    double inv_speed; /* 0 = a sample with speed 0 */
} mspec_t;

#define MAX_SPECS 8

typedef struct model_case {
    const char *name;
    mspec_t spec[MAX_SPECS]; /* oldest first, workers 0 ends */
    const dlb_tuning_t *tuning;
    int max_workers; /* limits; 0 = none */
    int fallback;    /* 1 = DLRover's rule answers, the plan is its plan */
    int32_t count;   /* expected worker count in the plan, 0 = kept */
    const char *reason;
} model_case_t;

static const dlb_tuning_t step3 = {.hang_seconds = 600,
                                   .straggler_ratio = 0.5,
                                   .straggler_samples = 3,
                                   .memory_horizon_seconds = 1800,
                                   .memory_trigger = 0.9,
                                   .scale_min_gain = 0.5,
                                   .scale_step_max = 3};
static const dlb_tuning_t step2 = {.hang_seconds = 600,
                                   .straggler_ratio = 0.5,
                                   .straggler_samples = 3,
                                   .memory_horizon_seconds = 1800,
                                   .memory_trigger = 0.9,
                                   .scale_min_gain = 0.5,
                                   .scale_step_max = 2};

/* a = 4, b = 0.5, c = 0.1 over (w, p PS pods) = (1, 1) 4 + 0.5 + 0.1 = 4.6,
 * (2, 1) 2.6, (4, 1) 1.6, (8, 2) 0.5 + 0.25 + 0.1 = 0.85, (4, 2) 1.35; plus
 * a sample with speed 0 (skipped) and one without PS (skipped: others have
 * PS). Today p = 2: k = 0.5/2 + 0.1 = 0.35. */
#define EXACT                                                                                      \
    {1, 1, 16, 4.6}, {2, 1, 16, 2.6}, {4, 1, 16, 1.6}, {3, 2, 16, 0}, {8, 2, 16, 0.85},            \
        {5, 0, 0, 1.0},                                                                            \
    {                                                                                              \
        4, 2, 16, 1.35                                                                             \
    }
/* 1/speed = 4/w + 0.6 at a constant p = 16 (b/p is a constant, like c). */
#define NO_B(last)                                                                                 \
    {1, 2, 8, 4.6}, {4, 2, 8, 1.6}, {8, 2, 8, 1.1},                                                \
    {                                                                                              \
        last, 2, 8, 4.0 / last + 0.6                                                               \
    }

static const model_case_t model_cases[] = {
    /* NNLS recovers 4, 0.5, 0.1 exactly (R^2 = 1). From 4 workers: the (w+1)-th adds
     * 4 / (4 + 0.35 (w+1)) >= 0.5 while w+1 <= 11.4: worker 11 adds 4/7.85 = 0.510,
     * worker 12 4/8.2 = 0.488 < 0.5 -> 11 (7 steps <= 8). speed(4) = 4 / (4 + 1.4) =
     * 0.7407, speed(11) = 11 / 7.85 = 1.401 */
    {"recovers a, b, c; grows while it pays",
     {EXACT},
     NULL,
     0,
     0,
     11,
     "Worker model from 5 samples (1..8 workers): 1/speed = 4/w + 0.5/p + 0.1, R^2=1.0000, rms "
     "residual 0.0000s; at p=2 PS speed(4)=0.7407 steps/s, speed(11)=1.401: workers 4 -> 11 "
     "(worker 12 would add 0.488 < 0.50 of the speed per worker)."},
    /* (w, 1/speed) = (1, 1), (2, 0.4), (4, 0.1), (4, 0.1), p = 16: the unconstrained
     * line in 1/w is 1.2/w - 0.2 (mean x 0.5, mean y 0.4, Sxy 0.45, Sxx 0.375): c < 0.
     * NNLS holds c = b = 0: a = Sum xy / Sum x^2 = 1.25 / 1.375 = 10/11 = 0.909091;
     * residual 1.18 - 1.25^2 / 1.375 = 0.043636, Sum (y - 0.4)^2 = 0.54, R^2 = 0.9192.
     * k = 0: every worker adds 1.0 of the speed per worker -> the step cap, 4 -> 12;
     * speed(4) = 4 / (10/11) = 4.4, speed(12) = 13.2 */
    {"a coefficient clamped at 0; step cap",
     {{1, 2, 8, 1.0}, {2, 2, 8, 0.4}, {4, 2, 8, 0.1}, {4, 2, 8, 0.1}},
     NULL,
     0,
     0,
     12,
     "1/speed = 0.909091/w + 0/p + 0, R^2=0.9192, rms residual 0.1044s; at p=2 PS "
     "speed(4)=4.4 steps/s, speed(12)=13.2: workers 4 -> 12 (stopped by the step cap; worker 13 "
     "would add 1.000 of the speed per worker)."},
    /* b/p and c are the same column: the tie goes to c. k = 0.6: worker 6 adds
     * 4 / (4 + 3.6) = 0.526, worker 7 4 / 8.2 = 0.488 -> 2 -> 6 */
    {"PS CPU never changed: b goes to c",
     {NO_B(2)},
     NULL,
     0,
     0,
     6,
     "1/speed = 4/w + 0/p + 0.6, R^2=1.0000"},
    /* A speed reported as 0.00 while global_step advanced (a step takes minutes, speeds
     * come with two decimals): the steps since the first sample at the same counts over
     * that time, 100 steps in 15 s, 1/speed = 0.15. Without it 3 samples are too few.
     * x = 1/w: 1, 0.25, 0.125, 0.125; y: 4.6, 1.6, 1.1, 0.15: least squares a = 2.3625 /
     * 0.53125 = 4.447, c = 1.8625 - 0.375 a = 0.195, both >= 0; every worker up to 22 pays
     * -> the step cap (8): 8 -> 16 */
    {"a zero speed from the steps of its segment",
     {{1, 2, 8, 4.6}, {4, 2, 8, 1.6}, {8, 2, 8, 1.1}, {8, 2, 8, 0}},
     NULL,
     0,
     0,
     16,
     "Worker model from 4 samples (1..8 workers): 1/speed = 4.44706/w"},
    /* the same without PS (all-reduce): b is not fitted, p = 0; speed(w) = w / (4 + 0.6 w):
     * speed(2) = 2 / 5.2 = 0.3846, speed(6) = 6 / 7.6 = 0.7895 */
    {"no PS",
     {{1, 0, 0, 4.6}, {4, 0, 0, 1.6}, {8, 0, 0, 1.1}, {2, 0, 0, 2.6}},
     NULL,
     0,
     0,
     6,
     "1/speed = 4/w + 0/p + 0.6, R^2=1.0000, rms residual 0.0000s; at p=0 PS speed(2)=0.3846 "
     "steps/s, speed(6)=0.7895: workers 2 -> 6 (worker 7 would add 0.488 < 0.50"},
    /* already at 6: worker 7 adds 0.488 < 0.5, worker 6 added 0.526 >= 0.5: kept */
    {"at the optimum: count kept",
     {NO_B(6)},
     NULL,
     0,
     0,
     0,
     "workers 6 -> 6 (worker 7 would add 0.488 < 0.50 of the speed per worker)."},
    /* 1/speed = 4/w + 1.8: the w-th worker adds 4 / (4 + 1.8 w) of the speed per
     * worker at w-1: worker 6 0.270, 5 0.308, 4 0.357, 3 0.426 (< 0.5, removed),
     * worker 2 4/7.6 = 0.526 (kept) -> 6 -> 2 */
    {"shrink while the last worker does not pay",
     {{2, 2, 8, 3.8}, {4, 2, 8, 2.8}, {8, 2, 8, 2.3}, {6, 2, 8, 4.0 / 6 + 1.8}},
     NULL,
     0,
     0,
     2,
     "workers 6 -> 2 (worker 6 added 0.270 < 0.50 of the speed per worker; shrunk until worker 2 "
     "adds 0.526)."},
    /* the same with at most 2 steps: 6 -> 4 */
    {"shrink: step cap",
     {{2, 2, 8, 3.8}, {4, 2, 8, 2.8}, {8, 2, 8, 2.3}, {6, 2, 8, 4.0 / 6 + 1.8}},
     &step2,
     0,
     0,
     4,
     "workers 6 -> 4 (worker 6 added 0.270 < 0.50 of the speed per worker; shrunk until the step "
     "cap)."},
    /* 1/speed = 4/w + 10: worker 3 adds 4/34 = 0.118, worker 2 4/24 = 0.167 -> 1 */
    {"shrink to one worker",
     {{1, 2, 8, 14}, {2, 2, 8, 12}, {4, 2, 8, 11}, {3, 2, 8, 4.0 / 3 + 10}},
     NULL,
     0,
     0,
     1,
     "workers 3 -> 1 (worker 3 added 0.118 < 0.50 of the speed per worker; shrunk until one "
     "worker was left)."},
    /* the first case with at most 3 steps: 4 -> 7; worker 8 would add 4 / (4 + 2.8) = 0.588 */
    {"grow: step cap",
     {EXACT},
     &step3,
     0,
     0,
     7,
     "workers 4 -> 7 (stopped by the step cap; worker 8 would add 0.588 of the speed per "
     "worker)."},
    /* the first case with limits.workers.max 6: worker 7 would add 4 / 6.45 = 0.620 */
    {"grow: worker limit",
     {EXACT},
     NULL,
     6,
     0,
     6,
     "workers 4 -> 6 (stopped by the worker limit; worker 7 would add 0.620 of the speed per "
     "worker)."},
    /* 1/speed = 4/w + 10 as above, today 1 worker: worker 2 would add
     * 4 / (4 + 20) = 0.167 < 0.5, and there is none to remove: kept */
    {"one worker that pays alone: count kept",
     {{2, 2, 8, 12}, {4, 2, 8, 11}, {3, 2, 8, 4.0 / 3 + 10}, {1, 2, 8, 14}},
     NULL,
     0,
     0,
     0,
     "workers 1 -> 1 (worker 2 would add 0.167 < 0.50 of the speed per worker)."},
    /* the same speed at 1, 2, 4 and 8 workers: 1/speed = 1 (c alone; a and b
     * do not fit it clearly better), every y equal so Sum (y - mean)^2 = 0 and
     * R^2 is taken as 1. Workers add nothing (a = 0): 8 -> 1 in 7 steps */
    {"speed independent of the workers: shrink to one",
     {{1, 2, 8, 1}, {2, 2, 8, 1}, {4, 2, 8, 1}, {8, 2, 8, 1}},
     NULL,
     0,
     0,
     1,
     "1/speed = 0/w + 0/p + 1, R^2=1.0000, rms residual 0.0000s; at p=2 PS speed(8)=1 "
     "steps/s, speed(1)=1: workers 8 -> 1 (worker 8 added 0.000 < 0.50 of the speed per worker; "
     "shrunk until one worker was left)."},
    /* the first case with limits.workers.max 4, today's count: no room to grow,
     * and a stop is no reason to shrink: kept; worker 5 would add 4 / 5.75 = 0.696 */
    {"worker limit already reached: count kept",
     {EXACT},
     NULL,
     4,
     0,
     0,
     "workers 4 -> 4 (stopped by the worker limit; worker 5 would add 0.696 of the speed per "
     "worker)."},
    {"one worker count: DLRover's rule",
     {{4, 2, 8, 1.6}, {4, 2, 8, 1.5}, {4, 2, 8, 1.7}, {4, 2, 8, 1.6}, {4, 2, 8, 1.6}},
     NULL,
     0,
     1,
     0,
     "Worker model: too little to fit (5 usable samples, 1 worker counts; needs >= 4 and >= 2), "
     "DLRover's worker resource rule instead. Worker resource:"},
    {"three samples: DLRover's rule",
     {{1, 2, 8, 4.6}, {2, 2, 8, 2.6}, {4, 2, 8, 1.6}},
     NULL,
     0,
     1,
     0,
     "Worker model: too little to fit (3 usable samples, 3 worker counts; needs >= 4 and >= 2)"},
    /* speeds of 1e200 steps/s (finite, so valid input): 1/speed = 1e-200, whose
     * square underflows to 0. Sum y^2 = 0, so the empty model (a = b = c = 0,
     * residual 0) is not beaten "clearly" by any other (residual >= 0): the fit
     * is degenerate and DLRover's rule answers. No real speed gets there. */
    {"degenerate fit: DLRover's rule",
     {{1, 2, 8, 1e-200}, {2, 2, 8, 1e-200}, {4, 2, 8, 1e-200}, {4, 2, 8, 1e-200}},
     NULL,
     0,
     1,
     0,
     "Worker model: the fit is degenerate (a = b = c = 0) (4 usable samples, 3 worker counts; "
     "needs >= 4 and >= 2), DLRover's worker resource rule instead. Worker resource:"},
    {"no samples: DLRover's rule",
     {{0}},
     NULL,
     0,
     1,
     0,
     "Worker model: too little to fit (0 usable samples, 0 worker counts"},
};

/* The window of a spec: workers use 2 cores and 4 GiB, PS half their request. */
static void build(const mspec_t *spec, dlb_job_state_t *st)
{
    size_t n = 0, i;

    memset(st, 0, sizeof(*st));
    while (n < MAX_SPECS && spec[n].workers)
        n++;
    if (!n)
        return;
    assert_non_null(st->window = calloc(n, sizeof(*st->window)));
    st->window_cnt = n;
    for (i = 0; i < n; i++) {
        dlb_runtime_sample_t *s = &st->window[i];
        int k;

        snprintf(s->event_id, sizeof(s->event_id), "r%zu", i + 1);
        s->event_time_ms = (int64_t)i * 15000;
        s->global_step = (int64_t)i * 100;
        s->speed = spec[i].inv_speed > 0 ? 1.0 / spec[i].inv_speed : 0;
        s->pods_cnt = (size_t)(spec[i].workers + spec[i].ps);
        assert_non_null(s->pods = calloc(s->pods_cnt, sizeof(*s->pods)));
        for (k = 0; k < spec[i].workers; k++) {
            dlb_pod_usage_t *p = &s->pods[k];

            snprintf(p->name, sizeof(p->name), "j-worker-%d", k);
            snprintf(p->type, sizeof(p->type), "worker");
            p->cpu_used = 2;
            p->memory_used = 4 * GIB;
        }
        for (k = 0; k < spec[i].ps; k++) {
            dlb_pod_usage_t *p = &s->pods[spec[i].workers + k];

            snprintf(p->name, sizeof(p->name), "j-ps-%d", k);
            snprintf(p->type, sizeof(p->type), "ps");
            p->cpu_requested = spec[i].ps_cpu;
            p->cpu_used = spec[i].ps_cpu / 2;
            p->memory_used = 2 * GIB;
        }
    }
}

static void unbuild(dlb_job_state_t *st)
{
    size_t i;

    for (i = 0; i < st->window_cnt; i++)
        free(st->window[i].pods);
    free(st->window);
    memset(st, 0, sizeof(*st));
}

static void test_model_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(model_cases) / sizeof(model_cases[0]); i++) {
        const model_case_t *c = &model_cases[i];
        static const dlb_history_t none = {0};
        dlb_limits_t limits = {.max_workers = c->max_workers};
        dlb_plan_request_t req = {
            .event_id = "req-1", .job_uid = "j", .stage = "job_stage_running"};
        dlb_opt_input_t in = {
            .req = &req, .history = &none, .tuning = c->tuning, .limits = &limits};
        dlb_plan_t plan = {0}, rule = {0};
        const dlb_group_resource_t *g, *rg;
        dlb_job_state_t job;

        print_message("case %s\n", c->name);
        build(c->spec, &job);
        in.job = &job;
        assert_int_equal(dlb_opt_worker_model(&in, &plan), 0);
        assert_int_equal(dlb_opt_worker_resource(&in, &rule), 0);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        rg = dlb_plan_group(&rule, "worker");
        g = dlb_plan_group(&plan, "worker");
        if (c->fallback) {
            /* exactly DLRover's plan */
            assert_int_equal(plan.groups_cnt, rule.groups_cnt);
            if (rg) {
                assert_non_null(g);
                assert_memory_equal(g, rg, sizeof(*g));
            }
        } else {
            /* the model's count; CPU and memory from DLRover's rule: ceil(2 + 1) = 3
             * cores, 4G + ceil(4G / 5) = 4294967296 + 858993460 = 5153960756 */
            assert_non_null(rg);
            assert_true(rg->resource.cpu == 3);
            assert_int_equal(rg->resource.memory, 5153960756);
            assert_non_null(g);
            assert_int_equal(plan.groups_cnt, 1);
            assert_int_equal(g->count, c->count);
            assert_true(g->resource.cpu == rg->resource.cpu);
            assert_int_equal(g->resource.memory, rg->resource.memory);
        }
        assert_int_equal(plan.pods_cnt, 0);
        assert_int_equal(plan.actions_cnt, 0);
        fixture_plan_free(&plan);
        fixture_plan_free(&rule);
        unbuild(&job);
    }
}

/* The first case's samples (workers at 4G used: DLRover's rule gives 4G + 20% = 4.8G)
 * with completed history workers that needed 24G (HIST_WITH_OOM: h2's OOMKilled 20G x 1.2):
 * the group gets 24G + min(24G x 0.1 = 2576980377 (integer), 8G) = 28346784153 bytes,
 * as the count is still the model's. */
static void test_model_history_floor(void **state)
{
    const dlb_history_t hist = HIST_WITH_OOM;
    const model_case_t *c = &model_cases[0];
    dlb_limits_t limits = {.max_workers = c->max_workers};
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j", .stage = "job_stage_running"};
    dlb_opt_input_t in = {.req = &req, .history = &hist, .tuning = c->tuning, .limits = &limits};
    dlb_plan_t plan = {0};
    const dlb_group_resource_t *g;
    dlb_job_state_t job;

    (void)state;
    build(c->spec, &job);
    in.job = &job;
    assert_int_equal(dlb_opt_worker_model(&in, &plan), 0);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->resource.memory, 28346784153);
    assert_int_equal(g->count, c->count);
    assert_non_null(strstr(plan.reason, "Worker memory 4.80GiB raised to the history peak "
                                        "24.00GiB + min(10%, 8GiB) = 26.40GiB (3 worker pods "
                                        "of 2 jobs)."));
    fixture_plan_free(&plan);
    unbuild(&job);
}

/* Resizes against what a restart costs (worth_restart in opt_model.c). */
static int64_t rise_per_sample;                /* added to each worker's memory_used per sample */
static const dlb_cluster_view_t *plan_cluster; /* the other jobs, NULL = unknown */
static dlb_cluster_job_t plan_self;            /* the job's own entry, as the plan left it */

static void plan_with(const mspec_t *spec, const dlb_tuning_t *tun, int64_t max_steps,
                      double wk_cpu, int64_t wk_mem, dlb_plan_t *plan)
{
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j", .stage = "job_stage_running"};
    dlb_history_t hist = {0};
    dlb_opt_input_t in = {.req = &req, .history = &hist, .tuning = tun};
    dlb_job_state_t job;

    build(spec, &job);
    job.job.has_hyper_params = max_steps > 0;
    job.job.hyper_params.max_steps = max_steps;
    for (size_t i = 0; i < job.window_cnt; i++)
        for (size_t k = 0; k < job.window[i].pods_cnt; k++)
            if (!strcmp(job.window[i].pods[k].type, "worker")) {
                job.window[i].pods[k].cpu_requested = wk_cpu;
                job.window[i].pods[k].memory_requested = wk_mem;
                job.window[i].pods[k].memory_used += (int64_t)i * rise_per_sample;
            }
    in.job = &job;
    in.cluster = plan_cluster;
    in.cluster_out = &plan_self;
    memset(plan, 0, sizeof(*plan));
    assert_int_equal(dlb_opt_worker_model(&in, plan), 0);
    unbuild(&job);
}

/* EXACT grows 4 -> 11 with time to spare. Its newest 5 speeds average
 * (0 + 1/0.85 + 1 + 1/1.6 + 1/1.35) / 5 = 0.70844 steps/s at step 600: with
 * 300 steps left (423 s < 10 x 60 s) nothing changes, memory cut or not. */
static void test_model_restart_near_end(void **state)
{
    const mspec_t spec[MAX_SPECS] = {EXACT};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    plan_with(spec, NULL, 900, 0, 0, &plan);
    assert_null(dlb_plan_group(&plan, "worker"));
    assert_non_null(strstr(plan.reason, "Remaining 423s < 10 restarts of 60s: workers, cpu and "
                                        "memory kept"));
    fixture_plan_free(&plan);
    /* the same job with 100,000 steps left grows */
    plan_with(spec, NULL, 100600, 0, 0, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->count, 11);
    assert_null(strstr(plan.reason, "restart"));
    fixture_plan_free(&plan);
}

/* 1/speed = 4/w + 0.6 at 6 workers, scale_min_gain 0.05 and one step: the
 * 7th worker adds 4 / 8.2 = 0.488 of the speed per worker, so the model
 * wants 7; it saves 1 - (6/7.6) / (7/8.2) = 7.52% of the remaining time.
 * Speeds 1/4.6, 1/1.6, 1/1.1, 1/1.2667 average 0.63523 at step 300: 445
 * steps left are 700.5 s (701), 52.7 s saved < 60 s of restart: kept. 2,000 steps
 * left (3148 s, 237 s saved) pay for it. */
static void test_model_restart_small_gain(void **state)
{
    static const dlb_tuning_t tun = {.scale_min_gain = 0.05,
                                     .scale_step_max = 1,
                                     .restart_seconds = 60,
                                     .resize_min_change = 0.2};
    const mspec_t spec[MAX_SPECS] = {NO_B(6)};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    plan_with(spec, &tun, 745, 0, 0, &plan);
    g = dlb_plan_group(&plan, "worker");
    assert_true(!g || g->count == 0);
    assert_non_null(strstr(plan.reason, "7 workers would save 53s of the remaining 701s, less "
                                        "than a restart (60s): kept at 6."));
    fixture_plan_free(&plan);
    plan_with(spec, &tun, 2300, 0, 0, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->count, 7);
    fixture_plan_free(&plan);
}

/* DLRover's rule gives the workers ceil(2 + 1) = 3 cores and 4 GiB x 1.2 =
 * 4.8 GiB. From 3.2 cores and 5.2 GiB those are cuts of 6% and 8%, under
 * 0.1: kept. From 5 cores and 8 GiB (40%) they go through; a raise (from 2
 * cores and 4 GiB) always does. At the optimum (count kept) of NO_B(6). */
static void test_model_small_cuts_kept(void **state)
{
    const mspec_t spec[MAX_SPECS] = {NO_B(6)};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    plan_with(spec, NULL, 0, 3.2, (int64_t)(5.2 * GIB), &plan);
    assert_null(dlb_plan_group(&plan, "worker"));
    assert_non_null(strstr(plan.reason, "Worker cpu 3.2 -> 3 is a cut under 10%: kept."));
    assert_non_null(strstr(plan.reason, "Worker memory 5.20GiB -> 4.80GiB is a cut under 10%: "
                                        "kept."));
    fixture_plan_free(&plan);
    plan_with(spec, NULL, 0, 5, 8 * GIB, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_true(g->resource.cpu == 3);
    assert_int_equal(g->resource.memory, 5153960756); /* 4 GiB + 4 GiB / 5, rounded up */
    fixture_plan_free(&plan);
    plan_with(spec, NULL, 0, 2, 4 * GIB, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_true(g->resource.cpu == 3);
    fixture_plan_free(&plan);
}

/* From 16 GiB, DLRover's rule cuts to the newest usage + 20%. Usage flat
 * at 4 GiB: the cut to 4.8 GiB goes. Usage rising 0.5 GiB per 15 s sample
 * (4, 4.5, 5, 5.5 GiB): the rule says 6.6 GiB, the line says 5.5 GiB + 900 s
 * x 34.1 MiB/s = 35.5 GiB within dlbrain.memory.cut.horizon.seconds: no cut. */
static void test_model_memory_cut_follows_trend(void **state)
{
    const mspec_t spec[MAX_SPECS] = {NO_B(6)};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    rise_per_sample = 0;
    plan_with(spec, NULL, 0, 3, 16 * GIB, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->resource.memory, 5153960756);
    fixture_plan_free(&plan);
    rise_per_sample = GIB / 2;
    plan_with(spec, NULL, 0, 3, 16 * GIB, &plan);
    g = dlb_plan_group(&plan, "worker");
    assert_true(!g || g->resource.memory == 0);
    assert_non_null(strstr(plan.reason, "kept: the trend needs"));
    fixture_plan_free(&plan);
    rise_per_sample = 0;
}

/* Memory that rises with the steps rises faster once the job is faster.
 * Usage rising 128 MiB per 15 s sample (4.375 GiB newest): at 6 workers
 * (kept) the line needs 4.375 + 60 x 0.125 = 11.875 GiB within the 900 s
 * horizon, so the cut goes to that, not to the rule's 5.25 GiB. Grown 2 -> 6
 * the job runs speed(6) / speed(2) = 2.05 times as fast, the horizon
 * stretches as much (1,847 s) and the need, 4.375 + 15.39 = 19.77 GiB, is
 * above the 16 GiB: kept. */
static void test_model_memory_cut_speedup(void **state)
{
    const mspec_t kept[MAX_SPECS] = {NO_B(6)}, grown[MAX_SPECS] = {NO_B(2)};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    rise_per_sample = GIB / 8;
    plan_with(kept, NULL, 0, 3, 16 * GIB, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->count, 0);
    assert_int_equal(g->resource.memory, 4 * GIB + 63 * (GIB / 8));
    assert_non_null(strstr(plan.reason, "Worker memory cut to 11.88GiB, not 5.25GiB"));
    fixture_plan_free(&plan);
    plan_with(grown, NULL, 0, 3, 16 * GIB, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->count, 6);
    assert_int_equal(g->resource.memory, 0);
    assert_non_null(strstr(plan.reason, "kept: the trend needs 19.77GiB"));
    fixture_plan_free(&plan);
    rise_per_sample = 0;
}

/* dlb_opt_ps_model on a window, workers asking 2 cores. */
static void ps_plan_with(const mspec_t *spec, dlb_plan_t *plan)
{
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j", .stage = "job_stage_ps_running"};
    dlb_history_t hist = {0};
    dlb_opt_input_t in = {.req = &req, .history = &hist};
    dlb_job_state_t job;

    build(spec, &job);
    for (size_t i = 0; i < job.window_cnt; i++)
        for (size_t k = 0; k < job.window[i].pods_cnt; k++)
            if (!strcmp(job.window[i].pods[k].type, "worker"))
                job.window[i].pods[k].cpu_requested = 2;
    in.job = &job;
    memset(plan, 0, sizeof(*plan));
    assert_int_equal(dlb_opt_ps_model(&in, plan), 0);
    unbuild(&job);
}

/* The PS count. One PS all along, 1/speed = 4/w + 0.6: at 4 workers 0.6 of
 * the 1.6 s step (0.375, printed 0.37, >= 0.3) is beyond the workers, so a probe doubles
 * the PS (1 -> 2). At 4/w + 0.1 that share is 0.09: kept. With the PS count
 * varied (EXACT: 4/w + 0.5/p + 0.1, 4 workers of 2 cores, 2 PS of 16), the
 * third PS would add (0.7895 - 0.7407) / 16 = 0.0031 of a step per core
 * against 0.5 x 0.7407 / 40 = 0.0093 asked, and the second gives 0.0072:
 * 2 -> 1. */
static void test_ps_model(void **state)
{
    const mspec_t
        probe[MAX_SPECS] = {{1, 1, 16, 4.6}, {4, 1, 16, 1.6}, {8, 1, 16, 1.1}, {4, 1, 16, 1.6}},
        flat[MAX_SPECS] = {{1, 1, 16, 4.1}, {4, 1, 16, 1.1}, {8, 1, 16, 0.6}, {4, 1, 16, 1.1}},
        exact[MAX_SPECS] = {EXACT};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    ps_plan_with(probe, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "ps"));
    assert_int_equal(g->count, 2);
    assert_non_null(strstr(plan.reason, "leaves 0.37 of the step time (>= 0.30) to what workers "
                                        "do not reduce, maybe the PS: PS 1 -> 2, to measure."));
    fixture_plan_free(&plan);
    ps_plan_with(flat, &plan);
    assert_null(dlb_plan_group(&plan, "ps"));
    assert_non_null(strstr(plan.reason, "leaves 0.09 of the step time to neither (probe above "
                                        "0.30, up to 15 PS): PS count kept."));
    fixture_plan_free(&plan);
    ps_plan_with(exact, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "ps"));
    assert_int_equal(g->count, 1);
    assert_non_null(strstr(plan.reason, "PS model (the job's own samples): 1/speed = 4/w + 0.5/p "
                                        "+ 0.1;"));
    assert_non_null(strstr(plan.reason, "PS 2 -> 1."));
    fixture_plan_free(&plan);
}

/* The PS memory at ps_initial (opt_memory.c): one PS at an 8 GiB request
 * using 2, 2.5, 3, 3.5 GiB at 15 s apart, a job of unknown length (the 1800 s
 * horizon): its line reaches 3.5 + 1800 / 30 = 63.5 GiB; spread over the
 * plan's 2 PS with 10% headroom: 63.5 / 2 x 1.1 = 34.925 GiB each. Flat at
 * 2 GiB: 2 / 2 x 1.1 = 1.1 GiB. */
static void test_ps_memory_end(void **state)
{
    const mspec_t spec[MAX_SPECS] = {
        {4, 1, 16, 1.6}, {4, 1, 16, 1.6}, {4, 1, 16, 1.6}, {4, 1, 16, 1.6}};
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j", .stage = "job_stage_ps_initial"};
    dlb_opt_input_t in = {.req = &req};
    dlb_group_resource_t *g;
    dlb_job_state_t job;
    dlb_plan_t plan;

    (void)state;
    for (int rising = 1; rising >= 0; rising--) {
        build(spec, &job);
        for (size_t i = 0; i < job.window_cnt; i++) {
            dlb_pod_usage_t *ps = &job.window[i].pods[4];

            ps->memory_requested = 8 * GIB;
            ps->memory_used = 2 * GIB + (rising ? (int64_t)i * (GIB / 2) : 0);
        }
        in.job = &job;
        memset(&plan, 0, sizeof(plan));
        assert_non_null(g = dlb_plan_group_get(&plan, "ps"));
        g->count = 2;
        g->resource.memory = 3 * GIB;
        assert_int_equal(dlb_opt_ps_memory_end(&in, &plan), 0);
        assert_int_equal(g->resource.memory,
                         rising ? llround(63.5 / 2 * 1.1 * GIB) : llround(1.1 * GIB));
        assert_non_null(strstr(plan.reason, rising ? "PS memory 34.92GiB = the busiest PS (j-ps-0) "
                                                     "at the job's end 63.50GiB (its line 1800s "
                                                     "ahead, the job's length unknown) x 1/2 PS"
                                                   : "PS memory 1.10GiB"));
        fixture_plan_free(&plan);
        unbuild(&job);
    }
}

/* The PS CPU for a new count (opt_ps_size.c): one PS asking 16 cores and
 * using 8. Doubled to 2 PS: ceil(8 x 1/2) + 4 = 8 cores each. At 1 PS:
 * ceil(8) + 4 = 12 < 16, cut. A plan already asking 10: 12 is no cut, the
 * 10 stays. */
static void test_ps_cpu_split(void **state)
{
    const mspec_t spec[MAX_SPECS] = {{4, 1, 16, 1.6}, {4, 1, 16, 1.6}};
    const struct {
        int count;
        double plan_cpu, want;
        const char *reason;
    } cases[] = {
        {2, 0, 8,
         "dlbrain: PS CPU 8 = ceil(the busiest PS (j-ps-0) mean 8.00 x 1/2 PS) + 4, for 16."},
        {1, 0, 12, "dlbrain: PS CPU 12 = ceil(the busiest PS (j-ps-0) mean 8.00 x 1/1 PS) + 4"},
        {1, 10, 10, NULL},
    };
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j", .stage = "job_stage_ps_initial"};
    dlb_opt_input_t in = {.req = &req};
    dlb_group_resource_t *g;
    dlb_job_state_t job;
    dlb_plan_t plan;

    (void)state;
    build(spec, &job);
    in.job = &job;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(&plan, 0, sizeof(plan));
        assert_non_null(g = dlb_plan_group_get(&plan, "ps"));
        g->count = cases[i].count;
        g->resource.cpu = cases[i].plan_cpu;
        assert_int_equal(dlb_opt_ps_cpu_split(&in, &plan), 0);
        assert_true(g->resource.cpu == cases[i].want);
        if (cases[i].reason)
            assert_non_null(strstr(plan.reason, cases[i].reason));
        else
            assert_null(strstr(plan.reason, "PS CPU"));
        fixture_plan_free(&plan);
    }
    unbuild(&job);
}

/* The rest of the cluster (opt_cluster.c). EXACT at 100,000 steps left grows
 * 4 -> 11 alone. While another job waits, a worker must add 0.7 of the speed
 * per worker (dlbrain.scale.min.gain.busy): worker 5 adds 4 / (4 + 0.35 x 5)
 * = 0.696 < 0.7, worker 4 adds 4 / 5.4 = 0.741: 4 kept, none given back.
 * The job's own entry, an entry from after the request and one older than
 * dlbrain.cluster.stale.seconds do not count. */
static void test_model_cluster_waiting(void **state)
{
    const mspec_t spec[MAX_SPECS] = {EXACT};
    dlb_cluster_job_t jobs[] = {{.job_uid = "j", .waiting = 1, .time_ms = 0},
                                {.job_uid = "later", .waiting = 1, .time_ms = 1},
                                {.job_uid = "gone", .waiting = 1, .time_ms = -86401000},
                                {.job_uid = "q", .waiting = 1, .time_ms = -86400000}};
    dlb_cluster_view_t view = {.jobs = jobs, .cnt = 4};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    plan_cluster = &view;
    plan_with(spec, NULL, 100600, 0, 0, &plan);
    g = dlb_plan_group(&plan, "worker");
    assert_true(!g || g->count == 0);
    assert_non_null(strstr(plan.reason, "1 other jobs wait for room: a worker must add 0.70 of "
                                        "the speed per worker, not 0.50."));
    assert_string_equal(plan_self.job_uid, "j");
    assert_int_equal(plan_self.waiting, 0);
    fixture_plan_free(&plan);
    /* q started: it holds cores, nobody waits, and the job grows as alone */
    jobs[3].waiting = 0;
    jobs[3].cores = 500;
    plan_with(spec, NULL, 100600, 0, 0, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->count, 11);
    assert_null(strstr(plan.reason, "wait for room"));
    fixture_plan_free(&plan);
    plan_cluster = NULL;
}

/* With dlbrain.cluster.cores = 100: the job holds 4 workers x 2 + 2 PS x 16
 * = 40 cores, q 50; DLRover's rule gives a worker ceil(2 + 1) = 3 cores, so
 * 10 free cores fit 3 more workers: 7, not 11. With 200 cores all 7 more
 * fit; an entry past the stale limit holds nothing. */
static void test_model_cluster_capacity(void **state)
{
    const mspec_t spec[MAX_SPECS] = {EXACT};
    dlb_tuning_t tun = *dlb_opt_tuning(NULL);
    dlb_cluster_job_t jobs[] = {{.job_uid = "q", .cores = 50, .time_ms = 0},
                                {.job_uid = "gone", .cores = 900, .time_ms = -86401000}};
    dlb_cluster_view_t view = {.jobs = jobs, .cnt = 2};
    const dlb_group_resource_t *g;
    dlb_plan_t plan;

    (void)state;
    plan_cluster = &view;
    tun.cluster_cores = 100;
    plan_with(spec, &tun, 100600, 2, 4 * GIB, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->count, 7);
    assert_non_null(strstr(plan.reason, "Cluster: 90 of 100 cores held (this job and 1 others): "
                                        "7 workers fit, not 11."));
    assert_true(plan_self.cores == 40);
    fixture_plan_free(&plan);
    tun.cluster_cores = 200;
    plan_with(spec, &tun, 100600, 2, 4 * GIB, &plan);
    assert_non_null(g = dlb_plan_group(&plan, "worker"));
    assert_int_equal(g->count, 11);
    assert_null(strstr(plan.reason, "Cluster:"));
    fixture_plan_free(&plan);
    plan_cluster = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_table),
        cmocka_unit_test(test_model_history_floor),
        cmocka_unit_test(test_model_restart_near_end),
        cmocka_unit_test(test_model_restart_small_gain),
        cmocka_unit_test(test_model_small_cuts_kept),
        cmocka_unit_test(test_model_memory_cut_follows_trend),
        cmocka_unit_test(test_model_memory_cut_speedup),
        cmocka_unit_test(test_ps_model),
        cmocka_unit_test(test_ps_memory_end),
        cmocka_unit_test(test_ps_cpu_split),
        cmocka_unit_test(test_model_cluster_waiting),
        cmocka_unit_test(test_model_cluster_capacity),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
