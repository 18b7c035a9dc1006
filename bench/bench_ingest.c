#include "bench_ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>
#include <librdkafka/rdkafka.h>

#include "catalog.h"
#include "clock.h"
#include "cache_redis.h"
#include "codec.h"
#include "env_ops.h"
#include "err.h"
#include "kafka.h"
#include "latency.h"
#include "log.h"
#include "bench_samples.h"
#include "rss.h"
#include "store_pg.h"
#include "store_pg_conn.h"

extern char **environ;

/* How often the pipeline's progress (committed offsets) is looked at: the
 * resolution of its end time. */
#define WATCH_MS 50
/* A consumer process that does not stop after SIGTERM within this long is
 * killed (closing flushes for up to 10 s). */
#define STOP_WAIT_MS 30000
/* Raw reads of the run's messages: the median is reported. One takes a
 * fraction of a second, where a neighbour's burst of CPU shows. */
#define RAW_PASSES 3

/* The offsets of one topic's partitions. */
typedef struct topic_offs {
    char name[256];
    int cnt;
    int64_t *lo, *hi; /* per partition: low and high watermark */
} topic_offs_t;

typedef struct child {
    pid_t pid;
    int done;    /* waited for */
    int status;  /* wait status when done */
    int64_t rss; /* peak RSS in bytes: VmHWM before it is stopped */
} child_t;

typedef struct run {
    const dlb_conf_t *conf;
    const dlb_bench_ingest_opts_t *o;
    char tag[32];
    char group[256];
    dlb_catalog_t *cat;
    dlb_codec_decoder_t *dec; /* the stages pass decodes as the stream does */
    rd_kafka_t *producer, *mon;
    dlb_pg_t *pg;
    /* <env>.metrics: the run's messages are [first[p], last[p]) */
    topic_offs_t metrics;
    int64_t *first, *last;
    int64_t messages, bytes, pod_rows;
    int64_t pg_samples0, pg_pods0, pg_samples, pg_pods;
    long redis_jobs;
    child_t *kids;
    int kids_cnt;
    /* results */
    double raw_s, raw_first_s, raw_pass_s[RAW_PASSES];
    int64_t raw_msgs, raw_bytes;
    double pipe_s, pipe_first_s, pipe_steady;
    /* each stage alone (stages_pass): seconds spent in it */
    int64_t st_msgs;
    double st_consume_s, st_decode_s, st_pg_s, st_redis_s;
    int by_rows; /* the end seen in PostgreSQL, the broker stored no offsets */
} run_t;

static int stopped(const run_t *r)
{
    return r->o->stop && *r->o->stop;
}

static double since_s(int64_t t0_ns)
{
    return (double)(dlb_lat_clock_ns() - t0_ns) / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

static void job_uid(const run_t *r, long j, char *buf, size_t size)
{
    snprintf(buf, size, "bench-%s-j%05ld", r->tag, j);
}

static int topic_partitions(rd_kafka_t *rk, const char *topic, int *cnt, char *errstr, size_t size)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e;
    int err = 0;

    if (!rkt)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "topic %s: %s", topic,
                          rd_kafka_err2str(rd_kafka_last_error()));
    if ((e = rd_kafka_metadata(rk, 0, rkt, &md, 10000)))
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "metadata of %s: %s", topic,
                         rd_kafka_err2str(e));
    else if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt < 1)
        err =
            dlb_seterr(errstr, size, DLB_ERR_GENERIC, "topic %s: %s", topic,
                       md->topic_cnt == 1 && md->topics[0].err ? rd_kafka_err2str(md->topics[0].err)
                                                               : "no partitions");
    else
        *cnt = md->topics[0].partition_cnt;
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return err;
}

static void offs_free(topic_offs_t *t)
{
    free(t->lo);
    free(t->hi);
    t->lo = t->hi = NULL;
}

