/* Node failures of the simulated cluster (sim_nodes.c): a running pod's node
 * fails at a seeded rate, the pod stops and the synchronous job with it,
 * until a plan replaces the pod on another node or, without one, DLRover's
 * master relaunches it after Kubernetes' not-ready toleration. Off (rate 0)
 * by default: then nothing here draws a number or publishes an event. */
#ifndef DLB_SIM_NODES_H
#define DLB_SIM_NODES_H

#include <stdint.h>

#include "sim_job.h"

/* Kubernetes taints a NotReady node and evicts its pods after the
 * tolerationSeconds of node.kubernetes.io/not-ready (300 s by default);
 * DLRover's master relaunches a pod only once it has failed or is gone. */
#define DLB_SIM_NODE_WAIT_MS 300000

/** @brief Seed the job's node-failure stream from (seed, job index): its own
 *         stream, so the job's other numbers are those of a run without
 *         failures. */
void dlb_sim_nodes_init(dlb_sim_job_t *j, uint64_t seed, size_t i);

/** @brief One sample interval ending at now of a running job: pods whose
 *         wait is over are relaunched (a pod_phase Running event, then the
 *         restart), then each running pod's node fails with probability
 *         1 - exp(-rate x interval) (a node_not_ready event). A master that
 *         reads plans asks for one at once (job_stage_worker_running), as it
 *         does at an OOM.
 *  @returns 1 when a pod was already down before now: the job makes no
 *           progress in this interval. */
int dlb_sim_nodes_tick(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p,
                       dlb_sim_out_t *out);

/** @brief A replace action for pod: a pod whose node is down starts on
 *         another one (a pod_phase Running event); the caller's restart
 *         stall follows. @returns 1 when the pod was down, -1 when a plan
 *         replaced it at this instant already (a second plan of the same
 *         instant names the old pod, which is gone: a no-op), else 0. */
int dlb_sim_nodes_replace(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int64_t now, dlb_sim_out_t *out);

#endif
