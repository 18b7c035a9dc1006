/* Polling a batch (stream.c's loop): messages into items, each decoded and
 * validated as it is polled, bad ones marked for the DLQ, batches that start
 * small and grow, and with consumer.decode.ahead the next batch taken before
 * this one's writes and decoded while PostgreSQL stores it. */
#include "stream_internal.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "catalog.h"
#include "clock.h"
#include "codec.h"
#include "err.h"
#include "latency.h"
#include "log.h"
#include "metrics.h"
#include "store_pg.h"

/* Bad input stages, in the order of stream_metrics_t.dlq. */
const char *const stream_dlq_stages[NSTAGES] = {"decode", "validate", "process"};

size_t stream_stage_index(const char *stage)
{
    for (size_t i = 0; i < NSTAGES; i++)
        if (!strcmp(stream_dlq_stages[i], stage))
            return i;
    return NSTAGES - 1;
}

/* Decoded, it holds about its record's bytes again (texts) and its lists. */
static void count_decoded(ctx_t *c, item_t *it)
{
    size_t n = it->msg->len + dlb_event_heap_bytes(&it->ev);

    it->bytes += n;
    c->held_bytes += n;
}

static void uncount_decoded(ctx_t *c, item_t *it)
{
    size_t n = sizeof(item_t) + it->msg->len;

    if (it->bytes > n) {
        c->held_bytes -= it->bytes - n;
        it->bytes = n;
    }
}

void stream_to_dlq(ctx_t *c, item_t *it, const char *stage, int err, const char *msg)
{
    dlb_metric_add(c->m.bad[stream_stage_index(stage)], 1);
    dlb_warn("bad message at %s [%" PRId32 "] offset %" PRId64 " (%s, %s): %s; sent to the DLQ",
             rd_kafka_topic_name(it->msg->rkt), it->msg->partition, it->msg->offset, stage,
             dlb_err_name(err), msg);
    it->dlq_stage = stage;
    it->dlq_err = err;
    snprintf(it->dlq_msg, sizeof(it->dlq_msg), "%s", msg);
    /* Only the record's bytes go to the DLQ: what it decoded to is freed now,
     * not when its batch commits. */
    uncount_decoded(c, it);
    dlb_event_clear(&it->ev);
}

/* Whether the schema id of it names the event type its topic carries, asked
 * before decoding: a type the topic does not carry is refused before its
 * lists are allocated (any schema id used to decode on any topic). */
static int topic_carries(ctx_t *c, const item_t *it, char *errstr, size_t size)
{
    const dlb_schema_entry_t *e;
    const char *want;
    int32_t id;
    int err;

    if (it->rank < 0)
        return 0;
    if ((err = dlb_codec_peek(it->msg->payload, it->msg->len, &id, errstr, size)))
        return err;
    if (dlb_catalog_by_wire_id(c->cat, id, &e, errstr, size))
        return 0; /* the decoder names the unknown id */
    want = c->role->inputs[it->rank];
    if (!strcmp(dlb_event_type_topic(e->type), want))
        return 0;
    return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                      "schema id %d is a %s, which %s does not carry", (int)id,
                      dlb_event_type_name(e->type), c->topics[it->rank]);
}

/* The record's timestamp, what an event time is checked against; -1: none. */
static int64_t record_ms(const item_t *it)
{
    rd_kafka_timestamp_type_t type;
    int64_t ts = rd_kafka_message_timestamp(it->msg, &type);

    return type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? -1 : ts;
}

/* A request's dlb.after header, as offsets per input topic on the request's
 * partition. Positions the merge cannot wait for (a topic that is not an
 * input of ours, another partition) void the header: they name another log
 * (a copy that kept the header), so the request is held as one without it. */
