/* The dlbrain health check (dlb_opt_health): hang -> relaunch the workers,
 * straggler -> replace the pod. Defaults: hang 600 s, ratio 0.5, 3 samples. */
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
#include "state.h"

#define PS0 MPOD("j-ps-0", "ps", GIB, 8 * GIB)
#define CHIEF                                                                                      \
    {                                                                                              \
        .name = "j-chief-0", .type = "chief", .has_speed = 1, .speed = 1                           \
    }
/* Three workers at 1, 1 and 0.1 steps/s, a chief and a PS. */
#define PODS3 SPOD("j-worker-0", 1), SPOD("j-worker-1", 1), SPOD("j-worker-2", 0.1), CHIEF, PS0
/* Four workers, the last at s steps/s. */
#define PODS4(s)                                                                                   \
    SPOD("j-worker-0", 1), SPOD("j-worker-1", 1), SPOD("j-worker-2", 1.2), SPOD("j-worker-3", s)

/* dlbrain.straggler.samples 0: taken as 1, the newest sample alone. */
static const dlb_tuning_t one_sample = {.hang_seconds = 600,
                                        .straggler_ratio = 0.5,
                                        .straggler_samples = 0,
                                        .memory_horizon_seconds = 1800,
                                        .memory_trigger = 0.9,
                                        .scale_min_gain = 0.5,
                                        .scale_step_max = 8};
static const dlb_tuning_t tuned = {.hang_seconds = 300,
                                   .straggler_ratio = 0.7,
                                   .straggler_samples = 2,
                                   .memory_horizon_seconds = 1800,
                                   .memory_trigger = 0.9,
                                   .scale_min_gain = 0.5,
                                   .scale_step_max = 8};

typedef struct health_case {
    const char *name;
    dlb_job_state_t job;
    const dlb_tuning_t *tuning; /* NULL = defaults */
    struct {
        const char *pod, *action;
    } want[4];                 /* expected actions, pod NULL ends */
    const char *action_reason; /* substring of the first action's reason */
    const char *reason;
} health_case_t;

