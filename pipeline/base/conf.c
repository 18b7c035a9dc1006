#include "conf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "vec.h"

typedef enum { K_STR, K_INT, K_PORT, K_I64, K_DBL, K_MIB, K_LEVEL, K_FORMAT, K_OPTSET } kind_t;

/* One row per known key: where it lives in dlb_conf_t and its default.
 * Defaults of limits are DLRover's NodeResourceLimit (reference section 2). */
typedef struct key_def {
    const char *key;
    kind_t kind;
    size_t off;
    size_t size; /* for K_STR */
    const char *def;
    const char *doc;
    /* K_INT only: the accepted range when hi > 0, else [0, INT_MAX] */
    long long lo, hi;
} key_def_t;

#define F(m) offsetof(dlb_conf_t, m), sizeof(((dlb_conf_t *)0)->m)
#define N(m) offsetof(dlb_conf_t, m), 0

static const key_def_t keys[] = {
    {"env", K_STR, F(env), "dlbrain",
     "Environment name: prefix of topics, consumer groups, PostgreSQL schema, Redis keys. "
     "[a-z][a-z0-9_]*, at most 48 characters: a command refuses another at start."},
    {"brokers", K_STR, F(brokers), "localhost:9092", "Kafka bootstrap servers."},
    {"group.id", K_STR, F(group_id), "",
     "Consumer group of a consumer process (default <env>.<role>: <env>.optimizer, "
     "<env>.configurer)."},
    {"pg.dsn", K_STR, F(pg_dsn), "",
     "libpq conninfo (key=value or postgresql:// URI); empty uses libpq's PG* environment. "
     "With a password it is refused on -X: keep the password in PGPASSWORD/PGPASSFILE, or the "
     "DSN in DLBRAIN_PG_DSN or pg.dsn.file."},
    {"pg.schema", K_STR, F(pg_schema), "", "PostgreSQL schema (default: env)."},
    {"redis.host", K_STR, F(redis_host), "127.0.0.1", "Redis host."},
    {"redis.port", K_INT, N(redis_port), "6379", "Redis port."},
    {"redis.password", K_STR, F(redis_password), "",
     "Redis AUTH password; refused on -X: set it through DLBRAIN_REDIS_PASSWORD or "
     "redis.password.file."},
    {"redis.db", K_INT, N(redis_db), "0", "Redis database number."},
    {"redis.timeout.ms", K_INT, N(redis_timeout_ms), "2000", "Redis connect/command timeout."},
    {"topic.partitions", K_INT, N(partitions), "12", "Partitions of topics dlbrain creates."},
    {"topic.replication", K_INT, N(replication), "1",
     "Replication factor of topics dlbrain creates."},
    {"store.retention.days", K_INT, N(retention.days), "0",
     "PostgreSQL history kept, in days of event time: older rows of job_events, "
     "runtime_samples (with their pods), node_events, plan_requests, plans, oom_plans and "
     "config_matches are removed, their partitions dropped whole (the jobs registry and the "
     "configuration rules are kept). 0 = "
     "keep forever, so nothing is deleted unless asked for. When set, at least history.hours "
     "(a consumer refuses less), and best longer than the topics' retention and the longest "
     "job: a job's events older than this no longer take part in rebuilding its state."},
    {"store.retention.interval.s", K_INT, N(retention.interval_s), "3600",
     "How often each consumer maintains the history: creates its partitions ahead "
     "(store.partition.*) and prunes what is older than store.retention.days (one process "
     "of an environment at a time, by a PostgreSQL advisory lock; at most half a second a "
     "round, resumed every 5 s until done). 0 = partitions are made only at a consumer's "
     "start and consumers never prune: only 'dlbrain store prune' does."},
    {"store.retention.batch.rows", K_INT, N(retention.batch_rows), "5000",
     "Rows one DELETE of the prune removes from a default partition (partitions wholly older "
     "than the window are dropped whole), each its own transaction, so no lock is held for "
     "long. At least 1."},
    {"store.partition.span.hours", K_INT, N(retention.span_hours), "24",
     "Event time one partition of each history table spans, in hours (1 to 8760), aligned on "
     "multiples of it from the epoch (UTC midnights for 24). Retention drops whole partitions, "
     "so a row goes at most one span after it left store.retention.days. A change applies to "
     "partitions created from then on; existing ones keep their range.",
     1, 8760},
    {"store.partition.ahead", K_INT, N(retention.ahead), "3",
     "History partitions kept ready after the current one (0 to 1000), created by every "
     "consumer once started and every store.retention.interval.s; an event whose time no "
     "partition covers goes into the table's default partition.",
     0, 1000},
    {"state.window.size", K_INT, N(window_size), "60",
     "Runtime samples kept per job (DLRover keeps 60)."},
    {"state.cache.mb", K_MIB, N(state_cache_bytes), "16",
     "Memory for the jobs' cached runtime samples decoded once and kept: every plan request "
     "of a job reads its state.window.size samples from Redis again; the least recently used "
     "go first; a sample larger than all of it is not kept. 0 decodes them every time."},
    {"history.hours", K_INT, N(history_hours), "168",
     "Look-back for similar jobs (DLRover: 7 days)."},
    {"history.max.jobs", K_INT, N(history_max_jobs), "100", "Newest similar jobs used."},
    {"history.cache.mb", K_MIB, N(history_cache_bytes), "128",
     "Memory for similar jobs' samples decoded once and kept for later plan requests (each "
     "request of a scenario reads the same up to history.max.jobs x 4 x state.window.size "
     "samples); the least recently used go first. 0 keeps only the last request's."},
    {"consumer.batch.size", K_INT, N(batch_size), "500",
     "Most messages per processing batch (one PostgreSQL and one Kafka transaction)."},
    {"consumer.poll.ms", K_INT, N(poll_ms), "200",
     "Longest wait for a message when idle; a batch is what has been fetched by then."},
    {"consumer.order.wait.ms", K_INT, N(order_wait_ms), "2000",
     "Longest a request (plan or config) waits for its job's events on the other input topics."},
    {"consumer.order.grace.ms", K_INT, N(order_grace_ms), "100",
     "How long a request without a dlb.after header waits before trusting that its job's "
     "other topics hold nothing older (covers a producer's events still in flight to another "
     "topic). A request with the header waits for the positions it names instead."},
    {"consumer.retry.backoff.ms", K_INT, N(retry_backoff_ms), "1000",
     "Pause before retrying after PostgreSQL/Redis/Kafka failed."},
    {"consumer.batch.max.mb", K_MIB, N(batch_max_bytes), "64",
     "Memory the messages a consumer holds (records and what they decode to) may take before it "
     "stops polling for more; a batch is cut there. Bounds a consumer's memory whatever its "
     "input: 500 records of 1 MiB that each decode to 16,384 pods would otherwise take GiBs. "
     "librdkafka's own prefetch (queued.max.messages.kbytes) comes on top."},
    {"consumer.decode.ahead", K_INT, N(decode_ahead), "0",
     "1: with a backlog, a consumer takes the next batch's messages from librdkafka's queue "
     "before writing this batch and decodes them while PostgreSQL stores this one's runtime "
     "samples; they are committed with the next batch, never this one. Off by default: on two "
     "cores shared with PostgreSQL and the broker it changed nothing measurable and holds about "
     "4 MiB more (docs/results/benchmarks-history.md, 2026-11-27); it can pay where the "
     "consumer has a core of its own.",
     0, 1},
    {"consumer.stall.s", K_INT, N(stall_s), "60",
     "A partition with messages waiting that makes no progress for this long (one record "
     "refused for ever, a dependency down) makes /readyz answer 503, naming the partition and "
     "the last failure; 0 = never. Longer than the ordering barrier's wait and a slow batch."},
    {"producer.txn.call.timeout.ms", K_INT, N(txn_call_timeout_ms), "30000",
     "Longest one call of a consumer's or the relay's Kafka transaction (init, sending the "
     "offsets, commit, abort) may wait for the broker before it counts as failed. 100 to "
     "3600000.",
     100, 3600000},
    {"producer.txn.call.tries", K_INT, N(txn_call_tries), "10",
     "Calls of a transaction step that fails with a retriable error (500 ms apart) before the "
     "batch is aborted; when the abort fails too, the producer is replaced and the consumer "
     "(or the relay) goes on from the offsets the group committed, as the broker says (the "
     "commit may have taken). 1 to 1000.",
     1, 1000},
    {"event.time.skew.s", K_INT, N(skew_s), "86400",
     "An event whose event_time_ms is further ahead of its record's broker timestamp than this "
     "goes to the DLQ (validate): a far-future time would hold the ordering barrier and every "
     "window open. 0 = no check. Clocks of the cluster's agents may run ahead by this much. "
     "dlbrain replay from Kafka assumes the same bound by default (--max-ahead)."},
    {"message.max.bytes", K_I64, N(max_message_bytes), "1048576",
     "Largest message a consumer decodes; larger ones go to the DLQ."},
    {"optimizer.set", K_OPTSET, F(optimizer_set), "dlbrain", "Optimizer set: dlrover or dlbrain."},
    {"config.refresh.ms", K_INT, N(config_refresh_ms), "5000",
     "How often the configurer looks for a new configuration rules version in PostgreSQL."},
    {"config.cache.ttl.s", K_INT, N(config_cache_ttl_s), "86400",
     "Life of a cached match result in Redis (its key holds the rules version, so a new version "
     "never reads it)."},
    {"relay.refresh.ms", K_INT, N(relay_refresh_ms), "1000",
     "How often the relay re-reads the environment registry: a promotion switches the "
     "environment whose plans reach the front within this time, and new environments are "
     "relayed to."},
    {"env.failover.window.s", K_INT, N(failover.window_s), "600",
     "Automatic failover: the real environment's job outcomes (succeeded or failed job events, "
     "by event time) of this many seconds count; never those before the last switch. "
     "1 to 604800.",
     1, 604800},
    {"env.failover.min.jobs", K_INT, N(failover.min_jobs), "10",
     "Automatic failover: fewer jobs finished in the window never trip it (at least 1 counts)."},
    {"env.failover.threshold", K_DBL, N(failover.threshold), "0.5",
     "Automatic failover: the share of the window's finished jobs that failed at which the "
     "standby takes over (0.5 = half; above 1 never trips)."},
    {"env.failover.cooldown.s", K_INT, N(failover.cooldown_s), "1800",
     "Automatic failover: no automatic switch sooner than this after the last switch, "
     "manual or automatic, so it cannot flap."},
    {"env.failover.check.ms", K_INT, N(failover.check_ms), "5000",
     "Automatic failover: how often the relay holding the lease evaluates the policy (and "
     "renews the lease). 100 to 3600000.",
     100, 3600000},
    {"env.failover.lease.s", K_INT, N(failover.lease_s), "30",
     "Automatic failover: the lease that makes one relay the decider lasts this long unless "
     "renewed; another relay takes over once it ran out. Keep it above env.failover.check.ms. "
     "1 to 3600.",
     1, 3600},
    {"env.failover.late.ms", K_INT, N(failover.late_ms), "0",
     "Automatic failover on plans missing or late: a plan request of the real environment "
     "(by the time its optimizer stored it) whose plan was stored more than this later, or not "
     "at all, is late. 0 = off: failed jobs alone decide."},
    {"env.failover.late.min.requests", K_INT, N(failover.late_min_requests), "20",
     "Automatic failover: fewer plan requests judged in the window (answered, or older than "
     "env.failover.late.ms) never trip on late plans (at least 1 counts)."},
    {"env.failover.late.threshold", K_DBL, N(failover.late_threshold), "0.5",
     "Automatic failover: the share of the window's judged plan requests whose plan was late "
     "or is missing at which the standby takes over."},
    {"dlbrain.hang.seconds", K_INT, N(tuning.hang_seconds), "600",
     "dlbrain set: no global-step progress for this long is a hang (relaunch plan)."},
    {"dlbrain.straggler.ratio", K_DBL, N(tuning.straggler_ratio), "0.5",
     "dlbrain set: a worker slower than this times its peers' median speed is a straggler."},
    {"dlbrain.straggler.samples", K_INT, N(tuning.straggler_samples), "3",
     "dlbrain set: ... in this many newest samples in a row (replace plan)."},
    {"dlbrain.memory.horizon.seconds", K_INT, N(tuning.memory_horizon_seconds), "1800",
     "dlbrain set: how far ahead a pod's memory trend is extrapolated."},
    {"dlbrain.memory.trigger", K_DBL, N(tuning.memory_trigger), "0.9",
     "dlbrain set: raise memory before an OOM when the predicted peak passes this fraction of "
     "the request."},
    {"dlbrain.scale.min.gain", K_DBL, N(tuning.scale_min_gain), "0.5",
     "dlbrain set: one more worker must add at least this fraction of the current speed per "
     "worker, else scaling stops."},
    {"dlbrain.scale.step.max", K_INT, N(tuning.scale_step_max), "8",
     "dlbrain set: most workers one plan adds or removes."},
    {"dlbrain.restart.seconds", K_INT, N(tuning.restart_seconds), "60",
     "dlbrain set: what a resize costs a synchronous job (every worker restarts): more workers "
     "only when they save more than this of the remaining time, and no resize at all in the "
     "last 10 times this."},
    {"dlbrain.resize.min.change", K_DBL, N(tuning.resize_min_change), "0.1",
     "dlbrain set: a worker CPU or memory cut smaller than this fraction of the request is not "
     "worth a restart (raises always are)."},
    {"dlbrain.memory.history.headroom", K_DBL, N(tuning.history_headroom), "0.1",
     "dlbrain set: worker memory is at least the peak of similar completed jobs' workers times "
     "1 + this, at most 8 GiB above it."},
    {"dlbrain.ps.memory.headroom", K_DBL, N(tuning.ps_memory_headroom), "0.1",
     "dlbrain set: at ps_initial each PS gets the busiest PS's memory extrapolated to the job's "
     "estimated end (spread over the new PS count) times 1 + this."},
    {"dlbrain.ps.probe.share", K_DBL, N(tuning.ps_probe_share), "0.3",
     "dlbrain set: a job that never changed its PS count (nor did its scenario's) gets one PS "
     "more, to measure what PS pods add, when at least this share of its step time is not "
     "reduced by workers; 0 = never."},
    {"dlbrain.memory.cut.horizon.seconds", K_INT, N(tuning.cut_horizon_seconds), "900",
     "dlbrain set: a worker memory cut goes no lower than what each worker's usage trend "
     "predicts this far ahead (a cut before the trend is known waits)."},
    {"dlbrain.scale.min.gain.busy", K_DBL, N(tuning.scale_min_gain_busy), "0.7",
     "dlbrain set: while other jobs wait for room, one more worker must add at least this "
     "fraction of the speed per worker (and a job whose last worker adds less gives it back), "
     "so the cores go to the jobs that gain most from them."},
    {"dlbrain.cluster.cores", K_DBL, N(tuning.cluster_cores), "0",
     "dlbrain set: schedulable cores of the cluster. With it, a job grows only into the cores "
     "no running job holds, so no worker is asked for that would wait Pending. 0 = not "
     "known: the scheduler alone fits what it can."},
    {"dlbrain.cluster.stale.seconds", K_INT, N(tuning.cluster_stale_seconds), "86400",
     "dlbrain set: another job's cluster entry (waiting, or the cores it holds) older than "
     "this, in event time, is ignored: a job that vanished without an end event must not "
     "count for ever."},
    {"limits.cpu.min", K_DBL, N(limits.cpu_min), "4", "Lowest CPU (cores) a plan may ask."},
    {"limits.cpu.max", K_DBL, N(limits.cpu_max), "32", "Highest CPU (cores) a plan may ask."},
    {"limits.memory.min.mib", K_MIB, N(limits.memory_min), "6144", "Lowest memory (MiB)."},
    {"limits.memory.max.mib", K_MIB, N(limits.memory_max), "65536", "Highest memory (MiB)."},
    {"limits.workers.max", K_INT, N(limits.max_workers), "60", "Most workers a plan may ask."},
    {"limits.ps.max", K_INT, N(limits.max_ps), "15", "Most parameter servers a plan may ask."},
    {"k8s.kubeconfig", K_STR, F(k8s.kubeconfig), "",
     "k8s-monitor: kubeconfig file; empty = in-cluster service account when "
     "KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG (its first file), else ~/.kube/config."},
    {"k8s.context", K_STR, F(k8s.context), "",
     "k8s-monitor: kubeconfig context; empty = its current-context."},
    {"k8s.namespace", K_STR, F(k8s.ns), "",
     "k8s-monitor: namespace of the pods and events watched; empty = all namespaces."},
    {"k8s.selector", K_STR, F(k8s.selector), "",
     "k8s-monitor: label selector of the pods watched; empty = pods that have the job label."},
    {"k8s.job.label", K_STR, F(k8s.job_label), "elasticjob.dlrover/name",
     "k8s-monitor: pod label naming the training job (DLRover's); a pod without it is skipped."},
    {"k8s.job.uid", K_STR, F(k8s.job_uid), "label",
     "k8s-monitor: job uid of a pod's events: label (the job label's value) or owner (the uid "
     "of the pod's controller, e.g. the ElasticJob, as DLRover masters report it)."},
    {"k8s.type.label", K_STR, F(k8s.type_label), "elasticjob.dlrover/replica-type",
     "k8s-monitor: pod label holding the pod type (ps, worker, chief, evaluator; master = "
     "chief)."},
    {"k8s.index.label", K_STR, F(k8s.index_label), "elasticjob.dlrover/replica-index",
     "k8s-monitor: pod label holding the pod's index within its type."},
    {"k8s.watch.timeout.s", K_INT, N(k8s.watch_timeout_s), "300",
     "k8s-monitor: timeoutSeconds of one watch request; the watch then resumes from its last "
     "resourceVersion."},
    {"k8s.backoff.ms", K_INT, N(k8s.backoff_ms), "500",
     "k8s-monitor: first delay before reconnecting after a failed request; doubles each time."},
    {"k8s.backoff.max.ms", K_INT, N(k8s.backoff_max_ms), "30000",
     "k8s-monitor: longest delay between reconnects."},
    {"gateway.address", K_STR, F(gateway.address), "0.0.0.0:50001",
     "gateway: host:port where DLRover's brain.Brain gRPC service is served (plaintext "
     "HTTP/2, as DLROVER_BRAIN_SERVICE_ADDR reaches it); port 0 = any free port (logged)."},
    {"gateway.optimize.timeout.ms", K_INT, N(gateway.optimize_timeout_ms), "5000",
     "gateway: longest an optimize call waits for its plan (or less, when the call's own "
     "deadline is nearer); then it answers success=false, which DLRover's master reads as "
     "no plan. DLRover sets no deadline and waits at start-up, so this bounds that wait."},
    {"gateway.ack.timeout.ms", K_INT, N(gateway.ack_timeout_ms), "10000",
     "gateway: longest a call waits for Kafka to acknowledge what it produced; then the "
     "call fails with UNAVAILABLE."},
    {"gateway.max.message.bytes", K_I64, N(gateway.max_message_bytes), "4194304",
     "gateway: largest request message accepted; a larger one is refused with "
     "RESOURCE_EXHAUSTED before it is read."},
    {"gateway.plans.linger.ms", K_INT, N(gateway.plans_linger_ms), "5000",
     "gateway: how long a partition of <env>.plans is still read after the last call waiting "
     "on it got its plan, so the next call on it needs no end-offset question and no new "
     "assignment; then it is read no more."},
    {"gateway.max.calls", K_INT, N(gateway.max_calls), "1024",
     "gateway: calls served at once, from all clients; more wait in gRPC's queue until one "
     "ends (gateway.stall.timeout.ms bounds how long a call may hold its place on a client "
     "that stopped sending or reading)."},
    {"gateway.max.calls.per.connection", K_INT, N(gateway.max_calls_per_connection), "100",
     "gateway: calls one HTTP/2 connection may have open at once (its "
     "SETTINGS_MAX_CONCURRENT_STREAMS; a stream beyond it is refused), so one client cannot "
     "take all of gateway.max.calls. DLRover's master makes one call at a time.",
     1, 1000000},
    {"gateway.stall.timeout.ms", K_INT, N(gateway.stall_timeout_ms), "3000",
     "gateway: longest a call may wait on its client: from its headers to the end of its "
     "request message, and from its answer to the answer's last byte taken (and for a new "
     "connection, its HTTP/2 handshake); then it is cancelled and its place freed.",
     1, 3600000},
    {"gateway.http.address", K_STR, F(gateway.http_address), "0.0.0.0:8000",
     "gateway: host:port where DLRover's HTTP Brain is served (POST /optimize, POST "
     "/job_config; the protocol a master selects with DLROVER_BRAIN_PROTOCOL=http and an "
     "http:// address, 8000 being the port of DLRover's own); port 0 = any free port (logged), "
     "empty = not served."},
    {"registry.address", K_STR, F(registry.address), "0.0.0.0:8081",
     "registry: host:port where the read-only Confluent Schema Registry API over dlbrain's "
     "schema catalog is served (8081 is the Confluent registry's port); port 0 = any free "
     "port (logged)."},
    {"registry.envs", K_STR, F(registry.envs), "",
     "registry: environments whose topics get subjects (<env>.<topic>-value), "
     "comma-separated; empty = the env setting and every live environment of the environment "
     "registry in PostgreSQL (pg.dsn), re-read every registry.refresh.ms."},
    {"registry.refresh.ms", K_INT, N(registry.refresh_ms), "5000",
     "registry: how often the environment registry is re-read when registry.envs is empty; a "
     "new environment's subjects appear within this time. 100 to 3600000.",
     100, 3600000},
    {"schema.registry.url", K_STR, F(sr.url), "",
     "An external Confluent-compatible schema registry (http:// or https://, with a path "
     "prefix if it has one, e.g. Apicurio's .../apis/ccompat/v7). When set, the commands that "
     "read or write topics register dlbrain's schemas at start-up under <env>.<topic>-value "
     "(a registry holding an incompatible schema there stops them with its reason), write with "
     "the ids it assigns and resolve ids they do not know through it (cached). Empty = the "
     "catalog's ids (schemas/catalog.tsv)."},
    {"schema.registry.basic.auth.user.info", K_STR, F(sr.user_info), "",
     "user:password for the schema registry's HTTP basic authentication; empty = none. A "
     "secret: from DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO, its .file or a -c file."},
    {"schema.registry.ssl.ca.location", K_STR, F(sr.ca_location), "",
     "CA certificates (PEM file) that verify an https schema registry; empty = the system's."},
    {"schema.registry.timeout.ms", K_INT, N(sr.timeout_ms), "10000",
     "Longest one request to the schema registry may take. 100 to 600000.", 100, 600000},
    {"http.max.connections", K_INT, N(http.max_connections), "256",
     "Connections each HTTP server (metrics, registry, the gateway's HTTP Brain) holds at "
     "once, 1 to 65536. When all are taken, a new connection displaces the one that has gone "
     "longest without sending a whole request (or reading its answer), so clients that hold "
     "connections open, from however many addresses, never shut out one that asks; a request "
     "being served (an optimize call awaiting its plan) is never displaced. Bounds the "
     "memory (about 32 KiB a connection) and descriptors spent: keep it well below the "
     "process's open-file limit.",
     1, 65536},
    {"http.max.per.address", K_INT, N(http.max_per_address), "16",
     "Connections one client address holds of each HTTP server, 1 to 65536; a further one "
     "displaces that address's own longest-waiting connection. Behind a proxy or a service "
     "mesh's sidecar every client shares one address: raise it to http.max.connections there.",
     1, 65536},
    {"http.timeout.ms", K_INT, N(http.timeout_ms), "5000",
     "Longest an HTTP client may take over a step that is its own: sending a whole request "
     "(from connecting, or from its previous answer: an idle keep-alive connection too) or "
     "reading a whole answer; then the connection is closed. The server's own time (an "
     "optimize call awaiting its plan) does not count. 100 to 3600000.",
     100, 3600000},
    {"metrics.port", K_PORT, N(metrics_port), "9464",
     "Port of a long-running process's /metrics (Prometheus), /healthz and /readyz; 0 = any "
     "free port (logged at start), -1 = no endpoint. A port in use stops the process (set 0 or "
     "another port when several run on one host). 9464 is the port OpenTelemetry's Prometheus "
     "exporters use, so scrape configs and NetworkPolicies written for it fit."},
    {"metrics.address", K_STR, F(metrics_address), "0.0.0.0",
     "Address the metrics endpoint listens on (IPv4 or IPv6 literal). All interfaces, because "
     "Prometheus and the kubelet's probes reach a pod on its pod IP; 127.0.0.1 keeps it local "
     "on a shared host. It serves no secrets and accepts only GET."},
    {"metrics.stall.s", K_INT, N(metrics_stall_s), "120",
     "/healthz answers 503 when the main loop has not come round for this long (0 = never): "
     "longer than any single blocking call (a Kafka transaction call waits up to "
     "producer.txn.call.timeout.ms), so "
     "only a stuck process fails it, not a dependency outage."},
    {"log.level", K_LEVEL, N(log_level), "info", "error, warn, info or debug."},
    {"log.format", K_FORMAT, N(log_json), "text", "text or json."},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const key_def_t *find_key(const char *key)
{
    for (const key_def_t *k = keys; k->key; k++)
        if (!strcmp(k->key, key))
            return k;
    return NULL;
}

/* How a secret shows in a setting's value. */
typedef enum { SECRET_VALUE, SECRET_DSN } secret_kind_t;

typedef struct secret_def {
    const char *key;
    secret_kind_t kind;
} secret_def_t;

/* The settings that are credentials, the one list of them. Each is refused on
 * -X (every local user reads a command line in ps or /proc/PID/cmdline, and
 * shell history keeps it) and by env create (the registry keeps settings and
 * their append-only history in PostgreSQL), and masked wherever printed; it
 * comes instead from DLBRAIN_<KEY>, from <key>.file (a file holding it, such
 * as a mounted Kubernetes Secret) or from a -c file.
 * librdkafka's are the properties its rdkafka_conf.c flags _RK_SENSITIVE
 * (2.0 to 2.11; CONFIGURATION.md does not show the flag), and an alias of
 * one, less those that hold no credential as a string: ssl.key.location and
 * sasl.oauthbearer.assertion.private.key.file (paths to one), ssl.ca.pem (a
 * CA's public certificate) and ssl_key (set by rd_kafka_conf_set_ssl_cert()
 * only: librdkafka refuses any string for it). */
static const secret_def_t secrets[] = {
    {"pg.dsn", SECRET_DSN}, /* its password only: host, user and database are no secret */
    {"redis.password", SECRET_VALUE},
    {"schema.registry.basic.auth.user.info", SECRET_VALUE},
    {"sasl.username", SECRET_VALUE}, /* the API key of Confluent Cloud, say */
    {"sasl.password", SECRET_VALUE},
    {"sasl.oauthbearer.config", SECRET_VALUE},
    {"sasl.oauthbearer.client.secret", SECRET_VALUE},
    {"sasl.oauthbearer.client.credentials.client.secret", SECRET_VALUE},
    {"sasl.oauthbearer.assertion.private.key.passphrase", SECRET_VALUE},
    {"sasl.oauthbearer.assertion.private.key.pem", SECRET_VALUE},
    {"ssl.key.password", SECRET_VALUE},
    {"ssl.key.pem", SECRET_VALUE},
    {"ssl.keystore.password", SECRET_VALUE},
    {NULL, 0},
};

/* Longest librdkafka secret read from <key>.file (a PEM private key is a few
 * KiB); dlbrain's own are bounded by their field in dlb_conf_t. */
#define SECRET_FILE_MAX 65536

static const secret_def_t *find_secret(const char *key)
{
    for (const secret_def_t *s = secrets; s->key; s++)
        if (!strcmp(s->key, key))
            return s;
    return NULL;
}

/* The secret whose file key ("<key>.file") this is, or NULL. */
static const secret_def_t *find_secret_file(const char *key)
{
    size_t n = strlen(key);

    if (n <= 5 || strcmp(key + n - 5, ".file"))
        return NULL;
    for (const secret_def_t *s = secrets; s->key; s++)
        if (strlen(s->key) == n - 5 && !strncmp(s->key, key, n - 5))
            return s;
    return NULL;
}

/* Text that is cut at its size, never overrun. */
typedef struct sbuf {
    char *p;
    size_t size, len;
} sbuf_t;

static void sbuf_put(sbuf_t *b, const char *s, size_t n)
{
    if (!b || !b->size)
        return;
    for (; n && b->len + 1 < b->size; n--)
        b->p[b->len++] = *s++;
    b->p[b->len] = '\0';
}

/* A libpq DSN being copied with its secrets replaced. */
typedef struct dsn_scan {
    const char *copied; /* the DSN up to here is copied to out */
    sbuf_t *out;        /* NULL: only count */
    int passwords;
} dsn_scan_t;

/* [s, e) of the DSN is secret: what precedes it is copied, then "***". */
static void dsn_hide(dsn_scan_t *d, const char *s, const char *e, int password)
{
    sbuf_put(d->out, d->copied, (size_t)(s - d->copied));
    sbuf_put(d->out, "***", 3);
    d->copied = e;
    d->passwords += password;
}

/* libpq's two keywords that hold a password (sslpassword: the client key's). */
static int dsn_password_key(const char *k, size_t n)
{
    return (n == 8 && !memcmp(k, "password", 8)) || (n == 11 && !memcmp(k, "sslpassword", 11));
}

/* key = value pairs, split as libpq's conninfo_parse does: a value is
 * single-quoted or runs to white space, a backslash escapes any byte. */
static void dsn_scan_kv(dsn_scan_t *d, const char *p)
{
    const char *k, *ke, *v;
    int quoted;

    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            return;
        for (k = p; *p && *p != '=' && !isspace((unsigned char)*p); p++)
            ;
        ke = p;
        while (isspace((unsigned char)*p))
            p++;
        if (*p != '=') {
            /* libpq refuses it, and what follows may be a piece of a password */
            dsn_hide(d, k, k + strlen(k), 0);
            return;
        }
        for (p++; isspace((unsigned char)*p); p++)
            ;
        v = p;
        if ((quoted = *p == '\'')) {
            for (p++; *p && *p != '\''; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (!*p) { /* unterminated: libpq refuses it; the rest may be secret */
                dsn_hide(d, v, p, dsn_password_key(k, (size_t)(ke - k)));
                return;
            }
            p++;
        } else {
            for (; *p && !isspace((unsigned char)*p); p++)
                if (*p == '\\' && p[1])
                    p++;
        }
        if (dsn_password_key(k, (size_t)(ke - k)) && p - v > (quoted ? 2 : 0))
            dsn_hide(d, v, p, 1);
    }
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A URI query parameter's name, %-decoded as libpq does, is a password key. */
static int uri_password_key(const char *k, size_t n)
{
    char dec[16];
    size_t m = 0;

    for (size_t i = 0; i < n; i++) {
        if (m == sizeof(dec))
            return 0;
        if (k[i] != '%') {
            dec[m++] = k[i];
        } else if (i + 2 < n && hex_digit(k[i + 1]) >= 0 && hex_digit(k[i + 2]) >= 0) {
            dec[m++] = (char)(hex_digit(k[i + 1]) * 16 + hex_digit(k[i + 2]));
            i += 2;
        } else {
            return 0; /* libpq refuses a bad %-escape */
        }
    }
    return dsn_password_key(dec, m);
}

/* postgresql://[user[:password]@]host[:port][/dbname][?param=value&...]:
 * the user information ends at the first '@' before any '/', as in libpq's
 * conninfo_uri_parse_options, and a password may also be a parameter. */
static void dsn_scan_uri(dsn_scan_t *d, const char *p)
{
    const char *at = p + strcspn(p, "@/"), *colon, *q;

    if (*at == '@') {
        if ((colon = memchr(p, ':', (size_t)(at - p))) && at - colon > 1)
            dsn_hide(d, colon + 1, at, 1);
        p = at + 1;
    }
    if (!(q = strchr(p, '?')))
        return;
    for (p = q + 1; *p;) {
        const char *e = p + strcspn(p, "&"), *eq = memchr(p, '=', (size_t)(e - p));

        if (eq && uri_password_key(p, (size_t)(eq - p)) && e - eq > 1)
            dsn_hide(d, eq + 1, e, 1);
        p = *e ? e + 1 : e;
    }
}

/* Copies a libpq DSN (key=value or URI form) to out (NULL: nowhere) with
 * every password as "***". @returns how many non-empty passwords it holds. */
static int dsn_mask(const char *dsn, sbuf_t *out)
{
    dsn_scan_t d = {dsn, out, 0};

    if (!strncmp(dsn, "postgresql://", 13))
        dsn_scan_uri(&d, dsn + 13);
    else if (!strncmp(dsn, "postgres://", 11))
        dsn_scan_uri(&d, dsn + 11);
    else
        dsn_scan_kv(&d, dsn);
    sbuf_put(out, d.copied, strlen(d.copied));
    return d.passwords;
}

int dlb_conf_secret(const char *key, const char *value)
{
    const secret_def_t *s = find_secret(key);

    if (!s || !value || !*value)
        return 0;
    return s->kind == SECRET_VALUE || dsn_mask(value, NULL) > 0;
}

const char *dlb_conf_mask(const char *key, const char *value, char *buf, size_t size)
{
    const secret_def_t *s = find_secret(key);
    sbuf_t b = {buf, size, 0};

    if (!s || !value || !*value)
        return value;
    if (s->kind == SECRET_VALUE || !size)
        return "***";
    buf[0] = '\0';
    dsn_mask(value, &b);
    return buf;
}

char *dlb_conf_mask_dup(const char *key, const char *value)
{
    /* Masking a DSN adds at most 2 bytes a hidden piece ("p" -> "***"), and
     * "***" needs 4. */
    size_t size = 3 * strlen(value) + 4;
    char *buf = malloc(size);
    const char *m;

    if (buf && (m = dlb_conf_mask(key, value, buf, size)) != buf)
        memcpy(buf, m, strlen(m) + 1);
    return buf;
}

static void env_name(const char *key, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "DLBRAIN_");
    for (; *key && n + 1 < size; key++)
        buf[n++] = (*key == '.' || *key == '-') ? '_' : (char)toupper((unsigned char)*key);
    buf[n] = '\0';
}

int dlb_conf_refuse_secret(dlb_conf_from_t from, const char *key, const char *value, char *errstr,
                           size_t size)
{
    const char *where = from == DLB_CONF_FROM_ARGV
                            ? "taken from the command line, which every local user can read (ps, "
                              "/proc/PID/cmdline) and shell history keeps"
                            : "stored with an environment: the registry keeps its settings in "
                              "PostgreSQL and in a history that is never deleted";
    const char *pre = from == DLB_CONF_FROM_ARGV ? "-X " : "";
    char env[128];

    if (!dlb_conf_secret(key, value))
        return 0;
    env_name(key, env, sizeof(env));
    if (find_secret(key)->kind == SECRET_DSN)
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "%s%s: a password is not %s; keep it in PGPASSWORD or PGPASSFILE (libpq "
                          "reads them), or the whole DSN in %s or in a file named by pg.dsn.file",
                          pre, key, where, env);
    return dlb_seterr(errstr, size, DLB_ERR_CONF,
                      "%s%s: a secret is not %s; set it through %s, or %s.file=PATH naming a file "
                      "that holds it",
                      pre, key, where, env, key);
}

