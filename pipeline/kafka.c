#include "kafka.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka_mock.h>

#include "err.h"
#include "log.h"

/* Per-producer delivery bookkeeping, kept as the client's opaque. */
typedef struct producer_state {
    int64_t failed;
} producer_state_t;

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    producer_state_t *ps = opaque;
    (void)rk;
    if (m->err) {
        ps->failed++;
        dlb_err("kafka: delivery to %s [%" PRId32 "] failed: %s; the batch will be retried",
                rd_kafka_topic_name(m->rkt), m->partition, rd_kafka_err2str(m->err));
    }
}

static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    /* syslog levels: 0..3 error, 4 warning, 5..6 info, 7 debug */
    dlb_log(level <= 3   ? DLB_LOG_ERROR
            : level == 4 ? DLB_LOG_WARN
            : level <= 6 ? DLB_LOG_INFO
                         : DLB_LOG_DEBUG,
            "librdkafka %s: %s", fac, buf);
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)opaque;
    /* Most client errors are transient (broker down) and librdkafka retries;
     * a fatal error (fenced idempotent producer) needs a restart. */
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512];
        rd_kafka_fatal_error(rk, buf, sizeof(buf));
        dlb_err("kafka: fatal client error: %s; the process must restart", buf);
    } else {
        dlb_warn("kafka: %s: %s; librdkafka retries by itself", rd_kafka_err2name(err), reason);
    }
}

static int conf_set(rd_kafka_conf_t *kc, const char *key, const char *value, char *errstr,
                    size_t size)
{
    char sub[512];

    if (rd_kafka_conf_set(kc, key, value, sub, sizeof(sub)) != RD_KAFKA_CONF_OK)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "kafka property %s: %s", key, sub);
    return 0;
}

