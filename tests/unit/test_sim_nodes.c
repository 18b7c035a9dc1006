/* Simulated node failures (sim/sim_job.c, "node failures") against the dlbrain node-failure
 * optimizer run in-process: the same seed gives the same bytes; without
 * replace actions every failed pod waits for the master's relaunch (300 s),
 * with dlb_opt_node_failures answering the master's request each failed pod
 * is replaced at once, and once. Both runs answer OOMs alike (64 GiB), so
 * the difference is the node failures'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "encoded_buf.h"

#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "opt_plan.h"
#include "optimizer.h"
#include "sim_run.h"
#include "state.h"

/* What the test runs; a measurement compiles it with others (-D). */
#ifndef JOBS
#define JOBS 30
#endif
#ifndef RATE
#define RATE 0.5 /* node failures per pod-hour: high, the jobs are short */
#endif
#ifndef TIME_SCALE
#define TIME_SCALE 0.1
#endif

/* What the in-process optimizer knows: each job's state folded from its
 * node events, and the failures its plans answered (as table oom_plans). */
typedef struct world {
    dlb_catalog_t *cat;
    unsigned char *buf;
    size_t len, cap;
    int replace; /* 1: run dlb_opt_node_failures on each request */
    dlb_job_state_t st[JOBS];
    dlb_oom_answers_t answers[JOBS];
    size_t actions;
} world_t;

static size_t job_index(world_t *w, const char *uid)
{
    size_t i;

    for (i = 0; i < JOBS && w->st[i].job.job_uid[0]; i++)
        if (!strcmp(w->st[i].job.job_uid, uid))
            return i;
    assert_true(i < JOBS);
    snprintf(w->st[i].job.job_uid, sizeof(w->st[i].job.job_uid), "%s", uid);
    return i;
}

static int publish(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    world_t *w = opaque;
    int err;

    if ((err = encoded_append(w->cat, ev, &w->buf, &w->len, &w->cap, errstr, errstr_size)))
        return err;
    if (ev->type == DLB_EV_NODE)
        return dlb_job_state_apply(&w->st[job_index(w, ev->u.node.job_uid)], ev, 60);
    return 0;
}

static int exchange(void *opaque, const dlb_plan_request_t *reqs, size_t n, dlb_plan_t *plans,
                    char *errstr, size_t errstr_size)
{
    world_t *w = opaque;

    for (size_t i = 0; i < n; i++) {
        size_t k = job_index(w, reqs[i].job_uid);
        dlb_history_t hist = {0};
        dlb_opt_input_t in = {.req = &reqs[i],
                              .job = &w->st[k],
                              .history = &hist,
                              .optimizer_set = "dlbrain",
                              .answered = &w->answers[k]};
        dlb_oom_plan_t *before;
        size_t nb = 0;
        dlb_pod_resource_t *p;
        int err = 0;

        dlb_plan_id(&reqs[i], plans[i].plan_id, sizeof(plans[i].plan_id));
        snprintf(plans[i].trigger_event_id, sizeof(plans[i].trigger_event_id), "%s",
                 reqs[i].event_id);
        plans[i].event_time_ms = reqs[i].event_time_ms;
        if (reqs[i].has_oom_pod) {
            if (!(p = dlb_plan_add_pod(&plans[i], reqs[i].oom_pod)))
                return DLB_ERR_NOMEM;
            p->resource.memory = 64 * DLB_GIB;
            continue;
        }
        /* As the consumer loads them: the answers of plans before this
         * request's time (a copy: in.answered grows). */
        if (!(before = malloc((w->answers[k].cnt + 1) * sizeof(*before))))
            return DLB_ERR_NOMEM;
        for (size_t a = 0; a < w->answers[k].cnt; a++)
            if (w->answers[k].items[a].event_time_ms < reqs[i].event_time_ms)
                before[nb++] = w->answers[k].items[a];
        in.oom_plans = before;
        in.oom_plans_cnt = nb;
        /* Through the router, so the stages it answers at are the set's. */
        if (w->replace && (err = dlb_router_plan(&in, &plans[i], errstr, errstr_size)))
            err = DLB_ERR_GENERIC;
        free(before);
        if (err)
            return err;
        /* Only the actions: the other parts of the set stay out of it. */
        free(plans[i].groups);
        free(plans[i].pods);
        plans[i].groups = NULL;
        plans[i].pods = NULL;
        plans[i].groups_cnt = plans[i].pods_cnt = 0;
        w->actions += plans[i].actions_cnt;
    }
    return 0;
}

