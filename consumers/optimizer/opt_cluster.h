/* The dlbrain set's view of the rest of the cluster in a worker plan
 * (opt_cluster.c). Private to the optimizers. */
#ifndef DLB_OPT_CLUSTER_H
#define DLB_OPT_CLUSTER_H

#include "opt_dlbrain.h"

typedef struct dlb_cluster_growth {
    int current;       /* workers now */
    int want;          /* workers the job's own model asks */
    double worker_cpu; /* cores of one worker */
    double cores;      /* cores the job holds now */
} dlb_cluster_growth_t;

/** @brief The least share of the speed per worker one more worker must add:
 *         dlbrain.scale.min.gain.busy while other jobs wait for room (their
 *         count in *waiting), else dlbrain.scale.min.gain. */
double dlb_opt_cluster_min_gain(const dlb_opt_input_t *in, size_t *waiting);

/** @brief Workers the job may have, between g->current and g->want: all of
 *         g->want unless dlbrain.cluster.cores is set and the cores no
 *         running job holds fit fewer. Says in the plan's reason why it cut. */
int dlb_opt_cluster_grow(const dlb_opt_input_t *in, const dlb_cluster_growth_t *g,
                         dlb_plan_t *plan);

#endif
