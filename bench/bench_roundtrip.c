#include "bench_roundtrip.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "bench_gateway.h"
#include "bench_gateway_http.h"
#include "bench_path.h"
#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "kafka.h"
#include "latency.h"
#include "log.h"

/* A Kafka path: requests produced to st.where, answers consumed. */
typedef struct path {
    dlb_bench_path_t st;
    dlb_bench_roundtrip_t *r;
    char prefix[64];       /* event id prefix of this path's requests */
    rd_kafka_t *consumer;  /* where the answers come from */
    dlb_event_type_t want; /* the answer's type: a plan, or the request itself */
} path_t;

struct dlb_bench_roundtrip {
    const dlb_conf_t *conf;
    dlb_bench_roundtrip_opts_t opts;
    dlb_catalog_t *cat;
    rd_kafka_t *producer;
    char tag[32];
    size_t msg_bytes;
    path_t raw, plans;
    dlb_bench_gw_t *gw;   /* opts.gateway: the gateway path's client */
    dlb_bench_path_t gwp; /* and its numbers */
    int gw_ran;
    dlb_bench_http_t *http; /* opts.gateway_http: the HTTP Brain path's client */
    dlb_bench_path_t hp;    /* and its numbers */
    int http_ran;
};

static int stopped(const dlb_bench_roundtrip_t *r)
{
    return r->opts.stop && *r->opts.stop;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void job_uid(const dlb_bench_roundtrip_t *r, long i, char *buf, size_t size)
{
    snprintf(buf, size, "bench-%s-j%04ld", r->tag, i);
}

static void gw_job_uid(const void *ctx, long i, char *buf, size_t size)
{
    job_uid(ctx, i, buf, size);
}

/* Encode and produce one event. */
static int produce(dlb_bench_roundtrip_t *r, const char *topic, dlb_event_t *ev, size_t *len_out,
                   char *errstr, size_t size)
{
    void *buf = NULL;
    size_t len = 0;
    int err;

    if ((err = dlb_codec_encode(r->cat, ev, &buf, &len, errstr, size)))
        return err;
    /* A plan request says what it depends on (dlb.after): the jobs' events,
     * flushed before the first request. */
    while ((err = ev->type == DLB_EV_PLAN_REQUEST
                      ? dlb_kafka_produce_request(r->producer, topic, dlb_event_job_uid(ev), buf,
                                                  len, errstr, size)
                      : dlb_kafka_produce(r->producer, topic, dlb_event_job_uid(ev), buf, len,
                                          errstr, size)) &&
           rd_kafka_outq_len(r->producer) > 0 && !stopped(r))
        rd_kafka_poll(r->producer, 10); /* queue full: let deliveries drain */
    free(buf);
    if (len_out)
        *len_out = len;
    return err;
}

/* Meta and a few runtime samples per job, in the past, so the requests find
 * a job to plan for: 2 PS and 4 workers each. */
static int setup_jobs(dlb_bench_roundtrip_t *r, char *errstr, size_t size)
{
    const long samples = r->opts.samples;
    char topic[256];
    int64_t now = wall_ms();
    dlb_pod_usage_t pods[6];
    int err;

    for (long i = 0; i < r->opts.jobs; i++) {
        dlb_event_t ev = {.type = DLB_EV_JOB};
        dlb_job_event_t *je = &ev.u.job;
        snprintf(je->event_id, sizeof(je->event_id), "bench-%s-j%04ld-meta", r->tag, i);
        je->event_time_ms = now - (samples + 2) * 15000;
        job_uid(r, i, je->job_uid, sizeof(je->job_uid));
        je->has_meta = 1;
        snprintf(je->meta.name, sizeof(je->meta.name), "bench-%ld", i);
        snprintf(je->meta.user, sizeof(je->meta.user), "bench");
        snprintf(je->meta.scenario, sizeof(je->meta.scenario), "bench-roundtrip");
        snprintf(je->meta.framework, sizeof(je->meta.framework), "tensorflow");
        je->has_state = 1;
        snprintf(je->state, sizeof(je->state), "running");
        if ((err = produce(r, dlb_conf_topic(r->conf, DLB_TOPIC_JOB_EVENTS, topic, sizeof(topic)),
                           &ev, NULL, errstr, size)))
            return err;
        for (long k = 0; k < samples; k++) {
            dlb_event_t s = {.type = DLB_EV_RUNTIME};
            dlb_runtime_sample_t *rt = &s.u.rt;
            memset(pods, 0, sizeof(pods));
            for (int p = 0; p < 6; p++) {
                int ps = p < 2;
                snprintf(pods[p].name, sizeof(pods[p].name), "%.100s-%s-%d", je->job_uid,
                         ps ? "ps" : "worker", ps ? p : p - 2);
                snprintf(pods[p].type, sizeof(pods[p].type), "%s", ps ? "ps" : "worker");
                pods[p].index = ps ? p : p - 2;
                pods[p].cpu_used = ps ? 4.0 : 3.0;
                pods[p].cpu_requested = 8.0;
                pods[p].memory_used = (ps ? 12 : 6) * DLB_GIB;
                pods[p].memory_requested = 16 * DLB_GIB;
                pods[p].has_speed = !ps;
                pods[p].speed = ps ? 0 : 2.5;
            }
            snprintf(rt->event_id, sizeof(rt->event_id), "bench-%s-j%04ld-s%ld", r->tag, i, k);
            rt->event_time_ms = now - (samples - k) * 15000;
            snprintf(rt->job_uid, sizeof(rt->job_uid), "%s", je->job_uid);
            rt->global_step = 1000 + 150 * k;
            rt->speed = 10.0;
            rt->pods = pods;
            rt->pods_cnt = 6;
            if ((err = produce(r, dlb_conf_topic(r->conf, DLB_TOPIC_METRICS, topic, sizeof(topic)),
                               &s, NULL, errstr, size)))
                return err;
        }
    }
    return dlb_kafka_flush(r->producer, 30000, errstr, size);
}

static int send_request(dlb_bench_roundtrip_t *r, path_t *p, const char *id, long job, char *errstr,
                        size_t size, int64_t *sent_ns)
{
    dlb_event_t ev = {.type = DLB_EV_PLAN_REQUEST};
    dlb_plan_request_t *q = &ev.u.req;
    size_t len;
    int err;

    snprintf(q->event_id, sizeof(q->event_id), "%s", id);
    q->event_time_ms = wall_ms();
    job_uid(r, job, q->job_uid, sizeof(q->job_uid));
    snprintf(q->stage, sizeof(q->stage), "%s", r->opts.stage);
    if (sent_ns)
        *sent_ns = dlb_lat_clock_ns();
    if ((err = produce(r, p->st.where, &ev, &len, errstr, size)))
        return err;
    r->msg_bytes = len;
    return 0;
}

/* The request id an answer is for, or NULL when it is not this path's. */
static const char *answer_id(const path_t *p, const dlb_event_t *ev)
{
    const char *id;

    if (ev->type != p->want)
        return NULL;
    id = ev->type == DLB_EV_PLAN ? ev->u.plan.trigger_event_id : ev->u.req.event_id;
    return strncmp(id, p->prefix, strlen(p->prefix)) ? NULL : id;
}

/* Poll one answer (waiting at most timeout_ms). @returns its request id in
 * id (empty when none or not ours) and its receive time. */
static void poll_answer(dlb_bench_roundtrip_t *r, path_t *p, int timeout_ms, char *id,
                        size_t id_size, int64_t *at)
{
    rd_kafka_message_t *m;
    dlb_event_t ev = {0};
    char sub[256];
    const char *a;

    id[0] = '\0';
    rd_kafka_poll(r->producer, 0);
    if (!(m = rd_kafka_consumer_poll(p->consumer, timeout_ms)))
        return;
    *at = dlb_lat_clock_ns();
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            dlb_warn("kafka: %s; continuing", rd_kafka_message_errstr(m));
    } else if (!dlb_codec_decode(r->cat, m->payload, m->len, &ev, sub, sizeof(sub)) &&
               (a = answer_id(p, &ev))) {
        snprintf(id, id_size, "%s", a);
    }
    dlb_event_clear(&ev);
    rd_kafka_message_destroy(m);
}

