/* Node failures of the simulated cluster (sim_nodes.h).
 *
 * A running pod's node fails at --node-failures per pod-hour (a Poisson
 * rate, drawn once per pod per sample interval from the job's own node
 * stream). The pod stops; a synchronous job stops with it. Two ways back:
 * - a plan's replace action: the pod starts on another node at once and the
 *   job restarts (the usual restart stall);
 * - none: Kubernetes evicts the pod after the node's not-ready toleration
 *   and DLRover's master relaunches it (params->node_wait_ms, 300 s), then
 *   the restart.
 * Node names are drawn as sim_job.c draws them; the simulator places no
 * two pods of a job on one node knowingly. */
#include "sim_nodes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "event.h"

void dlb_sim_nodes_init(dlb_sim_job_t *j, uint64_t seed, size_t i)
{
    /* Another constant than the job's own stream's, so the two differ. */
    j->node_rng.s = seed ^ ((uint64_t)i + 1) * 0xd1b54a32d192ed03ULL ^ 0x6e6f646573ULL;
    dlb_rng_next(&j->node_rng);
}

static void event(dlb_sim_job_t *j, int64_t now, const dlb_sim_pod_t *pod, const char *kind,
                  const char *phase, const char *reason, dlb_sim_out_t *out)
{
    dlb_event_t ev = {.type = DLB_EV_NODE};
    dlb_node_event_t *e = &ev.u.node;

    dlb_sim_job_event_id(j, e->event_id);
    e->event_time_ms = now;
    snprintf(e->job_uid, sizeof(e->job_uid), "%s", j->uid);
    snprintf(e->kind, sizeof(e->kind), "%s", kind);
    snprintf(e->pod_name, sizeof(e->pod_name), "%s", pod->name);
    snprintf(e->pod_type, sizeof(e->pod_type), "%s", pod->ps ? "ps" : "worker");
    e->pod_index = pod->index;
    snprintf(e->node_name, sizeof(e->node_name), "sim-node-%03d",
             (int)(dlb_rng_next(&j->node_rng) % 500));
    e->has_phase = 1;
    snprintf(e->phase, sizeof(e->phase), "%s", phase);
    snprintf(e->reason, sizeof(e->reason), "%s", reason);
    e->has_memory_requested = 1;
    e->memory_requested = pod->mem_req;
    e->has_cpu_requested = 1;
    e->cpu_requested = pod->cpu_req;
    out->node_events++;
    dlb_sim_job_publish(out, &ev);
}

/* The pod runs again at now (replaced or relaunched). */
static void back(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int64_t now, const char *reason,
                 dlb_sim_out_t *out)
{
    j->node_down_ms += now - pod->down_ms;
    pod->down_ms = 0;
    event(j, now, pod, "pod_phase", "Running", reason, out);
}

/* One pod: relaunched when its wait is over; else, when up, maybe its node
 * fails. @returns 1 when it was down before now and still is. */
static int pod_tick(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int64_t now, const dlb_sim_params_t *p,
                    double fail_p, int *failed, dlb_sim_out_t *out)
{
    if (pod->down_ms) {
        if (now < pod->down_ms + p->node_wait_ms)
            return 1;
        back(j, pod, now, "Relaunched", out);
        j->node_relaunched++;
        if (j->stall_until_ms < now + p->restart_ms)
            j->stall_until_ms = now + p->restart_ms;
        return 0;
    }
    if (dlb_rng_unit(&j->node_rng) >= fail_p)
        return 0;
    pod->down_ms = now;
    j->node_failures++;
    *failed = 1;
    event(j, now, pod, "node_not_ready", "NotReady", "NodeNotReady", out);
    return 0;
}

int dlb_sim_nodes_tick(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p, dlb_sim_out_t *out)
{
    double fail_p;
    int down = 0, failed = 0;

    if (p->node_fail_per_hour <= 0)
        return 0;
    fail_p = 1.0 - exp(-p->node_fail_per_hour * (double)p->sample_ms / 3.6e6);
    for (int k = 0; k < j->ps_cnt; k++)
        down |= pod_tick(j, &j->ps[k], now, p, fail_p, &failed, out);
    for (int k = 0; k < j->wk_cnt; k++)
        down |= pod_tick(j, &j->wk[k], now, p, fail_p, &failed, out);
    /* A master that reads plans asks at once, as it asks at an OOM. */
    if (failed)
        dlb_sim_job_ask(j, now, DLB_STAGE_WORKER_RUNNING, out);
    return down;
}

int dlb_sim_nodes_replace(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int64_t now, dlb_sim_out_t *out)
{
    if (!pod->down_ms)
        return pod->replaced_ms && pod->replaced_ms == now ? -1 : 0;
    back(j, pod, now, "Replaced", out);
    pod->replaced_ms = now;
    j->node_replaced++;
    return 1;
}
