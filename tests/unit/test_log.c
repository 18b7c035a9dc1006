/* dlb_log_format: every JSON line parses (cJSON) to exactly ts, level,
 * program and msg with the original text, whatever the message holds
 * (quotes, backslashes, newlines, control characters, bytes that are not
 * UTF-8) and however long it is; text lines are one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "log.h"

#define TS "2026-01-02T03:04:05.678Z"

/* The line parsed; its fields checked against the inputs. */
static void check_json(const char *line, size_t n, int level, const char *program,
                       const char *want_msg)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    cJSON *j, *f;
    int fields = 0;

    assert_int_equal(strlen(line), n);
    assert_true(n > 0 && line[n - 1] == '\n');
    assert_null(memchr(line, '\n', n - 1)); /* one line */
    if (!(j = cJSON_ParseWithLength(line, n)))
        fail_msg("not JSON: %s", line);
    cJSON_ArrayForEach(f, j)
    {
        assert_true(cJSON_IsString(f));
        fields++;
    }
    assert_int_equal(fields, 4);
    assert_string_equal(cJSON_GetObjectItem(j, "ts")->valuestring, TS);
    assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, names[level]);
    assert_string_equal(cJSON_GetObjectItem(j, "program")->valuestring, program);
    if (want_msg)
        assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring, want_msg);
    cJSON_Delete(j);
}

static void test_json_plain(void **state)
{
    char line[512];
    size_t n;

    (void)state;
    n = dlb_log_format(line, sizeof(line), 1, TS, DLB_LOG_WARN, "optimizer",
                       "redis: down; retrying in 5000 ms");
    assert_string_equal(line, "{\"ts\":\"" TS "\",\"level\":\"warn\",\"program\":\"optimizer\","
                              "\"msg\":\"redis: down; retrying in 5000 ms\"}\n");
    check_json(line, n, DLB_LOG_WARN, "optimizer", "redis: down; retrying in 5000 ms");
}

static void test_json_escapes(void **state)
{
    const char *msg = "say \"hi\" \\ path\nline2\r\ttab \x01\x1f\x7f end";
    char line[512];
    size_t n;

    (void)state;
    n = dlb_log_format(line, sizeof(line), 1, TS, DLB_LOG_ERROR, "pro\"gram", msg);
    assert_non_null(strstr(line, "say \\\"hi\\\" \\\\ path\\u000aline2\\u000d\\u0009tab "
                                 "\\u0001\\u001f\\u007f end"));
    check_json(line, n, DLB_LOG_ERROR, "pro\"gram", msg);
}

/* Bytes that are not UTF-8 become U+FFFD; valid multi-byte text stays. */
static void test_json_utf8(void **state)
{
    char line[512];
    size_t n;

    (void)state;
    n = dlb_log_format(line, sizeof(line), 1, TS, DLB_LOG_INFO, "p",
                       "caf\xc3\xa9 \xe2\x82\xac bad:\xff\xc0\xaf cut:\xe2\x82");
    check_json(line, n, DLB_LOG_INFO, "p",
               "caf\xc3\xa9 \xe2\x82\xac bad:\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
               "cut:\xef\xbf\xbd\xef\xbf\xbd");
}

/* A message longer than the line (but room for the other fields): cut,
 * still one whole JSON object, and an escape is never split. */
static void test_json_long(void **state)
{
    char msg[3000], line[200];
    size_t n;

    (void)state;
    for (size_t i = 0; i < sizeof(msg) - 1; i++)
        msg[i] = i % 7 ? 'x' : '"';
    msg[sizeof(msg) - 1] = '\0';
    for (size_t size = 100; size <= sizeof(line); size++) {
        n = dlb_log_format(line, size, 1, TS, DLB_LOG_DEBUG, "p", msg);
        assert_true(n < size);
        check_json(line, n, DLB_LOG_DEBUG, "p", NULL);
    }
}

static void test_text(void **state)
{
    char line[512], small[40];
    size_t n;

    (void)state;
    n = dlb_log_format(line, sizeof(line), 0, TS, DLB_LOG_INFO, "relay", "a\nb\rc");
    assert_string_equal(line, TS " info  relay: a b c\n");
    assert_int_equal(n, strlen(line));
    /* too small for the header: still a line */
    n = dlb_log_format(small, sizeof(small), 0, TS, DLB_LOG_ERROR, "relay", "message");
    assert_int_equal(n, sizeof(small) - 1);
    assert_int_equal(small[n - 1], '\n');
    /* out-of-range levels are clamped */
    dlb_log_format(line, sizeof(line), 0, TS, 9, "p", "m");
    assert_non_null(strstr(line, " debug p: m"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_plain), cmocka_unit_test(test_json_escapes),
        cmocka_unit_test(test_json_utf8),  cmocka_unit_test(test_json_long),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
