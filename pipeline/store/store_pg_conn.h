/* A libpq connection for code that works with PGconn itself (the environment
 * registry, the evaluator, replay, benchmarks): open it as the store does,
 * run one parameterised statement and classify its failure the store's way,
 * so a lost server reads as DLB_ERR_TRANSIENT everywhere. The store's own
 * connections (dlb_pg_t, store_pg.h) run on the same functions. */
#ifndef DLB_STORE_PG_CONN_H
#define DLB_STORE_PG_CONN_H

#include <stddef.h>

#include <libpq-fe.h>

#include "store_pg.h"

/* Flags of dlb_pg_conn_exec(). */
#define DLB_PG_BINARY 1 /* results in binary format (bytea as raw bytes) */
/* The statement carries the caller's input (a record's values): a data
 * exception (class 22: a value that does not convert, is out of range or not
 * in the encoding), a broken constraint (class 23) or a trigger's refusal
 * (P0001, RAISE EXCEPTION) is then DLB_ERR_INVALID, the record's fault,
 * rather than DLB_ERR_GENERIC. */
#define DLB_PG_INPUT 2

/** @brief Connect with a libpq conninfo string (empty or NULL = libpq's PG*
 *         environment), a 10 s connect timeout unless the string sets one,
 *         and notices logged at debug level instead of printed on stderr.
 *  @param out  set to the connection, the caller's to PQfinish(); NULL on error
 *  @returns 0, DLB_ERR_CONF (malformed dsn), DLB_ERR_TRANSIENT (unreachable,
 *           errstr has libpq's reason) or DLB_ERR_NOMEM. */
int dlb_pg_open(PGconn **out, const char *dsn, char *errstr, size_t errstr_size);

/** @brief Free pg (dlb_pg_connect()) but keep its connection, with its
 *         search_path, for a caller that works with the PGconn itself.
 *  @returns the connection, the caller's to PQfinish(). */
PGconn *dlb_pg_detach(dlb_pg_t *pg);

/** @brief Run one parameterised statement (PQexecParams, unnamed).
 *  @param values  text parameters, except those with lens[i] > 0, which are
 *                 binary (bytea); lens may be NULL (all text)
 *  @param flags   DLB_PG_BINARY, DLB_PG_INPUT, or 0
 *  @param out     the result, PQclear() it; NULL to drop it
 *  @param what    names the statement in errstr
 *  @returns 0; DLB_ERR_TRANSIENT (connection lost: SQLSTATE class 08, 57P
 *           shutdown or crash recovery), after which the same work succeeds
 *           on a new connection; DLB_ERR_INVALID (with DLB_PG_INPUT); else
 *           DLB_ERR_GENERIC. errstr holds what, the server's message and the
 *           SQLSTATE. */
int dlb_pg_conn_exec(PGconn *conn, const char *sql, int nparams, const char *const *values,
                     const int *lens, int flags, PGresult **out, const char *what, char *errstr,
                     size_t errstr_size);

/** @brief Whether schema holds the tables a reader needs, so a typo in an
 *         environment name does not read as an environment with no jobs.
 *  @param tables  a PostgreSQL text array literal, e.g. "{jobs,runtime_samples}"
 *  @param ntables how many names it holds
 *  @returns 0; DLB_ERR_NOTFOUND naming the schema ("no such environment"
 *           when none is there, else the first missing table); an error of
 *           dlb_pg_conn_exec(). */
int dlb_pg_conn_check_tables(PGconn *conn, const char *schema, const char *tables, int ntables,
                             char *errstr, size_t errstr_size);

/** @brief BEGIN, then wait for pg_advisory_xact_lock(lock_class, hashtext(key)):
 *         the transactions of every process taking the same pair run one at
 *         a time. Rolled back when it fails. */
int dlb_pg_conn_begin_locked(PGconn *conn, int lock_class, const char *key, char *errstr,
                             size_t errstr_size);

/** @brief Roll back the open transaction, if any; never fails (a broken
 *         connection has nothing to roll back). */
void dlb_pg_conn_rollback(PGconn *conn);

/** @brief name quoted as an SQL identifier (an identifier cannot be a
 *         parameter), into *out, the caller's to PQfreemem().
 *  @returns 0 or an error (out of memory, an encoding libpq refuses). */
int dlb_pg_conn_ident(PGconn *conn, const char *name, char **out, char *errstr, size_t errstr_size);

#endif
