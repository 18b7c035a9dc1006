#include "kafka.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>

#include <cJSON.h>
#include <librdkafka/rdkafka_mock.h>

#include "after.h"
#include "clock.h"
#include "err.h"
#include "uuid.h"
#include "log.h"
#include "metrics.h"
#include "vec.h"

/* The newest offset acknowledged on one partition of a followed topic. */
typedef struct end_pos {
    int topic; /* index into producer_state_t.topics */
    int32_t partition;
    int64_t offset;
} end_pos_t;

/* Per-producer delivery bookkeeping, kept as the client's opaque. */
typedef struct producer_state {
    int64_t failed;
    dlb_after_cache_t *after; /* dlb_kafka_producer_follow(): positions per job */
    /* dlb_kafka_producer_follow_whole(): the newest offset of every partition
     * of the followed topics, whatever the key */
    int whole;
    char topics[3][256];
    end_pos_t *ends;
    size_t ends_cnt, ends_cap;
} producer_state_t;

static int end_topic(const producer_state_t *ps, const char *topic)
{
    for (int t = 0; t < 3; t++)
        if (!strcmp(ps->topics[t], topic))
            return t;
    return -1;
}

static end_pos_t *end_find(producer_state_t *ps, int topic, int32_t partition)
{
    for (size_t i = 0; i < ps->ends_cnt; i++)
        if (ps->ends[i].topic == topic && ps->ends[i].partition == partition)
            return &ps->ends[i];
    return NULL;
}

/* A partition never noted when memory runs out stays unknown: requests then
 * wait for their job's own events only, as without the whole mode. */
static void end_note(producer_state_t *ps, const char *topic, int32_t partition, int64_t offset)
{
    int t = end_topic(ps, topic);
    end_pos_t *e;

    if (t < 0)
        return;
    if (!(e = end_find(ps, t, partition))) {
        if (dlb_vec_reserve((void **)&ps->ends, &ps->ends_cap, ps->ends_cnt + 1, sizeof(*ps->ends)))
            return;
        e = &ps->ends[ps->ends_cnt++];
        *e = (end_pos_t){t, partition, -1};
    }
    if (offset > e->offset)
        e->offset = offset;
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    producer_state_t *ps = opaque;
    (void)rk;
    if (m->err) {
        ps->failed++;
        dlb_err("kafka: delivery to %s [%" PRId32 "] failed: %s; the batch will be retried",
                rd_kafka_topic_name(m->rkt), m->partition, rd_kafka_err2str(m->err));
    } else {
        dlb_metrics_dep(DLB_DEP_KAFKA, 1);
        if (ps->after)
            dlb_after_cache_note(ps->after, m->key, m->key_len, rd_kafka_topic_name(m->rkt),
                                 m->partition, m->offset);
        if (ps->whole)
            end_note(ps, rd_kafka_topic_name(m->rkt), m->partition, m->offset);
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
     * after a fatal one (a fenced producer or static member, a broken
     * idempotence guarantee) the client serves nothing more: it must be
     * replaced, or the process stop, and liveness says so meanwhile. */
    dlb_metric_add(dlb_metric_errors("kafka"), 1);
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        dlb_metrics_dep(DLB_DEP_KAFKA, 0);
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[768];
        dlb_kafka_fatal(rk, why, sizeof(why));
        dlb_err("%s; it is replaced or the process stops", why);
        dlb_metrics_failed(rk, why);
    } else {
        dlb_warn("kafka: %s: %s; librdkafka retries by itself", rd_kafka_err2name(err), reason);
    }
}

int dlb_kafka_fatal(rd_kafka_t *rk, char *errstr, size_t errstr_size)
{
    char why[512];
    rd_kafka_resp_err_t code;

    if (!rk || !(code = rd_kafka_fatal_error(rk, why, sizeof(why))))
        return 0;
    return dlb_seterr(errstr, errstr_size, DLB_ERR_FATAL,
                      "kafka: the %s %s failed for good (%s): %s",
                      rd_kafka_type(rk) == RD_KAFKA_PRODUCER ? "producer" : "consumer",
                      rd_kafka_name(rk), rd_kafka_err2name(code), why);
}

