/* The configuration matcher (matcher.h): rules compiled into indexes, a match
 * as a few bitset intersections, merged results cached by rule set.
 *
 * Rules are sorted by precedence at compile time, so rule index = bit
 * position = precedence rank (0 highest) and the set bits of a match, read in
 * order, are the result's rule ids in order.
 *
 * Include, per attribute:
 * - free: a bitset of the rules whose Include does not name the attribute
 *   (NULL when none does: the attribute is skipped);
 * - per distinct listed value (one hash table per attribute, shared with
 *   Exclude): the rules listing it, and for a value listed by enough rules
 *   (build_index) its "term", free | those rules, as a bitset. Patterns are
 *   entries of the same table, tested one by one (fnmatch) against the job's
 *   value, those with a literal prefix only when its first byte agrees; a
 *   frequent pattern also keeps its rules as a bitset.
 * Include holds for rule r when, for every attribute, r is free or lists the
 * job's value. So the rules it holds for are the AND over the attributes of
 * each term (the value's, or free when the value is rare, unknown or
 * missing), plus the rules a rare value or a pattern hit, which that AND
 * dropped, checked one by one on the attributes they name.
 * Exclude has the same index but is checked rule by rule, for the rules in
 * scope that have one (few), in the pass that hashes the set.
 *
 * The cache: CACHE_WAYS-way sets found by a hash of the set's bitset, each
 * entry checked against the set's non-zero words. An entry holds one set's
 * result in one block; merged object values are the only JSON printed,
 * everything else points at the rules' own text. The context cache in front
 * maps a job context (the index entries its values hit) to the entry it led
 * to, by slot and id, so an evicted entry is noticed rather than read: at
 * 10,000 rules a context hit skips the 8-way AND and halves a match's cost. */
#include "matcher.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "err.h"
#include "sbuf.h"
#include "vec.h"

#define NATTR      8
#define CACHE_WAYS 8
#define CACHE_SETS (DLB_MATCHER_CACHE_ENTRIES / CACHE_WAYS)
/* The context cache: what the job's attributes hit in the index (an entry or
 * none per attribute, and the patterns they match) decides the rule set, so
 * jobs that hit the same entries share it without intersecting bitsets
 * again. Direct-mapped; a context of more than SIG_MAX words is not cached. */
#define SIG_SLOTS 16384
#define SIG_MAX   30
#define ARENA_MIN 65536
#define NONE      UINT32_MAX

enum { INC = 0, EXC = 1 };

/* The attributes are event.h's dlb_meta_attr_names; the index is the bit in
 * crule_t.named. */

/* Copies of the rules' strings and small arrays, freed at once. */
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(8) char data[];
} chunk_t;

typedef struct cond {
    int attr;
    const char **values;
    size_t cnt;
} cond_t;

/* A JSON object of a Configure value as written: each member's key and value
 * keep their source text, so a merge prints them unchanged (cJSON would
 * print a parsed 1.0 as 1, a 23-digit integer as a double). */
typedef struct jmember jmember_t;
typedef struct jobj {
    const jmember_t *m;
    size_t cnt;
} jobj_t;

struct jmember {
    const char *key;      /* decoded: what merges compare */
    const char *key_json; /* as written, quotes included */
    size_t key_len;
    const char *text; /* the value as written */
    size_t len;
    const jobj_t *obj; /* the value's members when it is an object */
};

typedef struct cfg {
    const char *key; /* in the matcher's key table */
    uint32_t rank;   /* the key's bytewise rank */
    const char *json;
    const jobj_t *obj; /* when the value is an object */
} cfg_t;

typedef struct crule {
    const char *id;
    int priority;
    unsigned spec;    /* attributes named in Include and Exclude */
    size_t order;     /* index in the applied rule set */
    uint8_t named[2]; /* bit a: the side names attribute a */
    cond_t *conds[2];
    size_t conds_cnt[2];
    cfg_t *cfg; /* into dlb_matcher.cfgs */
    size_t cfg_cnt;
} crule_t;

typedef struct posting {
    uint32_t *rules; /* ascending */
    uint32_t cnt, cap;
    uint64_t *term; /* frequent exact values: free | rules */
    uint64_t *bits; /* frequent patterns: the rules */
} posting_t;

typedef struct vent {
    const char *value;
    size_t len;
    int pattern;
    int prefix_only; /* the pattern is a literal then one '*' */
    size_t lit_len;  /* pattern bytes before the first special character */
    posting_t side[2];
} vent_t;

typedef struct vslot {
    uint32_t hash; /* high half of the value's hash */
    uint32_t ent;  /* index + 1; 0: empty */
} vslot_t;

typedef struct vtable {
    vslot_t *slots;
    size_t mask;
    vent_t *ents;
    size_t cnt, cap;
    uint32_t *pats; /* the pattern entries, by the first byte of their literal prefix */
    size_t pats_cnt;
    uint32_t pat_off[258]; /* bucket b (first byte b; 256: none) is pats[from..pat_off[b]),
                              from = pat_off[b - 1] or 0 */
} vtable_t;

typedef struct centry {
    uint64_t id;  /* unique per entry made, so a context slot can tell it was evicted */
    uint64_t *zx; /* the rule set: its non-zero bitset words */
    uint32_t *zw; /* and their indexes */
    size_t nz;
    dlb_match_t res;
    char **owned; /* printed merged values */
    size_t owned_cnt;
} centry_t;

typedef struct kstate {
    uint32_t src;        /* rule that set the value (the highest) */
    uint32_t head, tail; /* chain of object values from src down, in dlb_matcher.cfgs */
    uint32_t len;
    int open; /* lower objects still merge in */
} kstate_t;

/* A context slot: a job context (sig) and the rule set cache entry it led to
 * (slot and id: the entry may have been evicted since), or to no rule. */
typedef struct sigslot {
    uint64_t hash;
    uint64_t id;   /* the entry's id; 0: no rule in scope */
    uint32_t slot; /* index in dlb_matcher.cache */
    uint32_t n;    /* words in sig; 0: empty slot */
    uintptr_t sig[SIG_MAX];
} sigslot_t;

/* What a match knows about the job, attribute by attribute. */
typedef struct jctx {
    const vent_t *ent[NATTR]; /* the exact value's entry, NULL if none */
    const vent_t **pm[NATTR]; /* the patterns it matches */
    size_t pm_cnt[NATTR];
} jctx_t;

struct dlb_matcher {
    crule_t *rules; /* by precedence */
    size_t nrules, nwords;
    cfg_t *cfgs;
    size_t cfgs_cnt;
    const char **keys; /* distinct Configure keys, sorted */
    size_t keys_cnt;
    vtable_t attrs[NATTR];
    uint64_t *free_bits[2][NATTR];
    uint64_t *all, *has_ex;
    int any_ex;
    uint64_t *pscratch[NATTR]; /* a term with dense pattern bits OR'ed in */
    chunk_t *arena;

