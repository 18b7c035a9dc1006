/* The agent library against librdkafka's in-process mock cluster: its
 * configuration errors, refused reports, a full queue, the order of plan
 * requests, flush, and the plan subscription (read_committed, one job's
 * plans, each id once); schema.registry.url against dlbrain's own registry
 * endpoint (`dlbrain registry`'s server, in-process: binding at open, the
 * registry's ids on the wire, a refused subject, an outage while an unknown
 * id is read). DLB_TEST_SR_ALIAS_URL (a registry that also serves plan v2
 * under id 1008, as 16-agent.sh starts) runs the check that such an id is
 * resolved through the registry and its plans delivered. DLB_TEST_BROKERS (a real broker with the
 * topics of env "agenttest", as tests/system/16-agent.sh starts) also runs the aborted transaction
 * check, which the mock cluster cannot (it ignores aborts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "agent_internal.h"
#include "codec.h"
#include "opt_plan.h"
#include "schemareg.h"

static const dlb_http_conf_t test_bounds = {64, 16, 5000};

#include <librdkafka/rdkafka_mock.h> /* after rdkafka.h, which agent_internal.h includes */

#define ENV "agenttest"

static const char *const topics[] = {"job-events", "metrics", "k8s-events", "plan-requests",
                                     "plans"};

typedef struct fixture {
    rd_kafka_t *mock_rk;
    rd_kafka_mock_cluster_t *mc; /* NULL with a real broker */
    char brokers[1024];
} fixture_t;

/* ---- log capture ---- */
static char logs[64][1024];
static int nlogs;
static pthread_mutex_t logs_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_cb(int level, const char *message, void *opaque)
{
    (void)opaque;
    if (getenv("DLB_TEST_VERBOSE"))
        fprintf(stderr, "agent[%d]: %s\n", level, message);
    pthread_mutex_lock(&logs_lock);
    if (nlogs < 64)
        snprintf(logs[nlogs++], sizeof(logs[0]), "%s", message);
    pthread_mutex_unlock(&logs_lock);
}

static int logs_matching(const char *needle)
{
    int n = 0;

    pthread_mutex_lock(&logs_lock);
    for (int i = 0; i < nlogs; i++)
        n += strstr(logs[i], needle) != NULL;
    pthread_mutex_unlock(&logs_lock);
    return n;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    const char *real = getenv("DLB_TEST_BROKERS");
    rd_kafka_conf_t *kc;
    char name[128];

    if (!f)
        return -1;
    nlogs = 0;
    if (real && *real) {
        snprintf(f->brokers, sizeof(f->brokers), "%s", real);
        *state = f;
        return 0;
    }
    kc = rd_kafka_conf_new();
    rd_kafka_conf_set(kc, "log_level", "3", NULL, 0);
    if (!(f->mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, NULL, 0)) ||
        !(f->mc = rd_kafka_mock_cluster_new(f->mock_rk, 1)))
        return -1;
    for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++) {
        snprintf(name, sizeof(name), ENV ".%s", topics[i]);
        if (rd_kafka_mock_topic_create(f->mc, name, 4, 1))
            return -1;
    }
    snprintf(f->brokers, sizeof(f->brokers), "%s", rd_kafka_mock_cluster_bootstraps(f->mc));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;

    if (f->mc)
        rd_kafka_mock_cluster_destroy(f->mc);
    if (f->mock_rk)
        rd_kafka_destroy(f->mock_rk);
    free(f);
    return 0;
}

static dlb_agent_t *open_agent(const char *brokers, const char *uid, const char *const *kv)
{
    dlb_agent_conf_t *c = dlb_agent_conf_new();
    char err[512];
    dlb_agent_t *a;

    assert_non_null(c);
    assert_int_equal(dlb_agent_conf_set(c, "brokers", brokers, err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, "env", ENV, err, sizeof(err)), 0);
    for (; kv && *kv; kv += 2)
        assert_int_equal(dlb_agent_conf_set(c, kv[0], kv[1], err, sizeof(err)), 0);
    if (getenv("DLB_TEST_VERBOSE")) {
        assert_int_equal(dlb_agent_conf_set(c, "agent.log.level", "7", err, sizeof(err)), 0);
        assert_int_equal(
            dlb_agent_conf_set(c, "debug", getenv("DLB_TEST_VERBOSE"), err, sizeof(err)), 0);
    }
    dlb_agent_conf_set_log_cb(c, log_cb, NULL);
    a = dlb_agent_open(c, uid, err, sizeof(err));
    if (!a)
        fail_msg("open: %s", err);
    dlb_agent_conf_destroy(c);
    return a;
}

