/* DLRover's HTTP Brain messages <-> dlbrain (pure: no I/O).
 *
 * The protocol of DLRover's main branch (dlrover/brain/python/, the pydantic
 * models of common/http_schemas.py and common/job.py): POST /optimize with an
 * OptimizeRequest {type, config {optimizer_name, customized_config}, job
 * {uuid, cluster, namespace, user, app}}, answered 201 with an
 * OptimizeResponse {response {success, reason}, job_opt_plan {timestamp,
 * job_resource {node_group_resources, node_resources}, job_meta}}; POST
 * /job_config with a JobConfigRequest {type, job} answered with a
 * JobConfigResponse {response, job_configs {key: value}}. Every field has a
 * default there, so every field may be left out here. What the gateway
 * refuses, naming the field: a body that is not JSON (400), a field of the
 * wrong type, a field the schema does not have, a field given twice (422). */
#ifndef DLB_GW_HTTP_MAP_H
#define DLB_GW_HTTP_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "matcher.h"

typedef enum { DLB_GW_HTTP_OPTIMIZE, DLB_GW_HTTP_JOB_CONFIG } dlb_gw_http_kind_t;

/* JobMeta of the HTTP schema (not the gRPC one): every string heap-owned,
 * "" when left out. */
typedef struct dlb_gw_http_job {
    char *uuid, *cluster, *ns, *user, *app;
} dlb_gw_http_job_t;

/* An OptimizeRequest or a JobConfigRequest (no config). */
typedef struct dlb_gw_http_request {
    dlb_gw_http_kind_t kind;
    char *type;
    char *optimizer_name;
    dlb_str_entry_t *config; /* config.customized_config, in the order sent */
    size_t config_cnt;
    dlb_gw_http_job_t job;
} dlb_gw_http_request_t;

/** @brief Parse and check a request body of kind.
 *  @param status  the HTTP status of a refusal: 400 (not JSON, not an
 *                 object), 422 (a field of the wrong type, unknown, twice)
 *  @returns 0, DLB_ERR_INVALID (errstr names the field, or the line and
 *           column where the JSON breaks), DLB_ERR_NOMEM. */
int dlb_gw_http_parse(dlb_gw_http_kind_t kind, const char *body, size_t len,
                      dlb_gw_http_request_t *out, unsigned *status, char *errstr,
                      size_t errstr_size);

/** @brief Release what a request holds (zeroes it). */
void dlb_gw_http_request_clear(dlb_gw_http_request_t *r);

/** @brief The plan request an optimize becomes, through the gRPC call's own
 *         mapping (gw_map.h): type the stage, job.uuid the job,
 *         customized_config its config.
 *  @returns 0, DLB_ERR_INVALID (errstr names the field as the HTTP schema
 *           calls it: job.uuid), DLB_ERR_NOMEM. */
int dlb_gw_http_request_event(const dlb_gw_http_request_t *r, const char *event_id, int64_t now_ms,
                              dlb_event_t *ev, char *errstr, size_t errstr_size);

/** @brief The job attributes of a job_config request (user, app, cluster,
 *         namespace; the others empty).
 *  @returns 0 or DLB_ERR_INVALID (an attribute longer than a job's, named). */
int dlb_gw_http_job_meta(const dlb_gw_http_request_t *r, dlb_job_meta_t *meta, char *errstr,
                         size_t errstr_size);

/** @brief The OptimizeResponse JSON of a packed gRPC OptimizeResponse (what
 *         the gRPC call of the same request gets, dlb_gw_plan_response()):
 *         task_group_resources become node_group_resources, pod_resources
 *         node_resources, memory stays bytes, cpu cores; job_meta echoes job.
 *  @returns the JSON (free()), or NULL when out of memory or when the bytes
 *           are not an OptimizeResponse. */
char *dlb_gw_http_optimize_json(const uint8_t *packed, size_t len, const dlb_gw_http_job_t *job);

/** @brief The JobConfigResponse JSON of a match against rules version:
 *         job_configs maps each key to its value, a JSON string's text as
 *         is, any other value as its JSON text; the reason names the version
 *         and the rules in scope.
 *  @returns the JSON (free()) or NULL when out of memory. */
char *dlb_gw_http_config_json(const dlb_match_t *m, int64_t version);

/** @brief {"detail": detail}: the body of a refusal (FastAPI's shape).
 *  @returns the JSON (free()) or NULL when out of memory. */
char *dlb_gw_http_error_json(const char *detail);

#endif
