/* The replay's sink, below both sources: the event topics and their history
 * tables, the merge step, the producer into the target's topics with
 * per-job counts and pacing, progress and summary. */
#include "replay.h"
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "clock.h"
#include "err.h"
#include "kafka.h"
#include "log.h"

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

const char *dlb_replay_history_table(const char *topic)
{
    for (size_t i = 0; i < EVENT_TOPIC_CNT; i++)
        if (!strcmp(event_topics[i].topic, topic))
            return event_topics[i].table;
    return NULL;
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
        fprintf(fp, "event times: %s .. %s\n",
                dlb_replay_format_time(st->first_ts, first, sizeof(first)),
                dlb_replay_format_time(st->last_ts, last, sizeof(last)));
    fprintf(fp, "duration: %.3f s, %.0f records/s\n", secs, secs > 0 ? (double)st->in / secs : 0.0);
}

/* ---- per-job counts -------------------------------------------------------- */

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

/* The message opaque: job index and topic index, so the delivery report can
 * count per job and per topic. */
#define OPQ_TOPIC_BITS 4
#define OPQ(job, t)    ((void *)(((uintptr_t)(job) << OPQ_TOPIC_BITS) | (uintptr_t)(t)))

static void replay_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    dlb_replay_t *r = opaque;
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

int dlb_replay_stopped(const dlb_replay_t *r)
{
    return r->o->stop && *r->o->stop;
}

void dlb_replay_tick(dlb_replay_t *r, int force)
{
    int64_t now = dlb_clock_mono_ms();

    if (!force && now < r->next_progress)
        return;
    r->next_progress = now + DLB_REPLAY_PROGRESS_MS;
    r->st->elapsed_ms = now - r->start_wall;
    if (r->o->progress)
        r->o->progress(r->st, r->o->opaque);
}

/* Wait until the record of timestamp ts is due: the first record goes at
 * once, each later one (ts - first) / speed after it. The wait starts at the
 * first record, not at --from, so an empty head of the range costs nothing. */
static void pace(dlb_replay_t *r, int64_t ts)
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
    while ((now = dlb_clock_mono_ms()) < due && !dlb_replay_stopped(r)) {
        int64_t wait = due - now;
        /* Serve delivery reports and the progress bar while waiting. */
        rd_kafka_poll(r->producer,
                      (int)(wait < DLB_REPLAY_PROGRESS_MS ? wait : DLB_REPLAY_PROGRESS_MS));
        dlb_replay_tick(r, 0);
    }
}

int dlb_replay_in_range(dlb_replay_t *r, size_t t, int64_t ts)
{
    if (!r->st->read++ || ts < r->st->seen_first)
        r->st->seen_first = ts;
    if (r->st->read == 1 || ts > r->st->seen_last)
        r->st->seen_last = ts;
    if (ts >= r->o->from_ms && ts < r->o->to_ms)
        return 1;
    r->st->skipped++;
    r->st->topics[t].skipped++;
    return 0;
}

int dlb_replay_send(dlb_replay_t *r, size_t t, const void *key, size_t key_len, const void *value,
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
        /* No timestamp: the record is stamped now. Stamped with its event
         * time, the broker's time retention would count its age from then
         * and delete an old range's copy at once; the event time is in the
         * value, where the consumers read it. */
        err = rd_kafka_producev(r->producer, RD_KAFKA_V_TOPIC(r->target[t]),
                                RD_KAFKA_V_KEY((void *)key, key_len),
                                RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_HEADERS(hdrs),
                                RD_KAFKA_V_OPAQUE(OPQ(job, t)),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || dlb_replay_stopped(r))
            break;
        /* The local queue is full: let deliveries drain it. */
        rd_kafka_poll(r->producer, 100);
        dlb_replay_tick(r, 0);
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
    dlb_replay_tick(r, 0);
    return 0;
}

int dlb_replay_known_topic(const char *name, int from_pg)
{
    for (size_t i = 0; i < EVENT_TOPIC_CNT; i++)
        if (!strcmp(event_topics[i].topic, name))
            return !from_pg || event_topics[i].table;
    return 0;
}

int dlb_replay_sink_open(const dlb_conf_t *conf, dlb_replay_t *r, char *errstr, size_t errstr_size)
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

void dlb_replay_sink_close(dlb_replay_t *r)
{
    jobs_free(&r->jobs);
}
