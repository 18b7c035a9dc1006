/* The ingest benchmark: runtime samples through the whole pipeline (Kafka ->
 * decode -> Redis -> PostgreSQL, a fresh group of `dlbrain optimizer`
 * processes) against a plain librdkafka consumer reading the same messages
 * from the same broker, in the same run. */
#ifndef DLB_BENCH_INGEST_H
#define DLB_BENCH_INGEST_H

#include <signal.h>
#include <stdio.h>

#include <cJSON.h>

#include "conf.h"

typedef struct dlb_bench_ingest_opts {
    long samples;   /* runtime samples to pre-load into <env>.metrics */
    long jobs;      /* jobs they belong to, round robin */
    int consumers;  /* optimizer processes in the pipeline's group */
    long timeout_s; /* longest wait for the pipeline to take everything in */
    /* argv of one consumer process, NULL-terminated: {path of dlbrain,
     * "optimizer", options...}. "-X group.id=<the run's group>" is appended. */
    const char *const *consumer_argv;
    const char *label;           /* NULL, or what the run is on (printed) */
    FILE *out;                   /* the table */
    volatile sig_atomic_t *stop; /* NULL, or ends the run early when non-zero */
} dlb_bench_ingest_opts_t;

/** @brief One run: produce opts->samples runtime samples of opts->jobs jobs
 *         (2 to 21 pods each, fixed seed) into "<env>.metrics" as fast as the
 *         broker takes them (not timed); read them back three times with a
 *         plain consumer (assigned at the run's first offsets, no decode: the
 *         median pass is the raw rate); then
 *         start opts->consumers consumer processes in a new group whose
 *         committed offsets start at the run's first message (nothing older
 *         is read), timed from their start until the group has committed the
 *         last message and PostgreSQL holds every sample. Checks that Redis
 *         holds each job's runtime window. Prints the table; peak RSS of the
 *         bench process and of each consumer.
 *  @param json    NULL, or receives the results (the caller's, for
 *                 cJSON_Delete); NULL on error or when stopped
 *  @param errstr  what went wrong, ready to log
 *  @returns 0 (also when *opts->stop ended the run: then nothing is printed),
 *           or an error from Kafka, PostgreSQL, Redis, a consumer process
 *           (exited, or too slow: DLB_ERR_TRANSIENT) or DLB_ERR_NOMEM. */
int dlb_bench_ingest(const dlb_conf_t *conf, const dlb_bench_ingest_opts_t *opts, cJSON **json,
                     char *errstr, size_t errstr_size);

#endif
