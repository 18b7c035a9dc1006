/* Decoded history samples, kept between plan requests (history.cache.mb).
 *
 * Every plan request of a scenario reads the same similar jobs' samples, up
 * to 100 jobs of 240 samples; decoding them from Avro again for each request
 * was 80% of the optimizer's time (perf, scripts/bench gateway). A stored
 * sample never changes (its key is runtime_samples' primary key, and a row is
 * never updated), so a sample decoded once serves every later request.
 *
 * The history a load fills borrows the cached samples: they stay valid until
 * the next load (dlb_pg_hcache_begin) or dlb_pg_hcache_free. Memory is held
 * to the budget by dropping the samples inserted longest ago that the current
 * load does not use; a load's own samples are never dropped under it, so with
 * a budget of 0 the cache holds just the last history, as an uncached read
 * would. */
#ifndef DLB_STORE_PG_HCACHE_H
#define DLB_STORE_PG_HCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "state.h"

typedef struct dlb_pg_hcache dlb_pg_hcache_t;

/** @returns a cache holding about budget bytes of decoded samples, or NULL
 *           when out of memory. */
dlb_pg_hcache_t *dlb_pg_hcache_new(size_t budget);
void dlb_pg_hcache_free(dlb_pg_hcache_t *c);

/** @brief A new load begins: the previous load's samples may be dropped. */
void dlb_pg_hcache_begin(dlb_pg_hcache_t *c);

/** @returns the cached sample of that key, kept for this load, or NULL. */
const dlb_runtime_sample_t *dlb_pg_hcache_get(dlb_pg_hcache_t *c, const char *job_uid,
                                              const char *event_id, int64_t event_time_ms);

/** @brief Take s (its pods array with it; *s is zeroed) into the cache, kept
 *         for this load, dropping older samples over the budget.
 *  @returns the cached copy, or NULL when out of memory (s is then freed). */
const dlb_runtime_sample_t *dlb_pg_hcache_put(dlb_pg_hcache_t *c, dlb_runtime_sample_t *s);

/** @returns the hash of a sample's key, for a fingerprint of a list of them. */
uint64_t dlb_pg_hcache_key_hash(const char *job_uid, const char *event_id, int64_t event_time_ms);

/** @returns the pods (dlb_hist_job_last_pods) kept with cached sample newest
 *           for the job whose samples, newest last, had fingerprint fp, or
 *           NULL (none kept, or for other samples). Valid as the sample is. */
const dlb_hist_pod_t *dlb_pg_hcache_pods_get(const dlb_runtime_sample_t *newest, uint64_t fp,
                                             size_t *cnt);

/** @brief Keep pods (taken, freed on failure) with cached sample newest for
 *         fingerprint fp, in place of what it kept.
 *  @returns the kept pods, valid as the sample is. */
const dlb_hist_pod_t *dlb_pg_hcache_pods_put(dlb_pg_hcache_t *c, const dlb_runtime_sample_t *newest,
                                             uint64_t fp, dlb_hist_pod_t *pods, size_t cnt);

/** @brief Samples held and their bytes, for tests and logs. */
void dlb_pg_hcache_stats(const dlb_pg_hcache_t *c, size_t *samples, size_t *bytes);

#endif
