/* Confluent-framed Avro bytes <-> C structs.
 *
 * Values are built from the catalog's (read-only) classes by each call, or
 * kept by a decoder that one thread owns, so one catalog may serve several
 * threads at once. A decode is: framing -> a bounds check of the Avro bytes
 * against the writer schema -> avro-c read (through the resolver for an older
 * writer, whose missing fields take their JSON defaults through avro_json.c)
 * -> the field tables of codec_map.c. */
#include "codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "err.h"
#include "vec.h"

#define NESTING_MAX 64
/* Zero-byte array items (nulls, empty records) cost nothing on the wire, so a
 * forged count could make avro-c loop for ages; no dlbrain schema has them. */
#define EMPTY_ITEMS_MAX (1 << 20)

/* ---- bounds check of Avro binary against the writer schema --------------- */

/* avro-c 1.11 allocates a string's declared length before reading it, so a
 * corrupt length would ask for exabytes. Walking the bytes first (no
 * allocation) also names the field where a message is truncated. */
typedef struct scan {
    const uint8_t *p, *end, *start;
    size_t empty_items;
    dlb_event_type_t type; /* the writer's: where list limits come from */
    const char *field;     /* the record field being walked (a list's name) */
    int has_path;          /* errstr already starts with a field path */
    char *errstr;
    size_t size;
} scan_t;

static int scan_error(scan_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int scan_error(scan_t *s, const char *fmt, ...)
{
    va_list ap;

    if (s->errstr && s->size) {
        va_start(ap, fmt);
        vsnprintf(s->errstr, s->size, fmt, ap);
        va_end(ap);
    }
    s->has_path = 0;
    return DLB_ERR_DECODE;
}

static size_t scan_offset(const scan_t *s)
{
    return (size_t)(s->p - s->start) + DLB_FRAME_HEADER;
}

static int scan_truncated(scan_t *s, uint64_t need)
{
    return scan_error(s, "truncated Avro data: %llu more bytes needed at offset %zu, %zu left",
                      (unsigned long long)need, scan_offset(s), (size_t)(s->end - s->p));
}

/* Adds a record field name or an [index] to the path of the current error. */
static void scan_path(scan_t *s, const char *name, long long index)
{
    int next_is_index = s->errstr && s->errstr[0] == '[';
    const char *sep = !s->has_path ? ": " : next_is_index ? "" : ".";

    if (name)
        dlb_err_prepend(s->errstr, s->size, "%s%s", name, sep);
    else
        dlb_err_prepend(s->errstr, s->size, "[%lld]%s", index, sep);
    s->has_path = 1;
}

static int scan_long(scan_t *s, int64_t *out)
{
    uint64_t v = 0;

    for (int i = 0;; i++) {
        uint8_t b;
        if (i == 10)
            return scan_error(s, "varint longer than 10 bytes at offset %zu", scan_offset(s));
        if (s->p >= s->end)
            return scan_truncated(s, 1);
        b = *s->p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            break;
    }
    *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1)); /* zigzag */
    return 0;
}

static int scan_skip(scan_t *s, uint64_t n)
{
    if (n > (uint64_t)(s->end - s->p))
        return scan_truncated(s, n);
    s->p += n;
    return 0;
}

static int scan_value(scan_t *s, avro_schema_t sch, int depth);

static int scan_items(scan_t *s, avro_schema_t items, int is_map, int depth)
{
    /* avro-c allocates a value per item as it decodes: the count is held to
     * what the struct side takes before any of it is. */
    size_t max = dlb_codec_list_max(s->type, s->field);
    long long index = 0;
    int64_t count, bytes;
    int err;

    for (;;) {
        if ((err = scan_long(s, &count)))
            return err;
        if (!count)
            return 0;
        if (count < 0) {
            /* A negative count is followed by the block's size in bytes. */
            if (count == INT64_MIN)
                return scan_error(s, "bad block count at offset %zu", scan_offset(s));
            count = -count;
            if ((err = scan_long(s, &bytes)))
                return err;
        }
        /* The sum in unsigned: a forged count near INT64_MAX after a block
         * of items overflows a long long. */
        if (max && (uint64_t)count > max - (size_t)index)
            return scan_error(s, "%llu items, more than the limit of %zu",
                              (unsigned long long)index + (unsigned long long)count, max);
        for (int64_t i = 0; i < count; i++, index++) {
            const uint8_t *before = s->p;
            if (is_map) {
                int64_t klen;
                if ((err = scan_long(s, &klen)))
                    return err;
                if (klen < 0)
                    return scan_error(s, "negative length at offset %zu", scan_offset(s));
                if ((err = scan_skip(s, (uint64_t)klen)))
                    return err;
            }
            if ((err = scan_value(s, items, depth + 1))) {
                scan_path(s, NULL, index);
                return err;
            }
            if (s->p == before && ++s->empty_items > EMPTY_ITEMS_MAX)
                return scan_error(s, "more than %d empty items", EMPTY_ITEMS_MAX);
        }
    }
}

