/* What a plan request depends on: for each topic its producer wrote the
 * job's earlier events to, the offset of the last one the broker
 * acknowledged. It travels in the request's Kafka header dlb.after, so the
 * optimizer answers as soon as it has applied those events instead of
 * waiting consumer.order.grace.ms for events that may still be in flight
 * (docs/architecture.md, "Per-job order across topics").
 *
 * Header value: text items "<topic>:<partition>:<offset>" joined by ','
 * (':' and ',' cannot occur in a topic name); an empty value says the
 * producer depends on nothing it wrote itself. */
#ifndef DLB_AFTER_H
#define DLB_AFTER_H

#include <stddef.h>
#include <stdint.h>

#define DLB_AFTER_HEADER    "dlb.after"
#define DLB_AFTER_MAX       8    /* positions in one header */
#define DLB_AFTER_VALUE_MAX 2048 /* bytes of one header value */
#define DLB_AFTER_TOPIC_MAX 249  /* Kafka's own limit on a topic name */

typedef struct dlb_after_pos {
    char topic[DLB_AFTER_TOPIC_MAX + 1];
    int32_t partition;
    int64_t offset;
} dlb_after_pos_t;

typedef struct dlb_after {
    dlb_after_pos_t pos[DLB_AFTER_MAX];
    size_t cnt;
} dlb_after_t;

/** @brief Note that offset of topic [partition] was acknowledged: the
 *         highest offset per topic and partition is kept.
 *  @returns 0, or DLB_ERR_INVALID when the topic name is not a Kafka topic
 *           name, the partition or offset is negative, or DLB_AFTER_MAX
 *           positions are held already. */
int dlb_after_note(dlb_after_t *a, const char *topic, int32_t partition, int64_t offset);

/** @brief The header value of a, in buf (NUL-terminated).
 *  @returns its length (without the NUL), or DLB_ERR_INVALID when buf is too
 *           small. */
int dlb_after_format(const dlb_after_t *a, char *buf, size_t size);

/** @brief Parse a header value (len bytes, not NUL-terminated).
 *  @returns 0, or DLB_ERR_INVALID with errstr naming the item and what is
 *           wrong with it. */
int dlb_after_parse(const void *value, size_t len, dlb_after_t *a, char *errstr,
                    size_t errstr_size);

/* Positions per job for a producer that writes many jobs' events (the
 * gateway): direct-mapped on the job key, so memory is fixed and a job whose
 * slot was taken by another simply has no positions (its requests still wait
 * for what the broker held when they were read: the end check). Not
 * thread-safe: a caller using it from several threads locks around it. */
typedef struct dlb_after_cache dlb_after_cache_t;

#define DLB_AFTER_CACHE_TOPICS 4     /* topics one cache follows */
#define DLB_AFTER_CACHE_SLOTS  16384 /* jobs: 16384 x 176 bytes, under 3 MiB */

/** @brief A cache of slots jobs over the topics named (at most
 *         DLB_AFTER_CACHE_TOPICS; copied).
 *  @returns the cache, or NULL when out of memory or given too many topics. */
dlb_after_cache_t *dlb_after_cache_new(const char *const *topics, size_t ntopics, size_t slots);
void dlb_after_cache_free(dlb_after_cache_t *cache);

/** @brief Note an acknowledged message of job key (len bytes) on topic
 *         [partition] at offset. Topics the cache does not follow are ignored. */
void dlb_after_cache_note(dlb_after_cache_t *cache, const void *key, size_t len, const char *topic,
                          int32_t partition, int64_t offset);

/** @brief The positions held for job key (NUL-terminated) into *out
 *         (emptied first). @returns 1 when the job has positions, else 0. */
int dlb_after_cache_get(const dlb_after_cache_t *cache, const char *key, dlb_after_t *out);

#endif
