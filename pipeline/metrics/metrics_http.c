/* The HTTP endpoint of the metrics (metrics.h): /metrics, /healthz and
 * /readyz from a libmicrohttpd thread. Apart from the registry so only the
 * processes that serve link libmicrohttpd (not the agent library). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "err.h"
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

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
                               char *body, size_t len)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    if (!body)
        return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
    if (!(r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE))) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *s)
{
    char *body = strdup(s);

    return respond(c, status, "text/plain; charset=utf-8", body, body ? strlen(body) : 0);
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
        return respond(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
    }
    if (!strcmp(url, "/healthz"))
        return probe(c, m, dlb_metrics_healthy);
    if (!strcmp(url, "/readyz"))
        return probe(c, m, dlb_metrics_ready);
    return text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics, /healthz or /readyz\n");
}

/* Our own listening socket, so a port in use says so (libmicrohttpd only
 * answers NULL) and port 0's choice can be read back. */
static int listen_on(const char *addr, int port, int *v6, int *bound, char *errstr, size_t size)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    socklen_t sl;
    int fd, one = 1;

    if (port < 0 || port > 65535)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "metrics: port %d is not in 0..65535", port);
    if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        sl = sizeof(*sin);
        *v6 = 0;
    } else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        sl = sizeof(*sin6);
        *v6 = 1;
    } else {
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "metrics: metrics.address \"%s\" is not an IPv4 or IPv6 address", addr);
    }
    if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "metrics: socket: %s", strerror(errno));
    /* A restarted process can take its port back while old connections of
     * the previous one sit in TIME_WAIT; a live listener still refuses. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 16)) {
        int e = errno;
        close(fd);
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "metrics: cannot listen on %s%s%s:%d: %s",
                          *v6 ? "[" : "", addr, *v6 ? "]" : "", port, strerror(e));
    }
    sl = sizeof(ss);
    *bound = getsockname(fd, (struct sockaddr *)&ss, &sl)
                 ? port
                 : ntohs(*v6 ? sin6->sin6_port : sin->sin_port);
    return fd;
}

int dlb_metrics_serve(dlb_metrics_t *m, const char *addr, int port, int stall_s, char *errstr,
                      size_t errstr_size)
{
    struct MHD_Daemon *d;
    int fd, v6 = 0, bound = 0;

    if ((fd = listen_on(addr, port, &v6, &bound, errstr, errstr_size)) < 0)
        return fd;
    /* AUTO picks epoll on Linux: select() refuses descriptors past FD_SETSIZE,
     * which a consumer holding many broker and database sockets reaches. */
    d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
                         handle, m, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)METRICS_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                         (unsigned)METRICS_MAX_PER_ADDRESS, MHD_OPTION_CONNECTION_TIMEOUT,
                         (unsigned)METRICS_IDLE_TIMEOUT_S, MHD_OPTION_END);
    if (!d) {
        close(fd);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "metrics: the HTTP server on %s:%d did not start", addr, bound);
    }
    dlb_metrics_attach(m, d, server_stop, bound, stall_s);
    return 0;
}
