/* dlb_job_state_apply(): the fold shared by the Redis cache and the PostgreSQL rebuild. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "state.h"

static dlb_event_t job_ev(const char *id, int64_t t)
{
    dlb_event_t ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = DLB_EV_JOB;
    snprintf(ev.u.job.event_id, sizeof(ev.u.job.event_id), "%s", id);
    snprintf(ev.u.job.job_uid, sizeof(ev.u.job.job_uid), "job-1");
    ev.u.job.event_time_ms = t;
    return ev;
}

/* A sample with one worker pod whose memory_used = t, so tests can tell samples apart. */
static dlb_event_t rt_ev(const char *id, int64_t t, dlb_pod_usage_t *pod)
{
    dlb_event_t ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = DLB_EV_RUNTIME;
    snprintf(ev.u.rt.event_id, sizeof(ev.u.rt.event_id), "%s", id);
    snprintf(ev.u.rt.job_uid, sizeof(ev.u.rt.job_uid), "job-1");
    ev.u.rt.event_time_ms = t;
    ev.u.rt.global_step = t * 10;
    ev.u.rt.speed = 2.5;
    memset(pod, 0, sizeof(*pod));
    snprintf(pod->name, sizeof(pod->name), "job-1-worker-0");
    snprintf(pod->type, sizeof(pod->type), "worker");
    pod->cpu_used = 1.5;
    pod->memory_used = t;
    ev.u.rt.pods = pod;
    ev.u.rt.pods_cnt = 1;
    return ev;
}

static dlb_event_t node_ev(const char *id, int64_t t, const char *pod, const char *kind)
{
    dlb_event_t ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = DLB_EV_NODE;
    snprintf(ev.u.node.event_id, sizeof(ev.u.node.event_id), "%s", id);
    snprintf(ev.u.node.job_uid, sizeof(ev.u.node.job_uid), "job-1");
    ev.u.node.event_time_ms = t;
    snprintf(ev.u.node.kind, sizeof(ev.u.node.kind), "%s", kind);
    snprintf(ev.u.node.pod_name, sizeof(ev.u.node.pod_name), "%s", pod);
    snprintf(ev.u.node.pod_type, sizeof(ev.u.node.pod_type), "worker");
    ev.u.node.pod_index = 3;
    snprintf(ev.u.node.node_name, sizeof(ev.u.node.node_name), "node-a");
    return ev;
}

static void test_job_merge_sections(void **unused)
{
    dlb_job_state_t st = {0};
    dlb_event_t a = job_ev("j-a", 1000), b = job_ev("j-b", 2000), c = job_ev("j-c", 3000);
    (void)unused;

    a.u.job.has_meta = 1;
    snprintf(a.u.job.meta.scenario, sizeof(a.u.job.meta.scenario), "ctr");
    snprintf(a.u.job.meta.name, sizeof(a.u.job.meta.name), "deepfm");
    a.u.job.has_state = 1;
    snprintf(a.u.job.state, sizeof(a.u.job.state), "created");
    b.u.job.has_state = 1;
    snprintf(b.u.job.state, sizeof(b.u.job.state), "running");
    b.u.job.has_hyper_params = 1;
    b.u.job.hyper_params.batch_size = 512;
    b.u.job.hyper_params.epoch = 2;
    c.u.job.has_model = 1;
    c.u.job.model.recv_op_count = 77;
    c.u.job.has_exit_reason = 1;
    snprintf(c.u.job.exit_reason, sizeof(c.u.job.exit_reason), "Completed");

    assert_int_equal(dlb_job_state_apply(&st, &a, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &b, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &c, 60), 0);

    assert_string_equal(st.job.job_uid, "job-1");
    assert_string_equal(st.job.event_id, "j-c");
    assert_int_equal(st.job.event_time_ms, 3000);
    assert_int_equal(st.created_ms, 1000);
    assert_int_equal(st.job.has_meta, 1);
    assert_string_equal(st.job.meta.scenario, "ctr");
    assert_string_equal(st.job.meta.name, "deepfm");
    assert_int_equal(st.job.has_state, 1);
    assert_string_equal(st.job.state, "running");
    assert_int_equal(st.job.has_hyper_params, 1);
    assert_int_equal(st.job.hyper_params.batch_size, 512);
    assert_int_equal(st.job.hyper_params.epoch, 2);
    assert_int_equal(st.job.has_dataset, 0);
    assert_int_equal(st.job.has_model, 1);
    assert_int_equal(st.job.model.recv_op_count, 77);
    assert_int_equal(st.job.has_exit_reason, 1);
    assert_string_equal(st.job.exit_reason, "Completed");
    dlb_job_state_clear(&st);
    assert_int_equal(st.created_ms, 0);
    assert_null(st.window);
}

