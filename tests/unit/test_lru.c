/* dlb_lru_*: values by a byte-string key, the least recently used dropped
 * first to hold the budget, never the one just put; values freed by the
 * cache, on drop, on free and when a put fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lru.h"

static int freed;

static void count_free(void *v)
{
    freed++;
    free(v);
}

static int *val(int x)
{
    int *p = malloc(sizeof(*p));

    assert_non_null(p);
    *p = x;
    return p;
}

static void test_get_by_bytes(void **unused)
{
    dlb_lru_t *c = dlb_lru_new(1 << 20, count_free);
    const char k1[] = {'a', 0, 'b'}, k2[] = {'a', 0, 'c'};
    size_t n, bytes;

    (void)unused;
    freed = 0;
    assert_non_null(c);
    assert_int_equal(dlb_lru_put(c, k1, sizeof(k1), val(1), sizeof(int)), 0);
    assert_int_equal(dlb_lru_put(c, k2, sizeof(k2), val(2), sizeof(int)), 0);
    /* Keys are bytes, not strings: past the NUL they differ. */
    assert_int_equal(*(int *)dlb_lru_get(c, k1, sizeof(k1)), 1);
    assert_int_equal(*(int *)dlb_lru_get(c, k2, sizeof(k2)), 2);
    assert_null(dlb_lru_get(c, k1, 2));
    assert_null(dlb_lru_get(c, "zz", 2));
    dlb_lru_stats(c, &n, &bytes);
    assert_int_equal(n, 2);
    assert_true(bytes > 2 * (sizeof(int) + 3));
    /* A value dropped on purpose is freed, its key free for another. */
    dlb_lru_del(c, k1, sizeof(k1));
    dlb_lru_del(c, "zz", 2);
    assert_int_equal(freed, 1);
    assert_null(dlb_lru_get(c, k1, sizeof(k1)));
    assert_int_equal(dlb_lru_put(c, k1, sizeof(k1), val(3), sizeof(int)), 0);
    assert_int_equal(*(int *)dlb_lru_get(c, k1, sizeof(k1)), 3);
    dlb_lru_stats(c, &n, &bytes);
    assert_int_equal(n, 2);
    dlb_lru_free(c);
    assert_int_equal(freed, 3);
}

static void test_least_recently_used_first(void **unused)
{
    dlb_lru_t *c = dlb_lru_new(0, count_free);
    size_t n, bytes, one;

    (void)unused;
    freed = 0;
    assert_non_null(c);
    /* A value larger than the whole budget is not kept: it stays the
     * caller's. */
    int *big = val(9);
    assert_int_equal(dlb_lru_put(c, "a", 1, big, 100), 1);
    assert_null(dlb_lru_get(c, "a", 1));
    assert_int_equal(freed, 0);
    free(big);
    dlb_lru_free(c);
    c = dlb_lru_new(1 << 20, count_free);
    assert_non_null(c);
    assert_int_equal(dlb_lru_put(c, "a", 1, val(1), 100), 0);
    dlb_lru_stats(c, &n, &one);
    assert_int_equal(n, 1);
    dlb_lru_free(c);
    freed = 0;

    /* Room for two: a get makes "a" the newest, so "b" goes first. */
    freed = 0;
    c = dlb_lru_new(2 * one + one / 2, count_free);
    assert_non_null(c);
    assert_int_equal(dlb_lru_put(c, "a", 1, val(1), 100), 0);
    assert_int_equal(dlb_lru_put(c, "b", 1, val(2), 100), 0);
    assert_non_null(dlb_lru_get(c, "a", 1));
    assert_int_equal(dlb_lru_put(c, "c", 1, val(3), 100), 0);
    assert_non_null(dlb_lru_get(c, "a", 1));
    assert_null(dlb_lru_get(c, "b", 1));
    assert_non_null(dlb_lru_get(c, "c", 1));
    dlb_lru_stats(c, &n, &bytes);
    assert_int_equal(n, 2);
    assert_true(bytes <= 2 * one + one / 2);
    assert_int_equal(freed, 1);
    dlb_lru_free(c);
    assert_int_equal(freed, 3);
}

static void test_many(void **unused)
{
    dlb_lru_t *c = dlb_lru_new(64 * 1024, count_free);
    size_t n, bytes;
    char key[32];

    (void)unused;
    freed = 0;
    assert_non_null(c);
    for (int i = 0; i < 20000; i++) {
        int len = snprintf(key, sizeof(key), "member-%d", i);
        assert_int_equal(dlb_lru_put(c, key, (size_t)len, val(i), 64), 0);
    }
    dlb_lru_stats(c, &n, &bytes);
    assert_true(bytes <= 64 * 1024);
    assert_true(n > 100 && n < 20000);
    assert_int_equal(freed + (int)n, 20000);
    /* The newest are there, with their own values. */
    for (int i = 20000 - (int)n; i < 20000; i++) {
        int len = snprintf(key, sizeof(key), "member-%d", i);
        int *v = dlb_lru_get(c, key, (size_t)len);
        assert_non_null(v);
        assert_int_equal(*v, i);
    }
    dlb_lru_free(c);
    assert_int_equal(freed, 20000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_by_bytes),
        cmocka_unit_test(test_least_recently_used_first),
        cmocka_unit_test(test_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