static void stats(dlb_agent_t *a, dlb_agent_stats_t *st)
{
    assert_int_equal(dlb_agent_stats(a, st, sizeof(*st)), 0);
}

static void test_conf_errors(void **state)
{
    dlb_agent_conf_t *c = dlb_agent_conf_new();
    char err[512];
    (void)state;

    assert_non_null(c);
    assert_int_equal(dlb_agent_conf_set(c, "agent.queue.max.messages", "lots", err, sizeof(err)),
                     DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "agent.queue.max.messages"));
    assert_int_equal(dlb_agent_conf_set(c, "agent.plans.max", "0", err, sizeof(err)),
                     DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "agent.plans.max"));
    assert_int_equal(dlb_agent_conf_set(c, "agent.bogus", "1", err, sizeof(err)),
                     DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "agent.bogus"));
    assert_int_equal(dlb_agent_conf_set(c, "no.such.property", "1", err, sizeof(err)),
                     DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "no.such.property"));
    /* A bad librdkafka value is refused without repeating it (it may be a secret). */
    assert_int_equal(dlb_agent_conf_set(c, "acks", "s3cr3t", err, sizeof(err)), DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "acks"));
    assert_null(strstr(err, "s3cr3t"));
    assert_int_equal(dlb_agent_conf_set(c, "env", "bad/env", err, sizeof(err)), DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "env"));
    assert_int_equal(dlb_agent_conf_set(c, NULL, "1", err, sizeof(err)), DLB_AGENT_ERR_INVALID);
    assert_int_equal(dlb_agent_conf_set(c, "sasl.password", "s3cr3t", err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, "agent.log.level", "7", err, sizeof(err)), 0);
    assert_null(dlb_agent_open(c, "", err, sizeof(err)));
    assert_non_null(strstr(err, "job_uid"));
    dlb_agent_conf_destroy(c);
    assert_true(strlen(dlb_agent_version()) > 0);
    assert_int_equal(dlb_agent_abi_version(), DLB_AGENT_ABI_VERSION);
    assert_non_null(strstr(dlb_agent_err2str(DLB_AGENT_ERR_QUEUE_FULL), "queue"));
}

static void test_invalid_reports(void **state)
{
    fixture_t *f = *state;
    const char *kv[] = {"agent.log.interval.ms", "0", NULL}; /* every line, not throttled */
    dlb_agent_t *a = open_agent(f->brokers, "job-invalid", kv);
    char longname[300];
    dlb_agent_meta_t meta = {.name = longname};
    dlb_agent_job_t job = {.meta = &meta};
    dlb_agent_pod_usage_t pod = {.name = "w-0", .type = "driver"};
    dlb_agent_sample_t sample = {.pods = &pod, .pods_cnt = 1};
    dlb_agent_stats_t st;

    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(dlb_agent_report_job(a, &job), DLB_AGENT_ERR_INVALID);
    assert_int_equal(logs_matching("meta.name"), 1);
    assert_int_equal(dlb_agent_report_sample(a, &sample), DLB_AGENT_ERR_INVALID);
    assert_int_equal(logs_matching("pods[0].type"), 1);
    assert_int_equal(dlb_agent_request_plan(a, "job_stage_lunch", NULL, NULL, 0),
                     DLB_AGENT_ERR_INVALID);
    assert_int_equal(dlb_agent_report_job(a, NULL), DLB_AGENT_ERR_INVALID);
    stats(a, &st);
    assert_int_equal(st.invalid, 3);
    assert_int_equal(st.reported, 0);
    assert_int_equal(dlb_agent_close(a, 1000), 0);
}

