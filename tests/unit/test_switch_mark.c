/* Switch stamps (env/switch/switch_mark.h): what a marker's dlb.switch header
 * and a relay's committed offset metadata hold, "<switch id>:<env>". A stamp
 * that does not parse must never be taken for one: the relay would stamp
 * records for a wrong environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "switch_mark.h"

static void test_round_trip(void **state)
{
    dlb_switch_stamp_t s = {.id = 42, .env = "green"}, back;
    char buf[64];
    (void)state;

    assert_int_equal(dlb_switch_stamp_format(&s, buf, sizeof(buf)), 8);
    assert_string_equal(buf, "42:green");
    assert_int_equal(dlb_switch_stamp_parse(buf, strlen(buf), &back), 0);
    assert_int_equal(back.id, 42);
    assert_string_equal(back.env, "green");
    /* not NUL-terminated, as in a header */
    assert_int_equal(dlb_switch_stamp_parse("7:blue_2xyz", 8, &back), 0);
    assert_int_equal(back.id, 7);
    assert_string_equal(back.env, "blue_2");
    /* switch 0: the stamp a relay adopts before any marker */
    assert_int_equal(dlb_switch_stamp_parse("0:blue", 6, &back), 0);
    assert_int_equal(back.id, 0);
}

static void test_refused(void **state)
{
    static const char *const bad[] = {"",        ":blue",    "12",     "12:",   "-1:blue",
                                      "x:blue",  "1x:blue",  "1:Blue", "1:a-b", "1:pg_x",
                                      "1: blue", "1:blue:2", NULL};
    dlb_switch_stamp_t s;
    (void)state;

    for (const char *const *b = bad; *b; b++) {
        s.id = 99;
        assert_int_equal(dlb_switch_stamp_parse(*b, strlen(*b), &s), DLB_ERR_INVALID);
        assert_int_equal(s.id, 0);
        assert_string_equal(s.env, "");
    }
    assert_int_equal(dlb_switch_stamp_parse(NULL, 0, &s), DLB_ERR_INVALID);
}

static void test_too_small(void **state)
{
    dlb_switch_stamp_t s = {.id = 123456, .env = "green"};
    char buf[8];
    (void)state;

    assert_int_equal(dlb_switch_stamp_format(&s, buf, sizeof(buf)), -1);
}

/* A marker must never carry what parse refuses: "17:(null)" was written
 * once, from a name read out of a query's range, and no relay knew it. */
static void test_format_refuses(void **state)
{
    static const char *const bad[] = {"(null)", "", "Blue", "a-b", "pg_x", "1blue", NULL};
    dlb_switch_stamp_t s = {.id = 17};
    char buf[64];
    (void)state;

    for (const char *const *b = bad; *b; b++) {
        snprintf(s.env, sizeof(s.env), "%s", *b);
        assert_int_equal(dlb_switch_stamp_format(&s, buf, sizeof(buf)), -1);
    }
    s.id = -1;
    snprintf(s.env, sizeof(s.env), "green");
    assert_int_equal(dlb_switch_stamp_format(&s, buf, sizeof(buf)), -1);
}

/* Any record with a dlb.switch header is a marker, never an event: valid
 * ones name their switch, the others are told apart (the relay
 * dead-letters them instead of copying them into every environment). */
static void test_headers(void **state)
{
    rd_kafka_headers_t *h;
    dlb_switch_stamp_t s;
    char raw[16];
    (void)state;

    assert_int_equal(dlb_switch_headers_marker(NULL, &s, raw, sizeof(raw)), DLB_SWITCH_NONE);
    assert_string_equal(raw, "");

    h = rd_kafka_headers_new(2);
    rd_kafka_header_add(h, "dlb.real", -1, "blue", -1);
    assert_int_equal(dlb_switch_headers_marker(h, &s, raw, sizeof(raw)), DLB_SWITCH_NONE);
    rd_kafka_header_add(h, DLB_SWITCH_HEADER, -1, "17:cand", -1);
    assert_int_equal(dlb_switch_headers_marker(h, &s, raw, sizeof(raw)), DLB_SWITCH_MARKER);
    assert_int_equal(s.id, 17);
    assert_string_equal(s.env, "cand");
    assert_string_equal(raw, "17:cand");
    rd_kafka_headers_destroy(h);

    h = rd_kafka_headers_new(1);
    rd_kafka_header_add(h, DLB_SWITCH_HEADER, -1, "17:(null)", -1);
    assert_int_equal(dlb_switch_headers_marker(h, &s, raw, sizeof(raw)), DLB_SWITCH_MALFORMED);
    assert_int_equal(s.id, 0);
    assert_string_equal(raw, "17:(null)");
    /* the last header counts, as librdkafka's get_last reads it */
    rd_kafka_header_add(h, DLB_SWITCH_HEADER, -1, "18:green", -1);
    assert_int_equal(dlb_switch_headers_marker(h, &s, NULL, 0), DLB_SWITCH_MARKER);
    assert_int_equal(s.id, 18);
    rd_kafka_headers_destroy(h);

    /* no value, and bytes that are no text: shown printable, cut to fit */
    h = rd_kafka_headers_new(1);
    rd_kafka_header_add(h, DLB_SWITCH_HEADER, -1, NULL, 0);
    assert_int_equal(dlb_switch_headers_marker(h, &s, raw, sizeof(raw)), DLB_SWITCH_MALFORMED);
    assert_string_equal(raw, "");
    rd_kafka_headers_destroy(h);
    h = rd_kafka_headers_new(1);
    rd_kafka_header_add(h, DLB_SWITCH_HEADER, -1,
                        "3:\x01\xff"
                        "abcdefghijklmnopq",
                        21);
    assert_int_equal(dlb_switch_headers_marker(h, &s, raw, sizeof(raw)), DLB_SWITCH_MALFORMED);
    assert_string_equal(raw, "3:??abcdefghijk");
    rd_kafka_headers_destroy(h);
}

static void test_topics(void **state)
{
    size_t n = 0;
    (void)state;

    /* the five topics a front record is copied from: every consumer input */
    for (const char *const *t = dlb_switch_topics; *t; t++)
        n++;
    assert_int_equal(n, 5);
    assert_string_equal(dlb_switch_topics[3], "plan-requests");
    assert_string_equal(dlb_switch_topics[4], "config-requests");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_too_small),  cmocka_unit_test(test_format_refuses),
        cmocka_unit_test(test_headers),    cmocka_unit_test(test_topics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
