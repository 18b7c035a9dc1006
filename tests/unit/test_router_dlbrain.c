/* The "dlbrain" optimizer set through the router: its OOM test (answered OOMs
 * no longer capture every request), the idempotent OOM answer, and the
 * composed running stages (health, memory trend, worker model / hot PS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlbrain_fixture.h"
#include "plan_assert.h"
#include "optimizer.h"
#include "routes.h"

/* DLRover's NodeResourceLimit, the conf defaults. */
static const dlb_limits_t limits = {.cpu_min = 4,
                                    .cpu_max = 32,
                                    .memory_min = 6144 * MIB,
                                    .memory_max = 65536 * MIB,
                                    .max_workers = 60,
                                    .max_ps = 15};
static const dlb_history_t no_history = {.jobs_cnt = 0};

/* A worker OOMKilled at 16G (event ne-7) and a PS never OOMKilled; no samples. */
static const dlb_job_state_t oom_job = {
    STATUSES(STATUS("j-ps-0", "ps", 100, 0, "", 8 * GIB),
             STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB))};
/* ne-7 answered by plan-x with 16G * 1.2 = ceil(20615843020.8) = 20615843021 */
static const dlb_oom_plan_t answered_ne7[] = {ANSWER("j-worker-1", "ne-7", "plan-x", 20615843021)};

#define REQ (10240 * MIB)
/* Hung: step 200 from t = 300 to 900 s (600 s); worker-0's memory rises
 * 1 MiB/s toward its 10G request: 8900 + 1800 = 10700 MiB predicted > 9216
 * (the memory trend would fire). */
#define HUNG(id, t, step, mem)                                                                     \
    TSAMPLE(id, t, step,                                                                           \
            {.name = "j-worker-0",                                                                 \
             .type = "worker",                                                                     \
             .memory_used = (mem)*MIB,                                                             \
             .memory_requested = REQ,                                                              \
             .has_speed = 1},                                                                      \
            {.name = "j-worker-1",                                                                 \
             .type = "worker",                                                                     \
             .memory_used = 4 * GIB,                                                               \
             .memory_requested = REQ,                                                              \
             .has_speed = 1})
static const dlb_job_state_t hung_job = {
    WINDOW(HUNG("r1", 0, 100, 8000), HUNG("r2", 300, 200, 8300), HUNG("r3", 600, 200, 8600),
           HUNG("r4", 900, 200, 8900))};

/* Running, a minute apart: worker-3 at 0.4 steps/s against 1, 1, 1.2 (a
 * straggler) and worker-0's memory 8000, 8050, 8100, 8150 MiB of 10G (trend:
 * 9650 MiB predicted, 11580 MiB = 12142510080 planned, see test_opt_trend.c);
 * a cool PS (1 of 8 cores, 2G of 8G): neither hot PS nor PS utilisation fire. */
#define STRAG(id, t, mem)                                                                          \
    TSAMPLE_S(id, t, (t) + 1, 3.6,                                                                 \
              {.name = "j-worker-0",                                                               \
               .type = "worker",                                                                   \
               .cpu_used = 2,                                                                      \
               .memory_used = (mem)*MIB,                                                           \
               .memory_requested = REQ,                                                            \
               .has_speed = 1,                                                                     \
               .speed = 1},                                                                        \
              {.name = "j-worker-1",                                                               \
               .type = "worker",                                                                   \
               .cpu_used = 2,                                                                      \
               .memory_used = 4 * GIB,                                                             \
               .memory_requested = REQ,                                                            \
               .has_speed = 1,                                                                     \
               .speed = 1},                                                                        \
              {.name = "j-worker-2",                                                               \
               .type = "worker",                                                                   \
               .cpu_used = 2,                                                                      \
               .memory_used = 4 * GIB,                                                             \
               .memory_requested = REQ,                                                            \
               .has_speed = 1,                                                                     \
               .speed = 1.2},                                                                      \
              {.name = "j-worker-3",                                                               \
               .type = "worker",                                                                   \
               .cpu_used = 2,                                                                      \
               .memory_used = 4 * GIB,                                                             \
               .memory_requested = REQ,                                                            \
               .has_speed = 1,                                                                     \
               .speed = 0.4},                                                                      \
              {.name = "j-ps-0",                                                                   \
               .type = "ps",                                                                       \
               .cpu_used = 1,                                                                      \
               .cpu_requested = 8,                                                                 \
               .memory_used = 2 * GIB,                                                             \
               .memory_requested = 8 * GIB})
