/* The PS cost of a PS job fitted on published measurements of parameter-
 * server training (data/ps/, docs/simulator.md "PS jobs"): a step of w
 * workers and p PS takes
 *   T = T0 x (1 + beta x w / p + gamma x (w - 1)),
 * T0 the step without a PS (Optimus's synchronous speed function, Peng et
 * al. EuroSys'18, in proportion to the compute). The fit is non-negative
 * least squares on the relative error: on beta and gamma where each point
 * gives its T0 (a measured run without a remote PS), on T0 too where none
 * does. `dlbrain sim --fit-ps data/ps` prints it; sim_model.c carries the
 * constants. */
#ifndef DLB_SIM_PSFIT_H
#define DLB_SIM_PSFIT_H

#include <stddef.h>

typedef struct dlb_sim_ps_point {
    char set[32]; /* "held-out" points are scored, not fitted */
    int workers, ps;
    double step; /* s */
    double base; /* s of the same step without a PS; 0 = not measured */
} dlb_sim_ps_point_t;

typedef struct dlb_sim_ps_fit {
    double beta, gamma;
    double base;      /* the fitted T0 when the points give none, else 0 */
    double mape;      /* on the fitted points, % */
    double mape_held; /* on the held-out points, % (NaN when none) */
    size_t n_fit, n_held;
} dlb_sim_ps_fit_t;

/** @brief Read a data/ps CSV (comment lines '#'; header
 *         set,workers,ps,step_s,base_s; base_s may be empty) into *pts (a
 *         heap array the caller frees).
 *  @returns 0, DLB_ERR_NOTFOUND, DLB_ERR_INVALID (errstr names path:line),
 *           DLB_ERR_NOMEM. */
int dlb_sim_ps_points_load(const char *path, dlb_sim_ps_point_t **pts, size_t *n, char *errstr,
                           size_t errstr_size);

/** @returns the model's step for a point with T0 = base (or the fit's). */
double dlb_sim_ps_predict(const dlb_sim_ps_fit_t *f, const dlb_sim_ps_point_t *pt);

/** @brief Fit beta and gamma (and T0 when no point gives one) on the points
 *         not held out; score both sets.
 *  @returns 0, or DLB_ERR_INVALID with fewer than 3 points to fit or a
 *           mix of points with and without a base. */
int dlb_sim_ps_fit(const dlb_sim_ps_point_t *pts, size_t n, dlb_sim_ps_fit_t *out);

#endif
