/* The router (stage/state -> optimizer, plan header), the limits clamp, the
 * plan builders and the reason helper. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "id.h"
#include "opt_util.h"
#include "optimizer.h"
#include "plan_assert.h"
#include "opt_plan.h"

#define GIB  DLB_GIB
#define MIB  DLB_MIB
#define STEP ((int64_t)4000000000)

#define COUNT_OF(type, ...) (sizeof((type[]){__VA_ARGS__}) / sizeof(type))
#define POD(n, t, cpu, used)                                                                       \
    {                                                                                              \
        .name = n, .type = t, .cpu_used = cpu, .memory_used = used                                 \
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
#define STATUS(n, t, ooms, ev, req)                                                                \
    {                                                                                              \
        .name = n, .type = t, .last_event_time_ms = 100, .oom_count = ooms,                        \
        .last_oom_event_id = ev, .memory_requested = req                                           \
    }

/* DLRover's NodeResourceLimit, the conf defaults. */
#define DLROVER_LIMITS                                                                             \
    {                                                                                              \
        .cpu_min = 4, .cpu_max = 32, .memory_min = 6144 * MIB, .memory_max = 65536 * MIB,          \
        .max_workers = 60, .max_ps = 15                                                            \
    }
static const dlb_limits_t dlrover_limits = DLROVER_LIMITS;

static const dlb_job_state_t empty_job = {.pods_cnt = 0};
static const dlb_history_t empty_history = {.jobs_cnt = 0};

/* A job with a worker that was OOMKilled at 16G. */
static dlb_pod_status_t oom_pods[] = {
    STATUS("j-ps-0", "ps", 0, "", 8 * GIB),
    STATUS("j-worker-1", "worker", 1, "ne-7", 16 * GIB),
};
static const dlb_job_state_t oom_job = {.pods = oom_pods, .pods_cnt = 2};

/* One completed job: PS sums 6 and 8 (two records) -> job avg: n=2 so both ->
 * 7; ps-0 avg (4+5)/2 = 4.5, ps-1 avg (2+3)/2 = 2.5 -> maxCPU 4.5; maxMem 10G,
 * maxJobPSMem 10G+6G = 16G. cpu = 8.5, total = 10.5, replica = ceil(1.235) = 2,
 * 10G*2 = 20G >= 16G, memory = ceil(10G*1.2) = 12884901888.
 * Worker: max 20G, 13 cores -> memory 30G = 32212254720, cpu 13. */
static dlb_hist_job_t hist_jobs[] = {
    HJOB("h1", 1,
         SAMPLE("r1", POD("h1-ps-0", "ps", 4, 10 * GIB), POD("h1-ps-1", "ps", 2, 6 * GIB),
                POD("h1-worker-0", "worker", 13, 20 * GIB)),
         SAMPLE("r2", POD("h1-ps-0", "ps", 5, 9 * GIB), POD("h1-ps-1", "ps", 3, 5 * GIB))),
};
static const dlb_history_t history = {.jobs = hist_jobs, .jobs_cnt = 1};

/* Running jobs for the running stages, 3 records each, 4 workers at 3 CPU /
 * 10G. hot_job: one PS at 7 of 8 CPU (0.875, CPU-hot), 10G of 16G.
 * util_job: j-ps-0 at 26 of 40 (0.65, not hot, but averaging >= 25.6) and
 * j-ps-1 at 3 of 16 (5G of 16G), neither hot. */
#define RPS(n, cpu, creq, mem)                                                                     \
    {                                                                                              \
        .name = n, .type = "ps", .cpu_used = cpu, .cpu_requested = creq, .memory_used = mem,       \
        .memory_requested = 16 * GIB                                                               \
    }
#define RW(n) POD(n, "worker", 3, 10 * GIB)
#define RSAMPLE(id, ...)                                                                           \
    {                                                                                              \
        .event_id = id, .speed = 4,                                                                \
        .pods = (dlb_pod_usage_t[]){__VA_ARGS__, RW("j-worker-0"), RW("j-worker-1"),               \
                                    RW("j-worker-2"), RW("j-worker-3")},                           \
        .pods_cnt = COUNT_OF(dlb_pod_usage_t, __VA_ARGS__) + 4                                     \
    }
