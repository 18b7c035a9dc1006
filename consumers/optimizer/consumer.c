#include "consumer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache_redis.h"
#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "kafka.h"
#include "log.h"
#include "optimizer.h"
#include "store_pg.h"

/* Redis reconnects are tried at most this often while it is down, so an
 * outage costs one failed connect per interval instead of one per event. */
#define REDIS_RETRY_MS   5000
#define FLUSH_TIMEOUT_MS 30000

typedef struct item {
    rd_kafka_message_t *msg;
    dlb_event_t ev;
    int ok; /* decoded and valid */
} item_t;

typedef struct outplan {
    char job_uid[DLB_ID_MAX];
    void *buf;
    size_t len;
} outplan_t;

typedef struct ctx {
    const dlb_conf_t *conf;
    volatile sig_atomic_t *stop;
    dlb_optimizer_stats_t *st;
    dlb_catalog_t *cat;
    dlb_pg_t *pg;
    dlb_redis_t *redis; /* NULL while Redis is down */
    int64_t redis_retry_at;
    rd_kafka_t *consumer;
    rd_kafka_t *producer;
    char plans_topic[256];
    item_t *items;
    size_t items_cnt;
    outplan_t *out;
    size_t out_cnt;
} ctx_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(const ctx_t *c, int ms)
{
    for (int i = 0; i < ms / 50 && !*c->stop; i++)
        usleep(50 * 1000);
}

static void redis_down(ctx_t *c, const char *what, const char *errstr)
{
    dlb_warn("redis: %s failed: %s; serving job state from PostgreSQL until Redis is back", what,
             errstr);
    dlb_redis_destroy(c->redis);
    c->redis = NULL;
    c->redis_retry_at = now_ms() + REDIS_RETRY_MS;
}

static void redis_maybe_connect(ctx_t *c)
{
    char errstr[512];

    if (c->redis || now_ms() < c->redis_retry_at)
        return;
    if (dlb_redis_connect(&c->redis, c->conf, c->cat, errstr, sizeof(errstr))) {
        c->redis = NULL;
        c->redis_retry_at = now_ms() + REDIS_RETRY_MS;
        dlb_dbg("redis: still unavailable: %s", errstr);
        return;
    }
    dlb_info("redis: connected to %s:%d", c->conf->redis_host, c->conf->redis_port);
}

static void batch_clear(ctx_t *c)
{
    for (size_t i = 0; i < c->items_cnt; i++) {
        dlb_event_clear(&c->items[i].ev);
        rd_kafka_message_destroy(c->items[i].msg);
    }
    c->items_cnt = 0;
    for (size_t i = 0; i < c->out_cnt; i++)
        free(c->out[i].buf);
    c->out_cnt = 0;
}

