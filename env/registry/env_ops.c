/* An environment's topics, schema and keys (env_ops.h). */
#include "env_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_redis.h"
#include "clock.h"
#include "env_registry.h"
#include "err.h"
#include "kafka.h"
#include "log.h"
#include "store_pg.h"
#include "store_pg_conn.h"

void dlb_env_conf(const dlb_conf_t *base, const char *name, dlb_conf_t *out)
{
    *out = *base;
    snprintf(out->env, sizeof(out->env), "%s", name);
    /* Environment names are [a-z][a-z0-9_]*: the schema is the name as is. */
    snprintf(out->pg_schema, sizeof(out->pg_schema), "%s", name);
    out->group_id[0] = '\0';
}

int dlb_env_admin_new(const dlb_conf_t *conf, rd_kafka_t **out, char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *kc;
    char sub[512];

    if (!(kc = dlb_kafka_conf_new(conf, NULL, NULL, errstr, errstr_size)))
        return DLB_ERR_CONF;
    if (!(*out = rd_kafka_new(RD_KAFKA_PRODUCER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "kafka admin client: %s", sub);
    }
    return 0;
}

int dlb_env_topics_create(rd_kafka_t *admin, const dlb_conf_t *conf, const char *name,
                          int timeout_ms, char *errstr, size_t errstr_size)
{
    dlb_env_topic_t topics[DLB_ENV_TOPICS_MAX];
    dlb_conf_t ec;
    size_t cnt;
    int err, missing;

    dlb_env_conf(conf, name, &ec);
    if ((err = dlb_kafka_create_topics(admin, &ec, timeout_ms, errstr, errstr_size)))
        return err;
    /* CreateTopics answers once the controller has them; brokers' metadata
     * follows a moment later. Wait for it, so that whoever looks next (env
     * show, a relay) finds every topic. */
    for (int waited = 0;; waited += 100) {
        if ((err = dlb_env_topics_describe(admin, conf, name, topics, &cnt, &missing, timeout_ms,
                                           errstr, errstr_size)))
            return err;
        if (!missing)
            return 0;
        if (waited >= timeout_ms)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                              "%d topic(s) of %s created but not in the metadata after %d ms",
                              missing, name, timeout_ms);
        usleep(100 * 1000);
    }
}

int dlb_env_topics_describe(rd_kafka_t *admin, const dlb_conf_t *conf, const char *name,
                            dlb_env_topic_t *out, size_t *cnt, int *missing, int timeout_ms,
                            char *errstr, size_t errstr_size)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t kerr;
    dlb_conf_t ec;

    *cnt = 0;
    *missing = 0;
    /* All topics: asking for one by name could auto-create it. */
    if ((kerr = rd_kafka_metadata(admin, 1, NULL, &md, timeout_ms)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "kafka metadata from %s: %s",
                          conf->brokers, rd_kafka_err2str(kerr));
    dlb_env_conf(conf, name, &ec);
    for (const char *const *t = dlb_kafka_pipeline_topics; *t && *cnt < DLB_ENV_TOPICS_MAX; t++) {
        dlb_env_topic_t *et = &out[(*cnt)++];
        dlb_conf_topic(&ec, *t, et->name, sizeof(et->name));
        et->partitions = -1;
        for (int i = 0; i < md->topic_cnt; i++)
            if (!md->topics[i].err && !strcmp(md->topics[i].topic, et->name))
                et->partitions = md->topics[i].partition_cnt;
        if (et->partitions < 0)
            (*missing)++;
    }
    rd_kafka_metadata_destroy(md);
    return 0;
}

int dlb_env_topics_delete(rd_kafka_t *admin, const dlb_conf_t *conf, const char *name,
                          int timeout_ms, int *deleted, char *errstr, size_t errstr_size)
{
    dlb_conf_t ec;

    dlb_env_conf(conf, name, &ec);
    return dlb_kafka_delete_topics(admin, &ec, timeout_ms, deleted, errstr, errstr_size);
}

int dlb_env_schema_create(const dlb_conf_t *conf, const char *name, char *errstr,
                          size_t errstr_size)
{
    dlb_pg_t *pg = NULL;
    int err;

    if (!(err = dlb_pg_connect(&pg, conf->pg_dsn, name, errstr, errstr_size)))
        err = dlb_pg_migrate(pg, errstr, errstr_size);
    dlb_pg_destroy(pg);
    return err;
}