static dlb_runtime_sample_t hot_window[] = {
    RSAMPLE("h-r1", RPS("j-ps-0", 7, 8, 10 * GIB)),
    RSAMPLE("h-r2", RPS("j-ps-0", 7, 8, 10 * GIB)),
    RSAMPLE("h-r3", RPS("j-ps-0", 7, 8, 10 * GIB)),
};
static const dlb_job_state_t hot_job = {.window = hot_window, .window_cnt = 3};
static dlb_runtime_sample_t util_window[] = {
    RSAMPLE("u-r1", RPS("j-ps-0", 26, 40, 8 * GIB), RPS("j-ps-1", 2, 16, 5 * GIB)),
    RSAMPLE("u-r2", RPS("j-ps-0", 26, 40, 8 * GIB), RPS("j-ps-1", 3, 16, 5 * GIB)),
    RSAMPLE("u-r3", RPS("j-ps-0", 26, 40, 8 * GIB), RPS("j-ps-1", 2, 16, 5 * GIB)),
};
static const dlb_job_state_t util_job = {.window = util_window, .window_cnt = 3};

static void plan_free(dlb_plan_t *plan)
{
    free(plan->groups);
    free(plan->pods);
    memset(plan, 0, sizeof(*plan));
}

static void assert_header(const dlb_plan_t *plan, const dlb_plan_request_t *req)
{
    char id[DLB_ID_MAX + 8];

    snprintf(id, sizeof(id), "plan-%s", req->event_id);
    assert_string_equal(plan->plan_id, id);
    assert_string_equal(plan->event_id, id);
    assert_int_equal(plan->event_time_ms, req->event_time_ms);
    assert_string_equal(plan->job_uid, req->job_uid);
    assert_string_equal(plan->stage, req->stage);
    assert_string_equal(plan->trigger_event_id, req->event_id);
}

static void assert_group(const dlb_plan_t *plan, size_t i, const char *group, int32_t count,
                         double cpu, int64_t memory)
{
    assert_true(i < plan->groups_cnt);
    assert_string_equal(plan->groups[i].group, group);
    assert_int_equal(plan->groups[i].count, count);
    if (fabs(plan->groups[i].resource.cpu - cpu) > 1e-9) {
        print_error("%s cpu %.12g != %.12g\n", group, plan->groups[i].resource.cpu, cpu);
        fail();
    }
    assert_int_equal(plan->groups[i].resource.memory, memory);
}

/* ---- routing table ---------------------------------------------------------- */

typedef struct route_case {
    const char *name;
    const char *set;
    const char *stage;
    const char *oom_pod; /* NULL = the request names none */
    const dlb_job_state_t *job;
    const dlb_history_t *history;
    int err;
    const char *optimizer;
    /* groups expected, in order; group NULL ends the list */
    struct {
        const char *group;
        int32_t count;
        double cpu;
        int64_t memory;
    } groups[3];
    size_t pods_cnt;
    const char *reason; /* expected substring */
    /* the first pod entry when not NULL; else the OOM pod with the group memory */
    const char *pod;
    double pod_cpu;
    int64_t pod_memory;
} route_case_t;

