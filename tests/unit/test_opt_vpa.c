/* The dlbrain set's OOM plan (dlb_opt_oom_vpa): one answer per OOM event, VPA
 * growth within DLRover's caps, a history floor for workers; and the answers
 * DLRover's dlb_opt_oom reports. Each expected value worked out by hand. */
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
#include "routes.h"

#define STEP ((int64_t)4000000000) /* DLRover's OOM step: 4e9 bytes */

/* One worker OOMKilled at event ne-7 with req bytes requested. */
#define W1_OOM(req) STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", req))

typedef struct vpa_case {
    const char *name;
    const char *oom_pod; /* request's oom_pod, NULL = none */
    dlb_job_state_t job;
    dlb_history_t history;
    const dlb_oom_plan_t *answers; /* in->oom_plans */
    size_t answers_cnt;
    const char *group;          /* expected group entry, NULL = none */
    const char *pod;            /* expected pod entry, NULL = none */
    int64_t memory;             /* of both entries */
    const char *answered_event; /* in->answered's OOM event; NULL = left untouched */
    const char *reason;         /* expected substring */
} vpa_case_t;

static const vpa_case_t vpa_cases[] = {
    /* peak = max(used peak 9G, request at the OOM 10G) = 10G;
     * VPA = max(ceil(10G * 6/5) = 12884901888, 10G + 100MiB = 10842275840) = 12884901888;
     * cap = min(max(min(2*10G, 64G), 10G), 10G + 8G) = 18G -> 12884901888 (12.00GiB) */
    {"first bump: the request at the OOM is the peak",
     "j-worker-1",
     {W1_OOM(10 * GIB), WINDOW(SAMPLE("r1", MPOD("j-worker-1", "worker", 6 * GIB, 10 * GIB)),
                               SAMPLE("r2", MPOD("j-worker-1", "worker", 9 * GIB, 10 * GIB)))},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     12884901888,
     "ne-7",
     "worker j-worker-1 OOMKilled (event ne-7), first answer: peak 10.00GiB = max(used peak "
     "9.00GiB over 2 samples, current 10.00GiB (requested at its node events)); VPA max(peak*1.2, "
     "peak+100MiB)=12.00GiB, cap min(max(min(2*cur,64GiB),cur),cur+8GiB)=18.00GiB, history floor "
     "0.00GiB (0 worker pods of 0 jobs): memory=12.00GiB for the worker group and pod."},
    /* the request has an OOM pod field, but empty: the job's OOM pod, as the
     * first case -> 12884901888 */
    {"an empty pod name in the request: the job's OOM pod",
     "",
     {W1_OOM(10 * GIB)},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     12884901888,
     "ne-7",
     "worker j-worker-1 OOMKilled (event ne-7), first answer: peak 10.00GiB"},
    /* peak = used 12G > request 8G; VPA = ceil(12884901888 * 6/5) = ceil(15461882265.6) =
     * 15461882266; cap = min(max(min(16G, 64G), 8G), 8G + 8G) = 16G -> 15461882266 */
    {"first bump: used peak above the request",
     NULL,
     {W1_OOM(8 * GIB), WINDOW(SAMPLE("r1", MPOD("j-worker-1", "worker", 12 * GIB, 8 * GIB)))},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     15461882266,
     "ne-7",
     "peak 12.00GiB = max(used peak 12.00GiB over 1 samples, current 8.00GiB"},
    /* Rising 4096, 4608, 5120, 5632 MiB a minute apart at the 10G request it OOMed at:
     * Sxy / Sxx = 512 MiB/min; at the newest sample + 1800 s (the request, at 9 s, is older):
     * 5632 + 512 * 30 = 20992 MiB (20.50GiB) > the peak 10G, so the need is that; VPA
     * 20992 * 1.2 = 25190.4 MiB (24.60GiB), cap min(20G, 10G + 8G) = 18G -> 18G, where the
     * 20% bump of the peak alone (12G) would be outgrown within 13 minutes */
    {"growth-aware: a rising pod gets its need at the horizon",
     "j-worker-1",
     {W1_OOM(10 * GIB),
      WINDOW(TSAMPLE("r1", 0, 1, MPOD("j-worker-1", "worker", 4096 * MIB, 10 * GIB)),
             TSAMPLE("r2", 60, 2, MPOD("j-worker-1", "worker", 4608 * MIB, 10 * GIB)),
             TSAMPLE("r3", 120, 3, MPOD("j-worker-1", "worker", 5120 * MIB, 10 * GIB)),
             TSAMPLE("r4", 180, 4, MPOD("j-worker-1", "worker", 5632 * MIB, 10 * GIB)))},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     18 * GIB,
     "ne-7",
     "peak 10.00GiB = max(used peak 5.50GiB over 4 samples, current 10.00GiB (requested at its "
     "node events)); rising 512.0MiB/min over 4 samples at that request: 20.50GiB in 1800s, the "
     "need to grow for; VPA max(peak*1.2, peak+100MiB)=24.60GiB, cap "
     "min(max(min(2*cur,64GiB),cur),cur+8GiB)=18.00GiB"},
    /* 256MiB: x1.2 = ceil(322122547.2) = 322122548 < 256MiB + 100MiB = 356MiB = 373293056;
     * cap = min(max(min(512MiB, 64G), 256MiB), 256MiB + 8G) = 512MiB -> 373293056 */
    {"+100MiB beats x1.2 on a small pod",
     "j-worker-1",
     {W1_OOM(256 * MIB)},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     373293056,
     "ne-7",
     "VPA max(peak*1.2, peak+100MiB)=0.35GiB"},
    /* peak 3G (used) over request 1G: VPA = ceil(3G * 1.2) = 3865470567;
     * cap = min(max(min(2G, 64G), 1G), 1G + 8G) = 2G -> 2147483648 (at most double) */
    {"cap: at most double",
     "j-worker-1",
     {W1_OOM(GIB), WINDOW(SAMPLE("r1", MPOD("j-worker-1", "worker", 3 * GIB, GIB)))},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     2 * GIB,
     "ne-7",
     "VPA max(peak*1.2, peak+100MiB)=3.60GiB, cap min(max(min(2*cur,64GiB),cur),cur+8GiB)="
     "2.00GiB"},
    /* 48G: VPA 57.6G; cap = min(max(min(96G, 64G), 48G), 48G + 8G) = 56G = 60129542144 */
    {"cap: at most +8GiB",
     "j-worker-1",
     {W1_OOM(48 * GIB)},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     56 * GIB,
     "ne-7",
     "cap min(max(min(2*cur,64GiB),cur),cur+8GiB)=56.00GiB"},
    /* 60G: VPA 72G; cap = min(max(min(120G, 64G), 60G), 68G) = 64G = 68719476736 */
    {"cap: not past 64GiB by growth",
     "j-worker-1",
     {W1_OOM(60 * GIB)},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     64 * GIB,
     "ne-7",
     "memory=64.00GiB for the worker group and pod"},
    /* 70G: VPA 84G; cap = min(max(min(140G, 64G), 70G), 78G) = 70G: no growth, never less */
    {"cap: above 64GiB, no growth but no shrink",
     "j-worker-1",
     {W1_OOM(70 * GIB)},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     70 * GIB,
     "ne-7",
     "cap min(max(min(2*cur,64GiB),cur),cur+8GiB)=70.00GiB"},
    /* VPA 12G (as the first case) < history floor 24G (OOM'd h2 pod, x1.2) -> 25769803776 */
    {"history floor",
     "j-worker-1",
     {W1_OOM(10 * GIB)},
     HIST_WITH_OOM,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     24 * GIB,
     "ne-7",
     "history floor 24.00GiB (3 worker pods of 2 jobs): memory=24.00GiB"},
    /* ne-7 was answered by plan-b with 12884901888: the same again, although the
     * relaunched pod now requests 12G and uses 11G (a bump would give 14.4G) */
    {"repeat: the same OOM is not bumped twice",
     "j-worker-1",
     {W1_OOM(10 * GIB), WINDOW(SAMPLE("r9", MPOD("j-worker-1", "worker", 11 * GIB, 12 * GIB)))},
     NOHIST,
     ANSWERS(ANSWER("j-worker-1", "ne-6", "plan-a", 11 * GIB),
             ANSWER("j-worker-1", "ne-7", "plan-b", 12884901888)),
     "worker",
     "j-worker-1",
     12884901888,
     NULL,
     "OOM of worker j-worker-1 (event ne-7) was answered by plan plan-b: memory 12.00GiB again, no "
     "second bump for the same OOM (DLRover issue #302)."},
    /* only ne-6 was answered; ne-7 is a new OOM of the pod relaunched at 12G:
     * VPA = ceil(12G * 1.2) = 15461882266; cap = min(24G, 12G + 8G = 20G) -> 15461882266 */
    {"a new OOM of an answered pod bumps again",
     "j-worker-1",
     {W1_OOM(12 * GIB)},
     NOHIST,
     ANSWERS(ANSWER("j-worker-1", "ne-6", "plan-a", 12 * GIB)),
     "worker",
     "j-worker-1",
     15461882266,
     "ne-7",
     "worker j-worker-1 OOMKilled (event ne-7), first answer"},
    /* PS: peak = request 16G > used 14G; VPA = ceil(16G * 1.2) = ceil(20615843020.8) =
     * 20615843021; cap = min(32G, 16G + 8G = 24G) -> 20615843021 for the pod only; the 90G
     * PS of the history is no floor */
    {"PS: per pod, no history floor",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-0", "ps", 50, 0, "", 16 * GIB),
               STATUS("j-ps-1", "ps", 100, 1, "ne-9", 16 * GIB)),
      WINDOW(SAMPLE("r1", MPOD("j-ps-0", "ps", 10 * GIB, 16 * GIB),
                    MPOD("j-ps-1", "ps", 14 * GIB, 16 * GIB)))},
     HIST_WITH_OOM,
     NO_ANSWERS,
     NULL,
     "j-ps-1",
     20615843021,
     "ne-9",
     "ps j-ps-1 OOMKilled (event ne-9), first answer: peak 16.00GiB = max(used peak 14.00GiB over "
     "1 samples, current 16.00GiB (requested at its node events)); VPA max(peak*1.2, "
     "peak+100MiB)=19.20GiB, cap min(max(min(2*cur,64GiB),cur),cur+8GiB)=24.00GiB: "
     "memory=19.20GiB for the PS pod only."},
    {"PS: repeat",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-1", "ps", 100, 1, "ne-9", 16 * GIB))},
     NOHIST,
     ANSWERS(ANSWER("j-ps-1", "ne-9", "plan-c", 20615843021)),
     NULL,
     "j-ps-1",
     20615843021,
     NULL,
     "was answered by plan plan-c: memory 19.20GiB again"},
    /* an earlier answer that only changed the PS count (DLRover set): nothing more */
    {"repeat of an answer without memory",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-1", "ps", 100, 1, "ne-9", 64 * GIB))},
     NOHIST,
     ANSWERS(ANSWER("j-ps-1", "ne-9", "plan-d", 0)),
     NULL,
     NULL,
     0,
     NULL,
     "OOM of ps j-ps-1 (event ne-9) was answered by plan plan-d without a memory change"},
    /* worker-0's OOM (newer, t 300) is answered, worker-1's (t 200) is not: worker-1,
     * 10G -> 12884901888 as in the first case */
    {"the unanswered OOM goes first",
     NULL,
     {STATUSES(STATUS("j-worker-0", "worker", 300, 1, "ne-3", 20 * GIB),
               STATUS("j-worker-1", "worker", 200, 1, "ne-2", 10 * GIB))},
     NOHIST,
     ANSWERS(ANSWER("j-worker-0", "ne-3", "plan-e", 24 * GIB)),
     "worker",
     "j-worker-1",
     12884901888,
     "ne-2",
     "worker j-worker-1 OOMKilled (event ne-2), first answer"},
    /* the same, the unanswered OOM listed first: the answered worker-0 (newer)
     * seen after it does not replace it */
    {"the unanswered OOM goes first, listed first",
     NULL,
     {STATUSES(STATUS("j-worker-1", "worker", 200, 1, "ne-2", 10 * GIB),
               STATUS("j-worker-0", "worker", 300, 1, "ne-3", 20 * GIB))},
     NOHIST,
     ANSWERS(ANSWER("j-worker-0", "ne-3", "plan-e", 24 * GIB)),
     "worker",
     "j-worker-1",
     12884901888,
     "ne-2",
     "worker j-worker-1 OOMKilled (event ne-2), first answer"},
    /* both answered (called without the router): the newest repeats its answer */
    {"all answered: the newest repeats",
     NULL,
     {STATUSES(STATUS("j-worker-0", "worker", 300, 1, "ne-3", 20 * GIB),
               STATUS("j-worker-1", "worker", 200, 1, "ne-2", 10 * GIB))},
     NOHIST,
     ANSWERS(ANSWER("j-worker-1", "ne-2", "plan-f", 12 * GIB),
             ANSWER("j-worker-0", "ne-3", "plan-e", 24 * GIB)),
     "worker",
     "j-worker-0",
     24 * GIB,
     NULL,
     "answered by plan plan-e: memory 24.00GiB again"},
    /* nothing known: type from the name, current = peak = 16G cold start;
     * VPA = ceil(16G * 1.2) = 20615843021 < cap 24G; no event id, so no answer record */
    {"nothing known: cold-start size", "train-job-worker-3", NOJOB, NOHIST, NO_ANSWERS, "worker",
     "train-job-worker-3", 20615843021, NULL,
     "worker train-job-worker-3 OOMKilled (event unknown), first answer: peak 16.00GiB = max(used "
     "peak 0.00GiB over 0 samples, current 16.00GiB (unknown, assumed the cold-start size))"},
    /* node events without a request: the newest sample's (r3: 9G; r2 lacks the
     * pod); used peak 6G (r1) over 2 samples. peak = max(6G, 9G) = 9G;
     * VPA = max(ceil(9663676416 * 6/5) = ceil(11596411699.2) = 11596411700,
     * 9G + 100MiB = 9768534016) = 11596411700; cap = min(max(min(18G, 64G), 9G),
     * 9G + 8G) = 17G -> 11596411700 (10.80GiB) */
    {"request from the newest sample when node events carry none",
     "j-worker-1",
     {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 0)),
      WINDOW(SAMPLE("r1", MPOD("j-worker-1", "worker", 6 * GIB, 8 * GIB)),
             SAMPLE("r2", MPOD("j-ps-0", "ps", GIB, 2 * GIB)),
             SAMPLE("r3", MPOD("j-worker-1", "worker", 5 * GIB, 9 * GIB)))},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-1",
     11596411700,
     "ne-7",
     "worker j-worker-1 OOMKilled (event ne-7), first answer: peak 9.00GiB = max(used peak "
     "6.00GiB over 2 samples, current 9.00GiB (requested in its newest runtime sample)); VPA "
     "max(peak*1.2, peak+100MiB)=10.80GiB, cap min(max(min(2*cur,64GiB),cur),cur+8GiB)=17.00GiB, "
     "history floor 0.00GiB (0 worker pods of 0 jobs): memory=10.80GiB for the worker group and "
     "pod."},
    /* no node event, no request in the samples: current = peak = used 7G;
     * VPA = ceil(7516192768 * 6/5) = ceil(9019431321.6) = 9019431322; cap = min(14G, 15G) */
    {"request unknown: the used peak is current",
     "j-worker-2",
     {WINDOW(SAMPLE("r1", MPOD("j-worker-2", "worker", 5 * GIB, 0)),
             SAMPLE("r2", MPOD("j-worker-2", "worker", 7 * GIB, 0)))},
     NOHIST,
     NO_ANSWERS,
     "worker",
     "j-worker-2",
     9019431322,
     NULL,
     "current 7.00GiB (its used peak, request unknown)"},
    {"no OOM pod: nothing to change",
     NULL,
     {STATUSES(STATUS("j-worker-0", "worker", 100, 0, "", 16 * GIB))},
     NOHIST,
     NO_ANSWERS,
     NULL,
     NULL,
     0,
     NULL,
     "no OOM pod in the request or the job state"},
    {"unknown type: nothing to change", "mystery", NOJOB, NOHIST, NO_ANSWERS, NULL, NULL, 0, NULL,
     "its type is unknown"},
};

