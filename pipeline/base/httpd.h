/* The bounded front every libmicrohttpd server of dlbrain stands on (the
 * metrics endpoint, the schema registry, the gateway's HTTP Brain): its own
 * listening socket, one epoll thread, and what a client may hold of it.
 *
 * A connection is always in one of three steps: the client's request (from
 * connecting, or from its previous answer, until the request is whole), the
 * server's work (a handler suspended it: an optimize call awaiting its plan),
 * the client reading the answer. Steps that are the client's own are bounded
 * in time (http.timeout.ms, counted whole, so trickling a byte now and then
 * does not extend it) and in number: at most http.max.connections in all and
 * http.max.per.address of one address. A connection over either count does
 * not wait nor get refused: it displaces the connection that has spent
 * longest in a client step (of the same address, for the per-address count).
 * A request comes whole in milliseconds, so half-open requests from any
 * number of addresses cannot keep a prober (the kubelet) or a client out:
 * they displace each other. The server's own steps are never displaced. */
#ifndef DLB_HTTPD_H
#define DLB_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "conf.h"

typedef struct dlb_httpd dlb_httpd_t;

/* Why a server closed a connection to keep answering: every
 * http.max.connections held (displaced), over http.max.per.address
 * (address), a client step over http.timeout.ms (timeout), new while every
 * other one was being served (full). */
enum {
    DLB_HTTPD_DISPLACED,
    DLB_HTTPD_ADDRESS,
    DLB_HTTPD_TIMEOUT,
    DLB_HTTPD_FULL,
    DLB_HTTPD_CLOSED__CNT
};
extern const char *const dlb_httpd_closed_names[DLB_HTTPD_CLOSED__CNT];

/** @brief What each server's sweeper reports, about every 100 ms, for
 *         whoever counts (the metrics: metrics_http.c): the connections it
 *         holds now, and those it closed since its last report, by reason.
 *         Called on the sweeper's thread. */
typedef void (*dlb_httpd_report_fn)(const char *server, unsigned held,
                                    const uint64_t closed[DLB_HTTPD_CLOSED__CNT]);

/** @brief The process's reporter, NULL for none (then the closes are kept
 *         for the first report after one is set). Any thread. */
void dlb_httpd_set_report(dlb_httpd_report_fn fn);

/** @brief Listen on addr (an IPv4 or IPv6 literal) and port, then run
 *         handler(cls, ...) on a libmicrohttpd thread (epoll on Linux).
 *         Handlers must not block: slow work suspends the connection
 *         (dlb_httpd_suspend) and resumes it from another thread.
 *  @param what       prefix of error messages ("metrics")
 *  @param key        the setting addr comes from, named when addr is not an
 *                    address; without ".address" it is the server's label in
 *                    dlbrain_http_* metrics and in logs
 *  @param bounds     what a client may hold (http.*)
 *  @param completed  frees a request's state (con_cls), or NULL
 *  @param bound      the port listened on (port 0 = any free port)
 *  @returns 0, or DLB_ERR_CONF (bad address or port, port in use, no daemon). */
int dlb_httpd_start(const char *what, const char *key, const char *addr, int port,
                    const dlb_http_conf_t *bounds, MHD_AccessHandlerCallback handler, void *cls,
                    MHD_RequestCompletedCallback completed, dlb_httpd_t **out, int *bound,
                    char *errstr, size_t errstr_size);

/** @brief Stop serving and release h (NULL is fine). No connection may be
 *         suspended any more. */
void dlb_httpd_stop(dlb_httpd_t *h);

/** @brief Suspend c from its handler: the server's own step, neither timed
 *         nor displaced, until dlb_httpd_resume(c) (any thread) has the
 *         handler called again to answer. */
void dlb_httpd_suspend(struct MHD_Connection *c);
void dlb_httpd_resume(struct MHD_Connection *c);

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
