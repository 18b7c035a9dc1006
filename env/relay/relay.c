/* The relay (relay.h): front <-> environments, one Kafka transaction per
 * batch, routing re-read from the registry every relay.refresh.ms. */
#include "relay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "env_registry.h"
#include "after.h"
#include "err.h"
#include "failover.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"
#include "relay_route.h"
#include "switch_mark.h"
#include "txn.h"

#define META_TIMEOUT_MS 10000

/* The front's event topics, copied into every environment: the topics that
 * carry switch markers. */
static const char *const *const fan_out = dlb_switch_topics;
/* The environments' answers, forwarded from the real one. */
static const char *const *const fan_in = dlb_relay_answer_topics;
/* Short topic names of the records metric: fan_out's then fan_in's. */
#define RELAY_TOPICS 7

/* What happened to a record, the first index of relay_t.records. */
enum { ACT_COPIED, ACT_FORWARDED, ACT_DROPPED, ACT_DLQ, ACT_CNT };

typedef struct renv {
    char name[DLB_ENV_NAME_MAX + 1];
    int usable; /* its topics exist: relayed to and from */
    int warned; /* its missing topics were reported */
} renv_t;

/* A front partition's stamp: whom its records are for (switch_mark.h). cur
 * moves with the batch being relayed, saved is what the group committed
 * (in the offsets' metadata), so a batch that is redone starts over from it. */
typedef struct rpart {
    char topic[256];
    int32_t partition;
    dlb_switch_stamp_t cur, saved;
} rpart_t;

typedef struct relay {
    const dlb_conf_t *conf;
    volatile sig_atomic_t *stop;
    dlb_stream_stats_t *st;
    char group[256];
    PGconn *pg; /* the registry; NULL while unreachable */
    rd_kafka_t *consumer;
    rd_kafka_t *producer;
    renv_t envs[DLB_RELAY_MAX_ENVS];
    size_t envs_cnt;
    char real[DLB_ENV_NAME_MAX + 1]; /* "" when none is real */
    int64_t refresh_at;
    int subscribed; /* to anything */
    rd_kafka_message_t **batch;
    size_t batch_cnt, batch_cap;
    rpart_t *parts; /* the stamps of the front partitions met since assigned */
    size_t parts_cnt, parts_cap;
    int64_t dropped;    /* answers of virtual environments */
    int64_t marks_read; /* switch markers that moved a partition's stamp */
    int front_dlq;      /* <front>.dlq exists: 1, missing: -1, not looked up: 0 */
    /* dlbrain_relay_records_total per [action][short topic]; the batch's
     * counts are added once its transaction committed. */
    dlb_series_t *records[ACT_CNT][RELAY_TOPICS];
    int64_t pending[ACT_CNT][RELAY_TOPICS];
    dlb_series_t *real_env;   /* dlbrain_relay_real_environment of r->real */
    dlb_series_t *switches;   /* dlbrain_relay_switches_total: changes of r->real seen */
    dlb_failover_t *failover; /* the automatic failover decider (failover.h) */
    int64_t failover_at;
    /* Health (relay_health): whether the front's topics exist (1), are
     * missing (0, front_missing names them) or were not looked at yet (-1);
     * a batch failure has them looked at again; the clients' fatal errors. */
    int front_ok, front_recheck;
    char front_missing[512];
    int consumer_fatal;
    dlb_kafka_fence_t producer_fenced, consumer_fenced;
    int64_t txn_began;      /* monotonic ms: the last transaction began */
    int64_t failing_since;  /* monotonic ms: the first of the batch failures since a commit */
    char last_failure[512]; /* "" since the last commit */
    dlb_series_t *usable, *assigns, *revokes, *txn_ok, *txn_aborted, *err_kafka;
} relay_t;

/* The metrics index of a short topic name (RELAY_TOPICS - 1 if unknown). */
static int topic_index(const char *shortname)
{
    int i = 0;

    for (const char *const *t = fan_out; *t; t++, i++)
        if (!strcmp(*t, shortname))
            return i;
    for (const char *const *t = fan_in; *t; t++, i++)
        if (!strcmp(*t, shortname))
            return i;
    return RELAY_TOPICS - 1;
}

static dlb_series_t *records_series(const char *topic, const char *action)
{
    return dlb_metric_counter("dlbrain_relay_records_total",
                              "Records the relay committed, by short topic name and action: "
                              "copied (a front event into each environment), forwarded (the real "
                              "environment's answer to the front), dropped (a virtual "
                              "environment's answer), dlq (a malformed switch marker of the "
                              "front, to <front>.dlq)",
                              "topic,action", DLB_LV(topic, action));
}

static void metrics_setup(relay_t *r)
{
    static const char *const acts[ACT_CNT] = {"copied", "forwarded", "dropped", "dlq"};
    int i = 0;

    /* fan_out's topics are copied (their malformed markers dead-lettered);
     * fan_in's forwarded or dropped */
    for (const char *const *t = fan_out; *t; t++, i++) {
        r->records[ACT_COPIED][i] = records_series(*t, acts[ACT_COPIED]);
        r->records[ACT_DLQ][i] = records_series(*t, acts[ACT_DLQ]);
    }
    for (const char *const *t = fan_in; *t; t++, i++)
        for (int a = ACT_FORWARDED; a <= ACT_DROPPED; a++)
            r->records[a][i] = records_series(*t, acts[a]);
    r->usable = dlb_metric_gauge("dlbrain_relay_environments",
                                 "Live environments the relay copies front events into", "", NULL);
    r->assigns = dlb_metric_rebalances("assign");
    r->revokes = dlb_metric_rebalances("revoke");
    r->txn_ok = dlb_metric_transactions("committed");
    r->txn_aborted = dlb_metric_transactions("aborted");
    r->err_kafka = dlb_metric_errors("kafka");
    r->switches = dlb_metric_counter("dlbrain_relay_switches_total",
                                     "Changes of the real environment this relay saw in the "
                                     "registry (manual promotions and automatic failovers)",
                                     "", NULL);
}