    /* match scratch */
    uint64_t *acc;
    uint32_t *stamp, *fix, *idx;
    uint8_t *hit;
    uint32_t epoch;
    const vent_t **pm_buf;
    /* Packed copies of what matching reads per rule, off the cold crule_t:
     * named[s][r] = rules[r].named[s]; ids[r] = rules[r].id; rule r's values
     * are cfgs[cfg_off[r] .. cfg_off[r + 1]) (cfgs in precedence order). */
    uint8_t *named[2];
    const char **ids;
    uint32_t *cfg_off;
    kstate_t *kst;
    uint64_t *kseen; /* bitset of the key ranks set: their order is sorted order */
    uint32_t *cnext, *chain;

    /* Set i is slots i * CACHE_WAYS ..; hashes and last uses apart from the
     * entries, so looking up a set reads one line of hashes, not every entry. */
    centry_t *cache[DLB_MATCHER_CACHE_ENTRIES];
    uint64_t chash[DLB_MATCHER_CACHE_ENTRIES];
    uint64_t cused[DLB_MATCHER_CACHE_ENTRIES];
    centry_t *scan;
    uint64_t clock, next_id;
    sigslot_t *sigs; /* SIG_SLOTS */
    dlb_matcher_stats_t stats;
};

/* ---- small helpers ------------------------------------------------------- */

static void *arena_alloc(chunk_t **a, size_t n)
{
    char *p;

    n = (n + 7) & ~(size_t)7;
    if (!*a || (*a)->cap - (*a)->used < n) {
        size_t cap = n > ARENA_MIN ? n : ARENA_MIN;
        chunk_t *c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->next = *a;
        c->used = 0;
        c->cap = cap;
        *a = c;
    }
    p = (*a)->data + (*a)->used;
    (*a)->used += n;
    return p;
}

static char *arena_strdup(chunk_t **a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);

    if (p)
        memcpy(p, s, n);
    return p;
}

/* calloc that never asks for 0 bytes (which may give NULL). */
static void *zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

/* 8 bytes at a time: job names share long prefixes ("ctr-app-017-..."), so
 * every byte must count. (glibc's hsearch_r hashes only about the first 8
 * characters and takes microseconds per lookup on such names.) */
static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 29;
    }
    if (n) {
        w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
    }
    h ^= h >> 32;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 29);
}

static int bit(const uint64_t *b, uint32_t r)
{
    return (int)((b[r >> 6] >> (r & 63)) & 1);
}

static void set_bit(uint64_t *b, uint32_t r)
{
    b[r >> 6] |= (uint64_t)1 << (r & 63);
}

static int is_pattern(const char *v)
{
    return strpbrk(v, "*?[") != NULL;
}

/* fnmatch(3) without flags, as matcher.h says. */
static int value_matches(const char *rule_value, const char *job_value)
{
    if (!*job_value || !*rule_value)
        return 0;
    if (is_pattern(rule_value))
        return fnmatch(rule_value, job_value, 0) == 0;
    return strcmp(rule_value, job_value) == 0;
}

/* The same answer for a compiled pattern, cheaper: without flags fnmatch
 * compares the bytes before the first '*', '?', '[' or '\\' literally, and
 * "literal*" means exactly "starts with literal". */
static int pattern_matches(const vent_t *p, const char *v, size_t len)
{
    /* The first byte inline: most patterns fail there, no call needed. */
    if (len < p->lit_len ||
        (p->lit_len && (v[0] != p->value[0] || memcmp(v, p->value, p->lit_len))))
        return 0;
    return p->prefix_only || fnmatch(p->value, v, 0) == 0;
}

static int prec_cmp(const void *pa, const void *pb)
{
    const crule_t *a = pa, *b = pb;

    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->spec != b->spec)
        return a->spec > b->spec ? -1 : 1;
    return a->order > b->order ? -1 : a->order < b->order;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- JSON -------------------------------------------------------------- */

/* Whitespace as cJSON skips it (every byte up to ' '), so the walk below
 * agrees with the parse that checked the text. */
static const char *skip_ws(const char *p)
{
    while (*p && (unsigned char)*p <= ' ')
        p++;
    return p;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(((const jmember_t *)a)->key, ((const jmember_t *)b)->key);
}

/* The object at *pp (valid JSON, checked before; the text ends at lim), into
 * the arena, *pp moved past it. cJSON parses each key and each member value
 * from where it starts to find where it ends. @returns 0, DLB_ERR_NOMEM, or
 * DLB_ERR_INVALID for a key that occurs twice (no merge order for it). */
static int parse_object(chunk_t **arena, const char **pp, const char *lim, const jobj_t **out)
{
    const char *p = skip_ws(*pp) + 1, *end;
    jmember_t *mem = NULL, *tmp, *sorted = NULL;
    size_t cnt = 0, cap = 0;
    jobj_t *o;
    int err = DLB_ERR_NOMEM;

    for (;;) {
        jmember_t *jm;
        cJSON *item;
        p = skip_ws(p);
        if (*p == '}')
            break;
        if (*p == ',')
            p = skip_ws(p + 1);
        if (dlb_vec_reserve((void **)&mem, &cap, cnt + 1, sizeof(*mem)))
            goto out;
        jm = &mem[cnt++];
        memset(jm, 0, sizeof(*jm));
        if (!(item = cJSON_ParseWithLengthOpts(p, (size_t)(lim - p), &end, 0)))
            goto out;
        jm->key = arena_strdup(arena, item->valuestring);
        cJSON_Delete(item);
        jm->key_json = p;
        jm->key_len = (size_t)(end - p);
        if (!jm->key)
            goto out;
        p = skip_ws(skip_ws(end) + 1); /* past ':' */
        jm->text = p;
        if (*p == '{') {
            if ((err = parse_object(arena, &p, lim, &jm->obj)))
                goto out;
            err = DLB_ERR_NOMEM;
        } else {
            if (!(item = cJSON_ParseWithLengthOpts(p, (size_t)(lim - p), &end, 0)))
                goto out;
            cJSON_Delete(item);
            p = end;
        }
        jm->len = (size_t)(p - jm->text);
    }
    if (cnt && !(sorted = malloc(cnt * sizeof(*sorted))))
        goto out;
    if (cnt)
        memcpy(sorted, mem, cnt * sizeof(*mem));
    if (cnt)
        qsort(sorted, cnt, sizeof(*sorted), key_cmp);
    for (size_t i = 1; i < cnt; i++)
        if (!strcmp(sorted[i - 1].key, sorted[i].key)) {
            err = DLB_ERR_INVALID;
            goto out;
        }
    if (!(o = arena_alloc(arena, sizeof(*o))) ||
        !(tmp = arena_alloc(arena, (cnt ? cnt : 1) * sizeof(*mem))))
        goto out;
    if (cnt)
        memcpy(tmp, mem, cnt * sizeof(*mem));
    o->m = tmp;
    o->cnt = cnt;
    *out = o;
    *pp = p + 1;
    err = 0;
out:
    free(mem);
    free(sorted);
    return err;
}

