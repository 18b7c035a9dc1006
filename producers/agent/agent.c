/* The agent library: configuration, reports and the producer's thread.
 *
 * A report is encoded and handed to librdkafka under the agent's lock, so
 * event ids, times and message numbers follow the order of the calls. The
 * producer's bounded queue (queue.buffering.max.*) is the agent's queue: when
 * it is full librdkafka says so at once and the report is dropped. Plan
 * requests wait in a small ring until every message numbered before them has
 * its delivery report; the io thread serves those reports and sends the
 * requests that became due. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"
#include "agent_internal.h"
#include "codec.h"
#include "err.h"
#include "kafka.h"

/* The agent's own keys: integers in a range (librdkafka's own ranges for the
 * queue bounds, as they become its queue.buffering.max.*). */
static const struct {
    const char *key;
    long min, max;
    size_t off;
} agent_keys[] = {
    {"agent.queue.max.messages", 1, 10000000, offsetof(dlb_agent_conf_t, queue_max_messages)},
    {"agent.queue.max.kbytes", 1, 2097151, offsetof(dlb_agent_conf_t, queue_max_kbytes)},
    {"agent.plans.max", 1, 1000000, offsetof(dlb_agent_conf_t, plans_max)},
    {"agent.log.level", DLB_AGENT_LOG_ERROR, DLB_AGENT_LOG_DEBUG,
     offsetof(dlb_agent_conf_t, log_level)},
    {"agent.log.interval.ms", 0, 86400000, offsetof(dlb_agent_conf_t, log_interval_ms)},
};

const char *dlb_agent_err2str(int err)
{
    switch (err) {
    case DLB_AGENT_OK:
        return "success";
    case DLB_AGENT_ERR_INVALID:
        return "invalid argument";
    case DLB_AGENT_ERR_QUEUE_FULL:
        return "queue full: the report was dropped";
    case DLB_AGENT_ERR_CONF:
        return "bad configuration";
    case DLB_AGENT_ERR_STATE:
        return "not allowed in this state";
    case DLB_AGENT_ERR_TIMEOUT:
        return "timed out: not everything was delivered";
    case DLB_AGENT_ERR_NOMEM:
        return "out of memory";
    case DLB_AGENT_ERR_KAFKA:
        return "the Kafka client refused";
    default:
        return "unknown error";
    }
}

const char *dlb_agent_version(void)
{
    return DLB_VERSION;
}

int dlb_agent_abi_version(void)
{
    return DLB_AGENT_ABI_VERSION;
}

/* ---- configuration ------------------------------------------------------ */

/* The schema registry's keys: dlbrain's settings of the same names. */
static const char *const sr_keys[] = {
    "schema.registry.url",
    "schema.registry.basic.auth.user.info",
    "schema.registry.basic.auth.user.info.file",
    "schema.registry.ssl.ca.location",
    "schema.registry.timeout.ms",
};

static void conf_env(dlb_agent_conf_t *c, const char *key, const char *var)
{
    const char *v = getenv(var);
    char sub[256];

    /* A bad environment value (too long) leaves the default: conf_new cannot
     * fail on it. A registry's is remembered and refused by open, as
     * running without it would write ids no reader of the platform knows. */
    if (v && *v && dlb_conf_set(&c->dc, key, v, sub, sizeof(sub)) && !strncmp(key, "schema.", 7) &&
        !c->env_err[0])
        snprintf(c->env_err, sizeof(c->env_err), "environment %s: %s", var, sub);
}

dlb_agent_conf_t *dlb_agent_conf_new(void)
{
    dlb_agent_conf_t *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    dlb_conf_init(&c->dc);
    conf_env(c, "brokers", "DLBRAIN_BROKERS");
    conf_env(c, "env", "DLBRAIN_ENV");
    conf_env(c, "schema.registry.url", "DLBRAIN_SCHEMA_REGISTRY_URL");
    conf_env(c, "schema.registry.basic.auth.user.info",
             "DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO");
    conf_env(c, "schema.registry.basic.auth.user.info.file",
             "DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE");
    conf_env(c, "schema.registry.ssl.ca.location", "DLBRAIN_SCHEMA_REGISTRY_SSL_CA_LOCATION");
    conf_env(c, "schema.registry.timeout.ms", "DLBRAIN_SCHEMA_REGISTRY_TIMEOUT_MS");
    c->queue_max_messages = 10000;
    c->queue_max_kbytes = 65536;
    c->plans_max = 100;
    c->log_level = DLB_AGENT_LOG_INFO;
    c->log_interval_ms = 10000;
    return c;
}