/* dlbrain_relay_real_environment{env} is 1 for the environment whose answers
 * reach the front; a former one's series is hidden. */
static void metrics_real(relay_t *r)
{
    dlb_metric_hide(r->real_env);
    r->real_env = r->real[0] ? dlb_metric_gauge("dlbrain_relay_real_environment",
                                                "1 for the environment whose plans and configs "
                                                "the relay forwards to the front",
                                                "env", DLB_LV(r->real))
                             : NULL;
    dlb_metric_set(r->real_env, 1);
}

static void batch_clear(relay_t *r)
{
    for (size_t i = 0; i < r->batch_cnt; i++)
        rd_kafka_message_destroy(r->batch[i]);
    r->batch_cnt = 0;
}

/* Eager rebalancing: what we hold of revoked partitions is dropped uncommitted
 * (their next owner starts from the committed offsets). */
static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    relay_t *r = opaque;
    size_t n = 0;

    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        dlb_info("kafka: assigned %d partition(s)", parts->cnt);
        dlb_metric_add(r->assigns, 1);
        dlb_metrics_dep(DLB_DEP_KAFKA, 1);
        rd_kafka_assign(rk, parts);
        return;
    }
    dlb_metric_add(r->revokes, 1);
    for (size_t i = 0; i < r->batch_cnt; i++) {
        rd_kafka_message_t *m = r->batch[i];
        if (rd_kafka_topic_partition_list_find(parts, rd_kafka_topic_name(m->rkt), m->partition))
            rd_kafka_message_destroy(m);
        else
            r->batch[n++] = m;
    }
    r->batch_cnt = n;
    /* Their stamps too: the next owner reads them from the committed offsets. */
    n = 0;
    for (size_t i = 0; i < r->parts_cnt; i++)
        if (!rd_kafka_topic_partition_list_find(parts, r->parts[i].topic, r->parts[i].partition))
            r->parts[n++] = r->parts[i];
    r->parts_cnt = n;
    dlb_info("kafka: %d partition(s) revoked", parts->cnt);
    rd_kafka_assign(rk, NULL);
}

/* ---- the registry ------------------------------------------------------------ */

/* A server that is down is waited out at start and tolerated later (the
 * last routing stays in force). */
static int registry_open(relay_t *r, char *errstr, size_t size)
{
    return dlb_env_registry_open(r->conf->pg_dsn, &r->pg, errstr, size);
}

/* Relaying the front to itself would copy every record back in, forever. */
static int front_refused(const relay_t *r, char *errstr, size_t size)
{
    return dlb_seterr(errstr, size, DLB_ERR_CONF,
                      "the front prefix %s is a registered environment: the relay would feed its "
                      "own output back; run it with another env setting",
                      r->conf->env);
}

static renv_t *env_find(relay_t *r, const char *name, size_t len)
{
    for (size_t i = 0; i < r->envs_cnt; i++)
        if (strlen(r->envs[i].name) == len && !strncmp(r->envs[i].name, name, len))
            return &r->envs[i];
    return NULL;
}

/* Whether every topic the relay uses of environment name exists in md. */
static int env_topics_exist(const relay_t *r, const struct rd_kafka_metadata *md, const char *name)
{
    const char *const *lists[2] = {fan_out, fan_in};
    char topic[256];

    (void)r;
    for (int l = 0; l < 2; l++) {
        for (const char *const *t = lists[l]; *t; t++) {
            int found = 0;
            snprintf(topic, sizeof(topic), "%.100s.%s", name, *t);
            for (int i = 0; i < md->topic_cnt && !found; i++)
                found = !md->topics[i].err && !strcmp(md->topics[i].topic, topic);
            if (!found)
                return 0;
        }
    }
    return 1;
}

/* The front's topics missing from md into r->front_missing ("a, b").
 * Without them nothing can be relayed: an answer forwarded to a missing
 * topic times out in the producer and fails its transaction for ever. */
static int front_topics_missing(relay_t *r, const struct rd_kafka_metadata *md)
{
    const char *const *lists[2] = {fan_out, fan_in};
    size_t len = 0;
    int missing = 0;

    r->front_missing[0] = '\0';
    for (int l = 0; l < 2; l++) {
        for (const char *const *t = lists[l]; *t; t++) {
            char topic[256];
            int found = 0;
            snprintf(topic, sizeof(topic), "%.100s.%s", r->conf->env, *t);
            for (int i = 0; i < md->topic_cnt && !found; i++)
                found = !md->topics[i].err && !strcmp(md->topics[i].topic, topic);
            if (found)
                continue;
            if (len < sizeof(r->front_missing))
                len += (size_t)snprintf(r->front_missing + len, sizeof(r->front_missing) - len,
                                        "%s%s", missing ? ", " : "", topic);
            missing++;
        }
    }
    return missing;
}

