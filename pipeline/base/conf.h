/* Configuration: one struct filled from defaults, then a config file, then
 * environment variables, then -X key=value, in that order (kcat style).
 *
 * Keys are dotted lower-case ("redis.port"). The environment variable of a key
 * is DLBRAIN_ + the key upper-cased with '.' and '-' as '_' ("DLBRAIN_REDIS_PORT").
 * A key dlbrain does not know is a librdkafka property and goes to librdkafka
 * untouched, so TLS/SASL settings pass through ("-X security.protocol=SASL_SSL").
 *
 * Secrets (redis.password, a password in pg.dsn, librdkafka's credentials
 * such as sasl.password; one list in conf.c) are refused on -X and by env
 * create, and masked when printed: each comes from DLBRAIN_<KEY>, from
 * <key>.file (a file holding it) or from a -c file; libpq also reads
 * PGPASSWORD / PGPASSFILE itself. */
#ifndef DLB_CONF_H
#define DLB_CONF_H

#include <stddef.h>
#include <stdint.h>

/* Master-side clamp applied to every plan last (DLRover NodeResourceLimit). */
typedef struct dlb_limits {
    double cpu_min;     /* cores, default 4 */
    double cpu_max;     /* cores, default 32 */
    int64_t memory_min; /* bytes, default 6144 MiB */
    int64_t memory_max; /* bytes, default 65536 MiB */
    int max_workers;    /* default 60 */
    int max_ps;         /* default 15 */
} dlb_limits_t;

/* Knobs of the "dlbrain" optimizer set (the "dlrover" set uses DLRover's
 * constants and ignores these). */
typedef struct dlb_tuning {
    int hang_seconds;           /* dlbrain.hang.seconds: no global-step progress this long is a
                                   hang, default 600 */
    double straggler_ratio;     /* dlbrain.straggler.ratio: a worker slower than this times the
                                   median of its peers is a straggler, default 0.5 */
    int straggler_samples;      /* dlbrain.straggler.samples: ... in this many newest samples in a
                                   row, default 3 */
    int memory_horizon_seconds; /* dlbrain.memory.horizon.seconds: how far ahead the memory trend
                                   is extrapolated, default 1800 */
    double memory_trigger;      /* dlbrain.memory.trigger: raise memory when the predicted peak
                                   passes this fraction of the request, default 0.9 */
    double scale_min_gain;      /* dlbrain.scale.min.gain: one more worker must add at least this
                                   fraction of the current speed per worker, default 0.5 */
    int scale_step_max;         /* dlbrain.scale.step.max: most workers added or removed by one
                                   plan, default 8 */
    int restart_seconds;        /* dlbrain.restart.seconds: what a resize costs a synchronous job
                                   (every worker restarts), default 60 */
    double resize_min_change;   /* dlbrain.resize.min.change: a worker CPU or memory cut smaller
                                   than this fraction is not worth a restart, default 0.2 */
    double history_headroom;    /* dlbrain.memory.history.headroom: worker memory is at least the
                                   similar jobs' peak times 1 + this (at most +8 GiB), default 0.1 */
    int cut_horizon_seconds;    /* dlbrain.memory.cut.horizon.seconds: a worker memory cut goes
                                   no lower than the usage trend this far ahead, default 900 */
    double scale_min_gain_busy; /* dlbrain.scale.min.gain.busy: the same while other jobs wait
                                   for room, default 0.7 */
    double cluster_cores;       /* dlbrain.cluster.cores: schedulable cores of the cluster; a
                                   job grows only into what no running job holds; 0 = off */
    int cluster_stale_seconds;  /* dlbrain.cluster.stale.seconds: another job's entry older than
                                   this is ignored, default 86400 */
    double ps_memory_headroom;  /* dlbrain.ps.memory.headroom: PS memory at ps_initial is the
                                   busiest PS's at the job's end times 1 + this, default 0.1 */
    double ps_probe_share;      /* dlbrain.ps.probe.share: the share of the step time workers
                                   do not reduce above which a PS is added to measure it,
                                   default 0.3 */
} dlb_tuning_t;

