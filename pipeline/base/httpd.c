#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"

/* Our own listening socket, so a port in use says so (libmicrohttpd only
 * answers NULL) and port 0's choice can be read back. */
static int listen_on(const char *what, const char *key, const char *addr, int port, int *v6,
                     int *bound, char *errstr, size_t size)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    socklen_t sl;
    int fd, one = 1;

    if (port < 0 || port > 65535)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: port %d is not in 0..65535", what, port);
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
                          "%s: %s \"%s\" is not an IPv4 or IPv6 address", what, key, addr);
    }
    if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: socket: %s", what, strerror(errno));
    /* A restarted process can take its port back while old connections of
     * the previous one sit in TIME_WAIT; a live listener still refuses. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 16)) {
        int e = errno;
        close(fd);
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: cannot listen on %s%s%s:%d: %s", what,
                          *v6 ? "[" : "", addr, *v6 ? "]" : "", port, strerror(e));
    }
    sl = sizeof(ss);
    *bound = getsockname(fd, (struct sockaddr *)&ss, &sl)
                 ? port
                 : ntohs(*v6 ? sin6->sin6_port : sin->sin_port);
    return fd;
}

int dlb_httpd_start(const char *what, const char *key, const char *addr, int port,
                    const dlb_httpd_limits_t *lim, MHD_AccessHandlerCallback handler, void *cls,
                    struct MHD_Daemon **out, int *bound, char *errstr, size_t errstr_size)
{
    struct MHD_Daemon *d;
    int fd, v6 = 0;

    *bound = 0;
    if ((fd = listen_on(what, key, addr, port, &v6, bound, errstr, errstr_size)) < 0)
        return fd;
    /* AUTO picks epoll on Linux: select() refuses descriptors past FD_SETSIZE,
     * which a consumer holding many broker and database sockets reaches. */
    d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
                         handler, cls, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                         lim->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                         lim->max_per_address, MHD_OPTION_CONNECTION_TIMEOUT, lim->idle_timeout_s,
                         MHD_OPTION_NOTIFY_COMPLETED, lim->completed, NULL, MHD_OPTION_END);
    if (!d) {
        close(fd);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "%s: the HTTP server on %s:%d did not start", what, addr, *bound);
    }
    *out = d;
    return 0;
}

int dlb_httpd_hostport(const char *key, const char *hostport, char *host, size_t host_size,
                       int *port, char *errstr, size_t errstr_size)
{
    const char *colon = strrchr(hostport, ':'), *h = hostport;
    size_t hl;
    char *end;
    long p;

    if (!colon)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s \"%s\" is not HOST:PORT", key,
                          hostport);
    hl = (size_t)(colon - hostport);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (!hl || hl >= host_size || !colon[1] || *end || errno || p < 0 || p > 65535)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "%s \"%s\" is not HOST:PORT (port 0..65535)", key, hostport);
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)p;
    return 0;
}

enum MHD_Result dlb_httpd_respond(struct MHD_Connection *c, unsigned status, const char *type,
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