int dlb_kafka_fenced_too_often(dlb_kafka_fence_t *f, rd_kafka_t *rk, int64_t txn_age_ms,
                               char *errstr, size_t errstr_size)
{
    char why[256], id[256] = "?", tmo[32] = "5000", key[32];
    size_t id_len = sizeof(id), tmo_len = sizeof(tmo);
    rd_kafka_resp_err_t code = rd_kafka_fatal_error(rk, why, sizeof(why));
    int64_t now = dlb_clock_mono_ms();
    int producer = rd_kafka_type(rk) == RD_KAFKA_PRODUCER;

    if (code != RD_KAFKA_RESP_ERR__FENCED && code != RD_KAFKA_RESP_ERR_PRODUCER_FENCED &&
        code != RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH &&
        code != RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID)
        return 0;
    /* A transaction older than transaction.timeout.ms may have been aborted
     * by the coordinator itself (a broker outage): that fences too, and is
     * no sign of another process. */
    rd_kafka_conf_get(rd_kafka_conf(rk), "transaction.timeout.ms", tmo, &tmo_len);
    if (producer && txn_age_ms >= strtoll(tmo, NULL, 10))
        return 0;
    if (!f->cnt || now - f->first > DLB_KAFKA_FENCED_WINDOW_MS) {
        f->first = now;
        f->cnt = 0;
    }
    if (++f->cnt < DLB_KAFKA_FENCED_MAX)
        return 0;
    snprintf(key, sizeof(key), "%s", producer ? "transactional.id" : "group.instance.id");
    rd_kafka_conf_get(rd_kafka_conf(rk), key, id, &id_len);
    return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                      "kafka: %s %s was fenced %d times within %d s (%s): another process uses "
                      "the same id, and the two would fence each other for ever; give each "
                      "process its own%s",
                      key, id, f->cnt, DLB_KAFKA_FENCED_WINDOW_MS / 1000, why,
                      producer ? " (the default is unique)" : "");
}

/* The lag series a consumer's statistics set, so those of partitions it no
 * longer owns can be hidden (a revoked partition's lag is another member's). */
typedef struct lag_ent {
    const rd_kafka_t *rk;
    dlb_series_t *s;
    unsigned round;
} lag_ent_t;

static pthread_mutex_t lag_lock = PTHREAD_MUTEX_INITIALIZER;
static lag_ent_t lag_ents[1024];
static size_t lag_cnt;