/* Fill a batch: up to batch_size messages or poll_ms, whichever comes first. */
static void batch_poll(ctx_t *c)
{
    int64_t deadline = now_ms() + c->conf->poll_ms;

    while (c->items_cnt < (size_t)c->conf->batch_size && !*c->stop) {
        int64_t left = deadline - now_ms();
        rd_kafka_message_t *m;

        if (left <= 0)
            break;
        if (!(m = rd_kafka_consumer_poll(c->consumer, (int)left)))
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                dlb_warn("kafka: consume error: %s; continuing", rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        c->items[c->items_cnt].msg = m;
        memset(&c->items[c->items_cnt].ev, 0, sizeof(dlb_event_t));
        c->items[c->items_cnt].ok = 0;
        c->items_cnt++;
        c->st->consumed++;
    }
}

static void to_dlq(ctx_t *c, item_t *it, const char *stage, int err, const char *msg)
{
    char errstr[512];

    dlb_warn("bad message at %s [%" PRId32 "] offset %" PRId64 " (%s, %s): %s; sent to the DLQ",
             rd_kafka_topic_name(it->msg->rkt), it->msg->partition, it->msg->offset, stage,
             dlb_err_name(err), msg);
    if (dlb_kafka_dlq_send(c->producer, c->conf, it->msg, stage, err, msg, errstr, sizeof(errstr)))
        dlb_err("dlq: %s; the batch will be retried", errstr);
    c->st->dlq++;
}

/* Decode and validate every message; bad ones go to the DLQ now (their
 * offsets are committed with the batch, so they are not seen again). */
static void batch_decode(ctx_t *c)
{
    char errstr[512];
    int err;

    for (size_t i = 0; i < c->items_cnt; i++) {
        item_t *it = &c->items[i];
        if ((int64_t)it->msg->len > c->conf->max_message_bytes) {
            snprintf(errstr, sizeof(errstr), "message of %zu bytes exceeds message.max.bytes %lld",
                     it->msg->len, (long long)c->conf->max_message_bytes);
            to_dlq(c, it, "decode", DLB_ERR_INVALID, errstr);
            continue;
        }
        if ((err = dlb_codec_decode(c->cat, it->msg->payload, it->msg->len, &it->ev, errstr,
                                    sizeof(errstr)))) {
            to_dlq(c, it, "decode", err, errstr);
            continue;
        }
        if ((err = dlb_event_validate(&it->ev, errstr, sizeof(errstr)))) {
            to_dlq(c, it, "validate", err, errstr);
            continue;
        }
        if (it->ev.type == DLB_EV_PLAN || it->ev.type == DLB_EV_CONFIG_MATCH) {
            snprintf(errstr, sizeof(errstr), "a %s is an output, not an input event",
                     dlb_event_type_name(it->ev.type));
            to_dlq(c, it, "validate", DLB_ERR_INVALID, errstr);
            continue;
        }
        it->ok = 1;
    }
}

/* The job state a plan is computed from: Redis, or PostgreSQL when Redis
 * misses (then Redis is re-seeded) or is down. Samples newer than the request
 * are dropped so that a redo of the batch computes the same plan. */
static int load_job(ctx_t *c, const dlb_plan_request_t *req, dlb_job_state_t *st, char *errstr,
                    size_t size)
{
    int found = 0, err;
    char sub[512];

    if (c->redis) {
        if ((err = dlb_redis_load_job(c->redis, req->job_uid, st, &found, sub, sizeof(sub)))) {
            redis_down(c, "loading job state", sub);
            found = 0;
        }
    }
    if (!found) {
        dlb_job_state_clear(st);
        if ((err = dlb_pg_load_job_state(c->pg, req->job_uid, c->conf->window_size, st, errstr,
                                         size)))
            return err;
        if (c->redis && dlb_redis_store_job(c->redis, st, sub, sizeof(sub)))
            redis_down(c, "seeding job state", sub);
    }
    while (st->window_cnt > 0 &&
           st->window[st->window_cnt - 1].event_time_ms > req->event_time_ms) {
        st->window_cnt--;
        free(st->window[st->window_cnt].pods);
        st->window[st->window_cnt].pods = NULL;
    }
    return 0;
}

static int wants_history(const dlb_plan_request_t *req, const dlb_job_state_t *st)
{
    if (!strcmp(req->stage, DLB_STAGE_CREATE) || req->has_oom_pod)
        return 1;
    for (size_t i = 0; i < st->pods_cnt; i++)
        if (st->pods[i].oom_count > 0)
            return 1;
    return 0;
}

static int add_out(ctx_t *c, const char *job_uid, void *buf, size_t len)
{
    if (c->out_cnt >= (size_t)c->conf->batch_size) {
        free(buf);
        return DLB_ERR_GENERIC; /* one plan per request, so never */
    }
    snprintf(c->out[c->out_cnt].job_uid, DLB_ID_MAX, "%s", job_uid);
    c->out[c->out_cnt].buf = buf;
    c->out[c->out_cnt].len = len;
    c->out_cnt++;
    return 0;
}

static int plan_request(ctx_t *c, item_t *it, char *errstr, size_t size)
{
    const dlb_plan_request_t *req = &it->ev.u.req;
    dlb_job_state_t st = {0};
    dlb_history_t hist = {0};
    dlb_event_t pe = {.type = DLB_EV_PLAN};
    dlb_opt_input_t in;
    void *buf = NULL;
    size_t len = 0;
    char sub[512];
    int err;

    if ((err = load_job(c, req, &st, errstr, size)))
        goto out;
    if (wants_history(req, &st) &&
        (err = dlb_pg_load_history(c->pg, st.job.meta.scenario, req->job_uid, req->event_time_ms,
                                   c->conf->history_hours, c->conf->history_max_jobs,
                                   4 * c->conf->window_size, &hist, errstr, size)))
        goto out;
    in.req = req;
    in.job = &st;
    in.history = &hist;
    in.limits = &c->conf->limits;
    in.optimizer_set = c->conf->optimizer_set;
    if ((err = dlb_router_plan(&in, &pe.u.plan, sub, sizeof(sub)))) {
        if (err != DLB_ERR_INVALID) {
            dlb_seterr(errstr, size, err, "planning %s: %s", req->event_id, sub);
            goto out;
        }
        /* A request the router cannot serve is bad input, not a failure. */
        to_dlq(c, it, "process", err, sub);
        err = 0;
        goto out;
    }
    if ((err = dlb_codec_encode(c->cat, &pe, &buf, &len, errstr, size)) ||
        (err = dlb_pg_put_plan(c->pg, &pe.u.plan, buf, len, errstr, size)))
        goto out;
    dlb_info("plan %s for job %s at %s by %s: %s", pe.u.plan.plan_id, req->job_uid, req->stage,
             pe.u.plan.optimizer, pe.u.plan.reason);
    err = add_out(c, req->job_uid, buf, len);
    buf = NULL;
out:
    free(buf);
    dlb_event_clear(&pe);
    dlb_history_clear(&hist);
    dlb_job_state_clear(&st);
    return err;
}

/* Persist, fold into state and answer requests, all inside one PostgreSQL
 * transaction, in message order (one job's events share a partition, so
 * their order is the job's order). */
static int batch_process(ctx_t *c, char *errstr, size_t size)
{
    char sub[512];
    int err;

    if ((err = dlb_pg_begin(c->pg, errstr, size)))
        return err;
    for (size_t i = 0; i < c->items_cnt && !*c->stop; i++) {
        item_t *it = &c->items[i];
        if (!it->ok)
            continue;
        if ((err = dlb_pg_put_event(c->pg, &it->ev, it->msg->payload, it->msg->len, errstr, size)))
            goto fail;
        if (c->redis && it->ev.type != DLB_EV_PLAN_REQUEST &&
            dlb_redis_apply_event(c->redis, &it->ev, sub, sizeof(sub)))
            redis_down(c, "applying an event", sub);
        if (it->ev.type == DLB_EV_PLAN_REQUEST && (err = plan_request(c, it, errstr, size)))
            goto fail;
    }
    if (*c->stop) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "stopping");
        goto fail;
    }
    if ((err = dlb_pg_commit(c->pg, errstr, size)))
        goto fail;
    for (size_t i = 0; i < c->items_cnt; i++)
        if (c->items[i].ok)
            c->st->accepted++;
    return 0;