static char *dup_text(const char *s)
{
    char *d = strdup(s);
    assert_non_null(d);
    return d;
}

/* job_event v2's sections (workflow, job type, resource, customized data,
 * optimization) and the heap parts of dataset and model merge like the others:
 * the state holds its own copies, a newer event's section replaces the whole
 * section, a late one fills only what was never seen, null is "not reported". */
static void test_job_merge_v2_sections(void **unused)
{
    dlb_job_state_t st = {0};
    dlb_event_t a = job_ev("j-a", 1000), b = job_ev("j-b", 2000), late = job_ev("j-0", 500);
    (void)unused;

    a.u.job.has_job_type = 1;
    snprintf(a.u.job.job_type, sizeof(a.u.job.job_type), "ParameterServerStrategy");
    a.u.job.has_customized_data = 1;
    a.u.job.customized_data = dup_text("{\"rdzv_round\": 1}");
    a.u.job.has_model = 1;
    a.u.job.model.op_count = 10;
    a.u.job.model.kv_embedding_dims = calloc(2, sizeof(int64_t));
    assert_non_null(a.u.job.model.kv_embedding_dims);
    a.u.job.model.kv_embedding_dims[0] = 8;
    a.u.job.model.kv_embedding_dims[1] = 16;
    a.u.job.model.kv_embedding_dims_cnt = 2;
    a.u.job.model.tensor_alloc_bytes = calloc(1, sizeof(dlb_long_entry_t));
    assert_non_null(a.u.job.model.tensor_alloc_bytes);
    a.u.job.model.tensor_alloc_bytes[0].key = dup_text("emb/part_0");
    a.u.job.model.tensor_alloc_bytes[0].value = 4096;
    a.u.job.model.tensor_alloc_bytes_cnt = 1;

    /* b: new customized data (DLRover resends its whole dict), a model
     * without lists (they go: a section is replaced whole), a workflow. */
    b.u.job.has_customized_data = 1;
    b.u.job.customized_data = dup_text("{\"rdzv_round\": 2, \"init_training_time\": 42}");
    b.u.job.has_model = 1;
    b.u.job.model.op_count = 20;
    b.u.job.has_workflow = 1;
    snprintf(b.u.job.workflow.job_name, sizeof(b.u.job.workflow.job_name), "ctr-7");
    b.u.job.workflow.code_address = dup_text("https://git.example.com/ctr.git");
    b.u.job.workflow.is_prod = 1;

    /* late: older than both; only its never-seen sections count. */
    late.u.job.has_resource = 1;
    late.u.job.resource = dup_text("{\"worker\": {\"count\": 2}}");
    late.u.job.has_optimization = 1;
    late.u.job.optimization = dup_text("{\"timestamp\": 1}");
    late.u.job.has_customized_data = 1;
    late.u.job.customized_data = dup_text("{\"rdzv_round\": 0}");
    late.u.job.has_dataset = 1;
    late.u.job.dataset.sparse_features = dup_text("user_id,item_id");
    late.u.job.dataset.storage_size = 1 << 20;

    assert_int_equal(dlb_job_state_apply(&st, &a, 60), 0);
    /* The state's copy is its own: the event may go at once. */
    assert_ptr_not_equal(st.job.customized_data, a.u.job.customized_data);
    assert_ptr_not_equal(st.job.model.kv_embedding_dims, a.u.job.model.kv_embedding_dims);
    dlb_event_clear(&a);
    assert_int_equal(st.job.model.kv_embedding_dims_cnt, 2);
    assert_int_equal(st.job.model.kv_embedding_dims[1], 16);
    assert_string_equal(st.job.model.tensor_alloc_bytes[0].key, "emb/part_0");

    assert_int_equal(dlb_job_state_apply(&st, &b, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &late, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &b, 60), 0); /* a redelivery: no change */
    dlb_event_clear(&b);
    dlb_event_clear(&late);

    assert_string_equal(st.job.event_id, "j-b");
    assert_int_equal(st.created_ms, 500);
    assert_int_equal(st.job.has_job_type, 1);
    assert_string_equal(st.job.job_type, "ParameterServerStrategy");
    assert_int_equal(st.job.has_customized_data, 1);
    assert_string_equal(st.job.customized_data, "{\"rdzv_round\": 2, \"init_training_time\": 42}");
    assert_int_equal(st.job.has_model, 1);
    assert_int_equal(st.job.model.op_count, 20);
    assert_int_equal(st.job.model.kv_embedding_dims_cnt, 0);
    assert_null(st.job.model.kv_embedding_dims);
    assert_int_equal(st.job.model.tensor_alloc_bytes_cnt, 0);
    assert_int_equal(st.job.has_workflow, 1);
    assert_string_equal(st.job.workflow.job_name, "ctr-7");
    assert_string_equal(st.job.workflow.code_address, "https://git.example.com/ctr.git");
    assert_int_equal(st.job.workflow.is_prod, 1);
    assert_int_equal(st.job.has_resource, 1);
    assert_string_equal(st.job.resource, "{\"worker\": {\"count\": 2}}");
    assert_int_equal(st.job.has_optimization, 1);
    assert_string_equal(st.job.optimization, "{\"timestamp\": 1}");
    assert_int_equal(st.job.has_dataset, 1);
    assert_string_equal(st.job.dataset.sparse_features, "user_id,item_id");
    assert_int_equal(st.job.dataset.storage_size, 1 << 20);
    /* Everything the state holds is released with it (ASan: no leak). */
    dlb_job_state_clear(&st);
    assert_null(st.job.customized_data);
}

