/* The gateway's gRPC side: one completion-queue thread takes every call of
 * brain.Brain (gRPC's C core, generic calls), reads its message, unpacks it
 * with protobuf-c and hands it on; answers come from here or from the Kafka
 * thread (gw_kafka.c) once Kafka acknowledged or the plan came. */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "brain.pb-c.h"
#include "clock.h"
#include "err.h"
#include "gw_internal.h"
#include "gw_map.h"
#include "log.h"
#include "uuid.h"

#define TAG_SHUTDOWN ((void *)(uintptr_t)0x10)
/* Calls asked of gRPC ahead, so a burst is not served one at a time. */
#define REQUEST_AHEAD 8
/* How often the loop comes round when no call completes (beats, top-ups). */
#define LOOP_MS 100
/* Kept off a client's own deadline: the answer must still reach it. */
#define DEADLINE_MARGIN_MS 20

static const struct {
    const char *path;
    gw_method_t method;
    const char *name;
} methods[] = {
    {"/brain.Brain/persist_metrics", GW_PERSIST, "persist_metrics"},
    {"/brain.Brain/optimize", GW_OPTIMIZE, "optimize"},
    {"/brain.Brain/get_job_metrics", GW_METRICS, "get_job_metrics"},
};

/* ---- what each method does ------------------------------------------------------ */

static int payload_bytes(gw_call_t *c, uint8_t **data, size_t *len)
{
    grpc_byte_buffer_reader r;
    grpc_slice s;

    if (!grpc_byte_buffer_reader_init(&r, c->payload))
        return -1;
    s = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    *len = GRPC_SLICE_LENGTH(s);
    if (!(*data = malloc(*len ? *len : 1))) {
        grpc_slice_unref(s);
        return -1;
    }
    memcpy(*data, GRPC_SLICE_START_PTR(s), *len);
    grpc_slice_unref(s);
    return 0;
}

static void refuse(gw_call_t *c, const char *what, const char *errstr)
{
    char msg[1200];

    snprintf(msg, sizeof(msg), "%s: %s", what, errstr);
    dlb_warn("gateway: %s refused: %s", methods[c->method].name, msg);
    gw_answer(c, GRPC_STATUS_INVALID_ARGUMENT, msg, NULL, 0);
}

/* What producing a call's event failed on: bad input (a consumer would
 * refuse the event), memory, or Kafka. */
static void send_failed(gw_call_t *c, const char *what, int err, const char *errstr)
{
    if (err == DLB_ERR_INVALID || err == DLB_ERR_DECODE)
        refuse(c, what, errstr);
    else
        gw_answer(c,
                  err == DLB_ERR_NOMEM ? GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_UNAVAILABLE,
                  errstr, NULL, 0);
}

static void do_persist(gw_call_t *c, const uint8_t *data, size_t len)
{
    Brain__JobMetrics *m = brain__job_metrics__unpack(NULL, len, data);
    char id[37], errstr[1024];
    dlb_event_t ev;
    int err;

    if (!m) {
        snprintf(errstr, sizeof(errstr), "%zu bytes that do not parse as brain.JobMetrics", len);
        refuse(c, "persist_metrics", errstr);
        return;
    }
    if (dlb_uuid4(id)) {
        gw_answer(c, GRPC_STATUS_INTERNAL, "no random bytes for an event id", NULL, 0);
    } else if ((err = dlb_gw_metrics_event(m, id, dlb_clock_wall_ms(), "dlrover", &ev, errstr,
                                           sizeof(errstr)))) {
        if (err == DLB_ERR_NOMEM)
            gw_answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, errstr, NULL, 0);
        else
            refuse(c, "JobMetrics", errstr);
    } else {
        if ((err = gw_kafka_send(c, &ev, errstr, sizeof(errstr))))
            send_failed(c, "JobMetrics", err, errstr);
        dlb_event_clear(&ev);
    }
    brain__job_metrics__free_unpacked(m, NULL);
}

/* The plan must come before the nearer of the gateway's budget and the
 * client's own deadline. */
