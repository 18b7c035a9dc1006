#include "bench_gateway_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "err.h"
#include "latency.h"
#include "log.h"

/* A warm-up call that failed is made again after this long. */
#define RETRY_NS ((int64_t)500 * 1000000)
/* Failed calls logged one by one; the rest are only counted. */
#define WARN_MAX 5
/* An answer longer than this is not an OptimizeResponse of a bench job. */
#define BODY_MAX 65536
/* Socket events taken from epoll per wait. */
#define EVENTS_MAX 256

typedef struct hcall {
    long i;   /* the path's request index, or the job's in the warm-up */
    int warm; /* a warm-up call */
    CURL *e;
    char *body;
    size_t len;
    int too_long;
    struct hcall *prev, *next; /* h->calls */
} hcall_t;

struct dlb_bench_http {
    dlb_bench_gw_opts_t o;
    char url[512];
    CURLM *m;
    /* curl's socket interface: only the sockets with something to do are
     * served (curl_multi_perform visits every call in flight, which at
     * 1,000 calls/s made the client the machine's busiest process). */
    int ep;           /* epoll, of the sockets curl watches */
    int64_t timer_ns; /* when curl wants its timeout served, -1 none */
    struct curl_slist *headers;
    char **reqs; /* per job, its OptimizeRequest JSON */
    long made;
    hcall_t *calls; /* in flight */
    long inflight;
    int curl_up;
    unsigned char *warm_done;
    int64_t *warm_retry; /* per job: 0 in flight or done, else when to start it again */
    char last_failure[512];
    dlb_bench_gw_counts_t counts;
    long warned;
};

/* ---- messages (pure) ------------------------------------------------------------------ */

char *dlb_bench_http_request(const char *stage, const char *job_uid)
{
    cJSON *o = cJSON_CreateObject(), *c, *j;
    char *s = NULL;

    if (o && cJSON_AddStringToObject(o, "type", stage) &&
        (c = cJSON_AddObjectToObject(o, "config")) &&
        cJSON_AddStringToObject(c, "optimizer_name", "") &&
        cJSON_AddObjectToObject(c, "customized_config") &&
        (j = cJSON_AddObjectToObject(o, "job")) && cJSON_AddStringToObject(j, "uuid", job_uid) &&
        cJSON_AddStringToObject(j, "cluster", "") && cJSON_AddStringToObject(j, "namespace", "") &&
        cJSON_AddStringToObject(j, "user", "") && cJSON_AddStringToObject(j, "app", ""))
        s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

int dlb_bench_http_response_success(const char *body)
{
    cJSON *o = cJSON_Parse(body);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "response");
    int ok = -1;

    if (cJSON_IsObject(r) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "job_opt_plan")))
        ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "success"));
    cJSON_Delete(o);
    return ok;
}

/* ---- calls ------------------------------------------------------------------------------ */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    hcall_t *c = arg;
    size_t len = size * n;
    char *nb;

    if (c->too_long || c->len + len > BODY_MAX) {
        c->too_long = 1;
        return len;
    }
    if (!(nb = realloc(c->body, c->len + len + 1)))
        return 0; /* out of memory: curl fails the call */
    memcpy(nb + c->len, data, len);
    c->body = nb;
    c->len += len;
    c->body[c->len] = '\0';
    return len;
}

/* Out of h->calls (once started), its handle out of the multi, freed. */
static void call_free(dlb_bench_http_t *h, hcall_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (h->calls == c)
        h->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->e) {
        curl_multi_remove_handle(h->m, c->e);
        curl_easy_cleanup(c->e);
    }
    free(c->body);
    free(c);
}

