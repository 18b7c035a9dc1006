/* Subscribing to an output topic as a job master does: <env>.plans for
 * plans, <env>.configs for configuration matches. read_committed (outputs are
 * produced in Kafka transactions; an aborted one must never be acted on), a
 * consumer group of its own (every subscriber sees every output), each output
 * id delivered once (a redelivery re-sends the same output under the same id). */
#ifndef DLB_SUBSCRIBE_H
#define DLB_SUBSCRIBE_H

#include <signal.h>
#include <stddef.h>

#include "catalog.h"
#include "conf.h"
#include "event.h"

typedef struct dlb_subscribe_opts {
    const char *topic;       /* DLB_TOPIC_PLANS or DLB_TOPIC_CONFIGS */
    dlb_event_type_t type;   /* DLB_EV_PLAN or DLB_EV_CONFIG_MATCH */
    const char *const *jobs; /* only these job uids, or all when njobs is 0 */
    size_t njobs;
    long count;                  /* stop after this many outputs (0: never) */
    long timeout_ms;             /* stop after this long (-1: never) */
    int all;                     /* deliver repeated ids too */
    volatile sig_atomic_t *stop; /* stop when it becomes non-zero (may be NULL) */
} dlb_subscribe_opts_t;

/* Called for each output delivered, in arrival order. */
typedef void (*dlb_subscribe_cb)(const dlb_catalog_t *cat, const dlb_event_t *ev, void *opaque);

/** @brief Subscribe and deliver outputs to cb until count, timeout or stop.
 *         A message that is not an output of the wanted type is skipped with a
 *         warning naming its offset.
 *  @param delivered  the number of outputs delivered
 *  @returns 0 when count was reached (or no count was asked), DLB_ERR_TRANSIENT
 *           when the timeout or a stop came first, or the error that prevented
 *           subscribing (errstr says which). */
int dlb_subscribe_run(const dlb_conf_t *conf, const dlb_subscribe_opts_t *opts, dlb_subscribe_cb cb,
                      void *opaque, long *delivered, char *errstr, size_t errstr_size);

#endif
