/* The gateway's HTTP side: DLRover's HTTP Brain (gw_http_map.h) on
 * gateway.http.address, on the front every HTTP server of dlbrain shares
 * (httpd.h). POST /optimize takes the gRPC call's own path: the same plan
 * request, the same wait for the plan (gw_kafka.c), the same answer
 * (gw_map.c), only rendered as JSON. POST /job_config matches the job
 * against the configuration rules in force, as the configurer does.
 *
 * libmicrohttpd's thread only reads, parses and writes; what may block is
 * done by two threads of this file, with the connection suspended meanwhile:
 * the optimize worker starts a call's wait and produces its request (a
 * Kafka end-offset question may take seconds), the config worker owns the
 * PostgreSQL connection and the compiled rules. A call is answered from
 * whichever thread has its plan (gw_answer -> its http_answer), which resumes
 * the connection. */
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "err.h"
#include "gw_http_map.h"
#include "gw_internal.h"
#include "httpd.h"
#include "log.h"
#include "matcher.h"
#include "store_config.h"
#include "store_pg.h"
#include "uuid.h"

#define JSON             "application/json"
#define GW_HTTP_DRAIN_MS 2000 /* longest a stop waits for answers being sent */

typedef enum { R_OPTIMIZE, R_JOB_CONFIG, R_NOT_FOUND, R_METHOD } route_t;

/* One request, from its headers to the end of its answer (libmicrohttpd's
 * con_cls, freed when it completes). Fields a worker or an answering
 * thread sets are set before its connection is resumed, and not touched
 * after: the resume hands the request back to libmicrohttpd's thread. */
typedef struct hreq {
    struct gw_http *s;
    struct MHD_Connection *conn;
    route_t route;
    char *body;
    size_t len;
    int too_big;
    dlb_gw_http_request_t req;
    gw_call_t *call;            /* optimize: held (a reference) until answered */
    int ready;                  /* the answer below is set */
    unsigned status;            /* of the answer */
    char *answer;               /* its JSON body */
    struct hreq *next;          /* a worker's queue */
    struct hreq *pprev, *pnext; /* s->pending */
} hreq_t;

typedef struct worker {
    struct gw_http *s;
    pthread_t thread;
    int started;
    pthread_cond_t wake;
    hreq_t *head, *tail;
} worker_t;

struct gw_http {
    gw_t *gw;
    dlb_httpd_t *h;
    int port;
    pthread_mutex_t lock; /* the queues, pending, stopping; taken before gw->lock */
    int stopping;
    hreq_t *pending; /* optimize calls not answered yet */
    /* Requests answered from another thread whose answer libmicrohttpd has
     * not finished sending: stopping waits for them (GW_HTTP_DRAIN_MS). */
    _Atomic int answering;
    worker_t optimize, config;
    /* the config worker's own */
    dlb_pg_t *pg;
    dlb_matcher_t *m; /* compiled rules of version, NULL until loaded */
    int64_t version;
    int64_t checked_ms;
    char rules_err[640]; /* why no rules are loaded */
    dlb_series_t *calls[2];
};

/* ---- answers ------------------------------------------------------------------------ */

/* Queue an answer of status with body (malloc'ed; NULL = out of memory). */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, char *body)
{
    return dlb_httpd_respond(c, status, JSON, body, body ? strlen(body) : 0);
}

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *detail)
{
    return respond(c, status, dlb_gw_http_error_json(detail));
}

/* A suspended request's answer, set by any thread, and its connection
 * resumed: r is libmicrohttpd's again from there. */
static void finish(hreq_t *r, unsigned status, char *body)
{
    struct MHD_Connection *c = r->conn;

    r->status = status;
    r->answer = body;
    r->ready = 1;
    atomic_fetch_add(&r->s->answering, 1);
    dlb_httpd_resume(c);
}

static void finish_detail(hreq_t *r, unsigned status, const char *detail)
{
    finish(r, status, dlb_gw_http_error_json(detail));
}

/* gRPC's status of a call as the HTTP Brain's: what FastAPI would answer. */
static unsigned http_status(grpc_status_code st)
{
    switch (st) {
    case GRPC_STATUS_OK:
        return 201; /* DLRover's route: status_code=HTTP_201_CREATED */
    case GRPC_STATUS_INVALID_ARGUMENT:
        return 422;
    case GRPC_STATUS_UNAVAILABLE:
    case GRPC_STATUS_RESOURCE_EXHAUSTED:
        return 503;
    default:
        return 500;
    }
}