static const dlb_job_state_t straggler_job = {WINDOW(
    STRAG("r1", 0, 8000), STRAG("r2", 60, 8050), STRAG("r3", 120, 8100), STRAG("r4", 180, 8150))};

/* PS memory 9300, 9400, 9500, 9600 MiB of 10G: memory trend (mean 9450,
 * Sxy = 30000 MiB s, 100 MiB/min; 9450 + 30000 * 1890 / 18000 = 12600 MiB
 * predicted, x1.2 = 15120 MiB < cap 18432 MiB) and hot PS (used/request >= 9400 /
 * 10240 = 0.918 > 0.9 in the last 3: 10G + 8G) both size j-ps-0: one entry,
 * the larger, 18G. Two workers: no straggler can be told (one peer each). */
#define HOTPS(id, t, mem)                                                                          \
    TSAMPLE(                                                                                       \
        id, t, (t) + 1,                                                                            \
        {.name = "j-worker-0", .type = "worker", .memory_used = 4 * GIB, .memory_requested = REQ}, \
        {.name = "j-worker-1", .type = "worker", .memory_used = 4 * GIB, .memory_requested = REQ}, \
        {.name = "j-ps-0",                                                                         \
         .type = "ps",                                                                             \
         .cpu_used = 1,                                                                            \
         .cpu_requested = 8,                                                                       \
         .memory_used = (mem)*MIB,                                                                 \
         .memory_requested = REQ})
static const dlb_job_state_t hot_ps_job = {WINDOW(HOTPS("r1", 0, 9300), HOTPS("r2", 60, 9400),
                                                  HOTPS("r3", 120, 9500), HOTPS("r4", 180, 9600))};

/* PS j-ps-0 CPU-hot (7 of 8 cores, 0.875 > 0.8) and, like worker-0, memory
 * rising 8000, 8050, 8100, 8150 MiB of 10G (trend: 11580 MiB = 12142510080
 * each, see test_opt_trend.c; 8150 / 10240 = 0.80 is not memory-hot). The
 * memory trend sizes j-ps-0 then j-worker-0, hot PS j-ps-0 again: 2 workers,
 * coeff 32/2 = 16, 7 * 16 = 112 > 32 -> capped to 32/7 -> ceil(7 * 32/7) = 32.
 * Merged: j-ps-0 with the trend's memory and hot PS's 32 cores (the later
 * entry has the larger CPU), past j-worker-0 between them. */
#define MERGE(id, t, mem)                                                                          \
    TSAMPLE(                                                                                       \
        id, t, (t) + 1,                                                                            \
        {.name = "j-ps-0",                                                                         \
         .type = "ps",                                                                             \
         .cpu_used = 7,                                                                            \
         .cpu_requested = 8,                                                                       \
         .memory_used = (mem)*MIB,                                                                 \
         .memory_requested = REQ},                                                                 \
        {.name = "j-worker-0",                                                                     \
         .type = "worker",                                                                         \
         .memory_used = (mem)*MIB,                                                                 \
         .memory_requested = REQ},                                                                 \
        {.name = "j-worker-1", .type = "worker", .memory_used = 4 * GIB, .memory_requested = REQ})
static const dlb_job_state_t merge_job = {WINDOW(MERGE("r1", 0, 8000), MERGE("r2", 60, 8050),
                                                 MERGE("r3", 120, 8100), MERGE("r4", 180, 8150))};

typedef struct route_case {
    const char *name;
    const char *stage;
    const char *oom_pod; /* NULL = the request names none */
    const dlb_job_state_t *job;
    const dlb_oom_plan_t *answers;
    size_t answers_cnt;
    int64_t now_s;
    const char *optimizer;
    size_t groups, pods, actions;
    const char *first_pod; /* name of pods[0], when pods */
    int64_t memory;        /* of pods[0] and, for a worker OOM, of the group */
    const char *reason;    /* expected substring */
    double cpu;            /* of pods[0] */
} route_case_t;

