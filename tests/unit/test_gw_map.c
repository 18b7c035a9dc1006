/* DLRover's Brain messages <-> events (producers/gateway/gw_map.c): every
 * MetricsType's home, the plan request of an optimize call, and the answer
 * in DLRover's units, with the two OOM answers DLRover reads one way only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "brain.pb-c.h"
#include "err.h"
#include "event.h"
#include "gw_map.h"
#include "opt_plan.h"

static Brain__JobMeta job_meta(void)
{
    Brain__JobMeta jm = BRAIN__JOB_META__INIT;
    jm.uuid = "job-1";
    jm.name = "ns-train";
    jm.cluster = "alice";
    return jm;
}

static void test_model_feature(void **state)
{
    Brain__JobMetrics m = BRAIN__JOB_METRICS__INIT;
    Brain__ModelFeature mf = BRAIN__MODEL_FEATURE__INIT;
    Brain__ModelFeature__TensorAllocBytesEntry
        e = BRAIN__MODEL_FEATURE__TENSOR_ALLOC_BYTES_ENTRY__INIT,
        *es[1] = {&e};
    Brain__JobMeta jm = job_meta();
    int64_t dims[2] = {8, 16};
    char err[256];
    dlb_event_t ev;

    (void)state;
    m.job_meta = &jm;
    m.metrics_type = BRAIN__METRICS_TYPE__Model_Feature;
    m.metrics_case = BRAIN__JOB_METRICS__METRICS_MODEL_FEATURE;
    m.model_feature = &mf;
    mf.variable_count = 120;
    mf.recv_op_count = 1200;
    mf.max_variable_size = 1 << 20;
    mf.n_kv_embedding_dims = 2;
    mf.kv_embedding_dims = dims;
    e.key = "embedding";
    e.value = 512;
    mf.n_tensor_alloc_bytes = 1;
    mf.tensor_alloc_bytes = es;
    assert_int_equal(dlb_gw_metrics_event(&m, "e-1", 1000, "dlrover", &ev, err, sizeof(err)), 0);
    assert_int_equal(ev.type, DLB_EV_JOB);
    assert_string_equal(ev.u.job.job_uid, "job-1");
    assert_true(ev.u.job.has_meta);
    assert_string_equal(ev.u.job.meta.scenario, "dlrover");
    assert_string_equal(ev.u.job.meta.cluster, "alice");
    assert_true(ev.u.job.has_model);
    assert_int_equal(ev.u.job.model.recv_op_count, 1200);
    assert_int_equal(ev.u.job.model.max_variable_size, 1 << 20);
    assert_int_equal(ev.u.job.model.kv_embedding_dims_cnt, 2);
    assert_int_equal(ev.u.job.model.kv_embedding_dims[1], 16);
    assert_string_equal(ev.u.job.model.tensor_alloc_bytes[0].key, "embedding");
    dlb_event_clear(&ev);
}

static void test_runtime_info(void **state)
{
    Brain__JobMetrics m = BRAIN__JOB_METRICS__INIT;
    Brain__RuntimeInfo ri = BRAIN__RUNTIME_INFO__INIT;
    Brain__PodMeta p0 = BRAIN__POD_META__INIT, p1 = BRAIN__POD_META__INIT, *pods[2] = {&p0, &p1};
    Brain__JobMeta jm = job_meta();
    char err[256];
    dlb_event_t ev;

    (void)state;
    m.job_meta = &jm;
    m.metrics_type = BRAIN__METRICS_TYPE__Runtime_Info;
    m.metrics_case = BRAIN__JOB_METRICS__METRICS_RUNTIME_INFO;
    m.runtime_info = &ri;
    ri.global_step = 500;
    ri.time_stamp = 1700000000;
    ri.n_running_pods = 2;
    ri.running_pods = pods;
    p0.pod_name = "job-1-edljob-ps-0";
    p0.mem_usage = 6442450944.0;
    p0.cpu_usage = 2.5;
    p0.pod_ip = "10.0.0.1";
    p1.pod_name = "job-1-edljob-master-0"; /* DLRover's master is dlbrain's chief */
    assert_int_equal(dlb_gw_metrics_event(&m, "e-2", 1000, "dlrover", &ev, err, sizeof(err)), 0);
    assert_int_equal(ev.type, DLB_EV_RUNTIME);
    assert_int_equal(ev.u.rt.event_time_ms, 1700000000000LL);
    assert_string_equal(ev.u.rt.pods[0].type, "ps");
    assert_int_equal(ev.u.rt.pods[0].memory_used, 6442450944LL);
    assert_string_equal(ev.u.rt.pods[0].pod_ip, "10.0.0.1");
    assert_string_equal(ev.u.rt.pods[1].type, "chief");
    dlb_event_clear(&ev);

    p1.pod_name = "sidecar";
    assert_int_equal(dlb_gw_metrics_event(&m, "e-3", 1000, "dlrover", &ev, err, sizeof(err)),
                     DLB_ERR_INVALID);
    assert_non_null(strstr(err, "running_pods[1].pod_name"));
}

