#include "replay.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

#include "clock.h"
#include "env_registry.h"
#include "err.h"
#include "kafka.h"
#include "log.h"
#include "sbuf.h"
#include "store_pg_conn.h"

/* Messages buffered per partition before it is paused: the merge needs one
 * head per partition, and a partition far ahead of the others must not fill
 * memory while a slow one is fetched. */
#define STREAM_CAP    512
#define PROGRESS_MS   200
#define PG_FETCH_ROWS "1000"

/* The input topics and, for the history, the table keeping each one's raw
 * frames (pipeline/store/sql/001_init.sql); config requests are not stored. */
static const struct {
    const char *topic;
    const char *table;
} event_topics[] = {
    {DLB_TOPIC_JOB_EVENTS, "job_events"},  {DLB_TOPIC_METRICS, "runtime_samples"},
    {DLB_TOPIC_K8S_EVENTS, "node_events"}, {DLB_TOPIC_PLAN_REQUESTS, "plan_requests"},
    {DLB_TOPIC_CONFIG_REQUESTS, NULL},
};
#define EVENT_TOPIC_CNT (sizeof(event_topics) / sizeof(event_topics[0]))

static const char *const kafka_topics[] = {DLB_TOPIC_JOB_EVENTS,      DLB_TOPIC_METRICS,
                                           DLB_TOPIC_K8S_EVENTS,      DLB_TOPIC_PLAN_REQUESTS,
                                           DLB_TOPIC_CONFIG_REQUESTS, NULL};
static const char *const pg_topics[] = {DLB_TOPIC_JOB_EVENTS, DLB_TOPIC_METRICS,
                                        DLB_TOPIC_K8S_EVENTS, DLB_TOPIC_PLAN_REQUESTS, NULL};

const char *const *dlb_replay_default_topics(int from_pg)
{
    return from_pg ? pg_topics : kafka_topics;
}

/* ---- time ------------------------------------------------------------------ */

/* n decimal digits at *p into *v; advances *p. */
static int digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return -1;
        *v = *v * 10 + (**p - '0');
    }
    return 0;
}

static int parse_relative(const char *s, int64_t now, int64_t *out)
{
    int sign = *s == '-' ? -1 : 1;
    int64_t total = 0;

    s++;
    if (!*s)
        return -1;
    while (*s) {
        char *end;
        int64_t unit;
        long long n;

        if (!isdigit((unsigned char)*s))
            return -1;
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno || end == s)
            return -1;
        s = end;
        if (!strncmp(s, "ms", 2)) {
            unit = 1;
            s += 2;
        } else if (*s == 's' || *s == 'm' || *s == 'h' || *s == 'd') {
            unit = *s == 's' ? 1000 : *s == 'm' ? 60000 : *s == 'h' ? 3600000 : 86400000;
            s++;
        } else {
            return -1;
        }
        if (n > INT64_MAX / unit / 2)
            return -1;
        total += n * unit;
    }
    *out = now + sign * total;
    return 0;
}

static int parse_rfc3339(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, off = 0, oh, om;
    time_t t;

    if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) || *s++ != '-' || digits(&s, 2, &d))
        return -1;
    if (*s) {
        if (*s != 'T' && *s != 't' && *s != ' ')
            return -1;
        s++;
        if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi) || *s++ != ':' ||
            digits(&s, 2, &sec))
            return -1;
        if (*s == '.') {
            int scale = 100;
            s++;
            if (!isdigit((unsigned char)*s))
                return -1;
            /* Digits past milliseconds are truncated. */
            for (; isdigit((unsigned char)*s); s++, scale /= 10)
                ms += (*s - '0') * scale;
        }
        if (*s == 'Z' || *s == 'z') {
            s++;
        } else if (*s == '+' || *s == '-') {
            int sign = *s++ == '-' ? -1 : 1;
            if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om) || oh > 23 || om > 59)
                return -1;
            off = sign * (oh * 60 + om);
        } else {
            return -1; /* RFC 3339 requires the offset */
        }
        if (*s)
            return -1;
    }
    /* 60 seconds: a leap second, which timegm() rolls into the next minute. */
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    /* timegm() normalises 31 February: refuse a date that is not one. */
    if (tm.tm_mday != d || tm.tm_mon != mo - 1)
        return -1;
    *out = ((int64_t)t - (int64_t)off * 60) * 1000 + ms;
    return 0;
}

int dlb_replay_parse_time(const char *s, int64_t now, int64_t *out_ms, char *errstr,
                          size_t errstr_size)
{
    const char *p = s;
    int all_digits = *s != '\0';

    for (; *p; p++)
        if (!isdigit((unsigned char)*p))
            all_digits = 0;
    if (!strcmp(s, "now")) {
        *out_ms = now;
        return 0;
    }
    if (all_digits) {
        char *end;
        errno = 0;
        *out_ms = strtoll(s, &end, 10);
        if (!errno)
            return 0;
    } else if ((*s == '-' || *s == '+') && !parse_relative(s, now, out_ms)) {
        return 0;
    } else if (!strncmp(s, "now", 3) && (s[3] == '-' || s[3] == '+') &&
               !parse_relative(s + 3, now, out_ms)) {
        return 0;
    } else if (!parse_rfc3339(s, out_ms)) {
        return 0;
    }
    return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                      "time \"%s\": expected RFC 3339 (2026-01-01T00:00:00Z), ms since the epoch, "
                      "now, or relative like -1h, -15m, -90s, -500ms",
                      s);
}