static void test_vpa_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(vpa_cases) / sizeof(vpa_cases[0]); i++) {
        const vpa_case_t *c = &vpa_cases[i];
        dlb_plan_request_t req = {.event_id = "req-9",
                                  .event_time_ms = 9000,
                                  .job_uid = "j",
                                  .stage = "job_stage_running"};
        dlb_oom_answers_t answered = {0};
        dlb_opt_input_t in = {.req = &req,
                              .job = &c->job,
                              .history = &c->history,
                              .oom_plans = c->answers,
                              .oom_plans_cnt = c->answers_cnt,
                              .answered = &answered};
        dlb_plan_t plan = {.plan_id = "plan-req-9", .event_time_ms = 9000};

        print_message("case %s\n", c->name);
        if (c->oom_pod) {
            req.has_oom_pod = 1;
            snprintf(req.oom_pod, sizeof(req.oom_pod), "%s", c->oom_pod);
        }
        assert_int_equal(dlb_opt_oom_vpa(&in, &plan), 0);
        if (!strstr(plan.reason, c->reason)) {
            print_error("reason \"%s\" lacks \"%s\"\n", plan.reason, c->reason);
            fail();
        }
        if (c->group) {
            assert_int_equal(plan.groups_cnt, 1);
            assert_string_equal(plan.groups[0].group, c->group);
            assert_int_equal(plan.groups[0].count, 0);
            assert_true(plan.groups[0].resource.cpu == 0);
            assert_int_equal(plan.groups[0].resource.memory, c->memory);
        } else {
            assert_int_equal(plan.groups_cnt, 0);
        }
        if (c->pod) {
            assert_int_equal(plan.pods_cnt, 1);
            assert_string_equal(plan.pods[0].name, c->pod);
            assert_true(plan.pods[0].resource.cpu == 0);
            assert_int_equal(plan.pods[0].resource.memory, c->memory);
        } else {
            assert_int_equal(plan.pods_cnt, 0);
        }
        assert_int_equal(plan.actions_cnt, 0);
        if (c->answered_event) {
            assert_int_equal(answered.cnt, 1);
            assert_string_equal(answered.items[0].pod_name, c->pod);
            assert_string_equal(answered.items[0].oom_event_id, c->answered_event);
            assert_string_equal(answered.items[0].plan_id, "plan-req-9");
            assert_int_equal(answered.items[0].memory, c->memory);
            assert_int_equal(answered.items[0].event_time_ms, 9000);
        } else {
            assert_int_equal(answered.cnt, 0);
        }
        free(answered.items);
        fixture_plan_free(&plan);
    }
}

