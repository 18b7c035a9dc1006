/* The failover decider: the relay runs one; the one whose relay holds the
 * registry's lease decides (env_roles.h), however many relays run.
 *
 * Every env.failover.check.ms it renews the lease, reads the registry's roles
 * (real, standby, pin, last switch), reads the real environment's own job
 * outcomes from its PostgreSQL schema (the succeeded and failed job events
 * its optimizer stored from its input stream) and, with env.failover.late.ms,
 * its plan requests with when their plans were stored, and asks the policy
 * (failover_policy.h): every relay does, so the gauges of each say what the
 * registry says. The leader alone acts: when the policy trips it makes the
 * switch in one registry
 * transaction that checks everything again (dlb_env_failover_switch), with
 * the reason and the figures in the history, a log line and metrics; then
 * it writes the switch's markers into the front's topics (switch_mark.h), and
 * those of any switch left unmarked by the process that made it. */
#ifndef DLB_FAILOVER_H
#define DLB_FAILOVER_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "conf.h"
#include "env_registry.h"

typedef struct dlb_failover dlb_failover_t;

/* What one tick did. */
typedef struct dlb_failover_tick {
    int leader;   /* this process holds the lease */
    int switched; /* it switched: was -> now */
    char was[DLB_ENV_NAME_MAX + 1], now[DLB_ENV_NAME_MAX + 1];
    int64_t switch_id; /* the promote row of the switch */
} dlb_failover_tick_t;

/** @brief A decider with conf's env.failover.* settings for the front
 *         conf->env (conf must outlive it); role names the
 *         process in the lease holder ("relay@host:pid:start").
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_failover_new(const dlb_conf_t *conf, const char *role, dlb_failover_t **out, char *errstr,
                     size_t errstr_size);

/** @brief Evaluate once on registry connection pg (the caller calls it every
 *         env.failover.check.ms).
 *  @returns 0 (whatever the verdict), or the error of the registry or of
 *           the real environment's schema; the caller logs it and goes on. */
int dlb_failover_tick(dlb_failover_t *f, PGconn *pg, dlb_failover_tick_t *out, char *errstr,
                      size_t errstr_size);

/** @brief The lease holder name of this decider. */
const char *dlb_failover_holder(const dlb_failover_t *f);

/** @brief Give the lease up (pg may be NULL) and free f. */
void dlb_failover_destroy(dlb_failover_t *f, PGconn *pg);

#endif