/* Partitions and watermarks of one topic. */
static int offs_query(rd_kafka_t *rk, const char *topic, topic_offs_t *t, char *errstr, size_t size)
{
    rd_kafka_resp_err_t e;
    int err;

    offs_free(t);
    snprintf(t->name, sizeof(t->name), "%s", topic);
    if ((err = topic_partitions(rk, topic, &t->cnt, errstr, size)))
        return err;
    if (!(t->lo = calloc((size_t)t->cnt, sizeof(int64_t))) ||
        !(t->hi = calloc((size_t)t->cnt, sizeof(int64_t))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (int p = 0; p < t->cnt; p++) {
        int64_t deadline = dlb_clock_mono_ms() + 10000;
        /* A topic made a moment ago: its partition's leader may not take
         * requests yet, though the metadata names it. */
        while ((e = rd_kafka_query_watermark_offsets(rk, topic, p, &t->lo[p], &t->hi[p], 10000)) &&
               (e == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE) &&
               dlb_clock_mono_ms() < deadline)
            usleep(200000);
        if (e)
            return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "watermarks of %s [%d]: %s", topic,
                              p, rd_kafka_err2str(e));
    }
    return 0;
}

/* Produce every sample, as fast as the broker takes them. */
static int preload(run_t *r, char *errstr, size_t size)
{
    const long n = r->o->samples, jobs = r->o->jobs;
    dlb_pod_usage_t pods[DLB_BENCH_MAX_PODS];
    int64_t t0 = (int64_t)time(NULL) * 1000 - (n / jobs + 2) * 15000;
    int err = 0;

    for (long i = 0; i < n && !stopped(r); i++) {
        dlb_event_t ev;
        const dlb_runtime_sample_t *s = &ev.u.rt;
        void *buf = NULL;
        size_t len = 0;

        dlb_bench_sample(r->tag, i, jobs, t0, &ev, pods);
        if ((err = dlb_codec_encode(r->cat, &ev, &buf, &len, errstr, size)))
            return err;
        while ((err = dlb_kafka_produce(r->producer, r->metrics.name, s->job_uid, buf, len, errstr,
                                        size)) &&
               rd_kafka_outq_len(r->producer) > 0 && !stopped(r))
            rd_kafka_poll(r->producer, 10); /* queue full: let deliveries drain */
        free(buf);
        if (err)
            return err;
        r->bytes += (int64_t)len;
        r->pod_rows += (int64_t)s->pods_cnt;
    }
    return dlb_kafka_flush(r->producer, 120000, errstr, size);
}

/* The run's messages, from the watermarks before and after the preload. A
 * broker that dropped some of them already (the mock cluster keeps about
 * 5 MiB per partition) cannot be measured. */
static int run_range(run_t *r, const topic_offs_t *after, char *errstr, size_t size)
{
    r->messages = 0;
    for (int p = 0; p < after->cnt; p++) {
        if (after->lo[p] > r->first[p])
            return dlb_seterr(errstr, size, DLB_ERR_GENERIC,
                              "%s [%d] dropped messages of the run already (first offset %" PRId64
                              ", now %" PRId64 "): the broker keeps less than the run produced "
                              "(the mock cluster about 5 MiB per partition); use fewer samples",
                              after->name, p, r->first[p], after->lo[p]);
        r->last[p] = after->hi[p];
        r->messages += r->last[p] - r->first[p];
    }
    if (r->messages < r->o->samples)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC,
                          "%s holds %" PRId64 " new messages, %ld were produced", after->name,
                          r->messages, r->o->samples);
    return 0;
}

/* The run's group starts at the run's first metrics message and at the end of
 * every other input topic: it reads this run's samples and nothing else. */
static int commit_start(run_t *r, char *errstr, size_t size)
{
    static const char *const others[] = {DLB_TOPIC_JOB_EVENTS, DLB_TOPIC_K8S_EVENTS,
                                         DLB_TOPIC_PLAN_REQUESTS, NULL};
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(64);
    topic_offs_t t = {0};
    char name[256];
    rd_kafka_resp_err_t e;
    int err = 0;

    for (int p = 0; p < r->metrics.cnt; p++)
        rd_kafka_topic_partition_list_add(l, r->metrics.name, p)->offset = r->first[p];
    for (const char *const *o = others; *o; o++) {
        if ((err = offs_query(r->producer, dlb_conf_topic(r->conf, *o, name, sizeof(name)), &t,
                              errstr, size)))
            goto out;
        for (int p = 0; p < t.cnt; p++)
            rd_kafka_topic_partition_list_add(l, t.name, p)->offset = t.hi[p];
    }
    if ((e = rd_kafka_commit(r->mon, l, 0)))
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                         "committing the start offsets of group %s: %s", r->group,
                         rd_kafka_err2str(e));
    for (int i = 0; !err && i < l->cnt; i++)
        if (l->elems[i].err)
            err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                             "committing the start offset of %s [%d] for group %s: %s",
                             l->elems[i].topic, (int)l->elems[i].partition, r->group,
                             rd_kafka_err2str(l->elems[i].err));
out:
    offs_free(&t);
    rd_kafka_topic_partition_list_destroy(l);
    return err;
}

/* A plain consumer in group <run's group>.<suffix>, assigned at the run's
 * first offsets of <env>.metrics (no group protocol: nothing to wait for). */
static int run_consumer(run_t *r, const char *suffix, rd_kafka_t **out, char *errstr, size_t size)
{
    rd_kafka_topic_partition_list_t *l;
    char group[300];
    int err;

    snprintf(group, sizeof(group), "%s.%s", r->group, suffix);
    if ((err = dlb_kafka_consumer_new(r->conf, group, NULL, out, errstr, size)))
        return err;
    l = rd_kafka_topic_partition_list_new(r->metrics.cnt);
    for (int p = 0; p < r->metrics.cnt; p++)
        rd_kafka_topic_partition_list_add(l, r->metrics.name, p)->offset = r->first[p];
    rd_kafka_assign(*out, l);
    rd_kafka_topic_partition_list_destroy(l);
    return 0;
}

/* Whether m is one of the run's messages (not an error, not older). */
static int in_run(const run_t *r, const rd_kafka_message_t *m)
{
    return !m->err && m->partition >= 0 && m->partition < r->metrics.cnt &&
           m->offset >= r->first[m->partition] && m->offset < r->last[m->partition];
}

/* A plain consumer, assigned at the run's first offsets, counting messages
 * and bytes without decoding them: what librdkafka alone reads. One pass:
 * its seconds in *secs, until the first message in *first_s. */