int dlb_env_schema_info(PGconn *pg, const char *name, int *exists, int *tables, char *errstr,
                        size_t errstr_size)
{
    const char *values[1] = {name};
    char what[128];
    PGresult *res;
    int err;

    snprintf(what, sizeof(what), "schema %s", name);
    if ((err = dlb_pg_conn_exec(
             pg,
             "SELECT (SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1), "
             "(SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = $1)",
             1, values, NULL, 0, &res, what, errstr, errstr_size)))
        return err;
    *exists = atoi(PQgetvalue(res, 0, 0)) > 0;
    *tables = atoi(PQgetvalue(res, 0, 1));
    PQclear(res);
    return 0;
}

int dlb_env_schema_drop(PGconn *pg, const char *name, char *errstr, size_t errstr_size)
{
    char *ident, sql[256], what[128];
    int err;

    /* The last guard before a CASCADE: never the registry, public or pg_*. */
    if ((err = dlb_env_name_check(name, errstr, errstr_size)) ||
        (err = dlb_pg_conn_ident(pg, name, &ident, errstr, errstr_size)))
        return err;
    /* An identifier cannot be a parameter; it is quoted above. */
    snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", ident);
    PQfreemem(ident);
    snprintf(what, sizeof(what), "dropping schema %s", name);
    return dlb_pg_conn_exec(pg, sql, 0, NULL, NULL, 0, NULL, what, errstr, errstr_size);
}

int dlb_env_group_lag(rd_kafka_t *rk, const dlb_conf_t *conf, const char *name,
                      const char *const *topics, int timeout_ms, int64_t *lag, char *errstr,
                      size_t errstr_size)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_resp_err_t kerr;
    dlb_conf_t ec;
    int err = 0;

    *lag = 0;
    if ((kerr = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "kafka metadata from %s: %s",
                          conf->brokers, rd_kafka_err2str(kerr));
    dlb_env_conf(conf, name, &ec);
    if (!(parts = rd_kafka_topic_partition_list_new(64))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (const char *const *t = topics; *t; t++) {
        char topic[256];
        int found = 0;

        dlb_conf_topic(&ec, *t, topic, sizeof(topic));
        for (int i = 0; i < md->topic_cnt; i++) {
            if (md->topics[i].err || strcmp(md->topics[i].topic, topic))
                continue;
            found = 1;
            for (int p = 0; p < md->topics[i].partition_cnt; p++)
                rd_kafka_topic_partition_list_add(parts, topic, md->topics[i].partitions[p].id);
        }
        if (!found) {
            err =
                dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "topic %s does not exist", topic);
            goto out;
        }
    }
    /* The group coordinator's committed offsets (OffsetFetch): asking does
     * not join the group, so the consumers' assignment is left alone. */
    if ((kerr = rd_kafka_committed(rk, parts, timeout_ms))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "committed offsets: %s",
                         rd_kafka_err2str(kerr));
        goto out;
    }
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        int64_t lo, hi;

        if ((kerr = rd_kafka_query_watermark_offsets(rk, tp->topic, tp->partition, &lo, &hi,
                                                     timeout_ms))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "end of %s [%d]: %s",
                             tp->topic, (int)tp->partition, rd_kafka_err2str(kerr));
            goto out;
        }
        *lag += hi - (tp->offset >= lo ? tp->offset : lo);
    }
out:
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_metadata_destroy(md);
    return err;
}

int dlb_env_events_stored(PGconn *pg, const char *name, int64_t *n, char *errstr,
                          size_t errstr_size)
{
    static const char *const tables[] = {"job_events", "runtime_samples", "node_events",
                                         "plan_requests"};
    char *ident, sql[1024], what[128];
    PGresult *res;
    size_t len = 0;
    int err;

    if ((err = dlb_pg_conn_ident(pg, name, &ident, errstr, errstr_size)))
        return err;
    /* An identifier cannot be a parameter; it is quoted above. */
    len = (size_t)snprintf(sql, sizeof(sql), "SELECT 0");
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]) && len < sizeof(sql); i++)
        len += (size_t)snprintf(sql + len, sizeof(sql) - len, " + (SELECT count(*) FROM %s.%s)",
                                ident, tables[i]);
    PQfreemem(ident);
    snprintf(what, sizeof(what), "counting the events of %s", name);
    if ((err = dlb_pg_conn_exec(pg, sql, 0, NULL, NULL, 0, &res, what, errstr, errstr_size)))
        return err;
    *n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

int dlb_env_redis_purge(const dlb_conf_t *conf, const char *name, int64_t *deleted, char *errstr,
                        size_t errstr_size)
{
    dlb_redis_t *r = NULL;
    dlb_conf_t ec;
    int err;

    *deleted = 0;
    dlb_env_conf(conf, name, &ec);
    if ((err = dlb_redis_connect(&r, &ec, NULL, errstr, errstr_size)))
        return err;
    err = dlb_redis_unlink_matching(r, "*", deleted, errstr, errstr_size);
    dlb_redis_destroy(r);
    return err;
}

