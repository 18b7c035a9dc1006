/* A batch's Kafka transaction and the producer that makes it (txn.h). */
#include "txn.h"

#include "err.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"

/* What to do after a transactional call failed: retry it, abort the
 * transaction and redo the batch, or replace the producer (fenced/fatal). */
typedef enum { TXN_RETRY, TXN_ABORT, TXN_FATAL } txn_verdict_t;

/* Takes e. */
static txn_verdict_t verdict_of(rd_kafka_error_t *e, const char *what, char *errstr, size_t size)
{
    txn_verdict_t v = rd_kafka_error_is_fatal(e)             ? TXN_FATAL
                      : rd_kafka_error_txn_requires_abort(e) ? TXN_ABORT
                      : rd_kafka_error_is_retriable(e)       ? TXN_RETRY
                                                             : TXN_ABORT;
    dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "kafka transaction: %s: %s (%s)", what,
               rd_kafka_error_string(e),
               v == TXN_FATAL   ? "fatal"
               : v == TXN_ABORT ? "abortable"
                                : "retriable");
    rd_kafka_error_destroy(e);
    return v;
}

enum { STEP_BEGIN, STEP_OFFSETS, STEP_COMMIT };

static rd_kafka_error_t *step_call(const dlb_conf_t *conf, const dlb_txn_batch_t *b,
                                   const rd_kafka_topic_partition_list_t *offsets, int step)
{
    rd_kafka_consumer_group_metadata_t *cgmd;
    rd_kafka_error_t *e;

    switch (step) {
    case STEP_BEGIN:
        return rd_kafka_begin_transaction(b->producer);
    case STEP_OFFSETS:
        /* As of the group generation now: a rebalance since the batch was
         * polled makes the broker refuse the offsets (the batch is redone). */
        cgmd = rd_kafka_consumer_group_metadata(b->consumer);
        e = rd_kafka_send_offsets_to_transaction(b->producer, offsets, cgmd,
                                                 conf->txn_call_timeout_ms);
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        return e;
    default:
        return rd_kafka_commit_transaction(b->producer, conf->txn_call_timeout_ms);
    }
}

/* One transactional call until it succeeds or fails for good; retriable
 * errors are retried producer.txn.call.tries times (a broker restarting),
 * then taken as abortable. @returns -1 when it succeeded, else the verdict. */
static int step(const dlb_conf_t *conf, volatile sig_atomic_t *stop, const dlb_txn_batch_t *b,
                const rd_kafka_topic_partition_list_t *offsets, int which, char *errstr,
                size_t size)
{
    static const char *const what[] = {"begin", "sending offsets", "commit"};
    rd_kafka_error_t *e;

    for (int tries = 1; (e = step_call(conf, b, offsets, which)); tries++) {
        txn_verdict_t v = verdict_of(e, what[which], errstr, size);

        if (v != TXN_RETRY)
            return v;
        if (tries >= conf->txn_call_tries || *stop)
            return TXN_ABORT;
        dlb_warn("%s; retrying", errstr);
        dlb_metrics_nap_ms(stop, 500);
    }
    return -1;
}

int dlb_txn_commit_batch(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                         const dlb_txn_batch_t *b, int *fatal, char *errstr, size_t errstr_size)
{
    rd_kafka_topic_partition_list_t *offsets = NULL;
    rd_kafka_error_t *e;
    int v;

    *fatal = 0;
    if ((v = step(conf, stop, b, NULL, STEP_BEGIN, errstr, errstr_size)) >= 0)
        goto fail;
    v = TXN_ABORT;
    if (b->produce(b->arg, b->producer, errstr, errstr_size))
        goto fail;
    if (!(offsets = b->offsets(b->arg))) {
        dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((v = step(conf, stop, b, offsets, STEP_OFFSETS, errstr, errstr_size)) >= 0 ||
        (v = step(conf, stop, b, NULL, STEP_COMMIT, errstr, errstr_size)) >= 0)
        goto fail;
    rd_kafka_topic_partition_list_destroy(offsets);
    return 0;
fail:
    if (offsets)
        rd_kafka_topic_partition_list_destroy(offsets);
    if (v == TXN_FATAL) {
        *fatal = 1;
    } else if ((e = rd_kafka_abort_transaction(b->producer, conf->txn_call_timeout_ms))) {
        /* Cannot even abort: start over with a new producer, whose
         * init_transactions aborts what this one left open. */
        dlb_err("kafka transaction: abort failed: %s; replacing the producer",
                rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        *fatal = 1;
    }
    return DLB_ERR_TRANSIENT;
}

int dlb_txn_producer_start(const dlb_conf_t *conf, const char *group, volatile sig_atomic_t *stop,
                           rd_kafka_t **out, char *errstr, size_t errstr_size)
{
    int err;

    if ((err = dlb_kafka_txn_producer_new(conf, group, out, errstr, errstr_size)))
        return err;
    while (!*stop) {
        rd_kafka_error_t *e = rd_kafka_init_transactions(*out, conf->txn_call_timeout_ms);
        if (!e)
            return 0;
        if (rd_kafka_error_is_fatal(e)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "kafka: init_transactions: %s",
                             rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
            return err;
        }
        dlb_warn("kafka: init_transactions: %s; retrying in %d ms", rd_kafka_error_string(e),
                 conf->retry_backoff_ms);
        rd_kafka_error_destroy(e);
        dlb_metrics_nap_ms(stop, conf->retry_backoff_ms);
    }
    return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                      "stopped before Kafka transactions began");
}

void dlb_txn_producer_stop(rd_kafka_t **producer)
{
    if (!*producer)
        return;
    /* Anything unsent belongs to an aborted or unfinished transaction. */
    rd_kafka_purge(*producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    dlb_kafka_producer_destroy(*producer);
    *producer = NULL;
}