static int64_t stat_i64(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* One assigned partition's lag: the end of what read_committed may read
 * (ls_offset; hi_offset for read_uncommitted) minus the next offset the
 * application takes (app_offset, else the fetch position). librdkafka's own
 * consumer_lag counts from committed_offset, which offsets committed through
 * a transaction (send_offsets_to_transaction, the stream's way) never
 * update, so it would only grow. */
static void lag_partition(const rd_kafka_t *rk, const char *topic, const cJSON *p, unsigned round)
{
    int64_t end = stat_i64(p, "ls_offset"), pos = stat_i64(p, "app_offset");
    dlb_series_t *s;

    if (end < 0)
        end = stat_i64(p, "hi_offset");
    if (pos < 0) /* nothing polled since the assignment: where fetching starts */
        pos = stat_i64(p, "next_offset");
    if (pos < 0)
        pos = stat_i64(p, "committed_offset");
    if (end < 0 || pos < 0)
        return;
    if (!(s = dlb_metric_gauge("dlbrain_kafka_consumer_lag",
                               "Messages of an assigned partition not yet polled (librdkafka "
                               "statistics: last stable offset - application offset; "
                               "transaction markers count)",
                               "topic,partition", DLB_LV(topic, p->string))))
        return;
    dlb_metric_set(s, (double)(end > pos ? end - pos : 0));
    for (size_t i = 0; i < lag_cnt; i++) {
        if (lag_ents[i].s == s) {
            lag_ents[i].rk = rk;
            lag_ents[i].round = round;
            return;
        }
    }
    if (lag_cnt < sizeof(lag_ents) / sizeof(lag_ents[0]))
        lag_ents[lag_cnt++] = (lag_ent_t){rk, s, round};
}

/* statistics.interval.ms: a consumer's partitions' lag into
 * dlbrain_kafka_consumer_lag{topic,partition}. */
static int stats_cb(rd_kafka_t *rk, char *json, size_t json_len, void *opaque)
{
    static unsigned rounds;
    const cJSON *topic, *p;
    cJSON *root;
    unsigned round;

    (void)opaque;
    if (rd_kafka_type(rk) != RD_KAFKA_CONSUMER || !dlb_metrics_global())
        return 0;
    if (!(root = cJSON_ParseWithLength(json, json_len))) {
        dlb_warn("kafka: statistics of %s are not JSON; consumer lag not updated this time",
                 rd_kafka_name(rk));
        return 0;
    }
    pthread_mutex_lock(&lag_lock);
    round = ++rounds;
    cJSON_ArrayForEach(topic, cJSON_GetObjectItemCaseSensitive(root, "topics"))
    {
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(topic, "partitions"))
        {
            /* "-1" is librdkafka's unassigned-partition placeholder; a
             * partition not desired is known (metadata) but not ours. */
            if (strcmp(p->string, "-1") && cJSON_IsTrue(cJSON_GetObjectItem(p, "desired")))
                lag_partition(rk, topic->string, p, round);
        }
    }
    for (size_t i = 0; i < lag_cnt; i++)
        if (lag_ents[i].rk == rk && lag_ents[i].round != round)
            dlb_metric_hide(lag_ents[i].s);
    pthread_mutex_unlock(&lag_lock);
    cJSON_Delete(root);
    return 0;
}

static int conf_set(rd_kafka_conf_t *kc, const char *key, const char *value, char *errstr,
                    size_t size)
{
    char sub[512];

    if (rd_kafka_conf_set(kc, key, value, sub, sizeof(sub)) != RD_KAFKA_CONF_OK)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "kafka property %s: %s", key, sub);
    return 0;
}