/* gw_answer() of a call that came over HTTP (its http_answer): rendered as
 * the HTTP Brain answers, its connection resumed. Any thread; no lock held. */
static void http_answer(gw_call_t *c, grpc_status_code status, const char *details,
                        const void *resp, size_t resp_len)
{
    gw_t *gw = c->gw;
    hreq_t *r = c->http;
    struct gw_http *s = r->s;
    char *body;

    if (status == GRPC_STATUS_OK && resp)
        body = dlb_gw_http_optimize_json(resp, resp_len, &r->req.job);
    else
        body = dlb_gw_http_error_json(details && details[0] ? details : "failed");
    if (status == GRPC_STATUS_INVALID_ARGUMENT) {
        gw->st->refused++;
        dlb_metric_add(gw->m.refused, 1);
    } else if (status != GRPC_STATUS_OK || !body) {
        gw->st->failed++;
        dlb_metric_add(gw->m.failed, 1);
    }
    pthread_mutex_lock(&s->lock);
    if (r->pprev)
        r->pprev->pnext = r->pnext;
    else
        s->pending = r->pnext;
    if (r->pnext)
        r->pnext->pprev = r->pprev;
    r->call = NULL;
    c->http = NULL;
    pthread_mutex_unlock(&s->lock);
    finish(r, body ? http_status(status) : 500, body);
    gw_call_release(c); /* the request's reference */
}

/* ---- the workers -------------------------------------------------------------------- */

static void enqueue_locked(worker_t *w, hreq_t *r)
{
    r->next = NULL;
    if (w->tail)
        w->tail->next = r;
    else
        w->head = r;
    w->tail = r;
    pthread_cond_signal(&w->wake);
}

/* An optimize call: wait for its plan, then produce its request (so the
 * plan cannot come before the wait). */
static void optimize_one(struct gw_http *s, hreq_t *r, int stopping)
{
    gw_call_t *c = r->call;
    char errstr[1024];

    if (stopping)
        gw_answer(c, GRPC_STATUS_UNAVAILABLE, "the gateway is stopping", NULL, 0);
    else if (gw_kafka_wait_plan(c, errstr, sizeof(errstr)) ||
             gw_kafka_send(c, &c->request, errstr, sizeof(errstr)))
        gw_answer(c, GRPC_STATUS_UNAVAILABLE, errstr, NULL, 0);
    (void)s;
}

/* The newest rules version, looked for every config.refresh.ms; one that
 * cannot be loaded or compiled leaves the one in force (as the configurer). */
static void rules_refresh(struct gw_http *s)
{
    const dlb_conf_t *conf = s->gw->conf;
    dlb_cfg_version_t v;
    dlb_rules_t rules = {0};
    dlb_matcher_t *m = NULL;
    int64_t now = dlb_clock_mono_ms(), loaded = 0;
    char sub[512];

    if (s->m && now - s->checked_ms < conf->config_refresh_ms)
        return;
    if (!s->m && s->checked_ms && now - s->checked_ms < 1000)
        return; /* not loaded yet: tried again every second */
    s->checked_ms = now;
    if (!s->pg && dlb_pg_connect(&s->pg, conf->pg_dsn, conf->pg_schema, sub, sizeof(sub))) {
        s->pg = NULL;
        snprintf(s->rules_err, sizeof(s->rules_err), "PostgreSQL: %s", sub);
        dlb_metrics_dep(DLB_DEP_POSTGRES, 0);
        return;
    }
    if (dlb_cfg_latest(s->pg, &v, sub, sizeof(sub)) ||
        (v.version != s->version && v.version > 0 &&
         dlb_cfg_load(s->pg, v.version, &rules, &loaded, sub, sizeof(sub)))) {
        snprintf(s->rules_err, sizeof(s->rules_err), "reading the rules: %s", sub);
        if (s->m)
            dlb_warn("gateway: looking for a new rules version: %s; matching with version %lld "
                     "until it can",
                     sub, (long long)s->version);
        return;
    }
    dlb_metrics_dep(DLB_DEP_POSTGRES, 1);
    if (s->m && v.version == s->version)
        return;
    if (dlb_matcher_new(&m, &rules, sub, sizeof(sub))) {
        snprintf(s->rules_err, sizeof(s->rules_err), "rules version %lld: %s", (long long)v.version,
                 sub);
        dlb_err("gateway: rules version %lld cannot be compiled: %s", (long long)v.version, sub);
    } else {
        dlb_info("gateway: rules version %lld in force for /job_config (%zu rules)",
                 (long long)v.version, rules.cnt);
        dlb_matcher_destroy(s->m);
        s->m = m;
        s->version = v.version;
    }
    dlb_rules_clear(&rules);
}