static const route_case_t route_cases[] = {
    /* cold start both: worker 1 x 12 x 16G, PS 4 x 12 x 16G; within limits */
    {"create, cold start",
     "dlrover",
     DLB_STAGE_CREATE,
     NULL,
     &empty_job,
     &empty_history,
     0,
     "dlrover.create",
     {{"worker", 1, 12, 16 * GIB}, {"ps", 4, 12, 16 * GIB}},
     0,
     "Worker create: cold start"},
    /* the dlbrain set: the same resources, the user's worker count (0 = keep) */
    {"create, set dlbrain: DLRover's formulas, cold worker memory the user's",
     "dlbrain",
     DLB_STAGE_CREATE,
     NULL,
     &empty_job,
     &empty_history,
     0,
     "dlrover.create",
     {{"worker", 0, 12, 0}, {"ps", 4, 12, 16 * GIB}},
     0,
     "the worker count stays the user's"},
    /* history (worked out above): worker 1 x 13 x 30G, PS 2 x 8.5 x 12G */
    {"create, from history",
     "dlrover",
     DLB_STAGE_CREATE,
     NULL,
     &empty_job,
     &history,
     0,
     "dlrover.create",
     {{"worker", 1, 13, 32212254720}, {"ps", 2, 8.5, 12884901888}},
     0,
     "PS create: history of 1 jobs"},
    /* dlbrain: the user's count; the worker peak 20G x 1.5 but at most +8G = 28G
     * (DLRover's 30G), no 16G minimum */
    {"create, from history, set dlbrain",
     "dlbrain",
     DLB_STAGE_CREATE,
     NULL,
     &empty_job,
     &history,
     0,
     "dlrover.create",
     {{"worker", 0, 13, 30064771072}, {"ps", 2, 8.5, 12884901888}},
     0,
     "worker memory 28.00GiB = the similar workers' peak 20.00GiB x 1.5 (at most +8GiB)"},
    /* an OOM in the state does not hijack create */
    {"create ignores OOM pod state",
     "dlrover",
     DLB_STAGE_CREATE,
     NULL,
     &oom_job,
     &empty_history,
     0,
     "dlrover.create",
     {{"worker", 1, 12, 16 * GIB}, {"ps", 4, 12, 16 * GIB}},
     0,
     "Worker create"},
    /* hot_job, PS init-adjust: recv ops unknown -> 16; ceil(7)+4 = 11 < 16;
     * job time unknown -> target 20; freeRate = 16/(7*1/15) = 34.3, ceil(34.3*4)
     * = 138 >= 20; replica = ceil(20/4 * 7/16) = ceil(2.19) = 3; memory 10G*1.2 */
    {"ps_initial: PS init-adjust",
     "dlrover",
     DLB_STAGE_PS_INITIAL,
     NULL,
     &hot_job,
     &history,
     0,
     "dlrover.ps_initial",
     {{"ps", 3, 16, 12884901888}},
     0,
     "PS init-adjust: 3 records with the 1 PS of the newest sample, 4 workers"},
    {"ps_initial: no samples, nothing to change",
     "dlrover",
     DLB_STAGE_PS_INITIAL,
     NULL,
     &empty_job,
     &history,
     0,
     "dlrover.ps_initial",
     {{NULL}},
     0,
     "PS init-adjust: no runtime sample with PS pods yet, nothing to change."},
    /* hot_job, worker resource: PS util 7/8 = 0.875 in [0.8, 0.95], count
     * kept; cpu ceil(3+1) = 4; memory 10G*1.2 */
    {"worker_initial: worker resource",
     "dlrover",
     DLB_STAGE_WORKER_INITIAL,
     NULL,
     &hot_job,
     &history,
     0,
     "dlrover.worker_resource",
     {{"worker", 0, 4, 12884901888}},
     0,
     "in [0.8, 0.95], count kept"},
    {"worker_running: worker resource",
     "dlrover",
     DLB_STAGE_WORKER_RUNNING,
     NULL,
     &hot_job,
     &history,
     0,
     "dlrover.worker_resource",
     {{"worker", 0, 4, 12884901888}},
     0,
     "Worker resource: 3 usable records"},
    {"worker_running: no samples, nothing to change",
     "dlrover",
     DLB_STAGE_WORKER_RUNNING,
     NULL,
     &empty_job,
     &history,
     0,
     "dlrover.worker_resource",
     {{NULL}},
     0,
     "need 3, nothing to change."},
    /* hot_job, hot PS: 7/8 > 0.8; coeff 32/4 = 8, 7*8 = 56 > 32 -> capped
     * -> j-ps-0 at 32 cores */
    {"running: hot PS fires",
     "dlrover",
     DLB_STAGE_RUNNING,
     NULL,
     &hot_job,
     &history,
     0,
     "dlrover.hot_ps",
     {{NULL}},
     1,
     "j-ps-0 8->32.",
     "j-ps-0",
     32,
     0},
    {"ps_running: hot PS fires",
     "dlrover",
     DLB_STAGE_PS_RUNNING,
     NULL,
     &hot_job,
     &history,
     0,
     "dlrover.hot_ps",
     {{NULL}},
     1,
     "Hot PS: last 3 of 3 records",
     "j-ps-0",
     32,
     0},
    /* util_job: nothing hot; PS utilisation: j-ps-0 averages 26 >= 25.6,
     * j-ps-1 max 3/16 < 0.4 -> ceil(3)+4 = 7 CPU, 5G*1.2 = 6G */
    {"running: hot PS does not fire, PS utilisation does",
     "dlrover",
     DLB_STAGE_RUNNING,
     NULL,
     &util_job,
     &history,
     0,
     "dlrover.ps_util",
     {{NULL}},
     1,
     "nothing to change. PS utilisation: 3 records",
     "j-ps-1",
     7,
     6 * GIB},
    {"ps_running: neither fires",
     "dlrover",
     DLB_STAGE_PS_RUNNING,
     NULL,
     &empty_job,
     &history,
     0,
     "dlrover.ps_running",
     {{NULL}},
     0,
     "Hot PS: no PS pods in the newest runtime sample, nothing to change. PS utilisation: no PS "
     "pods in the newest runtime sample, nothing to change."},
    /* OOM from node events at a worker stage: as at running below -> 20G */
    {"worker_running, OOM from the pod state",
     "dlrover",
     DLB_STAGE_WORKER_RUNNING,
     NULL,
     &oom_job,
     &history,
     0,
     "dlrover.oom",
     {{"worker", 0, 0, 20 * GIB}},
     1,
     "worker j-worker-1 OOMKilled (event ne-7)"},
    /* PS OOM named by the request at PS init-adjust: no samples, 8G < 64G -> 16G */
    {"ps_initial, PS OOM named by the request",
     "dlrover",
     DLB_STAGE_PS_INITIAL,
     "j-ps-0",
     &oom_job,
     &empty_history,
     0,
     "dlrover.oom",
     {{"ps", 0, 0, 16 * GIB}},
     1,
     "ps j-ps-0 OOMKilled (event unknown), no runtime samples"},
    /* OOM pod from the state at a running stage: current 16G + 4e9 =
     * 21179869184 < history h1-worker-0 last used 20G = 21474836480 -> 20G */
    {"running, OOM from the pod state",
     "dlrover",
     DLB_STAGE_RUNNING,
     NULL,
     &oom_job,
     &history,
     0,
     "dlrover.oom",
     {{"worker", 0, 0, 20 * GIB}},
     1,
     "worker j-worker-1 OOMKilled (event ne-7)"},
    /* the request names the pod, even at create: no history -> 16G + 4e9 */
    {"create, OOM named by the request",
     "dlrover",
     DLB_STAGE_CREATE,
     "j-worker-1",
     &oom_job,
     &empty_history,
     0,
     "dlrover.oom",
     {{"worker", 0, 0, 16 * GIB + STEP}},
     1,
     "memory=max(history, current+4e9 bytes)=19.73GiB"},
    /* PS OOM named by the request: no samples, 8G < 64G -> 16G */
    {"worker_initial, PS OOM named by the request",
     "dlrover",
     DLB_STAGE_WORKER_INITIAL,
     "j-ps-0",
     &oom_job,
     &empty_history,
     0,
     "dlrover.oom",
     {{"ps", 0, 0, 16 * GIB}},
     1,
     "ps j-ps-0 OOMKilled (event unknown), no runtime samples"},
    {"unknown stage",
     "dlrover",
     "job_stage_bogus",
     NULL,
     &empty_job,
     &empty_history,
     DLB_ERR_INVALID,
     "",
     {{NULL}},
     0,
     "stage \"job_stage_bogus\": unknown"},
    {"unknown stage with an OOM pod",
     "dlrover",
     "",
     "j-worker-1",
     &oom_job,
     &empty_history,
     DLB_ERR_INVALID,
     "",
     {{NULL}},
     0,
     "stage \"\": unknown"},
    {"unknown set",
     "kubernetes",
     DLB_STAGE_CREATE,
     NULL,
     &empty_job,
     &empty_history,
     DLB_ERR_INVALID,
     "",
     {{NULL}},
     0,
     "optimizer set \"kubernetes\": unknown"},
    {"no set",
     NULL,
     DLB_STAGE_CREATE,
     NULL,
     &empty_job,
     &empty_history,
     DLB_ERR_INVALID,
     "",
     {{NULL}},
     0,
     "optimizer set \"(null)\": unknown"},
    {"no job state",
     "dlrover",
     DLB_STAGE_CREATE,
     NULL,
     NULL,
     &empty_history,
     DLB_ERR_GENERIC,
     "",
     {{NULL}},
     0,
     "router: missing input"},
    {"no history",
     "dlbrain",
     DLB_STAGE_RUNNING,
     NULL,
     &empty_job,
     NULL,
     DLB_ERR_GENERIC,
     "",
     {{NULL}},
     0,
     "router: missing input"},
};