rd_kafka_conf_t *dlb_kafka_conf_new(const dlb_conf_t *conf, const char *const *base,
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
    rd_kafka_conf_set_stats_cb(kc, stats_cb);
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
    if (!(kc = dlb_kafka_conf_new(conf, base, extra, errstr, errstr_size))) {
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

const char *dlb_kafka_conf_get(const dlb_conf_t *conf, const char *key)
{
    for (size_t i = 0; i < conf->kafka_cnt; i++)
        if (!strcmp(conf->kafka[i].key, key))
            return conf->kafka[i].value;
    return NULL;
}

int dlb_kafka_txn_id(const char *group, char *buf, size_t size)
{
    char host[128] = "localhost", uuid[37];
    int err;

    if ((err = dlb_uuid4(uuid)))
        return err;
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    /* The host and pid say whose it is; the random part keeps two processes
     * apart that share both (host-network containers, each pid 1). */
    snprintf(buf, size, "%s-%s-%d-%.8s", group, host, (int)getpid(), uuid);
    return 0;
}

int dlb_kafka_txn_producer_new(const dlb_conf_t *conf, const char *group, rd_kafka_t **out,
                               char *errstr, size_t errstr_size)
{
    const char *extra[7];
    char txn_id[512];
    int n = 0;

    if (!dlb_kafka_conf_get(conf, "transactional.id")) {
        if (dlb_kafka_txn_id(group, txn_id, sizeof(txn_id)))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                              "no random bytes for a transactional.id");
        extra[n++] = "transactional.id";
        extra[n++] = txn_id;
    }
    /* A process killed inside a transaction leaves it open: its outputs'
     * partitions hold read_committed readers (a gateway waiting for a plan)
     * back at their last stable offset, and its input offsets hold the
     * member that takes its partitions over (OffsetFetch asks for stable
     * offsets), until the coordinator aborts it, this long after it began
     * (plus the broker's transaction.abort.timed.out.transaction.cleanup.
     * interval.ms). A batch's transaction lasts tens of ms; a longer one
     * (the broker away) is fenced, and the producer replaced. */
    if (!dlb_kafka_conf_get(conf, "transaction.timeout.ms")) {
        extra[n++] = "transaction.timeout.ms";
        extra[n++] = "5000";
    }
    /* A transaction begun right after a commit is often refused with
     * CONCURRENT_TRANSACTIONS while the broker still writes the markers of the
     * last one; librdkafka waits retry.backoff.ms (100) before asking again,
     * which was most of a plan's round trip. The Java producer retries that
     * case after 20 ms (KAFKA-5477). */
    if (!dlb_kafka_conf_get(conf, "retry.backoff.ms")) {
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
    dlb_metrics_failed(producer, NULL); /* replaced, if it had failed */
    dlb_after_cache_free(ps->after);
    free(ps->ends);
    free(ps);
}

void dlb_kafka_consumer_destroy(rd_kafka_t *consumer)
{
    if (!consumer)
        return;
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    dlb_metrics_failed(consumer, NULL);
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
    rd_kafka_resp_err_t kerr = rd_kafka_flush(producer, timeout_ms);
    int64_t failed;
    int err;

    /* A producer failed for good delivers nothing more: no retry helps. */
    if ((err = dlb_kafka_fatal(producer, errstr, errstr_size)))
        return err;
    if (kerr != RD_KAFKA_RESP_ERR_NO_ERROR)
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
    const char *const base[] = {
        "group.id", group_id, "enable.auto.commit", "false", "enable.auto.offset.store", "false",
        "auto.offset.reset", "earliest", "client.id", "dlbrain",
        /* A member that dies without leaving (kill -9, a lost node) keeps its
         * partitions until its session expires: 6 s (the broker's least by
         * default, group.min.session.timeout.ms) instead of librdkafka's 45,
         * so the others have them about 7 s after the death (measured by
         * tests/system/62). Heartbeats come from librdkafka's own thread, so
         * a long batch does not expire it. */
        "session.timeout.ms", "6000", "heartbeat.interval.ms", "1000",
        /* librdkafka's prefetch, on top of what the consumer holds
         * (consumer.batch.max.mb): 16 MiB instead of 64 keeps a consumer's
         * memory bounded where records decode large, and is still ahead of
         * a batch. */
        "queued.max.messages.kbytes", "16384",
        /* consumer lag for /metrics (overridable by -X) */
        dlb_metrics_global() ? "statistics.interval.ms" : NULL, "5000", NULL};
    rd_kafka_conf_t *kc;
    char sub[512];

    if (!(kc = dlb_kafka_conf_new(conf, base, extra, errstr, errstr_size)))
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

/* Produce a copy of value; a full queue gets one pass of delivery reports to
 * make room. hdrs (may be NULL) belong to librdkafka once this succeeds, and
 * are freed here when it fails. */
static int produce_copy(rd_kafka_t *producer, const char *topic, const char *key, const void *value,
                        size_t len, rd_kafka_headers_t *hdrs, char *errstr, size_t errstr_size)
{
    rd_kafka_resp_err_t err;

    for (int tries = 0;; tries++) {
        err = rd_kafka_producev(
            producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
            RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || tries)
            break;
        rd_kafka_poll(producer, 100);
    }
    if (err) {
        if (hdrs)
            rd_kafka_headers_destroy(hdrs);
        if (err == RD_KAFKA_RESP_ERR__FATAL && dlb_kafka_fatal(producer, errstr, errstr_size))
            return DLB_ERR_FATAL;
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "produce to %s: %s", topic,
                          rd_kafka_err2str(err));
    }
    rd_kafka_poll(producer, 0);
    return 0;
}

int dlb_kafka_produce(rd_kafka_t *producer, const char *topic, const char *key, const void *value,
                      size_t len, char *errstr, size_t errstr_size)
{
    return produce_copy(producer, topic, key, value, len, NULL, errstr, errstr_size);
}

int dlb_kafka_stamp_get(const rd_kafka_message_t *m, char *buf, size_t size)
{
    rd_kafka_headers_t *hdrs;
    const void *val;
    size_t len;

    buf[0] = '\0';
    /* rd_kafka_message_headers() parses them once; it takes a non-const. */
    if (rd_kafka_message_headers((rd_kafka_message_t *)m, &hdrs) ||
        rd_kafka_header_get_last(hdrs, DLB_KAFKA_STAMP_HEADER, &val, &len) || !val)
        return 0;
    if (len >= size)
        len = size - 1;
    memcpy(buf, val, len);
    buf[len] = '\0';
    return 1;
}

int dlb_kafka_produce_stamped(rd_kafka_t *producer, const char *topic, const char *key,
                              const void *value, size_t len, const char *stamp, char *errstr,
                              size_t errstr_size)
{
    rd_kafka_headers_t *hdrs = NULL;

    if (stamp && *stamp) {
        if (!(hdrs = rd_kafka_headers_new(1)))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        rd_kafka_header_add(hdrs, DLB_KAFKA_STAMP_HEADER, -1, stamp, -1);
    }
    return produce_copy(producer, topic, key, value, len, hdrs, errstr, errstr_size);
}

int dlb_kafka_producer_follow(rd_kafka_t *producer, const dlb_conf_t *conf, char *errstr,
                              size_t errstr_size)
{
    producer_state_t *ps = rd_kafka_opaque(producer);
    char t[3][256];
    const char *const topics[] = {dlb_conf_topic(conf, DLB_TOPIC_JOB_EVENTS, t[0], sizeof(t[0])),
                                  dlb_conf_topic(conf, DLB_TOPIC_METRICS, t[1], sizeof(t[1])),
                                  dlb_conf_topic(conf, DLB_TOPIC_K8S_EVENTS, t[2], sizeof(t[2]))};

    if (ps->after)
        return 0;
    if (!(ps->after = dlb_after_cache_new(topics, 3, DLB_AFTER_CACHE_SLOTS)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (int i = 0; i < 3; i++)
        snprintf(ps->topics[i], sizeof(ps->topics[i]), "%s", topics[i]);
    return 0;
}

int dlb_kafka_producer_follow_whole(rd_kafka_t *producer, const dlb_conf_t *conf, char *errstr,
                                    size_t errstr_size)
{
    producer_state_t *ps = rd_kafka_opaque(producer);
    int err;

    if ((err = dlb_kafka_producer_follow(producer, conf, errstr, errstr_size)))
        return err;
    ps->whole = 1;
    return 0;
}

/* The whole mode: every followed topic's newest offset on the partition the
 * job's events went to (the request's: same key, same partitioner). */
static void after_whole(producer_state_t *ps, dlb_after_t *a)
{
    int32_t partition;

    if (!a->cnt)
        return; /* no event of the job yet: its partition is unknown */
    partition = a->pos[0].partition;
    for (int t = 0; t < 3; t++) {
        end_pos_t *e = end_find(ps, t, partition);
        if (e)
            (void)dlb_after_note(a, ps->topics[t], partition, e->offset);
    }
}

rd_kafka_headers_t *dlb_kafka_after_headers(const dlb_after_t *a)
{
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(1);
    char val[DLB_AFTER_VALUE_MAX + 1];
    int len;

    if (!hdrs)
        return NULL;
    if ((len = dlb_after_format(a, val, sizeof(val))) < 0)
        len = 0; /* cannot happen: at most DLB_AFTER_MAX positions fit */
    rd_kafka_header_add(hdrs, DLB_AFTER_HEADER, -1, val, len);
    return hdrs;
}

int dlb_kafka_produce_request(rd_kafka_t *producer, const char *topic, const char *key,
                              const void *value, size_t len, char *errstr, size_t errstr_size)
{
    producer_state_t *ps = rd_kafka_opaque(producer);
    rd_kafka_headers_t *hdrs;
    dlb_after_t a = {0};

    if (ps->after && key)
        dlb_after_cache_get(ps->after, key, &a);
    if (ps->whole)
        after_whole(ps, &a);
    if (!(hdrs = dlb_kafka_after_headers(&a)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    return produce_copy(producer, topic, key, value, len, hdrs, errstr, errstr_size);
}

const char *const dlb_kafka_pipeline_topics[] = {DLB_TOPIC_JOB_EVENTS,
                                                 DLB_TOPIC_METRICS,
                                                 DLB_TOPIC_K8S_EVENTS,
                                                 DLB_TOPIC_PLAN_REQUESTS,
                                                 DLB_TOPIC_CONFIG_REQUESTS,
                                                 DLB_TOPIC_PLANS,
                                                 DLB_TOPIC_CONFIGS,
                                                 DLB_TOPIC_DLQ,
                                                 NULL};

/* Wait for the answer of an admin request on q and check each topic's
 * result; ok_err (topic exists, topic unknown) counts as done already.
 * *done counts the topics the request changed. */
static int admin_results(rd_kafka_queue_t *q, const dlb_conf_t *conf, int timeout_ms, int deleting,
                         int *done, char *errstr, size_t errstr_size)
{
    const char *what = deleting ? "deleting" : "creating";
    rd_kafka_resp_err_t ok_err =
        deleting ? RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART : RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
    const rd_kafka_topic_result_t **res;
    size_t res_cnt;
    int err = 0;

    *done = 0;
    if (!ev)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                          "%s topics: no answer from %s within %d ms", what, conf->brokers,
                          timeout_ms + 5000);
    if (rd_kafka_event_error(ev)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "%s topics: %s", what,
                         rd_kafka_event_error_string(ev));
        goto out;
    }
    res =
        deleting
            ? rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &res_cnt)
            : rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &res_cnt);
    for (size_t i = 0; i < res_cnt; i++) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
        if (!e) {
            (*done)++;
        } else if (e != ok_err) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "%s topic %s: %s", what,
                             rd_kafka_topic_result_name(res[i]),
                             rd_kafka_topic_result_error_string(res[i]));
            goto out;
        }
    }
