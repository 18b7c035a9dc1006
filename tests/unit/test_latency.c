/* dlb_lat_*: count, sum, max, mean and nearest-rank percentiles, each
 * expectation worked out by hand: the p-th percentile of n values is the
 * value at rank ceil(p/100 * n) (1-based) of the sorted values. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "latency.h"

/* Percentiles and means are whole or simple fractions here: compare exactly. */
#define assert_dbl(got, want)                                                                      \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        if (g_ != w_)                                                                              \
            fail_msg("%s = %.17g, expected %.17g", #got, g_, w_);                                  \
    } while (0)

static void add_all(dlb_lat_t *l, const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(dlb_lat_add(l, v[i]), 0);
}

/* 1..100 in order: rank ceil(p) is the value p itself. */
static void test_one_to_hundred(void **state)
{
    dlb_lat_t l = {0};
    (void)state;

    for (int64_t i = 1; i <= 100; i++)
        assert_int_equal(dlb_lat_add(&l, i), 0);
    assert_int_equal(l.count, 100);
    assert_int_equal(l.n, 100);
    assert_int_equal(l.sum, 5050); /* 100 * 101 / 2 */
    assert_int_equal(l.max, 100);
    assert_dbl(dlb_lat_mean(&l), 50.5); /* 5050 / 100 */
    assert_dbl(dlb_lat_pct(&l, 50), 50);
    assert_dbl(dlb_lat_pct(&l, 90), 90);
    assert_dbl(dlb_lat_pct(&l, 99), 99);
    assert_dbl(dlb_lat_pct(&l, 100), 100);
    assert_dbl(dlb_lat_pct(&l, 1), 1);
    /* ceil(0.5) = 1, ceil(99.5) = 100, ceil(50.01) = 51 */
    assert_dbl(dlb_lat_pct(&l, 0.5), 1);
    assert_dbl(dlb_lat_pct(&l, 99.5), 100);
    assert_dbl(dlb_lat_pct(&l, 50.01), 51);
    /* 7/100.0*100 is 7.000000000000001 and 29/100.0*100 is 28.999999999999996
     * in doubles: an exact product keeps its rank either way. */
    assert_dbl(dlb_lat_pct(&l, 7), 7);
    assert_dbl(dlb_lat_pct(&l, 29), 29);
    assert_int_equal(l.sorted, 1);
    dlb_lat_free(&l);
}

/* Unsorted, with duplicates: 30 10 20 10 50 40 10 30, sorted
 * 10 10 10 20 30 30 40 50 (ranks 1..8), sum 200. */
static void test_unsorted_duplicates(void **state)
{
    static const int64_t v[] = {30, 10, 20, 10, 50, 40, 10, 30};
    dlb_lat_t l = {0};
    (void)state;

    add_all(&l, v, 8);
    assert_int_equal(l.count, 8);
    assert_int_equal(l.sum, 200);
    assert_int_equal(l.max, 50);
    assert_dbl(dlb_lat_mean(&l), 25);      /* 200 / 8 */
    assert_dbl(dlb_lat_pct(&l, 25), 10);   /* ceil(2) = 2 -> 10 */
    assert_dbl(dlb_lat_pct(&l, 37.5), 10); /* ceil(3) = 3 -> 10 */
    assert_dbl(dlb_lat_pct(&l, 40), 20);   /* ceil(3.2) = 4 -> 20 */
    assert_dbl(dlb_lat_pct(&l, 50), 20);   /* ceil(4) = 4 -> 20 */
    assert_dbl(dlb_lat_pct(&l, 50.1), 30); /* ceil(4.008) = 5 -> 30 */
    assert_dbl(dlb_lat_pct(&l, 75), 30);   /* ceil(6) = 6 -> 30 */
    assert_dbl(dlb_lat_pct(&l, 87.5), 40); /* ceil(7) = 7 -> 40 */
    assert_dbl(dlb_lat_pct(&l, 90), 50);   /* ceil(7.2) = 8 -> 50 */
    assert_dbl(dlb_lat_pct(&l, 99), 50);   /* ceil(7.92) = 8 -> 50 */
    assert_dbl(dlb_lat_pct(&l, 100), 50);
    /* Sorting kept every duplicate. */
    for (size_t i = 1; i < l.n; i++)
        assert_true(l.v[i - 1] <= l.v[i]);
    assert_int_equal(l.v[0], 10);
    assert_int_equal(l.v[2], 10);
    assert_int_equal(l.v[3], 20);
    dlb_lat_free(&l);
}

static void test_empty(void **state)
{
    dlb_lat_t l = {0};
    (void)state;

    assert_dbl(dlb_lat_pct(&l, 50), 0);
    assert_dbl(dlb_lat_pct(&l, 100), 0);
    assert_dbl(dlb_lat_mean(&l), 0);
    assert_int_equal(l.count, 0);
    assert_null(l.v);
    dlb_lat_free(&l); /* nothing kept: still fine */
    assert_int_equal(l.n, 0);
}

