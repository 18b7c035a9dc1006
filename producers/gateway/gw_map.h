/* DLRover's Brain messages <-> dlbrain events (pure: no I/O).
 *
 * What DLRover 0.6.1 really sends and reads, which the proto's comments do
 * not always say, is in docs/gateway.md: memory is bytes both ways, a job is
 * known by its uid alone, OOM pods come in jobs[0].state.pods. */
#ifndef DLB_GW_MAP_H
#define DLB_GW_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "brain.pb-c.h"
#include "event.h"

/* What DLRover's master and client fill in that dlbrain does not keep. */
#define DLB_GW_DATA_STORE "base_datastore"

/** @brief The event one persist_metrics message becomes (a job event or a
 *         runtime sample), keyed by job_meta.uuid, validated.
 *  @param scenario the similar-job key given to every gateway job (see
 *         docs/gateway.md: DLRover's Go Brain groups all jobs as one)
 *  @returns 0, or DLB_ERR_INVALID with errstr naming the field. */
int dlb_gw_metrics_event(const Brain__JobMetrics *m, const char *event_id, int64_t now_ms,
                         const char *scenario, dlb_event_t *ev, char *errstr, size_t errstr_size);

/** @brief The plan request an optimize call becomes: type is the stage,
 *         jobs[0].uid the job, jobs[0].state.pods[*].is_oom the OOM pods.
 *  @returns 0, or DLB_ERR_INVALID with errstr naming the field. */
int dlb_gw_request_event(const Brain__OptimizeRequest *r, const char *event_id, int64_t now_ms,
                         dlb_event_t *ev, char *errstr, size_t errstr_size);

/** @brief The packed OptimizeResponse answering req: plan's groups and pods
 *         in DLRover's units (memory bytes, cpu cores), or success=false
 *         with reason when plan is NULL. The caller frees *out.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_gw_plan_response(const dlb_plan_request_t *req, const dlb_plan_t *plan, const char *reason,
                         uint8_t **out, size_t *out_len, char *errstr, size_t errstr_size);

/** @brief Where in DLRover's message a field of the event it became came
 *         from, so a refusal names what DLRover sent: path is the event's
 *         field path as a check names it ("job_uid", "workflow.job_name",
 *         "pods[2].pod_ip", "event_time_ms"), read up to its first ':' or
 *         ' '. @returns e.g. "job_meta.uuid", "workflow_feature",
 *         "runtime_info.running_pods", "jobs[0].uid"; NULL when the field is
 *         none DLRover sends. */
const char *dlb_gw_event_field_source(dlb_event_type_t type, const char *path);

/** @brief A JobOptimization as the JSON text DLRover's Go Brain stored:
 *         snake_case names, zero values left out. @returns it (free()) or
 *         NULL when out of memory. */
char *dlb_gw_optimization_json(const Brain__JobOptimization *jo);

#endif
