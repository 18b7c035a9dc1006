/* A chained hash table on the key's bytes, and a list in order of last use
 * that says which to drop first (lru.h). */
#include "lru.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

#define BUCKETS_MIN 256

typedef struct entry {
    void *value;
    size_t cost;
    uint64_t hash;
    struct entry *chain;
    struct entry *older, *newer;
    size_t len;
    unsigned char key[]; /* len bytes */
} entry_t;

struct dlb_lru {
    entry_t **buckets;
    size_t nbuckets; /* a power of two */
    entry_t *oldest, *newest;
    size_t cnt, bytes, budget;
    void (*free_value)(void *value);
};

static uint64_t key_hash(const void *key, size_t len)
{
    const unsigned char *b = key;
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

dlb_lru_t *dlb_lru_new(size_t budget, void (*free_value)(void *value))
{
    dlb_lru_t *c = calloc(1, sizeof(*c));
    /* About one bucket per 4 KiB of budget. */
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
    c->free_value = free_value;
    return c;
}

static void list_remove(dlb_lru_t *c, entry_t *e)
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

static void list_push(dlb_lru_t *c, entry_t *e)
{
    if ((e->older = c->newest))
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
}

static void entry_drop(dlb_lru_t *c, entry_t *e)
{
    entry_t **p = &c->buckets[e->hash & (c->nbuckets - 1)];

    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    list_remove(c, e);
    c->cnt--;
    c->bytes -= e->cost;
    if (c->free_value)
        c->free_value(e->value);
    free(e);
}

void dlb_lru_free(dlb_lru_t *c)
{
    if (!c)
        return;
    while (c->oldest)
        entry_drop(c, c->oldest);
    free(c->buckets);
    free(c);
}

static entry_t *entry_find(const dlb_lru_t *c, const void *key, size_t len)
{
    uint64_t h = key_hash(key, len);

    for (entry_t *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->chain)
        if (e->hash == h && e->len == len && !memcmp(e->key, key, len))
            return e;
    return NULL;
}

void *dlb_lru_get(dlb_lru_t *c, const void *key, size_t len)
{
    entry_t *e = entry_find(c, key, len);

    if (!e)
        return NULL;
    list_remove(c, e);
    list_push(c, e);
    return e->value;
}

void dlb_lru_del(dlb_lru_t *c, const void *key, size_t len)
{
    entry_t *e = entry_find(c, key, len);

    if (e)
        entry_drop(c, e);
}

int dlb_lru_put(dlb_lru_t *c, const void *key, size_t len, void *value, size_t cost)
{
    entry_t *e;

    if (len > c->budget || cost > c->budget - len || sizeof(*e) > c->budget - len - cost)
        return 1; /* it alone would pass the budget */
    if (!(e = malloc(sizeof(*e) + len))) {
        if (c->free_value)
            c->free_value(value);
        return DLB_ERR_NOMEM;
    }
    memcpy(e->key, key, len);
    e->len = len;
    e->value = value;
    e->hash = key_hash(key, len);
    e->cost = sizeof(*e) + len + cost;
    e->older = e->newer = NULL;
    e->chain = c->buckets[e->hash & (c->nbuckets - 1)];
    c->buckets[e->hash & (c->nbuckets - 1)] = e;
    list_push(c, e);
    c->cnt++;
    c->bytes += e->cost;
    while (c->bytes > c->budget && c->oldest != e)
        entry_drop(c, c->oldest);
    return 0;
}

void dlb_lru_stats(const dlb_lru_t *c, size_t *values, size_t *bytes)
{
    *values = c ? c->cnt : 0;
    *bytes = c ? c->bytes : 0;
}