/* Until every job got an answer to a first request (a plan path) or one probe
 * came back (raw): the consumer is assigned and at the end, the optimizer is
 * up and has the jobs. Unanswered firsts are sent again (new ids) every 3 s:
 * with auto.offset.reset=latest an answer written before the assignment is
 * never seen. */
static int warm_up(dlb_bench_roundtrip_t *r, path_t *p, long firsts, char *errstr, size_t size)
{
    const long timeout_ms = r->opts.warmup_ms;
    unsigned char *done = calloc((size_t)firsts, 1);
    int64_t deadline = dlb_lat_clock_ns() + (int64_t)timeout_ms * 1000000, resend = 0;
    long left = firsts, attempt = 0;
    char id[DLB_ID_MAX], want[DLB_ID_MAX];
    int err = 0;

    if (!done)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    while (left > 0 && !stopped(r)) {
        int64_t now = dlb_lat_clock_ns(), at;
        if (now > deadline) {
            err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT,
                             "%s: %ld of %ld warm-up request(s) unanswered after %ld ms (is "
                             "'dlbrain optimizer' running on these brokers?)",
                             p->st.name, left, firsts, timeout_ms);
            goto out;
        }
        if (now >= resend) {
            for (long i = 0; i < firsts; i++) {
                if (done[i])
                    continue;
                snprintf(want, sizeof(want), "%sw%ld-%ld", p->prefix, i, attempt);
                if ((err = send_request(r, p, want, i, errstr, size, NULL)))
                    goto out;
            }
            attempt++;
            resend = now + (int64_t)3000 * 1000000;
        }
        poll_answer(r, p, 100, id, sizeof(id), &at);
        if (id[0] == '\0' || strncmp(id + strlen(p->prefix), "w", 1))
            continue;
        {
            long i = strtol(id + strlen(p->prefix) + 1, NULL, 10);
            if (i >= 0 && i < firsts && !done[i]) {
                done[i] = 1;
                left--;
            }
        }
    }
    /* Answers to re-sent firsts may still come: they are told apart by id. */
