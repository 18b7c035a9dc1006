/* The consumed positions of a consumer group, kept in PostgreSQL beside the
 * rows (table consumer_positions, migration 009): written in the batch's
 * transaction, they say which input messages the committed rows already hold,
 * so a redelivered batch is recognised (docs/operations.md, "Exactly once in
 * PostgreSQL"). */
#include "store_pg.h"
#include "store_pg_internal.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "store_pg_bin.h"

int dlb_pg_load_positions(dlb_pg_t *pg, const char *group,
                          void (*cb)(void *arg, const dlb_pg_position_t *pos), void *arg,
                          char *errstr, size_t errstr_size)
{
    const char *values[1] = {group};
    PGresult *res;
    int err;

    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_exec(pg,
                           "SELECT topic, kafka_partition, next_offset FROM consumer_positions "
                           "WHERE consumer_group = $1",
                           1, values, NULL, 0, &res, "loading the consumed positions", errstr,
                           errstr_size)))
        return err;
    for (int i = 0; i < PQntuples(res); i++) {
        dlb_pg_position_t pos = {PQgetvalue(res, i, 0),
                                 (int32_t)strtol(PQgetvalue(res, i, 1), NULL, 10),
                                 strtoll(PQgetvalue(res, i, 2), NULL, 10)};
        cb(arg, &pos);
    }
    PQclear(res);
    return 0;
}

/* Rows locked in one order (topic, partition) by every writer, so two
 * members of a group saving during a rebalance wait for each other rather
 * than deadlock. */
static int pos_cmp(const void *a, const void *b)
{
    const dlb_pg_position_t *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);

    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

int dlb_pg_save_positions(dlb_pg_t *pg, const char *group, const dlb_pg_position_t *pos, size_t n,
                          char *errstr, size_t errstr_size)
{
    dlb_pg_position_t *sorted;
    dlb_pg_arr_t a[3];
    const char *values[4];
    int lens[4], err = 0;

    if (!n)
        return 0;
    if (!(sorted = malloc(n * sizeof(*sorted))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    memcpy(sorted, pos, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), pos_cmp);
    dlb_pg_arr_init(&a[0], DLB_PG_OID_TEXT);
    dlb_pg_arr_init(&a[1], DLB_PG_OID_INT4);
    dlb_pg_arr_init(&a[2], DLB_PG_OID_INT8);
    for (size_t i = 0; i < n; i++) {
        dlb_pg_arr_text(&a[0], sorted[i].topic);
        dlb_pg_arr_i32(&a[1], sorted[i].partition);
        dlb_pg_arr_i64(&a[2], sorted[i].next_offset);
    }
    values[0] = group;
    lens[0] = 0; /* text */
    for (int c = 0; c < 3; c++) {
        if (dlb_pg_arr_finish(&a[c])) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        values[c + 1] = a[c].b.p;
        lens[c + 1] = (int)a[c].b.len; /* > 0: binary */
    }
    if (!(err = dlb_pg_ensure(pg, errstr, errstr_size)))
        err = dlb_pg_exec(pg,
                          "INSERT INTO consumer_positions AS p (consumer_group, topic, "
                          "kafka_partition, next_offset) "
                          "SELECT $1, t, k, o FROM unnest($2::text[], $3::integer[], $4::bigint[]) "
                          "WITH ORDINALITY AS u(t, k, o, i) ORDER BY i "
                          "ON CONFLICT (consumer_group, topic, kafka_partition) DO UPDATE SET "
                          "next_offset = GREATEST(p.next_offset, EXCLUDED.next_offset), "
                          "updated_at = now()",
                          4, values, lens, 0, NULL, "saving the consumed positions", errstr,
                          errstr_size);
out:
    for (int c = 0; c < 3; c++)
        free(a[c].b.p);
    free(sorted);
    return err;
}
