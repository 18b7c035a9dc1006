/* What every libmicrohttpd endpoint of dlbrain shares (the metrics endpoint,
 * the schema registry): its own listening socket, the daemon with bounded
 * connections, and queuing one malloc'ed body as a response. */
#ifndef DLB_HTTPD_H
#define DLB_HTTPD_H

#include <stddef.h>

#include <microhttpd.h>

/* Connection bounds of one server (see metrics_http.c for why), and what
 * frees a request's state. */
typedef struct dlb_httpd_limits {
    unsigned max_connections;
    unsigned max_per_address;
    unsigned idle_timeout_s;
    MHD_RequestCompletedCallback completed; /* per-request state to free, or NULL */
} dlb_httpd_limits_t;

/** @brief Listen on addr (an IPv4 or IPv6 literal) and port, then run
 *         handler(cls, ...) on a libmicrohttpd thread (epoll on Linux).
 *  @param what   prefix of error messages ("metrics")
 *  @param key    the setting addr comes from, named when addr is not an address
 *  @param bound  the port listened on (port 0 = any free port)
 *  @returns 0, or DLB_ERR_CONF (bad address or port, port in use, no daemon). */
int dlb_httpd_start(const char *what, const char *key, const char *addr, int port,
                    const dlb_httpd_limits_t *lim, MHD_AccessHandlerCallback handler, void *cls,
                    struct MHD_Daemon **out, int *bound, char *errstr, size_t errstr_size);

/** @brief Split "host:port" or "[v6]:port" into host and port.
 *  @returns 0, or DLB_ERR_CONF (errstr names key). */
int dlb_httpd_hostport(const char *key, const char *hostport, char *host, size_t host_size,
                       int *port, char *errstr, size_t errstr_size);

/** @brief Queue body (malloc'ed, len bytes; freed here in every case) with
 *         status and content type. A NULL body (out of memory) closes the
 *         connection. */
enum MHD_Result dlb_httpd_respond(struct MHD_Connection *c, unsigned status, const char *type,
                                  char *body, size_t len);

#endif
