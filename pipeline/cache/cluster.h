/* What the dlbrain set knows of the cluster beyond one job: which jobs wait
 * for room, and the cores each running job holds. A job master sees its own
 * job only; the brain sees every job's stream, so one job's resize can be
 * weighed against the others (DLRover-RM's cluster-wide allocation).
 *
 * One entry per job, in the Redis hash <env>:cluster (field = job uid) that
 * every consumer of an environment reads; the simulator's local optimizer
 * keeps the same entries in memory. An estimate, never a source of truth:
 * an entry is as fresh as the job's newest state event or worker plan, and a
 * lost one only costs a plan its cluster check. */
#ifndef DLB_CLUSTER_H
#define DLB_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "cache_redis.h"
#include "event.h"

/* The most entries a view reads: a hash past it is skipped (logged), so a
 * flood of job uids cannot grow a consumer's memory without bound. */
#define DLB_CLUSTER_JOBS_MAX 100000

typedef struct dlb_cluster_job {
    char job_uid[DLB_ID_MAX];
    int waiting;     /* created or pending: waits for room to start */
    double cores;    /* what its pods requested at its newest worker plan */
    int64_t time_ms; /* event time of the state event or plan that set this */
} dlb_cluster_job_t;

typedef struct dlb_cluster_view {
    dlb_cluster_job_t *jobs; /* malloc'ed */
    size_t cnt, cap;
} dlb_cluster_view_t;

/** @brief What a job event's state does to the job's entry: created, pending
 *         or running replace it with e (waiting or not; no cores known until
 *         the job's first worker plan).
 *  @returns 1 to store e, -1 to delete the entry (the job ended: succeeded,
 *           failed or stopped), 0 when the event sets no such state. */
int dlb_cluster_job_event(const dlb_job_event_t *ev, dlb_cluster_job_t *e);

/** @brief Replace (or add) e's job in a view. @returns 0 or DLB_ERR_NOMEM. */
int dlb_cluster_view_put(dlb_cluster_view_t *v, const dlb_cluster_job_t *e);
/** @brief Remove job uid from a view, if there. */
void dlb_cluster_view_del(dlb_cluster_view_t *v, const char *uid);
void dlb_cluster_view_clear(dlb_cluster_view_t *v);

/** @brief The entry as the text of its hash field ("waiting cores time"), and
 *         back; decoding refuses anything else, so a stray field is skipped.
 *  @returns 0, or -1 when it does not fit / is not an entry. */
int dlb_cluster_job_encode(const dlb_cluster_job_t *e, char *buf, size_t size);
int dlb_cluster_job_decode(const char *uid, const char *text, size_t len, dlb_cluster_job_t *e);

/** @brief Apply a job event to the environment's hash (dlb_cluster_job_event).
 *  @returns 0, or DLB_ERR_TRANSIENT. */
int dlb_cluster_redis_event(dlb_redis_t *r, const dlb_job_event_t *ev, char *errstr,
                            size_t errstr_size);
/** @brief Store a job's entry. @returns 0, or DLB_ERR_TRANSIENT. */
int dlb_cluster_redis_put(dlb_redis_t *r, const dlb_cluster_job_t *e, char *errstr,
                          size_t errstr_size);
/** @brief Read every entry into v (cleared first; fields that do not decode
 *         are skipped). @returns 0, DLB_ERR_TRANSIENT, DLB_ERR_NOMEM, or
 *         DLB_ERR_INVALID past DLB_CLUSTER_JOBS_MAX entries. */
int dlb_cluster_redis_load(dlb_redis_t *r, dlb_cluster_view_t *v, char *errstr, size_t errstr_size);

#endif
