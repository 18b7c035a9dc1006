/* Placement of the simulator's pods on nodes (sim/sim_cluster.c, and
 * sim/sim_job.c "placement on nodes"): kube-scheduler's LeastAllocated and
 * BalancedAllocation scores worked by hand; a job that fits the cluster's
 * total but not its nodes stays pending (fragmentation) where a pool of the
 * same total starts it; a worker increase is cut to what the nodes fit; a
 * plan no node fits is dropped with every pod where it was; node events
 * name the node a pod is placed on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "opt_plan.h"
#include "sim_run.h"

#define GIB DLB_GIB

static dlb_sim_node_t node(const char *name, double cores, int64_t gib, double used_cores,
                           int64_t used_gib)
{
    dlb_sim_node_t n;

    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "%s", name);
    n.cpu_m = dlb_sim_cpu_milli(cores);
    n.memory = gib * GIB;
    n.cpu_used_m = dlb_sim_cpu_milli(used_cores);
    n.memory_used = used_gib * GIB;
    return n;
}

/* A pod of 2 cores and 8 GiB on four nodes, by hand (least_allocated.go:
 * per resource ((alloc - requested) * 100) / alloc in integers, averaged
 * with weights 1 and 1, integer division; balanced_allocation.go:
 * (int)((1 - |f_cpu - f_mem| / 2) * 100), requested including the pod). */
static void test_scores_by_hand(void **state)
{
    dlb_sim_node_t nodes[5];
    dlb_sim_cluster_t c = {.nodes = nodes, .nodes_cnt = 5};
    int la, ba;

    (void)state;
    /* a: empty 8 cores 32 GiB. cpu (6000*100)/8000 = 75, memory (24*100)/32 = 75:
     * LA 75; fractions 0.25 and 0.25: BA 100. */
    nodes[0] = node("a", 8, 32, 0, 0);
    assert_int_equal(dlb_sim_node_score(&nodes[0], 2000, 8 * GIB, &la, &ba), 175);
    assert_int_equal(la, 75);
    assert_int_equal(ba, 100);
    /* b: 16 cores 64 GiB, 4 cores and 48 GiB requested. cpu 6/16: (10000*100)/16000 =
     * 62 (62.5); memory 56/64: (8*100)/64 = 12 (12.5); LA (62+12)/2 = 37;
     * fractions 0.375 and 0.875: std 0.25, BA 75. */
    nodes[1] = node("b", 16, 64, 4, 48);
    assert_int_equal(dlb_sim_node_score(&nodes[1], 2000, 8 * GIB, &la, &ba), 112);
    assert_int_equal(la, 37);
    assert_int_equal(ba, 75);
    /* c: empty 4 cores 64 GiB. cpu (2000*100)/4000 = 50, memory (56*100)/64 = 87
     * (87.5); LA (50+87)/2 = 68 (68.5); fractions 0.5 and 0.125: std 0.1875,
     * BA 81 (81.25). */
    nodes[2] = node("c", 4, 64, 0, 0);
    assert_int_equal(dlb_sim_node_score(&nodes[2], 2000, 8 * GIB, &la, &ba), 149);
    assert_int_equal(la, 68);
    assert_int_equal(ba, 81);
    /* d: 3 cores, 2.5 requested: the pod does not fit (NodeResourcesFit). */
    nodes[3] = node("d", 3, 64, 2.5, 0);
    assert_int_equal(dlb_sim_node_score(&nodes[3], 2000, 8 * GIB, NULL, NULL), -1);
    /* Memory alone keeps it out too. */
    nodes[4] = node("e", 64, 16, 0, 10);
    assert_int_equal(dlb_sim_node_score(&nodes[4], 2000, 8 * GIB, NULL, NULL), -1);
    /* The pod fills a node exactly: it fits; LA 0, BA 100. */
    assert_int_equal(dlb_sim_node_score(&nodes[0], 8000, 32 * GIB, &la, &ba), 100);
    assert_int_equal(la, 0);

    assert_ptr_equal(dlb_sim_cluster_pick(&c, 2000, 8 * GIB, NULL), &nodes[0]);
    /* Avoiding a: the next best, c (149 against b's 112). */
    assert_ptr_equal(dlb_sim_cluster_pick(&c, 2000, 8 * GIB, &nodes[0]), &nodes[2]);
    /* A pod only the avoided node fits goes there all the same. */
    assert_ptr_equal(dlb_sim_cluster_pick(&c, 1000, 40 * GIB, &nodes[2]), &nodes[2]);
    /* None fits. */
    assert_null(dlb_sim_cluster_pick(&c, 65000, GIB, NULL));
    /* Ties go to the lower index. */
    nodes[1] = node("b", 8, 32, 0, 0);
    assert_ptr_equal(dlb_sim_cluster_pick(&c, 2000, 8 * GIB, NULL), &nodes[0]);
    assert_ptr_equal(dlb_sim_cluster_pick(&c, 2000, 8 * GIB, &nodes[0]), &nodes[1]);
    /* Bind and unbind are exact. */
    dlb_sim_cluster_bind(&nodes[0], 2000, 8 * GIB);
    assert_int_equal(nodes[0].cpu_used_m, 2000);
    assert_int_equal(nodes[0].pods, 1);
    assert_ptr_equal(dlb_sim_cluster_pick(&c, 2000, 8 * GIB, NULL), &nodes[1]);
    dlb_sim_cluster_unbind(&nodes[0], 2000, 8 * GIB);
    assert_int_equal(nodes[0].cpu_used_m, 0);
    assert_int_equal(nodes[0].memory_used, 0);
    assert_int_equal(nodes[0].pods, 0);
}

