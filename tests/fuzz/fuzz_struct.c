/* libFuzzer target with a structure-aware mutator (issue 18): valid framed
 * messages of every schema, changed where a producer could get them wrong,
 * run through what a consumer does with a record.
 *
 * The mutator (LLVMFuzzerCustomMutator) parses its input as a framed message
 * of a catalog schema (fuzz_tree.h), changes a few values and writes it back:
 * list and map counts (zero, one more or less, a list's limit and one past
 * it, counts that lie about their items, the block forms of the spec),
 * duplicate map keys, strings (invalid UTF-8, NUL, ':' '%' '*' as in Redis
 * keys and rule patterns, a multi-byte character across a buffer's edge,
 * lengths at every bound, lengths that lie), numbers at their extremes
 * (INT64_MIN/MAX, NaN, infinities, negative and far-future times), union
 * branches (another, or past the last) and the schema id (another version,
 * another type, the values carried over by field name; or an id the catalog
 * lacks). Input it cannot parse goes to libFuzzer's own byte mutator, and so
 * does one call in eight.
 *
 * The body runs what the stream and its roles run on a record, without
 * servers: decode, validate (a failure is the DLQ), then by type the job
 * state fold (dlb_job_state_apply) into a state that already holds a job,
 * samples and OOMs of the same uid, the Redis key and the merged job event
 * the cache stores, the router's plans for a request of the job (both
 * optimizer sets), the configurer's match for a job's meta or a config
 * request, and the limits clamp of a plan.
 *
 * Properties, besides no crash, leak, undefined behaviour or allocation past
 * -malloc_limit_mb / -rss_limit_mb (scripts/fuzz):
 *  - a decode failure is framing, schema_id or decode, with a message and no
 *    event left behind; a decoded event has its schema id's type;
 *  - a validation failure is invalid, with a message; a valid event survives
 *    the Avro round trip (fuzz_common.h);
 *  - folding keeps a state's invariants (pods sorted and unique, at most
 *    DLB_JOB_PODS_MAX; the window in (time, id) order, unique, at most its
 *    size) and folding the same event again changes nothing;
 *  - the merged job event validates and survives the Avro round trip;
 *  - every output (a plan, a config match, a clamped plan) validates and
 *    survives the Avro round trip: what we publish, we and our subscribers
 *    can read back. */
#include "fuzz_common.h"
#include "fuzz_tree.h"

#include <float.h>
#include <math.h>

#include "cache_redis.h"
#include "conf.h"
#include "configurer.h"
#include "matcher.h"
#include "optimizer.h"
#include "rules.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* ==== the mutator ========================================================= */

typedef struct mut {
    arena_t a;
    uint64_t rng;
    dlb_event_type_t type; /* the writer schema's: where list limits come from */
    node_t *root;
    node_t **refs; /* every node of root, preorder */
    size_t nrefs;
} mut_t;

