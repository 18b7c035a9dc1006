/* The agent's plan subscription: one thread with its own consumer reads
 * <env>.plans from where it ended at subscription time, keeps this job's plans
 * (each plan id once) and hands them to a callback or to a ring for
 * dlb_agent_poll_plan().
 *
 * No consumer group is joined: the consumer assigns itself the partitions,
 * so many agents start at once without a rebalance, and nothing is committed
 * (librdkafka still wants a group.id to assign: a unique one, never used on
 * the brokers). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "agent_internal.h"
#include "codec.h"
#include "err.h"
#include "kafka.h"

/* How long one metadata or offset query may take before the thread checks
 * whether it should stop. */
#define QUERY_MS 1000

static int stopping(dlb_agent_t *a)
{
    int s;

    pthread_mutex_lock(&a->lock);
    s = a->plans_stop;
    pthread_mutex_unlock(&a->lock);
    return s;
}

static void warn_throttled(dlb_agent_t *a, const char *what)
{
    char line[1024];
    int due;

    pthread_mutex_lock(&a->lock);
    due = agent_throttle(a, &a->thr_kafka, what, line, sizeof(line));
    pthread_mutex_unlock(&a->lock);
    if (due)
        agent_log(a, DLB_AGENT_LOG_WARNING, "%s", line);
}

/* The partition count of the plans topic; retried until known or stopped. */
static int32_t partition_count(dlb_agent_t *a, const char *topic)
{
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt;
    char what[512];
    int32_t cnt = -1;

    if (!(rkt = rd_kafka_topic_new(a->consumer, topic, NULL)))
        return -1;
    while (cnt < 0 && !stopping(a)) {
        rd_kafka_resp_err_t err = rd_kafka_metadata(a->consumer, 0, rkt, &md, QUERY_MS);

        if (!err && md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0)
            cnt = md->topics[0].partition_cnt;
        else {
            snprintf(what, sizeof(what), "plans: no metadata of %s yet: %s", topic,
                     err ? rd_kafka_err2str(err)
                         : rd_kafka_err2str(md->topic_cnt ? md->topics[0].err
                                                          : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
            warn_throttled(a, what);
        }
        if (!err)
            rd_kafka_metadata_destroy(md);
        if (cnt < 0) {
            /* Serves logs while waiting; nothing is assigned, so no message comes. */
            rd_kafka_message_t *m = rd_kafka_consumer_poll(a->consumer, 100);

            if (m)
                rd_kafka_message_destroy(m);
        }
    }
    rd_kafka_topic_destroy(rkt);
    return cnt;
}

/* Assign the partitions at their end as of now (read_committed: the last
 * stable offset). A plan answering a request sent after this is at or past it. */
static int assign_at_end(dlb_agent_t *a, const char *topic)
{
    rd_kafka_topic_partition_list_t *parts;
    rd_kafka_resp_err_t aerr;
    int32_t cnt, one, first, last;
    int64_t lo, hi;
    char what[512];
    int rc = -1;

    if ((cnt = partition_count(a, topic)) < 0)
        return -1;
    one = dlb_kafka_key_partition(&a->conf.dc, a->uid, cnt);
    first = one < 0 ? 0 : one;
    last = one < 0 ? cnt - 1 : one;
    if (!(parts = rd_kafka_topic_partition_list_new(last - first + 1)))
        return -1;
    for (int32_t p = first; p <= last; p++) {
        rd_kafka_resp_err_t err;

        while (
            (err = rd_kafka_query_watermark_offsets(a->consumer, topic, p, &lo, &hi, QUERY_MS)) &&
            !stopping(a)) {
            snprintf(what, sizeof(what), "plans: no end offset of %s [%" PRId32 "] yet: %s", topic,
                     p, rd_kafka_err2str(err));
            warn_throttled(a, what);
        }
        if (err)
            goto out;
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset = hi;
    }
    if ((aerr = rd_kafka_assign(a->consumer, parts))) {
        snprintf(what, sizeof(what), "plans: the consumer refused its assignment: %s",
                 rd_kafka_err2str(aerr));
        warn_throttled(a, what);
        goto out;
    }
    agent_log(a, DLB_AGENT_LOG_DEBUG, "plans: reading %s partitions %" PRId32 "..%" PRId32, topic,
              first, last);
    rc = 0;
out:
    rd_kafka_topic_partition_list_destroy(parts);
    return rc;
}

/* Keep a plan for dlb_agent_poll_plan() (the oldest goes when full), or run
 * the callback. Takes ev's contents. */
static void deliver(dlb_agent_t *a, dlb_event_t *ev)
{
    agent_plan_t *p = agent_plan_new(ev);

    if (!p) {
        warn_throttled(a, "plans: out of memory: a plan was lost");
        return;
    }
    pthread_mutex_lock(&a->lock);
    a->st.plans_received++;
    if (a->plan_cb) {
        pthread_mutex_unlock(&a->lock);
        a->plan_cb(&p->pub, a->plan_opaque);
        dlb_agent_plan_destroy(&p->pub);
        return;
    }
    if (a->plans_cnt == (size_t)a->conf.plans_max) {
        dlb_agent_plan_destroy(&a->plans[a->plans_head]->pub);
        a->plans_head = (a->plans_head + 1) % (size_t)a->conf.plans_max;
        a->plans_cnt--;
        a->st.plans_dropped++;
    }
    a->plans[(a->plans_head + a->plans_cnt++) % (size_t)a->conf.plans_max] = p;
    pthread_cond_broadcast(&a->plan_ready);
    pthread_mutex_unlock(&a->lock);
}

/* @returns 1 when m must be read again: its schema id is unknown and the
 * schema registry did not answer (a plan is never skipped for an outage). */
static int handle(dlb_agent_t *a, const dlb_catalog_t *cat, const rd_kafka_message_t *m)
{
    dlb_event_t ev = {0};
    char sub[512], what[768];
    int err;

    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            snprintf(what, sizeof(what), "plans: %s", rd_kafka_message_errstr(m));
            warn_throttled(a, what);
        }
        return 0;
    }
    /* Plans are keyed by job uid: another job's are not decoded at all. */
    if (m->key_len != strlen(a->uid) || memcmp(m->key, a->uid, m->key_len))
        return 0;
    if ((int64_t)m->len > a->conf.dc.max_message_bytes) {
        snprintf(what, sizeof(what),
                 "plans: offset %" PRId64 " skipped: %zu bytes, more than message.max.bytes %lld",
                 m->offset, m->len, (long long)a->conf.dc.max_message_bytes);
        warn_throttled(a, what);
        return 0;
    }
    if ((err = dlb_codec_decode(cat, m->payload, m->len, &ev, sub, sizeof(sub))) ==
        DLB_ERR_TRANSIENT) {
        snprintf(what, sizeof(what), "plans: offset %" PRId64 " read again in %d ms: %s", m->offset,
                 AGENT_SR_RETRY_MS, sub);
        warn_throttled(a, what);
        return 1;
    }
    if (err || ev.type != DLB_EV_PLAN) {
        snprintf(what, sizeof(what), "plans: offset %" PRId64 " skipped: %s", m->offset,
                 ev.type ? "not a plan" : sub);
        warn_throttled(a, what);
    } else if (!strcmp(ev.u.plan.job_uid, a->uid)) {
        /* A full memory starts over: a very old plan id could pass again,
         * never a recent one. */
        if (a->seen.n >= a->seen.max || a->seen.full)
            dlb_seen_free(&a->seen);
        if (!dlb_seen_check(&a->seen, ev.u.plan.plan_id))
            deliver(a, &ev);
    }
    dlb_event_clear(&ev);
    return 0;
}

