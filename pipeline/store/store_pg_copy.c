/* Runtime samples stored with COPY (dlb_pg_send_runtime_copy): the stream's
 * path for samples it has not stored before.
 *
 * The batch travels as one COPY ... FROM STDIN (FORMAT binary): a row a
 * sample, its pods already in the row's pod_* arrays (migration 005), so the
 * server parses no text and runs no ON CONFLICT check per row. The stream
 * knows from the positions it keeps in PostgreSQL (store_pg_positions.c)
 * which samples a redelivered batch stored already and writes only the new
 * ones here; the table's unique key still guards the rows, so a sample stored
 * anyway (a producer that sent it twice, a group reading a topic again) fails
 * the COPY with a unique violation, which rolls back to the savepoint taken
 * before it and stores the batch with the idempotent statement
 * (store_pg_batch.c) instead: the same rows either way. */
#include "store_pg.h"
#include "store_pg_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* The savepoint is released once the COPY succeeded: a transaction keeps
 * each one open until it ends, and past 64 a backend's snapshot of the
 * others' subtransactions overflows. */
static const char sql_copy[] =
    "SAVEPOINT dlb_runtime_copy; "
    "COPY runtime_samples (event_id, job_uid, event_time_ms, global_step, speed, raw, pod_names, "
    "pod_types, pod_indexes, pod_cpu_used, pod_cpu_requested, pod_memory_used, "
    "pod_memory_requested, pod_speeds) FROM STDIN (FORMAT binary)";
#define COPY_FIELDS 14

static const uint32_t pod_oid[DLB_PG_POD__CNT] = {
    DLB_PG_OID_TEXT,   DLB_PG_OID_TEXT, DLB_PG_OID_INT4, DLB_PG_OID_FLOAT8,
    DLB_PG_OID_FLOAT8, DLB_PG_OID_INT8, DLB_PG_OID_INT8, DLB_PG_OID_FLOAT8};

/* One sample's row into b; p: the pod arrays, reused from row to row. */
static int copy_sample(dlb_pg_t *pg, dlb_sbuf_t *b, dlb_pg_arr_t *p, const dlb_event_t *ev,
                       const void *raw, size_t raw_len, char *errstr, size_t errstr_size)
{
    const dlb_runtime_sample_t *rt = &ev->u.rt;
    void *owned = NULL;
    int err;

    if ((err = dlb_pg_sample_raw(pg, ev, &raw, &raw_len, &owned, errstr, errstr_size)))
        return err;
    for (int c = 0; c < DLB_PG_POD__CNT; c++)
        dlb_pg_arr_reset(&p[c]);
    if (dlb_pg_pods_put(rt, p, NULL, 0) || dlb_pg_copy_row(b, COPY_FIELDS) ||
        dlb_pg_copy_text(b, rt->event_id) || dlb_pg_copy_text(b, rt->job_uid) ||
        dlb_pg_copy_i64(b, rt->event_time_ms) || dlb_pg_copy_i64(b, rt->global_step) ||
        dlb_pg_copy_f64(b, rt->speed) || dlb_pg_copy_field(b, raw, (uint32_t)raw_len))
        goto nomem;
    for (int c = 0; c < DLB_PG_POD__CNT; c++)
        if (dlb_pg_arr_finish(&p[c]) || dlb_pg_copy_field(b, p[c].b.p, (uint32_t)p[c].b.len))
            goto nomem;
    free(owned);
    return 0;
nomem:
    free(owned);
    return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
}

int dlb_pg_send_runtime_copy(dlb_pg_t *pg, const dlb_event_t *const *evs, const void *const *raws,
                             const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size)
{
    dlb_pg_arr_t p[DLB_PG_POD__CNT];
    dlb_sbuf_t b = {0};
    int err = 0;

    if (!n)
        return 0;
    if (!dlb_pg_in_tx(pg))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "postgresql: COPY of runtime samples outside a transaction");
    for (int c = 0; c < DLB_PG_POD__CNT; c++)
        dlb_pg_arr_init(&p[c], pod_oid[c]);
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)))
        goto out;
    if (dlb_pg_copy_header(&b)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if ((err = copy_sample(pg, &b, p, evs[i], raws ? raws[i] : NULL, raw_lens ? raw_lens[i] : 0,
                               errstr, errstr_size)))
            goto out;
    if (dlb_pg_copy_trailer(&b)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    err = dlb_pg_send_copy(pg, sql_copy, b.p, b.len, DLB_PG_INPUT, "runtime samples (COPY)", errstr,
                           errstr_size);
out:
    free(b.p);
    for (int c = 0; c < DLB_PG_POD__CNT; c++)
        free(p[c].b.p);
    return err;
}

int dlb_pg_wait_runtime_copy(dlb_pg_t *pg, const dlb_event_t *const *evs, const void *const *raws,
                             const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size)
{
    int err;

    if (!n)
        return 0;
    err = dlb_pg_wait(pg, errstr, errstr_size);
    /* unique_violation: a sample of the batch is stored already. */
    if (err && !strcmp(dlb_pg_wait_state(pg), "23505")) {
        if ((err = dlb_pg_exec(pg, "ROLLBACK TO SAVEPOINT dlb_runtime_copy", 0, NULL, NULL, 0, NULL,
                               "rolling back a COPY of runtime samples", errstr, errstr_size)))
            return err;
        err = dlb_pg_put_runtime_batch(pg, evs, raws, raw_lens, n, errstr, errstr_size);
    }
    if (err)
        return err;
    return dlb_pg_exec(pg, "RELEASE SAVEPOINT dlb_runtime_copy", 0, NULL, NULL, 0, NULL,
                       "releasing the savepoint of a COPY", errstr, errstr_size);
}
