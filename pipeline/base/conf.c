#include "conf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int secret;
    const char *doc;
} key_def_t;

#define F(m) offsetof(dlb_conf_t, m), sizeof(((dlb_conf_t *)0)->m)
#define N(m) offsetof(dlb_conf_t, m), 0

static const key_def_t keys[] = {
    {"env", K_STR, F(env), "dlbrain", 0,
     "Environment name: prefix of topics, consumer groups, PostgreSQL schema, Redis keys."},
    {"brokers", K_STR, F(brokers), "localhost:9092", 0, "Kafka bootstrap servers."},
    {"group.id", K_STR, F(group_id), "", 0,
     "Consumer group of a consumer process (default <env>.<role>: <env>.optimizer, "
     "<env>.configurer)."},
    {"pg.dsn", K_STR, F(pg_dsn), "", 1,
     "libpq conninfo; empty uses libpq's PG* environment. Keep passwords in "
     "PGPASSWORD/PGPASSFILE."},
    {"pg.schema", K_STR, F(pg_schema), "", 0, "PostgreSQL schema (default: env)."},
    {"redis.host", K_STR, F(redis_host), "127.0.0.1", 0, "Redis host."},
    {"redis.port", K_INT, N(redis_port), "6379", 0, "Redis port."},
    {"redis.password", K_STR, F(redis_password), "", 1,
     "Redis AUTH password; set it through DLBRAIN_REDIS_PASSWORD or redis.password.file."},
    {"redis.db", K_INT, N(redis_db), "0", 0, "Redis database number."},
    {"redis.timeout.ms", K_INT, N(redis_timeout_ms), "2000", 0, "Redis connect/command timeout."},
    {"topic.partitions", K_INT, N(partitions), "12", 0, "Partitions of topics dlbrain creates."},
    {"topic.replication", K_INT, N(replication), "1", 0,
     "Replication factor of topics dlbrain creates."},
    {"state.window.size", K_INT, N(window_size), "60", 0,
     "Runtime samples kept per job (DLRover keeps 60)."},
    {"history.hours", K_INT, N(history_hours), "168", 0,
     "Look-back for similar jobs (DLRover: 7 days)."},
    {"history.max.jobs", K_INT, N(history_max_jobs), "100", 0, "Newest similar jobs used."},
    {"consumer.batch.size", K_INT, N(batch_size), "500", 0,
     "Most messages per processing batch (one PostgreSQL and one Kafka transaction)."},
    {"consumer.poll.ms", K_INT, N(poll_ms), "200", 0,
     "Longest wait for a message when idle; a batch is what has been fetched by then."},
    {"consumer.order.wait.ms", K_INT, N(order_wait_ms), "2000", 0,
     "Longest a request (plan or config) waits for its job's events on the other input topics."},
    {"consumer.order.grace.ms", K_INT, N(order_grace_ms), "100", 0,
     "How long a request without a dlb.after header waits before trusting that its job's "
     "other topics hold nothing older (covers a producer's events still in flight to another "
     "topic). A request with the header waits for the positions it names instead."},
    {"consumer.retry.backoff.ms", K_INT, N(retry_backoff_ms), "1000", 0,
     "Pause before retrying after PostgreSQL/Redis/Kafka failed."},
    {"consumer.batch.max.mb", K_MIB, N(batch_max_bytes), "64", 0,
     "Memory the messages a consumer holds (records and what they decode to) may take before it "
     "stops polling for more; a batch is cut there. Bounds a consumer's memory whatever its "
     "input: 500 records of 1 MiB that each decode to 16,384 pods would otherwise take GiBs. "
     "librdkafka's own prefetch (queued.max.messages.kbytes) comes on top."},
    {"consumer.stall.s", K_INT, N(stall_s), "60", 0,
     "A partition with messages waiting that makes no progress for this long (one record "
     "refused for ever, a dependency down) makes /readyz answer 503, naming the partition and "
     "the last failure; 0 = never. Longer than the ordering barrier's wait and a slow batch."},
    {"event.time.skew.s", K_INT, N(skew_s), "86400", 0,
     "An event whose event_time_ms is further ahead of its record's broker timestamp than this "
     "goes to the DLQ (validate): a far-future time would hold the ordering barrier and every "
     "window open. 0 = no check. Clocks of the cluster's agents may run ahead by this much."},
    {"message.max.bytes", K_I64, N(max_message_bytes), "1048576", 0,
     "Largest message a consumer decodes; larger ones go to the DLQ."},
    {"optimizer.set", K_OPTSET, F(optimizer_set), "dlbrain", 0,
     "Optimizer set: dlrover or dlbrain."},
    {"config.refresh.ms", K_INT, N(config_refresh_ms), "5000", 0,
     "How often the configurer looks for a new configuration rules version in PostgreSQL."},
    {"config.cache.ttl.s", K_INT, N(config_cache_ttl_s), "86400", 0,
     "Life of a cached match result in Redis (its key holds the rules version, so a new version "
     "never reads it)."},
    {"relay.refresh.ms", K_INT, N(relay_refresh_ms), "1000", 0,
     "How often the relay re-reads the environment registry: a promotion switches the "
     "environment whose plans reach the front within this time, and new environments are "
     "relayed to."},
    {"dlbrain.hang.seconds", K_INT, N(tuning.hang_seconds), "600", 0,
     "dlbrain set: no global-step progress for this long is a hang (relaunch plan)."},
    {"dlbrain.straggler.ratio", K_DBL, N(tuning.straggler_ratio), "0.5", 0,
     "dlbrain set: a worker slower than this times its peers' median speed is a straggler."},
    {"dlbrain.straggler.samples", K_INT, N(tuning.straggler_samples), "3", 0,
     "dlbrain set: ... in this many newest samples in a row (replace plan)."},
    {"dlbrain.memory.horizon.seconds", K_INT, N(tuning.memory_horizon_seconds), "1800", 0,
     "dlbrain set: how far ahead a pod's memory trend is extrapolated."},
    {"dlbrain.memory.trigger", K_DBL, N(tuning.memory_trigger), "0.9", 0,
     "dlbrain set: raise memory before an OOM when the predicted peak passes this fraction of "
     "the request."},
    {"dlbrain.scale.min.gain", K_DBL, N(tuning.scale_min_gain), "0.5", 0,
     "dlbrain set: one more worker must add at least this fraction of the current speed per "
     "worker, else scaling stops."},
    {"dlbrain.scale.step.max", K_INT, N(tuning.scale_step_max), "8", 0,
     "dlbrain set: most workers one plan adds or removes."},
    {"limits.cpu.min", K_DBL, N(limits.cpu_min), "4", 0, "Lowest CPU (cores) a plan may ask."},
    {"limits.cpu.max", K_DBL, N(limits.cpu_max), "32", 0, "Highest CPU (cores) a plan may ask."},
    {"limits.memory.min.mib", K_MIB, N(limits.memory_min), "6144", 0, "Lowest memory (MiB)."},
    {"limits.memory.max.mib", K_MIB, N(limits.memory_max), "65536", 0, "Highest memory (MiB)."},
    {"limits.workers.max", K_INT, N(limits.max_workers), "60", 0, "Most workers a plan may ask."},
    {"limits.ps.max", K_INT, N(limits.max_ps), "15", 0, "Most parameter servers a plan may ask."},
    {"k8s.kubeconfig", K_STR, F(k8s.kubeconfig), "", 0,
     "k8s-monitor: kubeconfig file; empty = in-cluster service account when "
     "KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG (its first file), else ~/.kube/config."},
    {"k8s.context", K_STR, F(k8s.context), "", 0,
     "k8s-monitor: kubeconfig context; empty = its current-context."},
    {"k8s.namespace", K_STR, F(k8s.ns), "", 0,
     "k8s-monitor: namespace of the pods and events watched; empty = all namespaces."},
    {"k8s.selector", K_STR, F(k8s.selector), "", 0,
     "k8s-monitor: label selector of the pods watched; empty = pods that have the job label."},
    {"k8s.job.label", K_STR, F(k8s.job_label), "elasticjob.dlrover/name", 0,
     "k8s-monitor: pod label naming the training job (DLRover's); a pod without it is skipped."},
    {"k8s.job.uid", K_STR, F(k8s.job_uid), "label", 0,
     "k8s-monitor: job uid of a pod's events: label (the job label's value) or owner (the uid "
     "of the pod's controller, e.g. the ElasticJob, as DLRover masters report it)."},
    {"k8s.type.label", K_STR, F(k8s.type_label), "elasticjob.dlrover/replica-type", 0,
     "k8s-monitor: pod label holding the pod type (ps, worker, chief, evaluator; master = "
     "chief)."},
    {"k8s.index.label", K_STR, F(k8s.index_label), "elasticjob.dlrover/replica-index", 0,
     "k8s-monitor: pod label holding the pod's index within its type."},
    {"k8s.watch.timeout.s", K_INT, N(k8s.watch_timeout_s), "300", 0,
     "k8s-monitor: timeoutSeconds of one watch request; the watch then resumes from its last "
     "resourceVersion."},
    {"k8s.backoff.ms", K_INT, N(k8s.backoff_ms), "500", 0,
     "k8s-monitor: first delay before reconnecting after a failed request; doubles each time."},
    {"k8s.backoff.max.ms", K_INT, N(k8s.backoff_max_ms), "30000", 0,
     "k8s-monitor: longest delay between reconnects."},
    {"gateway.address", K_STR, F(gateway.address), "0.0.0.0:50001", 0,
     "gateway: host:port where DLRover's brain.Brain gRPC service is served (plaintext "
     "HTTP/2, as DLROVER_BRAIN_SERVICE_ADDR reaches it); port 0 = any free port (logged)."},
    {"gateway.optimize.timeout.ms", K_INT, N(gateway.optimize_timeout_ms), "5000", 0,
     "gateway: longest an optimize call waits for its plan (or less, when the call's own "
     "deadline is nearer); then it answers success=false, which DLRover's master reads as "
     "no plan. DLRover sets no deadline and waits at start-up, so this bounds that wait."},
    {"gateway.ack.timeout.ms", K_INT, N(gateway.ack_timeout_ms), "10000", 0,
     "gateway: longest a call waits for Kafka to acknowledge what it produced; then the "
     "call fails with UNAVAILABLE."},
    {"gateway.max.message.bytes", K_I64, N(gateway.max_message_bytes), "4194304", 0,
     "gateway: largest request message accepted; a larger one is refused with "
     "RESOURCE_EXHAUSTED before it is read."},
    {"gateway.plans.linger.ms", K_INT, N(gateway.plans_linger_ms), "5000", 0,
     "gateway: how long a partition of <env>.plans is still read after the last call waiting "
     "on it got its plan, so the next call on it needs no end-offset question and no new "
     "assignment; then it is read no more."},
    {"gateway.max.calls", K_INT, N(gateway.max_calls), "1024", 0,
     "gateway: calls served at once; more wait in gRPC's queue."},
    {"metrics.port", K_PORT, N(metrics_port), "9464", 0,
     "Port of a long-running process's /metrics (Prometheus), /healthz and /readyz; 0 = any "
     "free port (logged at start), -1 = no endpoint. A port in use stops the process (set 0 or "
     "another port when several run on one host). 9464 is the port OpenTelemetry's Prometheus "
     "exporters use, so scrape configs and NetworkPolicies written for it fit."},
    {"metrics.address", K_STR, F(metrics_address), "0.0.0.0", 0,
     "Address the metrics endpoint listens on (IPv4 or IPv6 literal). All interfaces, because "
     "Prometheus and the kubelet's probes reach a pod on its pod IP; 127.0.0.1 keeps it local "
     "on a shared host. It serves no secrets and accepts only GET."},
    {"metrics.stall.s", K_INT, N(metrics_stall_s), "120", 0,
     "/healthz answers 503 when the main loop has not come round for this long (0 = never): "
     "longer than any single blocking call (a Kafka transaction commit waits up to 30 s), so "
     "only a stuck process fails it, not a dependency outage."},
    {"log.level", K_LEVEL, N(log_level), "info", 0, "error, warn, info or debug."},
    {"log.format", K_FORMAT, N(log_json), "text", 0, "text or json."},
    {NULL, 0, 0, 0, NULL, 0, NULL},
};

