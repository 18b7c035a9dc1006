/* The gateway's Kafka side: one idempotent producer for what calls send, and
 * one plans consumer that joins no group and reads only the partitions that a
 * waiting optimize call's plan will come on, from where each ended when the
 * first of its calls began waiting (so no plan is missed, and a gateway reads
 * no more of <env>.plans than its own calls need). One thread serves both
 * and answers the calls. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit.h"
#include "brain.pb-c.h"
#include "clock.h"
#include "codec.h"
#include "err.h"
#include "gw_internal.h"
#include "gw_map.h"
#include "kafka.h"
#include "log.h"

/* How long one metadata or end-offset query may take. */
#define QUERY_MS 2000
/* How long the thread waits for a plan message before it looks at deadlines. */
#define POLL_MS 10

/* ---- producing --------------------------------------------------------------- */

/* A message has its delivery report: the call that sent it may be answered. */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    gw_t *gw = opaque;
    gw_call_t *c = m->_private;
    int done, failed, persist;
    char err[256];

    (void)rk;
    pthread_mutex_lock(&gw->lock);
    if (m->err) {
        c->ack_failed = 1;
        snprintf(c->ack_err, sizeof(c->ack_err), "Kafka did not acknowledge the event on %s: %s",
                 rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
    } else {
        gw->st->events++;
        dlb_metric_add(gw->m.events, 1);
        dlb_after_cache_note(gw->after, m->key, m->key_len, rd_kafka_topic_name(m->rkt),
                             m->partition, m->offset);
    }
    done = --c->acks_left == 0;
    failed = c->ack_failed;
    persist = c->method == GW_PERSIST;
    snprintf(err, sizeof(err), "%s", c->ack_err);
    pthread_mutex_unlock(&gw->lock);
    if (done && failed)
        gw_answer(c, GRPC_STATUS_UNAVAILABLE, err, NULL, 0);
    else if (done && persist)
        gw_answer(c, GRPC_STATUS_OK, "", "", 0); /* google.protobuf.Empty: no bytes */
    /* An optimize call now waits for its plan. */
    pthread_mutex_lock(&gw->lock);
    gw_call_release_locked(c);
    pthread_mutex_unlock(&gw->lock);
}

/* A plan request carries what the gateway had acknowledged for its job (the
 * events of persist_metrics calls this instance served): the optimizer
 * answers once it applied them, with no grace to wait out. A job this
 * instance has no positions of gets an empty header: whatever another
 * instance acknowledged was in the log before the request was produced, and
 * the optimizer's end check covers that. */
static rd_kafka_headers_t *request_headers(gw_t *gw, const dlb_event_t *ev)
{
    dlb_after_t a;

    pthread_mutex_lock(&gw->lock);
    dlb_after_cache_get(gw->after, ev->u.req.job_uid, &a);
    pthread_mutex_unlock(&gw->lock);
    return dlb_kafka_after_headers(&a);
}

/* What every consumer would refuse is refused before it is produced: an
 * acknowledged event must be one the history keeps. The consumers' own checks
 * (admit.h) on the very bytes, against the record's timestamp. Locked: the
 * decoder's values, like the catalog's, serve one thread at a time. */
static int admit_locked(gw_t *gw, const dlb_event_t *ev, const void *buf, size_t len,
                        int64_t record_ms, char *errstr, size_t size)
{
    const char *stage = NULL, *source;
    dlb_event_t back;
    char sub[512];
    int err;

    if ((int64_t)len > gw->conf->max_message_bytes)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "the %s it becomes is %zu bytes, more than the consumers take "
                          "(message.max.bytes %lld)",
                          dlb_event_type_name(ev->type), len,
                          (long long)gw->conf->max_message_bytes);
    memset(&back, 0, sizeof(back));
    err = dlb_codec_admit(gw->dec, buf, len, record_ms, gw->conf->skew_s, &back, &stage, sub,
                          sizeof(sub));
    dlb_event_clear(&back);
    if (!err)
        return 0;
    if (err == DLB_ERR_TRANSIENT || err == DLB_ERR_NOMEM)
        return dlb_seterr(errstr, size, err, "%s", sub);
    source = dlb_gw_event_field_source(ev->type, sub);
    return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                      "%s%sthe %s it becomes fails the consumers' %s check: %s",
                      source ? source : "", source ? ": " : "", dlb_event_type_name(ev->type),
                      stage ? stage : "decode", sub);
}