static int64_t optimize_deadline(const gw_call_t *c)
{
    int64_t now = c->arrived_ms; /* the budget counts from the call's arrival */
    int64_t ours = now + c->gw->conf->gateway.optimize_timeout_ms;
    gpr_timespec d = gpr_convert_clock_type(c->details.deadline, GPR_CLOCK_MONOTONIC);
    gpr_timespec left = gpr_time_sub(d, gpr_now(GPR_CLOCK_MONOTONIC));
    int64_t left_ms;

    if (gpr_time_cmp(c->details.deadline, gpr_inf_future(c->details.deadline.clock_type)) == 0)
        return ours;
    left_ms = gpr_time_to_millis(left) - DEADLINE_MARGIN_MS;
    if (left_ms < 0)
        left_ms = 0;
    return now + left_ms < ours ? now + left_ms : ours;
}

static void do_optimize(gw_call_t *c, const uint8_t *data, size_t len)
{
    Brain__OptimizeRequest *r = brain__optimize_request__unpack(NULL, len, data);
    char id[37], errstr[1024];
    dlb_event_t ev;
    int err;

    if (!r) {
        snprintf(errstr, sizeof(errstr), "%zu bytes that do not parse as brain.OptimizeRequest",
                 len);
        refuse(c, "optimize", errstr);
        return;
    }
    if (dlb_uuid4(id)) {
        gw_answer(c, GRPC_STATUS_INTERNAL, "no random bytes for an event id", NULL, 0);
        goto out;
    }
    if ((err = dlb_gw_request_event(r, id, dlb_clock_wall_ms(), &ev, errstr, sizeof(errstr)))) {
        refuse(c, "OptimizeRequest", errstr);
        goto out;
    }
    c->request = ev; /* the call owns it now */
    memset(&ev, 0, sizeof(ev));
    dlb_plan_id(&c->request.u.req, c->plan_id, sizeof(c->plan_id)); /* the optimizer names it so */
    c->deadline_ms = optimize_deadline(c);
    if ((err = gw_kafka_wait_plan(c, errstr, sizeof(errstr))) ||
        (err = gw_kafka_send(c, &c->request, errstr, sizeof(errstr))))
        send_failed(c, "OptimizeRequest", err, errstr);
out:
    brain__optimize_request__free_unpacked(r, NULL);
}

static void do_job_metrics(gw_call_t *c, const uint8_t *data, size_t len)
{
    Brain__JobMetricsRequest *r = brain__job_metrics_request__unpack(NULL, len, data);
    Brain__JobMetricsResponse resp = BRAIN__JOB_METRICS_RESPONSE__INIT;
    Brain__Response status = BRAIN__RESPONSE__INIT;
    char errstr[1024], reason[1200], *json = NULL;
    uint8_t *out = NULL;
    size_t out_len;
    int err;

    if (!r) {
        snprintf(errstr, sizeof(errstr), "%zu bytes that do not parse as brain.JobMetricsRequest",
                 len);
        refuse(c, "get_job_metrics", errstr);
        return;
    }
    if (!r->job_uuid || !r->job_uuid[0]) {
        refuse(c, "JobMetricsRequest", "job_uuid: missing");
        goto out;
    }
    err = gw_pg_job_metrics(c->gw, r->job_uuid, &json, errstr, sizeof(errstr));
    if (err && err != DLB_ERR_NOTFOUND) {
        gw_answer(c,
                  err == DLB_ERR_NOMEM ? GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_UNAVAILABLE,
                  errstr, NULL, 0);
        goto out;
    }
    resp.response = &status;
    status.success = !err;
    if (err) {
        snprintf(reason, sizeof(reason), "no metrics of job %.128s are stored", r->job_uuid);
        status.reason = reason;
    }
    resp.job_metrics = json ? json : (char *)"";
    out_len = brain__job_metrics_response__get_packed_size(&resp);
    if (!(out = malloc(out_len ? out_len : 1))) {
        gw_answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
        goto out;
    }
    brain__job_metrics_response__pack(&resp, out);
    gw_answer(c, GRPC_STATUS_OK, "", out, out_len);
out:
    free(out);
    free(json);
    brain__job_metrics_request__free_unpacked(r, NULL);
}

