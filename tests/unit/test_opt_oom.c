/* OOM memory plans: DLRover's worker-create OOM variant and PS OOM variant,
 * each case worked out by hand (reference section 3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dlbrain_fixture.h"
#include "opt_oom.h"
#include "optimizer.h"
#include "routes.h"

#define STEP ((int64_t)4000000000) /* DLRover's OOM step: 4e9 bytes */

typedef struct oom_case {
    const char *name;
    const char *oom_pod; /* request's oom_pod, NULL = none */
    dlb_job_state_t job;
    dlb_history_t history;
    /* expected: group entry (NULL = no groups) and pod entry */
    const char *group;
    int32_t count;
    int64_t memory;     /* group and pod memory; 0 = no pod entry */
    const char *reason; /* expected substring */
} oom_case_t;

/* The same without the OOM: h2's 20G counts as is, h1's 12G < 20G -> max 20G. */
#define HIST_NO_OOM                                                                                \
    HISTORY(                                                                                       \
        {.job_uid = "h1",                                                                          \
         SAMPLES(SAMPLE("h1-r1", MPOD("h1-worker-0", "worker", 30 * GIB, 0),                       \
                        MPOD("h1-worker-1", "worker", 12 * GIB, 0)),                               \
                 SAMPLE("h1-r2", MPOD("h1-worker-0", "worker", 11 * GIB, 0)))},                    \
        {.job_uid = "h2", SAMPLES(SAMPLE("h2-r1", MPOD("h2-worker-0", "worker", 20 * GIB, 0)))})

