/* A workload from an environment's recorded history: the jobs that arrived
 * in a time range, each with its arrival, meta, first requested resources,
 * length, and the speed it showed at each worker count, so a brain can be
 * judged on the real environment's own jobs (docs/simulator.md, "Jobs from
 * history").
 *
 * dlb_sim_history_read() reads the environment's PostgreSQL schema
 * (pipeline/store/sql: jobs, runtime_samples with their pods) as plain rows,
 * one job at a time, into the builder below; dlb_sim_history_workload() does
 * the same from rows in memory, a pure function tested without a server. */
#ifndef DLB_SIM_HISTORY_H
#define DLB_SIM_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "sim_workload.h"

/* One job as the jobs table holds it (the merge of its job events). */
typedef struct dlb_sim_hist_job {
    char uid[128];
    char app[64], scenario[64], state[32], exit_reason[64];
    int64_t created_ms; /* its first job event: the arrival */
    int64_t batch_size; /* hyper_params.batch_size, 0 = unknown */
    int64_t variable_count, op_count, recv_op_count, flops, embedding_dimension;
} dlb_sim_hist_job_t;

/* One runtime sample, its pods summed up per type. */
typedef struct dlb_sim_hist_sample {
    size_t job; /* index in dlb_sim_history_t.jobs */
    int64_t t_ms, global_step;
    double speed;                   /* steps/s as reported */
    int workers, ps;                /* pods of type worker, ps */
    double wk_cpu_used;             /* mean over the workers, cores */
    double ps_cpu_used;             /* sum over the PS, cores */
    int64_t wk_mem_used;            /* max over the workers, bytes */
    int64_t ps_mem_used;            /* sum over the PS, bytes */
    double wk_cpu_req, ps_cpu_req;  /* max over the group, cores */
    int64_t wk_mem_req, ps_mem_req; /* max over the group, bytes */
} dlb_sim_hist_sample_t;

typedef struct dlb_sim_history {
    dlb_sim_hist_job_t *jobs; /* by arrival, then uid */
    size_t jobs_cnt;
    dlb_sim_hist_sample_t *samples; /* by job, then time */
    size_t samples_cnt;
} dlb_sim_history_t;

/* What a workload from history was made of. */
typedef struct dlb_sim_history_stats {
    size_t jobs;    /* in the workload */
    size_t skipped; /* jobs with no sample of a positive speed: no speed to run at */
    size_t points;  /* (job, worker count) speed points over all jobs */
} dlb_sim_history_stats_t;

void dlb_sim_history_free(dlb_sim_history_t *h);

/** @brief The workload of a history: one job per job with a speed, in
 *         arrival order, arriving at its offset from the first one's
 *         arrival, named by its uid, model = its app (else scenario), batch
 *         as recorded, length = its last global step x batch (what it
 *         processed there), workers, PS and per-pod requests of its first
 *         sample, and a profile of its own: the observed speed curve
 *         (sim_curve.h; samples/s = speed x batch), worker CPU = median used,
 *         PS CPU proportional to throughput (median used per 1000
 *         samples/s), worker memory from its lowest to its highest use, PS
 *         memory its highest use. With max_jobs > 0, the first max_jobs.
 *  @returns 0, DLB_ERR_INVALID (no job with a speed), DLB_ERR_NOMEM. */
int dlb_sim_history_workload(const dlb_sim_history_t *h, size_t max_jobs, dlb_sim_workload_t *wl,
                             dlb_sim_history_stats_t *stats, char *errstr, size_t errstr_size);

/* Building a workload one job at a time, as the rows stream in. */
typedef struct dlb_sim_history_builder {
    dlb_sim_workload_t wl;
    size_t cap; /* jobs it takes: the history's, or fewer by max_jobs */
    int64_t t0; /* arrival of the first job taken */
    dlb_sim_history_stats_t stats;
} dlb_sim_history_builder_t;

/** @brief An empty workload with room for cap jobs (max_jobs > 0: at most
 *         that many). @returns 0 or DLB_ERR_NOMEM. */
int dlb_sim_history_begin(dlb_sim_history_builder_t *b, size_t cap, size_t max_jobs, char *errstr,
                          size_t errstr_size);

/** @brief The next job in arrival order with its samples s[0..n) (their job
 *         field is not read): a spec when it has a speed, else counted as
 *         skipped; nothing once the workload is full (b->wl.n == b->cap).
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_sim_history_add(dlb_sim_history_builder_t *b, const dlb_sim_hist_job_t *j,
                        const dlb_sim_hist_sample_t *s, size_t n);

/** @brief Hand the workload over to *wl (the builder keeps nothing).
 *  @returns 0, or DLB_ERR_INVALID when no job had a speed (b is freed). */
int dlb_sim_history_end(dlb_sim_history_builder_t *b, dlb_sim_workload_t *wl,
                        dlb_sim_history_stats_t *stats, char *errstr, size_t errstr_size);

/** @brief Read the jobs of schema whose first job event is in [from_ms,
 *         to_ms) and every runtime sample of theirs, in one read-only
 *         snapshot (parameterised statements; the samples through a cursor,
 *         one job's at a time in memory), into the workload
 *         dlb_sim_history_workload() would make of them.
 *  @param dsn  libpq conninfo (empty: libpq's PG* environment)
 *  @returns 0; DLB_ERR_NOTFOUND (no such schema, or not a migrated
 *           environment); DLB_ERR_INVALID (no job with a speed);
 *           DLB_ERR_TRANSIENT (server unreachable); other errors of the
 *           store; errstr says which. */
int dlb_sim_history_read(const char *dsn, const char *schema, int64_t from_ms, int64_t to_ms,
                         size_t max_jobs, dlb_sim_workload_t *wl, dlb_sim_history_stats_t *stats,
                         char *errstr, size_t errstr_size);

#endif
