/* A batch's Kafka transaction (txn.h), the one the stream's roles and the
 * relay share, against librdkafka's in-process mock cluster: a committed
 * batch's records are read by a read_committed consumer; a batch whose
 * records fail, or whose offsets cannot be made, is aborted (none of its
 * records is ever read) and is not a reason to replace the producer; a
 * fenced commit is, and a new producer of the same id goes on. (The mock
 * cluster answers TxnOffsetCommit without keeping the offsets: that they
 * commit with the records is the real broker's tests', 20-real-broker and
 * 30-chaos.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "clock.h"
#include "err.h"
#include "kafka.h"
#include "metrics.h"
#include "txn.h"

#define GROUP "txn-test"

typedef struct fixture {
    dlb_conf_t conf;
    dlb_mock_t *mock;
    dlb_metrics_t *m;
    rd_kafka_t *producer, *consumer, *reader;
    char in[256], out[256];
    volatile sig_atomic_t stop;
} fixture_t;

/* What a test's batch does: records to produce, then whether to fail. */
typedef struct batch {
    fixture_t *f;
    int records, fail, no_offsets;
    int64_t commit_at;
} batch_t;

static int produce(void *arg, rd_kafka_t *producer, char *errstr, size_t size)
{
    batch_t *b = arg;

    for (int i = 0; i < b->records; i++) {
        char key[16];
        snprintf(key, sizeof(key), "job-%d", i);
        if (rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(b->f->out),
                              RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE("plan", 4),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
            return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "cannot produce");
    }
    if (b->fail)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "a record the test refuses");
    return 0;
}

static rd_kafka_topic_partition_list_t *offsets(void *arg)
{
    batch_t *b = arg;
    rd_kafka_topic_partition_list_t *l;

    if (b->no_offsets)
        return NULL;
    l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, b->f->in, 0)->offset = b->commit_at;
    return l;
}

static int run(fixture_t *f, batch_t *b, int *fatal)
{
    dlb_txn_batch_t tb = {f->producer, f->consumer, produce, offsets, b};
    char errstr[512];

    b->f = f;
    return dlb_txn_commit_batch(&f->conf, &f->stop, &tb, fatal, errstr, sizeof(errstr));
}

/* Records of the output topic a read_committed reader gets: until it has
 * want of them, then 300 ms more (one too many shows), 5 s at most. */
static int read_records(fixture_t *f, int want)
{
    int64_t until = dlb_clock_mono_ms() + 5000;
    int n = 0;

    while (dlb_clock_mono_ms() < until) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(f->reader, 50);
        if (m && !m->err && ++n == want)
            until = dlb_clock_mono_ms() + 300;
        if (m)
            rd_kafka_message_destroy(m);
    }
    return n;
}

