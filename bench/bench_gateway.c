#include "bench_gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "brain.pb-c.h"
#include "err.h"
#include "latency.h"
#include "log.h"

#define METHOD "/brain.Brain/optimize"
/* A warm-up call that failed is made again after this long. */
#define RETRY_NS ((int64_t)500 * 1000000)
/* Failed calls logged one by one; the rest are only counted. */
#define WARN_MAX 5

/* One call, from its start to its completion (the tag of its one batch). */
typedef struct call {
    long i;   /* the path's request index, or the job's in the warm-up */
    int warm; /* a warm-up call */
    grpc_call *call;
    grpc_byte_buffer *send, *recv;
    grpc_metadata_array md, trailing;
    grpc_status_code status;
    grpc_slice details;
    struct call *prev, *next; /* g->calls */
} call_t;

struct dlb_bench_gw {
    dlb_bench_gw_opts_t o;
    grpc_channel *channel;
    grpc_completion_queue *cq;
    grpc_slice method;
    grpc_slice *reqs; /* per job, its packed OptimizeRequest */
    long packed;
    call_t *calls; /* in flight */
    long inflight;
    int grpc_up;
    /* warm-up */
    unsigned char *warm_done;
    int64_t *warm_retry; /* per job: 0 in flight or done, else when to start it again */
    char last_failure[512];
    dlb_bench_gw_counts_t counts;
    long warned;
};

/* ---- messages (pure) ------------------------------------------------------------------ */

int dlb_bench_gw_pack_request(const char *stage, const char *job_uid, uint8_t **out, size_t *len,
                              char *errstr, size_t errstr_size)
{
    Brain__OptimizeRequest r = BRAIN__OPTIMIZE_REQUEST__INIT;
    Brain__OptimizeJobMeta job = BRAIN__OPTIMIZE_JOB_META__INIT, *jobs[1] = {&job};

    /* What a DLRover master fills in for a stage with no OOM: the stage and
     * the job's uid (docs/dlrover-protocol.md). */
    r.type = (char *)stage;
    r.n_jobs = 1;
    r.jobs = jobs;
    job.uid = (char *)job_uid;
    *len = brain__optimize_request__get_packed_size(&r);
    if (!(*out = malloc(*len ? *len : 1)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    brain__optimize_request__pack(&r, *out);
    return 0;
}

int dlb_bench_gw_response_success(const uint8_t *data, size_t len)
{
    Brain__OptimizeResponse *r = brain__optimize_response__unpack(NULL, len, data);
    int ok;

    if (!r)
        return -1;
    ok = r->response && r->response->success;
    brain__optimize_response__free_unpacked(r, NULL);
    return ok;
}

/* ---- calls ------------------------------------------------------------------------------ */

static void call_free(call_t *c)
{
    if (c->call)
        grpc_call_unref(c->call);
    if (c->send)
        grpc_byte_buffer_destroy(c->send);
    if (c->recv)
        grpc_byte_buffer_destroy(c->recv);
    grpc_metadata_array_destroy(&c->md);
    grpc_metadata_array_destroy(&c->trailing);
    grpc_slice_unref(c->details);
    free(c);
}

static gpr_timespec mono_in_ns(int64_t ns)
{
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                        gpr_time_from_nanos(ns > 0 ? ns : 0, GPR_TIMESPAN));
}

/* Start the call of job for request (or warm-up job) i; *start_ns is when. */
static int call_start(dlb_bench_gw_t *g, long i, long job, int warm, int64_t *start_ns,
                      char *errstr, size_t size)
{
    call_t *c = calloc(1, sizeof(*c));
    grpc_op ops[6];
    grpc_call_error e;

    if (!c)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    c->i = i;
    c->warm = warm;
    c->details = grpc_empty_slice();
    grpc_metadata_array_init(&c->md);
    grpc_metadata_array_init(&c->trailing);
    *start_ns = dlb_lat_clock_ns();
    c->call = grpc_channel_create_call(g->channel, NULL, GRPC_PROPAGATE_DEFAULTS, g->cq, g->method,
                                       NULL, mono_in_ns((int64_t)g->o.deadline_ms * 1000000), NULL);
    if (!c->call || !(c->send = grpc_raw_byte_buffer_create(&g->reqs[job], 1))) {
        call_free(c);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "gateway: cannot create a call");
    }
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = c->send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &c->md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &c->recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &c->trailing;
    ops[5].data.recv_status_on_client.status = &c->status;
    ops[5].data.recv_status_on_client.status_details = &c->details;
    if ((e = grpc_call_start_batch(c->call, ops, 6, c, NULL)) != GRPC_CALL_OK) {
        call_free(c);
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "gateway: cannot start a call (%d)",
                          (int)e);
    }
    c->next = g->calls;
    if (g->calls)
        g->calls->prev = c;
    g->calls = c;
    g->inflight++;
    return 0;
}

