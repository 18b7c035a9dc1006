/* The "dlrover" optimizer set: DLRover's Brain and master, formula for
 * formula (reference sections 1 and 3), the baseline to reproduce. */
#include <stdio.h>
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

    if (dlb_req_names_oom(in->req))
        return 1;
    if (!strcmp(in->req->stage, DLB_STAGE_CREATE))
        return 0;
    for (i = 0; i < in->job->pods_cnt; i++)
        if (in->job->pods[i].oom_count > 0)
            return 1;
    return 0;
}

/* DLRover's PS running optimizer: hot PS first, PS utilisation only when
 * hot PS planned nothing. plan->optimizer names the one that fired; when
 * neither did it stays the route's "dlrover.ps_running" and the reason holds
 * both optimizers' sentences. */
static int opt_ps_running(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    size_t groups = plan->groups_cnt, pods = plan->pods_cnt;
    int err;

    if ((err = dlb_opt_hot_ps(in, plan)))
        return err;
    if (plan->groups_cnt != groups || plan->pods_cnt != pods) {
        snprintf(plan->optimizer, sizeof(plan->optimizer), "dlrover.hot_ps");
        return 0;
    }
    if ((err = dlb_opt_ps_util(in, plan)))
        return err;
    if (plan->groups_cnt != groups || plan->pods_cnt != pods)
        snprintf(plan->optimizer, sizeof(plan->optimizer), "dlrover.ps_util");
    return 0;
}

/* The Python master asks job_stage_ps_running / job_stage_worker_running
 * where Go only knows job_stage_running (reference section 1): all three
 * are answered. */
static const dlb_route_t routes[] = {
    {DLB_STAGE_CREATE, "dlrover.create", dlb_opt_create},
    {DLB_STAGE_PS_INITIAL, "dlrover.ps_initial", dlb_opt_ps_initial},
    {DLB_STAGE_WORKER_INITIAL, "dlrover.worker_resource", dlb_opt_worker_resource},
    {DLB_STAGE_WORKER_RUNNING, "dlrover.worker_resource", dlb_opt_worker_resource},
    {DLB_STAGE_RUNNING, "dlrover.ps_running", opt_ps_running},
    {DLB_STAGE_PS_RUNNING, "dlrover.ps_running", opt_ps_running},
    {NULL, NULL, NULL},
};

const dlb_opt_set_t dlb_set_dlrover = {"dlrover", dlb_needs_oom_dlrover, "dlrover.oom", dlb_opt_oom,
                                       routes};