int gw_kafka_send(gw_call_t *c, const dlb_event_t *ev, char *errstr, size_t size)
{
    gw_t *gw = c->gw;
    const char *topic = gw->topics[ev->type];
    const char *key = dlb_event_job_uid(ev);
    rd_kafka_headers_t *hdrs = NULL;
    rd_kafka_resp_err_t kerr;
    int64_t now = dlb_clock_wall_ms(); /* the record's timestamp, as checked */
    void *buf = NULL;
    size_t len = 0;
    int err;

    pthread_mutex_lock(&gw->lock);
    if (!(err = dlb_codec_encode(gw->cat, ev, &buf, &len, errstr, size)) &&
        (err = admit_locked(gw, ev, buf, len, now, errstr, size))) {
        free(buf);
        buf = NULL;
    }
    if (!err) {
        c->refs++; /* the delivery report */
        c->acks_left++;
    }
    pthread_mutex_unlock(&gw->lock);
    if (err)
        return err;
    if (ev->type == DLB_EV_PLAN_REQUEST && !(hdrs = request_headers(gw, ev)))
        kerr = RD_KAFKA_RESP_ERR__FAIL;
    else
        kerr = rd_kafka_producev(gw->producer, RD_KAFKA_V_TOPIC(topic),
                                 RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(buf, len),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE), RD_KAFKA_V_HEADERS(hdrs),
                                 RD_KAFKA_V_TIMESTAMP(now), RD_KAFKA_V_OPAQUE(c), RD_KAFKA_V_END);
    if (!kerr)
        return 0;
    if (hdrs)
        rd_kafka_headers_destroy(hdrs); /* librdkafka's only once a produce succeeded */
    free(buf);
    pthread_mutex_lock(&gw->lock);
    c->acks_left--;
    gw_call_release_locked(c);
    pthread_mutex_unlock(&gw->lock);
    return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "cannot produce to %s: %s", topic,
                      rd_kafka_err2str(kerr));
}

/* ---- waiting for plans ------------------------------------------------------------ */

int gw_kafka_wait_plan(gw_call_t *c, char *errstr, size_t size)
{
    gw_t *gw = c->gw;
    int32_t p = dlb_kafka_key_partition(gw->conf, c->request.u.req.job_uid, gw->plans_parts);

    c->plan_part = p;
    /* Where the partition ends now is before the plan: ask it before the
     * request is produced. Only the first waiter of a partition asks; the
     * CQ thread is the only one that adds waiters. */
    for (int32_t q = 0; q < gw->plans_parts; q++) {
        int64_t lo, hi;
        rd_kafka_resp_err_t kerr;
        int known;

        if (p >= 0 && q != p)
            continue;
        pthread_mutex_lock(&gw->lock);
        known = gw->part_next[q] >= 0;
        pthread_mutex_unlock(&gw->lock);
        if (known)
            continue;
        kerr = rd_kafka_query_watermark_offsets(gw->plans, gw->plans_topic, q, &lo, &hi, QUERY_MS);
        if (kerr)
            return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                              "no end offset of %s [%" PRId32 "]: %s", gw->plans_topic, q,
                              rd_kafka_err2str(kerr));
        pthread_mutex_lock(&gw->lock);
        if (gw->part_next[q] < 0) {
            gw->part_next[q] = hi;
            gw->assign_dirty = 1;
        }
        pthread_mutex_unlock(&gw->lock);
    }
    pthread_mutex_lock(&gw->lock);
    for (int32_t q = 0; q < gw->plans_parts; q++)
        if (p < 0 || q == p) {
            gw->part_waiters[q]++;
            gw->part_idle[q] = 0;
        }
    c->waiting = 1;
    c->refs++; /* gw->waiters */
    c->next = gw->waiters;
    gw->waiters = c;
    pthread_mutex_unlock(&gw->lock);
    return 0;
}