const char *dlb_replay_format_time(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int frac = (int)(ms - (int64_t)t * 1000);
    struct tm tm;
    char tmp[32];

    gmtime_r(&t, &tm);
    strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03dZ", tmp, frac);
    return buf;
}

/* ---- merge, progress, summary ---------------------------------------------- */

/* A linear scan: a replay merges one stream per partition (tens, at most a few
 * hundred), where a heap's bookkeeping buys nothing measurable. */
size_t dlb_replay_merge_pick(const int64_t *ts, const int *ready, size_t n)
{
    size_t best = n;

    for (size_t i = 0; i < n; i++)
        if (ready[i] && (best == n || ts[i] < ts[best]))
            best = i;
    return best;
}

static void fmt_duration(int64_t s, char *buf, size_t size)
{
    if (s >= 3600)
        snprintf(buf, size, "%" PRId64 ":%02d:%02d", s / 3600, (int)(s / 60 % 60), (int)(s % 60));
    else
        snprintf(buf, size, "%d:%02d", (int)(s / 60), (int)(s % 60));
}

void dlb_replay_progress_line(const dlb_replay_stats_t *st, char *buf, size_t size)
{
    enum { WIDTH = 24 };
    double frac = st->total > 0 ? (double)st->read / (double)st->total : 1.0;
    double rate = st->elapsed_ms > 0 ? (double)st->read * 1000.0 / (double)st->elapsed_ms : 0.0;
    char bar[WIDTH + 1], eta[32];
    int fill;

    if (frac > 1.0)
        frac = 1.0;
    fill = (int)(frac * WIDTH);
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[WIDTH] = '\0';
    if (rate > 0 && st->total > st->read)
        fmt_duration((int64_t)((double)(st->total - st->read) / rate + 0.5), eta, sizeof(eta));
    else if (st->total <= st->read)
        snprintf(eta, sizeof(eta), "0:00");
    else
        snprintf(eta, sizeof(eta), "?");
    snprintf(buf, size, "[%s] %" PRId64 "/%" PRId64 " %5.1f%% %.0f/s ETA %s", bar, st->read,
             st->total, frac * 100.0, rate, eta);
}

void dlb_replay_summary(FILE *fp, const dlb_replay_opts_t *o, const dlb_replay_stats_t *st)
{
    char from[40], to[40], first[40], last[40], speed[32];
    double secs = (double)st->elapsed_ms / 1000.0;

    if (o->speed > 0)
        snprintf(speed, sizeof(speed), "%gx", o->speed);
    else
        snprintf(speed, sizeof(speed), "max");
    fprintf(fp, "replay %s -> %s from %s, %s .. %s, speed %s\n", o->source, o->into,
            o->from_pg ? "postgresql" : "kafka",
            dlb_replay_format_time(o->from_ms, from, sizeof(from)),
            dlb_replay_format_time(o->to_ms, to, sizeof(to)), speed);
    fprintf(fp, "%-16s %10s %10s %10s\n", "topic", "in", "out", "skipped");
    for (size_t i = 0; i < st->topic_cnt; i++)
        fprintf(fp, "%-16s %10" PRId64 " %10" PRId64 " %10" PRId64 "\n", st->topics[i].name,
                st->topics[i].in, st->topics[i].out, st->topics[i].skipped);
    fprintf(fp, "%-16s %10" PRId64 " %10" PRId64 " %10" PRId64 "\n", "total", st->in, st->out,
            st->skipped);
    fprintf(fp, "jobs: %" PRId64 ", in = out for every job: %s", st->jobs,
            st->jobs_bad ? "NO" : "yes");
    if (st->jobs_bad)
        fprintf(fp, " (%" PRId64 " job(s) differ)", st->jobs_bad);
    if (st->failed)
        fprintf(fp, ", %" PRId64 " delivery failure(s)", st->failed);
    fprintf(fp, "\n");
    if (st->in > 0)
        fprintf(fp, "records: %s .. %s\n",
                dlb_replay_format_time(st->first_ts, first, sizeof(first)),
                dlb_replay_format_time(st->last_ts, last, sizeof(last)));
    fprintf(fp, "duration: %.3f s, %.0f records/s\n", secs, secs > 0 ? (double)st->in / secs : 0.0);
}

/* ---- per-job counts -------------------------------------------------------- */

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

static uint64_t key_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */

    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static int jobs_rehash(jobs_t *js, size_t nslots)
{
    size_t *s = calloc(nslots, sizeof(*s));

    if (!s)
        return DLB_ERR_NOMEM;
    for (size_t i = 0; i < js->cnt; i++) {
        size_t h = key_hash(js->v[i].key, js->v[i].len) & (nslots - 1);
        while (s[h])
            h = (h + 1) & (nslots - 1);
        s[h] = i + 1;
    }
    free(js->slots);
    js->slots = s;
    js->nslots = nslots;
    return 0;
}