/* ---- jobs on nodes --------------------------------------------------------- */

typedef struct seen {
    char node[256][DLB_SIM_NODE_NAME];
    int n, running;
} seen_t;

static int record(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    seen_t *s = opaque;

    (void)errstr;
    (void)errstr_size;
    if (ev->type == DLB_EV_JOB && ev->u.job.has_state && !strcmp(ev->u.job.state, "running"))
        s->running++;
    if (ev->type == DLB_EV_NODE && s->n < 256)
        snprintf(s->node[s->n++], DLB_SIM_NODE_NAME, "%.47s", ev->u.node.node_name);
    return 0;
}

/* Four nodes of `cores` cores and 64 GiB, named t-0..t-3. */
static void four_nodes(dlb_sim_node_t *nodes, dlb_sim_cluster_t *c, double cores)
{
    char name[16];

    memset(c, 0, sizeof(*c));
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "t-%d", i);
        nodes[i] = node(name, cores, 64, 0, 0);
    }
    c->nodes = nodes;
    c->nodes_cnt = 4;
    c->cores = 4 * cores;
    c->memory = 4 * 64 * GIB;
}

/* A cifar10 job of one PS and `workers` workers, each pod `cores` cores and
 * 8 GiB, as a job from history brings them. */
static void spec_of(dlb_sim_spec_t *s, int workers, double cores)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "frag");
    snprintf(s->model, sizeof(s->model), "cifar10");
    s->batch_size = 512;
    s->workers = workers;
    s->ps = 1;
    s->wk_cpu = s->ps_cpu = cores;
    s->wk_mem = s->ps_mem = 8 * GIB;
}