/* Nothing listens on the broker address: every report stays queued. */
static void test_queue_full(void **state)
{
    const char *kv[] = {"agent.queue.max.messages", "5", "message.timeout.ms", "60000", NULL};
    dlb_agent_t *a;
    dlb_agent_sample_t sample = {.global_step = 1, .speed = 1};
    dlb_agent_stats_t st;
    int64_t t0;
    int ok = 0, full = 0;
    (void)state;

    nlogs = 0;
    a = open_agent("127.0.0.1:1", "job-full", kv);
    t0 = dlb_clock_mono_ms();
    for (int i = 0; i < 100; i++) {
        int rc = dlb_agent_report_sample(a, &sample);

        ok += rc == 0;
        full += rc == DLB_AGENT_ERR_QUEUE_FULL;
    }
    /* 100 calls, none waiting for room: well under a second even under ASan. */
    assert_true(dlb_clock_mono_ms() - t0 < 1000);
    assert_int_equal(ok, 5);
    assert_int_equal(full, 95);
    stats(a, &st);
    assert_int_equal(st.dropped, 95);
    assert_int_equal(st.queued, 5);
    /* Logged once per agent.log.interval.ms (10 s), not 95 times. */
    assert_int_equal(logs_matching("queue full"), 1);
    assert_int_equal(dlb_agent_flush(a, 100), DLB_AGENT_ERR_TIMEOUT);
    assert_int_equal(dlb_agent_close(a, 100), DLB_AGENT_ERR_TIMEOUT);
    assert_int_equal(logs_matching("not delivered"), 1);
    assert_int_equal(logs_matching("94 more like: queue full"), 1);
}

/* ---- request order ---- */
typedef struct tapped {
    char topic[64];
    uint64_t acked_before; /* delivery reports when the message was produced */
} tapped_t;

static tapped_t taps[64];
static int ntaps;
static dlb_agent_t *tap_agent;

/* Runs under the agent's lock: reads its counters directly. */
static void tap(const char *topic, const char *key, const void *buf, size_t len, void *opaque)
{
    (void)key;
    (void)buf;
    (void)len;
    (void)opaque;
    if (ntaps < 64) {
        snprintf(taps[ntaps].topic, sizeof(taps[0].topic), "%s", topic);
        taps[ntaps++].acked_before = tap_agent->acked;
    }
}

/* An OOM request names its pod in oom_pod and, for plan_request v2
 * readers, as the one item of oom_pods. */
static void test_request_oom_pods(void **state)
{
    dlb_event_t ev;
    char err[256] = "";

    (void)state;
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(agent_event_request(DLB_AGENT_STAGE_RUNNING, "w-1", &ev, err, sizeof(err)), 0);
    assert_int_equal(ev.u.req.has_oom_pod, 1);
    assert_string_equal(ev.u.req.oom_pod, "w-1");
    assert_int_equal(ev.u.req.oom_pods_cnt, 1);
    assert_string_equal(ev.u.req.oom_pods[0], "w-1");
    dlb_event_clear(&ev);
    assert_int_equal(agent_event_request(DLB_AGENT_STAGE_CREATE, NULL, &ev, err, sizeof(err)), 0);
    assert_int_equal(ev.u.req.has_oom_pod, 0);
    assert_int_equal(ev.u.req.oom_pods_cnt, 0);
    dlb_event_clear(&ev);
}

static void test_request_order(void **state)
{
    fixture_t *f = *state;
    dlb_agent_t *a;
    dlb_agent_sample_t sample = {.global_step = 1, .speed = 1};
    dlb_agent_node_event_t node = {.kind = "oom_killed", .pod_name = "w-1", .pod_type = "worker"};
    dlb_agent_stats_t st;
    char id[DLB_AGENT_ID_MAX];

    if (!f->mc)
        skip();
    /* Every answer of the broker takes 300 ms: the request must wait for them. */
    rd_kafka_mock_broker_set_rtt(f->mc, 1, 300);
    a = open_agent(f->brokers, "job-order", NULL);
    tap_agent = a;
    ntaps = 0;
    agent_set_tap(a, tap, NULL);
    for (int i = 0; i < 5; i++)
        assert_int_equal(dlb_agent_report_sample(a, &sample), 0);
    assert_int_equal(dlb_agent_report_node(a, &node), 0);
    assert_int_equal(dlb_agent_request_plan(a, DLB_AGENT_STAGE_RUNNING, "w-1", id, sizeof(id)), 0);
    assert_non_null(strstr(id, "job-order-"));
    stats(a, &st);
    assert_int_equal(st.requests_waiting, 1);
    assert_int_equal(st.reported, 7);
    assert_int_equal(dlb_agent_flush(a, 10000), 0);
    stats(a, &st);
    assert_int_equal(st.sent, 7);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.requests_waiting, 0);
    assert_int_equal(ntaps, 7);
    assert_string_equal(taps[6].topic, ENV ".plan-requests");
    assert_int_equal(taps[6].acked_before, 6);
    /* A second request goes at once: nothing is in flight. */
    assert_int_equal(dlb_agent_request_plan(a, DLB_AGENT_STAGE_RUNNING, NULL, NULL, 0), 0);
    stats(a, &st);
    assert_int_equal(st.requests_waiting, 0);
    rd_kafka_mock_broker_set_rtt(f->mc, 1, 0);
    assert_int_equal(dlb_agent_close(a, 10000), 0);
}

