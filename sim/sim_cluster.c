/* The virtual cluster's accounting and placement (sim_cluster.h).
 *
 * Placement follows kube-scheduler's default profile (kubernetes/kubernetes,
 * pkg/scheduler/apis/config/v1/defaults.go and default_plugins.go: the
 * NodeResourcesFit plugin with the LeastAllocated strategy on cpu and memory,
 * weight 1 each, and NodeResourcesBalancedAllocation, both plugins at score
 * weight 1). The formulas, in the integer and float arithmetic of
 * pkg/scheduler/framework/plugins/noderesources/least_allocated.go and
 * balanced_allocation.go, with requested = what the node's pods request plus
 * this pod:
 *   LeastAllocated    = sum_r (((alloc_r - requested_r) * 100) / alloc_r) * w_r / sum_r w_r
 *   BalancedAllocation = (int)((1 - |f_cpu - f_mem| / 2) * 100), f_r = min(1, requested_r /
 * alloc_r) The other default score plugins score every node alike here: the simulated pods and
 * nodes have no taints, affinities, spread constraints or images to prefer. */
#include "sim_cluster.h"

#include <math.h>

/* Cores are sums of plan values like 4.5: a little slack so rounding never
 * keeps a job out of an exactly full cluster. */
#define CORE_EPS 1e-6

int dlb_sim_cluster_fits(const dlb_sim_cluster_t *c, double cores, int64_t memory)
{
    return c->cores_used + cores <= c->cores + CORE_EPS && c->memory_used + memory <= c->memory;
}

void dlb_sim_cluster_take(dlb_sim_cluster_t *c, double cores, int64_t memory)
{
    c->cores_used += cores;
    c->memory_used += memory;
    if (c->cores_used < CORE_EPS)
        c->cores_used = 0;
}

int64_t dlb_sim_cpu_milli(double cores)
{
    return llround(cores * 1000.0);
}

/* least_allocated.go, leastRequestedScore. */
static int64_t least_requested(int64_t requested, int64_t capacity)
{
    if (capacity == 0 || requested > capacity)
        return 0;
    return (capacity - requested) * DLB_SIM_MAX_NODE_SCORE / capacity;
}

int dlb_sim_node_score(const dlb_sim_node_t *n, int64_t cpu_m, int64_t memory, int *least,
                       int *balanced)
{
    int64_t cpu = n->cpu_used_m + cpu_m, mem = n->memory_used + memory;
    double f_cpu, f_mem;
    int la, ba;

    /* NodeResourcesFit's filter: the request must fit what is left. */
    if (cpu > n->cpu_m || mem > n->memory)
        return -1;
    la = (int)((least_requested(cpu, n->cpu_m) + least_requested(mem, n->memory)) / 2);
    f_cpu = n->cpu_m ? (double)cpu / (double)n->cpu_m : 0;
    f_mem = n->memory ? (double)mem / (double)n->memory : 0;
    ba = (int)((1 - fabs((f_cpu - f_mem) / 2)) * (double)DLB_SIM_MAX_NODE_SCORE);
    if (least)
        *least = la;
    if (balanced)
        *balanced = ba;
    return la + ba;
}

dlb_sim_node_t *dlb_sim_cluster_pick(const dlb_sim_cluster_t *c, int64_t cpu_m, int64_t memory,
                                     dlb_sim_node_t *avoid)
{
    dlb_sim_node_t *best = NULL;
    int best_score = -1;

    /* kube-scheduler draws among the nodes of the top score (selectHost);
     * here the first one wins, so a run needs no random numbers for it. */
    for (size_t i = 0; i < c->nodes_cnt; i++) {
        dlb_sim_node_t *n = &c->nodes[i];
        int s;

        if (n == avoid)
            continue;
        if ((s = dlb_sim_node_score(n, cpu_m, memory, NULL, NULL)) > best_score) {
            best_score = s;
            best = n;
        }
    }
    if (!best && avoid && dlb_sim_node_score(avoid, cpu_m, memory, NULL, NULL) >= 0)
        best = avoid;
    return best;
}

void dlb_sim_cluster_bind(dlb_sim_node_t *n, int64_t cpu_m, int64_t memory)
{
    n->cpu_used_m += cpu_m;
    n->memory_used += memory;
    n->pods++;
}

void dlb_sim_cluster_unbind(dlb_sim_node_t *n, int64_t cpu_m, int64_t memory)
{
    n->cpu_used_m -= cpu_m;
    n->memory_used -= memory;
    n->pods--;
}