/* answered may be NULL: the plan is the same. */
static void test_vpa_no_answered_out(void **state)
{
    dlb_job_state_t job = {W1_OOM(10 * GIB)};
    static const dlb_history_t none = {0};
    dlb_plan_request_t req = {.event_id = "req-1", .stage = "job_stage_running"};
    dlb_opt_input_t in = {.req = &req, .job = &job, .history = &none};
    dlb_plan_t plan = {0};

    (void)state;
    assert_int_equal(dlb_opt_oom_vpa(&in, &plan), 0);
    assert_int_equal(plan.pods[0].resource.memory, 12884901888);
    fixture_plan_free(&plan);
}

/* DLRover's OOM optimizer reports its answers too (without idempotency). */
typedef struct dlrover_case {
    const char *name;
    const char *oom_pod;
    dlb_job_state_t job;
    const char *answered_event; /* NULL = untouched */
    int64_t memory;
} dlrover_case_t;

static const dlrover_case_t dlrover_cases[] = {
    /* 16G + 4e9, the same on every request for ne-7 */
    {"worker", "j-worker-1", {W1_OOM(16 * GIB)}, "ne-7", 16 * GIB + STEP},
    /* no samples, 32G < 64G: 64G for the PS */
    {"ps, double memory",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-1", "ps", 100, 1, "ne-9", 32 * GIB))},
     "ne-9",
     64 * GIB},
    /* no samples, 64G: the PS count doubles, memory kept: answered with 0 */
    {"ps, double count",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-1", "ps", 100, 1, "ne-9", 64 * GIB))},
     "ne-9",
     0},
    /* balanced PS samples: count doubles, memory 0 */
    {"ps, balanced samples",
     "j-ps-1",
     {STATUSES(STATUS("j-ps-1", "ps", 100, 1, "ne-9", 12 * GIB)),
      WINDOW(SAMPLE("r1", MPOD("j-ps-0", "ps", 10 * GIB, 12 * GIB),
                    MPOD("j-ps-1", "ps", 9 * GIB, 12 * GIB)))},
     "ne-9",
     0},
    /* unbalanced: 10G, 6G, 5G -> (10-7)/10 = 0.3 > 0.2 -> 2 * 10G */
    {"ps, unbalanced samples",
     "j-ps-0",
     {STATUSES(STATUS("j-ps-0", "ps", 100, 1, "ne-4", 12 * GIB)),
      WINDOW(SAMPLE("r1", MPOD("j-ps-0", "ps", 10 * GIB, 12 * GIB),
                    MPOD("j-ps-1", "ps", 6 * GIB, 12 * GIB),
                    MPOD("j-ps-2", "ps", 5 * GIB, 12 * GIB)))},
     "ne-4",
     20 * GIB},
    /* no node event: no OOM event id to key an answer by */
    {"unknown event", "train-job-worker-3", NOJOB, NULL, 0},
    {"no OOM", NULL, NOJOB, NULL, 0},
};