/* @returns the job's index, or -1 when out of memory. */
static int64_t jobs_get(jobs_t *js, const void *key, size_t len)
{
    size_t h;
    job_t *j;

    if (js->cnt * 2 >= js->nslots && jobs_rehash(js, js->nslots ? js->nslots * 2 : 1024))
        return -1;
    for (h = key_hash(key, len) & (js->nslots - 1); js->slots[h]; h = (h + 1) & (js->nslots - 1)) {
        j = &js->v[js->slots[h] - 1];
        if (j->len == len && (!len || !memcmp(j->key, key, len)))
            return (int64_t)js->slots[h] - 1;
    }
    if (js->cnt == js->cap) {
        size_t cap = js->cap ? js->cap * 2 : 256;
        job_t *v = realloc(js->v, cap * sizeof(*v));
        if (!v)
            return -1;
        js->v = v;
        js->cap = cap;
    }
    j = &js->v[js->cnt];
    memset(j, 0, sizeof(*j));
    if (len && !(j->key = malloc(len)))
        return -1;
    if (len)
        memcpy(j->key, key, len);
    j->len = len;
    js->slots[h] = ++js->cnt;
    return (int64_t)js->cnt - 1;
}

static void jobs_free(jobs_t *js)
{
    for (size_t i = 0; i < js->cnt; i++)
        free(js->v[i].key);
    free(js->v);
    free(js->slots);
}

/* ---- the sink: one producer into the target's topics ------------------------ */

typedef struct replay {
    const dlb_replay_opts_t *o;
    dlb_replay_stats_t *st;
    rd_kafka_t *producer;
    char target[DLB_REPLAY_MAX_TOPICS][256];
    jobs_t jobs;
    int64_t start_wall, next_progress;
    int paced;                  /* the pacing clock started */
    int64_t pace_wall, pace_ts; /* wall clock and timestamp of the first record */
} replay_t;

/* The message opaque: job index and topic index, so the delivery report can
 * count per job and per topic. */
#define OPQ_TOPIC_BITS 4
#define OPQ(job, t)    ((void *)(((uintptr_t)(job) << OPQ_TOPIC_BITS) | (uintptr_t)(t)))

static void replay_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    replay_t *r = opaque;
    uintptr_t v = (uintptr_t)m->_private;
    size_t t = v & ((1u << OPQ_TOPIC_BITS) - 1), job = v >> OPQ_TOPIC_BITS;

    (void)rk;
    if (m->err) {
        r->st->failed++;
        dlb_err("replay: delivery to %s [%" PRId32 "] failed: %s", rd_kafka_topic_name(m->rkt),
                m->partition, rd_kafka_err2str(m->err));
        return;
    }
    r->jobs.v[job].out++;
    r->st->topics[t].out++;
    r->st->out++;
}

static int stopped(const replay_t *r)
{
    return r->o->stop && *r->o->stop;
}

static void tick(replay_t *r, int force)
{
    int64_t now = dlb_clock_mono_ms();

    if (!force && now < r->next_progress)
        return;
    r->next_progress = now + PROGRESS_MS;
    r->st->elapsed_ms = now - r->start_wall;
    if (r->o->progress)
        r->o->progress(r->st, r->o->opaque);
}

/* Wait until the record of timestamp ts is due: the first record goes at
 * once, each later one (ts - first) / speed after it. The wait starts at the
 * first record, not at --from, so an empty head of the range costs nothing. */
static void pace(replay_t *r, int64_t ts)
{
    int64_t due, now;

    if (r->o->speed <= 0)
        return;
    if (!r->paced) {
        r->paced = 1;
        r->pace_wall = dlb_clock_mono_ms();
        r->pace_ts = ts;
        return;
    }
    due = r->pace_wall + (int64_t)((double)(ts - r->pace_ts) / r->o->speed);
    while ((now = dlb_clock_mono_ms()) < due && !stopped(r)) {
        int64_t wait = due - now;
        /* Serve delivery reports and the progress bar while waiting. */
        rd_kafka_poll(r->producer, (int)(wait < PROGRESS_MS ? wait : PROGRESS_MS));
        tick(r, 0);
    }
}

/* Count one record read in topic t; @returns 1 when its timestamp is in range. */
static int in_range(replay_t *r, size_t t, int64_t ts)
{
    r->st->read++;
    if (ts >= r->o->from_ms && ts < r->o->to_ms)
        return 1;
    r->st->skipped++;
    r->st->topics[t].skipped++;
    return 0;
}

/* Produce one record to the target's topic t. hdrs (may be NULL) is taken
 * over in every case. */