/* The Kubernetes monitor (k8s.*): where the API is, what it watches, how pods
 * name their job. */
typedef struct dlb_k8s_conf {
    char kubeconfig[1024]; /* k8s.kubeconfig: "" = in-cluster, then $KUBECONFIG, then
                              ~/.kube/config */
    char context[256];     /* k8s.context: "" = the kubeconfig's current-context */
    char ns[256];          /* k8s.namespace: "" = all namespaces */
    char selector[1024];   /* k8s.selector: pod label selector, "" = the job label exists */
    char job_label[256];   /* k8s.job.label, default "elasticjob.dlrover/name" */
    char job_uid[16];      /* k8s.job.uid: "label" (its value) or "owner" (controller uid) */
    char type_label[256];  /* k8s.type.label, default "elasticjob.dlrover/replica-type" */
    char index_label[256]; /* k8s.index.label, default "elasticjob.dlrover/replica-index" */
    int watch_timeout_s;   /* k8s.watch.timeout.s: timeoutSeconds of one watch, default 300 */
    int backoff_ms;        /* k8s.backoff.ms: first reconnect delay, default 500 */
    int backoff_max_ms;    /* k8s.backoff.max.ms: longest reconnect delay, default 30000 */
} dlb_k8s_conf_t;

/* The gRPC gateway that serves DLRover's brain.Brain (gateway.*). */
typedef struct dlb_gateway_conf {
    char address[256];            /* gateway.address: host:port served, default 0.0.0.0:50001 */
    int optimize_timeout_ms;      /* gateway.optimize.timeout.ms: longest wait for a plan */
    int ack_timeout_ms;           /* gateway.ack.timeout.ms: longest wait for Kafka's ack */
    int64_t max_message_bytes;    /* gateway.max.message.bytes: largest request accepted */
    int max_calls;                /* gateway.max.calls: calls served at once */
    int max_calls_per_connection; /* gateway.max.calls.per.connection: open streams */
    int stall_timeout_ms;         /* gateway.stall.timeout.ms: longest wait on a client */
    int plans_linger_ms;          /* gateway.plans.linger.ms: an idle plans partition's reading */
    char http_address[256];       /* gateway.http.address: DLRover's HTTP Brain, default
                                     0.0.0.0:8000, "" = not served */
} dlb_gateway_conf_t;

/* What a client may hold of one of dlbrain's HTTP servers (http.*): the
 * metrics endpoint, the schema registry, the gateway's HTTP Brain
 * (pipeline/base/httpd.h). */
typedef struct dlb_http_conf {
    int max_connections; /* http.max.connections: held at once per server, default 256 */
    int max_per_address; /* http.max.per.address: of one client address, default 16 */
    int timeout_ms;      /* http.timeout.ms: a client's longest step, default 5000 */
} dlb_http_conf_t;

/* The read-only Confluent Schema Registry API over the catalog (registry.*,
 * dlbrain registry). */
typedef struct dlb_registry_conf {
    char address[256]; /* registry.address: host:port served, default 0.0.0.0:8081 */
    char envs[1024];   /* registry.envs: environments served, comma-separated; "" = env and
                          every live environment of the environment registry */
    int refresh_ms;    /* registry.refresh.ms: how often the environment registry is re-read */
} dlb_registry_conf_t;

/* An external Confluent-compatible schema registry (schema.registry.*). */
typedef struct dlb_sr_conf {
    char url[512];          /* schema.registry.url: "" = the catalog's ids */
    char user_info[512];    /* schema.registry.basic.auth.user.info: "user:password" (secret) */
    char ca_location[1024]; /* schema.registry.ssl.ca.location: CA bundle, "" = the system's */
    int timeout_ms;         /* schema.registry.timeout.ms: one request's longest wait */
} dlb_sr_conf_t;