static int scan_value(scan_t *s, avro_schema_t sch, int depth)
{
    int64_t v;
    int err;

    sch = dlb_avro_deref(sch);
    if (depth > NESTING_MAX)
        return scan_error(s, "nested deeper than %d", NESTING_MAX);
    switch (avro_typeof(sch)) {
    case AVRO_STRING:
    case AVRO_BYTES:
        if ((err = scan_long(s, &v)))
            return err;
        if (v < 0)
            return scan_error(s, "negative length %lld at offset %zu", (long long)v,
                              scan_offset(s));
        return scan_skip(s, (uint64_t)v);
    case AVRO_INT32:
        if ((err = scan_long(s, &v)))
            return err;
        if (v < INT32_MIN || v > INT32_MAX)
            return scan_error(s, "int %lld out of range", (long long)v);
        return 0;
    case AVRO_INT64:
        return scan_long(s, &v);
    case AVRO_FLOAT:
        return scan_skip(s, 4);
    case AVRO_DOUBLE:
        return scan_skip(s, 8);
    case AVRO_BOOLEAN:
        return scan_skip(s, 1);
    case AVRO_NULL:
        return 0;
    case AVRO_FIXED:
        return scan_skip(s, (uint64_t)avro_schema_fixed_size(sch));
    case AVRO_ENUM:
        if ((err = scan_long(s, &v)))
            return err;
        if (v < 0 || v >= avro_schema_enum_number_of_symbols(sch))
            return scan_error(s, "enum index %lld out of range", (long long)v);
        return 0;
    case AVRO_RECORD:
        for (size_t i = 0; i < avro_schema_record_size(sch); i++) {
            s->field = avro_schema_record_field_name(sch, (int)i);
            if ((err = scan_value(s, avro_schema_record_field_get_by_index(sch, (int)i),
                                  depth + 1))) {
                scan_path(s, avro_schema_record_field_name(sch, (int)i), 0);
                return err;
            }
        }
        return 0;
    case AVRO_ARRAY:
        return scan_items(s, avro_schema_array_items(sch), 0, depth);
    case AVRO_MAP:
        return scan_items(s, avro_schema_map_values(sch), 1, depth);
    case AVRO_UNION:
        if ((err = scan_long(s, &v)))
            return err;
        if (v < 0 || (uint64_t)v >= avro_schema_union_size(sch))
            return scan_error(s, "union branch %lld out of range at offset %zu", (long long)v,
                              scan_offset(s) - 1);
        return scan_value(s, avro_schema_union_branch(sch, (int)v), depth + 1);
    default:
        return scan_error(s, "unsupported Avro type %s", avro_schema_type_name(sch));
    }
}

static int scan_message(avro_schema_t writer, dlb_event_type_t type, const uint8_t *p, size_t len,
                        char *errstr, size_t size)
{
    scan_t s = {p, p + len, p, 0, type, NULL, 0, errstr, size};
    int err;

    if ((err = scan_value(&s, writer, 0)))
        return err;
    if (s.p != s.end)
        return dlb_seterr(errstr, size, DLB_ERR_DECODE,
                          "%zu trailing bytes after the record (offset %zu of %zu)",
                          (size_t)(s.end - s.p), scan_offset(&s), len + DLB_FRAME_HEADER);
    return 0;
}

/* ---- older writer: projection -> newest schema ----------------------------- */

