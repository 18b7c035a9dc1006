/* The dlb.after header (after.h): positions a plan request depends on. */
#include "after.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

static int topic_char(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
}

static int topic_valid(const char *t, size_t len)
{
    if (!len || len > DLB_AFTER_TOPIC_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!topic_char((unsigned char)t[i]))
            return 0;
    return 1;
}

int dlb_after_note(dlb_after_t *a, const char *topic, int32_t partition, int64_t offset)
{
    size_t len = strlen(topic);

    if (!topic_valid(topic, len) || partition < 0 || offset < 0)
        return DLB_ERR_INVALID;
    for (size_t i = 0; i < a->cnt; i++) {
        dlb_after_pos_t *p = &a->pos[i];
        if (p->partition == partition && !strcmp(p->topic, topic)) {
            if (offset > p->offset)
                p->offset = offset;
            return 0;
        }
    }
    if (a->cnt == DLB_AFTER_MAX)
        return DLB_ERR_INVALID;
    memcpy(a->pos[a->cnt].topic, topic, len + 1);
    a->pos[a->cnt].partition = partition;
    a->pos[a->cnt].offset = offset;
    a->cnt++;
    return 0;
}

int dlb_after_format(const dlb_after_t *a, char *buf, size_t size)
{
    size_t len = 0;

    if (!size)
        return DLB_ERR_INVALID;
    buf[0] = '\0';
    for (size_t i = 0; i < a->cnt; i++) {
        int n = snprintf(buf + len, size - len, "%s%s:%" PRId32 ":%" PRId64, i ? "," : "",
                         a->pos[i].topic, a->pos[i].partition, a->pos[i].offset);
        if (n < 0 || (size_t)n >= size - len) {
            buf[0] = '\0';
            return DLB_ERR_INVALID;
        }
        len += (size_t)n;
    }
    return (int)len;
}

/* A decimal in [0, max] spelled by exactly s[0..len), no sign, no spaces. */
static int parse_num(const char *s, size_t len, int64_t max, int64_t *out)
{
    int64_t v = 0;

    if (!len || len > 19)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (max - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int parse_item(const char *s, size_t len, dlb_after_t *a, size_t n, char *errstr,
                      size_t size)
{
    const char *c1 = memchr(s, ':', len), *c2;
    int64_t part, off;
    char topic[DLB_AFTER_TOPIC_MAX + 1];

    if (!c1 || !(c2 = memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - s))))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "header %s: item %zu: expected <topic>:<partition>:<offset>",
                          DLB_AFTER_HEADER, n);
    if (!topic_valid(s, (size_t)(c1 - s)))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "header %s: item %zu: the topic is not a Kafka topic name (1 to %d of "
                          "a-z A-Z 0-9 . _ -)",
                          DLB_AFTER_HEADER, n, DLB_AFTER_TOPIC_MAX);
    if (parse_num(c1 + 1, (size_t)(c2 - c1 - 1), INT32_MAX, &part))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "header %s: item %zu: the partition is not a number from 0 to %d",
                          DLB_AFTER_HEADER, n, INT32_MAX);
    if (parse_num(c2 + 1, len - (size_t)(c2 + 1 - s), INT64_MAX, &off))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "header %s: item %zu: the offset is not a number from 0 to %" PRId64,
                          DLB_AFTER_HEADER, n, INT64_MAX);
    memcpy(topic, s, (size_t)(c1 - s));
    topic[c1 - s] = '\0';
    if (dlb_after_note(a, topic, (int32_t)part, off))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "header %s: more than %d positions",
                          DLB_AFTER_HEADER, DLB_AFTER_MAX);
    return 0;
}