out:
    free(done);
    return err;
}

static int kafka_send(void *ctx, dlb_bench_path_t *st, long i, char *errstr, size_t size)
{
    path_t *p = ctx;
    char id[DLB_ID_MAX];

    snprintf(id, sizeof(id), "%sq%ld", p->prefix, i);
    return send_request(p->r, p, id, i % p->r->opts.jobs, errstr, size, &st->sent_ns[i]);
}

/* One answer, waiting until deadline_ns at most (whole milliseconds, rounded
 * up: librdkafka's timeouts are milliseconds). */
static int kafka_poll(void *ctx, dlb_bench_path_t *st, int64_t deadline_ns, char *errstr,
                      size_t size)
{
    path_t *p = ctx;
    int64_t left = deadline_ns - dlb_lat_clock_ns(), at = 0;
    int timeout = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
    char id[DLB_ID_MAX];

    poll_answer(p->r, p, timeout > 100 ? 100 : timeout, id, sizeof(id), &at);
    if (id[0] && id[strlen(p->prefix)] == 'q' &&
        dlb_bench_path_answer(st, strtol(id + strlen(p->prefix) + 1, NULL, 10), at, 1))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

/* Send the path's requests at rate/s and record each one's round trip. */
static int run_path(dlb_bench_roundtrip_t *r, path_t *p, char *errstr, size_t size)
{
    const dlb_bench_path_ops_t ops = {.send = kafka_send, .poll = kafka_poll, .ctx = p};

    return dlb_bench_path_run(&p->st, &ops, r->opts.rate, r->opts.drain_ms, 0, r->opts.stop, errstr,
                              size);
}

/* The gateway path: warm up its client, then optimize calls at rate/s. Its
 * calls' deadline is the drain time, so every call has an answer before the
 * drain ends. */
static int run_gateway(dlb_bench_roundtrip_t *r, long n, char *errstr, size_t size)
{
    const dlb_bench_roundtrip_opts_t *o = &r->opts;
    const dlb_bench_gw_opts_t go = {.address = o->gateway,
                                    .stage = o->stage,
                                    .jobs = o->jobs,
                                    .job_uid = gw_job_uid,
                                    .ctx = r,
                                    .deadline_ms = o->drain_ms > 1000 ? o->drain_ms : 1000,
                                    .stop = o->stop};
    dlb_bench_path_ops_t ops;
    int err;

    if ((err = dlb_bench_path_init(&r->gwp, "optimize call -> answer (gateway)", n)))
        return dlb_seterr(errstr, size, err, "out of memory");
    snprintf(r->gwp.where, sizeof(r->gwp.where), "%s", o->gateway);
    if ((err = dlb_bench_gw_new(&r->gw, &go, errstr, size)) ||
        (err = dlb_bench_gw_warm_up(r->gw, o->warmup_ms, errstr, size)))
        return err;
    dlb_bench_gw_ops(r->gw, &ops);
    r->gw_ran = 1;
    return dlb_bench_path_run(&r->gwp, &ops, o->rate, go.deadline_ms + 1000, o->max_inflight,
                              o->stop, errstr, size);
}

/* The HTTP Brain path: the gateway path's, with POST /optimize. */
static int run_gateway_http(dlb_bench_roundtrip_t *r, long n, char *errstr, size_t size)
{
    const dlb_bench_roundtrip_opts_t *o = &r->opts;
    const dlb_bench_gw_opts_t go = {.address = o->gateway_http,
                                    .stage = o->stage,
                                    .jobs = o->jobs,
                                    .job_uid = gw_job_uid,
                                    .ctx = r,
                                    .deadline_ms = o->drain_ms > 1000 ? o->drain_ms : 1000,
                                    .stop = o->stop};
    dlb_bench_path_ops_t ops;
    int err;

    if ((err = dlb_bench_path_init(&r->hp, "POST /optimize -> answer (HTTP Brain)", n)))
        return dlb_seterr(errstr, size, err, "out of memory");
    snprintf(r->hp.where, sizeof(r->hp.where), "%s", o->gateway_http);
    if ((err = dlb_bench_http_new(&r->http, &go, errstr, size)) ||
        (err = dlb_bench_http_warm_up(r->http, o->warmup_ms, errstr, size)))
        return err;
    dlb_bench_http_ops(r->http, &ops);
    r->http_ran = 1;
    return dlb_bench_path_run(&r->hp, &ops, o->rate, go.deadline_ms + 1000, o->max_inflight,
                              o->stop, errstr, size);
}

static int create_topic(rd_kafka_t *rk, const char *name, int partitions, int replication,
                        char *errstr, size_t size)
{
    rd_kafka_NewTopic_t *nt;
    rd_kafka_queue_t *q;
    rd_kafka_AdminOptions_t *opts;
    rd_kafka_event_t *ev;
    const rd_kafka_topic_result_t **res;
    size_t cnt;
    char sub[512];
    int err = 0;

    if (!(nt = rd_kafka_NewTopic_new(name, partitions, replication, sub, sizeof(sub))))
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "topic %s: %s", name, sub);
    q = rd_kafka_queue_new(rk);
    opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(opts, 5000, NULL, 0);
    rd_kafka_AdminOptions_set_operation_timeout(opts, 5000, NULL, 0);
    rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
    if (!(ev = rd_kafka_queue_poll(q, 7000))) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "creating topic %s: no answer", name);
    } else if (rd_kafka_event_error(ev)) {
        err = dlb_seterr(errstr, size, DLB_ERR_TRANSIENT, "creating topic %s: %s", name,
                         rd_kafka_event_error_string(ev));
    } else {
        res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
        for (size_t i = 0; i < cnt; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                err = dlb_seterr(errstr, size, DLB_ERR_GENERIC, "creating topic %s: %s", name,
                                 rd_kafka_topic_result_error_string(res[i]));
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    return err;
}

static int subscribe(const dlb_conf_t *conf, const char *topic, const char *tag, const char *role,
                     rd_kafka_t **out, char *errstr, size_t size)
{
    /* A master's settings: read_committed, its own group, only what comes
     * from now on. */
    static const char *const extra[] = {"isolation.level", "read_committed", "auto.offset.reset",
                                        "latest", NULL};
    rd_kafka_topic_partition_list_t *sub;
    char group[256];
    rd_kafka_resp_err_t e;
    int err;

    snprintf(group, sizeof(group), "%s.bench.%s.%s", conf->env, tag, role);
    if ((err = dlb_kafka_consumer_new(conf, group, extra, out, errstr, size)))
        return err;
    sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    e = rd_kafka_subscribe(*out, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e)
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "subscribing to %s: %s", topic,
                          rd_kafka_err2str(e));
    return 0;
}

