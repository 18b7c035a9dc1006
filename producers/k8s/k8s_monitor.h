/* The Kubernetes monitor: lists then watches the job pods, the nodes and the
 * pod Events through the API server and produces what they mean as node
 * events to <env>.k8s-events, keyed by job uid (producers/k8s/k8s_map.h says
 * which and with what ids).
 *
 * Each resource is listed (paged), then watched from the list's
 * resourceVersion with bookmarks; a watch that ends resumes from the last
 * resourceVersion seen, one that fails reconnects after a doubling backoff
 * (k8s.backoff.ms .. k8s.backoff.max.ms), and 410 Gone (an HTTP status or an
 * ERROR watch event) relists: pods that a relist no longer shows were deleted
 * meanwhile. Bad input (a line that is not JSON, a pod without the job label,
 * a file the configuration names that cannot be read) is logged and skipped;
 * the watch goes on. */
#ifndef DLB_K8S_MONITOR_H
#define DLB_K8S_MONITOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

typedef struct dlb_k8s_stats {
    int64_t objects;    /* objects read from lists and watches */
    int64_t events;     /* node events produced */
    int64_t skipped;    /* lines and objects skipped: not JSON, not a job pod, invalid */
    int64_t relists;    /* lists after the first one of a resource (410 Gone) */
    int64_t reconnects; /* requests retried after a failure */
} dlb_k8s_stats_t;

/** @brief Run until *stop is set (SIGINT/SIGTERM), then flush the producer.
 *  @returns 0 after a stop; DLB_ERR_CONF when the API configuration cannot be
 *           loaded (no kubeconfig, a context that does not exist) or the
 *           producer cannot be made; errstr says what. A server that cannot be
 *           reached is not an error: it is retried. */
int dlb_k8s_monitor_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, dlb_k8s_stats_t *stats,
                        char *errstr, size_t errstr_size);

#endif
