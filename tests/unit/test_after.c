/* dlb.after: the header value round-trips, every malformed value is refused
 * with the item and what is wrong, and the per-job cache keeps the highest
 * acknowledged offset per topic in fixed memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "after.h"
#include "err.h"

static void test_note_format_parse(void **state)
{
    dlb_after_t a = {0}, b;
    char buf[DLB_AFTER_VALUE_MAX + 1], err[256];
    (void)state;

    assert_int_equal(dlb_after_format(&a, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
    assert_int_equal(dlb_after_note(&a, "dev.job-events", 3, 41), 0);
    assert_int_equal(dlb_after_note(&a, "dev.metrics", 3, 7), 0);
    assert_int_equal(dlb_after_note(&a, "dev.job-events", 3, 40), 0); /* older: kept 41 */
    assert_int_equal(dlb_after_note(&a, "dev.metrics", 3, 9), 0);
    assert_int_equal(a.cnt, 2);
    assert_int_equal(dlb_after_format(&a, buf, sizeof(buf)), 35);
    assert_string_equal(buf, "dev.job-events:3:41,dev.metrics:3:9");
    assert_int_equal(dlb_after_parse(buf, strlen(buf), &b, err, sizeof(err)), 0);
    assert_int_equal(b.cnt, 2);
    assert_string_equal(b.pos[0].topic, "dev.job-events");
    assert_int_equal(b.pos[0].partition, 3);
    assert_int_equal(b.pos[0].offset, 41);
    assert_string_equal(b.pos[1].topic, "dev.metrics");
    assert_int_equal(b.pos[1].offset, 9);
    /* The empty value: a producer that depends on nothing it wrote. */
    assert_int_equal(dlb_after_parse("", 0, &b, err, sizeof(err)), 0);
    assert_int_equal(b.cnt, 0);
    /* Extremes. */
    assert_int_equal(dlb_after_parse("t:2147483647:9223372036854775807", 32, &b, err, sizeof(err)),
                     0);
    assert_int_equal(b.pos[0].partition, INT32_MAX);
    assert_int_equal(b.pos[0].offset, INT64_MAX);
    /* Too small a buffer: refused, and left empty. */
    assert_int_equal(dlb_after_format(&a, buf, 10), DLB_ERR_INVALID);
    assert_string_equal(buf, "");
}

static void test_note_refusals(void **state)
{
    dlb_after_t a = {0};
    char topic[300];
    (void)state;

    assert_int_equal(dlb_after_note(&a, "", 0, 1), DLB_ERR_INVALID);
    assert_int_equal(dlb_after_note(&a, "a:b", 0, 1), DLB_ERR_INVALID);
    assert_int_equal(dlb_after_note(&a, "t", -1, 1), DLB_ERR_INVALID);
    assert_int_equal(dlb_after_note(&a, "t", 0, -1), DLB_ERR_INVALID);
    memset(topic, 'x', 250);
    topic[250] = '\0';
    assert_int_equal(dlb_after_note(&a, topic, 0, 1), DLB_ERR_INVALID);
    topic[249] = '\0';
    assert_int_equal(dlb_after_note(&a, topic, 0, 1), 0);
    for (int p = 1; p < DLB_AFTER_MAX; p++)
        assert_int_equal(dlb_after_note(&a, "t", p, 1), 0);
    assert_int_equal(dlb_after_note(&a, "t", 99, 1), DLB_ERR_INVALID);
    assert_int_equal(a.cnt, DLB_AFTER_MAX);
}

static void expect_refused(const char *value, const char *want)
{
    dlb_after_t a;
    char err[256] = "";

    assert_int_equal(dlb_after_parse(value, strlen(value), &a, err, sizeof(err)), DLB_ERR_INVALID);
    if (strcmp(err, want))
        fail_msg("%s: got [%s], want [%s]", value, err, want);
}