static int item_after(ctx_t *c, item_t *it, char *errstr, size_t size)
{
    rd_kafka_headers_t *hdrs;
    const void *val;
    size_t len;
    dlb_after_t a;
    int err;

    it->has_after = 0;
    if (rd_kafka_message_headers(it->msg, &hdrs) ||
        rd_kafka_header_get_last(hdrs, DLB_AFTER_HEADER, &val, &len))
        return 0;
    if ((err = dlb_after_parse(val, val ? len : 0, &a, errstr, size)))
        return err;
    for (int r = 0; r < c->ninputs; r++)
        it->after[r] = -1;
    for (size_t i = 0; i < a.cnt; i++) {
        int r = stream_topic_rank(c, a.pos[i].topic);
        if (r < 0 || a.pos[i].partition != it->msg->partition) {
            dlb_dbg("request at %s [%" PRId32 "] offset %" PRId64 ": header %s names %s [%" PRId32
                    "], not an input partition merged with it; held as without the header",
                    rd_kafka_topic_name(it->msg->rkt), it->msg->partition, it->msg->offset,
                    DLB_AFTER_HEADER, a.pos[i].topic, a.pos[i].partition);
            return 0;
        }
        if (a.pos[i].offset > it->after[r])
            it->after[r] = a.pos[i].offset;
    }
    it->has_after = 1;
    return 0;
}

/* Decode and validate a message polled now; a bad one goes to the DLQ (its
 * offset is committed with the batch, so it is not seen again). Done as it
 * is polled, so the memory budget counts what it decodes to. */
static void decode_validate(ctx_t *c, item_t *it)
{
    const char *stage = NULL;
    char errstr[512];
    part_t *p;
    int err;

    it->ts = INT64_MIN;
    if ((int64_t)it->msg->len > c->conf->max_message_bytes) {
        snprintf(errstr, sizeof(errstr), "message of %zu bytes exceeds message.max.bytes %lld",
                 it->msg->len, (long long)c->conf->max_message_bytes);
        stream_to_dlq(c, it, "decode", DLB_ERR_INVALID, errstr);
        return;
    }
    /* The checks the gateway runs too before it acknowledges (admit.h). */
    if ((err = topic_carries(c, it, errstr, sizeof(errstr))) ||
        (err = dlb_codec_admit(c->dec, it->msg->payload, it->msg->len, record_ms(it),
                               c->conf->skew_s, &it->ev, &stage, errstr, sizeof(errstr)))) {
        if (err == DLB_ERR_TRANSIENT) {
            dlb_event_clear(&it->ev);
            it->retry = 1;
            snprintf(it->dlq_msg, sizeof(it->dlq_msg), "%s", errstr);
            return;
        }
        if (stage && !strcmp(stage, "validate"))
            count_decoded(c, it); /* stream_to_dlq() uncounts it */
        stream_to_dlq(c, it, stage ? stage : "decode", err, errstr);
        return;
    }
    count_decoded(c, it);
    if (!c->role->accepts(&it->ev)) {
        snprintf(errstr, sizeof(errstr), "a %s is not an input of the %s",
                 dlb_event_type_name(it->ev.type), c->role->name);
        stream_to_dlq(c, it, "validate", DLB_ERR_INVALID, errstr);
        return;
    }
    if (c->role->is_request(&it->ev) && (err = item_after(c, it, errstr, sizeof(errstr)))) {
        stream_to_dlq(c, it, "decode", err, errstr);
        return;
    }
    it->ok = 1;
    it->ts = dlb_event_time_ms(&it->ev);
    if (it->rank >= 0 && (p = stream_part(c, it->rank, it->msg->partition)) && it->ts > p->max_ts)
        p->max_ts = it->ts;
}

/* decode_validate(), its time counted for the batch's debug line. */
static void item_decode(ctx_t *c, item_t *it)
{
    int64_t t0 = dlb_lat_clock_ns();

    decode_validate(c, it);
    c->decode_ns += dlb_lat_clock_ns() - t0;
}

/* How many messages of the assigned partitions we fetch are not polled yet,
 * as of their last fetch responses (librdkafka's cached high watermarks),
 * counted up to enough. A partition not polled from since its assignment
 * counts as enough until it showed its end (EOF): it may hold a backlog. */
int64_t stream_lag(const ctx_t *c, int64_t enough)
{
    int64_t sum = 0;

    for (size_t i = 0; i < c->parts_cnt && sum < enough; i++) {
        const part_t *p = &c->parts[i];
        int64_t lo, hi;

        if (!p->assigned || p->paused)
            continue;
        if (p->next < 0)
            sum += p->at_eof ? 0 : enough;
        else if (rd_kafka_get_watermark_offsets(c->consumer, c->topics[p->rank], p->partition, &lo,
                                                &hi) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                 hi > p->next)
            sum += hi - p->next;
    }
    return sum;
}

/* How long the next poll may wait for a first message: consumer.poll.ms, or
 * less when a held plan request falls due sooner (its grace ends, or its
 * whole wait), so it is answered then and not a poll later. */