static int parse_long(const char *key, const char *value, long long lo, long long hi,
                      long long *out, char *errstr, size_t size)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi)
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "%s: \"%s\" is not an integer in [%lld, %lld]", key, value, lo, hi);
    *out = v;
    return 0;
}

static int set_known(dlb_conf_t *conf, const key_def_t *k, const char *value, char *errstr,
                     size_t size)
{
    char *base = (char *)conf + k->off;
    long long ll = 0;
    double d;
    char *end;
    int err;

    switch (k->kind) {
    case K_OPTSET:
        if (strcmp(value, "dlrover") && strcmp(value, "dlbrain"))
            return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: \"%s\" is not dlrover or dlbrain",
                              k->key, value);
        /* fall through */
    case K_STR:
        if (strlen(value) >= k->size)
            return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: longer than %zu bytes", k->key,
                              k->size - 1);
        memcpy(base, value, strlen(value) + 1);
        return 0;
    case K_INT:
        if ((err = parse_long(k->key, value, k->hi ? k->lo : 0, k->hi ? k->hi : INT_MAX, &ll,
                              errstr, size)))
            return err;
        *(int *)base = (int)ll;
        return 0;
    case K_PORT:
        if ((err = parse_long(k->key, value, -1, 65535, &ll, errstr, size)))
            return err;
        *(int *)base = (int)ll;
        return 0;
    case K_I64:
        if ((err = parse_long(k->key, value, 0, LLONG_MAX, &ll, errstr, size)))
            return err;
        *(int64_t *)base = ll;
        return 0;
    case K_MIB:
        if ((err = parse_long(k->key, value, 0, LLONG_MAX / DLB_MIB, &ll, errstr, size)))
            return err;
        *(int64_t *)base = ll * DLB_MIB;
        return 0;
    case K_DBL:
        errno = 0;
        d = strtod(value, &end);
        if (errno || end == value || *end || !(d >= 0))
            return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: \"%s\" is not a non-negative number",
                              k->key, value);
        *(double *)base = d;
        return 0;
    case K_LEVEL:
        if ((ll = dlb_log_level_parse(value)) < 0)
            return dlb_seterr(errstr, size, DLB_ERR_CONF,
                              "%s: \"%s\" is not one of error, warn, info, debug", k->key, value);
        *(int *)base = (int)ll;
        return 0;
    case K_FORMAT:
        if (strcmp(value, "text") && strcmp(value, "json"))
            return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: \"%s\" is not text or json", k->key,
                              value);
        *(int *)base = !strcmp(value, "json");
        return 0;
    }
    return DLB_ERR_GENERIC;
}

