/* Worker variation (sim_vary.h). The figures were computed from the PAI
 * mini-batch times (GitHub alibaba/clusterdata, commit eb657a96,
 * cluster-trace-gpu-v2020/mini-batch-time): the classes from the per-job
 * median CoV of 100 jobs of 10 workers (< 0.1: 53 jobs; 0.1-0.3: 18; >= 0.3:
 * 29); the persistent factors, step noise and tail from the four per-worker
 * example jobs; the share of jobs with an episode from the balanced jobs
 * (20 of 53 have an iteration with a 2x-straggler spread). */
#include "sim_vary.h"

#include <math.h>

#include "sim_users.h"

#define P_BALANCED     0.53
#define P_MODERATE     0.18
#define SIGMA_BAL      0.05
#define SIGMA_MOD      0.15
#define SLOW_MIN       2.0
#define SLOW_MAX       4.0
#define STEP_SIGMA     0.03
#define TAIL_P         0.0017 /* a step 1.5-2x its worker's median */
#define TAIL_MEAN      1.75
#define EPISODE_P      0.38
#define EPISODE_MIN    1.3
#define EPISODE_MAX    2.5
#define EPISODE_MIN_MS 30000.0    /* Greyhound: sub-minute ... */
#define EPISODE_MAX_MS 36000000.0 /* ... to nearly ten hours */

void dlb_sim_vary_job(dlb_sim_vary_t *v, int workers, dlb_rng_t *r)
{
    double u = dlb_rng_unit(r);

    v->cls = u < P_BALANCED                ? DLB_SIM_VARY_BALANCED
             : u < P_BALANCED + P_MODERATE ? DLB_SIM_VARY_MODERATE
                                           : DLB_SIM_VARY_PERSISTENT;
    v->sigma = v->cls == DLB_SIM_VARY_MODERATE ? SIGMA_MOD : SIGMA_BAL;
    /* One to half of the workers: the example jobs have one (job 1) to half
     * (job 4) of theirs slow. */
    v->slow_workers = 0;
    v->slow = dlb_rng_range(r, SLOW_MIN, SLOW_MAX);
    if (v->cls == DLB_SIM_VARY_PERSISTENT && workers > 1) {
        int half = workers / 2;
        v->slow_workers = 1 + (int)(dlb_rng_unit(r) * half);
        if (v->slow_workers > half)
            v->slow_workers = half;
    }
    v->episode_at = dlb_rng_unit(r) < EPISODE_P ? dlb_rng_unit(r) : 2.0;
    v->episode_ms =
        (int64_t)(EPISODE_MIN_MS * exp(dlb_rng_unit(r) * log(EPISODE_MAX_MS / EPISODE_MIN_MS)));
    v->episode = dlb_rng_range(r, EPISODE_MIN, EPISODE_MAX);
}

double dlb_sim_vary_factor(const dlb_sim_vary_t *v, dlb_rng_t *r)
{
    return exp(v->sigma * dlb_rng_normal(r));
}

/* The expected maximum of n standard normals (Blom's approximation,
 * Phi^-1((n - 0.375) / (n + 0.25)), within 1% for these n), by bisection. */
static double expected_max(int n)
{
    double p = (n - 0.375) / (n + 0.25), lo = -10, hi = 10;

    for (int i = 0; i < 60; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / M_SQRT2) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

double dlb_sim_vary_sync(int workers)
{
    double tail;

    if (workers <= 1)
        return 1.0;
    /* The slowest step of the workers, and now and then a worker's spike. */
    tail = (1.0 - pow(1.0 - TAIL_P, workers)) * (TAIL_MEAN - 1.0);
    return exp(STEP_SIGMA * expected_max(workers)) + tail;
}

double dlb_sim_vary_window(double steps, dlb_rng_t *r)
{
    return exp(STEP_SIGMA / sqrt(steps > 1 ? steps : 1) * dlb_rng_normal(r));
}
