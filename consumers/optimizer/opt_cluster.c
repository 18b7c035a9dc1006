/* The dlbrain set's view of the rest of the cluster in a worker plan. Its
 * job master sees one job and asks for a worker whenever the job's own curve
 * pays for it; the brain sees every job:
 *
 *  - While other jobs wait for room (created or pending), a worker is worth
 *    its cores only when it adds at least dlbrain.scale.min.gain.busy of the
 *    speed per worker, not dlbrain.scale.min.gain: low-gain workers are not
 *    added, and a job whose last worker gains little gives it back, so the
 *    cores go to the waiting jobs and the ones that gain most per core.
 *  - With dlbrain.cluster.cores, a job grows only into the cores no running
 *    job holds: a worker that cannot be placed waits Pending, and a
 *    synchronous job may wait with it.
 *
 * Measured in the simulator (docs/optimizers.md): stopping all growth while
 * jobs wait, or handing the free cores out by each job's gain per core, both
 * made mean JCT worse (1.14x and 0.87x DLRover's, against 0.65x). */
#include "opt_cluster.h"

#include <math.h>
#include <string.h>

#include "opt_util.h"

static int fresh(const dlb_opt_input_t *in, const dlb_cluster_job_t *e)
{
    const int64_t now = in->req->event_time_ms;
    const int64_t stale = (int64_t)dlb_opt_tuning(in)->cluster_stale_seconds * 1000;

    return strcmp(e->job_uid, in->req->job_uid) && e->time_ms <= now &&
           (stale <= 0 || now - e->time_ms <= stale);
}

double dlb_opt_cluster_min_gain(const dlb_opt_input_t *in, size_t *waiting)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);

    *waiting = 0;
    if (in->cluster)
        for (size_t i = 0; i < in->cluster->cnt; i++)
            *waiting += in->cluster->jobs[i].waiting && fresh(in, &in->cluster->jobs[i]);
    return *waiting && tun->scale_min_gain_busy > tun->scale_min_gain ? tun->scale_min_gain_busy
                                                                      : tun->scale_min_gain;
}

int dlb_opt_cluster_grow(const dlb_opt_input_t *in, const dlb_cluster_growth_t *g, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_cluster_view_t *v = in->cluster;
    double held = g->cores, free_cores;
    size_t running = 0;
    int add;

    if (!v || g->want <= g->current || !(tun->cluster_cores > 0) || !(g->worker_cpu > 0))
        return g->want;
    for (size_t i = 0; i < v->cnt; i++)
        if (!v->jobs[i].waiting && fresh(in, &v->jobs[i])) {
            held += v->jobs[i].cores;
            running++;
        }
    free_cores = tun->cluster_cores - held;
    add = free_cores > 0 ? (int)floor(free_cores / g->worker_cpu) : 0;
    if (g->current + add >= g->want)
        return g->want;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       " Cluster: %.0f of %.0f cores held (this job and %zu others): %d workers "
                       "fit, not %d.",
                       held, tun->cluster_cores, running, g->current + add, g->want);
    return g->current + add;
}