static int sink_send(replay_t *r, size_t t, const void *key, size_t key_len, const void *value,
                     size_t len, rd_kafka_headers_t *hdrs, int64_t ts, char *errstr,
                     size_t errstr_size)
{
    rd_kafka_resp_err_t err;
    int64_t job = jobs_get(&r->jobs, key, key ? key_len : 0);

    if (job < 0) {
        if (hdrs)
            rd_kafka_headers_destroy(hdrs);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    pace(r, ts);
    for (;;) {
        err = rd_kafka_producev(r->producer, RD_KAFKA_V_TOPIC(r->target[t]),
                                RD_KAFKA_V_KEY((void *)key, key_len),
                                RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_TIMESTAMP(ts),
                                RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(OPQ(job, t)),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || stopped(r))
            break;
        /* The local queue is full: let deliveries drain it. */
        rd_kafka_poll(r->producer, 100);
        tick(r, 0);
    }
    if (err) {
        /* On failure the headers still belong to us. */
        if (hdrs)
            rd_kafka_headers_destroy(hdrs);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "produce to %s: %s", r->target[t],
                          rd_kafka_err2str(err));
    }
    r->jobs.v[job].in++;
    r->st->topics[t].in++;
    r->st->in++;
    if (r->st->in == 1 || ts < r->st->first_ts)
        r->st->first_ts = ts;
    if (ts > r->st->last_ts)
        r->st->last_ts = ts;
    rd_kafka_poll(r->producer, 0);
    tick(r, 0);
    return 0;
}

/* ---- source: the topics ---------------------------------------------------- */

typedef struct stream {
    size_t t;
    int32_t partition;
    int64_t start, end; /* offsets [start, end) */
    rd_kafka_message_t *buf[STREAM_CAP];
    size_t head, cnt;
    int paused, done;
} stream_t;

static void stream_pause(rd_kafka_t *rk, const char *topic, stream_t *s, int pause)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);

    if (!l)
        return; /* only costs memory: the partition keeps fetching */
    rd_kafka_topic_partition_list_add(l, topic, s->partition);
    if (pause)
        rd_kafka_pause_partitions(rk, l);
    else
        rd_kafka_resume_partitions(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    s->paused = pause;
}

typedef struct ksource {
    rd_kafka_t *rk;
    char names[DLB_REPLAY_MAX_TOPICS][256]; /* "<source>.<topic>" */
    stream_t **streams;
    size_t cnt;
} ksource_t;

static void ksource_free(ksource_t *k)
{
    for (size_t i = 0; i < k->cnt; i++) {
        stream_t *s = k->streams[i];
        for (size_t j = 0; j < s->cnt; j++)
            rd_kafka_message_destroy(s->buf[(s->head + j) % STREAM_CAP]);
        free(s);
    }
    free(k->streams);
    if (k->rk) {
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
    }
}

static int ksource_add(ksource_t *k, size_t t, int32_t partition)
{
    stream_t **v = realloc(k->streams, (k->cnt + 1) * sizeof(*v));

    if (!v)
        return DLB_ERR_NOMEM;
    k->streams = v;
    if (!(v[k->cnt] = calloc(1, sizeof(**v))))
        return DLB_ERR_NOMEM;
    v[k->cnt]->t = t;
    v[k->cnt]->partition = partition;
    k->cnt++;
    return 0;
}

/* The partitions of every source topic; a missing topic has nothing to replay. */
static int ksource_partitions(ksource_t *k, replay_t *r, char *errstr, size_t errstr_size)
{
    for (size_t t = 0; t < r->st->topic_cnt; t++) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, k->names[t], NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err;
        int n = 0, rc = 0;

        if (!rkt)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "topic %s: %s", k->names[t],
                              rd_kafka_err2str(rd_kafka_last_error()));
        err = rd_kafka_metadata(k->rk, 0, rkt, &md, r->o->timeout_ms);
        rd_kafka_topic_destroy(rkt);
        if (err)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "metadata of %s: %s",
                              k->names[t], rd_kafka_err2str(err));
        if (md->topic_cnt == 1 && !md->topics[0].err)
            n = md->topics[0].partition_cnt;
        else
            dlb_warn("replay: no topic %s (%s); nothing to replay from it", k->names[t],
                     rd_kafka_err2str(md->topic_cnt ? md->topics[0].err : err));
        for (int p = 0; p < n && !rc; p++)
            rc = ksource_add(k, t, md->topics[0].partitions[p].id);
        rd_kafka_metadata_destroy(md);
        if (rc)
            return dlb_seterr(errstr, errstr_size, rc, "out of memory");
    }
    return 0;
}

/* Narrow every stream's start (or end) to the offset of its first record at
 * or after ms; a stream without such a record starts (or ends) at its end,
 * a partition the broker cannot answer for keeps its watermark. */