static void on_read(gw_call_t *c, int ok)
{
    uint8_t *data = NULL;
    size_t len = 0;

    if (!ok || !c->payload) {
        gw_answer(c, GRPC_STATUS_INVALID_ARGUMENT, "the call carried no request message", NULL, 0);
        return;
    }
    if (c->method == GW_UNKNOWN) {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "unknown method %.*s: brain.Brain serves persist_metrics, "
                 "optimize and get_job_metrics",
                 (int)GRPC_SLICE_LENGTH(c->details.method),
                 (const char *)GRPC_SLICE_START_PTR(c->details.method));
        gw_answer(c, GRPC_STATUS_UNIMPLEMENTED, msg, NULL, 0);
        return;
    }
    if (payload_bytes(c, &data, &len)) {
        gw_answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory reading the request", NULL, 0);
        return;
    }
    switch (c->method) {
    case GW_PERSIST:
        do_persist(c, data, len);
        break;
    case GW_OPTIMIZE:
        do_optimize(c, data, len);
        break;
    case GW_METRICS:
        do_job_metrics(c, data, len);
        break;
    default:
        break;
    }
    free(data);
}

/* ---- the completion queue ------------------------------------------------------- */

static int request_call(gw_t *gw)
{
    gw_call_t *c = calloc(1, sizeof(*c));

    if (!c)
        return -1;
    c->gw = gw;
    c->plan_part = -1;
    c->status_details = grpc_empty_slice();
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    if (grpc_server_request_call(gw->server, &c->call, &c->details, &c->md, gw->cq, gw->cq,
                                 TAG(c, OP_NEW)) != GRPC_CALL_OK) {
        gw_call_free(c);
        return -1;
    }
    gw->requested++;
    return 0;
}

static void top_up(gw_t *gw)
{
    int inflight;

    pthread_mutex_lock(&gw->lock);
    inflight = gw->inflight;
    pthread_mutex_unlock(&gw->lock);
    while (gw->requested < REQUEST_AHEAD && inflight + gw->requested < gw->conf->gateway.max_calls)
        if (request_call(gw))
            break;
}

static void on_new(gw_call_t *c, int ok)
{
    gw_t *gw = c->gw;
    grpc_op ops[2];

    gw->requested--;
    if (!ok) { /* the server is shutting down */
        gw_call_free(c);
        return;
    }
    c->arrived_ms = dlb_clock_mono_ms();
    c->method = GW_UNKNOWN;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (!grpc_slice_str_cmp(c->details.method, methods[i].path))
            c->method = methods[i].method;
    gw->st->calls++;
    dlb_metric_add(gw->m.calls[c->method], 1);
    pthread_mutex_lock(&gw->lock);
    gw->inflight++;
    c->refs = 2; /* OP_READ and OP_CLOSED */
    c->live_next = gw->live;
    if (gw->live)
        gw->live->live_prev = c;
    gw->live = c;
    pthread_mutex_unlock(&gw->lock);

    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->payload;
    if (grpc_call_start_batch(c->call, ops, 2, TAG(c, OP_READ), NULL) != GRPC_CALL_OK)
        gw_call_release(c);
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[0].data.recv_close_on_server.cancelled = &c->cancelled;
    if (grpc_call_start_batch(c->call, ops, 1, TAG(c, OP_CLOSED), NULL) != GRPC_CALL_OK)
        gw_call_release(c);
}

/* Set a flag of c that the stall sweep reads (under gw->lock). */
static void mark(gw_call_t *c, int *flag)
{
    pthread_mutex_lock(&c->gw->lock);
    *flag = 1;
    pthread_mutex_unlock(&c->gw->lock);
}

static void dispatch(gw_t *gw, grpc_event ev)
{
    gw_call_t *c = (gw_call_t *)((uintptr_t)ev.tag & ~(uintptr_t)OP_MASK);

    switch ((uintptr_t)ev.tag & OP_MASK) {
    case OP_NEW:
        on_new(c, ev.success);
        break;
    case OP_READ:
        mark(c, &c->read_done);
        if (!c->stalled) /* cancelled meanwhile: nothing of it is produced */
            on_read(c, ev.success);
        gw_call_release(c);
        break;
    case OP_CLOSED:
        gw_call_closed(c);
        break;
    case OP_SENT:
        mark(c, &c->sent_done);
        gw_call_release(c);
        break;
    }
    (void)gw;
}

