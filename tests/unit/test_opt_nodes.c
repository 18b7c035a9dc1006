/* The dlbrain node failures (dlb_opt_node_failures, "dlbrain.node_failure"):
 * evicted / preempted / no-heartbeat pods and every pod on a NotReady or
 * hardware-error node are replaced, once per (pod, failure event), as of
 * the request's time, at job_stage_running and the worker stages (not
 * _ps_running); the dlrover set does not read node failures. The job
 * states are folded from node events (dlb_job_state_apply), as the cache
 * folds them. */
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

#define T0 1700000000000LL /* 2023-11-14T22:13:20.000Z */

typedef struct nev {
    const char *id;
    int64_t t_s; /* seconds after T0 */
    const char *kind, *pod, *node, *phase;
} nev_t;

/* Three workers and a PS Running from T0 + 1 s: w0 and w1 on n1, w2 and the
 * PS on n2. */
#define RUNNING                                                                                    \
    {"r-w0", 1, "pod_phase", "j-worker-0", "n1", "Running"},                                       \
        {"r-w1", 1, "pod_phase", "j-worker-1", "n1", "Running"},                                   \
        {"r-w2", 1, "pod_phase", "j-worker-2", "n2", "Running"},                                   \
    {                                                                                              \
        "r-ps0", 1, "pod_phase", "j-ps-0", "n2", "Running"                                         \
    }

static void fold(dlb_job_state_t *st, const nev_t *evs, size_t n)
{
    for (size_t i = 0; i < n && evs[i].id; i++) {
        dlb_event_t ev = {.type = DLB_EV_NODE};
        dlb_node_event_t *e = &ev.u.node;

        snprintf(e->event_id, sizeof(e->event_id), "%s", evs[i].id);
        e->event_time_ms = T0 + evs[i].t_s * 1000;
        snprintf(e->job_uid, sizeof(e->job_uid), "j");
        snprintf(e->kind, sizeof(e->kind), "%s", evs[i].kind);
        snprintf(e->pod_name, sizeof(e->pod_name), "%s", evs[i].pod);
        snprintf(e->pod_type, sizeof(e->pod_type), "%s",
                 strstr(evs[i].pod, "-ps-") ? "ps" : "worker");
        snprintf(e->node_name, sizeof(e->node_name), "%s", evs[i].node ? evs[i].node : "");
        if (evs[i].phase) {
            e->has_phase = 1;
            snprintf(e->phase, sizeof(e->phase), "%s", evs[i].phase);
        }
        e->has_memory_requested = 1;
        e->memory_requested = 8 * GIB;
        assert_int_equal(dlb_job_state_apply(st, &ev, 60), 0);
    }
}

typedef struct nodes_case {
    const char *name;
    nev_t events[12]; /* id NULL ends */
    int64_t req_s;    /* request time, seconds after T0 */
    const char *set;  /* NULL = dlbrain */
    const dlb_oom_plan_t *answers;
    size_t answers_cnt;
    const char *want[5];       /* pods replaced, in order; NULL ends */
    const char *action_reason; /* substring of the first action's reason */
} nodes_case_t;

