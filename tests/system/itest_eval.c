/* Writes the evaluator's hand-computed workload (tests/unit/test_eval.c has
 * the arithmetic) into two environments through the PostgreSQL store, as the
 * optimizer persists what a simulator publishes. Run by
 * tests/system/43-eval.sh, which starts PostgreSQL, exports DLBRAIN_PG_DSN,
 * and then checks what `dlbrain eval a b` makes of it.
 *
 * Environment a: the unit test's workload, every sample's pods as the unit
 * test splits them by role (j0: worker-0 and ps-0, j1: worker-0, j2:
 * worker-0 and chief-0, a type that counts in the totals only; the same
 * names in every job: 5 pods, not 3), 5 OOMs of 3 pods, 6 plans, 7 requests.
 * Environment b: the same but j1 fails at 600 s, j0's worker requests 2
 * cores (not 3) from its second sample on, one OOM per pod, 2 plans, 2
 * requests. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "store_pg.h"

#define T0  1700000000000LL
#define S   1000LL
#define GIB ((int64_t)1024 * 1024 * 1024)

static char errstr[1024];

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if (call) {                                                                                \
            fprintf(stderr, "itest_eval: %s: %s\n", #call, errstr);                                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void job_event(dlb_pg_t *pg, const char *uid, const char *state, int64_t s)
{
    dlb_event_t ev = {.type = DLB_EV_JOB};
    dlb_job_event_t *j = &ev.u.job;

    snprintf(j->event_id, sizeof(j->event_id), "%s-%s", uid, state);
    snprintf(j->job_uid, sizeof(j->job_uid), "%s", uid);
    j->event_time_ms = T0 + s * S;
    j->has_state = 1;
    snprintf(j->state, sizeof(j->state), "%s", state);
    CHECK(dlb_pg_put_event(pg, &ev, NULL, 0, errstr, sizeof(errstr)));
}

/* A pod's CPU used and requested (cores), memory used and requested (GiB). */
typedef struct use {
    double cu, cr, mu, mr;
} use_t;

/* One sample of job uid at s seconds: its worker-0, and its ps-0 and
 * chief-0 unless NULL. */
static void sample(dlb_pg_t *pg, const char *uid, int64_t s, use_t worker, const use_t *ps,
                   const use_t *chief)
{
    static const char *const names[] = {"worker-0", "ps-0", "chief-0"};
    static const char *const types[] = {"worker", "ps", "chief"};
    const use_t *use[] = {&worker, ps, chief};
    dlb_pod_usage_t pods[3] = {0};
    dlb_event_t ev = {.type = DLB_EV_RUNTIME};
    dlb_runtime_sample_t *r = &ev.u.rt;
    size_t n = 0;

    for (int i = 0; i < 3; i++) {
        if (!use[i])
            continue;
        snprintf(pods[n].name, sizeof(pods[n].name), "%s", names[i]);
        snprintf(pods[n].type, sizeof(pods[n].type), "%s", types[i]);
        pods[n].cpu_used = use[i]->cu;
        pods[n].cpu_requested = use[i]->cr;
        pods[n].memory_used = (int64_t)(use[i]->mu * (double)GIB);
        pods[n].memory_requested = (int64_t)(use[i]->mr * (double)GIB);
        n++;
    }
    snprintf(r->event_id, sizeof(r->event_id), "%s-rt-%" PRId64, uid, s);
    snprintf(r->job_uid, sizeof(r->job_uid), "%s", uid);
    r->event_time_ms = T0 + s * S;
    r->global_step = s;
    r->speed = 1;
    r->pods = pods;
    r->pods_cnt = n;
    CHECK(dlb_pg_put_event(pg, &ev, NULL, 0, errstr, sizeof(errstr)));
}

static void oom(dlb_pg_t *pg, const char *uid, const char *pod, int64_t s)
{
    dlb_event_t ev = {.type = DLB_EV_NODE};
    dlb_node_event_t *n = &ev.u.node;

    snprintf(n->event_id, sizeof(n->event_id), "%s-oom-%s-%" PRId64, uid, pod, s);
    snprintf(n->job_uid, sizeof(n->job_uid), "%s", uid);
    n->event_time_ms = T0 + s * S;
    snprintf(n->kind, sizeof(n->kind), "oom_killed");
    snprintf(n->pod_name, sizeof(n->pod_name), "%s", pod);
    snprintf(n->pod_type, sizeof(n->pod_type), "worker");
    snprintf(n->node_name, sizeof(n->node_name), "node-1");
    snprintf(n->reason, sizeof(n->reason), "OOMKilled");
    CHECK(dlb_pg_put_event(pg, &ev, NULL, 0, errstr, sizeof(errstr)));
}

/* A pod_phase event, which must not count as an OOM. */
static void phase(dlb_pg_t *pg, const char *uid, int64_t s)
{
    dlb_event_t ev = {.type = DLB_EV_NODE};
    dlb_node_event_t *n = &ev.u.node;

    snprintf(n->event_id, sizeof(n->event_id), "%s-phase-%" PRId64, uid, s);
    snprintf(n->job_uid, sizeof(n->job_uid), "%s", uid);
    n->event_time_ms = T0 + s * S;
    snprintf(n->kind, sizeof(n->kind), "pod_phase");
    snprintf(n->pod_name, sizeof(n->pod_name), "%s-worker-0", uid);
    snprintf(n->pod_type, sizeof(n->pod_type), "worker");
    n->has_phase = 1;
    snprintf(n->phase, sizeof(n->phase), "Running");
    CHECK(dlb_pg_put_event(pg, &ev, NULL, 0, errstr, sizeof(errstr)));
}