/* A job_config request: the job's attributes as the configurer completes a
 * config request's (each one the request names over those of the job's
 * newest job event with meta), matched against the rules in force. */
static void config_one(struct gw_http *s, hreq_t *r, int stopping)
{
    dlb_job_meta_t meta, stored;
    dlb_match_t res;
    char errstr[1024], detail[1200];
    int found = 0, err;

    if (stopping) {
        finish_detail(r, 503, "the gateway is stopping");
        return;
    }
    rules_refresh(s);
    if (!s->m) {
        snprintf(detail, sizeof(detail), "no configuration rules loaded yet: %s", s->rules_err);
        finish_detail(r, 503, detail);
        return;
    }
    if ((err = dlb_gw_http_job_meta(&r->req, &meta, errstr, sizeof(errstr)))) {
        finish_detail(r, 422, errstr);
        return;
    }
    if (r->req.job.uuid[0]) {
        if (!s->pg)
            err = dlb_seterr(errstr, sizeof(errstr), DLB_ERR_TRANSIENT, "not connected");
        else
            err = dlb_pg_job_meta(s->pg, r->req.job.uuid, &stored, &found, errstr, sizeof(errstr));
        if (err) {
            dlb_metrics_dep(DLB_DEP_POSTGRES, err != DLB_ERR_TRANSIENT);
            snprintf(detail, sizeof(detail), "the job's attributes: PostgreSQL: %s", errstr);
            finish_detail(r, 503, detail);
            return;
        }
        for (size_t i = 0; found && i < DLB_META_ATTRS; i++)
            if (!dlb_meta_attr_c(&meta, i)[0])
                memcpy(dlb_meta_attr(&meta, i), dlb_meta_attr_c(&stored, i), DLB_NAME_MAX);
    }
    if (dlb_matcher_match(s->m, &meta, &res)) {
        finish_detail(r, 503, "out of memory matching the rules");
        return;
    }
    finish(r, 200, dlb_gw_http_config_json(&res, s->version));
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    struct gw_http *s = w->s;
    int is_config = w == &s->config;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        hreq_t *r = w->head;
        int stopping = s->stopping;

        if (!r) {
            struct timespec until;

            if (stopping)
                break;
            if (is_config) { /* the rules are kept fresh while nobody asks */
                pthread_mutex_unlock(&s->lock);
                rules_refresh(s);
                pthread_mutex_lock(&s->lock);
                if (w->head || s->stopping)
                    continue;
            }
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&w->wake, &s->lock, &until);
            continue;
        }
        if (!(w->head = r->next))
            w->tail = NULL;
        pthread_mutex_unlock(&s->lock);
        if (is_config)
            config_one(s, r, stopping);
        else
            optimize_one(s, r, stopping);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- requests ------------------------------------------------------------------------ */

/* The call an optimize request becomes, as gateway.c's on_new makes one
 * for gRPC, but with no gRPC call: answers go to http_answer(). */
static gw_call_t *call_new(struct gw_http *s, hreq_t *r, const dlb_event_t *ev)
{
    gw_t *gw = s->gw;
    gw_call_t *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->gw = gw;
    c->http = r;
    c->http_answer = http_answer;
    c->plan_part = -1;
    c->status_details = grpc_empty_slice();
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    c->method = GW_OPTIMIZE;
    c->arrived_ms = dlb_clock_mono_ms();
    c->deadline_ms = c->arrived_ms + gw->conf->gateway.optimize_timeout_ms;
    c->request = *ev;
    dlb_plan_id(&c->request.u.req, c->plan_id, sizeof(c->plan_id)); /* the optimizer names it so */
    c->refs = 1; /* the request's, dropped when it is answered */
    return c;
}

static enum MHD_Result start_optimize(struct gw_http *s, hreq_t *r)
{
    gw_t *gw = s->gw;
    char id[37], errstr[1024];
    dlb_event_t ev;
    gw_call_t *c;
    int busy;

