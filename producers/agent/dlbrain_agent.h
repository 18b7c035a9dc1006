/* dlbrain agent: the library a training job links to tell dlbrain about itself
 * and to receive its resource plans.
 *
 * One agent per job (a job uid). Reports (job meta and features, runtime
 * samples, node events, plan requests) are encoded and handed to an in-process
 * Kafka producer without ever blocking: when its bounded queue is full the
 * report is dropped, counted (dlb_agent_stats()) and logged at most once per
 * agent.log.interval.ms, and the training goes on. A background thread of the
 * agent serves the producer (delivery reports) and, once subscribed, reads this
 * job's plans, so the training loop never has to poll anything.
 *
 * Thread safety: every function may be called from any thread, except that
 * dlb_agent_close() must be called once, last, and not from a callback.
 *
 * ABI: this header is the whole interface (libdlbrain-agent.so.1, symbols
 * versioned DLBRAIN_AGENT_1). Structs passed *in* are frozen for ABI 1: a new
 * field comes with a new struct and function, never by growing these. Structs
 * filled *by* the library are allocated by it (dlb_agent_plan_t) or take their
 * size (dlb_agent_stats()), so they may grow at the end. Strings are UTF-8 and
 * NUL-terminated; a string longer than its field in the event schema is
 * refused (DLB_AGENT_ERR_INVALID), never truncated. Memory is in bytes, CPU in
 * cores, times in ms since the epoch. */
#ifndef DLBRAIN_AGENT_H
#define DLBRAIN_AGENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI this header describes; dlb_agent_abi_version() is the library's. */
#define DLB_AGENT_ABI_VERSION 1

/** Room for any id the agent returns (event ids, plan ids), with the NUL. */
#define DLB_AGENT_ID_MAX 128

/** Longest job uid accepted: event ids are "<uid>-<16 hex nonce>-<sequence>"
 *  and plan ids "plan-<request id>", and both must fit DLB_AGENT_ID_MAX. */
#define DLB_AGENT_UID_MAX 80

/* Stages of a plan request (DLRover's request types). */
#define DLB_AGENT_STAGE_CREATE         "job_stage_create"
#define DLB_AGENT_STAGE_PS_INITIAL     "job_stage_ps_initial"
#define DLB_AGENT_STAGE_WORKER_INITIAL "job_stage_worker_initial"
#define DLB_AGENT_STAGE_RUNNING        "job_stage_running"
#define DLB_AGENT_STAGE_PS_RUNNING     "job_stage_ps_running"
#define DLB_AGENT_STAGE_WORKER_RUNNING "job_stage_worker_running"

/** Return codes: 0 or one of these (negative). */
typedef enum dlb_agent_err {
    DLB_AGENT_OK = 0,
    DLB_AGENT_ERR_INVALID = -1,    /**< a bad argument; nothing was sent */
    DLB_AGENT_ERR_QUEUE_FULL = -2, /**< the queue is full: the report was dropped and counted */
    DLB_AGENT_ERR_CONF = -3,       /**< a bad configuration key or value */
    DLB_AGENT_ERR_STATE = -4,      /**< not allowed now (subscribed twice, poll without
                                        subscribing in poll mode) */
    DLB_AGENT_ERR_TIMEOUT = -5,    /**< not everything was delivered in time */
    DLB_AGENT_ERR_NOMEM = -6,      /**< out of memory */
    DLB_AGENT_ERR_KAFKA = -7,      /**< the Kafka client refused (errstr or the log says why) */
} dlb_agent_err_t;

/** @returns a short English description of a return code. */
const char *dlb_agent_err2str(int err);

/** @returns the library's version, e.g. "0.1.0". */
const char *dlb_agent_version(void);

/** @returns the library's ABI version; compare with DLB_AGENT_ABI_VERSION. */
int dlb_agent_abi_version(void);

/* ---- configuration ------------------------------------------------------ */

/** Log levels given to the log callback (syslog's numbers). */
#define DLB_AGENT_LOG_ERROR   3
#define DLB_AGENT_LOG_WARNING 4
#define DLB_AGENT_LOG_INFO    6
#define DLB_AGENT_LOG_DEBUG   7

/** @brief Where the agent's log lines go; the library never writes to
 *         stdout or stderr itself. Called from the agent's threads and from a
 *         thread whose call failed, never from two threads at once.
 *  @param level   one of DLB_AGENT_LOG_*
 *  @param message one line, without a newline; never contains a secret */
typedef void (*dlb_agent_log_cb)(int level, const char *message, void *opaque);

typedef struct dlb_agent_conf dlb_agent_conf_t;

/** @brief A configuration with the defaults: brokers from DLBRAIN_BROKERS
 *         (else "localhost:9092"), env from DLBRAIN_ENV (else "dlbrain").
 *  @returns the configuration, or NULL when out of memory. */
