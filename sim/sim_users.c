/* Users' requests (sim_users.h). */
#include "sim_users.h"

#include <math.h>

/* The calibration: medians fitted so that the simulator's none arm (no
 * brain, users' requests alone) shows DLRover's published utilisation
 * without DLRover (its docs/figures/dlrover_rm/trend.png: worker CPU
 * 0.20-0.22, memory 0.14-0.17; PS CPU 0.14-0.16, memory 0.12-0.15; see
 * `dlbrain sim --calibration`), and the shares of requests below the need
 * from Alibaba PAI's GPU trace of 2020 (requests under use for CPU in
 * 15.54% of tasks and for memory in 4.12%, its analysis notebook). Both
 * are in data/production/. The medians were fitted by damped fixed-point
 * steps (median x (simulated / production)^0.6, from 4, 6, 5, 6 until they
 * no longer moved) on the 12 runs of `dlbrain sim --calibration data`, to
 * the middle of each production range. */
static const double MEDIAN[DLB_SIM_RES_N] = {1.94, 4.47, 2.48, 4.62};
static const double UNDER[DLB_SIM_RES_N] = {0.1554, 0.0412, 0.1554, 0.0412};

void dlb_sim_users_init(dlb_sim_users_t *u)
{
    for (int i = 0; i < DLB_SIM_RES_N; i++) {
        u->median[i] = MEDIAN[i];
        u->under[i] = UNDER[i];
    }
    u->oversize = 1.0;
}

double dlb_rng_normal(dlb_rng_t *r)
{
    /* 1 - unit is in (0, 1]: log never sees 0. */
    double u1 = 1.0 - dlb_rng_unit(r), u2 = dlb_rng_unit(r);

    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* z with Phi(z) = p, by bisection on erfc: exact enough, and only a few
 * dozen steps per job. */
static double normal_quantile(double p)
{
    double lo = -10, hi = 10;

    for (int i = 0; i < 80; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / M_SQRT2) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

double dlb_sim_users_ratio(const dlb_sim_users_t *u, int res, dlb_rng_t *r)
{
    double mu = log(u->median[res]), z = normal_quantile(1.0 - u->under[res]);
    double sigma = mu > 0 && z > 0 ? mu / z : 0;

    return exp(u->oversize * (mu + sigma * dlb_rng_normal(r)));
}