/* ---- plans ---- */
static rd_kafka_t *txn_producer(const char *brokers)
{
    rd_kafka_conf_t *kc = rd_kafka_conf_new();
    char err[512];
    rd_kafka_t *rk;

    rd_kafka_conf_set(kc, "bootstrap.servers", brokers, NULL, 0);
    rd_kafka_conf_set(kc, "transactional.id", "agent-test-optimizer", NULL, 0);
    rd_kafka_conf_set(kc, "log_level", "3", NULL, 0);
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
    assert_non_null(rk);
    assert_null(rd_kafka_init_transactions(rk, 30000));
    return rk;
}

static void produce_plan(rd_kafka_t *rk, const dlb_catalog_t *cat, const char *uid,
                         const char *plan_id)
{
    dlb_event_t ev = {0};
    dlb_plan_t *p = &ev.u.plan;
    char err[512];
    void *buf;
    size_t len;

    ev.type = DLB_EV_PLAN;
    snprintf(p->event_id, sizeof(p->event_id), "%s", plan_id);
    snprintf(p->plan_id, sizeof(p->plan_id), "%s", plan_id);
    snprintf(p->job_uid, sizeof(p->job_uid), "%s", uid);
    snprintf(p->stage, sizeof(p->stage), DLB_STAGE_RUNNING);
    snprintf(p->optimizer, sizeof(p->optimizer), "test");
    snprintf(p->trigger_event_id, sizeof(p->trigger_event_id), "req-%s", plan_id);
    p->event_time_ms = 1;
    assert_non_null(dlb_plan_add_group(p, "worker"));
    p->groups[0].count = 3;
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), 0);
    assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(ENV ".plans"),
                                       RD_KAFKA_V_KEY(uid, strlen(uid)), RD_KAFKA_V_VALUE(buf, len),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                     0);
    free(buf);
    dlb_event_clear(&ev);
}

/* Subscribed, and its start offset fixed: a request waits for that, and a
 * flush for the request. */
static dlb_agent_t *subscribed(const fixture_t *f, const char *uid, dlb_agent_plan_cb cb,
                               void *opaque)
{
    dlb_agent_t *a = open_agent(f->brokers, uid, NULL);

    assert_int_equal(dlb_agent_subscribe_plans(a, cb, opaque), 0);
    assert_int_equal(dlb_agent_subscribe_plans(a, cb, opaque), DLB_AGENT_ERR_STATE);
    assert_int_equal(dlb_agent_request_plan(a, DLB_AGENT_STAGE_CREATE, NULL, NULL, 0), 0);
    assert_int_equal(dlb_agent_flush(a, 20000), 0);
    return a;
}

static void test_poll_plans(void **state)
{
    fixture_t *f = *state;
    const char *uid = "job-poll";
    dlb_catalog_t *cat;
    dlb_agent_plan_t *plan;
    dlb_agent_stats_t st;
    rd_kafka_t *rk;
    dlb_agent_t *a;
    char err[512];

    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    a = open_agent(f->brokers, uid, NULL);
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 0), DLB_AGENT_ERR_STATE);
    dlb_agent_close(a, 1000);
    a = subscribed(f, uid, NULL, NULL);
    rk = txn_producer(f->brokers);
    assert_null(rd_kafka_begin_transaction(rk));
    produce_plan(rk, cat, uid, "plan-1");
    produce_plan(rk, cat, "job-other", "plan-x"); /* another job's */
    produce_plan(rk, cat, uid, "plan-1");         /* a redelivery */
    produce_plan(rk, cat, uid, "plan-2");
    assert_null(rd_kafka_commit_transaction(rk, 30000));
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 20000), 1);
    assert_string_equal(plan->plan_id, "plan-1");
    assert_string_equal(plan->job_uid, uid);
    assert_string_equal(plan->request_id, "req-plan-1");
    assert_int_equal(plan->groups_cnt, 1);
    assert_string_equal(plan->groups[0].group, "worker");
    assert_int_equal(plan->groups[0].count, 3);
    dlb_agent_plan_destroy(plan);
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 20000), 1);
    assert_string_equal(plan->plan_id, "plan-2");
    dlb_agent_plan_destroy(plan);
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 500), 0);
    assert_null(plan);
    stats(a, &st);
    assert_int_equal(st.plans_received, 2);
    rd_kafka_destroy(rk);
    dlb_catalog_destroy(cat);
    assert_int_equal(dlb_agent_close(a, 10000), 0);
}