static int raw_pass(run_t *r, int pass, double *secs, double *first_s, char *errstr, size_t size)
{
    rd_kafka_t *rc = NULL;
    char suffix[16];
    int64_t t0, deadline, msgs = 0, bytes = 0;
    int err;

    snprintf(suffix, sizeof(suffix), "raw%d", pass);
    if ((err = run_consumer(r, suffix, &rc, errstr, size)))
        return err;
    t0 = dlb_lat_clock_ns(); /* from the assignment: the handle's creation is not reading */
    deadline = t0 + (int64_t)r->o->timeout_s * 1000000000;
    while (msgs < r->messages && !stopped(r)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rc, 100);
        if (!m) {
            if (dlb_lat_clock_ns() > deadline) {
                err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                                 "raw consumer: %" PRId64 " of %" PRId64 " messages after %ld s",
                                 msgs, r->messages, r->o->timeout_s);
                break;
            }
            continue;
        }
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                dlb_warn("raw consumer: %s; continuing", rd_kafka_message_errstr(m));
        } else if (in_run(r, m)) {
            if (!msgs)
                *first_s = since_s(t0);
            msgs++;
            bytes += (int64_t)m->len;
        }
        rd_kafka_message_destroy(m);
    }
    *secs = since_s(t0);
    r->raw_msgs = msgs;
    r->raw_bytes = bytes;
    rd_kafka_consumer_close(rc);
    rd_kafka_destroy(rc);
    return err;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* RAW_PASSES passes; the median one is the raw rate. */
static int raw_read(run_t *r, char *errstr, size_t size)
{
    double first[RAW_PASSES], sorted[RAW_PASSES];
    int err;

    for (int i = 0; i < RAW_PASSES; i++)
        if ((err = raw_pass(r, i, &r->raw_pass_s[i], &first[i], errstr, size)) || stopped(r))
            return err;
    memcpy(sorted, r->raw_pass_s, sizeof(sorted));
    qsort(sorted, RAW_PASSES, sizeof(double), cmp_double);
    r->raw_s = sorted[RAW_PASSES / 2];
    for (int i = 0; i < RAW_PASSES; i++)
        if (r->raw_pass_s[i] == r->raw_s)
            r->raw_first_s = first[i];
    return 0;
}

/* The batch's consumed positions, saved as the stream saves them: a row per
 * partition, the offset after its newest message. */
static int stages_positions(dlb_pg_t *pg, rd_kafka_message_t **msgs, size_t n, char *errstr,
                            size_t size)
{
    dlb_pg_position_t pos[64];
    size_t cnt = 0;

    for (size_t i = 0; i < n; i++) {
        size_t j = 0;

        while (j < cnt && pos[j].partition != msgs[i]->partition)
            j++;
        if (j == cnt && cnt == sizeof(pos) / sizeof(pos[0]))
            return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "bench: over 64 partitions");
        if (j == cnt)
            pos[cnt++] = (dlb_pg_position_t){rd_kafka_topic_name(msgs[i]->rkt), msgs[i]->partition,
                                             msgs[i]->offset + 1};
        else if (msgs[i]->offset + 1 > pos[j].next_offset)
            pos[j].next_offset = msgs[i]->offset + 1;
    }
    return dlb_pg_save_positions(pg, "bench-stages", pos, cnt, errstr, size);
}

/* One batch of the stages pass: decode (through a decoder keeping its
 * values, and validate, as the stream does),
 * then the stream's COPY and positions in their own transaction, then
 * Redis, each timed. */
static int stages_batch(run_t *r, dlb_pg_t *pg, dlb_redis_t *rd, rd_kafka_message_t **msgs,
                        size_t n, dlb_event_t *evs, const dlb_event_t **evp, const void **raws,
                        size_t *lens, char *errstr, size_t size)
{
    int64_t t = dlb_lat_clock_ns();
    size_t k = 0;
    int err = 0;

    for (size_t i = 0; i < n; i++) {
        memset(&evs[k], 0, sizeof(evs[k]));
        if ((err = dlb_codec_decoder_decode(r->dec, msgs[i]->payload, msgs[i]->len, &evs[k], errstr,
                                            size)) ||
            (err = dlb_event_validate(&evs[k], errstr, size))) {
            dlb_event_clear(&evs[k]);
            goto out;
        }
        evp[k] = &evs[k];
        raws[k] = msgs[i]->payload;
        lens[k] = msgs[i]->len;
        k++;
    }
    r->st_decode_s += since_s(t);
    t = dlb_lat_clock_ns();
    if ((err = dlb_pg_begin(pg, errstr, size)) ||
        (err = dlb_pg_send_runtime_copy(pg, evp, raws, lens, k, errstr, size)) ||
        (err = dlb_pg_wait_runtime_copy(pg, evp, raws, lens, k, errstr, size)) ||
        (err = stages_positions(pg, msgs, n, errstr, size)) ||
        (err = dlb_pg_commit(pg, errstr, size)))
        goto out;
    r->st_pg_s += since_s(t);
    t = dlb_lat_clock_ns();
    if ((err = dlb_redis_apply_samples(rd, evp, raws, lens, k, errstr, size)))
        goto out;
    r->st_redis_s += since_s(t);
out:
    for (size_t i = 0; i < k; i++)
        dlb_event_clear(&evs[i]);
    return err;
}

/* Each stage of the pipeline alone, in this process, on the run's messages:
 * a plain consumer filling batches of consumer.batch.size; decoding them
 * (avro-c) and validating; the stream's COPY and consumed positions, a
 * transaction a batch, into a scratch environment's schema (<env>_stages, dropped
 * after); the batch's Redis writes under that environment's keys. The
 * rates say what the pipeline could reach were a stage all it did, and
 * their sum what one process doing them in series (no Kafka transaction)
 * can. */