void dlb_conf_init(dlb_conf_t *conf)
{
    memset(conf, 0, sizeof(*conf));
    for (const key_def_t *k = keys; k->key; k++) {
        int err = set_known(conf, k, k->def, NULL, 0);
        (void)err; /* embedded defaults are valid by construction (tested) */
    }
}

int dlb_conf_set_kafka(dlb_conf_t *conf, const char *key, const char *value, char *errstr,
                       size_t size)
{
    dlb_kv_t *kv;
    char *k, *v;

    for (size_t i = 0; i < conf->kafka_cnt; i++) {
        if (!strcmp(conf->kafka[i].key, key)) {
            if (!(v = strdup(value)))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            free(conf->kafka[i].value);
            conf->kafka[i].value = v;
            return 0;
        }
    }
    k = strdup(key);
    v = strdup(value);
    if (!k || !v || !(kv = dlb_vec_push((void **)&conf->kafka, &conf->kafka_cnt, sizeof(*kv)))) {
        free(k);
        free(v);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    kv->key = k;
    kv->value = v;
    return 0;
}

/* Reads a secret from a regular file: its content less trailing newlines,
 * at most max bytes into out (max + 3 bytes). A longer one is an error, never
 * cut: a cut password fails much later as "authentication failed", with no
 * hint why. */
static int read_secret(const char *key, const char *path, char *out, size_t max, char *errstr,
                       size_t size)
{
    struct stat st;
    size_t n = 0;
    ssize_t r = 1;
    char c;
    int fd, e;

    /* O_NONBLOCK: a FIFO must not hang the start before fstat refuses it. */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: cannot open %s: %s", key, path,
                          strerror(errno));
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: %s is not a regular file", key, path);
    }
    /* Two bytes more than max: room for a final "\r\n". */
    while (n < max + 2 && (r = read(fd, out + n, max + 2 - n)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            close(fd);
            return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: cannot read %s: %s", key, path,
                              strerror(e));
        }
        n += (size_t)r;
    }
    if (n == max + 2)
        while ((r = read(fd, &c, 1)) < 0 && errno == EINTR)
            ;
    close(fd);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    if (n > max || r > 0)
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "%s: %s holds more than %zu bytes, the longest a secret can be there "
                          "(it is never cut)",
                          key, path, max);
    if (memchr(out, '\0', n))
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: %s holds a NUL byte", key, path);
    return 0;
}

