/* Retention of the PostgreSQL history (store_pg.h, dlb_pg_prune): what is
 * older than a cut-off by event time, under a per-environment advisory lock.
 *
 * The history tables are partitioned by event time (migration 012): the
 * partitions wholly older than the cut-off are dropped (store_partition.c: no
 * row-by-row DELETE, no dead rows for VACUUM), then the old rows of each
 * table's default partition, which holds what no partition covered, go in
 * bounded batches. The consumers' maintenance creates the partitions ahead of
 * now under the same lock, first. */
#include "store_pg.h"
#include "store_pg_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "clock.h"
#include "err.h"

/* First key of pg_advisory_lock(int, int) for pruning ("prn"); the second is
 * hashtext(current_schema()), so environments prune independently. A session
 * lock, not a transaction's: each batch commits on its own while it is held. */
#define PRUNE_LOCK_CLASS 0x70726e

/* clang-format off */
/* One batch of a default partition: the oldest batch_rows rows before the
 * cut-off, through its event-time index (migration 012), deleted by their
 * ctid (a TID scan, no second index lookup; a ctid names a row within one
 * table, which a partition is). Table names are constants, never input. */
#define BATCH_SQL(t)                                                                               \
    "DELETE FROM " t " WHERE ctid = ANY (ARRAY(SELECT ctid FROM " t                                \
    " WHERE event_time_ms < $1::bigint ORDER BY event_time_ms LIMIT $2::integer))"
#define COUNT_SQL(t) "SELECT count(*) FROM " t " WHERE event_time_ms < $1::bigint"
#define TABLE(t) {t, BATCH_SQL(t "_default"), COUNT_SQL(t "_default")}
/* clang-format on */

/* In the order of dlb_pg_history_table() (store_partition.c). */
static const struct {
    const char *name, *batch_sql, *count_sql;
} history[DLB_PG_HISTORY_TABLES] = {
    TABLE("job_events"),  TABLE("runtime_samples"), /* a sample's pods are in its row */
    TABLE("node_events"), TABLE("plan_requests"),   TABLE("plans"),
    TABLE("oom_plans"),   TABLE("config_matches"),
};

static int prune_lock(dlb_pg_t *pg, int wait, int *got, char *errstr, size_t errstr_size)
{
    char cls[24];
    const char *v[1] = {cls};
    PGresult *res;
    int err;

    snprintf(cls, sizeof(cls), "%d", PRUNE_LOCK_CLASS);
    if ((err = dlb_pg_exec(pg,
                           wait ? "SELECT pg_advisory_lock($1::integer, hashtext(current_schema()))"
                                  ", true"
                                : "SELECT pg_try_advisory_lock($1::integer, "
                                  "hashtext(current_schema()))",
                           1, v, NULL, 0, &res, "taking the prune lock", errstr, errstr_size)))
        return err;
    *got = PQgetvalue(res, 0, wait ? 1 : 0)[0] == 't';
    PQclear(res);
    return 0;
}

/* A lost connection took the lock with it; after another failure the lock is
 * released here, so the next prune is not locked out by this session. */
static void prune_unlock(dlb_pg_t *pg)
{
    char cls[24], sub[256];
    const char *v[1] = {cls};

    snprintf(cls, sizeof(cls), "%d", PRUNE_LOCK_CLASS);
    if (PQstatus(pg->conn) == CONNECTION_OK)
        (void)dlb_pg_exec(pg, "SELECT pg_advisory_unlock($1::integer, hashtext(current_schema()))",
                          1, v, NULL, 0, NULL, "releasing the prune lock", sub, sizeof(sub));
}

/* Table t's old partitions, then batches of its default partition until
 * none is left before the cut-off (*done) or the deadline (monotonic ms, 0 =
 * none) has passed. */
static int prune_table(dlb_pg_t *pg, size_t t, const dlb_pg_prune_opts_t *o, int64_t deadline,
                       int64_t *rows, int *done, char *errstr, size_t errstr_size)
{
    char before[24], batch[24];
    const char *v[2] = {before, batch};
    PGresult *res;
    int err;

    snprintf(before, sizeof(before), "%" PRId64, o->before_ms);
    snprintf(batch, sizeof(batch), "%d", o->batch_rows);
    if ((err = dlb_pg_partitions_drop_before(pg, history[t].name, o->before_ms, o->dry_run,
                                             deadline, rows, done, errstr, errstr_size)) ||
        !*done)
        return err;
    *done = 0;
    if (o->dry_run) {
        if ((err = dlb_pg_exec(pg, history[t].count_sql, 1, v, NULL, 0, &res,
                               "counting history to prune", errstr, errstr_size)))
            return err;
        *rows += strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        *done = 1;
        return 0;
    }
    for (;;) {
        int64_t n;

        if ((err = dlb_pg_exec(pg, history[t].batch_sql, 2, v, NULL, 0, &res, "pruning history",
                               errstr, errstr_size)))
            return err;
        n = strtoll(PQcmdTuples(res), NULL, 10);
        PQclear(res);
        *rows += n;
        if (n < o->batch_rows) {
            *done = 1;
            return 0;
        }
        if (deadline && dlb_clock_mono_ms() >= deadline)
            return 0;
    }
}

int dlb_pg_prune(dlb_pg_t *pg, const dlb_pg_prune_opts_t *o, dlb_pg_prune_result_t *out,
                 char *errstr, size_t errstr_size)
{
    int64_t deadline = o->budget_ms > 0 ? dlb_clock_mono_ms() + o->budget_ms : 0;
    int err, got = 0, done = 1;

    memset(out, 0, sizeof(*out));
    if (o->batch_rows < 1)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: a prune batch needs at least one row");
    if (dlb_pg_in_tx(pg))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: pruning inside a transaction would hold every batch's "
                          "locks until its end");
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = prune_lock(pg, o->wait, &got, errstr, errstr_size)))
        return err;
    if (!got) {
        out->busy = 1;
        return 0;
    }
    if (o->span_ms > 0 && (err = dlb_pg_partitions_ensure(pg, o->span_ms, o->ahead, o->now_ms,
                                                          &out->created, errstr, errstr_size)))
        goto out;
    for (size_t t = 0; t < DLB_PG_HISTORY_TABLES && done && o->before_ms; t++) {
        if ((err = prune_table(pg, t, o, deadline, &out->rows[t], &done, errstr, errstr_size)))
            break;
        out->total += out->rows[t];
    }
out:
    out->done = !err && done;
    prune_unlock(pg);
    return err;
}
