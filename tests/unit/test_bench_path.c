/* A benchmark path's bookkeeping and its open loop, on a transport in
 * memory: answers counted once, good ones timed, failed and lost ones apart,
 * the bound of requests in flight kept. No durations are asserted: the loop
 * runs on the real clock, so only counts are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench_path.h"
#include "err.h"

static void test_answer(void **state)
{
    dlb_bench_path_t p;
    (void)state;

    assert_int_equal(dlb_bench_path_init(&p, "test", 4), 0);
    p.sent_ns[0] = 100;
    p.sent_ns[1] = 200;
    p.sent_ns[2] = 300;
    p.sent = 3;
    assert_int_equal(dlb_bench_path_inflight(&p), 3);
    assert_int_equal(dlb_bench_path_answer(&p, 0, 150, 1), 0);
    assert_int_equal(dlb_bench_path_answer(&p, 0, 170, 1), 0); /* again: a repeat */
    assert_int_equal(dlb_bench_path_answer(&p, 1, 900, 0), 0); /* failed: not timed */
    assert_int_equal(dlb_bench_path_answer(&p, 3, 900, 1), 0); /* never sent: ignored */
    assert_int_equal(dlb_bench_path_answer(&p, 9, 900, 1), 0); /* not ours: ignored */
    assert_int_equal(dlb_bench_path_answer(&p, -1, 900, 1), 0);
    assert_int_equal(p.received, 1);
    assert_int_equal(p.failed, 1);
    assert_int_equal(p.repeats, 1);
    assert_int_equal(dlb_bench_path_inflight(&p), 1); /* request 2 */
    assert_int_equal(p.lat.count, 1);
    assert_int_equal(p.lat.max, 50);
    /* The first and the last answer, good or not (the repeat is not one). */
    assert_int_equal(p.first_answer_ns, 150);
    assert_int_equal(p.last_answer_ns, 900);
    dlb_bench_path_free(&p);
}

static void test_rate(void **state)
{
    dlb_bench_path_t p;
    (void)state;

    assert_int_equal(dlb_bench_path_init(&p, "test", 3), 0);
    assert_true(dlb_bench_path_rate(&p) == 0);
    /* 11 starts over 0.5 s: 10 intervals, 20 a second. */
    p.sent = 11;
    p.first_ns = 1000000000;
    p.last_ns = 1500000000;
    assert_true(dlb_bench_path_rate(&p) == 20);
    /* 3 answers over 0.25 s: 8 a second. */
    p.received = 2;
    p.failed = 1;
    p.first_answer_ns = 1250000000;
    p.last_answer_ns = 1500000000;
    assert_true(dlb_bench_path_answer_rate(&p) == 8);
    dlb_bench_path_free(&p);
}

/* The transport: requests wait in a queue; each poll answers the oldest one
 * (request `never` is never answered, every `bad`-th one fails). */
typedef struct fake {
    long *queue, head, tail;
    long max_seen; /* requests in flight at a start, at most */
    long never, bad;
    long polls;
} fake_t;

static int fake_send(void *ctx, dlb_bench_path_t *p, long i, char *errstr, size_t size)
{
    fake_t *f = ctx;
    (void)errstr;
    (void)size;

    p->sent_ns[i] = dlb_lat_clock_ns();
    if (dlb_bench_path_inflight(p) + 1 > f->max_seen)
        f->max_seen = dlb_bench_path_inflight(p) + 1;
    if (i != f->never)
        f->queue[f->tail++] = i;
    return 0;
}

static int fake_poll(void *ctx, dlb_bench_path_t *p, int64_t deadline_ns, char *errstr, size_t size)
{
    fake_t *f = ctx;
    long i;
    (void)deadline_ns;

    f->polls++;
    if (f->head == f->tail)
        return 0;
    i = f->queue[f->head++];
    if (dlb_bench_path_answer(p, i, dlb_lat_clock_ns(), !(f->bad && i % f->bad == 0)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

/* Every request is due at once (10^12 a second: request i is due i/1000 ns
 * after the start, 0 ns in whole nanoseconds), so the clock plays no part:
 * with a bound of 3 the loop starts 3, then one per answer. */
static void test_run_bounded(void **state)
{
    long queue[200];
    fake_t f = {.queue = queue, .never = -1, .bad = 10};
    const dlb_bench_path_ops_t ops = {.send = fake_send, .poll = fake_poll, .ctx = &f};
    dlb_bench_path_t p;
    char errstr[128];
    (void)state;

    assert_int_equal(dlb_bench_path_init(&p, "test", 200), 0);
    assert_int_equal(dlb_bench_path_run(&p, &ops, 1e12, 10000, 3, NULL, errstr, sizeof(errstr)), 0);
    assert_int_equal(p.sent, 200);
    assert_int_equal(p.failed, 20); /* 0, 10, ..., 190 */
    assert_int_equal(p.received, 180);
    assert_int_equal(p.lat.count, 180);
    assert_int_equal(dlb_bench_path_inflight(&p), 0);
    assert_int_equal(f.max_seen, 3);
    dlb_bench_path_free(&p);
}

/* No bound, every request due at once: all start before the first answer is
 * taken; one never answered is lost once the drain (50 ms) ends. */
static void test_run_lost(void **state)
{
    long queue[50];
    fake_t f = {.queue = queue, .never = 17};
    const dlb_bench_path_ops_t ops = {.send = fake_send, .poll = fake_poll, .ctx = &f};
    dlb_bench_path_t p;
    char errstr[128];
    (void)state;

    assert_int_equal(dlb_bench_path_init(&p, "test", 50), 0);
    assert_int_equal(dlb_bench_path_run(&p, &ops, 1e12, 50, 0, NULL, errstr, sizeof(errstr)), 0);
    assert_int_equal(f.max_seen, 50);
    assert_int_equal(p.sent, 50);
    assert_int_equal(p.received, 49);
    assert_int_equal(p.failed, 0);
    assert_int_equal(dlb_bench_path_inflight(&p), 1);
    assert_int_equal(p.got[17], 0);
    dlb_bench_path_free(&p);
}

/* A stop flag already set: nothing is started. */
static void test_run_stopped(void **state)
{
    long queue[5];
    fake_t f = {.queue = queue, .never = -1};
    const dlb_bench_path_ops_t ops = {.send = fake_send, .poll = fake_poll, .ctx = &f};
    volatile sig_atomic_t stop = 1;
    dlb_bench_path_t p;
    char errstr[128];
    (void)state;

    assert_int_equal(dlb_bench_path_init(&p, "test", 5), 0);
    assert_int_equal(dlb_bench_path_run(&p, &ops, 100, 1000, 0, &stop, errstr, sizeof(errstr)), 0);
    assert_int_equal(p.sent, 0);
    assert_int_equal(f.polls, 0);
    dlb_bench_path_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer),      cmocka_unit_test(test_rate),
        cmocka_unit_test(test_run_bounded), cmocka_unit_test(test_run_lost),
        cmocka_unit_test(test_run_stopped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