static int ksource_offsets_for(ksource_t *k, replay_t *r, int64_t ms, int is_end, char *errstr,
                               size_t errstr_size)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)k->cnt);
    rd_kafka_resp_err_t err;
    int warned = 0;

    if (!l)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < k->cnt; i++)
        rd_kafka_topic_partition_list_add(l, k->names[k->streams[i]->t], k->streams[i]->partition)
            ->offset = ms;
    err = rd_kafka_offsets_for_times(k->rk, l, r->o->timeout_ms);
    if (err && err != RD_KAFKA_RESP_ERR__TIMED_OUT) {
        rd_kafka_topic_partition_list_destroy(l);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                          "offsets for time %" PRId64 ": %s", ms, rd_kafka_err2str(err));
    }
    for (int i = 0; i < l->cnt; i++) {
        stream_t *s = k->streams[i];
        int64_t *field = is_end ? &s->end : &s->start;
        const rd_kafka_topic_partition_t *p = &l->elems[i];

        if (err || p->err) {
            /* Keep the watermark: every record is then read and filtered by
             * its timestamp, which is slower but as exact. */
            if (!warned++)
                dlb_warn("replay: %s [%" PRId32 "]: no offset for time %" PRId64
                         " (%s); reading from the watermark and filtering by timestamp",
                         p->topic, p->partition, ms, rd_kafka_err2str(err ? err : p->err));
        } else if (p->offset >= 0 && p->offset >= s->start && p->offset <= s->end) {
            *field = p->offset;
        } else if (p->offset < 0) {
            /* No record at or after the time: the range begins/ends at the end. */
            *field = s->end;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return 0;
}

/* Offsets [start, end) of each partition: the watermarks narrowed by the
 * offsets for --from and --to; then assign those with records. */
static int ksource_assign(ksource_t *k, replay_t *r, char *errstr, size_t errstr_size)
{
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_resp_err_t err;
    int rc;

    for (size_t i = 0; i < k->cnt; i++) {
        stream_t *s = k->streams[i];
        err = rd_kafka_query_watermark_offsets(k->rk, k->names[s->t], s->partition, &s->start,
                                               &s->end, r->o->timeout_ms);
        if (err)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                              "watermarks of %s [%" PRId32 "]: %s", k->names[s->t], s->partition,
                              rd_kafka_err2str(err));
    }
    if (k->cnt == 0)
        return 0;
    if ((rc = ksource_offsets_for(k, r, r->o->from_ms, 0, errstr, errstr_size)) ||
        (rc = ksource_offsets_for(k, r, r->o->to_ms, 1, errstr, errstr_size)))
        return rc;
    if (!(l = rd_kafka_topic_partition_list_new((int)k->cnt)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < k->cnt; i++) {
        stream_t *s = k->streams[i];
        if (s->start >= s->end) {
            s->done = 1;
            continue;
        }
        r->st->total += s->end - s->start;
        rd_kafka_topic_partition_list_add(l, k->names[s->t], s->partition)->offset = s->start;
        dlb_dbg("replay: %s [%" PRId32 "] offsets %" PRId64 "..%" PRId64, k->names[s->t],
                s->partition, s->start, s->end);
    }
    err = rd_kafka_assign(k->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "assign: %s",
                          rd_kafka_err2str(err));
    return 0;
}

static stream_t *ksource_find(ksource_t *k, const rd_kafka_message_t *m)
{
    const char *name = rd_kafka_topic_name(m->rkt);

    for (size_t i = 0; i < k->cnt; i++)
        if (k->streams[i]->partition == m->partition && !strcmp(k->names[k->streams[i]->t], name))
            return k->streams[i];
    return NULL;
}

/* Take one message or event from the consumer into its stream's buffer. */
static int ksource_fill(ksource_t *k, rd_kafka_message_t *m, char *errstr, size_t errstr_size)
{
    stream_t *s = m->rkt ? ksource_find(k, m) : NULL;

    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        /* The end of what is committed now: nothing more of the range. */
        if (s && !s->done) {
            s->done = 1;
            stream_pause(k->rk, k->names[s->t], s, 1);
        }
        rd_kafka_message_destroy(m);
        return 0;
    }
    if (m->err) {
        int rc = 0;
        if (m->err == RD_KAFKA_RESP_ERR__FATAL || m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE ||
            m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET)
            /* Retention deleted the range while we read it: the replay
             * would be incomplete, so say so. */
            rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "consume %s: %s",
                            s ? k->names[s->t] : "", rd_kafka_message_errstr(m));
        else
            dlb_warn("replay: consume: %s; retrying", rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        return rc;
    }
    if (!s || s->done || m->offset >= s->end) {
        if (s && !s->done) {
            s->done = 1;
            stream_pause(k->rk, k->names[s->t], s, 1);
        }
        rd_kafka_message_destroy(m);
        return 0;
    }
    s->buf[(s->head + s->cnt) % STREAM_CAP] = m;
    s->cnt++;
    if (m->offset + 1 >= s->end) {
        s->done = 1;
        stream_pause(k->rk, k->names[s->t], s, 1);
    } else if (s->cnt == STREAM_CAP) {
        stream_pause(k->rk, k->names[s->t], s, 1);
    }
    return 0;
}