static int upgrade(const dlb_catalog_t *cat, const dlb_schema_entry_t *newest, avro_value_t *src,
                   avro_value_t *dst, char *errstr, size_t size, int depth)
{
    avro_value_t s, d;
    size_t n = 0;
    int err;

    if (depth > NESTING_MAX)
        return dlb_seterr(errstr, size, DLB_ERR_DECODE, "nested deeper than %d", NESTING_MAX);
    switch (avro_value_get_type(dst)) {
    case AVRO_RECORD: {
        avro_schema_t rs = dlb_avro_deref(avro_value_get_schema(dst));
        if (avro_value_get_size(dst, &n))
            break;
        for (size_t i = 0; i < n; i++) {
            const char *name = NULL;
            if (avro_value_get_by_index(dst, i, &d, &name))
                goto fail;
            if (!avro_value_get_by_name(src, name, &s, NULL)) {
                err = upgrade(cat, newest, &s, &d, errstr, size, depth + 1);
            } else {
                const cJSON *def =
                    dlb_catalog_field_default(cat, newest, avro_schema_name(rs), name);
                if (!def)
                    return dlb_seterr(errstr, size, DLB_ERR_DECODE,
                                      "%s: not written and without a default", name);
                err = dlb_json_to_avro(cat, newest, def, &d, name, errstr, size);
                if (err)
                    return err; /* the path is already in the message */
            }
            if (err) {
                dlb_err_prepend(errstr, size, "%s.", name);
                return err;
            }
        }
        return 0;
    }
    case AVRO_ARRAY:
        if (avro_value_get_size(src, &n))
            break;
        for (size_t i = 0; i < n; i++) {
            if (avro_value_get_by_index(src, i, &s, NULL) || avro_value_append(dst, &d, NULL))
                goto fail;
            if ((err = upgrade(cat, newest, &s, &d, errstr, size, depth + 1)))
                return err;
        }
        return 0;
    case AVRO_MAP:
        if (avro_value_get_size(src, &n))
            break;
        for (size_t i = 0; i < n; i++) {
            const char *key = NULL;
            if (avro_value_get_by_index(src, i, &s, &key) ||
                avro_value_add(dst, key, &d, NULL, NULL))
                goto fail;
            if ((err = upgrade(cat, newest, &s, &d, errstr, size, depth + 1)))
                return err;
        }
        return 0;
    case AVRO_UNION: {
        int disc = -1;
        if (avro_value_get_discriminant(src, &disc) || avro_value_get_current_branch(src, &s) ||
            avro_value_set_branch(dst, disc, &d))
            goto fail;
        return upgrade(cat, newest, &s, &d, errstr, size, depth + 1);
    }
    default:
        if (avro_value_copy_fast(dst, src))
            goto fail;
        return 0;
    }
fail:
    return dlb_seterr(errstr, size, DLB_ERR_DECODE, "schema resolution: %s", avro_strerror());
}

/* ---- framing, encode, decode ---------------------------------------------- */

int dlb_codec_peek(const void *buf, size_t len, int32_t *schema_id, char *errstr,
                   size_t errstr_size)
{
    const uint8_t *b = buf;

    if (len < DLB_FRAME_HEADER)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_FRAMING,
                          "message of %zu bytes is shorter than the %d-byte Confluent header", len,
                          DLB_FRAME_HEADER);
    if (b[0] != DLB_FRAME_MAGIC)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_FRAMING,
                          "magic byte is 0x%02x, not 0: not Confluent-framed Avro%s", b[0],
                          b[0] == '{' ? " (it looks like JSON)" : "");
    *schema_id = (int32_t)(((uint32_t)b[1] << 24) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 8) |
                           (uint32_t)b[4]);
    return 0;
}

int dlb_codec_encode(const dlb_catalog_t *cat, const dlb_event_t *ev, void **out, size_t *out_len,
                     char *errstr, size_t errstr_size)
{
    const dlb_schema_entry_t *e;
    avro_value_t v;
    avro_writer_t w = NULL;
    uint8_t *buf = NULL;
    size_t sz = 0;
    int err;

    *out = NULL;
    *out_len = 0;
    if ((err = dlb_codec_value_new(cat, ev, &e, &v, errstr, errstr_size)))
        return err;
    if (avro_value_sizeof(&v, &sz)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "sizing: %s", avro_strerror());
        goto out;
    }
    if (!(buf = malloc(DLB_FRAME_HEADER + sz))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    buf[0] = DLB_FRAME_MAGIC;
    buf[1] = (uint8_t)((uint32_t)e->wire_id >> 24);
    buf[2] = (uint8_t)((uint32_t)e->wire_id >> 16);
    buf[3] = (uint8_t)((uint32_t)e->wire_id >> 8);
    buf[4] = (uint8_t)e->wire_id;
    if (!(w = avro_writer_memory((const char *)buf + DLB_FRAME_HEADER, (int64_t)sz))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (avro_value_write(w, &v)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "writing: %s", avro_strerror());
        goto out;
    }
    *out = buf;
    *out_len = DLB_FRAME_HEADER + sz;
    buf = NULL;
out:
    if (w)
        avro_writer_free(w);
    free(buf);
    avro_value_decref(&v);
    return err;
}

/* ---- decode, through values kept per writer schema ------------------------ */