static const jmember_t *member(const jobj_t *o, const char *key)
{
    for (size_t i = 0; i < o->cnt; i++)
        if (!strcmp(o->m[i].key, key))
            return &o->m[i];
    return NULL;
}

/* Prints the merge of objects objs[0] (lowest) .. objs[cnt-1] (highest):
 * members in the order they first appear going up; each one's value is the
 * highest object's, merged with the object values right below it as long as
 * they are objects (a non-object replaced everything lower). */
static int print_merged(dlb_sbuf_t *b, const jobj_t *const *objs, size_t cnt)
{
    const jobj_t **sub = malloc(cnt * sizeof(*sub));
    int err = DLB_ERR_NOMEM, first = 1;

    if (!sub || dlb_sbuf_put(b, "{", 1))
        goto out;
    for (size_t i = 0; i < cnt; i++)
        for (size_t k = 0; k < objs[i]->cnt; k++) {
            const char *key = objs[i]->m[k].key;
            const jmember_t *top = NULL, *jm;
            size_t n = 0, seen = 0, t;
            while (seen < i && !member(objs[seen], key))
                seen++;
            if (seen < i) /* printed with the lower object that has it */
                continue;
            for (t = cnt; !top;)
                top = member(objs[--t], key);
            for (size_t d = t + 1; d-- > i;)
                if ((jm = member(objs[d], key)) && jm->obj)
                    sub[n++] = jm->obj;
                else if (jm)
                    break;
            if ((!first && dlb_sbuf_put(b, ",", 1)) ||
                dlb_sbuf_put(b, top->key_json, top->key_len) || dlb_sbuf_put(b, ":", 1))
                goto out;
            first = 0;
            if (n < 2) {
                if (dlb_sbuf_put(b, top->text, top->len))
                    goto out;
                continue;
            }
            for (size_t lo = 0, hi = n - 1; lo < hi; lo++, hi--) { /* lowest first */
                const jobj_t *x = sub[lo];
                sub[lo] = sub[hi];
                sub[hi] = x;
            }
            if ((err = print_merged(b, sub, n)))
                goto out;
            err = DLB_ERR_NOMEM;
        }
    err = dlb_sbuf_put(b, "}", 1);
out:
    free(sub);
    return err;
}

/* ---- compiling ------------------------------------------------------------ */

static int attr_index(const char *name)
{
    for (int a = 0; a < NATTR; a++)
        if (!strcasecmp(name, dlb_meta_attr_names[a]))
            return a;
    return -1;
}

static int copy_conds(dlb_matcher_t *m, const dlb_rule_t *src, crule_t *r, int side, char *errstr,
                      size_t size)
{
    const dlb_rule_match_t *in = side == INC ? src->include : src->exclude;
    size_t cnt = side == INC ? src->include_cnt : src->exclude_cnt;
    const char *what = side == INC ? "Include" : "Exclude";
    cond_t *c;

    if (!cnt)
        return 0;
    if (!(c = arena_alloc(&m->arena, cnt * sizeof(*c))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cnt; i++) {
        int a = in[i].attr ? attr_index(in[i].attr) : -1;
        if (a < 0)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "rule %s: %s: unknown attribute \"%s\"", r->id, what,
                              in[i].attr ? in[i].attr : "");
        if (r->named[side] & (1u << a))
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "rule %s: %s: attribute %s named twice", r->id, what,
                              dlb_meta_attr_names[a]);
        r->named[side] |= (uint8_t)(1u << a);
        c[i].attr = a;
        c[i].cnt = in[i].values_cnt;
        if (!(c[i].values = arena_alloc(&m->arena, (c[i].cnt ? c[i].cnt : 1) * sizeof(char *))))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        for (size_t j = 0; j < c[i].cnt; j++)
            if (!(c[i].values[j] = arena_strdup(&m->arena, in[i].values[j] ? in[i].values[j] : "")))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    r->conds[side] = c;
    r->conds_cnt[side] = cnt;
    return 0;
}

