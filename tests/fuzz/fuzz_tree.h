/* A framed message as a tree of Avro values, for fuzz_struct's mutator:
 * parsed from the bytes against the writer schema of its id, changed node by
 * node, written back. Not avro-c's generic values: those can only hold what
 * is valid, where the mutator also wants to write what is not (a count that
 * lies about its items, a union branch past the last, a length past the end),
 * and avro-c allocates a string's declared length before reading it.
 *
 * Every allocation comes from one arena per mutation, released whole, so a
 * half-built tree never leaks. */
#ifndef DLB_FUZZ_TREE_H
#define DLB_FUZZ_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <avro.h>

#include "catalog.h"
#include "codec.h"
#include "codec_internal.h"

#define TREE_DEPTH_MAX 64
/* Far more than a message of libFuzzer's -max_len holds; bounds a walk of
 * zero-byte items (no schema of ours has them, a forged one might). */
#define TREE_NODES_MAX (1 << 20)

/* ---- arena ---------------------------------------------------------------- */

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, size;
    max_align_t data[];
} arena_chunk_t;

typedef struct arena {
    arena_chunk_t *head;
} arena_t;

static void *ar_alloc(arena_t *a, size_t n)
{
    arena_chunk_t *c = a->head;
    size_t need = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);

    if (!c || c->size - c->used < need) {
        size_t size = need > 65536 ? need : 65536;
        if (!(c = malloc(sizeof(*c) + size)))
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->size = size;
        a->head = c;
    }
    c->used += need;
    return memset((char *)c->data + c->used - need, 0, need);
}

static void ar_free(arena_t *a)
{
    while (a->head) {
        arena_chunk_t *c = a->head;
        a->head = c->next;
        free(c);
    }
}

/* ---- the tree ------------------------------------------------------------- */

/* How a node is written when it is to lie about itself. */
typedef enum lie {
    LIE_NONE = 0,
    LIE_LEN,        /* string: declared length = real + arg */
    LIE_LEN_ABS,    /* string: declared length = arg (negative, huge) */
    LIE_NEG_BLOCK,  /* list: one block of -count and its byte size (valid Avro) */
    LIE_SPLIT,      /* list: one block per item (valid Avro) */
    LIE_COUNT,      /* list: declared count = real + arg, items as they are */
    LIE_COUNT_ABS,  /* list: declared count = arg (INT64_MIN, huge), items as they are */
    LIE_BLOCK_SIZE, /* list: a block of -count with byte size arg */
    LIE_NO_END,     /* list: no closing 0 block */
    LIE_BRANCH,     /* union: branch index arg */
} lie_t;

typedef struct node node_t;
struct node {
    avro_schema_t sch; /* dereferenced */
    avro_type_t t;
    int64_t l;        /* int, long, enum, boolean (a byte), union branch */
    double d;         /* float, double */
    const uint8_t *s; /* string, bytes, fixed: points into the input or the arena */
    size_t len;
    node_t **kid;        /* record fields in schema order, list items, the union's branch */
    const uint8_t **key; /* map keys */
    size_t *klen;
    size_t n;
    const char *field; /* the name of the record field this node is, or NULL */
    lie_t lie;
    int64_t arg;
};

typedef struct reader {
    const uint8_t *p, *end;
    size_t nodes;
    arena_t *a;
} reader_t;

static int rd_varint(reader_t *r, int64_t *out)
{
    uint64_t v = 0;

    for (int i = 0; i < 10; i++) {
        uint8_t b;
        if (r->p >= r->end)
            return -1;
        b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
            return 0;
        }
    }
    return -1;
}

static int rd_bytes(reader_t *r, size_t n, const uint8_t **out)
{
    if (n > (size_t)(r->end - r->p))
        return -1;
    *out = r->p;
    r->p += n;
    return 0;
}

static node_t *tree_read(reader_t *r, avro_schema_t sch, const char *field, int depth);

