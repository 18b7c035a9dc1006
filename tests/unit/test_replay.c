/* dlb_replay_*: the k-way merge step that orders a replay, time and duration
 * parsing, time formatting, the progress line. Expectations worked out by hand; the times
 * from the pipeline fixture's T0 = 1767225600000 = 2026-01-01T00:00:00Z. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "replay.h"

#define T0  INT64_C(1767225600000)
#define NOW INT64_C(1767312000000) /* 2026-01-02T00:00:00Z */

static int64_t parse_ok(const char *s)
{
    char errstr[256];
    int64_t ms = -12345;

    if (dlb_replay_parse_time(s, NOW, &ms, errstr, sizeof(errstr)))
        fail_msg("\"%s\" did not parse: %s", s, errstr);
    return ms;
}

static void test_parse_time(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("1767225600000"), T0);
    assert_int_equal(parse_ok("0"), 0);
    assert_int_equal(parse_ok("now"), NOW);
    assert_int_equal(parse_ok("2026-01-01T00:00:00Z"), T0);
    assert_int_equal(parse_ok("2026-01-01t00:00:00z"), T0);
    assert_int_equal(parse_ok("2026-01-01 00:00:00Z"), T0);
    assert_int_equal(parse_ok("2026-01-01"), T0);
    assert_int_equal(parse_ok("2026-01-01T00:00:00.25Z"), T0 + 250);
    assert_int_equal(parse_ok("2026-01-01T00:00:00.123456Z"), T0 + 123); /* truncated */
    assert_int_equal(parse_ok("2026-01-01T08:00:00.250+08:00"), T0 + 250);
    assert_int_equal(parse_ok("2025-12-31T19:30:00-04:30"), T0);
    assert_int_equal(parse_ok("2024-02-29T00:00:00Z"), INT64_C(1709164800000));
    assert_int_equal(parse_ok("1970-01-01T00:00:00Z"), 0);
    assert_int_equal(parse_ok("-1h"), NOW - 3600000);
    assert_int_equal(parse_ok("-15m"), NOW - 900000);
    assert_int_equal(parse_ok("-90s"), NOW - 90000);
    assert_int_equal(parse_ok("-500ms"), NOW - 500);
    assert_int_equal(parse_ok("-2d"), NOW - 2 * 86400000);
    assert_int_equal(parse_ok("-1h30m"), NOW - 5400000);
    assert_int_equal(parse_ok("now-1h"), NOW - 3600000);
    assert_int_equal(parse_ok("+5m"), NOW + 300000);
}

static void test_parse_time_bad(void **state)
{
    static const char *const bad[] = {"",
                                      "-",
                                      "now-",
                                      "-1x",
                                      "-h",
                                      "-1h5",
                                      "yesterday",
                                      "2026-01-01T00:00:00",   /* RFC 3339 needs the offset */
                                      "2026-01-01T00:00Z",     /* seconds are required */
                                      "2026-13-01T00:00:00Z",  /* month 13 */
                                      "2023-02-29T00:00:00Z",  /* not a leap year */
                                      "2026-01-01T24:00:00Z",  /* hour 24 */
                                      "2026-01-01T00:00:00.Z", /* empty fraction */
                                      "2026-01-01T00:00:00Zjunk",
                                      "2026-01-01T00:00:00+8:00",
                                      "99999999999999999999999",
                                      NULL};
    char errstr[256];
    int64_t ms;
    (void)state;

    for (const char *const *s = bad; *s; s++) {
        errstr[0] = '\0';
        if (dlb_replay_parse_time(*s, NOW, &ms, errstr, sizeof(errstr)) != DLB_ERR_INVALID)
            fail_msg("\"%s\" parsed as %" PRId64, *s, ms);
        assert_non_null(strstr(errstr, "RFC 3339"));
    }
}

/* --max-late: a span, 0, or none (-1: no bound). */
static void test_parse_duration(void **state)
{
    static const struct {
        const char *s;
        int64_t ms;
    } good[] = {{"none", -1},      {"0", 0},           {"500ms", 500},
                {"90s", 90000},    {"15m", 900000},    {"1h", 3600000},
                {"2d", 172800000}, {"1h30m", 5400000}, {"1d12h", 129600000}};
    static const char *const bad[] = {
        "", "-1h", "+1h", "1", "1x", "h", "1h5", "never", "99999999999999999999d", NULL};
    char errstr[256];
    int64_t ms;
    (void)state;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ms = -12345;
        if (dlb_replay_parse_duration(good[i].s, &ms, errstr, sizeof(errstr)))
            fail_msg("\"%s\" did not parse: %s", good[i].s, errstr);
        assert_int_equal(ms, good[i].ms);
    }
    for (const char *const *s = bad; *s; s++) {
        errstr[0] = '\0';
        if (dlb_replay_parse_duration(*s, &ms, errstr, sizeof(errstr)) != DLB_ERR_INVALID)
            fail_msg("\"%s\" parsed as %" PRId64, *s, ms);
        assert_non_null(strstr(errstr, "duration"));
    }
}

