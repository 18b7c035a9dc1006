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

/* Its clients are Prometheus (one keep-alive connection per server) and the
 * kubelet's probes (a connection each, a few at a time, timeoutSeconds 3 in
 * deploy/k8s); what any client may hold of it is bounded by http.* in the
 * shared front (httpd.h), so half-open requests, from however many
 * addresses, cannot make /healthz fail and get a healthy pod restarted. */

static void server_stop(void *h)
{
    dlb_httpd_stop(h);
}

/* Every HTTP server's sweeper reports here (dlb_httpd_set_report): the
 * shared front counts, the metrics say. */
static void http_report(const char *server, unsigned held,
                        const uint64_t closed[DLB_HTTPD_CLOSED__CNT])
{
    for (int i = 0; i < DLB_HTTPD_CLOSED__CNT; i++)
        dlb_metric_add(
            dlb_metric_counter(
                "dlbrain_http_connections_closed_total",
                "HTTP connections closed to keep a server answering: displaced (all "
                "http.max.connections held), address (over http.max.per.address), timeout (a "
                "client step over http.timeout.ms), full (every other connection being served)",
                "server,reason", DLB_LV(server, dlb_httpd_closed_names[i])),
            closed[i]);
    dlb_metric_set(dlb_metric_gauge("dlbrain_http_connections",
                                    "HTTP connections a server holds now", "server",
                                    DLB_LV(server)),
                   held);
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

int dlb_metrics_serve(dlb_metrics_t *m, const char *addr, int port, int stall_s,
                      const dlb_http_conf_t *bounds, char *errstr, size_t errstr_size)
{
    dlb_httpd_t *h;
    int err, bound = 0;

    dlb_httpd_set_report(http_report);
    if ((err = dlb_httpd_start("metrics", "metrics.address", addr, port, bounds, handle, m, NULL,
                               &h, &bound, errstr, errstr_size)))
        return err;
    dlb_metrics_attach(m, h, server_stop, bound, stall_s);
    return 0;
}
