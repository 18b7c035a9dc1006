/* The "dlrover" optimizer set: DLRover's Brain and master, formula for
 * formula (reference sections 1 and 3), the baseline to reproduce. */
#include <string.h>

#include "routes.h"

/* An OOM needs a plan when the request names the pod, or (outside create,
 * where the job has no pods yet to speak of) when node events show a pod was
 * OOMKilled. The job state does not record which OOMs were already planned
 * for, so a pod once OOMKilled keeps routing here; the worker OOM plan starts
 * from the request at the OOM, so asking again gives the same memory rather
 * than a second bump. */
int dlb_needs_oom_dlrover(const dlb_opt_input_t *in)
{
    size_t i;

    if (in->req->has_oom_pod && in->req->oom_pod[0])
        return 1;
    if (!strcmp(in->req->stage, DLB_STAGE_CREATE))
        return 0;
    for (i = 0; i < in->job->pods_cnt; i++)
        if (in->job->pods[i].oom_count > 0)
            return 1;
    return 0;
}

/* DLRover runs worker create and PS create and merges their plans. */
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

const dlb_opt_set_t dlb_set_dlrover = {"dlrover", dlb_needs_oom_dlrover, "dlrover.oom", dlb_opt_oom,
                                       routes};