/* Copy one merged record to the target. */
static int ksource_send(replay_t *r, const stream_t *s, rd_kafka_message_t *m, char *errstr,
                        size_t errstr_size)
{
    rd_kafka_headers_t *hdrs = NULL, *copy = NULL;
    int64_t ts = rd_kafka_message_timestamp(m, NULL);

    if (!in_range(r, s->t, ts))
        return 0;
    if (!rd_kafka_message_headers(m, &hdrs) && !(copy = rd_kafka_headers_copy(hdrs)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    return sink_send(r, s->t, m->key, m->key_len, m->payload, m->len, copy, ts, errstr,
                     errstr_size);
}

static int replay_kafka(const dlb_conf_t *conf, replay_t *r, char *errstr, size_t errstr_size)
{
    /* No group and no commits: the replay reads by offset and leaves the
     * source's consumer groups alone; only committed transactions count. */
    static const char *const base[] = {"enable.auto.commit",
                                       "false",
                                       "enable.auto.offset.store",
                                       "false",
                                       "enable.partition.eof",
                                       "true",
                                       "isolation.level",
                                       "read_committed",
                                       "auto.offset.reset",
                                       "error",
                                       "client.id",
                                       "dlbrain-replay",
                                       NULL};
    const char *extra[] = {"group.id", NULL, NULL};
    char group[300];
    ksource_t k = {0};
    rd_kafka_conf_t *kc;
    int64_t *ts = NULL, last_msg;
    int *ready = NULL, rc;
    char sub[512];

    for (size_t t = 0; t < r->st->topic_cnt; t++)
        snprintf(k.names[t], sizeof(k.names[t]), "%s.%s", r->o->source, r->st->topics[t].name);
    /* librdkafka assigns partitions only in a consumer with a group id; with
     * nothing subscribed or committed the group itself is never joined. */
    snprintf(group, sizeof(group), "%s.replay", r->o->into);
    extra[1] = group;
    if (!(kc = dlb_kafka_conf_new(conf, base, extra, errstr, errstr_size)))
        return DLB_ERR_CONF;
    if (!(k.rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "kafka consumer: %s", sub);
    }
    rd_kafka_poll_set_consumer(k.rk);
    if ((rc = ksource_partitions(&k, r, errstr, errstr_size)) ||
        (rc = ksource_assign(&k, r, errstr, errstr_size)))
        goto out;
    if (k.cnt && (!(ts = calloc(k.cnt, sizeof(*ts))) || !(ready = calloc(k.cnt, sizeof(*ready))))) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    last_msg = dlb_clock_mono_ms();
    while (!stopped(r)) {
        stream_t *waiting = NULL, *s;
        size_t i;

        /* The merge may take a record only when every unfinished stream has
         * a head: a stream still empty could hold an earlier timestamp. */
        for (i = 0; i < k.cnt && !waiting; i++)
            if (!k.streams[i]->done && !k.streams[i]->cnt)
                waiting = k.streams[i];
        if (waiting) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(k.rk, 100);
            tick(r, 0);
            rd_kafka_poll(r->producer, 0);
            if (!m) {
                if (dlb_clock_mono_ms() - last_msg > r->o->timeout_ms) {
                    rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                                    "%s [%" PRId32 "]: nothing fetched for %d ms (offsets %" PRId64
                                    "..%" PRId64 ")",
                                    k.names[waiting->t], waiting->partition, r->o->timeout_ms,
                                    waiting->start, waiting->end);
                    goto out;
                }
                continue;
            }
            last_msg = dlb_clock_mono_ms();
            if ((rc = ksource_fill(&k, m, errstr, errstr_size)))
                goto out;
            continue;
        }
        for (i = 0; i < k.cnt; i++) {
            s = k.streams[i];
            ready[i] = s->cnt > 0;
            if (ready[i])
                ts[i] = rd_kafka_message_timestamp(s->buf[s->head], NULL);
        }
        if ((i = dlb_replay_merge_pick(ts, ready, k.cnt)) == k.cnt)
            break; /* every stream done and drained */
        s = k.streams[i];
        {
            rd_kafka_message_t *m = s->buf[s->head];
            s->head = (s->head + 1) % STREAM_CAP;
            s->cnt--;
            if (s->paused && !s->done && s->cnt < STREAM_CAP / 2)
                stream_pause(k.rk, k.names[s->t], s, 0);
            rc = ksource_send(r, s, m, errstr, errstr_size);
            rd_kafka_message_destroy(m);
            if (rc)
                goto out;
        }
    }
    rc = 0;
out:
    free(ts);
    free(ready);
    ksource_free(&k);
    return rc;
}

/* ---- source: the PostgreSQL history ----------------------------------------- */

static const char *history_table(const char *topic)
{
    for (size_t i = 0; i < EVENT_TOPIC_CNT; i++)
        if (!strcmp(event_topics[i].topic, topic))
            return event_topics[i].table;
    return NULL;
}

/* SELECT topic index, job_uid, event_time_ms, event_id, raw of every chosen
 * table in the range ($1, $2), in the schema quoted as an identifier. */
static int history_sql(PGconn *pg, const replay_t *r, dlb_sbuf_t *sql, char *errstr,
                       size_t errstr_size)
{
    char part[256], *schema;
    int rc;

    if ((rc = dlb_pg_conn_ident(pg, r->o->schema, &schema, errstr, errstr_size)))
        return rc;
    for (size_t t = 0; t < r->st->topic_cnt && !rc; t++) {
        snprintf(part, sizeof(part),
                 "%sSELECT %zu::int4 AS t, job_uid, event_time_ms, event_id, raw FROM ",
                 t ? " UNION ALL " : "", t);
        if (dlb_sbuf_str(sql, part) || dlb_sbuf_str(sql, schema) || dlb_sbuf_str(sql, ".") ||
            dlb_sbuf_str(sql, history_table(r->st->topics[t].name)) ||
            dlb_sbuf_str(sql, " WHERE event_time_ms >= $1 AND event_time_ms < $2"))
            rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    PQfreemem(schema);
    return rc;
}

static int64_t be64(const char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = (v << 8) | (unsigned char)p[i];
    return (int64_t)v;
}

static int history_rows(PGconn *pg, replay_t *r, char *errstr, size_t errstr_size)
{
    for (;;) {
        PGresult *res;
        int n, rc;

        if ((rc = dlb_pg_conn_exec(pg, "FETCH " PG_FETCH_ROWS " FROM dlb_replay", 0, NULL, NULL,
                                   DLB_PG_BINARY, &res, "fetch", errstr, errstr_size)))
            return rc;
        n = PQntuples(res);
        for (int i = 0; i < n && !rc && !stopped(r); i++) {
            uint32_t t;
            int64_t ts;

            if (PQgetlength(res, i, 0) != 4 || PQgetlength(res, i, 2) != 8) {
                rc = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                                "postgresql: unexpected binary row layout");
                break;
            }
            memcpy(&t, PQgetvalue(res, i, 0), 4);
            t = ntohl(t);
            ts = be64(PQgetvalue(res, i, 2));
            if (t >= r->st->topic_cnt || !in_range(r, t, ts))
                continue;
            rc = sink_send(r, t, PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1),
                           PQgetvalue(res, i, 4), (size_t)PQgetlength(res, i, 4), NULL, ts, errstr,
                           errstr_size);
        }
        PQclear(res);
        if (rc || n == 0 || stopped(r))
            return rc;
    }
}