/* Automatic failover of the real environment (env.failover.*, decided by a
 * relay: env/failover/failover.h). */
typedef struct dlb_failover_conf {
    int window_s;     /* env.failover.window.s: job outcomes this recent count, default 600 */
    int min_jobs;     /* env.failover.min.jobs: fewer finished jobs never trip, default 10 */
    double threshold; /* env.failover.threshold: failed share that trips, default 0.5 */
    int cooldown_s;   /* env.failover.cooldown.s: no switch sooner after the last, default 1800 */
    int check_ms;     /* env.failover.check.ms: how often the decider looks, default 5000 */
    int lease_s;      /* env.failover.lease.s: how long the decider's lease lasts, default 30 */
    int late_ms;      /* env.failover.late.ms: a plan later is late; 0 = off (default) */
    int late_min_requests; /* env.failover.late.min.requests: fewer judged never trip, 20 */
    double late_threshold; /* env.failover.late.threshold: late share that trips, 0.5 */
} dlb_failover_conf_t;

/* Retention of the PostgreSQL history (store.retention.*, store_prune.c) and
 * its time partitions (store.partition.*). */
typedef struct dlb_retention_conf {
    int days;       /* store.retention.days: history kept, by event time; 0 = forever (default) */
    int interval_s; /* store.retention.interval.s: how often a consumer prunes, default 3600;
                       0 = never (only dlbrain store prune) */
    int batch_rows; /* store.retention.batch.rows: rows one DELETE removes, default 5000 */
    /* Time partitions of the history (store.partition.*, store_partition.c). */
    int span_hours; /* store.partition.span.hours: one partition's span of event time, 24 */
    int ahead;      /* store.partition.ahead: spans created ahead of the current one, 3 */
} dlb_retention_conf_t;

typedef struct dlb_kv {
    char *key;
    char *value;
} dlb_kv_t;