static void topic_list_add(rd_kafka_topic_partition_list_t *l, const char *env,
                           const char *const *names)
{
    char topic[256];

    for (const char *const *t = names; *t; t++) {
        snprintf(topic, sizeof(topic), "%.100s.%s", env, *t);
        rd_kafka_topic_partition_list_add(l, topic, RD_KAFKA_PARTITION_UA);
    }
}

/* Subscribe to the front's event topics and the answers of every usable
 * environment; to nothing while there is none (front events would have no
 * one to go to: they wait in the front's topics instead). */
static int resubscribe(relay_t *r, char *errstr, size_t size)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(32);
    rd_kafka_resp_err_t kerr = RD_KAFKA_RESP_ERR_NO_ERROR;
    char names[1024] = "";
    size_t len = 0, usable = 0;

    for (size_t i = 0; i < r->envs_cnt; i++) {
        if (!r->envs[i].usable)
            continue;
        usable++;
        topic_list_add(l, r->envs[i].name, fan_in);
        len += (size_t)snprintf(names + len, len < sizeof(names) ? sizeof(names) - len : 0, "%s%s",
                                usable > 1 ? ", " : "", r->envs[i].name);
    }
    if (usable && r->front_ok > 0) {
        topic_list_add(l, r->conf->env, fan_out);
        kerr = rd_kafka_subscribe(r->consumer, l);
        r->subscribed = 1;
        dlb_info("relay: %s.* -> %zu environment(s): %s", r->conf->env, usable, names);
    } else if (r->subscribed) {
        kerr = rd_kafka_unsubscribe(r->consumer);
        r->subscribed = 0;
        if (usable)
            dlb_warn("relay: the front's topics are missing: relaying nothing");
        else
            dlb_warn("relay: no live environment with its topics: relaying nothing");
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (kerr)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "subscribe: %s", rd_kafka_err2str(kerr));
    return 0;
}

/* Re-read the registry: the live environments, which is real, which have
 * their topics. @returns 0 (also when the registry is unreachable: the last
 * routing stays), DLB_ERR_CONF (the front is an environment), or an error. */
static int refresh(relay_t *r, int first, char *errstr, size_t size)
{
    const struct rd_kafka_metadata *md = NULL;
    renv_t next[DLB_RELAY_MAX_ENVS];
    dlb_env_t *envs = NULL;
    size_t cnt = 0, n = 0;
    char real[DLB_ENV_NAME_MAX + 1] = "", sub[1024];
    int err, changed, need_md = r->front_ok <= 0 || r->front_recheck, front_was = r->front_ok;

    if ((err = registry_open(r, sub, sizeof(sub))) ||
        (err = dlb_env_list(r->pg, &envs, &cnt, sub, sizeof(sub)))) {
        if (err != DLB_ERR_TRANSIENT || first)
            return dlb_seterr(errstr, size, err, "environment registry: %s", sub);
        dlb_warn("environment registry: %s; keeping the last routing", sub);
        return 0;
    }
    for (size_t i = 0; i < cnt; i++) {
        const renv_t *old;
        if (!strcmp(envs[i].name, r->conf->env)) {
            err = front_refused(r, errstr, size);
            goto out;
        }
        if (n == DLB_RELAY_MAX_ENVS) {
            dlb_warn("relay: more than %d live environments; relaying to the first %d by name",
                     DLB_RELAY_MAX_ENVS, DLB_RELAY_MAX_ENVS);
            break;
        }
        snprintf(next[n].name, sizeof(next[n].name), "%s", envs[i].name);
        old = env_find(r, envs[i].name, strlen(envs[i].name));
        next[n].usable = old ? old->usable : 0;
        next[n].warned = old ? old->warned : 0;
        need_md |= !next[n].usable;
        if (envs[i].kind == DLB_ENV_REAL)
            snprintf(real, sizeof(real), "%s", envs[i].name);
        n++;
    }
    /* Metadata only while some environment lacks topics (just created, or
     * not created at all): a full topic list every refresh would be costly. */
    if (need_md) {
        rd_kafka_resp_err_t kerr = rd_kafka_metadata(r->producer, 1, NULL, &md, META_TIMEOUT_MS);
        if (kerr) {
            dlb_warn("kafka metadata: %s; environments without topics wait",
                     rd_kafka_err2str(kerr));
            md = NULL;
        }
        if (md) {
            int missing = front_topics_missing(r, md);
            r->front_ok = !missing;
            r->front_recheck = 0;
            if (missing && front_was != 0)
                dlb_err("relay: the front's topics %s do not exist: relaying nothing until "
                        "they do (deploy/k8s's topics Job or any Kafka admin tool creates them)",
                        r->front_missing);
            else if (!missing && front_was == 0)
                dlb_info("relay: the front's topics exist now");
        }
        for (size_t i = 0; md && i < n; i++) {
            if (next[i].usable)
                continue;
            next[i].usable = env_topics_exist(r, md, next[i].name);
            if (!next[i].usable && !next[i].warned) {
                dlb_warn("relay: environment %s lacks some of its topics (dlbrain env create "
                         "%s creates them); not relaying to it until they exist",
                         next[i].name, next[i].name);
                next[i].warned = 1;
            }
        }
    }
    changed = n != r->envs_cnt;
    for (size_t i = 0; !changed && i < n; i++)
        changed = strcmp(next[i].name, r->envs[i].name) || next[i].usable != r->envs[i].usable;
    if (strcmp(real, r->real) || first) {
        if (!first)
            dlb_metric_add(r->switches, 1);
        if (real[0])
            dlb_info("relay: now forwarding plans and configs of %s (was %s)", real,
                     r->real[0] ? r->real : "none");
        else
            dlb_warn("relay: no environment is real: forwarding no plans (was %s)",
                     r->real[0] ? r->real : "none");
        snprintf(r->real, sizeof(r->real), "%s", real);
        metrics_real(r);
    }
    memcpy(r->envs, next, n * sizeof(next[0]));
    r->envs_cnt = n;
    {
        size_t usable = 0;
        for (size_t i = 0; i < n; i++)
            usable += (size_t)next[i].usable;
        dlb_metric_set(r->usable, (double)usable);
    }
    if (changed || first || r->front_ok != front_was)
        err = resubscribe(r, errstr, size);
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    dlb_env_list_free(envs, cnt);
    return err;
}