static const oom_case_t oom_cases[] = {
    /* ---- worker ---- */
    /* no history: memory = 16G + 4e9 = 17179869184 + 4000000000 */
    {"worker, no history",
     "j-worker-1",
     {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB))},
     NOHIST,
     "worker",
     0,
     16 * GIB + STEP,
     "worker j-worker-1 OOMKilled (event ne-7): current memory 16.00GiB (requested at its node "
     "events)"},
    /* history max 24G (OOM'd h2 pod x1.2) > 16G + 4e9 = 21179869184 -> 25769803776 */
    {"worker, history with an OOMKilled pod (x1.2) wins",
     "j-worker-1",
     {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB))},
     HIST_WITH_OOM,
     "worker",
     0,
     25769803776,
     "history: 3 worker pods of 2 jobs, max last memory 24.00GiB"},
    /* history max 20G = 21474836480 > 21179869184 -> 20G */
    {"worker, history without OOM, last not peak",
     "j-worker-1",
     {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB))},
     HIST_NO_OOM,
     "worker",
     0,
     20 * GIB,
     "max last memory 20.00GiB"},
    /* current 24G + 4e9 = 25769803776 + 4000000000 = 29769803776 > history 24G */
    {"worker, current + 4e9 beats history",
     "j-worker-1",
     {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 24 * GIB))},
     HIST_WITH_OOM,
     "worker",
     0,
     24 * GIB + STEP,
     "memory=max(history, current+4e9 bytes)=27.73GiB"},
    /* no node event for the pod: type and memory from the newest window sample
     * holding it (w-r2: requested 8G; w-r3 does not have it): 8G + 4e9 */
    {"worker, current from the runtime window",
     "j-worker-2",
     {WINDOW(SAMPLE("w-r1", MPOD("j-worker-2", "worker", GIB, 2 * GIB)),
             SAMPLE("w-r2", MPOD("j-worker-2", "worker", 7 * GIB, 8 * GIB)),
             SAMPLE("w-r3", MPOD("j-ps-0", "ps", GIB, 2 * GIB)))},
     NOHIST,
     "worker",
     0,
     8 * GIB + STEP,
     "worker j-worker-2 OOMKilled (event unknown): current memory 8.00GiB (requested in its "
     "newest runtime sample)"},
    /* window has no request, only usage: 6G + 4e9 */
    {"worker, current from memory_used",
     "j-worker-2",
     {WINDOW(SAMPLE("w-r1", MPOD("j-worker-2", "worker", 6 * GIB, 0)))},
     NOHIST,
     "worker",
     0,
     6 * GIB + STEP,
     "(used in its newest runtime sample)"},
    /* nothing known: type from the name, memory assumed 16G: 16G + 4e9 */
    {"worker, type from the pod name", "train-job-worker-3", NOJOB, NOHIST, "worker", 0,
     16 * GIB + STEP,
     "worker train-job-worker-3 OOMKilled (event unknown): current memory 16.00GiB (unknown, "
     "assumed the cold-start size)"},
    /* OOM pod from the state: newest OOM (time 200) is the chief; history has
     * no chief -> 10G + 4e9 = 14737418240 for the chief group */
    {"chief, newest OOM pod from the state",
     NULL,
     {STATUSES(STATUS("j-worker-0", "worker", 100, 2, "ne-1", 16 * GIB),
               STATUS("j-chief-0", "chief", 200, 1, "ne-2", 10 * GIB),
               STATUS("j-worker-1", "worker", 300, 0, "", 16 * GIB))},
     HIST_WITH_OOM,
     "chief",
     0,
     10 * GIB + STEP,
     "chief j-chief-0 OOMKilled (event ne-2)"},
    /* same event time: the smaller name wins (j-worker-0 < j-worker-5): 12G + 4e9 */
    {"worker, OOM pods tie on time",
     NULL,
     {STATUSES(STATUS("j-worker-5", "worker", 100, 1, "ne-5", 30 * GIB),
               STATUS("j-worker-0", "worker", 100, 1, "ne-0", 12 * GIB))},
     NOHIST,
     "worker",
     0,
     12 * GIB + STEP,
     "j-worker-0 OOMKilled (event ne-0)"},
    /* same time, the smaller name first this time: j-worker-5 does not replace it */
    {"worker, OOM pods tie on time, smaller name first",
     NULL,
     {STATUSES(STATUS("j-worker-0", "worker", 100, 1, "ne-0", 12 * GIB),
               STATUS("j-worker-5", "worker", 100, 1, "ne-5", 30 * GIB))},
     NOHIST,
     "worker",
     0,
     12 * GIB + STEP,
     "j-worker-0 OOMKilled (event ne-0)"},
    /* history: r1 lists w0 at 20G before w1 at 10G: max 20G = 21474836480 >
     * 16G + 4e9 = 21179869184 */
    {"worker, history max not the last pod seen",
     "j-worker-1",
     {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB))},
     HISTORY({.job_uid = "h1",
              SAMPLES(SAMPLE("h1-r1", MPOD("h1-worker-0", "worker", 20 * GIB, 0),
                             MPOD("h1-worker-1", "worker", 10 * GIB, 0)))}),
     "worker",
     0,
     20 * GIB,
     "history: 2 worker pods of 1 jobs, max last memory 20.00GiB"},
    /* node events without a request, a sample with neither request nor usage:
     * memory assumed 16G -> 16G + 4e9 */
    {"worker, no request at its node events, no figures in its sample",
     "j-worker-2",
     {STATUSES(STATUS("j-worker-2", "worker", 100, 1, "ne-8", 0)),
      WINDOW(SAMPLE("w-r1", MPOD("j-worker-2", "worker", 0, 0)))},
     NOHIST,
     "worker",
     0,
     16 * GIB + STEP,
     "worker j-worker-2 OOMKilled (event ne-8): current memory 16.00GiB (unknown, assumed the "
     "cold-start size)"},
    /* no node event, no sample: the type from "<name>-<index>" alone, the first
     * token is the type: 16G + 4e9 */
    {"worker, type from a name without a job prefix", "worker-3", NOJOB, NOHIST, "worker", 0,
     16 * GIB + STEP, "worker worker-3 OOMKilled (event unknown)"},
    {"unknown type: nothing to change", "mystery", NOJOB, NOHIST, NULL, 0, 0,
     "its type is unknown"},
    /* names the type cannot be read from: the last token is not all digits
     * (a letter, a '.'), is empty, or has no type before it; a type token too
     * long for any type */
    {"unknown type: index not a number", "j-worker-x", NOJOB, NOHIST, NULL, 0, 0,
     "OOM of pod j-worker-x: its type is unknown"},
    {"unknown type: index with a dot", "j-worker-1.5", NOJOB, NOHIST, NULL, 0, 0,
     "OOM of pod j-worker-1.5: its type is unknown"},
    {"unknown type: no index", "j-worker-", NOJOB, NOHIST, NULL, 0, 0,
     "OOM of pod j-worker-: its type is unknown"},
    {"unknown type: no type before the index", "-3", NOJOB, NOHIST, NULL, 0, 0,
     "OOM of pod -3: its type is unknown"},
    {"unknown type: type token too long", "j-averyveryverylongtype-3", NOJOB, NOHIST, NULL, 0, 0,
     "OOM of pod j-averyveryverylongtype-3: its type is unknown"},
    {"no OOM pod: nothing to change",
     NULL,
     {STATUSES(STATUS("j-worker-0", "worker", 100, 0, "", 16 * GIB))},
     NOHIST,
     NULL,
     0,
     0,
     "no OOM pod in the request or the job state"},

    /* ---- PS ---- */
    /* no samples; 32G < 64G -> memory = 64G for the group and the pod */
    {"ps, no data, double memory",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-0", "ps", 50, 0, "", 32 * GIB),
               STATUS("j-ps-1", "ps", 100, 1, "ne-9", 32 * GIB))},
     NOHIST,
     "ps",
     0,
     64 * GIB,
     "ps j-ps-1 OOMKilled (event ne-9), no runtime samples: PS memory 32.00GiB (requested at its "
     "node events) < 64GiB, so double it -> 64.00GiB."},
    /* no samples; 64G >= 64G -> count = 2 * 3 PS statuses = 6, memory kept */
    {"ps, no data, big PS: double count",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-0", "ps", 50, 0, "", 64 * GIB),
               STATUS("j-ps-1", "ps", 100, 1, "ne-9", 64 * GIB),
               STATUS("j-ps-2", "ps", 50, 0, "", 64 * GIB),
               STATUS("j-worker-0", "worker", 50, 0, "", 8 * GIB))},
     NOHIST,
     "ps",
     6,
     0,
     "PS memory 64.00GiB (requested at its node events) >= 64GiB, so double the PS count 3 -> 6."},
    /* newest sample r3 has no PS, r2 has: used 10G 6G 5G, avg 7G, (10-7)/10 = 0.3 > 0.2 ->
     * memory = 2 * 10G = 20G */
    {"ps, unbalanced: 2 x max used",
     "j-ps-0",
     {WINDOW(SAMPLE("r1", MPOD("j-ps-0", "ps", 1 * GIB, 0), MPOD("j-ps-1", "ps", GIB, 0)),
             SAMPLE("r2", MPOD("j-ps-0", "ps", 10 * GIB, 12 * GIB),
                    MPOD("j-ps-1", "ps", 6 * GIB, 12 * GIB),
                    MPOD("j-ps-2", "ps", 5 * GIB, 12 * GIB),
                    MPOD("j-worker-0", "worker", 30 * GIB, 32 * GIB)),
             SAMPLE("r3", MPOD("j-worker-0", "worker", 30 * GIB, 32 * GIB))),
      STATUSES(STATUS("j-ps-0", "ps", 100, 1, "ne-3", 12 * GIB))},
     NOHIST,
     "ps",
     0,
     20 * GIB,
     "sample r2 shows 3 PS with memory used max 10.00GiB avg 7.00GiB, (max-avg)/max=0.30 > 0.2 "
     "(unbalanced), so memory=2*max=20.00GiB."},
    /* used 10G 6G 8G: avg 8G, (10-8)/10 = 0.2 exactly, not > 0.2 -> count 2*3 = 6 */
    {"ps, balanced at the 0.2 edge: double count",
     "j-ps-2",
     {WINDOW(SAMPLE("r1", MPOD("j-ps-0", "ps", 10 * GIB, 12 * GIB),
                    MPOD("j-ps-1", "ps", 6 * GIB, 12 * GIB),
                    MPOD("j-ps-2", "ps", 8 * GIB, 12 * GIB)))},
     NOHIST,
     "ps",
     6,
     0,
     "ps j-ps-2 OOMKilled (event unknown): sample r1 shows 3 PS with memory used max 10.00GiB avg "
     "8.00GiB, balanced, so double the PS count 3 -> 6."},
    /* no PS usage figures (max 0): not unbalanced -> count 2*2 = 4 */
    {"ps, samples without usage: double count",
     "j-ps-0",
     {WINDOW(SAMPLE("r1", MPOD("j-ps-0", "ps", 0, 8 * GIB), MPOD("j-ps-1", "ps", 0, 8 * GIB)))},
     NOHIST,
     "ps",
     4,
     0,
     "ps j-ps-0 OOMKilled (event unknown): sample r1 shows 2 PS with memory used max 0.00GiB avg "
     "0.00GiB, balanced, so double the PS count 2 -> 4."},
    /* no samples; the node events tell of no PS (only a worker) and nothing of
     * the OOM'd one: type from its name, 1 PS, size assumed 16G < 64G -> 32G */
    {"ps, no data, no PS at node events: assumed size",
     "j-ps-0",
     {STATUSES(STATUS("j-worker-0", "worker", 50, 0, "", 8 * GIB))},
     NOHIST,
     "ps",
     0,
     32 * GIB,
     "ps j-ps-0 OOMKilled (event unknown), no runtime samples: PS memory 16.00GiB (unknown, "
     "assumed the cold-start size) < 64GiB, so double it -> 32.00GiB."},
    /* its node event has no type (type from the name): no PS counted, taken as
     * 1; 64G >= 64G -> count 2*1 = 2 */
    {"ps, no data, node event without a type: one PS",
     "j-ps-0",
     {STATUSES(STATUS("j-ps-0", "", 100, 1, "ne-9", 64 * GIB))},
     NOHIST,
     "ps",
     2,
     0,
     "ps j-ps-0 OOMKilled (event ne-9), no runtime samples: PS memory 64.00GiB (requested at its "
     "node events) >= 64GiB, so double the PS count 1 -> 2."},
    /* the request names j-ps-2, which has no node event: j-ps-0 and j-ps-1
     * are counted at node events, j-ps-2 counts too -> 3 PS; the largest PS
     * request there is 64G >= 64G -> count 2*3 = 6 */
    {"ps, no data, OOM'd PS without node events: counted with the others",
     "j-ps-2",
     {STATUSES(STATUS("j-ps-0", "ps", 50, 0, "", 64 * GIB),
               STATUS("j-ps-1", "ps", 50, 1, "ne-1", 32 * GIB))},
     NOHIST,
     "ps",
     6,
     0,
     "ps j-ps-2 OOMKilled (event unknown), no runtime samples: PS memory 64.00GiB (largest PS "
     "request at node events) >= 64GiB, so double the PS count 3 -> 6."},
    /* the OOM'd PS has no request at its node events: the largest PS request
     * there, max(20G, 24G, 16G) = 24G (the worker's 40G is not a PS) -> 48G */
    {"ps, no data, no request of its own: the largest PS request",
     "j-ps-1",
     {STATUSES(
         STATUS("j-ps-0", "ps", 50, 0, "", 20 * GIB), STATUS("j-ps-1", "ps", 100, 1, "ne-9", 0),
         STATUS("j-worker-0", "worker", 50, 0, "", 40 * GIB),
         STATUS("j-ps-2", "ps", 50, 0, "", 24 * GIB), STATUS("j-ps-3", "ps", 50, 0, "", 16 * GIB))},
     NOHIST,
     "ps",
     0,
     48 * GIB,
     "ps j-ps-1 OOMKilled (event ne-9), no runtime samples: PS memory 24.00GiB (largest PS request "
     "at node events) < 64GiB, so double it -> 48.00GiB."},
    /* no node event for the OOM'd PS (type from the name): max(12G, 20G) = 20G -> 40G */
    {"ps, no data, no node event of its own: the largest PS request",
     "j-ps-2",
     {STATUSES(STATUS("j-ps-0", "ps", 50, 0, "", 12 * GIB),
               STATUS("j-ps-1", "ps", 50, 0, "", 20 * GIB))},
     NOHIST,
     "ps",
     0,
     40 * GIB,
     "ps j-ps-2 OOMKilled (event unknown), no runtime samples: PS memory 20.00GiB (largest PS "
     "request at node events) < 64GiB, so double it -> 40.00GiB."},
};