typedef struct dlb_conf {
    char env[64];                /* env: topic / group / schema / key prefix, default "dlbrain" */
    char brokers[1024];          /* brokers (= bootstrap.servers), default "localhost:9092" */
    char group_id[256];          /* group.id; "" = "<env>.<role>" (dlb_conf_group) */
    char pg_dsn[1024];           /* pg.dsn, libpq conninfo; default "" = libpq environment */
    char pg_schema[64];          /* pg.schema; default = env */
    char redis_host[256];        /* redis.host, default 127.0.0.1 */
    int redis_port;              /* redis.port, default 6379 */
    char redis_password[256];    /* redis.password (from env/file only in practice) */
    int redis_db;                /* redis.db, default 0 */
    int redis_timeout_ms;        /* redis.timeout.ms, default 2000 */
    int partitions;              /* topic.partitions for topic creation, default 12 */
    int replication;             /* topic.replication, default 1 */
    int window_size;             /* state.window.size: runtime samples kept per job, default 60 */
    int64_t state_cache_bytes;   /* state.cache.mb (as bytes): decoded Redis samples kept */
    int history_hours;           /* history.hours: similar-job look-back, default 168 */
    int history_max_jobs;        /* history.max.jobs: newest similar jobs used, default 100 */
    int64_t history_cache_bytes; /* history.cache.mb (as bytes): decoded history samples kept */
    int batch_size;              /* consumer.batch.size: messages per batch, default 500 */
    int poll_ms;                 /* consumer.poll.ms: batch fill time, default 200 */
    int order_wait_ms;           /* consumer.order.wait.ms: longest a plan request waits for its
                                    job's other topics to catch up, default 2000 */
    int order_grace_ms;          /* consumer.order.grace.ms: how long a request without dlb.after
                                    waits before trusting "consumed to the end" of its job's other
                                    topics, default 100 */
    int retry_backoff_ms; /* consumer.retry.backoff.ms: pause after a dependency error, default 1000
                           */
    int64_t batch_max_bytes;   /* consumer.batch.max.mb (as bytes): memory the messages a
                                  consumer holds may take before it stops polling, default 64 MiB */
    int decode_ahead;          /* consumer.decode.ahead: behind, take the next batch's messages
                                  before this one's writes and decode them while PostgreSQL
                                  stores it, default 0 (off) */
    int txn_call_timeout_ms;   /* producer.txn.call.timeout.ms: longest one Kafka transaction
                                  call waits, default 30000 */
    int txn_call_tries;        /* producer.txn.call.tries: calls of a step failing retriably
                                  before the batch is aborted, default 10 */
    int stall_s;               /* consumer.stall.s: no progress on a partition with messages waiting
                                  this long makes /readyz fail, default 60 (0 = never) */
    int skew_s;                /* event.time.skew.s: an event time further ahead of its record's
                                  broker timestamp is invalid, default 1 day (0 = no check) */
    int64_t max_message_bytes; /* message.max.bytes accepted by decoders, default 1 MiB */
    char optimizer_set[32];    /* optimizer.set: "dlrover" or "dlbrain", default "dlbrain" */
    int config_refresh_ms;     /* config.refresh.ms: how often the configurer looks for a new
                                  rules version, default 5000 */
    int config_cache_ttl_s;    /* config.cache.ttl.s: life of a cached match in Redis, 86400 */
    int relay_refresh_ms;      /* relay.refresh.ms: how often the relay re-reads the environment
                                  registry, default 1000 */
    dlb_tuning_t tuning;       /* dlbrain.* */
    dlb_limits_t limits;       /* limits.cpu.min, limits.cpu.max, limits.memory.min.mib,
                                  limits.memory.max.mib, limits.workers.max, limits.ps.max */
    dlb_k8s_conf_t k8s;        /* k8s.* */
    dlb_gateway_conf_t gateway;   /* gateway.* */
    dlb_registry_conf_t registry; /* registry.* */
    dlb_sr_conf_t sr;             /* schema.registry.* */
    dlb_http_conf_t http;         /* http.* */
    int metrics_port;         /* metrics.port: /metrics, /healthz, /readyz; default 9464, 0 = any
                                 free port (logged), -1 = off */
    char metrics_address[64]; /* metrics.address: listening address, default 0.0.0.0 */
    int metrics_stall_s;      /* metrics.stall.s: /healthz fails after the main loop has not
                                 come round for this long, default 120 */
    int log_level;            /* log.level: error|warn|info|debug, default info */
    int log_json;             /* log.format: text|json, default text */
    dlb_kv_t *kafka;          /* pass-through librdkafka properties, in order of setting */
    size_t kafka_cnt;

    dlb_retention_conf_t retention; /* store.retention.* */
    dlb_failover_conf_t failover;   /* env.failover.* */
} dlb_conf_t;

/** @brief Fill with embedded defaults. Never fails. */
void dlb_conf_init(dlb_conf_t *conf);

/** @brief Set one key. Unknown keys are stored as librdkafka properties;
 *         "<secret>.file" (redis.password.file, sasl.password.file, ...) sets
 *         the secret to the content of that regular file less trailing
 *         newlines, and refuses one longer than the secret can be.
 *  @returns 0, or DLB_ERR_CONF when a known key gets a bad value. */
int dlb_conf_set(dlb_conf_t *conf, const char *key, const char *value, char *errstr,
                 size_t errstr_size);

/** @brief Read "key=value" lines ('#' comments, blank lines ignored).
 *  @returns 0, DLB_ERR_CONF naming file:line. */
int dlb_conf_load_file(dlb_conf_t *conf, const char *path, char *errstr, size_t errstr_size);

/** @brief Apply DLBRAIN_* environment variables for every known key and every
 *         secret (DLBRAIN_SASL_PASSWORD), plus the secrets' *.file
 *         indirections (DLBRAIN_REDIS_PASSWORD_FILE). */
int dlb_conf_load_env(dlb_conf_t *conf, char *errstr, size_t errstr_size);

/** @brief Set a librdkafka property, even one whose name dlbrain also uses
 *         (message.max.bytes): it goes to the pass-through list only. */