/* ---- one batch, one transaction ------------------------------------------------ */

/* Copy m to topic: key, value, headers, timestamp, plus header dlb.env = env
 * when env is given, and the stamp header = stamp when stamp is given (a
 * front record's copy: whom it is for). A plan request's dlb.after names
 * offsets of the source log, not of the copy's: it is dropped, and the copy
 * is held as a request without it (the optimizer's grace). */
static int produce_copy(relay_t *r, const char *topic, const rd_kafka_message_t *m, const char *env,
                        const char *stamp, char *errstr, size_t size)
{
    rd_kafka_headers_t *src = NULL, *hdrs = NULL;
    rd_kafka_timestamp_type_t tstype;
    int64_t ts = rd_kafka_message_timestamp(m, &tstype);
    rd_kafka_vu_t vu[6];
    rd_kafka_error_t *e = NULL;
    size_t n = 0;

    if (rd_kafka_message_headers(m, &src) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (!(hdrs = rd_kafka_headers_copy(src)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        rd_kafka_header_remove(hdrs, DLB_AFTER_HEADER);
        if (stamp) /* only the relay stamps a front record */
            rd_kafka_header_remove(hdrs, DLB_KAFKA_STAMP_HEADER);
    }
    if ((env || (stamp && *stamp)) && !hdrs && !(hdrs = rd_kafka_headers_new(2)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if (env)
        rd_kafka_header_add(hdrs, "dlb.env", -1, env, -1);
    if (stamp && *stamp)
        rd_kafka_header_add(hdrs, DLB_KAFKA_STAMP_HEADER, -1, stamp, -1);
    vu[n].vtype = RD_KAFKA_VTYPE_TOPIC;
    vu[n++].u.cstr = topic;
    vu[n].vtype = RD_KAFKA_VTYPE_KEY;
    vu[n].u.mem.ptr = m->key;
    vu[n++].u.mem.size = m->key_len;
    vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
    vu[n].u.mem.ptr = m->payload;
    vu[n++].u.mem.size = m->len;
    vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[n++].u.i = RD_KAFKA_MSG_F_COPY;
    vu[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP; /* 0: now, when the source had none */
    vu[n++].u.i64 = tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ts < 0 ? 0 : ts;
    if (hdrs) {
        vu[n].vtype = RD_KAFKA_VTYPE_HEADERS;
        vu[n++].u.headers = hdrs;
    }
    for (int tries = 0; tries < 100; tries++) {
        e = rd_kafka_produceva(r->producer, vu, n);
        if (!e || rd_kafka_error_code(e) != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            break;
        rd_kafka_error_destroy(e);
        e = NULL;
        rd_kafka_poll(r->producer, 100); /* serve delivery reports to make room */
    }
    if (!e)
        return 0;
    /* The headers belong to librdkafka only once a produce succeeded. */
    if (hdrs)
        rd_kafka_headers_destroy(hdrs);
    dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "produce to %s: %s", topic,
               e ? rd_kafka_error_string(e) : "queue full");
    rd_kafka_error_destroy(e);
    return DLB_ERR_TRANSIENT;
}

static rpart_t *part_find(relay_t *r, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < r->parts_cnt; i++)
        if (r->parts[i].partition == partition && !strcmp(r->parts[i].topic, topic))
            return &r->parts[i];
    return NULL;
}

/* The stamps of the batch's front partitions the relay has not met since
 * they were assigned: from the metadata the group committed with their
 * offsets (the stamp as of the committed position), else (never committed
 * by a stamping relay) the environment real now, as switch 0, which any
 * marker overrides. */
static int parts_load(relay_t *r, char *errstr, size_t size)
{
    size_t front_len = strlen(r->conf->env);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    rd_kafka_resp_err_t kerr;
    int err = 0;

    if (!l)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < r->batch_cnt; i++) {
        const rd_kafka_message_t *m = r->batch[i];
        const char *name = rd_kafka_topic_name(m->rkt);

        if (dlb_relay_topic_is(name, r->conf->env, front_len, fan_out) &&
            !part_find(r, name, m->partition) &&
            !rd_kafka_topic_partition_list_find(l, name, m->partition))
            rd_kafka_topic_partition_list_add(l, name, m->partition);
    }
    if (!l->cnt)
        goto out;
    if ((kerr = rd_kafka_committed(r->consumer, l, META_TIMEOUT_MS))) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "committed offsets: %s",
                         rd_kafka_err2str(kerr));
        goto out;
    }
    if (r->parts_cnt + (size_t)l->cnt > r->parts_cap) {
        size_t cap = r->parts_cnt + (size_t)l->cnt + 16;
        rpart_t *p = realloc(r->parts, cap * sizeof(*p));
        if (!p) {
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        r->parts = p;
        r->parts_cap = cap;
    }
    for (int i = 0; i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &l->elems[i];
        rpart_t *p = &r->parts[r->parts_cnt++];
        int from_commit;

        memset(p, 0, sizeof(*p));
        snprintf(p->topic, sizeof(p->topic), "%s", tp->topic);
        p->partition = tp->partition;
        from_commit = tp->metadata && tp->metadata_size &&
                      !dlb_switch_stamp_parse(tp->metadata, tp->metadata_size, &p->cur);
        if (!from_commit) {
            p->cur.id = 0;
            snprintf(p->cur.env, sizeof(p->cur.env), "%s", r->real);
        }
        p->saved = p->cur;
        dlb_dbg("relay: %s [%" PRId32 "]: records for %s (switch %" PRId64 ", %s)", p->topic,
                p->partition, p->cur.env[0] ? p->cur.env : "none", p->cur.id,
                from_commit ? "as committed" : "no stamp committed: the real environment now");
    }
out:
    rd_kafka_topic_partition_list_destroy(l);
    return err;
}

/* A marker read: the partition's records from here on are for its
 * environment, unless a newer switch was read already. */
static void part_mark(relay_t *r, rpart_t *p, const rd_kafka_message_t *m,
                      const dlb_switch_stamp_t *s)
{
    if (s->id <= p->cur.id) {
        dlb_dbg("relay: %s [%" PRId32 "] offset %" PRId64 ": marker of switch %" PRId64
                " ignored (switch %" PRId64 " read already)",
                p->topic, p->partition, m->offset, s->id, p->cur.id);
        return;
    }
    dlb_dbg("relay: %s [%" PRId32 "] offset %" PRId64 ": switch %" PRId64
            ": records from here on are for %s (were for %s)",
            p->topic, p->partition, m->offset, s->id, s->env, p->cur.env[0] ? p->cur.env : "none");
    p->cur = *s;
    r->marks_read++;
}

/* Whether the front has its dead-letter topic, looked up once it is needed
 * (a topic asked for by name could be created by the broker). */
static int front_dlq_exists(relay_t *r)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t kerr;
    char topic[256];

    if (r->front_dlq > 0)
        return 1;
    dlb_conf_topic(r->conf, DLB_TOPIC_DLQ, topic, sizeof(topic));
    if ((kerr = rd_kafka_metadata(r->producer, 1, NULL, &md, META_TIMEOUT_MS))) {
        dlb_warn("kafka metadata: %s; taking %s to exist", rd_kafka_err2str(kerr), topic);
        return 1; /* a missing one fails the batch, which is retried */
    }
    r->front_dlq = -1;
    for (int i = 0; i < md->topic_cnt && r->front_dlq < 0; i++)
        if (!md->topics[i].err && !strcmp(md->topics[i].topic, topic))
            r->front_dlq = 1;
    rd_kafka_metadata_destroy(md);
    return r->front_dlq > 0;
}

/* A record of a front topic with a dlb.switch header that is no stamp
 * (raw): nobody can tell whom the records after it are for, so the
 * partition's stamp stays; it is not copied into any environment (whose
 * consumers would dead-letter it as an event) but into the front's DLQ,
 * where it can be looked at, in the batch's transaction. *sent: 1 when it
 * went there. */
static int marker_refused(relay_t *r, const rd_kafka_message_t *m, const char *raw, int *sent,
                          char *errstr, size_t size)
{
    char msg[256];

    *sent = 0;
    snprintf(msg, sizeof(msg),
             "a switch marker whose %s header '%s' is not <switch number>:<environment>: not "
             "copied into the environments, no switch taken",
             DLB_SWITCH_HEADER, raw);
    if (!front_dlq_exists(r)) {
        dlb_err("relay: %s [%" PRId32 "] offset %" PRId64 ": %s; %s.%s does not exist: dropped",
                rd_kafka_topic_name(m->rkt), m->partition, m->offset, msg, r->conf->env,
                DLB_TOPIC_DLQ);
        return 0;
    }
    dlb_warn("relay: %s [%" PRId32 "] offset %" PRId64 ": %s; to %s.%s",
             rd_kafka_topic_name(m->rkt), m->partition, m->offset, msg, r->conf->env,
             DLB_TOPIC_DLQ);
    if (dlb_kafka_dlq_send(r->producer, r->conf, m, "relay", DLB_ERR_INVALID, msg, errstr, size))
        return DLB_ERR_TRANSIENT;
    *sent = 1;
    return 0;
}

/* Produce what the batch's records turn into (relay_route.h says whom each
 * is for). */
static int relay_records(relay_t *r, int64_t *outputs, char *errstr, size_t size)
{
    size_t front_len = strlen(r->conf->env);
    const char *names[DLB_RELAY_MAX_ENVS];
    char topic[256], stamp[DLB_KAFKA_STAMP_MAX];
    int err;

    for (size_t k = 0; k < r->envs_cnt; k++)
        names[k] = r->envs[k].name;
    *outputs = 0;
    for (size_t i = 0; i < r->batch_cnt; i++) {
        const rd_kafka_message_t *m = r->batch[i];
        const char *name = rd_kafka_topic_name(m->rkt), *short_name;
        dlb_switch_stamp_t mk;
        dlb_switch_kind_t kind;
        size_t k;

        switch (dlb_relay_topic_kind(name, r->conf->env, names, r->envs_cnt, &k, &short_name)) {
        case DLB_RELAY_FRONT: {
            rpart_t *p = part_find(r, name, m->partition); /* parts_load() met it */
            char raw[DLB_SWITCH_RAW_MAX];

            /* A marker is not an event: never copied, malformed or not. */
            if ((kind = dlb_switch_marker_get(m, &mk, raw, sizeof(raw))) == DLB_SWITCH_MARKER) {
                if (p)
                    part_mark(r, p, m, &mk);
                continue;
            }
            if (kind == DLB_SWITCH_MALFORMED) {
                int sent = 0;

                if ((err = marker_refused(r, m, raw, &sent, errstr, size)))
                    return err;
                *outputs += sent;
                r->pending[ACT_DLQ][topic_index(short_name)] += sent;
                continue;
            }
            for (size_t e = 0; e < r->envs_cnt; e++) {
                if (!r->envs[e].usable)
                    continue;
                snprintf(topic, sizeof(topic), "%s%s", r->envs[e].name, name + front_len);
                if ((err = produce_copy(r, topic, m, NULL, p ? p->cur.env : "", errstr, size)))
                    return err;
                (*outputs)++;
                r->pending[ACT_COPIED][topic_index(short_name)]++;
            }
            continue;
        }
        case DLB_RELAY_ANSWER:
            if (dlb_relay_answer_forwarded(
                    names[k], dlb_kafka_stamp_get(m, stamp, sizeof(stamp)) ? stamp : NULL,
                    r->real)) {
                snprintf(topic, sizeof(topic), "%s.%s", r->conf->env, short_name);
                if ((err = produce_copy(r, topic, m, names[k], NULL, errstr, size)))
                    return err;
                (*outputs)++;
                r->pending[ACT_FORWARDED][topic_index(short_name)]++;
                continue;
            }
            break;
        case DLB_RELAY_OTHER:
            break;
        }
        /* An answer for another environment, or a record of an environment
         * dropped since it was polled: consumed, not relayed. */
        r->dropped++;
        r->pending[ACT_DROPPED][topic_index(short_name)]++;
    }
    return 0;
}

/* Per partition: the offset after its last record (commit), or of its first
 * (rewind). Records are in offset order within a partition. A front
 * partition's commit carries its stamp as metadata, so a relay that takes it
 * over (a restart, a rebalance) goes on stamping from there. */
static rd_kafka_topic_partition_list_t *batch_offsets(relay_t *r, int rewind)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(32);
    char meta[64];

    for (size_t i = 0; i < r->batch_cnt; i++) {
        const rd_kafka_message_t *m = r->batch[i];
        rd_kafka_topic_partition_t *p =
            rd_kafka_topic_partition_list_find(l, rd_kafka_topic_name(m->rkt), m->partition);
        if (!p)
            rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(m->rkt), m->partition)
                ->offset = rewind ? m->offset : m->offset + 1;
        else if (!rewind)
            p->offset = m->offset + 1;
    }
    for (int i = 0; !rewind && i < l->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &l->elems[i];
        const rpart_t *p = part_find(r, tp->topic, tp->partition);
        int len;

        /* The list frees metadata with free(). */
        if (p && (len = dlb_switch_stamp_format(&p->cur, meta, sizeof(meta))) > 0 &&
            (tp->metadata = malloc((size_t)len))) {
            memcpy(tp->metadata, meta, (size_t)len);
            tp->metadata_size = (size_t)len;
        }
    }
    return l;
}