static uint64_t rnd64(mut_t *m)
{
    /* splitmix64: libFuzzer's seed decides every choice, so a run replays. */
    uint64_t z = (m->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t rnd(mut_t *m, size_t n)
{
    return n ? (size_t)(rnd64(m) % n) : 0;
}

#define COUNT(a)   (sizeof(a) / sizeof((a)[0]))
#define PICK(m, a) ((a)[rnd((m), COUNT(a))])

/* Times: before the epoch, its first millisecond, now-ish, and far ahead
 * (year 2100, year 9999, past 2^53 where a JSON double stops being exact). */
static const int64_t longs[] = {
    0,
    1,
    -1,
    2,
    INT64_MIN,
    INT64_MIN + 1,
    INT64_MAX,
    INT64_MAX - 1,
    INT32_MIN,
    INT32_MAX,
    (int64_t)INT32_MAX + 1,
    (int64_t)UINT32_MAX + 1,
    (int64_t)1 << 53,
    ((int64_t)1 << 53) + 1,
    -((int64_t)1 << 53) - 1,
    (int64_t)1 << 62,
    1700000000000LL,
    4102444800000LL,
    253402300799999LL,
    1000000000000000000LL,
    6144 * DLB_MIB,
    65536 * DLB_MIB,
    65536 * DLB_MIB + 1,
    DLB_GIB,
    (int64_t)1 << 40,
};

static const int32_t ints[] = {0, 1, -1, 2, 15, 16, 60, 61, 100, 1024, INT32_MIN, INT32_MAX};

static const char *const strs[] = {
    "",
    "a",
    "0",
    /* Redis keys (<env>:job:<uid>:rt) and rule patterns */
    ":",
    "x:rt",
    "job:x:pods",
    "%",
    "%3A",
    "%%s%n",
    "*",
    "?",
    "[",
    "[a-m]*",
    "ctr-*",
    "..",
    "/",
    " ",
    /* JSON texts and their breakage */
    "{}",
    "{\"a\":1}",
    "{\"o\":{\"y\":[1,2]}}",
    "[1,2]",
    "null",
    "{",
    "\"",
    "\\",
    "1e999",
    "-0",
    DLB_CONFIG_WORKER_PHASE,
    "initial",
    "sample",
    "stable",
    /* valid UTF-8 of 2, 3 and 4 bytes, a BOM, U+2028, U+FFFF, U+10FFFF */
    "\xc3\xa9",
    "\xe4\xb8\xad\xe6\x96\x87",
    "\xf0\x9f\x98\x80",
    "\xef\xbb\xbf",
    "\xe2\x80\xa8",
    "\xef\xbf\xbf",
    "\xf4\x8f\xbf\xbf",
    /* not UTF-8: overlong NUL, a surrogate, past U+10FFFF, a lone
     * continuation byte, a cut sequence, bytes that never occur */
    "\xc0\x80",
    "\xed\xa0\x80",
    "\xf4\x90\x80\x80",
    "\x80",
    "\xe2\x82",
    "\xff",
    "\xf8\x88\x80\x80\x80",
    /* control characters, terminal escapes, quoting */
    "\n",
    "\r\n",
    "\t",
    "\x1b[31m",
    "'",
    "' OR '1'='1",
    "Pending",
    "Running",
    "Failed",
    "Ready",
    "NotReady",
};

/* Multi-byte characters to fill a string up to a bound with, so that the
 * bound falls inside one. */
static const char *const fills[] = {"x", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "%", ":"};

/* Lengths at the edges of the fixed buffers (event.h, state.h) and of the
 * derived ids ("plan-" + event id, "cfg-" + trigger id), then the heap
 * texts' bounds, rarely: they make big inputs. */
static const size_t lens_small[] = {15,  16,  31,  32,  47,  48,  63,   64,   121,  122, 123,
                                    124, 126, 127, 128, 255, 256, 1023, 1024, 1025, 4096};
static const size_t lens_big[] = {65536, DLB_TEXT_MAX, DLB_TEXT_MAX + 1};

/* A string from the lists of allowed values the validator knows. */
static const char *known_value(mut_t *m)
{
    static const char *const actions[] = {DLB_ACTION_RELAUNCH, DLB_ACTION_REPLACE, NULL};
    const char *const *const lists[] = {dlb_stages,     dlb_job_states, dlb_exit_reasons,
                                        dlb_node_kinds, dlb_pod_types,  actions};
    const char *const *l = PICK(m, lists);
    size_t n = 0;

    while (l[n])
        n++;
    return l[rnd(m, n)];
}

static int set_str(mut_t *m, node_t *x, const void *s, size_t len)
{
    uint8_t *d = ar_alloc(&m->a, len + 1);

    if (!d)
        return -1;
    if (len)
        memcpy(d, s, len);
    x->s = d;
    x->len = len;
    return 0;
}

/* x's bytes with len bytes of s put in at pos, or replacing [pos, pos + cut). */
static int splice_str(mut_t *m, node_t *x, size_t pos, size_t cut, const void *s, size_t len)
{
    size_t n = x->len - cut + len;
    uint8_t *d = ar_alloc(&m->a, n + 1);

    if (!d)
        return -1;
    /* A default string has no bytes at all (s NULL, len 0). */
    if (pos)
        memcpy(d, x->s, pos);
    if (len)
        memcpy(d + pos, s, len);
    if (x->len - pos - cut)
        memcpy(d + pos + len, x->s + pos + cut, x->len - pos - cut);
    x->s = d;
    x->len = n;
    return 0;
}

/* A string node, or a map key seen as one. */
static int mutate_string(mut_t *m, node_t *x)
{
    const char *s;
    size_t pos = rnd(m, x->len + 1), want;

    switch (rnd(m, 10)) {
    case 0:
        s = PICK(m, strs);
        /* "" is the one entry whose NUL is not a terminator but a byte: "a\0b". */
        return rnd(m, 16) ? set_str(m, x, s, strlen(s)) : set_str(m, x, "a\0b", 3);
    case 1:
        s = known_value(m);
        return set_str(m, x, s, strlen(s));
    case 2:
        if (!rnd(m, 8))
            return splice_str(m, x, pos, 0, "", 1); /* a NUL byte */
        s = PICK(m, strs);
        return splice_str(m, x, pos, 0, s, strlen(s));
    case 3: /* cut, maybe inside a multi-byte character */
        x->len = rnd(m, 4) ? pos : (x->len ? x->len - 1 : 0);
        return 0;
    case 4: { /* up to a bound, filled with a character that may straddle it */
        const char *f = PICK(m, fills);
        uint8_t *d;
        want = rnd(m, 32) ? PICK(m, lens_small) : PICK(m, lens_big);
        want += rnd(m, 4) ? 0 : rnd(m, 3);
        if (want <= x->len) {
            x->len = want;
            return 0;
        }
        if (!(d = ar_alloc(&m->a, want + 1)))
            return -1;
        if (x->len)
            memcpy(d, x->s, x->len);
        for (size_t i = x->len, k = 0, fl = strlen(f); i < want; i++, k++)
            d[i] = (uint8_t)f[k % fl];
        x->s = d;
        x->len = want;
        return 0;
    }
    case 5: { /* another string of the message: ids that must (not) match */
        size_t tries = 8;
        while (tries--) {
            const node_t *o = m->refs[rnd(m, m->nrefs)];
            if ((o->t == AVRO_STRING || o->t == AVRO_BYTES) && o != x)
                return set_str(m, x, o->s, o->len);
        }
        return 0;
    }
    case 6:
        if (x->len) {
            uint8_t c = (uint8_t)rnd64(m);
            return splice_str(m, x, rnd(m, x->len), 1, &c, 1);
        }
        return 0;
    case 7: {
        static const char sep[] = {':', '%', '*', '?', '[', ']', '\\', '"', ',', '=', '\0', '\n'};
        char c = PICK(m, sep);
        return splice_str(m, x, pos, 0, &c, 1);
    }
    case 8: /* the length lies (the decoder must not trust it) */
        if (x->t == AVRO_STRING || x->t == AVRO_BYTES) {
            static const int64_t abs_lens[] = {-1, INT64_MIN, INT64_MAX, (int64_t)1 << 40,
                                               (int64_t)1 << 31};
            if (rnd(m, 2)) {
                x->lie = LIE_LEN;
                x->arg = rnd(m, 2) ? 1 : -1;
            } else {
                x->lie = LIE_LEN_ABS;
                x->arg = PICK(m, abs_lens);
            }
        }
        return 0;
    default: /* doubled: names repeating, lengths growing */
        return x->len ? splice_str(m, x, x->len, 0, x->s, x->len) : set_str(m, x, "a", 1);
    }
}

static int64_t mutate_long(mut_t *m, int64_t v)
{
    switch (rnd(m, 6)) {
    case 0:
    case 1:
        return PICK(m, longs);
    case 2:
        return (int64_t)((uint64_t)v + (uint64_t)(rnd(m, 33)) - 16);
    case 3:
        return (int64_t)(0 - (uint64_t)v);
    case 4:
        return (int64_t)((uint64_t)v ^ ((uint64_t)1 << rnd(m, 64)));
    default:
        return (int64_t)((uint64_t)v * 2);
    }
}

static double mutate_double(mut_t *m, double v)
{
    static const double doubles[] = {0.0,       -0.0,    1.0,      -1.0,      0.5,
                                     NAN,       -NAN,    INFINITY, -INFINITY, DBL_MAX,
                                     -DBL_MAX,  DBL_MIN, 4.9e-324, 1e-300,    9007199254740993.0,
                                     9.3e18,    1.85e19, 1e308,    4.0,       32.0,
                                     32.000001, 1e-9,    0.9};

    switch (rnd(m, 5)) {
    case 0:
    case 1:
        return PICK(m, doubles);
    case 2:
        return v * 2;
    case 3:
        return -v;
    default:
        return v + (double)rnd(m, 9) - 4;
    }
}

/* How many items a list of x's field may hold, 0 if unbounded. */
static size_t list_limit(const mut_t *m, const node_t *x)
{
    return x->field ? dlb_codec_list_max(m->type, x->field) : 0;
}

/* Room for n items in x (arena arrays; the old ones stay in the arena). */
static int list_resize(mut_t *m, node_t *x, size_t n)
{
    node_t **kid = ar_alloc(&m->a, (n ? n : 1) * sizeof(*kid));
    const uint8_t **key = ar_alloc(&m->a, (n ? n : 1) * sizeof(*key));
    size_t *klen = ar_alloc(&m->a, (n ? n : 1) * sizeof(*klen));
    size_t keep = x->n < n ? x->n : n;

    if (!kid || !key || !klen)
        return -1;
    if (keep) {
        memcpy(kid, x->kid, keep * sizeof(*kid));
        if (x->t == AVRO_MAP) {
            memcpy(key, x->key, keep * sizeof(*key));
            memcpy(klen, x->klen, keep * sizeof(*klen));
        }
    }
    x->kid = kid;
    x->key = key;
    x->klen = klen;
    return 0;
}

/* Grows x to n items, copies of item `from` (or default items); map keys
 * made unique by their index unless dup_keys. */
static int list_grow(mut_t *m, node_t *x, size_t n, int dup_keys)
{
    avro_schema_t items =
        x->t == AVRO_MAP ? avro_schema_map_values(x->sch) : avro_schema_array_items(x->sch);
    size_t old = x->n, from = rnd(m, old + 1);

    if (list_resize(m, x, n))
        return -1;
    for (size_t i = old; i < n; i++) {
        node_t *it =
            from < old ? tree_clone(&m->a, x->kid[from], 0) : tree_default(&m->a, items, NULL, 0);
        if (!it)
            return -1;
        x->kid[i] = it;
        if (x->t == AVRO_MAP) {
            char k[32];
            int kl = snprintf(k, sizeof(k), "k%zu", dup_keys ? (size_t)0 : i);
            uint8_t *d = ar_alloc(&m->a, (size_t)kl + 1);
            if (!d)
                return -1;
            memcpy(d, k, (size_t)kl);
            x->key[i] = d;
            x->klen[i] = (size_t)kl;
        }
    }
    x->n = n;
    return 0;
}

static int mutate_list(mut_t *m, node_t *x)
{
    size_t lim = list_limit(m, x), i = rnd(m, x->n ? x->n : 1), j = rnd(m, x->n ? x->n : 1);

    switch (rnd(m, 9)) {
    case 0: /* one more */
        return list_grow(m, x, x->n + 1, 0);
    case 1: /* one fewer */
        if (x->n) {
            memmove(x->kid + i, x->kid + i + 1, (x->n - i - 1) * sizeof(*x->kid));
            if (x->t == AVRO_MAP) {
                memmove(x->key + i, x->key + i + 1, (x->n - i - 1) * sizeof(*x->key));
                memmove(x->klen + i, x->klen + i + 1, (x->n - i - 1) * sizeof(*x->klen));
            }
            x->n--;
        }
        return 0;
    case 2:
        x->n = 0;
        return 0;
    case 3: /* reordered */
        if (x->n > 1) {
            node_t *t = x->kid[i];
            x->kid[i] = x->kid[j];
            x->kid[j] = t;
        }
        return 0;
    case 4: { /* the field's limit, one under or one past it */
        size_t want = lim ? lim - 1 + rnd(m, 3) : x->n + 1 + rnd(m, 64);
        if (want > x->n)
            return list_grow(m, x, want, 0);
        x->n = want;
        return 0;
    }
    case 5: /* a map key twice, or a key mutated as a string */
        if (x->t == AVRO_MAP && x->n) {
            node_t k = {.t = AVRO_STRING, .s = x->key[j], .len = x->klen[j]};
            if (rnd(m, 2)) {
                x->key[i] = x->key[j];
                x->klen[i] = x->klen[j];
                return 0;
            }
            if (mutate_string(m, &k))
                return -1;
            x->key[j] = k.s;
            x->klen[j] = k.len;
            return 0;
        }
        return list_grow(m, x, x->n + 1 + rnd(m, 4), 1);
    case 6: /* valid block forms readers must take */
        x->lie = rnd(m, 2) ? LIE_NEG_BLOCK : LIE_SPLIT;
        return 0;
    case 7: { /* counts that lie */
        static const int64_t counts[] = {INT64_MIN,        INT64_MAX, -1,   (int64_t)1 << 31,
                                         (int64_t)1 << 40, 16385,     65537};
        switch (rnd(m, 4)) {
        case 0:
            x->lie = LIE_COUNT;
            x->arg = rnd(m, 2) ? 1 : -1;
            break;
        case 1:
            x->lie = LIE_COUNT_ABS;
            x->arg = PICK(m, counts);
            break;
        case 2:
            x->lie = x->n ? LIE_BLOCK_SIZE : LIE_COUNT_ABS;
            x->arg = PICK(m, counts);
            break;
        default:
            x->lie = LIE_NO_END;
            break;
        }
        return 0;
    }
    default: /* an item's value */
        return 0;
    }
}

static int mutate_union(mut_t *m, node_t *x)
{
    size_t nb = avro_schema_union_size(x->sch);
    size_t b = rnd(m, nb);

    if (!rnd(m, 8)) {
        static const int64_t bad[] = {-1, 2, 3, INT64_MAX, INT64_MIN};
        x->lie = LIE_BRANCH;
        x->arg = PICK(m, bad);
        return 0;
    }
    if ((int64_t)b == x->l)
        b = (b + 1) % nb;
    x->l = (int64_t)b;
    /* The value carried over when it fits the branch, else the smallest. */
    x->kid[0] =
        tree_project(&m->a, x->kid[0], avro_schema_union_branch(x->sch, (int)b), x->field, 0);
    return x->kid[0] ? 0 : -1;
}

static int mutate_node(mut_t *m, node_t *x)
{
    switch (x->t) {
    case AVRO_STRING:
    case AVRO_BYTES:
        return mutate_string(m, x);
    case AVRO_INT32:
        /* Out of int range now and then: the decoder refuses it. */
        x->l = rnd(m, 16) ? (rnd(m, 2) ? PICK(m, ints) : (int32_t)mutate_long(m, x->l))
                          : mutate_long(m, x->l);
        return 0;
    case AVRO_INT64:
        x->l = mutate_long(m, x->l);
        return 0;
    case AVRO_ENUM:
        x->l = rnd(m, 8) ? (int64_t)rnd(m, (size_t)avro_schema_enum_number_of_symbols(x->sch))
                         : mutate_long(m, x->l);
        return 0;
    case AVRO_BOOLEAN:
        x->l = rnd(m, 8) ? !x->l : (int64_t)(2 + rnd(m, 254));
        return 0;
    case AVRO_FLOAT:
    case AVRO_DOUBLE:
        x->d = mutate_double(m, x->d);
        return 0;
    case AVRO_FIXED:
        if (x->len) {
            uint8_t c = (uint8_t)rnd64(m);
            return splice_str(m, x, rnd(m, x->len), 1, &c, 1);
        }
        return 0;
    case AVRO_ARRAY:
    case AVRO_MAP:
        return mutate_list(m, x);
    case AVRO_UNION:
        return mutate_union(m, x);
    default:
        return 0;
    }
}

/* Another schema id for the message: every other catalog entry, the values
 * carried over by field name (an older version of the type, or a type its
 * topic does not carry). */
static int mutate_schema(mut_t *m, const dlb_catalog_t *cat, const dlb_schema_entry_t **e)
{
    const dlb_schema_entry_t *to = dlb_catalog_at(cat, rnd(m, dlb_catalog_count(cat)));
    node_t *x = tree_project(&m->a, m->root, to->schema, NULL, 0);

    if (!x)
        return -1;
    m->root = x;
    m->type = to->type;
    *e = to;
    return 0;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* One try: mutate m->root, write the frame to out. @returns its length, 0
 * when it did not fit or something failed. */
static size_t mutate_once(mut_t *m, const dlb_catalog_t *cat, const dlb_schema_entry_t *e,
                          uint8_t *out, size_t max_size)
{
    writer_t w = {.buf = out, .cap = max_size};
    uint8_t hdr[DLB_FRAME_HEADER] = {DLB_FRAME_MAGIC};
    size_t rounds = 1 + rnd(m, 3);

    if (!rnd(m, 12) && mutate_schema(m, cat, &e))
        return 0;
    for (size_t r = 0; r < rounds; r++) {
        node_t *x;
        m->nrefs = 0;
        m->refs = ar_alloc(&m->a, tree_count(m->root) * sizeof(*m->refs));
        if (!m->refs)
            return 0;
        tree_collect(m->root, m->refs, &m->nrefs);
        x = m->refs[rnd(m, m->nrefs)];
        if (mutate_node(m, x))
            return 0;
    }
    put_be32(hdr + 1, (uint32_t)e->id);
    wr_raw(&w, hdr, sizeof(hdr));
    tree_write(&w, m->root);
    if (w.full || w.len < DLB_FRAME_HEADER)
        return 0;
    /* The frame itself, rarely: an unknown id, the body read with another
     * schema's id, a bad magic byte, a cut body, bytes after the record. */
    switch (rnd(m, 24)) {
    case 0: {
        static const uint32_t ids[] = {0, 13, 99, 0x7fffffff, 0x80000000, 0xffffffff};
        put_be32(out + 1, PICK(m, ids));
        break;
    }
    case 1:
        put_be32(out + 1, (uint32_t)dlb_catalog_at(cat, rnd(m, dlb_catalog_count(cat)))->id);
        break;
    case 2:
        out[0] = (uint8_t)(1 + rnd(m, 255));
        break;
    case 3:
        w.len = DLB_FRAME_HEADER + rnd(m, w.len - DLB_FRAME_HEADER);
        break;
    case 4:
        if (w.len < max_size)
            out[w.len++] = (uint8_t)rnd64(m);
        break;
    default:
        break;
    }
    return w.len;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    const dlb_catalog_t *cat = fuzz_catalog();
    const dlb_schema_entry_t *e;
    mut_t m = {.rng = seed};
    uint8_t *out = NULL;
    size_t len = 0;
    int32_t id;

    /* Byte-level changes too: what no valid tree leads to (and the
     * dictionary's field names and values in unexpected places). */
    if (!rnd(&m, 8) || dlb_codec_peek(data, size, &id, NULL, 0) ||
        !(e = dlb_catalog_by_id(cat, id)) || !(out = malloc(max_size)))
        goto bytes;
    for (int attempt = 0; attempt < 4 && !len; attempt++) {
        reader_t r = {data + DLB_FRAME_HEADER, data + size, 0, &m.a};
        m.type = e->type;
        if (!(m.root = tree_read(&r, e->schema, NULL, 0)) || r.p != r.end)
            break;
        len = mutate_once(&m, cat, e, out, max_size);
        ar_free(&m.a);
    }
    ar_free(&m.a);
    if (len) {
        memcpy(data, out, len);
        free(out);
        return len;
    }
bytes:
    free(out);
    return LLVMFuzzerMutate(data, size, max_size);
}

/* ==== what a consumer does with a record =================================== */

#define WINDOW 4 /* state.window.size, small: trimming happens */

/* The router's settings: the configuration's defaults. */
static const dlb_conf_t *fuzz_conf(void)
{
    static dlb_conf_t conf;
    static int ready;

    if (!ready) {
        dlb_conf_init(&conf);
        conf.window_size = WINDOW;
        ready = 1;
    }
    return &conf;
}

/* The configurer's rules: exact values, patterns, an Exclude, precedence and
 * object merges. Compiled once; never freed (reachable, so no leak). */
static dlb_matcher_t *fuzz_matcher(void)
{
    static const char yaml[] = "id: base\n"
                               "Configure: {a: 1, o: {x: 1}}\n"
                               "---\n"
                               "id: ctr\n"
                               "Priority: 1\n"
                               "Include: {scenario: [ctr, \"ctr-*\"], user: [\"*\"]}\n"
                               "Exclude: {namespace: [\"kube-*\"]}\n"
                               "Configure: {o: {y: 2}, b: s}\n"
                               "---\n"
                               "id: names\n"
                               "Include: {name: [\"[a-m]*\", \"job?\", \"x:rt\"]}\n"
                               "Configure: {o: {x: 3}, \"k:%\": [1, 2]}\n";
    static dlb_matcher_t *m;
    dlb_rules_t rs;
    char err[512];

    if (m)
        return m;
    if (dlb_rules_parse("fuzz.yaml", yaml, strlen(yaml), &rs, err, sizeof(err)) ||
        dlb_matcher_new(&m, &rs, err, sizeof(err)))
        fuzz_fail("matcher: %s", err);
    dlb_rules_clear(&rs);
    return m;
}

/* An output must be what our own readers take: valid, encoded, decoded back
 * to what encodes to the same bytes. */
static void check_output(const char *what, const dlb_event_t *out)
{
    char err[512] = "";

    if (dlb_event_validate(out, err, sizeof(err)))
        fuzz_fail("%s is not valid: %s", what, err);
    fuzz_avro_through(what, out, 0);
}

/* ---- the job state -------------------------------------------------------- */

static void state_event(dlb_job_state_t *st, const dlb_event_t *ev)
{
    if (dlb_job_state_apply(st, ev, WINDOW))
        fuzz_fail("state: out of memory");
}

/* A state of the job uid as a consumer holds it before the record: a job
 * with meta, samples of a PS and two workers, node events, one OOM. */
static void base_state(dlb_job_state_t *st, const char *uid)
{
    dlb_pod_usage_t pods[3] = {
        {.name = "j-ps-0",
         .type = "ps",
         .cpu_used = 6,
         .cpu_requested = 8,
         .memory_used = 10 * DLB_GIB,
         .memory_requested = 16 * DLB_GIB},
        {.name = "j-worker-0",
         .type = "worker",
         .cpu_used = 3,
         .cpu_requested = 4,
         .memory_used = 12 * DLB_GIB,
         .memory_requested = 16 * DLB_GIB,
         .has_speed = 1,
         .speed = 2},
        {.name = "j-worker-1",
         .type = "worker",
         .index = 1,
         .cpu_used = 3,
         .cpu_requested = 4,
         .memory_used = 15 * DLB_GIB,
         .memory_requested = 16 * DLB_GIB,
         .has_speed = 1,
         .speed = 0.5},
    };
    dlb_event_t ev = {.type = DLB_EV_JOB};
    dlb_job_event_t *j = &ev.u.job;

    memset(st, 0, sizeof(*st));
    snprintf(j->event_id, sizeof(j->event_id), "base-job");
    snprintf(j->job_uid, sizeof(j->job_uid), "%s", uid);
    j->event_time_ms = 1700000000000LL;
    j->has_meta = 1;
    snprintf(j->meta.name, sizeof(j->meta.name), "job1");
    snprintf(j->meta.user, sizeof(j->meta.user), "alice");
    snprintf(j->meta.scenario, sizeof(j->meta.scenario), "ctr");
    snprintf(j->meta.ns, sizeof(j->meta.ns), "ml");
    j->has_state = 1;
    snprintf(j->state, sizeof(j->state), "running");
    state_event(st, &ev);

    for (int i = 0; i < 3; i++) {
        dlb_event_t s = {.type = DLB_EV_RUNTIME};
        dlb_runtime_sample_t *rt = &s.u.rt;
        snprintf(rt->event_id, sizeof(rt->event_id), "base-rt-%d", i);
        snprintf(rt->job_uid, sizeof(rt->job_uid), "%s", uid);
        rt->event_time_ms = 1700000015000LL + 15000LL * i;
        rt->global_step = 1000 * (i + 1);
        rt->speed = 60;
        rt->pods = pods;
        rt->pods_cnt = 3;
        state_event(st, &s);
    }
    for (int i = 0; i < 2; i++) {
        dlb_event_t n = {.type = DLB_EV_NODE};
        dlb_node_event_t *ne = &n.u.node;
        snprintf(ne->event_id, sizeof(ne->event_id), "base-ne-%d", i);
        snprintf(ne->job_uid, sizeof(ne->job_uid), "%s", uid);
        ne->event_time_ms = 1700000020000LL + i;
        snprintf(ne->kind, sizeof(ne->kind), "%s", i ? "oom_killed" : "pod_phase");
        snprintf(ne->pod_name, sizeof(ne->pod_name), "j-worker-%d", i);
        snprintf(ne->pod_type, sizeof(ne->pod_type), "worker");
        ne->pod_index = i;
        ne->has_phase = 1;
        snprintf(ne->phase, sizeof(ne->phase), "%s", i ? "Failed" : "Running");
        ne->has_memory_requested = 1;
        ne->memory_requested = 16 * DLB_GIB;
        state_event(st, &n);
    }
}

static int sample_cmp(const dlb_runtime_sample_t *a, const dlb_runtime_sample_t *b)
{
    if (a->event_time_ms != b->event_time_ms)
        return a->event_time_ms < b->event_time_ms ? -1 : 1;
    return strcmp(a->event_id, b->event_id);
}

static void check_state(const dlb_job_state_t *st)
{
    if (st->pods_cnt > DLB_JOB_PODS_MAX)
        fuzz_fail("state: %zu pods, more than %d", st->pods_cnt, DLB_JOB_PODS_MAX);
    for (size_t i = 0; i < st->pods_cnt; i++) {
        const dlb_pod_status_t *p = &st->pods[i];
        if (strnlen(p->name, sizeof(p->name)) == sizeof(p->name) || !p->name[0])
            fuzz_fail("state: pod %zu has no name or an unterminated one", i);
        if (i && strcmp(st->pods[i - 1].name, p->name) >= 0)
            fuzz_fail("state: pods %zu and %zu out of order or twice", i - 1, i);
        if (dlb_job_state_pod(st, p->name) != p)
            fuzz_fail("state: pod %s not found by its name", p->name);
    }
    if (st->window_cnt > WINDOW)
        fuzz_fail("state: %zu samples in a window of %d", st->window_cnt, WINDOW);
    for (size_t i = 1; i < st->window_cnt; i++)
        if (sample_cmp(&st->window[i - 1], &st->window[i]) >= 0)
            fuzz_fail("state: samples %zu and %zu out of order or twice", i - 1, i);
}

static int states_equal(const dlb_job_state_t *a, const dlb_job_state_t *b)
{
    dlb_event_t x = {.type = DLB_EV_JOB}, y = {.type = DLB_EV_JOB};

    x.u.job = a->job;
    y.u.job = b->job;
    if (!dlb_event_equal(&x, &y) || a->created_ms != b->created_ms ||
        a->window_cnt != b->window_cnt || a->pods_cnt != b->pods_cnt ||
        (a->pods_cnt && memcmp(a->pods, b->pods, a->pods_cnt * sizeof(*a->pods))))
        return 0;
    for (size_t i = 0; i < a->window_cnt; i++)
        if (strcmp(a->window[i].event_id, b->window[i].event_id))
            return 0;
    return 1;
}

/* ---- the roles' answers --------------------------------------------------- */

/* The optimizer's plan for req against the job state st, both sets. */
static void plan_for(const dlb_plan_request_t *req, const dlb_job_state_t *st)
{
    static const char *const sets[] = {"dlrover", "dlbrain"};
    static const dlb_history_t no_history = {0};
    const dlb_conf_t *conf = fuzz_conf();

    for (size_t i = 0; i < COUNT(sets); i++) {
        dlb_event_t pe = {.type = DLB_EV_PLAN};
        dlb_oom_answers_t answered = {0};
        dlb_opt_input_t in = {.req = req,
                              .job = st,
                              .history = &no_history,
                              .limits = &conf->limits,
                              .tuning = &conf->tuning,
                              .optimizer_set = sets[i],
                              .answered = &answered};
        char err[512] = "";
        int rc;

        (void)dlb_opt_needs(sets[i], req, st);
        (void)dlb_opt_job_has_oom(req, st);
        rc = dlb_router_plan(&in, &pe.u.plan, err, sizeof(err));
        if (rc)
            fuzz_fail("%s: a valid request is not planned: %s: %s", sets[i], dlb_err_name(rc), err);
        check_output(sets[i], &pe);
        for (size_t k = 0; k < answered.cnt; k++)
            if (strnlen(answered.items[k].pod_name, DLB_ID_MAX) == DLB_ID_MAX)
                fuzz_fail("%s: an answered OOM's pod name is unterminated", sets[i]);
        free(answered.items);
        dlb_event_clear(&pe);
    }
}

/* The configurer's answer to trigger (a job event with meta or a config
 * request): configurer.c's answer() without PostgreSQL and Redis. */
static void match_for(const char *trigger_id, int64_t time_ms, const char *uid,
                      const dlb_job_meta_t *meta)
{
    dlb_event_t me = {.type = DLB_EV_CONFIG_MATCH};
    dlb_config_match_t *cm = &me.u.cm;
    dlb_match_t res;

    dlb_config_match_id(trigger_id, cm->event_id, sizeof(cm->event_id));
    cm->event_time_ms = time_ms;
    cm->rules_version = 1;
    snprintf(cm->job_uid, sizeof(cm->job_uid), "%s", uid);
    snprintf(cm->trigger_event_id, sizeof(cm->trigger_event_id), "%s", trigger_id);
    if (dlb_matcher_match(fuzz_matcher(), meta, &res))
        fuzz_fail("matcher: out of memory");
    if (res.rule_ids_cnt && !(cm->rule_ids = calloc(res.rule_ids_cnt, sizeof(*cm->rule_ids))))
        fuzz_fail("out of memory");
    for (size_t i = 0; i < res.rule_ids_cnt; i++, cm->rule_ids_cnt++)
        if (!(cm->rule_ids[i] = strdup(res.rule_ids[i])))
            fuzz_fail("out of memory");
    if (res.values_cnt && !(cm->values = calloc(res.values_cnt, sizeof(*cm->values))))
        fuzz_fail("out of memory");
    for (size_t i = 0; i < res.values_cnt; i++, cm->values_cnt++)
        if (!(cm->values[i].key = strdup(res.values[i].key)) ||
            !(cm->values[i].json = strdup(res.values[i].json)))
            fuzz_fail("out of memory");
    check_output("config match", &me);
    dlb_event_clear(&me);
}

/* The Redis keys of the job: percent-encoded, whole, no uid names another's. */
static void check_key(const char *uid)
{
    char key[DLB_REDIS_KEY_MAX];
    const char *p;
    size_t n;

    dlb_redis_job_key("dlbrain", uid, ":seen", key, sizeof(key));
    n = strlen(key);
    if (strncmp(key, "dlbrain:job:", 12) || n < 18 || strcmp(key + n - 5, ":seen"))
        fuzz_fail("redis key of uid \"%s\" is cut or malformed: \"%s\"", uid, key);
    for (p = key + 12; p < key + n - 5; p++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-%", *p))
            fuzz_fail("redis key of uid \"%s\" has byte 0x%02x", uid, (unsigned char)*p);
}

static void consume(const dlb_event_t *ev)
{
    dlb_job_state_t st, again;
    const char *uid = dlb_event_job_uid(ev);

    check_key(uid);
    switch (ev->type) {
    case DLB_EV_JOB:
    case DLB_EV_NODE:
    case DLB_EV_RUNTIME: {
        dlb_plan_request_t req = {.has_oom_pod = 0};
        dlb_event_t merged = {.type = DLB_EV_JOB};

        base_state(&st, uid);
        state_event(&st, ev);
        check_state(&st);
        base_state(&again, uid);
        state_event(&again, ev);
        state_event(&again, ev);
        if (!states_equal(&st, &again))
            fuzz_fail("folding the same %s twice changed the state", dlb_event_type_name(ev->type));
        dlb_job_state_clear(&again);
        /* What the Redis cache keeps of the job (a framed JobEvent). */
        merged.u.job = st.job;
        check_output("merged job event", &merged);
        if (ev->type == DLB_EV_JOB && ev->u.job.has_meta)
            match_for(ev->u.job.event_id, ev->u.job.event_time_ms, uid, &ev->u.job.meta);
        /* The next request of the job sees what the record changed. */
        snprintf(req.event_id, sizeof(req.event_id), "req-after");
        snprintf(req.job_uid, sizeof(req.job_uid), "%s", uid);
        snprintf(req.stage, sizeof(req.stage), "%s", dlb_stages[strlen(dlb_event_id(ev)) % 6]);
        req.event_time_ms =
            dlb_event_time_ms(ev) > 1700000100000LL ? dlb_event_time_ms(ev) : 1700000100000LL;
        plan_for(&req, &st);
        dlb_job_state_clear(&st);
        return;
    }
    case DLB_EV_PLAN_REQUEST:
        base_state(&st, uid);
        plan_for(&ev->u.req, &st);
        dlb_job_state_clear(&st);
        return;
    case DLB_EV_CONFIG_REQUEST: {
        /* The job's attributes, each one the request names taking precedence. */
        dlb_job_meta_t meta;
        base_state(&st, uid);
        meta = st.job.meta;
        if (ev->u.creq.has_meta)
            for (size_t i = 0; i < DLB_META_ATTRS; i++)
                if (dlb_meta_attr_c(&ev->u.creq.meta, i)[0])
                    snprintf(dlb_meta_attr(&meta, i), DLB_NAME_MAX, "%s",
                             dlb_meta_attr_c(&ev->u.creq.meta, i));
        match_for(ev->u.creq.event_id, ev->u.creq.event_time_ms, uid, &meta);
        dlb_job_state_clear(&st);
        return;
    }
    case DLB_EV_PLAN: {
        /* A plan read back is clamped as the router clamps its own. */
        dlb_event_t c;
        if (dlb_event_copy(&c, ev))
            fuzz_fail("out of memory");
        dlb_limits_apply(&fuzz_conf()->limits, &c.u.plan);
        check_output("clamped plan", &c);
        dlb_event_clear(&c);
        return;
    }
    default:
        return;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const dlb_catalog_t *cat = fuzz_catalog();
    const dlb_schema_entry_t *e;
    dlb_event_t ev;
    char err[512] = "";
    int32_t id;
    int rc;

    if (fuzz_decode(data, size, &ev))
        return 0;
    /* What the stream's topic check goes by, before decoding. */
    if (dlb_codec_peek(data, size, &id, NULL, 0) || !(e = dlb_catalog_by_id(cat, id)) ||
        e->type != ev.type)
        fuzz_fail("a decoded %s is not of its schema id's type", dlb_event_type_name(ev.type));
    err[0] = '\0';
    rc = dlb_event_validate(&ev, err, sizeof(err));
    if (rc) {
        if (rc != DLB_ERR_INVALID || !err[0])
            fuzz_fail("validate returned %s: \"%s\"", dlb_err_name(rc), err);
    } else {
        /* What the stream stores (the raw bytes, or these re-encoded). */
        fuzz_avro_through("valid event", &ev, 1);
        consume(&ev);
    }
    dlb_event_clear(&ev);
    return 0;
}
