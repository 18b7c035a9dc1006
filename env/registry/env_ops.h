/* The resources of an environment beside its registry row: its Kafka topics
 * (<name>.job-events ... <name>.dlq), its PostgreSQL schema (<name>) and its
 * Redis keys (<name>:*). Used by `dlbrain env create|show|drop` and the relay. */
#ifndef DLB_ENV_OPS_H
#define DLB_ENV_OPS_H

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

/** @brief Delete every Redis key "<name>:*" (SCAN + UNLINK).
 *  @param deleted  set to the number of keys removed */
int dlb_env_redis_purge(const dlb_conf_t *conf, const char *name, int64_t *deleted, char *errstr,
                        size_t errstr_size);

#endif