/* Items of a list, block by block, into an arena array that doubles. */
static int read_items(reader_t *r, node_t *x, int depth)
{
    int is_map = x->t == AVRO_MAP;
    avro_schema_t items = is_map ? avro_schema_map_values(x->sch) : avro_schema_array_items(x->sch);
    size_t cap = 0;

    for (;;) {
        int64_t count, bytes;
        if (rd_varint(r, &count))
            return -1;
        if (!count)
            return 0;
        if (count < 0) {
            if (count == INT64_MIN || rd_varint(r, &bytes))
                return -1;
            count = -count;
        }
        /* Every item of our schemas takes a byte at least. */
        if ((uint64_t)count > (uint64_t)(r->end - r->p))
            return -1;
        for (int64_t i = 0; i < count; i++) {
            if (x->n == cap) {
                size_t ncap = cap ? 2 * cap : 4;
                node_t **kid = ar_alloc(r->a, ncap * sizeof(*kid));
                const uint8_t **key = ar_alloc(r->a, ncap * sizeof(*key));
                size_t *klen = ar_alloc(r->a, ncap * sizeof(*klen));
                if (!kid || !key || !klen)
                    return -1;
                if (x->n) {
                    memcpy(kid, x->kid, x->n * sizeof(*kid));
                    memcpy(key, x->key, x->n * sizeof(*key));
                    memcpy(klen, x->klen, x->n * sizeof(*klen));
                }
                x->kid = kid;
                x->key = key;
                x->klen = klen;
                cap = ncap;
            }
            if (is_map) {
                int64_t klen;
                if (rd_varint(r, &klen) || klen < 0 || rd_bytes(r, (size_t)klen, &x->key[x->n]))
                    return -1;
                x->klen[x->n] = (size_t)klen;
            }
            if (!(x->kid[x->n] = tree_read(r, items, NULL, depth + 1)))
                return -1;
            x->n++;
        }
    }
}

static node_t *tree_read(reader_t *r, avro_schema_t sch, const char *field, int depth)
{
    node_t *x;
    int64_t v;

    sch = dlb_avro_deref(sch);
    if (depth > TREE_DEPTH_MAX || ++r->nodes > TREE_NODES_MAX || !(x = ar_alloc(r->a, sizeof(*x))))
        return NULL;
    x->sch = sch;
    x->t = avro_typeof(sch);
    x->field = field;
    switch (x->t) {
    case AVRO_STRING:
    case AVRO_BYTES:
        if (rd_varint(r, &v) || v < 0 || rd_bytes(r, (size_t)v, &x->s))
            return NULL;
        x->len = (size_t)v;
        return x;
    case AVRO_FIXED:
        x->len = (size_t)avro_schema_fixed_size(sch);
        return rd_bytes(r, x->len, &x->s) ? NULL : x;
    case AVRO_INT32:
    case AVRO_INT64:
    case AVRO_ENUM:
        return rd_varint(r, &x->l) ? NULL : x;
    case AVRO_BOOLEAN:
        if (r->p >= r->end)
            return NULL;
        x->l = *r->p++;
        return x;
    case AVRO_FLOAT: {
        float f;
        if (r->end - r->p < 4)
            return NULL;
        memcpy(&f, r->p, 4); /* Avro is little-endian, as is every machine we run on */
        r->p += 4;
        x->d = f;
        return x;
    }
    case AVRO_DOUBLE:
        if (r->end - r->p < 8)
            return NULL;
        memcpy(&x->d, r->p, 8);
        r->p += 8;
        return x;
    case AVRO_NULL:
        return x;
    case AVRO_RECORD:
        x->n = avro_schema_record_size(sch);
        if (x->n && !(x->kid = ar_alloc(r->a, x->n * sizeof(*x->kid))))
            return NULL;
        for (size_t i = 0; i < x->n; i++)
            if (!(x->kid[i] = tree_read(r, avro_schema_record_field_get_by_index(sch, (int)i),
                                        avro_schema_record_field_name(sch, (int)i), depth + 1)))
                return NULL;
        return x;
    case AVRO_ARRAY:
    case AVRO_MAP:
        return read_items(r, x, depth) ? NULL : x;
    case AVRO_UNION:
        if (rd_varint(r, &x->l) || x->l < 0 || (uint64_t)x->l >= avro_schema_union_size(sch) ||
            !(x->kid = ar_alloc(r->a, sizeof(*x->kid))))
            return NULL;
        x->n = 1;
        x->kid[0] = tree_read(r, avro_schema_union_branch(sch, (int)x->l), field, depth + 1);
        return x->kid[0] ? x : NULL;
    default:
        return NULL;
    }
}

/* ---- writing -------------------------------------------------------------- */

typedef struct writer {
    uint8_t *buf;
    size_t len, cap;
    int full; /* more than cap was asked: the result is unusable */
} writer_t;