static void test_router_table(void **state)
{
    size_t i, g;

    (void)state;
    for (i = 0; i < sizeof(route_cases) / sizeof(route_cases[0]); i++) {
        const route_case_t *c = &route_cases[i];
        dlb_plan_request_t req = {
            .event_id = "req-42", .event_time_ms = 1700000000123, .job_uid = "job-7"};
        dlb_opt_input_t in = {.req = &req,
                              .job = c->job,
                              .history = c->history,
                              .limits = &dlrover_limits,
                              .optimizer_set = c->set};
        dlb_plan_t plan;
        char errstr[256] = "";
        int err;

        print_message("case %s\n", c->name);
        snprintf(req.stage, sizeof(req.stage), "%s", c->stage);
        if (c->oom_pod) {
            req.has_oom_pod = 1;
            snprintf(req.oom_pod, sizeof(req.oom_pod), "%s", c->oom_pod);
        }
        memset(&plan, 0xa5, sizeof(plan)); /* the router must not read the output */
        err = dlb_router_plan(&in, &plan, errstr, sizeof(errstr));
        assert_int_equal(err, c->err);
        if (err) {
            if (!strstr(errstr, c->reason)) {
                print_error("errstr \"%s\" lacks \"%s\"\n", errstr, c->reason);
                fail();
            }
            assert_null(plan.groups);
            assert_null(plan.pods);
            continue;
        }
        assert_header(&plan, &req);
        assert_string_equal(plan.optimizer, c->optimizer);
        for (g = 0; g < 3 && c->groups[g].group; g++)
            assert_group(&plan, g, c->groups[g].group, c->groups[g].count, c->groups[g].cpu,
                         c->groups[g].memory);
        assert_int_equal(plan.groups_cnt, g);
        assert_int_equal(plan.pods_cnt, c->pods_cnt);
        if (c->pods_cnt && c->pod) {
            assert_string_equal(plan.pods[0].name, c->pod);
            assert_true(fabs(plan.pods[0].resource.cpu - c->pod_cpu) < 1e-9);
            assert_int_equal(plan.pods[0].resource.memory, c->pod_memory);
        } else if (c->pods_cnt) {
            assert_string_equal(plan.pods[0].name, c->oom_pod ? c->oom_pod : "j-worker-1");
            assert_int_equal(plan.pods[0].resource.memory, c->groups[0].memory);
        }
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        assert_null(strstr(plan.reason, "clamped"));
        plan_free(&plan);
    }

    /* no input, or no request: the same error */
    {
        dlb_opt_input_t in = {
            .job = &empty_job, .history = &empty_history, .optimizer_set = "dlrover"};
        dlb_plan_t plan;
        char errstr[256] = "";

        assert_int_equal(dlb_router_plan(NULL, &plan, errstr, sizeof(errstr)), DLB_ERR_GENERIC);
        assert_string_equal(errstr, "router: missing input");
        assert_int_equal(dlb_router_plan(&in, &plan, errstr, sizeof(errstr)), DLB_ERR_GENERIC);
        assert_null(plan.groups);
    }
}

