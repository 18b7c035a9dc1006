/* Runtime samples written a batch at a time with the idempotent statement
 * (dlb_pg_put_runtime_batch): what a batch the stream recognises as a
 * redelivery, and a COPY that met a stored sample (store_pg_copy.c), fall
 * back to.
 *
 * One statement per batch instead of one per sample: the samples and their
 * pods travel as PostgreSQL arrays in the binary format (no text escaping of
 * the raw frames, no JSON of the pods), are expanded with unnest(), each
 * sample's pods folded back into its row's pod arrays, and inserted with the
 * same ON CONFLICT rule as the statement of one sample. */
#include "store_pg.h"
#include "store_pg_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "store_pg_bin.h"

/* Sample columns, then pod columns; "ord" ties pods to their sample. */
enum { S_ID, S_JOB, S_TIME, S_STEP, S_SPEED, S_RAW, S__CNT };
enum { P_ORD, P_NAME, P_TYPE, P_INDEX, P_CPU, P_CPU_REQ, P_MEM, P_MEM_REQ, P_SPEED, P__CNT };

/* The statement of one sample (store_pg.c, dlb_runtime) for many: a sample
 * repeated in the batch is inserted once (its first copy), a stored one not
 * at all, so a redelivered batch changes nothing. The pods arrive flattened
 * (ord ties each to its sample) and are folded back into their sample's pod_*
 * arrays (migration 005): one row a sample. An aggregate takes a group's rows
 * in the order they reach it, here sorted by (ord, k), the order sent, so the
 * arrays keep the sample's order without an ORDER BY in each array_agg (which
 * would sort every group once per column: eight sorts a sample). */
static const char sql_batch[] =
    "WITH s AS (SELECT DISTINCT ON (job_uid, event_time_ms, event_id) * "
    "FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::float8[], $6::bytea[]) "
    "WITH ORDINALITY AS s(event_id, job_uid, event_time_ms, global_step, speed, raw, ord) "
    "ORDER BY job_uid, event_time_ms, event_id, ord), "
    "p AS (SELECT ord, array_agg(name) AS names, array_agg(type) AS types, "
    "array_agg(index) AS indexes, array_agg(cpu_used) AS cpu_used, "
    "array_agg(cpu_requested) AS cpu_requested, array_agg(memory_used) AS memory_used, "
    "array_agg(memory_requested) AS memory_requested, array_agg(speed) AS speeds "
    "FROM (SELECT * FROM unnest($7::bigint[], $8::text[], $9::text[], $10::integer[], "
    "$11::float8[], $12::float8[], $13::bigint[], $14::bigint[], $15::float8[]) WITH ORDINALITY "
    "AS p(ord, name, type, index, cpu_used, cpu_requested, memory_used, memory_requested, speed, "
    "k) ORDER BY ord, k) p GROUP BY ord) "
    "INSERT INTO runtime_samples (event_id, job_uid, event_time_ms, global_step, speed, raw, "
    "pod_names, pod_types, pod_indexes, pod_cpu_used, pod_cpu_requested, pod_memory_used, "
    "pod_memory_requested, pod_speeds) "
    "SELECT s.event_id, s.job_uid, s.event_time_ms, s.global_step, s.speed, s.raw, "
    "COALESCE(p.names, '{}'), COALESCE(p.types, '{}'), COALESCE(p.indexes, '{}'), "
    "COALESCE(p.cpu_used, '{}'), COALESCE(p.cpu_requested, '{}'), COALESCE(p.memory_used, '{}'), "
    "COALESCE(p.memory_requested, '{}'), COALESCE(p.speeds, '{}') "
    "FROM s LEFT JOIN p ON p.ord = s.ord "
    "ON CONFLICT (job_uid, event_time_ms, event_id) DO NOTHING";

/* A pod named like an earlier one of the same sample: the statement of one
 * sample keeps the first, and so does this one, by dropping the repeat
 * before it is sent (pod names are unique within a sample, as runtime_pods'
 * primary key made them before migration 005). Found by sorting, not by a
 * scan per pod: 16,384 pods made that 134 million strcmp per sample.
 * *out: a flag per pod (NULL when there is none to drop), freed by the
 * caller. */
typedef struct pod_pos {
    const char *name;
    size_t pos;
} pod_pos_t;

