#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "log.h"

/* How often client steps are held against http.timeout.ms. */
#define SWEEP_MS 100
/* Connections closed to keep a server answering are logged this often at
 * most (with their counts), so an attack does not flood the log. */
#define LOG_EVERY_MS 10000

/* One connection, from libmicrohttpd's accept to its close. Its fields are
 * under h->lock: the sweeper and resuming threads read them too. */
typedef struct conn {
    struct conn *prev, *next;
    struct dlb_httpd *h;
    int fd;
    struct sockaddr_storage addr;
    int64_t since_ms; /* when its current client step began */
    int serving;      /* the server's step: suspended by its handler */
    int answering;    /* an answer is queued: the client is reading it */
    int closing;      /* shut down here; libmicrohttpd closes it and says so */
} conn_t;

const char *const dlb_httpd_closed_names[DLB_HTTPD_CLOSED__CNT] = {"displaced", "address",
                                                                   "timeout", "full"};

/* dlb_httpd_set_report()'s, read by every sweeper. */
static dlb_httpd_report_fn reporter;

struct dlb_httpd {
    struct MHD_Daemon *d;
    char what[64];
    char label[64]; /* the setting's key without ".address" */
    dlb_http_conf_t b;
    MHD_AccessHandlerCallback handler;
    void *cls;
    MHD_RequestCompletedCallback completed;

    pthread_mutex_t lock;
    pthread_cond_t wake;
    conn_t *conns;
    unsigned held;                           /* connections not closing */
    uint64_t closed[DLB_HTTPD_CLOSED__CNT];  /* closed here, by reason */
    uint64_t logged[DLB_HTTPD_CLOSED__CNT];  /* of those, logged so far */
    uint64_t counted[DLB_HTTPD_CLOSED__CNT]; /* of those, reported so far */
    int64_t logged_ms;
    int stopping;
    pthread_t sweeper;
    int sweeper_started;
};

/* ---- the listening socket ------------------------------------------------------- */

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
    /* The kernel's whole backlog: under a flood of connections a probe's
     * SYN must not be dropped while the thread accepts the ones before it. */
    if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, SOMAXCONN)) {
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

/* ---- what a client holds -------------------------------------------------------- */

static int same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
    return 0;
}

/* The connection (other than skip, of addr's address when addr is given)
 * that has spent longest in a client step. Locked. */
static conn_t *longest_waiting(dlb_httpd_t *h, const conn_t *skip,
                               const struct sockaddr_storage *addr)
{
    conn_t *best = NULL;

    for (conn_t *k = h->conns; k; k = k->next)
        if (k != skip && !k->closing && !k->serving && (!addr || same_address(&k->addr, addr)) &&
            (!best || k->since_ms < best->since_ms))
            best = k;
    return best;
}

/* Shut k's socket: libmicrohttpd reads its end and closes it (its thread
 * owns the descriptor, which stays open until its CLOSED notice, taken
 * under the same lock). Locked. */
static void close_locked(dlb_httpd_t *h, conn_t *k, int why)
{
    shutdown(k->fd, SHUT_RDWR);
    k->closing = 1;
    h->held--;
    h->closed[why]++;
}

static conn_t *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return ci ? ci->socket_context : NULL;
}

/* A new connection holds a slot: one over a count displaces the longest
 * waiting of the address, then of the server; when every other one is being
 * served, the new one goes. */
static void conn_started(dlb_httpd_t *h, struct MHD_Connection *c, void **socket_context)
{
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ai =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    conn_t *k = calloc(1, sizeof(*k)), *v;
    unsigned same = 0;

    if (!fi)
        goto fail;
    if (!k) {
        shutdown(fi->connect_fd, SHUT_RDWR); /* untracked would be unbounded */
        goto fail;
    }
    k->h = h;
    k->fd = fi->connect_fd;
    if (ai && ai->client_addr) {
        size_t len = ai->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                            : sizeof(struct sockaddr_in);
        memcpy(&k->addr, ai->client_addr, len);
    }
    k->since_ms = dlb_clock_mono_ms();
    pthread_mutex_lock(&h->lock);
    if ((k->next = h->conns))
        h->conns->prev = k;
    h->conns = k;
    h->held++;
    for (conn_t *o = h->conns; o; o = o->next)
        same += !o->closing && same_address(&o->addr, &k->addr);
    if (same > (unsigned)h->b.max_per_address) {
        v = longest_waiting(h, k, &k->addr);
        close_locked(h, v ? v : k, v ? DLB_HTTPD_ADDRESS : DLB_HTTPD_FULL);
    }
    if (!k->closing && h->held > (unsigned)h->b.max_connections) {
        v = longest_waiting(h, k, NULL);
        close_locked(h, v ? v : k, v ? DLB_HTTPD_DISPLACED : DLB_HTTPD_FULL);
    }
    pthread_mutex_unlock(&h->lock);
    *socket_context = k;
    return;
fail:
    free(k);
    *socket_context = NULL;
}

