/* The agent library's inside (dlbrain_agent.h is its outside): shared by
 * agent.c (configuration, reports, the producer thread), agent_event.c (public
 * structs to pipeline events) and agent_plans.c (the plan subscription). */
#ifndef DLB_AGENT_INTERNAL_H
#define DLB_AGENT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "clock.h"
#include "after.h"
#include "catalog.h"
#include "conf.h"
#include "schemareg_client.h"
/* The public functions are the only ones the shared library exports (it is
 * built with -fvisibility=hidden): their declarations carry the default
 * visibility, which the definitions inherit. */
#pragma GCC visibility push(default)
#include "dlbrain_agent.h"
#pragma GCC visibility pop
#include "event.h"
#include "subscribe.h"

/* Plan requests held at once (dlbrain_agent.h says 64). */
#define AGENT_REQS_MAX 64
/* How long the plan thread waits before it reads a plan again whose schema id
 * the registry did not answer for. */
#define AGENT_SR_RETRY_MS 1000
/* How long a request waits for the plan subscription to fix its offset. */
#define AGENT_SUB_WAIT_MS 10000
/* Plan ids remembered for "each id once"; then the memory starts over. */
#define AGENT_SEEN_MAX 4096

struct dlb_agent_conf {
    dlb_conf_t dc; /* env, brokers and the librdkafka pass-through (dc.kafka) */
    long queue_max_messages;
    long queue_max_kbytes;
    long plans_max;
    long log_level;
    long log_interval_ms;
    dlb_agent_log_cb log_cb;
    void *log_opaque;
    char env_err[512]; /* a DLBRAIN_SCHEMA_REGISTRY_* variable refused: open says so */
};

/* A plan request waiting for the messages queued before it. */
typedef struct agent_req {
    uint64_t mark;    /* messages produced before it: those numbered <= mark */
    uint64_t waiting; /* of those, still without a delivery report */
    int64_t created_ms;
    void *buf;
    size_t len;
} agent_req_t;

/* A condition logged at most once per interval, with how often it happened. */
typedef struct agent_throttle {
    int64_t last_ms;
    uint64_t count; /* since the last line */
    char first[512];
} agent_throttle_t;

/* A plan as the public struct shows it, with what its pointers point into. */
typedef struct agent_plan {
    dlb_agent_plan_t pub; /* first: dlb_agent_plan_destroy() casts back */
    dlb_event_t ev;
    dlb_agent_group_t *groups;
    dlb_agent_pod_t *pods;
    dlb_agent_action_t *actions;
} agent_plan_t;

typedef enum { SUB_NONE, SUB_STARTING, SUB_READY } sub_state_t;

/* Test hook: sees each message as it is produced (never while a real
 * producer could not take it). */
typedef void (*agent_tap_cb)(const char *topic, const char *key, const void *buf, size_t len,
                             void *opaque);

struct dlb_agent {
    dlb_agent_conf_t conf;
    char uid[DLB_ID_MAX];
    char nonce[17];
    char topics[DLB_EV__CNT][256];
    dlb_catalog_t *cat; /* under lock: avro-c values are not shared across threads */
    /* schema.registry.url: the client and the ids it gave, which every
     * catalog of this agent writes and reads (NULL: the catalog's ids) */
    dlb_srclient_t *sr;
    dlb_catalog_wire_t *wire;

    pthread_mutex_t lock;
    pthread_cond_t progress; /* a delivery report or a request sent: flush re-checks */
    pthread_mutex_t log_lock;
    rd_kafka_t *producer;
    pthread_t io_thread;
    int io_started, stop;

    uint64_t seq;           /* event ids given out */
    uint64_t produced;      /* messages handed to the producer, numbered 1.. */
    uint64_t acked;         /* of those, with a delivery report (success or failure) */
    uint64_t reqs_inflight; /* plan requests produced, without a delivery report yet */
    int64_t last_time_ms;
    dlb_agent_stats_t st;
    dlb_after_t after;                /* the events acknowledged: requests' dlb.after header */
    agent_req_t reqs[AGENT_REQS_MAX]; /* a ring, oldest first */
    size_t reqs_head, reqs_cnt;
    agent_throttle_t thr_drop, thr_fail, thr_invalid, thr_kafka;

    /* plans (agent_plans.c) */
    sub_state_t sub;
    rd_kafka_t *consumer;
    pthread_t plans_thread;
    int plans_started, plans_stop;
    dlb_agent_plan_cb plan_cb;
    void *plan_opaque;
    pthread_cond_t plan_ready;
    agent_plan_t **plans; /* a ring of conf.plans_max, for dlb_agent_poll_plan() */
    size_t plans_head, plans_cnt;
    dlb_seen_t seen;

    agent_tap_cb tap;
    void *tap_opaque;
};

/* A message's opaque: its number shifted left, the low bit set for a request. */
#define AGENT_MSG_REQ 1u

/* ---- agent_io.c ---- */
void agent_log(dlb_agent_t *a, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Count a repeated condition; @returns 1 when a line is due (text in out). */
int agent_throttle(dlb_agent_t *a, agent_throttle_t *t, const char *what, char *out,
                   size_t out_size);
/* Send the plan requests that are due. Called with the lock held. */
void agent_send_due(dlb_agent_t *a);
/* agent_throttle, and the line at warning/error level when it is due. */
void agent_log_throttled(dlb_agent_t *a, agent_throttle_t *t, int level, const char *what);
/* The count a throttle held back since its last line, if any (close). */
void agent_log_held_back(dlb_agent_t *a, agent_throttle_t *t);
/* The producer's delivery-report callback (opaque: the agent). */
void agent_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);
/* The io thread: serves delivery reports and sends due requests until stop. */
void *agent_io_main(void *arg);

/* librdkafka configuration of this agent: base settings, the pass-through,
 * then extra; logs and errors go to the agent's log callback, served by
 * whichever thread polls the client. */
rd_kafka_conf_t *agent_kafka_conf(dlb_agent_t *a, const char *const *base, const char *const *extra,
                                  char *errstr, size_t errstr_size);

/* ---- agent.c ---- */
/* Install the test hook (not exported by the shared library). */
void agent_set_tap(dlb_agent_t *a, agent_tap_cb cb, void *opaque);

/* ---- agent_event.c: public structs to events, checked against the field
 * sizes (DLB_AGENT_ERR_INVALID naming the field, never truncated) ---- */
int agent_event_job(const dlb_agent_job_t *in, dlb_event_t *ev, char *errstr, size_t size);
int agent_event_sample(const dlb_agent_sample_t *in, dlb_event_t *ev, char *errstr, size_t size);
int agent_event_node(const dlb_agent_node_event_t *in, dlb_event_t *ev, char *errstr, size_t size);
int agent_event_request(const char *stage, const char *oom_pod, dlb_event_t *ev, char *errstr,
                        size_t size);
/* The public view of a decoded plan; takes ev's contents (ev is zeroed). */
agent_plan_t *agent_plan_new(dlb_event_t *ev);

/* ---- agent_plans.c ---- */
/* Stop the plan thread and free the subscription (close). */
void agent_plans_stop(dlb_agent_t *a);

#endif
