/* What env_registry.c and env_roles.c share: one parameterised statement,
 * the change transaction (BEGIN + the registry's advisory lock, COMMIT), the
 * history row, and the steps of a switch. Not for other modules: they go
 * through env_registry.h and env_roles.h. */
#ifndef DLB_ENV_REGISTRY_INTERNAL_H
#define DLB_ENV_REGISTRY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#define DLB_ENV_REG_S DLB_ENV_REGISTRY_SCHEMA "."

/* One statement, text in and out; *out (if given) to PQclear(). */
int dlb_env_reg_exec(PGconn *pg, const char *sql, int nparams, const char *const *values,
                     PGresult **out, const char *what, char *errstr, size_t size);
/* BEGIN, then wait for other changers of the registry. */
int dlb_env_reg_begin(PGconn *pg, char *errstr, size_t size);
/* COMMIT (rolled back when it fails). */
int dlb_env_reg_commit(PGconn *pg, char *errstr, size_t size);
/* Inside a change transaction: the live real environment ("" if none). */
int dlb_env_reg_real_locked(PGconn *pg, char *real, size_t real_size, char *errstr, size_t size);
/* Inside a change transaction: name's row, locked. */
int dlb_env_reg_env_locked(PGconn *pg, const char *name, int *exists, int *live, int *real,
                           char *errstr, size_t size);
int dlb_env_reg_set_kind(PGconn *pg, const char *name, const char *kind, char *errstr, size_t size);
/* A history row: $1 action, $2 name, $3 by_user, $4.. detail_values (at most 5). */
int dlb_env_reg_history_add(PGconn *pg, const char *action, const char *name,
                            const char *detail_sql, const char *const *detail_values,
                            int detail_cnt, const char *by_user, char *errstr, size_t size);
/* Inside a change transaction: real (may be "") becomes virtual, name real
 * (and not the standby), with a demote and a promote row; detail is a JSON
 * object merged into the promote row's (was, cause). switch_id: the promote
 * row's id. */
int dlb_env_reg_switch(PGconn *pg, const char *name, const char *real, const char *cause,
                       const char *detail, const char *by_user, int64_t *switch_id, char *errstr,
                       size_t size);
/* Inside a change transaction: set the pin, with a pin or unpin row naming
 * the real one when it changes. */
int dlb_env_reg_pin_locked(PGconn *pg, int pinned, const char *real, const char *by_user,
                           char *errstr, size_t size);

#endif
