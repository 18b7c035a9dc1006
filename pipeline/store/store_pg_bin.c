/* PostgreSQL's binary wire format in memory (store_pg_bin.h): arrays as
 * array_recv() reads them, rows as COPY (FORMAT binary) reads them. Every
 * number is big-endian; float8 travels as its IEEE 754 bits (float8recv). */
#include "store_pg_bin.h"

#include <stdint.h>
#include <string.h>

#include "err.h"

/* Header of a one-dimensional binary array: ndim, has-null flag, element
 * type, then length and lower bound of the dimension (array_recv()). */
#define ARR_HEADER 20

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void be64(unsigned char *p, uint64_t v)
{
    be32(p, (uint32_t)(v >> 32));
    be32(p + 4, (uint32_t)v);
}

static uint64_t f64_bits(double v)
{
    uint64_t u;

    memcpy(&u, &v, sizeof(u));
    return u;
}

void dlb_pg_arr_init(dlb_pg_arr_t *a, uint32_t oid)
{
    memset(a, 0, sizeof(*a));
    a->oid = oid;
    dlb_pg_arr_reset(a);
}

void dlb_pg_arr_reset(dlb_pg_arr_t *a)
{
    static const char zero[ARR_HEADER] = {0};

    a->b.len = 0;
    a->n = 0;
    a->has_null = 0;
    a->err = dlb_sbuf_put(&a->b, zero, sizeof(zero));
}

/* One element: its length, then its bytes. */
void dlb_pg_arr_put(dlb_pg_arr_t *a, const void *p, uint32_t len)
{
    unsigned char l[4];

    be32(l, len);
    if (!a->err && !(a->err = dlb_sbuf_put(&a->b, (const char *)l, 4)))
        a->err = dlb_sbuf_put(&a->b, p, len);
    a->n++;
}

void dlb_pg_arr_null(dlb_pg_arr_t *a)
{
    unsigned char l[4];

    be32(l, UINT32_MAX); /* length -1 */
    if (!a->err)
        a->err = dlb_sbuf_put(&a->b, (const char *)l, 4);
    a->has_null = 1;
    a->n++;
}

void dlb_pg_arr_text(dlb_pg_arr_t *a, const char *s)
{
    dlb_pg_arr_put(a, s, (uint32_t)strlen(s));
}

void dlb_pg_arr_i64(dlb_pg_arr_t *a, int64_t v)
{
    unsigned char p[8];

    be64(p, (uint64_t)v);
    dlb_pg_arr_put(a, p, 8);
}

void dlb_pg_arr_i32(dlb_pg_arr_t *a, int32_t v)
{
    unsigned char p[4];

    be32(p, (uint32_t)v);
    dlb_pg_arr_put(a, p, 4);
}

void dlb_pg_arr_f64(dlb_pg_arr_t *a, double v)
{
    dlb_pg_arr_i64(a, (int64_t)f64_bits(v));
}

int dlb_pg_arr_finish(dlb_pg_arr_t *a)
{
    unsigned char *h = (unsigned char *)a->b.p;

    if (a->err)
        return DLB_ERR_NOMEM;
    /* An empty array has no dimension: ndim 0 and a 12-byte header. */
    be32(h, a->n ? 1 : 0);
    be32(h + 4, (uint32_t)a->has_null);
    be32(h + 8, a->oid);
    be32(h + 12, (uint32_t)a->n);
    be32(h + 16, 1);
    if (!a->n)
        a->b.len = 12;
    return 0;
}

int dlb_pg_copy_header(dlb_sbuf_t *b)
{
    /* "PGCOPY\n\377\r\n\0", flags 0 (no OIDs), no header extension. */
    static const unsigned char sig[19] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0377, '\r', '\n'};

    return dlb_sbuf_put(b, (const char *)sig, sizeof(sig));
}

int dlb_pg_copy_row(dlb_sbuf_t *b, int16_t nfields)
{
    unsigned char p[2] = {(unsigned char)((uint16_t)nfields >> 8), (unsigned char)nfields};

    return dlb_sbuf_put(b, (const char *)p, 2);
}

int dlb_pg_copy_field(dlb_sbuf_t *b, const void *p, uint32_t len)
{
    unsigned char l[4];
    int err;

    be32(l, len);
    return (err = dlb_sbuf_put(b, (const char *)l, 4)) ? err : dlb_sbuf_put(b, p, len);
}

int dlb_pg_copy_text(dlb_sbuf_t *b, const char *s)
{
    return dlb_pg_copy_field(b, s, (uint32_t)strlen(s));
}

int dlb_pg_copy_i64(dlb_sbuf_t *b, int64_t v)
{
    unsigned char p[8];

    be64(p, (uint64_t)v);
    return dlb_pg_copy_field(b, p, 8);
}

int dlb_pg_copy_f64(dlb_sbuf_t *b, double v)
{
    return dlb_pg_copy_i64(b, (int64_t)f64_bits(v));
}

int dlb_pg_copy_trailer(dlb_sbuf_t *b)
{
    return dlb_pg_copy_row(b, -1);
}
