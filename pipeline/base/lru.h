/* A cache of values by a byte-string key, held to a budget of bytes by
 * dropping the least recently used: what a consumer decodes again and again
 * (the same Redis members for every plan request of a job) is decoded once.
 * Values belong to the cache once put: it frees them (free_value) when they
 * are dropped or the cache is freed. */
#ifndef DLB_LRU_H
#define DLB_LRU_H

#include <stddef.h>

typedef struct dlb_lru dlb_lru_t;

/** @returns a cache of about budget bytes (keys, values' costs and its own
 *           entries), or NULL when out of memory. */
dlb_lru_t *dlb_lru_new(size_t budget, void (*free_value)(void *value));
void dlb_lru_free(dlb_lru_t *c);

/** @returns the value put under key (len bytes), now the most recently
 *           used, or NULL. Valid until the next dlb_lru_put or free. */
void *dlb_lru_get(dlb_lru_t *c, const void *key, size_t len);

/** @brief Drop (and free) the value under key, if any. */
void dlb_lru_del(dlb_lru_t *c, const void *key, size_t len);

/** @brief Put value (taken: freed with free_value on failure) under key,
 *         which must not be there; cost is the value's bytes. Older values
 *         are dropped until the budget holds again, never the one put. A
 *         value that alone costs more than the budget is not kept.
 *  @returns 0, 1 when not kept (value stays the caller's), or
 *           DLB_ERR_NOMEM. */
int dlb_lru_put(dlb_lru_t *c, const void *key, size_t len, void *value, size_t cost);

/** @brief Values held and the bytes counted, for tests and logs. */
void dlb_lru_stats(const dlb_lru_t *c, size_t *values, size_t *bytes);

#endif