fail:
    dlb_pg_rollback(c->pg);
    return err;
}

static int batch_publish(ctx_t *c, char *errstr, size_t size)
{
    int err;

    for (size_t i = 0; i < c->out_cnt; i++)
        if ((err = dlb_kafka_produce(c->producer, c->plans_topic, c->out[i].job_uid, c->out[i].buf,
                                     c->out[i].len, errstr, size)))
            return err;
    if ((err = dlb_kafka_flush(c->producer, FLUSH_TIMEOUT_MS, errstr, size)))
        return err;
    c->st->plans += (int64_t)c->out_cnt;
    return 0;
}

/* Offsets to commit: per partition, the offset after the newest message. */
static rd_kafka_topic_partition_list_t *batch_offsets(const ctx_t *c, int rewind)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);

    for (size_t i = 0; i < c->items_cnt; i++) {
        const rd_kafka_message_t *m = c->items[i].msg;
        rd_kafka_topic_partition_t *p =
            rd_kafka_topic_partition_list_find(l, rd_kafka_topic_name(m->rkt), m->partition);
        if (!p) {
            p = rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(m->rkt), m->partition);
            p->offset = rewind ? m->offset : m->offset + 1;
        } else if (!rewind && m->offset + 1 > p->offset) {
            p->offset = m->offset + 1;
        } else if (rewind && m->offset < p->offset) {
            p->offset = m->offset;
        }
    }
    return l;
}

static int batch_commit(ctx_t *c, char *errstr, size_t size)
{
    rd_kafka_topic_partition_list_t *l = batch_offsets(c, 0);
    rd_kafka_resp_err_t err = rd_kafka_commit(c->consumer, l, 0 /* sync */);

    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        /* After a rebalance the new owner redoes these messages; the writes
         * are idempotent, so that is safe. */
        dlb_warn("kafka: offset commit failed: %s; the partition's next owner will redo the "
                 "batch",
                 rd_kafka_err2str(err));
        return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "offset commit: %s",
                          rd_kafka_err2str(err));
    }
    return 0;
}

