/* What the job-state cache (state_redis.c) shares with the Redis client
 * under it (cache_redis.c): the handle and the pipelining calls. Nothing
 * outside pipeline/cache/ includes this. */
#ifndef DLB_CACHE_REDIS_INTERNAL_H
#define DLB_CACHE_REDIS_INTERNAL_H

#include <hiredis.h>

#include "cache_redis.h"
#include "lru.h"

/* Every key of a job lives 7 days after its last event (DLRover's history
 * window is 7 days too: an older job is only ever read from PostgreSQL). */
#define DLB_REDIS_TTL_S "604800"
/* Field "v" of the job hash marks a complete state written by
 * dlb_redis_store_job() in this format. Events folded into a job that was
 * never seeded (new job, or Redis lost it) do not set it, so the next load is
 * a miss and the caller rebuilds from PostgreSQL instead of trusting a partial
 * state. Bump it when the cached format changes: old entries then miss.
 *
 * "2": window members are framed with the newest runtime_sample schema, v2
 * (id 7, pods[].speed). Format-1 members (id 2) would still decode, but a
 * sample is a ZSET member by its bytes: a redelivered sample re-encoded as id 7
 * would sit beside its id-2 copy and take a window slot twice. So format-1
 * entries are invalidated (a miss, rebuilt once from PostgreSQL's raw frames,
 * whose speeds are kept) rather than read.
 *
 * "3": the ids of the node events folded into the pods moved from the SET
 * ":seen", which grew by one member per node event for the job's whole life,
 * to the bounded ZSET ":folded" (apply_node()). A format-2 entry misses once
 * and its rebuild deletes the old set; the set of a job never loaded again
 * expires with the TTL, since nothing refreshes it any more. */
#define DLB_REDIS_FORMAT "3"

/* The key of the unbounded seen set of format 2, deleted by every store. */
#define DLB_REDIS_LEGACY_SEEN ":seen"

/* The fewest node event ids a job's ":folded" keeps (see apply_node()). */
#define DLB_REDIS_FOLDED_MIN 2048

struct dlb_redis {
    redisContext *c; /* NULL after a connection loss: reopened by the next call */
    const dlb_catalog_t *cat;
    char prefix[64];
    char host[256];
    int port;
    char password[256];
    int db;
    int timeout_ms;
    int window_size;
    long folded_max;    /* ids ":folded" keeps: DLB_REDIS_FOLDED_MIN or 4 batches */
    dlb_lru_t *decoded; /* runtime samples by their bytes (state.cache.mb), NULL: none kept */
};

/** @brief Drop the connection after an I/O error or a timeout (a reply may be
 *         in flight); the next call reconnects.
 *  @returns DLB_ERR_TRANSIENT, with errstr naming the server and what. */
int dlb_redis_lost(dlb_redis_t *r, const char *what, char *errstr, size_t errstr_size);

/** @brief Connect when the last connection was dropped. */
int dlb_redis_ensure(dlb_redis_t *r, char *errstr, size_t errstr_size);

/** @brief Drop the connection with commands still queued, so half a pipeline
 *         is never sent by a later call. */
void dlb_redis_abandon(dlb_redis_t *r);

/** @brief Queue one command; *n counts the replies to read.
 *  @returns 0 or DLB_ERR_NOMEM (the connection dropped). */
int dlb_redis_append(dlb_redis_t *r, int *n, const char *fmt, ...);
int dlb_redis_appendv(dlb_redis_t *r, int *n, int argc, const char **argv, const size_t *lens);

/** @brief Send the queued commands and read their n replies into rep (or
 *         discard them when rep is NULL), every one even after an error.
 *  @returns 0, DLB_ERR_TRANSIENT (lost, or a "not now" error reply),
 *           DLB_ERR_INVALID (WRONGTYPE) or DLB_ERR_GENERIC; rep is freed and
 *           zeroed on an error reply. */
int dlb_redis_collect(dlb_redis_t *r, int n, redisReply **rep, const char *what, char *errstr,
                      size_t errstr_size);
void dlb_redis_replies_free(redisReply **rep, int n);

/** @brief Free a decoded sample of r->decoded. */
void dlb_redis_decoded_free(void *value);

#endif