static int setup(void **state)
{
    static const char *const rc[] = {"isolation.level", "read_committed", NULL};
    static fixture_t f;
    rd_kafka_topic_partition_list_t *l;
    char errstr[512];

    dlb_conf_init(&f.conf);
    dlb_conf_finish(&f.conf);
    f.conf.replication = 1;
    f.conf.partitions = 2;
    if (dlb_mock_start(&f.mock, 1, &f.conf, errstr, sizeof(errstr)))
        fail_msg("mock cluster: %s", errstr);
    snprintf(f.conf.brokers, sizeof(f.conf.brokers), "%s", dlb_mock_bootstraps(f.mock));
    if (dlb_metrics_new(&f.m, errstr, sizeof(errstr)))
        fail_msg("metrics: %s", errstr);
    dlb_metrics_set_global(f.m);
    dlb_conf_topic(&f.conf, "metrics", f.in, sizeof(f.in));
    dlb_conf_topic(&f.conf, "plans", f.out, sizeof(f.out));
    if (dlb_txn_producer_start(&f.conf, GROUP, &f.stop, &f.producer, errstr, sizeof(errstr)))
        fail_msg("producer: %s", errstr);
    /* The batch's group: offsets are committed as of its generation. */
    if (dlb_kafka_consumer_new(&f.conf, GROUP, NULL, &f.consumer, errstr, sizeof(errstr)))
        fail_msg("consumer: %s", errstr);
    l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, f.in, RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(f.consumer, l), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(l);
    for (int64_t until = dlb_clock_mono_ms() + 20000;;) {
        rd_kafka_topic_partition_list_t *a = NULL;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(f.consumer, 100);
        int got;

        if (m)
            rd_kafka_message_destroy(m);
        rd_kafka_assignment(f.consumer, &a);
        got = a && a->cnt > 0;
        if (a)
            rd_kafka_topic_partition_list_destroy(a);
        if (got)
            break;
        if (dlb_clock_mono_ms() > until)
            fail_msg("the group did not assign the input topic within 20 s");
    }
    /* The reader: the output topic's every partition, from the start. */
    if (dlb_kafka_consumer_new(&f.conf, "txn-test-reader", rc, &f.reader, errstr, sizeof(errstr)))
        fail_msg("reader: %s", errstr);
    l = rd_kafka_topic_partition_list_new(2);
    for (int p = 0; p < f.conf.partitions; p++)
        rd_kafka_topic_partition_list_add(l, f.out, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal(rd_kafka_assign(f.reader, l), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(l);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;

    dlb_txn_producer_stop(&f->producer);
    assert_null(f->producer);
    dlb_kafka_consumer_destroy(f->reader);
    dlb_kafka_consumer_destroy(f->consumer);
    dlb_metrics_destroy(f->m);
    dlb_mock_stop(f->mock);
    dlb_conf_destroy(&f->conf);
    return 0;
}

/* In order: each test starts where the one before left the topics. */
static void test_committed(void **state)
{
    fixture_t *f = *state;
    batch_t b = {.records = 3, .commit_at = 5};
    int fatal = -1;

    assert_int_equal(run(f, &b, &fatal), 0);
    assert_int_equal(fatal, 0);
    assert_int_equal(read_records(f, 3), 3);
}

static void test_aborted(void **state)
{
    fixture_t *f = *state;
    batch_t bad = {.records = 2, .fail = 1, .commit_at = 9};
    batch_t none = {.records = 2, .no_offsets = 1, .commit_at = 9};
    batch_t good = {.records = 1, .commit_at = 7};
    int fatal = -1;

    assert_int_equal(run(f, &bad, &fatal), DLB_ERR_TRANSIENT);
    assert_int_equal(fatal, 0);
    assert_int_equal(run(f, &none, &fatal), DLB_ERR_TRANSIENT); /* out of memory */
    assert_int_equal(fatal, 0);
    /* The producer goes on: the next batch commits, and the reader, past
     * the aborted records, gets its one record and none of theirs. */
    assert_int_equal(run(f, &good, &fatal), 0);
    assert_int_equal(read_records(f, 1), 1);
}

static void test_fenced(void **state)
{
    fixture_t *f = *state;
    batch_t b = {.records = 1, .commit_at = 8};
    char errstr[512];
    int fatal = -1, n;

    /* EndTxn (API 26) answered as to a producer another one fenced. */
    assert_int_equal(dlb_mock_fail_request(f->mock, "26:PRODUCER_FENCED", errstr, sizeof(errstr)),
                     0);
    assert_int_equal(run(f, &b, &fatal), DLB_ERR_TRANSIENT);
    assert_int_equal(fatal, 1);
    /* A new producer of the same id goes on. (A broker aborts the fenced
     * one's open transaction at the new one's InitProducerId; the mock
     * cluster does not, and its record may be read with the next commit.) */
    dlb_txn_producer_stop(&f->producer);
    assert_int_equal(
        dlb_txn_producer_start(&f->conf, GROUP, &f->stop, &f->producer, errstr, sizeof(errstr)), 0);
    b.records = 3;
    assert_int_equal(run(f, &b, &fatal), 0);
    assert_int_equal(fatal, 0);
    n = read_records(f, 3);
    assert_true(n == 3 || n == 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_committed),
        cmocka_unit_test(test_aborted),
        cmocka_unit_test(test_fenced),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
