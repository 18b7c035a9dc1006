/* What users ask for: each job's requested CPU and memory per role, drawn
 * around what the job needs, calibrated on published production figures
 * (data/production/README.md, docs/simulator.md "Users' requests").
 *
 * A request is need x R, ln R ~ Normal(ln median, sigma), one draw per job
 * and resource (a group's pods share their request, as a job spec gives
 * them). sigma is set by the share of requests below the need:
 *   P(R < 1) = Phi(-ln median / sigma)  =>  sigma = ln median / z(1 - under).
 * The knob `oversize` scales ln R: 1 is production, 0.5 asks the square
 * root of production's over-request, 0 asks exactly the need; the share of
 * requests below the need does not change with it. */
#ifndef DLB_SIM_USERS_H
#define DLB_SIM_USERS_H

#include "sim_model.h"

/* The resources a user sizes, in the order of the tables below. */
enum { DLB_SIM_RES_WK_CPU = 0, DLB_SIM_RES_WK_MEM, DLB_SIM_RES_PS_CPU, DLB_SIM_RES_PS_MEM };
#define DLB_SIM_RES_N 4

typedef struct dlb_sim_users {
    double median[DLB_SIM_RES_N]; /* median request / need */
    double under[DLB_SIM_RES_N];  /* share of requests below the need, (0, 0.5) */
    double oversize;              /* scales ln R; 1 = production */
} dlb_sim_users_t;

/** @brief The production calibration (the constants' sources are in
 *         sim_users.c and docs/simulator.md). */
void dlb_sim_users_init(dlb_sim_users_t *u);

/** @returns one draw of R for resource res from r. */
double dlb_sim_users_ratio(const dlb_sim_users_t *u, int res, dlb_rng_t *r);

/** @returns a standard normal draw (Box-Muller on two uniforms of r). */
double dlb_rng_normal(dlb_rng_t *r);

#endif