static const route_case_t route_cases[] = {
    {"create ignores the OOM state", DLB_STAGE_CREATE, NULL, &oom_job, NO_ANSWERS, 0,
     "dlrover.create", 2, 0, 0, NULL, 0, "Worker create"},
    /* unanswered OOM at a running stage: VPA 16G * 1.2 = 20615843021 (cap 24G) */
    {"an unanswered OOM routes to dlbrain.oom", DLB_STAGE_RUNNING, NULL, &oom_job, NO_ANSWERS, 0,
     "dlbrain.oom", 1, 1, 0, "j-worker-1", 20615843021,
     "worker j-worker-1 OOMKilled (event ne-7), first answer"},
    /* answered: the running chain answers; no samples, nothing fires */
    {"an answered OOM does not capture the request", DLB_STAGE_RUNNING, NULL, &oom_job,
     ANSWERS(ANSWER("j-worker-1", "ne-7", "plan-x", 20615843021)), 0, "dlbrain.running", 0, 0, 0,
     NULL, 0, "Health: no runtime samples, nothing to check."},
    {"an answered OOM at worker_running", DLB_STAGE_WORKER_RUNNING, NULL, &oom_job,
     ANSWERS(ANSWER("j-worker-1", "ne-7", "plan-x", 20615843021)), 0, "dlbrain.worker", 0, 0, 0,
     NULL, 0, "Worker model: too little to fit"},
    /* the request names the answered pod: the same answer again */
    {"the named pod gets its earlier answer", DLB_STAGE_RUNNING, "j-worker-1", &oom_job,
     ANSWERS(ANSWER("j-worker-1", "ne-7", "plan-x", 20615843021)), 0, "dlbrain.oom", 1, 1, 0,
     "j-worker-1", 20615843021, "was answered by plan plan-x: memory 19.20GiB again"},
    /* a PS named by the request, no OOM event: 8G * 1.2 = ceil(10307921510.4) =
     * 10307921511 for the pod only */
    {"PS OOM named at worker_initial", DLB_STAGE_WORKER_INITIAL, "j-ps-0", &oom_job, NO_ANSWERS, 0,
     "dlbrain.oom", 0, 1, 0, "j-ps-0", 10307921511, "memory=9.60GiB for the PS pod only."},
    {"ps_initial: DLRover's count, then the PS model", DLB_STAGE_PS_INITIAL, NULL, &straggler_job,
     NO_ANSWERS, 180, "dlbrain.ps_initial", 1, 0, 0, NULL, 0, "PS"},
    /* a hang stops the chain: the relaunch only, no memory trend */
    {"hang at worker_running", DLB_STAGE_WORKER_RUNNING, NULL, &hung_job, NO_ANSWERS, 900,
     "dlbrain.health", 0, 0, 2, NULL, 0,
     "Health: hang, global_step 200 unchanged for 600s over 3 samples (>= 600s): relaunch 2 "
     "workers."},
    {"hang at running", DLB_STAGE_RUNNING, NULL, &hung_job, NO_ANSWERS, 900, "dlbrain.health", 0, 0,
     2, NULL, 0, "relaunch 2 workers."},
    /* a straggler does not stop it: replace + memory trend; cool PS */
    {"straggler and memory trend at running", DLB_STAGE_PS_RUNNING, NULL, &straggler_job,
     NO_ANSWERS, 180, "dlbrain.health+dlbrain.memory_trend", 0, 1, 1, "j-worker-0", 12142510080,
     "Straggler j-worker-3"},
    /* at worker_running the model runs too: one worker count, so DLRover's rule */
    {"straggler, memory trend and worker rule at worker_running", DLB_STAGE_WORKER_RUNNING, NULL,
     &straggler_job, NO_ANSWERS, 180, "dlbrain.health+dlbrain.memory_trend+dlbrain.worker_model", 1,
     1, 1, "j-worker-0", 12142510080,
     "Worker model: too little to fit (4 usable samples, 1 worker counts"},
    {"memory trend and hot PS size one pod", DLB_STAGE_RUNNING, NULL, &hot_ps_job, NO_ANSWERS, 180,
     "dlbrain.memory_trend+dlrover.hot_ps", 0, 1, 0, "j-ps-0", 18 * GIB,
     "Memory trend: j-ps-0 used 9.38GiB rising 100.0MiB/min"},
    {"memory trend and hot PS size one pod, another pod between", DLB_STAGE_RUNNING, NULL,
     &merge_job, NO_ANSWERS, 180, "dlbrain.memory_trend+dlrover.hot_ps", 0, 2, 0, "j-ps-0",
     12142510080,
     "coeff=32/2 workers=16.000, capped to 4.571 so no PS passes 32 cores; CPU ceil(avg*coeff): "
     "j-ps-0 8->32.",
     32},
};