static void plan_free(dlb_plan_t *plan)
{
    free(plan->groups);
    free(plan->pods);
    memset(plan, 0, sizeof(*plan));
}

static void test_oom_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(oom_cases) / sizeof(oom_cases[0]); i++) {
        const oom_case_t *c = &oom_cases[i];
        dlb_plan_request_t req = {
            .event_id = "req-9", .job_uid = "j", .stage = "job_stage_running"};
        dlb_opt_input_t in = {.req = &req, .job = &c->job, .history = &c->history};
        dlb_plan_t plan = {0};

        print_message("case %s\n", c->name);
        if (c->oom_pod) {
            req.has_oom_pod = 1;
            snprintf(req.oom_pod, sizeof(req.oom_pod), "%s", c->oom_pod);
        }
        assert_int_equal(dlb_opt_oom(&in, &plan), 0);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        if (!c->group) {
            assert_int_equal(plan.groups_cnt, 0);
            assert_int_equal(plan.pods_cnt, 0);
            plan_free(&plan);
            continue;
        }
        assert_int_equal(plan.groups_cnt, 1);
        assert_string_equal(plan.groups[0].group, c->group);
        assert_int_equal(plan.groups[0].count, c->count);
        assert_true(plan.groups[0].resource.cpu == 0); /* keep */
        assert_int_equal(plan.groups[0].resource.memory, c->memory);
        if (c->memory) {
            /* the OOM pod itself gets the same memory */
            assert_int_equal(plan.pods_cnt, 1);
            assert_string_equal(plan.pods[0].name, c->oom_pod ? c->oom_pod : plan.pods[0].name);
            assert_non_null(strstr(plan.reason, plan.pods[0].name));
            assert_true(plan.pods[0].resource.cpu == 0);
            assert_int_equal(plan.pods[0].resource.memory, c->memory);
        } else {
            assert_int_equal(plan.pods_cnt, 0);
        }
        plan_free(&plan);
    }
}

