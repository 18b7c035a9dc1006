/* A job's observed speed against its worker count, from history.
 *
 * The points are the median throughput (samples/s) a job showed at each
 * worker count it ran with. Between observed counts the rate is interpolated
 * linearly; outside them it follows an Amdahl curve
 *   A(w) = r1 * w / (1 + sigma * (w - 1)),  0 <= sigma <= 1
 * fitted to the points (least squares on the log of the rate), scaled so it
 * meets the nearest observed point: rate(w) = rate(edge) * A(w) / A(edge).
 * One observed count fixes no sigma: 0 is taken, per-worker throughput
 * staying that of the observed count. */
#ifndef DLB_SIM_CURVE_H
#define DLB_SIM_CURVE_H

#include <stddef.h>

#define DLB_SIM_CURVE_MAX 32

typedef struct dlb_sim_curve {
    int n;                          /* observed worker counts, 0 = no curve */
    int workers[DLB_SIM_CURVE_MAX]; /* ascending */
    double rate[DLB_SIM_CURVE_MAX]; /* median samples/s at workers[i] */
    int samples[DLB_SIM_CURVE_MAX]; /* observations behind rate[i] */
    double r1, sigma;               /* the Amdahl fit */
} dlb_sim_curve_t;

/** @brief Build a curve from observations: (workers[i], rate[i]) pairs in any
 *         order. Rates <= 0 (a stalled or restarting job) and worker counts
 *         < 1 are ignored; each worker count gets the median of its rates
 *         (the lower middle value of an even count). With more than
 *         DLB_SIM_CURVE_MAX counts, those with the most observations are kept
 *         (ties to the smaller count).
 *  @returns the number of points (0: nothing usable, c->n = 0), or -1 out
 *           of memory. */
int dlb_sim_curve_build(const int *workers, const double *rate, size_t n, dlb_sim_curve_t *c);

/** @brief Fit sigma and r1 of the Amdahl curve to c's points (done by
 *         dlb_sim_curve_build; for a curve filled by hand). Deterministic: a
 *         grid over sigma, then a golden-section search around its best. */
void dlb_sim_curve_fit(dlb_sim_curve_t *c);

/** @returns samples/s at workers (>= 1): interpolated between observed
 *           counts, extrapolated by the fit outside them; 0 for an empty
 *           curve. */
double dlb_sim_curve_rate(const dlb_sim_curve_t *c, int workers);

#endif