/* A call holds one of gateway.max.calls while it waits on its client: a
 * client that sends headers and part of a message and no more, or does not
 * take its answer, would hold it for ever, and enough of them shut every
 * other client out. Calls stalled past gateway.stall.timeout.ms are
 * cancelled, which frees their place. CQ thread, once every LOOP_MS. */
static size_t sweep_some(gw_t *gw, int64_t now, size_t *reqs)
{
    int64_t t = gw->conf->gateway.stall_timeout_ms;
    gw_call_t *due[256];
    int request[256];
    size_t n = 0;
    char msg[200];

    pthread_mutex_lock(&gw->lock);
    for (gw_call_t *c = gw->live; c && n < sizeof(due) / sizeof(due[0]); c = c->live_next) {
        if (c->stalled)
            continue;
        if (!c->read_done && now - c->arrived_ms > t)
            request[n] = 1;
        else if (c->answered_ms && !c->sent_done && now - c->answered_ms > t)
            request[n] = 0;
        else
            continue;
        c->stalled = 1;
        c->answered = 1; /* no answer is started after the cancel */
        c->refs++;
        due[n++] = c;
    }
    pthread_mutex_unlock(&gw->lock);
    for (size_t i = 0; i < n; i++) {
        snprintf(msg, sizeof(msg),
                 request[i] ? "the request message did not arrive whole within %lld ms "
                              "(gateway.stall.timeout.ms)"
                            : "the answer was not taken within %lld ms (gateway.stall.timeout.ms)",
                 (long long)t);
        grpc_call_cancel_with_status(due[i]->call, GRPC_STATUS_DEADLINE_EXCEEDED, msg, NULL);
        *reqs += (size_t)request[i];
        gw->st->stalled++;
        dlb_metric_add(request[i] ? gw->m.stalled_request : gw->m.stalled_answer, 1);
        gw_call_release(due[i]);
    }
    return n;
}

static void sweep_stalled(gw_t *gw)
{
    int64_t now = dlb_clock_mono_ms();
    size_t n = 0, got, reqs = 0;

    /* In rounds (a cancelled call is marked and skipped by the next). */
    while ((got = sweep_some(gw, now, &reqs)) > 0)
        n += got;
    if (n)
        dlb_warn("gateway: cancelled %zu call(s) stalled on their client for more than %d ms "
                 "(gateway.stall.timeout.ms): %zu before their request arrived whole, %zu before "
                 "their answer was taken",
                 n, gw->conf->gateway.stall_timeout_ms, reqs, n - reqs);
}

static void metrics_setup(gw_t *gw)
{
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        gw->m.calls[methods[i].method] =
            dlb_metric_counter("dlbrain_gateway_calls_total", "brain.Brain calls read, by method",
                               "method", DLB_LV(methods[i].name));
    gw->m.calls[GW_UNKNOWN] =
        dlb_metric_counter("dlbrain_gateway_calls_total", "brain.Brain calls read, by method",
                           "method", DLB_LV("unknown"));
    gw->m.events =
        dlb_metric_counter("dlbrain_gateway_events_total",
                           "Events produced for calls and acknowledged by Kafka", "", NULL);
    gw->m.plans = dlb_metric_counter("dlbrain_gateway_plans_total",
                                     "optimize calls answered with a plan", "", NULL);
    gw->m.no_plan =
        dlb_metric_counter("dlbrain_gateway_no_plan_total",
                           "optimize calls answered success=false: no plan in time", "", NULL);
    gw->m.refused = dlb_metric_counter("dlbrain_gateway_refused_total",
                                       "Calls refused as bad input (INVALID_ARGUMENT)", "", NULL);
    gw->m.failed = dlb_metric_counter("dlbrain_gateway_failed_total",
                                      "Calls failed on a dependency or a limit", "", NULL);
    gw->m.cancelled = dlb_metric_counter("dlbrain_gateway_cancelled_total",
                                         "Calls the client gave up before their answer", "", NULL);
    gw->m.stalled_request = dlb_metric_counter(
        "dlbrain_gateway_stalled_total",
        "Calls cancelled for stalling on their client past gateway.stall.timeout.ms", "phase",
        DLB_LV("request"));
    gw->m.stalled_answer = dlb_metric_counter(
        "dlbrain_gateway_stalled_total",
        "Calls cancelled for stalling on their client past gateway.stall.timeout.ms", "phase",
        DLB_LV("answer"));
    gw->m.partitions = dlb_metric_gauge(
        "dlbrain_gateway_plans_partitions",
        "Partitions of <env>.plans this gateway reads now: those its waiting calls' plans come on",
        "", NULL);
    gw->m.optimize_seconds = dlb_metric_histogram(
        "dlbrain_gateway_optimize_duration_seconds",
        "Time from an optimize call's arrival to its plan (answered with one)", "", NULL);
}