int dlb_env_settle(const dlb_conf_t *conf, const char *name, const char *const *topics,
                   int64_t expect, int64_t timeout_ms, int admin_timeout_ms,
                   volatile sig_atomic_t *stop, dlb_env_settled_t *out, char *errstr,
                   size_t errstr_size)
{
    dlb_conf_t ec;
    PGconn *pg = NULL;
    rd_kafka_t *rk = NULL;
    int64_t t0 = dlb_clock_mono_ms();
    int err, exists = 0, tables = 0;

    memset(out, 0, sizeof(*out));
    out->lag = out->stored = -1;
    /* Not the registry: an environment made with -X env=NAME alone counts. */
    if ((err = dlb_env_registry_connect(conf->pg_dsn, &pg, errstr, errstr_size)) ||
        (err = dlb_env_schema_info(pg, name, &exists, &tables, errstr, errstr_size)))
        goto out;
    if (!exists || !tables) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                         "%s: no PostgreSQL schema with the pipeline's tables", name);
        goto out;
    }
    dlb_env_conf(conf, name, &ec);
    dlb_conf_group(&ec, "optimizer", out->group, sizeof(out->group));
    if ((err = dlb_kafka_consumer_new(conf, out->group, NULL, &rk, errstr, errstr_size)))
        goto out;
    for (;;) {
        /* Lag first: once it is 0, everything read has been stored (a batch
         * is written to PostgreSQL before its offsets are committed). */
        err = dlb_env_group_lag(rk, conf, name, topics, admin_timeout_ms, &out->lag, errstr,
                                errstr_size);
        if (!err)
            err = dlb_env_events_stored(pg, name, &out->stored, errstr, errstr_size);
        out->waited_ms = dlb_clock_mono_ms() - t0;
        if (err && err != DLB_ERR_TRANSIENT)
            goto out;
        if (!err && expect >= 0 && out->stored > expect) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "%s: %lld events stored in PostgreSQL, more than the %lld expected: "
                             "not a fresh environment?",
                             name, (long long)out->stored, (long long)expect);
            goto out;
        }
        if (!err && out->lag == 0 && (expect < 0 || out->stored == expect))
            goto out;
        if (*stop || out->waited_ms >= timeout_ms) {
            double s = (double)out->waited_ms / 1000.0;

            if (err) {
                char why[512];

                snprintf(why, sizeof(why), "%s", errstr);
                dlb_seterr(errstr, errstr_size, err, "%s: not settled after %.0f s: %s", name, s,
                           why);
            } else if (expect >= 0)
                dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                           "%s: not settled after %.0f s: %lld of %lld events stored in "
                           "PostgreSQL (%lld missing), consumer group %s %lld behind on its "
                           "inputs",
                           name, s, (long long)out->stored, (long long)expect,
                           (long long)(expect - out->stored), out->group, (long long)out->lag);
            else
                dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                           "%s: not settled after %.0f s: consumer group %s %lld behind on its "
                           "inputs (%lld events stored)",
                           name, s, out->group, (long long)out->lag, (long long)out->stored);
            err = DLB_ERR_TRANSIENT;
            goto out;
        }
        dlb_dbg("env settle: %s: lag %lld, %lld stored", name, (long long)out->lag,
                (long long)out->stored);
        usleep(200 * 1000);
    }
out:
    if (rk)
        rd_kafka_destroy(rk);
    if (pg)
        PQfinish(pg);
    return err;
}

int dlb_env_purge(const dlb_conf_t *conf, PGconn *pg, const char *name, int admin_timeout_ms,
                  dlb_env_purged_t *out)
{
    rd_kafka_t *admin = NULL;

    memset(out, 0, sizeof(*out));
    usleep((useconds_t)conf->relay_refresh_ms * 2000);
    if (dlb_env_admin_new(conf, &admin, out->topics_err, sizeof(out->topics_err)) ||
        dlb_env_topics_delete(admin, conf, name, admin_timeout_ms, &out->topics, out->topics_err,
                              sizeof(out->topics_err)))
        out->topics = 0;
    else
        out->topics_err[0] = '\0';
    if (admin)
        rd_kafka_destroy(admin);
    if (!dlb_env_schema_drop(pg, name, out->schema_err, sizeof(out->schema_err)))
        out->schema_err[0] = '\0';
    if (dlb_env_redis_purge(conf, name, &out->keys, out->redis_err, sizeof(out->redis_err)))
        out->keys = 0;
    else
        out->redis_err[0] = '\0';
    return out->topics_err[0] || out->schema_err[0] || out->redis_err[0] ? DLB_ERR_GENERIC : 0;
}