static void test_bad_metrics(void **state)
{
    Brain__JobMetrics m = BRAIN__JOB_METRICS__INIT;
    Brain__JobMeta jm = job_meta();
    char err[256];
    dlb_event_t ev;

    (void)state;
    m.metrics_type = BRAIN__METRICS_TYPE__Type;
    m.metrics_case = BRAIN__JOB_METRICS__METRICS_TYPE;
    m.type = "PS";
    assert_int_equal(dlb_gw_metrics_event(&m, "e", 1, "s", &ev, err, sizeof(err)), DLB_ERR_INVALID);
    assert_non_null(strstr(err, "job_meta.uuid: missing"));
    m.job_meta = &jm;
    m.metrics_type = BRAIN__METRICS_TYPE__Resource;
    assert_int_equal(dlb_gw_metrics_event(&m, "e", 1, "s", &ev, err, sizeof(err)), DLB_ERR_INVALID);
    assert_non_null(strstr(err, "metrics_type says resource but the message carries type"));
    m.metrics_type = BRAIN__METRICS_TYPE__Type;
    assert_int_equal(dlb_gw_metrics_event(&m, "e", 1, "s", &ev, err, sizeof(err)), 0);
    assert_true(ev.u.job.has_job_type);
    assert_string_equal(ev.u.job.job_type, "PS");
    dlb_event_clear(&ev);
}

/* An optimize call with two OOM pods and the worker phase. */
static void request(Brain__OptimizeRequest *r, const char *stage, Brain__OptimizeJobMeta *job,
                    Brain__JobState *st, Brain__JobState__PodsEntry **entries, Brain__PodState *ps,
                    size_t npods, Brain__OptimizeJobMeta **jobs)
{
    brain__optimize_request__init(r);
    brain__optimize_job_meta__init(job);
    brain__job_state__init(st);
    r->type = (char *)stage;
    job->uid = "job-1";
    job->state = st;
    st->n_pods = npods;
    st->pods = entries;
    for (size_t i = 0; i < npods; i++) {
        brain__job_state__pods_entry__init(entries[i]);
        brain__pod_state__init(&ps[i]);
        ps[i].name = i ? "job-1-edljob-worker-1" : "job-1-edljob-worker-0";
        ps[i].is_oom = 1;
        entries[i]->key = ps[i].name;
        entries[i]->value = &ps[i];
    }
    jobs[0] = job;
    r->n_jobs = 1;
    r->jobs = jobs;
}

