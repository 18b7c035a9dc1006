/* The resources of an environment beside its registry row: its Kafka topics
 * (<name>.job-events ... <name>.dlq), its PostgreSQL schema (<name>) and its
 * Redis keys (<name>:*). Used by `dlbrain env create|show|drop` and the relay. */
#ifndef DLB_ENV_OPS_H
#define DLB_ENV_OPS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

#include "conf.h"

#define DLB_ENV_TOPICS_MAX 16

typedef struct dlb_env_topic {
    char name[256];
    int partitions; /* -1 when the topic does not exist */
} dlb_env_topic_t;

/** @brief conf with env, pg.schema (and the default consumer groups) of
 *         environment name: a shallow copy sharing base's librdkafka
 *         properties, so it must not be passed to dlb_conf_destroy(). */
void dlb_env_conf(const dlb_conf_t *base, const char *name, dlb_conf_t *out);

/** @brief An admin client (a producer that never produces) for metadata and
 *         topic administration. */
int dlb_env_admin_new(const dlb_conf_t *conf, rd_kafka_t **out, char *errstr, size_t errstr_size);

/** @brief Create every topic of environment name (dlb_kafka_create_topics()
 *         with topic.partitions and topic.replication); existing ones are fine. */
int dlb_env_topics_create(rd_kafka_t *admin, const dlb_conf_t *conf, const char *name,
                          int timeout_ms, char *errstr, size_t errstr_size);

/** @brief The topics of environment name and their partition counts, in
 *         dlb_kafka_pipeline_topics order; *missing counts those not there. */
int dlb_env_topics_describe(rd_kafka_t *admin, const dlb_conf_t *conf, const char *name,
                            dlb_env_topic_t *out, size_t *cnt, int *missing, int timeout_ms,
                            char *errstr, size_t errstr_size);

/** @brief Delete the topics of environment name; missing ones are fine.
 *  @param deleted  set to how many existed and were deleted */
int dlb_env_topics_delete(rd_kafka_t *admin, const dlb_conf_t *conf, const char *name,
                          int timeout_ms, int *deleted, char *errstr, size_t errstr_size);

/** @brief Create schema name and apply the pipeline's migrations to it
 *         (dlb_pg_migrate()). */
int dlb_env_schema_create(const dlb_conf_t *conf, const char *name, char *errstr,
                          size_t errstr_size);

/** @brief Whether schema name exists, and how many tables it has. */
int dlb_env_schema_info(PGconn *pg, const char *name, int *exists, int *tables, char *errstr,
                        size_t errstr_size);

/** @brief DROP SCHEMA name CASCADE, when it exists. name must pass
 *         dlb_env_name_check() (so it is never the registry, public or pg_*). */
int dlb_env_schema_drop(PGconn *pg, const char *name, char *errstr, size_t errstr_size);

/** @brief How much a consumer group of environment name has still to read:
 *         over every partition of topics, the end offset minus the group's
 *         committed offset (the partition's start when it has none).
 *  @param rk      a consumer made with the group's id (dlb_kafka_consumer_new),
 *                 never subscribed: it asks, it does not join
 *  @param topics  short names (DLB_TOPIC_*), NULL-terminated; a topic that
 *                 does not exist is an error
 *  @param lag     set to the sum */
int dlb_env_group_lag(rd_kafka_t *rk, const dlb_conf_t *conf, const char *name,
                      const char *const *topics, int timeout_ms, int64_t *lag, char *errstr,
                      size_t errstr_size);

/** @brief The events stored in schema name: the rows of job_events,
 *         runtime_samples, node_events and plan_requests (what a producer
 *         publishes; plans and configs are the consumers' own). */
int dlb_env_events_stored(PGconn *pg, const char *name, int64_t *n, char *errstr,
                          size_t errstr_size);

/* What dlb_env_settle saw last. */
typedef struct dlb_env_settled {
    char group[256];   /* the consumer group waited for */
    int64_t lag;       /* what it had still to read, -1 unknown */
    int64_t stored;    /* events in PostgreSQL, -1 unknown */
    int64_t waited_ms; /* from the call */
} dlb_env_settled_t;

/** @brief Wait until environment name may be evaluated: its optimizer group
 *         (the consumer that stores the history) has committed everything on
 *         topics, and, when expect >= 0, its schema holds that many events.
 *         Lag 0 alone is not enough (a topic the producer has not flushed to
 *         shows none), nor the count alone (it says nothing while a producer
 *         still sends). Polls every 200 ms.
 *  @param topics  the group's inputs (short names), NULL-terminated
 *  @param admin_timeout_ms  how long one ask of the broker may take
 *  @param stop    set by a signal: give up at the next poll
 *  @returns 0 settled; DLB_ERR_NOTFOUND (no schema with the pipeline's
 *           tables); DLB_ERR_INVALID (more events stored than expected: not a
 *           fresh environment); DLB_ERR_TRANSIENT (not settled within
 *           timeout_ms or stopped: errstr says how far it got); or the error
 *           of a dependency that failed for good. */
int dlb_env_settle(const dlb_conf_t *conf, const char *name, const char *const *topics,
                   int64_t expect, int64_t timeout_ms, int admin_timeout_ms,
                   volatile sig_atomic_t *stop, dlb_env_settled_t *out, char *errstr,
                   size_t errstr_size);

/* What dlb_env_purge did: each part apart, as one may fail and the others not. */
typedef struct dlb_env_purged {
    int topics;   /* deleted, when topics_err is empty */
    int64_t keys; /* Redis keys deleted, when redis_err is empty */
    /* Why each part failed; "" when it went (the schema: dropped). */
    char topics_err[512], schema_err[512], redis_err[512];
} dlb_env_purged_t;

/** @brief Remove a dropped environment's resources: after waiting twice
 *         relay.refresh.ms (relays re-read the registry that often, and a
 *         copy still in flight could create a topic again), its topics, its
 *         PostgreSQL schema and its Redis keys.
 *  @returns 0 when all three went, else DLB_ERR_GENERIC with *out saying
 *           which failed and why. */
int dlb_env_purge(const dlb_conf_t *conf, PGconn *pg, const char *name, int admin_timeout_ms,
                  dlb_env_purged_t *out);

/** @brief Delete every Redis key "<name>:*" (SCAN + UNLINK).
 *  @param deleted  set to the number of keys removed */
int dlb_env_redis_purge(const dlb_conf_t *conf, const char *name, int64_t *deleted, char *errstr,
                        size_t errstr_size);

#endif