/* Limits apply last: create from history with a 10-core, 20G, 1-PS cap. */
static void test_router_applies_limits(void **state)
{
    static const dlb_limits_t tight = {.cpu_min = 4,
                                       .cpu_max = 10,
                                       .memory_min = 6 * GIB,
                                       .memory_max = 20 * GIB,
                                       .max_workers = 60,
                                       .max_ps = 1};
    dlb_plan_request_t req = {.event_id = "req-1", .job_uid = "j", .stage = DLB_STAGE_CREATE};
    dlb_opt_input_t in = {.req = &req,
                          .job = &empty_job,
                          .history = &history,
                          .limits = &tight,
                          .optimizer_set = "dlrover"};
    dlb_plan_t plan;
    char errstr[256];

    (void)state;
    assert_int_equal(dlb_router_plan(&in, &plan, errstr, sizeof(errstr)), 0);
    /* worker 13 -> 10 cores, 30G -> 20G; ps count 2 -> 1; ps 8.5 cores, 12G fit */
    assert_group(&plan, 0, "worker", 1, 10, 20 * GIB);
    assert_group(&plan, 1, "ps", 1, 8.5, 12884901888);
    assert_non_null(strstr(plan.reason, " clamped: worker.cpu 13->10, worker.memory "
                                        "30.00GiB->20.00GiB, ps.count 2->1."));
    plan_free(&plan);
}

