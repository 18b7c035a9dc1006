/* dlb_pg_hcache_*: decoded history samples kept between loads. A sample is
 * found by its key (job, time, event id) only; a load's own samples are never
 * dropped under it, whatever the budget; the least recently used go first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_pg_hcache.h"

/* A decoded sample as the store makes one: pods on the heap. */
static dlb_runtime_sample_t sample(const char *job, const char *id, int64_t t, size_t pods)
{
    dlb_runtime_sample_t s = {0};

    snprintf(s.job_uid, sizeof(s.job_uid), "%s", job);
    snprintf(s.event_id, sizeof(s.event_id), "%s", id);
    s.event_time_ms = t;
    s.global_step = t / 1000;
    s.pods = calloc(pods, sizeof(*s.pods));
    assert_non_null(s.pods);
    s.pods_cnt = pods;
    for (size_t i = 0; i < pods; i++)
        s.pods[i].memory_used = (int64_t)(t + (int64_t)i);
    return s;
}

static const dlb_runtime_sample_t *put(dlb_pg_hcache_t *c, const char *job, const char *id,
                                       int64_t t, size_t pods)
{
    dlb_runtime_sample_t s = sample(job, id, t, pods);
    const dlb_runtime_sample_t *got = dlb_pg_hcache_put(c, &s);

    assert_non_null(got);
    assert_null(s.pods); /* taken */
    return got;
}

/* The key is all three parts: another job, time or id is another sample. */
static void test_key(void **unused)
{
    dlb_pg_hcache_t *c = dlb_pg_hcache_new(1 << 20);
    const dlb_runtime_sample_t *s;

    (void)unused;
    assert_non_null(c);
    dlb_pg_hcache_begin(c);
    put(c, "j1", "e1", 1000, 3);
    s = dlb_pg_hcache_get(c, "j1", "e1", 1000);
    assert_non_null(s);
    assert_int_equal(s->pods_cnt, 3);
    assert_int_equal(s->pods[2].memory_used, 1002);
    assert_null(dlb_pg_hcache_get(c, "j2", "e1", 1000));
    assert_null(dlb_pg_hcache_get(c, "j1", "e2", 1000));
    assert_null(dlb_pg_hcache_get(c, "j1", "e1", 1001));
    dlb_pg_hcache_free(c);
}

/* Budget 0: the current load's samples stay (the history borrows them),
 * and go at the next load's first insertion. */
static void test_budget_zero_keeps_the_load(void **unused)
{
    dlb_pg_hcache_t *c = dlb_pg_hcache_new(0);
    const dlb_runtime_sample_t *a, *b;
    size_t n, bytes;

    (void)unused;
    assert_non_null(c);
    dlb_pg_hcache_begin(c);
    a = put(c, "j1", "e1", 1000, 2);
    b = put(c, "j1", "e2", 2000, 2);
    assert_ptr_equal(dlb_pg_hcache_get(c, "j1", "e1", 1000), a);
    assert_ptr_equal(dlb_pg_hcache_get(c, "j1", "e2", 2000), b);
    dlb_pg_hcache_stats(c, &n, &bytes);
    assert_int_equal(n, 2);
    assert_true(bytes > 0);
    dlb_pg_hcache_begin(c);
    put(c, "j2", "e1", 3000, 1);
    dlb_pg_hcache_stats(c, &n, &bytes);
    assert_int_equal(n, 1);
    assert_null(dlb_pg_hcache_get(c, "j1", "e1", 1000));
    assert_non_null(dlb_pg_hcache_get(c, "j2", "e1", 3000));
    dlb_pg_hcache_free(c);
}

/* Over the budget, the least recently used go: a sample a later load used
 * again outlives one inserted after it. */