/* Plan request i and the plan answering it (when stage is given). */
static void request(dlb_pg_t *pg, int i, const char *stage, const char *optimizer)
{
    dlb_event_t ev = {.type = DLB_EV_PLAN_REQUEST};
    dlb_plan_request_t *q = &ev.u.req;
    dlb_plan_t p = {0};

    snprintf(q->event_id, sizeof(q->event_id), "req-%d", i);
    snprintf(q->job_uid, sizeof(q->job_uid), "j0");
    q->event_time_ms = T0 + (int64_t)i * S;
    snprintf(q->stage, sizeof(q->stage), "%s", stage);
    CHECK(dlb_pg_put_event(pg, &ev, NULL, 0, errstr, sizeof(errstr)));
    if (!optimizer)
        return;
    snprintf(p.plan_id, sizeof(p.plan_id), "plan-%d", i);
    snprintf(p.event_id, sizeof(p.event_id), "plan-%d", i);
    snprintf(p.job_uid, sizeof(p.job_uid), "j0");
    snprintf(p.trigger_event_id, sizeof(p.trigger_event_id), "req-%d", i);
    snprintf(p.stage, sizeof(p.stage), "%s", stage);
    snprintf(p.optimizer, sizeof(p.optimizer), "%s", optimizer);
    snprintf(p.reason, sizeof(p.reason), "test");
    p.event_time_ms = q->event_time_ms;
    CHECK(dlb_pg_put_plan(pg, &p, NULL, 0, errstr, sizeof(errstr)));
}

static void workload(dlb_pg_t *pg, int b)
{
    double j0_req = b ? 2 : 3; /* j0's worker from its second sample on */
    const use_t ps[] = {{0, 1, 0, 2}, {1, 1, 1, 2}, {0, 1, 1, 2}};
    const use_t chief[] = {{.5, 1, .5, 1}, {1, 1, .5, 1}};

    job_event(pg, "j0", "created", 0);
    job_event(pg, "j0", "pending", 10);
    job_event(pg, "j0", "running", 60);
    job_event(pg, "j0", "succeeded", 660);
    job_event(pg, "j1", "created", 0);
    job_event(pg, "j1", "running", 120);
    job_event(pg, "j1", "failed", b ? 600 : 1200);
    job_event(pg, "j2", "created", 100);
    job_event(pg, "j2", "pending", 100);
    job_event(pg, "j2", "running", 100);
    job_event(pg, "j2", "succeeded", 1900);
    job_event(pg, "j3", "created", 200);
    job_event(pg, "j3", "running", 500);
    job_event(pg, "j4", "created", 300);

    /* Totals (test_eval.c): j0 1/2 3/4 2/4 cores, 1/4 2/4 3/4 GiB; j1 1/1, 1/2;
     * j2 1/2 1/2 2/2 2/2 cores, 1/2 GiB. */
    sample(pg, "j0", 60, (use_t){1, 1, 1, 2}, &ps[0], NULL);
    sample(pg, "j0", 120, (use_t){2, j0_req, 1, 2}, &ps[1], NULL);
    sample(pg, "j0", 240, (use_t){2, j0_req, 2, 2}, &ps[2], NULL);
    sample(pg, "j1", 120, (use_t){1, 1, 1, 2}, NULL, NULL);
    sample(pg, "j2", 100, (use_t){.5, 1, .5, 1}, NULL, &chief[0]);
    sample(pg, "j2", 130, (use_t){.5, 1, .5, 1}, NULL, &chief[0]);
    sample(pg, "j2", 160, (use_t){1, 1, .5, 1}, NULL, &chief[1]);
    sample(pg, "j2", 190, (use_t){1, 1, .5, 1}, NULL, &chief[1]);

    oom(pg, "j0", "j0-worker-0", 100);
    oom(pg, "j0", "j0-worker-1", 200);
    oom(pg, "j1", "j0-worker-0", 400);
    if (!b) {
        oom(pg, "j0", "j0-worker-0", 300);
        oom(pg, "j0", "j0-worker-0", 500);
    }
    phase(pg, "j0", 60);

    /* Plan requests, each answered by a plan of the optimizer named (NULL: none). */
    static const struct {
        const char *stage, *optimizer;
    } reqs[2][7] = {{{DLB_STAGE_CREATE, "opt_a"},
                     {DLB_STAGE_CREATE, "opt_a"},
                     {DLB_STAGE_CREATE, "opt_a"},
                     {DLB_STAGE_RUNNING, "opt_a"},
                     {DLB_STAGE_RUNNING, "opt_b"},
                     {DLB_STAGE_RUNNING, "opt_b"},
                     {DLB_STAGE_RUNNING, NULL}},
                    {{DLB_STAGE_CREATE, "opt_c"}, {DLB_STAGE_CREATE, "opt_c"}}};
    for (int i = 0; i < 7 && reqs[b][i].stage; i++)
        request(pg, i + 1, reqs[b][i].stage, reqs[b][i].optimizer);
}

int main(void)
{
    const char *dsn = getenv("DLBRAIN_PG_DSN");

    for (int b = 0; b < 2; b++) {
        dlb_pg_t *pg = NULL;

        CHECK(dlb_pg_connect(&pg, dsn ? dsn : "", b ? "b" : "a", errstr, sizeof(errstr)));
        CHECK(dlb_pg_migrate(pg, errstr, sizeof(errstr)));
        workload(pg, b);
        dlb_pg_destroy(pg);
    }
    printf("itest_eval: wrote environments a and b\n");
    return 0;
}
