/* A Kafka client that failed for good (librdkafka's fatal error), against
 * librdkafka's in-process mock cluster told to refuse the producer id
 * (dlb_mock_fail_request, as `dlbrain mock-kafka --fail-request` does): the
 * error callback makes /healthz and /readyz fail naming the client, every
 * produce and flush says DLB_ERR_FATAL instead of a transient error that
 * would be retried for ever, and destroying the client (a replacement)
 * makes the process healthy again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "kafka.h"
#include "metrics.h"

typedef struct fixture {
    dlb_conf_t conf;
    dlb_mock_t *mock;
    dlb_metrics_t *m;
} fixture_t;

static int setup(void **state)
{
    static fixture_t f;
    char errstr[512];

    dlb_conf_init(&f.conf);
    dlb_conf_finish(&f.conf);
    f.conf.replication = 1;
    if (dlb_mock_start(&f.mock, 1, &f.conf, errstr, sizeof(errstr)))
        fail_msg("mock cluster: %s", errstr);
    snprintf(f.conf.brokers, sizeof(f.conf.brokers), "%s", dlb_mock_bootstraps(f.mock));
    if (dlb_metrics_new(&f.m, errstr, sizeof(errstr)))
        fail_msg("metrics: %s", errstr);
    dlb_metrics_set_global(f.m);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;

    dlb_metrics_destroy(f->m);
    dlb_mock_stop(f->mock);
    dlb_conf_destroy(&f->conf);
    return 0;
}

static void test_fatal_producer(void **state)
{
    fixture_t *f = *state;
    rd_kafka_t *p = NULL;
    char errstr[1024], why[512];
    int i;

    /* A well producer first: healthy, and dlb_kafka_fatal says nothing. */
    assert_int_equal(dlb_kafka_producer_new(&f->conf, NULL, &p, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_kafka_produce(p, "dlbrain.metrics", "k", "v", 1, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(dlb_kafka_flush(p, 10000, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_kafka_fatal(p, errstr, sizeof(errstr)), 0);
    dlb_kafka_producer_destroy(p);
    assert_int_equal(dlb_metrics_healthy(f->m, why, sizeof(why)), 1);

    /* The next producer id request is refused: fatal for an idempotent producer. */
    assert_int_equal(
        dlb_mock_fail_request(f->mock, "22:CLUSTER_AUTHORIZATION_FAILED", errstr, sizeof(errstr)),
        0);
    assert_int_equal(dlb_kafka_producer_new(&f->conf, NULL, &p, errstr, sizeof(errstr)), 0);
    for (i = 0; i < 100 && !rd_kafka_fatal_error(p, NULL, 0); i++)
        rd_kafka_poll(p, 100); /* serves the error callback */
    assert_true(i < 100);
    rd_kafka_poll(p, 0);

    assert_int_equal(dlb_metrics_healthy(f->m, why, sizeof(why)), 0);
    if (!strstr(why, "failed for good (CLUSTER_AUTHORIZATION_FAILED)") ||
        !strstr(why, rd_kafka_name(p)))
        fail_msg("/healthz: %s", why);
    assert_int_equal(dlb_metrics_ready(f->m, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "failed for good"));

    assert_int_equal(dlb_kafka_fatal(p, errstr, sizeof(errstr)), DLB_ERR_FATAL);
    assert_non_null(strstr(errstr, "the producer"));
    assert_int_equal(dlb_kafka_produce(p, "dlbrain.metrics", "k", "v", 1, errstr, sizeof(errstr)),
                     DLB_ERR_FATAL);
    assert_non_null(strstr(errstr, "Cluster authorization failed"));
    assert_int_equal(dlb_kafka_flush(p, 1000, errstr, sizeof(errstr)), DLB_ERR_FATAL);
    assert_string_equal(dlb_err_name(DLB_ERR_FATAL), "fatal");

    /* Replaced: the process is healthy again. */
    dlb_kafka_producer_destroy(p);
    assert_int_equal(dlb_metrics_healthy(f->m, why, sizeof(why)), 1);
    assert_int_equal(dlb_metrics_ready(f->m, why, sizeof(why)), 1);
}

/* The registry's table of failed clients: each named until it is cleared,
 * and more clients than it holds still fail /healthz. */
static void test_failed_table(void **state)
{
    fixture_t *f = *state;
    int who[DLB_METRICS_FAILED_MAX + 2];
    char why[512], line[64];

    for (int i = 0; i < DLB_METRICS_FAILED_MAX + 2; i++) {
        snprintf(line, sizeof(line), "client %d failed", i);
        dlb_metrics_failed(&who[i], line);
    }
    assert_int_equal(dlb_metrics_healthy(f->m, why, sizeof(why)), 0);
    assert_string_equal(why, "client 0 failed");
    dlb_metrics_failed(&who[0], NULL);
    assert_int_equal(dlb_metrics_healthy(f->m, why, sizeof(why)), 0);
    for (int i = 1; i < DLB_METRICS_FAILED_MAX + 2; i++)
        dlb_metrics_failed(&who[i], NULL);
    assert_int_equal(dlb_metrics_healthy(f->m, why, sizeof(why)), 1);
    dlb_metrics_failed(NULL, "ignored");
    assert_int_equal(dlb_metrics_healthy(f->m, why, sizeof(why)), 1);
}

/* Bad --fail-request specs are refused, naming what is wrong. */
static void test_fail_request_spec(void **state)
{
    fixture_t *f = *state;
    char errstr[512];

    assert_int_equal(dlb_mock_fail_request(f->mock, "InitProducerId:CLUSTER_AUTHORIZATION_FAILED",
                                           errstr, sizeof(errstr)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(errstr, "not API_KEY:ERROR"));
    assert_int_equal(dlb_mock_fail_request(f->mock, "22:NO_SUCH_ERROR", errstr, sizeof(errstr)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(errstr, "NO_SUCH_ERROR is not a librdkafka error name"));
    assert_int_equal(dlb_mock_fail_request(f->mock, "22", errstr, sizeof(errstr)), DLB_ERR_CONF);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_request_spec),
        cmocka_unit_test(test_failed_table),
        cmocka_unit_test(test_fatal_producer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