dlb_agent_conf_t *dlb_agent_conf_new(void);

/** @brief Set one key.
 *
 * | key | default | meaning |
 * |---|---|---|
 * | `brokers` (or `bootstrap.servers`) | `$DLBRAIN_BROKERS`, `localhost:9092` | Kafka bootstrap
 * servers | | `env` | `$DLBRAIN_ENV`, `dlbrain` | topic prefix: `<env>.metrics`, `<env>.plans`, ...
 * | | `agent.queue.max.messages` | `10000` | reports queued at most (librdkafka's
 *   queue.buffering.max.messages); more are dropped and counted |
 * | `agent.queue.max.kbytes` | `65536` | the same bound in KiB (queue.buffering.max.kbytes) |
 * | `agent.plans.max` | `100` | plans kept for dlb_agent_poll_plan(); the oldest goes first |
 * | `agent.log.level` | `6` | most verbose level given to the log callback (3..7) |
 * | `agent.log.interval.ms` | `10000` | a repeated condition (drops, failed deliveries,
 *   invalid reports) is logged at most once per interval, with a count |
 * | `schema.registry.url` | `$DLBRAIN_SCHEMA_REGISTRY_URL`, empty | a Confluent-compatible
 *   schema registry (http:// or https://): dlb_agent_open() looks up or registers dlbrain's
 *   schemas under `<env>.<topic>-value`, reports carry the ids it gives, plans of other ids are
 *   resolved through it (once each); empty: the catalog's ids |
 * | `schema.registry.basic.auth.user.info` | `$DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO` |
 *   `user:password` for the registry (a secret: never logged) |
 * | `schema.registry.basic.auth.user.info.file` |
 *   `$DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE` | a file holding it |
 * | `schema.registry.ssl.ca.location` | `$DLBRAIN_SCHEMA_REGISTRY_SSL_CA_LOCATION` | CA file
 *   (PEM) of an https registry; empty: the system's |
 * | `schema.registry.timeout.ms` | `$DLBRAIN_SCHEMA_REGISTRY_TIMEOUT_MS`, `10000` | one
 *   request's longest wait (100..600000) |
 * | anything else | | a librdkafka property for both clients (TLS, SASL, `partitioner`, ...) |
 *
 *  @returns 0, DLB_AGENT_ERR_CONF (errstr says why; it never repeats a value),
 *           DLB_AGENT_ERR_INVALID (a NULL argument), DLB_AGENT_ERR_NOMEM. */
int dlb_agent_conf_set(dlb_agent_conf_t *conf, const char *key, const char *value, char *errstr,
                       size_t errstr_size);

/** @brief Send log lines to cb (default: none). */
void dlb_agent_conf_set_log_cb(dlb_agent_conf_t *conf, dlb_agent_log_cb cb, void *opaque);

void dlb_agent_conf_destroy(dlb_agent_conf_t *conf);

/* ---- the agent ---------------------------------------------------------- */

typedef struct dlb_agent dlb_agent_t;

/** @brief Start an agent for one job. Does not wait for the brokers: reports
 *         made before they answer are queued. With `schema.registry.url` it
 *         does wait for the registry (a request or two per schema version,
 *         each at most `schema.registry.timeout.ms`), and fails when the
 *         registry refuses a schema (errstr names subject, version and the
 *         registry's reason), cannot be reached, or refuses the credentials.
 *  @param conf    copied; NULL means dlb_agent_conf_new()'s defaults
 *  @param job_uid the job's uid (at most DLB_AGENT_UID_MAX characters); the
 *                 key of every message, so one job's events stay in order
 *  @returns the agent, or NULL with errstr saying why. */
dlb_agent_t *dlb_agent_open(const dlb_agent_conf_t *conf, const char *job_uid, char *errstr,
                            size_t errstr_size);

/** @brief Wait until everything reported so far is acknowledged by the
 *         brokers (or failed), plan requests included. Blocks the caller.
 *  @param timeout_ms -1: no limit
 *  @returns 0 or DLB_AGENT_ERR_TIMEOUT. */
int dlb_agent_flush(dlb_agent_t *agent, int timeout_ms);

/** @brief Flush (up to flush_timeout_ms), stop the threads, free the agent.
 *         What is not delivered by then is discarded and logged with counts.
 *  @returns 0 when everything was delivered, else DLB_AGENT_ERR_TIMEOUT. */
int dlb_agent_close(dlb_agent_t *agent, int flush_timeout_ms);

