/* Simulator determinism: the same workload, seed and options give the same
 * event stream byte for byte (encoded Avro), in a pool and on nodes; another
 * seed gives another;
 * every event validates; a plan raising an OOM'd pod's memory is applied
 * and counted, none (the baseline) leaves repeated OOMs. The master's order
 * of requests, its OOM rules (nothing asked at 64 GiB) and PS migrations
 * (no check until the new pod runs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "encoded_buf.h"

#include "catalog.h"
#include "codec.h"
#include "conf.h"
#include "err.h"
#include "optimizer.h"
#include "sim_run.h"
#include "opt_plan.h"

typedef struct stream {
    dlb_catalog_t *cat;
    unsigned char *buf;
    size_t len, cap;
    long invalid;
} stream_t;

static int publish(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    stream_t *s = opaque;
    char why[256];
    int err;

    if (dlb_event_validate(ev, why, sizeof(why))) {
        print_message("invalid event %s: %s\n", dlb_event_id(ev), why);
        s->invalid++;
    }
    if ((err = encoded_append(s->cat, ev, &s->buf, &s->len, &s->cap, errstr, errstr_size)))
        return err;
    return 0;
}

/* An optimizer that only answers OOMs: the pod gets 64 GiB; the worker
 * group too at the master's ask after a worker OOM, which names no pod
 * (DLRover's _adjust_oom_worker_resource once the first check was made). */
static int oom_exchange(void *opaque, const dlb_plan_request_t *reqs, size_t n, dlb_plan_t *plans,
                        char *errstr, size_t errstr_size)
{
    (void)opaque;
    (void)errstr;
    (void)errstr_size;
    for (size_t i = 0; i < n; i++) {
        dlb_pod_resource_t *p;

        dlb_plan_id(&reqs[i], plans[i].plan_id, sizeof(plans[i].plan_id));
        snprintf(plans[i].trigger_event_id, sizeof(plans[i].trigger_event_id), "%s",
                 reqs[i].event_id);
        if (!reqs[i].has_oom_pod) {
            const char *phase = dlb_plan_request_config(&reqs[i], DLB_CONFIG_WORKER_PHASE);
            dlb_group_resource_t *g;

            if (strcmp(reqs[i].stage, DLB_STAGE_WORKER_INITIAL) || !phase ||
                strcmp(phase, "initial"))
                continue;
            if (!(g = dlb_plan_add_group(&plans[i], "worker")))
                return DLB_ERR_NOMEM;
            g->resource.memory = 64 * DLB_GIB;
            continue;
        }
        if (!(p = dlb_plan_add_pod(&plans[i], reqs[i].oom_pod)))
            return DLB_ERR_NOMEM;
        p->resource.memory = 64 * DLB_GIB;
    }
    return 0;
}

static dlb_sim_workload_t wl;

static int setup(void **state)
{
    const char *src = getenv("DLB_SOURCE_DIR");
    char path[4096], errstr[256];

    (void)state;
    snprintf(path, sizeof(path), "%s/data/pollux/workloads/workload-4.csv", src ? src : ".");
    return dlb_sim_workload_load(path, 30, &wl, errstr, sizeof(errstr));
}

static int teardown(void **state)
{
    (void)state;
    dlb_sim_workload_free(&wl);
    return 0;
}

/* 16 nodes of two shapes, 1,024 cores in all, as --cluster-nodes gives them. */
static dlb_sim_node_t nodes[16];

static void nodes_init(void)
{
    for (int i = 0; i < 16; i++) {
        memset(&nodes[i], 0, sizeof(nodes[i]));
        snprintf(nodes[i].name, sizeof(nodes[i].name), "det-%04d", i);
        nodes[i].cpu_m = i < 8 ? 96000 : 32000;
        nodes[i].memory = (i < 8 ? 384 : 256) * DLB_GIB;
    }
}