/* Asking again for the same OOM after the pod was relaunched bigger (newer
 * sample requests 21179869184) gives the same memory: the base is the request
 * at the OOM node event, not the newest sample (DLRover issue #302). */
static void test_oom_idempotent(void **state)
{
    dlb_job_state_t job = {
        STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB)),
        WINDOW(SAMPLE("w-r9", MPOD("j-worker-1", "worker", 3 * GIB, 16 * GIB + STEP)))};
    static const dlb_history_t none = {0};
    dlb_plan_request_t req = {.event_id = "req-10", .stage = "job_stage_running"};
    dlb_opt_input_t in = {.req = &req, .job = &job, .history = &none};
    dlb_plan_t plan = {0};

    (void)state;
    assert_int_equal(dlb_opt_oom(&in, &plan), 0);
    assert_int_equal(plan.groups[0].resource.memory, 16 * GIB + STEP);
    plan_free(&plan);
}

/* plan_request v2: a request naming several OOM pods (DLRover can) gets one
 * plan answering each of them as it answers one, in name order whatever the
 * order of the request; a group gets the largest of its pods' memories. */
static void test_oom_several_pods(void **state)
{
    /* pods sorted by name, as a job state keeps them */
    dlb_job_state_t job = {STATUSES(STATUS("j-ps-1", "ps", 120, 1, "ne-9", 32 * GIB),
                                    STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB),
                                    STATUS("j-worker-3", "worker", 110, 1, "ne-8", 20 * GIB))};
    static const dlb_history_t none = {0};
    static char *const orders[2][4] = {{"j-worker-3", "j-ps-1", "j-worker-1", "j-worker-3"},
                                       {"j-worker-1", "j-worker-3", "j-ps-1", NULL}};
    static const char *const pods[] = {"j-ps-1", "j-worker-1", "j-worker-3"};
    static const char *const events[] = {"ne-9", "ne-7", "ne-8"};
    const int64_t memory[] = {64 * GIB, 16 * GIB + STEP, 20 * GIB + STEP};
    char first_reason[sizeof(((dlb_plan_t *)0)->reason)] = "";

    (void)state;
    for (int o = 0; o < 2; o++) {
        dlb_plan_request_t req = {.event_id = "req-9",
                                  .job_uid = "j",
                                  .stage = "job_stage_running",
                                  .has_oom_pod = 1,
                                  .oom_pods = (char **)orders[o],
                                  .oom_pods_cnt = o ? 3 : 4};
        dlb_oom_answers_t answered = {0};
        dlb_opt_input_t in = {.req = &req, .job = &job, .history = &none, .answered = &answered};
        dlb_plan_t plan = {.plan_id = "plan-req-9"};

        snprintf(req.oom_pod, sizeof(req.oom_pod), "%s", orders[o][0]);
        assert_true(dlb_needs_oom_dlrover(&in));
        assert_int_equal(dlb_opt_oom(&in, &plan), 0);
        print_message("  %s\n", plan.reason);
        assert_non_null(strstr(plan.reason, "The request names 3 OOM pods, each answered:"));
        /* ps: no samples, 32G < 64G: doubled, the PS group and pod */
        assert_int_equal(plan.groups_cnt, 2);
        assert_string_equal(plan.groups[0].group, "ps");
        assert_int_equal(plan.groups[0].resource.memory, 64 * GIB);
        assert_string_equal(plan.groups[1].group, "worker");
        assert_int_equal(plan.groups[1].resource.memory, 20 * GIB + STEP); /* the larger */
        assert_int_equal(plan.pods_cnt, 3);
        assert_int_equal(answered.cnt, 3);
        for (size_t i = 0; i < 3; i++) {
            assert_string_equal(plan.pods[i].name, pods[i]);
            assert_int_equal(plan.pods[i].resource.memory, memory[i]);
            assert_non_null(strstr(plan.reason, pods[i]));
            assert_string_equal(answered.items[i].pod_name, pods[i]);
            assert_string_equal(answered.items[i].oom_event_id, events[i]);
            assert_string_equal(answered.items[i].plan_id, "plan-req-9");
            assert_int_equal(answered.items[i].memory, memory[i]);
        }
        /* the same plan for the other order */
        if (!o)
            snprintf(first_reason, sizeof(first_reason), "%s", plan.reason);
        else
            assert_string_equal(plan.reason, first_reason);
        free(answered.items);
        plan_free(&plan);
    }
}

