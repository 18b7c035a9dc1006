/* PostgreSQL store: history, plans and the consumer state.
 *
 * Every statement is parameterised (PQexecParams). Each connection works in
 * its own schema (conf.pg_schema, one per environment), created and migrated
 * by dlb_pg_migrate() from the embedded pipeline/store/sql/NNN_*.sql files; applied
 * versions are recorded in <schema>.schema_migrations. */
#ifndef DLB_STORE_PG_H
#define DLB_STORE_PG_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "state.h"

typedef struct dlb_pg dlb_pg_t;

/** @brief Connect with a libpq conninfo string (empty = libpq's PG* environment)
 *         and set search_path to schema.
 *  @returns 0 or DLB_ERR_TRANSIENT (server unreachable; errstr has libpq's reason). */
int dlb_pg_connect(dlb_pg_t **out, const char *dsn, const char *schema, char *errstr,
                   size_t errstr_size);
void dlb_pg_destroy(dlb_pg_t *pg);

/** @brief Bytes of decoded history samples pg keeps between
 *         dlb_pg_load_history calls (history.cache.mb; 0, the default, keeps
 *         only the last history's). */
void dlb_pg_set_history_cache(dlb_pg_t *pg, size_t bytes);

/** @brief Re-establish a broken connection. @returns 0 or DLB_ERR_TRANSIENT. */
int dlb_pg_reconnect(dlb_pg_t *pg, char *errstr, size_t errstr_size);

/** @brief Create the schema if needed and apply every migration not yet applied,
 *         each in its own transaction, serialised across processes by an advisory lock. */
int dlb_pg_migrate(dlb_pg_t *pg, char *errstr, size_t errstr_size);

int dlb_pg_begin(dlb_pg_t *pg, char *errstr, size_t errstr_size);
int dlb_pg_commit(dlb_pg_t *pg, char *errstr, size_t errstr_size);
/** @brief Roll back; never fails (a broken connection has nothing to roll back). */
void dlb_pg_rollback(dlb_pg_t *pg);
/** @brief Whether, inside a transaction, the writes nobody reads back (a
 *         plan, its answered OOMs) are held and sent together in one round
 *         trip before the next read that could see them or the commit. Off
 *         (the default) each is written at once, so an error names its own
 *         write. Turning it off sends what is held. @returns 0 or an error. */
int dlb_pg_defer_writes(dlb_pg_t *pg, int on, char *errstr, size_t errstr_size);
/** @brief Send the held writes now. @returns 0 or the first one's error. */
int dlb_pg_flush(dlb_pg_t *pg, char *errstr, size_t errstr_size);

/** @brief Persist one accepted input event (job, runtime, node, plan request):
 *         normalised columns plus the raw framed bytes. Idempotent: a second
 *         insert of the same event_id for the same job changes nothing (event
 *         ids are unique per job: another job's event of that id is stored; a
 *         runtime sample is the same by job, id and event time). A job event also
 * upserts the jobs row (merging sections like dlb_job_state_apply()).
 *  @returns 0, DLB_ERR_TRANSIENT (connection lost), DLB_ERR_GENERIC. */
int dlb_pg_put_event(dlb_pg_t *pg, const dlb_event_t *ev, const void *raw, size_t raw_len,
                     char *errstr, size_t errstr_size);

/** @brief Persist a plan request as dlb_pg_put_event() does and, in the same
 *         round trip, read the job's plan of id plan_id as dlb_pg_get_plan()
 *         would have just before: what answering a request needs first.
 *  @param plan set to a malloc'ed copy the caller frees, or NULL when the job
 *         has no plan of this id (then *plan_len = 0).
 *  @returns as dlb_pg_put_event(); DLB_ERR_INVALID for another event type. */
int dlb_pg_put_request(dlb_pg_t *pg, const dlb_event_t *ev, const void *raw, size_t raw_len,
                       const char *plan_id, void **plan, size_t *plan_len, char *errstr,
                       size_t errstr_size);

