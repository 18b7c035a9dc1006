/* A store's transaction and life (store_pg.h): the connection's BEGIN,
 * COMMIT and ROLLBACK (store_pg_conn.c) with what the modules above it hold
 * for one transaction, the writes held for one round trip
 * (store_pg_defer.c) and the similar jobs read once (store_pg_hist_jobs.c),
 * so that the connection needs neither. */
#include "store_pg.h"
#include "store_pg_internal.h"

int dlb_pg_begin(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    /* Nothing held or read outlives its transaction. */
    dlb_pg_hist_jobs_forget(pg);
    dlb_pg_defer_drop(pg);
    return dlb_pg_sql_begin(pg, errstr, errstr_size);
}

int dlb_pg_commit(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    int err;

    if ((err = dlb_pg_flush(pg, errstr, errstr_size))) {
        dlb_pg_rollback(pg);
        return err;
    }
    dlb_pg_hist_jobs_forget(pg);
    return dlb_pg_sql_commit(pg, errstr, errstr_size);
}

void dlb_pg_rollback(dlb_pg_t *pg)
{
    dlb_pg_hist_jobs_forget(pg);
    dlb_pg_defer_drop(pg);
    dlb_pg_sql_rollback(pg);
}

PGconn *dlb_pg_detach(dlb_pg_t *pg)
{
    PGconn *conn = pg->conn;

    pg->conn = NULL;
    dlb_pg_destroy(pg);
    return conn;
}

void dlb_pg_destroy(dlb_pg_t *pg)
{
    if (!pg)
        return;
    dlb_pg_hist_jobs_forget(pg);
    dlb_pg_defer_free(pg);
    dlb_pg_conn_free(pg);
}
