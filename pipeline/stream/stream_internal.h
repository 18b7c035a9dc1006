/* The stream processor's inside, shared by stream.c (the loop) and
 * stream_conn.c (its connections); not a public API. */
#ifndef DLB_STREAM_INTERNAL_H
#define DLB_STREAM_INTERNAL_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "cache_redis.h"
#include "catalog.h"
#include "codec.h"
#include "kafka.h"
#include "metrics.h"
#include "store_pg.h"
#include "stream.h"

typedef struct item {
    rd_kafka_message_t *msg;
    dlb_event_t ev;
    int rank;     /* index of its topic in the role's inputs, -1 if none */
    int ok;       /* decoded and valid */
    int retry;    /* not decoded for a transient reason (the schema registry is down):
                     the batch is rewound and polled again, nothing goes to the DLQ */
    int released; /* processed in this round */
    /* Taken ahead (consumer.decode.ahead): polled before the last batch's
     * writes, after its messages. ahead: not part of a round yet, so not
     * held back by the barrier either (flow control leaves its partition
     * running); undecoded: decoded neither during those writes nor since. */
    int ahead;
    int undecoded;
    int64_t ts;        /* event time, INT64_MIN for bad messages */
    int64_t polled_at; /* monotonic ms when it was polled */
    size_t bytes;      /* memory it holds, as counted in held_bytes */
    /* Bad input: where it failed and why. It goes to the DLQ inside the
     * batch's transaction, so an aborted batch leaves no DLQ copy behind. */
    const char *dlq_stage; /* NULL when not bad */
    int dlq_err;
    char dlq_msg[512];
    int64_t blocked_since; /* requests: when the barrier first held it, 0 if never */
    /* Requests with a dlb.after header (after.h): per input topic, the
     * offset on this partition the request depends on, -1 for none. */
    int has_after;
    int64_t after[DLB_STREAM_MAX_INPUTS];
} item_t;

/* What we know of one assigned input partition, for the ordering barrier. */
typedef struct part {
    int rank;
    int32_t partition;
    int64_t max_ts; /* newest event time consumed from it, INT64_MIN if none */
    int at_eof;     /* consumed to its end and nothing since */
    int assigned;   /* ours now (revoked entries are kept, unassigned) */
    int paused;     /* we paused its fetching (we hold messages of it) */
    int64_t next;   /* offset after the last message polled from it, -1 if none */
    int held;       /* scratch: messages of it held back this round */
    /* The broker's end of it as last asked (eof_confirmed): when, at which
     * of our positions, and whether there was more. */
    int64_t end_asked_at, end_asked_next;
    int end_more;
    /* When it last moved (a batch with messages of it committed) or had
     * nothing waiting (monotonic ms); stalled: reported so (watch_progress). */
    int64_t progress_at;
    int stalled;
    int rewound; /* sought back to messages not polled again yet */
    /* The group's position in PostgreSQL (stream_positions.c): the messages
     * before stored_next have their rows committed, as far as we know
     * (stored_known: loaded since the partition was assigned). */
    int stored_known;
    int64_t stored_next;
} part_t;

typedef struct outmsg {
    char key[DLB_ID_MAX];
    char stamp[DLB_KAFKA_STAMP_MAX]; /* of the record it answers (kafka.h), "" = none */
    void *buf;
    size_t len;
} outmsg_t;

typedef struct dlb_stream ctx_t;

/* Bad input stages (stream_dlq_stages): decode, validate, process. */
#define NSTAGES 3

/* The series this loop updates, looked up once at set-up (all NULL without
 * a metrics registry: every update is then a no-op). */
typedef struct stream_metrics {
    dlb_series_t *consumed[DLB_STREAM_MAX_INPUTS];  /* per input topic */
    dlb_series_t *processed[DLB_STREAM_MAX_INPUTS]; /* per input topic */
    dlb_series_t *dlq[DLB_STREAM_MAX_INPUTS][NSTAGES];
    dlb_series_t *bad[NSTAGES]; /* errors_total{class=stage} */
    dlb_series_t *err_pg, *err_redis, *err_kafka, *err_internal;
    dlb_series_t *produced;
    dlb_series_t *txn_committed, *txn_aborted;
    dlb_series_t *assigns, *revokes, *assigned, *stalled;
    dlb_series_t *batch_seconds, *event_seconds;
    dlb_series_t *pruned[DLB_PG_HISTORY_TABLES]; /* per history table */
} stream_metrics_t;