static void wr_raw(writer_t *w, const void *p, size_t n)
{
    if (w->full || n > w->cap - w->len) {
        w->full = 1;
        return;
    }
    if (n)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void wr_varint(writer_t *w, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t b[10];
    size_t n = 0;

    do {
        b[n] = (uint8_t)(z & 0x7f);
        z >>= 7;
        if (z)
            b[n] |= 0x80;
        n++;
    } while (z);
    wr_raw(w, b, n);
}

static void tree_write(writer_t *w, const node_t *x);

static void write_item(writer_t *w, const node_t *x, size_t i)
{
    if (x->t == AVRO_MAP) {
        wr_varint(w, (int64_t)x->klen[i]);
        wr_raw(w, x->key[i], x->klen[i]);
    }
    tree_write(w, x->kid[i]);
}

static void write_list(writer_t *w, const node_t *x)
{
    size_t i;

    switch (x->lie) {
    case LIE_NEG_BLOCK:
    case LIE_BLOCK_SIZE: {
        /* The byte size is known only after the items: write them to a
         * scratch writer over what is left, then move them up. */
        writer_t items = {0};
        if (!x->n)
            break;
        wr_varint(w, -(int64_t)x->n);
        if (w->full)
            return;
        items.buf = w->buf + w->len + 10;
        items.cap = w->cap - w->len > 10 ? w->cap - w->len - 10 : 0;
        for (i = 0; i < x->n; i++)
            write_item(&items, x, i);
        if (items.full) {
            w->full = 1;
            return;
        }
        wr_varint(w, x->lie == LIE_NEG_BLOCK ? (int64_t)items.len : x->arg);
        if (w->full || items.len > w->cap - w->len) {
            w->full = 1;
            return;
        }
        memmove(w->buf + w->len, items.buf, items.len);
        w->len += items.len;
        wr_varint(w, 0);
        return;
    }
    case LIE_SPLIT:
        for (i = 0; i < x->n; i++) {
            wr_varint(w, 1);
            write_item(w, x, i);
        }
        wr_varint(w, 0);
        return;
    case LIE_COUNT:
    case LIE_COUNT_ABS:
        wr_varint(w, x->lie == LIE_COUNT ? (int64_t)((uint64_t)x->n + (uint64_t)x->arg) : x->arg);
        for (i = 0; i < x->n; i++)
            write_item(w, x, i);
        wr_varint(w, 0);
        return;
    default:
        break;
    }
    if (x->n) {
        wr_varint(w, (int64_t)x->n);
        for (i = 0; i < x->n; i++)
            write_item(w, x, i);
    }
    if (x->lie != LIE_NO_END)
        wr_varint(w, 0);
}

static void tree_write(writer_t *w, const node_t *x)
{
    uint8_t b;
    float f;

    switch (x->t) {
    case AVRO_STRING:
    case AVRO_BYTES:
        if (x->lie == LIE_LEN)
            wr_varint(w, (int64_t)((uint64_t)x->len + (uint64_t)x->arg));
        else if (x->lie == LIE_LEN_ABS)
            wr_varint(w, x->arg);
        else
            wr_varint(w, (int64_t)x->len);
        wr_raw(w, x->s, x->len);
        return;
    case AVRO_FIXED:
        wr_raw(w, x->s, x->len);
        return;
    case AVRO_INT32:
    case AVRO_INT64:
    case AVRO_ENUM:
        wr_varint(w, x->l);
        return;
    case AVRO_BOOLEAN:
        b = (uint8_t)x->l;
        wr_raw(w, &b, 1);
        return;
    case AVRO_FLOAT:
        f = (float)x->d;
        wr_raw(w, &f, 4);
        return;
    case AVRO_DOUBLE:
        wr_raw(w, &x->d, 8);
        return;
    case AVRO_RECORD:
        for (size_t i = 0; i < x->n; i++)
            tree_write(w, x->kid[i]);
        return;
    case AVRO_ARRAY:
    case AVRO_MAP:
        write_list(w, x);
        return;
    case AVRO_UNION:
        wr_varint(w, x->lie == LIE_BRANCH ? x->arg : x->l);
        tree_write(w, x->kid[0]);
        return;
    default:
        return;
    }
}

/* ---- building ------------------------------------------------------------- */

/* The smallest value of schema sch: null, 0, "", false, empty lists, a
 * union's first branch (null in every union of ours). */
static node_t *tree_default(arena_t *a, avro_schema_t sch, const char *field, int depth)
{
    node_t *x;

    sch = dlb_avro_deref(sch);
    if (depth > TREE_DEPTH_MAX || !(x = ar_alloc(a, sizeof(*x))))
        return NULL;
    x->sch = sch;
    x->t = avro_typeof(sch);
    x->field = field;
    switch (x->t) {
    case AVRO_FIXED:
        x->len = (size_t)avro_schema_fixed_size(sch);
        if (!(x->s = ar_alloc(a, x->len + 1)))
            return NULL;
        return x;
    case AVRO_RECORD:
        x->n = avro_schema_record_size(sch);
        if (x->n && !(x->kid = ar_alloc(a, x->n * sizeof(*x->kid))))
            return NULL;
        for (size_t i = 0; i < x->n; i++)
            if (!(x->kid[i] = tree_default(a, avro_schema_record_field_get_by_index(sch, (int)i),
                                           avro_schema_record_field_name(sch, (int)i), depth + 1)))
                return NULL;
        return x;
    case AVRO_UNION:
        x->n = 1;
        if (!(x->kid = ar_alloc(a, sizeof(*x->kid))) ||
            !(x->kid[0] = tree_default(a, avro_schema_union_branch(sch, 0), field, depth + 1)))
            return NULL;
        return x;
    default:
        return x;
    }
}

/* A deep copy (the mutator changes nodes in place: a copied item must not
 * change with its original). */
static node_t *tree_clone(arena_t *a, const node_t *src, int depth)
{
    node_t *x;

    if (depth > TREE_DEPTH_MAX || !(x = ar_alloc(a, sizeof(*x))))
        return NULL;
    *x = *src;
    if (!src->n)
        return x;
    if (!(x->kid = ar_alloc(a, src->n * sizeof(*x->kid))))
        return NULL;
    if (src->t == AVRO_MAP) {
        if (!(x->key = ar_alloc(a, src->n * sizeof(*x->key))) ||
            !(x->klen = ar_alloc(a, src->n * sizeof(*x->klen))))
            return NULL;
        memcpy(x->key, src->key, src->n * sizeof(*x->key));
        memcpy(x->klen, src->klen, src->n * sizeof(*x->klen));
    }
    for (size_t i = 0; i < src->n; i++)
        if (!(x->kid[i] = tree_clone(a, src->kid[i], depth + 1)))
            return NULL;
    return x;
}

/* src as a value of schema dst: record fields by name, union branches by
 * type, what has no counterpart as tree_default(). How a message keeps its
 * values when the mutator gives it another schema id. */
static node_t *tree_project(arena_t *a, const node_t *src, avro_schema_t dst, const char *field,
                            int depth)
{
    avro_type_t dt;
    node_t *x;

    dst = dlb_avro_deref(dst);
    dt = avro_typeof(dst);
    if (depth > TREE_DEPTH_MAX)
        return NULL;
    if (src->t == AVRO_UNION && dt != AVRO_UNION)
        return tree_project(a, src->kid[0], dst, field, depth + 1);
    if (dt == AVRO_UNION) {
        const node_t *v = src->t == AVRO_UNION ? src->kid[0] : src;
        for (size_t i = 0; i < avro_schema_union_size(dst); i++) {
            avro_schema_t b = dlb_avro_deref(avro_schema_union_branch(dst, (int)i));
            if (avro_typeof(b) != v->t)
                continue;
            if (!(x = ar_alloc(a, sizeof(*x))) || !(x->kid = ar_alloc(a, sizeof(*x->kid))) ||
                !(x->kid[0] = tree_project(a, v, b, field, depth + 1)))
                return NULL;
            x->sch = dst;
            x->t = dt;
            x->field = field;
            x->l = (int64_t)i;
            x->n = 1;
            return x;
        }
        return tree_default(a, dst, field, depth);
    }
    if (src->t != dt)
        return tree_default(a, dst, field, depth);
    if (dt == AVRO_RECORD) {
        if (!(x = tree_default(a, dst, field, depth)))
            return NULL;
        for (size_t i = 0; i < x->n; i++) {
            const char *name = avro_schema_record_field_name(dst, (int)i);
            int j = avro_schema_record_field_get_index(src->sch, name);
            if (j >= 0 && (size_t)j < src->n &&
                !(x->kid[i] = tree_project(a, src->kid[j],
                                           avro_schema_record_field_get_by_index(dst, (int)i), name,
                                           depth + 1)))
                return NULL;
        }
        return x;
    }
    if (dt == AVRO_ARRAY || dt == AVRO_MAP) {
        avro_schema_t items =
            dt == AVRO_MAP ? avro_schema_map_values(dst) : avro_schema_array_items(dst);
        if (!(x = tree_clone(a, src, depth)))
            return NULL;
        x->sch = dst;
        x->field = field;
        for (size_t i = 0; i < x->n; i++)
            if (!(x->kid[i] = tree_project(a, src->kid[i], items, NULL, depth + 1)))
                return NULL;
        return x;
    }
    if (!(x = tree_clone(a, src, depth)))
        return NULL;
    x->sch = dst;
    x->field = field;
    return x;
}

/* ---- walking -------------------------------------------------------------- */

static size_t tree_count(const node_t *x)
{
    size_t n = 1;

    for (size_t i = 0; i < x->n; i++)
        n += tree_count(x->kid[i]);
    return n;
}

/* Every node of x in preorder into out (tree_count(x) of them): what the
 * mutator picks from, each node as likely as another. */
static void tree_collect(node_t *x, node_t **out, size_t *n)
{
    out[(*n)++] = x;
    for (size_t i = 0; i < x->n; i++)
        tree_collect(x->kid[i], out, n);
}

#endif
