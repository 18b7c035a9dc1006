/* One simulated training job as its DLRover master runs it: pods with
 * requests, a true memory need that grows, a speed from sim_model, the plan
 * requests a master sends at each stage, and plans applied within the
 * master's limits. Events go out through a dlb_sim_out_t. */
#ifndef DLB_SIM_JOB_H
#define DLB_SIM_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "event.h"
#include "sim_cluster.h"
#include "sim_model.h"
#include "sim_users.h"
#include "sim_vary.h"
#include "sim_workload.h"

#define DLB_SIM_MAX_WORKERS 128

/* Where a job's events and plan requests go (sim_run.c fills it). */
typedef struct dlb_sim_out {
    int (*publish)(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size);
    void *opaque;
    dlb_plan_request_t *reqs; /* this tick's requests, answered together */
    size_t reqs_cnt, reqs_cap;
    int err; /* first publish error; later events are dropped */
    char errstr[512];
    /* counters */
    long events, samples, requests, ooms, node_events;
} dlb_sim_out_t;

/** @brief Release the queued requests (their heap parts too); the queue stays. */
void dlb_sim_out_reset(dlb_sim_out_t *out);

typedef struct dlb_sim_pod {
    char name[DLB_ID_MAX];
    int ps;
    int index;
    double cpu_req;
    int64_t mem_req;
    double slow;     /* compute slowdown of a straggler's node, 1 = none */
    double factor;   /* the worker's persistent speed factor (sim_vary.h), 1 for a PS */
    double episode;  /* a transient slowdown while it lasts, 1 = none */
    int sampled;     /* in a runtime sample yet: it ran */
    int ooms;        /* OOMKills of this pod */
    int64_t oom_mem; /* request at its last OOM, until a plan answers it (0 = none) */
    /* Node failures (sim_job.c, node failures): when its node failed, until it runs again
     * (0 = up), and when a plan last replaced it after one (0 = never). */
    int64_t down_ms;
    int64_t replaced_ms;
    /* Placement (sim_job.c, placement on nodes): its node, NULL in a pool
     * and until placed, and the requests bound there. */
    dlb_sim_node_t *node;
    int64_t node_cpu_m, node_mem;
    /* A PS migration (sim_job.c, PS migration): the resources of the new pod
     * a plan asked for, when the plan came (0 = none) and when the new pod
     * runs (0 = still waiting for room). */
    double mig_cpu;
    int64_t mig_mem;
    int64_t mig_ms, mig_run_ms;
} dlb_sim_pod_t;

/* DLRover's JobOptStage as PSJobResourceOptimizer steps through it. */
typedef enum dlb_sim_stage {
    DLB_SIM_STAGE_CREATE = 0,     /* nothing asked yet */
    DLB_SIM_STAGE_WORKER_INITIAL, /* created: the next periodic ask is worker_initial */
    DLB_SIM_STAGE_PS_INITIAL,     /* then ps_initial */
    DLB_SIM_STAGE_PS_RUNNING,     /* then ps_running, or the workers when PS has no plan */
} dlb_sim_stage_t;

typedef enum dlb_sim_state {
    DLB_SIM_FUTURE = 0, /* not arrived */
    DLB_SIM_PENDING,
    DLB_SIM_RUNNING,
    DLB_SIM_SUCCEEDED,
    DLB_SIM_FAILED,
} dlb_sim_state_t;