static void test_request_and_answer(void **state)
{
    Brain__OptimizeRequest r;
    Brain__OptimizeJobMeta job, *jobs[1];
    Brain__JobState st;
    Brain__JobState__PodsEntry e0, e1, *entries[2] = {&e0, &e1};
    Brain__PodState ps[2];
    Brain__OptimizeResponse *resp;
    dlb_event_t pev = {.type = DLB_EV_PLAN};
    dlb_plan_t *plan = &pev.u.plan;
    dlb_group_resource_t *g;
    dlb_pod_resource_t *pod;
    char err[256];
    uint8_t *out;
    size_t len;
    dlb_event_t ev;

    (void)state;
    request(&r, "job_stage_create", &job, &st, entries, ps, 2, jobs);
    assert_int_equal(dlb_gw_request_event(&r, "req-1", 1000, &ev, err, sizeof(err)), 0);
    assert_string_equal(ev.u.req.stage, "job_stage_create");
    assert_string_equal(ev.u.req.oom_pod, "job-1-edljob-worker-0");
    assert_int_equal(ev.u.req.oom_pods_cnt, 2);

    /* dlbrain answers the pods alone: DLRover reads the worker group. */
    snprintf(plan->plan_id, sizeof(plan->plan_id), "plan-req-1");
    assert_non_null(pod = dlb_plan_add_pod(plan, "job-1-edljob-worker-0"));
    pod->resource.memory = (int64_t)10 << 30;
    assert_non_null(pod = dlb_plan_add_pod(plan, "job-1-edljob-worker-1"));
    pod->resource.memory = (int64_t)12 << 30;
    pod->resource.cpu = 3.5;
    assert_int_equal(dlb_gw_plan_response(&ev.u.req, plan, NULL, &out, &len, err, sizeof(err)), 0);
    assert_non_null(resp = brain__optimize_response__unpack(NULL, len, out));
    assert_true(resp->response->success);
    assert_int_equal(resp->n_job_optimize_plans, 1);
    {
        Brain__JobResource *res = resp->job_optimize_plans[0]->resource;
        assert_int_equal(res->n_pod_resources, 2);
        assert_int_equal(res->n_task_group_resources, 1);
        assert_string_equal(res->task_group_resources[0]->key, "worker");
        assert_int_equal(res->task_group_resources[0]->value->count, 0);
        /* bytes: DLRover's master divides by 1 MiB */
        assert_int_equal(res->task_group_resources[0]->value->resource->memory, (int64_t)12 << 30);
    }
    brain__optimize_response__free_unpacked(resp, NULL);
    free(out);
    dlb_event_clear(&pev);

    /* A PS OOM: DLRover reads pod_resources[<that pod>]; a ps group is copied there. */
    snprintf(ev.u.req.stage, sizeof(ev.u.req.stage), "job_stage_ps_initial");
    pev.type = DLB_EV_PLAN;
    assert_non_null(g = dlb_plan_add_group(plan, "ps"));
    g->count = 2;
    g->resource.memory = (int64_t)9 << 30;
    g->resource.cpu = 7.5;
    assert_int_equal(dlb_gw_plan_response(&ev.u.req, plan, NULL, &out, &len, err, sizeof(err)), 0);
    assert_non_null(resp = brain__optimize_response__unpack(NULL, len, out));
    {
        Brain__JobResource *res = resp->job_optimize_plans[0]->resource;
        assert_int_equal(res->n_pod_resources, 2); /* each OOM pod */
        assert_string_equal(res->pod_resources[1]->key, "job-1-edljob-worker-1");
        assert_int_equal(res->pod_resources[1]->value->memory, (int64_t)9 << 30);
        assert_true(res->task_group_resources[0]->value->resource->cpu == 7.5f);
    }
    brain__optimize_response__free_unpacked(resp, NULL);
    free(out);
    dlb_event_clear(&pev);

    /* No plan in time: success=false, the reason, no plan. */
    assert_int_equal(
        dlb_gw_plan_response(&ev.u.req, NULL, "no plan within 5 ms", &out, &len, err, sizeof(err)),
        0);
    assert_non_null(resp = brain__optimize_response__unpack(NULL, len, out));
    assert_false(resp->response->success);
    assert_string_equal(resp->response->reason, "no plan within 5 ms");
    assert_int_equal(resp->n_job_optimize_plans, 0);
    brain__optimize_response__free_unpacked(resp, NULL);
    free(out);
    dlb_event_clear(&ev);

    /* Bad requests name the field. */
    request(&r, "job_stage_lunch", &job, &st, entries, ps, 0, jobs);
    assert_int_equal(dlb_gw_request_event(&r, "req-2", 1000, &ev, err, sizeof(err)),
                     DLB_ERR_INVALID);
    assert_non_null(strstr(err, "stage"));
    r.n_jobs = 0;
    assert_int_equal(dlb_gw_request_event(&r, "req-3", 1000, &ev, err, sizeof(err)),
                     DLB_ERR_INVALID);
    assert_non_null(strstr(err, "jobs: 0 given"));
}

/* A refusal of the event names where DLRover's message carried the field. */
static void test_field_source(void **state)
{
    (void)state;
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_JOB, "job_uid: not UTF-8"),
                        "job_meta.uuid");
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_JOB, "workflow.job_name: not UTF-8"),
                        "workflow_feature");
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_JOB, "meta.namespace: x"),
                        "job_meta.namespace");
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_JOB, "job_type: x"), "type");
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_RUNTIME, "pods[3].pod_ip: x"),
                        "runtime_info.running_pods");
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_RUNTIME, "event_time_ms 1 is 9 s ahead"),
                        "runtime_info.time_stamp");
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_PLAN_REQUEST, "job_uid: x"),
                        "jobs[0].uid");
    assert_string_equal(dlb_gw_event_field_source(DLB_EV_PLAN_REQUEST, "oom_pods[1]: x"),
                        "jobs[0].state.pods");
    /* A whole name is not a prefix of a longer one, nor the other way. */
    assert_null(dlb_gw_event_field_source(DLB_EV_JOB, "job_uids: x"));
    assert_null(dlb_gw_event_field_source(DLB_EV_JOB, "workflow: x"));
    assert_null(dlb_gw_event_field_source(DLB_EV_JOB, "event_id: x"));
    assert_null(dlb_gw_event_field_source(DLB_EV_PLAN, "job_uid: x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_feature), cmocka_unit_test(test_runtime_info),
        cmocka_unit_test(test_bad_metrics),   cmocka_unit_test(test_request_and_answer),
        cmocka_unit_test(test_field_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