struct dlb_stream {
    const dlb_conf_t *conf;
    const dlb_stream_role_t *role;
    const char *group;
    volatile sig_atomic_t *stop;
    dlb_stream_stats_t *st;
    dlb_catalog_t *cat;
    /* Decodes every polled message, keeping its avro-c values per schema id
     * between messages (codec.h); the loop's thread is its only user. */
    dlb_codec_decoder_t *dec;
    dlb_pg_t *pg;
    dlb_redis_t *redis; /* NULL while Redis is down */
    int64_t redis_retry_at;
    int redis_missed; /* events went by while Redis was down: its job states are stale */
    rd_kafka_t *consumer;
    rd_kafka_t *producer;
    char topics[DLB_STREAM_MAX_INPUTS][256];
    int ninputs;
    char out_topic[256];
    /* Messages polled and not yet committed, in poll order (so in offset
     * order within each partition). Capacity 2 x batch size: one batch of
     * new messages on top of those held back by the barrier, or the next
     * batch's taken ahead. */
    item_t *items;
    size_t items_cnt, items_cap;
    /* Memory the items hold (records, decoded lists): polling stops at
     * consumer.batch.max.mb, so a batch of records that decode large cannot
     * exhaust memory (and, after the restart, again). */
    size_t held_bytes;
    /* Slow start: a round polls at most ramp_msgs new messages and stops at
     * ramp_bytes; both start at 1/32 of consumer.batch.size and
     * consumer.batch.max.mb and double with each committed batch; a failed
     * batch starts them over (stream.c, ramp_reset). */
    size_t ramp_msgs, ramp_bytes;
    size_t *order; /* indexes of the items released this round */
    size_t order_cnt;
    part_t *parts;
    size_t parts_cnt, parts_cap;
    outmsg_t *out;
    size_t out_cnt, out_cap;
    item_t *cur; /* the item role->process() is given */
    /* Runtime samples dlb_stream_store_event() was given in this batch and
     * has not written yet: written together by pending_flush(), one
     * PostgreSQL statement and one Redis round trip for all of them instead
     * of one of each per sample (capacity items_cap). */
    const dlb_event_t **pend_ev;
    const void **pend_raw;
    size_t *pend_len;
    size_t pend_cnt;
    /* Per pending sample: its message is before its partition's stored
     * position (stream_position_stored()); and pending_flush()'s scratch of
     * the samples reordered, those stored first (capacity items_cap). */
    unsigned char *pend_stored;
    const dlb_event_t **flush_ev;
    const void **flush_raw;
    size_t *flush_len;
    /* A record whose processing failed for good (DLB_ERR_INVALID: its own
     * fault) is found and sent to the DLQ instead of failing its batch for
     * ever: bad_item is the index in items of the one being processed when
     * the batch failed (-1 none known), exact makes the redo write every
     * record alone, so the failure is known to be that record's. */
    int bad_item;
    int exact;
    /* Fatal fencings of the producer and the consumer (dlb_kafka_fenced_too_often). */
    dlb_kafka_fence_t fenced, consumer_fenced;
    int64_t txn_began; /* when the last transaction began (monotonic ms) */
    /* Since the last committed batch: time in batch_poll() and, of it, in
     * decoding and validating (ns); messages decoded ahead while PostgreSQL
     * stored the batch, and the time it took; for the per-batch debug line. */
    int64_t poll_ns, decode_ns, ahead_ns;
    size_t ahead_cnt;
    int consumer_fatal;     /* the consumer reported a fatal error: replace it */
    char last_failure[512]; /* why the last batch failed, "" after one succeeded */
    int64_t watched_at;     /* when watch_progress() last looked */
    /* Maintenance (stream_retention.c): the retention window in ms (0: keep
     * forever), when the next round is due (monotonic ms; the first waits
     * for a committed batch or first_round_at) and the rounds done. */
    int64_t retention_ms;
    int64_t prune_at;
    int64_t first_round_at;
    int rounds;
    stream_metrics_t m;
};

/* ---- stream_poll.c: polling a batch, decoding and validating it ---- */

/* Bad input stages, in the order of stream_metrics_t.dlq: decode, validate,
 * process. */
extern const char *const stream_dlq_stages[NSTAGES];
/** The index of a bad input stage in stream_dlq_stages (process if unknown). */
size_t stream_stage_index(const char *stage);
/** Mark it bad (stage, error, message) for the DLQ, which it goes to inside
 *  its batch's transaction; what it decoded to is freed now. */
void stream_to_dlq(ctx_t *c, item_t *it, const char *stage, int err, const char *msg);
/** How many messages of the assigned partitions are fetched and not polled
 *  yet (librdkafka's cached high watermarks), counted up to enough. */
int64_t stream_lag(const ctx_t *c, int64_t enough);
/** Slow start: the first batch after a start or a failure is small, and
 *  each committed batch doubles it up to the full one. */
void stream_ramp_reset(ctx_t *c);
void stream_ramp_up(ctx_t *c);
/** Add up to a batch of new messages to items, decoded and validated (with
 *  consumer.decode.ahead and a backlog, and the next batch's taken ahead). */
void stream_batch_poll(ctx_t *c);
/** While PostgreSQL runs the statement sent without waiting: decode the
 *  messages taken ahead, until it has answered or the memory budget is met. */