static const health_case_t health_cases[] = {
    /* step 200 at t = 300, 600, 900: 900 - 300 = 600 s >= 600 over 3 samples -> hung;
     * the 3 workers are relaunched (not the chief, not the PS), and the slow
     * worker-2 is not looked at as a straggler */
    {"hang",
     {WINDOW(TSAMPLE("r1", 0, 100, PODS3), TSAMPLE("r2", 300, 200, PODS3),
             TSAMPLE("r3", 600, 200, PODS3), TSAMPLE("r4", 900, 200, PODS3))},
     NULL,
     {{"j-worker-0", DLB_ACTION_RELAUNCH},
      {"j-worker-1", DLB_ACTION_RELAUNCH},
      {"j-worker-2", DLB_ACTION_RELAUNCH}},
     "hang: global_step 200 unchanged for 600s over 3 samples (>= 600s)",
     "Health: hang, global_step 200 unchanged for 600s over 3 samples (>= 600s): relaunch 3 "
     "workers."},
    /* step 200 since t = 301: 599 s < 600 -> not hung; stragglers: worker-2 at 0.1
     * < 0.5 x median(1, 1) of its 2 peers in r2..r4 -> replace */
    {"599 s is no hang",
     {WINDOW(TSAMPLE("r1", 0, 100, PODS3), TSAMPLE("r2", 301, 200, PODS3),
             TSAMPLE("r3", 600, 200, PODS3), TSAMPLE("r4", 900, 200, PODS3))},
     NULL,
     {{"j-worker-2", DLB_ACTION_REPLACE}},
     "straggler: 0.1 steps/s < 0.50 x median 1 of 2 peers, in each of the newest 3 samples",
     "Health: no hang (global_step 200 unchanged for 599s over 3 samples, < 600s). Straggler "
     "j-worker-2: 0.1 steps/s < 0.50 x median 1 of 2 peers in each of the newest 3 samples: "
     "replace."},
    /* the step moved in the newest sample: 0 s over 1 sample */
    {"a step in the newest sample",
     {WINDOW(TSAMPLE("r1", 0, 200, PODS4(1)), TSAMPLE("r2", 600, 200, PODS4(1)),
             TSAMPLE("r3", 900, 200, PODS4(1)), TSAMPLE("r4", 1200, 201, PODS4(1)))},
     NULL,
     {{NULL}},
     NULL,
     "Health: no hang (global_step 201 unchanged for 0s over 1 samples, < 600s). Stragglers: none "
     "among 4 workers with a speed over the newest 3 samples (0 without 2 peers with a speed)."},
    /* hang 300 s: step 200 at t = 600 and 900 -> 300 s >= 300 -> hung */
    {"tuned hang time",
     {WINDOW(TSAMPLE("r1", 0, 100, PODS4(1)), TSAMPLE("r2", 300, 100, PODS4(1)),
             TSAMPLE("r3", 600, 200, PODS4(1)), TSAMPLE("r4", 900, 200, PODS4(1)))},
     &tuned,
     {{"j-worker-0", DLB_ACTION_RELAUNCH},
      {"j-worker-1", DLB_ACTION_RELAUNCH},
      {"j-worker-2", DLB_ACTION_RELAUNCH},
      {"j-worker-3", DLB_ACTION_RELAUNCH}},
     "hang: global_step 200 unchanged for 300s over 2 samples (>= 300s)",
     "relaunch 4 workers."},
    /* worker-3 at 0.4 < 0.5 x median(1, 1, 1.2) = 0.5 in r2, r3, r4 (r1 does not count) */
    {"straggler",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(1)), TSAMPLE("r2", 15, 20, PODS4(0.4)),
             TSAMPLE("r3", 30, 30, PODS4(0.4)), TSAMPLE("r4", 45, 40, PODS4(0.4)))},
     NULL,
     {{"j-worker-3", DLB_ACTION_REPLACE}},
     "straggler: 0.4 steps/s < 0.50 x median 1 of 3 peers, in each of the newest 3 samples",
     "Straggler j-worker-3: 0.4 steps/s < 0.50 x median 1 of 3 peers in each of the newest 3 "
     "samples: replace."},
    /* in r2 worker-3 runs 0.6, not < 0.5: slow in 2 of the newest 3 only */
    {"slow in two of three samples",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(0.4)), TSAMPLE("r2", 15, 20, PODS4(0.6)),
             TSAMPLE("r3", 30, 30, PODS4(0.4)), TSAMPLE("r4", 45, 40, PODS4(0.4)))},
     NULL,
     {{NULL}},
     NULL,
     "Stragglers: none among 4 workers with a speed over the newest 3 samples (0 without 2 peers "
     "with a speed)."},
    /* two workers: each has one peer, no median to compare with */
    {"too few peers",
     {WINDOW(TSAMPLE("r1", 0, 10, SPOD("j-worker-0", 1), SPOD("j-worker-1", 0.2)),
             TSAMPLE("r2", 15, 20, SPOD("j-worker-0", 1), SPOD("j-worker-1", 0.2)),
             TSAMPLE("r3", 30, 30, SPOD("j-worker-0", 1), SPOD("j-worker-1", 0.2)))},
     NULL,
     {{NULL}},
     NULL,
     "Stragglers: none among 2 workers with a speed over the newest 3 samples (2 without 2 peers "
     "with a speed)."},
    {"too few samples",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(0.1)), TSAMPLE("r2", 15, 20, PODS4(0.1)))},
     NULL,
     {{NULL}},
     NULL,
     "Stragglers: 2 samples < the 3 needed, not checked."},
    /* peers of worker-0: 1, 1, 2, 3 -> median (1 + 2) / 2 = 1.5; 0.7 < 0.75 -> straggler
     * (the middle value 1 or 2 alone would not flag it); worker-1's peers 0.7, 1, 2, 3:
     * median 1.5, 1 >= 0.75 */
    {"median of an even number of peers",
     {WINDOW(TSAMPLE("r1", 0, 10, SPOD("j-worker-0", 0.7), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 1), SPOD("j-worker-3", 2), SPOD("j-worker-4", 3)),
             TSAMPLE("r2", 15, 20, SPOD("j-worker-0", 0.7), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 1), SPOD("j-worker-3", 2), SPOD("j-worker-4", 3)),
             TSAMPLE("r3", 30, 30, SPOD("j-worker-0", 0.7), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 1), SPOD("j-worker-3", 2), SPOD("j-worker-4", 3)))},
     NULL,
     {{"j-worker-0", DLB_ACTION_REPLACE}},
     "straggler: 0.7 steps/s < 0.50 x median 1.5 of 4 peers",
     "Straggler j-worker-0"},
    /* worker-3 reports no speed: not checked (else 0 < 0.5 x 1 would flag it) and
     * no peer; worker-2 at 0.3 < 0.5 x median(1, 1) */
    {"pods without a speed are neither checked nor peers",
     {WINDOW(TSAMPLE("r1", 0, 10, SPOD("j-worker-0", 1), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 0.3), MPOD("j-worker-3", "worker", GIB, GIB)),
             TSAMPLE("r2", 15, 20, SPOD("j-worker-0", 1), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 0.3), MPOD("j-worker-3", "worker", GIB, GIB)),
             TSAMPLE("r3", 30, 30, SPOD("j-worker-0", 1), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 0.3), MPOD("j-worker-3", "worker", GIB, GIB)))},
     NULL,
     {{"j-worker-2", DLB_ACTION_REPLACE}},
     "straggler: 0.3 steps/s < 0.50 x median 1 of 2 peers",
     "Straggler j-worker-2"},
    /* ratio 0.7 over 2 samples: 0.6 < 0.7 x median(1, 1, 1.2) = 0.7 in r2 and r3 */
    {"tuned ratio and samples",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(1)), TSAMPLE("r2", 15, 20, PODS4(0.6)),
             TSAMPLE("r3", 30, 30, PODS4(0.6)))},
     &tuned,
     {{"j-worker-3", DLB_ACTION_REPLACE}},
     "straggler: 0.6 steps/s < 0.70 x median 1 of 3 peers, in each of the newest 2 samples",
     "Straggler j-worker-3"},
    /* worker-3 is missing from r3 (relaunched): not slow in each sample */
    {"a sample without the pod",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(0.1)), TSAMPLE("r2", 15, 20, PODS4(0.1)),
             TSAMPLE("r3", 30, 30, SPOD("j-worker-0", 1), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 1.2)),
             TSAMPLE("r4", 45, 40, PODS4(0.1)))},
     NULL,
     {{NULL}},
     NULL,
     "Stragglers: none among 4 workers"},
    /* worker-0 is the only worker with a speed: no peer at all in any sample */
    {"a lone worker with a speed",
     {WINDOW(TSAMPLE("r1", 0, 10, SPOD("j-worker-0", 1), MPOD("j-worker-1", "worker", GIB, GIB)),
             TSAMPLE("r2", 15, 20, SPOD("j-worker-0", 1), MPOD("j-worker-1", "worker", GIB, GIB)),
             TSAMPLE("r3", 30, 30, SPOD("j-worker-0", 1), MPOD("j-worker-1", "worker", GIB, GIB)))},
     NULL,
     {{NULL}},
     NULL,
     "Stragglers: none among 1 workers with a speed over the newest 3 samples (1 without 2 peers "
     "with a speed)."},
    /* worker-3 reports no speed in r2 (it does in r3 and r4): not slow in each */
    {"a sample where the pod has no speed",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(0.1)),
             TSAMPLE("r2", 15, 20, SPOD("j-worker-0", 1), SPOD("j-worker-1", 1),
                     SPOD("j-worker-2", 1.2), MPOD("j-worker-3", "worker", GIB, GIB)),
             TSAMPLE("r3", 30, 30, PODS4(0.1)), TSAMPLE("r4", 45, 40, PODS4(0.1)))},
     NULL,
     {{NULL}},
     NULL,
     "Stragglers: none among 4 workers"},
    /* one sample: a run of 1, no hang; too few samples for stragglers */
    {"one sample",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(0.1)))},
     NULL,
     {{NULL}},
     NULL,
     "Health: no hang (global_step 10 unchanged for 0s over 1 samples, < 600s). Stragglers: 1 "
     "samples < the 3 needed, not checked."},
    /* straggler samples 0 -> 1: worker-3 at 0.4 < 0.5 x median(1, 1, 1.2) in the
     * newest sample is enough */
    {"straggler samples 0 means the newest sample",
     {WINDOW(TSAMPLE("r1", 0, 10, PODS4(0.4)))},
     &one_sample,
     {{"j-worker-3", DLB_ACTION_REPLACE}},
     "straggler: 0.4 steps/s < 0.50 x median 1 of 3 peers, in each of the newest 1 samples",
     "Straggler j-worker-3"},
    {"no samples", NOJOB, NULL, {{NULL}}, NULL, "Health: no runtime samples, nothing to check."},
};