/* A deep copy of a job event owns its heap parts, and equals the original. */
static void test_job_event_copy(void **unused)
{
    dlb_event_t a = job_ev("j-a", 1000), b;
    (void)unused;

    a.u.job.has_resource = 1;
    a.u.job.resource = dup_text("{}");
    a.u.job.has_model = 1;
    a.u.job.model.kv_embedding_dims = calloc(1, sizeof(int64_t));
    assert_non_null(a.u.job.model.kv_embedding_dims);
    a.u.job.model.kv_embedding_dims[0] = 64;
    a.u.job.model.kv_embedding_dims_cnt = 1;
    assert_int_equal(dlb_event_copy(&b, &a), 0);
    assert_true(dlb_event_equal(&a, &b));
    assert_ptr_not_equal(a.u.job.resource, b.u.job.resource);
    assert_ptr_not_equal(a.u.job.model.kv_embedding_dims, b.u.job.model.kv_embedding_dims);
    b.u.job.model.kv_embedding_dims[0] = 65;
    assert_false(dlb_event_equal(&a, &b));
    b.u.job.model.kv_embedding_dims[0] = 64;
    /* NULL reads as "" */
    free(b.u.job.resource);
    b.u.job.resource = NULL;
    assert_false(dlb_event_equal(&a, &b));
    a.u.job.resource[0] = '\0';
    assert_true(dlb_event_equal(&a, &b));
    dlb_event_clear(&a);
    dlb_event_clear(&b);
}

/* A late (older) event fills only sections never seen and moves nothing backwards;
 * replaying everything again changes nothing. */