/* Needs a broker that implements transactions (DLB_TEST_BROKERS). */
static void test_aborted_plan(void **state)
{
    fixture_t *f = *state;
    const char *uid = "job-aborted";
    dlb_catalog_t *cat;
    dlb_agent_plan_t *plan;
    rd_kafka_t *rk;
    dlb_agent_t *a;
    char err[512];

    if (f->mc)
        skip();
    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    a = subscribed(f, uid, NULL, NULL);
    rk = txn_producer(f->brokers);
    assert_null(rd_kafka_begin_transaction(rk));
    produce_plan(rk, cat, uid, "plan-aborted");
    /* Written to the log first: an abort would otherwise just purge it unsent. */
    assert_int_equal(rd_kafka_flush(rk, 30000), 0);
    assert_null(rd_kafka_abort_transaction(rk, 30000));
    assert_null(rd_kafka_begin_transaction(rk));
    produce_plan(rk, cat, uid, "plan-committed");
    assert_null(rd_kafka_commit_transaction(rk, 30000));
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 20000), 1);
    assert_string_equal(plan->plan_id, "plan-committed");
    dlb_agent_plan_destroy(plan);
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 1000), 0);
    rd_kafka_destroy(rk);
    dlb_catalog_destroy(cat);
    assert_int_equal(dlb_agent_close(a, 10000), 0);
}

typedef struct got {
    pthread_mutex_t lock;
    char ids[8][DLB_AGENT_ID_MAX];
    int n;
} got_t;

static void on_plan(const dlb_agent_plan_t *plan, void *opaque)
{
    got_t *g = opaque;

    pthread_mutex_lock(&g->lock);
    if (g->n < 8)
        snprintf(g->ids[g->n++], DLB_AGENT_ID_MAX, "%s", plan->plan_id);
    pthread_mutex_unlock(&g->lock);
}

static void test_callback_plans(void **state)
{
    fixture_t *f = *state;
    const char *uid = "job-callback";
    got_t g = {.lock = PTHREAD_MUTEX_INITIALIZER};
    dlb_catalog_t *cat;
    rd_kafka_t *rk;
    dlb_agent_plan_t *plan;
    dlb_agent_t *a;
    char err[512];
    int n = 0;

    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    a = subscribed(f, uid, on_plan, &g);
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 0), DLB_AGENT_ERR_STATE);
    rk = txn_producer(f->brokers);
    assert_null(rd_kafka_begin_transaction(rk));
    produce_plan(rk, cat, uid, "plan-cb");
    produce_plan(rk, cat, uid, "plan-cb");
    assert_null(rd_kafka_commit_transaction(rk, 30000));
    for (int i = 0; i < 200 && !n; i++) {
        usleep(50 * 1000);
        pthread_mutex_lock(&g.lock);
        n = g.n;
        pthread_mutex_unlock(&g.lock);
    }
    usleep(300 * 1000); /* the duplicate would come now */
    assert_int_equal(g.n, 1);
    assert_string_equal(g.ids[0], "plan-cb");
    rd_kafka_destroy(rk);
    dlb_catalog_destroy(cat);
    assert_int_equal(dlb_agent_close(a, 10000), 0);
}

/* ---- schema.registry.url -------------------------------------------------
 * dlbrain's registry endpoint (pipeline/schemareg) serving env ENV: it holds
 * every schema under the catalog's ids and refuses registrations (read-only),
 * so an agent of ENV binds by lookup and one of another env is refused. */
typedef struct sr_server {
    dlb_catalog_t *cat;
    dlb_schemareg_t *reg;
    dlb_schemareg_server_t *srv;
    int port;
    char url[64];
} sr_server_t;

