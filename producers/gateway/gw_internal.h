/* The gateway's inside, shared by gateway.c (gRPC calls), gw_kafka.c (what
 * calls produce and the plans they wait for) and gw_pg.c (job metrics). */
#ifndef DLB_GW_INTERNAL_H
#define DLB_GW_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <grpc/grpc.h>
#include <librdkafka/rdkafka.h>

#include "after.h"
#include "catalog.h"
#include "codec.h"
#include "conf.h"
#include "event.h"
#include "gateway.h"
#include "metrics.h"

typedef enum gw_method {
    GW_PERSIST,  /* /brain.Brain/persist_metrics */
    GW_OPTIMIZE, /* /brain.Brain/optimize */
    GW_METRICS,  /* /brain.Brain/get_job_metrics */
    GW_UNKNOWN,
} gw_method_t;

typedef struct gw gw_t;

/* One call from its arrival to its last completion. Its fields after
 * `refs` are under gw->lock: the Kafka thread answers calls too. */
typedef struct gw_call {
    gw_t *gw;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    grpc_byte_buffer *payload;
    int cancelled; /* RECV_CLOSE_ON_SERVER: the client went away first */
    gw_method_t method;
    int64_t arrived_ms;
    grpc_byte_buffer *resp;
    grpc_slice status_details;

    int refs;            /* completions and Kafka callbacks still to come */
    int answered;        /* the answer was started (or the client is gone) */
    int read_done;       /* its request message came whole (or the read failed) */
    int sent_done;       /* its answer was taken */
    int stalled;         /* cancelled: it stalled on its client (gateway.stall.timeout.ms) */
    int64_t answered_ms; /* when its answer was started (monotonic), 0: not yet */
    struct gw_call *live_prev, *live_next; /* gw->live */
    int acks_left;  /* persist/optimize: produced messages without a delivery report */
    int ack_failed; /* one of them failed */
    char ack_err[256];
    /* optimize: the plan awaited */
    int waiting; /* in gw->waiters */
    int64_t deadline_ms;
    int32_t plan_part;   /* partition of <env>.plans with the job's key, -1: any */
    dlb_event_t request; /* the plan request (owned: freed with the call) */
    char plan_id[DLB_ID_MAX];
    struct gw_call *next; /* gw->waiters */
    void *http;           /* an HTTP Brain call's request (gw_http.c); NULL for gRPC */
    /* An HTTP Brain call's answer (set by gw_http.c, so this file's callers
     * need not know the HTTP front): rendered there, its connection resumed.
     * Any thread; no lock held. */
    void (*http_answer)(struct gw_call *c, grpc_status_code status, const char *details,
                        const void *resp, size_t resp_len);
} gw_call_t;

/* Series of the gateway's own (NULL without a registry: updates are no-ops). */
typedef struct gw_metrics {
    dlb_series_t *calls[GW_UNKNOWN + 1];
    dlb_series_t *events, *plans, *no_plan, *refused, *failed, *cancelled;
    dlb_series_t *stalled_request, *stalled_answer; /* cancelled on a stalled client */
    dlb_series_t *optimize_seconds;
    dlb_series_t *partitions; /* plans partitions read now */
} gw_metrics_t;

struct gw {
    const dlb_conf_t *conf;
    volatile sig_atomic_t *stop;
    dlb_gateway_stats_t *st;
    gw_metrics_t m;
    dlb_catalog_t *cat;       /* under lock: avro-c values are not shared between threads */
    dlb_codec_decoder_t *dec; /* under lock: what is produced, checked as consumers check it */

    grpc_server *server;
    grpc_completion_queue *cq;
    int inflight;  /* calls being served (CQ thread only) */
    int requested; /* grpc_server_request_call outstanding (CQ thread only) */

