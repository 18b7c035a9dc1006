/* replay: copy one environment's input events of an event-time range into a
 * virtual environment, in order per job, optionally paced like the original.
 *
 * The range is always one of event times, the time inside each event. Sources:
 * the source environment's event topics (every partition read from where its
 * record times may hold events of the range, each record decoded for its
 * event time, merged by it), or its PostgreSQL history (the raw frames the
 * consumers stored, ordered by event time then event id) when the topics have
 * expired. Every record goes to the same topic of the target environment with
 * the same key, value and headers, bad records included (the target's
 * consumers dead-letter them as the source's did), stamped when produced: its
 * event time stays in the value, and the target's retention keeps the copy
 * as long as a new record. */
#ifndef DLB_REPLAY_H
#define DLB_REPLAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"

#define DLB_REPLAY_MAX_TOPICS 8

typedef struct dlb_replay_topic_stats {
    const char *name; /* short name, "job-events" */
    int64_t in;       /* records in the time range, handed to the producer */
    int64_t out;      /* of those, delivered to the target */
    int64_t skipped;  /* records read whose event time is outside the range */
} dlb_replay_topic_stats_t;

typedef struct dlb_replay_stats {
    dlb_replay_topic_stats_t topics[DLB_REPLAY_MAX_TOPICS];
    size_t topic_cnt;
    int64_t in, out, skipped, failed; /* over every topic; failed = delivery errors */
    int64_t read;                     /* records read so far (in + skipped) */
    int64_t total;             /* records expected (offset ranges, or the history's row count) */
    int64_t jobs;              /* distinct keys (job uids) replayed */
    int64_t jobs_bad;          /* jobs whose delivered count differs from the read count */
    int64_t first_ts, last_ts; /* event times of the first and last record replayed */
    int64_t seen_first, seen_last; /* the event times of every record read span these */
    int64_t elapsed_ms;            /* wall time so far */
} dlb_replay_stats_t;

typedef struct dlb_replay_opts {
    const char *source; /* environment read from */
    const char *schema; /* its PostgreSQL schema (with from_pg) */
    const char *into;   /* environment written to */
    int64_t from_ms;    /* first event time replayed (inclusive) */
    int64_t to_ms;      /* end of the range (exclusive) */
    /* From Kafka, where offsets are found by record time: how far an
     * event's time may run ahead of its record's (a producer's clock behind
     * the event's source, a simulation ahead of real time), so a partition
     * is read from its first record stamped at or after from_ms -
     * max_ahead_ms; and how far it may lag (a late report, a simulated or
     * replayed past), so a partition is read up to its first record stamped
     * at or after to_ms + max_late_ms. -1: no bound (from the start, to the
     * end of each partition). */
    int64_t max_ahead_ms, max_late_ms;
    int allow_empty;             /* an empty range is no error */
    double speed;                /* 0: as fast as possible; N: N times real time */
    int from_pg;                 /* read the PostgreSQL history, not the topics */
    const char **topics;         /* NULL-terminated short names; NULL: every event topic */
    int timeout_ms;              /* longest wait for the brokers, then for delivery */
    volatile sig_atomic_t *stop; /* set asynchronously to stop early (may be NULL) */
    /* Called about every 200 ms and once at the end (may be NULL). */
    void (*progress)(const dlb_replay_stats_t *st, void *opaque);
    void *opaque;
} dlb_replay_opts_t;

/** @brief The event topics a replay copies by default (NULL-terminated short
 *         names); from_pg: only those the history keeps. */
const char *const *dlb_replay_default_topics(int from_pg);

/** @brief Replay. conf gives the brokers, the PostgreSQL DSN and librdkafka
 *         pass-through; the source and target come from opts (the caller has
 *         checked the target may be written: dlb_replay_check_target()).
 *  @returns 0 when every record of the range was delivered and each job's
 *           delivered count equals its read count; DLB_ERR_INVALID for bad
 *           options, DLB_ERR_TRANSIENT when Kafka or PostgreSQL failed or a
 *           record was not delivered, DLB_ERR_GENERIC when stopped,
 *           DLB_ERR_NOTFOUND when the range held nothing (unless
 *           allow_empty; errstr says what was read). st holds what was done
 *           in every case. */
int dlb_replay_run(const dlb_conf_t *conf, const dlb_replay_opts_t *opts, dlb_replay_stats_t *st,
                   char *errstr, size_t errstr_size);

/** @brief Settle source and target through the environment registry: source
 *         is the given one, else the registry's real environment, else
 *         conf->env. The target must be registered, virtual, and not the source;
 *         target and a given source must be valid environment names.
 *  @returns 0, DLB_ERR_INVALID (refused, errstr says why) or DLB_ERR_TRANSIENT
 *           (the registry could not be read). */
int dlb_replay_check_target(const dlb_conf_t *conf, const char *source_opt, const char *into,
                            char *source, size_t source_size, char *errstr, size_t errstr_size);

/** @brief Parse a time: milliseconds since the epoch ("1767225600000"), RFC 3339
 *         ("2026-01-01T00:00:00Z", "2026-01-01T08:00:00.250+08:00", a space for
 *         the T, a date alone is midnight UTC), "now", or relative to now_ms
 *         ("-90s", "-15m", "-1h", "-2d", "-500ms", "now-1h").
 *  @returns 0 or DLB_ERR_INVALID. */
int dlb_replay_parse_time(const char *s, int64_t now_ms, int64_t *out_ms, char *errstr,
                          size_t errstr_size);

/** @brief Parse a duration: "0", "90s", "15m", "1h", "2d", "500ms", "1h30m", or
 *         "none" (*out_ms = -1: no bound).
 *  @returns 0 or DLB_ERR_INVALID. */
int dlb_replay_parse_duration(const char *s, int64_t *out_ms, char *errstr, size_t errstr_size);

/** @brief Format ms since the epoch as RFC 3339 UTC with milliseconds. */
const char *dlb_replay_format_time(int64_t ms, char *buf, size_t size);

/** @brief The k-way merge step: of n streams whose head timestamps are ts[i]
 *         (ready[i] nonzero when stream i has a head), the one to take next:
 *         the smallest timestamp, ties to the lowest index, so equal
 *         timestamps keep a fixed order and each stream stays in its own order.
 *  @returns the index, or n when no stream has a head. */
size_t dlb_replay_merge_pick(const int64_t *ts, const int *ready, size_t n);

/** @brief One progress line (no newline): bar, done/total, percent, rate/s, ETA. */
void dlb_replay_progress_line(const dlb_replay_stats_t *st, char *buf, size_t size);

/** @brief The summary: per topic counts, jobs, the in = out check, duration. */
void dlb_replay_summary(FILE *fp, const dlb_replay_opts_t *opts, const dlb_replay_stats_t *st);

#endif