int dlb_after_parse(const void *value, size_t len, dlb_after_t *a, char *errstr, size_t size)
{
    const char *s = value, *end = s + len;
    size_t n = 1;
    int err;

    a->cnt = 0;
    if (len > DLB_AFTER_VALUE_MAX)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "header %s: %zu bytes, more than %d",
                          DLB_AFTER_HEADER, len, DLB_AFTER_VALUE_MAX);
    if (!len)
        return 0;
    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *stop = comma ? comma : end;

        if ((err = parse_item(s, (size_t)(stop - s), a, n, errstr, size)))
            return err;
        if (!comma)
            return 0;
        s = comma + 1;
        n++;
    }
}

/* ---- the per-job cache ------------------------------------------------------- */

typedef struct slot {
    char key[128]; /* a job uid (DLB_ID_MAX); longer keys are not cached */
    int32_t partition[DLB_AFTER_CACHE_TOPICS];
    int64_t offset[DLB_AFTER_CACHE_TOPICS]; /* -1: nothing acknowledged on that topic */
} slot_t;

struct dlb_after_cache {
    char topics[DLB_AFTER_CACHE_TOPICS][DLB_AFTER_TOPIC_MAX + 1];
    size_t ntopics, nslots;
    slot_t *slots;
};

dlb_after_cache_t *dlb_after_cache_new(const char *const *topics, size_t ntopics, size_t slots)
{
    dlb_after_cache_t *c;

    if (ntopics > DLB_AFTER_CACHE_TOPICS || !slots)
        return NULL;
    for (size_t i = 0; i < ntopics; i++)
        if (!topic_valid(topics[i], strlen(topics[i])))
            return NULL;
    if (!(c = calloc(1, sizeof(*c))))
        return NULL;
    if (!(c->slots = calloc(slots, sizeof(*c->slots)))) {
        free(c);
        return NULL;
    }
    for (size_t i = 0; i < ntopics; i++)
        snprintf(c->topics[i], sizeof(c->topics[i]), "%s", topics[i]);
    c->ntopics = ntopics;
    c->nslots = slots;
    return c;
}

void dlb_after_cache_free(dlb_after_cache_t *c)
{
    if (!c)
        return;
    free(c->slots);
    free(c);
}

/* FNV-1a: a job uid spreads well enough, and nothing here is adversarial
 * beyond a job evicting another's positions. */
static size_t slot_of(const dlb_after_cache_t *c, const void *key, size_t len)
{
    const unsigned char *k = key;
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < len; i++)
        h = (h ^ k[i]) * 1099511628211ULL;
    return (size_t)(h % c->nslots);
}

void dlb_after_cache_note(dlb_after_cache_t *c, const void *key, size_t len, const char *topic,
                          int32_t partition, int64_t offset)
{
    slot_t *s;
    size_t t;

    if (!key || !len || len >= sizeof(s->key) || partition < 0 || offset < 0)
        return;
    for (t = 0; t < c->ntopics && strcmp(c->topics[t], topic); t++)
        ;
    if (t == c->ntopics)
        return;
    s = &c->slots[slot_of(c, key, len)];
    if (strlen(s->key) != len || memcmp(s->key, key, len)) {
        /* Another job's slot (or an empty one): it is ours now. */
        memcpy(s->key, key, len);
        s->key[len] = '\0';
        for (size_t i = 0; i < DLB_AFTER_CACHE_TOPICS; i++)
            s->offset[i] = -1;
    }
    if (offset > s->offset[t] || partition != s->partition[t]) {
        s->partition[t] = partition;
        s->offset[t] = offset;
    }
}

int dlb_after_cache_get(const dlb_after_cache_t *c, const char *key, dlb_after_t *out)
{
    size_t len = strlen(key);
    const slot_t *s;

    out->cnt = 0;
    if (!len || len >= sizeof(s->key))
        return 0;
    s = &c->slots[slot_of(c, key, len)];
    if (strcmp(s->key, key))
        return 0;
    for (size_t t = 0; t < c->ntopics; t++)
        if (s->offset[t] >= 0)
            dlb_after_note(out, c->topics[t], s->partition[t], s->offset[t]);
    return out->cnt > 0;
}