typedef struct dlb_sim_job {
    char uid[DLB_ID_MAX];
    const dlb_sim_spec_t *spec;
    const dlb_sim_profile_t *prof;
    dlb_rng_t rng;
    dlb_sim_state_t state;
    int seq; /* event sequence, event ids are "<uid>-NNNNN" */
    int64_t arrival_ms, start_ms, end_ms, stall_until_ms;
    int64_t ps_changed_ms; /* last PS plan or PS OOM (DLRover's _last_ps_change_time, 0: never) */
    int64_t total_samples, dataset_size;
    int epochs;
    double local_bsz, done_samples, speed; /* speed: steps/s at the last sample */
    int ps_cnt, wk_cnt;
    dlb_sim_pod_t ps[DLB_SIM_MAX_PS];
    dlb_sim_pod_t wk[DLB_SIM_MAX_WORKERS];
    int next_ps_index, next_wk_index; /* pod names are never reused */
    double ps_hot;                    /* weight of PS 0's share of the variables (1 = balanced) */
    double wk_cpu, ps_cpu;            /* group resources: what a new pod gets */
    int64_t wk_mem, ps_mem;
    /* Worker variation (sim_vary.h), from a stream of its own; the episode's
     * end (0: none running). */
    dlb_sim_vary_t vary;
    dlb_rng_t vary_rng;
    int64_t episode_end_ms;
    /* The master's resource optimizer, as DLRover's PSJobResourceOptimizer
     * (docs/simulator.md, "The master"). */
    dlb_sim_stage_t stage; /* what the next periodic ask is */
    int worker_sampled;    /* the sample-phase worker ask was made */
    int64_t last_plan_ms;  /* last periodic ask answered with a plan (0: none) */
    /* The master's speed records (DLRover's PerfMonitor): a sample whose
     * global step grew is a record; the first with the current worker count
     * and the last. */
    int64_t rec_step, rec_first_ms, rec_last_ms;
    int rec_any;
    char asked[DLB_ID_MAX]; /* event id of the periodic ask awaiting its answer */
    int asked_ps_running;   /* it was job_stage_ps_running: an empty answer asks workers */
    double held_cores;      /* what it holds of the cluster */
    int64_t held_mem;
    double core_hours, memory_gib_hours; /* held while running, summed per tick */
    int ooms, oom_answered, plans_applied, stragglers_replaced, straggled;
    int pods_ran;        /* pods in a runtime sample (the evaluator's pods) */
    int pods_oom_killed; /* pods OOMKilled at least once */
    /* Replace and relaunch actions applied, and of them those a pod did not
     * need: a replace of a worker whose node was not slow, a relaunch of a
     * pod that was up. */
    int replaces, replaces_unneeded, relaunches, relaunches_unneeded;
    /* Pod-seconds of use and of request while running, per resource
     * (DLB_SIM_USE_*): what a utilisation figure divides. */
    double use_s[4], req_s[4];
    /* Per role (0 worker, 1 PS): the memory the pods needed x seconds, the
     * pod-seconds, and the largest need of any pod of the role: what a plan
     * that gave every pod of the role that peak from the start would have
     * used (dlb_sim_summary_t's mem_util_static_bound). */
    double need_s[2], pod_s[2], need_peak[2];
    char exit_reason[32];
    /* Node failures (sim_job.c, node failures): their own random stream, counters, and
     * the pod-ms spent down, summed when each pod runs again. */
    dlb_rng_t node_rng;
    int node_failures, node_replaced, node_relaunched;
    int64_t node_down_ms;
} dlb_sim_job_t;

/* The utilisation accumulators' order. */
enum { DLB_SIM_USE_WK_CPU = 0, DLB_SIM_USE_WK_MEM, DLB_SIM_USE_PS_CPU, DLB_SIM_USE_PS_MEM };

/* Kubernetes taints a NotReady node and evicts its pods after the
 * tolerationSeconds of node.kubernetes.io/not-ready (300 s by default);
 * DLRover's master relaunches a pod only once it has failed or is gone. */
#define DLB_SIM_NODE_WAIT_MS 300000