static void test_dlrover_oom_answered(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(dlrover_cases) / sizeof(dlrover_cases[0]); i++) {
        const dlrover_case_t *c = &dlrover_cases[i];
        static const dlb_history_t none = {0};
        dlb_plan_request_t req = {.event_id = "req-3", .stage = "job_stage_running"};
        dlb_oom_answers_t answered = {0};
        dlb_opt_input_t in = {.req = &req, .job = &c->job, .history = &none, .answered = &answered};
        dlb_plan_t plan = {.plan_id = "plan-req-3", .event_time_ms = 77};

        print_message("case %s\n", c->name);
        if (c->oom_pod) {
            req.has_oom_pod = 1;
            snprintf(req.oom_pod, sizeof(req.oom_pod), "%s", c->oom_pod);
        }
        assert_int_equal(dlb_opt_oom(&in, &plan), 0);
        if (c->answered_event) {
            assert_int_equal(answered.cnt, 1);
            assert_string_equal(answered.items[0].pod_name, c->oom_pod);
            assert_string_equal(answered.items[0].oom_event_id, c->answered_event);
            assert_string_equal(answered.items[0].plan_id, "plan-req-3");
            assert_int_equal(answered.items[0].event_time_ms, 77);
            assert_int_equal(answered.items[0].memory, c->memory);
        } else {
            assert_int_equal(answered.cnt, 0);
        }
        free(answered.items);
        fixture_plan_free(&plan);
    }
}