static const nodes_case_t cases[] = {
    /* w1 evicted at +100 s: replaced, the reason names the event, node and time */
    {"evicted pod -> replace",
     {RUNNING, {"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL}},
     200,
     NULL,
     NO_ANSWERS,
     {"j-worker-1"},
     "evicted on node n1 at 2023-11-14T22:15:00.000Z (event ev-w1)"},
    {"preempted and no heartbeat",
     {RUNNING,
      {"pre-w0", 100, "preempted", "j-worker-0", "n1", NULL},
      {"hb-ps0", 110, "no_heartbeat", "j-ps-0", NULL, NULL}},
     200,
     NULL,
     NO_ANSWERS,
     {"j-ps-0", "j-worker-0"},
     "no_heartbeat on node n2"},
    /* the master reports a hardware error of w0 only: w0 and w1 (same node) go */
    {"hardware error -> every pod on the node",
     {RUNNING, {"hw-w0", 100, "hardware_error", "j-worker-0", "n1", NULL}},
     200,
     NULL,
     NO_ANSWERS,
     {"j-worker-0", "j-worker-1"},
     "hardware_error on node n1"},
    /* n2 NotReady, reported for w2 only: the PS on n2 goes too, named by w2's event */
    {"node NotReady -> all pods on it",
     {RUNNING, {"nr-w2", 100, "node_not_ready", "j-worker-2", "n2", "NotReady"}},
     200,
     NULL,
     NO_ANSWERS,
     {"j-ps-0", "j-worker-2"},
     "node_not_ready of its node n2 at 2023-11-14T22:15:00.000Z (event nr-w2, pod j-worker-2)"},
    /* n2 Ready again (for both pods) before the request: nothing */
    {"node Ready again -> nothing",
     {RUNNING,
      {"nr-w2", 100, "node_not_ready", "j-worker-2", "n2", "NotReady"},
      {"nr-ps0", 100, "node_not_ready", "j-ps-0", "n2", "NotReady"},
      {"ok-w2", 150, "node_phase", "j-worker-2", "n2", "Ready"},
      {"ok-ps0", 150, "node_phase", "j-ps-0", "n2", "Ready"}},
     200,
     NULL,
     NO_ANSWERS,
     {NULL},
     NULL},
    /* w1 was Running after its eviction: back, nothing */
    {"pod back Running -> nothing",
     {{"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL},
      {"r2-w1", 150, "pod_phase", "j-worker-1", "n3", "Running"}},
     200,
     NULL,
     NO_ANSWERS,
     {NULL},
     NULL},
    /* a pod deleted before its node failed was not on it any more */
    {"deleted pod is not on the failed node",
     {RUNNING,
      {"del-w1", 50, "deleted", "j-worker-1", "n1", NULL},
      {"hw-w0", 100, "hardware_error", "j-worker-0", "n1", NULL}},
     200,
     NULL,
     NO_ANSWERS,
     {"j-worker-0"},
     NULL},
    /* redelivered eviction events, folded twice, and an event that arrives
     * out of order: one action */
    {"duplicate events -> one action",
     {{"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL},
      {"r-w1", 1, "pod_phase", "j-worker-1", "n1", "Running"},
      {"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL},
      {"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL}},
     200,
     NULL,
     NO_ANSWERS,
     {"j-worker-1"},
     "(event ev-w1)"},
    /* the failure is after the request's time: not seen */
    {"failure after the request -> ignored",
     {RUNNING, {"ev-w1", 300, "evicted", "j-worker-1", "n1", NULL}},
     200,
     NULL,
     NO_ANSWERS,
     {NULL},
     NULL},
    /* back Running after the request's time: as of the request it is not back */
    {"recovery after the request -> still replaced",
     {{"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL},
      {"r2-w1", 300, "pod_phase", "j-worker-1", "n3", "Running"}},
     200,
     NULL,
     NO_ANSWERS,
     {"j-worker-1"},
     NULL},
    /* an earlier plan replaced w1 for ev-w1 (oom_plans row, memory 0) */
    {"answered by an earlier plan -> not again",
     {RUNNING, {"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL}},
     200,
     NULL,
     (const dlb_oom_plan_t[]){ANSWER("j-worker-1", "ev-w1", "plan-r1", 0)},
     1,
     {NULL},
     NULL},
    /* ... but a new eviction of the same pod is a new failure */
    {"a new failure of an answered pod",
     {RUNNING,
      {"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL},
      {"ev2-w1", 150, "evicted", "j-worker-1", "n1", NULL}},
     200,
     NULL,
     (const dlb_oom_plan_t[]){ANSWER("j-worker-1", "ev-w1", "plan-r1", 0)},
     1,
     {"j-worker-1"},
     "(event ev2-w1)"},
    /* the dlrover set reads no node failures */
    {"dlrover set unchanged",
     {RUNNING,
      {"ev-w1", 100, "evicted", "j-worker-1", "n1", NULL},
      {"nr-w2", 100, "node_not_ready", "j-worker-2", "n2", "NotReady"}},
     200,
     "dlrover",
     NO_ANSWERS,
     {NULL},
     NULL},
};

static void run_case(const nodes_case_t *c, const char *stage)
{
    dlb_job_state_t st = {0};
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j"};
    dlb_history_t hist = {0};
    dlb_oom_answers_t answered = {0};
    dlb_opt_input_t in = {.req = &req,
                          .job = &st,
                          .history = &hist,
                          .oom_plans = c->answers,
                          .oom_plans_cnt = c->answers_cnt,
                          .optimizer_set = c->set ? c->set : "dlbrain",
                          .answered = &answered};
    dlb_plan_t plan;
    char err[256];
    size_t n = 0;

    req.event_time_ms = T0 + c->req_s * 1000;
    snprintf(req.stage, sizeof(req.stage), "%s", stage);
    fold(&st, c->events, sizeof(c->events) / sizeof(c->events[0]));
    assert_int_equal(dlb_router_plan(&in, &plan, err, sizeof(err)), 0);
    /* ps_running comes with worker_running at the same instant: only the
     * worker stages and job_stage_running answer node failures. */
    while (strcmp(stage, DLB_STAGE_PS_RUNNING) && n < 5 && c->want[n])
        n++;
    if (plan.actions_cnt != n)
        fail_msg("%s (%s): %zu actions, want %zu; reason: %s", c->name, stage, plan.actions_cnt, n,
                 plan.reason);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(plan.actions[i].pod, c->want[i]);
        assert_string_equal(plan.actions[i].action, DLB_ACTION_REPLACE);
    }
    if (n && c->action_reason && !strstr(plan.actions[0].reason, c->action_reason))
        fail_msg("%s: action reason \"%s\" lacks \"%s\"", c->name, plan.actions[0].reason,
                 c->action_reason);
    if (n) {
        assert_non_null(strstr(plan.optimizer, "dlbrain.node_failure"));
        /* one answer per action, keyed by the failure event, memory 0 */
        assert_int_equal(answered.cnt, n);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(answered.items[i].pod_name, c->want[i]);
            assert_int_equal(answered.items[i].memory, 0);
        }
    } else {
        assert_int_equal(answered.cnt, 0);
    }
    free(answered.items);
    fixture_plan_free(&plan);
    dlb_job_state_clear(&st);
}

static void test_nodes_table(void **state)
{
    static const char *const stages[] = {DLB_STAGE_RUNNING, DLB_STAGE_PS_RUNNING,
                                         DLB_STAGE_WORKER_RUNNING, DLB_STAGE_WORKER_INITIAL};

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++)
            run_case(&cases[i], stages[s]);
}

/* The same events in another order (and redelivered) give the same plan. */
static void test_nodes_order(void **state)
{
    static const nev_t fwd[] = {RUNNING,
                                {"nr-w2", 100, "node_not_ready", "j-worker-2", "n2", "NotReady"},
                                {"ev-w1", 120, "evicted", "j-worker-1", "n1", NULL}};
    nev_t rev[sizeof(fwd) / sizeof(fwd[0]) * 2];
    const size_t n = sizeof(fwd) / sizeof(fwd[0]);
    dlb_plan_t plans[2];
    char err[256];

    (void)state;
    for (size_t i = 0; i < n; i++) {
        rev[i] = fwd[n - 1 - i];
        rev[n + i] = fwd[i];
    }
    for (int k = 0; k < 2; k++) {
        dlb_job_state_t st = {0};
        dlb_plan_request_t req = {.event_id = "req-1",
                                  .job_uid = "j",
                                  .event_time_ms = T0 + 200000,
                                  .stage = DLB_STAGE_RUNNING};
        dlb_history_t hist = {0};
        dlb_opt_input_t in = {
            .req = &req, .job = &st, .history = &hist, .optimizer_set = "dlbrain"};

        fold(&st, k ? rev : fwd, k ? 2 * n : n);
        assert_int_equal(dlb_router_plan(&in, &plans[k], err, sizeof(err)), 0);
        dlb_job_state_clear(&st);
    }
    assert_int_equal(plans[0].actions_cnt, 3);
    assert_int_equal(plans[1].actions_cnt, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(plans[0].actions[i].pod, plans[1].actions[i].pod);
        assert_string_equal(plans[0].actions[i].reason, plans[1].actions[i].reason);
    }
    assert_string_equal(plans[0].reason, plans[1].reason);
    fixture_plan_free(&plans[0]);
    fixture_plan_free(&plans[1]);
}

/* A replaced pod is not also relaunched for a hang: one action per pod. */
static void test_nodes_and_hang(void **state)
{
    static const nev_t evs[] = {RUNNING,
                                {"nr-w2", 100, "node_not_ready", "j-worker-2", "n2", "NotReady"}};
    dlb_job_state_t st = {0};
    dlb_runtime_sample_t win[] = {
        TSAMPLE("s1", 0, 100, SPOD("j-worker-0", 1), SPOD("j-worker-1", 1), SPOD("j-worker-2", 1)),
        TSAMPLE("s2", 700, 100, SPOD("j-worker-0", 1), SPOD("j-worker-1", 1),
                SPOD("j-worker-2", 1))};
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j", .stage = DLB_STAGE_RUNNING};
    dlb_history_t hist = {0};
    dlb_opt_input_t in = {.req = &req, .job = &st, .history = &hist, .optimizer_set = "dlbrain"};
    dlb_plan_t plan;
    char err[256];

    (void)state;
    win[0].event_time_ms += T0;
    win[1].event_time_ms += T0;
    req.event_time_ms = T0 + 800000;
    fold(&st, evs, sizeof(evs) / sizeof(evs[0]));
    st.window = win;
    st.window_cnt = 2;
    assert_int_equal(dlb_router_plan(&in, &plan, err, sizeof(err)), 0);
    st.window = NULL;
    st.window_cnt = 0;
    /* ps-0 and worker-2 replaced (n2), worker-0 and worker-1 relaunched */
    assert_int_equal(plan.actions_cnt, 4);
    assert_string_equal(plan.actions[0].pod, "j-ps-0");
    assert_string_equal(plan.actions[1].pod, "j-worker-2");
    assert_string_equal(plan.actions[1].action, DLB_ACTION_REPLACE);
    assert_string_equal(plan.actions[2].pod, "j-worker-0");
    assert_string_equal(plan.actions[2].action, DLB_ACTION_RELAUNCH);
    assert_string_equal(plan.actions[3].pod, "j-worker-1");
    assert_string_equal(plan.optimizer, "dlbrain.node_failure+dlbrain.health");
    fixture_plan_free(&plan);
    dlb_job_state_clear(&st);
}

/* An OOM request answers node failures too (the OOM route takes every
 * request while an OOM is open); a pod the plan answers for its OOM is
 * replaced as well, with the plan's memory: two answer rows for it, one per
 * event. */
static void test_nodes_with_oom(void **state)
{
    static const nev_t evs[] = {RUNNING,
                                {"oom-w0", 90, "oom_killed", "j-worker-0", "n1", "Failed"},
                                {"ev-w0", 100, "evicted", "j-worker-0", "n1", NULL},
                                {"ev-w2", 100, "evicted", "j-worker-2", "n2", NULL}};
    dlb_job_state_t st = {0};
    dlb_plan_request_t req = {.event_id = "req-1",
                              .job_uid = "j",
                              .stage = DLB_STAGE_WORKER_RUNNING,
                              .has_oom_pod = 1,
                              .oom_pod = "j-worker-0"};
    dlb_history_t hist = {0};
    dlb_oom_answers_t answered = {0};
    dlb_opt_input_t in = {.req = &req,
                          .job = &st,
                          .history = &hist,
                          .optimizer_set = "dlbrain",
                          .answered = &answered};
    dlb_plan_t plan;
    char err[256];

    (void)state;
    req.event_time_ms = T0 + 200000;
    fold(&st, evs, sizeof(evs) / sizeof(evs[0]));
    assert_int_equal(dlb_router_plan(&in, &plan, err, sizeof(err)), 0);
    assert_string_equal(plan.optimizer, "dlbrain.oom+dlbrain.node_failure");
    assert_true(plan.groups_cnt + plan.pods_cnt > 0);
    assert_int_equal(plan.actions_cnt, 2);
    assert_string_equal(plan.actions[0].pod, "j-worker-0");
    assert_string_equal(plan.actions[0].action, DLB_ACTION_REPLACE);
    assert_string_equal(plan.actions[1].pod, "j-worker-2");
    /* the OOM row, then a replace row per pod: worker-0 has both */
    assert_int_equal(answered.cnt, 3);
    assert_string_equal(answered.items[0].pod_name, "j-worker-0");
    assert_string_equal(answered.items[0].oom_event_id, "oom-w0");
    assert_true(answered.items[0].memory > 0);
    assert_string_equal(answered.items[1].pod_name, "j-worker-0");
    assert_string_equal(answered.items[1].oom_event_id, "ev-w0");
    assert_int_equal(answered.items[1].memory, 0);
    assert_string_equal(answered.items[2].pod_name, "j-worker-2");
    assert_string_equal(answered.items[2].oom_event_id, "ev-w2");
    /* a later plan that sees both answers neither sizes nor replaces again */
    {
        dlb_plan_request_t later = req;
        dlb_opt_input_t in2 = in;
        dlb_plan_t plan2;

        snprintf(later.event_id, sizeof(later.event_id), "req-2");
        later.has_oom_pod = 0;
        later.oom_pod[0] = 0;
        later.event_time_ms = T0 + 230000;
        in2.req = &later;
        in2.oom_plans = answered.items;
        in2.oom_plans_cnt = answered.cnt;
        in2.answered = NULL;
        assert_int_equal(dlb_router_plan(&in2, &plan2, err, sizeof(err)), 0);
        assert_int_equal(plan2.actions_cnt, 0);
        assert_null(strstr(plan2.optimizer, "dlbrain.oom"));
        fixture_plan_free(&plan2);
    }
    free(answered.items);
    fixture_plan_free(&plan);
    dlb_job_state_clear(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_table),
        cmocka_unit_test(test_nodes_order),
        cmocka_unit_test(test_nodes_and_hang),
        cmocka_unit_test(test_nodes_with_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
