/* Decoded history samples between plan requests (store_pg_hcache.h): a
 * chained hash table on the sample's key, and a list in order of last use
 * that says which to drop first. */
#include "store_pg_hcache.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS_MIN 1024

typedef struct entry {
    dlb_runtime_sample_t s; /* first: a sample's address is its entry's */
    uint64_t hash;
    /* Its job's pods, kept with the job's newest sample for the load whose
     * samples had fingerprint pods_fp: a job that did not change since
     * (a finished one) is not walked again. */
    dlb_hist_pod_t *pods;
    size_t pods_cnt;
    uint64_t pods_fp;
    size_t cost;
    uint64_t used; /* the load that last used it */
    struct entry *chain;
    struct entry *older, *newer;
} entry_t;

_Static_assert(offsetof(entry_t, s) == 0, "a cached sample's address is its entry's");

struct dlb_pg_hcache {
    entry_t **buckets;
    size_t nbuckets; /* a power of two */
    entry_t *oldest, *newest;
    size_t cnt, bytes, budget;
    uint64_t load;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

uint64_t dlb_pg_hcache_key_hash(const char *job_uid, const char *event_id, int64_t t)
{
    uint64_t h = 14695981039346656037ULL;

    h = fnv(h, job_uid, strlen(job_uid) + 1);
    h = fnv(h, event_id, strlen(event_id) + 1);
    return fnv(h, &t, sizeof(t));
}

dlb_pg_hcache_t *dlb_pg_hcache_new(size_t budget)
{
    dlb_pg_hcache_t *c = calloc(1, sizeof(*c));
    /* About one bucket per 4 KiB of budget: a small sample's cost. */
    size_t n = BUCKETS_MIN;

    if (!c)
        return NULL;
    while (n < budget / 4096 && n < ((size_t)1 << 24))
        n <<= 1;
    if (!(c->buckets = calloc(n, sizeof(*c->buckets)))) {
        free(c);
        return NULL;
    }
    c->nbuckets = n;
    c->budget = budget;
    return c;
}

static void list_remove(dlb_pg_hcache_t *c, entry_t *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    e->older = e->newer = NULL;
}

static void list_push(dlb_pg_hcache_t *c, entry_t *e)
{
    if ((e->older = c->newest))
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
}

static void entry_unlink(dlb_pg_hcache_t *c, entry_t *e)
{
    entry_t **p = &c->buckets[e->hash & (c->nbuckets - 1)];

    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    list_remove(c, e);
    c->cnt--;
    c->bytes -= e->cost;
    free(e->s.pods);
    free(e->s.pods_by_name);
    free(e->pods);
    free(e);
}

void dlb_pg_hcache_free(dlb_pg_hcache_t *c)
{
    if (!c)
        return;
    while (c->oldest)
        entry_unlink(c, c->oldest);
    free(c->buckets);
    free(c);
}

void dlb_pg_hcache_begin(dlb_pg_hcache_t *c)
{
    c->load++;
}

/* Least recently used first; what the current load uses is at the newest
 * end, never dropped under it. */
static void trim(dlb_pg_hcache_t *c)
{
    while (c->bytes > c->budget && c->oldest && c->oldest->used != c->load)
        entry_unlink(c, c->oldest);
}

const dlb_runtime_sample_t *dlb_pg_hcache_get(dlb_pg_hcache_t *c, const char *job_uid,
                                              const char *event_id, int64_t event_time_ms)
{
    uint64_t h = dlb_pg_hcache_key_hash(job_uid, event_id, event_time_ms);

    for (entry_t *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->chain)
        if (e->hash == h && e->s.event_time_ms == event_time_ms &&
            !strcmp(e->s.event_id, event_id) && !strcmp(e->s.job_uid, job_uid)) {
            e->used = c->load;
            list_remove(c, e);
            list_push(c, e);
            return &e->s;
        }
    return NULL;
}

const dlb_runtime_sample_t *dlb_pg_hcache_put(dlb_pg_hcache_t *c, dlb_runtime_sample_t *s)
{
    entry_t *e = calloc(1, sizeof(*e));

    if (!e) {
        free(s->pods);
        free(s->pods_by_name);
        memset(s, 0, sizeof(*s));
        return NULL;
    }
    e->s = *s;
    memset(s, 0, sizeof(*s));
    e->hash = dlb_pg_hcache_key_hash(e->s.job_uid, e->s.event_id, e->s.event_time_ms);
    e->cost = sizeof(*e) + e->s.pods_cnt * sizeof(*e->s.pods);
    e->used = c->load;
    e->chain = c->buckets[e->hash & (c->nbuckets - 1)];
    c->buckets[e->hash & (c->nbuckets - 1)] = e;
    list_push(c, e);
    c->cnt++;
    c->bytes += e->cost;
    trim(c);
    return &e->s;
}

const dlb_hist_pod_t *dlb_pg_hcache_pods_get(const dlb_runtime_sample_t *newest, uint64_t fp,
                                             size_t *cnt)
{
    const entry_t *e = (const entry_t *)(const void *)newest;

    *cnt = 0;
    if (!e->pods || e->pods_fp != fp)
        return NULL;
    *cnt = e->pods_cnt;
    return e->pods;
}

const dlb_hist_pod_t *dlb_pg_hcache_pods_put(dlb_pg_hcache_t *c, const dlb_runtime_sample_t *newest,
                                             uint64_t fp, dlb_hist_pod_t *pods, size_t cnt)
{
    entry_t *e = (entry_t *)(void *)newest;
    size_t cost = cnt * sizeof(*pods);

    c->bytes -= e->pods_cnt * sizeof(*e->pods);
    e->cost -= e->pods_cnt * sizeof(*e->pods);
    free(e->pods);
    e->pods = pods;
    e->pods_cnt = cnt;
    e->pods_fp = fp;
    e->cost += cost;
    c->bytes += cost;
    trim(c);
    return e->pods;
}

void dlb_pg_hcache_stats(const dlb_pg_hcache_t *c, size_t *samples, size_t *bytes)
{
    *samples = c ? c->cnt : 0;
    *bytes = c ? c->bytes : 0;
}