/* The partitions some call waits on, from where reading goes on. */
static void apply_assignment(gw_t *gw)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(gw->plans_parts);
    rd_kafka_resp_err_t kerr;

    if (!l)
        return;
    pthread_mutex_lock(&gw->lock);
    gw->assign_dirty = 0;
    for (int32_t p = 0; p < gw->plans_parts; p++)
        if (gw->part_next[p] >= 0)
            rd_kafka_topic_partition_list_add(l, gw->plans_topic, p)->offset = gw->part_next[p];
    pthread_mutex_unlock(&gw->lock);
    dlb_metric_set(gw->m.partitions, (double)l->cnt);
    if ((kerr = rd_kafka_assign(gw->plans, l))) {
        dlb_warn("gateway: the plans consumer refused its assignment: %s; retrying",
                 rd_kafka_err2str(kerr));
        pthread_mutex_lock(&gw->lock);
        gw->assign_dirty = 1;
        pthread_mutex_unlock(&gw->lock);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* The call waiting for plan plan_id of job job_uid: plan ids are request
 * event ids, unique within a job only, so another job's plan that happens
 * to carry the same id is not this call's answer. */
static gw_call_t *take_waiter(gw_t *gw, const char *job_uid, const char *plan_id)
{
    gw_call_t *c;

    pthread_mutex_lock(&gw->lock);
    for (c = gw->waiters; c; c = c->next)
        if (!strcmp(c->plan_id, plan_id) && !strcmp(c->request.u.req.job_uid, job_uid))
            break;
    if (c)
        c->refs++; /* held while it is answered */
    pthread_mutex_unlock(&gw->lock);
    return c;
}

static void answer_plan(gw_t *gw, gw_call_t *c, const dlb_plan_t *plan)
{
    char errstr[256];
    uint8_t *out = NULL;
    size_t len = 0;

    if (dlb_gw_plan_response(&c->request.u.req, plan, NULL, &out, &len, errstr, sizeof(errstr))) {
        gw_answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, errstr, NULL, 0);
    } else {
        gw_answer(c, GRPC_STATUS_OK, "", out, len);
        gw->st->plans++;
        dlb_metric_add(gw->m.plans, 1);
        dlb_metric_observe(gw->m.optimize_seconds,
                           (double)(dlb_clock_mono_ms() - c->arrived_ms) / 1000.0);
    }
    free(out);
}

static void on_plan_message(gw_t *gw, rd_kafka_message_t *m)
{
    char errstr[512];
    dlb_event_t ev;
    gw_call_t *c;
    int err;

    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            dlb_warn("gateway: plans consumer: %s", rd_kafka_message_errstr(m));
        return;
    }
    pthread_mutex_lock(&gw->lock);
    if (m->partition >= 0 && m->partition < gw->plans_parts && gw->part_next[m->partition] >= 0)
        gw->part_next[m->partition] = m->offset + 1;
    err = dlb_codec_decode(gw->cat, m->payload, m->len, &ev, errstr, sizeof(errstr));
    pthread_mutex_unlock(&gw->lock);
    if (err) {
        dlb_warn("gateway: %s [%" PRId32 "] at offset %" PRId64 " is not a plan: %s; skipped",
                 gw->plans_topic, m->partition, m->offset, errstr);
        return;
    }
    if (ev.type == DLB_EV_PLAN && (c = take_waiter(gw, ev.u.plan.job_uid, ev.u.plan.plan_id))) {
        answer_plan(gw, c, &ev.u.plan);
        pthread_mutex_lock(&gw->lock);
        gw_call_release_locked(c);
        pthread_mutex_unlock(&gw->lock);
    }
    dlb_event_clear(&ev);
}

/* Calls whose plan did not come in time get "no plan", which DLRover's
 * master reads as keeping what it has. */
