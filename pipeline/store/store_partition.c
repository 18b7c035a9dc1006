/* Time partitions of the history tables (migration 012, store_pg.h): made
 * ahead of now by the consumers' maintenance, dropped whole by retention
 * (store_prune.c). The DDL is the schema's own functions
 * (history_partitions_ensure, history_partition_drop), so every identifier is
 * quoted by format('%I') on the server and this side only passes values. */
#include "store_pg.h"
#include "store_pg_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "clock.h"
#include "err.h"

/* Creating or dropping a partition locks its parent table. A consumer's
 * batch holds it for tens of milliseconds, an analyst's query possibly for
 * minutes; while the DDL waits, every insert queues behind it, so it gives up
 * after a second and the next round tries again. */
#define PARTITION_LOCK_TIMEOUT_SQL "SET LOCAL lock_timeout = '1s'"

/* One statement in its own transaction under the lock timeout; *out (if
 * asked) is the statement's result, the caller's to PQclear(). */
static int part_tx(dlb_pg_t *pg, const char *sql, int n, const char *const *v, PGresult **out,
                   const char *what, char *errstr, size_t errstr_size)
{
    int err;

    if ((err = dlb_pg_begin(pg, errstr, errstr_size)))
        return err;
    if ((err = dlb_pg_exec(pg, PARTITION_LOCK_TIMEOUT_SQL, 0, NULL, NULL, 0, NULL, what, errstr,
                           errstr_size)) ||
        (err = dlb_pg_exec(pg, sql, n, v, NULL, 0, out, what, errstr, errstr_size)) ||
        (err = dlb_pg_commit(pg, errstr, errstr_size))) {
        if (out && *out) {
            PQclear(*out);
            *out = NULL;
        }
        if (dlb_pg_in_tx(pg))
            dlb_pg_rollback(pg);
    }
    return err;
}

/* The history tables, partitioned by event time (migration 012). */
static const char *const history_tables[DLB_PG_HISTORY_TABLES] = {
    "job_events", "runtime_samples", "node_events",    "plan_requests",
    "plans",      "oom_plans",       "config_matches",
};

const char *dlb_pg_history_table(size_t i)
{
    return i < DLB_PG_HISTORY_TABLES ? history_tables[i] : NULL;
}

int dlb_pg_partitions_ensure(dlb_pg_t *pg, int64_t span_ms, int ahead, int64_t now_ms, int *created,
                             char *errstr, size_t errstr_size)
{
    char span[24], from[24], to[24];
    const char *v[4] = {NULL, span, from, to};

    *created = 0;
    if (span_ms < 1 || ahead < 0)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: partitions need a span of at least 1 ms and ahead >= 0");
    if (dlb_pg_in_tx(pg))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: creating partitions inside a transaction would hold its "
                          "tables locked until its end");
    /* The span now is in and `ahead` more, so a span begins with its
     * partition there; and the span before, for events that arrive late
     * across its end (a first start, an upgrade a day after the migration). */
    snprintf(span, sizeof(span), "%" PRId64, span_ms);
    snprintf(from, sizeof(from), "%" PRId64, now_ms - span_ms);
    snprintf(to, sizeof(to), "%" PRId64, now_ms + (int64_t)ahead * span_ms + 1);
    for (size_t t = 0; t < DLB_PG_HISTORY_TABLES; t++) {
        PGresult *res = NULL;
        int err;

        v[0] = dlb_pg_history_table(t);
        if ((err = part_tx(pg,
                           "SELECT history_partitions_ensure($1, $2::bigint, $3::bigint, "
                           "$4::bigint)",
                           4, v, &res, "creating history partitions", errstr, errstr_size)))
            return err;
        *created += atoi(PQgetvalue(res, 0, 0));
        PQclear(res);
    }
    return 0;
}

/* The report's bound per table: counting a large default partition (a
 * replayed past, a soak's fixed clock) would read all of it every round. */
#define DEFAULT_ROWS_MAX "10000"

int dlb_pg_partitions_default_rows(dlb_pg_t *pg, int64_t *rows, char *errstr, size_t errstr_size)
{
    const char *v[1] = {DEFAULT_ROWS_MAX};
    PGresult *res;
    int err;

    *rows = 0;
    /* clang-format off */
#define N(t) "(SELECT count(*) FROM (SELECT FROM " t "_default LIMIT $1::bigint) d)"
    if ((err = dlb_pg_exec(pg,
                           "SELECT " N("job_events") " + " N("runtime_samples") " + "
                           N("node_events") " + " N("plan_requests") " + " N("plans") " + "
                           N("oom_plans") " + " N("config_matches"),
                           1, v, NULL, 0, &res, "counting the default partitions' rows", errstr,
                           errstr_size)))
        return err;
#undef N
    /* clang-format on */
    *rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

int dlb_pg_partitions_drop_before(dlb_pg_t *pg, const char *table, int64_t before_ms, int dry_run,
                                  int64_t deadline, int64_t *rows, int *done, char *errstr,
                                  size_t errstr_size)
{
    char before[24];
    const char *v[3] = {table, before, dry_run ? "true" : "false"};
    PGresult *res;
    int err = 0, n;

    *done = 0;
    snprintf(before, sizeof(before), "%" PRId64, before_ms);
    /* Wholly older than the cut-off: its upper bound (exclusive) at or
     * before it. The partition holding the cut-off stays whole, so a row goes
     * at most one span after it left the window. */
    if ((err = dlb_pg_exec(pg,
                           "SELECT name FROM history_partitions($1) WHERE hi <= $2::bigint "
                           "ORDER BY lo",
                           2, v, NULL, 0, &res, "listing old history partitions", errstr,
                           errstr_size)))
        return err;
    n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        const char *dv[3] = {table, PQgetvalue(res, i, 0), v[2]};
        PGresult *r = NULL;

        if ((err = part_tx(pg, "SELECT history_partition_drop($1, $2, $3::boolean)", 3, dv, &r,
                           dry_run ? "counting an old history partition"
                                   : "dropping an old history partition",
                           errstr, errstr_size)))
            break;
        *rows += strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        if (i + 1 < n && deadline && dlb_clock_mono_ms() >= deadline)
            goto out; /* more next round */
    }
    if (!err)
        *done = 1;
out:
    PQclear(res);
    return err;
}