/* plan_request v2: several OOM pods, one already answered (its memory again,
 * no new row) and one new (VPA growth, one row); the worker group gets the
 * larger memory. 12G x 1.2 = 15461882265.6 -> 15461882266 (cap min(24G, 20G)). */
static void test_vpa_several_pods(void **state)
{
    dlb_job_state_t job = {STATUSES(STATUS("j-worker-1", "worker", 100, 1, "ne-7", 10 * GIB),
                                    STATUS("j-worker-2", "worker", 200, 1, "ne-8", 12 * GIB))};
    static const dlb_history_t none = {0};
    static const dlb_oom_plan_t earlier[] = {ANSWER("j-worker-1", "ne-7", "plan-b", 12 * GIB)};
    char *pods[] = {"j-worker-2", "j-worker-1"};
    dlb_plan_request_t req = {.event_id = "req-9",
                              .event_time_ms = 9000,
                              .job_uid = "j",
                              .stage = "job_stage_running",
                              .has_oom_pod = 1,
                              .oom_pod = "j-worker-2",
                              .oom_pods = pods,
                              .oom_pods_cnt = 2};
    dlb_oom_answers_t answered = {0};
    dlb_opt_input_t in = {.req = &req,
                          .job = &job,
                          .history = &none,
                          .oom_plans = earlier,
                          .oom_plans_cnt = 1,
                          .answered = &answered};
    dlb_plan_t plan = {.plan_id = "plan-req-9", .event_time_ms = 9000};

    (void)state;
    assert_true(dlb_needs_oom_dlbrain(&in));
    assert_int_equal(dlb_opt_oom_vpa(&in, &plan), 0);
    print_message("  %s\n", plan.reason);
    assert_non_null(strstr(plan.reason, "The request names 2 OOM pods, each answered: OOM of "
                                        "worker j-worker-1 (event ne-7) was answered by plan "
                                        "plan-b: memory 12.00GiB again"));
    assert_non_null(strstr(plan.reason, "worker j-worker-2 OOMKilled (event ne-8), first answer"));
    assert_int_equal(plan.groups_cnt, 1);
    assert_string_equal(plan.groups[0].group, "worker");
    assert_int_equal(plan.groups[0].resource.memory, 15461882266);
    assert_int_equal(plan.pods_cnt, 2);
    assert_string_equal(plan.pods[0].name, "j-worker-1");
    assert_int_equal(plan.pods[0].resource.memory, 12 * GIB);
    assert_string_equal(plan.pods[1].name, "j-worker-2");
    assert_int_equal(plan.pods[1].resource.memory, 15461882266);
    assert_int_equal(answered.cnt, 1);
    assert_string_equal(answered.items[0].pod_name, "j-worker-2");
    assert_string_equal(answered.items[0].oom_event_id, "ne-8");
    assert_int_equal(answered.items[0].memory, 15461882266);
    free(answered.items);
    fixture_plan_free(&plan);
}