/* Run prefix sel suffix with the range as $1 and $2; *out (if given) the
 * result, to PQclear(). */
static int history_exec(PGconn *pg, const char *prefix, const char *sel, const char *suffix,
                        const char *const *range, PGresult **out, const char *what, char *errstr,
                        size_t errstr_size)
{
    dlb_sbuf_t q = {0};
    int rc;

    if (dlb_sbuf_str(&q, prefix) || dlb_sbuf_str(&q, sel) || dlb_sbuf_str(&q, suffix))
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    else
        rc = dlb_pg_conn_exec(pg, q.p, 2, range, NULL, 0, out, what, errstr, errstr_size);
    free(q.p);
    return rc;
}

static int replay_pg(const dlb_conf_t *conf, replay_t *r, char *errstr, size_t errstr_size)
{
    char from[24], to[24];
    const char *params[2] = {from, to};
    dlb_sbuf_t sel = {0};
    PGconn *pg = NULL;
    PGresult *res;
    int rc;

    snprintf(from, sizeof(from), "%" PRId64, r->o->from_ms);
    snprintf(to, sizeof(to), "%" PRId64, r->o->to_ms);
    if ((rc = dlb_pg_open(&pg, conf->pg_dsn, errstr, errstr_size)) ||
        (rc = history_sql(pg, r, &sel, errstr, errstr_size)))
        goto out;
    /* One snapshot for the count and the rows; a cursor keeps memory flat. */
    if ((rc = dlb_pg_conn_exec(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL,
                               0, NULL, "begin", errstr, errstr_size)) ||
        (rc = history_exec(pg, "SELECT count(*) FROM (", sel.p, ") u", params, &res, r->o->schema,
                           errstr, errstr_size)))
        goto out;
    r->st->total = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    /* Event time, then event id (bytewise, "C" collation), then topic: the
     * order the consumers apply a job's events in. */
    if ((rc = history_exec(pg, "DECLARE dlb_replay NO SCROLL CURSOR FOR ", sel.p,
                           " ORDER BY 3, 4, 1", params, NULL, "declare cursor", errstr,
                           errstr_size)))
        goto out;
    rc = history_rows(pg, r, errstr, errstr_size);
out:
    free(sel.p);
    PQfinish(pg);
    return rc;
}

/* ---- source and target ------------------------------------------------------ */

int dlb_replay_check_target(const dlb_conf_t *conf, const char *source_opt, const char *into,
                            char *source, size_t source_size, char *errstr, size_t errstr_size)
{
    PGconn *pg = NULL;
    dlb_env_t env = {0};
    char sub[512];
    int rc;

    if ((rc = dlb_env_name_check(into, sub, sizeof(sub)))) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "--into: %s", sub);
        goto out;
    }
    /* The registry decides what is virtual: without it nothing may be
     * written, since the target could be someone's real environment. */
    if ((rc = dlb_env_registry_connect(conf->pg_dsn, &pg, sub, sizeof(sub))) ||
        (rc = dlb_env_registry_migrate(pg, sub, sizeof(sub)))) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                        "cannot read the environment registry: %s", sub);
        goto out;
    }
    if (source_opt && *source_opt) {
        snprintf(source, source_size, "%s", source_opt);
    } else if ((rc = dlb_env_real(pg, source, source_size, sub, sizeof(sub)))) {
        if (rc != DLB_ERR_NOTFOUND) {
            rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "%s", sub);
            goto out;
        }
        snprintf(source, source_size, "%s", conf->env);
    }
    if (!strcmp(source, into)) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                        "refusing to replay %s into itself: --into must differ from the source",
                        into);
        goto out;
    }
    if ((rc = dlb_env_get(pg, into, &env, sub, sizeof(sub)))) {
        rc = rc == DLB_ERR_NOTFOUND
                 ? dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "refusing to replay into %s: %s (create it with 'dlbrain env "
                              "create %s')",
                              into, sub, into)
                 : dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "%s", sub);
        goto out;
    }
    if (env.kind == DLB_ENV_REAL)
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                        "refusing to replay into %s: it is the real environment; replay only "
                        "into a virtual one",
                        into);
