/* Optimizers: pure functions from (request, job state, history, settings) to a plan.
 *
 * No I/O in here: the consumer loads the inputs, calls dlb_router_plan(), and
 * writes the result. Same inputs, same plan, byte for byte (no clocks, no
 * randomness: "now" is the request's event time). */
#ifndef DLB_OPTIMIZER_H
#define DLB_OPTIMIZER_H

#include <stddef.h>

#include "cluster.h"
#include "conf.h"
#include "event.h"
#include "state.h"

/* The OOMs a plan answers, one row each for table oom_plans (an OOM
 * optimizer's out): a request naming several OOM pods gets several. */
typedef struct dlb_oom_answers {
    dlb_oom_plan_t *items; /* malloc'ed; the caller frees it */
    size_t cnt;
} dlb_oom_answers_t;

typedef struct dlb_opt_input {
    const dlb_plan_request_t *req;
    const dlb_job_state_t *job;   /* never NULL; may be empty */
    const dlb_history_t *history; /* similar jobs, never NULL; may be empty */
    const dlb_limits_t *limits;   /* master-side clamp, applied last */
    const dlb_tuning_t *tuning;   /* knobs of the dlbrain set; NULL = defaults */
    /* OOMs of this job already answered by earlier plans (event time before
     * the request's), oldest first; may be NULL when oom_plans_cnt is 0. */
    const dlb_oom_plan_t *oom_plans;
    size_t oom_plans_cnt;
    const char *optimizer_set; /* "dlrover" or "dlbrain" */
    /* Out, may be NULL: an OOM optimizer adds a row per OOM it answers
     * (pod_name, oom_event_id, memory, and the plan's id and time); the
     * consumer stores them (table oom_plans) with the plan, in the same
     * PostgreSQL transaction. */
    dlb_oom_answers_t *answered;
    /* The other jobs of the cluster as the consumer read them (the dlbrain
     * set's running stages, dlb_opt_needs()); NULL = not known. */
    const dlb_cluster_view_t *cluster;
    /* Out, may be NULL: the worker model's entry for this job (cores, growth
     * asked, its value per core), for the consumer to publish; left with
     * time_ms 0 when the model did not answer. */
    dlb_cluster_job_t *cluster_out;
} dlb_opt_input_t;

/** @returns 1 when the request names an OOM pod: oom_pod, or any of
 *           plan_request v2's oom_pods. */
int dlb_req_names_oom(const dlb_plan_request_t *req);

/** @brief Pick the optimizer(s) for the request's stage and the job's state, run
 *         them, clamp to limits, and fill plan: plan_id / event_id =
 *         dlb_plan_id(req), event_time_ms = req->event_time_ms, job_uid, stage,
 *         trigger_event_id, optimizer, reason, groups, pods.
 *         A stage with nothing to change yields a plan with no groups and no
 *         pods and a reason saying why, so a master always gets an answer.
 *  @returns 0, DLB_ERR_INVALID (unknown stage or optimizer set), DLB_ERR_NOMEM. */
int dlb_router_plan(const dlb_opt_input_t *in, dlb_plan_t *plan, char *errstr, size_t errstr_size);

/** @returns 1 when the job has an OOM: the request names an OOM'd pod, or a pod
 *           of the job state was OOMKilled. Only such a job has answered OOMs. */
int dlb_opt_job_has_oom(const dlb_plan_request_t *req, const dlb_job_state_t *st);

/* What a request's plan reads besides the job itself, said once per
 * request (dlb_opt_needs) so the caller loads exactly that, then plans. */
typedef struct dlb_opt_needs {
    /* Similar jobs' history (a PostgreSQL query): a create request, any
     * request of a job with an OOM, and with the dlbrain set every later
     * stage: worker memory never goes below what completed workers of the
     * scenario peaked at, and the PS count learns the PS term from earlier
     * jobs (opt_model.c). */
    int history;
    /* The job's earlier answers (table oom_plans): the job has an OOM, or
     * with the dlbrain set a pod has a node failure (its replace is
     * recorded there, memory 0). */
    int answers;
    /* The rest of the cluster (dlb_opt_input_t.cluster, and cluster_out to
     * publish): the dlbrain set's worker stages and _ps_initial, where
     * workers and PS grow only into room no waiting job needs. */
    int cluster;
} dlb_opt_needs_t;