static void sr_start(sr_server_t *s, int port)
{
    static const char *const envs[] = {ENV};
    char err[256];
    int rc = -1;

    if (!s->reg) {
        assert_int_equal(dlb_catalog_new(&s->cat, err, sizeof(err)), 0);
        assert_int_equal(dlb_schemareg_new(&s->reg, s->cat, err, sizeof(err)), 0);
        assert_int_equal(dlb_schemareg_set_envs(s->reg, envs, 1, err, sizeof(err)), 0);
    }
    /* The same port again after a stop: the kernel may hold it a moment. */
    for (int i = 0; i < 50 && rc; i++) {
        if ((rc = dlb_schemareg_serve(s->reg, "127.0.0.1", port, &test_bounds, &s->srv, &s->port,
                                      err, sizeof(err))))
            usleep(100 * 1000);
    }
    if (rc)
        fail_msg("registry: %s", err);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
}

static void sr_stop(sr_server_t *s)
{
    dlb_schemareg_server_stop(s->srv);
    s->srv = NULL;
}

static void sr_destroy(sr_server_t *s)
{
    if (s->srv)
        sr_stop(s);
    dlb_schemareg_destroy(s->reg);
    dlb_catalog_destroy(s->cat);
}

static int32_t frame_id(const void *buf)
{
    const unsigned char *b = buf;
    return (int32_t)((uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4]);
}

static int32_t tapped_id;

static void tap_id(const char *topic, const char *key, const void *buf, size_t len, void *opaque)
{
    (void)topic;
    (void)key;
    (void)opaque;
    if (len >= 5)
        tapped_id = frame_id(buf);
}

/* Wait up to 10 s for a log line holding needle. */
static int wait_log(const char *needle)
{
    for (int i = 0; i < 200; i++) {
        if (logs_matching(needle))
            return 1;
        usleep(50 * 1000);
    }
    return 0;
}

/* A plan framed with another schema id than the catalog's. */
static void produce_plan_as(rd_kafka_t *rk, const dlb_catalog_t *cat, const char *uid,
                            const char *plan_id, int32_t id)
{
    dlb_event_t ev = {0};
    dlb_plan_t *p = &ev.u.plan;
    unsigned char *buf;
    size_t len;
    char err[512];

    ev.type = DLB_EV_PLAN;
    snprintf(p->event_id, sizeof(p->event_id), "%s", plan_id);
    snprintf(p->plan_id, sizeof(p->plan_id), "%s", plan_id);
    snprintf(p->job_uid, sizeof(p->job_uid), "%s", uid);
    snprintf(p->stage, sizeof(p->stage), DLB_STAGE_RUNNING);
    snprintf(p->optimizer, sizeof(p->optimizer), "test");
    p->event_time_ms = 1;
    assert_int_equal(dlb_codec_encode(cat, &ev, (void **)&buf, &len, err, sizeof(err)), 0);
    buf[1] = (unsigned char)((uint32_t)id >> 24);
    buf[2] = (unsigned char)((uint32_t)id >> 16);
    buf[3] = (unsigned char)((uint32_t)id >> 8);
    buf[4] = (unsigned char)id;
    assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(ENV ".plans"),
                                       RD_KAFKA_V_KEY(uid, strlen(uid)), RD_KAFKA_V_VALUE(buf, len),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                     0);
    free(buf);
    dlb_event_clear(&ev);
}

/* Bound at open: each schema found under ENV.<topic>-value, reports framed
 * with the id the registry holds for it, plans read with those ids. While
 * the registry is down, a plan of an id the agent does not know is read
 * again, not skipped; once it answers (not one of dlbrain's schemas), the
 * plan is skipped with the reason and the next one comes. */
