/* The optimizer consumer: a consumer-group member (default group
 * <env>.optimizer) that folds job events, runtime samples and node events into
 * per-job state, persists them, and answers plan requests with plans on
 * "<env>.plans" and in PostgreSQL, exactly once (pipeline/stream/stream.h). */
#ifndef DLB_CONSUMER_H
#define DLB_CONSUMER_H

#include <signal.h>
#include <stdint.h>

#include "conf.h"
#include "stream.h"

/* Its input topics (short names, NULL-terminated), in tie-break order. */
extern const char *const dlb_optimizer_inputs[];

/** @brief Run until *stop becomes non-zero.
 *  @returns 0 after a clean stop, or an error that prevents running at all
 *           (bad configuration, migrations failing); dependency outages are
 *           waited out, not returned. */
int dlb_optimizer_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                      dlb_stream_stats_t *stats, char *errstr, size_t errstr_size);

#endif