static void job_of(dlb_sim_job_t *j, const dlb_sim_spec_t *s, const dlb_sim_opts_t *o)
{
    char errstr[256];

    if (dlb_sim_job_init(j, s, 1, 0, DLB_SIM_START_MS, &o->params, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    j->state = DLB_SIM_PENDING;
}

static int64_t used(const dlb_sim_cluster_t *c, int i)
{
    return c->nodes[i].cpu_used_m;
}

static void test_gang_and_fragmentation(void **state)
{
    dlb_sim_node_t nodes[4];
    dlb_sim_cluster_t c, pool = {.cores = 32, .memory = 256 * GIB};
    dlb_sim_opts_t o;
    dlb_sim_spec_t s;
    dlb_sim_job_t j;
    seen_t seen = {0};
    dlb_sim_out_t out = {.publish = record, .opaque = &seen};

    (void)state;
    dlb_sim_opts_init(&o);
    /* 6 pods of 5 cores (30) fit 32 cores in all, but an 8-core node holds
     * one of them: four are placed, then the job gives them back and waits. */
    four_nodes(nodes, &c, 8);
    spec_of(&s, 5, 5);
    job_of(&j, &s, &o);
    assert_int_equal(dlb_sim_job_start(&j, DLB_SIM_START_MS, &c, &out), 0);
    assert_int_equal(j.state, DLB_SIM_PENDING);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(used(&c, i), 0);
        assert_int_equal(c.nodes[i].pods, 0);
    }
    assert_true(c.cores_used == 0);
    assert_int_equal(seen.n, 0);
    /* A pool of the same total starts it. */
    assert_int_equal(dlb_sim_job_start(&j, DLB_SIM_START_MS, &pool, &out), 1);
    assert_int_equal(j.state, DLB_SIM_RUNNING);
    assert_true(pool.cores_used == 30);
    /* In a pool the names are drawn, as before nodes. */
    assert_int_equal(seen.n, 6);
    assert_memory_equal(seen.node[0], "sim-node-", 9);

    /* 4 pods fit one per node: LeastAllocated spreads them, PS first on
     * t-0; the events name each pod's node. */
    spec_of(&s, 3, 5);
    job_of(&j, &s, &o);
    seen.n = 0;
    assert_int_equal(dlb_sim_job_start(&j, DLB_SIM_START_MS, &c, &out), 1);
    for (int i = 0; i < 4; i++) {
        char name[16];

        snprintf(name, sizeof(name), "t-%d", i);
        assert_int_equal(used(&c, i), 5000);
        assert_int_equal(c.nodes[i].memory_used, 8 * GIB);
        assert_string_equal(seen.node[i], name);
    }
    assert_string_equal(j.ps[0].node->name, "t-0");
    assert_string_equal(j.wk[2].node->name, "t-3");
    /* Its end gives every node back. */
    dlb_sim_job_fail(&j, DLB_SIM_START_MS + 60000, "Test", &c, &out);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(used(&c, i), 0);
        assert_int_equal(c.nodes[i].memory_used, 0);
        assert_int_equal(c.nodes[i].pods, 0);
    }
    assert_true(c.cores_used == 0);
    assert_int_equal(c.memory_used, 0);
}

static int64_t apply_workers(dlb_sim_job_t *j, const dlb_sim_opts_t *o, dlb_sim_cluster_t *c,
                             dlb_sim_out_t *out, int count, double cores)
{
    dlb_plan_request_t req;
    dlb_plan_t plan;
    dlb_group_resource_t *g;
    int r;

    memset(&req, 0, sizeof(req));
    memset(&plan, 0, sizeof(plan));
    snprintf(plan.plan_id, sizeof(plan.plan_id), "p");
    assert_non_null(g = dlb_plan_add_group(&plan, "worker"));
    g->count = count;
    g->resource.cpu = cores;
    r = dlb_sim_job_apply(j, &req, &plan, DLB_SIM_START_MS + 60000, &o->params, c, out);
    {
        dlb_event_t ev = {.type = DLB_EV_PLAN};
        ev.u.plan = plan;
        dlb_event_clear(&ev);
    }
    return r;
}

