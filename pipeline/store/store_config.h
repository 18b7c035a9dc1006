/* Versioned configuration rules in PostgreSQL (the environment's schema).
 *
 * Every apply makes a new version; versions are never changed or deleted,
 * so they are the audit trail, and a rollback is a new version holding an old
 * version's rules ("rollback of N"), like a Kubernetes rollout undo. A
 * version's rules are stored one row per rule, in their applied order, in a
 * canonical JSON form (dlb_rules_to_json() of rules.h, with the file and line
 * each rule came from), with a SHA-256 checksum over the whole set's canonical
 * JSON without file and line (DLB_RULES_JSON_NO_SOURCE), so two versions with
 * the same rules in the same order have the same checksum whatever files and
 * layout they came from: `dlbrain config show` output applied again gives
 * the checksum it was shown with. The newest version is the current one.
 * Consumers poll dlb_cfg_latest() and load a version when it changes; a load
 * checks the rules read against the checksum.
 *
 * Every statement is parameterised. An apply is one transaction: its version
 * row and all its rules, or nothing. Concurrent appliers are serialised
 * (a transaction-level advisory lock), so versions are dense and ordered. */
#ifndef DLB_STORE_CONFIG_H
#define DLB_STORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "rules.h"
#include "store_pg.h"

/* One version, as listed. */
typedef struct dlb_cfg_version {
    int64_t version;     /* 1, 2, ... */
    int64_t created_ms;  /* wall clock of the apply, ms since the epoch */
    char source[256];    /* who applied it: "cli", "configmap:<dir>", "rollback" */
    char message[512];   /* the applier's message, "" if none */
    int64_t rollback_of; /* the version it copies, 0 if not a rollback */
    int64_t rules;       /* number of rules */
    char checksum[65];   /* hex SHA-256 of the canonical rules */
} dlb_cfg_version_t;

/** @brief Store rules as a new version, atomically.
 *  @param pg       a connection (dlb_pg_migrate() done); not inside a
 *                  dlb_pg_begin() transaction: the apply is its own
 *  @param rules    the rule set in applied order (may be empty: a version
 *                  with no rules is how every rule is removed)
 *  @param source   who applies ("cli", "configmap:/etc/dlbrain/rules", ...)
 *  @param message  free text for the audit trail, may be NULL
 *  @param out      the new version's row (version, checksum, ...); zeroed on error
 *  @returns 0, DLB_ERR_INVALID (a rule dlb_rules_to_json() refuses),
 *           DLB_ERR_TRANSIENT (connection lost: nothing applied, unless it was
 *           lost during the COMMIT; dlb_cfg_latest() tells), DLB_ERR_GENERIC
 *           (e.g. called inside a transaction, or a Configure string holding
 *           \u0000, which PostgreSQL's jsonb cannot store). */
int dlb_cfg_apply(dlb_pg_t *pg, const dlb_rules_t *rules, const char *source, const char *message,
                  dlb_cfg_version_t *out, char *errstr, size_t errstr_size);

/** @brief The newest version's row; out->version = 0 when none was ever applied.
 *  @returns 0 or an error. */
int dlb_cfg_latest(dlb_pg_t *pg, dlb_cfg_version_t *out, char *errstr, size_t errstr_size);

/** @brief One version's row. @returns 0, DLB_ERR_NOTFOUND, or an error. */
int dlb_cfg_get(dlb_pg_t *pg, int64_t version, dlb_cfg_version_t *out, char *errstr,
                size_t errstr_size);

/** @brief Every version, oldest first. *out is malloc'ed (NULL when none).
 *  @returns 0 or an error. */
int dlb_cfg_list(dlb_pg_t *pg, dlb_cfg_version_t **out, size_t *cnt, char *errstr,
                 size_t errstr_size);

/** @brief The rules of a version, in applied order, with the file and line
 *         each came from.
 *  @param version  the version, or 0 for the newest (none applied: empty
 *                  rules and *loaded = 0)
 *  @param out      filled; dlb_rules_clear() it
 *  @param loaded   the version loaded (may be NULL)
 *  @returns 0, DLB_ERR_NOTFOUND (no such version), DLB_ERR_GENERIC (rows that
 *           do not read back or do not match the version's checksum: changed
 *           behind dlbrain's back), or another error. */
int dlb_cfg_load(dlb_pg_t *pg, int64_t version, dlb_rules_t *out, int64_t *loaded, char *errstr,
                 size_t errstr_size);

/** @brief A new version with the rules of version `to` (file and line
 *         included) and its checksum, source "rollback", rollback_of = to;
 *         its own transaction, like dlb_cfg_apply().
 *  @returns 0, DLB_ERR_NOTFOUND (no such version), or an error. */
int dlb_cfg_rollback(dlb_pg_t *pg, int64_t to, const char *message, dlb_cfg_version_t *out,
                     char *errstr, size_t errstr_size);

/** @brief Persist a match result (table config_matches), idempotent by its
 *         job and event id; part of the caller's open transaction. rule_ids become a
 *         jsonb array, values a jsonb object of key -> value (their JSON text).
 *  @param raw  the framed bytes as sent; NULL or raw_len 0: m encoded now
 *  @returns 0, DLB_ERR_INVALID (no event id or job uid), DLB_ERR_TRANSIENT,
 *           DLB_ERR_GENERIC. */
int dlb_cfg_put_match(dlb_pg_t *pg, const dlb_config_match_t *m, const void *raw, size_t raw_len,
                      char *errstr, size_t errstr_size);

/** @brief The stored framed bytes of job job_uid's match event_id (a
 *         redelivered trigger is answered with it; ids are unique per job
 *         only). *raw is malloc'ed, NULL when none.
 *  @returns 0 or an error. */
int dlb_cfg_get_match(dlb_pg_t *pg, const char *job_uid, const char *event_id, void **raw,
                      size_t *raw_len, char *errstr, size_t errstr_size);

#endif