static void test_registry(void **state)
{
    const char *const kv[] = {"agent.log.interval.ms", "0", NULL};
    fixture_t *f = *state;
    const char *uid = "job-registry";
    sr_server_t s = {0};
    dlb_sr_conf_t sc = {.timeout_ms = 2000};
    dlb_agent_sample_t sample = {.global_step = 1, .speed = 1};
    dlb_agent_conf_t *c;
    dlb_srclient_t *cl;
    dlb_catalog_t *cat;
    dlb_agent_plan_t *plan;
    dlb_agent_t *a;
    rd_kafka_t *rk;
    char err[1024];
    int32_t id = 0;
    int version = 0;

    sr_start(&s, 0);
    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    c = dlb_agent_conf_new();
    assert_non_null(c);
    assert_int_equal(dlb_agent_conf_set(c, "brokers", f->brokers, err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, "env", ENV, err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, kv[0], kv[1], err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, "schema.registry.url", s.url, err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, "schema.registry.timeout.ms", "2000", err, sizeof(err)),
                     0);
    dlb_agent_conf_set_log_cb(c, log_cb, NULL);
    a = dlb_agent_open(c, uid, err, sizeof(err));
    if (!a)
        fail_msg("open: %s", err);
    dlb_agent_conf_destroy(c);
    assert_int_equal(
        logs_matching("dlbrain's schemas found or registered under " ENV ".<topic>-value"), 1);

    /* A report carries the id the registry gives its schema under its subject. */
    snprintf(sc.url, sizeof(sc.url), "%s", s.url);
    assert_int_equal(dlb_srclient_new(&cl, &sc, err, sizeof(err)), 0);
    assert_int_equal(dlb_srclient_lookup(cl, ENV ".metrics-value",
                                         dlb_catalog_latest(cat, DLB_EV_RUNTIME)->json, &id,
                                         &version, err, sizeof(err)),
                     0);
    dlb_srclient_destroy(cl);
    agent_set_tap(a, tap_id, NULL);
    assert_int_equal(dlb_agent_report_sample(a, &sample), 0);
    assert_int_equal(tapped_id, id);

    /* Plans framed with the registry's ids are read as before. */
    assert_int_equal(dlb_agent_subscribe_plans(a, NULL, NULL), 0);
    assert_int_equal(dlb_agent_request_plan(a, DLB_AGENT_STAGE_CREATE, NULL, NULL, 0), 0);
    assert_int_equal(dlb_agent_flush(a, 20000), 0);
    rk = txn_producer(f->brokers);
    assert_null(rd_kafka_begin_transaction(rk));
    produce_plan(rk, cat, uid, "plan-sr-1");
    assert_null(rd_kafka_commit_transaction(rk, 30000));
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 20000), 1);
    assert_string_equal(plan->plan_id, "plan-sr-1");
    dlb_agent_plan_destroy(plan);

    /* The registry goes down; a plan of id 99, which the agent never met. */
    sr_stop(&s);
    assert_null(rd_kafka_begin_transaction(rk));
    produce_plan_as(rk, cat, uid, "plan-sr-99", 99);
    produce_plan(rk, cat, uid, "plan-sr-2");
    assert_null(rd_kafka_commit_transaction(rk, 30000));
    assert_true(
        wait_log("read again in 1000 ms: schema id 99: the schema registry did not answer"));
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 1500), 0); /* plan-sr-2 waits behind it */
    /* It comes back on the same port: id 99 is none of dlbrain's schemas. */
    sr_start(&s, s.port);
    assert_int_equal(dlb_agent_poll_plan(a, &plan, 20000), 1);
    assert_string_equal(plan->plan_id, "plan-sr-2");
    dlb_agent_plan_destroy(plan);
    assert_int_equal(logs_matching("skipped: schema id 99 is not one of dlbrain's schemas in the "
                                   "schema registry"),
                     1);
    rd_kafka_destroy(rk);
    assert_int_equal(dlb_agent_close(a, 10000), 0);
    dlb_catalog_destroy(cat);
    sr_destroy(&s);
}

/* A plan framed with an id another tool registered plan v2 under (1008, the
 * alias registry of 16-agent.sh): fetched from the registry, found to be
 * dlbrain's, delivered; the script checks it was asked for once. */