/* oom_pods alone (without oom_pod, as no writer should send it) still names
 * the pods; oom_pod alone (an older writer) answers that one pod as ever. */
static void test_oom_pods_without_oom_pod(void **state)
{
    dlb_job_state_t job = {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 16 * GIB))};
    static const dlb_history_t none = {0};
    char *one[] = {"j-worker-1"};
    dlb_plan_request_t req = {.stage = "job_stage_create", .oom_pods = one, .oom_pods_cnt = 1};
    dlb_opt_input_t in = {.req = &req, .job = &job, .history = &none};
    dlb_plan_t a = {0}, b = {0};

    (void)state;
    assert_true(dlb_req_names_oom(&req));
    assert_true(dlb_needs_oom_dlrover(&in)); /* even at create */
    assert_int_equal(dlb_opt_oom(&in, &a), 0);
    req.oom_pods_cnt = 0;
    req.has_oom_pod = 1;
    snprintf(req.oom_pod, sizeof(req.oom_pod), "j-worker-1");
    assert_int_equal(dlb_opt_oom(&in, &b), 0);
    assert_string_equal(a.reason, b.reason);
    assert_null(strstr(a.reason, "OOM pods, each answered"));
    assert_int_equal(a.pods_cnt, 1);
    assert_memory_equal(a.pods, b.pods, sizeof(*a.pods));
    assert_memory_equal(a.groups, b.groups, sizeof(*a.groups));
    plan_free(&a);
    plan_free(&b);
}

