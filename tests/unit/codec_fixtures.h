/* Sample events of every type and a deep equality check, shared by the codec
 * and JSON tests. Include after <cmocka.h>. Every struct starts zeroed, so
 * the bytes after each string's NUL are zero on both sides of a comparison. */
#ifndef DLB_CODEC_FIXTURES_H
#define DLB_CODEC_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"

#define FX_T0 1700000000123LL

static char *fx_strdup(const char *s)
{
    char *d = strdup(s);
    assert_non_null(d);
    return d;
}

static void fx_job(dlb_event_t *ev, int full)
{
    dlb_job_event_t *j = &ev->u.job;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_JOB;
    strcpy(j->event_id, "job-ev-1");
    j->event_time_ms = FX_T0;
    strcpy(j->job_uid, "uid-42");
    if (!full)
        return;
    j->has_meta = 1;
    strcpy(j->meta.name, "ctr-model");
    strcpy(j->meta.user, "alice");
    strcpy(j->meta.group, "ads");
    strcpy(j->meta.app, "trainer");
    strcpy(j->meta.cluster, "c1");
    strcpy(j->meta.ns, "ml");
    strcpy(j->meta.scenario, "ctr");
    strcpy(j->meta.framework, "tensorflow");
    j->has_state = 1;
    strcpy(j->state, "running");
    j->has_hyper_params = 1;
    j->hyper_params.batch_size = 512;
    j->hyper_params.epoch = 3;
    j->hyper_params.max_steps = 100000;
    j->has_dataset = 1;
    strcpy(j->dataset.name, "clicks");
    j->dataset.size = 123456789;
    strcpy(j->dataset.storage, "odps");
    j->has_model = 1;
    j->model.variable_count = 10;
    j->model.op_count = 2000;
    j->model.total_variable_size = 8LL << 30;
    j->model.recv_op_count = 7;
    j->model.flops = 5000000000LL;
    j->model.embedding_dimension = 16;
    j->has_exit_reason = 1;
    strcpy(j->exit_reason, "Completed");
    /* job_event v2 */
    j->dataset.sparse_item_count = 1000000;
    j->dataset.sparse_features = fx_strdup("user_id,item_id,city");
    j->dataset.sparse_feature_groups = fx_strdup("user,item,user");
    j->dataset.sparse_feature_shapes = fx_strdup("1000000,500000,400");
    j->dataset.dense_features = fx_strdup("age,price");
    j->dataset.dense_feature_shapes = fx_strdup("1,1");
    j->dataset.storage_size = 5LL << 30;
    j->model.max_variable_size = 2LL << 30;
    j->model.update_op_count = 12;
    j->model.read_op_count = 34;
    j->model.input_fetch_dur = 56;
    j->model.kv_embedding_dims = calloc(3, sizeof(*j->model.kv_embedding_dims));
    assert_non_null(j->model.kv_embedding_dims);
    j->model.kv_embedding_dims[0] = 8;
    j->model.kv_embedding_dims[1] = 16;
    j->model.kv_embedding_dims[2] = 32;
    j->model.kv_embedding_dims_cnt = 3;
    j->model.tensor_alloc_bytes = calloc(2, sizeof(*j->model.tensor_alloc_bytes));
    assert_non_null(j->model.tensor_alloc_bytes);
    j->model.tensor_alloc_bytes[0].key = fx_strdup("embedding/user_id/part_0");
    j->model.tensor_alloc_bytes[0].value = 1LL << 30;
    j->model.tensor_alloc_bytes[1].key = fx_strdup("dense/kernel");
    j->model.tensor_alloc_bytes[1].value = 4096;
    j->model.tensor_alloc_bytes_cnt = 2;
    j->has_workflow = 1;
    strcpy(j->workflow.job_name, "ctr-train-7");
    strcpy(j->workflow.user_id, "u-1001");
    j->workflow.code_address = fx_strdup("https://git.example.com/ads/ctr.git#a1b2c3");
    strcpy(j->workflow.workflow_id, "wf-77");
    strcpy(j->workflow.node_id, "node-3");
    strcpy(j->workflow.odps_project, "ads_prod");
    j->workflow.is_prod = 1;
    j->has_job_type = 1;
    strcpy(j->job_type, "ParameterServerStrategy");
    j->has_resource = 1;
    j->resource = fx_strdup("{\"worker\":{\"count\":2,\"cpu\":8}}");
    j->has_customized_data = 1;
    j->customized_data = fx_strdup("{\"init_training_time\": 42, \"rdzv_round\": 1}");
    j->has_optimization = 1;
    j->optimization = fx_strdup("{\"timestamp\": 1700000000}");
}