static void test_plans_on_nodes(void **state)
{
    dlb_sim_node_t nodes[4];
    dlb_sim_cluster_t c;
    dlb_sim_opts_t o;
    dlb_sim_spec_t s;
    dlb_sim_job_t j;
    seen_t seen = {0};
    dlb_sim_out_t out = {.publish = record, .opaque = &seen};
    int64_t before[4];

    (void)state;
    dlb_sim_opts_init(&o);
    /* 4 pods of 4 cores, one per 10-core node: 6 cores left on each. */
    four_nodes(nodes, &c, 10);
    spec_of(&s, 3, 4);
    job_of(&j, &s, &o);
    assert_int_equal(dlb_sim_job_start(&j, DLB_SIM_START_MS, &c, &out), 1);
    /* 3 -> 10 workers: the free total (24 cores) would hold 6 more, the
     * nodes one more each. */
    seen.n = 0;
    assert_int_equal(apply_workers(&j, &o, &c, &out, 10, 0), 1);
    assert_int_equal(j.wk_cnt, 7);
    assert_int_equal(j.next_wk_index, 7);
    for (int i = 0; i < 4; i++)
        assert_int_equal(used(&c, i), 8000);
    assert_true(c.cores_used == 32);
    /* The four new workers' Running events, on their nodes. */
    assert_int_equal(seen.n, 4);
    for (int k = 3; k < 7; k++)
        assert_string_equal(seen.node[k - 3], j.wk[k].node->name);

    /* Workers of 11 cores fit no 10-core node: the plan is dropped, every
     * pod where it was. */
    for (int i = 0; i < 4; i++)
        before[i] = used(&c, i);
    assert_int_equal(apply_workers(&j, &o, &c, &out, 0, 11), 0);
    assert_int_equal(j.wk_cnt, 7);
    assert_true(j.wk[0].cpu_req == 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(used(&c, i), before[i]);
        assert_int_equal(c.nodes[i].pods, 2);
    }
    assert_true(c.cores_used == 32);

    /* Workers of 5 cores: each resized worker is a new pod, placed again. PS
     * (4) and the 7 workers (35) are 39 of 40 cores: t-0 holds the PS and one
     * worker, the others two workers each. */
    assert_int_equal(apply_workers(&j, &o, &c, &out, 0, 5), 1);
    assert_int_equal(j.wk_cnt, 7);
    assert_int_equal(used(&c, 0) + used(&c, 1) + used(&c, 2) + used(&c, 3), 39000);
    assert_int_equal(used(&c, 0), 9000);
    for (int k = 0; k < 7; k++)
        assert_int_equal(j.wk[k].node_cpu_m, 5000);
    /* Back to 2 workers: the removed ones give their nodes back. */
    assert_int_equal(apply_workers(&j, &o, &c, &out, 2, 0), 1);
    assert_int_equal(used(&c, 0) + used(&c, 1) + used(&c, 2) + used(&c, 3), 14000);
    dlb_sim_job_fail(&j, DLB_SIM_START_MS + 120000, "Test", &c, &out);
    for (int i = 0; i < 4; i++)
        assert_int_equal(c.nodes[i].pods, 0);
}

/* A whole run: the head job does not fit the nodes and fails pending; the
 * small job that came with it would fit, but waits behind it (first come,
 * first served) and fails too; in a pool of the same total both run. */
static void run_one(const dlb_sim_spec_t *specs, size_t n, const dlb_sim_node_t *nodes,
                    size_t nodes_cnt, seen_t *seen, dlb_sim_summary_t *sum)
{
    dlb_sim_workload_t wl = {.jobs = (dlb_sim_spec_t *)specs, .n = n};
    dlb_sim_opts_t o;
    dlb_sim_io_t io = {.publish = record, .opaque = seen};
    char errstr[256];

    memset(seen, 0, sizeof(*seen));
    dlb_sim_opts_init(&o);
    o.wl = &wl;
    o.params.time_scale = 0.05;
    o.pending_timeout_ms = 3600000;
    o.cluster_cores = 32;
    o.cluster_memory = 256 * GIB;
    o.nodes = nodes;
    o.nodes_cnt = nodes_cnt;
    if (dlb_sim_run(&o, &io, sum, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
}

static void test_run_fragmented(void **state)
{
    dlb_sim_node_t nodes[4];
    dlb_sim_cluster_t c;
    dlb_sim_spec_t specs[2];
    dlb_sim_summary_t sum;
    seen_t seen;

    (void)state;
    four_nodes(nodes, &c, 8);
    spec_of(&specs[0], 5, 5);
    spec_of(&specs[1], 1, 4);
    snprintf(specs[1].name, sizeof(specs[1].name), "small");
    run_one(specs, 2, nodes, 4, &seen, &sum);
    assert_int_equal(sum.nodes, 4);
    assert_int_equal(seen.running, 0);
    assert_int_equal(sum.failed, 2);
    assert_true(sum.pending_free_cpu_share == 1);
    assert_true(sum.alloc_cpu_share == 0);
    /* The run's nodes are copies: the caller's are untouched. */
    assert_int_equal(nodes[0].pods, 0);
    run_one(specs, 2, NULL, 0, &seen, &sum);
    assert_int_equal(sum.nodes, 0);
    assert_int_equal(seen.running, 2);
    assert_true(sum.alloc_cpu_share > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scores_by_hand),
        cmocka_unit_test(test_gang_and_fragmentation),
        cmocka_unit_test(test_plans_on_nodes),
        cmocka_unit_test(test_run_fragmented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
