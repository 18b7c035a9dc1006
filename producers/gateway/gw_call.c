/* A call's life, shared by the gRPC thread (gateway.c) and the Kafka thread
 * (gw_kafka.c): references, the one answer, and leaving the plan waiters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gw_internal.h"
#include "log.h"

/* ---- a call's life ------------------------------------------------------------ */

void gw_call_free(gw_call_t *c)
{
    if (c->call)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    if (c->payload)
        grpc_byte_buffer_destroy(c->payload);
    if (c->resp)
        grpc_byte_buffer_destroy(c->resp);
    grpc_slice_unref(c->status_details);
    dlb_event_clear(&c->request);
    free(c);
}

void gw_call_release_locked(gw_call_t *c)
{
    gw_t *gw = c->gw;

    if (--c->refs > 0)
        return;
    if (c->live_prev)
        c->live_prev->live_next = c->live_next;
    else if (gw->live == c)
        gw->live = c->live_next;
    if (c->live_next)
        c->live_next->live_prev = c->live_prev;
    gw->inflight--;
    gw_call_free(c);
}

void gw_call_release(gw_call_t *c)
{
    gw_t *gw = c->gw;

    pthread_mutex_lock(&gw->lock);
    gw_call_release_locked(c);
    pthread_mutex_unlock(&gw->lock);
}

/* Out of gw->waiters, and its partition's count with it. Locked. */
static void unwait_locked(gw_call_t *c)
{
    gw_t *gw = c->gw;

    if (!c->waiting)
        return;
    for (gw_call_t **pp = &gw->waiters; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    c->waiting = 0;
    for (int32_t p = 0; p < gw->plans_parts; p++) {
        if (c->plan_part >= 0 && p != c->plan_part)
            continue;
        /* Still read for a while (gateway.plans.linger.ms): the next call
         * on it then needs no end-offset question and no new assignment. */
        if (--gw->part_waiters[p] == 0)
            gw->part_idle[p] = dlb_clock_mono_ms();
    }
    gw_call_release_locked(c);
}

void gw_answer(gw_call_t *c, grpc_status_code status, const char *details, const void *resp,
               size_t resp_len)
{
    gw_t *gw = c->gw;
    grpc_op ops[2];
    size_t n = 0;

    pthread_mutex_lock(&gw->lock);
    if (c->answered) {
        pthread_mutex_unlock(&gw->lock);
        return;
    }
    c->answered = 1;
    c->answered_ms = dlb_clock_mono_ms();
    unwait_locked(c);
    if (c->http) { /* an HTTP Brain call: its connection gets the answer */
        pthread_mutex_unlock(&gw->lock);
        c->http_answer(c, status, details, resp, resp_len);
        return;
    }
    c->refs++; /* OP_SENT */
    pthread_mutex_unlock(&gw->lock);

    memset(ops, 0, sizeof(ops));
    if (resp && status == GRPC_STATUS_OK) {
        grpc_slice s = grpc_slice_from_copied_buffer(resp, resp_len);
        c->resp = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->resp;
    }
    c->status_details = grpc_slice_from_copied_string(details ? details : "");
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = status;
    ops[n++].data.send_status_from_server.status_details = &c->status_details;
    if (grpc_call_start_batch(c->call, ops, n, TAG(c, OP_SENT), NULL) != GRPC_CALL_OK) {
        dlb_warn("gateway: could not send the answer of a call; dropped");
        gw_call_release(c);
    }
    if (status == GRPC_STATUS_INVALID_ARGUMENT) {
        gw->st->refused++;
        dlb_metric_add(gw->m.refused, 1);
    } else if (status != GRPC_STATUS_OK) {
        gw->st->failed++;
        dlb_metric_add(gw->m.failed, 1);
    }
}

void gw_call_closed(gw_call_t *c)
{
    gw_t *gw = c->gw;

    pthread_mutex_lock(&gw->lock);
    if (c->cancelled && !c->answered) {
        /* Gone before the answer: what it produced stays produced (whole
         * events), the plan it waited for is simply not delivered. */
        c->answered = 1;
        unwait_locked(c);
        gw->st->cancelled++;
        dlb_metric_add(gw->m.cancelled, 1);
    }
    gw_call_release_locked(c);
    pthread_mutex_unlock(&gw->lock);
}
