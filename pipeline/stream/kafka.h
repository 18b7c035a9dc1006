/* Kafka plumbing over librdkafka: client creation from dlb_conf_t, topic
 * creation, the dead-letter topic, and the embedded mock cluster. */
#ifndef DLB_KAFKA_H
#define DLB_KAFKA_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "after.h"
#include "conf.h"

/** @brief A librdkafka configuration: bootstrap.servers from conf, then base,
 *         then every -X pass-through, then extra (base and extra: NULL or
 *         NULL-terminated key,value pairs): the later wins. Logs and errors go to
 *         dlb_log (set other callbacks to send them elsewhere).
 *  @returns the configuration, or NULL with errstr naming the bad property. */
rd_kafka_conf_t *dlb_kafka_conf_new(const dlb_conf_t *conf, const char *const *base,
                                    const char *const *extra, char *errstr, size_t errstr_size);

/** @brief The value of librdkafka property key as -X set it, or NULL. */
const char *dlb_kafka_conf_get(const dlb_conf_t *conf, const char *key);

/** @brief A producer with idempotence on and every -X pass-through applied.
 *  @param extra NULL-terminated key,value pairs applied after conf (may be NULL). */
int dlb_kafka_producer_new(const dlb_conf_t *conf, const char *const *extra, rd_kafka_t **out,
                           char *errstr, size_t errstr_size);

/** @brief A consumer-group member: auto-commit off (offsets are committed by the
 *         caller after the writes they cover), auto.offset.reset=earliest,
 *         session.timeout.ms 6000 and heartbeat.interval.ms 1000 (a dead
 *         member's partitions move about 7 s after it died); -X overrides
 *         each. */
int dlb_kafka_consumer_new(const dlb_conf_t *conf, const char *group_id, const char *const *extra,
                           rd_kafka_t **out, char *errstr, size_t errstr_size);

/** @brief Like dlb_kafka_consumer_new, with a rebalance callback (may be NULL)
 *         whose opaque is the client's opaque. */
int dlb_kafka_consumer_new_cb(const dlb_conf_t *conf, const char *group_id,
                              const char *const *extra,
                              void (*rebalance_cb)(rd_kafka_t *, rd_kafka_resp_err_t,
                                                   rd_kafka_topic_partition_list_t *, void *),
                              void *opaque, rd_kafka_t **out, char *errstr, size_t errstr_size);

/* Short names of every topic of an environment (DLB_TOPIC_*), NULL-terminated. */
extern const char *const dlb_kafka_pipeline_topics[];

/** @brief Create the pipeline's topics ("<env>.job-events" ... "<env>.dlq") with
 *         conf.partitions and conf.replication through the Admin API; topics that
 *         exist already are fine. */
int dlb_kafka_create_topics(rd_kafka_t *rk, const dlb_conf_t *conf, int timeout_ms, char *errstr,
                            size_t errstr_size);

/** @brief Delete the pipeline's topics of conf->env through the Admin API;
 *         topics that do not exist are fine.
 *  @param deleted  set to how many existed and were deleted */
int dlb_kafka_delete_topics(rd_kafka_t *rk, const dlb_conf_t *conf, int timeout_ms, int *deleted,
                            char *errstr, size_t errstr_size);

/** @brief Seek a consumer's partitions back to the offsets in l (a failed
 *         batch's first messages), so its messages are fetched again. A seek
 *         can fail while the broker restarts, and going on would skip the
 *         batch: it is retried every backoff_ms (a seek to the same offsets is
 *         harmless to repeat) until it takes or *stop becomes non-zero.
 *  @returns 0, or DLB_ERR_GENERIC when stopped first, errstr naming the
 *           topic[partition]@offset (or the call) that failed. */
int dlb_kafka_seek_back(rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *l,
                        volatile sig_atomic_t *stop, int backoff_ms, char *errstr,
                        size_t errstr_size);

/** @brief Send a bad message to "<env>.dlq", same key and value, with headers
 *         dlb.source.topic, dlb.source.partition, dlb.source.offset, dlb.stage
 *         (where it failed: decode, validate, process), dlb.error.class
 *         (dlb_err_name()), dlb.error.message. A value over message.max.bytes,
 *         or a copy the producer refuses as too large (librdkafka's own
 *         message.max.bytes), goes without its value, then without its key:
 *         dlb.value.omitted.bytes / dlb.key.omitted.bytes give their sizes.
 *         Asynchronous like any produce. */