out:
    rd_kafka_event_destroy(ev);
    return err;
}

int dlb_kafka_create_topics(rd_kafka_t *rk, const dlb_conf_t *conf, int timeout_ms, char *errstr,
                            size_t errstr_size)
{
    rd_kafka_NewTopic_t *nt[16];
    rd_kafka_queue_t *q = NULL;
    rd_kafka_AdminOptions_t *opts = NULL;
    size_t n = 0;
    char name[256], sub[512];
    int err = 0, created;

    for (const char *const *t = dlb_kafka_pipeline_topics; *t; t++) {
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
    err = admin_results(q, conf, timeout_ms, 0, &created, errstr, errstr_size);
out:
    if (opts)
        rd_kafka_AdminOptions_destroy(opts);
    if (q)
        rd_kafka_queue_destroy(q);
    for (size_t i = 0; i < n; i++)
        rd_kafka_NewTopic_destroy(nt[i]);
    return err;
}

int dlb_kafka_delete_topics(rd_kafka_t *rk, const dlb_conf_t *conf, int timeout_ms, int *deleted,
                            char *errstr, size_t errstr_size)
{
    rd_kafka_DeleteTopic_t *dt[16];
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
    size_t n = 0;
    char name[256];
    int err;

    for (const char *const *t = dlb_kafka_pipeline_topics; *t; t++)
        dt[n++] = rd_kafka_DeleteTopic_new(dlb_conf_topic(conf, *t, name, sizeof(name)));
    rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, NULL, 0);
    rd_kafka_DeleteTopics(rk, dt, n, opts, q);
    err = admin_results(q, conf, timeout_ms, 1, deleted, errstr, errstr_size);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    for (size_t i = 0; i < n; i++)
        rd_kafka_DeleteTopic_destroy(dt[i]);
    return err;
}

