/* The environment registry: which environments exist, which one is real,
 * and the history of every change, in PostgreSQL schema dlbrain_registry
 * (shared by every environment of one database).
 *
 * An environment is a name that prefixes its topics (<name>.plans), consumer
 * groups (<name>.<role>), PostgreSQL schema (<name>) and Redis keys
 * (<name>:...), plus the optimizer set and settings its consumers run. At
 * most one environment is real; a promotion swaps it in one transaction.
 *
 * Every statement is parameterised (PQexecParams). Functions that change the
 * registry run one transaction each, so they must not be called inside the
 * caller's own transaction. */
#ifndef DLB_ENV_REGISTRY_H
#define DLB_ENV_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#define DLB_ENV_REGISTRY_SCHEMA "dlbrain_registry"
#define DLB_ENV_NAME_MAX        48 /* leaves room for ".plan-requests" in a topic name */

typedef enum { DLB_ENV_VIRTUAL = 0, DLB_ENV_REAL = 1 } dlb_env_kind_t;

typedef struct dlb_env {
    char name[DLB_ENV_NAME_MAX + 1];
    dlb_env_kind_t kind;
    char optimizer_set[32]; /* "dlrover" or "dlbrain" */
    char *settings;         /* JSON object of further key -> value settings, malloc'ed */
    char *description;      /* malloc'ed, may be "" */
    int64_t created_ms;
    int64_t changed_ms; /* last create, promote or demote */
    int64_t dropped_ms; /* 0 while live */
    int standby;        /* the pre-chosen virtual one automatic failover promotes (env_roles.h) */
} dlb_env_t;

/* One row of the append-only history. */
typedef struct dlb_env_change {
    int64_t id;
    int64_t at_ms;
    char action[16]; /* create, promote, demote, drop, standby, unstandby, pin, unpin, mark */
    char name[DLB_ENV_NAME_MAX + 1];
    char *detail; /* JSON object, malloc'ed */
    char by_user[64];
} dlb_env_change_t;

/** @brief Connect to the registry's database (libpq conninfo dsn; empty =
 *         libpq's PG* environment), with a 10 s connect timeout.
 *  @returns 0, DLB_ERR_CONF (malformed dsn) or DLB_ERR_TRANSIENT (unreachable). */
int dlb_env_registry_connect(const char *dsn, PGconn **out, char *errstr, size_t errstr_size);

/** @brief Keep *pg a usable connection to the registry: a broken one is
 *         closed, a missing one connected (dlb_env_registry_connect) and
 *         migrated (dlb_env_registry_migrate); a live one is left as it is.
 *  @returns 0, or the error of connecting or migrating (*pg NULL then). */
int dlb_env_registry_open(const char *dsn, PGconn **pg, char *errstr, size_t errstr_size);

/** @brief Create schema dlbrain_registry and its tables when missing
 *         (idempotent; serialised across processes by an advisory lock). */
int dlb_env_registry_migrate(PGconn *pg, char *errstr, size_t errstr_size);

/** @returns 0 when name is a valid environment name ([a-z][a-z0-9_]*, at most
 *           DLB_ENV_NAME_MAX, not the registry's schema), else DLB_ERR_INVALID
 *           with errstr saying why. */
int dlb_env_name_check(const char *name, char *errstr, size_t errstr_size);

/** @brief Look a live (not dropped) environment up.
 *  @returns 0, DLB_ERR_NOTFOUND (unknown or dropped), or another error (errstr). */
int dlb_env_get(PGconn *pg, const char *name, dlb_env_t *out, char *errstr, size_t errstr_size);

/** @brief Like dlb_env_get, dropped environments included (dropped_ms > 0). */
int dlb_env_get_any(PGconn *pg, const char *name, dlb_env_t *out, char *errstr, size_t errstr_size);

/** @brief The name of the real environment.
 *  @returns 0, DLB_ERR_NOTFOUND (none is real), or another error. */
int dlb_env_real(PGconn *pg, char *name, size_t name_size, char *errstr, size_t errstr_size);

/** @brief Every live environment, by name. *out is malloc'ed (NULL when none);
 *         free with dlb_env_list_free(). */
int dlb_env_list(PGconn *pg, dlb_env_t **out, size_t *cnt, char *errstr, size_t errstr_size);

/** @brief Like dlb_env_list, with dropped environments when include_dropped. */
int dlb_env_list_all(PGconn *pg, int include_dropped, dlb_env_t **out, size_t *cnt, char *errstr,
                     size_t errstr_size);

/** @brief Register env (name, kind, optimizer_set, settings (NULL = {}),
 *         description (NULL = "")) and record a "create" history row. A
 *         dropped environment of that name is brought back.
 *  @param by_user  who asked (NULL = the database user)
 *  @returns 0, DLB_ERR_INVALID (bad name, set or settings; the name is live
 *           already; env is real and another live one is real), or another error. */
int dlb_env_create(PGconn *pg, const dlb_env_t *env, const char *by_user, char *errstr,
                   size_t errstr_size);

/** @brief Mark name dropped (and no longer the standby), with a "drop" history row whose detail
 * records purge (whether its topics, schema and keys are being deleted). Dropping a dropped
 * environment again records another row only when purge is set.
 *  @returns 0, DLB_ERR_NOTFOUND, DLB_ERR_INVALID (it is the real one), or
 *           another error. */
int dlb_env_drop(PGconn *pg, const char *name, int purge, const char *by_user, char *errstr,
                 size_t errstr_size);

/** @brief The history, oldest first; only rows of name unless NULL. *out is
 *         malloc'ed (NULL when none); free with dlb_env_history_free(). */
int dlb_env_history(PGconn *pg, const char *name, dlb_env_change_t **out, size_t *cnt, char *errstr,
                    size_t errstr_size);

/** @brief Refuse settings that hold a secret (dlb_conf_secret: redis.password,
 *         a pg.dsn with a password, sasl.password, ...): the registry keeps
 *         them, and its history keeps them for good, readable by every user
 *         of the database. dlb_env_create calls it.
 *  @param settings  a JSON object of strings (NULL or "" = {})
 *  @returns 0, or DLB_ERR_INVALID (not a JSON object, or a secret: errstr
 *           names its key and what to use instead). */
int dlb_env_settings_check(const char *settings, char *errstr, size_t errstr_size);

/** @brief JSON text (settings, or a history row's detail) with every secret
 *         among the strings of its objects, nested ones too, masked
 *         (dlb_conf_mask), for printing one stored before secrets were
 *         refused. *out is malloc'ed: json itself, byte for byte, when
 *         nothing is masked.
 *  @returns 0, DLB_ERR_DECODE (not JSON) or DLB_ERR_NOMEM. */
int dlb_env_json_mask(const char *json, char **out);

void dlb_env_clear(dlb_env_t *env);
void dlb_env_list_free(dlb_env_t *envs, size_t cnt);
void dlb_env_history_free(dlb_env_change_t *changes, size_t cnt);

/** @returns "real" or "virtual". */
const char *dlb_env_kind_name(dlb_env_kind_t kind);

#endif