/* One Configure value: checked to be JSON; an object also gets its members. */
static int copy_cfg(dlb_matcher_t *m, const crule_t *r, const dlb_config_value_t *in, cfg_t *out,
                    char *errstr, size_t size)
{
    const char *end = NULL, *p;
    cJSON *parsed;
    int is_obj, err = 0;

    if (!in->key || !in->json)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "rule %s: a Configure entry without %s",
                          r->id, in->key ? "a value" : "a key");
    if (!(parsed = cJSON_ParseWithOpts(in->json, &end, 1)))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "rule %s: Configure %s: not valid JSON (at byte %td)", r->id, in->key,
                          end ? end - in->json : (ptrdiff_t)0);
    is_obj = cJSON_IsObject(parsed);
    cJSON_Delete(parsed);
    if (!(out->key = arena_strdup(&m->arena, in->key)) ||
        !(out->json = arena_strdup(&m->arena, in->json)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    p = out->json;
    if (is_obj && (err = parse_object(&m->arena, &p, p + strlen(p), &out->obj)))
        return err == DLB_ERR_INVALID
                   ? dlb_seterr(errstr, size, err, "rule %s: Configure %s: a key occurs twice",
                                r->id, in->key)
                   : dlb_seterr(errstr, size, err, "out of memory");
    return 0;
}

static int copy_rules(dlb_matcher_t *m, const dlb_rules_t *rs, char *errstr, size_t size)
{
    size_t ncfg = 0, k = 0;
    int err;

    for (size_t i = 0; i < rs->cnt; i++)
        ncfg += rs->rules[i].configure_cnt;
    if (!(m->rules = zalloc(rs->cnt, sizeof(*m->rules))) ||
        !(m->cfgs = zalloc(ncfg, sizeof(*m->cfgs))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    m->nrules = rs->cnt;
    m->cfgs_cnt = ncfg;
    for (size_t i = 0; i < rs->cnt; i++) {
        const dlb_rule_t *src = &rs->rules[i];
        crule_t *r = &m->rules[i];

        if (!src->id)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "rule %zu has no id", i + 1);
        if (!(r->id = arena_strdup(&m->arena, src->id)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        r->priority = src->priority;
        r->order = i;
        r->spec = (unsigned)(src->include_cnt + src->exclude_cnt);
        if ((err = copy_conds(m, src, r, INC, errstr, size)) ||
            (err = copy_conds(m, src, r, EXC, errstr, size)))
            return err;
        r->cfg = &m->cfgs[k];
        r->cfg_cnt = src->configure_cnt;
        for (size_t j = 0; j < src->configure_cnt; j++, k++)
            if ((err = copy_cfg(m, r, &src->configure[j], &m->cfgs[k], errstr, size)))
                return err;
    }
    return 0;
}

/* The distinct Configure keys, sorted bytewise; each value gets its key's rank. */
static int rank_keys(dlb_matcher_t *m)
{
    const char **all = zalloc(m->cfgs_cnt, sizeof(*all));

    if (!all)
        return DLB_ERR_NOMEM;
    for (size_t i = 0; i < m->cfgs_cnt; i++)
        all[i] = m->cfgs[i].key;
    qsort(all, m->cfgs_cnt, sizeof(*all), str_cmp);
    for (size_t i = 0; i < m->cfgs_cnt; i++)
        if (!m->keys_cnt || strcmp(all[m->keys_cnt - 1], all[i]))
            all[m->keys_cnt++] = all[i];
    m->keys = all;
    for (size_t i = 0; i < m->cfgs_cnt; i++) {
        const char **k = bsearch(&m->cfgs[i].key, all, m->keys_cnt, sizeof(*all), str_cmp);
        m->cfgs[i].rank = (uint32_t)(k - all);
        m->cfgs[i].key = *k;
    }
    return 0;
}

static const vent_t *vt_find(const vtable_t *t, const char *s, size_t n, uint64_t h)
{
    if (!t->slots)
        return NULL;
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        const vslot_t *sl = &t->slots[i];
        const vent_t *e;
        if (!sl->ent)
            return NULL;
        e = &t->ents[sl->ent - 1];
        if (sl->hash == (uint32_t)(h >> 32) && e->len == n && !memcmp(e->value, s, n))
            return e;
    }
}

static void vt_place(vtable_t *t, uint64_t h, uint32_t ent)
{
    size_t i = h & t->mask;

    while (t->slots[i].ent)
        i = (i + 1) & t->mask;
    t->slots[i].hash = (uint32_t)(h >> 32);
    t->slots[i].ent = ent + 1;
}

/* Linear probing kept at most half full. */
static int vt_grow(vtable_t *t)
{
    size_t cap = t->slots ? 2 * (t->mask + 1) : 64;
    vslot_t *old = t->slots;
    size_t old_cap = old ? t->mask + 1 : 0;

    if (!(t->slots = calloc(cap, sizeof(*t->slots)))) {
        t->slots = old;
        return DLB_ERR_NOMEM;
    }
    t->mask = cap - 1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].ent) {
            const vent_t *e = &t->ents[old[i].ent - 1];
            vt_place(t, str_hash(e->value, e->len), old[i].ent - 1);
        }
    free(old);
    return 0;
}

/* The entry of value s, added if new. @returns its index, or -1. */
static long vt_get(vtable_t *t, const char *s)
{
    size_t n = strlen(s);
    uint64_t h = str_hash(s, n);
    const vent_t *found = vt_find(t, s, n, h);
    vent_t *e;

    if (found)
        return found - t->ents;
    if ((t->cnt + 1 > (t->slots ? (t->mask + 1) / 2 : 0) && vt_grow(t)))
        return -1;
    if (dlb_vec_reserve((void **)&t->ents, &t->cap, t->cnt + 1, sizeof(*t->ents)))
        return -1;
    e = &t->ents[t->cnt];
    memset(e, 0, sizeof(*e));
    e->value = s; /* the rule's copy, in the arena */
    e->len = n;
    if ((e->pattern = is_pattern(s))) {
        e->lit_len = strcspn(s, "*?[\\");
        e->prefix_only = s[e->lit_len] == '*' && !s[e->lit_len + 1];
    }
    vt_place(t, h, (uint32_t)t->cnt);
    return (long)t->cnt++;
}

static int posting_add(posting_t *p, uint32_t r)
{
    if (p->cnt && p->rules[p->cnt - 1] == r) /* the value listed twice */
        return 0;
    if (p->cnt == p->cap) {
        uint32_t cap = p->cap ? 2 * p->cap : 4;
        uint32_t *rules = realloc(p->rules, cap * sizeof(*rules));
        if (!rules)
            return DLB_ERR_NOMEM;
        p->rules = rules;
        p->cap = cap;
    }
    p->rules[p->cnt++] = r;
    return 0;
}

/* Patterns go by the first byte of their literal prefix: a value need only
 * be tested against its own first byte's patterns, and those with none. */
static int pat_bucket(const vent_t *e)
{
    return e->lit_len ? (unsigned char)e->value[0] : 256;
}

static uint64_t *bits_new(const dlb_matcher_t *m)
{
    return calloc(m->nwords, sizeof(uint64_t));
}

static int build_index(dlb_matcher_t *m)
{
    /* A precomputed term costs nwords * 8 bytes and saves a few ns per rule
     * on every match: worth it from 2 rules at 1,000 (16 words), from 10 at
     * 10,000 (160 words). That bounds terms to 128 bytes per (value, rule)
     * listing, whatever the rule count. */
    size_t dense_min = m->nwords / 16 > 2 ? m->nwords / 16 : 2;

    if (!(m->all = bits_new(m)) || !(m->has_ex = bits_new(m)))
        return DLB_ERR_NOMEM;
    for (uint32_t r = 0; r < m->nrules; r++) {
        set_bit(m->all, r);
        if (m->rules[r].conds_cnt[EXC]) {
            set_bit(m->has_ex, r);
            m->any_ex = 1;
        }
    }
    /* free[s][a]: every rule, less those whose side s names a. */
    for (uint32_t r = 0; r < m->nrules; r++)
        for (int s = 0; s < 2; s++)
            for (int a = 0; a < NATTR; a++)
                if ((m->rules[r].named[s] >> a) & 1 && !m->free_bits[s][a]) {
                    if (!(m->free_bits[s][a] = bits_new(m)))
                        return DLB_ERR_NOMEM;
                    memcpy(m->free_bits[s][a], m->all, m->nwords * sizeof(uint64_t));
                }
    for (uint32_t r = 0; r < m->nrules; r++) {
        const crule_t *cr = &m->rules[r];
        for (int s = 0; s < 2; s++)
            for (size_t i = 0; i < cr->conds_cnt[s]; i++) {
                const cond_t *c = &cr->conds[s][i];
                vtable_t *t = &m->attrs[c->attr];
                m->free_bits[s][c->attr][r >> 6] &= ~((uint64_t)1 << (r & 63));
                for (size_t j = 0; j < c->cnt; j++) {
                    long e;
                    if (!*c->values[j]) /* matches no job */
                        continue;
                    if ((e = vt_get(t, c->values[j])) < 0 || posting_add(&t->ents[e].side[s], r))
                        return DLB_ERR_NOMEM;
                }
            }
    }
    for (int a = 0; a < NATTR; a++) {
        vtable_t *t = &m->attrs[a];
        if (!(t->pats = zalloc(t->cnt, sizeof(*t->pats))))
            return DLB_ERR_NOMEM;
        for (size_t i = 0; i < t->cnt; i++)
            if (t->ents[i].pattern)
                t->pat_off[pat_bucket(&t->ents[i]) + 1]++;
        for (int b = 0; b < 257; b++)
            t->pat_off[b + 1] += t->pat_off[b];
        for (size_t i = 0; i < t->cnt; i++) {
            vent_t *e = &t->ents[i];
            if (e->pattern) {
                /* Counting sort by bucket: pat_off[b] is bucket b's next slot
                 * until every pattern is placed, then bucket b+1's start. */
                t->pats[t->pat_off[pat_bucket(e)]++] = (uint32_t)i;
                t->pats_cnt++;
            }
            for (int s = 0; s < 2; s++) {
                posting_t *p = &e->side[s];
                uint64_t **bits = e->pattern ? &p->bits : &p->term;
                if (p->cnt < dense_min)
                    continue;
                if (!(*bits = bits_new(m)) ||
                    (e->pattern && !m->pscratch[a] && !(m->pscratch[a] = bits_new(m))))
                    return DLB_ERR_NOMEM;
                if (!e->pattern)
                    memcpy(p->term, m->free_bits[s][a], m->nwords * sizeof(uint64_t));
                for (uint32_t k = 0; k < p->cnt; k++)
                    set_bit(*bits, p->rules[k]);
            }
        }
    }
    return 0;
}

static int alloc_scratch(dlb_matcher_t *m)
{
    size_t pats = 0;

    for (int a = 0; a < NATTR; a++)
        pats += m->attrs[a].pats_cnt;
    if (!(m->acc = bits_new(m)) || !(m->stamp = zalloc(m->nrules, sizeof(*m->stamp))) ||
        !(m->fix = zalloc(m->nrules, sizeof(*m->fix))) ||
        !(m->idx = zalloc(m->nrules, sizeof(*m->idx))) ||
        !(m->hit = zalloc(m->nrules, sizeof(*m->hit))) ||
        !(m->pm_buf = zalloc(pats, sizeof(*m->pm_buf))) ||
        !(m->kst = zalloc(m->keys_cnt, sizeof(*m->kst))) ||
        !(m->kseen = zalloc(m->keys_cnt / 64 + 1, sizeof(*m->kseen))) ||
        !(m->named[INC] = zalloc(m->nrules, 1)) || !(m->named[EXC] = zalloc(m->nrules, 1)) ||
        !(m->ids = zalloc(m->nrules, sizeof(*m->ids))) ||
        !(m->cfg_off = zalloc(m->nrules + 1, sizeof(*m->cfg_off))) ||
        !(m->cnext = zalloc(m->cfgs_cnt, sizeof(*m->cnext))) ||
        !(m->chain = zalloc(m->cfgs_cnt, sizeof(*m->chain))))
        return DLB_ERR_NOMEM;
    return 0;
}

/* m->cfgs in precedence order, each rule's values together, so a rule set's
 * values are read from few places. */
static int order_cfgs(dlb_matcher_t *m)
{
    cfg_t *cfgs = zalloc(m->cfgs_cnt, sizeof(*cfgs));
    size_t k = 0;

    if (!cfgs)
        return DLB_ERR_NOMEM;
    for (size_t r = 0; r < m->nrules; r++) {
        if (m->rules[r].cfg_cnt)
            memcpy(&cfgs[k], m->rules[r].cfg, m->rules[r].cfg_cnt * sizeof(*cfgs));
        m->rules[r].cfg = &cfgs[k];
        k += m->rules[r].cfg_cnt;
    }
    free(m->cfgs);
    m->cfgs = cfgs;
    return 0;
}

int dlb_matcher_new(dlb_matcher_t **out, const dlb_rules_t *rules, char *errstr, size_t errstr_size)
{
    static const dlb_rules_t none = {NULL, 0};
    dlb_matcher_t *m;
    int err;

    *out = NULL;
    if (!rules)
        rules = &none;
    if (rules->cnt >= NONE)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%zu rules: too many", rules->cnt);
    if (!(m = calloc(1, sizeof(*m))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    /* Whole groups of 4 words, so the AND loops need no remainder. */
    m->nwords = ((rules->cnt + 255) / 256) * 4;
    if (!m->nwords)
        m->nwords = 4;
    if ((err = copy_rules(m, rules, errstr, errstr_size)))
        goto fail;
    qsort(m->rules, m->nrules, sizeof(*m->rules), prec_cmp);
    if ((err = order_cfgs(m))) {
        err = dlb_seterr(errstr, errstr_size, err, "out of memory");
        goto fail;
    }
    if ((err = rank_keys(m)) || (err = build_index(m)) || (err = alloc_scratch(m)) ||
        !(m->sigs = calloc(SIG_SLOTS, sizeof(*m->sigs)))) {
        err = err ? err : DLB_ERR_NOMEM;
        err = dlb_seterr(errstr, errstr_size, err, "out of memory");
        goto fail;
    }
    for (size_t r = 0; r < m->nrules; r++) {
        m->named[INC][r] = m->rules[r].named[INC];
        m->named[EXC][r] = m->rules[r].named[EXC];
        m->ids[r] = m->rules[r].id;
        m->cfg_off[r + 1] = m->cfg_off[r] + (uint32_t)m->rules[r].cfg_cnt;
    }
    *out = m;
    return 0;
fail:
    dlb_matcher_destroy(m);
    return err;
}

static void entry_free(centry_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->owned_cnt; i++)
        free(e->owned[i]);
    free(e);
}

void dlb_matcher_destroy(dlb_matcher_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < DLB_MATCHER_CACHE_ENTRIES; i++)
        entry_free(m->cache[i]);
    entry_free(m->scan);
    for (int a = 0; a < NATTR; a++) {
        vtable_t *t = &m->attrs[a];
        for (size_t i = 0; i < t->cnt; i++)
            for (int s = 0; s < 2; s++) {
                free(t->ents[i].side[s].rules);
                free(t->ents[i].side[s].term);
                free(t->ents[i].side[s].bits);
            }
        free(t->ents);
        free(t->slots);
        free(t->pats);
        free(m->free_bits[INC][a]);
        free(m->free_bits[EXC][a]);
        free(m->pscratch[a]);
    }
    free(m->cfgs);
    free(m->rules);
    free(m->keys);
    free(m->all);
    free(m->has_ex);
    free(m->acc);
    free(m->stamp);
    free(m->fix);
    free(m->idx);
    free(m->hit);
    free(m->pm_buf);
    free(m->kst);
    free(m->kseen);
    free(m->named[INC]);
    free(m->named[EXC]);
    free(m->ids);
    free(m->cfg_off);
    free(m->cnext);
    free(m->chain);
    free(m->sigs);
    while (m->arena) {
        chunk_t *next = m->arena->next;
        free(m->arena);
        m->arena = next;
    }
    free(m);
}

size_t dlb_matcher_rules(const dlb_matcher_t *m)
{
    return m->nrules;
}

void dlb_matcher_stats(const dlb_matcher_t *m, dlb_matcher_stats_t *out)
{
    *out = m->stats;
}

/* ---- matching ------------------------------------------------------------- */

/* A fresh epoch for the per-rule hit marks; stale marks are cleared on wrap. */
static void next_epoch(dlb_matcher_t *m)
{
    if (++m->epoch == 0) {
        memset(m->stamp, 0, m->nrules * sizeof(*m->stamp));
        m->epoch = 1;
    }
}

static void job_context(dlb_matcher_t *m, const dlb_job_meta_t *job, jctx_t *j)
{
    const vent_t **pm = m->pm_buf;

    for (int a = 0; a < NATTR; a++) {
        const vtable_t *t = &m->attrs[a];
        const char *v = dlb_meta_attr_c(job, (size_t)a);
        size_t len;

        j->ent[a] = NULL;
        j->pm[a] = pm;
        j->pm_cnt[a] = 0;
        if (!*v || !t->cnt)
            continue;
        len = strlen(v);
        j->ent[a] = vt_find(t, v, len, str_hash(v, len));
        if (j->ent[a] && j->ent[a]->pattern) /* a job value that looks like a pattern */
            j->ent[a] = NULL;
        /* The patterns whose literal prefix starts with v's first byte, and
         * those without one. */
        for (int k = 0; k < 2; k++) {
            int b = k ? 256 : (unsigned char)v[0];
            for (uint32_t i = b ? t->pat_off[b - 1] : 0; i < t->pat_off[b]; i++) {
                const vent_t *p = &t->ents[t->pats[i]];
                if (pattern_matches(p, v, len))
                    pm[j->pm_cnt[a]++] = p;
            }
        }
        pm += j->pm_cnt[a];
    }
}

/* Notes that the rules of p hit attribute a on the side being evaluated. */
static size_t mark(dlb_matcher_t *m, const posting_t *p, int a, size_t nfix)
{
    for (uint32_t i = 0; i < p->cnt; i++) {
        uint32_t r = p->rules[i];
        if (m->stamp[r] != m->epoch) {
            m->stamp[r] = m->epoch;
            m->hit[r] = 0;
            m->fix[nfix++] = r;
        }
        m->hit[r] |= (uint8_t)(1u << a);
    }
    return nfix;
}

/* The terms of side s for the job: term[a] is the bitset of the rules that
 * attribute a lets through (free, or the job value's precomputed term, with
 * the bits of frequent patterns it matches), NULL when no rule's side names
 * a. The rules that a rare value or pattern hits are not in those terms:
 * they are marked (m->fix, m->hit). @returns how many were marked. */
static size_t side_terms(dlb_matcher_t *m, int s, const jctx_t *j, const uint64_t *term[NATTR])
{
    size_t nfix = 0;

    next_epoch(m);
    for (int a = 0; a < NATTR; a++) {
        term[a] = m->free_bits[s][a];
        if (!term[a])
            continue;
        if (j->ent[a]) {
            const posting_t *p = &j->ent[a]->side[s];
            if (p->term)
                term[a] = p->term;
            else
                nfix = mark(m, p, a, nfix);
        }
        for (size_t i = 0; i < j->pm_cnt[a]; i++) {
            const posting_t *p = &j->pm[a][i]->side[s];
            if (!p->bits) {
                nfix = mark(m, p, a, nfix);
                continue;
            }
            if (term[a] != m->pscratch[a]) {
                memcpy(m->pscratch[a], term[a], m->nwords * sizeof(uint64_t));
                term[a] = m->pscratch[a];
            }
            for (size_t w = 0; w < m->nwords; w++)
                m->pscratch[a][w] |= p->bits[w];
        }
    }
    return nfix;
}

/* Whether rule r's side s holds for the job: every attribute it names is hit
 * by a mark of this epoch or lets r through in its term. */
static int side_holds(const dlb_matcher_t *m, int s, const uint64_t *const term[NATTR], uint32_t r)
{
    unsigned need = m->named[s][r] & ~(m->stamp[r] == m->epoch ? (unsigned)m->hit[r] : 0u);

    while (need && bit(term[__builtin_ctz(need)], r))
        need &= need - 1;
    return !need;
}

/* out = the AND of 8 bitsets, in one pass (words come in groups of 4). */
static void and8(uint64_t *restrict out, const uint64_t *const t[NATTR], size_t nwords)
{
    const uint64_t *restrict t0 = t[0], *restrict t1 = t[1], *restrict t2 = t[2],
                             *restrict t3 = t[3], *restrict t4 = t[4], *restrict t5 = t[5],
                             *restrict t6 = t[6], *restrict t7 = t[7];

#define AND8(k) out[k] = t0[k] & t1[k] & t2[k] & t3[k] & t4[k] & t5[k] & t6[k] & t7[k]
    /* Four statements, not an inner loop: so the compiler pairs them into
     * vector instructions. */
    for (size_t w = 0; w < nwords; w += 4) {
        AND8(w);
        AND8(w + 1);
        AND8(w + 2);
        AND8(w + 3);
    }
#undef AND8
}

/* One word of the rule set for its hash, which is the sum over the words:
 * each word mixed on its own (no chain of multiplies through the set, and
 * nothing to branch on). */
static uint64_t word_hash(uint64_t x, size_t w)
{
    uint64_t t = (x ^ (w * 0x9e3779b97f4a7c15ULL)) * 0xbf58476d1ce4e5b9ULL;

    return t ^ (t >> 32);
}

/* m->acc = the rules in scope. @returns the set's hash; *nz = its number of
 * non-zero words. */
static uint64_t in_scope(dlb_matcher_t *m, const jctx_t *j, size_t *nz)
{
    const uint64_t *term[NATTR], *t[NATTR];
    size_t nfix, z = 0;
    uint64_t h = 0;

    nfix = side_terms(m, INC, j, term);
    for (int a = 0; a < NATTR; a++)
        t[a] = term[a] ? term[a] : m->all;
    and8(m->acc, t, m->nwords);
    /* The marked rules, dropped by the terms, are back if Include holds. */
    for (size_t i = 0; i < nfix; i++)
        if (side_holds(m, INC, term, m->fix[i]))
            set_bit(m->acc, m->fix[i]);
    /* Exclude, rule by rule: few rules in scope have one. */
    if (m->any_ex)
        side_terms(m, EXC, j, term);
    for (size_t w = 0; w < m->nwords; w++) {
        uint64_t x = m->acc[w];
        uint64_t c = x & m->has_ex[w];
        if (c) {
            for (; c; c &= c - 1) {
                unsigned b = (unsigned)__builtin_ctzll(c);
                if (side_holds(m, EXC, term, (uint32_t)(w * 64 + b)))
                    x &= ~((uint64_t)1 << b);
            }
            m->acc[w] = x;
        }
        h += word_hash(x, w);
        z += x != 0;
    }
    *nz = z;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 29);
}