static void fx_runtime(dlb_event_t *ev, size_t pods)
{
    dlb_runtime_sample_t *rt = &ev->u.rt;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_RUNTIME;
    strcpy(rt->event_id, "rt-ev-1");
    rt->event_time_ms = FX_T0 + 15000;
    strcpy(rt->job_uid, "uid-42");
    rt->global_step = 4200;
    rt->speed = 12.75;
    if (!pods)
        return;
    rt->pods = calloc(pods, sizeof(*rt->pods));
    assert_non_null(rt->pods);
    rt->pods_cnt = pods;
    for (size_t i = 0; i < pods; i++) {
        dlb_pod_usage_t *p = &rt->pods[i];
        snprintf(p->name, sizeof(p->name), "uid-42-%s-%zu", i ? "worker" : "ps", i);
        strcpy(p->type, i ? "worker" : "ps");
        p->index = (int32_t)i;
        p->cpu_used = 1.5 + (double)i;
        p->cpu_requested = 4.0;
        p->memory_used = (int64_t)(i + 1) << 30;
        p->memory_requested = 8LL << 30;
        if (i) { /* runtime_sample v2: workers report their own speed, the PS does not */
            p->has_speed = 1;
            p->speed = 4.25 * (double)i;
        }
        /* runtime_sample v3 */
        snprintf(p->pod_ip, sizeof(p->pod_ip), "10.0.0.%zu", i + 10);
        strcpy(p->node_ip, "192.168.1.7");
        snprintf(p->host_name, sizeof(p->host_name), "uid-42-%s-%zu", i ? "worker" : "ps", i);
        strcpy(p->ns, "ml");
        p->is_mixed = i == 2;
    }
}

static void fx_node(dlb_event_t *ev, int full)
{
    dlb_node_event_t *n = &ev->u.node;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_NODE;
    strcpy(n->event_id, "node-ev-1");
    n->event_time_ms = FX_T0 + 1;
    strcpy(n->job_uid, "uid-42");
    strcpy(n->kind, "oom_killed");
    strcpy(n->pod_name, "uid-42-worker-3");
    strcpy(n->pod_type, "worker");
    n->pod_index = 3;
    strcpy(n->node_name, "node-a");
    strcpy(n->reason, "OOMKilled");
    strcpy(n->message, "container exceeded its memory limit");
    if (!full)
        return;
    n->has_phase = 1;
    strcpy(n->phase, "Failed");
    n->has_memory_requested = 1;
    n->memory_requested = 4LL << 30;
    n->has_cpu_requested = 1;
    n->cpu_requested = 2.5;
}

static void fx_request(dlb_event_t *ev, int with_oom)
{
    dlb_plan_request_t *r = &ev->u.req;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_PLAN_REQUEST;
    strcpy(r->event_id, "req-ev-1");
    r->event_time_ms = FX_T0 + 2;
    strcpy(r->job_uid, "uid-42");
    strcpy(r->stage, DLB_STAGE_RUNNING);
    if (with_oom) {
        r->has_oom_pod = 1;
        strcpy(r->oom_pod, "uid-42-worker-3");
        /* plan_request v2: every OOM pod, oom_pod the first; DLRover's config */
        r->oom_pods = calloc(2, sizeof(*r->oom_pods));
        assert_non_null(r->oom_pods);
        r->oom_pods[0] = fx_strdup("uid-42-worker-3");
        r->oom_pods[1] = fx_strdup("uid-42-worker-1");
        r->oom_pods_cnt = 2;
        r->config = calloc(2, sizeof(*r->config));
        assert_non_null(r->config);
        r->config[0].key = fx_strdup(DLB_CONFIG_WORKER_PHASE);
        r->config[0].value = fx_strdup("sample");
        r->config[1].key = fx_strdup("optimizer.ps.flags");
        r->config[1].value = fx_strdup("");
        r->config_cnt = 2;
    }
}

