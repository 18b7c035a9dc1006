/* OOM helpers shared by DLRover's OOM optimizer (opt_oom.c, "dlrover.oom")
 * and the dlbrain set's idempotent VPA one (opt_vpa.c, "dlbrain.oom"), and by
 * the dlbrain router test (routes_dlbrain.c). Private to the optimizers. */
#ifndef DLB_OPT_OOM_H
#define DLB_OPT_OOM_H

#include <stddef.h>
#include <stdint.h>

#include "optimizer.h"

/* The OOM a plan answers: which pod, of which type, reported by which event. */
typedef struct dlb_oom_target {
    const char *name;               /* the OOM pod */
    const dlb_pod_status_t *st_pod; /* its node-event status, NULL if none */
    char type[16];                  /* worker ps chief evaluator */
    const char *event;              /* its last OOM event id, "" if unknown */
} dlb_oom_target_t;

/* Answers one OOM: adds to plan and in->answered. */
typedef int (*dlb_oom_one_fn)(const dlb_opt_input_t *in, dlb_plan_t *plan,
                              const dlb_oom_target_t *t);

/** @brief Answer the OOMs of the request with one(), each in turn: every pod
 *         the request names (oom_pod and plan_request v2's oom_pods, each once,
 *         in name order, so the plan does not depend on the order a writer
 *         listed them in), else the job's newest OOMKilled pod (ties to the
 *         smaller name). With skip_answered, pods whose last OOM is already in
 *         in->oom_plans are passed over while an unanswered one exists. The
 *         type comes from the node events, else the newest runtime sample,
 *         else the pod name ("<job>-<type>-<n>"); a pod of no known type is
 *         left out with a sentence on plan->reason saying so, as is a job
 *         with no OOM.
 *  @returns 0, one()'s error or DLB_ERR_NOMEM. */
int dlb_oom_each(const dlb_opt_input_t *in, int skip_answered, dlb_oom_one_fn one,
                 dlb_plan_t *plan);

/** @returns the earlier answer to (pod, OOM event) in in->oom_plans (the newest
 *           when several), or NULL; never matches an empty event id. */
const dlb_oom_plan_t *dlb_oom_find_answer(const dlb_opt_input_t *in, const char *pod,
                                          const char *event);

/** @returns the pod in the newest window sample that has it, or NULL. */
const dlb_pod_usage_t *dlb_oom_window_pod(const dlb_job_state_t *st, const char *name);

/** @brief Max over history pods of type of their last memory_used, x 1.2 for
 *         pods OOMKilled in that job; pods counts the pods seen.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_oom_history_memory(const dlb_history_t *h, const char *type, int64_t *max_mem,
                           size_t *pods);

/** @brief memory for the pod, and for the group (when group is not NULL): the
 *         largest any OOM pod of the group got, when a plan answers several.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_oom_set_memory(dlb_plan_t *plan, const char *group, const char *pod, int64_t memory);

/** @brief Add the answer to in->answered (when not NULL and the OOM event is
 *         known): pod, event, memory (0 = kept), and the plan's id and time.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_oom_answer(const dlb_opt_input_t *in, const dlb_plan_t *plan, const dlb_oom_target_t *t,
                   int64_t memory);

#endif