/* The history's OOM memory: each pod's usage in the newest sample naming it
 * (the first of a name repeated in a sample), x 1.2 for a pod OOMKilled in
 * that job, pods counted once per job; other types left out. */
static void test_oom_history_memory(void **unused)
{
    dlb_pod_usage_t old[] = {MPOD("a", "worker", 9 * GIB, 0), MPOD("b", "worker", GIB, 0),
                             MPOD("p", "ps", 20 * GIB, 0)};
    dlb_pod_usage_t mid[] = {MPOD("b", "worker", 5 * GIB, 0), MPOD("c", "worker", 3 * GIB, 0),
                             MPOD("c", "worker", 8 * GIB, 0)};
    dlb_pod_usage_t new[] = {MPOD("a", "worker", 1 * GIB, 0)};
    dlb_runtime_sample_t samples[] = {
        {.pods = old, .pods_cnt = 3}, {.pods = mid, .pods_cnt = 3}, {.pods = new, .pods_cnt = 1}};
    char oom[][DLB_ID_MAX] = {"zz", "b"};
    dlb_hist_job_t jobs[] = {
        {.samples = samples, .samples_cnt = 3, .oom_pods = oom, .oom_pods_cnt = 2},
        {.samples = samples + 1, .samples_cnt = 1}};
    dlb_history_t h = {.jobs = jobs, .jobs_cnt = 1}, second = {.jobs = jobs + 1, .jobs_cnt = 1};
    int64_t max_mem;
    size_t pods;
    (void)unused;

    /* a: 1 GiB (its newest, not 9), b: 5 GiB x 1.2 (OOMKilled), c: 3 GiB (the
     * first of its sample, not 8) */
    assert_int_equal(dlb_oom_history_memory(&h, "worker", &max_mem, &pods), 0);
    assert_int_equal(pods, 3);
    assert_int_equal(max_mem, 6 * GIB);
    /* the same sample in a job where b was no OOM: 5 GiB */
    assert_int_equal(dlb_oom_history_memory(&second, "worker", &max_mem, &pods), 0);
    assert_int_equal(pods, 2);
    assert_int_equal(max_mem, 5 * GIB);
    /* both jobs: pods counted per job */
    h.jobs_cnt = 2;
    assert_int_equal(dlb_oom_history_memory(&h, "worker", &max_mem, &pods), 0);
    assert_int_equal(pods, 5);
    assert_int_equal(max_mem, 6 * GIB);
    assert_int_equal(dlb_oom_history_memory(&h, "ps", &max_mem, &pods), 0);
    assert_int_equal(pods, 1);
    assert_int_equal(max_mem, 20 * GIB);
    assert_int_equal(dlb_oom_history_memory(&h, "chief", &max_mem, &pods), 0);
    assert_int_equal(pods, 0);
    assert_int_equal(max_mem, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_table),
        cmocka_unit_test(test_oom_history_memory),
        cmocka_unit_test(test_oom_idempotent),
        cmocka_unit_test(test_oom_several_pods),
        cmocka_unit_test(test_oom_pods_without_oom_pod),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
