/* The stream processor's connections: PostgreSQL waited for at start,
 * Redis optional (the loop goes on without it and reconnects), and the
 * transactional producer and group consumer of Kafka. */
#include "stream_internal.h"

#include <stdio.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "kafka.h"
#include "log.h"
#include "txn.h"

/* Redis reconnects are tried at most this often while it is down, so an
 * outage costs one failed connect per interval instead of one per event. */
#define REDIS_RETRY_MS 5000

void stream_redis_down(ctx_t *c, const char *what, const char *errstr)
{
    dlb_metric_add(c->m.err_redis, 1);
    dlb_warn("redis: %s failed: %s; serving job state from PostgreSQL until Redis is back", what,
             errstr);
    dlb_redis_destroy(c->redis);
    c->redis = NULL;
    c->redis_retry_at = dlb_clock_mono_ms() + REDIS_RETRY_MS;
    c->redis_missed = 1;
}

void stream_redis_connect(ctx_t *c)
{
    char errstr[512];

    if (c->redis || dlb_clock_mono_ms() < c->redis_retry_at)
        return;
    if (dlb_redis_connect(&c->redis, c->conf, c->cat, errstr, sizeof(errstr))) {
        c->redis = NULL;
        c->redis_retry_at = dlb_clock_mono_ms() + REDIS_RETRY_MS;
        c->redis_missed = 1;
        dlb_dbg("redis: still unavailable: %s", errstr);
        return;
    }
    if (c->redis_missed) {
        /* A stale hit would give a wrong plan; a miss only costs a rebuild. */
        if (dlb_redis_invalidate_all(c->redis, errstr, sizeof(errstr))) {
            stream_redis_down(c, "invalidating the job states cached before the outage", errstr);
            return;
        }
        c->redis_missed = 0;
        dlb_info("redis: back at %s:%d; job states cached before the outage dropped, they are "
                 "rebuilt from PostgreSQL when next needed",
                 c->conf->redis_host, c->conf->redis_port);
        return;
    }
    dlb_info("redis: connected to %s:%d", c->conf->redis_host, c->conf->redis_port);
}

/* Connect and migrate, waiting out an unreachable or restarting server;
 * anything else (bad DSN, a failing migration) is returned. */
int stream_pg_connect(ctx_t *c, char *errstr, size_t size)
{
    int err;

    while (!*c->stop) {
        if (!c->pg) {
            err = dlb_pg_connect(&c->pg, c->conf->pg_dsn, c->conf->pg_schema, errstr, size);
            if (!err)
                dlb_pg_set_history_cache(c->pg, (size_t)c->conf->history_cache_bytes);
        } else
            err = dlb_pg_reconnect(c->pg, errstr, size);
        if (!err && !(err = dlb_pg_migrate(c->pg, errstr, size)))
            return 0;
        if (err != DLB_ERR_TRANSIENT)
            return err;
        dlb_warn("%s; retrying in %d ms", errstr, c->conf->retry_backoff_ms);
        dlb_metrics_nap_ms(c->stop, c->conf->retry_backoff_ms);
    }
    return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "stopped before PostgreSQL was reachable");
}

int stream_consumer_start(ctx_t *c,
                          void (*rebalance_cb)(rd_kafka_t *, rd_kafka_resp_err_t,
                                               rd_kafka_topic_partition_list_t *, void *),
                          char *errstr, size_t size)
{
    /* EOF events tell the ordering barrier a partition has nothing more. */
    static const char *const extra[] = {"enable.partition.eof", "true", NULL};
    rd_kafka_topic_partition_list_t *sub;
    rd_kafka_resp_err_t kerr;
    int err;

    if ((err = dlb_kafka_consumer_new_cb(c->conf, c->group, extra, rebalance_cb, c, &c->consumer,
                                         errstr, size)))
        return err;
    sub = rd_kafka_topic_partition_list_new(c->ninputs);
    for (int r = 0; r < c->ninputs; r++)
        rd_kafka_topic_partition_list_add(sub, c->topics[r], RD_KAFKA_PARTITION_UA);
    kerr = rd_kafka_subscribe(c->consumer, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (kerr)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "subscribe: %s", rd_kafka_err2str(kerr));
    return 0;
}

void stream_disconnect(ctx_t *c)
{
    dlb_kafka_consumer_destroy(c->consumer);
    c->consumer = NULL;
    dlb_txn_producer_stop(&c->producer);
    dlb_redis_destroy(c->redis);
    c->redis = NULL;
    dlb_pg_destroy(c->pg);
    c->pg = NULL;
}