static void test_lru(void **unused)
{
    dlb_pg_hcache_t *c;
    size_t one, n, bytes;

    (void)unused;
    /* The cost of one sample of 4 pods, measured. */
    assert_non_null(c = dlb_pg_hcache_new(1 << 20));
    dlb_pg_hcache_begin(c);
    put(c, "m", "e", 1, 4);
    dlb_pg_hcache_stats(c, &n, &one);
    dlb_pg_hcache_free(c);

    assert_non_null(c = dlb_pg_hcache_new(3 * one));
    dlb_pg_hcache_begin(c);
    put(c, "j", "a", 1, 4);
    put(c, "j", "b", 2, 4);
    put(c, "j", "c", 3, 4);
    dlb_pg_hcache_begin(c);
    assert_non_null(dlb_pg_hcache_get(c, "j", "a", 1)); /* a used again */
    put(c, "j", "d", 4, 4);                             /* b, the least recent, goes */
    dlb_pg_hcache_stats(c, &n, &bytes);
    assert_int_equal(n, 3);
    assert_true(bytes <= 3 * one);
    assert_null(dlb_pg_hcache_get(c, "j", "b", 2));
    assert_non_null(dlb_pg_hcache_get(c, "j", "a", 1));
    assert_non_null(dlb_pg_hcache_get(c, "j", "c", 3));
    assert_non_null(dlb_pg_hcache_get(c, "j", "d", 4));
    dlb_pg_hcache_free(c);
}

/* Many samples: every one found again, the count and bytes add up. */
static void test_many(void **unused)
{
    dlb_pg_hcache_t *c = dlb_pg_hcache_new((size_t)64 << 20);
    char id[32];
    size_t n, bytes;

    (void)unused;
    assert_non_null(c);
    dlb_pg_hcache_begin(c);
    for (int i = 0; i < 20000; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        put(c, i % 2 ? "odd" : "even", id, i, 1);
    }
    dlb_pg_hcache_stats(c, &n, &bytes);
    assert_int_equal(n, 20000);
    for (int i = 0; i < 20000; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        const dlb_runtime_sample_t *s = dlb_pg_hcache_get(c, i % 2 ? "odd" : "even", id, i);
        assert_non_null(s);
        assert_int_equal(s->pods[0].memory_used, i);
    }
    dlb_pg_hcache_free(c);
    dlb_pg_hcache_free(NULL);
}

/* A job's pods are kept with its newest sample for one fingerprint of its
 * samples: another fingerprint finds none, a new put replaces them, and
 * they go with the sample. */
static void test_pods_kept_with_newest(void **unused)
{
    dlb_pg_hcache_t *c = dlb_pg_hcache_new(1 << 20);
    const dlb_runtime_sample_t *s;
    dlb_hist_pod_t *pods;
    size_t cnt, n, bytes0, bytes1;
    uint64_t fp = dlb_pg_hcache_key_hash("j", "e1", 1000);

    (void)unused;
    assert_non_null(c);
    assert_int_not_equal(fp, dlb_pg_hcache_key_hash("j", "e1", 1001));
    assert_int_not_equal(fp, dlb_pg_hcache_key_hash("j", "e2", 1000));
    dlb_pg_hcache_begin(c);
    s = put(c, "j", "e1", 1000, 1);
    assert_null(dlb_pg_hcache_pods_get(s, fp, &cnt));
    assert_int_equal(cnt, 0);
    dlb_pg_hcache_stats(c, &n, &bytes0);
    pods = calloc(2, sizeof(*pods));
    assert_non_null(pods);
    pods[1].memory_used = 7;
    assert_ptr_equal(dlb_pg_hcache_pods_put(c, s, fp, pods, 2), pods);
    dlb_pg_hcache_stats(c, &n, &bytes1);
    assert_int_equal(bytes1, bytes0 + 2 * sizeof(*pods));
    assert_ptr_equal(dlb_pg_hcache_pods_get(s, fp, &cnt), pods);
    assert_int_equal(cnt, 2);
    assert_null(dlb_pg_hcache_pods_get(s, fp + 1, &cnt));
    pods = calloc(1, sizeof(*pods));
    assert_non_null(pods);
    assert_ptr_equal(dlb_pg_hcache_pods_put(c, s, fp + 1, pods, 1), pods);
    assert_null(dlb_pg_hcache_pods_get(s, fp, &cnt));
    assert_non_null(dlb_pg_hcache_pods_get(s, fp + 1, &cnt));
    assert_int_equal(cnt, 1);
    dlb_pg_hcache_stats(c, &n, &bytes1);
    assert_int_equal(bytes1, bytes0 + sizeof(*pods));
    dlb_pg_hcache_free(c); /* frees the pods too (ASan) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_budget_zero_keeps_the_load),
        cmocka_unit_test(test_lru),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_pods_kept_with_newest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
