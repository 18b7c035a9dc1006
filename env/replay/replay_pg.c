/* replay's PostgreSQL source: the raw frames the consumers stored in the
 * source environment's schema, read through a cursor in one snapshot, in
 * the order the consumers applied them. */
#include "replay_internal.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "err.h"
#include "sbuf.h"
#include "store_pg_conn.h"

/* Rows per FETCH: memory stays flat whatever the range holds. */
#define PG_FETCH_ROWS "1000"

/* SELECT topic index, job_uid, event_time_ms, event_id, raw of every chosen
 * table in the range ($1, $2), in the schema quoted as an identifier. */
static int history_sql(PGconn *pg, const dlb_replay_t *r, dlb_sbuf_t *sql, char *errstr,
                       size_t errstr_size)
{
    char part[256], *schema;
    int rc;

    if ((rc = dlb_pg_conn_ident(pg, r->o->schema, &schema, errstr, errstr_size)))
        return rc;
    for (size_t t = 0; t < r->st->topic_cnt && !rc; t++) {
        snprintf(part, sizeof(part),
                 "%sSELECT %zu::int4 AS t, job_uid, event_time_ms, event_id, raw FROM ",
                 t ? " UNION ALL " : "", t);
        if (dlb_sbuf_str(sql, part) || dlb_sbuf_str(sql, schema) || dlb_sbuf_str(sql, ".") ||
            dlb_sbuf_str(sql, dlb_replay_history_table(r->st->topics[t].name)) ||
            dlb_sbuf_str(sql, " WHERE event_time_ms >= $1 AND event_time_ms < $2"))
            rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    PQfreemem(schema);
    return rc;
}

static int64_t be64(const char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = (v << 8) | (unsigned char)p[i];
    return (int64_t)v;
}

static int history_rows(PGconn *pg, dlb_replay_t *r, char *errstr, size_t errstr_size)
{
    for (;;) {
        PGresult *res;
        int n, rc;

        if ((rc = dlb_pg_conn_exec(pg, "FETCH " PG_FETCH_ROWS " FROM dlb_replay", 0, NULL, NULL,
                                   DLB_PG_BINARY, &res, "fetch", errstr, errstr_size)))
            return rc;
        n = PQntuples(res);
        for (int i = 0; i < n && !rc && !dlb_replay_stopped(r); i++) {
            uint32_t t;
            int64_t ts;

            if (PQgetlength(res, i, 0) != 4 || PQgetlength(res, i, 2) != 8) {
                rc = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                                "postgresql: unexpected binary row layout");
                break;
            }
            memcpy(&t, PQgetvalue(res, i, 0), 4);
            t = ntohl(t);
            ts = be64(PQgetvalue(res, i, 2));
            if (t >= r->st->topic_cnt || !dlb_replay_in_range(r, t, ts))
                continue;
            rc = dlb_replay_send(r, t, PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1),
                                 PQgetvalue(res, i, 4), (size_t)PQgetlength(res, i, 4), NULL, ts,
                                 errstr, errstr_size);
        }
        PQclear(res);
        if (rc || n == 0 || dlb_replay_stopped(r))
            return rc;
    }
}

/* Run prefix sel suffix with the range as $1 and $2; *out (if given) the
 * result, to PQclear(). */
static int history_exec(PGconn *pg, const char *prefix, const char *sel, const char *suffix,
                        const char *const *range, PGresult **out, const char *what, char *errstr,
                        size_t errstr_size)
{
    dlb_sbuf_t q = {0};
    int rc;

    if (dlb_sbuf_str(&q, prefix) || dlb_sbuf_str(&q, sel) || dlb_sbuf_str(&q, suffix))
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    else
        rc = dlb_pg_conn_exec(pg, q.p, 2, range, NULL, 0, out, what, errstr, errstr_size);
    free(q.p);
    return rc;
}

int dlb_replay_from_pg(const dlb_conf_t *conf, dlb_replay_t *r, char *errstr, size_t errstr_size)
{
    char from[24], to[24];
    const char *params[2] = {from, to};
    dlb_sbuf_t sel = {0};
    PGconn *pg = NULL;
    PGresult *res;
    int rc;

    snprintf(from, sizeof(from), "%" PRId64, r->o->from_ms);
    snprintf(to, sizeof(to), "%" PRId64, r->o->to_ms);
    if ((rc = dlb_pg_open(&pg, conf->pg_dsn, errstr, errstr_size)) ||
        (rc = history_sql(pg, r, &sel, errstr, errstr_size)))
        goto out;
    /* One snapshot for the count and the rows; a cursor keeps memory flat. */
    if ((rc = dlb_pg_conn_exec(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL,
                               0, NULL, "begin", errstr, errstr_size)) ||
        (rc = history_exec(pg, "SELECT count(*) FROM (", sel.p, ") u", params, &res, r->o->schema,
                           errstr, errstr_size)))
        goto out;
    r->st->total = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    /* Event time, then event id (bytewise, "C" collation), then topic: the
     * order the consumers apply a job's events in; then the job, as two jobs
     * may use the same event id, so a replay is the same every time. */
    if ((rc = history_exec(pg, "DECLARE dlb_replay NO SCROLL CURSOR FOR ", sel.p,
                           " ORDER BY 3, 4, 1, 2", params, NULL, "declare cursor", errstr,
                           errstr_size)))
        goto out;
    rc = history_rows(pg, r, errstr, errstr_size);
out:
    free(sel.p);
    PQfinish(pg);
    return rc;
}