static const key_def_t *find_key(const char *key)
{
    for (const key_def_t *k = keys; k->key; k++)
        if (!strcmp(k->key, key))
            return k;
    return NULL;
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
        if ((err = parse_long(k->key, value, 0, INT_MAX, &ll, errstr, size)))
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

/* Reads a secret from a file: the whole content minus trailing newlines. */
static int read_secret(const char *key, const char *path, char *out, size_t out_size, char *errstr,
                       size_t size)
{
    FILE *fp = fopen(path, "r");
    size_t n;

    if (!fp)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s: cannot open %s: %s", key, path,
                          strerror(errno));
    n = fread(out, 1, out_size - 1, fp);
    fclose(fp);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    return 0;
}

int dlb_conf_set(dlb_conf_t *conf, const char *key, const char *value, char *errstr,
                 size_t errstr_size)
{
    const key_def_t *k;

    if (!strcmp(key, "bootstrap.servers"))
        key = "brokers";
    if (!strcmp(key, "redis.password.file"))
        return read_secret(key, value, conf->redis_password, sizeof(conf->redis_password), errstr,
                           errstr_size);
    if (!strcmp(key, "pg.dsn.file"))
        return read_secret(key, value, conf->pg_dsn, sizeof(conf->pg_dsn), errstr, errstr_size);
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

    if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "expected key=value, got \"%s\"", kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
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

static void env_name(const char *key, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "DLBRAIN_");
    for (; *key && n + 1 < size; key++)
        buf[n++] = (*key == '.' || *key == '-') ? '_' : (char)toupper((unsigned char)*key);
    buf[n] = '\0';
}