static void expire(gw_t *gw)
{
    int64_t now = dlb_clock_mono_ms();
    gw_call_t *due[64];
    size_t n = 0;

    pthread_mutex_lock(&gw->lock);
    for (gw_call_t *c = gw->waiters; c && n < sizeof(due) / sizeof(due[0]); c = c->next)
        if (c->deadline_ms <= now) {
            c->refs++;
            due[n++] = c;
        }
    pthread_mutex_unlock(&gw->lock);
    for (size_t i = 0; i < n; i++) {
        gw_call_t *c = due[i];
        char reason[256], errstr[256];
        uint8_t *out = NULL;
        size_t len = 0;

        snprintf(reason, sizeof(reason), "no plan for %s within %lld ms", c->request.u.req.stage,
                 (long long)(c->deadline_ms - c->arrived_ms));
        if (dlb_gw_plan_response(&c->request.u.req, NULL, reason, &out, &len, errstr,
                                 sizeof(errstr)))
            gw_answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, errstr, NULL, 0);
        else
            gw_answer(c, GRPC_STATUS_OK, "", out, len);
        free(out);
        gw->st->no_plan++;
        dlb_metric_add(gw->m.no_plan, 1);
        dlb_warn("gateway: job %s: %s", c->request.u.req.job_uid, reason);
        pthread_mutex_lock(&gw->lock);
        gw_call_release_locked(c);
        pthread_mutex_unlock(&gw->lock);
    }
}

/* Partitions no call has waited on for gateway.plans.linger.ms are read no
 * more; the next call on one asks where it ends again. */
static void unlinger(gw_t *gw)
{
    int64_t now = dlb_clock_mono_ms();

    pthread_mutex_lock(&gw->lock);
    for (int32_t p = 0; p < gw->plans_parts; p++)
        if (!gw->part_waiters[p] && gw->part_next[p] >= 0 &&
            now - gw->part_idle[p] >= gw->conf->gateway.plans_linger_ms) {
            gw->part_next[p] = -1;
            gw->assign_dirty = 1;
        }
    pthread_mutex_unlock(&gw->lock);
}

static void *kafka_main(void *arg)
{
    gw_t *gw = arg;
    int dirty;

    for (;;) {
        rd_kafka_message_t *m;

        pthread_mutex_lock(&gw->lock);
        dirty = gw->assign_dirty;
        if (gw->kafka_started < 0) {
            pthread_mutex_unlock(&gw->lock);
            break;
        }
        pthread_mutex_unlock(&gw->lock);
        rd_kafka_poll(gw->producer, 0);
        if (dirty)
            apply_assignment(gw);
        if ((m = rd_kafka_consumer_poll(gw->plans, POLL_MS))) {
            on_plan_message(gw, m);
            rd_kafka_message_destroy(m);
        }
        expire(gw);
        unlinger(gw);
    }
    return NULL;
}

/* ---- start and stop ---------------------------------------------------------------- */

static int plans_partitions(gw_t *gw, char *errstr, size_t size)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(gw->plans, gw->plans_topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t kerr = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;

    if (!rkt)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    while (!*gw->stop) {
        kerr = rd_kafka_metadata(gw->plans, 0, rkt, &md, QUERY_MS);
        if (!kerr && md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0) {
            gw->plans_parts = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
            break;
        }
        if (!kerr) {
            kerr = md->topic_cnt ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
            rd_kafka_metadata_destroy(md);
        }
        dlb_warn("gateway: no partitions of %s yet (%s); retrying", gw->plans_topic,
                 rd_kafka_err2str(kerr));
        dlb_metrics_dep(DLB_DEP_KAFKA, 0);
        sleep(1);
    }
    rd_kafka_topic_destroy(rkt);
    if (!gw->plans_parts)
        return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "stopped before %s was known: %s",
                          gw->plans_topic, rd_kafka_err2str(kerr));
    return 0;
}

