/* The roles around the real environment that automatic failover needs, in
 * the registry (env_registry.h): the pre-chosen *standby* (at most one live
 * virtual environment), the *pin* a manual promotion sets (automatic failover
 * off until unpinned), the *lease* of the one process that decides, and the
 * automatic switch itself, one transaction that re-checks all of them.
 * Every change is a history row: standby, unstandby, pin, unpin, and for a
 * switch a demote and a promote row with cause "failover", the reason and
 * the figures. */
#ifndef DLB_ENV_ROLES_H
#define DLB_ENV_ROLES_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "env_registry.h"

/* The registry's view of failover, read in one statement. */
typedef struct dlb_env_roles {
    char real[DLB_ENV_NAME_MAX + 1];    /* "" when none is real */
    char standby[DLB_ENV_NAME_MAX + 1]; /* "" when none is chosen */
    int pinned;
    char lease_holder[128]; /* "" when no process ever decided */
    int64_t lease_until_ms;
    int lease_live;         /* lease_until is in the future (the database's clock) */
    int64_t last_switch_id; /* the newest promote row; 0 = none */
    int64_t last_switch_ms;
    char last_switch_env[DLB_ENV_NAME_MAX + 1]; /* whom it promoted */
    int64_t now_ms;                             /* the database's clock when read */
} dlb_env_roles_t;

/** @brief Read the roles. */
int dlb_env_roles_get(PGconn *pg, dlb_env_roles_t *out, char *errstr, size_t errstr_size);

/** @brief Make name the standby (NULL: none), with a "standby" row (detail:
 *         was) or an "unstandby" row naming the former one. Choosing the
 *         standby again, or clearing none, changes nothing.
 *  @param was  set to the former standby ("" when none); may be NULL
 *  @returns 0, DLB_ERR_NOTFOUND (unknown or dropped), DLB_ERR_INVALID (name
 *           is the real one), or another error. */
int dlb_env_standby_set(PGconn *pg, const char *name, const char *by_user, char *was,
                        size_t was_size, char *errstr, size_t errstr_size);

/** @brief Pin (1) or unpin (0) the real environment, with a "pin" or "unpin"
 *         row naming it; no row when nothing changes. */
int dlb_env_pin_set(PGconn *pg, int pinned, const char *by_user, char *errstr, size_t errstr_size);

/** @brief Take or renew the lease of the deciding process for lease_ms (the
 *         database's clock): granted when nobody holds it, holder holds it,
 *         or the holder's lease ran out.
 *  @param held  set to 1 when holder holds it now */
int dlb_env_lease_take(PGconn *pg, const char *holder, int64_t lease_ms, int *held, char *errstr,
                       size_t errstr_size);

/** @brief Give the lease up (a stopping relay), if holder holds it. */
int dlb_env_lease_release(PGconn *pg, const char *holder, char *errstr, size_t errstr_size);

/** @brief The automatic switch: in one transaction, check that holder holds
 *         the lease, nothing is pinned, expect_real is still the real one, a
 *         standby is chosen and the last switch is at least cooldown_ms old
 *         (the database's clock); then expect_real becomes virtual and the
 *         standby real (and no longer the standby), with a demote and a
 *         promote row, cause "failover", by "failover", detail merged with
 *         detail (a JSON object: reason, figures, decided_by).
 *  @param now_real   set to the standby that became real
 *  @param switch_id  set to the promote row's id
 *  @returns 0, DLB_ERR_INVALID when a check fails (errstr says which: the
 *           switch is not made), or another error. */
int dlb_env_failover_switch(PGconn *pg, const char *holder, const char *expect_real,
                            int64_t cooldown_ms, const char *detail, char *now_real,
                            size_t now_real_size, int64_t *switch_id, char *errstr,
                            size_t errstr_size);

/** @brief Record where the markers of a switch went (switch_mark.h): a
 *         "mark" row naming env, detail a JSON object (switch, front,
 *         offsets), by by_user (who wrote them: the promoting user, or
 *         "failover" for the decider; NULL: the database user). */
int dlb_env_mark_record(PGconn *pg, const char *env, const char *detail, const char *by_user,
                        char *errstr, size_t errstr_size);

/** @brief The newest switch whose markers front holds (a mark row with that
 *         front naming the environment the switch promoted), 0 when none. */
int dlb_env_mark_last(PGconn *pg, const char *front, int64_t *switch_id, char *errstr,
                      size_t errstr_size);

/** @brief Make name real and the real one virtual, in one transaction, with a
 *         "demote" and a "promote" history row (detail: was, cause "manual",
 *         pinned). When name is the standby, it is one no longer.
 *  @param pin        also pin the choice: automatic failover stays off until
 *                    dlb_env_pin_set(pg, 0, ...) (env_roles.h); 0 is refused
 *                    while the choice is pinned (the promotion would leave
 *                    the pin in place: unpin first)
 *  @param was        set to the previous real one ("" when none or name was
 *                    real already, then nothing changes but the pin)
 *  @param switch_id  set to the promote row's id (0 when nothing changed);
 *                    NULL when not wanted
 *  @returns 0, DLB_ERR_NOTFOUND (unknown or dropped), DLB_ERR_INVALID (pin 0
 *           while pinned: nothing changed), or another error. */
int dlb_env_promote(PGconn *pg, const char *name, int pin, const char *by_user, char *was,
                    size_t was_size, int64_t *switch_id, char *errstr, size_t errstr_size);

#endif
