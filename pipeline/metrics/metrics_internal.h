/* Between the metrics registry (metrics.c) and its HTTP server
 * (metrics_http.c); not for other modules. */
#ifndef DLB_METRICS_INTERNAL_H
#define DLB_METRICS_INTERNAL_H

#include "metrics.h"

/** @brief Record a started server: stop(server) is called by
 *         dlb_metrics_destroy(); port is what dlb_metrics_port() answers;
 *         /healthz fails after stall_s without a beat (0 = never), counted
 *         from now. */
void dlb_metrics_attach(dlb_metrics_t *m, void *server, void (*stop)(void *), int port,
                        int stall_s);

#endif
