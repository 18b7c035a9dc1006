/* The dlb.after header a plan request carries, produced through librdkafka's
 * in-process mock cluster: a followed producer names its job's own events;
 * one following the whole (the simulator) names everything it wrote to the
 * job's partition, other jobs' events included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "conf.h"
#include "kafka.h"

#include <librdkafka/rdkafka_mock.h> /* after rdkafka.h, which kafka.h includes */

typedef struct fixture {
    rd_kafka_t *mock_rk;
    rd_kafka_mock_cluster_t *mc;
    dlb_conf_t conf;
} fixture_t;

static fixture_t fx;

static int setup(void **state)
{
    const char *topics[] = {DLB_TOPIC_JOB_EVENTS, DLB_TOPIC_METRICS, DLB_TOPIC_K8S_EVENTS,
                            DLB_TOPIC_PLAN_REQUESTS};
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    char name[256], err[256];

    rd_kafka_conf_set(kc, "log_level", "3", NULL, 0);
    if (!(fx.mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, NULL, 0)) ||
        !(fx.mc = rd_kafka_mock_cluster_new(fx.mock_rk, 1)))
        return -1;
    dlb_conf_init(&fx.conf);
    for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++)
        if (rd_kafka_mock_topic_create(
                fx.mc, dlb_conf_topic(&fx.conf, topics[i], name, sizeof(name)), 1, 1))
            return -1;
    if (dlb_conf_set(&fx.conf, "brokers", rd_kafka_mock_cluster_bootstraps(fx.mc), err,
                     sizeof(err)))
        return -1;
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rd_kafka_mock_cluster_destroy(fx.mc);
    rd_kafka_destroy(fx.mock_rk);
    return 0;
}

static void produce(rd_kafka_t *p, const char *topic, const char *key)
{
    char t[256], err[256];

    assert_int_equal(dlb_kafka_produce(p, dlb_conf_topic(&fx.conf, topic, t, sizeof(t)), key, "x",
                                       1, err, sizeof(err)),
                     0);
}

/* The dlb.after value of the request at offset of plan-requests [0]. */
static void request_header(long offset, char *out, size_t size)
{
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_headers_t *hdrs;
    rd_kafka_message_t *m = NULL;
    rd_kafka_t *c;
    const void *val;
    size_t len;
    char t[256];

    rd_kafka_conf_set(kc, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(fx.mc), NULL, 0);
    rd_kafka_conf_set(kc, "group.id", "test-kafka-after", NULL, 0);
    assert_non_null(c = rd_kafka_new(RD_KAFKA_CONSUMER, kc, NULL, 0));
    rd_kafka_topic_partition_list_add(
        l, dlb_conf_topic(&fx.conf, DLB_TOPIC_PLAN_REQUESTS, t, sizeof(t)), 0)
        ->offset = offset;
    assert_int_equal(rd_kafka_assign(c, l), 0);
    for (int i = 0; i < 100 && (!m || m->err); i++) {
        if (m)
            rd_kafka_message_destroy(m);
        m = rd_kafka_consumer_poll(c, 100);
    }
    assert_non_null(m);
    assert_int_equal(m->err, 0);
    assert_int_equal(rd_kafka_message_headers(m, &hdrs), 0);
    assert_int_equal(rd_kafka_header_get_last(hdrs, "dlb.after", &val, &len), 0);
    snprintf(out, size, "%.*s", (int)len, (const char *)val);
    rd_kafka_message_destroy(m);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
}

/* Job a's event, then b's on the same partition: a request of a names a's
 * offset when following per job, b's too when following the whole. */
static void test_whole_names_every_job(void **state)
{
    rd_kafka_t *per_job, *whole;
    char err[256], t[256], hdr[512];
    (void)state;

    assert_int_equal(dlb_kafka_producer_new(&fx.conf, NULL, &per_job, err, sizeof(err)), 0);
    assert_int_equal(dlb_kafka_producer_follow(per_job, &fx.conf, err, sizeof(err)), 0);
    assert_int_equal(dlb_kafka_producer_new(&fx.conf, NULL, &whole, err, sizeof(err)), 0);
    assert_int_equal(dlb_kafka_producer_follow_whole(whole, &fx.conf, err, sizeof(err)), 0);
    dlb_conf_topic(&fx.conf, DLB_TOPIC_PLAN_REQUESTS, t, sizeof(t));

    /* job-events [0]: a at 0, b at 1; metrics [0]: b at 0 */
    produce(per_job, DLB_TOPIC_JOB_EVENTS, "a");
    assert_int_equal(dlb_kafka_flush(per_job, 10000, err, sizeof(err)), 0);
    produce(per_job, DLB_TOPIC_JOB_EVENTS, "b");
    produce(per_job, DLB_TOPIC_METRICS, "b");
    assert_int_equal(dlb_kafka_flush(per_job, 10000, err, sizeof(err)), 0);
    assert_int_equal(dlb_kafka_produce_request(per_job, t, "a", "r", 1, err, sizeof(err)), 0);
    assert_int_equal(dlb_kafka_flush(per_job, 10000, err, sizeof(err)), 0);
    request_header(0, hdr, sizeof(hdr));
    assert_string_equal(hdr, "dlbrain.job-events:0:0");

    /* job-events [0]: a at 2, b at 3; metrics [0]: b at 1 */
    produce(whole, DLB_TOPIC_JOB_EVENTS, "a");
    assert_int_equal(dlb_kafka_flush(whole, 10000, err, sizeof(err)), 0);
    produce(whole, DLB_TOPIC_JOB_EVENTS, "b");
    produce(whole, DLB_TOPIC_METRICS, "b");
    assert_int_equal(dlb_kafka_flush(whole, 10000, err, sizeof(err)), 0);
    assert_int_equal(dlb_kafka_produce_request(whole, t, "a", "r", 1, err, sizeof(err)), 0);
    /* A job with no event yet: its partition is unknown, nothing named. */
    assert_int_equal(dlb_kafka_produce_request(whole, t, "c", "r", 1, err, sizeof(err)), 0);
    assert_int_equal(dlb_kafka_flush(whole, 10000, err, sizeof(err)), 0);
    request_header(1, hdr, sizeof(hdr));
    assert_string_equal(hdr, "dlbrain.job-events:0:3,dlbrain.metrics:0:1");
    request_header(2, hdr, sizeof(hdr));
    assert_string_equal(hdr, "");

    dlb_kafka_producer_destroy(per_job);
    dlb_kafka_producer_destroy(whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_names_every_job),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