/** @brief Persist n runtime samples in one statement (store_pg_batch.c), with
 *         the rows and idempotency of dlb_pg_put_event() for each: a sample
 *         stored already changes nothing, one repeated in the batch is stored
 *         once (its first copy), as is a pod repeated in a sample.
 *  @param evs       n events of type DLB_EV_RUNTIME
 *  @param raws      their framed bytes, or NULL (then, as for an entry that is
 *                   NULL or of length 0, the event is encoded now)
 *  @param raw_lens  their lengths, or NULL
 *  @returns 0, DLB_ERR_INVALID (another event type, too large),
 *           DLB_ERR_TRANSIENT (connection lost), DLB_ERR_NOMEM, DLB_ERR_GENERIC. */
int dlb_pg_put_runtime_batch(dlb_pg_t *pg, const dlb_event_t *const *evs, const void *const *raws,
                             const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size);

/** @brief Store n runtime samples with COPY (store_pg_copy.c), inside the
 *         caller's transaction, without waiting: the rows are sent and the
 *         server stores them while the caller does other work (not with this
 *         connection); dlb_pg_wait_runtime_copy() collects the outcome and
 *         must come before any other call on pg but dlb_pg_rollback(). For
 *         samples not stored before: no ON CONFLICT check runs, so one stored
 *         already makes the COPY fail, which dlb_pg_wait_runtime_copy() then
 *         redoes with dlb_pg_put_runtime_batch() (the same rows).
 *  @returns 0, DLB_ERR_INVALID (another event type, too large),
 *           DLB_ERR_TRANSIENT (connection lost), DLB_ERR_NOMEM,
 *           DLB_ERR_GENERIC (outside a transaction). */
int dlb_pg_send_runtime_copy(dlb_pg_t *pg, const dlb_event_t *const *evs, const void *const *raws,
                             const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size);

/** @brief The outcome of the COPY dlb_pg_send_runtime_copy() sent for the
 *         same n samples (0 when n is 0), as dlb_pg_put_runtime_batch()
 *         returns it: a sample stored before makes it store the batch with
 *         dlb_pg_put_runtime_batch() instead. */
int dlb_pg_wait_runtime_copy(dlb_pg_t *pg, const dlb_event_t *const *evs, const void *const *raws,
                             const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size);

/** @brief Whether the statement sent without waiting (a COPY of
 *         dlb_pg_send_runtime_copy()) is still running on the server: reads
 *         what the server has answered so far, never waits, so the caller can
 *         do other work until it is done. 0 when nothing is pending, or the
 *         connection failed (the wait then reports it). */
int dlb_pg_busy(dlb_pg_t *pg);

/* ---- consumed positions (store_pg_positions.c) ------------------------------ */

/* Where a consumer group stands in one input partition, as far as the rows
 * committed in PostgreSQL go: every message before next_offset is stored. */
typedef struct dlb_pg_position {
    const char *topic;
    int32_t partition;
    int64_t next_offset;
} dlb_pg_position_t;

/** @brief Call cb with each stored position of consumer group group (table
 *         consumer_positions), inside the caller's transaction if any.
 *  @returns 0 or an error (DLB_ERR_TRANSIENT when the connection is lost). */
int dlb_pg_load_positions(dlb_pg_t *pg, const char *group,
                          void (*cb)(void *arg, const dlb_pg_position_t *pos), void *arg,
                          char *errstr, size_t errstr_size);

/** @brief Record the n positions of group, in the caller's transaction (so
 *         they commit with the rows they describe). A position never moves
 *         back: the stored one stays when it is further on.
 *  @returns 0, DLB_ERR_NOMEM or an error (DLB_ERR_TRANSIENT when the
 *           connection is lost). */
int dlb_pg_save_positions(dlb_pg_t *pg, const char *group, const dlb_pg_position_t *pos, size_t n,
                          char *errstr, size_t errstr_size);

