/* replay's Kafka source: every partition of the source environment's topics
 * read by offset, one buffered stream per partition, each record decoded for
 * its event time, those in the range merged by event time into the sink.
 *
 * The range is of event times; the broker finds offsets by record time (when
 * the record was produced). Each partition is read from its first record
 * stamped at or after from_ms - max_ahead_ms up to its first one stamped at
 * or after to_ms + max_late_ms (replay.h), each bound the watermark when
 * unbounded. */
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "after.h"
#include "clock.h"
#include "codec.h"
#include "err.h"
#include "kafka.h"
#include "log.h"

/* Messages buffered per partition before it is paused: the merge needs one
 * head per partition, and a partition far ahead of the others must not fill
 * memory while a slow one is fetched. */
#define STREAM_CAP 512

typedef struct stream {
    size_t t;
    int32_t partition;
    int64_t start, end; /* offsets [start, end) */
    rd_kafka_message_t *buf[STREAM_CAP];
    int64_t ev[STREAM_CAP]; /* the event time of each buffered record */
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
    dlb_catalog_t *cat;
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
    dlb_catalog_destroy(k->cat);
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
static int ksource_partitions(ksource_t *k, dlb_replay_t *r, char *errstr, size_t errstr_size)
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

/* Narrow every stream's start (or end) to the offset of its first record
 * stamped at or after ms; a stream without such a record starts (or ends) at
 * its end, a partition the broker cannot answer for keeps its watermark. */
static int ksource_offsets_for(ksource_t *k, dlb_replay_t *r, int64_t ms, int is_end, char *errstr,
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
            /* Keep the watermark: more records are then read and filtered
             * by event time, which is slower but as exact. */
            if (!warned++)
                dlb_warn("replay: %s [%" PRId32 "]: no offset for time %" PRId64
                         " (%s); reading from the watermark and filtering by event time",
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
 * offsets for the record times that may hold events of the range; then
 * assign those with records. */
static int ksource_assign(ksource_t *k, dlb_replay_t *r, char *errstr, size_t errstr_size)
{
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_resp_err_t err;
    int64_t ahead = r->o->max_ahead_ms, late = r->o->max_late_ms;
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
    /* Times at or below 0 are not times to the broker (-1 latest, -2
     * earliest): from the low watermark then, as when unbounded. */
    if (ahead >= 0 && r->o->from_ms > ahead &&
        (rc = ksource_offsets_for(k, r, r->o->from_ms - ahead, 0, errstr, errstr_size)))
        return rc;
    if (late >= 0 && r->o->to_ms > 0 && r->o->to_ms <= INT64_MAX - late &&
        (rc = ksource_offsets_for(k, r, r->o->to_ms + late, 1, errstr, errstr_size)))
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

/* The event time of m into *t (the codec reads it without building the
 * event): the time in its event, or for a record that does not decode (the
 * source's consumers dead-lettered it) its record time, the best there is.
 * A schema id the registry could not be asked about is an error: the record
 * may well decode later. */
static int ksource_event_time(ksource_t *k, const stream_t *s, const rd_kafka_message_t *m,
                              int64_t *t, char *errstr, size_t errstr_size)
{
    char sub[512];
    int64_t ev = 0;
    int rc =
        dlb_codec_event_time(k->cat, m->payload, m->payload ? m->len : 0, &ev, sub, sizeof(sub));

    if (rc == DLB_ERR_TRANSIENT || rc == DLB_ERR_NOMEM)
        return dlb_seterr(errstr, errstr_size, rc, "decode %s [%" PRId32 "] offset %" PRId64 ": %s",
                          k->names[s->t], m->partition, m->offset, sub);
    *t = !rc && ev > 0 ? ev : rd_kafka_message_timestamp(m, NULL);
    return 0;
}

/* Take one message or event from the consumer: a record whose event time is
 * in the range into its stream's buffer, others counted and dropped. */
static int ksource_fill(ksource_t *k, dlb_replay_t *r, rd_kafka_message_t *m, char *errstr,
                        size_t errstr_size)
{
    stream_t *s = m->rkt ? ksource_find(k, m) : NULL;
    int64_t t = 0;
    int rc;

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
        rc = 0;
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
    if ((rc = ksource_event_time(k, s, m, &t, errstr, errstr_size))) {
        rd_kafka_message_destroy(m);
        return rc;
    }
    if (m->offset + 1 >= s->end) {
        s->done = 1;
        stream_pause(k->rk, k->names[s->t], s, 1);
    }
    if (!dlb_replay_in_range(r, s->t, t)) {
        rd_kafka_message_destroy(m);
        return 0;
    }
    s->buf[(s->head + s->cnt) % STREAM_CAP] = m;
    s->ev[(s->head + s->cnt) % STREAM_CAP] = t;
    s->cnt++;
    if (!s->done && s->cnt == STREAM_CAP)
        stream_pause(k->rk, k->names[s->t], s, 1);
    return 0;
}

/* Copy one merged record, of event time ts, to the target. */
static int ksource_send(dlb_replay_t *r, const stream_t *s, rd_kafka_message_t *m, int64_t ts,
                        char *errstr, size_t errstr_size)
{
    rd_kafka_headers_t *hdrs = NULL, *copy = NULL;

    if (!rd_kafka_message_headers(m, &hdrs) && !(copy = rd_kafka_headers_copy(hdrs)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    /* Its offsets are the source's; the replay's order is by event time. */
    if (copy)
        rd_kafka_header_remove(copy, DLB_AFTER_HEADER);
    return dlb_replay_send(r, s->t, m->key, m->key_len, m->payload, m->len, copy, ts, errstr,
                           errstr_size);
}

int dlb_replay_from_kafka(const dlb_conf_t *conf, dlb_replay_t *r, char *errstr, size_t errstr_size)
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
    if ((rc = dlb_catalog_new(&k.cat, errstr, errstr_size)) ||
        (rc = ksource_partitions(&k, r, errstr, errstr_size)) ||
        (rc = ksource_assign(&k, r, errstr, errstr_size)))
        goto out;
    if (k.cnt && (!(ts = calloc(k.cnt, sizeof(*ts))) || !(ready = calloc(k.cnt, sizeof(*ready))))) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    last_msg = dlb_clock_mono_ms();
    while (!dlb_replay_stopped(r)) {
        stream_t *waiting = NULL, *s;
        size_t i;

        /* The merge may take a record only when every unfinished stream has
         * a head: a stream still empty could hold an earlier timestamp. */
        for (i = 0; i < k.cnt && !waiting; i++)
            if (!k.streams[i]->done && !k.streams[i]->cnt)
                waiting = k.streams[i];
        if (waiting) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(k.rk, 100);
            dlb_replay_tick(r, 0);
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
            if ((rc = ksource_fill(&k, r, m, errstr, errstr_size)))
                goto out;
            continue;
        }
        for (i = 0; i < k.cnt; i++) {
            s = k.streams[i];
            ready[i] = s->cnt > 0;
            if (ready[i])
                ts[i] = s->ev[s->head];
        }
        if ((i = dlb_replay_merge_pick(ts, ready, k.cnt)) == k.cnt)
            break; /* every stream done and drained */
        s = k.streams[i];
        {
            rd_kafka_message_t *m = s->buf[s->head];
            int64_t t = s->ev[s->head];
            s->head = (s->head + 1) % STREAM_CAP;
            s->cnt--;
            if (s->paused && !s->done && s->cnt < STREAM_CAP / 2)
                stream_pause(k.rk, k.names[s->t], s, 0);
            rc = ksource_send(r, s, m, t, errstr, errstr_size);
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