/* ---- reports -------------------------------------------------------------
 * Every report gets a unique event id ("<uid>-<nonce>-<n>", the nonce random
 * per dlb_agent_open()) and the wall-clock time, never earlier than the
 * agent's previous report. Each returns 0 (queued), DLB_AGENT_ERR_INVALID
 * (nothing sent; logged), DLB_AGENT_ERR_QUEUE_FULL (dropped and counted: carry
 * on), or DLB_AGENT_ERR_KAFKA. None blocks. */

/** What the job is; each string may be NULL (sent as ""). */
typedef struct dlb_agent_meta {
    const char *name;
    const char *user;
    const char *group;
    const char *app;
    const char *cluster;
    const char *ns; /**< Kubernetes namespace */
    const char *scenario;
    const char *framework;
} dlb_agent_meta_t;

typedef struct dlb_agent_hyper_params {
    int64_t batch_size;
    int64_t epoch;
    int64_t max_steps;
} dlb_agent_hyper_params_t;

typedef struct dlb_agent_dataset {
    const char *name;
    int64_t size; /**< samples */
    const char *storage;
} dlb_agent_dataset_t;

typedef struct dlb_agent_model {
    int64_t variable_count;
    int64_t op_count;
    int64_t total_variable_size; /**< bytes */
    int64_t recv_op_count;
    int64_t flops;
    int64_t embedding_dimension;
} dlb_agent_model_t;

/** One job event; a NULL section is not sent (the pipeline keeps what earlier
 *  events said). */
typedef struct dlb_agent_job {
    const dlb_agent_meta_t *meta;
    const char *state; /**< created pending running succeeded failed stopped */
    const dlb_agent_hyper_params_t *hyper_params;
    const dlb_agent_dataset_t *dataset;
    const dlb_agent_model_t *model;
    const char *exit_reason; /**< Completed CodeError WorkerOOM WorkerError PSOOM PSError
                                  EvaluatorOOM EvaluatorError UnknownError HangError
                                  RdzvTimeout PendingTimeout UncompletedTimeout
                                  NodeCheckFailed */
} dlb_agent_job_t;

/** @brief Report job meta, state, hyper-parameters, dataset and model features
 *         (to <env>.job-events). */
int dlb_agent_report_job(dlb_agent_t *agent, const dlb_agent_job_t *job);

/** One pod's usage in a runtime sample. */
typedef struct dlb_agent_pod_usage {
    const char *name;
    const char *type; /**< ps worker chief evaluator */
    int32_t index;
    double cpu_used;      /**< cores */
    double cpu_requested; /**< cores */
    int64_t memory_used;
    int64_t memory_requested;
    int has_speed; /**< 1 when speed is measured */
    double speed;  /**< steps/s of this pod alone (straggler detection) */
} dlb_agent_pod_usage_t;

typedef struct dlb_agent_sample {
    int64_t global_step;
    double speed; /**< steps/s of the job */
    const dlb_agent_pod_usage_t *pods;
    size_t pods_cnt;
} dlb_agent_sample_t;

/** @brief Report a runtime sample (to <env>.metrics). */
int dlb_agent_report_sample(dlb_agent_t *agent, const dlb_agent_sample_t *sample);

/** A pod or node event; NULL strings are sent as "" (phase: not sent). */
typedef struct dlb_agent_node_event {
    const char *kind; /**< pod_phase node_phase oom_killed evicted node_not_ready preempted
                           deleted error hardware_error no_heartbeat */
    const char *pod_name;
    const char *pod_type; /**< ps worker chief evaluator */
    int32_t pod_index;
    const char *node_name;
    const char *phase;
    const char *reason;
    const char *message;
    int64_t memory_requested; /**< the pod's request, 0: not given */
    double cpu_requested;     /**< the pod's request, 0: not given */
} dlb_agent_node_event_t;

/** @brief Report a pod or node event (to <env>.k8s-events). */
int dlb_agent_report_node(dlb_agent_t *agent, const dlb_agent_node_event_t *event);

/** @brief Ask for a plan (to <env>.plan-requests). Returns at once; the
 *         request is sent by the agent's thread once every message this agent
 *         queued before it is acknowledged by the brokers (or failed), so the
 *         optimizer never reads the request before the events it is about.
 *         With every producer using the agent, an operator can run the
 *         optimizer with -X consumer.order.grace.ms=0. After
 *         dlb_agent_subscribe_plans(), the request also waits (up to 10 s)
 *         until the subscription has fixed its start offset, so its answer
 *         cannot be missed. At most 64 requests wait at once.
 *  @param stage      one of DLB_AGENT_STAGE_*
 *  @param oom_pod    the pod that was OOMKilled, or NULL (sent as oom_pod and
 *                    as the one item of oom_pods, plan_request v2)
 *  @param request_id filled with the request's event id (the answer's
 *                    dlb_agent_plan_t.request_id); may be NULL, else at least
 *                    DLB_AGENT_ID_MAX bytes
 *  @returns 0, DLB_AGENT_ERR_INVALID, DLB_AGENT_ERR_QUEUE_FULL (64 waiting). */