    if (dlb_uuid4(id))
        return refuse(r->conn, 500, "no random bytes for an event id");
    if (dlb_gw_http_request_event(&r->req, id, dlb_clock_wall_ms(), &ev, errstr, sizeof(errstr))) {
        dlb_warn("gateway: HTTP /optimize refused: %s", errstr);
        gw->st->refused++;
        dlb_metric_add(gw->m.refused, 1);
        return refuse(r->conn, 422, errstr);
    }
    if (!(c = call_new(s, r, &ev))) {
        dlb_event_clear(&ev);
        return refuse(r->conn, 503, "out of memory");
    }
    pthread_mutex_lock(&s->lock);
    pthread_mutex_lock(&gw->lock);
    busy = gw->inflight >= gw->conf->gateway.max_calls;
    if (!busy && !s->stopping)
        gw->inflight++;
    pthread_mutex_unlock(&gw->lock);
    if (busy || s->stopping) {
        pthread_mutex_unlock(&s->lock);
        c->http = NULL;
        gw_call_free(c);
        return refuse(r->conn, 503,
                      busy ? "gateway.max.calls calls are being served: try again"
                           : "the gateway is stopping");
    }
    r->call = c;
    if ((r->pnext = s->pending))
        s->pending->pprev = r;
    s->pending = r;
    dlb_httpd_suspend(r->conn);
    enqueue_locked(&s->optimize, r);
    pthread_mutex_unlock(&s->lock);
    return MHD_YES;
}

static enum MHD_Result start_job_config(struct gw_http *s, hreq_t *r)
{
    pthread_mutex_lock(&s->lock);
    if (s->stopping) {
        pthread_mutex_unlock(&s->lock);
        return refuse(r->conn, 503, "the gateway is stopping");
    }
    dlb_httpd_suspend(r->conn);
    enqueue_locked(&s->config, r);
    pthread_mutex_unlock(&s->lock);
    return MHD_YES;
}

static route_t route(const char *url, const char *method)
{
    int optimize = !strcmp(url, "/optimize"), job_config = !strcmp(url, "/job_config");

    if (!optimize && !job_config)
        return R_NOT_FOUND;
    if (strcmp(method, MHD_HTTP_METHOD_POST))
        return R_METHOD;
    return optimize ? R_OPTIMIZE : R_JOB_CONFIG;
}

/* The body as it arrives, up to gateway.max.message.bytes. */
static int body_add(struct gw_http *s, hreq_t *r, const char *data, size_t len)
{
    char *nb;

    if (r->too_big || (int64_t)(r->len + len) > s->gw->conf->gateway.max_message_bytes) {
        r->too_big = 1;
        return 0;
    }
    if (!(nb = realloc(r->body, r->len + len + 1)))
        return -1;
    memcpy(nb + r->len, data, len);
    r->body = nb;
    r->len += len;
    r->body[r->len] = '\0';
    return 0;
}

static enum MHD_Result too_big(struct gw_http *s, struct MHD_Connection *c)
{
    char detail[200];

    snprintf(detail, sizeof(detail),
             "the body is larger than gateway.max.message.bytes (%lld bytes)",
             (long long)s->gw->conf->gateway.max_message_bytes);
    return refuse(c, 413, detail);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    struct gw_http *s = cls;
    hreq_t *r = *con_cls;
    char errstr[1024];
    unsigned status;

    (void)version;
    if (!r) { /* the headers: the body, if any, comes in the next calls */
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        r->s = s;
        r->conn = c;
        r->route = route(url, method);
        *con_cls = r;
        if (r->route <= R_JOB_CONFIG)
            dlb_metric_add(s->calls[r->route], 1);
        /* Said too big up front: refused before it is read. */
        if (cl && strtoll(cl, NULL, 10) > s->gw->conf->gateway.max_message_bytes)
            return too_big(s, c);
        return MHD_YES;
    }
    if (r->ready) { /* resumed with its answer */
        char *body = r->answer;

        r->answer = NULL;
        return respond(c, r->status, body);
    }
    if (*upload_size) {
        if (body_add(s, r, upload, *upload_size))
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    switch (r->route) {
    case R_NOT_FOUND:
        return refuse(c, 404,
                      "Not Found: DLRover's Brain serves POST /optimize and POST "
                      "/job_config");
    case R_METHOD:
        return refuse(c, 405, "Method Not Allowed: POST");
    default:
        break;
    }
    if (r->too_big)
        return too_big(s, c);
    if (dlb_gw_http_parse(r->route == R_OPTIMIZE ? DLB_GW_HTTP_OPTIMIZE : DLB_GW_HTTP_JOB_CONFIG,
                          r->body, r->len, &r->req, &status, errstr, sizeof(errstr))) {
        dlb_warn("gateway: HTTP %s refused: %s", url, errstr);
        return refuse(c, status, errstr);
    }
    return r->route == R_OPTIMIZE ? start_optimize(s, r) : start_job_config(s, r);
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    hreq_t *r = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (!r)
        return;
    if (r->ready)
        atomic_fetch_sub(&r->s->answering, 1);
    free(r->body);
    free(r->answer);
    dlb_gw_http_request_clear(&r->req);
    free(r);
    *con_cls = NULL;
}

/* ---- start and stop -------------------------------------------------------------------- */

static int worker_start(struct gw_http *s, worker_t *w)
{
    pthread_condattr_t ca;

    w->s = s;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->thread, NULL, worker_main, w))
        return -1;
    w->started = 1;
    return 0;
}

