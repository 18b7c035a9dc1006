/* What the files of replay share (replay.h): replay.c runs a replay (the
 * options, the per-job counts, the sink producing into the target, the
 * merge step, progress and summary); replay_kafka.c and replay_pg.c are its
 * two sources, which read records and hand each to dlb_replay_send();
 * replay_time.c parses and formats times. Not for other callers. */
#ifndef DLB_REPLAY_INTERNAL_H
#define DLB_REPLAY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "conf.h"
#include "replay.h"

/* How often progress is reported, and the longest a wait goes without
 * serving delivery reports. */
#define DLB_REPLAY_PROGRESS_MS 200

/* Per-job counts, by record key. */
typedef struct job {
    char *key; /* the record key (a job uid), not NUL-terminated; NULL for no key */
    size_t len;
    int64_t in, out;
} job_t;

/* Open addressing over an array of jobs; slots hold index + 1 (0 = empty). */
typedef struct jobs {
    job_t *v;
    size_t cnt, cap;
    size_t *slots;
    size_t nslots; /* a power of two */
} jobs_t;

/* One replay run. */
typedef struct dlb_replay {
    const dlb_replay_opts_t *o;
    dlb_replay_stats_t *st;
    rd_kafka_t *producer;
    char target[DLB_REPLAY_MAX_TOPICS][256];
    jobs_t jobs;
    int64_t start_wall, next_progress;
    int paced;                  /* the pacing clock started */
    int64_t pace_wall, pace_ts; /* wall clock and timestamp of the first record */
} dlb_replay_t;

/* ---- replay_sink.c ---- */

/** @returns 1 when name is an event topic a replay takes (from PostgreSQL:
 *           one a history table keeps). */
int dlb_replay_known_topic(const char *name, int from_pg);

/** @brief The idempotent producer into the target's topics (r->producer). */
int dlb_replay_sink_open(const dlb_conf_t *conf, dlb_replay_t *r, char *errstr, size_t errstr_size);

/** @brief Release the per-job counts. */
void dlb_replay_sink_close(dlb_replay_t *r);

/** @returns 1 once the caller asked the replay to stop (opts->stop). */
int dlb_replay_stopped(const dlb_replay_t *r);

/** @brief Report progress when it is due (every DLB_REPLAY_PROGRESS_MS), or
 *         now when force is set. */
void dlb_replay_tick(dlb_replay_t *r, int force);

/** @brief Count one record read in topic t, of event time ts.
 *  @returns 1 when ts is in the range, else 0 (counted skipped). */
int dlb_replay_in_range(dlb_replay_t *r, size_t t, int64_t ts);

/** @brief Produce one record to the target's topic t, stamped now, paced
 *         by its event time ts when a speed is set. hdrs (may be NULL) is
 *         taken over in every case.
 *  @returns 0, DLB_ERR_NOMEM or DLB_ERR_TRANSIENT (the producer refused it). */
int dlb_replay_send(dlb_replay_t *r, size_t t, const void *key, size_t key_len, const void *value,
                    size_t len, rd_kafka_headers_t *hdrs, int64_t ts, char *errstr,
                    size_t errstr_size);

/** @returns the table of the PostgreSQL history that keeps topic's records,
 *           or NULL when it keeps none. */
const char *dlb_replay_history_table(const char *topic);

/* ---- the sources ---- */

/** @brief The Kafka source (replay_kafka.c): every partition of the source's
 *         topics read over the offsets whose record times may hold events of
 *         the range, each record's event time decoded, merged by it. */
int dlb_replay_from_kafka(const dlb_conf_t *conf, dlb_replay_t *r, char *errstr,
                          size_t errstr_size);

/** @brief The PostgreSQL source (replay_pg.c): the source schema's stored
 *         frames of the range, in the order the consumers applied them. */
int dlb_replay_from_pg(const dlb_conf_t *conf, dlb_replay_t *r, char *errstr, size_t errstr_size);

#endif