static void fx_plan(dlb_event_t *ev, int full)
{
    dlb_plan_t *p = &ev->u.plan;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_PLAN;
    strcpy(p->event_id, "plan-1");
    p->event_time_ms = FX_T0 + 2;
    strcpy(p->plan_id, "plan-1");
    strcpy(p->job_uid, "uid-42");
    strcpy(p->stage, DLB_STAGE_CREATE);
    strcpy(p->optimizer, "dlrover.ps_create");
    strcpy(p->reason, "history of 3 similar jobs");
    strcpy(p->trigger_event_id, "req-ev-1");
    if (!full)
        return;
    p->groups = calloc(2, sizeof(*p->groups));
    assert_non_null(p->groups);
    p->groups_cnt = 2;
    strcpy(p->groups[0].group, "ps");
    p->groups[0].count = 2;
    p->groups[0].resource.cpu = 8;
    p->groups[0].resource.memory = 16LL << 30;
    strcpy(p->groups[1].group, "worker");
    p->groups[1].count = 10;
    p->groups[1].resource.cpu = 4.5;
    p->groups[1].resource.memory = 8LL << 30;
    p->groups[1].resource.gpu = 1;
    strcpy(p->groups[1].resource.gpu_type, "a100");
    strcpy(p->groups[1].resource.priority, "high");
    p->pods = calloc(2, sizeof(*p->pods));
    assert_non_null(p->pods);
    p->pods_cnt = 2;
    strcpy(p->pods[0].name, "uid-42-ps-0");
    p->pods[0].resource.memory = 24LL << 30;
    strcpy(p->pods[1].name, "uid-42-ps-1");
    p->pods[1].resource.cpu = 12;
    /* plan v2 */
    p->actions = calloc(2, sizeof(*p->actions));
    assert_non_null(p->actions);
    p->actions_cnt = 2;
    strcpy(p->actions[0].pod, "uid-42-worker-3");
    strcpy(p->actions[0].action, DLB_ACTION_REPLACE);
    strcpy(p->actions[0].reason, "0.4 steps/s against a median of 2.1");
    strcpy(p->actions[1].pod, "uid-42-worker-5");
    strcpy(p->actions[1].action, DLB_ACTION_RELAUNCH);
}

static void fx_config_match(dlb_event_t *ev, int full)
{
    dlb_config_match_t *c = &ev->u.cm;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_CONFIG_MATCH;
    strcpy(c->event_id, "cm-1");
    c->event_time_ms = FX_T0 + 3;
    strcpy(c->job_uid, "uid-42");
    c->rules_version = 17;
    strcpy(c->trigger_event_id, "job-ev-1");
    if (!full)
        return;
    c->rule_ids = calloc(2, sizeof(*c->rule_ids));
    assert_non_null(c->rule_ids);
    c->rule_ids[0] = fx_strdup("rule-a");
    c->rule_ids[1] = fx_strdup("rule-b");
    c->rule_ids_cnt = 2;
    c->values = calloc(2, sizeof(*c->values));
    assert_non_null(c->values);
    c->values[0].key = fx_strdup("ps.memory");
    c->values[0].json = fx_strdup("8589934592");
    c->values[1].key = fx_strdup("optimizer.flags");
    c->values[1].json = fx_strdup("[\"a\",{\"b\":1}]");
    c->values_cnt = 2;
}

static void fx_config_request(dlb_event_t *ev, int full)
{
    dlb_config_request_t *r = &ev->u.creq;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_CONFIG_REQUEST;
    strcpy(r->event_id, "cq-1");
    r->event_time_ms = FX_T0 + 4;
    strcpy(r->job_uid, "uid-42");
    if (!full)
        return;
    r->has_meta = 1;
    strcpy(r->meta.user, "ana");
    strcpy(r->meta.cluster, "c1");
    strcpy(r->meta.name, "ctr-train-7");
}

