/* The relay: what makes a promotion take effect without restarting anything.
 *
 * Job agents, masters and the Kubernetes monitor talk to one *front* prefix
 * (the relay's own env setting, e.g. "dlbrain"); environments (registry,
 * env_registry.h) run their consumers under their own prefixes. The relay
 *
 *   - copies every record of the front's event topics (job-events, metrics,
 *     k8s-events, plan-requests, config-requests) unchanged (key, value,
 *     headers, timestamp) into the same topics of every live environment,
 *     real and virtual, so virtual brains see the real input;
 *   - stamps each copy (header dlb.real) with the environment that answers
 *     it at the front: per front partition, the one of the newest switch
 *     marker read there (env/switch/switch_mark.h), committed with the
 *     partition's offset as its metadata. Markers are read, never copied: one
 *     whose stamp does not parse goes to the front's DLQ instead;
 *   - reads every live environment's plans and configs (read_committed) and
 *     forwards to the front's plans / configs only the answers whose stamp
 *     names the environment that made them, with a header dlb.env naming it;
 *     the others are consumed and dropped;
 *   - runs the automatic failover decider (env/failover/failover.h).
 *
 * Each batch is one Kafka transaction holding the copies and the input
 * offsets (send_offsets_to_transaction), so every record is relayed exactly
 * once through crashes and restarts. The registry is re-read every
 * relay.refresh.ms: new environments are subscribed to, dropped ones let go. */
#ifndef DLB_RELAY_H
#define DLB_RELAY_H

#include <signal.h>
#include <stddef.h>

#include "conf.h"
#include "stream.h"

/* Most live environments relayed to at once. */
#define DLB_RELAY_MAX_ENVS 64

/** @brief Relay for front prefix conf->env until *stop becomes non-zero.
 *         stats: consumed (records polled), accepted (records relayed or
 *         dropped as answers of a virtual environment), outputs (records
 *         produced), batches, retries.
 *  @returns 0 after a clean stop; DLB_ERR_CONF when the front prefix is a
 *           registered environment (the relay would feed itself), also when
 *           that happens later; or another error that prevents running.
 *           Outages are waited out. */
int dlb_relay_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, dlb_stream_stats_t *stats,
                  char *errstr, size_t errstr_size);

#endif