static int stages_pass(run_t *r, char *errstr, size_t size)
{
    const size_t cap = (size_t)(r->conf->batch_size > 0 ? r->conf->batch_size : 500);
    rd_kafka_message_t **msgs = calloc(cap, sizeof(*msgs));
    dlb_event_t *evs = calloc(cap, sizeof(*evs));
    const dlb_event_t **evp = calloc(cap, sizeof(*evp));
    const void **raws = calloc(cap, sizeof(*raws));
    size_t *lens = calloc(cap, sizeof(*lens)), n = 0;
    rd_kafka_t *rc = NULL;
    dlb_pg_t *pg = NULL;
    dlb_redis_t *rd = NULL;
    PGconn *admin = NULL;
    dlb_conf_t sc;
    char name[sizeof(r->conf->env) + 8];
    int64_t t0, t, deadline;
    int created;
    int64_t purged = 0;
    int err = 0;

    if (!msgs || !evs || !evp || !raws || !lens) {
        err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    snprintf(name, sizeof(name), "%s_stages", r->conf->env);
    dlb_env_conf(r->conf, name, &sc);
    /* A run stopped halfway left its scratch schema: start from none. */
    if ((err = dlb_pg_open(&admin, r->conf->pg_dsn, errstr, size)) ||
        (err = dlb_env_schema_drop(admin, name, errstr, size)) ||
        (err = dlb_pg_connect(&pg, sc.pg_dsn, name, errstr, size)) ||
        (err = dlb_pg_migrate(pg, errstr, size)) ||
        /* The partitions a consumer creates at start, so the samples go where
         * the pipeline's do (not into the default partition). */
        (err = dlb_pg_partitions_ensure(pg, (int64_t)sc.retention.span_hours * 3600000,
                                        sc.retention.ahead, dlb_clock_wall_ms(), &created, errstr,
                                        size)) ||
        (err = dlb_redis_connect(&rd, &sc, r->cat, errstr, size)) ||
        (err = run_consumer(r, "stages", &rc, errstr, size)))
        goto out;
    t0 = dlb_lat_clock_ns();
    deadline = t0 + (int64_t)r->o->timeout_s * 1000000000;
    t = t0;
    while (r->st_msgs < r->messages && !stopped(r)) {
        /* Fill a batch; a short one when the rest has not come yet. */
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rc, n ? 0 : 100);
        if (m && in_run(r, m)) {
            msgs[n++] = m;
            r->st_msgs++;
            if (n < cap && r->st_msgs < r->messages)
                continue;
        } else if (m) {
            rd_kafka_message_destroy(m);
            continue;
        } else if (!n) {
            if (dlb_lat_clock_ns() > deadline) {
                err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                                 "stages: %" PRId64 " of %" PRId64 " messages after %ld s",
                                 r->st_msgs, r->messages, r->o->timeout_s);
                break;
            }
            continue;
        }
        r->st_consume_s += since_s(t);
        err = stages_batch(r, pg, rd, msgs, n, evs, evp, raws, lens, errstr, size);
        for (size_t i = 0; i < n; i++)
            rd_kafka_message_destroy(msgs[i]);
        n = 0;
        if (err)
            break;
        t = dlb_lat_clock_ns();
    }
out:
    for (size_t i = 0; i < n; i++)
        rd_kafka_message_destroy(msgs[i]);
    if (rc) {
        rd_kafka_consumer_close(rc);
        rd_kafka_destroy(rc);
    }
    dlb_pg_destroy(pg);
    dlb_redis_destroy(rd);
    if (admin) {
        char sub[512];
        if (dlb_env_schema_drop(admin, name, sub, sizeof(sub)) ||
            dlb_env_redis_purge(r->conf, name, &purged, sub, sizeof(sub)))
            dlb_warn("bench ingest: cleaning up scratch environment %s: %s", name, sub);
        PQfinish(admin);
    }
    free(msgs);
    free(evs);
    free(evp);
    free(raws);
    free(lens);
    return err;
}