/* "<secret>.file": the secret is read from the file named by path. */
static int set_secret_file(dlb_conf_t *conf, const char *file_key, const secret_def_t *s,
                           const char *path, char *errstr, size_t size)
{
    const key_def_t *k = find_key(s->key);
    size_t max = k ? k->size - 1 : SECRET_FILE_MAX;
    char *buf = malloc(max + 3);
    int err;

    if (!buf)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if (!(err = read_secret(file_key, path, buf, max, errstr, size)))
        err = k ? set_known(conf, k, buf, errstr, size)
                : dlb_conf_set_kafka(conf, s->key, buf, errstr, size);
    free(buf);
    return err;
}

int dlb_conf_set(dlb_conf_t *conf, const char *key, const char *value, char *errstr,
                 size_t errstr_size)
{
    const secret_def_t *s;
    const key_def_t *k;

    if (!strcmp(key, "bootstrap.servers"))
        key = "brokers";
    if ((s = find_secret_file(key)))
        return set_secret_file(conf, key, s, value, errstr, errstr_size);
    if ((k = find_key(key)))
        return set_known(conf, k, value, errstr, errstr_size);
    if (!key[0])
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "empty configuration key");
    return dlb_conf_set_kafka(conf, key, value, errstr, errstr_size);
}

int dlb_conf_set_kv(dlb_conf_t *conf, const char *kv, char *errstr, size_t errstr_size)
{
    const char *eq = strchr(kv, '=');
    char key[256];
    int err;

    if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "expected key=value, got \"%s\"", kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if ((err = dlb_conf_refuse_secret(DLB_CONF_FROM_ARGV, key, eq + 1, errstr, errstr_size)))
        return err;
    return dlb_conf_set(conf, key, eq + 1, errstr, errstr_size);
}

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int dlb_conf_load_file(dlb_conf_t *conf, const char *path, char *errstr, size_t errstr_size)
{
    char line[4096], sub[512];
    FILE *fp;
    int lineno = 0, err = 0;

    if (!(fp = fopen(path, "r")))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s: cannot open: %s", path,
                          strerror(errno));
    while (fgets(line, sizeof(line), fp)) {
        char *s = trim(line), *eq;
        lineno++;
        if (!*s || *s == '#')
            continue;
        if (!(eq = strchr(s, '='))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s:%d: expected key=value", path,
                             lineno);
            break;
        }
        *eq = '\0';
        if ((err = dlb_conf_set(conf, trim(s), trim(eq + 1), sub, sizeof(sub)))) {
            dlb_seterr(errstr, errstr_size, err, "%s:%d: %s", path, lineno, sub);
            break;
        }
    }
    fclose(fp);
    return err;
}