/** @returns what the request's plan reads, for the optimizer set. */
dlb_opt_needs_t dlb_opt_needs(const char *optimizer_set, const dlb_plan_request_t *req,
                              const dlb_job_state_t *st);

/** @brief Clamp every group and pod resource of a plan to the limits
 *         (0 = "keep" stays 0). Appends what was clamped to the reason. */
void dlb_limits_apply(const dlb_limits_t *limits, dlb_plan_t *plan);

/* The individual optimizers, exposed for table-driven tests. Each appends its
 * groups/pods to plan and a sentence to plan->reason; returns 0 or an error. */

/** DLRover PS create from similar history; cold start 4 PS x 12 CPU x 16 GiB. */
int dlb_opt_ps_create(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** DLRover worker create from completed history jobs. */
int dlb_opt_worker_create(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** DLRover's create stage: worker create and PS create, merged into one plan. */
int dlb_opt_create(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** OOM memory plan for each pod the request names (or the job's newest OOM pod). */
int dlb_opt_oom(const dlb_opt_input_t *in, dlb_plan_t *plan);

/* DLRover's running-stage optimizers (issue 4 parity, reference section 3).
 * Each leaves the plan unchanged (no groups, no pods) when its rule does not
 * fire, and always says in the reason what it saw. A route function may
 * overwrite plan->optimizer with the name of the optimizer that fired. */

/** PS init-adjust (job_stage_ps_initial). */
int dlb_opt_ps_initial(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** Hot PS: per-pod CPU for CPU-hot PS, +8 GiB for memory-hot PS. */
int dlb_opt_hot_ps(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** PS utilisation shrink. */
int dlb_opt_ps_util(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** Worker resource: count by PS utilisation, speed trend and phase; CPU and memory. */
int dlb_opt_worker_resource(const dlb_opt_input_t *in, dlb_plan_t *plan);

/* The dlbrain set's own optimizers (issue 4, "beyond DLRover"). */

/** OOM answered once per OOM event, VPA growth within DLRover's caps. */
int dlb_opt_oom_vpa(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** Memory raised before the OOM when a pod's usage trend will pass its request. */
int dlb_opt_memory_trend(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** @brief dlbrain set: a plan's PS group memory becomes the busiest PS's
 *         memory extrapolated to the job's end, spread over the group's PS
 *         count, times 1 + dlbrain.ps.memory.headroom (opt_ps_size.c). A
 *         plan without a PS group, or a job without samples, is left as is. */
int dlb_opt_ps_memory_end(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** The dlbrain set's PS CPU for the plan's PS count: the busiest PS's mean CPU
 *  over the newest samples, spread over the new count, + 4 cores (DLRover's PS
 *  utilisation margin); only a cut of what is asked (opt_ps_size.c). */
int dlb_opt_ps_cpu_split(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** Node failures: replace the pods evicted, preempted, without a heartbeat or
 *  on a failed node, each (pod, failure event) once. */
int dlb_opt_node_failures(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** Hang (relaunch) and straggler (replace) actions. */
int dlb_opt_health(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** Worker count from a per-job NNLS throughput model; DLRover's rule when it cannot fit. */
int dlb_opt_worker_model(const dlb_opt_input_t *in, dlb_plan_t *plan);
/** PS count from the same model (its b/p term): a PS must pay for its cores as a
 *  worker must; the scenario's earlier jobs give b/a when the job never changed its PS
 *  count; with neither, a job whose step time is dlbrain.ps.probe.share or more
 *  beyond what workers reduce doubles its PS count to measure it. Sets the plan's PS
 *  group count (creating the group) or leaves it. */
int dlb_opt_ps_model(const dlb_opt_input_t *in, dlb_plan_t *plan);

#endif