static int server_start(gw_t *gw, char *errstr, size_t size)
{
    grpc_arg args[4];
    grpc_channel_args ca = {4, args};
    grpc_server_credentials *creds;
    int port;

    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[0].value.integer = gw->conf->gateway.max_message_bytes > INT32_MAX
                                ? INT32_MAX
                                : (int)gw->conf->gateway.max_message_bytes;
    /* One gateway per port: a second one must fail, not share it. */
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_ALLOW_REUSEPORT;
    args[1].value.integer = 0;
    /* Per connection: one client's streams take at most this many of
     * gateway.max.calls (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
    args[2].type = GRPC_ARG_INTEGER;
    args[2].key = (char *)GRPC_ARG_MAX_CONCURRENT_STREAMS;
    args[2].value.integer = gw->conf->gateway.max_calls_per_connection;
    /* A connection that never finishes its HTTP/2 preface is closed as
     * soon as a stalled call would be (gRPC's default: 120 s). */
    args[3].type = GRPC_ARG_INTEGER;
    args[3].key = (char *)GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS;
    args[3].value.integer = gw->conf->gateway.stall_timeout_ms;
    if (!(gw->cq = grpc_completion_queue_create_for_next(NULL)) ||
        !(gw->server = grpc_server_create(&ca, NULL)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "gateway: cannot create the gRPC server");
    grpc_server_register_completion_queue(gw->server, gw->cq, NULL);
    creds = grpc_insecure_server_credentials_create();
    port = grpc_server_add_http2_port(gw->server, gw->conf->gateway.address, creds);
    grpc_server_credentials_release(creds);
    if (!port)
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "gateway.address %s: cannot listen there (in use, or not host:port)",
                          gw->conf->gateway.address);
    grpc_server_start(gw->server);
    dlb_metrics_dep(DLB_DEP_KAFKA, 1);
    dlb_info("gateway: serving brain.Brain on %s (port %d), env %s, brokers %s",
             gw->conf->gateway.address, port, gw->conf->env, gw->conf->brokers);
    return 0;
}

/* How long one wait on the completion queue may take: a loop's turn. */
static gpr_timespec loop_deadline(void)
{
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(LOOP_MS, GPR_TIMESPAN));
}

/* Stop taking calls, cancel those in flight, and wait for each to end
 * (the Kafka thread still delivers the reports they hold). */