/* The batch's records in its transaction (relay_records), counted once it
 * is committed. */
typedef struct relay_txn {
    relay_t *r;
    int64_t outputs;
} relay_txn_t;

static int txn_produce(void *arg, rd_kafka_t *producer, char *errstr, size_t size)
{
    relay_txn_t *t = arg;

    (void)producer; /* t->r->producer */
    return relay_records(t->r, &t->outputs, errstr, size);
}

/* After relay_records: the stamps the batch's markers moved go with the
 * offsets. */
static rd_kafka_topic_partition_list_t *txn_offsets(void *arg)
{
    return batch_offsets(((relay_txn_t *)arg)->r, 0);
}

static int batch_publish(relay_t *r, int *fatal, char *errstr, size_t size)
{
    relay_txn_t t = {r, 0};
    dlb_txn_batch_t b = {r->producer, r->consumer, txn_produce, txn_offsets, &t};
    int64_t dropped = r->dropped;
    int err;

    *fatal = 0;
    r->txn_began = dlb_clock_mono_ms();
    if ((err = parts_load(r, errstr, size)))
        return err;
    memset(r->pending, 0, sizeof(r->pending));
    if (!dlb_txn_commit_batch(r->conf, r->stop, &b, fatal, errstr, size)) {
        r->st->outputs += t.outputs;
        r->st->accepted += (int64_t)r->batch_cnt;
        for (int a = 0; a < ACT_CNT; a++)
            for (int i = 0; i < RELAY_TOPICS; i++)
                dlb_metric_add(r->records[a][i], (uint64_t)r->pending[a][i]);
        dlb_metric_add(r->txn_ok, 1);
        dlb_metrics_dep(DLB_DEP_KAFKA, 1);
        for (size_t i = 0; i < r->parts_cnt; i++)
            r->parts[i].saved = r->parts[i].cur;
        dlb_dbg("relay: batch of %zu record(s): %lld produced, %lld not forwarded", r->batch_cnt,
                (long long)t.outputs, (long long)(r->dropped - dropped));
        return 0;
    }
    r->dropped = dropped; /* the batch is redone, from the committed stamps */
    for (size_t i = 0; i < r->parts_cnt; i++)
        r->parts[i].cur = r->parts[i].saved;
    dlb_metric_add(r->txn_aborted, 1);
    dlb_metric_add(r->err_kafka, 1);
    return DLB_ERR_TRANSIENT;
}