static void test_job_late_and_duplicate(void **unused)
{
    dlb_job_state_t st = {0};
    dlb_event_t newer = job_ev("j-2", 5000), older = job_ev("j-1", 4000);
    (void)unused;

    newer.u.job.has_state = 1;
    snprintf(newer.u.job.state, sizeof(newer.u.job.state), "running");
    older.u.job.has_state = 1;
    snprintf(older.u.job.state, sizeof(older.u.job.state), "pending");
    older.u.job.has_dataset = 1;
    older.u.job.dataset.size = 1000000;

    assert_int_equal(dlb_job_state_apply(&st, &newer, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &older, 60), 0);
    assert_string_equal(st.job.state, "running");
    assert_int_equal(st.job.has_dataset, 1);
    assert_int_equal(st.job.dataset.size, 1000000);
    assert_string_equal(st.job.event_id, "j-2");
    assert_int_equal(st.job.event_time_ms, 5000);
    assert_int_equal(st.created_ms, 4000);

    /* Same timestamp: the event id breaks the tie, like PostgreSQL's replay order. */
    dlb_event_t tie = job_ev("j-3", 5000);
    tie.u.job.has_state = 1;
    snprintf(tie.u.job.state, sizeof(tie.u.job.state), "failed");
    assert_int_equal(dlb_job_state_apply(&st, &tie, 60), 0);
    assert_string_equal(st.job.state, "failed");
    assert_int_equal(dlb_job_state_apply(&st, &newer, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &older, 60), 0);
    assert_string_equal(st.job.state, "failed");
    assert_string_equal(st.job.event_id, "j-3");
    dlb_job_state_clear(&st);
}

static void test_samples_order_dedup_trim(void **unused)
{
    dlb_job_state_t st = {0};
    dlb_pod_usage_t pod;
    /* Times out of order, one duplicate id. */
    const int64_t times[] = {300, 100, 500, 200, 400};
    const char *ids[] = {"s3", "s1", "s5", "s2", "s4"};
    (void)unused;

    for (int i = 0; i < 5; i++) {
        dlb_event_t ev = rt_ev(ids[i], times[i], &pod);
        assert_int_equal(dlb_job_state_apply(&st, &ev, 3), 0);
    }
    assert_string_equal(st.job.job_uid, "job-1");
    assert_int_equal(st.window_cnt, 3);
    assert_string_equal(st.window[0].event_id, "s3");
    assert_string_equal(st.window[1].event_id, "s4");
    assert_string_equal(st.window[2].event_id, "s5");
    assert_int_equal(st.window[0].event_time_ms, 300);
    assert_int_equal(st.window[2].global_step, 5000);
    assert_int_equal(st.window[2].pods_cnt, 1);
    assert_int_equal(st.window[2].pods[0].memory_used, 500);

    /* Duplicate inside the window and one trimmed long ago: nothing changes. */
    dlb_event_t dup = rt_ev("s4", 400, &pod);
    dup.u.rt.speed = 99.0;
    assert_int_equal(dlb_job_state_apply(&st, &dup, 3), 0);
    dlb_event_t old = rt_ev("s1", 100, &pod);
    assert_int_equal(dlb_job_state_apply(&st, &old, 3), 0);
    assert_int_equal(st.window_cnt, 3);
    assert_string_equal(st.window[0].event_id, "s3");
    assert_true(st.window[1].speed == 2.5);

    /* Equal timestamps are ordered by event id. */
    dlb_event_t b = rt_ev("s6b", 600, &pod), a = rt_ev("s6a", 600, &pod);
    assert_int_equal(dlb_job_state_apply(&st, &b, 3), 0);
    assert_int_equal(dlb_job_state_apply(&st, &a, 3), 0);
    assert_string_equal(st.window[0].event_id, "s5");
    assert_string_equal(st.window[1].event_id, "s6a");
    assert_string_equal(st.window[2].event_id, "s6b");
    dlb_job_state_clear(&st);
    assert_int_equal(st.window_cnt, 0);
}

/* The state owns its copy of a sample's pods. */
static void test_samples_deep_copy(void **unused)
{
    dlb_job_state_t st = {0};
    dlb_pod_usage_t pod;
    dlb_event_t ev = rt_ev("s1", 100, &pod);
    (void)unused;

    pod.has_speed = 1; /* runtime_sample v2: the worker's own speed travels with it */
    pod.speed = 0.5;
    assert_int_equal(dlb_job_state_apply(&st, &ev, 60), 0);
    pod.memory_used = -1;
    pod.has_speed = 0;
    pod.speed = 9;
    snprintf(pod.name, sizeof(pod.name), "changed");
    assert_ptr_not_equal(st.window[0].pods, &pod);
    assert_int_equal(st.window[0].pods[0].memory_used, 100);
    assert_string_equal(st.window[0].pods[0].name, "job-1-worker-0");
    assert_string_equal(st.window[0].pods[0].type, "worker");
    assert_int_equal(st.window[0].pods[0].has_speed, 1);
    assert_true(st.window[0].pods[0].speed == 0.5);

    /* A sample without pods stores no array. */
    dlb_event_t empty = rt_ev("s2", 200, &pod);
    empty.u.rt.pods = NULL;
    empty.u.rt.pods_cnt = 0;
    assert_int_equal(dlb_job_state_apply(&st, &empty, 60), 0);
    assert_int_equal(st.window_cnt, 2);
    assert_null(st.window[1].pods);
    dlb_job_state_clear(&st);
}

