/* The cluster entries of the dlbrain set (pipeline/cache/cluster.c): what a
 * job event's state does to its entry, the text in the Redis hash and back
 * (a stray value is refused, not half-read), and the in-memory view. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster.h"

static void test_job_event(void **state)
{
    dlb_job_event_t ev = {.job_uid = "j", .event_time_ms = 42, .has_state = 1};
    dlb_cluster_job_t e;

    (void)state;
    strcpy(ev.state, "pending");
    assert_int_equal(dlb_cluster_job_event(&ev, &e), 1);
    assert_string_equal(e.job_uid, "j");
    assert_int_equal(e.waiting, 1);
    assert_int_equal(e.time_ms, 42);
    strcpy(ev.state, "created");
    assert_int_equal(dlb_cluster_job_event(&ev, &e), 1);
    assert_int_equal(e.waiting, 1);
    strcpy(ev.state, "running");
    assert_int_equal(dlb_cluster_job_event(&ev, &e), 1);
    assert_int_equal(e.waiting, 0);
    assert_true(e.cores == 0);
    for (const char *const *s = (const char *const[]){"succeeded", "failed", "stopped", NULL}; *s;
         s++) {
        strcpy(ev.state, *s);
        assert_int_equal(dlb_cluster_job_event(&ev, &e), -1);
    }
    strcpy(ev.state, "paused");
    assert_int_equal(dlb_cluster_job_event(&ev, &e), 0);
    ev.has_state = 0;
    assert_int_equal(dlb_cluster_job_event(&ev, &e), 0);
}

static void test_text(void **state)
{
    dlb_cluster_job_t e = {.job_uid = "j", .waiting = 0, .cores = 40.5, .time_ms = 1767225600000};
    dlb_cluster_job_t back;
    char buf[96], tiny[4];
    static const char *const bad[] = {"",        "0 40",        "2 1 1",   "0 -1 5",
                                      "0 nan 5", "0 1 5 extra", "0 inf 5", "x 1 5"};

    (void)state;
    assert_int_equal(dlb_cluster_job_encode(&e, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "0 40.5 1767225600000");
    assert_int_equal(dlb_cluster_job_decode("j", buf, strlen(buf), &back), 0);
    assert_string_equal(back.job_uid, "j");
    assert_true(back.cores == 40.5);
    assert_int_equal(back.time_ms, e.time_ms);
    assert_int_equal(dlb_cluster_job_encode(&e, tiny, sizeof(tiny)), -1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_int_equal(dlb_cluster_job_decode("j", bad[i], strlen(bad[i]), &back), -1);
    memset(buf, '1', sizeof(buf));
    assert_int_equal(dlb_cluster_job_decode("j", buf, sizeof(buf), &back), -1);
}

static void test_view(void **state)
{
    dlb_cluster_view_t v = {0};
    dlb_cluster_job_t e = {.cores = 1};

    (void)state;
    for (int i = 0; i < 100; i++) {
        snprintf(e.job_uid, sizeof(e.job_uid), "j%d", i);
        assert_int_equal(dlb_cluster_view_put(&v, &e), 0);
    }
    e.cores = 7;
    strcpy(e.job_uid, "j5");
    assert_int_equal(dlb_cluster_view_put(&v, &e), 0);
    assert_int_equal(v.cnt, 100);
    dlb_cluster_view_del(&v, "j0");
    dlb_cluster_view_del(&v, "nosuch");
    assert_int_equal(v.cnt, 99);
    for (size_t i = 0; i < v.cnt; i++) {
        assert_string_not_equal(v.jobs[i].job_uid, "j0");
        if (!strcmp(v.jobs[i].job_uid, "j5"))
            assert_true(v.jobs[i].cores == 7);
    }
    dlb_cluster_view_clear(&v);
    assert_int_equal(v.cnt, 0);
    assert_null(v.jobs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_event),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_view),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
