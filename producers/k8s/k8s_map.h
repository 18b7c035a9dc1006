/* Kubernetes objects -> node events: pure functions of the objects (cJSON as
 * the API server sends them) and what the caller remembers, no I/O.
 *
 * The mapping is stateless: the same object state yields the same events with
 * the same ids, so a relist or a reconnect that sees a state again repeats
 * ids, never makes new ones. The monitor drops ids it already produced; after
 * a restart of the monitor the consumers drop them (they dedup by event id).
 *
 * Event ids, <pod> being the pod's metadata.uid and <h> 16 hex digits of an
 * FNV-1a hash:
 *   pod_phase       <pod>-phase-<Phase>          each phase once per pod
 *   oom_killed      <pod>-oom-<h(container, containerID)>   each killed container once
 *   evicted         <pod>-evicted                once per pod
 *   preempted       <pod>-preempted              once per pod
 *   deleted         <pod>-deleted                once per pod
 *   node_not_ready  <pod>-notready-<h(node, Ready.lastTransitionTime)>  each outage once
 *   node_phase      <pod>-ready-<h(node, Ready.lastTransitionTime)>     each recovery once */
#ifndef DLB_K8S_MAP_H
#define DLB_K8S_MAP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "event.h"

/* Which labels of a pod say what it is (k8s.* settings). */
typedef struct dlb_k8s_labels {
    const char *job;   /* the job's label; its value is the job uid unless job_uid_owner */
    const char *type;  /* pod type: ps worker chief evaluator (master = chief) */
    const char *index; /* pod index within its type */
    int job_uid_owner; /* 1: the job uid is the uid of the pod's controller ownerReference */
} dlb_k8s_labels_t;

/* What the monitor keeps of a job pod, read from its newest object. */
typedef struct dlb_k8s_pod {
    char uid[DLB_ID_MAX];
    char ns[DLB_ID_MAX];
    char name[DLB_ID_MAX];
    char job_uid[DLB_ID_MAX];
    char type[16]; /* "" when the type label is missing or not a known type */
    int32_t index;
    char node[DLB_ID_MAX]; /* spec.nodeName, "" until scheduled */
    char phase[32];        /* status.phase */
    int has_memory;
    int64_t memory; /* bytes: the sum of the containers' memory requests */
    int has_cpu;
    double cpu; /* cores: the sum of the containers' CPU requests */
} dlb_k8s_pod_t;

/* A node's state as far as its pods are concerned. */
typedef struct dlb_k8s_node {
    char name[DLB_ID_MAX];
    int ready;      /* 1: Ready True, 0: Ready False or Unknown, -1: no Ready condition */
    char since[64]; /* the Ready condition's lastTransitionTime */
    char reason[DLB_NAME_MAX];
    char message[DLB_REASON_MAX];
    char preempt_taint[DLB_NAME_MAX]; /* a taint key that announces the node's preemption */
    char taint_added[64];             /* its timeAdded */
} dlb_k8s_node_t;

/* Events a mapping produced, in order; reuse it with dlb_k8s_out_reset(). */
typedef struct dlb_k8s_out {
    dlb_node_event_t *ev;
    size_t cnt, cap;
} dlb_k8s_out_t;

void dlb_k8s_out_reset(dlb_k8s_out_t *out);
void dlb_k8s_out_free(dlb_k8s_out_t *out);

/** @brief Read a pod's identity, placement and requests.
 *  @returns 0; DLB_ERR_NOTFOUND when it is not a job pod (no job label, or no
 *           controller with job_uid_owner), errstr naming what is missing;
 *           DLB_ERR_INVALID when metadata.uid or .name is missing or a value is
 *           longer than its field. */
int dlb_k8s_pod_read(const cJSON *obj, const dlb_k8s_labels_t *labels, dlb_k8s_pod_t *pod,
                     char *errstr, size_t errstr_size);

/** @brief The events a pod object's state implies (see the table in docs/k8s-monitor.md):
 *         OOM kills of its containers (state and lastState), eviction,
 *         preemption, its phase, and deleted when the watch said DELETED.
 *  @param pod what dlb_k8s_pod_read() read from obj.
 *  @param now_ms the event time when the object carries none.
 *  @returns 0 or DLB_ERR_NOMEM / DLB_ERR_INVALID (an id longer than DLB_ID_MAX). */
int dlb_k8s_map_pod(const cJSON *obj, const dlb_k8s_pod_t *pod, int deleted, int64_t now_ms,
                    dlb_k8s_out_t *out, char *errstr, size_t errstr_size);

/** @brief A pod that was known but is missing from a relist: deleted while the
 *         watch was down. */
int dlb_k8s_map_pod_gone(const dlb_k8s_pod_t *pod, int64_t now_ms, dlb_k8s_out_t *out, char *errstr,
                         size_t errstr_size);

/** @brief Read a node's Ready condition and preemption taints.
 *  @returns 0 or DLB_ERR_INVALID (no metadata.name, or too long). */
int dlb_k8s_node_read(const cJSON *obj, dlb_k8s_node_t *node, char *errstr, size_t errstr_size);

/** @returns 1 when cur differs from prev (NULL: never seen) in what dlb_k8s_map_node() uses. */
int dlb_k8s_node_changed(const dlb_k8s_node_t *prev, const dlb_k8s_node_t *cur);

/** @brief Events for the pods on a node whose state is cur, prev being the state
 *         seen before (NULL: none): node_not_ready while Ready is not True,
 *         node_phase "Ready" when it comes back, preempted under a preemption
 *         taint. Pods that have finished (Succeeded, Failed) get none. */
int dlb_k8s_map_node(const dlb_k8s_node_t *prev, const dlb_k8s_node_t *cur,
                     const dlb_k8s_pod_t *const *pods, size_t pods_cnt, int64_t now_ms,
                     dlb_k8s_out_t *out, char *errstr, size_t errstr_size);

/** @returns the uid of the pod a core/v1 Event is about, or NULL (not about a pod). */
const char *dlb_k8s_event_pod_uid(const cJSON *obj);

/** @brief The node event an Event about pod implies: reason Preempted (the
 *         scheduler) -> preempted, Evicted (the kubelet) -> evicted; other
 *         reasons none. */
int dlb_k8s_map_event(const cJSON *obj, const dlb_k8s_pod_t *pod, int64_t now_ms,
                      dlb_k8s_out_t *out, char *errstr, size_t errstr_size);

/** @brief RFC 3339 time ("2024-05-01T10:00:00Z", fractions and offsets allowed)
 *         to ms since the epoch. @returns 0 or -1. */
int dlb_k8s_time_ms(const char *s, int64_t *out);

/** @brief A resource quantity ("16Gi", "500m", "1e3", "2") in base units
 *         (bytes, cores). @returns 0 or -1. */
int dlb_k8s_quantity(const char *s, double *out);

#endif