static int pod_pos_cmp(const void *a, const void *b)
{
    const pod_pos_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static int pods_repeated(const dlb_runtime_sample_t *s, unsigned char **out)
{
    pod_pos_t *tmp;
    size_t i;

    *out = NULL;
    if (s->pods_cnt < 2)
        return 0;
    if (!(tmp = malloc(s->pods_cnt * sizeof(*tmp))))
        return DLB_ERR_NOMEM;
    for (i = 0; i < s->pods_cnt; i++)
        tmp[i] = (pod_pos_t){s->pods[i].name, i};
    qsort(tmp, s->pods_cnt, sizeof(*tmp), pod_pos_cmp);
    for (i = 1; i < s->pods_cnt; i++) {
        if (strcmp(tmp[i].name, tmp[i - 1].name))
            continue;
        if (!*out && !(*out = calloc(s->pods_cnt, 1))) {
            free(tmp);
            return DLB_ERR_NOMEM;
        }
        (*out)[tmp[i].pos] = 1;
    }
    free(tmp);
    return 0;
}

int dlb_pg_pods_put(const dlb_runtime_sample_t *rt, dlb_pg_arr_t *pods, dlb_pg_arr_t *ord,
                    int64_t ord_value)
{
    unsigned char *repeated = NULL;

    if (pods_repeated(rt, &repeated))
        return DLB_ERR_NOMEM;
    for (size_t k = 0; k < rt->pods_cnt; k++) {
        const dlb_pod_usage_t *pod = &rt->pods[k];

        if (repeated && repeated[k])
            continue;
        if (ord)
            dlb_pg_arr_i64(ord, ord_value);
        dlb_pg_arr_text(&pods[DLB_PG_POD_NAME], pod->name);
        dlb_pg_arr_text(&pods[DLB_PG_POD_TYPE], pod->type);
        dlb_pg_arr_i32(&pods[DLB_PG_POD_INDEX], pod->index);
        dlb_pg_arr_f64(&pods[DLB_PG_POD_CPU], pod->cpu_used);
        dlb_pg_arr_f64(&pods[DLB_PG_POD_CPU_REQ], pod->cpu_requested);
        dlb_pg_arr_i64(&pods[DLB_PG_POD_MEM], pod->memory_used);
        dlb_pg_arr_i64(&pods[DLB_PG_POD_MEM_REQ], pod->memory_requested);
        if (pod->has_speed)
            dlb_pg_arr_f64(&pods[DLB_PG_POD_SPEED], pod->speed);
        else
            dlb_pg_arr_null(&pods[DLB_PG_POD_SPEED]);
    }
    free(repeated);
    return 0;
}

int dlb_pg_sample_raw(dlb_pg_t *pg, const dlb_event_t *ev, const void **raw, size_t *raw_len,
                      void **owned, char *errstr, size_t errstr_size)
{
    int err;

    *owned = NULL;
    if (ev->type != DLB_EV_RUNTIME)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: a %s in a batch of runtime samples",
                          dlb_event_type_name(ev->type));
    if ((err = dlb_pg_raw_bytes(pg, ev, raw, raw_len, owned, errstr, errstr_size)))
        return err;
    if (*raw_len > (size_t)INT32_MAX) {
        free(*owned);
        *owned = NULL;
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "postgresql: event too large");
    }
    return 0;
}

static int runtime_batch_send(dlb_pg_t *pg, const dlb_event_t *const *evs, const void *const *raws,
                              const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size)
{
    static const uint32_t s_oid[S__CNT] = {DLB_PG_OID_TEXT, DLB_PG_OID_TEXT,   DLB_PG_OID_INT8,
                                           DLB_PG_OID_INT8, DLB_PG_OID_FLOAT8, DLB_PG_OID_BYTEA};
    static const uint32_t p_oid[P__CNT] = {DLB_PG_OID_INT8, DLB_PG_OID_TEXT,   DLB_PG_OID_TEXT,
                                           DLB_PG_OID_INT4, DLB_PG_OID_FLOAT8, DLB_PG_OID_FLOAT8,
                                           DLB_PG_OID_INT8, DLB_PG_OID_INT8,   DLB_PG_OID_FLOAT8};
    dlb_pg_arr_t s[S__CNT], p[P__CNT];
    const char *values[S__CNT + P__CNT];
    int lens[S__CNT + P__CNT];
    int err = 0;

    if (!n)
        return 0;
    for (int c = 0; c < S__CNT; c++)
        dlb_pg_arr_init(&s[c], s_oid[c]);
    for (int c = 0; c < P__CNT; c++)
        dlb_pg_arr_init(&p[c], p_oid[c]);
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)))
        goto out;
    for (size_t i = 0; i < n; i++) {
        const dlb_runtime_sample_t *rt = &evs[i]->u.rt;
        const void *raw = raws ? raws[i] : NULL;
        size_t raw_len = raw_lens ? raw_lens[i] : 0;
        void *owned = NULL;

        if ((err = dlb_pg_sample_raw(pg, evs[i], &raw, &raw_len, &owned, errstr, errstr_size)))
            goto out;
        dlb_pg_arr_text(&s[S_ID], rt->event_id);
        dlb_pg_arr_text(&s[S_JOB], rt->job_uid);
        dlb_pg_arr_i64(&s[S_TIME], rt->event_time_ms);
        dlb_pg_arr_i64(&s[S_STEP], rt->global_step);
        dlb_pg_arr_f64(&s[S_SPEED], rt->speed);
        dlb_pg_arr_put(&s[S_RAW], raw, (uint32_t)raw_len);
        free(owned);
        /* WITH ORDINALITY counts from 1 */
        if (dlb_pg_pods_put(rt, &p[P_NAME], &p[P_ORD], (int64_t)i + 1)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    for (int c = 0; c < S__CNT + P__CNT; c++) {
        dlb_pg_arr_t *a = c < S__CNT ? &s[c] : &p[c - S__CNT];
        if (dlb_pg_arr_finish(a)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (a->b.len > (size_t)INT32_MAX) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "postgresql: a batch of runtime samples too large for one statement");
            goto out;
        }
        values[c] = a->b.p;
        lens[c] = (int)a->b.len; /* > 0: binary */
    }
    /* libpq has copied the parameters out once this returns. */
    err = dlb_pg_send(pg, sql_batch, S__CNT + P__CNT, values, lens, DLB_PG_INPUT,
                      "runtime samples (batch)", errstr, errstr_size);
out:
    for (int c = 0; c < S__CNT; c++)
        free(s[c].b.p);
    for (int c = 0; c < P__CNT; c++)
        free(p[c].b.p);
    return err;
}

int dlb_pg_put_runtime_batch(dlb_pg_t *pg, const dlb_event_t *const *evs, const void *const *raws,
                             const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size)
{
    int err = runtime_batch_send(pg, evs, raws, raw_lens, n, errstr, errstr_size);

    return err ? err : dlb_pg_wait(pg, errstr, errstr_size);
}