int dlb_kafka_dlq_send(rd_kafka_t *producer, const dlb_conf_t *conf, const rd_kafka_message_t *src,
                       const char *stage, int err, const char *message, char *errstr,
                       size_t errstr_size);

/** @brief A transactional.id of this process in group:
 *         "<group>-<host>-<pid>-<8 random hex digits>", new at every call.
 *  @returns 0, or DLB_ERR_GENERIC when no random bytes could be read. */
int dlb_kafka_txn_id(const char *group, char *buf, size_t size);

/** @brief A transactional producer (init_transactions is the caller's, so it can
 *         wait out an unavailable broker). transactional.id is the -X value if
 *         set, else dlb_kafka_txn_id(group); transaction.timeout.ms defaults to
 *         5000 so a killed process's open transaction holds read_committed
 *         readers, and the member taking its partitions over, back for at
 *         most 5 s (plus the broker's abort check), its id never being reused. */
int dlb_kafka_txn_producer_new(const dlb_conf_t *conf, const char *group, rd_kafka_t **out,
                               char *errstr, size_t errstr_size);

/** @brief Destroy a producer made by dlb_kafka_producer_new (flushes up to 10 s).
 *         If it had failed for good, /healthz no longer counts it. */
void dlb_kafka_producer_destroy(rd_kafka_t *producer);

/** @brief Close and destroy a consumer (NULL is fine); if it had failed for
 *         good, /healthz no longer counts it. */
void dlb_kafka_consumer_destroy(rd_kafka_t *consumer);

/** @brief Whether rk failed for good (librdkafka's fatal error: a fenced
 *         producer or static group member, a broken idempotence guarantee).
 *         Such a client serves nothing more: every process replaces it or
 *         stops with a non-zero exit; until then /healthz fails (the error
 *         callback of dlb_kafka_conf_new reports it to metrics.h).
 *  @returns 0, or DLB_ERR_FATAL with errstr naming the client and the error. */
int dlb_kafka_fatal(rd_kafka_t *rk, char *errstr, size_t errstr_size);

/* Fences of one client role, counted by dlb_kafka_fenced_too_often(). */
#define DLB_KAFKA_FENCED_MAX       3
#define DLB_KAFKA_FENCED_WINDOW_MS 60000
typedef struct dlb_kafka_fence {
    int cnt;
    int64_t first; /* monotonic ms */
} dlb_kafka_fence_t;

/** @brief rk failed for good; whether to replace it. Fenced (another
 *         producer began with its transactional.id, another member joined
 *         with its group.instance.id) DLB_KAFKA_FENCED_MAX times within
 *         DLB_KAFKA_FENCED_WINDOW_MS (a producer: each in a transaction
 *         younger than its timeout, txn_age_ms), it is no zombie of ours
 *         being replaced but another live process sharing the id: the two
 *         would fence each other for ever.
 *  @returns 0 to replace it, or DLB_ERR_CONF naming the id. */
int dlb_kafka_fenced_too_often(dlb_kafka_fence_t *f, rd_kafka_t *rk, int64_t txn_age_ms,
                               char *errstr, size_t errstr_size);

/** @returns messages of this producer that failed delivery since the last call,
 *           and resets the count. */
int64_t dlb_kafka_delivery_failures(rd_kafka_t *producer);

/** @brief Wait until every produced message is delivered or failed.
 *  @returns 0, DLB_ERR_FATAL when the producer failed for good, or
 *           DLB_ERR_TRANSIENT if something was not delivered in time (the
 *           producer's delivery callback counts failures). */
int dlb_kafka_flush(rd_kafka_t *producer, int timeout_ms, char *errstr, size_t errstr_size);

/* The header naming the environment that answers a front record at the
 * front (its stamp): the relay puts it on every copy of a front record
 * (docs/environments.md, "Exactly once across a switch"), and a consumer
 * copies it from the record it answers onto its answers. */
#define DLB_KAFKA_STAMP_HEADER "dlb.real"
#define DLB_KAFKA_STAMP_MAX    64

/** @brief The stamp header of m into buf (NUL-terminated, truncated to
 *         size - 1). @returns 1 when m has one, else 0 (buf ""). */