static void worker_join(worker_t *w)
{
    if (w->started)
        pthread_join(w->thread, NULL);
    w->started = 0;
}

int gw_http_start(gw_t *gw, gw_http_t **out, char *errstr, size_t size)
{
    const dlb_conf_t *conf = gw->conf;
    struct gw_http *s;
    char host[256];
    int port, err;

    *out = NULL;
    if (!conf->gateway.http_address[0])
        return 0;
    if ((err = dlb_httpd_hostport("gateway.http.address", conf->gateway.http_address, host,
                                  sizeof(host), &port, errstr, size)))
        return err;
    if (!(s = calloc(1, sizeof(*s))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    s->gw = gw;
    pthread_mutex_init(&s->lock, NULL);
    s->calls[R_OPTIMIZE] =
        dlb_metric_counter("dlbrain_gateway_calls_total", "brain.Brain calls read, by method",
                           "method", DLB_LV("http_optimize"));
    s->calls[R_JOB_CONFIG] =
        dlb_metric_counter("dlbrain_gateway_calls_total", "brain.Brain calls read, by method",
                           "method", DLB_LV("http_job_config"));
    if (worker_start(s, &s->optimize) || worker_start(s, &s->config)) {
        gw_http_stop(s);
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "gateway: cannot start a thread");
    }
    if ((err =
             dlb_httpd_start("gateway: HTTP Brain", "gateway.http.address", host, port, &conf->http,
                             handle, s, request_done, &s->h, &s->port, errstr, size))) {
        gw_http_stop(s);
        return err;
    }
    dlb_info("gateway: serving DLRover's HTTP Brain (POST /optimize, /job_config) on "
             "http://%s%s%s:%d",
             strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", s->port);
    *out = s;
    return 0;
}

/* New requests are refused, queued ones answered 503, and every call still
 * waiting for its plan answered UNAVAILABLE, so no connection is left
 * suspended when libmicrohttpd stops. */
void gw_http_stop(gw_http_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    pthread_cond_signal(&s->optimize.wake);
    pthread_cond_signal(&s->config.wake);
    pthread_mutex_unlock(&s->lock);
    worker_join(&s->optimize);
    worker_join(&s->config);
    for (;;) {
        gw_call_t *c = NULL;

        pthread_mutex_lock(&s->lock);
        if (s->pending) {
            c = s->pending->call;
            pthread_mutex_lock(&s->gw->lock);
            c->refs++;
            pthread_mutex_unlock(&s->gw->lock);
        }
        pthread_mutex_unlock(&s->lock);
        if (!c)
            break;
        /* Answered already when another thread is answering it: then it
         * leaves pending as soon as that thread is done. */
        gw_answer(c, GRPC_STATUS_UNAVAILABLE, "the gateway is stopping", NULL, 0);
        gw_call_release(c);
        poll(NULL, 0, 0);
    }
    /* Stopping the daemon closes every connection: let the answers just
     * given reach their clients first (a slow client is not waited for
     * longer than GW_HTTP_DRAIN_MS). */
    for (int64_t until = dlb_clock_mono_ms() + GW_HTTP_DRAIN_MS;
         atomic_load(&s->answering) > 0 && dlb_clock_mono_ms() < until;)
        poll(NULL, 0, 10);
    dlb_httpd_stop(s->h);
    pthread_cond_destroy(&s->optimize.wake);
    pthread_cond_destroy(&s->config.wake);
    pthread_mutex_destroy(&s->lock);
    dlb_matcher_destroy(s->m);
    dlb_pg_destroy(s->pg);
    free(s);
}