/* window_size below 1 keeps the newest sample. */
static void test_samples_min_window(void **unused)
{
    dlb_job_state_t st = {0};
    dlb_pod_usage_t pod;
    dlb_event_t a = rt_ev("a", 1, &pod), b = rt_ev("b", 2, &pod);
    (void)unused;

    assert_int_equal(dlb_job_state_apply(&st, &a, 0), 0);
    assert_int_equal(dlb_job_state_apply(&st, &b, 0), 0);
    assert_int_equal(st.window_cnt, 1);
    assert_string_equal(st.window[0].event_id, "b");
    dlb_job_state_clear(&st);
}

/* Big samples: the window keeps the newest that hold at most
 * DLB_WINDOW_PODS_MAX pods, whatever order they arrive in, at least one. */
static void test_samples_window_pods_bound(void **unused)
{
    const size_t big = 16384, per = DLB_WINDOW_PODS_MAX / big;
    dlb_job_state_t st = {0}, rev = {0};
    dlb_pod_usage_t pod, *pods = calloc(big, sizeof(*pods));
    char id[16];
    (void)unused;

    assert_non_null(pods);
    for (int i = 0; i < 6; i++) {
        dlb_event_t ev = rt_ev("", 100 + i, &pod);
        snprintf(id, sizeof(id), "s%d", i);
        snprintf(ev.u.rt.event_id, sizeof(ev.u.rt.event_id), "%s", id);
        ev.u.rt.pods = pods;
        ev.u.rt.pods_cnt = big;
        assert_int_equal(dlb_job_state_apply(&st, &ev, 60), 0);
        assert_true(st.window_cnt <= per);
        /* the same samples newest first, as a redelivery might bring them */
        snprintf(ev.u.rt.event_id, sizeof(ev.u.rt.event_id), "s%d", 5 - i);
        ev.u.rt.event_time_ms = 100 + 5 - i;
        assert_int_equal(dlb_job_state_apply(&rev, &ev, 60), 0);
    }
    assert_int_equal(st.window_cnt, per);
    assert_int_equal(rev.window_cnt, per);
    for (size_t i = 0; i < per; i++) {
        snprintf(id, sizeof(id), "s%zu", 6 - per + i);
        assert_string_equal(st.window[i].event_id, id);
        assert_string_equal(rev.window[i].event_id, id);
    }
    /* A small sample fits beside them only when a big one goes. */
    dlb_event_t small = rt_ev("s10", 200, &pod);
    assert_int_equal(dlb_job_state_apply(&st, &small, 60), 0);
    assert_int_equal(st.window_cnt, per);
    assert_string_equal(st.window[per - 1].event_id, "s10");
    /* Small samples are bounded by window_size alone. */
    for (int i = 11; i < 80; i++) {
        dlb_event_t ev = rt_ev("", 200 + i, &pod);
        snprintf(ev.u.rt.event_id, sizeof(ev.u.rt.event_id), "s%d", i);
        assert_int_equal(dlb_job_state_apply(&st, &ev, 60), 0);
    }
    assert_int_equal(st.window_cnt, 60);
    dlb_job_state_clear(&st);
    dlb_job_state_clear(&rev);
    free(pods);
}

