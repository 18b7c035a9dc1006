/* The optimizer consumer: a consumer-group member that folds job events,
 * runtime samples and node events into per-job state, persists them, and
 * answers plan requests with plans on "<env>.plans" and in PostgreSQL.
 *
 * Batch shape (STYLE.md): poll -> decode (bad -> DLQ) -> persist + update
 * state (idempotent) -> decide (pure) -> PostgreSQL commit -> produce plans
 * -> flush -> commit offsets. A failure before the offset commit rewinds the
 * batch; every write is idempotent by event id, so a redo changes nothing. */
#ifndef DLB_CONSUMER_H
#define DLB_CONSUMER_H

#include <signal.h>
#include <stdint.h>

#include "conf.h"

typedef struct dlb_optimizer_stats {
    int64_t consumed; /* messages polled */
    int64_t accepted; /* events persisted */
    int64_t dlq;      /* messages sent to the dead-letter topic */
    int64_t plans;    /* plans produced */
    int64_t batches;  /* batches committed */
    int64_t retries;  /* batches rewound after a dependency failure */
} dlb_optimizer_stats_t;

/** @brief Run until *stop becomes non-zero.
 *  @returns 0 after a clean stop, or an error that prevents running at all
 *           (bad configuration, migrations failing); dependency outages are
 *           waited out, not returned. */
int dlb_optimizer_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                      dlb_optimizer_stats_t *stats, char *errstr, size_t errstr_size);

#endif