/* The answer of a completed call: 1 good, 0 not (counted and described). */
static int call_result(dlb_bench_gw_t *g, call_t *c, int ok)
{
    grpc_byte_buffer_reader r;
    grpc_slice s;
    int success = -1;

    if (!ok) {
        g->counts.status++;
        snprintf(g->last_failure, sizeof(g->last_failure), "the call's batch failed");
        return 0;
    }
    if (c->status != GRPC_STATUS_OK) {
        g->counts.status++;
        snprintf(g->last_failure, sizeof(g->last_failure), "status %d: %.*s", (int)c->status,
                 (int)GRPC_SLICE_LENGTH(c->details),
                 (const char *)GRPC_SLICE_START_PTR(c->details));
        return 0;
    }
    if (c->recv && grpc_byte_buffer_reader_init(&r, c->recv)) {
        s = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
        success = dlb_bench_gw_response_success(GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s));
        grpc_slice_unref(s);
    }
    if (success == 1)
        return 1;
    if (success == 0) {
        g->counts.no_plan++;
        snprintf(g->last_failure, sizeof(g->last_failure), "success=false (no plan in time)");
    } else {
        g->counts.malformed++;
        snprintf(g->last_failure, sizeof(g->last_failure), "not an OptimizeResponse");
    }
    return 0;
}

/* Take the completed call of ev out of g->calls. */
static call_t *call_done(dlb_bench_gw_t *g, grpc_event ev)
{
    call_t *c = ev.tag;

    if (c->prev)
        c->prev->next = c->next;
    else
        g->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    g->inflight--;
    return c;
}

/* Completed calls until deadline_ns or the first one, then those ready until
 * deadline_ns: a burst of answers does not hold back the calls due next. */
static int take(dlb_bench_gw_t *g, dlb_bench_path_t *p, int64_t deadline_ns)
{
    gpr_timespec until = mono_in_ns(deadline_ns - dlb_lat_clock_ns());
    int err = 0;

    for (;;) {
        grpc_event ev = grpc_completion_queue_next(g->cq, until, NULL);
        int64_t at = dlb_lat_clock_ns();
        call_t *c;
        int good;

        if (ev.type != GRPC_OP_COMPLETE)
            return err;
        c = call_done(g, ev);
        good = call_result(g, c, ev.success);
        if (c->warm) {
            if (good)
                g->warm_done[c->i] = 1;
            else
                g->warm_retry[c->i] = at + RETRY_NS;
        } else {
            if (!good && g->warned++ < WARN_MAX)
                dlb_warn("gateway: call %ld (job %ld) failed: %s%s", c->i, c->i % g->o.jobs,
                         g->last_failure,
                         g->warned == WARN_MAX ? " (further ones counted only)" : "");
            if (p && !err)
                err = dlb_bench_path_answer(p, c->i, at, good);
        }
        call_free(c);
        if (at >= deadline_ns)
            return err;
        until = gpr_inf_past(GPR_CLOCK_MONOTONIC);
    }
}

/* ---- the client ------------------------------------------------------------------------- */