int dlb_conf_load_env(dlb_conf_t *conf, char *errstr, size_t errstr_size)
{
    char name[128], file_key[128], sub[512];
    const char *v;
    int err;

    for (const key_def_t *k = keys; k->key; k++) {
        env_name(k->key, name, sizeof(name));
        if ((v = getenv(name)) && (err = dlb_conf_set(conf, k->key, v, sub, sizeof(sub))))
            return dlb_seterr(errstr, errstr_size, err, "environment %s: %s", name, sub);
    }
    for (const secret_def_t *s = secrets; s->key; s++) {
        /* librdkafka's secrets have no row in keys; it has no "unset", so an
         * empty variable (an optional Secret's missing key) sets nothing. */
        env_name(s->key, name, sizeof(name));
        if (!find_key(s->key) && (v = getenv(name)) && *v &&
            (err = dlb_conf_set(conf, s->key, v, sub, sizeof(sub))))
            return dlb_seterr(errstr, errstr_size, err, "environment %s: %s", name, sub);
        snprintf(file_key, sizeof(file_key), "%s.file", s->key);
        env_name(file_key, name, sizeof(name));
        if ((v = getenv(name)) && (err = dlb_conf_set(conf, file_key, v, sub, sizeof(sub))))
            return dlb_seterr(errstr, errstr_size, err, "environment %s: %s", name, sub);
    }
    return 0;
}

