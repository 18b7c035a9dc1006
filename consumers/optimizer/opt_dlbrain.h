/* Helpers of the dlbrain set's own optimizers (opt_vpa.c, opt_trend.c,
 * opt_health.c, opt_model.c). Private to the optimizers. */
#ifndef DLB_OPT_DLBRAIN_H
#define DLB_OPT_DLBRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "optimizer.h"

/** @returns in->tuning, or the defaults of the dlbrain.* keys when it is NULL
 *           (defined in opt_util.c). */
const dlb_tuning_t *dlb_opt_tuning(const dlb_opt_input_t *in);

/* How the dlbrain set grows memory (opt_memory.c), for OOMs and for the memory
 * trend alike. */
typedef struct dlb_vpa_growth {
    int64_t vpa;    /* max(ceil(peak * 1.2), peak + 100 MiB): Kubernetes VPA's OOM bump */
    int64_t cap;    /* DLRover master's growth bound from the current memory */
    int64_t memory; /* min(vpa, cap) */
} dlb_vpa_growth_t;

/** @brief VPA growth of peak bytes, bounded like DLRover's master bounds
 *         growth from current bytes (> 0):
 *         cap = min(max(min(2 * current, 65536 MiB), current), current + 8192 MiB),
 *         i.e. at most double, at most +8 GiB, never past 64 GiB by growth,
 *         never below current. */
dlb_vpa_growth_t dlb_vpa_grow(int64_t peak, int64_t current);

/* A line through a pod's memory_used (opt_memory.c), for the memory trend and
 * the OOM answer alike. */
#define DLB_TREND_MIN_POINTS 4 /* a line through fewer says little about a trend */

typedef struct dlb_mem_trend {
    size_t n;          /* samples used: the newest run at the request */
    size_t recent;     /* > 0: the newest this many predicted (a flatter line) */
    int64_t requested; /* memory_requested in all of them */
    double last_used;  /* bytes in the newest sample */
    double slope;      /* bytes per second */
    double predicted;  /* bytes at ahead_s after the newest sample */
} dlb_mem_trend_t;

/** @brief Least-squares line of pod name's memory_used against time over the
 *         newest run of window samples that hold it at requested bytes, and
 *         its value ahead_s after the newest sample. With >= 8 points the
 *         line through the newest half is fitted too; the flatter one predicts.
 *  @returns 1, or 0 when the run does not determine a line (< 4 points, one
 *           time, or the newest sample lacks the pod at that request). */
int dlb_mem_trend_fit(const dlb_job_state_t *st, const char *name, int64_t requested,
                      double ahead_s, dlb_mem_trend_t *f);

/** @brief Seconds from the newest window sample (non-empty) to predict at:
 *         the lag to the request's time plus dlbrain.memory.horizon.seconds,
 *         cut at the job's estimated end (*remaining, -1 when unknown). */
double dlb_mem_trend_ahead(const dlb_opt_input_t *in, double *remaining);

#endif