int gw_kafka_start(gw_t *gw, char *errstr, size_t size)
{
    char ack_ms[32], group[256], host[128] = "localhost", sub[512];
    const char *const pbase[] = {
        "enable.idempotence", "true", "linger.ms", "0", "message.timeout.ms", ack_ms, "client.id",
        "dlbrain-gateway",    NULL};
    /* No group is joined (partitions are assigned by hand) and nothing is
     * committed; librdkafka still wants a group.id to assign. */
    const char *const cbase[] = {"group.id",
                                 group,
                                 "enable.auto.commit",
                                 "false",
                                 "enable.auto.offset.store",
                                 "false",
                                 "isolation.level",
                                 "read_committed",
                                 "client.id",
                                 "dlbrain-gateway",
                                 NULL};
    rd_kafka_conf_t *kc;

    snprintf(ack_ms, sizeof(ack_ms), "%d",
             gw->conf->gateway.ack_timeout_ms > 0 ? gw->conf->gateway.ack_timeout_ms : 1);
    gethostname(host, sizeof(host) - 1);
    snprintf(group, sizeof(group), "%s.gateway.%s.%d", gw->conf->env, host, (int)getpid());
    for (int t = DLB_EV_JOB; t < DLB_EV__CNT; t++)
        dlb_conf_topic(gw->conf, dlb_event_type_topic((dlb_event_type_t)t), gw->topics[t],
                       sizeof(gw->topics[t]));
    dlb_conf_topic(gw->conf, DLB_TOPIC_PLANS, gw->plans_topic, sizeof(gw->plans_topic));
    {
        const char *const followed[] = {gw->topics[DLB_EV_JOB], gw->topics[DLB_EV_RUNTIME],
                                        gw->topics[DLB_EV_NODE]};
        if (!(gw->after = dlb_after_cache_new(followed, 3, DLB_AFTER_CACHE_SLOTS)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }

    if (dlb_codec_decoder_new(gw->cat, &gw->dec, errstr, size))
        return DLB_ERR_NOMEM;
    if (!(kc = dlb_kafka_conf_new(gw->conf, pbase, NULL, errstr, size)))
        return DLB_ERR_CONF;
    rd_kafka_conf_set_dr_msg_cb(kc, dr_msg_cb);
    rd_kafka_conf_set_opaque(kc, gw);
    if (!(gw->producer = rd_kafka_new(RD_KAFKA_PRODUCER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "kafka producer: %s", sub);
    }
    if (!(kc = dlb_kafka_conf_new(gw->conf, cbase, NULL, errstr, size)))
        return DLB_ERR_CONF;
    if (!(gw->plans = rd_kafka_new(RD_KAFKA_CONSUMER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "kafka consumer: %s", sub);
    }
    rd_kafka_poll_set_consumer(gw->plans);
    if (plans_partitions(gw, errstr, size))
        return DLB_ERR_TRANSIENT;
    if (!(gw->part_waiters = calloc((size_t)gw->plans_parts, sizeof(*gw->part_waiters))) ||
        !(gw->part_next = malloc((size_t)gw->plans_parts * sizeof(*gw->part_next))) ||
        !(gw->part_idle = calloc((size_t)gw->plans_parts, sizeof(*gw->part_idle))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (int32_t p = 0; p < gw->plans_parts; p++)
        gw->part_next[p] = -1;
    if (pthread_create(&gw->kafka_thread, NULL, kafka_main, gw))
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "cannot start the Kafka thread");
    gw->kafka_started = 1;
    return 0;
}

int gw_kafka_failed(gw_t *gw, char *errstr, size_t size)
{
    int err;

    if ((err = dlb_kafka_fatal(gw->producer, errstr, size)))
        return err;
    return dlb_kafka_fatal(gw->plans, errstr, size);
}

void gw_kafka_stop(gw_t *gw)
{
    if (gw->kafka_started > 0) {
        pthread_mutex_lock(&gw->lock);
        gw->kafka_started = -1;
        pthread_mutex_unlock(&gw->lock);
        pthread_join(gw->kafka_thread, NULL);
    }
    if (gw->producer) {
        rd_kafka_flush(gw->producer, 5000);
        rd_kafka_destroy(gw->producer);
    }
    if (gw->plans) {
        rd_kafka_consumer_close(gw->plans);
        rd_kafka_destroy(gw->plans);
    }
    free(gw->part_waiters);
    free(gw->part_next);
    free(gw->part_idle);
    dlb_after_cache_free(gw->after);
    dlb_codec_decoder_destroy(gw->dec);
}
