/* The exactly-once stream processor (stream.h): the consumer loop every role
 * runs, with its ordering barrier, flow control, batches and transactions. */
#include "stream_internal.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache_redis.h"
#include "clock.h"
#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "kafka.h"
#include "latency.h"
#include "log.h"
#include "metrics.h"
#include "store_pg.h"
#include "txn.h"
#include "vec.h"

static void item_free(item_t *it)
{
    dlb_event_clear(&it->ev);
    rd_kafka_message_destroy(it->msg);
}

/* Keep only items for which keep() says so, preserving order. */
static void items_filter(ctx_t *c, int (*keep)(const ctx_t *, const item_t *, const void *),
                         const void *arg)
{
    size_t n = 0;

    for (size_t i = 0; i < c->items_cnt; i++) {
        if (keep(c, &c->items[i], arg)) {
            c->items[n++] = c->items[i];
        } else {
            c->held_bytes -= c->items[i].bytes;
            item_free(&c->items[i]);
        }
    }
    c->items_cnt = n;
}

static int keep_unreleased(const ctx_t *c, const item_t *it, const void *arg)
{
    (void)c;
    (void)arg;
    return !it->released;
}

static int keep_none(const ctx_t *c, const item_t *it, const void *arg)
{
    (void)c;
    (void)it;
    (void)arg;
    return 0;
}

static int keep_unrevoked(const ctx_t *c, const item_t *it, const void *arg)
{
    const rd_kafka_topic_partition_list_t *revoked = arg;
    (void)c;
    return !rd_kafka_topic_partition_list_find(revoked, rd_kafka_topic_name(it->msg->rkt),
                                               it->msg->partition);
}

static void out_clear(ctx_t *c)
{
    for (size_t i = 0; i < c->out_cnt; i++)
        free(c->out[i].buf);
    c->out_cnt = 0;
}

/* Eager rebalancing: on revoke, drop what we hold of the revoked partitions
 * (their next owner starts from the committed offsets); on assign, forget
 * what we knew of the partitions, as another member may have moved them on. */
static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    ctx_t *c = opaque;

    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        for (int i = 0; i < parts->cnt; i++) {
            int rank = stream_topic_rank(c, parts->elems[i].topic);
            part_t *p = rank >= 0 ? stream_part(c, rank, parts->elems[i].partition) : NULL;
            if (p)
                stream_part_forget(p, 1);
        }
        dlb_info("kafka: assigned %d partition(s)", parts->cnt);
        dlb_metric_add(c->m.assigns, 1);
        dlb_metric_set(c->m.assigned, parts->cnt);
        dlb_metrics_dep(DLB_DEP_KAFKA, 1);
        rd_kafka_assign(rk, parts);
        /* librdkafka keeps an application pause across revoke and assign:
         * start every assigned partition unpaused. */
        rd_kafka_resume_partitions(rk, parts);
    } else {
        for (int i = 0; i < parts->cnt; i++) {
            int rank = stream_topic_rank(c, parts->elems[i].topic);
            part_t *p = rank >= 0 ? stream_part(c, rank, parts->elems[i].partition) : NULL;
            if (p)
                p->assigned = 0;
        }
        items_filter(c, keep_unrevoked, parts);
        dlb_info("kafka: %d partition(s) revoked", parts->cnt);
        dlb_metric_add(c->m.revokes, 1);
        dlb_metric_set(c->m.assigned, 0);
        rd_kafka_assign(rk, NULL);
    }
}

/* Back-pressure for the ordering barrier (Kafka Streams pauses partitions
 * with buffered records the same way): while a batch or more is waiting to
 * be polled and we hold messages of a partition, stop fetching it, so polling
 * brings the lagging partitions a held plan request is waiting for instead of
 * more of what is already ahead. Otherwise there is little to bring first,
 * and a pause costs a seek on resume: a partition holding a plan request in
 * its grace keeps fetching, so the requests behind it are read, and their
 * grace runs, meanwhile (latency). */