static void conn_closed(dlb_httpd_t *h, void **socket_context)
{
    conn_t *k = *socket_context;

    if (!k)
        return;
    pthread_mutex_lock(&h->lock);
    if (k->prev)
        k->prev->next = k->next;
    else
        h->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    if (!k->closing)
        h->held--;
    pthread_mutex_unlock(&h->lock);
    free(k);
    *socket_context = NULL;
}

static void notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe)
{
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        conn_started(cls, c, socket_context);
    else if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
        conn_closed(cls, socket_context);
}

/* The handler, then: an answer queued starts the client's reading of it. */
static enum MHD_Result front_handle(void *cls, struct MHD_Connection *c, const char *url,
                                    const char *method, const char *version, const char *upload,
                                    size_t *upload_size, void **con_cls)
{
    dlb_httpd_t *h = cls;
    enum MHD_Result r = h->handler(h->cls, c, url, method, version, upload, upload_size, con_cls);
    conn_t *k = conn_of(c);

    if (k && MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS)) {
        pthread_mutex_lock(&h->lock);
        if (!k->answering) {
            k->answering = 1;
            k->serving = 0;
            k->since_ms = dlb_clock_mono_ms();
        }
        pthread_mutex_unlock(&h->lock);
    }
    return r;
}

/* A request ended: the client's next one starts now (keep-alive). */
static void front_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    dlb_httpd_t *h = cls;
    conn_t *k = conn_of(c);

    if (k) {
        pthread_mutex_lock(&h->lock);
        k->answering = 0;
        k->serving = 0;
        k->since_ms = dlb_clock_mono_ms();
        pthread_mutex_unlock(&h->lock);
    }
    if (h->completed)
        h->completed(h->cls, c, con_cls, toe);
}

void dlb_httpd_suspend(struct MHD_Connection *c)
{
    conn_t *k = conn_of(c);

    if (k) {
        pthread_mutex_lock(&k->h->lock);
        k->serving = 1;
        pthread_mutex_unlock(&k->h->lock);
    }
    MHD_suspend_connection(c);
}

void dlb_httpd_resume(struct MHD_Connection *c)
{
    MHD_resume_connection(c);
}

/* ---- the sweeper: time bounds, reports, logs ------------------------------------ */

void dlb_httpd_set_report(dlb_httpd_report_fn fn)
{
    __atomic_store_n(&reporter, fn, __ATOMIC_RELEASE);
}

/* The closes since the last report, to the reporter if there is one.
 * Locked. */
static void report_locked(dlb_httpd_t *h)
{
    dlb_httpd_report_fn fn = __atomic_load_n(&reporter, __ATOMIC_ACQUIRE);
    uint64_t d[DLB_HTTPD_CLOSED__CNT];

    if (!fn)
        return;
    for (int i = 0; i < DLB_HTTPD_CLOSED__CNT; i++) {
        d[i] = h->closed[i] - h->counted[i];
        h->counted[i] = h->closed[i];
    }
    fn(h->label, h->held, d);
}

/* Closed-connection counts since the last line, at most every LOG_EVERY_MS.
 * Locked. */
static void log_closed_locked(dlb_httpd_t *h, int64_t now)
{
    uint64_t d[DLB_HTTPD_CLOSED__CNT], total = 0;

    if (now - h->logged_ms < LOG_EVERY_MS)
        return;
    for (int i = 0; i < DLB_HTTPD_CLOSED__CNT; i++)
        total += d[i] = h->closed[i] - h->logged[i];
    if (!total)
        return;
    memcpy(h->logged, h->closed, sizeof(h->logged));
    h->logged_ms = now;
    dlb_warn("%s: closed %" PRIu64 " connection(s) to keep answering: %" PRIu64
             " displaced by newer ones (http.max.connections=%d held), %" PRIu64
             " over http.max.per.address=%d, %" PRIu64 " over http.timeout.ms=%d, %" PRIu64
             " new while every other one was being served",
             h->what, total, d[DLB_HTTPD_DISPLACED], h->b.max_connections, d[DLB_HTTPD_ADDRESS],
             h->b.max_per_address, d[DLB_HTTPD_TIMEOUT], h->b.timeout_ms, d[DLB_HTTPD_FULL]);
}

