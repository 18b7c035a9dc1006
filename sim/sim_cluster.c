/* The virtual cluster's accounting (sim_cluster.h). */
#include "sim_cluster.h"

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
