/* emit: JSON lines in, validated Avro events out to their topics, keyed by job uid. */
#ifndef DLB_EMIT_H
#define DLB_EMIT_H

#include <stdint.h>
#include <stdio.h>

#include <librdkafka/rdkafka.h>

#include "catalog.h"
#include "conf.h"

typedef struct dlb_emit_stats {
    int64_t lines;    /* lines read, blank and comment lines included */
    int64_t sent;     /* events handed to the producer */
    int64_t rejected; /* lines that failed parsing, validation or encoding */
} dlb_emit_stats_t;

/** @brief Read events from in, one JSON object per line (blank lines and lines
 *         starting with '#' are skipped). A bad line is logged as
 *         "<name>:<line>: <field>: <problem>; line skipped" and counted; the
 *         other lines still go out. Each event goes to "<env>.<topic of its type>"
 *         keyed by job uid. A plan request is held until every
 *         event produced before it is acknowledged (flushed, waiting at most
 *         timeout_ms), so it never reaches the log before them; the stream's
 *         end is not flushed.
 *  @returns 0 when the stream was read to its end (even with rejected lines),
 *           or an error reading the stream / producing (errstr says). */
int dlb_emit_stream(FILE *in, const char *name, rd_kafka_t *producer, const dlb_conf_t *conf,
                    const dlb_catalog_t *cat, int gen_defaults, int timeout_ms,
                    dlb_emit_stats_t *stats, char *errstr, size_t errstr_size);

#endif
