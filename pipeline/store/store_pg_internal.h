/* For the modules of the PostgreSQL store beside store_pg.c (store_config.c,
 * env_registry.c):
 * the connection's statement runner, with store_pg.c's error classification
 * and reconnect rules, so there is one of each. Not for other callers. */
#ifndef DLB_STORE_PG_INTERNAL_H
#define DLB_STORE_PG_INTERNAL_H

#include <stddef.h>

#include <libpq-fe.h>

#include "event.h"
#include "store_pg.h"

/** @brief Fill errstr from a failed libpq call on conn (res may be NULL) and
 *         classify it: a lost connection, SQLSTATE class 08 (connection
 *         exception) or 57P (shutdown, crash recovery) is DLB_ERR_TRANSIENT,
 *         anything else DLB_ERR_GENERIC. @returns the class. */
int dlb_pg_conn_fail(PGconn *conn, const PGresult *res, const char *what, char *errstr,
                     size_t errstr_size);

/** @brief Free pg but keep its connection (notices logged, search_path set)
 *         for a caller that works with libpq directly (env_registry.c).
 *  @returns the connection, the caller's to PQfinish(). */
PGconn *dlb_pg_detach(dlb_pg_t *pg);

/** @brief A libpq notice processor (PQsetNoticeProcessor) that logs notices
 *         ("relation already exists, skipping") at debug level, not stderr. */
void dlb_pg_notice(void *arg, const char *msg);

/** @brief Reconnect a lost connection, unless inside a dlb_pg_begin()
 *         transaction (then DLB_ERR_TRANSIENT: its writes died with it).
 *  @returns 0 or DLB_ERR_TRANSIENT. */
int dlb_pg_ensure(dlb_pg_t *pg, char *errstr, size_t errstr_size);

/** @returns 1 between dlb_pg_begin() and its commit or rollback, else 0. */
int dlb_pg_in_tx(const dlb_pg_t *pg);

/** @brief Run one parameterised statement (PQexecParams, unnamed).
 *  @param values  text parameters, except those with lens[i] > 0, which are
 *                 binary (bytea); lens may be NULL (all text)
 *  @param binary_result  results in binary format (bytea as raw bytes)
 *  @param out     the result, PQclear() it; NULL to drop it
 *  @param what    names the statement in errstr
 *  @returns 0, DLB_ERR_TRANSIENT (connection lost, server shutting down) or
 *           DLB_ERR_GENERIC, errstr holding the server's message and SQLSTATE. */
int dlb_pg_exec(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, int binary_result, PGresult **out, const char *what, char *errstr,
                size_t errstr_size);

/** @brief dlb_pg_exec() in two halves, for work to overlap the server's:
 *         send the statement (no rows expected) and return; dlb_pg_wait()
 *         collects its outcome. Nothing else may use the connection between.
 *  @returns 0, or what dlb_pg_exec() returns when it cannot be sent. */
int dlb_pg_send(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                const int *lens, const char *what, char *errstr, size_t errstr_size);

/** @brief Wait for the statement dlb_pg_send() sent (0 when none is pending).
 *  @returns what dlb_pg_exec() would have. */
int dlb_pg_wait(dlb_pg_t *pg, char *errstr, size_t errstr_size);

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

#endif