static void test_node_fold_and_oom_idempotent(void **unused)
{
    dlb_job_state_t st = {0};
    const dlb_pod_status_t *p;
    (void)unused;

    dlb_event_t run = node_ev("n1", 1000, "w-0", "pod_phase");
    run.u.node.has_phase = 1;
    snprintf(run.u.node.phase, sizeof(run.u.node.phase), "Running");
    run.u.node.has_memory_requested = 1;
    run.u.node.memory_requested = 8 * (int64_t)1024 * 1024 * 1024;
    dlb_event_t oom = node_ev("n2", 2000, "w-0", "oom_killed");
    dlb_event_t oom2 = node_ev("n3", 3000, "w-0", "oom_killed");
    snprintf(oom2.u.node.node_name, sizeof(oom2.u.node.node_name), "node-b");
    oom2.u.node.has_memory_requested = 1;
    oom2.u.node.memory_requested = 12 * (int64_t)1024 * 1024 * 1024;

    assert_int_equal(dlb_job_state_apply(&st, &run, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &oom, 60), 0);
    /* Re-delivery of the newest event: no change. */
    assert_int_equal(dlb_job_state_apply(&st, &oom, 60), 0);
    p = dlb_job_state_pod(&st, "w-0");
    assert_non_null(p);
    assert_int_equal(p->oom_count, 1);
    assert_string_equal(p->last_oom_event_id, "n2");
    assert_string_equal(p->last_kind, "oom_killed");
    assert_string_equal(p->phase, "Running");
    assert_int_equal(p->memory_requested, 8 * (int64_t)1024 * 1024 * 1024);
    assert_int_equal(p->last_event_time_ms, 2000);
    assert_string_equal(p->type, "worker");
    assert_int_equal(p->index, 3);
    assert_string_equal(p->node_name, "node-a");

    assert_int_equal(dlb_job_state_apply(&st, &oom2, 60), 0);
    assert_int_equal(dlb_job_state_apply(&st, &oom2, 60), 0);
    p = dlb_job_state_pod(&st, "w-0");
    assert_int_equal(p->oom_count, 2);
    assert_string_equal(p->last_oom_event_id, "n3");
    assert_string_equal(p->last_event_id, "n3");
    assert_string_equal(p->node_name, "node-b");
    assert_int_equal(p->memory_requested, 12 * (int64_t)1024 * 1024 * 1024);

    /* A late phase event counts for nothing that is newer. */
    dlb_event_t late = node_ev("n0", 500, "w-0", "pod_phase");
    late.u.node.has_phase = 1;
    snprintf(late.u.node.phase, sizeof(late.u.node.phase), "Pending");
    assert_int_equal(dlb_job_state_apply(&st, &late, 60), 0);
    p = dlb_job_state_pod(&st, "w-0");
    assert_string_equal(p->last_kind, "oom_killed");
    assert_string_equal(p->phase, "Running");
    assert_int_equal(p->last_event_time_ms, 3000);
    assert_int_equal(p->oom_count, 2);
    dlb_job_state_clear(&st);
}

static void test_node_pods_sorted_and_lookup(void **unused)
{
    dlb_job_state_t st = {0};
    const char *names[] = {"w-2", "ps-0", "w-10", "chief-0"};
    (void)unused;

    for (int i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        dlb_event_t ev = node_ev(id, 100 + i, names[i], "pod_phase");
        assert_int_equal(dlb_job_state_apply(&st, &ev, 60), 0);
    }
    /* A node-only event (no pod) is not a pod. */
    dlb_event_t nodeonly = node_ev("e9", 900, "", "node_not_ready");
    assert_int_equal(dlb_job_state_apply(&st, &nodeonly, 60), 0);

    assert_int_equal(st.pods_cnt, 4);
    assert_string_equal(st.pods[0].name, "chief-0");
    assert_string_equal(st.pods[1].name, "ps-0");
    assert_string_equal(st.pods[2].name, "w-10");
    assert_string_equal(st.pods[3].name, "w-2");
    assert_ptr_equal(dlb_job_state_pod(&st, "w-10"), &st.pods[2]);
    assert_int_equal(dlb_job_state_pod(&st, "w-2")->last_event_time_ms, 100);
    assert_int_equal(dlb_job_state_pod(&st, "w-2")->oom_count, 0);
    assert_string_equal(dlb_job_state_pod(&st, "w-2")->last_oom_event_id, "");
    assert_null(dlb_job_state_pod(&st, "w-3"));
    assert_null(dlb_job_state_pod(&st, ""));
    dlb_job_state_clear(&st);
    assert_null(dlb_job_state_pod(&st, "w-2"));
}