/* Base settings, then -X pass-through, then the caller's extras: the later wins. */
static rd_kafka_conf_t *make_conf(const dlb_conf_t *conf, const char *const *base,
                                  const char *const *extra, char *errstr, size_t size)
{
    rd_kafka_conf_t *kc = rd_kafka_conf_new();

    if (!kc) {
        dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (conf_set(kc, "bootstrap.servers", conf->brokers, errstr, size))
        goto fail;
    for (; base && *base; base += 2)
        if (conf_set(kc, base[0], base[1], errstr, size))
            goto fail;
    for (size_t i = 0; i < conf->kafka_cnt; i++)
        if (conf_set(kc, conf->kafka[i].key, conf->kafka[i].value, errstr, size))
            goto fail;
    for (; extra && *extra; extra += 2)
        if (conf_set(kc, extra[0], extra[1], errstr, size))
            goto fail;
    rd_kafka_conf_set_log_cb(kc, log_cb);
    rd_kafka_conf_set_error_cb(kc, error_cb);
    return kc;
fail:
    rd_kafka_conf_destroy(kc);
    return NULL;
}

int dlb_kafka_producer_new(const dlb_conf_t *conf, const char *const *extra, rd_kafka_t **out,
                           char *errstr, size_t errstr_size)
{
    /* Idempotence keeps per-partition order and drops broker-side duplicates
     * when librdkafka retries; linger batches small messages. */
    static const char *const base[] = {"enable.idempotence", "true",    "linger.ms", "5",
                                       "client.id",          "dlbrain", NULL};
    producer_state_t *ps;
    rd_kafka_conf_t *kc;
    char sub[512];

    if (!(ps = calloc(1, sizeof(*ps))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if (!(kc = make_conf(conf, base, extra, errstr, errstr_size))) {
        free(ps);
        return DLB_ERR_CONF;
    }
    rd_kafka_conf_set_dr_msg_cb(kc, dr_msg_cb);
    rd_kafka_conf_set_opaque(kc, ps);
    if (!(*out = rd_kafka_new(RD_KAFKA_PRODUCER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        free(ps);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "kafka producer: %s", sub);
    }
    return 0;
}

static const char *kafka_prop(const dlb_conf_t *conf, const char *key)
{
    for (size_t i = 0; i < conf->kafka_cnt; i++)
        if (!strcmp(conf->kafka[i].key, key))
            return conf->kafka[i].value;
    return NULL;
}

int dlb_kafka_txn_producer_new(const dlb_conf_t *conf, const char *default_txn_id, rd_kafka_t **out,
                               char *errstr, size_t errstr_size)
{
    const char *extra[7];
    int n = 0;

    if (!kafka_prop(conf, "transactional.id")) {
        extra[n++] = "transactional.id";
        extra[n++] = default_txn_id;
    }
    if (!kafka_prop(conf, "transaction.timeout.ms")) {
        extra[n++] = "transaction.timeout.ms";
        extra[n++] = "10000";
    }
    /* A transaction begun right after a commit is often refused with
     * CONCURRENT_TRANSACTIONS while the broker still writes the markers of the
     * last one; librdkafka waits retry.backoff.ms (100) before asking again,
     * which was most of a plan's round trip. The Java producer retries that
     * case after 20 ms (KAFKA-5477). */
    if (!kafka_prop(conf, "retry.backoff.ms")) {
        extra[n++] = "retry.backoff.ms";
        extra[n++] = "20";
    }
    extra[n] = NULL;
    return dlb_kafka_producer_new(conf, extra, out, errstr, errstr_size);
}

void dlb_kafka_producer_destroy(rd_kafka_t *producer)
{
    producer_state_t *ps;

    if (!producer)
        return;
    ps = rd_kafka_opaque(producer);
    if (rd_kafka_flush(producer, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        dlb_warn("kafka: %d message(s) still undelivered at shutdown", rd_kafka_outq_len(producer));
    rd_kafka_destroy(producer);
    free(ps);
}

int64_t dlb_kafka_delivery_failures(rd_kafka_t *producer)
{
    producer_state_t *ps = rd_kafka_opaque(producer);
    int64_t n = ps->failed;
    ps->failed = 0;
    return n;
}

int dlb_kafka_flush(rd_kafka_t *producer, int timeout_ms, char *errstr, size_t errstr_size)
{
    int64_t failed;

    if (rd_kafka_flush(producer, timeout_ms) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                          "%d message(s) not delivered within %d ms", rd_kafka_outq_len(producer),
                          timeout_ms);
    if ((failed = dlb_kafka_delivery_failures(producer)) > 0)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                          "%" PRId64 " message(s) failed delivery", failed);
    return 0;
}

int dlb_kafka_consumer_new(const dlb_conf_t *conf, const char *group_id, const char *const *extra,
                           rd_kafka_t **out, char *errstr, size_t errstr_size)
{
    return dlb_kafka_consumer_new_cb(conf, group_id, extra, NULL, NULL, out, errstr, errstr_size);
}

int dlb_kafka_consumer_new_cb(const dlb_conf_t *conf, const char *group_id,
                              const char *const *extra,
                              void (*rebalance_cb)(rd_kafka_t *, rd_kafka_resp_err_t,
                                                   rd_kafka_topic_partition_list_t *, void *),
                              void *opaque, rd_kafka_t **out, char *errstr, size_t errstr_size)
{
    /* Offsets are committed by the caller, only after the writes they cover. */
    const char *const base[] = {"group.id",
                                group_id,
                                "enable.auto.commit",
                                "false",
                                "enable.auto.offset.store",
                                "false",
                                "auto.offset.reset",
                                "earliest",
                                "client.id",
                                "dlbrain",
                                NULL};
    rd_kafka_conf_t *kc;
    char sub[512];

    if (!(kc = make_conf(conf, base, extra, errstr, errstr_size)))
        return DLB_ERR_CONF;
    if (rebalance_cb)
        rd_kafka_conf_set_rebalance_cb(kc, rebalance_cb);
    rd_kafka_conf_set_opaque(kc, opaque);
    if (!(*out = rd_kafka_new(RD_KAFKA_CONSUMER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "kafka consumer: %s", sub);
    }
    rd_kafka_poll_set_consumer(*out);
    return 0;
}

int dlb_kafka_produce(rd_kafka_t *producer, const char *topic, const char *key, const void *value,
                      size_t len, char *errstr, size_t errstr_size)
{
    rd_kafka_resp_err_t err;

    err = rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic),
                            RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                            RD_KAFKA_V_VALUE((void *)value, len),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        /* Serve delivery reports to make room, then try once more. */
        rd_kafka_poll(producer, 100);
        err = rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic),
                                RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                                RD_KAFKA_V_VALUE((void *)value, len),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    }
    if (err)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "produce to %s: %s", topic,
                          rd_kafka_err2str(err));
    rd_kafka_poll(producer, 0);
    return 0;
}

static const char *const pipeline_topics[] = {DLB_TOPIC_JOB_EVENTS,
                                              DLB_TOPIC_METRICS,
                                              DLB_TOPIC_K8S_EVENTS,
                                              DLB_TOPIC_PLAN_REQUESTS,
                                              DLB_TOPIC_CONFIG_REQUESTS,
                                              DLB_TOPIC_PLANS,
                                              DLB_TOPIC_CONFIGS,
                                              DLB_TOPIC_DLQ,
                                              NULL};

int dlb_kafka_create_topics(rd_kafka_t *rk, const dlb_conf_t *conf, int timeout_ms, char *errstr,
                            size_t errstr_size)
{
    rd_kafka_NewTopic_t *nt[16];
    rd_kafka_queue_t *q = NULL;
    rd_kafka_event_t *ev = NULL;
    rd_kafka_AdminOptions_t *opts = NULL;
    const rd_kafka_topic_result_t **res;
    size_t n = 0, res_cnt;
    char name[256], sub[512];
    int err = 0;

    for (const char *const *t = pipeline_topics; *t; t++) {
        dlb_conf_topic(conf, *t, name, sizeof(name));
        nt[n] = rd_kafka_NewTopic_new(name, conf->partitions, conf->replication, sub, sizeof(sub));
        if (!nt[n]) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "topic %s: %s", name, sub);
            goto out;
        }
        n++;
    }
    q = rd_kafka_queue_new(rk);
    opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, NULL, 0);
    rd_kafka_CreateTopics(rk, nt, n, opts, q);
    ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
    if (!ev) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                         "creating topics: no answer from %s within %d ms", conf->brokers,
                         timeout_ms + 5000);
        goto out;
    }
    if (rd_kafka_event_error(ev)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "creating topics: %s",
                         rd_kafka_event_error_string(ev));
        goto out;
    }
    res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &res_cnt);
    for (size_t i = 0; i < res_cnt; i++) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "creating topic %s: %s",
                             rd_kafka_topic_result_name(res[i]),
                             rd_kafka_topic_result_error_string(res[i]));
            goto out;
        }
    }
