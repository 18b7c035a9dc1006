/* Redis cache of hot per-job state, so any consumer instance can serve any job.
 *
 * Keys (prefix = conf.env):
 *   <prefix>:job:<uid>         HASH  event -> framed merged JobEvent, created_ms,
 *                                    v -> cache format ("3"; another value is a miss)
 *   <prefix>:job:<uid>:rt      ZSET  framed RuntimeSample scored by event time,
 *                                    trimmed to the newest window_size
 *   <prefix>:job:<uid>:pods    HASH  pod name -> JSON of dlb_pod_status_t
 *   <prefix>:job:<uid>:folded  ZSET  ids of the node events folded into the pods,
 *                                    scored by fold order, trimmed to the newest
 *                                    max(2048, 4 x consumer.batch.size), so a
 *                                    redelivery is a no-op (state_redis.c)
 * Every key of a job expires after conf ttl (7 days) of silence.
 * The cache is never the source of truth: a miss is rebuilt from PostgreSQL.
 *
 * cache_redis.c is the client (connection, pipelining, the plain key and
 * hash calls); state_redis.c the job state on top of it. */
#ifndef DLB_CACHE_REDIS_H
#define DLB_CACHE_REDIS_H

#include <stddef.h>

#include "catalog.h"
#include "conf.h"
#include "state.h"

typedef struct dlb_redis dlb_redis_t;

/* Room for any job key: a prefix of 63 bytes, a uid of 127 encoded to 3
 * bytes each, and the longest suffix. */
#define DLB_REDIS_KEY_MAX 512

/** @brief The Redis key of job uid's state in environment prefix: suffix ""
 *         (the job hash), ":rt", ":pods" or ":folded". The uid is
 *         percent-encoded (each byte outside A-Z a-z 0-9 . _ - as %XX), so
 *         no uid can name another job's key: a job "victim:rt" is
 *         "<env>:job:victim%3Art". */
void dlb_redis_job_key(const char *prefix, const char *uid, const char *suffix, char *buf,
                       size_t size);

/** @returns 0 or DLB_ERR_TRANSIENT (cannot connect / AUTH failed). */
int dlb_redis_connect(dlb_redis_t **out, const dlb_conf_t *conf, const dlb_catalog_t *cat,
                      char *errstr, size_t errstr_size);
void dlb_redis_destroy(dlb_redis_t *r);

/** @brief Load a job's cached state.
 *  @returns 0 with *found = 1 on a hit, 0 with *found = 0 on a miss,
 *           DLB_ERR_TRANSIENT when Redis is unreachable (reconnects next call). */
int dlb_redis_load_job(dlb_redis_t *r, const char *job_uid, dlb_job_state_t *out, int *found,
                       char *errstr, size_t errstr_size);

/** @brief Store a whole job state (after applying events, or after a rebuild). */
int dlb_redis_store_job(dlb_redis_t *r, const dlb_job_state_t *st, char *errstr,
                        size_t errstr_size);

/** @brief Apply one event to the cached state of its job, idempotently by event
 *         id (the read-modify-write is safe because one job lives on one
 *         partition, served by one consumer at a time). Loads from cache, folds
 *         with dlb_job_state_apply(), stores. On a miss the caller should seed
 *         the cache with dlb_redis_store_job() from PostgreSQL first. */
int dlb_redis_apply_event(dlb_redis_t *r, const dlb_event_t *ev, char *errstr, size_t errstr_size);

/** @brief Apply n runtime samples as dlb_redis_apply_event() applies each,
 *         in one round trip: every sample added to its job's window, then
 *         each job's window trimmed and its TTLs refreshed once. The same
 *         state as one by one: the window keeps the newest window_size of all.
 *  @param evs   n events of type DLB_EV_RUNTIME (other types are skipped)
 *  @param raws  NULL, or each event's framed message as it arrived (an entry
 *               may be NULL): used as the window entry instead of encoding
 *               the event again when it was written with the newest schema
 *  @returns 0, DLB_ERR_TRANSIENT (unreachable; reconnects next call),
 *           DLB_ERR_NOMEM. */
int dlb_redis_apply_samples(dlb_redis_t *r, const dlb_event_t *const *evs, const void *const *raws,
                            const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size);

/** @brief Forget every cached job state of this environment (SCAN + DEL of
 *         <prefix>:job:*). After an outage the cache may have missed events,
 *         and a stale hit would be wrong, where a miss only costs a rebuild.
 *  @returns 0, or DLB_ERR_TRANSIENT. */
int dlb_redis_invalidate_all(dlb_redis_t *r, char *errstr, size_t errstr_size);

/** @brief Delete every key "<prefix>:<glob>" (SCAN MATCH + UNLINK), e.g. glob
 *         "*" for all keys of the environment (dlbrain env drop --purge).
 *  @param deleted  set to the number of keys removed (may be NULL)
 *  @returns 0, or DLB_ERR_TRANSIENT. */
int dlb_redis_unlink_matching(dlb_redis_t *r, const char *glob, int64_t *deleted, char *errstr,
                              size_t errstr_size);

/** @brief Read the string at "<prefix>:<key>".
 *  @param val  set to a malloc'ed, NUL-terminated copy (the caller frees), or
 *              NULL with *found = 0 when the key does not exist
 *  @returns 0, or DLB_ERR_TRANSIENT when Redis is unreachable. */
int dlb_redis_get(dlb_redis_t *r, const char *key, char **val, size_t *len, int *found,
                  char *errstr, size_t errstr_size);

/** @brief Set "<prefix>:<key>" to val, expiring after ttl_s seconds.
 *  @returns 0, or DLB_ERR_TRANSIENT when Redis is unreachable. */
int dlb_redis_set(dlb_redis_t *r, const char *key, const char *val, size_t len, int ttl_s,
                  char *errstr, size_t errstr_size);

/** @brief Set field of the hash "<prefix>:<key>" to val, and the hash to
 *         expire after ttl_s seconds. @returns 0, or DLB_ERR_TRANSIENT. */
int dlb_redis_hset(dlb_redis_t *r, const char *key, const char *field, const char *val, size_t len,
                   int ttl_s, char *errstr, size_t errstr_size);
/** @brief Delete field of the hash "<prefix>:<key>". @returns 0, or
 *         DLB_ERR_TRANSIENT. */
int dlb_redis_hdel(dlb_redis_t *r, const char *key, const char *field, char *errstr,
                   size_t errstr_size);

/* One field of a hash: field is NUL-terminated, val is len bytes.
 * @returns 0 to go on, or an error (DLB_ERR_NOMEM) that ends the read. */
typedef int (*dlb_redis_field_cb)(void *opaque, const char *field, const char *val, size_t len);

/** @brief Call cb for every field of the hash "<prefix>:<key>" (none when it
 *         does not exist).
 *  @returns 0, DLB_ERR_TRANSIENT, DLB_ERR_INVALID when the hash has more than
 *           max_fields fields (nothing read), or cb's error. */
int dlb_redis_hgetall(dlb_redis_t *r, const char *key, size_t max_fields, dlb_redis_field_cb cb,
                      void *opaque, char *errstr, size_t errstr_size);

#endif
