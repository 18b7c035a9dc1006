/* The job simulator's speed and memory model.
 *
 * Step time follows Pollux (Qiao et al., OSDI'21), fitted per model on the
 * measurements in data/pollux/<model> (data/README.md):
 *   T_step = (T_compute^g + T_network^g)^(1/g)
 *   T_compute = a + b * local_bsz
 *   T_network = 0 for one replica, ar + br * replicas on one node,
 *               an + bn * replicas across nodes.
 * A simulated PS job uses the across-node terms (its workers always talk to PS
 * on other pods) and stretches them when the PS run out of CPU; memory needs
 * and CPU demands per pod are modelled on top (sim_model.c says how). */
#ifndef DLB_SIM_MODEL_H
#define DLB_SIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sim_curve.h"

/* ---- a seeded PRNG the same on every platform --------------------------- */
typedef struct dlb_rng {
    uint64_t s;
} dlb_rng_t;

/** @returns the next 64 bits of splitmix64. */
uint64_t dlb_rng_next(dlb_rng_t *r);
/** @returns a uniform double in [0, 1). */
double dlb_rng_unit(dlb_rng_t *r);
/** @returns a uniform double in [lo, hi). */
double dlb_rng_range(dlb_rng_t *r, double lo, double hi);

/* ---- the Pollux fit ----------------------------------------------------- */
typedef struct dlb_sim_fit {
    double a, b;   /* compute: s, s per sample of the local batch */
    double ar, br; /* network, every replica on one node: s, s per replica */
    double an, bn; /* network across nodes: s, s per replica */
    double g;      /* overlap of compute and network, >= 1 */
} dlb_sim_fit_t;

/* One measurement: replicas on nodes, each with a local batch, one step time. */
typedef struct dlb_sim_point {
    int nodes, replicas;
    double local_bsz;
    double step_time; /* s */
} dlb_sim_point_t;

/** @returns T_step in seconds of the fitted model. */
double dlb_sim_step_time(const dlb_sim_fit_t *f, int nodes, int replicas, double local_bsz);

/** @brief Read a Pollux placements.csv (placement,local_bsz,step_time,...; the
 *         placement's digits are GPUs per node) or scalability.csv
 *         (num_nodes,num_replicas,local_bsz,step_time,...) and append its
 *         rows to *pts (a heap array the caller frees).
 *  @returns 0, DLB_ERR_NOTFOUND (cannot open), DLB_ERR_INVALID (bad header or
 *           row, errstr names path:line), DLB_ERR_NOMEM. */
int dlb_sim_points_load(const char *path, dlb_sim_point_t **pts, size_t *n, char *errstr,
                        size_t errstr_size);

/** @returns the mean absolute percentage error of f on pts, in percent. */
double dlb_sim_mape(const dlb_sim_fit_t *f, const dlb_sim_point_t *pts, size_t n);

/** @brief Fit the model to pts: Nelder-Mead on the log of each parameter
 *         (they stay positive, g stays >= 1) minimising the mean squared log
 *         error, several restarts from the best point. Deterministic.
 *  @returns 0, or DLB_ERR_INVALID with fewer than 8 points. */
int dlb_sim_fit_points(const dlb_sim_point_t *pts, size_t n, dlb_sim_fit_t *out);

/* How well the model fits one model's measurements, and how well it predicts
 * the half it was not fitted on. */
typedef struct dlb_sim_fit_report {
    dlb_sim_fit_t fit;       /* on placements and scalability together */
    double mape;             /* of fit on every point, % */
    double mape_p_to_s;      /* fitted on placements, scored on scalability, % */
    double mape_s_to_p;      /* fitted on scalability, scored on placements, % */
    size_t n_place, n_scale; /* points of each file */
} dlb_sim_fit_report_t;

/** @brief Three fits of one model: on all points, on placements only (scored
 *         on scalability) and on scalability only (scored on placements).
 *  @param place points of placements.csv (1..4 nodes, up to 16 replicas)
 *  @param scale points of scalability.csv (6..16 nodes, up to 64 replicas)
 *  @returns 0, or DLB_ERR_INVALID when either set has fewer than 8 points,
 *           DLB_ERR_NOMEM. */
int dlb_sim_fit_report(const dlb_sim_point_t *place, size_t n_place, const dlb_sim_point_t *scale,
                       size_t n_scale, dlb_sim_fit_report_t *out);