/* An entry for n rules, nk values and nz set words, in one block. */
static centry_t *entry_alloc(uint32_t n, size_t nk, size_t nz)
{
    size_t size = sizeof(centry_t) + n * sizeof(char *) + nk * sizeof(dlb_config_value_t) +
                  2 * nk * sizeof(char *) + nz * (sizeof(uint64_t) + sizeof(uint32_t));
    centry_t *e = malloc(size);
    char *p;

    if (!e)
        return NULL;
    /* The set first: a lookup reads it right after the header. */
    p = (char *)(e + 1);
    e->zx = (uint64_t *)p;
    p += nz * sizeof(uint64_t);
    e->res.rule_ids = (const char *const *)p;
    p += n * sizeof(char *);
    e->res.values = (const dlb_config_value_t *)p;
    p += nk * sizeof(dlb_config_value_t);
    e->res.sources = (const char *const *)p;
    p += nk * sizeof(char *);
    e->owned = (char **)p;
    p += nk * sizeof(char *);
    e->zw = (uint32_t *)p;
    e->id = 0;
    e->nz = nz;
    e->owned_cnt = 0;
    e->res.rule_ids_cnt = n;
    e->res.values_cnt = nk;
    return e;
}

/* The merge of the object values chain[cnt-1] (lowest) .. chain[0]
 * (highest), printed into a string of e's. */