/* Fills ev with sample `which` (0..13): each type with optional sections and
 * lists present (odd) and absent (even). */
static void fx_sample(dlb_event_t *ev, int which)
{
    int full = which % 2;

    switch (which / 2) {
    case 0:
        fx_job(ev, full);
        break;
    case 1:
        fx_runtime(ev, full ? 3 : 0);
        break;
    case 2:
        fx_node(ev, full);
        break;
    case 3:
        fx_request(ev, full);
        break;
    case 4:
        fx_plan(ev, full);
        break;
    case 5:
        fx_config_match(ev, full);
        break;
    default:
        fx_config_request(ev, full);
        break;
    }
}
#define FX_SAMPLES 14

/* dlb_event_equal(), with the first difference named where it is easy to. */
static void assert_events_equal(const dlb_event_t *a, const dlb_event_t *b)
{
    dlb_event_t x, y;

    /* memcpy, not assignment: padding bytes must come along too. */
    memcpy(&x, a, sizeof(x));
    memcpy(&y, b, sizeof(y));
    assert_int_equal(a->type, b->type);
    switch (a->type) {
    case DLB_EV_JOB:
    case DLB_EV_PLAN_REQUEST:
        /* heap parts: compared by dlb_event_equal() below */
        assert_true(dlb_event_equal(a, b));
        return;
    case DLB_EV_RUNTIME:
        assert_int_equal(a->u.rt.pods_cnt, b->u.rt.pods_cnt);
        if (a->u.rt.pods_cnt)
            assert_memory_equal(a->u.rt.pods, b->u.rt.pods,
                                a->u.rt.pods_cnt * sizeof(*a->u.rt.pods));
        x.u.rt.pods = y.u.rt.pods = NULL;
        break;
    case DLB_EV_PLAN:
        assert_int_equal(a->u.plan.groups_cnt, b->u.plan.groups_cnt);
        assert_int_equal(a->u.plan.pods_cnt, b->u.plan.pods_cnt);
        assert_int_equal(a->u.plan.actions_cnt, b->u.plan.actions_cnt);
        if (a->u.plan.actions_cnt)
            assert_memory_equal(a->u.plan.actions, b->u.plan.actions,
                                a->u.plan.actions_cnt * sizeof(*a->u.plan.actions));
        if (a->u.plan.groups_cnt)
            assert_memory_equal(a->u.plan.groups, b->u.plan.groups,
                                a->u.plan.groups_cnt * sizeof(*a->u.plan.groups));
        if (a->u.plan.pods_cnt)
            assert_memory_equal(a->u.plan.pods, b->u.plan.pods,
                                a->u.plan.pods_cnt * sizeof(*a->u.plan.pods));
        x.u.plan.groups = y.u.plan.groups = NULL;
        x.u.plan.pods = y.u.plan.pods = NULL;
        x.u.plan.actions = y.u.plan.actions = NULL;
        break;
    case DLB_EV_CONFIG_MATCH:
        assert_int_equal(a->u.cm.rule_ids_cnt, b->u.cm.rule_ids_cnt);
        assert_int_equal(a->u.cm.values_cnt, b->u.cm.values_cnt);
        for (size_t i = 0; i < a->u.cm.rule_ids_cnt; i++)
            assert_string_equal(a->u.cm.rule_ids[i], b->u.cm.rule_ids[i]);
        for (size_t i = 0; i < a->u.cm.values_cnt; i++) {
            assert_string_equal(a->u.cm.values[i].key, b->u.cm.values[i].key);
            assert_string_equal(a->u.cm.values[i].json, b->u.cm.values[i].json);
        }
        x.u.cm.rule_ids = y.u.cm.rule_ids = NULL;
        x.u.cm.values = y.u.cm.values = NULL;
        break;
    default:
        break;
    }
    assert_memory_equal(&x, &y, sizeof(x));
    assert_true(dlb_event_equal(a, b));
}

#endif