static int kids_start(run_t *r, char *errstr, size_t size)
{
    const char *const *base = r->o->consumer_argv;
    char gx[300];
    char **argv;
    size_t n = 0;
    int e, err = 0;

    while (base[n])
        n++;
    if (!(argv = calloc(n + 3, sizeof(*argv))) ||
        !(r->kids = calloc((size_t)r->o->consumers, sizeof(*r->kids)))) {
        free(argv);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        argv[i] = (char *)base[i]; /* posix_spawn's prototype is not const-correct */
    snprintf(gx, sizeof(gx), "group.id=%s", r->group);
    argv[n] = "-X";
    argv[n + 1] = gx;
    for (int i = 0; i < r->o->consumers; i++) {
        if ((e = posix_spawn(&r->kids[i].pid, argv[0], NULL, NULL, argv, environ))) {
            err = dlb_seterr(errstr, size, DLB_ERR_GENERIC, "starting %s %s: %s", argv[0], argv[1],
                             strerror(e));
            break;
        }
        r->kids_cnt++;
    }
    free(argv);
    return err;
}

/* Collect a consumer that exited; @returns 1 when it has. */
static int kid_reap(child_t *k, int options)
{
    struct rusage ru;
    pid_t p;

    if (k->done)
        return 1;
    do
        p = wait4(k->pid, &k->status, options, &ru);
    while (p < 0 && errno == EINTR);
    if (p != k->pid)
        return 0;
    k->done = 1;
    if (!k->rss) /* not read while it ran */
        k->rss = dlb_rss_from_maxrss(ru.ru_maxrss);
    return 1;
}

/* SIGTERM, then SIGKILL after STOP_WAIT_MS; @returns how many did not exit
 * cleanly. */
static int kids_stop(run_t *r)
{
    int64_t deadline = dlb_lat_clock_ns() + (int64_t)STOP_WAIT_MS * 1000000;
    int bad = 0;

    for (int i = 0; i < r->kids_cnt; i++)
        if (!r->kids[i].done) {
            r->kids[i].rss = dlb_rss_peak_pid((int)r->kids[i].pid);
            kill(r->kids[i].pid, SIGTERM);
        }
    for (int i = 0; i < r->kids_cnt; i++) {
        child_t *k = &r->kids[i];
        while (!kid_reap(k, WNOHANG)) {
            if (dlb_lat_clock_ns() > deadline) {
                dlb_warn("consumer process %d did not stop within %d ms; killing it", (int)k->pid,
                         STOP_WAIT_MS);
                kill(k->pid, SIGKILL);
                kid_reap(k, 0);
                break;
            }
            sleep_ms(20);
        }
        if (!WIFEXITED(k->status) || WEXITSTATUS(k->status))
            bad++;
    }
    return bad;
}

/* How many of the run's messages the group has committed. */
static int committed(run_t *r, int64_t *done, char *errstr, size_t size)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(r->metrics.cnt);
    rd_kafka_resp_err_t e;

    for (int p = 0; p < r->metrics.cnt; p++)
        rd_kafka_topic_partition_list_add(l, r->metrics.name, p);
    if ((e = rd_kafka_committed(r->mon, l, 10000))) {
        rd_kafka_topic_partition_list_destroy(l);
        return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "committed offsets of %s: %s", r->group,
                          rd_kafka_err2str(e));
    }
    *done = 0;
    for (int i = 0; i < l->cnt; i++) {
        int p = (int)l->elems[i].partition;
        int64_t off = l->elems[i].offset;
        if (p < 0 || p >= r->metrics.cnt || off < r->first[p])
            continue;
        *done += (off < r->last[p] ? off : r->last[p]) - r->first[p];
    }
    rd_kafka_topic_partition_list_destroy(l);
    return 0;
}

/* Start the consumers; wait until the group has committed every message of
 * the run and PostgreSQL holds every sample. */
static int pipeline(run_t *r, char *errstr, size_t size)
{
    int64_t t0, deadline, done = 0, first_done = -1, rows = 0;
    int err;

    t0 = dlb_lat_clock_ns();
    deadline = t0 + (int64_t)r->o->timeout_s * 1000000000;
    if ((err = kids_start(r, errstr, size)))
        return err;
    for (;;) {
        if (stopped(r))
            return 0;
        for (int i = 0; i < r->kids_cnt; i++)
            if (kid_reap(&r->kids[i], WNOHANG))
                return dlb_seterr(errstr, size, DLB_ERR_GENERIC,
                                  "consumer process %d exited (status %d) with %" PRId64
                                  " of %" PRId64 " messages committed",
                                  (int)r->kids[i].pid, r->kids[i].status, done, r->messages);
        if ((err = committed(r, &done, errstr, size)))
            return err;
        if (done > 0 && first_done < 0) {
            first_done = done;
            r->pipe_first_s = since_s(t0);
        }
        if (done >= r->messages)
            break;
        /* The mock cluster (librdkafka 2.0) accepts transactional offset
         * commits without storing them: with nothing committed, the rows
         * (written before the commit) say when the group is through. Looked
         * at once a second, not to load PostgreSQL. */
        if (!done && since_s(t0) >= (double)rows + 1.0) {
            int64_t n = 0;
            if ((err = dlb_pg_count(r->pg, "runtime_samples", &n, errstr, size)))
                return err;
            rows = (int64_t)since_s(t0);
            if (n - r->pg_samples0 >= r->o->samples) {
                r->by_rows = 1;
                first_done = 0;
                break;
            }
        }
        if (dlb_lat_clock_ns() > deadline)
            return dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                              "pipeline: %" PRId64 " of %" PRId64 " messages committed after %ld s",
                              done, r->messages, r->o->timeout_s);
        sleep_ms(WATCH_MS);
    }
    r->pipe_s = since_s(t0);
    if (r->pipe_s > r->pipe_first_s)
        r->pipe_steady = (double)(r->messages - first_done) / (r->pipe_s - r->pipe_first_s);
    /* The offsets are committed after the rows: they must all be there. */
    if ((err = dlb_pg_count(r->pg, "runtime_samples", &r->pg_samples, errstr, size)) ||
        (err = dlb_pg_count(r->pg, "runtime_pods", &r->pg_pods, errstr, size)))
        return err;
    r->pg_samples -= r->pg_samples0;
    r->pg_pods -= r->pg_pods0;
    if (r->pg_samples != r->o->samples || r->pg_pods != r->pod_rows)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC,
                          "PostgreSQL gained %" PRId64 " samples and %" PRId64
                          " pod rows; the run has %ld and %" PRId64,
                          r->pg_samples, r->pg_pods, r->o->samples, r->pod_rows);
    return 0;
}