const char *dlb_conf_topic(const dlb_conf_t *conf, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s.%s", conf->env, name);
    return buf;
}

static void dump_value(const dlb_conf_t *conf, const key_def_t *k, FILE *fp)
{
    const char *base = (const char *)conf + k->off;
    char buf[2048];

    switch (k->kind) {
    case K_STR:
    case K_OPTSET:
        fputs(dlb_conf_mask(k->key, base, buf, sizeof(buf)), fp);
        break;
    case K_INT:
    case K_PORT:
        fprintf(fp, "%d", *(const int *)base);
        break;
    case K_I64:
        fprintf(fp, "%lld", (long long)*(const int64_t *)base);
        break;
    case K_MIB:
        fprintf(fp, "%lld", (long long)(*(const int64_t *)base / DLB_MIB));
        break;
    case K_DBL:
        fprintf(fp, "%g", *(const double *)base);
        break;
    case K_LEVEL: {
        static const char *const lv[] = {"error", "warn", "info", "debug"};
        fputs(lv[*(const int *)base], fp);
        break;
    }
    case K_FORMAT:
        fputs(*(const int *)base ? "json" : "text", fp);
        break;
    }
}

void dlb_conf_dump(const dlb_conf_t *conf, void *out)
{
    FILE *fp = out;

    for (const key_def_t *k = keys; k->key; k++) {
        fprintf(fp, "%s=", k->key);
        dump_value(conf, k, fp);
        fputc('\n', fp);
    }
    for (size_t i = 0; i < conf->kafka_cnt; i++)
        fprintf(fp, "%s=%s\n", conf->kafka[i].key,
                dlb_conf_mask(conf->kafka[i].key, conf->kafka[i].value, NULL, 0));
}