void stream_decode_while_stored(ctx_t *c);

/* ---- stream_conn.c: PostgreSQL, Redis and Kafka, each waited for or
 * retried as its outage needs ---- */

/** Redis failed doing what: drop the connection, serve job state from
 *  PostgreSQL, and retry connecting in a while. */
void stream_redis_down(ctx_t *c, const char *what, const char *errstr);
/** Connect to Redis when not connected and the retry is due; after an outage
 *  the states cached before it are dropped. Failure is logged, not returned. */
void stream_redis_connect(ctx_t *c);
/** Connect (or reconnect) and migrate, waiting out an unreachable server. */
int stream_pg_connect(ctx_t *c, char *errstr, size_t size);
/** The consumer of the role's input topics, subscribed, with rebalance_cb. */
int stream_consumer_start(ctx_t *c,
                          void (*rebalance_cb)(rd_kafka_t *, rd_kafka_resp_err_t,
                                               rd_kafka_topic_partition_list_t *, void *),
                          char *errstr, size_t size);
/** Close and release every connection. */
void stream_disconnect(ctx_t *c);

/* ---- stream.c ---- */

/** Write the runtime samples held for the batch (PostgreSQL, then Redis),
 *  before anything that may read them. */
int stream_pending_flush(ctx_t *c, char *errstr, size_t size);

/* The longest the loop waits for the broker to say where a partition ends
 * (barrier), or what the group committed (5x); past it, what the consumer
 * knows is trusted. */
#define STREAM_ASK_TIMEOUT_MS 1000

/* ---- barrier.c ---- */

/** Whether the request may be answered: every other input topic's partition
 *  of its number holds nothing it depends on that is not applied
 *  (dlb_barrier_part_ready); else *lagging names the first that does. */
int stream_barrier_open(ctx_t *c, const item_t *req, int64_t now, const char **lagging);

/* ---- stream_txn.c ---- */

/** The batch's one Kafka transaction: DLQ copies, outputs, input offsets.
 *  @returns 0, or DLB_ERR_TRANSIENT with *fatal set when the producer must
 *           be replaced (fenced, or the abort failed). */
int stream_batch_publish(ctx_t *c, int *fatal, char *errstr, size_t size);
/** Where a failed batch goes on from: the group's committed offsets where
 *  the broker names them, else the first message held. NULL: out of memory. */
rd_kafka_topic_partition_list_t *stream_rewind_offsets(ctx_t *c);

/* ---- stream_part.c ---- */

/** The rank of an input topic in the role's inputs, -1 if it is none. */
int stream_topic_rank(const ctx_t *c, const char *topic);
/** The entry of an input partition, NULL if there is none yet. */
part_t *stream_part_find(ctx_t *c, int rank, int32_t partition);
/** The entry of an input partition (made on first sight; NULL only when out
 *  of memory). */
part_t *stream_part(ctx_t *c, int rank, int32_t partition);
/** Forget what was known of a partition (made, or assigned again: another
 *  member may have moved it on); assigned says whether we own it now. */
void stream_part_forget(part_t *p, int assigned);
/** Set each partition's held: whether we hold messages of it (with
 *  barrier_only, messages of a round: not those taken ahead, which are the
 *  next batch, not held back). */
void stream_mark_held(ctx_t *c, int barrier_only);

/* ---- stream_positions.c: the group's consumed positions in PostgreSQL ---- */

/** Inside the batch's transaction, before its writes: the stored positions
 *  of the partitions the released items come from, unless known already. */
int stream_positions_load(ctx_t *c, char *errstr, size_t size);
/** Whether the item's rows were committed by an earlier batch, as the stored
 *  position of its partition says. A hint: a wrong answer costs speed, not
 *  rows (store_pg_copy.c). */
int stream_position_stored(ctx_t *c, const item_t *it);
/** Inside the batch's transaction, after its writes: each partition's
 *  position after the newest released item. */
int stream_positions_save(ctx_t *c, char *errstr, size_t size);

/* ---- stream_health.c ---- */

/** Once a second: report partitions with messages waiting that have not
 *  moved for consumer.stall.s to /readyz and the stall gauge. */
void stream_watch_progress(ctx_t *c);
/** A batch committed: every partition it held messages of moved. */
void stream_batch_progressed(ctx_t *c);

/* ---- stream_retention.c ---- */

/** Prune the history older than the retention window when it is due, for at
 *  most a short while; failures are logged and retried later, never returned.
 *  Only between batches (no transaction open on c->pg). */
void stream_retention(ctx_t *c);
/* The first round of a consumer waits for its first committed batch, or this
 * long when it has nothing to consume: a restarted consumer takes its
 * partitions back before anything else (tests/system/30-chaos.sh holds a
 * restart to 10 s), and the partitions it would make exist already unless
 * the history is new. */
#define STREAM_FIRST_ROUND_MS 10000

#endif