    pthread_mutex_t lock;
    gw_call_t *live; /* every call being served, for the stall sweep (under lock) */
    rd_kafka_t *producer;
    rd_kafka_t *plans; /* plans consumer: no group, partitions assigned on demand */
    char plans_topic[256];
    char topics[DLB_EV__CNT][256];
    int32_t plans_parts; /* partition count of the plans topic */
    int *part_waiters;   /* per plans partition: calls waiting on it */
    int64_t *part_next;  /* per plans partition: next offset to read, -1 unassigned */
    int64_t *part_idle;  /* per plans partition: when its last waiter left */
    int assign_dirty;    /* the assignment changed: the Kafka thread applies it */
    gw_call_t *waiters;  /* optimize calls waiting for their plan */
    /* Per job, the last offsets acknowledged on the event topics: a plan
     * request's dlb.after header (under lock). */
    dlb_after_cache_t *after;
    pthread_t kafka_thread;
    int kafka_started;

    void *pg; /* gw_pg.c's connection, CQ thread only */
};

/* A call's completions carry it with the kind of completion in the low bits
 * (calloc'd memory is at least 8-byte aligned). */
enum { OP_NEW = 0, OP_READ = 1, OP_CLOSED = 2, OP_SENT = 3, OP_MASK = 3 };
#define TAG(c, op) ((void *)((uintptr_t)(c) | (uintptr_t)(op)))

/* ---- gw_call.c ---- */
/** Free c and what it holds (no reference may remain). */
void gw_call_free(gw_call_t *c);
/** RECV_CLOSE_ON_SERVER completed: a client gone before its answer leaves
 *  the waiters and is counted; the completion's reference is dropped. */
void gw_call_closed(gw_call_t *c);
/** Drop a reference, taking gw->lock; the last one frees c. */
void gw_call_release(gw_call_t *c);
/** Answer c (once: later answers are dropped) with status and, when resp is
 *  not NULL, the message (copied). Any thread; takes gw->lock. */
void gw_answer(gw_call_t *c, grpc_status_code status, const char *details, const void *resp,
               size_t resp_len);
/** Drop a reference; the last one frees c. Call with gw->lock held. */
void gw_call_release_locked(gw_call_t *c);

/* ---- gw_kafka.c ---- */
int gw_kafka_start(gw_t *gw, char *errstr, size_t errstr_size);
/* 0, or DLB_ERR_FATAL when the producer or the plans consumer failed for
 * good (dlb_kafka_fatal()): no call can be served any more. */
int gw_kafka_failed(gw_t *gw, char *errstr, size_t errstr_size);
void gw_kafka_stop(gw_t *gw);
/** Encode and produce ev for c; c is answered once every message it produced
 *  is acknowledged (persist) or its plan comes (optimize). CQ thread.
 *  @returns 0; DLB_ERR_INVALID when a consumer would refuse the event (it is
 *  not produced; errstr names the field); DLB_ERR_NOMEM; or a transient
 *  error (Kafka). */
int gw_kafka_send(gw_call_t *c, const dlb_event_t *ev, char *errstr, size_t errstr_size);
/** Start waiting for the plan of c's request (before it is produced). */
int gw_kafka_wait_plan(gw_call_t *c, char *errstr, size_t errstr_size);

/* ---- gw_http.c ---- */
typedef struct gw_http gw_http_t;
/** Serve DLRover's HTTP Brain on gateway.http.address (none when it is
 *  empty: *out NULL). @returns 0 or DLB_ERR_CONF (cannot listen there). */
int gw_http_start(gw_t *gw, gw_http_t **out, char *errstr, size_t errstr_size);
/** Answer what is left (the gateway is stopping) and stop serving; NULL is
 *  fine. Before gw_kafka_stop(). */
void gw_http_stop(gw_http_t *s);

/* ---- gw_pg.c ---- */
/** The job's stored metrics as the JSON DLRover's Go Brain returned
 *  (docs/gateway.md). @returns 0, DLB_ERR_NOTFOUND, or an error. */
int gw_pg_job_metrics(gw_t *gw, const char *job_uid, char **json, char *errstr, size_t errstr_size);
void gw_pg_close(gw_t *gw);

#endif