int dlb_conf_load_env(dlb_conf_t *conf, char *errstr, size_t errstr_size)
{
    static const char *const extra[] = {"redis.password.file", "pg.dsn.file", NULL};
    char name[128], sub[512];
    const char *v;
    int err;

    for (const key_def_t *k = keys; k->key; k++) {
        env_name(k->key, name, sizeof(name));
        if ((v = getenv(name)) && (err = dlb_conf_set(conf, k->key, v, sub, sizeof(sub))))
            return dlb_seterr(errstr, errstr_size, err, "environment %s: %s", name, sub);
    }
    for (const char *const *e = extra; *e; e++) {
        env_name(*e, name, sizeof(name));
        if ((v = getenv(name)) && (err = dlb_conf_set(conf, *e, v, sub, sizeof(sub))))
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

    switch (k->kind) {
    case K_STR:
    case K_OPTSET:
        fputs(k->secret && *base ? "***" : base, fp);
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
    for (size_t i = 0; i < conf->kafka_cnt; i++) {
        /* librdkafka secrets: sasl.password, ssl.key.password, ... */
        int secret = strstr(conf->kafka[i].key, "password") || strstr(conf->kafka[i].key, "secret");
        fprintf(fp, "%s=%s\n", conf->kafka[i].key, secret ? "***" : conf->kafka[i].value);
    }
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

const char *dlb_conf_group(const dlb_conf_t *conf, const char *role, char *buf, size_t size)
{
    if (conf->group_id[0])
        return conf->group_id;
    snprintf(buf, size, "%s.%s", conf->env, role);
    return buf;
}
