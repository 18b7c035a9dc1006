/* The exactly-once stream processor every dlbrain consumer runs on.
 *
 * A consumer role (the optimizer, the configurer) names its input topics, its
 * output topic, which events are "requests", and what to do with each event.
 * The stream does the rest, the same way for every role:
 *
 *   poll -> decode + validate (bad -> <env>.dlq with headers) -> order: per
 *   partition number, merge the input topics by event time and hold a request
 *   until the other inputs of its partition reached its time (co-partitioned
 *   topics, as Kafka Streams joins them) -> one PostgreSQL transaction in which
 *   the role persists, folds and answers (role->process) -> COMMIT -> one Kafka
 *   transaction with the outputs, the DLQ copies and the input offsets
 *   (send_offsets_to_transaction).
 *
 * A failure before the Kafka commit rewinds the batch; the role's writes are
 * idempotent by event id and its outputs are looked up before they are
 * recomputed, so a redo changes nothing and re-sends the same bytes. Outages
 * of PostgreSQL (waited out), Redis (the role is told; it degrades to
 * PostgreSQL) and Kafka (retried, the producer replaced when fenced) lose
 * nothing. */
#ifndef DLB_STREAM_H
#define DLB_STREAM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "cache_redis.h"
#include "catalog.h"
#include "conf.h"
#include "event.h"
#include "store_pg.h"

#define DLB_STREAM_MAX_INPUTS 8

typedef struct dlb_stream dlb_stream_t;

typedef struct dlb_stream_stats {
    int64_t consumed; /* messages polled */
    int64_t accepted; /* events processed */
    int64_t dlq;      /* messages sent to the dead-letter topic */
    int64_t outputs;  /* output messages produced (plans, matches) */
    int64_t batches;  /* batches committed */
    int64_t retries;  /* batches rewound after a dependency failure */
} dlb_stream_stats_t;

typedef struct dlb_stream_role {
    const char *name; /* "optimizer": log lines and the default consumer group <env>.<name> */
    /* Input topics (DLB_TOPIC_* short names), NULL-terminated, in tie-break
     * order: at equal event times an earlier topic's event is processed first,
     * so a job's own events are folded before a request of the same instant. */
    const char *const *inputs;
    const char *output; /* DLB_TOPIC_* short name of the output topic */
    /* 1 when ev is a request: released only once every other input of its
     * partition number holds nothing it depends on that is not applied yet
     * (the positions of its dlb.after header, then events older than it:
     * barrier.c), at most consumer.order.wait.ms. */
    int (*is_request)(const dlb_event_t *ev);
    /* Which event types are inputs; another valid type goes to the DLQ. */
    int (*accepts)(const dlb_event_t *ev);
    /* Called for every released valid event of a batch, in order, inside the
     * batch's PostgreSQL transaction: persist, fold, answer (dlb_stream_emit),
     * or refuse the event as bad input (dlb_stream_reject). @returns 0;
     * DLB_ERR_INVALID when the event itself broke a rule (PostgreSQL's class
     * 22/23, a trigger): it is pinned and sent to the DLQ, the rest goes on;
     * or another error, which rewinds and retries the whole batch. */
    int (*process)(dlb_stream_t *s, const dlb_event_t *ev, const void *raw, size_t raw_len,
                   char *errstr, size_t errstr_size);
    /* Optional, called once per loop round before polling (e.g. to pick up a
     * new configuration version). @returns 0, or an error that stops the run. */
    int (*tick)(dlb_stream_t *s, char *errstr, size_t errstr_size);
    void *opaque; /* the role's own state, dlb_stream_opaque() */
} dlb_stream_role_t;

/** @brief Run the role until *stop becomes non-zero.
 *  @param group  the consumer group (conf.group_id, else "<env>.<role name>")
 *  @returns 0 after a clean stop, or an error that prevents running at all
 *           (bad configuration, migrations failing); dependency outages are
 *           waited out, not returned. */
int dlb_stream_run(const dlb_conf_t *conf, const dlb_stream_role_t *role, const char *group,
                   volatile sig_atomic_t *stop, dlb_stream_stats_t *stats, char *errstr,
                   size_t errstr_size);

/* ---- for the role's callbacks --------------------------------------------- */

const dlb_conf_t *dlb_stream_conf(const dlb_stream_t *s);
const dlb_catalog_t *dlb_stream_catalog(const dlb_stream_t *s);
void *dlb_stream_opaque(const dlb_stream_t *s);
/** @returns the PostgreSQL connection, inside the batch's transaction. */
dlb_pg_t *dlb_stream_pg(dlb_stream_t *s);
/** @returns the Redis connection, or NULL while Redis is down. */
dlb_redis_t *dlb_stream_redis(dlb_stream_t *s);
/** @brief Report a failed Redis call: the connection is dropped and retried
 *         every 5 s; after it is back, every cached job state of the
 *         environment is invalidated (it may have missed events). */
void dlb_stream_redis_down(dlb_stream_t *s, const char *what, const char *errstr);

/** @brief Queue an output message of this batch to the role's output topic,
 *         keyed by key (a job uid). Takes buf (malloc'ed) in all cases.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_stream_emit(dlb_stream_t *s, const char *key, void *buf, size_t len);

/** @brief Send the event being processed to the DLQ instead (bad input found
 *         by the role, e.g. a request it cannot serve), at stage with err and msg. */
void dlb_stream_reject(dlb_stream_t *s, const char *stage, int err, const char *msg);

/** @brief Persist an input event in PostgreSQL (idempotent) and, unless it is
 *         a request, fold it into the Redis job state: what every role does
 *         with the job, node and runtime events it reads. Runtime samples of
 *         a batch are written together, in one statement and one Redis round
 *         trip, before the role is given its next other event, before
 *         dlb_stream_load_job() and before the batch commits: so ev and raw
 *         must be the batch's own (the role->process() arguments). */
int dlb_stream_store_event(dlb_stream_t *s, const dlb_event_t *ev, const void *raw, size_t raw_len,
                           char *errstr, size_t errstr_size);

/** @brief A plan request stored as dlb_stream_store_event() stores it, and
 *         the job's plan of id plan_id already stored (a redelivered
 *         request), read in the same round trip: *plan is malloc'ed for the
 *         caller to free, NULL when there is none. */
int dlb_stream_store_request(dlb_stream_t *s, const dlb_event_t *ev, const void *raw,
                             size_t raw_len, const char *plan_id, void **plan, size_t *plan_len,
                             char *errstr, size_t errstr_size);

/** @brief The job state as of time until_ms: Redis, or PostgreSQL when Redis
 *         misses (then Redis is re-seeded) or is down; runtime samples after
 *         until_ms are dropped, so a redo computes the same answer. */
int dlb_stream_load_job(dlb_stream_t *s, const char *job_uid, int64_t until_ms, dlb_job_state_t *st,
                        char *errstr, size_t errstr_size);

#endif