static int merged_value(dlb_matcher_t *m, centry_t *e, const uint32_t *chain, size_t cnt,
                        dlb_config_value_t *v)
{
    const jobj_t **objs = malloc(cnt * sizeof(*objs));
    dlb_sbuf_t b = {0};
    int err = DLB_ERR_NOMEM;

    if (objs) {
        for (size_t i = 0; i < cnt; i++)
            objs[i] = m->cfgs[chain[cnt - 1 - i]].obj;
        err = print_merged(&b, objs, cnt);
    }
    free(objs);
    if (err) {
        free(b.p);
        return err;
    }
    e->owned[e->owned_cnt++] = b.p;
    v->json = b.p;
    return 0;
}

/* The result of rule set m->acc: per key, the highest rule's value, merged
 * with the object values right below it while they are objects (a
 * non-object in between replaced everything lower). */
static int entry_build(dlb_matcher_t *m, size_t nz, centry_t **out)
{
    size_t nk = 0, i = 0;
    uint32_t n = 0;
    centry_t *e;

    for (size_t w = 0; w < m->nwords; w++)
        for (uint64_t x = m->acc[w]; x; x &= x - 1)
            m->idx[n++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(x));
    /* The rules' values lie scattered over the matcher's memory, out of cache
     * for a rarely seen set: ask for all of them at once. */
    for (uint32_t j = 0; j < n; j++) {
        __builtin_prefetch(&m->cfgs[m->cfg_off[m->idx[j]]]);
        __builtin_prefetch(&m->ids[m->idx[j]]);
    }
    for (uint32_t j = 0; j < n; j++) {
        /* Backwards: should a rule repeat a key, its later value wins. */
        for (uint32_t g = m->cfg_off[m->idx[j] + 1]; g-- > m->cfg_off[m->idx[j]];) {
            const cfg_t *cf = &m->cfgs[g];
            kstate_t *ks = &m->kst[cf->rank];
            if (!bit(m->kseen, cf->rank)) {
                set_bit(m->kseen, cf->rank);
                *ks = (kstate_t){
                    .src = m->idx[j], .head = g, .tail = g, .len = 1, .open = cf->obj != NULL};
                m->cnext[g] = NONE;
                nk++;
            } else if (ks->open && cf->obj) {
                m->cnext[ks->tail] = g;
                m->cnext[g] = NONE;
                ks->tail = g;
                ks->len++;
            } else {
                ks->open = 0;
            }
        }
    }
    e = entry_alloc(n, nk, nz);
    for (size_t w = 0, z = 0; e && w < m->nwords; w++)
        if (m->acc[w]) {
            e->zx[z] = m->acc[w];
            e->zw[z++] = (uint32_t)w;
        }
    for (uint32_t j = 0; e && j < n; j++)
        ((const char **)e->res.rule_ids)[j] = m->ids[m->idx[j]];
    /* The keys in rank order, clearing the bitset for the next build. */
    for (size_t w = 0; w <= m->keys_cnt / 64; w++)
        for (uint64_t x = m->kseen[w]; x; x &= x - 1) {
            uint32_t k = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(x));
            const kstate_t *ks = &m->kst[k];
            dlb_config_value_t *v;
            size_t len = 0;
            m->kseen[w] &= x - 1;
            if (!e)
                continue;
            v = (dlb_config_value_t *)&e->res.values[i];
            v->key = (char *)m->keys[k];
            ((const char **)e->res.sources)[i++] = m->ids[ks->src];
            if (ks->len == 1) {
                v->json = (char *)m->cfgs[ks->head].json;
                continue;
            }
            for (uint32_t g = ks->head; g != NONE; g = m->cnext[g])
                m->chain[len++] = g;
            if (merged_value(m, e, m->chain, len, v)) {
                entry_free(e);
                e = NULL;
            }
        }
    *out = e;
    return e ? 0 : DLB_ERR_NOMEM;
}