static void test_router_dlbrain_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(route_cases) / sizeof(route_cases[0]); i++) {
        const route_case_t *c = &route_cases[i];
        dlb_plan_request_t req = {
            .event_id = "req-42", .event_time_ms = c->now_s * 1000, .job_uid = "job-7"};
        dlb_opt_input_t in = {.req = &req,
                              .job = c->job,
                              .history = &no_history,
                              .limits = &limits,
                              .oom_plans = c->answers,
                              .oom_plans_cnt = c->answers_cnt,
                              .optimizer_set = "dlbrain"};
        dlb_plan_t plan;
        char errstr[256] = "";

        print_message("case %s\n", c->name);
        snprintf(req.stage, sizeof(req.stage), "%s", c->stage);
        if (c->oom_pod) {
            req.has_oom_pod = 1;
            snprintf(req.oom_pod, sizeof(req.oom_pod), "%s", c->oom_pod);
        }
        memset(&plan, 0xa5, sizeof(plan)); /* the router must not read the output */
        assert_int_equal(dlb_router_plan(&in, &plan, errstr, sizeof(errstr)), 0);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        assert_string_equal(plan.optimizer, c->optimizer);
        assert_string_equal(plan.plan_id, "plan-req-42");
        assert_int_equal(plan.groups_cnt, c->groups);
        assert_int_equal(plan.pods_cnt, c->pods);
        assert_int_equal(plan.actions_cnt, c->actions);
        if (c->pods) {
            assert_string_equal(plan.pods[0].name, c->first_pod);
            assert_int_equal(plan.pods[0].resource.memory, c->memory);
            assert_true(plan.pods[0].resource.cpu == c->cpu);
        }
        if (c->groups && !strcmp(c->optimizer, "dlbrain.oom"))
            assert_int_equal(plan.groups[0].resource.memory, c->memory);
        fixture_plan_free(&plan);
    }
}

/* The hung job's memory trend would have fired, had the chain gone on. */
static void test_hang_stops_the_chain(void **state)
{
    dlb_plan_request_t req = {.event_id = "req-1", .event_time_ms = 900000, .job_uid = "j"};
    dlb_opt_input_t in = {.req = &req, .job = &hung_job, .history = &no_history};
    dlb_plan_t plan = {0};

    (void)state;
    assert_int_equal(dlb_opt_memory_trend(&in, &plan), 0);
    assert_int_equal(plan.pods_cnt, 1);
    fixture_plan_free(&plan);
}

/* The router passes the answer out with the plan's id and time. */
static void test_router_answered(void **state)
{
    dlb_plan_request_t req = {.event_id = "req-42",
                              .event_time_ms = 1700000000123,
                              .job_uid = "job-7",
                              .stage = DLB_STAGE_RUNNING};
    dlb_oom_answers_t answered = {0};
    dlb_opt_input_t in = {.req = &req,
                          .job = &oom_job,
                          .history = &no_history,
                          .limits = &limits,
                          .optimizer_set = "dlbrain",
                          .answered = &answered};
    dlb_plan_t plan;
    char errstr[256];

    (void)state;
    assert_int_equal(dlb_router_plan(&in, &plan, errstr, sizeof(errstr)), 0);
    assert_int_equal(answered.cnt, 1);
    assert_string_equal(answered.items[0].pod_name, "j-worker-1");
    assert_string_equal(answered.items[0].oom_event_id, "ne-7");
    assert_string_equal(answered.items[0].plan_id, "plan-req-42");
    assert_int_equal(answered.items[0].event_time_ms, 1700000000123);
    assert_int_equal(answered.items[0].memory, 20615843021);
    fixture_plan_free(&plan);
    free(answered.items);

    /* asked again, with that answer stored: nothing new to store */
    memset(&answered, 0, sizeof(answered));
    in.oom_plans = answered_ne7;
    in.oom_plans_cnt = 1;
    req.has_oom_pod = 1;
    snprintf(req.oom_pod, sizeof(req.oom_pod), "j-worker-1");
    assert_int_equal(dlb_router_plan(&in, &plan, errstr, sizeof(errstr)), 0);
    assert_string_equal(plan.optimizer, "dlbrain.oom");
    assert_int_equal(plan.pods[0].resource.memory, 20615843021);
    assert_int_equal(answered.cnt, 0);
    fixture_plan_free(&plan);
}

