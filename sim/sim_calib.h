/* The calibration check: the simulator's none arm (users' own requests, no
 * brain) on the Pollux workloads, its figures beside the production
 * figures of data/production/targets.csv, each held in its band
 * (docs/simulator.md, "Calibration"). */
#ifndef DLB_SIM_CALIB_H
#define DLB_SIM_CALIB_H

#include <stddef.h>
#include <stdio.h>

#include "sim_run.h"

typedef struct dlb_sim_target {
    char figure[32];
    double low, high;           /* the band the simulated figure must be in */
    double prod_low, prod_high; /* the production figure, a range */
    char source[32];            /* its row in data/production/README.md */
} dlb_sim_target_t;

/** @brief Read a targets CSV (lines starting with '#' are comments; the
 *         header figure,low,high,prod_low,prod_high,source).
 *  @returns 0, DLB_ERR_NOTFOUND, DLB_ERR_INVALID (errstr names path:line,
 *           also an unknown figure), DLB_ERR_NOMEM. *out is a heap array. */
int dlb_sim_targets_load(const char *path, dlb_sim_target_t **out, size_t *n, char *errstr,
                         size_t errstr_size);

/** @brief A figure of a summary by its name (worker_cpu_util, ...,
 *         pods_oom_killed_share, completion_rate).
 *  @returns 0 and *v, or DLB_ERR_NOTFOUND for an unknown name. */
int dlb_sim_summary_figure(const dlb_sim_summary_t *s, const char *figure, double *v);

/** @brief Run the none arm on data_dir/pollux/workloads/workload-1..4.csv
 *         (the first `jobs` jobs of each) with seeds 1..3 and base's other
 *         options, print each run's figures and then each target's mean
 *         beside production and its band, as Markdown, to fp.
 *  @param in_band  set to 1 when every target's mean is in its band
 *  @returns 0, or an error reading the data or running (errstr says). */
int dlb_sim_calibrate(const dlb_sim_opts_t *base, const char *data_dir, size_t jobs, FILE *fp,
                      int *in_band, char *errstr, size_t errstr_size);

#endif