/* Every job's runtime window in Redis holds its newest samples: the cache
 * half of "full persistence" (a Redis outage would only degrade it). */
static int redis_check(run_t *r, char *errstr, size_t size)
{
    const dlb_conf_t *conf = r->conf;
    const long jobs = r->o->jobs, per = r->o->samples / jobs;
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(conf->redis_host, conf->redis_port, tv);
    redisReply *rep = NULL;
    char uid[DLB_ID_MAX];
    int err = 0;

    if (!c || c->err) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "redis %s:%d: %s", conf->redis_host,
                         conf->redis_port, c ? c->errstr : "out of memory");
        goto out;
    }
    redisSetTimeout(c, tv);
    if (conf->redis_password[0] && (rep = redisCommand(c, "AUTH %s", conf->redis_password)))
        freeReplyObject(rep);
    if (conf->redis_db && (rep = redisCommand(c, "SELECT %d", conf->redis_db)))
        freeReplyObject(rep);
    for (long j = 0; j < jobs; j++) {
        char key[DLB_REDIS_KEY_MAX];
        job_uid(r, j, uid, sizeof(uid));
        dlb_redis_job_key(conf->env, uid, ":rt", key, sizeof(key));
        redisAppendCommand(c, "ZCARD %s", key);
    }
    for (long j = 0; j < jobs; j++) {
        long want = per + (j < r->o->samples % jobs);
        if (want > conf->window_size)
            want = conf->window_size;
        if (redisGetReply(c, (void **)&rep) != REDIS_OK || !rep) {
            err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "redis %s:%d: ZCARD: %s",
                             conf->redis_host, conf->redis_port, c->errstr);
            goto out;
        }
        if (rep->type == REDIS_REPLY_INTEGER && rep->integer == want)
            r->redis_jobs++;
        else if (!err)
            err = dlb_seterr(errstr, size, DLB_ERR_GENERIC,
                             "redis: the runtime window of job %ld holds %lld samples, not %ld", j,
                             rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1LL, want);
        freeReplyObject(rep);
    }
out:
    if (c)
        redisFree(c);
    return err;
}