/* Undo a failed batch: seek each partition back to its first record.
 * @returns 0, or an error when stopped before the seek took. */
static int batch_rewind(relay_t *r, char *errstr, size_t size)
{
    rd_kafka_topic_partition_list_t *l = batch_offsets(r, 1);
    int err = dlb_kafka_seek_back(r->consumer, l, r->stop, r->conf->retry_backoff_ms, errstr, size);

    rd_kafka_topic_partition_list_destroy(l);
    batch_clear(r);
    return err;
}

static void batch_poll(relay_t *r)
{
    rd_kafka_message_t *m;

    while (r->batch_cnt < r->batch_cap &&
           (m = rd_kafka_consumer_poll(r->consumer, r->batch_cnt ? 0 : r->conf->poll_ms))) {
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
            /* Nothing more comes from this consumer: the loop replaces it. */
            r->consumer_fatal = 1;
            rd_kafka_message_destroy(m);
            return;
        }
        if (m->err) {
            /* An environment's topic deleted under us, a broker away: the
             * consumer recovers by itself. */
            dlb_dbg("kafka: consume: %s [%" PRId32 "]: %s; skipped, polling on",
                    m->rkt ? rd_kafka_topic_name(m->rkt) : "(no topic)", m->partition,
                    rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        r->batch[r->batch_cnt++] = m;
        r->st->consumed++;
    }
}

/* ---- health ---------------------------------------------------------------------- */

/* /readyz tells the truth: not ready while the front's topics are missing,
 * nor while batches have failed for consumer.stall.s without one committing
 * (a relay that forwards nothing is not serving, whatever Kafka answers). */
static void relay_health(relay_t *r)
{
    int64_t limit = (int64_t)r->conf->stall_s * 1000, now = dlb_clock_mono_ms();
    char why[768] = "";

    if (!r->front_ok)
        snprintf(why, sizeof(why), "the front's topics %s do not exist", r->front_missing);
    else if (limit > 0 && r->last_failure[0] && now - r->failing_since > limit)
        snprintf(why, sizeof(why), "every batch failed for %lld s: %s",
                 (long long)((now - r->failing_since) / 1000), r->last_failure);
    dlb_metrics_stalled(why);
}

/* The consumer failed for good (a static member fenced): a new one joins in
 * its place and takes its partitions from the committed offsets and stamps,
 * unless it was fenced too often (another live relay shares the
 * group.instance.id): then the relay stops. */
static int consumer_replace(relay_t *r, char *errstr, size_t size)
{
    char why[1024];
    int err;

    if ((err = dlb_kafka_fenced_too_often(&r->consumer_fenced, r->consumer, 0, errstr, size)))
        return err;
    dlb_kafka_fatal(r->consumer, why, sizeof(why));
    dlb_err("%s; replacing it", why);
    batch_clear(r);
    r->parts_cnt = 0;
    dlb_kafka_consumer_destroy(r->consumer);
    r->consumer = NULL;
    r->consumer_fatal = 0;
    r->subscribed = 0;
    if ((err = dlb_kafka_consumer_new_cb(r->conf, r->group, NULL, rebalance_cb, r, &r->consumer,
                                         errstr, size)))
        return err;
    return resubscribe(r, errstr, size);
}

/* ---- automatic failover ---------------------------------------------------------- */

/* The decider runs in the relay: wherever environments are in use a relay
 * runs, it holds the registry connection already and is what makes a switch
 * take effect; every relay competes for the lease, so one decides and
 * another takes over when its relay dies. A switch is routed at once, not
 * at the next refresh. Errors are logged: the relay goes on relaying. */
static void failover_tick(relay_t *r)
{
    dlb_failover_tick_t t;
    char errstr[1024];

    if (registry_open(r, errstr, sizeof(errstr)) ||
        dlb_failover_tick(r->failover, r->pg, &t, errstr, sizeof(errstr))) {
        dlb_warn("failover: %s; deciding again in %d ms", errstr, r->conf->failover.check_ms);
        return;
    }
    if (t.switched)
        r->refresh_at = 0;
}

/* ---- life cycle ------------------------------------------------------------------ */

/* Stopped while waiting for the broker: not an error, the loop ends. */
static int producer_start(relay_t *r, char *errstr, size_t size)
{
    int err = dlb_txn_producer_start(r->conf, r->group, r->stop, &r->producer, errstr, size);

    return err == DLB_ERR_TRANSIENT && *r->stop ? 0 : err;
}

static int setup(relay_t *r, char *errstr, size_t size)
{
    dlb_env_t env;
    int err;

    dlb_conf_group(r->conf, "relay", r->group, sizeof(r->group));
    /* Kafka readiness comes from assignments and commits; not required
     * before, as a relay with no environment subscribes to nothing. */
    metrics_setup(r);
    r->batch_cap = r->conf->batch_size > 0 ? (size_t)r->conf->batch_size : 500;
    if (!(r->batch = calloc(r->batch_cap, sizeof(*r->batch))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    /* The registry first: a misconfigured front is refused before anything. */
    while ((err = registry_open(r, errstr, size)) == DLB_ERR_TRANSIENT && !*r->stop) {
        dlb_warn("%s; retrying in %d ms", errstr, r->conf->retry_backoff_ms);
        dlb_metrics_nap_ms(r->stop, r->conf->retry_backoff_ms);
    }
    if (err)
        return err;
    /* The front's own check, before anything starts; refresh() repeats it. */
    if (!(err = dlb_env_get(r->pg, r->conf->env, &env, errstr, size))) {
        dlb_env_clear(&env);
        return front_refused(r, errstr, size);
    }
    if (err != DLB_ERR_NOTFOUND)
        return err;
    if ((err = producer_start(r, errstr, size)) ||
        (err = dlb_kafka_consumer_new_cb(r->conf, r->group, NULL, rebalance_cb, r, &r->consumer,
                                         errstr, size)))
        return err;
    if ((err = dlb_failover_new(r->conf, "relay", &r->failover, errstr, size)))
        return err;
    dlb_info("relay: group %s, front %s.* at %s, registry re-read every %d ms", r->group,
             r->conf->env, r->conf->brokers, r->conf->relay_refresh_ms);
    return refresh(r, 1, errstr, size);
}

static void teardown(relay_t *r)
{
    batch_clear(r);
    dlb_kafka_consumer_destroy(r->consumer);
    dlb_txn_producer_stop(&r->producer);
    dlb_failover_destroy(r->failover, r->pg);
    if (r->pg)
        PQfinish(r->pg);
    free(r->batch);
    free(r->parts);
}

int dlb_relay_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, dlb_stream_stats_t *stats,
                  char *errstr, size_t errstr_size)
{
    relay_t r = {.conf = conf, .stop = stop, .st = stats, .front_ok = -1};
    char sub[1024];
    int err, fatal;

    if ((err = setup(&r, errstr, errstr_size)))
        goto out;
    r.refresh_at = dlb_clock_mono_ms() + conf->relay_refresh_ms;
    r.failover_at = dlb_clock_mono_ms();
    while (!*stop) {
        dlb_metrics_beat();
        if (dlb_clock_mono_ms() >= r.failover_at) {
            failover_tick(&r);
            r.failover_at = dlb_clock_mono_ms() + conf->failover.check_ms;
        }
        if (dlb_clock_mono_ms() >= r.refresh_at) {
            if ((err = refresh(&r, 0, errstr, errstr_size)))
                goto out;
            r.refresh_at = dlb_clock_mono_ms() + conf->relay_refresh_ms;
        }
        relay_health(&r);
        if (!r.subscribed) {
            dlb_metrics_nap_ms(r.stop, conf->poll_ms);
            continue;
        }
        batch_poll(&r);
        if (r.consumer_fatal) {
            if ((err = consumer_replace(&r, errstr, errstr_size)))
                goto out;
            continue;
        }
        if (!r.batch_cnt)
            continue;
        if (!batch_publish(&r, &fatal, sub, sizeof(sub))) {
            stats->batches++;
            batch_clear(&r);
            r.last_failure[0] = '\0';
            continue;
        }
        if (*stop)
            break;
        stats->retries++;
        if (!r.last_failure[0])
            r.failing_since = dlb_clock_mono_ms();
        snprintf(r.last_failure, sizeof(r.last_failure), "%.500s", sub);
        r.front_recheck = 1; /* a front topic deleted? */
        dlb_err("batch of %zu record(s) failed: %s; rewinding and retrying in %d ms", r.batch_cnt,
                sub, conf->retry_backoff_ms);
        if ((err = batch_rewind(&r, sub, sizeof(sub)))) {
            /* Stopped: nothing of the batch was committed, so the next start
             * resumes from the committed offsets. */
            dlb_info("kafka: stopped before the failed batch was rewound (%s); the next start "
                     "resumes from the committed offsets",
                     sub);
            err = 0;
            goto out;
        }
        dlb_metrics_nap_ms(r.stop, conf->retry_backoff_ms);
        if (fatal) {
            if ((err = dlb_kafka_fenced_too_often(&r.producer_fenced, r.producer,
                                                  dlb_clock_mono_ms() - r.txn_began, errstr,
                                                  errstr_size)))
                goto out;
            dlb_warn("kafka: replacing the transactional producer");
            dlb_txn_producer_stop(&r.producer);
            if ((err = producer_start(&r, errstr, errstr_size)))
                goto out;
        }
    }
    err = 0;
out:
    dlb_info("relay: %lld answer(s) of virtual environments consumed and not forwarded",
             (long long)r.dropped);
    teardown(&r);
    return err;
}
