/* dlb_metrics_*: counters, gauges, histograms (cumulative buckets, _sum,
 * _count), label escaping, the exact text format of a small registry,
 * concurrent updates from threads, the global registry's look-ups, the
 * probes, and the HTTP endpoint answering on an ephemeral port. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "metrics.h"

static const dlb_http_conf_t test_bounds = {64, 16, 5000};

static dlb_metrics_t *new_registry(void)
{
    dlb_metrics_t *m;
    char errstr[256];

    assert_int_equal(dlb_metrics_new(&m, errstr, sizeof(errstr)), 0);
    return m;
}

static char *render(dlb_metrics_t *m)
{
    char *out;
    size_t len;

    assert_int_equal(dlb_metrics_render(m, &out, &len), 0);
    assert_int_equal(strlen(out), len);
    return out;
}

static void test_empty(void **state)
{
    dlb_metrics_t *m = new_registry();
    char *out = render(m);

    (void)state;
    assert_string_equal(out, "");
    free(out);
    dlb_metrics_destroy(m);
    dlb_metrics_destroy(NULL);
}

/* The whole output of a small registry, byte for byte. */
static void test_render_exact(void **state)
{
    static const double b[] = {0.1, 1, 2.5};
    dlb_metrics_t *m = new_registry();
    dlb_series_t *c1, *c2, *g, *h;
    char *out;

    (void)state;
    c1 = dlb_metrics_series(m, DLB_COUNTER, "dlbrain_things_total", "Things seen", "topic",
                            DLB_LV("a.b"), NULL, 0);
    c2 = dlb_metrics_series(m, DLB_COUNTER, "dlbrain_things_total", "Things seen", "topic",
                            DLB_LV("c"), NULL, 0);
    g = dlb_metrics_series(m, DLB_GAUGE, "dlbrain_level", "A level\\with \"quotes\"\nand lines", "",
                           NULL, NULL, 0);
    h = dlb_metrics_series(m, DLB_HISTOGRAM, "dlbrain_wait_seconds", "Waits", "", NULL, b, 3);
    assert_non_null(c1);
    assert_non_null(c2);
    assert_non_null(g);
    assert_non_null(h);
    /* the same name and values give the same series back */
    assert_ptr_equal(dlb_metrics_series(m, DLB_COUNTER, "dlbrain_things_total", "Things seen",
                                        "topic", DLB_LV("a.b"), NULL, 0),
                     c1);
    dlb_metric_add(c1, 3);
    dlb_metric_add(c1, 4);
    dlb_metric_add(c2, 1);
    dlb_metric_set(g, -1.5);
    dlb_metric_observe(h, 0.05); /* le 0.1 */
    dlb_metric_observe(h, 0.1);  /* le 0.1: bounds are inclusive */
    dlb_metric_observe(h, 2);    /* le 2.5 */
    dlb_metric_observe(h, 100);  /* +Inf only */
    out = render(m);
    assert_string_equal(out, "# HELP dlbrain_things_total Things seen\n"
                             "# TYPE dlbrain_things_total counter\n"
                             "dlbrain_things_total{topic=\"a.b\"} 7\n"
                             "dlbrain_things_total{topic=\"c\"} 1\n"
                             "# HELP dlbrain_level A level\\\\with \"quotes\"\\nand lines\n"
                             "# TYPE dlbrain_level gauge\n"
                             "dlbrain_level -1.5\n"
                             "# HELP dlbrain_wait_seconds Waits\n"
                             "# TYPE dlbrain_wait_seconds histogram\n"
                             "dlbrain_wait_seconds_bucket{le=\"0.1\"} 2\n"
                             "dlbrain_wait_seconds_bucket{le=\"1\"} 2\n"
                             "dlbrain_wait_seconds_bucket{le=\"2.5\"} 3\n"
                             "dlbrain_wait_seconds_bucket{le=\"+Inf\"} 4\n"
                             "dlbrain_wait_seconds_sum 102.15\n"
                             "dlbrain_wait_seconds_count 4\n");
    assert_true(dlb_metric_value(c1) == 7);
    assert_true(dlb_metric_value(g) == -1.5);
    assert_true(dlb_metric_value(h) == 4);
    free(out);
    dlb_metrics_destroy(m);
}