static dlb_sim_workload_t wl;

static int setup(void **state)
{
    const char *src = getenv("DLB_SOURCE_DIR");
    char path[4096], errstr[256];

    (void)state;
    snprintf(path, sizeof(path), "%s/data/pollux/workloads/workload-4.csv", src ? src : ".");
    return dlb_sim_workload_load(path, JOBS, &wl, errstr, sizeof(errstr));
}

static int teardown(void **state)
{
    (void)state;
    dlb_sim_workload_free(&wl);
    return 0;
}

static void run(double rate, int replace, world_t *w, dlb_sim_summary_t *sum)
{
    dlb_sim_opts_t o;
    dlb_sim_io_t io = {.publish = publish, .exchange = exchange, .opaque = w};
    char errstr[512];

    memset(w, 0, sizeof(*w));
    w->replace = replace;
    assert_int_equal(dlb_catalog_new(&w->cat, errstr, sizeof(errstr)), 0);
    dlb_sim_opts_init(&o);
    o.wl = &wl;
    o.seed = 3;
    o.params.time_scale = TIME_SCALE;
    o.params.node_fail_per_hour = rate;
    if (dlb_sim_run(&o, &io, sum, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    dlb_catalog_destroy(w->cat);
    for (size_t i = 0; i < JOBS; i++) {
        dlb_job_state_clear(&w->st[i]);
        free(w->answers[i].items);
    }
    assert_int_equal(sum->unfinished, 0);
    assert_int_equal(sum->jobs, JOBS);
    print_message("rate %.2f/pod-h, %s: failures %ld replaced %ld relaunched %ld down %.0f s, "
                  "jct mean %.0f s, %ld succeeded, %zu replace actions\n",
                  rate, replace ? "dlbrain replaces" : "master relaunches", sum->node_failures,
                  sum->node_replaced, sum->node_relaunched, sum->node_down_s, sum->jct_mean_s,
                  (long)sum->succeeded, w->actions);
}

static void test_nodes_deterministic(void **state)
{
    world_t a, b;
    dlb_sim_summary_t sa, sb;

    (void)state;
    run(RATE, 1, &a, &sa);
    run(RATE, 1, &b, &sb);
    assert_true(sa.node_failures > 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.buf, b.buf, a.len);
    assert_int_equal(sa.virtual_ms, sb.virtual_ms);
    free(a.buf);
    free(b.buf);
}

static void test_nodes_off_by_default(void **state)
{
    world_t a;
    dlb_sim_summary_t sa;

    (void)state;
    run(0, 1, &a, &sa);
    assert_int_equal(sa.node_failures, 0);
    assert_int_equal(sa.node_replaced, 0);
    assert_int_equal(a.actions, 0);
    free(a.buf);
}

static void test_nodes_replaced_vs_relaunched(void **state)
{
    world_t a, b;
    dlb_sim_summary_t wait, fix;

    (void)state;
    run(RATE, 0, &a, &wait);
    run(RATE, 1, &b, &fix);
    /* Without a plan: each failed pod waits the 300 s (at whole ticks).
     * A pod whose node fails at the job's last tick ends with the job. */
    assert_true(wait.node_relaunched > 0);
    assert_int_equal(wait.node_replaced, 0);
    assert_true(wait.node_relaunched <= wait.node_failures);
    assert_true(wait.node_down_s >= 300.0 * (double)wait.node_relaunched - 1e-6);
    /* With dlbrain: each failure replaced by the plan of the request it
     * triggers, nothing waits. A second worker-stage request of the same
     * instant may name the pod again (answers are seen by later plans
     * only); the sim's master ignores it. */
    assert_true(fix.node_replaced > 0);
    assert_int_equal(fix.node_relaunched, 0);
    assert_true(b.actions >= (size_t)fix.node_failures);
    assert_true(fix.node_down_s < 1.0);
    assert_true(fix.jct_mean_s < wait.jct_mean_s);
    free(a.buf);
    free(b.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_deterministic),
        cmocka_unit_test(test_nodes_off_by_default),
        cmocka_unit_test(test_nodes_replaced_vs_relaunched),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