/* ---- model profiles ----------------------------------------------------- */
typedef struct dlb_sim_profile {
    const char *name;          /* model name as workloads spell it */
    dlb_sim_fit_t fit;         /* fitted on data/pollux/<name> */
    int64_t dataset_size;      /* samples of one epoch, unless the workload says */
    int epochs;                /* unless the workload says */
    double worker_cpu;         /* cores a worker keeps busy at full speed */
    double ps_cpu_per_ksample; /* from history only: PS cores per 1000 samples/s */
    double ps_cpu_base;        /* PS cores of the whole job at no load */
    /* A PS job's step: compute x (1 + ps_beta x w x busiest PS's share +
     * ps_gamma x (w - 1)), fitted on published PS measurements
     * (sim_model.c, PS_DENSE and PS_EMBEDDING). */
    double ps_beta, ps_gamma;
    int64_t wk_mem_base;       /* bytes: framework, model replica */
    int64_t wk_mem_per_sample; /* bytes per sample of the local batch (activations) */
    int64_t wk_mem_growth;     /* bytes gained over the first 30% of the job (caches) */
    int64_t ps_mem_base;       /* bytes of variables over all PS */
    int64_t ps_mem_growth;     /* bytes the variables grow by over the job (new embedding ids) */
    /* What the job tells the optimizers about its model (job_event.model). */
    int64_t variable_count, op_count, recv_op_count, flops, embedding_dimension;
    /* A job from history (sim_history.h): its observed samples/s per worker
     * count replaces the fit's T_step; NULL for the measured profiles. */
    const dlb_sim_curve_t *observed;
} dlb_sim_profile_t;

/* Every profile's speed is fitted on its own measurements. A model without
 * measurements runs only when the workload names the profile it borrows:
 * "MODEL@PROFILE" (gpt-7@bert is a gpt-7 job at BERT's speed, memory and PS
 * load). */
#define DLB_SIM_PROFILE_SEP '@'

/** @returns the profile of a model name, case-insensitive: NAME, or the
 *           PROFILE of NAME@PROFILE. Anything else gets the cifar10 profile and
 *           *known = 0; dlb_sim_profile_check refuses such names first. */
const dlb_sim_profile_t *dlb_sim_profile_find(const char *model, int *known);

/** @brief Whether a workload's model name may run: a measured model, or
 *         NAME@PROFILE with PROFILE measured.
 *  @returns 0, or DLB_ERR_INVALID with errstr saying why and how to name a
 *           profile. */
int dlb_sim_profile_check(const char *model, char *errstr, size_t errstr_size);

/** @returns the NULL-terminated list of profiles. */
const dlb_sim_profile_t *dlb_sim_profiles(size_t *n);

/* ---- a PS job's speed ----------------------------------------------------- */
#define DLB_SIM_MAX_PS 64

typedef struct dlb_sim_speed_in {
    const dlb_sim_profile_t *prof;
    int workers;
    double local_bsz;
    double worker_cpu_req;    /* cores each worker has */
    double slowest;           /* slowdown factor of the slowest worker, >= 1 */
    int ps;                   /* PS count, >= 1 */
    const double *ps_share;   /* share of the variables on each PS, summing to 1 */
    const double *ps_cpu_req; /* cores of each PS */
} dlb_sim_speed_in_t;

typedef struct dlb_sim_speed {
    double step_time;     /* s of one synchronous step */
    double samples_per_s; /* of the whole job */
    double t_compute;     /* s, of a worker at normal speed */
    double ps_load;       /* max over PS of demand / CPU; > 1 = the PS slow the step */
    double ps_demand;     /* cores all PS would use at this speed */
} dlb_sim_speed_t;

/* GPUs (replicas) per node of Pollux's testbed, where all-reduce jobs were
 * measured: 16 AWS g4dn.12xlarge nodes with 4 T4 GPUs each (its
 * scalability.csv runs 64 replicas on 16 nodes). An all-reduce job's
 * replicas are packed onto nodes this size. */
#define DLB_SIM_NODE_GPUS 4

/** @brief The speed of a job (ps = 0: all-reduce; else a PS job): Pollux's step time with the
 * across-node network term, a worker starved of CPU computing need/request slower, the slowest
 * worker setting the compute time, and the network term multiplied by the load of the busiest PS
 * when above 1. A profile with an observed curve takes its step time from the curve instead
 * (workers x local_bsz / rate(workers)); CPU starvation and the slowest worker then stretch the
 * whole step (history has no split into compute and network), and the PS cap applies as above. */
void dlb_sim_speed(const dlb_sim_speed_in_t *in, dlb_sim_speed_t *out);

/** @brief The PS cost constants sim_model.c carries for a family of
 *         models ("dense" or "embedding", data/ps/<family>.csv).
 *  @returns 0, or DLB_ERR_NOTFOUND for another name. */
int dlb_sim_ps_constants(const char *family, double *beta, double *gamma);

/** @brief The speed of one job given as "MODEL:WORKERS:PS:LOCAL_BSZ" (PS 0:
 *         all-reduce), each pod with the CPU it keeps busy and the PS load
 *         spread evenly: the speed model as a what-if.
 *  @returns 0, or DLB_ERR_INVALID with errstr naming the part that is
 *           wrong (a model without measurements, zero workers, a batch of
 *           0, a malformed spec). */
int dlb_sim_predict(const char *spec, dlb_sim_speed_t *out, char *errstr, size_t errstr_size);

#endif
