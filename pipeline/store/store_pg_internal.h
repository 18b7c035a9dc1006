/* What the files of the PostgreSQL store share (store_pg_conn.c: the
 * connection and its statement runners; store_migrate.c; store_pg.c: the
 * history writes; store_pg_read.c: the optimizer's reads; store_pg_batch.c;
 * store_config.c): the connection's state and its statement runners, with
 * store_pg_conn.c's error classification and reconnect rules, so there is
 * one of each. Not for other callers: code outside the store that holds a
 * PGconn has store_pg_conn.h. */
#ifndef DLB_STORE_PG_INTERNAL_H
#define DLB_STORE_PG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "lru.h"
#include "event.h"
#include "store_pg.h"
#include "store_pg_bin.h"
#include "store_pg_conn.h"
#include "store_pg_hcache.h"

typedef struct dlb_pg_hmemo dlb_pg_hmemo_t;
typedef struct dlb_pg_defer dlb_pg_defer_t;

struct dlb_pg {
    PGconn *conn;
    char *schema;
    unsigned prepared;  /* bit per DLB_PG_ST_* prepared on this connection */
    int in_tx;          /* between dlb_pg_begin() and commit/rollback */
    uint64_t runs;      /* prepared statements run on this connection */
    uint64_t replan_at; /* runs at which dlb_pg_begin() drops the plans next */
    /* dlb_pg_send() sent a statement dlb_pg_wait() has not collected */
    const char *pending_what;
    int pending_flags; /* of dlb_pg_send(), for dlb_pg_wait() */
    double pending_t0;
    char wait_state[6];      /* SQLSTATE of dlb_pg_wait()'s last error, "" if none */
    dlb_catalog_t *cat;      /* loaded on first decode/encode */
    dlb_pg_hcache_t *hcache; /* decoded history samples, made on first use */
    size_t hcache_budget;    /* its bytes (history.cache.mb) */
    int hcache_warm;         /* the last history load found half its samples or more there */
    dlb_lru_t *hkeys;        /* each similar job's sample keys, by uid (store_pg_read.c) */
    dlb_pg_hmemo_t *hmemo;   /* similar jobs read in this transaction (store_pg_hist_jobs.c) */
    uint64_t writes;         /* statements that may have changed a history */
    dlb_pg_defer_t *defer;   /* writes held for one round trip (store_pg_defer.c) */
};

/* OOM-killed pods read for a history or a job's answers, at most (the
 * newest win). */
#define DLB_PG_MAX_OOM_ROWS 100000

/* What the jobs table says of a job's samples (migration 014). */
typedef struct dlb_pg_hist_mark {
    int64_t seq;    /* statements that added some */
    int64_t max_ms; /* the newest one's event time, INT64_MIN: none */
} dlb_pg_hist_mark_t;

/** @brief The similar jobs of a history (dlb_pg_load_history) without their
 *         samples: the newest max_jobs of scenario created in the hours
 *         before until_ms but exclude_uid, newest first, each with its state,
 *         exit reason and OOM-killed pods as of until_ms; *marks (one per
 *         job, the caller frees) what the jobs table says of its samples.
 *         Within one transaction, a scenario's jobs read once serve its later
 *         requests where they answer exactly as the query would.
 *  @returns 0 or an error (h's jobs are then the caller's to clear). */
int dlb_pg_hist_jobs(dlb_pg_t *pg, const char *scenario, const char *exclude_uid, int64_t until_ms,
                     int hours, int max_jobs, dlb_history_t *h, dlb_pg_hist_mark_t **marks,
                     char *errstr, size_t errstr_size);
/** @brief Forget the jobs read in the transaction (it ended). */
void dlb_pg_hist_jobs_forget(dlb_pg_t *pg);

/* The prepared statements of every file: each its bit in dlb_pg.prepared and
 * its latency series (dlbrain_postgres_call_duration_seconds). */
enum {
    DLB_PG_ST_JOB,
    DLB_PG_ST_RUNTIME,
    DLB_PG_ST_NODE,
    DLB_PG_ST_REQUEST,
    DLB_PG_ST_REQUEST_PLAN,
    DLB_PG_ST_PLAN,
    DLB_PG_ST_JOB_REPLAY,
    DLB_PG_ST_HIST_JOBS,
    DLB_PG_ST_HIST_SAMPLES,
    DLB_PG_ST_HIST_RAW,
    DLB_PG_ST_HIST_SAMPLES_RAW,
    DLB_PG_ST_GET_PLAN,
    DLB_PG_ST_OOM_PLAN,
    DLB_PG_ST_OOM_PLANS,
    DLB_PG_ST__CNT
};