static void path_free(path_t *p)
{
    if (p->consumer) {
        rd_kafka_consumer_close(p->consumer);
        rd_kafka_destroy(p->consumer);
    }
    dlb_bench_path_free(&p->st);
}

static void print_table(dlb_bench_roundtrip_t *r)
{
    const dlb_bench_roundtrip_opts_t *o = &r->opts;
    FILE *out = o->out;

    fprintf(out,
            "roundtrip bench%s%s: %g requests/s for %ld s per path, %ld jobs x %ld samples, stage "
            "%s,\n%zu-byte requests, brokers %s%s%s\n\n",
            o->label ? " on " : "", o->label ? o->label : "", o->rate, o->seconds, o->jobs,
            o->samples, o->stage, r->msg_bytes, r->conf->brokers, r->gw_ran ? ", gateway " : "",
            r->gw_ran ? o->gateway : "");
    if (r->http_ran)
        fprintf(out, "(HTTP Brain %s)\n\n", o->gateway_http);
    dlb_bench_path_print_header(out);
    dlb_bench_path_print(out, &r->raw.st);
    dlb_bench_path_print(out, &r->plans.st);
    if (r->gw_ran)
        dlb_bench_path_print(out, &r->gwp);
    if (r->http_ran)
        dlb_bench_path_print(out, &r->hp);
    dlb_bench_path_print_ratio(out, "ratio (optimizer / raw)", &r->plans.st, &r->raw.st);
    if (r->gw_ran) {
        dlb_bench_gw_counts_t k = dlb_bench_gw_counts(r->gw);
        dlb_bench_path_print_ratio(out, "ratio (gateway / raw)", &r->gwp, &r->raw.st);
        if (r->gwp.failed)
            fprintf(out,
                    "(gateway calls failed: %ld success=false, %ld other status, %ld "
                    "malformed answers)\n",
                    k.no_plan, k.status, k.malformed);
        if (r->gwp.max_lag_ns > 1000000)
            fprintf(out,
                    "(gateway: a call started up to %.1f ms late, %ld calls in flight at most)\n",
                    (double)r->gwp.max_lag_ns / 1e6, o->max_inflight);
    }
    if (r->http_ran) {
        dlb_bench_gw_counts_t k = dlb_bench_http_counts(r->http);
        dlb_bench_path_print_ratio(out, "ratio (HTTP Brain / raw)", &r->hp, &r->raw.st);
        if (r->hp.failed)
            fprintf(out,
                    "(HTTP Brain calls failed: %ld success=false, %ld other status or transport "
                    "error, %ld malformed answers)\n",
                    k.no_plan, k.status, k.malformed);
        if (r->hp.max_lag_ns > 1000000)
            fprintf(out,
                    "(HTTP Brain: a call started up to %.1f ms late, %ld calls in flight at "
                    "most)\n",
                    (double)r->hp.max_lag_ns / 1e6, o->max_inflight);
    }
    if (r->plans.st.repeats || r->raw.st.repeats)
        fprintf(out, "(repeated deliveries ignored: raw %ld, plans %ld)\n", r->raw.st.repeats,
                r->plans.st.repeats);
    fflush(out);
}