static int poll_wait_ms(const ctx_t *c)
{
    int64_t now = dlb_clock_mono_ms(), wait = c->conf->poll_ms;

    for (size_t i = 0; i < c->items_cnt; i++) {
        const item_t *it = &c->items[i];
        int64_t due;

        if (!it->ok || !c->role->is_request(&it->ev))
            continue;
        due = it->polled_at + (it->has_after ? 0 : c->conf->order_grace_ms);
        if (due <= now)
            /* Past its grace: due when its whole wait ends, if the barrier
             * holds it; if it waits behind another request, that one's. */
            due = it->blocked_since ? it->blocked_since + c->conf->order_wait_ms : 0;
        if (due > now && due - now < wait)
            wait = due - now;
    }
    return (int)wait;
}

/* Batches start small and grow: a process that was killed in the middle of a
 * batch (a crash, or an OOM kill the batch itself caused) lost all of its
 * work, and on a backlog its next batch was again a full one, as slow and as
 * big. A crash loop shorter than that batch then never committed anything:
 * seen in the chaos test under the sanitizers, a partition with two jobs of
 * 16,384 pods a sample and a backlog of plan requests made no progress for
 * ten minutes. Now the first batch after a start or a failure is 1/32 of
 * the full one, and each committed batch doubles it. */
#define RAMP_DIV 32

void stream_ramp_reset(ctx_t *c)
{
    c->ramp_msgs = (size_t)c->conf->batch_size / RAMP_DIV;
    c->ramp_bytes = (size_t)c->conf->batch_max_bytes / RAMP_DIV;
    if (c->ramp_msgs < 1)
        c->ramp_msgs = 1;
}

void stream_ramp_up(ctx_t *c)
{
    c->ramp_msgs *= 2;
    c->ramp_bytes *= 2;
    if (c->ramp_msgs > (size_t)c->conf->batch_size)
        c->ramp_msgs = (size_t)c->conf->batch_size;
    if (c->ramp_bytes > (size_t)c->conf->batch_max_bytes)
        c->ramp_bytes = (size_t)c->conf->batch_max_bytes;
}

/* A message the consumer gave: an event (end of partition, error) is noted,
 * a record becomes an item, decoded now or, taken ahead, left for later.
 * @returns 1 for an item, 0 for an event, -1 when the consumer failed for
 * good (c->consumer_fatal). */
static int item_take(ctx_t *c, rd_kafka_message_t *m, int ahead)
{
    int rank = m->rkt ? stream_topic_rank(c, rd_kafka_topic_name(m->rkt)) : -1;
    part_t *p = rank >= 0 ? stream_part(c, rank, m->partition) : NULL;
    item_t *it;

    if (m->err) {
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (p) {
                p->at_eof = 1;
                if (m->offset >= 0) /* the end: where the next message will be */
                    p->next = m->offset;
            }
        } else if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
            /* Nothing more comes from this consumer (for instance a static
             * member fenced after a broker restart): the loop replaces it
             * (consumer_replace). */
            dlb_metric_add(c->m.err_kafka, 1);
            c->consumer_fatal = 1;
            rd_kafka_message_destroy(m);
            return -1;
        } else {
            dlb_metric_add(c->m.err_kafka, 1);
            dlb_warn("kafka: consume error on %s [%" PRId32 "]: %s; skipping it, polling on",
                     m->rkt ? rd_kafka_topic_name(m->rkt) : "(no topic)", m->partition,
                     rd_kafka_message_errstr(m));
        }
        rd_kafka_message_destroy(m);
        return 0;
    }
    if (p) {
        p->at_eof = 0;
        p->rewound = 0;
        p->next = m->offset + 1;
    }
    it = &c->items[c->items_cnt++];
    memset(it, 0, sizeof(*it));
    it->msg = m;
    it->rank = rank;
    it->polled_at = dlb_clock_mono_ms();
    it->bytes = sizeof(item_t) + m->len;
    it->ts = INT64_MIN;
    c->held_bytes += it->bytes;
    if (ahead)
        it->ahead = it->undecoded = 1;
    else
        item_decode(c, it);
    c->st->consumed++;
    if (rank >= 0)
        dlb_metric_add(c->m.consumed[rank], 1);
    return 1;
}

/* The messages taken ahead during the last batch join this round, and those
 * its writes left undecoded are decoded now, in the order they were polled,
 * as far as the memory budget goes (the first always: the round must hold
 * something it can release). @returns how many joined. */
