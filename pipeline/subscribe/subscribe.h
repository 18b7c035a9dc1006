/* Subscribing to an output topic as a job master does: <env>.plans for
 * plans, <env>.configs for configuration matches. read_committed (outputs are
 * produced in Kafka transactions; an aborted one must never be acted on), a
 * consumer group of its own (every subscriber sees every output), each output
 * id delivered once (a redelivery re-sends the same output under the same id). */
#ifndef DLB_SUBSCRIBE_H
#define DLB_SUBSCRIBE_H

#include <search.h>
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

/* The output ids delivered so far, to deliver each id once (the subscriber
 * gives it job uid and id as one key: ids are unique per job only). Zero it; max is
 * how many ids it remembers (0: about a million). */
typedef struct dlb_seen {
    struct hsearch_data h;
    char **keys; /* what the table points at */
    size_t n, max;
    int ready;
    int full; /* set once an id could not be remembered (max reached, out of memory) */
} dlb_seen_t;

/** @returns 1 when id was seen before, else 0 after remembering it (when it
 *           cannot be remembered, full is set and repeats of it will pass). */
int dlb_seen_check(dlb_seen_t *s, const char *id);
/** @brief Forget every id (s keeps its max and can be used again). */
void dlb_seen_free(dlb_seen_t *s);

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
