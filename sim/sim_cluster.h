/* The job simulator's virtual cluster: a pool of cores and memory that
 * running pods hold. Jobs wait for it in arrival order (sim_run.c). */
#ifndef DLB_SIM_CLUSTER_H
#define DLB_SIM_CLUSTER_H

#include <stdint.h>

typedef struct dlb_sim_cluster {
    double cores;      /* capacity */
    int64_t memory;    /* bytes */
    double cores_used; /* held by running pods */
    int64_t memory_used;
} dlb_sim_cluster_t;

/** @returns 1 when cores and memory more are free, else 0. */
int dlb_sim_cluster_fits(const dlb_sim_cluster_t *c, double cores, int64_t memory);
/** @brief Take (positive) or give back (negative) resources. */
void dlb_sim_cluster_take(dlb_sim_cluster_t *c, double cores, int64_t memory);

#endif
