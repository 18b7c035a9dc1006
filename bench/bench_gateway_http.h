/* The HTTP Brain path of the round-trip benchmark: a libcurl multi client
 * that makes POST /optimize calls, as DLRover's HTTP client does (the whole
 * OptimizeRequest as JSON, one call per connection at a time, connections
 * kept alive), to a running `dlbrain gateway`'s gateway.http.address,
 * started on schedule (bench_path.h) and timed from the call's start to its
 * answer. A good answer is 201 with an OptimizeResponse whose
 * response.success is true; success=false (no plan in time), another status,
 * a transport error or a body that is not one counts as failed. The options
 * and failure counts are the gRPC path's (bench_gateway.h). */
#ifndef DLB_BENCH_GATEWAY_HTTP_H
#define DLB_BENCH_GATEWAY_HTTP_H

#include "bench_gateway.h"
#include "bench_path.h"

typedef struct dlb_bench_http dlb_bench_http_t;

/** @brief The OptimizeRequest JSON of one call, every field as DLRover's
 *         client sends it (model_dump): type = stage, job.uuid = job_uid
 *         (pure). @returns it (free()) or NULL when out of memory. */
char *dlb_bench_http_request(const char *stage, const char *job_uid);

/** @brief Read an OptimizeResponse JSON (pure).
 *  @returns 1 when response.success is true, 0 when false or absent, -1
 *           when the text is not an OptimizeResponse. */
int dlb_bench_http_response_success(const char *body);

/** @brief A client with every job's request made; opts->address is the
 *         base URL (http://host:port). Calls curl_global_init().
 *  @returns 0, DLB_ERR_CONF (no address) or DLB_ERR_NOMEM. */
int dlb_bench_http_new(dlb_bench_http_t **out, const dlb_bench_gw_opts_t *opts, char *errstr,
                       size_t errstr_size);

/** @brief Until one call for every job has been answered with a plan,
 *         failed calls tried again after 500 ms.
 *  @returns 0, or DLB_ERR_TRANSIENT (errstr says the last failure) when that
 *           took more than timeout_ms. */
int dlb_bench_http_warm_up(dlb_bench_http_t *h, long timeout_ms, char *errstr, size_t errstr_size);

/** @brief The path's transport for dlb_bench_path_run(). */
void dlb_bench_http_ops(dlb_bench_http_t *h, dlb_bench_path_ops_t *ops);

/** @brief The failed answers so far, by kind (status: another HTTP status
 *         or a transport error). */
dlb_bench_gw_counts_t dlb_bench_http_counts(const dlb_bench_http_t *h);

/** @brief Abort the calls in flight and release h (NULL is fine). */
void dlb_bench_http_destroy(dlb_bench_http_t *h);

#endif