/* Run case c on job (c->job, or the same window folded into a job state). */
static void check_case(const health_case_t *c, const dlb_job_state_t *job, dlb_plan_t *plan)
{
    static const dlb_history_t none = {0};
    int64_t now = job->window_cnt ? job->window[job->window_cnt - 1].event_time_ms : 0;
    dlb_plan_request_t req = {
        .event_id = "req-1", .event_time_ms = now, .job_uid = "j", .stage = "job_stage_running"};
    dlb_opt_input_t in = {.req = &req, .job = job, .history = &none, .tuning = c->tuning};
    size_t k;

    memset(plan, 0, sizeof(*plan));
    assert_int_equal(dlb_opt_health(&in, plan), 0);
    if (!strstr(plan->reason, c->reason)) {
        print_error("reason \"%s\" lacks \"%s\"\n", plan->reason, c->reason);
        fail();
    }
    for (k = 0; k < 4 && c->want[k].pod; k++) {
        assert_true(k < plan->actions_cnt);
        assert_string_equal(plan->actions[k].pod, c->want[k].pod);
        assert_string_equal(plan->actions[k].action, c->want[k].action);
    }
    assert_int_equal(plan->actions_cnt, k);
    if (c->action_reason && !strstr(plan->actions[0].reason, c->action_reason)) {
        print_error("action reason \"%s\" lacks \"%s\"\n", plan->actions[0].reason,
                    c->action_reason);
        fail();
    }
    assert_int_equal(plan->groups_cnt, 0);
    assert_int_equal(plan->pods_cnt, 0);
}