typedef struct dlb_sim_params {
    int64_t sample_ms;    /* runtime sample interval, and the master's autoscaler tick */
    int64_t ask_every_ms; /* after a plan, no periodic ask for longer than this
                             (DLRover's seconds_interval_to_optimize, 300 s) */
    int64_t ps_change_ms; /* PS asked again only longer than this after a PS change
                             (seconds_interval_to_change_ps, 3600 s) */
    int64_t steady_ms;    /* the worker count steady this long in the speed records
                             before an ask
                             (seconds_for_stable_worker_count, 60 s) */
    int64_t restart_ms;   /* a pod restart stalls the synchronous job this long */
    int max_relaunch;     /* OOMs of one pod after which the job fails */
    dlb_limits_t limits;  /* the master's clamp */
    double time_scale;    /* job lengths (and arrivals) times this */
    /* Node failures per running pod-hour (0 = none), and how much later a
     * failed pod no plan replaces is relaunched (sim_job.c, node failures). */
    double node_fail_per_hour;
    int64_t node_wait_ms;
    dlb_sim_users_t users; /* what users ask for before any plan */
    /* A new pod pending longer than this fails the job (DLRover's
     * seconds_to_wait_pending_pod, 900 s; sim_job.c, PS migration). */
    int64_t pod_pending_ms;
} dlb_sim_params_t;

/** @brief Set up job i of the run from its spec: uid "<name>-<tag>" (tag from
 *         the seed), the user's initial resources (the model's needs times a
 *         random over- or under-estimate), a hot PS (30% of jobs) and a
 *         straggler (15%) drawn from the job's own random stream. */
int dlb_sim_job_init(dlb_sim_job_t *j, const dlb_sim_spec_t *spec, uint64_t seed, size_t i,
                     int64_t start_ms, const dlb_sim_params_t *p, char *errstr, size_t errstr_size);

/** @brief Arrival: the created and pending job events and the create request. */
void dlb_sim_job_arrive(dlb_sim_job_t *j, int64_t now, dlb_sim_out_t *out);

/** @brief Cores and memory of every pod, as requested. */
void dlb_sim_job_totals(const dlb_sim_job_t *j, double *cores, int64_t *memory);

/** @brief Start a pending job when all its pods fit (gang): in a pool, when
 *         the free total holds them; on nodes, when each pod, PS first, is
 *         placed as kube-scheduler places it. Then the running event and the
 *         pod events, and it holds its resources.
 *  @returns 1 when it started, 0 when it does not fit (nothing changed). */
int dlb_sim_job_start(dlb_sim_job_t *j, int64_t now, dlb_sim_cluster_t *c, dlb_sim_out_t *out);

/** @brief One sample interval ending at now: progress, OOMKills, the runtime
 *         sample, the requests due; completion (or failure) frees the cluster. */
void dlb_sim_job_tick(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p,
                      dlb_sim_cluster_t *c, dlb_sim_out_t *out);

/** @brief The master reads the answer to one of its requests (plan NULL or
 *         empty: no plan), after it was applied: the autoscaler's and the
 *         PS-change clocks, and, when job_stage_ps_running had no plan, the
 *         worker ask DLRover's master makes next in the same round. */
void dlb_sim_job_answered(dlb_sim_job_t *j, const dlb_plan_request_t *req, const dlb_plan_t *plan,
                          int64_t now, dlb_sim_out_t *out);

/** @brief Fail a job (pending timeout): failed event with the reason. */
void dlb_sim_job_fail(dlb_sim_job_t *j, int64_t now, const char *reason, dlb_sim_cluster_t *c,
                      dlb_sim_out_t *out);

/** @brief Apply the plan answering req within the limits (and, for a running
 *         job, the free cluster: a worker increase is cut to what fits, a plan
 *         that still does not fit is dropped; on nodes, a changed pod is a
 *         new pod, placed again, and a new worker that no node fits is cut).
 *  @returns 1 when something changed, 0 when nothing did. */
int dlb_sim_job_apply(dlb_sim_job_t *j, const dlb_plan_request_t *req, const dlb_plan_t *plan,
                      int64_t now, const dlb_sim_params_t *p, dlb_sim_cluster_t *c,
                      dlb_sim_out_t *out);

#endif