static void server_stop(gw_t *gw)
{
    int64_t until = dlb_clock_mono_ms() + 5000;
    int shut = 0, inflight = 1;

    if (gw->server) {
        grpc_server_shutdown_and_notify(gw->server, gw->cq, TAG_SHUTDOWN);
        grpc_server_cancel_all_calls(gw->server);
        while ((!shut || inflight) && dlb_clock_mono_ms() < until) {
            grpc_event ev = grpc_completion_queue_next(gw->cq, loop_deadline(), NULL);
            if (ev.type == GRPC_OP_COMPLETE) {
                if (ev.tag == TAG_SHUTDOWN)
                    shut = 1;
                else
                    dispatch(gw, ev);
            }
            pthread_mutex_lock(&gw->lock);
            inflight = gw->inflight;
            pthread_mutex_unlock(&gw->lock);
        }
        grpc_server_destroy(gw->server);
        gw->server = NULL;
    }
    if (!gw->cq)
        return;
    grpc_completion_queue_shutdown(gw->cq);
    for (until = dlb_clock_mono_ms() + 5000;;) {
        grpc_event ev = grpc_completion_queue_next(gw->cq, loop_deadline(), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        /* An operation gRPC never ends would hold the stop for ever: the
         * process is going, so the queue is left, named, to the exit. */
        if (ev.type == GRPC_QUEUE_TIMEOUT && dlb_clock_mono_ms() >= until) {
            dlb_warn("gateway: gRPC's completion queue did not drain in 5 s; left to the exit");
            gw->cq = NULL;
            return;
        }
        if (ev.type == GRPC_OP_COMPLETE && ev.tag != TAG_SHUTDOWN &&
            ((uintptr_t)ev.tag & OP_MASK) == OP_NEW)
            gw_call_free((gw_call_t *)((uintptr_t)ev.tag & ~(uintptr_t)OP_MASK));
    }
    grpc_completion_queue_destroy(gw->cq);
    gw->cq = NULL;
}

/* Each step of the stop is bounded; one that is slow anyway is named, so an
 * operator (or a test) sees where a stop that takes long spends it. */
static int64_t stop_stage(const char *what, int64_t since)
{
    int64_t now = dlb_clock_mono_ms();

    if (now - since >= 1000)
        dlb_warn("gateway: stopping %s took %lld ms", what, (long long)(now - since));
    return now;
}

int dlb_gateway_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, dlb_gateway_stats_t *stats,
                    char *errstr, size_t errstr_size)
{
    gw_t gw = {.conf = conf, .stop = stop, .st = stats};
    gw_http_t *http = NULL;
    int64_t last_sweep = 0, t;
    int err;

    if (conf->gateway.max_calls < 1)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "gateway.max.calls: at least 1");
    pthread_mutex_init(&gw.lock, NULL);
    grpc_init();
    metrics_setup(&gw);
    /* Ready once calls can be served: Kafka answered and the port listens.
     * PostgreSQL serves get_job_metrics alone, which DLRover never calls. */
    dlb_metrics_dep(DLB_DEP_KAFKA, 0);
    dlb_metrics_dep_optional(DLB_DEP_POSTGRES);
    if ((err = dlb_catalog_new(&gw.cat, errstr, errstr_size)) ||
        (err = gw_kafka_start(&gw, errstr, errstr_size)) ||
        (err = server_start(&gw, errstr, errstr_size)) ||
        (err = gw_http_start(&gw, &http, errstr, errstr_size)))
        goto out;
    while (!*stop) {
        int64_t now = dlb_clock_mono_ms();
        grpc_event ev;

        /* A failed client serves no call again: stop, and let the restart
         * make new ones (the answers due meanwhile are UNAVAILABLE). */
        if ((err = gw_kafka_failed(&gw, errstr, errstr_size)))
            break;
        if (now - last_sweep >= LOOP_MS) {
            sweep_stalled(&gw);
            last_sweep = now;
        }
        top_up(&gw);
        dlb_metrics_beat();
        ev = grpc_completion_queue_next(gw.cq, loop_deadline(), NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            dispatch(&gw, ev);
    }
out:
    /* A signal during the start asked for the process to go: what the start
     * could not do no longer matters. */
    if (err && *stop) {
        dlb_info("gateway: stopped while starting (%s)", errstr);
        err = 0;
    }
    dlb_info("gateway: stopping");
    t = dlb_clock_mono_ms();
    gw_http_stop(http);
    t = stop_stage("the HTTP Brain", t);
    server_stop(&gw);
    t = stop_stage("the gRPC server", t);
    gw_kafka_stop(&gw);
    t = stop_stage("the Kafka clients", t);
    gw_pg_close(&gw);
    if (gw.cat)
        dlb_catalog_destroy(gw.cat);
    grpc_shutdown();
    stop_stage("gRPC", t);
    pthread_mutex_destroy(&gw.lock);
    return err;
}