/* Read m's partition again from m, after AGENT_SR_RETRY_MS (or a stop). */
static void read_again(dlb_agent_t *a, const rd_kafka_message_t *m)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_error_t *e;
    struct timespec ts;
    char what[512];

    if (!l)
        return;
    rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(m->rkt), m->partition)->offset =
        m->offset;
    if ((e = rd_kafka_seek_partitions(a->consumer, l, QUERY_MS))) {
        snprintf(what, sizeof(what), "plans: seek back to offset %" PRId64 ": %s", m->offset,
                 rd_kafka_error_string(e));
        warn_throttled(a, what);
        rd_kafka_error_destroy(e);
    } else if (l->elems[0].err) {
        snprintf(what, sizeof(what), "plans: seek back to offset %" PRId64 ": %s", m->offset,
                 rd_kafka_err2str(l->elems[0].err));
        warn_throttled(a, what);
    }
    rd_kafka_topic_partition_list_destroy(l);
    /* plan_ready (monotonic) is broadcast by agent_plans_stop: a stop ends the wait. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += AGENT_SR_RETRY_MS / 1000;
    ts.tv_nsec += (AGENT_SR_RETRY_MS % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&a->lock);
    while (!a->plans_stop && pthread_cond_timedwait(&a->plan_ready, &a->lock, &ts) == 0)
        ;
    pthread_mutex_unlock(&a->lock);
}

static void *plans_main(void *arg)
{
    dlb_agent_t *a = arg;
    const char *topic = a->topics[DLB_EV_PLAN];
    dlb_catalog_t *cat = NULL;
    char sub[512];
    int ready;

    /* A catalog of this thread's own (avro-c values are not shared), with
     * the agent's wire ids. */
    if (dlb_catalog_new_wire(&cat, a->wire, sub, sizeof(sub))) {
        agent_log(a, DLB_AGENT_LOG_ERROR, "plans: schema catalog: %s; no plans will come", sub);
        cat = NULL;
    }
    ready = cat && !assign_at_end(a, topic);
    pthread_mutex_lock(&a->lock);
    /* Requests held for the subscription go now, even when it failed. */
    a->sub = SUB_READY;
    agent_send_due(a);
    pthread_mutex_unlock(&a->lock);
    while (ready && !stopping(a)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(a->consumer, 100);

        if (m) {
            if (handle(a, cat, m))
                read_again(a, m);
            rd_kafka_message_destroy(m);
        }
    }
    if (cat)
        dlb_catalog_destroy(cat);
    return NULL;
}

