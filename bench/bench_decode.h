/* The decode benchmark: the ingest benchmark's runtime samples (newest
 * schema, 3 to 21 pods each) decoded and validated as the stream does, once
 * with values built for every message (dlb_codec_decode) and once through a
 * decoder that keeps them between messages (dlb_codec_decoder_decode), in
 * the same run, on one core, no I/O; wall and CPU time (this thread's). */
#ifndef DLB_BENCH_DECODE_H
#define DLB_BENCH_DECODE_H

#include <signal.h>
#include <stdio.h>

#include <cJSON.h>

typedef struct dlb_bench_decode_opts {
    long samples;                /* messages encoded once, decoded by every pass */
    int passes;                  /* passes of each way, interleaved; the median is reported */
    FILE *out;                   /* the table */
    volatile sig_atomic_t *stop; /* NULL, or ends the run early when non-zero */
} dlb_bench_decode_opts_t;

/** @brief Encode opts->samples samples, check that both ways decode every one
 *         to the same event, then time opts->passes passes of each way,
 *         alternating, and print their median rates (wall clock and CPU time)
 *         and the ratios.
 *  @param json NULL, or receives the results (the caller's, for cJSON_Delete)
 *  @returns 0, DLB_ERR_NOMEM, or DLB_ERR_GENERIC when a message does not
 *           decode, or decodes differently the two ways. */
int dlb_bench_decode(const dlb_bench_decode_opts_t *opts, cJSON **json, char *errstr,
                     size_t errstr_size);

#endif