static void test_labels(void **state)
{
    static const double b[] = {1};
    dlb_metrics_t *m = new_registry();
    dlb_series_t *s, *h;
    char *out;

    (void)state;
    s = dlb_metrics_series(m, DLB_COUNTER, "dlbrain_odd_total", "Odd", "a,b",
                           DLB_LV("q\"uote", "back\\slash\nnew,line"), NULL, 0);
    h = dlb_metrics_series(m, DLB_HISTOGRAM, "dlbrain_h_seconds", "H", "topic,partition",
                           DLB_LV("t", "3"), b, 1);
    assert_non_null(s);
    assert_non_null(h);
    dlb_metric_add(s, 1);
    dlb_metric_observe(h, 0.5);
    out = render(m);
    assert_non_null(
        strstr(out, "dlbrain_odd_total{a=\"q\\\"uote\",b=\"back\\\\slash\\nnew,line\"} 1\n"));
    assert_non_null(
        strstr(out, "dlbrain_h_seconds_bucket{topic=\"t\",partition=\"3\",le=\"1\"} 1\n"));
    assert_non_null(strstr(out, "dlbrain_h_seconds_sum{topic=\"t\",partition=\"3\"} 0.5\n"));
    assert_non_null(strstr(out, "dlbrain_h_seconds_count{topic=\"t\",partition=\"3\"} 1\n"));
    free(out);
    dlb_metrics_destroy(m);
}

/* Bugs are refused, not rendered as broken output. */
static void test_refused(void **state)
{
    dlb_metrics_t *m = new_registry();

    (void)state;
    assert_non_null(dlb_metrics_series(m, DLB_COUNTER, "dlbrain_x_total", "X", "", NULL, NULL, 0));
    /* another type or other labels under the same name */
    assert_null(dlb_metrics_series(m, DLB_GAUGE, "dlbrain_x_total", "X", "", NULL, NULL, 0));
    assert_null(
        dlb_metrics_series(m, DLB_COUNTER, "dlbrain_x_total", "X", "a", DLB_LV("1"), NULL, 0));
    /* bad names: a metric, a label, the reserved le, labels without values */
    assert_null(dlb_metrics_series(m, DLB_COUNTER, "9lives", "X", "", NULL, NULL, 0));
    assert_null(dlb_metrics_series(m, DLB_COUNTER, "dlbrain-dash", "X", "", NULL, NULL, 0));
    assert_null(dlb_metrics_series(m, DLB_GAUGE, "dlbrain_y", "Y", "a:b", DLB_LV("1"), NULL, 0));
    assert_null(dlb_metrics_series(m, DLB_GAUGE, "dlbrain_z", "Z", "le", DLB_LV("1"), NULL, 0));
    assert_null(dlb_metrics_series(m, DLB_GAUGE, "dlbrain_w", "W", "a", NULL, NULL, 0));
    /* updates through NULL are no-ops */
    dlb_metric_add(NULL, 1);
    dlb_metric_set(NULL, 1);
    dlb_metric_observe(NULL, 1);
    dlb_metric_hide(NULL);
    assert_true(dlb_metric_value(NULL) == 0);
    dlb_metrics_destroy(m);
}

static void test_hide(void **state)
{
    dlb_metrics_t *m = new_registry();
    dlb_series_t *a, *b;
    char *out;

    (void)state;
    a = dlb_metrics_series(m, DLB_GAUGE, "dlbrain_lag", "Lag", "partition", DLB_LV("0"), NULL, 0);
    b = dlb_metrics_series(m, DLB_GAUGE, "dlbrain_lag", "Lag", "partition", DLB_LV("1"), NULL, 0);
    dlb_metric_set(a, 5);
    dlb_metric_set(b, 7);
    dlb_metric_hide(a);
    out = render(m);
    assert_null(strstr(out, "partition=\"0\""));
    assert_non_null(strstr(out, "dlbrain_lag{partition=\"1\"} 7\n"));
    free(out);
    dlb_metric_set(a, 0); /* set again: shown again */
    out = render(m);
    assert_non_null(strstr(out, "dlbrain_lag{partition=\"0\"} 0\n"));
    free(out);
    dlb_metrics_destroy(m);
}

#define THREADS 8
#define ADDS    100000

typedef struct worker {
    dlb_series_t *c, *h;
} worker_t;

static void *work(void *arg)
{
    const worker_t *w = arg;

    for (int i = 0; i < ADDS; i++) {
        dlb_metric_add(w->c, 1);
        dlb_metric_observe(w->h, 0.25);
    }
    return NULL;
}