static int conf_long(const char *key, const char *value, long min, long max, long *out,
                     char *errstr, size_t size)
{
    char *end;
    long v = 0;

    errno = 0;
    v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < min || v > max)
        return dlb_seterr(errstr, size, DLB_AGENT_ERR_CONF, "%s: expected an integer %ld..%ld", key,
                          min, max);
    *out = v;
    return 0;
}

/* A librdkafka property is tried on a scratch configuration, so a bad one is
 * refused here rather than at open. librdkafka's own message repeats the
 * value (which may be a password): ours names only the key. */
static int conf_kafka(dlb_agent_conf_t *c, const char *key, const char *value, char *errstr,
                      size_t size)
{
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    rd_kafka_conf_res_t res;
    char sub[512];

    if (!kc)
        return dlb_seterr(errstr, size, DLB_AGENT_ERR_NOMEM, "out of memory");
    res = rd_kafka_conf_set(kc, key, value, sub, sizeof(sub));
    rd_kafka_conf_destroy(kc);
    if (res == RD_KAFKA_CONF_UNKNOWN)
        return dlb_seterr(errstr, size, DLB_AGENT_ERR_CONF,
                          "%s: not an agent key nor a librdkafka property", key);
    if (res != RD_KAFKA_CONF_OK)
        return dlb_seterr(errstr, size, DLB_AGENT_ERR_CONF, "%s: invalid value for librdkafka",
                          key);
    if (dlb_conf_set_kafka(&c->dc, key, value, sub, sizeof(sub)))
        return dlb_seterr(errstr, size, DLB_AGENT_ERR_NOMEM, "out of memory");
    return 0;
}

