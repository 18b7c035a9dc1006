/* The agent's producer side below its API: logging (throttled), librdkafka
 * configuration, delivery reports, and the plan-request ring that the io
 * thread drains. agent.c (the API) and agent_plans.c (the subscription) both
 * stand on it. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"
#include "clock.h"
#include "err.h"
#include "kafka.h"

/* ---- logging -------------------------------------------------------------- */

void agent_log(dlb_agent_t *a, int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (!a->conf.log_cb || level > a->conf.log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&a->log_lock);
    a->conf.log_cb(level, line, a->conf.log_opaque);
    pthread_mutex_unlock(&a->log_lock);
}

int agent_throttle(dlb_agent_t *a, agent_throttle_t *t, const char *what, char *out,
                   size_t out_size)
{
    int64_t now = dlb_clock_mono_ms();
    uint64_t more;
    int n;

    if (t->last_ms && now - t->last_ms < a->conf.log_interval_ms) {
        if (!t->count++)
            snprintf(t->first, sizeof(t->first), "%.*s", (int)sizeof(t->first) - 1, what);
        return 0;
    }
    more = t->count;
    t->count = 0;
    t->last_ms = now;
    if (more)
        n = snprintf(out, out_size, "%s (and %" PRIu64 " more since the last line, the first: %s)",
                     what, more, t->first);
    else
        n = snprintf(out, out_size, "%s", what);
    if (n >= 0 && (size_t)n >= out_size && out_size > 4)
        memcpy(out + out_size - 4, "...", 4); /* cut to the line: say so */
    return 1;
}

/* Log a repeated condition; call with the lock held (the throttles are under it). */
void agent_log_throttled(dlb_agent_t *a, agent_throttle_t *t, int level, const char *what)
{
    char line[1024];

    if (agent_throttle(a, t, what, line, sizeof(line)))
        agent_log(a, level, "%s", line);
}

/* At close: what the throttles held back. */
void agent_log_held_back(dlb_agent_t *a, agent_throttle_t *t)
{
    if (t->count)
        agent_log(a, DLB_AGENT_LOG_WARNING, "%" PRIu64 " more like: %s", t->count, t->first);
    t->count = 0;
}

/* ---- librdkafka callbacks (run on the thread polling the client) ---------- */

static void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    dlb_agent_t *a = rd_kafka_opaque(rk);

    agent_log(a,
              level <= 3   ? DLB_AGENT_LOG_ERROR
              : level == 4 ? DLB_AGENT_LOG_WARNING
              : level <= 6 ? DLB_AGENT_LOG_INFO
                           : DLB_AGENT_LOG_DEBUG,
              "librdkafka %s: %s", fac, buf);
}

static void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    dlb_agent_t *a = opaque;
    char what[768];

    (void)rk;
    snprintf(what, sizeof(what), "kafka: %s: %s", rd_kafka_err2name(err), reason);
    pthread_mutex_lock(&a->lock);
    agent_log_throttled(a, &a->thr_kafka, DLB_AGENT_LOG_WARNING, what);
    pthread_mutex_unlock(&a->lock);
}

rd_kafka_conf_t *agent_kafka_conf(dlb_agent_t *a, const char *const *base, const char *const *extra,
                                  char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *kc = dlb_kafka_conf_new(&a->conf.dc, base, extra, errstr, errstr_size);

    if (!kc)
        return NULL;
    /* Logs go to the client's main queue, served by rd_kafka_poll() (or the
     * consumer poll) on the agent's threads: never from librdkafka's own. */
    if (rd_kafka_conf_set(kc, "log.queue", "true", NULL, 0) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(kc);
        dlb_seterr(errstr, errstr_size, DLB_AGENT_ERR_KAFKA, "librdkafka refused log.queue");
        return NULL;
    }
    rd_kafka_conf_set_log_cb(kc, kafka_log_cb);
    rd_kafka_conf_set_error_cb(kc, kafka_error_cb);
    rd_kafka_conf_set_opaque(kc, a);
    return kc;
}