int dlb_agent_subscribe_plans(dlb_agent_t *a, dlb_agent_plan_cb cb, void *opaque)
{
    static const char *const base[] = {
        "enable.auto.commit", "false", "enable.partition.eof", "false", "client.id",
        "dlbrain-agent",      NULL};
    /* read_committed comes last (extra) so the pass-through cannot undo it: a
     * plan of an aborted transaction must never reach the job. */
    rd_kafka_conf_t *kc;
    char sub[512], group[256];
    const char *extra[] = {"isolation.level", "read_committed", "group.id", group, NULL};
    int rc = 0;

    if (!a)
        return DLB_AGENT_ERR_INVALID;
    snprintf(group, sizeof(group), "%s.agent.%.80s-%s", a->conf.dc.env, a->uid, a->nonce);
    pthread_mutex_lock(&a->lock);
    if (a->sub != SUB_NONE) {
        pthread_mutex_unlock(&a->lock);
        return DLB_AGENT_ERR_STATE;
    }
    if (!cb && !(a->plans = calloc((size_t)a->conf.plans_max, sizeof(*a->plans)))) {
        rc = DLB_AGENT_ERR_NOMEM;
        goto out;
    }
    if (!(kc = agent_kafka_conf(a, base, extra, sub, sizeof(sub)))) {
        agent_log(a, DLB_AGENT_LOG_ERROR, "plans: %s", sub);
        rc = DLB_AGENT_ERR_KAFKA;
        goto out;
    }
    if (!(a->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        agent_log(a, DLB_AGENT_LOG_ERROR, "plans: kafka consumer: %s", sub);
        rc = DLB_AGENT_ERR_KAFKA;
        goto out;
    }
    rd_kafka_set_log_queue(a->consumer, NULL);
    rd_kafka_poll_set_consumer(a->consumer);
    a->plan_cb = cb;
    a->plan_opaque = opaque;
    a->sub = SUB_STARTING;
    if (pthread_create(&a->plans_thread, NULL, plans_main, a)) {
        a->sub = SUB_NONE;
        rc = DLB_AGENT_ERR_NOMEM;
        goto out;
    }
    a->plans_started = 1;
out:
    if (rc) {
        if (a->consumer)
            rd_kafka_destroy(a->consumer);
        a->consumer = NULL;
        free(a->plans);
        a->plans = NULL;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int dlb_agent_poll_plan(dlb_agent_t *a, dlb_agent_plan_t **plan, int timeout_ms)
{
    int64_t deadline = dlb_clock_mono_ms() + timeout_ms;
    struct timespec ts;
    int rc = 0;

    if (!a || !plan)
        return DLB_AGENT_ERR_INVALID;
    *plan = NULL;
    pthread_mutex_lock(&a->lock);
    if (a->sub == SUB_NONE || a->plan_cb) {
        pthread_mutex_unlock(&a->lock);
        return DLB_AGENT_ERR_STATE;
    }
    while (!a->plans_cnt && timeout_ms != 0) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&a->plan_ready, &a->lock);
            continue;
        }
        if (dlb_clock_mono_ms() >= deadline)
            break;
        ts.tv_sec = deadline / 1000;
        ts.tv_nsec = (deadline % 1000) * 1000000L;
        pthread_cond_timedwait(&a->plan_ready, &a->lock, &ts);
    }
    if (a->plans_cnt) {
        *plan = &a->plans[a->plans_head]->pub;
        a->plans[a->plans_head] = NULL;
        a->plans_head = (a->plans_head + 1) % (size_t)a->conf.plans_max;
        a->plans_cnt--;
        rc = 1;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

void agent_plans_stop(dlb_agent_t *a)
{
    pthread_mutex_lock(&a->lock);
    a->plans_stop = 1;
    pthread_cond_broadcast(&a->plan_ready);
    pthread_mutex_unlock(&a->lock);
    if (a->plans_started)
        pthread_join(a->plans_thread, NULL);
    a->plans_started = 0;
    if (a->consumer) {
        rd_kafka_consumer_close(a->consumer);
        rd_kafka_destroy(a->consumer);
        a->consumer = NULL;
    }
    for (size_t i = 0; i < a->plans_cnt; i++)
        dlb_agent_plan_destroy(&a->plans[(a->plans_head + i) % (size_t)a->conf.plans_max]->pub);
    free(a->plans);
    a->plans = NULL;
    a->plans_cnt = 0;
    dlb_seen_free(&a->seen);
}