static int results_json(dlb_bench_roundtrip_t *r, cJSON **json, char *errstr, size_t size)
{
    const dlb_bench_roundtrip_opts_t *o = &r->opts;
    cJSON *root = cJSON_CreateObject(), *x;
    int ok = root != NULL;

    ok = ok && cJSON_AddStringToObject(root, "benchmark", "roundtrip") &&
         cJSON_AddStringToObject(root, "label", o->label ? o->label : "") &&
         cJSON_AddStringToObject(root, "brokers", r->conf->brokers) &&
         cJSON_AddNumberToObject(root, "rate", o->rate) &&
         cJSON_AddNumberToObject(root, "seconds", (double)o->seconds) &&
         cJSON_AddNumberToObject(root, "jobs", (double)o->jobs) &&
         cJSON_AddNumberToObject(root, "samples_per_job", (double)o->samples) &&
         cJSON_AddStringToObject(root, "stage", o->stage) &&
         cJSON_AddNumberToObject(root, "message_bytes", (double)r->msg_bytes);
    ok = ok && (x = dlb_bench_path_json(&r->raw.st)) && cJSON_AddItemToObject(root, "raw", x);
    ok = ok && (x = dlb_bench_path_json(&r->plans.st)) && cJSON_AddItemToObject(root, "plans", x);
    ok = ok && (x = dlb_bench_path_ratio_json(&r->plans.st, &r->raw.st)) &&
         cJSON_AddItemToObject(root, "ratio", x);
    if (r->gw_ran) {
        dlb_bench_gw_counts_t k = dlb_bench_gw_counts(r->gw);
        ok = ok && (x = dlb_bench_path_json(&r->gwp)) &&
             cJSON_AddItemToObject(root, "gateway", x) &&
             cJSON_AddNumberToObject(x, "success_false", (double)k.no_plan) &&
             cJSON_AddNumberToObject(x, "other_status", (double)k.status) &&
             cJSON_AddNumberToObject(x, "malformed", (double)k.malformed) &&
             cJSON_AddNumberToObject(x, "max_inflight", (double)o->max_inflight);
        ok = ok && (x = dlb_bench_path_ratio_json(&r->gwp, &r->raw.st)) &&
             cJSON_AddItemToObject(root, "ratio_gateway", x);
    }
    if (r->http_ran) {
        dlb_bench_gw_counts_t k = dlb_bench_http_counts(r->http);
        ok = ok && (x = dlb_bench_path_json(&r->hp)) &&
             cJSON_AddItemToObject(root, "gateway_http", x) &&
             cJSON_AddNumberToObject(x, "success_false", (double)k.no_plan) &&
             cJSON_AddNumberToObject(x, "other_status", (double)k.status) &&
             cJSON_AddNumberToObject(x, "malformed", (double)k.malformed) &&
             cJSON_AddNumberToObject(x, "max_inflight", (double)o->max_inflight);
        ok = ok && (x = dlb_bench_path_ratio_json(&r->hp, &r->raw.st)) &&
             cJSON_AddItemToObject(root, "ratio_gateway_http", x);
    }
    if (!ok) {
        cJSON_Delete(root);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    *json = root;
    return 0;
}

int dlb_bench_roundtrip_new(dlb_bench_roundtrip_t **out, const dlb_conf_t *conf,
                            const dlb_bench_roundtrip_opts_t *opts, char *errstr,
                            size_t errstr_size)
{
    dlb_bench_roundtrip_t *r;

    if (!(*out = r = calloc(1, sizeof(*r))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    r->conf = conf;
    r->opts = *opts;
    /* Time and pid: a run's ids and groups never meet an earlier run's. */
    snprintf(r->tag, sizeof(r->tag), "%lx%x", (unsigned long)time(NULL), (unsigned)getpid());
    r->raw.r = r;
    r->raw.want = DLB_EV_PLAN_REQUEST;
    r->plans.r = r;
    r->plans.want = DLB_EV_PLAN;
    return 0;
}

int dlb_bench_roundtrip_run(dlb_bench_roundtrip_t *r, dlb_bench_roundtrip_result_t *res,
                            cJSON **json, char *errstr, size_t errstr_size)
{
    const dlb_conf_t *conf = r->conf;
    const dlb_bench_roundtrip_opts_t *o = &r->opts;
    path_t *raw = &r->raw, *plans = &r->plans, *paths[] = {raw, plans};
    char topic[256];
    long n = (long)(o->rate * (double)o->seconds);
    int err;

    memset(res, 0, sizeof(*res));
    if (json)
        *json = NULL;
    if ((err = dlb_catalog_new(&r->cat, errstr, errstr_size)) ||
        (err = dlb_kafka_producer_new(conf, NULL, &r->producer, errstr, errstr_size)) ||
        (err = dlb_kafka_producer_follow(r->producer, conf, errstr, errstr_size)))
        return err;
    for (int i = 0; i < 2; i++)
        if (dlb_bench_path_init(
                &paths[i]->st,
                i ? "plan request -> plan (optimizer)" : "kafka produce -> consume (raw topic)", n))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    dlb_conf_topic(conf, "bench-raw", raw->st.where, sizeof(raw->st.where));
    dlb_conf_topic(conf, DLB_TOPIC_PLAN_REQUESTS, plans->st.where, sizeof(plans->st.where));
    snprintf(raw->prefix, sizeof(raw->prefix), "bench-%s-x", r->tag);
    snprintf(plans->prefix, sizeof(plans->prefix), "bench-%s-", r->tag);
    /* The mock cluster of librdkafka 2.0 does not answer CreateTopics; it
     * creates a topic when a producer first asks for its metadata. */
    if (create_topic(r->producer, raw->st.where, conf->partitions, conf->replication, errstr,
                     errstr_size))
        dlb_warn("%s; relying on the broker creating %s on first use", errstr, raw->st.where);
    snprintf(topic, sizeof(topic), "%sc", raw->prefix);
    if ((err = send_request(r, raw, topic, 0, errstr, errstr_size, NULL)) ||
        (err = dlb_kafka_flush(r->producer, 30000, errstr, errstr_size)) ||
        (err =
             subscribe(conf, raw->st.where, r->tag, "raw", &raw->consumer, errstr, errstr_size)) ||
        (err = subscribe(conf, dlb_conf_topic(conf, DLB_TOPIC_PLANS, topic, sizeof(topic)), r->tag,
                         "master", &plans->consumer, errstr, errstr_size)))
        return err;
    dlb_info("run %s: %ld jobs x %ld samples, then %ld requests at %g/s per path", r->tag, o->jobs,
             o->samples, n, o->rate);
    if ((err = setup_jobs(r, errstr, errstr_size)) ||
        (err = warm_up(r, raw, 1, errstr, errstr_size)) ||
        (err = run_path(r, raw, errstr, errstr_size)) ||
        (err = warm_up(r, plans, o->jobs, errstr, errstr_size)) ||
        (err = run_path(r, plans, errstr, errstr_size)) ||
        (o->gateway && !stopped(r) && (err = run_gateway(r, n, errstr, errstr_size))) ||
        (o->gateway_http && !stopped(r) && (err = run_gateway_http(r, n, errstr, errstr_size))))
        return err;
    if (stopped(r)) {
        res->stopped = 1;
        return 0;
    }
    print_table(r);
    res->raw_sent = raw->st.sent;
    res->raw_received = raw->st.received;
    res->plans_sent = plans->st.sent;
    res->plans_received = plans->st.received;
    res->gateway_sent = r->gwp.sent;
    res->gateway_received = r->gwp.received;
    res->gateway_failed = r->gwp.failed;
    res->http_sent = r->hp.sent;
    res->http_received = r->hp.received;
    res->http_failed = r->hp.failed;
    return json ? results_json(r, json, errstr, errstr_size) : 0;
}

void dlb_bench_roundtrip_destroy(dlb_bench_roundtrip_t *r)
{
    if (!r)
        return;
    path_free(&r->raw);
    path_free(&r->plans);
    dlb_bench_gw_destroy(r->gw);
    dlb_bench_path_free(&r->gwp);
    dlb_bench_http_destroy(r->http);
    dlb_bench_path_free(&r->hp);
    dlb_kafka_producer_destroy(r->producer);
    if (r->cat)
        dlb_catalog_destroy(r->cat);
    free(r);
}