/* Updates from many threads while another renders: nothing is lost. */
static void test_threads(void **state)
{
    static const double b[] = {0.5};
    dlb_metrics_t *m = new_registry();
    pthread_t t[THREADS];
    worker_t w;
    char *out, want[128];

    (void)state;
    w.c = dlb_metrics_series(m, DLB_COUNTER, "dlbrain_n_total", "N", "", NULL, NULL, 0);
    w.h = dlb_metrics_series(m, DLB_HISTOGRAM, "dlbrain_d_seconds", "D", "", NULL, b, 1);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, work, &w), 0);
    for (int i = 0; i < 20; i++)
        free(render(m));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    out = render(m);
    snprintf(want, sizeof(want), "dlbrain_n_total %d\n", THREADS * ADDS);
    assert_non_null(strstr(out, want));
    snprintf(want, sizeof(want), "dlbrain_d_seconds_bucket{le=\"0.5\"} %d\n", THREADS * ADDS);
    assert_non_null(strstr(out, want));
    /* 0.25 is exact in binary: the sum too */
    snprintf(want, sizeof(want), "dlbrain_d_seconds_sum %d\n", THREADS * ADDS / 4);
    assert_non_null(strstr(out, want));
    free(out);
    dlb_metrics_destroy(m);
}

/* Without a global registry look-ups return NULL; with one they register. */
static void test_global(void **state)
{
    dlb_metric_slot_t slot = {0};
    dlb_metrics_t *m;
    char *out, why[256];

    (void)state;
    assert_null(dlb_metrics_global());
    assert_null(dlb_metric_counter("dlbrain_a_total", "A", "", NULL));
    assert_null(dlb_metric_slot_histogram(&slot, "dlbrain_s_seconds", "S", "", NULL));
    dlb_metrics_dep(DLB_DEP_KAFKA, 1); /* no-op */
    dlb_metrics_beat();

    m = new_registry();
    dlb_metrics_set_global(m);
    assert_ptr_equal(dlb_metrics_global(), m);
    /* readiness: nothing reported (not ready), then each dependency as reported */
    assert_int_equal(dlb_metrics_ready(m, why, sizeof(why)), 0);
    assert_string_equal(why, "no dependency has answered yet");
    dlb_metrics_dep(DLB_DEP_POSTGRES, 0);
    assert_int_equal(dlb_metrics_ready(m, why, sizeof(why)), 0);
    assert_string_equal(why, "postgres down");
    dlb_metrics_dep(DLB_DEP_KAFKA, 1);
    dlb_metrics_dep(DLB_DEP_POSTGRES, 1);
    assert_int_equal(dlb_metrics_ready(m, why, sizeof(why)), 1);
    assert_string_equal(why, "kafka up, postgres up");
    assert_int_equal(dlb_metrics_healthy(m, why, sizeof(why)), 1);

    dlb_metric_add(dlb_metric_errors("decode"), 2);
    dlb_metric_observe(dlb_metric_slot_histogram(&slot, "dlbrain_s_seconds", "S", "", NULL), 0.001);
    /* the slot keeps its series: no second look-up */
    assert_non_null(slot.s);
    assert_ptr_equal(dlb_metric_slot_histogram(&slot, "dlbrain_s_seconds", "S", "", NULL), slot.s);
    out = render(m);
    assert_non_null(strstr(out, "dlbrain_errors_total{class=\"decode\"} 2\n"));
    assert_non_null(strstr(out, "dlbrain_dependency_up{dependency=\"postgres\"} 1\n"));
    assert_non_null(strstr(out, "dlbrain_s_seconds_bucket{le=\"0.001\"} 1\n"));
    free(out);
    /* destroying the global registry uninstalls it; the slot looks up again */
    dlb_metrics_destroy(m);
    assert_null(dlb_metrics_global());
    assert_null(dlb_metric_slot_histogram(&slot, "dlbrain_s_seconds", "S", "", NULL));
}

/* GET path from 127.0.0.1:port; the whole response into buf. */
static void http_get(int port, const char *path, char *buf, size_t size)
{
    struct sockaddr_in sa = {0};
    char req[256];
    size_t n = 0;
    ssize_t r;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fd);
}

