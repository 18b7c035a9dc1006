/* The job simulator's virtual cluster: a pool of cores and memory that
 * running pods hold, or nodes of fixed shapes that each pod is placed on as
 * Kubernetes' default scheduler places it (docs/simulator.md, "Cluster").
 * Jobs wait for it in arrival order (sim_run.c). */
#ifndef DLB_SIM_CLUSTER_H
#define DLB_SIM_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#define DLB_SIM_NODE_NAME 48

/* kube-scheduler's framework.MaxNodeScore: each score plugin's range is 0..100. */
#define DLB_SIM_MAX_NODE_SCORE 100

typedef struct dlb_sim_node {
    char name[DLB_SIM_NODE_NAME];
    int64_t cpu_m;  /* allocatable millicores (kube-scheduler counts CPU in millicores) */
    int64_t memory; /* allocatable bytes */
    int64_t cpu_used_m, memory_used; /* requested by the pods bound to it */
    int pods;
} dlb_sim_node_t;

typedef struct dlb_sim_cluster {
    double cores;      /* capacity: the pool's, or the nodes' sum */
    int64_t memory;    /* bytes */
    double cores_used; /* held by running pods */
    int64_t memory_used;
    dlb_sim_node_t *nodes; /* NULL: one pool, no placement */
    size_t nodes_cnt;
} dlb_sim_cluster_t;

/** @returns 1 when cores and memory more are free in the pool's total, else 0. */
int dlb_sim_cluster_fits(const dlb_sim_cluster_t *c, double cores, int64_t memory);
/** @brief Take (positive) or give back (negative) resources of the total. */
void dlb_sim_cluster_take(dlb_sim_cluster_t *c, double cores, int64_t memory);

/** @returns cores as the millicores a Kubernetes request holds (rounded). */
int64_t dlb_sim_cpu_milli(double cores);

/** @brief kube-scheduler's node scoring for one pod with the default plugin
 *         configuration: NodeResourcesFit's filter, then its LeastAllocated
 *         score (CPU and memory, weight 1 each) plus
 *         NodeResourcesBalancedAllocation's score (plugin weights 1 and 1).
 *  @param least, balanced  each plugin's score (0..100), when not NULL
 *  @returns least + balanced (0..200), or -1 when the pod does not fit
 *           what the node has left. */
int dlb_sim_node_score(const dlb_sim_node_t *n, int64_t cpu_m, int64_t memory, int *least,
                       int *balanced);

/** @brief Pick the node for a pod: the highest score, ties to the lowest
 *         index; avoid (may be NULL) only when no other node fits. The pod is
 *         not bound.
 *  @returns the node, or NULL when it fits none. */
dlb_sim_node_t *dlb_sim_cluster_pick(const dlb_sim_cluster_t *c, int64_t cpu_m, int64_t memory,
                                     dlb_sim_node_t *avoid);
/** @brief Bind a pod's requests to node n (it fits: dlb_sim_cluster_pick). */
void dlb_sim_cluster_bind(dlb_sim_node_t *n, int64_t cpu_m, int64_t memory);
/** @brief Give back what dlb_sim_cluster_bind() took. */
void dlb_sim_cluster_unbind(dlb_sim_node_t *n, int64_t cpu_m, int64_t memory);

#endif