int dlb_agent_conf_set(dlb_agent_conf_t *c, const char *key, const char *value, char *errstr,
                       size_t size)
{
    long v = 0;
    int err;

    if (!c || !key || !value)
        return dlb_seterr(errstr, size, DLB_AGENT_ERR_INVALID, "NULL configuration, key or value");
    if (!strcmp(key, "brokers") || !strcmp(key, "bootstrap.servers") || !strcmp(key, "env")) {
        const char *k = strcmp(key, "env") ? "brokers" : "env";
        size_t cap = strcmp(key, "env") ? sizeof(c->dc.brokers) : sizeof(c->dc.env);

        if (!*value || strlen(value) >= cap)
            return dlb_seterr(errstr, size, DLB_AGENT_ERR_CONF, "%s: expected 1..%zu characters",
                              key, cap - 1);
        if (!strcmp(k, "env") &&
            strspn(value, "abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(value))
            return dlb_seterr(errstr, size, DLB_AGENT_ERR_CONF,
                              "env: only letters, digits, '.', '_' and '-' (a topic name prefix)");
        dlb_conf_set(&c->dc, k, value, errstr, size); /* checked above: it cannot refuse */
        return 0;
    }
    for (size_t i = 0; i < sizeof(sr_keys) / sizeof(sr_keys[0]); i++) {
        if (strcmp(key, sr_keys[i]))
            continue;
        if (!strcmp(key, "schema.registry.url") && *value && strncmp(value, "http://", 7) &&
            strncmp(value, "https://", 8))
            return dlb_seterr(errstr, size, DLB_AGENT_ERR_CONF,
                              "%s: expected an http:// or https:// URL, or empty", key);
        /* dlbrain's own checks and messages, which never repeat a value */
        if ((err = dlb_conf_set(&c->dc, key, value, errstr, size)))
            return err == DLB_ERR_NOMEM ? DLB_AGENT_ERR_NOMEM : DLB_AGENT_ERR_CONF;
        return 0;
    }
    for (size_t i = 0; i < sizeof(agent_keys) / sizeof(agent_keys[0]); i++) {
        if (strcmp(key, agent_keys[i].key))
            continue;
        if ((err = conf_long(key, value, agent_keys[i].min, agent_keys[i].max, &v, errstr, size)))
            return err;
        *(long *)((char *)c + agent_keys[i].off) = v;
        return 0;
    }
    if (!strncmp(key, "agent.", 6) || !*key)
        return dlb_seterr(errstr, size, DLB_AGENT_ERR_CONF, "%s: unknown agent key",
                          *key ? key : "(empty)");
    return conf_kafka(c, key, value, errstr, size);
}

void dlb_agent_conf_set_log_cb(dlb_agent_conf_t *c, dlb_agent_log_cb cb, void *opaque)
{
    if (!c)
        return;
    c->log_cb = cb;
    c->log_opaque = opaque;
}

void dlb_agent_conf_destroy(dlb_agent_conf_t *c)
{
    if (!c)
        return;
    dlb_conf_destroy(&c->dc);
    free(c);
}

/* Deep copy: the pass-through list is the only thing on the heap. */
static int conf_copy(dlb_agent_conf_t *dst, const dlb_agent_conf_t *src)
{
    char sub[256];

    *dst = *src;
    dst->dc.kafka = NULL;
    dst->dc.kafka_cnt = 0;
    for (size_t i = 0; i < src->dc.kafka_cnt; i++)
        if (dlb_conf_set_kafka(&dst->dc, src->dc.kafka[i].key, src->dc.kafka[i].value, sub,
                               sizeof(sub)))
            return DLB_AGENT_ERR_NOMEM;
    return 0;
}

/* ---- open / close ------------------------------------------------------------ */

/* The registry's URL as a log line may show it: credentials written into it
 * (https://user:password@host/) are masked. */
static void url_for_log(const char *url, char *out, size_t size)
{
    const char *host = strstr(url, "://"), *at, *slash;

    host = host ? host + 3 : url;
    slash = host + strcspn(host, "/");
    at = memchr(host, '@', (size_t)(slash - host));
    if (at)
        snprintf(out, size, "%.*s***%s", (int)(host - url), url, at);
    else
        snprintf(out, size, "%s", url);
}

/* schema.registry.url: every schema of the environment's typed topics looked
 * up or registered under <env>.<topic>-value, as dlbrain's own producers do
 * (dlb_srclient_bind), into a table of this agent's own, which its catalogs
 * write and read. */
static int registry_bind(dlb_agent_t *a, char *errstr, size_t errstr_size)
{
    dlb_catalog_t *cat = NULL;
    char sub[1024], shown[600];
    int err;

    if ((err = dlb_srclient_new(&a->sr, &a->conf.dc.sr, sub, sizeof(sub))) ||
        (err = dlb_catalog_new(&cat, sub, sizeof(sub))) ||
        (err = dlb_srclient_bind_wire(a->sr, cat, a->conf.dc.env, &a->wire, sub, sizeof(sub)))) {
        dlb_catalog_destroy(cat);
        return dlb_seterr(errstr, errstr_size,
                          err == DLB_ERR_NOMEM ? DLB_AGENT_ERR_NOMEM : DLB_AGENT_ERR_CONF,
                          "%s; agent not started", sub);
    }
    dlb_catalog_destroy(cat);
    url_for_log(a->conf.dc.sr.url, shown, sizeof(shown));
    agent_log(a, DLB_AGENT_LOG_INFO,
              "schema registry %s: dlbrain's schemas found or registered under "
              "%s.<topic>-value; writing and reading with its ids",
              shown, a->conf.dc.env);
    return 0;
}

static void agent_free(dlb_agent_t *a)
{
    if (a->producer)
        rd_kafka_destroy(a->producer);
    for (size_t i = 0; i < a->reqs_cnt; i++)
        free(a->reqs[(a->reqs_head + i) % AGENT_REQS_MAX].buf);
    if (a->cat)
        dlb_catalog_destroy(a->cat);
    dlb_catalog_wire_destroy(a->wire); /* after every catalog made with it */
    dlb_srclient_destroy(a->sr);       /* after the table that resolves through it */
    dlb_conf_destroy(&a->conf.dc);
    pthread_cond_destroy(&a->plan_ready);
    pthread_cond_destroy(&a->progress);
    pthread_mutex_destroy(&a->log_lock);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

static int make_nonce(char *out)
{
    uint8_t b[8];

    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        /* No entropy source: time and address still differ between agents. */
        uint64_t x = (uint64_t)dlb_clock_wall_ms() ^ ((uint64_t)(uintptr_t)out << 16);
        memcpy(b, &x, sizeof(b));
    }
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

static int cond_init_mono(pthread_cond_t *c)
{
    pthread_condattr_t at;
    int rc;

    if (pthread_condattr_init(&at))
        return -1;
    rc = pthread_condattr_setclock(&at, CLOCK_MONOTONIC) || pthread_cond_init(c, &at);
    pthread_condattr_destroy(&at);
    return rc ? -1 : 0;
}

dlb_agent_t *dlb_agent_open(const dlb_agent_conf_t *conf, const char *job_uid, char *errstr,
                            size_t errstr_size)
{
    char qmsgs[32], qkb[32], sub[512];
    const char *base[] = {"enable.idempotence", "true",          "linger.ms", "5",
                          "client.id",          "dlbrain-agent", NULL};
    const char *extra[] = {"queue.buffering.max.messages", qmsgs, "queue.buffering.max.kbytes", qkb,
                           NULL};
    const dlb_event_type_t types[] = {DLB_EV_JOB, DLB_EV_RUNTIME, DLB_EV_NODE, DLB_EV_PLAN_REQUEST,
                                      DLB_EV_PLAN};
    dlb_agent_conf_t *defaults = NULL;
    rd_kafka_conf_t *kc;
    dlb_agent_t *a;

    if (!job_uid || !*job_uid || strlen(job_uid) > DLB_AGENT_UID_MAX) {
        dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_INVALID, "job_uid: expected 1..%d characters",
                   DLB_AGENT_UID_MAX);
        return NULL;
    }
    if (!conf && !(conf = defaults = dlb_agent_conf_new()))
        goto nomem;
    if (!(a = calloc(1, sizeof(*a)))) {
        dlb_agent_conf_destroy(defaults);
        goto nomem;
    }
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->log_lock, NULL);
    if (cond_init_mono(&a->progress) || cond_init_mono(&a->plan_ready)) {
        free(a); /* nothing else to release: the mutexes hold no memory on Linux */
        dlb_agent_conf_destroy(defaults);
        goto nomem;
    }
    if (conf_copy(&a->conf, conf)) {
        dlb_agent_conf_destroy(defaults);
        agent_free(a);
        goto nomem;
    }
    dlb_agent_conf_destroy(defaults);
    a->seen.max = AGENT_SEEN_MAX;
    snprintf(a->uid, sizeof(a->uid), "%s", job_uid);
    make_nonce(a->nonce);
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        dlb_conf_topic(&a->conf.dc, dlb_event_type_topic(types[i]), a->topics[types[i]],
                       sizeof(a->topics[types[i]]));
    if (a->conf.env_err[0]) {
        dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_CONF, "%s", a->conf.env_err);
        goto fail;
    }
    if (a->conf.dc.sr.url[0] && registry_bind(a, errstr, errstr_size))
        goto fail;
    if (dlb_catalog_new_wire(&a->cat, a->wire, sub, sizeof(sub))) {
        dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_NOMEM, "schema catalog: %s", sub);
        goto fail;
    }
    snprintf(qmsgs, sizeof(qmsgs), "%ld", a->conf.queue_max_messages);
    snprintf(qkb, sizeof(qkb), "%ld", a->conf.queue_max_kbytes);
    if (!(kc = agent_kafka_conf(a, base, extra, sub, sizeof(sub)))) {
        dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_CONF, "%s", sub);
        goto fail;
    }
    rd_kafka_conf_set_dr_msg_cb(kc, agent_dr_msg_cb);
    if (!(a->producer = rd_kafka_new(RD_KAFKA_PRODUCER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_KAFKA, "kafka producer: %s", sub);
        goto fail;
    }
    rd_kafka_set_log_queue(a->producer, NULL);
    if (pthread_create(&a->io_thread, NULL, agent_io_main, a)) {
        dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_NOMEM, "cannot start the agent's thread");
        goto fail;
    }
    a->io_started = 1;
    agent_log(a, DLB_AGENT_LOG_INFO, "agent %s for job %s: brokers %s, topics %s.*",
              dlb_agent_version(), a->uid, a->conf.dc.brokers, a->conf.dc.env);
    return a;
