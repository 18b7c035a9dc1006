/* dlb_vec_*: geometric growth, zeroed pushes and inserts, and refusals (a
 * byte size past SIZE_MAX, a realloc that fails) that leave the array as it
 * was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "vec.h"

/* Under AddressSanitizer a huge allocation aborts by default; the refusal
 * test needs realloc to return NULL as it does without the sanitizer. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

typedef struct item {
    int64_t a;
    char name[24];
} item_t;

/* Room doubles from 8, and a need past the doubled room is met at once. */
static void test_reserve_growth(void **state)
{
    int *v = NULL;
    size_t cap = 0;
    (void)state;

    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 0, sizeof(*v)), 0);
    assert_null(v); /* nothing needed, nothing allocated */
    assert_int_equal(cap, 0);

    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 1, sizeof(*v)), 0);
    assert_non_null(v);
    assert_int_equal(cap, 8);
    for (int i = 0; i < 8; i++)
        v[i] = i;
    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 8, sizeof(*v)), 0);
    assert_int_equal(cap, 8); /* fits: unchanged */
    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 9, sizeof(*v)), 0);
    assert_int_equal(cap, 16);
    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 100, sizeof(*v)), 0);
    assert_int_equal(cap, 128); /* 16 -> 32 -> 64 -> 128 */
    for (int i = 0; i < 8; i++)
        assert_int_equal(v[i], i); /* the elements moved with the array */
    v[99] = 99;                    /* ASan: the room is really there */
    free(v);
}

/* One element at a time, as the callers append: cap stays a power of two at
 * least cnt, and every element survives each move. */
static void test_reserve_appends(void **state)
{
    size_t *v = NULL, cap = 0, cnt;
    (void)state;

    for (cnt = 0; cnt < 5000; cnt++) {
        assert_int_equal(dlb_vec_reserve((void **)&v, &cap, cnt + 1, sizeof(*v)), 0);
        assert_true(cap >= cnt + 1);
        assert_int_equal(cap & (cap - 1), 0);
        v[cnt] = cnt * 3;
    }
    assert_int_equal(cap, 8192);
    for (size_t i = 0; i < cnt; i++)
        assert_int_equal(v[i], i * 3);
    free(v);
}

/* need * elem_size past SIZE_MAX: refused before realloc, nothing changed. */
static void test_reserve_overflow(void **state)
{
    item_t *v = NULL, *before;
    uint16_t *w = NULL;
    size_t cap = 0, wcap = 0;
    (void)state;

    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 3, sizeof(*v)), 0);
    assert_int_equal(cap, 8);
    v[2].a = 42;
    before = v;
    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, SIZE_MAX / sizeof(*v) + 1, sizeof(*v)),
                     DLB_ERR_NOMEM);
    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, SIZE_MAX, sizeof(*v)), DLB_ERR_NOMEM);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 8);
    assert_int_equal(v[2].a, 42);
    free(v);

    /* Doubling must not wrap either: from 8, the room would pass SIZE_MAX
     * bytes on its way to a need just past the limit. */
    assert_int_equal(dlb_vec_reserve((void **)&w, &wcap, 8, sizeof(*w)), 0);
    assert_int_equal(dlb_vec_reserve((void **)&w, &wcap, SIZE_MAX / 2 + 1, sizeof(*w)),
                     DLB_ERR_NOMEM);
    assert_int_equal(wcap, 8);
    free(w);
}

/* A size that fits in size_t but not in memory: realloc fails, the array and
 * its room are what they were. */
static void test_reserve_realloc_fails(void **state)
{
    int64_t *v = NULL, *before;
    size_t cap = 0;
    (void)state;

    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 5, sizeof(*v)), 0);
    for (int i = 0; i < 5; i++)
        v[i] = 100 + i;
    before = v;
    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, SIZE_MAX / 2 / sizeof(*v), sizeof(*v)),
                     DLB_ERR_NOMEM);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 8);
    for (int i = 0; i < 5; i++)
        assert_int_equal(v[i], 100 + i);
    /* Still usable: the next ordinary growth works. */
    assert_int_equal(dlb_vec_reserve((void **)&v, &cap, 9, sizeof(*v)), 0);
    assert_int_equal(cap, 16);
    assert_int_equal(v[4], 104);
    free(v);
}

static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

/* Each push grows by exactly one, counts it and hands back a zeroed slot,
 * even where realloc reuses memory that held something. */
static void test_push_zeroed(void **state)
{
    item_t *v = NULL, *e;
    size_t cnt = 0;
    (void)state;

    for (int i = 0; i < 20; i++) {
        assert_non_null(e = dlb_vec_push((void **)&v, &cnt, sizeof(*v)));
        assert_int_equal(cnt, (size_t)i + 1);
        assert_ptr_equal(e, &v[i]);
        assert_true(all_zero(e, sizeof(*e)));
        memset(e, 0xff, sizeof(*e));
        e->a = i;
    }
    for (int i = 0; i < 20; i++)
        assert_int_equal(v[i].a, i);
    /* Drop the last ten (their bytes stay 0xff in the block), push again. */
    cnt = 10;
    assert_non_null(e = dlb_vec_push((void **)&v, &cnt, sizeof(*v)));
    assert_int_equal(cnt, 11);
    assert_true(all_zero(e, sizeof(*e)));
    free(v);
}

/* Inserts keep an order: the slot is zeroed, the later elements move up. */
static void test_insert_order(void **state)
{
    int *v = NULL, *e;
    size_t cnt = 0;
    const int want[] = {0, 1, 2, 3, 4};
    (void)state;

    assert_non_null(e = dlb_vec_insert((void **)&v, &cnt, 0, sizeof(*v)));
    assert_int_equal(*e, 0);
    *e = 3;
    assert_non_null(e = dlb_vec_insert((void **)&v, &cnt, 0, sizeof(*v))); /* front */
    *e = 1;
    assert_non_null(e = dlb_vec_insert((void **)&v, &cnt, 2, sizeof(*v))); /* end */
    *e = 4;
    assert_non_null(e = dlb_vec_insert((void **)&v, &cnt, 1, sizeof(*v))); /* middle */
    assert_int_equal(*e, 0);
    *e = 2;
    assert_non_null(e = dlb_vec_insert((void **)&v, &cnt, 0, sizeof(*v)));
    assert_int_equal(cnt, 5);
    assert_memory_equal(v, want, sizeof(want));
    free(v);
}

/* A push whose bytes would wrap size_t: NULL, array and count unchanged. */
static void test_push_overflow(void **state)
{
    char *v = NULL, *before;
    size_t cnt = 0;
    (void)state;

    assert_non_null(dlb_vec_push((void **)&v, &cnt, 1));
    *v = 'x';
    before = v;
    cnt = SIZE_MAX; /* a lie, but the only way to reach the limit */
    assert_null(dlb_vec_push((void **)&v, &cnt, 1));
    assert_int_equal(cnt, SIZE_MAX);
    cnt = SIZE_MAX / 16;
    assert_null(dlb_vec_insert((void **)&v, &cnt, 0, 16));
    assert_int_equal(cnt, SIZE_MAX / 16);
    assert_ptr_equal(v, before);
    assert_int_equal(*v, 'x');
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_growth),   cmocka_unit_test(test_reserve_appends),
        cmocka_unit_test(test_reserve_overflow), cmocka_unit_test(test_reserve_realloc_fails),
        cmocka_unit_test(test_push_zeroed),      cmocka_unit_test(test_insert_order),
        cmocka_unit_test(test_push_overflow),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
