/* The evaluator: figures that compare environments which ran the same
 * workload (dlbrain eval ENV...).
 *
 * Two halves. dlb_eval_load() reads one environment's history from its
 * PostgreSQL schema into plain arrays (dlb_eval_input_t, eval_pg.c); the rest
 * are pure functions of those arrays (eval.c), so every figure is tested on a
 * hand-computed workload without a server. Times are epoch ms, durations in
 * figures seconds, CPU cores, memory bytes; a figure that has no data (a mean
 * of no jobs, a utilisation with nothing requested) is NaN.
 *
 * Definitions (docs/evaluator.md, "Definitions"):
 *  - JCT of a job: its first terminal state (succeeded, failed, stopped)
 *    minus its first job event (created); over finished jobs only.
 *  - Pending time: first running minus first created/pending event; over jobs
 *    that ran.
 *  - p50 / p95: linear interpolation between order statistics (numpy's
 *    default): h = (n - 1) q, x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
 *  - A runtime sample stands for its pods' resources until the job's next
 *    sample (sample and hold); a job's last sample for the median of the job's
 *    sample intervals, or of the environment's when the job has one sample.
 *  - Utilisation: sum of used x duration over sum of requested x duration;
 *    per role (worker_*, ps_*) the same over the pods of type worker or ps.
 *  - Completion rate: succeeded jobs over all jobs (with any job event).
 *  - Pods: distinct (job uid, pod name) in the runtime samples; the share of
 *    them OOM-killed is pods OOM-killed over pods.
 *  - Resource-hours: sum of requested (used) x duration.
 *  - OOMs: oom_killed node events; repeated OOMs: those of a pod (job uid +
 *    pod name) after its first. */
#ifndef DLB_EVAL_H
#define DLB_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "event.h"

/* ---- input: one environment's history ------------------------------------ */

/* One job: the times of its first job event of each kind, -1 when none. */
typedef struct dlb_eval_job {
    int64_t first_ms;   /* its first job event, whatever its state */
    int64_t queued_ms;  /* first created or pending; -1: first_ms stands for it */
    int64_t running_ms; /* first running; -1: never ran */
    int64_t final_ms;   /* first succeeded, failed or stopped; -1: unfinished */
    char final_state[16];
} dlb_eval_job_t;

/* The roles whose pods have utilisation figures of their own. */
enum { DLB_EVAL_WORKER, DLB_EVAL_PS, DLB_EVAL_ROLES };

/* Sums over some pods of one sample. */
typedef struct dlb_eval_use {
    double cpu_used, cpu_req; /* cores */
    double mem_used, mem_req; /* bytes (double: sums over many pods) */
} dlb_eval_use_t;

/* One runtime sample: the sums over its pods, and over its pods of each role
 * (pod type worker, ps; other types count in the totals only). Sorted by job
 * (a key the loader numbers 0, 1, ... by job uid), then time. */
typedef struct dlb_eval_sample {
    uint32_t job;
    int64_t t_ms;
    double cpu_used, cpu_req; /* cores */
    double mem_used, mem_req; /* bytes (double: sums over many pods) */
    dlb_eval_use_t role[DLB_EVAL_ROLES];
} dlb_eval_sample_t;

/* One oom_killed node event. */
typedef struct dlb_eval_oom {
    char job_uid[DLB_ID_MAX];
    char pod[DLB_ID_MAX];
    int64_t t_ms;
} dlb_eval_oom_t;

/* Plans of one (stage, optimizer), or in figures a count by one name. */
typedef struct dlb_eval_count {
    char stage[64];
    char optimizer[64];
    int64_t count;
} dlb_eval_count_t;

typedef struct dlb_eval_input {
    dlb_eval_job_t *jobs;
    size_t jobs_cnt;
    dlb_eval_sample_t *samples;
    size_t samples_cnt;
    dlb_eval_oom_t *ooms;
    size_t ooms_cnt;
    dlb_eval_count_t *plans; /* distinct (stage, optimizer) */
    size_t plans_cnt;
    int64_t plan_requests;
    int64_t pods; /* distinct (job uid, pod name) in the runtime samples */
} dlb_eval_input_t;

/* ---- figures ----------------------------------------------------------------- */

typedef struct dlb_eval_dist {
    size_t n;
    double mean, p50, p95, max, sum; /* seconds; NaN (sum 0) when n = 0 */
} dlb_eval_dist_t;

/* Over time, in buckets of bucket_ms from the environment's start: means over
 * each bucket (cores, bytes) and utilisation (NaN where nothing was requested). */
typedef struct dlb_eval_series {
    size_t buckets;
    int64_t bucket_ms;
    double *cpu_util, *mem_util;
    double *cpu_req, *cpu_used;
    double *mem_req, *mem_used;
} dlb_eval_series_t;