/* Same input twice -> the same plan, byte for byte where it matters. */
static void test_router_deterministic(void **state)
{
    const char *stages[] = {DLB_STAGE_CREATE, DLB_STAGE_RUNNING};
    size_t s;

    (void)state;
    for (s = 0; s < 2; s++) {
        dlb_plan_request_t req = {.event_id = "req-5", .event_time_ms = 5, .job_uid = "j"};
        dlb_opt_input_t in = {.req = &req,
                              .job = &oom_job,
                              .history = &history,
                              .limits = &dlrover_limits,
                              .optimizer_set = "dlbrain"};
        dlb_plan_t a, b;
        char errstr[256];

        snprintf(req.stage, sizeof(req.stage), "%s", stages[s]);
        assert_int_equal(dlb_router_plan(&in, &a, errstr, sizeof(errstr)), 0);
        assert_int_equal(dlb_router_plan(&in, &b, errstr, sizeof(errstr)), 0);
        assert_true(a.reason[0] != '\0');
        assert_plans_equal(&a, &b);
        plan_free(&a);
        plan_free(&b);
    }
}

static void test_plan_id(void **state)
{
    dlb_plan_request_t req = {.event_id = "abc-123"};
    char buf[DLB_ID_MAX], small[9];

    (void)state;
    dlb_plan_id(&req, buf, sizeof(buf));
    assert_string_equal(buf, "plan-abc-123");
    dlb_plan_id(&req, small, sizeof(small));
    assert_string_equal(small, "plan-abc");
    dlb_plan_id(&req, small, 3);
    assert_string_equal(small, "pl");
    /* no room at all, or no buffer: nothing written */
    dlb_plan_id(&req, small, 0);
    assert_string_equal(small, "pl");
    dlb_plan_id(&req, NULL, sizeof(small));
    /* a 127-byte id: shortened to the 128-byte buffer with a hash (test_id.c) */
    memset(req.event_id, 'x', sizeof(req.event_id) - 1);
    req.event_id[sizeof(req.event_id) - 1] = '\0';
    dlb_plan_id(&req, buf, sizeof(buf));
    assert_int_equal(strlen(buf), sizeof(buf) - 1);
    assert_memory_equal(buf, "plan-xxx", 8);
    assert_int_equal(buf[sizeof(buf) - 1 - DLB_ID_HASH_LEN], '~');
}

/* What each request's plan reads, one description per request. */
static void test_needs(void **state)
{
    dlb_plan_request_t req = {.stage = DLB_STAGE_CREATE};
    dlb_job_state_t st = {0};
    dlb_pod_status_t pod = {0};
    dlb_opt_needs_t n;

    (void)state;
    n = dlb_opt_needs("dlrover", &req, &st);
    assert_true(n.history && !n.answers && !n.cluster);
    snprintf(req.stage, sizeof(req.stage), "%s", DLB_STAGE_PS_RUNNING);
    n = dlb_opt_needs("dlrover", &req, &st);
    assert_true(!n.history && !n.answers && !n.cluster);
    n = dlb_opt_needs("dlbrain", &req, &st);
    assert_true(n.history && !n.answers && !n.cluster);
    snprintf(req.stage, sizeof(req.stage), "%s", DLB_STAGE_WORKER_INITIAL);
    n = dlb_opt_needs("dlbrain", &req, &st);
    assert_true(n.history && !n.answers && n.cluster);
    n = dlb_opt_needs("dlrover", &req, &st);
    assert_true(!n.history && !n.answers && !n.cluster);
    /* An OOM: history and answers with either set; a node failure: answers
     * with dlbrain only. */
    req.has_oom_pod = 1;
    n = dlb_opt_needs("dlrover", &req, &st);
    assert_true(n.history && n.answers && !n.cluster);
    req.has_oom_pod = 0;
    snprintf(pod.fail_event_id, sizeof(pod.fail_event_id), "node-down-1");
    st.pods = &pod;
    st.pods_cnt = 1;
    assert_false(dlb_opt_needs("dlrover", &req, &st).answers);
    assert_true(dlb_opt_needs("dlbrain", &req, &st).answers);
}

/* ---- limits ----------------------------------------------------------------- */

typedef struct limits_case {
    const char *name;
    dlb_limits_t limits;
    dlb_group_resource_t group;   /* in */
    dlb_group_resource_t want;    /* out */
    dlb_resource_t pod, pod_want; /* a pod resource in and out */
    const char *reason;           /* whole reason after "start." */
} limits_case_t;

