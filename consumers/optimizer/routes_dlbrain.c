/* The "dlbrain" optimizer set, the default: DLRover's formulas where they
 * are sound, and what DLRover-RM only describes where they are not. */
#include <string.h>

#include "routes.h"

static int opt_create(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    int err;

    if ((err = dlb_opt_worker_create(in, plan)))
        return err;
    return dlb_opt_ps_create(in, plan);
}

static const dlb_route_t routes[] = {
    {DLB_STAGE_CREATE, "dlrover.create", opt_create},
    {NULL, NULL, NULL},
};

const dlb_opt_set_t dlb_set_dlbrain = {"dlbrain", dlb_needs_oom_dlrover, "dlrover.oom", dlb_opt_oom,
                                       routes};