static void run_on(uint64_t seed, int plans, int on_nodes, stream_t *s, dlb_sim_summary_t *sum)
{
    dlb_sim_opts_t o;
    dlb_sim_io_t io = {.publish = publish, .exchange = plans ? oom_exchange : NULL, .opaque = s};
    char errstr[512];

    memset(s, 0, sizeof(*s));
    assert_int_equal(dlb_catalog_new(&s->cat, errstr, sizeof(errstr)), 0);
    dlb_sim_opts_init(&o);
    o.wl = &wl;
    o.seed = seed;
    o.params.time_scale = 0.1;
    if (on_nodes) {
        nodes_init();
        o.nodes = nodes;
        o.nodes_cnt = 16;
    }
    if (dlb_sim_run(&o, &io, sum, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    dlb_catalog_destroy(s->cat);
    assert_int_equal(s->invalid, 0);
    assert_int_equal(sum->jobs, 30);
    assert_int_equal(sum->unfinished, 0);
    assert_int_equal(sum->succeeded + sum->failed, 30);
}

static void run(uint64_t seed, int plans, stream_t *s, dlb_sim_summary_t *sum)
{
    run_on(seed, plans, 0, s, sum);
}

static void test_same_seed_same_bytes(void **state)
{
    stream_t a, b, c;
    dlb_sim_summary_t sa, sb, sc;

    (void)state;
    assert_true(wl.n > 0);
    run(1, 0, &a, &sa);
    run(1, 0, &b, &sb);
    run(2, 0, &c, &sc);
    assert_true(a.len > 100000);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.buf, b.buf, a.len);
    assert_int_equal(sa.events, sb.events);
    assert_int_equal(sa.virtual_ms, sb.virtual_ms);
    assert_true(c.len != a.len || memcmp(a.buf, c.buf, a.len) != 0);
    /* The baseline applies nothing; OOMs repeat until jobs fail. */
    assert_int_equal(sa.plans_applied, 0);
    assert_true(sa.ooms > 0);
    free(a.buf);
    free(b.buf);
    free(c.buf);
}

/* On nodes: the same seed gives the same bytes; the placement (node names,
 * start times) makes them differ from the pool's. */
static void test_same_seed_same_bytes_on_nodes(void **state)
{
    stream_t a, b, pool;
    dlb_sim_summary_t sa, sb, sp;

    (void)state;
    run_on(1, 1, 1, &a, &sa);
    run_on(1, 1, 1, &b, &sb);
    run_on(1, 1, 0, &pool, &sp);
    assert_int_equal(sa.nodes, 16);
    assert_true(a.len > 100000);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.buf, b.buf, a.len);
    assert_true(sa.plans_applied > 0);
    assert_int_equal(sa.plans_applied, sb.plans_applied);
    assert_true(pool.len != a.len || memcmp(a.buf, pool.buf, a.len) != 0);
    free(a.buf);
    free(b.buf);
    free(pool.buf);
}

static void test_oom_plans_applied(void **state)
{
    stream_t a, b;
    dlb_sim_summary_t base, fixed;

    (void)state;
    assert_true(wl.n > 0);
    run(1, 0, &a, &base);
    run(1, 1, &b, &fixed);
    assert_true(fixed.plans_applied > 0);
    assert_int_equal(fixed.plans_received, fixed.plan_requests);
    assert_true(fixed.oom_answered > 0);
    /* Every OOM answered with 64 GiB: no pod OOMs twice, no job fails of OOM. */
    assert_int_equal(fixed.oom_answered, fixed.ooms);
    assert_true(fixed.ooms < base.ooms);
    assert_true(fixed.failed <= base.failed);
    free(a.buf);
    free(b.buf);
}

/* ---- the master's requests (DLRover 0.6.1's order) ------------------------ */

typedef struct asks {
    char line[64][96];
    int n;
} asks_t;

/* Every plan request of job 0 as "<s since start> <stage> <phase> <oom pod>". */
static int record(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    asks_t *a = opaque;
    const dlb_plan_request_t *r = &ev->u.req;
    const char *phase;

    (void)errstr;
    (void)errstr_size;
    if (ev->type != DLB_EV_PLAN_REQUEST || strncmp(r->job_uid, "ps-job-", 7) || a->n >= 64)
        return 0;
    phase = dlb_plan_request_config(r, DLB_CONFIG_WORKER_PHASE);
    snprintf(a->line[a->n++], sizeof(a->line[0]), "%lld %s %s %s",
             (long long)((r->event_time_ms - DLB_SIM_START_MS) / 1000), r->stage,
             phase ? phase : "-", r->has_oom_pod ? "oom" : "-");
    return 0;
}

/* The Brain of this test: a plan (a PS group that changes nothing) for
 * job_stage_ps_initial, no plan for anything else. */