/* The avro-c values the messages of one writer schema are read into. Kept
 * between messages emptied (avro_value_reset: its strings and items freed,
 * the tree and the arrays' room kept), where building them anew was one
 * allocation per record, field and array growth for every message. A reset
 * value reads like a new one: avro_value_read() sets every field of a record
 * and the branch of every union and appends to empty lists, and upgrade()
 * sets every field of the newest schema (from the writer or its default). */
typedef struct dec_slot {
    const dlb_schema_entry_t *e; /* the writer's entry */
    avro_value_t val;            /* of the newest schema of e's type */
    avro_value_t proj, resolved; /* an older writer: its projection, the resolver into it */
    int have_val, have_proj, have_resolved;
    dlb_codec_fieldmap_t *map; /* the struct's fields in val's schema, kept with the slot */
} dec_slot_t;

struct dlb_codec_decoder {
    const dlb_catalog_t *cat;
    int keep;          /* 0: every value is freed after its message (dlb_codec_decode) */
    avro_reader_t r;   /* a memory reader, pointed at each message in turn */
    dec_slot_t *slots; /* one per writer schema seen */
    size_t cnt, cap;
};

static void slot_release(dec_slot_t *s)
{
    if (s->have_resolved)
        avro_value_decref(&s->resolved);
    if (s->have_proj)
        avro_value_decref(&s->proj);
    if (s->have_val)
        avro_value_decref(&s->val);
    s->have_val = s->have_proj = s->have_resolved = 0;
}

/* Empties the slot's values for the next message; frees them when that fails. */
static void slot_reset(dec_slot_t *s)
{
    if ((s->have_val && avro_value_reset(&s->val)) || (s->have_proj && avro_value_reset(&s->proj)))
        slot_release(s);
}

/* The slot of writer entry e with its values, made for the first message of
 * e or after they were released. */
static int slot_get(dlb_codec_decoder_t *d, const dlb_schema_entry_t *e,
                    const dlb_schema_entry_t *newest, dec_slot_t **out, char *errstr, size_t size)
{
    dec_slot_t *s = NULL;

    for (size_t i = 0; i < d->cnt && !s; i++)
        if (d->slots[i].e == e)
            s = &d->slots[i];
    if (!s) {
        if (dlb_vec_reserve((void **)&d->slots, &d->cap, d->cnt + 1, sizeof(*d->slots)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        s = &d->slots[d->cnt++];
        memset(s, 0, sizeof(*s));
        s->e = e;
        /* Only worth building for a decoder that keeps it; without (out of
         * memory) the fields are read by name, the same values. */
        if (d->keep)
            s->map = dlb_codec_fieldmap_new(e->type, newest->schema);
    }
    *out = s;
    if (!s->have_val) {
        if (avro_generic_value_new(newest->iface, &s->val))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "%s", avro_strerror());
        s->have_val = 1;
    }
    if (!e->resolver)
        return 0;
    if (!s->have_proj) {
        if (avro_generic_value_new(dlb_catalog_projection(d->cat, e), &s->proj))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "%s", avro_strerror());
        s->have_proj = 1;
    }
    if (!s->have_resolved) {
        if (avro_resolved_writer_new_value(e->resolver, &s->resolved))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "%s", avro_strerror());
        s->have_resolved = 1;
        avro_resolved_writer_set_dest(&s->resolved, &s->proj);
    }
    return 0;
}

static void decoder_clear(dlb_codec_decoder_t *d)
{
    for (size_t i = 0; i < d->cnt; i++) {
        slot_release(&d->slots[i]);
        dlb_codec_fieldmap_free(d->slots[i].map);
    }
    free(d->slots);
    d->slots = NULL;
    d->cnt = d->cap = 0;
    if (d->r)
        avro_reader_free(d->r);
    d->r = NULL;
}