static void test_format_time(void **state)
{
    char buf[40];
    (void)state;

    assert_string_equal(dlb_replay_format_time(T0 + 7, buf, sizeof(buf)),
                        "2026-01-01T00:00:00.007Z");
    assert_string_equal(dlb_replay_format_time(0, buf, sizeof(buf)), "1970-01-01T00:00:00.000Z");
    assert_string_equal(dlb_replay_format_time(-1, buf, sizeof(buf)), "1969-12-31T23:59:59.999Z");
    /* What it prints, it parses back. */
    assert_int_equal(parse_ok(dlb_replay_format_time(T0 + 86399999, buf, sizeof(buf))),
                     T0 + 86399999);
}

/* Drain streams through dlb_replay_merge_pick like the replay does: only the
 * heads are visible, a taken head uncovers the stream's next record. Writes
 * "stream:ts" per record, space-separated, into out. */
#define MAX_STREAMS 16
#define MAX_LEN     64
static void merge(const int64_t streams[][MAX_LEN], const size_t *lens, size_t n, char *out,
                  size_t out_size, size_t *order_stream, size_t *order_pos)
{
    size_t pos[MAX_STREAMS] = {0}, k = 0, i;
    int64_t ts[MAX_STREAMS];
    int ready[MAX_STREAMS];

    out[0] = '\0';
    for (;;) {
        for (i = 0; i < n; i++) {
            ready[i] = pos[i] < lens[i];
            ts[i] = ready[i] ? streams[i][pos[i]] : -999; /* must be ignored */
        }
        if ((i = dlb_replay_merge_pick(ts, ready, n)) == n)
            break;
        if (out_size > strlen(out) + 24)
            snprintf(out + strlen(out), out_size - strlen(out), "%s%zu:%" PRId64, k ? " " : "", i,
                     streams[i][pos[i]]);
        if (order_stream) {
            order_stream[k] = i;
            order_pos[k] = pos[i];
        }
        pos[i]++;
        k++;
    }
}

/* Ties go to the lowest stream; a stream's own order holds even where its
 * timestamps go backwards (stream 3: 4 then 2), as a partition's must. */
static void test_merge_by_hand(void **state)
{
    static const int64_t s[][MAX_LEN] = {{1, 3, 3, 7}, {2, 3, 5}, {0, 9}, {4, 2}, {0}};
    static const size_t lens[] = {4, 3, 2, 2, 0};
    char out[512];
    (void)state;

    merge(s, lens, 5, out, sizeof(out), NULL, NULL);
    assert_string_equal(out, "2:0 0:1 1:2 0:3 0:3 1:3 3:4 3:2 1:5 0:7 2:9");
    merge(s, lens, 0, out, sizeof(out), NULL, NULL);
    assert_string_equal(out, "");
    assert_int_equal(dlb_replay_merge_pick(NULL, NULL, 0), 0);
}

/* Random partitions, each sorted by timestamp as a single producer writes
 * them: the merge yields every record once (count in = count out), each
 * partition in its order, and timestamps never go backwards. */
static void test_merge_random(void **state)
{
    static int64_t s[MAX_STREAMS][MAX_LEN];
    size_t lens[MAX_STREAMS], total, seen[MAX_STREAMS];
    size_t order_stream[MAX_STREAMS * MAX_LEN], order_pos[MAX_STREAMS * MAX_LEN];
    char out[8];
    (void)state;

    srand(7);
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)rand() % MAX_STREAMS;
        int64_t prev = INT64_MIN;

        total = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t t = rand() % 50;
            lens[i] = (size_t)rand() % MAX_LEN;
            for (size_t j = 0; j < lens[i]; j++)
                s[i][j] = t += rand() % 4; /* repeats: ties across streams */
            total += lens[i];
            seen[i] = 0;
        }
        merge((const int64_t(*)[MAX_LEN])s, lens, n, out, sizeof(out), order_stream, order_pos);
        for (size_t k = 0; k < total; k++) {
            size_t i = order_stream[k];
            assert_int_equal(order_pos[k], seen[i]); /* the partition's next record */
            seen[i]++;
            assert_true(s[i][order_pos[k]] >= prev);
            prev = s[i][order_pos[k]];
        }
        for (size_t i = 0; i < n; i++)
            assert_int_equal(seen[i], lens[i]);
    }
}

static void test_progress_line(void **state)
{
    dlb_replay_stats_t st = {0};
    char line[160];
    (void)state;

    st.read = 50;
    st.total = 200;
    st.elapsed_ms = 10000; /* 5/s, 150 to go: 30 s */
    dlb_replay_progress_line(&st, line, sizeof(line));
    assert_string_equal(line, "[######------------------] 50/200  25.0% 5/s ETA 0:30");
    st.read = st.total = 200;
    dlb_replay_progress_line(&st, line, sizeof(line));
    assert_string_equal(line, "[########################] 200/200 100.0% 20/s ETA 0:00");
    st.read = 0;
    st.elapsed_ms = 0;
    dlb_replay_progress_line(&st, line, sizeof(line));
    assert_string_equal(line, "[------------------------] 0/200   0.0% 0/s ETA ?");
    st.read = 1;
    st.total = 36001;
    st.elapsed_ms = 1000; /* 36000 s to go */
    dlb_replay_progress_line(&st, line, sizeof(line));
    assert_string_equal(line, "[------------------------] 1/36001   0.0% 1/s ETA 10:00:00");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_time),     cmocka_unit_test(test_parse_time_bad),
        cmocka_unit_test(test_format_time),    cmocka_unit_test(test_merge_by_hand),
        cmocka_unit_test(test_merge_random),   cmocka_unit_test(test_progress_line),
        cmocka_unit_test(test_parse_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