/* A job's state keeps at most DLB_JOB_PODS_MAX pods: events naming more are
 * counted, not folded, and the pods it keeps are still updated. (Names in
 * order, so the test does not pay the insertion's square.) */
static void test_node_pods_capped(void **unused)
{
    dlb_job_state_t st = {0};
    char id[32], pod[32];
    (void)unused;

    for (int i = 0; i < DLB_JOB_PODS_MAX + 5; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        snprintf(pod, sizeof(pod), "w-%06d", i);
        dlb_event_t ev = node_ev(id, 100 + i, pod, "pod_phase");
        assert_int_equal(dlb_job_state_apply(&st, &ev, 60), 0);
    }
    assert_int_equal(st.pods_cnt, DLB_JOB_PODS_MAX);
    assert_int_equal(st.pods_refused, 5);
    assert_null(dlb_job_state_pod(&st, "w-016384"));
    dlb_event_t oom = node_ev("oom-1", 1000000, "w-000007", "oom_killed");
    assert_int_equal(dlb_job_state_apply(&st, &oom, 60), 0);
    assert_int_equal(dlb_job_state_pod(&st, "w-000007")->oom_count, 1);
    assert_int_equal(st.pods_refused, 5);
    dlb_job_state_clear(&st);
}

/* A rebuild (pods appended through a hash index, sorted once at the end)
 * gives the same state, byte for byte, as folding with sorted inserts:
 * names in scrambled order, redeliveries, OOMs, and past the cap. */
static void fold_scrambled(dlb_job_state_t *st, int n)
{
    char id[32], pod[32];

    for (int i = 0; i < n; i++) {
        /* 7919 is prime and n is not a multiple, so k visits every pod. */
        int k = (int)(((long)i * 7919) % n);
        snprintf(id, sizeof(id), "e%d", i);
        snprintf(pod, sizeof(pod), "p-%d", k);
        dlb_event_t ev = node_ev(id, 100 + i, pod, i % 5 ? "pod_phase" : "oom_killed");
        assert_int_equal(dlb_job_state_apply(st, &ev, 60), 0);
        assert_int_equal(dlb_job_state_apply(st, &ev, 60), 0); /* redelivery */
        if (i % 3 == 0) {
            snprintf(pod, sizeof(pod), "p-%d", k / 2);
            snprintf(id, sizeof(id), "f%d", i);
            ev = node_ev(id, 50 + i, pod, "pod_phase"); /* late, to a known pod */
            assert_int_equal(dlb_job_state_apply(st, &ev, 60), 0);
        }
    }
}

static void test_node_rebuild_same_state(void **unused)
{
    const int sizes[] = {1, 2, 63, 64, 65, 1000, DLB_JOB_PODS_MAX + 21};
    (void)unused;

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        dlb_job_state_t a = {0}, b = {0};
        int n = sizes[s];
        fold_scrambled(&a, n);
        assert_int_equal(dlb_job_state_begin_rebuild(&b), 0);
        fold_scrambled(&b, n);
        dlb_job_state_end_rebuild(&b);
        assert_null(b.pod_index);
        assert_int_equal(a.pods_cnt, b.pods_cnt);
        assert_int_equal(a.pods_refused, b.pods_refused);
        assert_int_equal(a.pods_cnt, n > DLB_JOB_PODS_MAX ? DLB_JOB_PODS_MAX : n);
        assert_memory_equal(a.pods, b.pods, a.pods_cnt * sizeof(*a.pods));
        for (size_t i = 1; i < b.pods_cnt; i++)
            assert_true(strcmp(b.pods[i - 1].name, b.pods[i].name) < 0);
        dlb_job_state_clear(&a);
        dlb_job_state_clear(&b);
    }
}

/* Plan requests and plans are not job state. */
static void test_other_events_ignored(void **unused)
{
    dlb_job_state_t st = {0};
    dlb_event_t ev;
    (void)unused;

    memset(&ev, 0, sizeof(ev));
    ev.type = DLB_EV_PLAN_REQUEST;
    snprintf(ev.u.req.event_id, sizeof(ev.u.req.event_id), "r1");
    snprintf(ev.u.req.job_uid, sizeof(ev.u.req.job_uid), "job-1");
    assert_int_equal(dlb_job_state_apply(&st, &ev, 60), 0);
    assert_string_equal(st.job.job_uid, "");
    assert_int_equal(st.window_cnt, 0);
    assert_int_equal(st.pods_cnt, 0);
}

