/* Route tables: which optimizer answers which stage, one table per optimizer
 * set. Each set lives in its own file (routes_dlrover.c, routes_dlbrain.c) so
 * a new set or a new stage is a new row, not new control flow in the router. */
#ifndef DLB_ROUTES_H
#define DLB_ROUTES_H

#include "optimizer.h"

typedef int (*dlb_opt_fn)(const dlb_opt_input_t *in, dlb_plan_t *plan);

typedef struct dlb_route {
    const char *stage;
    const char *optimizer; /* plan.optimizer */
    dlb_opt_fn run;
} dlb_route_t;

typedef struct dlb_opt_set {
    const char *name;
    /* 1 when the request must be answered by the OOM optimizer, whatever its
     * stage (an OOM named by the request or reported by a node event). */
    int (*needs_oom)(const dlb_opt_input_t *in);
    const char *oom_optimizer;
    dlb_opt_fn oom;
    const dlb_route_t *routes; /* ends with a NULL stage */
} dlb_opt_set_t;

extern const dlb_opt_set_t dlb_set_dlrover;
extern const dlb_opt_set_t dlb_set_dlbrain;

/** @brief DLRover's OOM test: the request names a pod, or (outside create) a
 *         pod of the job was ever OOMKilled. */
int dlb_needs_oom_dlrover(const dlb_opt_input_t *in);

/** @brief The dlbrain set's OOM test: the request names a pod, or (outside
 *         create) a pod's last OOM (pod, last_oom_event_id) is not answered yet
 *         in in->oom_plans. An answered OOM no longer routes every later
 *         request of the job to the OOM optimizer. */
int dlb_needs_oom_dlbrain(const dlb_opt_input_t *in);

#endif
