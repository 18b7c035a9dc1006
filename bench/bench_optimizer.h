/* The optimizer benchmark: plans per second of the optimizer core alone
 * (dlb_router_plan, one core, no I/O) on the inputs a recording gives each of
 * its plan requests (recording.h), per optimizer set, stage and optimizer. */
#ifndef DLB_BENCH_OPTIMIZER_H
#define DLB_BENCH_OPTIMIZER_H

#include <signal.h>
#include <stdio.h>

#include <cJSON.h>

#include "conf.h"

typedef struct dlb_bench_optimizer_opts {
    const char *events;          /* the recording (JSON lines) */
    const char *only_set;        /* "dlrover" or "dlbrain"; NULL: both */
    double seconds;              /* timed seconds per set, split evenly over the stages present */
    const char *plans_path;      /* NULL, or where every request's plan goes (JSON lines) */
    FILE *out;                   /* the table */
    volatile sig_atomic_t *stop; /* NULL, or ends the run early when non-zero */
} dlb_bench_optimizer_opts_t;

/** @brief Load the recording, then for each optimizer set: plan every request
 *         once in order, as the consumer would (the OOMs a plan answers are
 *         what later requests of its job see; each plan written to plans_path
 *         with "set" added), then time dlb_router_plan and the plan's release
 *         on each stage's requests in turn. Prints a header and, per set, one
 *         row for the recording's stage mix, one per stage and one per
 *         optimizer that answered. A request the router refuses
 *         (DLB_ERR_INVALID) is warned about and left out of the timing.
 *  @param conf    window, history, limits and tuning settings
 *  @param opts    what to run
 *  @param json    NULL, or receives the results as a JSON object (the
 *                 caller's, for cJSON_Delete); NULL on error
 *  @param errstr  what went wrong, ready to log
 *  @returns 0 (also when *opts->stop ended the run early), or an error from
 *           loading the recording, planning, writing plans_path, or
 *           DLB_ERR_NOMEM. */
int dlb_bench_optimizer(const dlb_conf_t *conf, const dlb_bench_optimizer_opts_t *opts,
                        cJSON **json, char *errstr, size_t errstr_size);

#endif