static int decode(dlb_codec_decoder_t *d, const void *buf, size_t len, dlb_event_t *ev,
                  char *errstr, size_t errstr_size)
{
    const dlb_schema_entry_t *e, *newest;
    const char *body = (const char *)buf + DLB_FRAME_HEADER;
    dec_slot_t *s = NULL;
    int32_t id;
    int err;

    memset(ev, 0, sizeof(*ev));
    if ((err = dlb_codec_peek(buf, len, &id, errstr, errstr_size)))
        return err;
    if ((err = dlb_catalog_by_wire_id(d->cat, id, &e, errstr, errstr_size)))
        return err;
    /* Before any value is touched: a message the scan refuses allocates
     * nothing and leaves the kept values as they were. */
    if ((err = scan_message(e->schema, e->type, (const uint8_t *)body, len - DLB_FRAME_HEADER,
                            errstr, errstr_size)))
        return err;

    newest = dlb_catalog_latest(d->cat, e->type);
    if ((err = slot_get(d, e, newest, &s, errstr, errstr_size)))
        goto out;
    if (d->r) {
        avro_reader_memory_set_source(d->r, body, (int64_t)(len - DLB_FRAME_HEADER));
    } else if (!(d->r = avro_reader_memory(body, (int64_t)(len - DLB_FRAME_HEADER)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (!e->resolver) {
        if (avro_value_read(d->r, &s->val)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE, "Avro data (schema id %d): %s",
                             (int)id, avro_strerror());
            goto out;
        }
    } else {
        if (avro_value_read(d->r, &s->resolved)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE, "Avro data (schema id %d): %s",
                             (int)id, avro_strerror());
            goto out;
        }
        if ((err = upgrade(d->cat, newest, &s->proj, &s->val, errstr, errstr_size, 0)))
            goto out;
    }
    err = dlb_codec_from_avro_mapped(e->type, s->map, &s->val, ev, errstr, errstr_size);
out:
    if (err)
        dlb_event_clear(ev);
    /* A failed message may leave its values half filled: the next one of
     * its schema starts from new ones, as if nothing had come before. */
    if (s && (err || !d->keep || len > DLB_CODEC_KEEP_BYTES))
        slot_release(s);
    else if (s)
        slot_reset(s);
    return err;
}

/* @returns 1 when the writer schema's record leads with event_id (a string)
 * and event_time_ms (a long), as every schema of schemas/ does. */
static int leads_with_time(avro_schema_t sch)
{
    const char *n0, *n1;

    sch = dlb_avro_deref(sch);
    if (!is_avro_record(sch) || avro_schema_record_size(sch) < 2 ||
        !(n0 = avro_schema_record_field_name(sch, 0)) ||
        !(n1 = avro_schema_record_field_name(sch, 1)))
        return 0;
    return !strcmp(n0, "event_id") &&
           is_avro_string(dlb_avro_deref(avro_schema_record_field_get_by_index(sch, 0))) &&
           !strcmp(n1, "event_time_ms") &&
           is_avro_int64(dlb_avro_deref(avro_schema_record_field_get_by_index(sch, 1)));
}

int dlb_codec_event_time(const dlb_catalog_t *cat, const void *buf, size_t len, int64_t *ms,
                         char *errstr, size_t errstr_size)
{
    const uint8_t *body = (const uint8_t *)buf + DLB_FRAME_HEADER;
    const dlb_schema_entry_t *e;
    dlb_event_t ev;
    int32_t id;
    int err;

    if ((err = dlb_codec_peek(buf, len, &id, errstr, errstr_size)) ||
        (err = dlb_catalog_by_wire_id(cat, id, &e, errstr, errstr_size)))
        return err;
    if (leads_with_time(e->schema)) {
        scan_t s = {body,       body + (len - DLB_FRAME_HEADER), body, 0, e->type, NULL, 0, errstr,
                    errstr_size};
        int64_t id_len;

        /* The whole message walked first, as a decode would: a time read
         * from a record that is not one would be a guess. */
        if ((err = scan_message(e->schema, e->type, body, len - DLB_FRAME_HEADER, errstr,
                                errstr_size)) ||
            (err = scan_long(&s, &id_len)) || (err = scan_skip(&s, (uint64_t)id_len)))
            return err;
        return scan_long(&s, ms);
    }
    if ((err = dlb_codec_decode(cat, buf, len, &ev, errstr, errstr_size)))
        return err;
    *ms = dlb_event_time_ms(&ev);
    dlb_event_clear(&ev);
    return 0;
}

int dlb_codec_decode(const dlb_catalog_t *cat, const void *buf, size_t len, dlb_event_t *ev,
                     char *errstr, size_t errstr_size)
{
    dlb_codec_decoder_t d = {.cat = cat, .keep = 0};
    int err = decode(&d, buf, len, ev, errstr, errstr_size);

    decoder_clear(&d);
    return err;
}

int dlb_codec_decoder_new(const dlb_catalog_t *cat, dlb_codec_decoder_t **out, char *errstr,
                          size_t errstr_size)
{
    if (!(*out = calloc(1, sizeof(**out))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    (*out)->cat = cat;
    (*out)->keep = 1;
    return 0;
}

void dlb_codec_decoder_destroy(dlb_codec_decoder_t *d)
{
    if (!d)
        return;
    decoder_clear(d);
    free(d);
}

int dlb_codec_decoder_decode(dlb_codec_decoder_t *d, const void *buf, size_t len, dlb_event_t *ev,
                             char *errstr, size_t errstr_size)
{
    return decode(d, buf, len, ev, errstr, errstr_size);
}