static const limits_case_t limits_cases[] = {
    {"worker above every max",
     DLROVER_LIMITS,
     {"worker", 80, {.cpu = 40, .memory = 100 * GIB}},
     {"worker", 60, {.cpu = 32, .memory = 64 * GIB}},
     {.cpu = 33, .memory = 70 * GIB},
     {.cpu = 32, .memory = 64 * GIB},
     "start. clamped: worker.cpu 40->32, worker.memory 100.00GiB->64.00GiB, worker.count 80->60, "
     "p.cpu 33->32, p.memory 70.00GiB->64.00GiB."},
    {"ps below every min, count above max",
     DLROVER_LIMITS,
     {"ps", 20, {.cpu = 2, .memory = GIB}},
     {"ps", 15, {.cpu = 4, .memory = 6 * GIB}},
     {.cpu = 0.5, .memory = 0},
     {.cpu = 4, .memory = 0},
     "start. clamped: ps.cpu 2->4, ps.memory 1.00GiB->6.00GiB, ps.count 20->15, p.cpu 0.5->4."},
    {"zeros mean keep and stay zero",
     DLROVER_LIMITS,
     {"worker", 0, {.cpu = 0, .memory = 0}},
     {"worker", 0, {.cpu = 0, .memory = 0}},
     {.cpu = 0, .memory = 0},
     {.cpu = 0, .memory = 0},
     "start."},
    {"within limits: untouched, no clamp note",
     DLROVER_LIMITS,
     {"ps", 15, {.cpu = 32, .memory = 6144 * MIB}},
     {"ps", 15, {.cpu = 32, .memory = 6144 * MIB}},
     {.cpu = 4, .memory = 65536 * MIB},
     {.cpu = 4, .memory = 65536 * MIB},
     "start."},
    {"chief count has no max",
     DLROVER_LIMITS,
     {"chief", 100, {.cpu = 8, .memory = 8 * GIB}},
     {"chief", 100, {.cpu = 8, .memory = 8 * GIB}},
     {.cpu = 8, .memory = 8 * GIB},
     {.cpu = 8, .memory = 8 * GIB},
     "start."},
    {"zero limits clamp nothing",
     {0},
     {"worker", 1000, {.cpu = 1000, .memory = 1000 * GIB}},
     {"worker", 1000, {.cpu = 1000, .memory = 1000 * GIB}},
     {.cpu = 0.1, .memory = 1},
     {.cpu = 0.1, .memory = 1},
     "start."},
};

static void test_limits_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(limits_cases) / sizeof(limits_cases[0]); i++) {
        const limits_case_t *c = &limits_cases[i];
        dlb_plan_t plan = {.reason = "start."};
        dlb_group_resource_t *g;
        dlb_pod_resource_t *p;

        print_message("case %s\n", c->name);
        assert_non_null(g = dlb_plan_add_group(&plan, c->group.group));
        *g = c->group;
        assert_non_null(p = dlb_plan_add_pod(&plan, "p"));
        p->resource = c->pod;
        dlb_limits_apply(&c->limits, &plan);
        assert_memory_equal(&plan.groups[0], &c->want, sizeof(c->want));
        assert_true(plan.pods[0].resource.cpu == c->pod_want.cpu);
        assert_int_equal(plan.pods[0].resource.memory, c->pod_want.memory);
        assert_string_equal(plan.reason, c->reason);
        plan_free(&plan);
    }
    dlb_limits_apply(NULL, NULL); /* no limits: nothing happens */
}

/* A clamp note on a nearly full reason is cut, never overflows. */
static void test_limits_reason_full(void **state)
{
    dlb_plan_t plan = {0};
    dlb_group_resource_t *g;
    size_t len;

    (void)state;
    memset(plan.reason, 'r', sizeof(plan.reason) - 10);
    assert_non_null(g = dlb_plan_add_group(&plan, "worker"));
    g->resource.cpu = 100;
    dlb_limits_apply(&dlrover_limits, &plan);
    assert_true(g == &plan.groups[0]);
    assert_true(plan.groups[0].resource.cpu == 32);
    len = strlen(plan.reason);
    assert_int_equal(len, sizeof(plan.reason) - 1);
    assert_string_equal(plan.reason + len - 3, "...");
    plan_free(&plan);
}

/* ---- plan builders and the reason helper ----------------------------------- */