int dlb_conf_set_kafka(dlb_conf_t *conf, const char *key, const char *value, char *errstr,
                       size_t errstr_size);

/** @brief Parse "key=value" from a -X argument and set it. A secret is
 *         refused (dlb_conf_refuse_secret, DLB_CONF_FROM_ARGV). */
int dlb_conf_set_kv(dlb_conf_t *conf, const char *kv, char *errstr, size_t errstr_size);

/* Where a setting came from, for the reason dlb_conf_refuse_secret gives. */
typedef enum { DLB_CONF_FROM_ARGV, DLB_CONF_FROM_REGISTRY } dlb_conf_from_t;

/** @returns 1 when value is a secret of key: a non-empty value of a secret
 *           key (redis.password, sasl.password, ...) or a pg.dsn that holds a
 *           password; else 0. */
int dlb_conf_secret(const char *key, const char *value);

/** @brief Refuse a secret that comes from where secrets must not (the command
 *         line, the environment registry).
 *  @returns 0 when dlb_conf_secret(key, value) is 0, else DLB_ERR_CONF with
 *           errstr naming the key, why and what to use instead. */
int dlb_conf_refuse_secret(dlb_conf_from_t from, const char *key, const char *value, char *errstr,
                           size_t errstr_size);

/** @brief value as it may be printed: "***" for a secret, a pg.dsn with each
 *         password as "***" (written to buf, cut at size; "***" when size is
 *         0), else value itself. */
const char *dlb_conf_mask(const char *key, const char *value, char *buf, size_t size);

/** @brief dlb_conf_mask into a malloc'ed string, never cut.
 *  @returns it (to free()), or NULL when out of memory. */
char *dlb_conf_mask_dup(const char *key, const char *value);

/** @brief Topic name "<env>.<name>", e.g. dlb_conf_topic(c, "plans", buf, sizeof buf). */
const char *dlb_conf_topic(const dlb_conf_t *conf, const char *name, char *buf, size_t size);

/** @brief The history retention window of store.retention.*, checked
 *         against the settings it must agree with.
 *  @param window_ms set to store.retention.days in ms, 0 when history is kept
 *         forever
 *  @returns 0, or DLB_ERR_CONF (batch rows below 1, or fewer days than
 *           history.hours looks back). */
int dlb_conf_retention(const dlb_conf_t *conf, int64_t *window_ms, char *errstr,
                       size_t errstr_size);

/** @brief The consumer group of a role: group.id when set, else "<env>.<role>"
 *         written to buf. @returns group.id or buf. */
const char *dlb_conf_group(const dlb_conf_t *conf, const char *role, char *buf, size_t size);

/** @brief Print every setting and its value; secrets are masked. */
void dlb_conf_dump(const dlb_conf_t *conf, void *fp);

/** @brief Print the configuration reference (markdown table) of every known key. */
void dlb_conf_reference(void *fp);

/** @brief Derived names: group.id defaults to "<env>.optimizer" and pg.schema to
 *         the env with '-' and '.' as '_'. Call after loading. */
void dlb_conf_finish(dlb_conf_t *conf);

void dlb_conf_destroy(dlb_conf_t *conf);

/* Topic short names, joined to the env prefix by dlb_conf_topic(). */
#define DLB_TOPIC_JOB_EVENTS      "job-events"
#define DLB_TOPIC_METRICS         "metrics"
#define DLB_TOPIC_K8S_EVENTS      "k8s-events"
#define DLB_TOPIC_PLAN_REQUESTS   "plan-requests"
#define DLB_TOPIC_PLANS           "plans"
#define DLB_TOPIC_CONFIGS         "configs"
#define DLB_TOPIC_CONFIG_REQUESTS "config-requests"
#define DLB_TOPIC_DLQ             "dlq"

#define DLB_MIB ((int64_t)1024 * 1024)
#define DLB_GIB ((int64_t)1024 * 1024 * 1024)

#endif
