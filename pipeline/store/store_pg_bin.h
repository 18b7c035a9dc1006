/* PostgreSQL's binary wire format, built in memory: one-dimensional arrays
 * (array_recv()) for the batch statement's parameters and a COPY's columns,
 * and the rows of COPY ... (FORMAT binary). Store-internal. */
#ifndef DLB_STORE_PG_BIN_H
#define DLB_STORE_PG_BIN_H

#include <stdint.h>

#include "sbuf.h"

/* Element type OIDs (pg_type.h; stable across versions). */
#define DLB_PG_OID_BYTEA  17
#define DLB_PG_OID_INT8   20
#define DLB_PG_OID_INT4   23
#define DLB_PG_OID_TEXT   25
#define DLB_PG_OID_FLOAT8 701

/* A one-dimensional array, built element by element; the header is written
 * last, once the count is known. Appends after an allocation failure are
 * dropped and remembered (err), so a caller checks once, at the end. */
typedef struct dlb_pg_arr {
    dlb_sbuf_t b;
    uint32_t oid;
    int32_t n;
    int has_null;
    int err; /* an append failed (out of memory) */
} dlb_pg_arr_t;

/** @brief An empty array of element type oid (its buffer is b.p, freed by
 *         the caller). dlb_pg_arr_reset() empties it for reuse. */
void dlb_pg_arr_init(dlb_pg_arr_t *a, uint32_t oid);
void dlb_pg_arr_reset(dlb_pg_arr_t *a);

void dlb_pg_arr_put(dlb_pg_arr_t *a, const void *p, uint32_t len);
void dlb_pg_arr_null(dlb_pg_arr_t *a);
void dlb_pg_arr_text(dlb_pg_arr_t *a, const char *s);
void dlb_pg_arr_i64(dlb_pg_arr_t *a, int64_t v);
void dlb_pg_arr_i32(dlb_pg_arr_t *a, int32_t v);
void dlb_pg_arr_f64(dlb_pg_arr_t *a, double v);

/** @brief Write the header. @returns 0 or DLB_ERR_NOMEM (an append failed). */
int dlb_pg_arr_finish(dlb_pg_arr_t *a);

/* ---- COPY ... FROM STDIN (FORMAT binary) ---- */

/** @brief The stream's signature, flags and header extension. */
int dlb_pg_copy_header(dlb_sbuf_t *b);
/** @brief A row's field count. */
int dlb_pg_copy_row(dlb_sbuf_t *b, int16_t nfields);
/** @brief A field: its length, then its bytes in the type's binary format. */
int dlb_pg_copy_field(dlb_sbuf_t *b, const void *p, uint32_t len);
int dlb_pg_copy_text(dlb_sbuf_t *b, const char *s);
int dlb_pg_copy_i64(dlb_sbuf_t *b, int64_t v);
int dlb_pg_copy_f64(dlb_sbuf_t *b, double v);
/** @brief The end of the stream (field count -1). */
int dlb_pg_copy_trailer(dlb_sbuf_t *b);

#endif
