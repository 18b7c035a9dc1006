/* The HTTP endpoint of the metrics (metrics.h): /metrics, /healthz and
 * /readyz from a libmicrohttpd thread. Apart from the registry so only the
 * processes that serve link libmicrohttpd (not the agent library). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "httpd.h"
#include "metrics.h"
#include "metrics_internal.h"

/* The clients are Prometheus (one keep-alive connection per server) and the
 * kubelet's probes (a connection each, a few at a time), from a handful of
 * addresses; behind a service mesh's sidecar all of them share one. So:
 * - at most METRICS_MAX_PER_ADDRESS connections of one address, or one client
 *   holding half-open requests takes every slot and /healthz fails for the
 *   kubelet, which then restarts a healthy pod;
 * - a connection idle for METRICS_IDLE_TIMEOUT_S is closed: a request comes
 *   whole in milliseconds, and a probe gives up sooner (timeoutSeconds: 1 by
 *   default, 3 in deploy/k8s);
 * - METRICS_MAX_CONNECTIONS in all: 8 addresses must collude to fill it, and
 *   it bounds the memory (32 KiB a connection) and descriptors spent.
 * Not settings: no legitimate client comes near them. */
#define METRICS_MAX_PER_ADDRESS 8
#define METRICS_IDLE_TIMEOUT_S  5
#define METRICS_MAX_CONNECTIONS 64

static void server_stop(void *d)
{
    MHD_stop_daemon(d);
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *s)
{
    char *body = strdup(s);

    return dlb_httpd_respond(c, status, "text/plain; charset=utf-8", body, body ? strlen(body) : 0);
}

static enum MHD_Result probe(struct MHD_Connection *c, dlb_metrics_t *m,
                             int (*check)(dlb_metrics_t *, char *, size_t))
{
    char why[256], line[300];
    int ok = check(m, why, sizeof(why));

    snprintf(line, sizeof(line), "%s: %s\n", ok ? "ok" : "not ok", why);
    return text(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, line);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    dlb_metrics_t *m = cls;
    char *body;
    size_t len;

    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    if (!strcmp(url, "/metrics")) {
        if (dlb_metrics_render(m, &body, &len))
            return MHD_NO;
        return dlb_httpd_respond(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body,
                                 len);
    }
    if (!strcmp(url, "/healthz"))
        return probe(c, m, dlb_metrics_healthy);
    if (!strcmp(url, "/readyz"))
        return probe(c, m, dlb_metrics_ready);
    return text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics, /healthz or /readyz\n");
}

int dlb_metrics_serve(dlb_metrics_t *m, const char *addr, int port, int stall_s, char *errstr,
                      size_t errstr_size)
{
    static const dlb_httpd_limits_t lim = {METRICS_MAX_CONNECTIONS, METRICS_MAX_PER_ADDRESS,
                                           METRICS_IDLE_TIMEOUT_S, NULL};
    struct MHD_Daemon *d;
    int err, bound = 0;

    if ((err = dlb_httpd_start("metrics", "metrics.address", addr, port, &lim, handle, m, &d,
                               &bound, errstr, errstr_size)))
        return err;
    dlb_metrics_attach(m, d, server_stop, bound, stall_s);
    return 0;
}
