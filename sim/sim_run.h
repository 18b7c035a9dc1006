/* The job simulator's loop: virtual time in lock-step with the optimizer.
 *
 * Each tick (one sample interval of virtual time) the simulator publishes
 * every event of the tick, flushes, then sends the plan requests due, waits for their
 * plans, applies them, sends the requests those answers lead to (a worker
 * ask after a PS ask without a plan) in a second round, and moves on; with nothing running it jumps
 * to the next arrival. Output is a function of (workload, seed, start, options, plans received):
 * with no plans, of the inputs alone. */
#ifndef DLB_SIM_RUN_H
#define DLB_SIM_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"
#include "event.h"
#include "sim_job.h"
#include "sim_workload.h"

/* 2024-01-01T00:00:00Z: a fixed start, so runs are reproducible. */
#define DLB_SIM_START_MS ((int64_t)1704067200000)

typedef struct dlb_sim_io {
    /* Every event, in order. */
    int (*publish)(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size);
    /* After a tick's events and requests: fill plans[i] for reqs[i] (left
     * zeroed when none came); NULL = no optimizer, nothing is applied. */
    int (*exchange)(void *opaque, const dlb_plan_request_t *reqs, size_t n, dlb_plan_t *plans,
                    char *errstr, size_t errstr_size);
    /* Deliver what was published so far (NULL: nothing to wait for). */
    int (*flush)(void *opaque, char *errstr, size_t errstr_size);
    void *opaque;
} dlb_sim_io_t;

typedef struct dlb_sim_opts {
    const dlb_sim_workload_t *wl;
    uint64_t seed;
    int64_t start_ms;
    dlb_sim_params_t params;
    double cluster_cores;        /* the pool, when there are no nodes */
    int64_t cluster_memory;      /* bytes */
    const dlb_sim_node_t *nodes; /* the nodes' shapes (sim_node_file.h); NULL: the pool */
    size_t nodes_cnt;
    int64_t pending_timeout_ms; /* a job pending longer fails (PendingTimeout) */
    int64_t max_virtual_ms;     /* stop after this much virtual time (0: until done) */
    volatile sig_atomic_t *stop;
    FILE *jobs_csv; /* non-NULL: one CSV line per job at the end (dlb_sim_jobs_csv()) */
} dlb_sim_opts_t;

typedef struct dlb_sim_summary {
    int jobs, succeeded, failed, unfinished;
    int64_t virtual_ms;
    double wall_s, speedup;
    long events, samples, node_events;
    long plan_requests, plans_received, plans_applied, plans_missing;
    long ooms, oom_answered; /* OOMs, and OOMs whose plan raised the pod's memory */
    long hot_ps_jobs, straggler_jobs, stragglers_replaced;
    /* Replace and relaunch actions applied, and those a pod did not need
     * (sim_job.h). */
    long replaces, replaces_unneeded, relaunches, relaunches_unneeded;
    /* Pods whose node failed; of them, those a plan replaced and those the
     * master relaunched after the wait (the others ended with their job). */
    long node_failures, node_replaced, node_relaunched;
    double node_down_s;                  /* pod-seconds from a failure to the pod's new start */
    double jct_mean_s, pending_mean_s;   /* over finished jobs */
    double core_hours, memory_gib_hours; /* requested by running pods */
    /* Pods that ran (in a runtime sample, as the evaluator counts them)
     * and pods OOMKilled at least once; succeeded over all jobs. */
    long pods, pods_oom_killed;
    double completion_rate;
    /* Used over requested, pod-seconds weighted, over every running pod of
     * the role (NaN when none ran). */
    double worker_cpu_util, worker_mem_util, ps_cpu_util, ps_mem_util;
    double cpu_util, mem_util; /* worker and PS pods together, as dlbrain eval's */
    /* The memory utilisation had every pod asked, from its start, the
     * largest memory any pod of its job and role needed in this run: the
     * most a plan of one memory size per role reaches without an OOM. */
    double mem_util_static_bound, worker_mem_util_static_bound, ps_mem_util_static_bound;
    /* The cluster: its nodes (0: a pool); the mean share of its cores and
     * memory that running pods requested, over the ticks with a job running
     * or pending; and the mean share left free over the ticks a job was
     * pending (capacity it could not use: too little, or in the wrong
     * places). */
    long nodes;
    double alloc_cpu_share, alloc_memory_share;
    double pending_free_cpu_share, pending_free_memory_share;
} dlb_sim_summary_t;

/** @brief Default options: 30 s samples (and master checks), DLRover's
 *         300 s between plans, 3600 s between PS changes and 60 s of steady
 *         workers before an ask, 60 s restarts, 3 relaunches, the default
 *         limits, 1024 cores and 4 TiB of cluster, 4 h pending timeout. */
void dlb_sim_opts_init(dlb_sim_opts_t *o);

/** @brief Run the workload to its end (or max_virtual_ms, or stop), on
 *         o->nodes when it has some (copied: o is not changed), else on the
 *         pool of cluster_cores and cluster_memory.
 *  @returns 0, or the first error of io or of the set-up (errstr says). */
int dlb_sim_run(const dlb_sim_opts_t *o, const dlb_sim_io_t *io, dlb_sim_summary_t *sum,
                char *errstr, size_t errstr_size);

/** @brief The summary line: "sim: jobs=... succeeded=... ...". */
void dlb_sim_summary_print(const dlb_sim_summary_t *s, FILE *fp);
/** @brief The summary as one JSON object. @returns 0 or -1 (write error). */
int dlb_sim_summary_json(const dlb_sim_summary_t *s, FILE *fp);

/* ---- Kafka io ----------------------------------------------------------- */
typedef struct dlb_sim_kafka dlb_sim_kafka_t;

/** @brief A producer for <env>.* and, with plans, a read_committed consumer of
 *         <env>.plans in a group of its own.
 *  @param plan_timeout_ms how long a tick waits for its plans. */
int dlb_sim_kafka_new(const dlb_conf_t *conf, int plans, long plan_timeout_ms,
                      dlb_sim_kafka_t **out, dlb_sim_io_t *io, char *errstr, size_t errstr_size);
void dlb_sim_kafka_destroy(dlb_sim_kafka_t *k);

/* ---- In-process optimizer (sim_local.c) ------------------------------------ */
typedef struct dlb_sim_local dlb_sim_local_t;

/** @brief io that answers each request with conf's optimizer set in this
 *         process: job states folded from the events published, similar jobs'
 *         history and answered OOMs kept in memory (no broker, no PostgreSQL).
 *         conf must outlive the io. */
int dlb_sim_local_new(const dlb_conf_t *conf, dlb_sim_local_t **out, dlb_sim_io_t *io, char *errstr,
                      size_t errstr_size);
void dlb_sim_local_destroy(dlb_sim_local_t *l);

/** @brief io writing each event as a JSON line to fp (no optimizer). */
int dlb_sim_json_io(FILE *fp, dlb_sim_io_t *io, char *errstr, size_t errstr_size);
void dlb_sim_json_io_free(dlb_sim_io_t *io);

#endif
