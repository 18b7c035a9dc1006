/* The ordering barrier: its rule for one partition (barrier.h), and the
 * stream's use of it (stream_internal.h): each other input partition's view
 * of a request, its end asked of the broker when the rule needs it. */
#include "barrier.h"

#include <stdint.h>

#include "clock.h"
#include "log.h"
#include "stream_internal.h"

int dlb_barrier_part_ready(const dlb_barrier_view_t *v, int (*end_confirmed)(void *arg), void *arg)
{
    /* The producer's own events, by position: consumed past them, whatever
     * the clocks say. A position the broker's log does not reach (a crafted
     * header) holds nothing: waiting for it would only end with
     * consumer.order.wait.ms. */
    if (v->has_after && v->after >= 0 && v->after >= v->next && !(v->at_eof && end_confirmed(arg)))
        return 0;
    /* Everyone else's, by event time: the partition has shown an event at or
     * after the request's time, or was consumed to its end. Without a
     * header, that end is trusted only after the grace, as the producer's
     * own events may still be in flight to it. */
    if (v->max_ts >= v->req_ts)
        return 1;
    return v->at_eof && (v->has_after || v->grace_over) && end_confirmed(arg);
}

/* Whether p's end as we know it was asked after req was polled. */
static int end_fresh(const part_t *p, const item_t *req)
{
    return p->end_asked_at >= req->polled_at && p->end_asked_next == p->next;
}

/* Ask the broker where every partition merged with req's that we consumed to
 * its end ends now, in one ListOffsets round trip (offsets_for_times with
 * "latest": the producer's isolation level, read_committed, gives the last
 * stable offset, what our read_committed consumer can reach). Asked on the
 * producer's connections: a broker answers a connection's requests in order,
 * and the consumer's hold a fetch waiting up to fetch.wait.max.ms for data
 * (measured: +300 ms a plan at p50). */
static void ends_ask(ctx_t *c, const item_t *req)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(c->ninputs);
    part_t *asked[DLB_STREAM_MAX_INPUTS];
    int64_t at = dlb_clock_mono_ms();
    rd_kafka_resp_err_t e;

    if (!l)
        return;
    for (int r = 0; r < c->ninputs; r++) {
        part_t *p = r == req->rank ? NULL : stream_part(c, r, req->msg->partition);
        if (p && p->at_eof && p->next >= 0 && !end_fresh(p, req)) {
            asked[l->cnt] = p;
            rd_kafka_topic_partition_list_add(l, c->topics[r], p->partition)->offset =
                RD_KAFKA_OFFSET_END;
        }
    }
    if (l->cnt && (e = rd_kafka_offsets_for_times(c->producer, l, STREAM_ASK_TIMEOUT_MS)))
        dlb_dbg("kafka: asking where %d partition(s) end: %s; trusting the ends consumed", l->cnt,
                rd_kafka_err2str(e));
    else
        for (int i = 0; i < l->cnt; i++) {
            part_t *p = asked[i];
            if (l->elems[i].err) {
                dlb_dbg("kafka: asking the end of %s [%d]: %s; trusting the end consumed",
                        c->topics[p->rank], (int)p->partition, rd_kafka_err2str(l->elems[i].err));
                continue;
            }
            /* The log as of when it was asked: requests polled since ask again. */
            p->end_asked_at = at;
            p->end_asked_next = p->next;
            p->end_more = l->elems[i].offset > p->next;
        }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Whether a partition we consumed to its end is at its end on the broker
 * too, asked after req was polled. A producer that sends a job's events and
 * waits for them before its request (the agent, emit, the gateway) put them
 * in the log before the request: our end-of-partition may be older than they
 * are (a fetch that came back empty just before), and without asking, a
 * loaded machine or a broker that holds empty fetches (the mock cluster, for
 * fetch.wait.max.ms) lets the request through without them. One round trip
 * for all of req's partitions (ends_ask), shared by the requests polled
 * before it; when the broker cannot say, the end we saw is trusted. */
static int end_confirmed(ctx_t *c, part_t *p, const item_t *req)
{
    if (p->next < 0 || !c->producer)
        return 1; /* nothing to compare with, or no one to ask */
    if (!end_fresh(p, req))
        ends_ask(c, req);
    return end_fresh(p, req) ? !p->end_more : 1;
}

/* A plan request may be answered once every other input topic's partition of
 * the same number (the same jobs: all topics are keyed by job uid with the
 * same partition count) holds nothing the request depends on that we have not
 * applied: the positions its dlb.after header names, and the other producers'
 * events older than it (dlb_barrier_part_ready: the rule, barrier.c). This is
 * Kafka Streams' co-partitioned ordering; like its max.task.idle.ms, the
 * whole wait is bounded by consumer.order.wait.ms so a silent producer cannot
 * stall plans. */
typedef struct end_ask {
    ctx_t *c;
    part_t *p;
    const item_t *req;
} end_ask_t;

static int end_ask(void *arg)
{
    end_ask_t *a = arg;
    return end_confirmed(a->c, a->p, a->req);
}

/* Whether we hold messages of a partition that are not decoded yet. */
static int undecoded_of(const ctx_t *c, int rank, int32_t partition)
{
    for (size_t i = 0; i < c->items_cnt; i++)
        if (c->items[i].undecoded && c->items[i].rank == rank &&
            c->items[i].msg->partition == partition)
            return 1;
    return 0;
}

int stream_barrier_open(ctx_t *c, const item_t *req, int64_t now, const char **lagging)
{
    for (int r = 0; r < c->ninputs; r++) {
        end_ask_t ask = {c, NULL, req};
        dlb_barrier_view_t v;

        if (r == req->rank)
            continue;
        if (!(ask.p = stream_part(c, r, req->msg->partition)))
            return 1;
        /* Polled but not decoded (taken ahead): its position counts as
         * consumed, its event time is not known yet, and it is not applied. */
        if (undecoded_of(c, r, req->msg->partition)) {
            *lagging = c->topics[r];
            return 0;
        }
        v.max_ts = ask.p->max_ts;
        v.next = ask.p->next;
        v.at_eof = ask.p->at_eof;
        v.req_ts = req->ts;
        v.has_after = req->has_after;
        v.after = req->has_after ? req->after[r] : -1;
        v.grace_over = now - req->polled_at >= c->conf->order_grace_ms;
        if (!dlb_barrier_part_ready(&v, end_ask, &ask)) {
            *lagging = c->topics[r];
            return 0;
        }
    }
    return 1;
}