/* Undo a failed batch: seek every partition back to its first message. */
static void batch_rewind(ctx_t *c)
{
    rd_kafka_topic_partition_list_t *l = batch_offsets(c, 1);
    rd_kafka_error_t *e = rd_kafka_seek_partitions(c->consumer, l, 10000);

    if (e) {
        dlb_err("kafka: rewinding the batch failed: %s; restarting from committed offsets",
                rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static int pg_connect_wait(ctx_t *c, char *errstr, size_t size)
{
    int err;

    while (!*c->stop) {
        if (!(err = dlb_pg_connect(&c->pg, c->conf->pg_dsn, c->conf->pg_schema, errstr, size)))
            return dlb_pg_migrate(c->pg, errstr, size);
        if (err != DLB_ERR_TRANSIENT)
            return err;
        dlb_warn("postgresql: %s; retrying in %d ms", errstr, c->conf->retry_backoff_ms);
        sleep_ms(c, c->conf->retry_backoff_ms);
    }
    return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "stopped before PostgreSQL was reachable");
}

static int setup(ctx_t *c, char *errstr, size_t size)
{
    char topics[4][256];
    static const char *const names[] = {DLB_TOPIC_JOB_EVENTS, DLB_TOPIC_METRICS,
                                        DLB_TOPIC_K8S_EVENTS, DLB_TOPIC_PLAN_REQUESTS};
    rd_kafka_topic_partition_list_t *sub;
    rd_kafka_resp_err_t kerr;
    int err;

    if (!(c->items = calloc((size_t)c->conf->batch_size, sizeof(*c->items))) ||
        !(c->out = calloc((size_t)c->conf->batch_size, sizeof(*c->out))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if ((err = dlb_catalog_new(&c->cat, errstr, size)))
        return err;
    if ((err = pg_connect_wait(c, errstr, size)))
        return err;
    redis_maybe_connect(c);
    if ((err = dlb_kafka_producer_new(c->conf, NULL, &c->producer, errstr, size)) ||
        (err =
             dlb_kafka_consumer_new(c->conf, c->conf->group_id, NULL, &c->consumer, errstr, size)))
        return err;
    dlb_conf_topic(c->conf, DLB_TOPIC_PLANS, c->plans_topic, sizeof(c->plans_topic));
    sub = rd_kafka_topic_partition_list_new(4);
    for (int i = 0; i < 4; i++)
        rd_kafka_topic_partition_list_add(
            sub, dlb_conf_topic(c->conf, names[i], topics[i], sizeof(topics[i])),
            RD_KAFKA_PARTITION_UA);
    kerr = rd_kafka_subscribe(c->consumer, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (kerr)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "subscribe: %s", rd_kafka_err2str(kerr));
    dlb_info("optimizer: group %s consuming %s.{job-events,metrics,k8s-events,plan-requests} from "
             "%s, optimizer set %s",
             c->conf->group_id, c->conf->env, c->conf->brokers, c->conf->optimizer_set);
    return 0;
}

static void teardown(ctx_t *c)
{
    batch_clear(c);
    if (c->consumer) {
        rd_kafka_consumer_close(c->consumer);
        rd_kafka_destroy(c->consumer);
    }
    dlb_kafka_producer_destroy(c->producer);
    dlb_redis_destroy(c->redis);
    dlb_pg_destroy(c->pg);
    if (c->cat)
        dlb_catalog_destroy(c->cat);
    free(c->items);
    free(c->out);
}

int dlb_optimizer_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                      dlb_optimizer_stats_t *stats, char *errstr, size_t errstr_size)
{
    ctx_t c = {.conf = conf, .stop = stop, .st = stats};
    char err_buf[1024];
    int err;

    if ((err = setup(&c, errstr, errstr_size)))
        goto out;
    while (!*stop) {
        batch_poll(&c);
        if (!c.items_cnt)
            continue;
        redis_maybe_connect(&c);
        batch_decode(&c);
        if ((err = batch_process(&c, err_buf, sizeof(err_buf))) ||
            (err = batch_publish(&c, err_buf, sizeof(err_buf)))) {
            if (*stop)
                break;
            stats->retries++;
            dlb_err("batch of %zu message(s) failed: %s (%s); rewinding and retrying in %d ms",
                    c.items_cnt, err_buf, dlb_err_name(err), conf->retry_backoff_ms);
            batch_rewind(&c);
            batch_clear(&c);
            sleep_ms(&c, conf->retry_backoff_ms);
            if (dlb_pg_reconnect(c.pg, err_buf, sizeof(err_buf)))
                dlb_warn("postgresql: still unavailable: %s", err_buf);
            continue;
        }
        if (!batch_commit(&c, err_buf, sizeof(err_buf)))
            stats->batches++;
        batch_clear(&c);
    }
    err = 0;
out:
    teardown(&c);
    return err;
}
