/* Worker-to-worker and step-to-step variation of a synchronous job's
 * workers, from Alibaba PAI's released mini-batch times of production jobs
 * (data/production/README.md, "pai-minibatch"; docs/simulator.md, "Worker
 * variation"):
 *  - a job is balanced (53% of jobs), moderately imbalanced (18%) or
 *    persistently imbalanced (29%);
 *  - each worker has a persistent speed factor (lognormal: sigma 0.05
 *    balanced, 0.15 moderate); in a persistently imbalanced job 1 to
 *    half of its workers sit on nodes 2-4x slower, for the whole job;
 *  - each step each worker's time varies (lognormal, sigma 0.03) with a
 *    heavy tail (0.17% of steps 1.5-2x), and the synchronous step waits
 *    for the slowest worker of each step;
 *  - 38% of jobs have one transient episode: one worker 1.3-2.5x slower
 *    for between 30 s and 10 h (log-uniform; Greyhound's range), which ends
 *    by itself. */
#ifndef DLB_SIM_VARY_H
#define DLB_SIM_VARY_H

#include <stdint.h>

#include "sim_model.h"

enum { DLB_SIM_VARY_BALANCED = 0, DLB_SIM_VARY_MODERATE, DLB_SIM_VARY_PERSISTENT };

/* One job's draw. */
typedef struct dlb_sim_vary {
    int cls;            /* DLB_SIM_VARY_* */
    double sigma;       /* of the workers' persistent factors */
    int slow_workers;   /* persistent class: how many of the first workers are slow */
    double slow;        /* and how much slower, >= 2 */
    double episode_at;  /* progress at which the episode starts (> 1: none) */
    int64_t episode_ms; /* its length */
    double episode;     /* its slowdown */
} dlb_sim_vary_t;

/** @brief Draw a job's class and its episode from r. */
void dlb_sim_vary_job(dlb_sim_vary_t *v, int workers, dlb_rng_t *r);

/** @returns a new worker's persistent factor (>= 1 is slower) from r. */
double dlb_sim_vary_factor(const dlb_sim_vary_t *v, dlb_rng_t *r);

/** @returns how much longer than its slowest worker's mean step a
 *           synchronous step of `workers` workers takes on average: each
 *           step waits for the slowest of that step (the expected maximum
 *           of the workers' step noise, and its heavy tail). */
double dlb_sim_vary_sync(int workers);

/** @returns a worker's speed over one sample of `steps` steps, relative to
 *           its mean: the mean of its step noise over those steps, from r. */
double dlb_sim_vary_window(double steps, dlb_rng_t *r);

#endif