/* A statement prepared lazily on first use (tables must exist to prepare). */
typedef struct dlb_pg_stmt {
    int id;           /* DLB_PG_ST_* */
    const char *name; /* of the prepared statement, and its metric label */
    const char *sql;
    int history; /* writes events a history reads (pg->writes counts its runs) */
} dlb_pg_stmt_t;

/** @brief Run trusted text compiled into the binary, possibly several
 *         statements, with the simple query protocol (inside the caller's
 *         transaction, if any): a migration, the only SQL that is not a
 *         parameterised statement. @returns what dlb_pg_conn_exec() would. */
int dlb_pg_conn_script(PGconn *conn, const char *sql, const char *what, char *errstr,
                       size_t errstr_size);

/* The connection's own halves of dlb_pg_begin(), dlb_pg_commit(),
 * dlb_pg_rollback() and dlb_pg_destroy() (store_pg_tx.c adds what the
 * modules above the connection hold for a transaction). */
int dlb_pg_sql_begin(dlb_pg_t *pg, char *errstr, size_t errstr_size);
int dlb_pg_sql_commit(dlb_pg_t *pg, char *errstr, size_t errstr_size);
void dlb_pg_sql_rollback(dlb_pg_t *pg);
void dlb_pg_conn_free(dlb_pg_t *pg);

/** @brief Reconnect a lost connection, unless inside a dlb_pg_begin()
 *         transaction (then DLB_ERR_TRANSIENT: its writes died with it).
 *  @returns 0 or DLB_ERR_TRANSIENT. */
int dlb_pg_ensure(dlb_pg_t *pg, char *errstr, size_t errstr_size);

/** @returns 1 between dlb_pg_begin() and its commit or rollback, else 0. */
int dlb_pg_in_tx(const dlb_pg_t *pg);

/** @brief dlb_pg_conn_exec() on the store's connection, timed in the
 *         latency metric ("query") and its outcome in the readiness. */
int dlb_pg_exec(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, int flags, PGresult **out, const char *what, char *errstr,
                size_t errstr_size);

/** @brief dlb_pg_exec() of prepared statement st (prepared on first use on
 *         this connection; the error names it). */
int dlb_pg_run(dlb_pg_t *pg, const dlb_pg_stmt_t *st, int nparams, const char *const *values,
               const int *lens, int flags, PGresult **out, char *errstr, size_t errstr_size);

/* One call of a prepared statement whose rows nobody reads. */
typedef struct dlb_pg_call {
    const dlb_pg_stmt_t *st;
    int nparams;
    const char *const *values;
    const int *lens;
    int flags;
} dlb_pg_call_t;

/** @brief dlb_pg_run() of n calls in one round trip (libpq's pipeline
 *         mode), in order: each sees what the ones before it wrote, and the
 *         first that fails ends the round (the transaction is then aborted).
 *  @returns 0, or what dlb_pg_run() of the first failed call returns. */
int dlb_pg_run_all(dlb_pg_t *pg, const dlb_pg_call_t *calls, size_t n, char *errstr,
                   size_t errstr_size);

/** @brief dlb_pg_run() of a write whose rows nobody reads: held, while
 *         dlb_pg_defer_writes() is on inside a transaction, until the next
 *         dlb_pg_flush() (at the latest the commit), else run at once. */
int dlb_pg_write(dlb_pg_t *pg, const dlb_pg_stmt_t *st, int nparams, const char *const *values,
                 const int *lens, int flags, char *errstr, size_t errstr_size);
/** @returns 1 when a held write of st has v0 as parameter col0 and v1 as
 *           col1 (a read that would find its row flushes first). */
int dlb_pg_deferred(const dlb_pg_t *pg, const dlb_pg_stmt_t *st, int col0, const char *v0, int col1,
                    const char *v1);
/** @brief Forget the held writes (their transaction rolled back). */
void dlb_pg_defer_drop(dlb_pg_t *pg);
void dlb_pg_defer_free(dlb_pg_t *pg);