nomem:
    dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_NOMEM, "out of memory");
    return NULL;
fail:
    agent_free(a);
    return NULL;
}

static uint64_t queued(const dlb_agent_t *a)
{
    return a->st.reported - a->st.sent - a->st.failed;
}

int dlb_agent_flush(dlb_agent_t *a, int timeout_ms)
{
    int64_t deadline = dlb_clock_mono_ms() + timeout_ms;
    struct timespec ts;
    int rc = 0;

    if (!a)
        return DLB_AGENT_ERR_INVALID;
    pthread_mutex_lock(&a->lock);
    while (queued(a)) {
        int64_t left = deadline - dlb_clock_mono_ms();

        if (timeout_ms >= 0 && left <= 0) {
            rc = DLB_AGENT_ERR_TIMEOUT;
            break;
        }
        /* The io thread broadcasts at least every 20 ms. */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&a->progress, &a->lock, &ts);
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int dlb_agent_close(dlb_agent_t *a, int flush_timeout_ms)
{
    uint64_t left_reqs, left_msgs;
    int rc;

    if (!a)
        return DLB_AGENT_ERR_INVALID;
    rc = dlb_agent_flush(a, flush_timeout_ms);
    agent_plans_stop(a);
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_mutex_unlock(&a->lock);
    if (a->io_started)
        pthread_join(a->io_thread, NULL);
    /* What is still queued is given up: librdkafka reports each purged
     * message as failed to the delivery callback, served by the polls below. */
    pthread_mutex_lock(&a->lock);
    left_reqs = a->reqs_cnt;
    left_msgs = queued(a);
    a->st.failed += left_reqs;
    pthread_mutex_unlock(&a->lock);
    rd_kafka_purge(a->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_flush(a->producer, 1000);
    rd_kafka_poll(a->producer, 0);
    pthread_mutex_lock(&a->lock);
    if (left_msgs)
        agent_log(a, DLB_AGENT_LOG_WARNING,
                  "closing: %" PRIu64 " report(s) not delivered in %d ms, %" PRIu64
                  " of them plan requests never sent; discarded",
                  left_msgs, flush_timeout_ms, left_reqs);
    agent_log_held_back(a, &a->thr_drop);
    agent_log_held_back(a, &a->thr_fail);
    agent_log_held_back(a, &a->thr_invalid);
    agent_log_held_back(a, &a->thr_kafka);
    agent_log(a, DLB_AGENT_LOG_INFO,
              "agent for job %s closed: %" PRIu64 " reported, %" PRIu64 " sent, %" PRIu64
              " dropped, %" PRIu64 " failed, %" PRIu64 " invalid, %" PRIu64 " plans received",
              a->uid, a->st.reported, a->st.sent, a->st.dropped, a->st.failed, a->st.invalid,
              a->st.plans_received);
    pthread_mutex_unlock(&a->lock);
    agent_free(a);
    return rc || left_msgs ? DLB_AGENT_ERR_TIMEOUT : 0;
}

/* ---- reports ------------------------------------------------------------------ */

static void fill_header(dlb_agent_t *a, dlb_event_t *ev, char *id, size_t id_size)
{
    int64_t now = dlb_clock_wall_ms();
    char *eid, *uid;
    int64_t *t;

    switch (ev->type) {
    case DLB_EV_JOB:
        eid = ev->u.job.event_id, uid = ev->u.job.job_uid, t = &ev->u.job.event_time_ms;
        break;
    case DLB_EV_RUNTIME:
        eid = ev->u.rt.event_id, uid = ev->u.rt.job_uid, t = &ev->u.rt.event_time_ms;
        break;
    case DLB_EV_NODE:
        eid = ev->u.node.event_id, uid = ev->u.node.job_uid, t = &ev->u.node.event_time_ms;
        break;
    default:
        eid = ev->u.req.event_id, uid = ev->u.req.job_uid, t = &ev->u.req.event_time_ms;
        break;
    }
    /* The pipeline orders a job's events by time: never go back. */
    if (now < a->last_time_ms)
        now = a->last_time_ms;
    a->last_time_ms = now;
    /* At most 80 + 1 + 16 + 1 + 20 characters: fits DLB_ID_MAX. */
    snprintf(eid, DLB_ID_MAX, "%.80s-%.16s-%" PRIu64, a->uid, a->nonce, ++a->seq);
    snprintf(uid, DLB_ID_MAX, "%s", a->uid);
    *t = now;
    if (id)
        snprintf(id, id_size, "%s", eid);
}

/* Refuse a report: counted, logged (throttled), nothing sent. */
static int refuse(dlb_agent_t *a, int dlb_err, const char *kind, const char *why)
{
    char what[768];

    if (dlb_err == DLB_ERR_NOMEM)
        return DLB_AGENT_ERR_NOMEM;
    a->st.invalid++;
    snprintf(what, sizeof(what), "invalid %s not sent: %s", kind, why);
    agent_log_throttled(a, &a->thr_invalid, DLB_AGENT_LOG_WARNING, what);
    return DLB_AGENT_ERR_INVALID;
}

/* Fill, check and encode ev under the lock. @returns 0 with *buf, or an agent error. */
static int encode(dlb_agent_t *a, dlb_event_t *ev, int conv_err, const char *conv_why, char *id,
                  size_t id_size, void **buf, size_t *len)
{
    const char *kind = dlb_event_type_name(ev->type);
    char sub[512];
    int err;

    if (conv_err)
        return refuse(a, conv_err, kind, conv_why);
    fill_header(a, ev, id, id_size);
    if ((err = dlb_event_validate(ev, sub, sizeof(sub))) ||
        (err = dlb_codec_encode(a->cat, ev, buf, len, sub, sizeof(sub))))
        return refuse(a, err, kind, sub);
    return 0;
}

/* Hand one encoded report to the producer. Called with the lock held. */
static int produce(dlb_agent_t *a, dlb_event_type_t type, void *buf, size_t len)
{
    uint64_t n = a->produced + 1;
    rd_kafka_resp_err_t err;
    char what[512];

    err = rd_kafka_producev(a->producer, RD_KAFKA_V_TOPIC(a->topics[type]),
                            RD_KAFKA_V_KEY(a->uid, strlen(a->uid)), RD_KAFKA_V_VALUE(buf, len),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_OPAQUE((void *)(uintptr_t)(n << 1)), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        a->st.dropped++;
        snprintf(what, sizeof(what),
                 "queue full (agent.queue.max.messages %ld, agent.queue.max.kbytes %ld): "
                 "report dropped",
                 a->conf.queue_max_messages, a->conf.queue_max_kbytes);
        agent_log_throttled(a, &a->thr_drop, DLB_AGENT_LOG_WARNING, what);
        return DLB_AGENT_ERR_QUEUE_FULL;
    }
    if (err) {
        snprintf(what, sizeof(what), "produce to %s: %s", a->topics[type], rd_kafka_err2str(err));
        agent_log_throttled(a, &a->thr_kafka, DLB_AGENT_LOG_ERROR, what);
        return DLB_AGENT_ERR_KAFKA;
    }
    a->produced = n;
    a->st.reported++;
    if (a->tap)
        a->tap(a->topics[type], a->uid, buf, len, a->tap_opaque);
    return 0;
}

/* Encode and produce a converted event under the lock; frees ev (heap: a node
 * event holds kilobytes, too much for the training thread's stack). */
static int report(dlb_agent_t *a, dlb_event_t *ev, int conv_err, const char *conv_why)
{
    void *buf = NULL;
    size_t len = 0;
    int err;

    pthread_mutex_lock(&a->lock);
    if (!(err = encode(a, ev, conv_err, conv_why, NULL, 0, &buf, &len)))
        err = produce(a, ev->type, buf, len);
    pthread_mutex_unlock(&a->lock);
    free(buf);
    dlb_event_clear(ev);
    free(ev);
    return err;
}

/* Every report starts so: arguments checked, an event on the heap. */
static dlb_event_t *report_begin(const dlb_agent_t *a, const void *in, int *rc)
{
    dlb_event_t *ev = NULL;

    *rc = !a || !in ? DLB_AGENT_ERR_INVALID : 0;
    if (!*rc && !(ev = calloc(1, sizeof(*ev))))
        *rc = DLB_AGENT_ERR_NOMEM;
    return ev;
}

int dlb_agent_report_job(dlb_agent_t *a, const dlb_agent_job_t *job)
{
    char why[512] = "";
    dlb_event_t *ev;
    int rc;

    if (!(ev = report_begin(a, job, &rc)))
        return rc;
    return report(a, ev, agent_event_job(job, ev, why, sizeof(why)), why);
}

int dlb_agent_report_sample(dlb_agent_t *a, const dlb_agent_sample_t *sample)
{
    char why[512] = "";
    dlb_event_t *ev;
    int rc;

    if (!(ev = report_begin(a, sample, &rc)))
        return rc;
    return report(a, ev, agent_event_sample(sample, ev, why, sizeof(why)), why);
}

int dlb_agent_report_node(dlb_agent_t *a, const dlb_agent_node_event_t *event)
{
    char why[512] = "";
    dlb_event_t *ev;
    int rc;

    if (!(ev = report_begin(a, event, &rc)))
        return rc;
    return report(a, ev, agent_event_node(event, ev, why, sizeof(why)), why);
}

int dlb_agent_request_plan(dlb_agent_t *a, const char *stage, const char *oom_pod, char *request_id,
                           size_t request_id_size)
{
    char why[512] = "", what[256];
    dlb_event_t *ev;
    agent_req_t *r;
    void *buf = NULL;
    size_t len = 0;
    int err;

    if (!a || !stage || (request_id && request_id_size < DLB_AGENT_ID_MAX))
        return DLB_AGENT_ERR_INVALID;
    if (!(ev = calloc(1, sizeof(*ev))))
        return DLB_AGENT_ERR_NOMEM;
    err = agent_event_request(stage, oom_pod, ev, why, sizeof(why));
    pthread_mutex_lock(&a->lock);
    if (!err && a->reqs_cnt == AGENT_REQS_MAX) {
        a->st.dropped++;
        snprintf(what, sizeof(what), "%d plan requests waiting already: request dropped",
                 AGENT_REQS_MAX);
        agent_log_throttled(a, &a->thr_drop, DLB_AGENT_LOG_WARNING, what);
        err = DLB_AGENT_ERR_QUEUE_FULL;
    } else if (!(err = encode(a, ev, err, why, request_id, request_id_size, &buf, &len))) {
        r = &a->reqs[(a->reqs_head + a->reqs_cnt++) % AGENT_REQS_MAX];
        /* Everything in flight now was queued before this request. */
        r->mark = a->produced;
        r->waiting = a->produced - a->acked;
        r->created_ms = dlb_clock_mono_ms();
        r->buf = buf;
        r->len = len;
        a->st.reported++;
        agent_send_due(a);
    }
    pthread_mutex_unlock(&a->lock);
    dlb_event_clear(ev);
    free(ev);
    return err;
}

int dlb_agent_stats(dlb_agent_t *a, dlb_agent_stats_t *stats, size_t stats_size)
{
    dlb_agent_stats_t st;

    if (!a || !stats)
        return DLB_AGENT_ERR_INVALID;
    pthread_mutex_lock(&a->lock);
    st = a->st;
    st.queued = queued(a);
    st.requests_waiting = a->reqs_cnt;
    pthread_mutex_unlock(&a->lock);
    /* An older caller knows a prefix of the struct: copy only that. */
    memcpy(stats, &st, stats_size < sizeof(st) ? stats_size : sizeof(st));
    return 0;
}

void agent_set_tap(dlb_agent_t *a, agent_tap_cb cb, void *opaque)
{
    pthread_mutex_lock(&a->lock);
    a->tap = cb;
    a->tap_opaque = opaque;
    pthread_mutex_unlock(&a->lock);
}