static int ps_exchange(void *opaque, const dlb_plan_request_t *reqs, size_t n, dlb_plan_t *plans,
                       char *errstr, size_t errstr_size)
{
    (void)opaque;
    (void)errstr;
    (void)errstr_size;
    for (size_t i = 0; i < n; i++) {
        dlb_plan_id(&reqs[i], plans[i].plan_id, sizeof(plans[i].plan_id));
        snprintf(plans[i].trigger_event_id, sizeof(plans[i].trigger_event_id), "%s",
                 reqs[i].event_id);
        if (!strcmp(reqs[i].stage, DLB_STAGE_PS_INITIAL) && !dlb_plan_add_group(&plans[i], "ps"))
            return DLB_ERR_NOMEM;
    }
    return 0;
}

static void run_master(int plans, asks_t *a)
{
    char path[] = "/tmp/dlb-test-sim-XXXXXX", errstr[512];
    dlb_sim_workload_t w = {0};
    dlb_sim_opts_t o;
    dlb_sim_summary_t sum;
    dlb_sim_io_t io = {.publish = record, .exchange = plans ? ps_exchange : NULL, .opaque = a};
    int fd = mkstemp(path);
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;

    assert_non_null(fp);
    /* A cifar10 job of about 25 min, no OOM with seed 1. */
    fputs("arrival_s,name,model,dataset_size,epochs,batch_size,workers\n"
          "0,ps-job,cifar10,50000,40,512,4\n",
          fp);
    fclose(fp);
    assert_int_equal(dlb_sim_workload_load(path, 0, &w, errstr, sizeof(errstr)), 0);
    unlink(path);
    memset(a, 0, sizeof(*a));
    dlb_sim_opts_init(&o);
    o.wl = &w;
    if (dlb_sim_run(&o, &io, &sum, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    assert_int_equal(sum.ooms, 0);
    dlb_sim_workload_free(&w);
}

static void expect_asks(const asks_t *a, const char *const *want, int n)
{
    assert_true(a->n >= n);
    for (int i = 0; i < n; i++)
        assert_string_equal(a->line[i], want[i]);
}

static void test_master_order(void **state)
{
    /* With a plan for ps_initial: create at arrival; the first check once
     * the speed records span 60 s (samples at 30, 60, 90); worker_initial
     * (initial) first, ps_initial at the next check, then nothing for more
     * than 300 s after that plan; PS held for 3600 s after it, so the
     * workers are asked directly: the sample phase once, then stable, every
     * tick while no plan comes. */
    static const char *const with_ps_plan[] = {
        "0 job_stage_create - -",
        "90 job_stage_worker_initial initial -",
        "120 job_stage_ps_initial - -",
        "450 job_stage_worker_initial sample -",
        "480 job_stage_worker_running stable -",
        "510 job_stage_worker_running stable -",
    };
    /* Without any plan: ps_running every check, and the workers after it
     * in the same tick. */
    static const char *const no_plan[] = {
        "0 job_stage_create - -",
        "90 job_stage_worker_initial initial -",
        "120 job_stage_ps_initial - -",
        "150 job_stage_ps_running - -",
        "150 job_stage_worker_initial sample -",
        "180 job_stage_ps_running - -",
        "180 job_stage_worker_running stable -",
    };
    asks_t a;

    (void)state;
    run_master(1, &a);
    expect_asks(&a, with_ps_plan, 6);
    run_master(0, &a);
    expect_asks(&a, no_plan, 7);
}

/* ---- the master's OOM and migration rules --------------------------------- */

typedef struct happened {
    char line[256][300];
    int n;
} happened_t;

/* Requests, OOMs, migrations and ends, as "<s> <job> <what>". */
static int note(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    happened_t *h = opaque;
    int64_t t = (dlb_event_time_ms(ev) - DLB_SIM_START_MS) / 1000;
    char what[280] = "";

    (void)errstr;
    (void)errstr_size;
    if (ev->type == DLB_EV_PLAN_REQUEST)
        snprintf(what, sizeof(what), "%.40s ask %.40s %.60s", ev->u.req.job_uid, ev->u.req.stage,
                 ev->u.req.has_oom_pod ? ev->u.req.oom_pod : "-");
    else if (ev->type == DLB_EV_NODE && !strcmp(ev->u.node.kind, "oom_killed"))
        snprintf(what, sizeof(what), "%.60s oom %lld GiB", ev->u.node.pod_name,
                 (long long)(ev->u.node.memory_requested / DLB_GIB));
    else if (ev->type == DLB_EV_NODE && !strcmp(ev->u.node.reason, "Migrated"))
        snprintf(what, sizeof(what), "%.60s migrated", ev->u.node.pod_name);
    else if (ev->type == DLB_EV_JOB && ev->u.job.has_exit_reason)
        snprintf(what, sizeof(what), "%.40s %s %s", ev->u.job.job_uid, ev->u.job.state,
                 ev->u.job.exit_reason);
    if (what[0] && h->n < 256)
        snprintf(h->line[h->n++], sizeof(h->line[0]), "%lld %s", (long long)t, what);
    return 0;
}

/* The Brain of this test: 4-core pods for every job, 96 GiB workers for
 * "wide", 48 GiB for "huge"; 64 GiB for an OOM pod; at worker initial 64
 * GiB for wide's worker 1; at ps_initial a 16-core pod for mover's PS 0. */
static int rules_exchange(void *opaque, const dlb_plan_request_t *reqs, size_t n, dlb_plan_t *plans,
                          char *errstr, size_t errstr_size)
{
    (void)opaque;
    (void)errstr;
    (void)errstr_size;
    for (size_t i = 0; i < n; i++) {
        const dlb_plan_request_t *r = &reqs[i];
        const char *phase = dlb_plan_request_config(r, DLB_CONFIG_WORKER_PHASE);
        char pod[DLB_ID_MAX];
        dlb_group_resource_t *g;
        dlb_pod_resource_t *p = NULL;

        dlb_plan_id(r, plans[i].plan_id, sizeof(plans[i].plan_id));
        snprintf(plans[i].trigger_event_id, sizeof(plans[i].trigger_event_id), "%s", r->event_id);
        if (r->has_oom_pod) {
            if (!(p = dlb_plan_add_pod(&plans[i], r->oom_pod)))
                return DLB_ERR_NOMEM;
            p->resource.memory = 64 * DLB_GIB;
        } else if (!strcmp(r->stage, DLB_STAGE_CREATE)) {
            if (!(g = dlb_plan_add_group(&plans[i], "worker")))
                return DLB_ERR_NOMEM;
            g->resource.cpu = 4;
            g->resource.memory = !strncmp(r->job_uid, "wide-", 5)   ? 96 * DLB_GIB
                                 : !strncmp(r->job_uid, "huge-", 5) ? 48 * DLB_GIB
                                                                    : 8 * DLB_GIB;
            if (!(g = dlb_plan_add_group(&plans[i], "ps")))
                return DLB_ERR_NOMEM;
            g->resource.cpu = 4;
            g->resource.memory = 8 * DLB_GIB;
        } else if (!strncmp(r->job_uid, "wide-", 5) && phase && !strcmp(phase, "initial")) {
            snprintf(pod, sizeof(pod), "%.100s-worker-1", r->job_uid);
            if (!(p = dlb_plan_add_pod(&plans[i], pod)))
                return DLB_ERR_NOMEM;
            p->resource.memory = 64 * DLB_GIB;
        } else if (!strncmp(r->job_uid, "mover-", 6) && !strcmp(r->stage, DLB_STAGE_PS_INITIAL)) {
            snprintf(pod, sizeof(pod), "%.100s-ps-0", r->job_uid);
            if (!(p = dlb_plan_add_pod(&plans[i], pod)))
                return DLB_ERR_NOMEM;
            p->resource.cpu = 16;
        }
    }
    return 0;
}

/* The time of job's first line with what (-1: none). */
static long at(const happened_t *h, const char *job, const char *what)
{
    for (int i = 0; i < h->n; i++)
        if (strstr(h->line[i], job) && strstr(h->line[i], what))
            return atol(h->line[i]);
    return -1;
}

/* The requests of job at t. */
static int asks_at(const happened_t *h, const char *job, long t)
{
    int n = 0;

    for (int i = 0; i < h->n; i++)
        n += atol(h->line[i]) == t && strstr(h->line[i], job) && strstr(h->line[i], " ask ");
    return n;
}

/* The three jobs, in the pool or on nodes (nodes_cnt > 0: that many of
 * cores each). */
static happened_t *run_rules(int nodes_cnt, double cores, dlb_sim_summary_t *sum)
{
    char path[] = "/tmp/dlb-test-sim-XXXXXX", errstr[512];
    dlb_sim_workload_t w = {0};
    dlb_sim_node_t shapes[8];
    dlb_sim_opts_t o;
    happened_t *h = calloc(1, sizeof(*h));
    dlb_sim_io_t io = {.publish = note, .exchange = rules_exchange, .opaque = h};
    int fd = mkstemp(path);
    FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;

    assert_non_null(h);
    assert_non_null(fp);
    /* wide: 3 BERT workers of a local batch of 300, each needs more than
     * 64 GiB; huge: one of 384, over 80 GiB; mover: cifar10, 20 cores. */
    fputs("arrival_s,name,model,dataset_size,epochs,batch_size,workers\n"
          "0,wide,bert,8000,1,900,3\n"
          "0,huge,bert,88000,1,384,1\n"
          "0,mover,cifar10,50000,40,512,4\n",
          fp);
    fclose(fp);
    assert_int_equal(dlb_sim_workload_load(path, 0, &w, errstr, sizeof(errstr)), 0);
    unlink(path);
    dlb_sim_opts_init(&o);
    o.wl = &w;
    o.params.limits.memory_max = 128 * DLB_GIB;
    o.cluster_cores = cores;
    memset(shapes, 0, sizeof(shapes));
    for (int i = 0; i < nodes_cnt; i++) {
        snprintf(shapes[i].name, sizeof(shapes[i].name), "n%d", i);
        shapes[i].cpu_m = (int64_t)(cores * 1000);
        shapes[i].memory = 1024 * DLB_GIB;
    }
    o.nodes = nodes_cnt ? shapes : NULL;
    o.nodes_cnt = (size_t)nodes_cnt;
    if (dlb_sim_run(&o, &io, sum, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    dlb_sim_workload_free(&w);
    for (int i = 0; getenv("DLB_TEST_VERBOSE") && i < h->n; i++)
        print_message("%s\n", h->line[i]);
    return h;
}

/* huge: asked about at 48 GiB (naming the pod, before the first check); at
 * 64 GiB not asked about, and worker 0 fails the job. wide: worker 1 at 64
 * GiB is dropped with nothing asked, and the job goes on to succeed with
 * the other two. mover: no request after its PS plan while the new pod
 * waits. @returns when mover's new PS ran (-1: it never did). */
static long check_rules(const happened_t *h)
{
    long oom, plan, ran;

    oom = at(h, "huge-", "-worker-0 oom 48 GiB");
    assert_true(oom > 0);
    assert_int_equal(at(h, "huge-", "ask job_stage_create huge-"), oom);
    oom = at(h, "huge-", "-worker-0 oom 64 GiB");
    assert_true(oom > 0);
    assert_int_equal(at(h, "huge-", " failed "), oom);
    assert_int_equal(asks_at(h, "huge-", oom), 0);
    oom = at(h, "wide-", "-worker-1 oom 64 GiB");
    assert_true(oom > 0);
    assert_int_equal(asks_at(h, "wide-", oom), 0);
    assert_true(at(h, "wide-", " succeeded Completed") > oom);
    plan = at(h, "mover-", "ask job_stage_ps_initial");
    ran = at(h, "mover-", "-ps-0 migrated");
    assert_true(plan > 0);
    for (long t = plan + 1; t < (ran > 0 ? ran : plan + 100000); t++)
        assert_int_equal(asks_at(h, "mover-", t), 0);
    return ran;
}

static void test_master_oom_and_migration(void **state)
{
    dlb_sim_summary_t sum;
    happened_t *h;
    long plan, ran;

    (void)state;
    /* A pool of 46 cores. Pods of 16 (12 without worker 1), 8 and 20 cores:
     * mover's new PS of 16 fits once wide is done, after more than
     * --ask-every; then it asks at once. */
    h = run_rules(0, 46, &sum);
    ran = check_rules(h);
    plan = at(h, "mover-", "ask job_stage_ps_initial");
    assert_true(ran > plan + 300);
    assert_true(ran >= at(h, "wide-", " succeeded "));
    assert_int_equal(asks_at(h, "mover-", ran), 1);
    assert_int_equal(sum.failed, 1);
    free(h);
    /* Three nodes of 16 cores: mover's pods spread over them leave none
     * room for its new PS beside the old one; 900 s after the plan the
     * pending pod fails the job. */
    h = run_rules(3, 16, &sum);
    assert_int_equal(check_rules(h), -1);
    plan = at(h, "mover-", "ask job_stage_ps_initial");
    assert_int_equal(at(h, "mover-", " failed PendingTimeout"), plan + 930);
    assert_int_equal(sum.failed, 2);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_same_seed_same_bytes_on_nodes),
        cmocka_unit_test(test_oom_plans_applied),
        cmocka_unit_test(test_master_order),
        cmocka_unit_test(test_master_oom_and_migration),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