static int call_start(dlb_bench_http_t *h, long i, long job, int warm, int64_t *start_ns,
                      char *errstr, size_t size)
{
    hcall_t *c = calloc(1, sizeof(*c));

    if (!c || !(c->e = curl_easy_init())) {
        free(c);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    c->i = i;
    c->warm = warm;
    curl_easy_setopt(c->e, CURLOPT_URL, h->url);
    curl_easy_setopt(c->e, CURLOPT_POSTFIELDS, h->reqs[job]);
    curl_easy_setopt(c->e, CURLOPT_POSTFIELDSIZE, (long)strlen(h->reqs[job]));
    curl_easy_setopt(c->e, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(c->e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->e, CURLOPT_PRIVATE, c);
    curl_easy_setopt(c->e, CURLOPT_TIMEOUT_MS, h->o.deadline_ms);
    curl_easy_setopt(c->e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->e, CURLOPT_TCP_NODELAY, 1L);
    *start_ns = dlb_lat_clock_ns();
    if (curl_multi_add_handle(h->m, c->e) != CURLM_OK) {
        call_free(h, c);
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "HTTP Brain: cannot start a call");
    }
    if ((c->next = h->calls))
        h->calls->prev = c;
    h->calls = c;
    h->inflight++;
    return 0;
}

/* The answer of a completed call: 1 good, 0 not (counted and described). */
static int call_result(dlb_bench_http_t *h, hcall_t *c, CURLcode res)
{
    long status = 0;
    int success;

    if (res != CURLE_OK) {
        h->counts.status++;
        snprintf(h->last_failure, sizeof(h->last_failure), "%s", curl_easy_strerror(res));
        return 0;
    }
    curl_easy_getinfo(c->e, CURLINFO_RESPONSE_CODE, &status);
    if (status != 201) {
        h->counts.status++;
        snprintf(h->last_failure, sizeof(h->last_failure), "HTTP %ld: %.200s", status,
                 c->body ? c->body : "");
        return 0;
    }
    success = c->body && !c->too_long ? dlb_bench_http_response_success(c->body) : -1;
    if (success == 1)
        return 1;
    if (success == 0) {
        h->counts.no_plan++;
        snprintf(h->last_failure, sizeof(h->last_failure), "success=false (no plan in time)");
    } else {
        h->counts.malformed++;
        snprintf(h->last_failure, sizeof(h->last_failure), "not an OptimizeResponse");
    }
    return 0;
}

/* curl says which socket to watch for what (CURLMOPT_SOCKETFUNCTION). */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
    dlb_bench_http_t *h = arg;
    struct epoll_event ev = {0};

    (void)e;
    (void)sockp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(h->ep, EPOLL_CTL_DEL, fd, NULL); /* closed already: ENOENT or EBADF */
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    ev.data.fd = fd;
    if (epoll_ctl(h->ep, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT &&
        epoll_ctl(h->ep, EPOLL_CTL_ADD, fd, &ev))
        return -1;
    return 0;
}

/* curl's one timer (CURLMOPT_TIMERFUNCTION): -1 stops it. */
static int on_timer(CURLM *m, long timeout_ms, void *arg)
{
    dlb_bench_http_t *h = arg;

    (void)m;
    h->timer_ns = timeout_ms < 0 ? -1 : dlb_lat_clock_ns() + (int64_t)timeout_ms * 1000000;
    return 0;
}

/* The calls curl completed: counted, their answers checked, freed. */
static int harvest(dlb_bench_http_t *h, dlb_bench_path_t *p, int *got)
{
    CURLMsg *msg;
    int left, err = 0;

    while ((msg = curl_multi_info_read(h->m, &left))) {
        int64_t at = dlb_lat_clock_ns();
        hcall_t *c = NULL;
        int good;

        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
        good = call_result(h, c, msg->data.result);
        h->inflight--;
        (*got)++;
        if (c->warm) {
            if (good)
                h->warm_done[c->i] = 1;
            else
                h->warm_retry[c->i] = at + RETRY_NS;
        } else {
            if (!good && h->warned++ < WARN_MAX)
                dlb_warn("HTTP Brain: call %ld (job %ld) failed: %s%s", c->i, c->i % h->o.jobs,
                         h->last_failure,
                         h->warned == WARN_MAX ? " (further ones counted only)" : "");
            if (p && !err)
                err = dlb_bench_path_answer(p, c->i, at, good);
        }
        call_free(h, c);
    }
    return err;
}

/* Completed calls until deadline_ns or the first one, then those ready: a
 * burst of answers does not hold back the calls due next. */
static int take(dlb_bench_http_t *h, dlb_bench_path_t *p, int64_t deadline_ns)
{
    int err = 0;

    for (;;) {
        struct epoll_event evs[EVENTS_MAX];
        int running, got = 0, n, wait_ms;
        int64_t now = dlb_lat_clock_ns(), until = deadline_ns;

        if (h->timer_ns >= 0 && h->timer_ns <= now) {
            h->timer_ns = -1;
            curl_multi_socket_action(h->m, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        if ((err = harvest(h, p, &got)) || got || now >= deadline_ns)
            return err;
        if (h->timer_ns >= 0 && h->timer_ns < until)
            until = h->timer_ns;
        /* Rounded up: a wait of 0 ms before a timer due in 0.4 ms spins. */
        wait_ms = until > now ? (int)((until - now + 999999) / 1000000) : 0;
        n = epoll_wait(h->ep, evs, EVENTS_MAX, wait_ms);
        for (int k = 0; k < n; k++) {
            int flags = (evs[k].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                        (evs[k].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (evs[k].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(h->m, evs[k].data.fd, flags, &running);
        }
    }
}

/* ---- the client ------------------------------------------------------------------------- */

int dlb_bench_http_new(dlb_bench_http_t **out, const dlb_bench_gw_opts_t *opts, char *errstr,
                       size_t size)
{
    dlb_bench_http_t *h;
    char uid[256];

    *out = NULL;
    if (!opts->address || !opts->address[0] || opts->jobs < 1)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "HTTP Brain: no address, or no jobs");
    if (!(*out = h = calloc(1, sizeof(*h))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    h->o = *opts;
    h->ep = -1;
    if (h->o.deadline_ms < 1)
        h->o.deadline_ms = 1;
    snprintf(h->url, sizeof(h->url), "%s/optimize", opts->address);
    if (!(h->reqs = calloc((size_t)opts->jobs, sizeof(*h->reqs))) ||
        !(h->warm_done = calloc((size_t)opts->jobs, 1)) ||
        !(h->warm_retry = calloc((size_t)opts->jobs, sizeof(*h->warm_retry))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (; h->made < opts->jobs; h->made++) {
        opts->job_uid(opts->ctx, h->made, uid, sizeof(uid));
        if (!(h->reqs[h->made] = dlb_bench_http_request(opts->stage, uid)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT))
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "HTTP Brain: curl_global_init failed");
    h->curl_up = 1;
    /* Expect: none, so a body is sent at once (no 100-continue round trip). */
    if (!(h->m = curl_multi_init()) ||
        !(h->headers = curl_slist_append(NULL, "Content-Type: application/json")) ||
        !(h->headers = curl_slist_append(h->headers, "Expect:")))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    /* Idle connections kept for reuse: as many as calls in flight at most. */
    curl_multi_setopt(h->m, CURLMOPT_MAXCONNECTS, 4096L);
    h->timer_ns = -1;
    if ((h->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "HTTP Brain: epoll_create1: %s",
                          strerror(errno));
    curl_multi_setopt(h->m, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(h->m, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->m, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(h->m, CURLMOPT_TIMERDATA, h);
    return 0;
}

int dlb_bench_http_warm_up(dlb_bench_http_t *h, long timeout_ms, char *errstr, size_t size)
{
    const int64_t deadline = dlb_lat_clock_ns() + (int64_t)timeout_ms * 1000000;
    int64_t start;
    int err;

    for (long j = 0; j < h->o.jobs; j++)
        h->warm_retry[j] = 1; /* due now */
    while (!(h->o.stop && *h->o.stop)) {
        int64_t now = dlb_lat_clock_ns(), next = now + 100000000;
        long left = 0;

        for (long j = 0; j < h->o.jobs; j++) {
            if (h->warm_done[j])
                continue;
            left++;
            if (!h->warm_retry[j])
                continue; /* in flight */
            if (h->warm_retry[j] <= now) {
                if ((err = call_start(h, j, j, 1, &start, errstr, size)))
                    return err;
                h->warm_retry[j] = 0;
            } else if (h->warm_retry[j] < next) {
                next = h->warm_retry[j];
            }
        }
        if (!left && !h->inflight)
            return 0;
        if (now > deadline)
            return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                              "HTTP Brain %s: %ld of %ld warm-up call(s) without a plan after %ld "
                              "ms (last failure: %s)",
                              h->o.address, left, h->o.jobs, timeout_ms,
                              h->last_failure[0] ? h->last_failure : "none, still waiting");
        if ((err = take(h, NULL, next < deadline ? next : deadline)))
            return err;
    }
    return 0;
}

static int http_send(void *ctx, dlb_bench_path_t *p, long i, char *errstr, size_t size)
{
    dlb_bench_http_t *h = ctx;

    return call_start(h, i, i % h->o.jobs, 0, &p->sent_ns[i], errstr, size);
}

static int http_poll(void *ctx, dlb_bench_path_t *p, int64_t deadline_ns, char *errstr, size_t size)
{
    if (take(ctx, p, deadline_ns))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

void dlb_bench_http_ops(dlb_bench_http_t *h, dlb_bench_path_ops_t *ops)
{
    ops->send = http_send;
    ops->poll = http_poll;
    ops->ctx = h;
}

dlb_bench_gw_counts_t dlb_bench_http_counts(const dlb_bench_http_t *h)
{
    return h->counts;
}

void dlb_bench_http_destroy(dlb_bench_http_t *h)
{
    if (!h)
        return;
    while (h->calls) /* in flight: aborted */
        call_free(h, h->calls);
    if (h->m)
        curl_multi_cleanup(h->m);
    if (h->ep >= 0)
        close(h->ep);
    curl_slist_free_all(h->headers);
    for (long j = 0; j < h->made; j++)
        free(h->reqs[j]);
    free(h->reqs);
    free(h->warm_done);
    free(h->warm_retry);
    if (h->curl_up)
        curl_global_cleanup();
    free(h);
}