static double mib(int64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static double rate(double n, double s)
{
    return s > 0 ? n / s : 0;
}

static void print_table(const run_t *r)
{
    const dlb_bench_ingest_opts_t *o = r->o;
    FILE *out = o->out;
    double raw = rate((double)r->raw_msgs, r->raw_s), pipe = rate((double)r->messages, r->pipe_s);

    fprintf(out,
            "ingest bench%s%s: %ld runtime samples of %ld jobs (%.1f pods, %.0f bytes each on "
            "average), %d partition(s) of %s, %d optimizer process(es), brokers %s\n\n",
            o->label ? " on " : "", o->label ? o->label : "", o->samples, o->jobs,
            (double)r->pod_rows / (double)o->samples, (double)r->bytes / (double)o->samples,
            r->metrics.cnt, r->metrics.name, o->consumers, r->conf->brokers);
    fprintf(out, "%-42s %9s %8s %10s %8s\n", "PATH", "MESSAGES", "SECONDS", "MSGS/S", "MB/S");
    fprintf(out, "%-42s %9" PRId64 " %8.2f %10.0f %8.1f\n", "raw librdkafka consumer (median of 3)",
            r->raw_msgs, r->raw_s, raw, rate((double)r->raw_bytes, r->raw_s) / 1e6);
    fprintf(out, "%-42s %9" PRId64 " %8.2f %10.0f %8.1f\n", "pipeline (decode, Redis, PostgreSQL)",
            r->messages, r->pipe_s, pipe, rate((double)r->bytes, r->pipe_s) / 1e6);
    fprintf(out, "%-42s %9s %8s %10.3f\n\n", "ratio (pipeline / raw)", "", "", rate(pipe, raw));
    fprintf(out,
            "each stage alone, in the bench process, batches of %d (what it costs, not a path):\n",
            r->conf->batch_size);
    fprintf(out, "%-42s %9s %8s %10s %8s\n", "STAGE", "MESSAGES", "SECONDS", "MSGS/S", "OF RAW");
    {
        const char *names[] = {"consume (librdkafka, filling batches)",
                               "decode + validate (avro-c)", "PostgreSQL (COPY, positions, commit)",
                               "Redis (pipelined window writes)",
                               "all four in series, no Kafka transaction"};
        double secs[] = {r->st_consume_s, r->st_decode_s, r->st_pg_s, r->st_redis_s,
                         r->st_consume_s + r->st_decode_s + r->st_pg_s + r->st_redis_s};
        for (int i = 0; i < 5; i++)
            fprintf(out, "%-42s %9" PRId64 " %8.2f %10.0f %8.3f\n", names[i], r->st_msgs, secs[i],
                    rate((double)r->st_msgs, secs[i]),
                    rate(rate((double)r->st_msgs, secs[i]), raw));
    }
    fprintf(out, "\n");
    if (r->by_rows)
        fprintf(out,
                "pipeline: the broker stored no committed offsets (the mock cluster does not "
                "for transactions): timed until PostgreSQL held every sample, to the second; ");
    else
        fprintf(out,
                "pipeline: first offsets committed %.2f s after the start, %.0f msgs/s from then "
                "on; ",
                r->pipe_first_s, r->pipe_steady);
    fprintf(out,
            "PostgreSQL +%" PRId64 " samples, +%" PRId64
            " pod rows; Redis: runtime windows of %ld jobs checked\n",
            r->pg_samples, r->pg_pods, r->redis_jobs);
    fprintf(out, "peak RSS: bench process (producer, raw consumer) %.1f MiB",
            mib(dlb_rss_peak_self()));
    for (int i = 0; i < r->kids_cnt; i++)
        fprintf(out, "; optimizer %d %.1f MiB", i + 1, mib(r->kids[i].rss));
    fprintf(out, "\n");
    fflush(out);
}

static cJSON *results_json(const run_t *r)
{
    const dlb_bench_ingest_opts_t *o = r->o;
    double raw = rate((double)r->raw_msgs, r->raw_s), pipe = rate((double)r->messages, r->pipe_s);
    cJSON *root = cJSON_CreateObject(), *rw = cJSON_CreateObject(), *pl = cJSON_CreateObject(),
          *rss = cJSON_CreateObject(), *kids = cJSON_CreateArray(), *st;

    if (!root || !rw || !pl || !rss || !kids) {
        cJSON_Delete(root);
        cJSON_Delete(rw);
        cJSON_Delete(pl);
        cJSON_Delete(rss);
        cJSON_Delete(kids);
        return NULL;
    }
    cJSON_AddStringToObject(root, "benchmark", "ingest");
    cJSON_AddStringToObject(root, "label", o->label ? o->label : "");
    cJSON_AddStringToObject(root, "brokers", r->conf->brokers);
    cJSON_AddStringToObject(root, "topic", r->metrics.name);
    cJSON_AddNumberToObject(root, "partitions", r->metrics.cnt);
    cJSON_AddNumberToObject(root, "consumers", o->consumers);
    cJSON_AddNumberToObject(root, "samples", (double)o->samples);
    cJSON_AddNumberToObject(root, "jobs", (double)o->jobs);
    cJSON_AddNumberToObject(root, "pods_per_sample", (double)r->pod_rows / (double)o->samples);
    cJSON_AddNumberToObject(root, "bytes_per_sample", (double)r->bytes / (double)o->samples);
    cJSON_AddNumberToObject(rw, "messages", (double)r->raw_msgs);
    cJSON_AddNumberToObject(rw, "seconds", r->raw_s);
    cJSON_AddNumberToObject(rw, "first_message_s", r->raw_first_s);
    cJSON_AddNumberToObject(rw, "msgs_per_s", raw);
    cJSON_AddNumberToObject(rw, "mb_per_s", rate((double)r->raw_bytes, r->raw_s) / 1e6);
    cJSON_AddItemToObject(rw, "passes_s", cJSON_CreateDoubleArray(r->raw_pass_s, RAW_PASSES));
    cJSON_AddItemToObject(root, "raw", rw);
    cJSON_AddNumberToObject(pl, "messages", (double)r->messages);
    cJSON_AddNumberToObject(pl, "seconds", r->pipe_s);
    cJSON_AddNumberToObject(pl, "first_commit_s", r->pipe_first_s);
    cJSON_AddNumberToObject(pl, "msgs_per_s", pipe);
    cJSON_AddNumberToObject(pl, "steady_msgs_per_s", r->pipe_steady);
    cJSON_AddBoolToObject(pl, "ended_by_rows", r->by_rows);
    cJSON_AddNumberToObject(pl, "mb_per_s", rate((double)r->bytes, r->pipe_s) / 1e6);
    cJSON_AddNumberToObject(pl, "pg_samples", (double)r->pg_samples);
    cJSON_AddNumberToObject(pl, "pg_pod_rows", (double)r->pg_pods);
    cJSON_AddNumberToObject(pl, "redis_jobs_checked", (double)r->redis_jobs);
    cJSON_AddItemToObject(root, "pipeline", pl);
    cJSON_AddNumberToObject(root, "ratio", rate(pipe, raw));
    if ((st = cJSON_AddObjectToObject(root, "stages"))) {
        cJSON_AddNumberToObject(st, "messages", (double)r->st_msgs);
        cJSON_AddNumberToObject(st, "batch_size", r->conf->batch_size);
        cJSON_AddNumberToObject(st, "consume_s", r->st_consume_s);
        cJSON_AddNumberToObject(st, "decode_s", r->st_decode_s);
        cJSON_AddNumberToObject(st, "postgresql_s", r->st_pg_s);
        cJSON_AddNumberToObject(st, "redis_s", r->st_redis_s);
    }
    cJSON_AddNumberToObject(rss, "bench", (double)dlb_rss_peak_self());
    for (int i = 0; i < r->kids_cnt; i++)
        cJSON_AddItemToArray(kids, cJSON_CreateNumber((double)r->kids[i].rss));
    cJSON_AddItemToObject(rss, "optimizers", kids);
    cJSON_AddItemToObject(root, "peak_rss_bytes", rss);
    return root;
}

/* Catalog, PostgreSQL (migrated, row counts before), the producer, the
 * group's offset handle, the run's first offsets. */
static int setup(run_t *r, char *errstr, size_t size)
{
    /* As fast as the broker takes them: big batches, a deep queue. */
    static const char *const fast[] = {"linger.ms",
                                       "20",
                                       "batch.size",
                                       "1000000",
                                       "queue.buffering.max.messages",
                                       "1000000",
                                       "queue.buffering.max.kbytes",
                                       "1048576",
                                       NULL};
    const dlb_conf_t *conf = r->conf;
    char topic[256];
    int err;

    /* Time and pid: a run's ids and group never meet an earlier run's. */
    snprintf(r->tag, sizeof(r->tag), "%lx%x", (unsigned long)time(NULL), (unsigned)getpid());
    snprintf(r->group, sizeof(r->group), "%s.bench-ingest-%s", conf->env, r->tag);
    if ((err = dlb_catalog_new(&r->cat, errstr, size)) ||
        (err = dlb_codec_decoder_new(r->cat, &r->dec, errstr, size)) ||
        (err = dlb_pg_connect(&r->pg, conf->pg_dsn, conf->pg_schema, errstr, size)) ||
        (err = dlb_pg_migrate(r->pg, errstr, size)) ||
        (err = dlb_pg_count(r->pg, "runtime_samples", &r->pg_samples0, errstr, size)) ||
        (err = dlb_pg_count(r->pg, "runtime_pods", &r->pg_pods0, errstr, size)) ||
        (err = dlb_kafka_producer_new(conf, fast, &r->producer, errstr, size)) ||
        (err = dlb_kafka_consumer_new(conf, r->group, NULL, &r->mon, errstr, size)) ||
        (err =
             offs_query(r->producer, dlb_conf_topic(conf, DLB_TOPIC_METRICS, topic, sizeof(topic)),
                        &r->metrics, errstr, size)))
        return err;
    if (!(r->first = calloc((size_t)r->metrics.cnt, sizeof(int64_t))) ||
        !(r->last = calloc((size_t)r->metrics.cnt, sizeof(int64_t))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    memcpy(r->first, r->metrics.hi, (size_t)r->metrics.cnt * sizeof(int64_t));
    return 0;
}

static void teardown(run_t *r)
{
    int running = 0;

    for (int i = 0; i < r->kids_cnt; i++)
        running |= !r->kids[i].done;
    if (running && kids_stop(r))
        dlb_warn("a consumer process did not exit cleanly");
    free(r->kids);
    if (r->mon) {
        rd_kafka_consumer_close(r->mon);
        rd_kafka_destroy(r->mon);
    }
    dlb_kafka_producer_destroy(r->producer);
    dlb_pg_destroy(r->pg);
    dlb_codec_decoder_destroy(r->dec);
    if (r->cat)
        dlb_catalog_destroy(r->cat);
    offs_free(&r->metrics);
    free(r->first);
    free(r->last);
}

int dlb_bench_ingest(const dlb_conf_t *conf, const dlb_bench_ingest_opts_t *opts, cJSON **json,
                     char *errstr, size_t errstr_size)
{
    run_t r = {.conf = conf, .o = opts};
    topic_offs_t after = {0};
    int err, bad;

    if (json)
        *json = NULL;
    if (opts->samples < 1 || opts->jobs < 1 || opts->consumers < 1 || !opts->consumer_argv ||
        !opts->consumer_argv[0])
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "bench ingest: samples, jobs, consumers and a consumer command needed");
    if ((err = setup(&r, errstr, errstr_size)))
        goto out;
    dlb_info("run %s: producing %ld runtime samples of %ld jobs into %s", r.tag, opts->samples,
             opts->jobs, r.metrics.name);
    if ((err = preload(&r, errstr, errstr_size)) || stopped(&r) ||
        (err = offs_query(r.producer, r.metrics.name, &after, errstr, errstr_size)) ||
        (err = run_range(&r, &after, errstr, errstr_size)) ||
        (err = commit_start(&r, errstr, errstr_size)))
        goto out;
    dlb_info("run %s: %" PRId64 " messages, %.1f MB; reading them with a plain consumer", r.tag,
             r.messages, (double)r.bytes / 1e6);
    if ((err = raw_read(&r, errstr, errstr_size)) || stopped(&r))
        goto out;
    dlb_info("run %s: each stage alone (decode, PostgreSQL, Redis) in this process", r.tag);
    if ((err = stages_pass(&r, errstr, errstr_size)) || stopped(&r))
        goto out;
    dlb_info("run %s: alone, decode %.0f, PostgreSQL %.0f, Redis %.0f msgs/s", r.tag,
             rate((double)r.st_msgs, r.st_decode_s), rate((double)r.st_msgs, r.st_pg_s),
             rate((double)r.st_msgs, r.st_redis_s));
    dlb_info("run %s: %.0f msgs/s raw; starting %d consumer process(es) in group %s", r.tag,
             rate((double)r.raw_msgs, r.raw_s), opts->consumers, r.group);
    if ((err = pipeline(&r, errstr, errstr_size)) || stopped(&r) ||
        (err = redis_check(&r, errstr, errstr_size)))
        goto out;
    if ((bad = kids_stop(&r))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                         "%d consumer process(es) did not exit cleanly", bad);
        goto out;
    }
    print_table(&r);
    if (json && !(*json = results_json(&r)))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
out:
    offs_free(&after);
    teardown(&r);
    return err;
}