static void flow_control(ctx_t *c)
{
    rd_kafka_topic_partition_list_t *pause = rd_kafka_topic_partition_list_new(8);
    rd_kafka_topic_partition_list_t *resume = rd_kafka_topic_partition_list_new(8);
    int behind = stream_lag(c, c->conf->batch_size) >= c->conf->batch_size;

    stream_mark_held(c, 1);
    for (size_t i = 0; i < c->parts_cnt; i++) {
        part_t *p = &c->parts[i];
        rd_kafka_topic_partition_t *t;
        int stop = p->held && (behind || p->paused);

        if (stop && !p->paused) {
            rd_kafka_topic_partition_list_add(pause, c->topics[p->rank], p->partition);
        } else if (!stop && p->paused) {
            t = rd_kafka_topic_partition_list_add(resume, c->topics[p->rank], p->partition);
            t->offset = p->next;
        }
        p->paused = stop;
    }
    /* Errors only for partitions no longer assigned: nothing to do then. */
    if (pause->cnt)
        rd_kafka_pause_partitions(c->consumer, pause);
    if (resume->cnt) {
        rd_kafka_error_t *e;
        rd_kafka_resume_partitions(c->consumer, resume);
        /* Fetch on from right after what we polled, not from wherever
         * librdkafka's own position is after a pause. */
        for (int i = resume->cnt - 1; i >= 0; i--)
            if (resume->elems[i].offset < 0)
                rd_kafka_topic_partition_list_del_by_idx(resume, i);
        if (resume->cnt && (e = rd_kafka_seek_partitions(c->consumer, resume, 10000))) {
            dlb_warn("kafka: seeking %d resumed partition(s) to after their last polled message: "
                     "%s; they fetch from librdkafka's own position (a message polled again is "
                     "deduplicated by event id)",
                     resume->cnt, rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        }
    }
    rd_kafka_topic_partition_list_destroy(pause);
    rd_kafka_topic_partition_list_destroy(resume);
}

/* Choose this round's messages: per partition number, merge the input
 * topics' messages by (event time, topic rank), keeping each partition's
 * offset order, and stop at the first request whose barrier is closed.
 * Fills c->order with the released items' indexes, in processing order. */
static void batch_release(ctx_t *c)
{
    int64_t now = dlb_clock_mono_ms();

    c->order_cnt = 0;
    for (size_t i = 0; i < c->items_cnt; i++)
        c->items[i].released = 0;
    for (size_t first = 0; first < c->items_cnt; first++) {
        int32_t partition = c->items[first].msg->partition;
        int seen_before = 0;

        for (size_t j = 0; j < first && !seen_before; j++)
            seen_before = c->items[j].msg->partition == partition;
        if (seen_before)
            continue; /* this partition number was merged already */
        for (;;) {
            item_t *head[DLB_STREAM_MAX_INPUTS + 1] = {0}, *pick = NULL;
            int seen[DLB_STREAM_MAX_INPUTS + 1] = {0};
            const char *lagging = NULL;

            /* The oldest unreleased message of each topic of this partition
             * number; rank -1 (not an input topic) shares the last slot. */
            for (size_t j = first; j < c->items_cnt; j++) {
                item_t *it = &c->items[j];
                int slot = it->rank >= 0 ? it->rank : c->ninputs;
                /* A message not decoded yet (taken ahead) ends its topic's
                 * share of this round: the rest of it is after it. */
                if (it->msg->partition == partition && !it->released && !seen[slot]) {
                    seen[slot] = 1;
                    head[slot] = it->undecoded ? NULL : it;
                }
            }
            for (int r = 0; r <= c->ninputs; r++) {
                if (head[r] &&
                    (!pick || head[r]->ts < pick->ts ||
                     (head[r]->ts == pick->ts && r < (pick->rank >= 0 ? pick->rank : c->ninputs))))
                    pick = head[r];
            }
            if (!pick)
                break;
            if (pick->ok && c->role->is_request(&pick->ev) &&
                !stream_barrier_open(c, pick, now, &lagging)) {
                if (!pick->blocked_since)
                    pick->blocked_since = now;
                if (now - pick->blocked_since < c->conf->order_wait_ms)
                    break;
                dlb_warn("request %s waited %lld ms for %s [%d] to reach its time; "
                         "answering with what is known",
                         dlb_event_id(&pick->ev), (long long)(now - pick->blocked_since), lagging,
                         (int)partition);
            }
            pick->released = 1;
            c->order[c->order_cnt++] = (size_t)(pick - c->items);
        }
    }
}

int dlb_stream_emit(dlb_stream_t *c, const char *key, void *buf, size_t len)
{
    outmsg_t *o;

    if (dlb_vec_reserve((void **)&c->out, &c->out_cap, c->out_cnt + 1, sizeof(*c->out))) {
        free(buf);
        return DLB_ERR_NOMEM;
    }
    o = &c->out[c->out_cnt++];
    snprintf(o->key, sizeof(o->key), "%s", key);
    /* The answer carries the stamp of what it answers: the relay forwards
     * it to the front only from the environment the stamp names. */
    o->stamp[0] = '\0';
    if (c->cur)
        dlb_kafka_stamp_get(c->cur->msg, o->stamp, sizeof(o->stamp));
    o->buf = buf;
    o->len = len;
    return 0;
}

/* Write the pending runtime samples: PostgreSQL (in the batch's transaction),
 * then Redis, as dlb_stream_store_event() writes one event. Those the stored
 * positions say a committed batch holds already (a redelivery) go through the
 * idempotent statement; the others with COPY, which runs on the server while
 * the Redis round trip is made: the two overlap. Should the COPY fail, Redis
 * holds samples the batch's redo adds again (the same members: no change),
 * as after a crash between the two. */
int stream_pending_flush(ctx_t *c, char *errstr, size_t size)
{
    size_t n = 0, stored = 0, fresh;
    char sub[512];
    int err;

    if (!c->pend_cnt)
        return 0;
    /* The stored samples first (pass 1), then the others (pass 0). */
    for (int pass = 1; pass >= 0; pass--) {
        for (size_t i = 0; i < c->pend_cnt; i++) {
            if (c->pend_stored[i] != pass)
                continue;
            c->flush_ev[n] = c->pend_ev[i];
            c->flush_raw[n] = c->pend_raw[i];
            c->flush_len[n++] = c->pend_len[i];
        }
        if (pass)
            stored = n;
    }
    fresh = c->pend_cnt - stored;
    if ((stored && (err = dlb_pg_put_runtime_batch(c->pg, c->flush_ev, c->flush_raw, c->flush_len,
                                                   stored, errstr, size))) ||
        (err = dlb_pg_send_runtime_copy(c->pg, c->flush_ev + stored, c->flush_raw + stored,
                                        c->flush_len + stored, fresh, errstr, size)))
        return err;
    if (c->redis && dlb_redis_apply_samples(c->redis, c->pend_ev, c->pend_raw, c->pend_len,
                                            c->pend_cnt, sub, sizeof(sub)))
        stream_redis_down(c, "applying runtime samples", sub);
    stream_decode_while_stored(c);
    if ((err = dlb_pg_wait_runtime_copy(c->pg, c->flush_ev + stored, c->flush_raw + stored,
                                        c->flush_len + stored, fresh, errstr, size)))
        return err;
    c->pend_cnt = 0;
    return 0;
}

/* Persist, fold into state and answer requests, all inside one PostgreSQL
 * transaction, in the order batch_release() chose. */
static int batch_process(ctx_t *c, char *errstr, size_t size)
{
    int err;

    c->pend_cnt = 0;
    c->bad_item = -1;
    /* A record that could not be decoded for a transient reason holds the
     * whole batch back, as a database outage does: it is rewound and polled
     * again after retry.backoff.ms, and nothing of it is committed. */
    for (size_t k = 0; k < c->order_cnt; k++)
        if (c->items[c->order[k]].retry)
            return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "offset %" PRId64 ": %s",
                              c->items[c->order[k]].msg->offset, c->items[c->order[k]].dlq_msg);
    if ((err = dlb_pg_begin(c->pg, errstr, size)))
        return err;
    /* A batch redone record by record writes each at once, so that a write
     * PostgreSQL refuses is pinned to its record. */
    if ((err = dlb_pg_defer_writes(c->pg, !c->exact, errstr, size)) ||
        (err = stream_positions_load(c, errstr, size)))
        goto fail;
    for (size_t k = 0; k < c->order_cnt && !*c->stop; k++) {
        item_t *it = &c->items[c->order[k]];
        if (!it->ok)
            continue;
        /* Whatever the role does with another event may read what the
         * samples before it wrote. */
        if (it->ev.type != DLB_EV_RUNTIME && (err = stream_pending_flush(c, errstr, size)))
            goto fail;
        c->cur = it;
        err = c->role->process(c, &it->ev, it->msg->payload, it->msg->len, errstr, size);
        c->cur = NULL;
        if (err) {
            c->bad_item = (int)c->order[k];
            goto fail;
        }
    }
    if (*c->stop) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "stopping");
        goto fail;
    }
    if ((err = stream_pending_flush(c, errstr, size)) ||
        (err = stream_positions_save(c, errstr, size)) ||
        (err = dlb_pg_commit(c->pg, errstr, size)))
        goto fail;
    for (size_t k = 0; k < c->order_cnt; k++) {
        const item_t *it = &c->items[c->order[k]];
        if (it->ok && !it->dlq_stage) {
            c->st->accepted++;
            if (it->rank >= 0)
                dlb_metric_add(c->m.processed[it->rank], 1);
        }
    }
    return 0;