out:
    dlb_env_clear(&env);
    if (pg)
        PQfinish(pg);
    return rc;
}

/* ---- run ------------------------------------------------------------------- */

static int known_topic(const char *name, int from_pg)
{
    for (size_t i = 0; i < EVENT_TOPIC_CNT; i++)
        if (!strcmp(event_topics[i].topic, name))
            return !from_pg || event_topics[i].table;
    return 0;
}

static int check_opts(const dlb_replay_opts_t *o, dlb_replay_stats_t *st, char *errstr,
                      size_t errstr_size)
{
    const char *const *topics = o->topics ? o->topics : dlb_replay_default_topics(o->from_pg);

    if (!o->source || !*o->source || !o->into || !*o->into)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "a source and a target are needed");
    if (!strcmp(o->source, o->into))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "refusing to replay %s into itself",
                          o->source);
    if (o->from_ms >= o->to_ms)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "empty time range: --from must be before --to");
    if (o->speed < 0)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "speed must be positive");
    if (o->from_pg && (!o->schema || !*o->schema))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "no PostgreSQL schema");
    for (; *topics; topics++) {
        if (!known_topic(*topics, o->from_pg))
            return dlb_seterr(
                errstr, errstr_size, DLB_ERR_INVALID, "topic %s: %s", *topics,
                known_topic(*topics, 0)
                    ? "PostgreSQL does not keep it (replay it from Kafka)"
                    : "not an event topic (job-events, metrics, k8s-events, plan-requests, "
                      "config-requests)");
        for (size_t i = 0; i < st->topic_cnt; i++)
            if (!strcmp(st->topics[i].name, *topics))
                return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "topic %s given twice",
                                  *topics);
        if (st->topic_cnt == DLB_REPLAY_MAX_TOPICS)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "too many topics");
        st->topics[st->topic_cnt++].name = *topics;
    }
    if (!st->topic_cnt)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "no topic to replay");
    return 0;
}

static int producer_new(const dlb_conf_t *conf, replay_t *r, char *errstr, size_t errstr_size)
{
    /* Idempotence: retries neither duplicate nor reorder a partition, so
     * each job's events land once and in order. */
    static const char *const base[] = {"enable.idempotence", "true",           "linger.ms", "5",
                                       "client.id",          "dlbrain-replay", NULL};
    rd_kafka_conf_t *kc = dlb_kafka_conf_new(conf, base, NULL, errstr, errstr_size);
    char sub[512];

    if (!kc)
        return DLB_ERR_CONF;
    rd_kafka_conf_set_dr_msg_cb(kc, replay_dr_cb);
    rd_kafka_conf_set_opaque(kc, r);
    if (!(r->producer = rd_kafka_new(RD_KAFKA_PRODUCER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "kafka producer: %s", sub);
    }
    return 0;
}

int dlb_replay_run(const dlb_conf_t *conf, const dlb_replay_opts_t *o, dlb_replay_stats_t *st,
                   char *errstr, size_t errstr_size)
{
    replay_t r = {.o = o, .st = st};
    int64_t deadline;
    int rc, frc = 0;

    memset(st, 0, sizeof(*st));
    r.start_wall = dlb_clock_mono_ms();
    if ((rc = check_opts(o, st, errstr, errstr_size)))
        return rc;
    for (size_t t = 0; t < st->topic_cnt; t++)
        snprintf(r.target[t], sizeof(r.target[t]), "%s.%s", o->into, st->topics[t].name);
    if ((rc = producer_new(conf, &r, errstr, errstr_size)))
        goto out;
    rc = o->from_pg ? replay_pg(conf, &r, errstr, errstr_size)
                    : replay_kafka(conf, &r, errstr, errstr_size);
    /* Deliver what was produced even after an error, so the counts say what
     * the target really holds. */
    deadline = dlb_clock_mono_ms() + o->timeout_ms;
    while (rd_kafka_outq_len(r.producer) > 0 && dlb_clock_mono_ms() < deadline) {
        rd_kafka_flush(r.producer, PROGRESS_MS);
        tick(&r, 0);
    }
    if (rd_kafka_outq_len(r.producer) > 0)
        frc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                         "%d record(s) not delivered within %d ms", rd_kafka_outq_len(r.producer),
                         o->timeout_ms);
    for (size_t i = 0; i < r.jobs.cnt; i++)
        if (r.jobs.v[i].in != r.jobs.v[i].out)
            st->jobs_bad++;
    st->jobs = (int64_t)r.jobs.cnt;
    if (!rc && frc)
        rc = frc;
    if (!rc && (st->failed || st->jobs_bad))
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                        "%" PRId64 " record(s) failed delivery; %" PRId64
                        " job(s) have fewer records in %s than read",
                        st->failed, st->jobs_bad, o->into);
    if (!rc && stopped(&r))
        rc =
            dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "stopped before the end of the range");
out:
    /* Offset ranges count transaction markers too: a finished replay is 100%. */
    if (!rc || st->total < st->read)
        st->total = st->read;
    tick(&r, 1);
    if (r.producer)
        rd_kafka_destroy(r.producer);
    jobs_free(&r.jobs);
    return rc;
}