/* A percentile sorts; a later add must make the next one sort again. */
static void test_add_after_pct(void **state)
{
    static const int64_t first[] = {5, 1, 3}, more[] = {0, 2};
    dlb_lat_t l = {0};
    (void)state;

    add_all(&l, first, 3);
    assert_dbl(dlb_lat_pct(&l, 50), 3);  /* 1 3 5: ceil(1.5) = 2 -> 3 */
    assert_dbl(dlb_lat_pct(&l, 100), 5); /* ceil(3) = 3 -> 5 */
    assert_int_equal(l.sorted, 1);
    add_all(&l, more, 2);
    assert_int_equal(l.sorted, 0);
    /* 0 1 2 3 5 */
    assert_dbl(dlb_lat_pct(&l, 50), 2);  /* ceil(2.5) = 3 -> 2 */
    assert_dbl(dlb_lat_pct(&l, 20), 0);  /* ceil(1) = 1 -> 0 */
    assert_dbl(dlb_lat_pct(&l, 40), 1);  /* ceil(2) = 2 -> 1 */
    assert_dbl(dlb_lat_pct(&l, 100), 5); /* ceil(5) = 5 -> 5 */
    assert_int_equal(dlb_lat_add(&l, 9), 0);
    /* 0 1 2 3 5 9 */
    assert_dbl(dlb_lat_pct(&l, 100), 9);
    assert_dbl(dlb_lat_pct(&l, 50), 2); /* ceil(3) = 3 -> 2 */
    assert_dbl(dlb_lat_pct(&l, 51), 3); /* ceil(3.06) = 4 -> 3 */
    assert_int_equal(l.max, 9);
    assert_int_equal(l.sum, 20);              /* 5+1+3+0+2+9 */
    assert_dbl(dlb_lat_mean(&l), 20.0 / 6.0); /* the same division */
    dlb_lat_free(&l);
}

static void test_free_then_reuse(void **state)
{
    static const int64_t v[] = {100, 300, 200};
    dlb_lat_t l = {0};
    (void)state;

    add_all(&l, v, 3);
    assert_dbl(dlb_lat_pct(&l, 50), 200);
    dlb_lat_free(&l);
    assert_null(l.v);
    assert_int_equal(l.n, 0);
    assert_int_equal(l.cap, 0);
    assert_int_equal(l.count, 0);
    assert_int_equal(l.sum, 0);
    assert_int_equal(l.max, 0);
    assert_int_equal(l.sorted, 0);
    assert_dbl(dlb_lat_pct(&l, 50), 0);
    assert_dbl(dlb_lat_mean(&l), 0);

    /* Nothing of the first use survives: a smaller max, a new mean. */
    assert_int_equal(dlb_lat_add(&l, 7), 0);
    assert_int_equal(dlb_lat_add(&l, 3), 0);
    assert_int_equal(l.count, 2);
    assert_int_equal(l.max, 7);
    assert_dbl(dlb_lat_mean(&l), 5);    /* (7+3)/2 */
    assert_dbl(dlb_lat_pct(&l, 50), 3); /* 3 7: ceil(1) = 1 -> 3 */
    assert_dbl(dlb_lat_pct(&l, 100), 7);
    dlb_lat_free(&l);
}

/* 3000 values, past two growths of the kept array (1024 -> 2048 -> 4096):
 * i*7 mod 3000 + 1 for i = 0..2999 is a permutation of 1..3000 (gcd(7,
 * 3000) = 1), so rank r holds r. */
static void test_grow_permutation(void **state)
{
    dlb_lat_t l = {0};
    (void)state;

    for (int64_t i = 0; i < 3000; i++)
        assert_int_equal(dlb_lat_add(&l, i * 7 % 3000 + 1), 0);
    assert_int_equal(l.n, 3000);
    assert_int_equal(l.cap, 4096);
    assert_int_equal(l.sum, 4501500); /* 3000 * 3001 / 2 */
    assert_dbl(dlb_lat_mean(&l), 1500.5);
    assert_dbl(dlb_lat_pct(&l, 50), 1500);    /* ceil(1500) */
    assert_dbl(dlb_lat_pct(&l, 99), 2970);    /* ceil(2970) */
    assert_dbl(dlb_lat_pct(&l, 99.9), 2997);  /* ceil(2997) */
    assert_dbl(dlb_lat_pct(&l, 99.99), 3000); /* ceil(2999.7) */
    assert_dbl(dlb_lat_pct(&l, 0.01), 1);     /* ceil(0.3) */
    assert_dbl(dlb_lat_pct(&l, 100), 3000);
    dlb_lat_free(&l);
}

/* Past DLB_LAT_CAP values: count, sum, max (and so the mean) keep counting,
 * percentiles describe the first DLB_LAT_CAP only. CAP ones, then 10 values
 * of 1000. */
static void test_cap(void **state)
{
    const int64_t cap = (int64_t)DLB_LAT_CAP;
    dlb_lat_t l = {0};
    (void)state;

    for (int64_t i = 0; i < cap; i++)
        if (dlb_lat_add(&l, 1))
            fail_msg("add %" PRId64 " failed", i);
    for (int i = 0; i < 10; i++)
        assert_int_equal(dlb_lat_add(&l, 1000), 0);
    assert_int_equal(l.n, DLB_LAT_CAP);
    assert_int_equal(l.cap, DLB_LAT_CAP); /* 1024 doubled 12 times, exactly */
    assert_int_equal(l.count, cap + 10);
    assert_int_equal(l.sum, cap + 10000);
    assert_int_equal(l.max, 1000);
    assert_dbl(dlb_lat_mean(&l), (double)(cap + 10000) / (double)(cap + 10));
    assert_dbl(dlb_lat_pct(&l, 100), 1); /* the 1000s were not kept */
    assert_dbl(dlb_lat_pct(&l, 50), 1);
    dlb_lat_free(&l);
}

static void test_clock(void **state)
{
    struct timespec ms = {0, 1000000};
    int64_t t0, t1;
    (void)state;

    t0 = dlb_lat_clock_ns();
    nanosleep(&ms, NULL);
    t1 = dlb_lat_clock_ns();
    assert_true(t0 >= 0);
    assert_true(t1 - t0 >= 1000000); /* slept 1 ms on the same monotonic clock */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_to_hundred),
        cmocka_unit_test(test_unsorted_duplicates),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_add_after_pct),
        cmocka_unit_test(test_free_then_reuse),
        cmocka_unit_test(test_grow_permutation),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
