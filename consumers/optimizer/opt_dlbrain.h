/* Helpers of the dlbrain set's own optimizers (opt_vpa.c, opt_trend.c,
 * opt_health.c, opt_model.c). Private to the optimizers. */
#ifndef DLB_OPT_DLBRAIN_H
#define DLB_OPT_DLBRAIN_H

#include <stdint.h>

#include "optimizer.h"

/** @returns in->tuning, or the defaults of the dlbrain.* keys when it is NULL
 *           (defined in opt_util.c). */
const dlb_tuning_t *dlb_opt_tuning(const dlb_opt_input_t *in);

/* How the dlbrain set grows memory (opt_vpa.c), for OOMs and for the memory
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

#endif
