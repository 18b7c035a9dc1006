/* The batch's Kafka transaction (stream_internal.h): its DLQ copies,
 * outputs and input offsets committed together (txn.h); and where a failed
 * batch goes on from. */
#include <inttypes.h>
#include <stdint.h>

#include "clock.h"
#include "err.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"
#include "stream_internal.h"
#include "txn.h"

static rd_kafka_topic_partition_list_t *batch_offsets(const ctx_t *c, int rewind);

/* The batch's records in its transaction: the DLQ copies of its bad
 * messages, then its outputs. */
static int batch_produce(void *arg, rd_kafka_t *producer, char *errstr, size_t size)
{
    ctx_t *c = arg;
    char sub[512];
    int err;

    for (size_t k = 0; k < c->order_cnt; k++) {
        item_t *it = &c->items[c->order[k]];
        if (it->dlq_stage && (err = dlb_kafka_dlq_send(producer, c->conf, it->msg, it->dlq_stage,
                                                       it->dlq_err, it->dlq_msg, sub, sizeof(sub))))
            return dlb_seterr(errstr, size, err, "dlq: %s", sub);
    }
    for (size_t i = 0; i < c->out_cnt; i++)
        if ((err = dlb_kafka_produce_stamped(producer, c->out_topic, c->out[i].key, c->out[i].buf,
                                             c->out[i].len, c->out[i].stamp, sub, sizeof(sub))))
            return dlb_seterr(errstr, size, err, "%s", sub);
    return 0;
}

static rd_kafka_topic_partition_list_t *commit_offsets(void *arg)
{
    return batch_offsets(arg, 0);
}

/* One Kafka transaction per batch (txn.h): the DLQ copies of its bad
 * messages, its outputs and its input offsets become visible together or not
 * at all. The PostgreSQL transaction committed before; a redo finds its rows
 * there (no change) and re-sends the stored outputs, so they stay exactly
 * once. */
int stream_batch_publish(ctx_t *c, int *fatal, char *errstr, size_t size)
{
    dlb_txn_batch_t b = {c->producer, c->consumer, batch_produce, commit_offsets, c};

    c->txn_began = dlb_clock_mono_ms();
    if (dlb_txn_commit_batch(c->conf, c->stop, &b, fatal, errstr, size)) {
        dlb_metric_add(c->m.txn_aborted, 1);
        return DLB_ERR_TRANSIENT;
    }
    for (size_t k = 0; k < c->order_cnt; k++) {
        const item_t *it = &c->items[c->order[k]];
        if (it->dlq_stage) {
            c->st->dlq++;
            if (it->rank >= 0)
                dlb_metric_add(c->m.dlq[it->rank][stream_stage_index(it->dlq_stage)], 1);
        }
    }
    c->st->outputs += (int64_t)c->out_cnt;
    dlb_metric_add(c->m.produced, c->out_cnt);
    dlb_metric_add(c->m.txn_committed, 1);
    dlb_metrics_dep(DLB_DEP_KAFKA, 1);
    return 0;
}

/* Offsets per partition. To commit: the first message still held back, or
 * the one after the newest released. To rewind: the first message we hold. */
static rd_kafka_topic_partition_list_t *batch_offsets(const ctx_t *c, int rewind)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);

    for (size_t i = 0; i < c->items_cnt; i++) {
        const item_t *it = &c->items[i];
        const rd_kafka_message_t *m = it->msg;
        rd_kafka_topic_partition_t *p =
            rd_kafka_topic_partition_list_find(l, rd_kafka_topic_name(m->rkt), m->partition);
        int64_t want = rewind || !it->released ? m->offset : m->offset + 1;

        if (!p) {
            p = rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(m->rkt), m->partition);
            p->offset = want;
            /* opaque marks "a held-back message fixed this offset" */
            p->opaque = (void *)(intptr_t)(!rewind && !it->released);
        } else if (!p->opaque && !rewind) {
            /* Items are in offset order per partition: keep advancing until
             * the first held-back one. */
            p->offset = want;
            p->opaque = (void *)(intptr_t)!it->released;
        }
    }
    return l;
}

/* Where to go on from after a failed batch: the offsets the group has
 * committed, as the broker says, rather than the first message we held. A
 * commit whose answer was lost (retried until the producer was replaced) may
 * have taken: going back to our own positions would then send the batch's
 * plans a second time. Partitions the broker names no offset for, or all of
 * them when it cannot be asked, keep our positions (the batch is then redone,
 * and its plans re-sent with the same ids, as before). */
static void committed_positions(ctx_t *c, rd_kafka_topic_partition_list_t *l)
{
    rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_copy(l);
    rd_kafka_resp_err_t e;

    if (!q)
        return;
    if ((e = rd_kafka_committed(c->consumer, q, STREAM_ASK_TIMEOUT_MS * 5))) {
        dlb_warn("kafka: asking the group's committed offsets: %s; going back to the failed "
                 "batch's first messages",
                 rd_kafka_err2str(e));
    } else {
        for (int i = 0; i < q->cnt; i++) {
            if (q->elems[i].err || q->elems[i].offset < 0)
                continue;
            if (q->elems[i].offset > l->elems[i].offset)
                dlb_info("kafka: %s [%" PRId32 "]: the group committed up to %" PRId64
                         " (the failed batch's commit took): going on from there",
                         q->elems[i].topic, q->elems[i].partition, q->elems[i].offset);
            l->elems[i].offset = q->elems[i].offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(q);
}

rd_kafka_topic_partition_list_t *stream_rewind_offsets(ctx_t *c)
{
    rd_kafka_topic_partition_list_t *l = batch_offsets(c, 1);

    if (l)
        committed_positions(c, l);
    return l;
}
