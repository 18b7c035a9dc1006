/* The failover policy (env/failover/failover_policy.h): the window's edges,
 * one outcome per job, too few jobs, the threshold, the cool-down, the cut at
 * the last switch, pinning and the order of the checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "failover_policy.h"

#define NOW    1000000000
#define WINDOW 60000

static const dlb_failover_policy_t policy = {
    .window_ms = WINDOW, .min_jobs = 4, .threshold = 0.5, .cooldown_ms = 120000};
/* armed: a real one, a standby, not pinned, last switch long ago */
static const dlb_failover_state_t armed = {1, 1, 0, NOW - 10 * WINDOW};

/* Four jobs, each one outcome at the given offset before NOW, failed or not. */
static void four(dlb_failover_outcome_t *o, const int64_t ago[4], const int failed[4])
{
    static const char *const jobs[4] = {"j1", "j2", "j3", "j4"};

    for (int i = 0; i < 4; i++) {
        o[i].job = jobs[i];
        o[i].at_ms = NOW - ago[i];
        o[i].failed = failed[i];
    }
}

static void test_trip_at_threshold(void **state)
{
    dlb_failover_outcome_t o[4];
    dlb_failover_figures_t f;
    (void)state;

    four(o, (const int64_t[]){1, 2, 3, 4}, (const int[]){1, 1, 0, 0});
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &armed, &f), DLB_FAILOVER_TRIP);
    assert_int_equal(f.jobs, 4);
    assert_int_equal(f.failed, 2);
    assert_true(f.share == 0.5); /* exactly the threshold trips */
    assert_int_equal(f.from_ms, NOW - WINDOW);
    assert_int_equal(f.to_ms, NOW);
    four(o, (const int64_t[]){1, 2, 3, 4}, (const int[]){1, 0, 0, 0});
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &armed, &f), DLB_FAILOVER_HEALTHY);
    assert_true(f.share == 0.25);
}

static void test_window_edges(void **state)
{
    dlb_failover_outcome_t o[4];
    dlb_failover_figures_t f;
    (void)state;

    /* At NOW - WINDOW is outside (the window is open at its start), at NOW
     * inside, after NOW (a clock ahead) outside. */
    four(o, (const int64_t[]){WINDOW, WINDOW - 1, 0, -1}, (const int[]){1, 1, 1, 1});
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &armed, &f), DLB_FAILOVER_FEW_JOBS);
    assert_int_equal(f.jobs, 2);
    assert_int_equal(f.failed, 2);
    /* One ms later the oldest in-window one leaves too. */
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW + 1, &armed, &f),
                     DLB_FAILOVER_FEW_JOBS);
    assert_int_equal(f.jobs, 2); /* the one at NOW + 1 entered */
}

static void test_too_few_jobs(void **state)
{
    dlb_failover_outcome_t o[4];
    dlb_failover_figures_t f;
    (void)state;

    four(o, (const int64_t[]){1, 2, 3, 4}, (const int[]){1, 1, 1, 1});
    /* three failed jobs of three: 100 %, yet fewer than min_jobs */
    assert_int_equal(dlb_failover_decide(&policy, o, 3, NOW, &armed, &f), DLB_FAILOVER_FEW_JOBS);
    assert_int_equal(f.jobs, 3);
    assert_true(f.share == 1.0);
    /* none at all, and min_jobs 0 still needs one */
    {
        dlb_failover_policy_t p = policy;
        p.min_jobs = 0;
        assert_int_equal(dlb_failover_decide(&p, o, 0, NOW, &armed, &f), DLB_FAILOVER_FEW_JOBS);
        assert_int_equal(f.jobs, 0);
        assert_true(f.share == 0.0);
    }
}