typedef struct dlb_eval_figures {
    char env[64];
    int64_t start_ms; /* first job event or sample; 0 when the env is empty */
    int64_t end_ms;   /* last terminal state or end of the last sample's duration */
    size_t jobs, finished, succeeded, failed, stopped, unfinished, never_ran;
    double completion_rate; /* succeeded / jobs */
    dlb_eval_dist_t jct, pending;
    double *jct_s, *pending_s; /* sorted, jct.n and pending.n of them (the CDFs) */
    /* Each job's own utilisation over all its pods' samples (its used x
     * duration over its requested x duration), sorted, job_cpu.n and
     * job_mem.n of them: jobs with samples that requested something. */
    dlb_eval_dist_t job_cpu, job_mem;
    double *job_cpu_util, *job_mem_util;
    double makespan_s; /* last terminal state - first job event */
    size_t samples;
    double cpu_util, mem_util;
    double worker_cpu_util, worker_mem_util, ps_cpu_util, ps_mem_util;
    double cpu_req_core_h, cpu_used_core_h; /* core-hours */
    double mem_req_gib_h, mem_used_gib_h;   /* GiB-hours */
    int64_t pods;
    int64_t ooms, oom_pods, repeated_ooms; /* oom_pods: the pods OOM-killed */
    double oom_pods_share;                 /* oom_pods / pods */
    int64_t plan_requests, plans;
    dlb_eval_count_t *by_stage; /* optimizer "" */
    size_t by_stage_cnt;
    dlb_eval_count_t *by_optimizer; /* stage "" */
    size_t by_optimizer_cnt;
    dlb_eval_series_t series;
} dlb_eval_figures_t;

/* ---- pure functions ------------------------------------------------------------ */

/** @brief Quantile q (0..1) of n sorted values, linearly interpolated.
 *  @returns NaN when n = 0. */
double dlb_eval_quantile(const double *sorted, size_t n, double q);

/** @brief Sort v (n values) and fill out: count, mean, p50, p95, max, sum. */
void dlb_eval_dist(double *v, size_t n, dlb_eval_dist_t *out);

/** @brief The duration (ms) each sample stands for: the gap to its job's next
 *         sample; the last one of a job the median gap of that job, else of the
 *         environment, else 0.
 *  @param w  n durations, written
 *  @returns 0, DLB_ERR_INVALID (samples out of order: errstr says where) or
 *           DLB_ERR_NOMEM. */
int dlb_eval_weights(const dlb_eval_sample_t *s, size_t n, double *w, char *errstr,
                     size_t errstr_size);

/** @brief Every figure of one environment but the series.
 *  @param f  zeroed or cleared; its env name is kept, the rest overwritten
 *  @returns 0, DLB_ERR_INVALID or DLB_ERR_NOMEM; f is cleared on error. */
int dlb_eval_compute(const dlb_eval_input_t *in, dlb_eval_figures_t *f, char *errstr,
                     size_t errstr_size);

/** @brief A common bucket width for environments' series: the longest span
 *         (end - start) over buckets, rounded up to a whole second, at least 1 s. */
int64_t dlb_eval_bucket_ms(const dlb_eval_figures_t *f, size_t cnt, size_t buckets);

/** @brief Fill f->series: buckets of bucket_ms from f->start_ms, each sample's
 *         duration spread over the buckets it overlaps.
 *  @returns 0, DLB_ERR_INVALID or DLB_ERR_NOMEM. */
int dlb_eval_series(const dlb_eval_input_t *in, int64_t bucket_ms, size_t buckets,
                    dlb_eval_figures_t *f, char *errstr, size_t errstr_size);

void dlb_eval_figures_clear(dlb_eval_figures_t *f);

/* ---- loading (eval_pg.c) -------------------------------------------------------- */

/** @brief Read one environment's history from schema on conn, in one
 *         read-only repeatable-read transaction (a consistent snapshot while
 *         the pipeline writes).
 *  @returns 0, DLB_ERR_NOTFOUND (the schema lacks the pipeline's tables),
 *           DLB_ERR_TRANSIENT (connection lost), DLB_ERR_NOMEM, DLB_ERR_GENERIC. */
int dlb_eval_load(PGconn *conn, const char *schema, dlb_eval_input_t *in, char *errstr,
                  size_t errstr_size);

void dlb_eval_input_clear(dlb_eval_input_t *in);

/** @brief Every figure of each environment: connect with dsn (libpq conninfo,
 *         "" = the PG* environment), load each from its schema (the env name
 *         with '-' and '.' as '_', as pg.schema defaults), compute, and fill
 *         the series on one bucket width for all (dlb_eval_bucket_ms).
 *  @param out  set to cnt figures in envs' order; dlb_eval_figures_free() them
 *  @returns 0 or an error, errstr naming the environment. */
int dlb_eval_envs(const char *dsn, const char *const *envs, size_t cnt, size_t buckets,
                  dlb_eval_figures_t **out, char *errstr, size_t errstr_size);

void dlb_eval_figures_free(dlb_eval_figures_t *f, size_t cnt);

/* A switch of the real environment (a promote history row), to mark on the
 * time plots. */
typedef struct dlb_eval_switch {
    int64_t at_ms;
    char env[64];   /* the one that became real */
    char cause[16]; /* manual or failover */
} dlb_eval_switch_t;

/** @brief Every switch of the real environment in the environment registry
 *         (its promote rows), oldest first; cause "manual" for rows older
 *         than automatic failover. *out is malloc'ed (NULL when none).
 *  @returns 0, or an error (no registry: a comparison of environments made
 *           with -X env=NAME alone; the caller goes on without marks). */
int dlb_eval_switches(const char *dsn, dlb_eval_switch_t **out, size_t *cnt, char *errstr,
                      size_t errstr_size);

#endif
