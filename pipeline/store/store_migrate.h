/* Schema migrations: the one runner behind an environment's schema
 * (dlb_pg_migrate(), pipeline/store/sql/NNN_*.sql) and the environment
 * registry's (dlbrain_registry). Each schema records what was applied in
 * <schema>.schema_migrations. */
#ifndef DLB_STORE_MIGRATE_H
#define DLB_STORE_MIGRATE_H

#include <stddef.h>

#include <libpq-fe.h>

/* One migration: trusted SQL compiled into the binary, possibly several
 * statements (the only SQL not sent as a parameterised statement). */
typedef struct dlb_pg_migration {
    int version;      /* > 0, increasing through the set */
    const char *name; /* recorded and logged ("001_init.sql"); NULL: see dlb_pg_migrate_run() */
    const char *sql;
} dlb_pg_migration_t;

/** @brief Create schema when it is missing, and its schema_migrations table,
 *         then apply each migration not recorded there yet, in order, each in
 *         its own transaction with its record. Every transaction first takes
 *         pg_advisory_xact_lock("dlb", hashtext(schema)), so processes that
 *         migrate the same schema at once apply each migration once, and
 *         different schemas migrate independently.
 *  @param migrations  with names, schema_migrations is (version, name,
 *                     applied_at); without (every name NULL), it is
 *                     (version, applied_at), as the registry's has always been
 *  @returns 0, DLB_ERR_TRANSIENT (connection lost), or DLB_ERR_GENERIC (a
 *           migration failed and was rolled back, or the set is malformed). */
int dlb_pg_migrate_run(PGconn *conn, const char *schema, const dlb_pg_migration_t *migrations,
                       size_t cnt, char *errstr, size_t errstr_size);

#endif