void dlb_conf_reference(void *out)
{
    FILE *fp = out;

    fprintf(fp, "| key | default | environment | meaning |\n|---|---|---|---|\n");
    for (const key_def_t *k = keys; k->key; k++) {
        char name[128];
        env_name(k->key, name, sizeof(name));
        fprintf(fp, "| `%s` | `%s` | `%s` | %s |\n", k->key, k->def[0] ? k->def : "\"\"", name,
                k->doc);
    }
    fprintf(fp, "\nSecrets: refused on `-X` and by `env create --set`, masked by `settings`, "
                "`-D` and `env show`; each is set through its environment variable, its `.file` "
                "setting (a file holding it, read whole) or a `-c` file.\n\n"
                "| secret | environment | file setting | its environment |\n|---|---|---|---|\n");
    for (const secret_def_t *s = secrets; s->key; s++) {
        char name[128], file_key[128], file_name[128];
        env_name(s->key, name, sizeof(name));
        snprintf(file_key, sizeof(file_key), "%s.file", s->key);
        env_name(file_key, file_name, sizeof(file_name));
        fprintf(fp, "| `%s`%s | `%s` | `%s` | `%s` |\n", s->key,
                s->kind == SECRET_DSN ? " with a password" : "", name, file_key, file_name);
    }
}