static void *sweep_main(void *arg)
{
    dlb_httpd_t *h = arg;

    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        int64_t now = dlb_clock_mono_ms();
        struct timespec until;

        for (conn_t *k = h->conns; k; k = k->next)
            if (!k->closing && !k->serving && now - k->since_ms >= h->b.timeout_ms)
                close_locked(h, k, DLB_HTTPD_TIMEOUT);
        report_locked(h);
        log_closed_locked(h, now);
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)SWEEP_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&h->wake, &h->lock, &until);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* ---- start and stop -------------------------------------------------------------- */

static void httpd_free(dlb_httpd_t *h)
{
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static dlb_httpd_t *httpd_new(const char *what, const char *key, const dlb_http_conf_t *bounds)
{
    dlb_httpd_t *h = calloc(1, sizeof(*h));
    pthread_condattr_t ca;
    const char *dot = strstr(key, ".address");

    if (!h)
        return NULL;
    snprintf(h->what, sizeof(h->what), "%s", what);
    snprintf(h->label, sizeof(h->label), "%.*s",
             (int)(dot && !dot[sizeof(".address") - 1] ? (size_t)(dot - key) : strlen(key)), key);
    h->b = *bounds;
    if (h->b.max_connections < 1)
        h->b.max_connections = 1;
    if (h->b.max_per_address < 1)
        h->b.max_per_address = 1;
    if (h->b.timeout_ms < 1)
        h->b.timeout_ms = 1;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    h->logged_ms = dlb_clock_mono_ms();
    return h;
}

int dlb_httpd_start(const char *what, const char *key, const char *addr, int port,
                    const dlb_http_conf_t *bounds, MHD_AccessHandlerCallback handler, void *cls,
                    MHD_RequestCompletedCallback completed, dlb_httpd_t **out, int *bound,
                    char *errstr, size_t errstr_size)
{
    dlb_httpd_t *h;
    unsigned hard, idle_s;
    int fd, v6 = 0;

    *out = NULL;
    *bound = 0;
    if ((fd = listen_on(what, key, addr, port, &v6, bound, errstr, errstr_size)) < 0)
        return fd;
    if (!(h = httpd_new(what, key, bounds))) {
        close(fd);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "%s: out of memory", what);
    }
    h->handler = handler;
    h->cls = cls;
    h->completed = completed;
    /* libmicrohttpd's own limit only backs ours up: over it, it stops
     * accepting, so it leaves room for connections being displaced. Its idle
     * timeout (whole seconds) likewise backs up the sweeper. */
    hard = (unsigned)h->b.max_connections +
           ((unsigned)h->b.max_connections / 4 > 8 ? (unsigned)h->b.max_connections / 4 : 8);
    idle_s = (unsigned)(h->b.timeout_ms + 999) / 1000 + 1;
    if (pthread_create(&h->sweeper, NULL, sweep_main, h)) {
        close(fd);
        httpd_free(h);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s: cannot start a thread", what);
    }
    h->sweeper_started = 1;
    /* AUTO picks epoll on Linux: select() refuses descriptors past FD_SETSIZE,
     * which a consumer holding many broker and database sockets reaches. One
     * thread: no handler blocks (slow work suspends its connection). */
    h->d = MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0), 0, NULL,
        NULL, front_handle, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, hard,
        MHD_OPTION_CONNECTION_TIMEOUT, idle_s, MHD_OPTION_NOTIFY_CONNECTION, notify_connection, h,
        MHD_OPTION_NOTIFY_COMPLETED, front_completed, h, MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        dlb_httpd_stop(h);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "%s: the HTTP server on %s:%d did not start", what, addr, *bound);
    }
    *out = h;
    return 0;
}

void dlb_httpd_stop(dlb_httpd_t *h)
{
    if (!h)
        return;
    if (h->sweeper_started) {
        pthread_mutex_lock(&h->lock);
        h->stopping = 1;
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->sweeper, NULL);
    }
    if (h->d)
        MHD_stop_daemon(h->d); /* every connection's CLOSED notice frees it */
    httpd_free(h);
}

/* ---- small helpers ------------------------------------------------------------------ */

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