static void test_registry_alias(void **state)
{
    const char *url = getenv("DLB_TEST_SR_ALIAS_URL");
    fixture_t *f = *state;
    const char *uid = "job-registry-alias";
    const char *kv[] = {"schema.registry.url", url, NULL};
    dlb_catalog_t *cat;
    dlb_agent_plan_t *plan;
    dlb_agent_t *a;
    rd_kafka_t *rk;
    char err[512];

    if (!url || !*url)
        skip();
    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    assert_int_equal(dlb_catalog_latest(cat, DLB_EV_PLAN)->id, 8);
    a = open_agent(f->brokers, uid, kv);
    assert_int_equal(dlb_agent_subscribe_plans(a, NULL, NULL), 0);
    assert_int_equal(dlb_agent_request_plan(a, DLB_AGENT_STAGE_CREATE, NULL, NULL, 0), 0);
    assert_int_equal(dlb_agent_flush(a, 20000), 0);
    rk = txn_producer(f->brokers);
    assert_null(rd_kafka_begin_transaction(rk));
    produce_plan_as(rk, cat, uid, "plan-alias-1", 1008);
    produce_plan_as(rk, cat, uid, "plan-alias-2", 1008);
    assert_null(rd_kafka_commit_transaction(rk, 30000));
    for (int i = 1; i <= 2; i++) {
        char want[32];

        snprintf(want, sizeof(want), "plan-alias-%d", i);
        assert_int_equal(dlb_agent_poll_plan(a, &plan, 20000), 1);
        assert_string_equal(plan->plan_id, want);
        assert_string_equal(plan->job_uid, uid);
        dlb_agent_plan_destroy(plan);
    }
    rd_kafka_destroy(rk);
    assert_int_equal(dlb_agent_close(a, 10000), 0);
    dlb_catalog_destroy(cat);
}

/* What stops an agent from opening: a subject the registry refuses (named
 * with the version and the registry's reason), no registry there, a bad URL,
 * a credentials file that cannot be read; secrets never repeated. */
static void test_registry_refused(void **state)
{
    sr_server_t s = {0};
    dlb_agent_conf_t *c;
    char err[1024], url[64];

    (void)state;
    sr_start(&s, 0);
    c = dlb_agent_conf_new();
    assert_non_null(c);
    assert_int_equal(dlb_agent_conf_set(c, "brokers", "127.0.0.1:1", err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, "env", "nope", err, sizeof(err)), 0);
    assert_int_equal(dlb_agent_conf_set(c, "schema.registry.url", s.url, err, sizeof(err)), 0);
    assert_null(dlb_agent_open(c, "job-refused", err, sizeof(err)));
    assert_non_null(strstr(err, "subject nope.job-events-value, version 1 (job_event.avsc)"));
    assert_non_null(strstr(err, "read-only"));
    assert_non_null(strstr(err, "; agent not started"));
    /* nobody there */
    sr_stop(&s);
    assert_null(dlb_agent_open(c, "job-refused", err, sizeof(err)));
    assert_non_null(strstr(err, "agent not started"));
    assert_non_null(strstr(err, s.url));
    /* settings */
    assert_int_equal(dlb_agent_conf_set(c, "schema.registry.url", "ftp://x", err, sizeof(err)),
                     DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "schema.registry.url"));
    assert_int_equal(dlb_agent_conf_set(c, "schema.registry.timeout.ms", "5", err, sizeof(err)),
                     DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "schema.registry.timeout.ms"));
    assert_int_equal(
        dlb_agent_conf_set(c, "schema.registry.basic.auth.user.info", "u:s3cr3t", err, sizeof(err)),
        0);
    assert_int_equal(dlb_agent_conf_set(c, "schema.registry.basic.auth.user.info.file",
                                        "/nonexistent/sr-user-info", err, sizeof(err)),
                     DLB_AGENT_ERR_CONF);
    assert_non_null(strstr(err, "/nonexistent/sr-user-info"));
    assert_null(strstr(err, "s3cr3t"));
    dlb_agent_conf_destroy(c);
    /* from the environment: a bad one is refused at open, naming the variable */
    snprintf(url, sizeof(url), "%s", s.url);
    setenv("DLBRAIN_SCHEMA_REGISTRY_URL", url, 1);
    setenv("DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE", "/nonexistent/sr-user-info", 1);
    c = dlb_agent_conf_new();
    assert_non_null(c);
    assert_null(dlb_agent_open(c, "job-refused", err, sizeof(err)));
    assert_non_null(strstr(err, "environment DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE: "));
    unsetenv("DLBRAIN_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE");
    unsetenv("DLBRAIN_SCHEMA_REGISTRY_URL");
    dlb_agent_conf_destroy(c);
    sr_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_errors),
        cmocka_unit_test_setup_teardown(test_invalid_reports, setup, teardown),
        cmocka_unit_test(test_queue_full),
        cmocka_unit_test(test_request_oom_pods),
        cmocka_unit_test_setup_teardown(test_request_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aborted_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_registry, setup, teardown),
        cmocka_unit_test(test_registry_refused),
        cmocka_unit_test_setup_teardown(test_registry_alias, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