/* e holds the rule set in m->acc, whose non-zero words number nz. */
static int entry_is(const centry_t *e, const dlb_matcher_t *m, size_t nz)
{
    if (e->nz != nz)
        return 0;
    /* Equal counts of non-zero words: equal sets if all of e's are in acc. */
    for (size_t i = 0; i < nz; i++)
        if (m->acc[e->zw[i]] != e->zx[i])
            return 0;
    return 1;
}

/* The cached result of rule set m->acc, made on a miss in place of the
 * set's least recently used entry. */
static int cache_get(dlb_matcher_t *m, uint64_t h, size_t nz, centry_t **out, uint32_t *slot)
{
    size_t base = (h & (CACHE_SETS - 1)) * CACHE_WAYS, victim = base;
    int err;

    for (size_t i = base; i < base + CACHE_WAYS; i++) {
        if (m->cache[i] && m->chash[i] == h && entry_is(m->cache[i], m, nz)) {
            m->cused[i] = ++m->clock;
            m->stats.cache_hits++;
            *out = m->cache[i];
            *slot = (uint32_t)i;
            return 0;
        }
        if (m->cused[i] < m->cused[victim]) /* an empty slot's is 0 */
            victim = i;
    }
    if ((err = entry_build(m, nz, out)))
        return err;
    m->stats.cache_misses++;
    if (m->cache[victim]) {
        entry_free(m->cache[victim]);
        m->stats.cache_evictions++;
    } else {
        m->stats.cache_entries++;
    }
    (*out)->id = ++m->next_id;
    *slot = (uint32_t)victim;
    m->cache[victim] = *out;
    m->chash[victim] = h;
    m->cused[victim] = ++m->clock;
    return 0;
}

