/* What the optimizers read: the current job's state and similar jobs' history.
 *
 * Filled by the Redis cache (current job) or PostgreSQL (history, and the
 * current job when Redis lost it), consumed by pure optimizer functions. */
#ifndef DLB_STATE_H
#define DLB_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

/* Latest known status of one pod of a job, folded from node events. */
typedef struct dlb_pod_status {
    char name[DLB_ID_MAX];
    char type[16];
    int32_t index;
    char node_name[DLB_ID_MAX];
    char last_kind[32]; /* kind of the newest node event */
    char phase[32];     /* newest phase seen, "" if none */
    int64_t last_event_time_ms;
    int oom_count;                      /* OOMKilled events seen for this pod */
    char last_oom_event_id[DLB_ID_MAX]; /* "" if never OOM */
    int64_t memory_requested;           /* bytes at the newest event that said, 0 if unknown */
    char last_event_id[DLB_ID_MAX]; /* id of the newest node event, so a redelivery is a no-op */
    /* The newest node failure of the pod (dlb_node_failure_kind(): evicted,
     * preempted, node_not_ready, hardware_error, no_heartbeat), "" if none,
     * and the node it named (the pod's node when it named none). Folded as a
     * maximum by (time, id), so order and redelivery do not matter. */
    char fail_kind[32];
    char fail_event_id[DLB_ID_MAX];
    char fail_node[DLB_ID_MAX];
    int64_t fail_time_ms;
    /* The newest event saying the pod is back or gone (dlb_node_back_kind():
     * phase Running or Succeeded, node Ready, deleted), "" if none;
     * back_kind says which: "Running", "Succeeded", "Ready" or "deleted". */
    char back_kind[32];
    char back_event_id[DLB_ID_MAX];
    int64_t back_time_ms;
} dlb_pod_status_t;

/* Pods one job's state keeps: beyond any real job's pods over its life,
 * relaunches included, so a producer that invents pod names cannot grow a
 * state (and its Redis hash) without bound. */
#define DLB_JOB_PODS_MAX 16384

/* Pods a job's runtime window holds over all its samples: the newest samples
 * that fit are kept, at least one. A decoded pod is about 500 bytes, so a
 * window of 60 samples of 16,384 pods (valid input) took 490 MB to plan
 * from; now at most 32 MB. Samples of up to 1,092 pods keep all 60. */
#define DLB_WINDOW_PODS_MAX 65536

typedef struct dlb_job_state {
    /* Merged job event: every section ever reported, newest value wins.
     * job.event_id / event_time_ms are those of the newest job event. Its
     * heap parts (job_event v2) belong to the state. */
    dlb_job_event_t job;
    int64_t created_ms; /* event time of the first job event, 0 if none */
    /* Runtime window, oldest first, at most conf.window_size samples and
     * DLB_WINDOW_PODS_MAX pods. */
    dlb_runtime_sample_t *window;
    size_t window_cnt;
    dlb_pod_status_t *pods; /* sorted by name, at most DLB_JOB_PODS_MAX */
    size_t pods_cnt;
    size_t pods_cap; /* room in pods when it grew here (0: exactly pods_cnt, as loaded) */
    /* Node events of this apply that named a pod past DLB_JOB_PODS_MAX: not
     * folded (the history keeps them), for the caller to log. */
    size_t pods_refused;
    /* Between dlb_job_state_begin_rebuild() and _end_rebuild(): pod position
     * + 1 by name hash (open addressing, 0 = empty); NULL otherwise. */
    uint32_t *pod_index;
    size_t pod_index_cap;
} dlb_job_state_t;

/* A pod of a history job as the newest of the job's samples that has it
 * shows it: what a pod ended with, where an optimizer asks what pods of
 * similar jobs needed. */
typedef struct dlb_hist_pod {
    char name[DLB_ID_MAX];
    char type[16];
    int64_t memory_used;
} dlb_hist_pod_t;

/* One finished or running job of the same scenario, from PostgreSQL. */
typedef struct dlb_hist_job {
    char job_uid[DLB_ID_MAX];
    int64_t created_ms;
    char state[32];
    char exit_reason[32];
    int completed;                 /* state succeeded or exit reason Completed */
    dlb_runtime_sample_t *samples; /* oldest first */
    size_t samples_cnt;
    char (*oom_pods)[DLB_ID_MAX]; /* pods that were ever OOMKilled */
    size_t oom_pods_cnt;
    /* Each pod of samples once (dlb_hist_job_last_pods), when the loader
     * made it (has_last_pods); borrowed like the samples' pods. */
    const dlb_hist_pod_t *last_pods;
    size_t last_pods_cnt;
    int has_last_pods;
} dlb_hist_job_t;

typedef struct dlb_history {
    dlb_hist_job_t *jobs; /* newest job first */
    size_t jobs_cnt;
    int borrowed; /* the samples' pods belong to a cache (dlb_pg_load_history) */
} dlb_history_t;

/* An OOM that an earlier plan of the job already answered (PostgreSQL table
 * oom_plans), so the same OOM is never answered with a second bump. */
typedef struct dlb_oom_plan {
    char pod_name[DLB_ID_MAX];
    char oom_event_id[DLB_ID_MAX]; /* the node event that reported the OOM */
    char plan_id[DLB_ID_MAX];      /* the plan that answered it */
    int64_t memory;                /* bytes that plan gave the pod */
    int64_t event_time_ms;         /* the plan's event time */
} dlb_oom_plan_t;

void dlb_job_state_clear(dlb_job_state_t *st);
void dlb_history_clear(dlb_history_t *h);

/** @brief Each pod of j's samples once, as the newest sample that has it
 *         shows it, newest sample first (*out is the caller's to free).
 *  @returns 0, or DLB_ERR_NOMEM. */
int dlb_hist_job_last_pods(const dlb_hist_job_t *j, dlb_hist_pod_t **out, size_t *cnt);

/** @brief Fold one event into a job state, exactly what the cache does, so the
 *         PostgreSQL rebuild and the Redis path agree. Samples are appended in
 *         event-time order and trimmed to the newest window_size that hold at
 *         most DLB_WINDOW_PODS_MAX pods (at least one); a sample or node event
 *         whose event_id is already present changes nothing.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_job_state_apply(dlb_job_state_t *st, const dlb_event_t *ev, int window_size);

/** @brief Folding a job's whole history (a rebuild) one event at a time would
 *         insert each new pod into the sorted array, a cost of the square of
 *         the pods (10k pods took 0.5 s, 40k 23 s: long enough to lose the
 *         consumer group). Between begin and end, new pods are appended and
 *         found through a hash index, and end sorts them once: the same state
 *         in O(n log n). Nothing may read st->pods in between.
 *  @returns 0 or DLB_ERR_NOMEM (the state is unchanged). */
int dlb_job_state_begin_rebuild(dlb_job_state_t *st);
void dlb_job_state_end_rebuild(dlb_job_state_t *st);

/** @returns 1 when a node event of this kind says the pod's node or the pod
 *           failed (evicted, preempted, node_not_ready, hardware_error,
 *           no_heartbeat), 2 when it says the whole node failed
 *           (node_not_ready, hardware_error), 0 otherwise. */
int dlb_node_failure_kind(const char *kind);

/** @returns 1 when a node event says its pod is back or gone: pod_phase
 *           Running or Succeeded, node_phase Ready, deleted. */
int dlb_node_back_kind(const char *kind, const char *phase);

/** @returns the pod status by name, or NULL. */
const dlb_pod_status_t *dlb_job_state_pod(const dlb_job_state_t *st, const char *name);

#endif