static void test_parse_refusals(void **state)
{
    char big[DLB_AFTER_VALUE_MAX + 2];
    (void)state;

    expect_refused("x", "header dlb.after: item 1: expected <topic>:<partition>:<offset>");
    expect_refused("t:0:1,", "header dlb.after: item 2: expected <topic>:<partition>:<offset>");
    expect_refused("t:0:1,,t:0:2", "header dlb.after: item 2: expected "
                                   "<topic>:<partition>:<offset>");
    expect_refused("a b:0:1", "header dlb.after: item 1: the topic is not a Kafka topic name (1 "
                              "to 249 of a-z A-Z 0-9 . _ -)");
    expect_refused(":0:1", "header dlb.after: item 1: the topic is not a Kafka topic name (1 to "
                           "249 of a-z A-Z 0-9 . _ -)");
    expect_refused("t:-1:1",
                   "header dlb.after: item 1: the partition is not a number from 0 to 2147483647");
    expect_refused("t:2147483648:1",
                   "header dlb.after: item 1: the partition is not a number from 0 to 2147483647");
    expect_refused("t:0:1:2", "header dlb.after: item 1: the offset is not a number from 0 to "
                              "9223372036854775807");
    expect_refused("t:0:9223372036854775808", "header dlb.after: item 1: the offset is not a "
                                              "number from 0 to 9223372036854775807");
    expect_refused("t:0: 1", "header dlb.after: item 1: the offset is not a number from 0 to "
                             "9223372036854775807");
    expect_refused("t:0:", "header dlb.after: item 1: the offset is not a number from 0 to "
                           "9223372036854775807");
    expect_refused("t:0:1,t:1:1,t:2:1,t:3:1,t:4:1,t:5:1,t:6:1,t:7:1,t:8:1",
                   "header dlb.after: more than 8 positions");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    expect_refused(big, "header dlb.after: 2049 bytes, more than 2048");
}

static void test_cache(void **state)
{
    const char *const topics[] = {"e.job-events", "e.metrics", "e.k8s-events"};
    dlb_after_cache_t *c = dlb_after_cache_new(topics, 3, 2);
    dlb_after_t a;
    char buf[256];
    (void)state;

    assert_non_null(c);
    assert_int_equal(dlb_after_cache_get(c, "j1", &a), 0);
    dlb_after_cache_note(c, "j1", 2, "e.metrics", 4, 10);
    dlb_after_cache_note(c, "j1", 2, "e.metrics", 4, 8); /* reported late: kept 10 */
    dlb_after_cache_note(c, "j1", 2, "e.job-events", 4, 3);
    dlb_after_cache_note(c, "j1", 2, "e.plan-requests", 4, 99); /* not followed */
    dlb_after_cache_note(c, "j1", 2, "e.metrics", -1, 99);      /* not a position */
    assert_int_equal(dlb_after_cache_get(c, "j1", &a), 1);
    assert_true(dlb_after_format(&a, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "e.job-events:4:3,e.metrics:4:10");
    /* Two slots, three jobs: a job whose slot another took has no
     * positions, and never another job's. */
    dlb_after_cache_note(c, "j2", 2, "e.metrics", 1, 5);
    dlb_after_cache_note(c, "j3", 2, "e.metrics", 2, 6);
    {
        int held = 0;
        const char *jobs[] = {"j1", "j2", "j3"};
        for (int i = 0; i < 3; i++) {
            if (!dlb_after_cache_get(c, jobs[i], &a))
                continue;
            held++;
            assert_int_equal(a.pos[a.cnt - 1].partition, i == 0 ? 4 : i);
        }
        assert_true(held >= 1 && held <= 2);
    }
    assert_int_equal(dlb_after_cache_get(c, "", &a), 0);
    dlb_after_cache_free(c);
    /* More topics than a cache follows, or none of its slots. */
    assert_null(dlb_after_cache_new(topics, DLB_AFTER_CACHE_TOPICS + 1, 2));
    assert_null(dlb_after_cache_new(topics, 3, 0));
    dlb_after_cache_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_note_format_parse),
        cmocka_unit_test(test_note_refusals),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