/** @brief dlb_pg_exec() in two halves, for work to overlap the server's:
 *         send the statement (no rows expected) and return; dlb_pg_wait()
 *         collects its outcome. Nothing else may use the connection between.
 *  @returns 0, or what dlb_pg_exec() returns when it cannot be sent. */
int dlb_pg_send(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, int flags, const char *what, char *errstr, size_t errstr_size);

/** @brief Wait for the statement dlb_pg_send() sent (0 when none is pending).
 *  @returns what dlb_pg_exec() would have. */
int dlb_pg_wait(dlb_pg_t *pg, char *errstr, size_t errstr_size);

/** @brief dlb_pg_send() of a COPY ... FROM STDIN: send sql (statements
 *         before the COPY, such as a SAVEPOINT, must return no rows), then
 *         the len bytes of data and the end of the copy, and return while the
 *         server stores them; dlb_pg_wait() collects the outcome.
 *  @returns 0, or what dlb_pg_exec() returns when it cannot be sent (the
 *           connection is then free again). */
int dlb_pg_send_copy(dlb_pg_t *pg, const char *sql, const char *data, size_t len, int flags,
                     const char *what, char *errstr, size_t errstr_size);

/** @returns the SQLSTATE of the error the last dlb_pg_wait() returned ("" when
 *           it returned 0 or the server sent none). */
const char *dlb_pg_wait_state(const dlb_pg_t *pg);

/** @brief Drop (dry_run: count) the partitions of history table `table`
 *         wholly older than before_ms, each in its own transaction, until
 *         none is left (*done) or the deadline (monotonic ms, 0 = none) has
 *         passed; adds their rows to *rows (store_partition.c). */
int dlb_pg_partitions_drop_before(dlb_pg_t *pg, const char *table, int64_t before_ms, int dry_run,
                                  int64_t deadline, int64_t *rows, int *done, char *errstr,
                                  size_t errstr_size);

/* A sample's pod_* arrays (migration 005), in the tables' column order. */
enum {
    DLB_PG_POD_NAME,
    DLB_PG_POD_TYPE,
    DLB_PG_POD_INDEX,
    DLB_PG_POD_CPU,
    DLB_PG_POD_CPU_REQ,
    DLB_PG_POD_MEM,
    DLB_PG_POD_MEM_REQ,
    DLB_PG_POD_SPEED,
    DLB_PG_POD__CNT
};

/** @brief Append rt's pods to pods[DLB_PG_POD__CNT] (the batch statement's
 *         flattened arrays, or one row's), and ord_value to ord for each when
 *         ord is not NULL. A pod repeating the name of an earlier one is
 *         left out (the first copy is kept, as runtime_pods' primary key kept
 *         it before migration 005).
 *  @returns 0 or DLB_ERR_NOMEM (the arrays' own errors are in their err). */
int dlb_pg_pods_put(const dlb_runtime_sample_t *rt, dlb_pg_arr_t *pods, dlb_pg_arr_t *ord,
                    int64_t ord_value);

/** @brief The frame to store for runtime sample ev (dlb_pg_raw_bytes()),
 *         refusing another event type (DLB_ERR_INVALID) and a frame too large
 *         for one field. *owned: what the caller frees. */
int dlb_pg_sample_raw(dlb_pg_t *pg, const dlb_event_t *ev, const void **raw, size_t *raw_len,
                      void **owned, char *errstr, size_t errstr_size);

/** @brief A malloc'ed copy of the first cell of a result's first row (a
 *         binary bytea); *raw = NULL and *raw_len = 0 when it has no row.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_pg_first_bytes(const PGresult *res, void **raw, size_t *raw_len, char *errstr,
                       size_t errstr_size);

/** @brief The framed bytes to store for ev: *raw when given (*raw_len > 0),
 *         else ev encoded now with the newest schema of its type into *owned
 *         (the caller frees it), *raw pointing at it. */
int dlb_pg_raw_bytes(dlb_pg_t *pg, const dlb_event_t *ev, const void **raw, size_t *raw_len,
                     void **owned, char *errstr, size_t errstr_size);

/** @brief Decode the stored frame in cell (row, col) of a binary result into
 *         ev (the caller dlb_event_clear()s it).
 *  @returns 0 or the codec's error, errstr saying a stored event is bad. */
int dlb_pg_decode_cell(dlb_pg_t *pg, const PGresult *res, int row, int col, dlb_event_t *ev,
                       char *errstr, size_t errstr_size);

#endif
