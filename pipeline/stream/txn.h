/* The one way a batch becomes a Kafka transaction, for every loop that reads
 * with a group and writes what it read exactly once (the stream's roles,
 * the relay): a transactional producer started and stopped, and a batch's
 * records, outputs and input offsets committed together or not at all,
 * each transactional call retried, aborted or the producer replaced as its
 * error says. No Kafka transaction call is made outside pipeline/stream/. */
#ifndef DLB_TXN_H
#define DLB_TXN_H

#include <signal.h>

#include <librdkafka/rdkafka.h>

#include "conf.h"

/** @brief A transactional producer for group (dlb_kafka_txn_producer_new),
 *         its transactions initialised: init_transactions retried every
 *         retry.backoff.ms until it succeeds or fails for good.
 *  @returns 0; DLB_ERR_GENERIC (fatal: another live producer of the id);
 *           DLB_ERR_TRANSIENT when stopped first; what creating it returns. */
int dlb_txn_producer_start(const dlb_conf_t *conf, const char *group, volatile sig_atomic_t *stop,
                           rd_kafka_t **out, char *errstr, size_t errstr_size);

/** @brief Drop what *producer has not sent (it belongs to an aborted or
 *         unfinished transaction) and destroy it; *producer becomes NULL. */
void dlb_txn_producer_stop(rd_kafka_t **producer);

/* What a batch's transaction carries: produce() sends its records (any
 * topics) with the producer; offsets(), called once they are sent, returns
 * the input positions to commit with their metadata (freed here; NULL: out
 * of memory), committed as of consumer's group generation. */
typedef struct dlb_txn_batch {
    rd_kafka_t *producer, *consumer;
    int (*produce)(void *arg, rd_kafka_t *producer, char *errstr, size_t errstr_size);
    rd_kafka_topic_partition_list_t *(*offsets)(void *arg);
    void *arg;
} dlb_txn_batch_t;

/** @brief One transaction: begin, produce(), send offsets(), commit; each
 *         call retried producer.txn.call.tries times, 500 ms apart, while
 *         librdkafka calls its error retriable, within
 *         producer.txn.call.timeout.ms. On failure the transaction is aborted
 *         (nothing of it is visible) unless the producer must be replaced.
 *  @param fatal set to 1 when the producer must be replaced (fenced, fatal,
 *         or the abort itself failed: a new producer's init_transactions
 *         aborts what this one left open).
 *  @returns 0 once committed; DLB_ERR_TRANSIENT with errstr (the batch is to
 *           be redone from its first record). */
int dlb_txn_commit_batch(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                         const dlb_txn_batch_t *b, int *fatal, char *errstr, size_t errstr_size);

#endif