/* A message has its delivery report: count it and release what waited on it. */
void agent_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    dlb_agent_t *a = opaque;
    uintptr_t tag = (uintptr_t)m->_private;
    uint64_t n = tag >> 1;
    char what[512];

    (void)rk;
    pthread_mutex_lock(&a->lock);
    if (m->err) {
        a->st.failed++;
        snprintf(what, sizeof(what), "delivery to %s failed: %s", rd_kafka_topic_name(m->rkt),
                 rd_kafka_err2str(m->err));
        agent_log_throttled(a, &a->thr_fail, DLB_AGENT_LOG_WARNING, what);
    } else {
        a->st.sent++;
        if (!(tag & AGENT_MSG_REQ))
            dlb_after_note(&a->after, rd_kafka_topic_name(m->rkt), m->partition, m->offset);
    }
    a->acked++;
    if (tag & AGENT_MSG_REQ)
        a->reqs_inflight--;
    for (size_t i = 0; i < a->reqs_cnt; i++) {
        agent_req_t *r = &a->reqs[(a->reqs_head + i) % AGENT_REQS_MAX];

        if (n <= r->mark && r->waiting)
            r->waiting--;
    }
    pthread_mutex_unlock(&a->lock);
}

/* ---- the request ring ------------------------------------------------------- */

/* The head request may go once the messages before it are acknowledged, the
 * requests before it too (in flight: all were asked earlier), and the plan
 * subscription knows where it starts (or gave up waiting for that). */
static int head_due(const dlb_agent_t *a, int64_t now)
{
    const agent_req_t *r = &a->reqs[a->reqs_head];

    if (r->waiting || a->reqs_inflight)
        return 0;
    return a->sub != SUB_STARTING || now - r->created_ms >= AGENT_SUB_WAIT_MS;
}

void agent_send_due(dlb_agent_t *a)
{
    int64_t now = dlb_clock_mono_ms();
    char what[512];

    while (a->reqs_cnt && head_due(a, now)) {
        agent_req_t *r = &a->reqs[a->reqs_head];
        uint64_t n = a->produced + 1;
        rd_kafka_resp_err_t err;
        char after[DLB_AFTER_VALUE_MAX + 1];
        /* Every event before the request is acknowledged: the optimizer
         * answers once it has applied these, with no grace to wait out. */
        int after_len = dlb_after_format(&a->after, after, sizeof(after));

        err = rd_kafka_producev(
            a->producer, RD_KAFKA_V_TOPIC(a->topics[DLB_EV_PLAN_REQUEST]),
            RD_KAFKA_V_KEY(a->uid, strlen(a->uid)), RD_KAFKA_V_VALUE(r->buf, r->len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_HEADER(DLB_AFTER_HEADER, after, after_len < 0 ? 0 : after_len),
            RD_KAFKA_V_OPAQUE((void *)(uintptr_t)((n << 1) | AGENT_MSG_REQ)), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return; /* room comes with the next delivery reports */
        if (err) {
            a->st.failed++;
            snprintf(what, sizeof(what), "plan request to %s: %s", a->topics[DLB_EV_PLAN_REQUEST],
                     rd_kafka_err2str(err));
            agent_log_throttled(a, &a->thr_kafka, DLB_AGENT_LOG_ERROR, what);
        } else {
            a->produced = n;
            a->reqs_inflight++;
            if (a->tap)
                a->tap(a->topics[DLB_EV_PLAN_REQUEST], a->uid, r->buf, r->len, a->tap_opaque);
        }
        free(r->buf);
        memset(r, 0, sizeof(*r));
        a->reqs_head = (a->reqs_head + 1) % AGENT_REQS_MAX;
        a->reqs_cnt--;
        pthread_cond_broadcast(&a->progress);
    }
}

void *agent_io_main(void *arg)
{
    dlb_agent_t *a = arg;
    int stop;

    do {
        /* Returns early on a delivery report; 20 ms bounds how late a request
         * notices that the subscription became ready or gave up. */
        rd_kafka_poll(a->producer, 20);
        pthread_mutex_lock(&a->lock);
        agent_send_due(a);
        pthread_cond_broadcast(&a->progress);
        stop = a->stop;
        pthread_mutex_unlock(&a->lock);
    } while (!stop);
    return NULL;
}
