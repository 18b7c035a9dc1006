/* One path of a round-trip benchmark: requests started at a steady rate
 * (open loop: on schedule whether or not earlier ones were answered, up to a
 * bound of requests in flight), each answer's latency, and the path's table
 * row and JSON. The transport (Kafka, gRPC) comes as two callbacks: start
 * request i, and wait for answers. Shared by bench_roundtrip.c's paths and
 * bench_gateway.c. */
#ifndef DLB_BENCH_PATH_H
#define DLB_BENCH_PATH_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "latency.h"

typedef struct dlb_bench_path {
    const char *name; /* the table's PATH column */
    char where[256];  /* the topic or address requests go to */
    long n;           /* requests to send */
    int64_t *sent_ns; /* per request, when it was started; 0 = not started */
    unsigned char *got;
    dlb_lat_t lat;             /* start -> answer, of the good answers */
    long sent;                 /* requests started */
    long received;             /* good answers (their latency is in lat) */
    long failed;               /* answers that were not good: an error, success=false */
    long repeats;              /* answers seen again (at least once delivery) */
    int64_t first_ns, last_ns; /* when the first and the last request was started */
    int64_t first_answer_ns, last_answer_ns; /* when the first and the last answer came */
    int64_t max_lag_ns;                      /* the latest start after its scheduled time */
} dlb_bench_path_t;

/* The transport of a path. */
typedef struct dlb_bench_path_ops {
    /** Start request i: set p->sent_ns[i] as it starts. @returns 0 or an error. */
    int (*send)(void *ctx, dlb_bench_path_t *p, long i, char *errstr, size_t errstr_size);
    /** Wait for answers until deadline_ns (dlb_lat_clock_ns() time) or the
     *  first answer, recording them with dlb_bench_path_answer(). @returns 0
     *  or an error. */
    int (*poll)(void *ctx, dlb_bench_path_t *p, int64_t deadline_ns, char *errstr,
                size_t errstr_size);
    void *ctx;
} dlb_bench_path_ops_t;

/** @brief Set up a path for n requests (zeroes it first).
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_bench_path_init(dlb_bench_path_t *p, const char *name, long n);

/** @brief Release what a path holds (its latencies too); p stays usable for
 *         dlb_bench_path_init(). */
void dlb_bench_path_free(dlb_bench_path_t *p);

/** @brief Record the answer to request i, received at at_ns: good ones count
 *         in received and lat, others in failed; a second answer to the same
 *         request counts in repeats; an index never sent is ignored.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_bench_path_answer(dlb_bench_path_t *p, long i, int64_t at_ns, int good);

/** @brief Requests started and not answered yet. */
long dlb_bench_path_inflight(const dlb_bench_path_t *p);

/** @brief Start p->n requests at rate per second, request i due i/rate
 *         seconds after the start, and wait for their answers: until every
 *         request has one, or drain_ms after the last one started. With
 *         max_inflight > 0, a request due while that many are unanswered
 *         waits for an answer (and starts late: see max_lag_ns).
 *  @returns 0 (also when *stop ended it) or the first error of ops. */
int dlb_bench_path_run(dlb_bench_path_t *p, const dlb_bench_path_ops_t *ops, double rate,
                       long drain_ms, long max_inflight, volatile sig_atomic_t *stop, char *errstr,
                       size_t errstr_size);

/** @brief The rate requests were started at: (sent - 1) over the time from
 *         the first to the last start; 0 with fewer than two. */
double dlb_bench_path_rate(const dlb_bench_path_t *p);

/** @brief The rate answers came at (good or failed): one less than their
 *         number over the time from the first to the last; 0 with fewer than
 *         two. Below the start rate, the far end did not keep up. */
double dlb_bench_path_answer_rate(const dlb_bench_path_t *p);

/** @brief The column titles for dlb_bench_path_print(). */
void dlb_bench_path_print_header(FILE *out);

/** @brief One table row: sent, good answers, failed, lost, p50, p99, max and
 *         mean in ms, and the rates requests started and answers came at. */
void dlb_bench_path_print(FILE *out, dlb_bench_path_t *p);

/** @brief A ratio row: p50, p99, max and mean of p over base. */
void dlb_bench_path_print_ratio(FILE *out, const char *name, dlb_bench_path_t *p,
                                dlb_bench_path_t *base);

/** @brief The path's numbers as a JSON object (the caller's), or NULL when
 *         out of memory. */
cJSON *dlb_bench_path_json(dlb_bench_path_t *p);

/** @brief p over base at p50, p99, max and mean, as a JSON object, or NULL
 *         when out of memory. */
cJSON *dlb_bench_path_ratio_json(dlb_bench_path_t *p, dlb_bench_path_t *base);

#endif
