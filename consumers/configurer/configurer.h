/* The configurer consumer: a consumer-group member (default group
 * <env>.configurer) that answers "which configuration applies to this job?"
 * when a job reports its attributes (a job event with meta) and when it asks
 * (a config_request), with a config_match on <env>.configs (keyed by job uid)
 * and in PostgreSQL, exactly once (pipeline/stream/stream.h). It matches against the
 * newest rules version (pipeline/store/store_config.h), picked up within
 * config.refresh.ms without a restart, through a compiled matcher
 * (pipeline/rules/matcher.h) and a Redis cache keyed by rules version. */
#ifndef DLB_CONFIGURER_H
#define DLB_CONFIGURER_H

#include <signal.h>

#include "conf.h"
#include "stream.h"

/** @brief The id of the config match answering trigger_id (a job event's or
 *         a config request's): "cfg-" + trigger_id, shortened with a hash
 *         when that does not fit (dlb_id_derive()). */
void dlb_config_match_id(const char *trigger_id, char *buf, size_t size);

/** @brief Run until *stop becomes non-zero.
 *  @returns 0 after a clean stop, or an error that prevents running at all. */
int dlb_configurer_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                       dlb_stream_stats_t *stats, char *errstr, size_t errstr_size);

#endif