/* Same input twice -> the same plan. */
static void test_router_dlbrain_deterministic(void **state)
{
    const char *stages[] = {DLB_STAGE_RUNNING, DLB_STAGE_WORKER_RUNNING};
    size_t s;

    (void)state;
    for (s = 0; s < 2; s++) {
        dlb_plan_request_t req = {.event_id = "req-5", .event_time_ms = 180000, .job_uid = "j"};
        dlb_opt_input_t in = {.req = &req,
                              .job = &straggler_job,
                              .history = &no_history,
                              .limits = &limits,
                              .optimizer_set = "dlbrain"};
        dlb_plan_t a, b;
        char errstr[256];

        snprintf(req.stage, sizeof(req.stage), "%s", stages[s]);
        assert_int_equal(dlb_router_plan(&in, &a, errstr, sizeof(errstr)), 0);
        assert_int_equal(dlb_router_plan(&in, &b, errstr, sizeof(errstr)), 0);
        assert_plans_equal(&a, &b);
        fixture_plan_free(&a);
        fixture_plan_free(&b);
    }
}

static const dlb_job_state_t two_ooms = {
    STATUSES(STATUS("j-worker-0", "worker", 300, 1, "ne-3", 16 * GIB),
             STATUS("j-worker-1", "worker", 200, 2, "ne-2", 16 * GIB))};
static const dlb_oom_plan_t first_only[] = {ANSWER("j-worker-0", "ne-3", "plan-a", GIB)};
static const dlb_oom_plan_t both[] = {ANSWER("j-worker-0", "ne-3", "plan-a", GIB),
                                      ANSWER("j-worker-1", "ne-2", "plan-b", GIB)};
/* an answer to an older OOM of worker-1 (ne-1) does not cover ne-2 */
static const dlb_oom_plan_t older[] = {ANSWER("j-worker-0", "ne-3", "plan-a", GIB),
                                       ANSWER("j-worker-1", "ne-1", "plan-b", GIB)};

/* dlb_needs_oom_dlbrain against dlb_needs_oom_dlrover. */
static void test_needs_oom(void **state)
{
    static const dlb_job_state_t empty = {.pods_cnt = 0};
    static const struct {
        const char *name, *stage, *oom_pod;
        const dlb_job_state_t *job;
        const dlb_oom_plan_t *answers;
        size_t answers_cnt;
        int dlrover, dlbrain;
    } cases[] = {
        {"no OOM", DLB_STAGE_RUNNING, NULL, &empty, NULL, 0, 0, 0},
        {"unanswered", DLB_STAGE_RUNNING, NULL, &two_ooms, NULL, 0, 1, 1},
        {"one of two answered", DLB_STAGE_RUNNING, NULL, &two_ooms, first_only, 1, 1, 1},
        {"both answered", DLB_STAGE_WORKER_RUNNING, NULL, &two_ooms, both, 2, 1, 0},
        {"an older OOM answered", DLB_STAGE_RUNNING, NULL, &two_ooms, older, 2, 1, 1},
        {"both answered, pod named", DLB_STAGE_RUNNING, "j-worker-1", &two_ooms, both, 2, 1, 1},
        {"create", DLB_STAGE_CREATE, NULL, &two_ooms, NULL, 0, 0, 0},
        {"create, pod named", DLB_STAGE_CREATE, "j-worker-1", &two_ooms, NULL, 0, 1, 1},
        /* an empty pod name names no pod: the state decides */
        {"empty pod named", DLB_STAGE_RUNNING, "", &empty, NULL, 0, 0, 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlb_plan_request_t req = {.event_id = "req-1"};
        dlb_opt_input_t in = {.req = &req,
                              .job = cases[i].job,
                              .history = &no_history,
                              .oom_plans = cases[i].answers,
                              .oom_plans_cnt = cases[i].answers_cnt};

        print_message("case %s\n", cases[i].name);
        snprintf(req.stage, sizeof(req.stage), "%s", cases[i].stage);
        if (cases[i].oom_pod) {
            req.has_oom_pod = 1;
            snprintf(req.oom_pod, sizeof(req.oom_pod), "%s", cases[i].oom_pod);
        }
        assert_int_equal(dlb_needs_oom_dlrover(&in), cases[i].dlrover);
        assert_int_equal(dlb_needs_oom_dlbrain(&in), cases[i].dlbrain);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_router_dlbrain_table),
        cmocka_unit_test(test_hang_stops_the_chain),
        cmocka_unit_test(test_router_answered),
        cmocka_unit_test(test_router_dlbrain_deterministic),
        cmocka_unit_test(test_needs_oom),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