int dlb_kafka_stamp_get(const rd_kafka_message_t *m, char *buf, size_t size);

/** @brief dlb_kafka_produce() with the stamp header set to stamp, unless it
 *         is NULL or "". */
int dlb_kafka_produce_stamped(rd_kafka_t *producer, const char *topic, const char *key,
                              const void *value, size_t len, const char *stamp, char *errstr,
                              size_t errstr_size);

/** @brief Produce a copy of value to topic with key (partitioned by key).
 *  @returns 0, DLB_ERR_FATAL when the producer failed for good
 *           (dlb_kafka_fatal()), or DLB_ERR_TRANSIENT. */
int dlb_kafka_produce(rd_kafka_t *producer, const char *topic, const char *key, const void *value,
                      size_t len, char *errstr, size_t errstr_size);

/** @brief Keep, per job key, the offsets the broker acknowledged for this
 *         producer's messages on conf's event topics (job-events, metrics,
 *         k8s-events), so that dlb_kafka_produce_request() can say what a
 *         plan request depends on. Delivery reports are served by the thread
 *         polling the producer: call both from it. Calling it again does
 *         nothing. */
int dlb_kafka_producer_follow(rd_kafka_t *producer, const dlb_conf_t *conf, char *errstr,
                              size_t errstr_size);

/** @brief dlb_kafka_producer_follow(), and a plan request then depends on
 *         everything this producer wrote to its job's partitions (the newest
 *         acknowledged offset of each followed topic there, whatever the
 *         key), not only on its job's events. For a producer that stands for
 *         a whole cluster (the simulator): with one partition per topic, the
 *         optimizer answers a request only once every earlier event of every
 *         job is stored, so what it reads of other jobs (similar jobs'
 *         history, the cluster view) is the same from run to run. */
int dlb_kafka_producer_follow_whole(rd_kafka_t *producer, const dlb_conf_t *conf, char *errstr,
                                    size_t errstr_size);

/** @brief New headers holding dlb.after with a's positions (after.h), for a
 *         plan request's produce. @returns them, or NULL when out of memory. */
rd_kafka_headers_t *dlb_kafka_after_headers(const dlb_after_t *a);

/** @brief dlb_kafka_produce() for a plan request, with the dlb.after header
 *         (after.h): the offsets acknowledged so far for key on the followed
 *         topics, empty when none. The caller has its earlier events
 *         acknowledged first (dlb_kafka_flush). */
int dlb_kafka_produce_request(rd_kafka_t *producer, const char *topic, const char *key,
                              const void *value, size_t len, char *errstr, size_t errstr_size);

/** @brief The partition (of cnt) librdkafka's producers put key on, as the
 *         partitioner conf's pass-through names (default consistent_random).
 *  @returns it, or -1 when the partitioner is one that cannot be followed
 *           (then the key may be on any partition) or the key is empty. */
int32_t dlb_kafka_key_partition(const dlb_conf_t *conf, const char *key, int32_t cnt);

/* ---- embedded mock cluster (librdkafka 2.0.2) ---------------------------
 * In memory only, gone when the process ends; keeps about 5 MiB per partition;
 * accepts but does not implement transactions. For fast tests and the demo. */
typedef struct dlb_mock dlb_mock_t;

int dlb_mock_start(dlb_mock_t **out, int brokers, const dlb_conf_t *conf, char *errstr,
                   size_t errstr_size);
/** @brief Answer the next request of a Kafka API with an error, for fault
 *         tests: spec is "API_KEY:ERROR", the API by its protocol number
 *         (22 InitProducerId, 0 Produce, 11 JoinGroup ...) and the error by
 *         librdkafka's name (rd_kafka_err2name(), e.g.
 *         CLUSTER_AUTHORIZATION_FAILED). Each call adds one, answered in turn.
 *  @returns 0, or DLB_ERR_CONF naming what in spec is wrong. */
int dlb_mock_fail_request(dlb_mock_t *mock, const char *spec, char *errstr, size_t errstr_size);
/** @returns the bootstrap servers, "127.0.0.1:port,..." */
const char *dlb_mock_bootstraps(const dlb_mock_t *mock);
void dlb_mock_stop(dlb_mock_t *mock);

#endif