static void test_plan_builders(void **state)
{
    dlb_plan_t plan = {0};
    dlb_group_resource_t *g;
    dlb_pod_resource_t *p;

    (void)state;
    assert_null(dlb_plan_group(&plan, "ps"));
    assert_non_null(g = dlb_plan_add_group(&plan, "ps"));
    g->count = 3;
    assert_non_null(g = dlb_plan_add_group(&plan, "worker"));
    assert_int_equal(g->count, 0); /* zeroed */
    assert_true(g->resource.cpu == 0);
    assert_int_equal(g->resource.memory, 0);
    assert_string_equal(g->resource.priority, "");
    assert_int_equal(plan.groups_cnt, 2);
    assert_int_equal(dlb_plan_group(&plan, "ps")->count, 3);
    assert_ptr_equal(dlb_plan_group(&plan, "worker"), &plan.groups[1]);
    assert_null(dlb_plan_group(&plan, "chief"));
    assert_null(dlb_plan_group(NULL, "ps"));
    assert_ptr_equal(dlb_plan_group_get(&plan, "ps"), &plan.groups[0]);
    assert_non_null(dlb_plan_group_get(&plan, "chief"));
    assert_int_equal(plan.groups_cnt, 3);

    assert_non_null(p = dlb_plan_add_pod(&plan, "j-worker-0"));
    p->resource.memory = 5;
    assert_non_null(p = dlb_plan_add_pod(&plan, "j-worker-1"));
    assert_int_equal(p->resource.memory, 0);
    assert_int_equal(plan.pods_cnt, 2);
    assert_string_equal(plan.pods[0].name, "j-worker-0");
    assert_int_equal(plan.pods[0].resource.memory, 5);
    assert_string_equal(plan.pods[1].name, "j-worker-1");
    plan_free(&plan);
}

static void test_reason_append(void **state)
{
    char buf[16] = "";

    (void)state;
    dlb_reason_appendf(buf, sizeof(buf), "%sab", dlb_reason_sep(buf));
    assert_string_equal(buf, "ab");
    dlb_reason_appendf(buf, sizeof(buf), "%scd %d.", dlb_reason_sep(buf), 7);
    assert_string_equal(buf, "ab cd 7.");
    dlb_reason_appendf(buf, sizeof(buf), " 0123456789");
    assert_string_equal(buf, "ab cd 7. 012...");
    dlb_reason_appendf(buf, sizeof(buf), "more");
    assert_string_equal(buf, "ab cd 7. 012...");
    /* exactly fits: no cut mark */
    buf[0] = '\0';
    dlb_reason_appendf(buf, sizeof(buf), "%s", "123456789012345");
    assert_string_equal(buf, "123456789012345");
    /* not terminated (a caller's bug): terminated at its last byte, nothing appended */
    memset(buf, 'x', sizeof(buf));
    dlb_reason_appendf(buf, sizeof(buf), "more");
    assert_string_equal(buf, "xxxxxxxxxxxxxxx");
    /* Issue 18, found by fuzz_struct: the cut split a character (a pod name's)
     * into a plan reason that is not UTF-8. 'a' and eight 2-byte characters:
     * the mark goes after the fifth, at 11 rather than 12. */
    buf[0] = '\0';
    dlb_reason_appendf(buf, sizeof(buf), "a%s%s", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
                       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    assert_string_equal(buf, "a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...");
    /* "ab" and four 4-byte characters: after the second, at 10. */
    buf[0] = '\0';
    dlb_reason_appendf(buf, sizeof(buf), "ab%s%s", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80",
                       "\xf0\x9f\x98\x80\xf0\x9f\x98\x80");
    assert_string_equal(buf, "ab\xf0\x9f\x98\x80\xf0\x9f\x98\x80...");
}

static void test_mem_helpers(void **state)
{
    (void)state;
    assert_int_equal(dlb_mem_scale(10 * GIB, 6, 5), 12884901888);
    assert_int_equal(dlb_mem_scale(1, 6, 5), 2); /* ceil(1.2) */
    assert_int_equal(dlb_mem_scale(0, 6, 5), 0);
    assert_int_equal(dlb_mem_scale(INT64_MAX / 2, 6, 5), INT64_MAX);
    assert_int_equal(dlb_mem_add(INT64_MAX - 1, 5), INT64_MAX);
    assert_int_equal(dlb_mem_add(1, 2), 3);
    assert_true(dlb_ceil_cores(15.000000000001) == 15);
    assert_true(dlb_ceil_cores(15.01) == 16);
    assert_true(dlb_ceil_cores(0) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_router_table),         cmocka_unit_test(test_router_applies_limits),
        cmocka_unit_test(test_router_deterministic), cmocka_unit_test(test_plan_id),
        cmocka_unit_test(test_limits_table),         cmocka_unit_test(test_limits_reason_full),
        cmocka_unit_test(test_plan_builders),        cmocka_unit_test(test_reason_append),
        cmocka_unit_test(test_mem_helpers),          cmocka_unit_test(test_needs),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