int dlb_kafka_dlq_send(rd_kafka_t *producer, const dlb_conf_t *conf, const rd_kafka_message_t *src,
                       const char *stage, int err, const char *message, char *errstr,
                       size_t errstr_size)
{
    char topic[256], part[16], off[32], omitted[32];
    const void *value = src->payload, *key = src->key;
    size_t len = src->len, key_len = src->key_len;
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
    for (;;) {
        kerr = rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, key_len),
                                 RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_HEADERS(hdrs),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (kerr != RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE || (!value && !key))
            break;
        /* The copy does not fit the producer's own message.max.bytes
         * (librdkafka's 1,000,000 by default, below the 1 MiB a consumer
         * takes, and the headers come on top): refused on every retry, it
         * would stop the partition. It goes without its body, then without
         * its key, each omission named with the size left out. */
        snprintf(omitted, sizeof(omitted), "%zu", value ? len : key_len);
        rd_kafka_header_add(hdrs, value ? "dlb.value.omitted.bytes" : "dlb.key.omitted.bytes", -1,
                            omitted, -1);
        if (value) {
            value = NULL;
            len = 0;
        } else {
            key = NULL;
            key_len = 0;
        }
    }
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
    for (const char *const *t = dlb_kafka_pipeline_topics; *t; t++) {
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

int dlb_mock_fail_request(dlb_mock_t *mock, const char *spec, char *errstr, size_t errstr_size)
{
    const struct rd_kafka_err_desc *descs;
    const char *colon = strchr(spec, ':');
    size_t cnt;
    char *end;
    long api;

    api = strtol(spec, &end, 10);
    if (!colon || end != colon || end == spec || api < 0 || api > 32767)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "'%s': not API_KEY:ERROR (e.g. 22:CLUSTER_AUTHORIZATION_FAILED)", spec);
    rd_kafka_get_err_descs(&descs, &cnt);
    for (size_t i = 0; i < cnt; i++) {
        if (descs[i].name && !strcmp(descs[i].name, colon + 1)) {
            rd_kafka_mock_push_request_errors(mock->mc, (int16_t)api, 1, descs[i].code);
            return 0;
        }
    }
    return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                      "'%s': %s is not a librdkafka error name (e.g. NOT_COORDINATOR)", spec,
                      colon + 1);
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