static void test_http(void **state)
{
    dlb_metrics_t *m = new_registry(), *other = new_registry();
    char errstr[256], buf[8192];
    int port;

    (void)state;
    dlb_metric_add(
        dlb_metrics_series(m, DLB_COUNTER, "dlbrain_hits_total", "Hits", "", NULL, NULL, 0), 5);
    assert_int_equal(dlb_metrics_serve(m, "127.0.0.1", 0, 60, &test_bounds, errstr, sizeof(errstr)),
                     0);
    port = dlb_metrics_port(m);
    assert_true(port > 0);
    http_get(port, "/metrics", buf, sizeof(buf));
    if (!strstr(buf, " 200 OK\r\n"))
        fail_msg("response: %s", buf);
    assert_non_null(strstr(buf, "text/plain; version=0.0.4"));
    assert_non_null(strstr(buf, "\r\n\r\n# HELP dlbrain_hits_total Hits\n"));
    assert_non_null(strstr(buf, "dlbrain_hits_total 5\n"));
    http_get(port, "/healthz", buf, sizeof(buf));
    assert_non_null(strstr(buf, " 200 "));
    /* Not ready before a dependency has answered, then ready. */
    http_get(port, "/readyz", buf, sizeof(buf));
    assert_non_null(strstr(buf, " 503 "));
    assert_non_null(strstr(buf, "no dependency has answered yet"));
    dlb_metrics_set_global(m);
    dlb_metrics_dep(DLB_DEP_KAFKA, 1);
    http_get(port, "/readyz", buf, sizeof(buf));
    assert_non_null(strstr(buf, " 200 "));
    http_get(port, "/nothing", buf, sizeof(buf));
    assert_non_null(strstr(buf, " 404 "));

    /* the port in use: an error naming it, not a silent process */
    assert_int_equal(
        dlb_metrics_serve(other, "127.0.0.1", port, 60, &test_bounds, errstr, sizeof(errstr)),
        DLB_ERR_CONF);
    assert_non_null(strstr(errstr, "Address already in use"));
    assert_int_equal(
        dlb_metrics_serve(other, "not-an-ip", 0, 60, &test_bounds, errstr, sizeof(errstr)),
        DLB_ERR_CONF);
    assert_int_equal(
        dlb_metrics_serve(other, "127.0.0.1", 70000, 60, &test_bounds, errstr, sizeof(errstr)),
        DLB_ERR_CONF);
    assert_int_equal(dlb_metrics_port(other), 0);
    dlb_metrics_destroy(other);
    dlb_metrics_destroy(m);
}

/* A consumer holds many sockets (librdkafka, PostgreSQL, Redis): the server
 * must answer when its own descriptors are past FD_SETSIZE, where select()
 * cannot go. */
static void test_http_high_fd(void **state)
{
    dlb_metrics_t *m = new_registry();
    struct rlimit rl;
    char errstr[256], buf[4096];
    int fds[FD_SETSIZE + 8], n = 0;

    (void)state;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < FD_SETSIZE + 64) {
        if (rl.rlim_max < FD_SETSIZE + 64)
            fail_msg("RLIMIT_NOFILE hard limit %lu: cannot test descriptors past FD_SETSIZE",
                     (unsigned long)rl.rlim_max);
        rl.rlim_cur = FD_SETSIZE + 64;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    while (n < (int)(sizeof(fds) / sizeof(fds[0]))) {
        fds[n] = open("/dev/null", O_RDONLY);
        assert_true(fds[n] >= 0);
        n++;
    }
    assert_true(fds[n - 1] >= FD_SETSIZE);
    assert_int_equal(dlb_metrics_serve(m, "127.0.0.1", 0, 60, &test_bounds, errstr, sizeof(errstr)),
                     0);
    http_get(dlb_metrics_port(m), "/healthz", buf, sizeof(buf));
    if (!strstr(buf, " 200 "))
        fail_msg("/healthz with descriptors past FD_SETSIZE: \"%s\"", buf);
    dlb_metrics_destroy(m);
    while (n > 0)
        close(fds[--n]);
}

/* /healthz fails once the loop stalls longer than the limit. */
static void test_stall(void **state)
{
    dlb_metrics_t *m = new_registry();
    char errstr[256], why[256];

    (void)state;
    assert_int_equal(dlb_metrics_serve(m, "127.0.0.1", 0, 1, &test_bounds, errstr, sizeof(errstr)),
                     0);
    dlb_metrics_set_global(m);
    assert_int_equal(dlb_metrics_healthy(m, why, sizeof(why)), 1);
    sleep(2);
    assert_int_equal(dlb_metrics_healthy(m, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "has not come round"));
    dlb_metrics_beat();
    assert_int_equal(dlb_metrics_healthy(m, why, sizeof(why)), 1);
    dlb_metrics_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),  cmocka_unit_test(test_render_exact),
        cmocka_unit_test(test_labels), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_hide),   cmocka_unit_test(test_threads),
        cmocka_unit_test(test_global), cmocka_unit_test(test_http),
        cmocka_unit_test(test_stall),  cmocka_unit_test(test_http_high_fd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