static size_t ahead_join(ctx_t *c)
{
    size_t joined = 0;
    int decoded = 0;

    for (size_t i = 0; i < c->items_cnt; i++) {
        item_t *it = &c->items[i];

        joined += (size_t)it->ahead;
        it->ahead = 0;
        if (!it->undecoded || (decoded && c->held_bytes >= c->ramp_bytes))
            continue;
        it->undecoded = 0;
        item_decode(c, it);
        decoded = 1;
    }
    return joined;
}

/* With a backlog, the next batch's messages are taken now, from what
 * librdkafka has fetched already (no waiting), so pending_flush() can decode
 * them while PostgreSQL stores this batch. Taken before this batch's writes,
 * not during them: a poll runs the rebalance callback, and one between the
 * batch's PostgreSQL commit and its Kafka commit could hand its partitions
 * to another member that redoes them (stream/README.md). They stay out of
 * this round: batch_release() skips them, so the barrier, the committed
 * offsets (the first message not released) and the stored positions see
 * only this batch; a rewind, a revoke or a new consumer drops them with the
 * rest, as it drops the messages the barrier holds back. */
static void take_ahead(ctx_t *c)
{
    size_t taken = 0;

    while (c->conf->decode_ahead && taken < c->ramp_msgs && c->items_cnt < c->items_cap &&
           c->held_bytes < c->ramp_bytes && !*c->stop) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->consumer, 0);
        int r;

        if (!m || (r = item_take(c, m, 1)) < 0)
            break;
        taken += (size_t)r;
    }
}

/* Whether the round holds a request to answer. */
static int holds_request(const ctx_t *c)
{
    for (size_t i = c->items_cnt; i-- > 0;)
        if (c->items[i].ok && c->role->is_request(&c->items[i].ev))
            return 1;
    return 0;
}

/* Add up to batch_size new messages, waiting at most poll_wait_ms. Behind
 * (a backlog), the batch is filled: one PostgreSQL and one Kafka transaction
 * per batch is what makes a backlog go fast. Caught up, what has been
 * fetched is the batch once it holds a request: a plan request is answered
 * as soon as it is read, not after a batch that is not coming (latency).
 * Events alone wait on, up to the poll's end, for what comes next: a
 * producer that sends a job's events and then its request (the simulator,
 * the agent, the gateway) had the events stored in a batch of their own,
 * and the request waited for that batch's two commits (half the batches of
 * a simulation, 10 ms each). */
void stream_batch_poll(ctx_t *c)
{
    int64_t deadline = dlb_clock_mono_ms() + poll_wait_ms(c);
    size_t added = ahead_join(c);

    while (added < c->ramp_msgs && c->items_cnt < c->items_cap &&
           (c->held_bytes < c->ramp_bytes || !c->items_cnt) && !*c->stop) {
        int64_t left = deadline - dlb_clock_mono_ms();
        rd_kafka_message_t *m;
        int r;

        if (left <= 0)
            break;
        /* Whether we are caught up is asked only when the local queue is
         * empty: once per batch when caught up, not once per message. */
        if (!(m = rd_kafka_consumer_poll(c->consumer, 0))) {
            if (added && holds_request(c) && stream_lag(c, 1) == 0)
                break;
            if (!(m = rd_kafka_consumer_poll(c->consumer, (int)left)))
                continue;
        }
        if ((r = item_take(c, m, 0)) < 0)
            return;
        added += (size_t)r;
    }
    if (added >= c->ramp_msgs)
        take_ahead(c);
}

/* While PostgreSQL stores the batch's samples, the messages taken ahead are
 * decoded, in order, until it is done or the memory budget is reached:
 * decoding then runs on the second core beside the server. */
void stream_decode_while_stored(ctx_t *c)
{
    int64_t t0 = dlb_lat_clock_ns();
    size_t n = 0;

    for (size_t i = 0; i < c->items_cnt; i++) {
        item_t *it = &c->items[i];

        if (!it->undecoded)
            continue;
        if (c->held_bytes >= (size_t)c->conf->batch_max_bytes || !dlb_pg_busy(c->pg))
            break;
        it->undecoded = 0;
        decode_validate(c, it);
        n++;
    }
    if (n) {
        c->ahead_cnt += n;
        c->ahead_ns += dlb_lat_clock_ns() - t0;
    }
}