int dlb_bench_gw_new(dlb_bench_gw_t **out, const dlb_bench_gw_opts_t *opts, char *errstr,
                     size_t size)
{
    dlb_bench_gw_t *g;
    grpc_channel_credentials *creds;
    char uid[256];

    *out = NULL;
    if (!opts->address || !opts->address[0] || opts->jobs < 1)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "gateway: no address, or no jobs");
    if (!(*out = g = calloc(1, sizeof(*g))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    g->o = *opts;
    if (g->o.deadline_ms < 1)
        g->o.deadline_ms = 1;
    if (!(g->reqs = calloc((size_t)opts->jobs, sizeof(*g->reqs))) ||
        !(g->warm_done = calloc((size_t)opts->jobs, 1)) ||
        !(g->warm_retry = calloc((size_t)opts->jobs, sizeof(*g->warm_retry))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    grpc_init();
    g->grpc_up = 1;
    for (; g->packed < opts->jobs; g->packed++) {
        uint8_t *buf;
        size_t len;
        int err;
        opts->job_uid(opts->ctx, g->packed, uid, sizeof(uid));
        if ((err = dlb_bench_gw_pack_request(opts->stage, uid, &buf, &len, errstr, size)))
            return err;
        g->reqs[g->packed] = grpc_slice_from_copied_buffer((const char *)buf, len);
        free(buf);
    }
    g->method = grpc_slice_from_static_string(METHOD);
    creds = grpc_insecure_credentials_create();
    g->channel = grpc_channel_create(opts->address, creds, NULL);
    grpc_channel_credentials_release(creds);
    if (!g->channel || !(g->cq = grpc_completion_queue_create_for_next(NULL)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "gateway: cannot create a gRPC channel");
    return 0;
}

int dlb_bench_gw_warm_up(dlb_bench_gw_t *g, long timeout_ms, char *errstr, size_t size)
{
    const int64_t deadline = dlb_lat_clock_ns() + (int64_t)timeout_ms * 1000000;
    int64_t start;
    int err;

    for (long j = 0; j < g->o.jobs; j++)
        g->warm_retry[j] = 1; /* due now */
    while (!(g->o.stop && *g->o.stop)) {
        int64_t now = dlb_lat_clock_ns(), next = now + 100000000;
        long left = 0;
        for (long j = 0; j < g->o.jobs; j++) {
            if (g->warm_done[j])
                continue;
            left++;
            if (!g->warm_retry[j])
                continue; /* in flight */
            if (g->warm_retry[j] <= now) {
                if ((err = call_start(g, j, j, 1, &start, errstr, size)))
                    return err;
                g->warm_retry[j] = 0;
            } else if (g->warm_retry[j] < next) {
                next = g->warm_retry[j];
            }
        }
        if (!left && !g->inflight)
            return 0;
        if (now > deadline)
            return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                              "gateway %s: %ld of %ld warm-up call(s) without a plan after %ld ms "
                              "(last failure: %s; are 'dlbrain gateway' and 'dlbrain optimizer' "
                              "running on these brokers?)",
                              g->o.address, left, g->o.jobs, timeout_ms,
                              g->last_failure[0] ? g->last_failure : "none, still waiting");
        if ((err = take(g, NULL, next < deadline ? next : deadline)))
            return err;
    }
    return 0;
}

static int gw_send(void *ctx, dlb_bench_path_t *p, long i, char *errstr, size_t size)
{
    dlb_bench_gw_t *g = ctx;

    return call_start(g, i, i % g->o.jobs, 0, &p->sent_ns[i], errstr, size);
}

static int gw_poll(void *ctx, dlb_bench_path_t *p, int64_t deadline_ns, char *errstr, size_t size)
{
    if (take(ctx, p, deadline_ns))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

void dlb_bench_gw_ops(dlb_bench_gw_t *g, dlb_bench_path_ops_t *ops)
{
    ops->send = gw_send;
    ops->poll = gw_poll;
    ops->ctx = g;
}

dlb_bench_gw_counts_t dlb_bench_gw_counts(const dlb_bench_gw_t *g)
{
    return g->counts;
}

void dlb_bench_gw_destroy(dlb_bench_gw_t *g)
{
    if (!g)
        return;
    if (g->cq) {
        /* Every call ends on the queue once cancelled; then the queue. */
        for (call_t *c = g->calls; c; c = c->next)
            grpc_call_cancel(c->call, NULL);
        while (g->inflight > 0) {
            grpc_event ev =
                grpc_completion_queue_next(g->cq, mono_in_ns((int64_t)5000 * 1000000), NULL);
            if (ev.type != GRPC_OP_COMPLETE)
                break;
            call_free(call_done(g, ev));
        }
        grpc_completion_queue_shutdown(g->cq);
        for (;;) {
            grpc_event ev =
                grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
            if (ev.type == GRPC_QUEUE_SHUTDOWN)
                break;
            if (ev.type == GRPC_OP_COMPLETE)
                call_free(call_done(g, ev));
        }
        grpc_completion_queue_destroy(g->cq);
    }
    if (g->channel)
        grpc_channel_destroy(g->channel);
    for (long j = 0; j < g->packed; j++)
        grpc_slice_unref(g->reqs[j]);
    free(g->reqs);
    free(g->warm_done);
    free(g->warm_retry);
    if (g->grpc_up)
        grpc_shutdown();
    free(g);
}