/* A request naming no OOM pod (DLRover's master asks worker_initial so once
 * it has checked the job) answers every unanswered OOM of the job, each with
 * its own VPA, and records an answer for each; one already answered is left
 * out. Before, each such request answered the newest alone, and several of
 * one tick all picked the same pod. */
static void test_vpa_podless_answers_all(void **state)
{
    dlb_job_state_t job = {STATUSES(STATUS("j-worker-0", "worker", 300, 1, "ne-3", 10 * GIB),
                                    STATUS("j-worker-1", "worker", 200, 1, "ne-2", 10 * GIB),
                                    STATUS("j-worker-2", "worker", 100, 1, "ne-1", 10 * GIB),
                                    STATUS("j-worker-3", "worker", 50, 1, "ne-0", 10 * GIB))};
    static const dlb_history_t none = {0};
    dlb_oom_plan_t earlier[] = {ANSWER("j-worker-3", "ne-0", "plan-a", 12884901888)};
    dlb_plan_request_t req = {.event_id = "req-9",
                              .event_time_ms = 9000,
                              .job_uid = "j",
                              .stage = "job_stage_worker_initial"};
    dlb_oom_answers_t answered = {0};
    dlb_opt_input_t in = {.req = &req,
                          .job = &job,
                          .history = &none,
                          .oom_plans = earlier,
                          .oom_plans_cnt = 1,
                          .answered = &answered};
    dlb_plan_t plan = {.plan_id = "plan-req-9", .event_time_ms = 9000};

    (void)state;
    assert_int_equal(dlb_opt_oom_vpa(&in, &plan), 0);
    if (!strstr(plan.reason, "the job has 3 unanswered OOMs, each answered:"))
        fail_msg("reason: %s", plan.reason);
    assert_int_equal(answered.cnt, 3);
    assert_int_equal(plan.pods_cnt, 3);
    for (size_t i = 0; i < 3; i++) {
        char pod[32], ev[8];

        snprintf(pod, sizeof(pod), "j-worker-%zu", i);
        snprintf(ev, sizeof(ev), "ne-%zu", 3 - i);
        assert_string_equal(answered.items[i].pod_name, pod);
        assert_string_equal(answered.items[i].oom_event_id, ev);
        assert_string_equal(plan.pods[i].name, pod);
        assert_int_equal(plan.pods[i].resource.memory, 12884901888); /* ceil(10G * 1.2) */
    }
    free(answered.items);
    fixture_plan_free(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vpa_table),
        cmocka_unit_test(test_vpa_no_answered_out),
        cmocka_unit_test(test_dlrover_oom_answered),
        cmocka_unit_test(test_vpa_several_pods),
        cmocka_unit_test(test_vpa_podless_answers_all),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