int dlb_agent_request_plan(dlb_agent_t *agent, const char *stage, const char *oom_pod,
                           char *request_id, size_t request_id_size);

/* ---- plans ---------------------------------------------------------------- */

/** 0 in any field means "keep the current value". */
typedef struct dlb_agent_resource {
    double cpu; /**< cores */
    int64_t memory;
    int32_t gpu;
    const char *gpu_type;
    const char *priority;
} dlb_agent_resource_t;

typedef struct dlb_agent_group {
    const char *group; /**< ps worker chief evaluator */
    int32_t count;     /**< 0: keep the current count */
    dlb_agent_resource_t resource;
} dlb_agent_group_t;

typedef struct dlb_agent_pod {
    const char *name;
    dlb_agent_resource_t resource;
} dlb_agent_pod_t;

typedef struct dlb_agent_action {
    const char *pod;
    const char *action; /**< "relaunch" (in place: a hang) or "replace" (elsewhere) */
    const char *reason;
} dlb_agent_action_t;

/** A plan for this job. Every pointer stays valid as long as the plan: during
 *  the callback, or until dlb_agent_plan_destroy(). */
typedef struct dlb_agent_plan {
    const char *plan_id;    /**< "plan-<request id>" */
    const char *request_id; /**< the request (or event) it answers */
    const char *job_uid;
    const char *stage;
    int64_t event_time_ms; /**< the request's time */
    const dlb_agent_group_t *groups;
    size_t groups_cnt;
    const dlb_agent_pod_t *pods;
    size_t pods_cnt;
    const dlb_agent_action_t *actions;
    size_t actions_cnt;
    const char *optimizer; /**< which optimizer made it, e.g. "dlrover.create" */
    const char *reason;
} dlb_agent_plan_t;

/** @brief Called once per plan id, on the agent's plan thread. It may call the
 *         report functions, not dlb_agent_close(). */
typedef void (*dlb_agent_plan_cb)(const dlb_agent_plan_t *plan, void *opaque);

/** @brief Start reading this job's plans from <env>.plans (read_committed:
 *         never a plan of an aborted transaction), from its end as of this
 *         call: only the partition the job's key maps to (with the
 *         partitioner named by the `partitioner` property, librdkafka's
 *         consistent_random by default, as dlbrain's producers use; another
 *         partitioner reads every partition), filtered by job uid, each plan id
 *         delivered once. Does not wait for the brokers.
 *  @param cb a callback, or NULL to collect plans for dlb_agent_poll_plan()
 *  @returns 0, DLB_AGENT_ERR_STATE (already subscribed), DLB_AGENT_ERR_KAFKA. */
int dlb_agent_subscribe_plans(dlb_agent_t *agent, dlb_agent_plan_cb cb, void *opaque);

/** @brief Take the oldest plan collected (subscribed with cb NULL).
 *  @param plan       set to the plan (free it with dlb_agent_plan_destroy()) or NULL
 *  @param timeout_ms how long to wait for one: 0 none, -1 no limit
 *  @returns 1 with a plan, 0 without, DLB_AGENT_ERR_STATE when not subscribed
 *           for polling. */
int dlb_agent_poll_plan(dlb_agent_t *agent, dlb_agent_plan_t **plan, int timeout_ms);

void dlb_agent_plan_destroy(dlb_agent_plan_t *plan);

/* ---- statistics ------------------------------------------------------------ */

typedef struct dlb_agent_stats {
    uint64_t reported;         /**< reports and requests accepted into the queue */
    uint64_t queued;           /**< of those, not yet acknowledged (requests waiting included) */
    uint64_t sent;             /**< acknowledged by the brokers */
    uint64_t dropped;          /**< refused because the queue was full */
    uint64_t failed;           /**< accepted, then not delivered (message.timeout.ms, close) */
    uint64_t invalid;          /**< refused as invalid */
    uint64_t requests_waiting; /**< plan requests held until earlier messages are acknowledged */
    uint64_t plans_received;   /**< plans delivered (each plan id once) */
    uint64_t plans_dropped; /**< collected plans discarded because agent.plans.max were waiting */
} dlb_agent_stats_t;

/** @brief Copy the counters (since dlb_agent_open()).
 *  @param stats_size sizeof(*stats) as the caller knows it
 *  @returns 0 or DLB_AGENT_ERR_INVALID. */
int dlb_agent_stats(dlb_agent_t *agent, dlb_agent_stats_t *stats, size_t stats_size);

#ifdef __cplusplus
}
#endif

#endif