out:
    if (ev)
        rd_kafka_event_destroy(ev);
    if (opts)
        rd_kafka_AdminOptions_destroy(opts);
    if (q)
        rd_kafka_queue_destroy(q);
    for (size_t i = 0; i < n; i++)
        rd_kafka_NewTopic_destroy(nt[i]);
    return err;
}

int dlb_kafka_dlq_send(rd_kafka_t *producer, const dlb_conf_t *conf, const rd_kafka_message_t *src,
                       const char *stage, int err, const char *message, char *errstr,
                       size_t errstr_size)
{
    char topic[256], part[16], off[32], omitted[32];
    const void *value = src->payload;
    size_t len = src->len;
    rd_kafka_headers_t *hdrs;
    rd_kafka_resp_err_t kerr;

    dlb_conf_topic(conf, DLB_TOPIC_DLQ, topic, sizeof(topic));
    snprintf(part, sizeof(part), "%" PRId32, src->partition);
    snprintf(off, sizeof(off), "%" PRId64, src->offset);
    if (!(hdrs = rd_kafka_headers_new(8)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    rd_kafka_header_add(hdrs, "dlb.source.topic", -1, rd_kafka_topic_name(src->rkt), -1);
    rd_kafka_header_add(hdrs, "dlb.source.partition", -1, part, -1);
    rd_kafka_header_add(hdrs, "dlb.source.offset", -1, off, -1);
    rd_kafka_header_add(hdrs, "dlb.stage", -1, stage, -1);
    rd_kafka_header_add(hdrs, "dlb.error.class", -1, dlb_err_name(err), -1);
    rd_kafka_header_add(hdrs, "dlb.error.message", -1, message, -1);
    /* An oversized message would not fit the DLQ either: keep its headers so
     * the failure is visible, drop the body and say how big it was. */
    if ((int64_t)len > conf->max_message_bytes) {
        snprintf(omitted, sizeof(omitted), "%zu", len);
        rd_kafka_header_add(hdrs, "dlb.value.omitted.bytes", -1, omitted, -1);
        value = NULL;
        len = 0;
    }
    kerr =
        rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(src->key, src->key_len),
                          RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_HEADERS(hdrs),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (kerr) {
        rd_kafka_headers_destroy(hdrs); /* only owned by librdkafka on success */
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "produce to %s: %s", topic,
                          rd_kafka_err2str(kerr));
    }
    return 0;
}

/* ---- mock cluster -------------------------------------------------------- */
struct dlb_mock {
    rd_kafka_t *rk; /* owns the mock cluster's threads */
    rd_kafka_mock_cluster_t *mc;
    char bootstraps[1024];
};

int dlb_mock_start(dlb_mock_t **out, int brokers, const dlb_conf_t *conf, char *errstr,
                   size_t errstr_size)
{
    dlb_mock_t *m;
    rd_kafka_conf_t *kc;
    char sub[512], name[256];
    int err = 0;

    if (brokers < 1)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "brokers: must be at least 1");
    if (conf->replication > brokers)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "topic.replication %d is more than the %d mock broker(s)",
                          conf->replication, brokers);
    if (!(m = calloc(1, sizeof(*m))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    kc = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(kc, log_cb);
    /* This client only hosts the cluster; its "no bootstrap.servers" warning is noise. */
    rd_kafka_conf_set(kc, "log_level", "3", NULL, 0);
    if (!(m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "mock cluster client: %s", sub);
        goto fail;
    }
    if (!(m->mc = rd_kafka_mock_cluster_new(m->rk, brokers))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                         "could not start a mock cluster of %d broker(s)", brokers);
        goto fail;
    }
    snprintf(m->bootstraps, sizeof(m->bootstraps), "%s", rd_kafka_mock_cluster_bootstraps(m->mc));
    for (const char *const *t = pipeline_topics; *t; t++) {
        dlb_conf_topic(conf, *t, name, sizeof(name));
        if (rd_kafka_mock_topic_create(m->mc, name, conf->partitions, conf->replication)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                             "mock cluster: cannot create topic %s", name);
            goto fail;
        }
    }
    *out = m;
    return 0;
fail:
    dlb_mock_stop(m);
    return err;
}

const char *dlb_mock_bootstraps(const dlb_mock_t *mock)
{
    return mock->bootstraps;
}

void dlb_mock_stop(dlb_mock_t *mock)
{
    if (!mock)
        return;
    if (mock->mc)
        rd_kafka_mock_cluster_destroy(mock->mc);
    if (mock->rk)
        rd_kafka_destroy(mock->rk);
    free(mock);
}
