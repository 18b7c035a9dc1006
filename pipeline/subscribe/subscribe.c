/* A master-side subscriber of an output topic (subscribe.h). */
#include "subscribe.h"

#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "err.h"
#include "kafka.h"
#include "latency.h"
#include "log.h"

/* How many ids a subscriber remembers unless told otherwise. */
#define SEEN_MAX (1 << 20)

int dlb_seen_check(dlb_seen_t *s, const char *id)
{
    ENTRY e = {0}, *found;
    char **k, *key;
    size_t max = s->max ? s->max : SEEN_MAX;

    if (!s->ready) {
        if (!hcreate_r(max, &s->h))
            goto full;
        s->ready = 1;
    }
    e.key = (char *)id;
    if (hsearch_r(e, FIND, &found, &s->h))
        return 1;
    if (s->n >= max || !(k = realloc(s->keys, (s->n + 1) * sizeof(*k))))
        goto full;
    s->keys = k;
    if (!(key = strdup(id)))
        goto full;
    e.key = key;
    if (!hsearch_r(e, ENTER, &found, &s->h)) {
        free(key);
        goto full;
    }
    s->keys[s->n++] = key;
    return 0;
full:
    s->full = 1;
    return 0;
}

void dlb_seen_free(dlb_seen_t *s)
{
    size_t max = s->max;

    if (s->ready)
        hdestroy_r(&s->h);
    for (size_t i = 0; i < s->n; i++)
        free(s->keys[i]);
    free(s->keys);
    memset(s, 0, sizeof(*s));
    s->max = max;
}

/* What a repeat is recognised by: output ids derive from their trigger's
 * event id, which is unique within a job only, so the key is the job uid
 * (its length first, so no two pairs make the same key) and the id. */
static const char *seen_key(const dlb_event_t *ev, char *buf, size_t size)
{
    const char *uid = dlb_event_job_uid(ev);

    snprintf(buf, size, "%zu:%s%s", strlen(uid), uid, dlb_event_id(ev));
    return buf;
}

static int wanted(const dlb_subscribe_opts_t *o, const char *uid)
{
    if (!o->njobs)
        return 1;
    for (size_t i = 0; i < o->njobs; i++)
        if (!strcmp(o->jobs[i], uid))
            return 1;
    return 0;
}

int dlb_subscribe_run(const dlb_conf_t *conf, const dlb_subscribe_opts_t *o, dlb_subscribe_cb cb,
                      void *opaque, long *delivered, char *errstr, size_t errstr_size)
{
    static const char *const extra[] = {"isolation.level", "read_committed", NULL};
    dlb_catalog_t *cat = NULL;
    rd_kafka_t *rk = NULL;
    rd_kafka_topic_partition_list_t *sub;
    dlb_seen_t seen = {0};
    char topic[256], group[256], sub_err[512], key[2 * DLB_ID_MAX + 24];
    long repeats = 0;
    int full_said = 0;
    int64_t deadline;
    int err;

    *delivered = 0;
    /* A group of its own, so every subscriber sees every output. */
    snprintf(group, sizeof(group), "%s.master.%d.%lld", conf->env, (int)getpid(),
             (long long)time(NULL));
    if ((err = dlb_catalog_new(&cat, errstr, errstr_size)) ||
        (err = dlb_kafka_consumer_new(conf, group, extra, &rk, errstr, errstr_size)))
        goto out;
    sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, dlb_conf_topic(conf, o->topic, topic, sizeof(topic)),
                                      RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    deadline = o->timeout_ms >= 0 ? dlb_lat_clock_ns() / 1000000 + o->timeout_ms : INT64_MAX;
    while (!(o->stop && *o->stop) && (!o->count || *delivered < o->count) &&
           dlb_lat_clock_ns() / 1000000 < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        dlb_event_t ev = {0};

        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
            /* Nothing more would come: stop rather than wait for ever. */
            rd_kafka_message_destroy(m);
            err = dlb_kafka_fatal(rk, errstr, errstr_size);
            goto out;
        } else if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                dlb_warn("kafka: %s; continuing", rd_kafka_message_errstr(m));
        } else if (dlb_codec_decode(cat, m->payload, m->len, &ev, sub_err, sizeof(sub_err)) ||
                   ev.type != o->type) {
            dlb_warn("%s offset %" PRId64 ": not a %s (%s); skipped", topic, m->offset,
                     dlb_event_type_name(o->type),
                     ev.type ? dlb_event_type_name(ev.type) : sub_err);
        } else if (!wanted(o, dlb_event_job_uid(&ev))) {
            /* another job's */
        } else if (!o->all && dlb_seen_check(&seen, seen_key(&ev, key, sizeof(key)))) {
            repeats++;
        } else {
            if (seen.full && !full_said++)
                dlb_warn("too many outputs to remember: repeated ids are delivered from now on");
            (*delivered)++;
            cb(cat, &ev, opaque);
        }
        dlb_event_clear(&ev);
        rd_kafka_message_destroy(m);
    }
    if (repeats)
        dlb_info("%ld repeated id(s) skipped (a redelivery)", repeats);
    err = !o->count || *delivered >= o->count
              ? 0
              : dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                           "received %ld of %ld before the timeout", *delivered, o->count);
out:
    dlb_kafka_consumer_destroy(rk);
    if (cat)
        dlb_catalog_destroy(cat);
    dlb_seen_free(&seen);
    return err;
}
