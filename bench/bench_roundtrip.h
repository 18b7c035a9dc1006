/* The round-trip benchmark: plan request produced -> plan received by a
 * master, through a running `dlbrain optimizer`, against the raw Kafka
 * produce -> consume round trip of the same bytes at the same rate on the
 * same broker, in the same run; and, given a gateway's address, brain.Brain
 * optimize call -> answer through a running `dlbrain gateway`
 * (bench_gateway.h), given its HTTP Brain's, POST /optimize -> answer
 * (bench_gateway_http.h). */
#ifndef DLB_BENCH_ROUNDTRIP_H
#define DLB_BENCH_ROUNDTRIP_H

#include <signal.h>
#include <stdio.h>

#include <cJSON.h>

#include "conf.h"

typedef struct dlb_bench_roundtrip_opts {
    double rate;                 /* requests per second, per path */
    long seconds;                /* seconds per path: rate x seconds requests each */
    long jobs;                   /* jobs the requests go round */
    long samples;                /* runtime samples per job before the requests */
    const char *stage;           /* stage of the requests, one of dlb_stages[] */
    long warmup_ms;              /* longest wait for a first answer for every job */
    long drain_ms;               /* wait after the last request for late answers */
    const char *label;           /* NULL, or what the run is on (printed) */
    const char *gateway;         /* NULL, or host:port of a gateway: its path runs too */
    const char *gateway_http;    /* NULL, or http://host:port of a gateway's HTTP Brain:
                                    its path runs too */
    long max_inflight;           /* gateway paths: calls in flight at most (0: no bound) */
    FILE *out;                   /* the table */
    volatile sig_atomic_t *stop; /* NULL, or ends the run early when non-zero */
} dlb_bench_roundtrip_opts_t;

typedef struct dlb_bench_roundtrip_result {
    int stopped; /* *stop ended the run: nothing printed, no JSON */
    long raw_sent, raw_received;
    long plans_sent, plans_received;                     /* received < sent: answers lost */
    long gateway_sent, gateway_received, gateway_failed; /* received: success=true */
    long http_sent, http_received, http_failed;          /* the HTTP Brain's, likewise */
} dlb_bench_roundtrip_result_t;

/* One run: its settings, Kafka clients and measurements. */
typedef struct dlb_bench_roundtrip dlb_bench_roundtrip_t;

/** @brief A run with a tag of its own (time and pid) in its event ids, job
 *         uids and consumer groups. Nothing is connected yet.
 *  @param out     the run, for dlb_bench_roundtrip_destroy()
 *  @param conf    brokers, env, partitions and client settings; must outlive
 *                 the run
 *  @param opts    what to run (copied; its strings must outlive the run)
 *  @param errstr  what went wrong, ready to log
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_bench_roundtrip_new(dlb_bench_roundtrip_t **out, const dlb_conf_t *conf,
                            const dlb_bench_roundtrip_opts_t *opts, char *errstr,
                            size_t errstr_size);

/** @brief Produce job meta and runtime samples for opts->jobs jobs, then, per
 *         path, warm up and send rate x seconds plan requests at a steady rate:
 *         first the baseline, into "<env>.bench-raw" (created if it can be) and
 *         read back from there; then into "<env>.plan-requests", answered on
 *         "<env>.plans" by the running optimizer. Both consumers subscribe as a
 *         master does (read_committed, own group, from the end). With
 *         opts->gateway, then as many optimize calls for the same jobs to that
 *         gateway, started on schedule (open loop, at most opts->max_inflight
 *         in flight), and with opts->gateway_http as many POST /optimize calls
 *         to its HTTP Brain the same way. Prints the per-path latency table (p50, p99, max, mean,
 *         rate reached) and the ratios over the baseline.
 *         The Kafka clients stay open until dlb_bench_roundtrip_destroy(), so
 *         the caller can report first: closing them flushes for up to 10 s and
 *         logs what is still undelivered.
 *  @param b       a new run (once only)
 *  @param res     sent and received per path, and whether the run was stopped
 *  @param json    NULL, or receives the results as a JSON object (the
 *                 caller's, for cJSON_Delete); NULL on error or when stopped
 *  @param errstr  what went wrong, ready to log
 *  @returns 0 when the run ended (answers may still be missing: see res), or
 *           an error from Kafka (DLB_ERR_TRANSIENT also when the warm-up got
 *           no answer in time) or DLB_ERR_NOMEM. */
int dlb_bench_roundtrip_run(dlb_bench_roundtrip_t *b, dlb_bench_roundtrip_result_t *res,
                            cJSON **json, char *errstr, size_t errstr_size);

/** @brief Close the run's Kafka clients and release it.
 *  @param b  the run, or NULL */
void dlb_bench_roundtrip_destroy(dlb_bench_roundtrip_t *b);

#endif