/** @brief Persist a plan (idempotent by job and plan_id, and by job and
 *         trigger_event_id): columns groups, pods and
 *         actions as JSON arrays in the Avro field names, plus the raw frame. */
int dlb_pg_put_plan(dlb_pg_t *pg, const dlb_plan_t *plan, const void *raw, size_t raw_len,
                    char *errstr, size_t errstr_size);

/** @brief The stored framed bytes of job job_uid's plan plan_id (plan ids,
 *         like event ids, are unique within a job only). A redelivered
 *         request is answered with the plan already written rather than a
 *         recomputation, whose inputs (history) may have grown.
 *  @param raw set to a malloc'ed copy the caller frees, or NULL when the job
 *         has no plan of this id (then *raw_len = 0).
 *  @returns 0 or an error (DLB_ERR_TRANSIENT when the connection is lost). */
int dlb_pg_get_plan(dlb_pg_t *pg, const char *job_uid, const char *plan_id, void **raw,
                    size_t *raw_len, char *errstr, size_t errstr_size);

/** @brief Record that plan op->plan_id answered the OOM op->oom_event_id of pod
 *         op->pod_name of job job_uid with op->memory bytes (table oom_plans).
 *         Part of the caller's open transaction, beside dlb_pg_put_plan();
 *         idempotent by (job_uid, plan_id, pod_name): a second put changes
 *         nothing.
 *  @returns 0, DLB_ERR_INVALID (empty job uid, pod name or plan id),
 *           DLB_ERR_TRANSIENT (connection lost), DLB_ERR_GENERIC. */
int dlb_pg_put_oom_plan(dlb_pg_t *pg, const char *job_uid, const dlb_oom_plan_t *op, char *errstr,
                        size_t errstr_size);

/** @brief The OOMs of job job_uid that plans with an event time before before_ms
 *         answered, oldest first (ties: plan id, then pod name); at most the
 *         newest 100000.
 *  @param out set to a malloc'ed array the caller frees (NULL when none).
 *  @returns 0 or an error (DLB_ERR_TRANSIENT when the connection is lost). */
int dlb_pg_load_oom_plans(dlb_pg_t *pg, const char *job_uid, int64_t before_ms,
                          dlb_oom_plan_t **out, size_t *cnt, char *errstr, size_t errstr_size);

/** @brief Similar jobs for the optimizers: jobs of this scenario created in
 *         [until_ms - hours*3600000, until_ms), other than exclude_uid, newest first,
 *         at most max_jobs, each with its runtime samples (oldest first, at most
 *         max_samples, the newest ones) and its OOM-killed pods. Everything is as
 *         of until_ms (state, exit reason, samples and OOMs before it), so the same
 *         request sees the same history whenever it is answered. The samples are
 *         borrowed from pg's cache of decoded samples (out->borrowed): valid until
 *         the next dlb_pg_load_history on pg or dlb_pg_destroy. */
int dlb_pg_load_history(dlb_pg_t *pg, const char *scenario, const char *exclude_uid,
                        int64_t until_ms, int hours, int max_jobs, int max_samples,
                        dlb_history_t *out, char *errstr, size_t errstr_size);

/** @brief Rebuild one job's state from its persisted events (when Redis lost it).
 *  @returns 0 (an unknown job yields an empty state) or an error. */
int dlb_pg_load_job_state(dlb_pg_t *pg, const char *job_uid, int window_size, dlb_job_state_t *out,
                          char *errstr, size_t errstr_size);

/** @brief A job's attributes as its jobs row holds them: those of its newest
 *         job event that carried meta, each one's own empty value included.
 *  @param found  1 when the job has a row, else 0 (meta all empty)
 *  @returns 0, DLB_ERR_TRANSIENT (connection lost) or another error. */
int dlb_pg_job_meta(dlb_pg_t *pg, const char *job_uid, dlb_job_meta_t *meta, int *found,
                    char *errstr, size_t errstr_size);

