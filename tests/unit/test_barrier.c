/* The ordering barrier's rule for one partition: a request waits for the
 * positions its dlb.after header names whatever the clocks say, a position
 * the log does not reach holds nothing, and without the header the end of a
 * partition is trusted only after the grace. The broker is asked only when
 * the answer depends on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "barrier.h"

typedef struct broker {
    int end; /* what end_confirmed answers */
    int asked;
} broker_t;

static int ask(void *arg)
{
    broker_t *b = arg;
    b->asked++;
    return b->end;
}

/* A partition consumed to offset 10 (next), events up to time 1000. */
static dlb_barrier_view_t view(void)
{
    dlb_barrier_view_t v = {.max_ts = 1000,
                            .next = 10,
                            .at_eof = 1,
                            .req_ts = 500,
                            .has_after = 0,
                            .after = -1,
                            .grace_over = 0};
    return v;
}

/* The clocks say the partition is past the request; its producer's event at
 * offset 12 is not consumed yet: it waits. At offset 9 it is: it goes. */
static void test_position_beats_clocks(void **state)
{
    broker_t b = {.end = 0};
    dlb_barrier_view_t v = view();
    (void)state;

    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 1); /* without a header */
    v.has_after = 1;
    v.after = 12;
    v.at_eof = 0;
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 0);
    assert_int_equal(b.asked, 0); /* not at its end: nothing to ask */
    v.at_eof = 1;                 /* at its end as fetched; the broker has more */
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 0);
    assert_int_equal(b.asked, 1);
    v.after = 10; /* next is 10: offset 10 is not consumed either */
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 0);
    v.after = 9;
    b.asked = 0;
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 1);
    assert_int_equal(b.asked, 0);
}

/* A position past the broker's end (a crafted header) holds nothing. */
static void test_position_not_in_log(void **state)
{
    broker_t b = {.end = 1};
    dlb_barrier_view_t v = view();
    (void)state;

    v.has_after = 1;
    v.after = 1000000;
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 1);
    assert_int_equal(b.asked, 1);
}

/* Nothing polled since the assignment (next -1): a position waits. */
static void test_position_nothing_polled(void **state)
{
    broker_t b = {.end = 1};
    dlb_barrier_view_t v = view();
    (void)state;

    v.next = -1;
    v.at_eof = 0;
    v.has_after = 1;
    v.after = 0;
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 0);
}

/* Other producers' events, by time: a partition behind the request's time
 * goes only at its confirmed end; without a header only after the grace,
 * with one at once. */
static void test_time_and_grace(void **state)
{
    broker_t b = {.end = 1};
    dlb_barrier_view_t v = view();
    (void)state;

    v.max_ts = 400; /* behind the request */
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 0);
    assert_int_equal(b.asked, 0); /* in its grace: not asked */
    v.grace_over = 1;
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 1);
    assert_int_equal(b.asked, 1);
    v.grace_over = 0;
    v.has_after = 1; /* the header: no grace */
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 1);
    b.end = 0; /* the broker has more */
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 0);
    v.at_eof = 0; /* not at its end as fetched */
    b.end = 1;
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 0);
    v.max_ts = 500; /* at the request's time */
    assert_int_equal(dlb_barrier_part_ready(&v, ask, &b), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_position_beats_clocks),
        cmocka_unit_test(test_position_not_in_log),
        cmocka_unit_test(test_position_nothing_polled),
        cmocka_unit_test(test_time_and_grace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