fail:
    c->pend_cnt = 0;
    dlb_pg_rollback(c->pg);
    return err;
}

/* Undo a failed batch: seek each partition back to where the group
 * committed (committed_positions), nothing held kept.
 * @returns 0, or an error when stopped before the seek took. */
static int batch_rewind(ctx_t *c, char *errstr, size_t size)
{
    rd_kafka_topic_partition_list_t *l = stream_rewind_offsets(c);
    int err;

    if (!l)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    err = dlb_kafka_seek_back(c->consumer, l, c->stop, c->conf->retry_backoff_ms, errstr, size);

    for (int i = 0; i < l->cnt; i++) {
        int rank = stream_topic_rank(c, l->elems[i].topic);
        part_t *p = rank >= 0 ? stream_part(c, rank, l->elems[i].partition) : NULL;
        if (p) {
            p->next = l->elems[i].offset;
            p->rewound = 1;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    items_filter(c, keep_none, NULL);
    out_clear(c);
    return err;
}

static void metrics_setup(ctx_t *c)
{
    stream_metrics_t *m = &c->m;

    for (int r = 0; r < c->ninputs; r++) {
        const char *t = c->topics[r];
        m->consumed[r] = dlb_metric_counter(
            "dlbrain_messages_consumed_total",
            "Messages polled from an input topic (a batch retried after a failure is polled "
            "again)",
            "topic", DLB_LV(t));
        m->processed[r] = dlb_metric_counter(
            "dlbrain_events_processed_total",
            "Valid events of an input topic processed and committed (exactly once)", "topic",
            DLB_LV(t));
        for (size_t i = 0; i < NSTAGES; i++)
            m->dlq[r][i] = dlb_metric_counter(
                "dlbrain_dlq_messages_total",
                "Bad messages of an input topic committed to <env>.dlq, by the stage that "
                "refused them (decode, validate, process)",
                "topic,stage", DLB_LV(t, stream_dlq_stages[i]));
    }
    for (size_t i = 0; i < NSTAGES; i++)
        m->bad[i] = dlb_metric_errors(stream_dlq_stages[i]);
    m->err_pg = dlb_metric_errors("postgres");
    m->err_redis = dlb_metric_errors("redis");
    m->err_kafka = dlb_metric_errors("kafka");
    m->err_internal = dlb_metric_errors("internal");
    m->produced = dlb_metric_counter("dlbrain_outputs_produced_total",
                                     "Outputs committed to the role's output topic: plans on "
                                     "<env>.plans, configuration matches on <env>.configs",
                                     "topic", DLB_LV(c->out_topic));
    m->txn_committed = dlb_metric_transactions("committed");
    m->txn_aborted = dlb_metric_transactions("aborted");
    m->assigns = dlb_metric_rebalances("assign");
    m->revokes = dlb_metric_rebalances("revoke");
    m->stalled = dlb_metric_gauge("dlbrain_stalled_partitions",
                                  "Assigned partitions with messages waiting that made no progress "
                                  "for consumer.stall.s (each fails /readyz)",
                                  "", NULL);
    m->assigned = dlb_metric_gauge("dlbrain_kafka_assigned_partitions",
                                   "Input partitions assigned to this process", "", NULL);
    m->batch_seconds = dlb_metric_histogram(
        "dlbrain_batch_duration_seconds",
        "Processing time of a committed batch: PostgreSQL transaction then Kafka transaction", "",
        NULL);
    m->event_seconds = dlb_metric_histogram(
        "dlbrain_event_duration_seconds",
        "Time from polling an event to committing its batch (includes ordering holds)", "", NULL);
    if (c->retention_ms)
        for (size_t t = 0; t < DLB_PG_HISTORY_TABLES; t++)
            m->pruned[t] = dlb_metric_counter(
                "dlbrain_store_pruned_rows_total",
                "History rows this process removed as older than store.retention.days", "table",
                DLB_LV(dlb_pg_history_table(t)));
}

static int setup(ctx_t *c, char *errstr, size_t size)
{
    int err;

    char names[512] = "";
    size_t len = 0;

    for (c->ninputs = 0; c->role->inputs[c->ninputs]; c->ninputs++) {
        if (c->ninputs == DLB_STREAM_MAX_INPUTS)
            return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: more than %d input topics",
                              c->role->name, DLB_STREAM_MAX_INPUTS);
        dlb_conf_topic(c->conf, c->role->inputs[c->ninputs], c->topics[c->ninputs],
                       sizeof(c->topics[c->ninputs]));
        len += (size_t)snprintf(names + len, len < sizeof(names) ? sizeof(names) - len : 0, "%s%s",
                                c->ninputs ? "," : "", c->role->inputs[c->ninputs]);
    }
    dlb_conf_topic(c->conf, c->role->output, c->out_topic, sizeof(c->out_topic));
    if ((err = dlb_conf_retention(c->conf, &c->retention_ms, errstr, size)))
        return err;
    metrics_setup(c);
    dlb_metrics_dep(DLB_DEP_KAFKA, 0); /* until the group assigns us */
    c->items_cap = 2 * (size_t)c->conf->batch_size;
    stream_ramp_reset(c);
    c->first_round_at = dlb_clock_mono_ms() + STREAM_FIRST_ROUND_MS;
    if (!(c->items = calloc(c->items_cap, sizeof(*c->items))) ||
        !(c->order = calloc(c->items_cap, sizeof(*c->order))) ||
        !(c->pend_ev = calloc(c->items_cap, sizeof(*c->pend_ev))) ||
        !(c->pend_raw = calloc(c->items_cap, sizeof(*c->pend_raw))) ||
        !(c->pend_len = calloc(c->items_cap, sizeof(*c->pend_len))) ||
        !(c->pend_stored = calloc(c->items_cap, sizeof(*c->pend_stored))) ||
        !(c->flush_ev = calloc(c->items_cap, sizeof(*c->flush_ev))) ||
        !(c->flush_raw = calloc(c->items_cap, sizeof(*c->flush_raw))) ||
        !(c->flush_len = calloc(c->items_cap, sizeof(*c->flush_len))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if ((err = dlb_catalog_new(&c->cat, errstr, size)) ||
        (err = dlb_codec_decoder_new(c->cat, &c->dec, errstr, size)))
        return err;
    if ((err = stream_pg_connect(c, errstr, size)))
        return err;
    stream_redis_connect(c);
    if ((err = dlb_txn_producer_start(c->conf, c->group, c->stop, &c->producer, errstr, size)) ||
        (err = stream_consumer_start(c, rebalance_cb, errstr, size)))
        return err;
    dlb_info("%s: group %s consuming %s.{%s} from %s, answering on %s", c->role->name, c->group,
             c->conf->env, names, c->conf->brokers, c->out_topic);
    return 0;
}

static void teardown(ctx_t *c)
{
    items_filter(c, keep_none, NULL);
    out_clear(c);
    stream_disconnect(c);
    dlb_codec_decoder_destroy(c->dec);
    if (c->cat)
        dlb_catalog_destroy(c->cat);
    free(c->items);
    free(c->out);
    free(c->order);
    free(c->parts);
    free(c->pend_ev);
    free(c->pend_raw);
    free(c->pend_len);
    free(c->pend_stored);
    free(c->flush_ev);
    free(c->flush_raw);
    free(c->flush_len);
}

/* The consumer failed for good: a new one joins the group in its place.
 * Nothing of the batch being gathered was processed; the new member's
 * partitions start from the group's committed offsets, which only a
 * committed batch moved. */
static int consumer_replace(ctx_t *c, char *errstr, size_t size)
{
    char why[1024] = "";
    int err;

    if ((err = dlb_kafka_fenced_too_often(&c->consumer_fenced, c->consumer, 0, errstr, size)))
        return err;
    dlb_kafka_fatal(c->consumer, why, sizeof(why));
    dlb_err("%s; replacing it", why);
    items_filter(c, keep_none, NULL);
    out_clear(c);
    for (size_t i = 0; i < c->parts_cnt; i++)
        c->parts[i].assigned = c->parts[i].paused = 0;
    dlb_metric_set(c->m.assigned, 0);
    dlb_kafka_consumer_destroy(c->consumer);
    c->consumer = NULL;
    c->consumer_fatal = 0;
    while ((err = stream_consumer_start(c, rebalance_cb, errstr, size))) {
        if (*c->stop)
            return err;
        dlb_warn("kafka: a new consumer: %s; retrying in %d ms", errstr, c->conf->retry_backoff_ms);
        if (c->consumer) {
            rd_kafka_destroy(c->consumer);
            c->consumer = NULL;
        }
        dlb_metrics_nap_ms(c->stop, c->conf->retry_backoff_ms);
    }
    return 0;
}

/* The batch failed with DLB_ERR_INVALID: a record it holds broke a rule
 * PostgreSQL or the role enforces (a value out of range, a constraint, a
 * trigger's refusal), and retrying it would fail for ever. Redo the batch
 * with every record written alone, so the failure is pinned to one; then send
 * that record to the DLQ (stage "process") and redo the rest. Nothing was
 * committed (the PostgreSQL transaction rolled back, the Kafka one was not
 * begun) and the redo re-applies the same records, as after any retry.
 * @returns 1 when the batch is to be redone at once, 0 to retry it as a
 * transient failure (the failure could not be pinned to a record). */
static int isolate(ctx_t *c, const char *errstr)
{
    item_t *it;

    out_clear(c);
    if (!c->exact) {
        c->exact = 1;
        dlb_warn("batch of %zu message(s) refused: %s; redoing it record by record to find the "
                 "bad one",
                 c->order_cnt, errstr);
        return 1;
    }
    if (c->bad_item < 0)
        return 0;
    it = &c->items[c->bad_item];
    it->ok = 0;
    stream_to_dlq(c, it, "process", DLB_ERR_INVALID, errstr);
    return 1;
}

int dlb_stream_run(const dlb_conf_t *conf, const dlb_stream_role_t *role, const char *group,
                   volatile sig_atomic_t *stop, dlb_stream_stats_t *stats, char *errstr,
                   size_t errstr_size)
{
    ctx_t c = {.conf = conf, .role = role, .group = group, .stop = stop, .st = stats};
    char err_buf[1024];
    int64_t t_start, t_processed = 0, t_poll;
    double t_batch;
    int err, fatal;

    if ((err = setup(&c, errstr, errstr_size)))
        goto out;
    while (!*stop) {
        dlb_metrics_beat();
        stream_watch_progress(&c);
        if (role->tick && (err = role->tick(&c, errstr, errstr_size)))
            goto out;
        stream_retention(&c);
        if (c.items_cnt == c.items_cap)
            dlb_metrics_nap_ms(c.stop,
                               100); /* all held back by the barrier: let its wait run out */
        t_poll = dlb_lat_clock_ns();
        stream_batch_poll(&c);
        c.poll_ns += dlb_lat_clock_ns() - t_poll;
        if (c.consumer_fatal) {
            if ((err = consumer_replace(&c, errstr, errstr_size)))
                goto out;
            continue;
        }
        if (!c.items_cnt)
            continue;
        stream_redis_connect(&c);
        batch_release(&c);
        if (!c.order_cnt) {
            flow_control(&c);
            continue;
        }
        fatal = 0;
        t_start = dlb_clock_mono_ms();
        t_batch = dlb_metric_now();
        if ((err = batch_process(&c, err_buf, sizeof(err_buf)))) {
            if (err == DLB_ERR_INVALID && !*stop && isolate(&c, err_buf))
                continue; /* the batch again, without the bad record or record by record */
            /* A record's own fault (one that could not be pinned) is bad
             * input, not the database being down. */
            dlb_metric_add(err == DLB_ERR_NOMEM     ? c.m.err_internal
                           : err == DLB_ERR_INVALID ? c.m.bad[2]
                                                    : c.m.err_pg,
                           1);
        } else {
            t_processed = dlb_clock_mono_ms();
            if ((err = stream_batch_publish(&c, &fatal, err_buf, sizeof(err_buf))))
                dlb_metric_add(c.m.err_kafka, 1);
        }
        if (err) {
            if (*stop)
                break;
            stats->retries++;
            snprintf(c.last_failure, sizeof(c.last_failure), "%.400s (%s)", err_buf,
                     dlb_err_name(err));
            dlb_err("batch of %zu message(s) failed: %s (%s); rewinding and retrying in %d ms",
                    c.order_cnt, err_buf, dlb_err_name(err), conf->retry_backoff_ms);
            stream_ramp_reset(&c);
            if ((err = batch_rewind(&c, err_buf, sizeof(err_buf)))) {
                /* Stopped: nothing of the batch was committed, so the next
                 * start resumes from the committed offsets. */
                dlb_info("kafka: stopped before the failed batch was rewound (%s); the next "
                         "start resumes from the committed offsets",
                         err_buf);
                err = 0;
                goto out;
            }
            flow_control(&c);
            dlb_metrics_nap_ms(c.stop, conf->retry_backoff_ms);
            if (fatal) {
                if ((err = dlb_kafka_fenced_too_often(&c.fenced, c.producer,
                                                      dlb_clock_mono_ms() - c.txn_began, errstr,
                                                      errstr_size)))
                    goto out;
                dlb_warn("kafka: replacing the transactional producer");
                dlb_txn_producer_stop(&c.producer);
                if ((err = dlb_txn_producer_start(conf, c.group, stop, &c.producer, errstr,
                                                  errstr_size)))
                    goto out;
            }
            if (dlb_pg_reconnect(c.pg, err_buf, sizeof(err_buf)))
                dlb_warn("%s; the batch is retried in the next round", err_buf);
            continue;
        }
        stats->batches++;
        c.exact = 0;
        stream_ramp_up(&c);
        stream_batch_progressed(&c);
        dlb_metric_observe_since(c.m.batch_seconds, t_batch);
        if (c.m.event_seconds) {
            int64_t now = dlb_clock_mono_ms();
            for (size_t k = 0; k < c.order_cnt; k++)
                dlb_metric_observe(c.m.event_seconds,
                                   (double)(now - c.items[c.order[k]].polled_at) / 1000.0);
        }
        /* Polling includes waiting for messages (caught up, or a held
         * request's grace) and the rounds before that released nothing. */
        dlb_dbg("batch of %zu message(s), %zu output(s): polling %.1f ms (decoding and validating "
                "%.1f ms), PostgreSQL and Redis %lld ms (decoding %zu message(s) ahead meanwhile "
                "%.1f ms), Kafka transaction %lld ms",
                c.order_cnt, c.out_cnt, (double)c.poll_ns / 1e6, (double)c.decode_ns / 1e6,
                (long long)(t_processed - t_start), c.ahead_cnt, (double)c.ahead_ns / 1e6,
                (long long)(dlb_clock_mono_ms() - t_processed));
        c.poll_ns = c.decode_ns = c.ahead_ns = 0;
        c.ahead_cnt = 0;
        items_filter(&c, keep_unreleased, NULL);
        out_clear(&c);
        flow_control(&c);
    }
    err = 0;
out:
    teardown(&c);
    return err;
}

/* ---- for the role's callbacks ---------------------------------------------- */

const dlb_conf_t *dlb_stream_conf(const dlb_stream_t *s)
{
    return s->conf;
}

const dlb_catalog_t *dlb_stream_catalog(const dlb_stream_t *s)
{
    return s->cat;
}

void *dlb_stream_opaque(const dlb_stream_t *s)
{
    return s->role->opaque;
}

dlb_pg_t *dlb_stream_pg(dlb_stream_t *s)
{
    return s->pg;
}

dlb_redis_t *dlb_stream_redis(dlb_stream_t *s)
{
    return s->redis;
}

void dlb_stream_redis_down(dlb_stream_t *s, const char *what, const char *errstr)
{
    stream_redis_down(s, what, errstr);
}

void dlb_stream_reject(dlb_stream_t *s, const char *stage, int err, const char *msg)
{
    if (s->cur)
        stream_to_dlq(s, s->cur, stage, err, msg);
}