/* ---- retention (store_prune.c) ---------------------------------------------- */

/* The history tables retention removes rows of (the jobs registry, the
 * configuration rules and schema_migrations are never pruned). */
#define DLB_PG_HISTORY_TABLES 7

typedef struct dlb_pg_prune_opts {
    int64_t before_ms; /* remove the rows whose event time is before this (0: remove nothing) */
    int batch_rows;    /* rows one DELETE removes (each its own transaction), >= 1 */
    int budget_ms;     /* return after about this long, done or not (0: run until done) */
    int wait;          /* wait for another process's prune to end instead of returning busy */
    int dry_run;       /* only count the rows that would go */
    /* Partitions first, under the same lock (dlb_pg_partitions_ensure): when
     * span_ms > 0, around now_ms and `ahead` spans after it. */
    int64_t span_ms;
    int ahead;
    int64_t now_ms;
} dlb_pg_prune_opts_t;

/** @returns the name of history table i (< DLB_PG_HISTORY_TABLES). */
const char *dlb_pg_history_table(size_t i);

typedef struct dlb_pg_prune_result {
    int64_t rows[DLB_PG_HISTORY_TABLES]; /* removed (dry run: would be) from each table i */
    int64_t total;
    int done;    /* nothing older than before_ms is left (a dry run: counted) */
    int busy;    /* another process of the environment was pruning: nothing done */
    int created; /* partitions created (o->span_ms > 0) */
} dlb_pg_prune_result_t;

/** @brief Remove the history older than o->before_ms by event time: the one
 *         place that owns "remove history older than T". Rows go a batch of
 *         o->batch_rows at a time, oldest first, each DELETE committed alone,
 *         so no lock is held for long and an interrupted prune keeps what it
 *         removed. One process of an environment prunes at a time (a session
 *         advisory lock on the schema); another's prune returns busy, or
 *         waits with o->wait. Not inside dlb_pg_begin()'s transaction.
 *  @returns 0 (see out->done and out->busy), DLB_ERR_INVALID (inside a
 *           transaction, batch_rows < 1), DLB_ERR_TRANSIENT (connection
 *           lost: what was committed stays removed), DLB_ERR_GENERIC. */
int dlb_pg_prune(dlb_pg_t *pg, const dlb_pg_prune_opts_t *o, dlb_pg_prune_result_t *out,
                 char *errstr, size_t errstr_size);

/* ---- time partitions (store_partition.c) -------------------------------------- */

/** @brief Create the partitions of every history table for the span of
 *         span_ms (aligned on multiples of it from the epoch) that now_ms is
 *         in, the one before and the `ahead` spans after it, where none
 *         exists; rows of the
 *         default partition in their ranges move into them. Each table in its
 *         own transaction, waiting at most 1 s for its lock. Not inside
 *         dlb_pg_begin()'s transaction. Callers serialise through the prune
 *         lock (dlb_pg_prune with o->span_ms does it under it).
 *  @param created set to the number of partitions created
 *  @returns 0, DLB_ERR_INVALID (span_ms < 1, ahead < 0, inside a
 *           transaction), DLB_ERR_TRANSIENT, DLB_ERR_GENERIC. */
int dlb_pg_partitions_ensure(dlb_pg_t *pg, int64_t span_ms, int ahead, int64_t now_ms, int *created,
                             char *errstr, size_t errstr_size);

/** @brief The rows held by the history tables' default partitions: those no
 *         partition's range covered when they were stored or since; at most
 *         10,000 counted per table, so the count stays cheap. */
int dlb_pg_partitions_default_rows(dlb_pg_t *pg, int64_t *rows, char *errstr, size_t errstr_size);

/** @brief Row count of a table of this schema (for the demo and tests). */
int dlb_pg_count(dlb_pg_t *pg, const char *table, int64_t *count, char *errstr, size_t errstr_size);

#endif
