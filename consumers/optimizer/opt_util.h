/* Helpers private to the optimizers: reason text, integer memory arithmetic,
 * the "major cluster" statistic of DLRover's PS create optimizer, and how the
 * running-stage optimizers read the runtime window (PS sets, job time). */
#ifndef DLB_OPT_UTIL_H
#define DLB_OPT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "event.h"
#include "opt_plan.h"
#include "state.h"

/* Reasons print memory in GiB; the exact bytes are in the plan itself. */
#define DLB_GIB_F(bytes) ((double)(bytes) / (double)DLB_GIB)

/** @brief printf-append to a NUL-terminated reason buffer of size bytes,
 *         never overflowing: text that does not fit is cut (never inside a
 *         UTF-8 character) and the buffer ends in "..." so a reader knows. A
 *         no-op once the buffer is full. */
void dlb_reason_appendf(char *reason, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** @returns "" for an empty reason, else the " " that starts the next sentence. */
const char *dlb_reason_sep(const char *reason);

/** @brief ceil(mem * num / den) in integers (den > 0, num >= 0), saturating at
 *         INT64_MAX. Integer maths keeps "x 1.2" exact: 10 GiB * 1.2 in double
 *         is 12884901888.000002, whose ceil would be one byte too many. */
int64_t dlb_mem_scale(int64_t mem, int64_t num, int64_t den);

/** @brief a + b for non-negative byte counts, saturating at INT64_MAX. */
int64_t dlb_mem_add(int64_t a, int64_t b);

/** @brief ceil() of a core count that tolerates floating-point noise:
 *         15.000000000001 cores are 15 cores, not 16. */
double dlb_ceil_cores(double x);

/** @brief Mean of the "major cluster" of v (sorted in place). See opt_util.c
 *         for the exact procedure. @returns 0 when n == 0. */
double dlb_major_cluster_mean(double *v, size_t n);

/** @brief 1 when pod type t is "ps". */
int dlb_is_ps(const char *type);

/* ---- the runtime window, as the running-stage optimizers read it ---------- */

/** @returns the number of pods of type in s. */
size_t dlb_sample_count(const dlb_runtime_sample_t *s, const char *type);

/** @returns the first pod named name in s, or NULL. A binary search when s
 *           has pods_by_name (a job state's window), else a scan. */
const dlb_pod_usage_t *dlb_sample_pod(const dlb_runtime_sample_t *s, const char *name);

/** @returns 1 when a and b hold PS pods of the same names (order ignored). */
int dlb_sample_same_ps(const dlb_runtime_sample_t *a, const dlb_runtime_sample_t *b);

/** @brief The window samples whose PS set equals the newest sample's (DLRover
 *         only compares records of one PS layout), oldest first, as a new
 *         array the caller frees; *out is NULL and *cnt 0 for an empty window.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_window_same_ps(const dlb_job_state_t *st, const dlb_runtime_sample_t ***out, size_t *cnt);

/** @brief Training steps of the whole job: dataset.size / batch_size * epoch
 *         (an unset epoch counts as 1), capped by max_steps when that is set;
 *         max_steps alone when the dataset size or batch size is unknown.
 *  @returns the steps, or -1 when unknown. */
double dlb_job_total_steps(const dlb_job_event_t *job);

/** @brief DLRover's "estimated job time": total steps / per-worker speed, the
 *         per-worker speed (speed / worker pods) averaged over the newest 5 of
 *         recs that have worker pods: what one worker would need.
 *  @returns seconds, or -1 when the steps are unknown or the speed is 0. */
double dlb_est_job_seconds(const dlb_job_event_t *job, const dlb_runtime_sample_t *const *recs,
                           size_t n);

/** @brief Remaining time: (total steps - newest global_step) / job speed, the
 *         job speed averaged over the newest 5 of recs; 0 once the steps are done.
 *  @returns seconds, or -1 when the steps are unknown or the speed is 0. */
double dlb_remaining_seconds(const dlb_job_event_t *job, const dlb_runtime_sample_t *const *recs,
                             size_t n);

#endif
