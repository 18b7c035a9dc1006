/* Derived ids (pipeline/base/id.h): a plan's from its request's event id, a
 * config match's from its trigger's. Issue 18, found by fuzz_struct: a long
 * event id was cut at the buffer, which split a UTF-8 character (a config
 * match id our own decoder and PostgreSQL refuse) and gave two requests
 * that differ only past the cut one id (the second answered with the
 * first's stored plan, whatever its job). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "configurer.h"
#include "event.h"
#include "id.h"
#include "optimizer.h"
#include "utf8.h"

#define EMOJI "\xf0\x9f\x98\x80" /* U+1F600, 4 bytes */

/* An event id of DLB_ID_MAX - 1 bytes: 'a's, then c, then 'a's up to the end
 * but the last byte, which is last. */
static void long_id(char *id, size_t at, const char *c, char last)
{
    size_t n = DLB_ID_MAX - 1;

    memset(id, 'a', n);
    memcpy(id + at, c, strlen(c));
    id[n - 1] = last;
    id[n] = '\0';
}

static void assert_utf8(const char *s)
{
    assert_int_equal(dlb_utf8_check(s, strlen(s)), strlen(s));
}

static void test_short_ids_unchanged(void **state)
{
    dlb_plan_request_t req = {.event_id = "req-" EMOJI "-1"};
    char buf[DLB_ID_MAX];

    (void)state;
    dlb_plan_id(&req, buf, sizeof(buf));
    assert_string_equal(buf, "plan-req-" EMOJI "-1");
    dlb_config_match_id("job-ev-1", buf, sizeof(buf));
    assert_string_equal(buf, "cfg-job-ev-1");
    /* The longest that fits whole: 127 bytes with the prefix. */
    memset(req.event_id, 'b', DLB_ID_MAX - 6);
    req.event_id[DLB_ID_MAX - 6] = '\0';
    dlb_plan_id(&req, buf, sizeof(buf));
    assert_int_equal(strlen(buf), DLB_ID_MAX - 1);
    assert_memory_equal(buf, "plan-bbb", 8);
    assert_null(strchr(buf, '~'));
}

/* The cut falls inside a 4-byte character at every offset. */
static void test_no_split_character(void **state)
{
    char id[DLB_ID_MAX], buf[DLB_ID_MAX];
    dlb_plan_request_t req;

    (void)state;
    for (size_t at = 100; at + 4 < DLB_ID_MAX - 1; at++) {
        long_id(id, at, EMOJI, 'z');
        assert_utf8(id);
        memset(&req, 0, sizeof(req));
        memcpy(req.event_id, id, sizeof(req.event_id));
        dlb_plan_id(&req, buf, sizeof(buf));
        assert_true(strlen(buf) < DLB_ID_MAX);
        assert_utf8(buf);
        dlb_config_match_id(id, buf, sizeof(buf));
        assert_true(strlen(buf) < DLB_ID_MAX);
        assert_utf8(buf);
    }
}

/* Two ids equal up to their last byte: two plan ids, two match ids. */
static void test_distinct_ids_stay_distinct(void **state)
{
    char a[DLB_ID_MAX], b[DLB_ID_MAX], pa[DLB_ID_MAX], pb[DLB_ID_MAX];
    dlb_plan_request_t ra = {0}, rb = {0};

    (void)state;
    long_id(a, 0, "", 'x');
    long_id(b, 0, "", 'y');
    memcpy(ra.event_id, a, sizeof(a));
    memcpy(rb.event_id, b, sizeof(b));
    dlb_plan_id(&ra, pa, sizeof(pa));
    dlb_plan_id(&rb, pb, sizeof(pb));
    assert_string_not_equal(pa, pb);
    assert_memory_equal(pa, "plan-aaa", 8);
    assert_int_equal(strlen(pa), DLB_ID_MAX - 1);
    dlb_config_match_id(a, pa, sizeof(pa));
    dlb_config_match_id(b, pb, sizeof(pb));
    assert_string_not_equal(pa, pb);
    /* Deterministic: a redelivered request gets the same id. */
    dlb_config_match_id(b, pa, sizeof(pa));
    assert_string_equal(pa, pb);
}

static void test_derive_edges(void **state)
{
    char buf[32];

    (void)state;
    /* 31 bytes and the NUL: whole; one more: shortened. */
    dlb_id_derive("p-", "01234567890123456789012345678", buf, sizeof(buf));
    assert_string_equal(buf, "p-01234567890123456789012345678");
    dlb_id_derive("p-", "012345678901234567890123456789", buf, sizeof(buf));
    assert_int_equal(strlen(buf), 31);
    assert_memory_equal(buf, "p-012345678901~", 15);
    /* Too small for a hash: cut, at a character boundary, terminated. */
    dlb_id_derive("prefix-", "id", buf, 4);
    assert_string_equal(buf, "pre");
    dlb_id_derive("p-", "a" EMOJI "b", buf, 6);
    assert_string_equal(buf, "p-a");
    dlb_id_derive("prefix-", "id", buf, 0);
    assert_string_equal(buf, "p-a");
}

static void test_utf8_cut(void **state)
{
    static const char s[] = "ab" EMOJI "c\xc3\xa9";

    (void)state;
    assert_int_equal(dlb_utf8_cut(s, strlen(s), 100), strlen(s));
    assert_int_equal(dlb_utf8_cut(s, strlen(s), 2), 2);
    assert_int_equal(dlb_utf8_cut(s, strlen(s), 3), 2);
    assert_int_equal(dlb_utf8_cut(s, strlen(s), 5), 2);
    assert_int_equal(dlb_utf8_cut(s, strlen(s), 6), 6);
    assert_int_equal(dlb_utf8_cut(s, strlen(s), 8), 7);
    assert_int_equal(dlb_utf8_cut(s, strlen(s), 0), 0);
    /* Bytes of no sequence are cut one by one. */
    assert_int_equal(dlb_utf8_cut("\xff\xfe\xfd", 3, 2), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_ids_unchanged),
        cmocka_unit_test(test_no_split_character),
        cmocka_unit_test(test_distinct_ids_stay_distinct),
        cmocka_unit_test(test_derive_edges),
        cmocka_unit_test(test_utf8_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