static void test_one_outcome_per_job(void **state)
{
    /* j1 failed then succeeded on a retry (its newest counts); j2 succeeded
     * then failed; j3 failed twice (one job); j4 succeeded before the
     * window and failed in it. */
    const dlb_failover_outcome_t o[] = {
        {"j1", NOW - 50, 1},         {"j1", NOW - 10, 0}, {"j2", NOW - 40, 0},
        {"j2", NOW - 5, 1},          {"j3", NOW - 30, 1}, {"j3", NOW - 20, 1},
        {"j4", NOW - WINDOW - 5, 0}, {"j4", NOW - 1, 1},  {"j5", NOW - 2, 0},
    };
    dlb_failover_figures_t f;
    (void)state;

    assert_int_equal(dlb_failover_decide(&policy, o, 9, NOW, &armed, &f), DLB_FAILOVER_TRIP);
    assert_int_equal(f.jobs, 5);
    assert_int_equal(f.failed, 3); /* j2, j3, j4 */
    /* the newest outcome of a job outside the window does not hide an older
     * one inside it: at NOW - 15, j1's success and j2's and j4's failures
     * are in the future, j4's success is in the window, j5 not yet */
    assert_int_equal(dlb_failover_decide(&policy, o, 9, NOW - 15, &armed, &f), DLB_FAILOVER_TRIP);
    assert_int_equal(f.jobs, 4);   /* j1, j2, j3, j4 */
    assert_int_equal(f.failed, 2); /* j1, j3 */
}

static void test_cooldown(void **state)
{
    dlb_failover_outcome_t o[4];
    dlb_failover_state_t st = armed;
    dlb_failover_figures_t f;
    (void)state;

    four(o, (const int64_t[]){1, 2, 3, 4}, (const int[]){1, 1, 1, 1});
    st.last_switch_ms = NOW - policy.cooldown_ms + 1;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, &f), DLB_FAILOVER_COOLDOWN);
    /* the figures are still there, for the metrics */
    assert_int_equal(f.jobs, 4);
    /* the cool-down over: exactly cooldown_ms after the switch */
    st.last_switch_ms = NOW - policy.cooldown_ms;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, &f), DLB_FAILOVER_TRIP);
}

static void test_cut_at_last_switch(void **state)
{
    dlb_failover_outcome_t o[4];
    dlb_failover_state_t st = armed;
    dlb_failover_policy_t p = policy;
    dlb_failover_figures_t f;
    (void)state;

    /* No cool-down: the window alone must not reach before the switch. */
    p.cooldown_ms = 0;
    four(o, (const int64_t[]){10, 20, 30, 40}, (const int[]){1, 1, 1, 1});
    st.last_switch_ms = NOW - 30; /* j3 (at NOW - 30) and j4 were before it */
    assert_int_equal(dlb_failover_decide(&p, o, 4, NOW, &st, &f), DLB_FAILOVER_FEW_JOBS);
    assert_int_equal(f.jobs, 2);
    assert_int_equal(f.from_ms, NOW - 30);
    st.last_switch_ms = NOW - 41;
    assert_int_equal(dlb_failover_decide(&p, o, 4, NOW, &st, &f), DLB_FAILOVER_TRIP);
}

static void test_pinned_and_order(void **state)
{
    dlb_failover_outcome_t o[4];
    dlb_failover_state_t st = armed;
    (void)state;

    four(o, (const int64_t[]){1, 2, 3, 4}, (const int[]){1, 1, 1, 1});
    st.pinned = 1;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, NULL), DLB_FAILOVER_PINNED);
    /* pinned before no standby, before cool-down */
    st.has_standby = 0;
    st.last_switch_ms = NOW - 1;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, NULL), DLB_FAILOVER_PINNED);
    st.pinned = 0;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, NULL), DLB_FAILOVER_NO_STANDBY);
    st.has_standby = 1;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, NULL), DLB_FAILOVER_COOLDOWN);
    st.has_real = 0;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, NULL), DLB_FAILOVER_NO_REAL);
    /* never switched: no cool-down */
    st.has_real = 1;
    st.last_switch_ms = 0;
    assert_int_equal(dlb_failover_decide(&policy, o, 4, NOW, &st, NULL), DLB_FAILOVER_TRIP);
}