/* One seek of every partition of l; 0 or DLB_ERR_GENERIC naming what failed. */
static int seek_once(rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *l, char *errstr,
                     size_t errstr_size)
{
    rd_kafka_topic_partition_list_t *copy = rd_kafka_topic_partition_list_copy(l);
    rd_kafka_error_t *e;
    int err = 0;

    if (!copy)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    /* The copy, because librdkafka reports each partition's result in it. */
    if ((e = rd_kafka_seek_partitions(consumer, copy, 10000))) {
        err =
            dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "seek: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    for (int i = 0; i < copy->cnt && !err; i++)
        if (copy->elems[i].err)
            err =
                dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "seek %s[%d]@%lld: %s",
                           copy->elems[i].topic, (int)copy->elems[i].partition,
                           (long long)copy->elems[i].offset, rd_kafka_err2str(copy->elems[i].err));
    rd_kafka_topic_partition_list_destroy(copy);
    return err;
}

int dlb_kafka_seek_back(rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *l,
                        volatile sig_atomic_t *stop, int backoff_ms, char *errstr,
                        size_t errstr_size)
{
    int err;

    while ((err = seek_once(consumer, l, errstr, errstr_size)) && !*stop) {
        dlb_warn("kafka: rewinding the failed batch: %s; retrying in %d ms", errstr, backoff_ms);
        dlb_metrics_nap_ms(stop, backoff_ms);
    }
    return err;
}

/* CRC-32 (IEEE 802.3, reflected, as zlib): librdkafka's rd_crc32, on which
 * its consistent and consistent_random partitioners hash the key. */
static uint32_t crc32_ieee(const char *s, size_t n)
{
    uint32_t c = 0xffffffffu;

    for (size_t i = 0; i < n; i++) {
        c ^= (uint8_t)s[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

int32_t dlb_kafka_key_partition(const dlb_conf_t *conf, const char *key, int32_t cnt)
{
    const char *p = "consistent_random";

    if (cnt <= 0 || !key || !key[0])
        return -1;
    for (size_t i = 0; i < conf->kafka_cnt; i++)
        if (!strcmp(conf->kafka[i].key, "partitioner"))
            p = conf->kafka[i].value;
    /* Both hash a non-empty key the same way. */
    if (strcmp(p, "consistent_random") && strcmp(p, "consistent"))
        return -1;
    return (int32_t)(crc32_ieee(key, strlen(key)) % (uint32_t)cnt);
}