static void test_history_clear(void **unused)
{
    dlb_history_t h = {0};
    (void)unused;

    h.jobs = calloc(2, sizeof(*h.jobs));
    assert_non_null(h.jobs);
    h.jobs_cnt = 2;
    h.jobs[0].samples = calloc(1, sizeof(*h.jobs[0].samples));
    assert_non_null(h.jobs[0].samples);
    h.jobs[0].samples_cnt = 1;
    h.jobs[0].samples[0].pods = calloc(2, sizeof(dlb_pod_usage_t));
    h.jobs[0].samples[0].pods_cnt = 2;
    h.jobs[1].oom_pods = calloc(1, sizeof(*h.jobs[1].oom_pods));
    h.jobs[1].oom_pods_cnt = 1;
    dlb_history_clear(&h);
    assert_null(h.jobs);
    assert_int_equal(h.jobs_cnt, 0);
    dlb_history_clear(&h);
}

/* Each pod once, as the newest sample that has it shows it; a pod of the
 * same name but another type is another pod. */
static void test_history_last_pods(void **unused)
{
    dlb_runtime_sample_t smp[3] = {0};
    dlb_hist_job_t j = {0};
    dlb_hist_pod_t *pods;
    size_t cnt;

    (void)unused;
    for (int i = 0; i < 3; i++) {
        smp[i].pods = calloc(2, sizeof(*smp[i].pods));
        assert_non_null(smp[i].pods);
        smp[i].pods_cnt = 2;
        snprintf(smp[i].pods[0].name, sizeof(smp[i].pods[0].name), "w-0");
        snprintf(smp[i].pods[0].type, sizeof(smp[i].pods[0].type), "worker");
        smp[i].pods[0].memory_used = 100 + i;
        /* The second pod: ps-0 in the first two samples, a worker of the
         * same name in the newest. */
        snprintf(smp[i].pods[1].name, sizeof(smp[i].pods[1].name), "ps-0");
        snprintf(smp[i].pods[1].type, sizeof(smp[i].pods[1].type), i < 2 ? "ps" : "worker");
        smp[i].pods[1].memory_used = 200 + i;
    }
    j.samples = smp;
    j.samples_cnt = 3;
    assert_int_equal(dlb_hist_job_last_pods(&j, &pods, &cnt), 0);
    assert_int_equal(cnt, 3);
    /* Newest sample first, in its pod order. */
    assert_string_equal(pods[0].name, "w-0");
    assert_int_equal(pods[0].memory_used, 102);
    assert_string_equal(pods[1].type, "worker");
    assert_int_equal(pods[1].memory_used, 202);
    assert_string_equal(pods[2].name, "ps-0");
    assert_string_equal(pods[2].type, "ps");
    assert_int_equal(pods[2].memory_used, 201);
    free(pods);
    j.samples_cnt = 0;
    assert_int_equal(dlb_hist_job_last_pods(&j, &pods, &cnt), 0);
    assert_null(pods);
    assert_int_equal(cnt, 0);
    for (int i = 0; i < 3; i++)
        free(smp[i].pods);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_merge_sections),
        cmocka_unit_test(test_job_late_and_duplicate),
        cmocka_unit_test(test_job_merge_v2_sections),
        cmocka_unit_test(test_job_event_copy),
        cmocka_unit_test(test_samples_order_dedup_trim),
        cmocka_unit_test(test_samples_deep_copy),
        cmocka_unit_test(test_samples_min_window),
        cmocka_unit_test(test_node_fold_and_oom_idempotent),
        cmocka_unit_test(test_samples_window_pods_bound),
        cmocka_unit_test(test_node_pods_capped),
        cmocka_unit_test(test_node_pods_sorted_and_lookup),
        cmocka_unit_test(test_node_rebuild_same_state),
        cmocka_unit_test(test_other_events_ignored),
        cmocka_unit_test(test_history_clear),
        cmocka_unit_test(test_history_last_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