static void test_late_plans(void **state)
{
    dlb_failover_policy_t p = policy;
    dlb_failover_figures_t f;
    /* late_ms 1000: r1 answered in 500 ms (on time), r2 in 1500 (late), r3
     * unanswered for 2000 (missing: late), r4 unanswered for 500 (not judged
     * yet), r5 answered in exactly 1000 (on time), r6 before the window. */
    const dlb_failover_request_t r[] = {
        {NOW - 5000, NOW - 4500}, {NOW - 5000, NOW - 3500}, {NOW - 2000, -1},
        {NOW - 500, -1},          {NOW - 3000, NOW - 2000}, {NOW - WINDOW, NOW - WINDOW + 10},
    };
    (void)state;

    p.late_ms = 1000;
    p.min_requests = 4;
    p.late_threshold = 0.5;
    /* no job finished: the late plans alone trip, at 2 of 4 */
    assert_int_equal(dlb_failover_decide_all(&p, NULL, 0, r, 6, NOW, &armed, &f),
                     DLB_FAILOVER_TRIP);
    assert_int_equal(f.requests, 4);
    assert_int_equal(f.late, 2);
    assert_true(f.late_share == 0.5);
    assert_true(f.by_late);
    /* a higher threshold: enough requests, so healthy, not few_jobs */
    p.late_threshold = 0.6;
    assert_int_equal(dlb_failover_decide_all(&p, NULL, 0, r, 6, NOW, &armed, &f),
                     DLB_FAILOVER_HEALTHY);
    assert_false(f.by_late);
    /* too few judged */
    p.late_threshold = 0.5;
    p.min_requests = 5;
    assert_int_equal(dlb_failover_decide_all(&p, NULL, 0, r, 6, NOW, &armed, &f),
                     DLB_FAILOVER_FEW_JOBS);
    /* 600 ms later r4 is judged too (missing): 3 of 5 */
    assert_int_equal(dlb_failover_decide_all(&p, NULL, 0, r, 6, NOW + 600, &armed, &f),
                     DLB_FAILOVER_TRIP);
    assert_int_equal(f.requests, 5);
    assert_int_equal(f.late, 3);
    /* off (late_ms 0): the requests count for nothing */
    p.late_ms = 0;
    assert_int_equal(dlb_failover_decide_all(&p, NULL, 0, r, 6, NOW, &armed, &f),
                     DLB_FAILOVER_FEW_JOBS);
    assert_int_equal(f.requests, 0);
    /* the cut at the last switch applies to them too */
    {
        dlb_failover_state_t st = armed;
        p.late_ms = 1000;
        p.min_requests = 1;
        p.cooldown_ms = 0;
        st.last_switch_ms = NOW - 2500; /* r3 only is judged after it */
        assert_int_equal(dlb_failover_decide_all(&p, NULL, 0, r, 6, NOW, &st, &f),
                         DLB_FAILOVER_TRIP);
        assert_int_equal(f.requests, 1);
    }
}

static void test_jobs_trip_first(void **state)
{
    dlb_failover_policy_t p = policy;
    dlb_failover_outcome_t o[4];
    dlb_failover_figures_t f;
    const dlb_failover_request_t r[] = {{NOW - 5000, -1}};
    (void)state;

    /* both trip: the reason is the failed jobs' */
    p.late_ms = 1000;
    p.min_requests = 1;
    p.late_threshold = 0.5;
    four(o, (const int64_t[]){1, 2, 3, 4}, (const int[]){1, 1, 1, 1});
    assert_int_equal(dlb_failover_decide_all(&p, o, 4, r, 1, NOW, &armed, &f), DLB_FAILOVER_TRIP);
    assert_false(f.by_late);
    /* healthy jobs and late plans: the plans' */
    four(o, (const int64_t[]){1, 2, 3, 4}, (const int[]){0, 0, 0, 0});
    assert_int_equal(dlb_failover_decide_all(&p, o, 4, r, 1, NOW, &armed, &f), DLB_FAILOVER_TRIP);
    assert_true(f.by_late);
    /* pinned still wins */
    {
        dlb_failover_state_t st = armed;
        st.pinned = 1;
        assert_int_equal(dlb_failover_decide_all(&p, o, 4, r, 1, NOW, &st, &f),
                         DLB_FAILOVER_PINNED);
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(dlb_failover_verdict_name(DLB_FAILOVER_TRIP), "trip");
    assert_string_equal(dlb_failover_verdict_name(DLB_FAILOVER_FEW_JOBS), "few_jobs");
    assert_string_equal(dlb_failover_verdict_name(DLB_FAILOVER_NO_REAL), "no_real");
    assert_string_equal(dlb_failover_verdict_name((dlb_failover_verdict_t)99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trip_at_threshold), cmocka_unit_test(test_window_edges),
        cmocka_unit_test(test_too_few_jobs),      cmocka_unit_test(test_one_outcome_per_job),
        cmocka_unit_test(test_cooldown),          cmocka_unit_test(test_cut_at_last_switch),
        cmocka_unit_test(test_pinned_and_order),  cmocka_unit_test(test_late_plans),
        cmocka_unit_test(test_jobs_trip_first),   cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