/* The job context as words: per attribute the exact entry (or 0), the
 * number of patterns matched, and those patterns. @returns the words, or 0
 * when they do not fit in SIG_MAX. */
static uint32_t job_sig(const jctx_t *j, uintptr_t *sig, uint64_t *hash)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    uint32_t n = 0;

    for (int a = 0; a < NATTR; a++) {
        if (n + 2 + j->pm_cnt[a] > SIG_MAX)
            return 0;
        sig[n++] = (uintptr_t)j->ent[a];
        sig[n++] = (uintptr_t)j->pm_cnt[a];
        for (size_t i = 0; i < j->pm_cnt[a]; i++)
            sig[n++] = (uintptr_t)j->pm[a][i];
    }
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (uint64_t)sig[i]) * 0xbf58476d1ce4e5b9ULL;
    *hash = h ^ (h >> 31);
    return n;
}

/* The result a context led to before, if its entry is still cached. */
static int sig_get(dlb_matcher_t *m, const sigslot_t *s, const uintptr_t *sig, uint32_t n,
                   uint64_t h, dlb_match_t *res)
{
    if (s->n != n || s->hash != h || memcmp(s->sig, sig, n * sizeof(*sig)))
        return 0;
    if (!s->id) {
        memset(res, 0, sizeof(*res));
        return 1;
    }
    if (!m->cache[s->slot] || m->cache[s->slot]->id != s->id)
        return 0;
    m->cused[s->slot] = ++m->clock;
    *res = m->cache[s->slot]->res;
    return 1;
}

int dlb_matcher_match(dlb_matcher_t *m, const dlb_job_meta_t *job, dlb_match_t *res)
{
    uintptr_t sig[SIG_MAX];
    uint64_t h, sh = 0;
    uint32_t n, slot = 0;
    size_t nz;
    centry_t *e = NULL;
    sigslot_t *s;
    jctx_t j;
    int err;

    job_context(m, job, &j);
    m->stats.matches++;
    n = job_sig(&j, sig, &sh);
    s = &m->sigs[sh & (SIG_SLOTS - 1)];
    if (n && sig_get(m, s, sig, n, sh, res)) {
        m->stats.cache_hits++;
        return 0;
    }
    h = in_scope(m, &j, &nz);
    memset(res, 0, sizeof(*res));
    if (nz) {
        if ((err = cache_get(m, h, nz, &e, &slot)))
            return err;
        *res = e->res;
    }
    if (n) {
        s->hash = sh;
        s->n = n;
        memcpy(s->sig, sig, n * sizeof(*sig));
        s->id = e ? e->id : 0;
        s->slot = slot;
    }
    return 0;
}

/* ---- the plain way ---------------------------------------------------------- */

static int conds_hold(const crule_t *r, int s, const dlb_job_meta_t *job)
{
    for (size_t i = 0; i < r->conds_cnt[s]; i++) {
        const cond_t *c = &r->conds[s][i];
        const char *v = dlb_meta_attr_c(job, c->attr);
        size_t j = 0;
        while (j < c->cnt && !value_matches(c->values[j], v))
            j++;
        if (j == c->cnt)
            return 0;
    }
    return 1;
}

/* A key as the plain way applies the values of the rules in scope, from the
 * lowest to the highest: the value on top, the rule that set it, and how
 * many object values lie merged under it (chained by dlb_matcher.cnext). */
typedef struct scan_key {
    uint32_t top, src, objs;
} scan_key_t;

int dlb_matcher_match_scan(dlb_matcher_t *m, const dlb_job_meta_t *job, dlb_match_t *res)
{
    scan_key_t *keys = zalloc(m->keys_cnt, sizeof(*keys));
    uint32_t *in = zalloc(m->nrules, sizeof(*in)), n = 0;
    size_t nk = 0;
    centry_t *e = NULL;
    int err = DLB_ERR_NOMEM;

    entry_free(m->scan);
    m->scan = NULL;
    memset(res, 0, sizeof(*res));
    if (!keys || !in)
        goto out;
    for (size_t k = 0; k < m->keys_cnt; k++)
        keys[k].top = NONE;
    /* m->rules is in precedence order already. */
    for (uint32_t r = 0; r < m->nrules; r++)
        if (conds_hold(&m->rules[r], INC, job) &&
            !(m->rules[r].conds_cnt[EXC] && conds_hold(&m->rules[r], EXC, job)))
            in[n++] = r;
    for (uint32_t i = n; i-- > 0;)
        for (size_t c = 0; c < m->rules[in[i]].cfg_cnt; c++) {
            const cfg_t *cf = &m->rules[in[i]].cfg[c];
            scan_key_t *k = &keys[cf->rank];
            uint32_t g = (uint32_t)(cf - m->cfgs);
            nk += k->top == NONE;
            /* An object on an object merges; anything else replaces. */
            k->objs = cf->obj ? k->objs + 1 : 0;
            m->cnext[g] = k->top;
            k->top = g;
            k->src = in[i];
        }
    if (!(e = entry_alloc(n, nk, 0)))
        goto out;
    for (uint32_t i = 0; i < n; i++)
        ((const char **)e->res.rule_ids)[i] = m->rules[in[i]].id;
    nk = 0;
    for (size_t k = 0; k < m->keys_cnt; k++) {
        dlb_config_value_t *v = (dlb_config_value_t *)&e->res.values[nk];
        if (keys[k].top == NONE)
            continue;
        v->key = (char *)m->keys[k];
        v->json = (char *)m->cfgs[keys[k].top].json;
        ((const char **)e->res.sources)[nk++] = m->rules[keys[k].src].id;
        if (keys[k].objs < 2)
            continue;
        for (uint32_t i = 0, g = keys[k].top; i < keys[k].objs; i++, g = m->cnext[g])
            m->chain[i] = g;
        if (merged_value(m, e, m->chain, keys[k].objs, v))
            goto out;
    }
    m->scan = e;
    e = NULL;
    *res = m->scan->res;
    if (!n)
        memset(res, 0, sizeof(*res));
    err = 0;
out:
    free(keys);
    free(in);
    entry_free(e);
    return err;
}