void dlb_conf_destroy(dlb_conf_t *conf)
{
    for (size_t i = 0; i < conf->kafka_cnt; i++) {
        free(conf->kafka[i].key);
        free(conf->kafka[i].value);
    }
    free(conf->kafka);
    conf->kafka = NULL;
    conf->kafka_cnt = 0;
}

void dlb_conf_finish(dlb_conf_t *conf)
{
    if (!conf->pg_schema[0]) {
        snprintf(conf->pg_schema, sizeof(conf->pg_schema), "%s", conf->env);
        for (char *p = conf->pg_schema; *p; p++)
            if (*p == '-' || *p == '.')
                *p = '_';
    }
}

int dlb_conf_retention(const dlb_conf_t *conf, int64_t *window_ms, char *errstr, size_t errstr_size)
{
    const dlb_retention_conf_t *r = &conf->retention;

    *window_ms = 0;
    if (r->batch_rows < 1)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "store.retention.batch.rows: %d is not at least 1", r->batch_rows);
    if (!r->days)
        return 0;
    /* Similar jobs are looked up this far back (dlb_pg_load_history) and
     * their state read from their events: a shorter window would quietly
     * drop jobs from every create plan's history. */
    if ((int64_t)r->days * 24 < conf->history_hours)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "store.retention.days=%d keeps less than history.hours=%d looks back "
                          "for similar jobs: keep at least %d days or lower history.hours",
                          r->days, conf->history_hours, (conf->history_hours + 23) / 24);
    *window_ms = (int64_t)r->days * 86400000;
    return 0;
}

const char *dlb_conf_group(const dlb_conf_t *conf, const char *role, char *buf, size_t size)
{
    if (conf->group_id[0])
        return conf->group_id;
    snprintf(buf, size, "%s.%s", conf->env, role);
    return buf;
}
