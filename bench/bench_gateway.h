/* The gateway path of the round-trip benchmark: a gRPC client (gRPC's C
 * core, one channel, one completion queue) that makes brain.Brain `optimize`
 * calls, as a DLRover master does, to a running `dlbrain gateway`, started on
 * schedule (bench_path.h) and timed from the call's start to its answer. A
 * good answer is status OK with an OptimizeResponse whose response.success
 * is true; success=false (no plan in time), another status or a message
 * that does not parse counts as failed. */
#ifndef DLB_BENCH_GATEWAY_H
#define DLB_BENCH_GATEWAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_path.h"

typedef struct dlb_bench_gw_opts {
    const char *address; /* host:port of the gateway */
    const char *stage;   /* OptimizeRequest.type */
    long jobs;           /* request i asks for job i % jobs */
    /* job's uid (OptimizeRequest.jobs[0].uid) into buf */
    void (*job_uid)(const void *ctx, long job, char *buf, size_t size);
    const void *ctx;
    long deadline_ms;            /* each call's deadline */
    volatile sig_atomic_t *stop; /* NULL, or ends a wait early when non-zero */
} dlb_bench_gw_opts_t;

/* Failed answers by kind. */
typedef struct dlb_bench_gw_counts {
    long no_plan;   /* status OK, response.success false */
    long status;    /* another status (DEADLINE_EXCEEDED, UNAVAILABLE, ...) */
    long malformed; /* status OK, no message or not an OptimizeResponse */
} dlb_bench_gw_counts_t;

typedef struct dlb_bench_gw dlb_bench_gw_t;

/** @brief The packed OptimizeRequest of one call: type = stage, one job with
 *         uid = job_uid (pure).
 *  @param out  malloc'd bytes, the caller's
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_bench_gw_pack_request(const char *stage, const char *job_uid, uint8_t **out, size_t *len,
                              char *errstr, size_t errstr_size);

/** @brief Read a packed OptimizeResponse (pure).
 *  @returns 1 when response.success is true, 0 when it is false or absent,
 *           -1 when the bytes are not an OptimizeResponse. */
int dlb_bench_gw_response_success(const uint8_t *data, size_t len);

/** @brief A client with every job's request packed and a channel to
 *         opts->address (gRPC connects on the first call). Calls
 *         grpc_init(); dlb_bench_gw_destroy() calls grpc_shutdown().
 *  @returns 0, DLB_ERR_CONF (no address) or DLB_ERR_NOMEM. */
int dlb_bench_gw_new(dlb_bench_gw_t **out, const dlb_bench_gw_opts_t *opts, char *errstr,
                     size_t errstr_size);

/** @brief Until one call for every job has been answered with a plan
 *         (success=true), failed calls tried again after 500 ms: the channel
 *         is connected and the gateway reads the plans.
 *  @returns 0, or DLB_ERR_TRANSIENT (errstr says the last failure) when that
 *           took more than timeout_ms. */
int dlb_bench_gw_warm_up(dlb_bench_gw_t *g, long timeout_ms, char *errstr, size_t errstr_size);

/** @brief The path's transport for dlb_bench_path_run(): send starts the
 *         call of request i (job i % jobs), poll takes completed calls. */
void dlb_bench_gw_ops(dlb_bench_gw_t *g, dlb_bench_path_ops_t *ops);

/** @brief The failed answers of the runs so far, by kind. */
dlb_bench_gw_counts_t dlb_bench_gw_counts(const dlb_bench_gw_t *g);

/** @brief Cancel the calls still in flight, wait for them, close the channel
 *         and release g.
 *  @param g  the client, or NULL */
void dlb_bench_gw_destroy(dlb_bench_gw_t *g);

#endif