/* The window folded through dlb_job_state_apply, as the consumer gets it:
 * its samples have pods_by_name, so the medians take the indexed path. */
static void fold_window(const dlb_job_state_t *job, dlb_job_state_t *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < job->window_cnt; i++) {
        dlb_event_t ev = {.type = DLB_EV_RUNTIME};
        ev.u.rt = job->window[i];
        assert_int_equal(dlb_job_state_apply(out, &ev, 60), 0);
        assert_true(job->window[i].pods_cnt < 2 || out->window[i].pods_by_name);
    }
}

static void test_health_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(health_cases) / sizeof(health_cases[0]); i++) {
        const health_case_t *c = &health_cases[i];
        dlb_job_state_t folded;
        dlb_plan_t scan, indexed;

        print_message("case %s\n", c->name);
        check_case(c, &c->job, &scan);
        fold_window(&c->job, &folded);
        check_case(c, &folded, &indexed);
        assert_string_equal(scan.reason, indexed.reason);
        for (size_t k = 0; k < scan.actions_cnt; k++)
            assert_string_equal(scan.actions[k].reason, indexed.actions[k].reason);
        fixture_plan_free(&scan);
        fixture_plan_free(&indexed);
        dlb_job_state_clear(&folded);
    }
}

/* Medians through the index equal the scan's on many random windows, pod
 * names repeated within a sample included (a producer may send them). */
static void test_health_indexed_medians(void **state)
{
    static const char *const names[] = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};
    static const dlb_history_t none = {0};
    dlb_plan_request_t req = {
        .event_id = "req-1", .event_time_ms = 100, .job_uid = "j", .stage = "job_stage_running"};
    unsigned seed = 18;
    (void)state;

    for (int round = 0; round < 300; round++) {
        dlb_runtime_sample_t win[3];
        dlb_pod_usage_t pods[3][12];
        dlb_job_state_t job = {0}, folded;
        dlb_opt_input_t in = {.req = &req, .job = &job, .history = &none};
        dlb_plan_t scan = {0}, indexed = {0};
        size_t n = 1 + (size_t)(rand_r(&seed) % 12);

        memset(win, 0, sizeof(win));
        memset(pods, 0, sizeof(pods));
        for (int j = 0; j < 3; j++) {
            snprintf(win[j].event_id, sizeof(win[j].event_id), "r%d", j);
            win[j].event_time_ms = 10 * (j + 1);
            win[j].global_step = 10 * (j + 1);
            win[j].pods = pods[j];
            win[j].pods_cnt = n;
            for (size_t k = 0; k < n; k++) {
                dlb_pod_usage_t *p = &pods[j][k];
                snprintf(p->name, sizeof(p->name), "%s", names[rand_r(&seed) % 8]);
                snprintf(p->type, sizeof(p->type), "%s", rand_r(&seed) % 5 ? "worker" : "ps");
                p->has_speed = rand_r(&seed) % 6 != 0;
                p->speed = (double)(rand_r(&seed) % 8) / 4.0;
            }
        }
        job.window = win;
        job.window_cnt = 3;
        assert_int_equal(dlb_opt_health(&in, &scan), 0);
        fold_window(&job, &folded);
        in.job = &folded;
        assert_int_equal(dlb_opt_health(&in, &indexed), 0);
        assert_string_equal(scan.reason, indexed.reason);
        assert_int_equal(scan.actions_cnt, indexed.actions_cnt);
        for (size_t k = 0; k < scan.actions_cnt; k++)
            assert_string_equal(scan.actions[k].reason, indexed.actions[k].reason);
        fixture_plan_free(&scan);
        fixture_plan_free(&indexed);
        dlb_job_state_clear(&folded);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_table),
        cmocka_unit_test(test_health_indexed_medians),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
