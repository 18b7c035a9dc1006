/* JSON input lines (what `emit` reads) and JSON output of events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "catalog.h"
#include "codec.h"
#include "err.h"

#include "codec_fixtures.h"

#include "catalog_fixture.h"

static void parse_ok(const char *json, int gen_defaults, dlb_event_t *ev)
{
    char err[512] = "";

    if (dlb_json_to_event(cat, json, strlen(json), gen_defaults, ev, err, sizeof(err)))
        fail_msg("%s: %s", json, err);
}

/* ---- good lines, one per input type ------------------------------------- */

static void test_good_job_event(void **state)
{
    dlb_event_t ev;
    const dlb_job_event_t *j = &ev.u.job;

    (void)state;
    parse_ok("{\"type\":\"job_event\",\"event_id\":\"j-1\",\"event_time_ms\":1700000000000,"
             "\"job_uid\":\"uid-1\",\"meta\":{\"name\":\"m\",\"user\":\"u\",\"namespace\":\"ml\","
             "\"scenario\":\"ctr\"},\"state\":\"running\",\"hyper_params\":{\"batch_size\":256},"
             "\"model\":null,\"exit_reason\":\"WorkerOOM\"}\n",
             0, &ev);
    assert_int_equal(ev.type, DLB_EV_JOB);
    assert_string_equal(j->event_id, "j-1");
    assert_int_equal(j->event_time_ms, 1700000000000LL);
    assert_string_equal(j->job_uid, "uid-1");
    assert_int_equal(j->has_meta, 1);
    assert_string_equal(j->meta.name, "m");
    assert_string_equal(j->meta.user, "u");
    assert_string_equal(j->meta.group, ""); /* schema default */
    assert_string_equal(j->meta.ns, "ml");
    assert_string_equal(j->meta.scenario, "ctr");
    assert_string_equal(j->meta.framework, "");
    assert_int_equal(j->has_state, 1);
    assert_string_equal(j->state, "running");
    assert_int_equal(j->has_hyper_params, 1);
    assert_int_equal(j->hyper_params.batch_size, 256);
    assert_int_equal(j->hyper_params.epoch, 0);
    assert_int_equal(j->hyper_params.max_steps, 0);
    assert_int_equal(j->has_dataset, 0); /* left out */
    assert_int_equal(j->has_model, 0);   /* given as null */
    assert_int_equal(j->has_exit_reason, 1);
    assert_string_equal(j->exit_reason, "WorkerOOM");
    dlb_event_clear(&ev);
}

/* job_event v2: every field of DLRover's JobMetrics, and defaults for the
 * fields a section leaves out. */
static void test_good_job_event_v2(void **state)
{
    dlb_event_t ev;
    const dlb_job_event_t *j = &ev.u.job;

    (void)state;
    parse_ok(
        "{\"type\":\"job_event\",\"event_id\":\"j-2\",\"event_time_ms\":1,\"job_uid\":\"u\","
        "\"dataset\":{\"size\":10,\"sparse_features\":\"a,b\",\"storage_size\":4096},"
        "\"model\":{\"max_variable_size\":7,\"kv_embedding_dims\":[8,16],"
        "\"tensor_alloc_bytes\":{\"t/b\":2,\"t/a\":1}},\"exit_reason\":\"UncompletedTimeout\","
        "\"workflow\":{\"job_name\":\"n\",\"is_prod\":true},\"job_type\":\"AllreduceStrategy\","
        "\"resource\":\"{\\\"x\\\":1}\",\"customized_data\":null}",
        0, &ev);
    assert_int_equal(j->has_dataset, 1);
    assert_int_equal(j->dataset.size, 10);
    assert_string_equal(j->dataset.sparse_features, "a,b");
    assert_string_equal(j->dataset.dense_features, ""); /* schema default */
    assert_int_equal(j->dataset.sparse_item_count, 0);
    assert_int_equal(j->dataset.storage_size, 4096);
    assert_int_equal(j->model.max_variable_size, 7);
    assert_int_equal(j->model.kv_embedding_dims_cnt, 2);
    assert_int_equal(j->model.kv_embedding_dims[1], 16);
    assert_int_equal(j->model.tensor_alloc_bytes_cnt, 2);
    assert_string_equal(j->model.tensor_alloc_bytes[0].key, "t/b"); /* input order */
    assert_int_equal(j->model.tensor_alloc_bytes[1].value, 1);
    assert_string_equal(j->exit_reason, "UncompletedTimeout");
    assert_int_equal(j->has_workflow, 1);
    assert_string_equal(j->workflow.job_name, "n");
    assert_string_equal(j->workflow.code_address, "");
    assert_int_equal(j->workflow.is_prod, 1);
    assert_int_equal(j->has_job_type, 1);
    assert_string_equal(j->job_type, "AllreduceStrategy");
    assert_int_equal(j->has_resource, 1);
    assert_string_equal(j->resource, "{\"x\":1}");
    assert_int_equal(j->has_customized_data, 0);
    assert_null(j->customized_data);
    assert_int_equal(j->has_optimization, 0);
    dlb_event_clear(&ev);
}

static void test_good_runtime_sample(void **state)
{
    dlb_event_t ev;
    const dlb_runtime_sample_t *rt = &ev.u.rt;

    (void)state;
    parse_ok("{\"type\":\"runtime_sample\",\"event_id\":\"r-1\",\"event_time_ms\":1700000015000,"
             "\"job_uid\":\"uid-1\",\"global_step\":100,\"speed\":2.5,\"pods\":["
             "{\"name\":\"uid-1-ps-0\",\"type\":\"ps\",\"index\":0,\"cpu_used\":1,"
             "\"cpu_requested\":2.5,\"memory_used\":1073741824,\"memory_requested\":2147483648},"
             "{\"name\":\"uid-1-worker-3\",\"type\":\"worker\",\"index\":3,\"speed\":0.75,"
             "\"pod_ip\":\"10.1.2.3\",\"node_ip\":\"fd00::7\",\"host_name\":\"uid-1-worker-3\","
             "\"namespace\":\"ml\",\"is_mixed\":true},"
             "{\"name\":\"uid-1-worker-4\",\"type\":\"worker\",\"speed\":null}]}",
             0, &ev);
    assert_int_equal(ev.type, DLB_EV_RUNTIME);
    assert_string_equal(rt->event_id, "r-1");
    assert_int_equal(rt->event_time_ms, 1700000015000LL);
    assert_string_equal(rt->job_uid, "uid-1");
    assert_int_equal(rt->global_step, 100);
    assert_true(rt->speed == 2.5);
    assert_int_equal(rt->pods_cnt, 3);
    assert_string_equal(rt->pods[0].name, "uid-1-ps-0");
    assert_string_equal(rt->pods[0].type, "ps");
    assert_int_equal(rt->pods[0].index, 0);
    assert_true(rt->pods[0].cpu_used == 1.0); /* an integer is a fine double */
    assert_true(rt->pods[0].cpu_requested == 2.5);
    assert_int_equal(rt->pods[0].memory_used, 1073741824LL);
    assert_int_equal(rt->pods[0].memory_requested, 2147483648LL);
    assert_string_equal(rt->pods[1].name, "uid-1-worker-3");
    assert_string_equal(rt->pods[1].type, "worker");
    assert_int_equal(rt->pods[1].index, 3);
    assert_true(rt->pods[1].cpu_used == 0.0);
    assert_int_equal(rt->pods[1].memory_used, 0);
    /* runtime_sample v2: pods[].speed optional, left out or null = not reported */
    assert_int_equal(rt->pods[0].has_speed, 0);
    assert_int_equal(rt->pods[1].has_speed, 1);
    assert_true(rt->pods[1].speed == 0.75);
    assert_int_equal(rt->pods[2].has_speed, 0);
    /* runtime_sample v3: the rest of PodMeta, defaults "" and false */
    assert_string_equal(rt->pods[1].pod_ip, "10.1.2.3");
    assert_string_equal(rt->pods[1].node_ip, "fd00::7");
    assert_string_equal(rt->pods[1].host_name, "uid-1-worker-3");
    assert_string_equal(rt->pods[1].ns, "ml");
    assert_int_equal(rt->pods[1].is_mixed, 1);
    assert_string_equal(rt->pods[0].pod_ip, "");
    assert_string_equal(rt->pods[0].ns, "");
    assert_int_equal(rt->pods[0].is_mixed, 0);
    dlb_event_clear(&ev);
}

/* A plan line (plan v2) with actions, and one without (actions default []). */
static void test_good_plan_actions(void **state)
{
    dlb_event_t ev;
    const dlb_plan_t *p = &ev.u.plan;

    (void)state;
    parse_ok("{\"type\":\"plan\",\"event_id\":\"plan-q1\",\"event_time_ms\":5,\"plan_id\":"
             "\"plan-q1\",\"job_uid\":\"u\",\"stage\":\"job_stage_running\",\"actions\":["
             "{\"pod\":\"u-worker-2\",\"action\":\"replace\",\"reason\":\"straggler\"},"
             "{\"pod\":\"u-worker-0\",\"action\":\"relaunch\",\"reason\":\"hang\"}],"
             "\"optimizer\":\"dlbrain.health\",\"reason\":\"r\",\"trigger_event_id\":\"q1\"}",
             0, &ev);
    assert_int_equal(ev.type, DLB_EV_PLAN);
    assert_int_equal(p->groups_cnt, 0);
    assert_int_equal(p->actions_cnt, 2);
    assert_string_equal(p->actions[0].pod, "u-worker-2");
    assert_string_equal(p->actions[0].action, "replace");
    assert_string_equal(p->actions[0].reason, "straggler");
    assert_string_equal(p->actions[1].pod, "u-worker-0");
    assert_string_equal(p->actions[1].action, "relaunch");
    assert_string_equal(p->actions[1].reason, "hang");
    dlb_event_clear(&ev);

    parse_ok("{\"type\":\"plan\",\"event_id\":\"plan-q1\",\"event_time_ms\":5,\"plan_id\":"
             "\"plan-q1\",\"job_uid\":\"u\",\"stage\":\"job_stage_running\","
             "\"optimizer\":\"dlbrain.health\",\"reason\":\"r\",\"trigger_event_id\":\"q1\"}",
             0, &ev);
    assert_int_equal(p->actions_cnt, 0);
    assert_null(p->actions);
    dlb_event_clear(&ev);
}

static void test_good_node_event(void **state)
{
    dlb_event_t ev;
    const dlb_node_event_t *n = &ev.u.node;

    (void)state;
    parse_ok("{\"type\":\"node_event\",\"event_id\":\"n-1\",\"event_time_ms\":1700000000001,"
             "\"job_uid\":\"uid-1\",\"kind\":\"oom_killed\",\"pod_name\":\"uid-1-worker-0\","
             "\"pod_type\":\"worker\",\"pod_index\":2,\"phase\":\"Failed\","
             "\"reason\":\"OOMKilled\",\"memory_requested\":4294967296}",
             0, &ev);
    assert_int_equal(ev.type, DLB_EV_NODE);
    assert_string_equal(n->event_id, "n-1");
    assert_int_equal(n->event_time_ms, 1700000000001LL);
    assert_string_equal(n->job_uid, "uid-1");
    assert_string_equal(n->kind, "oom_killed");
    assert_string_equal(n->pod_name, "uid-1-worker-0");
    assert_string_equal(n->pod_type, "worker");
    assert_int_equal(n->pod_index, 2);
    assert_string_equal(n->node_name, "");
    assert_int_equal(n->has_phase, 1);
    assert_string_equal(n->phase, "Failed");
    assert_string_equal(n->reason, "OOMKilled");
    assert_string_equal(n->message, "");
    assert_int_equal(n->has_memory_requested, 1);
    assert_int_equal(n->memory_requested, 4294967296LL);
    assert_int_equal(n->has_cpu_requested, 0);
    dlb_event_clear(&ev);
}

static void test_good_plan_request(void **state)
{
    dlb_event_t ev;

    (void)state;
    parse_ok("  {\"type\":\"plan_request\",\"event_id\":\"p-1\",\"event_time_ms\":1700000000002,"
             "\"job_uid\":\"uid-1\",\"stage\":\"job_stage_create\"}  \r\n",
             0, &ev);
    assert_int_equal(ev.type, DLB_EV_PLAN_REQUEST);
    assert_string_equal(ev.u.req.event_id, "p-1");
    assert_int_equal(ev.u.req.event_time_ms, 1700000000002LL);
    assert_string_equal(ev.u.req.job_uid, "uid-1");
    assert_string_equal(ev.u.req.stage, "job_stage_create");
    assert_int_equal(ev.u.req.has_oom_pod, 0);
    dlb_event_clear(&ev);

    parse_ok("{\"type\":\"plan_request\",\"event_id\":\"p-2\",\"event_time_ms\":0,"
             "\"job_uid\":\"uid-1\",\"stage\":\"job_stage_running\",\"oom_pod\":\"uid-1-ps-0\"}",
             0, &ev);
    assert_int_equal(ev.u.req.has_oom_pod, 1);
    assert_string_equal(ev.u.req.oom_pod, "uid-1-ps-0");
    assert_int_equal(ev.u.req.event_time_ms, 0);
    assert_int_equal(ev.u.req.oom_pods_cnt, 0); /* v1 fields only: v2's defaults */
    assert_int_equal(ev.u.req.config_cnt, 0);
    assert_null(dlb_plan_request_config(&ev.u.req, DLB_CONFIG_WORKER_PHASE));
    dlb_event_clear(&ev);

    /* plan_request v2: several OOM pods (oom_pod the first), DLRover's config */
    parse_ok("{\"type\":\"plan_request\",\"event_id\":\"p-3\",\"event_time_ms\":3,"
             "\"job_uid\":\"uid-1\",\"stage\":\"job_stage_worker_initial\",\"oom_pod\":"
             "\"uid-1-worker-2\",\"oom_pods\":[\"uid-1-worker-2\",\"uid-1-worker-0\"],"
             "\"config\":{\"optimizer.worker.optimize-phase\":\"initial\"}}",
             0, &ev);
    assert_int_equal(ev.u.req.oom_pods_cnt, 2);
    assert_string_equal(ev.u.req.oom_pods[0], "uid-1-worker-2");
    assert_string_equal(ev.u.req.oom_pods[1], "uid-1-worker-0");
    assert_int_equal(ev.u.req.config_cnt, 1);
    assert_string_equal(dlb_plan_request_config(&ev.u.req, DLB_CONFIG_WORKER_PHASE), "initial");
    assert_null(dlb_plan_request_config(&ev.u.req, "optimizer.other"));
    dlb_event_clear(&ev);
}

/* ---- the validation table ------------------------------------------------ */

#define REQ_HEAD                                                                                   \
    "{\"type\":\"plan_request\",\"event_id\":\"p-1\",\"event_time_ms\":1,\"job_uid\":\"u\","
#define RT_HEAD                                                                                    \
    "{\"type\":\"runtime_sample\",\"event_id\":\"r-1\",\"event_time_ms\":1,\"job_uid\":\"u\","
#define POD0 "{\"name\":\"p0\",\"type\":\"ps\"}"
#define PLAN_HEAD                                                                                  \
    "{\"type\":\"plan\",\"event_id\":\"p\",\"event_time_ms\":1,\"plan_id\":\"p\",\"job_uid\":"     \
    "\"u\","                                                                                       \
    "\"stage\":\"job_stage_running\",\"optimizer\":\"o\",\"reason\":\"r\",\"trigger_event_id\":"   \
    "\"q\","
#define JOB_HEAD                                                                                   \
    "{\"type\":\"job_event\",\"event_id\":\"j-1\",\"event_time_ms\":1,\"job_uid\":\"u\","
#define NODE_HEAD                                                                                  \
    "{\"type\":\"node_event\",\"event_id\":\"n-1\",\"event_time_ms\":1,\"job_uid\":\"u\","
#define UID200                                                                                     \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "xxxxxxxxxxxxxxxx"

typedef struct bad_line {
    const char *what;
    const char *json;
    int err;
    const char *msg; /* exact errstr */
} bad_line_t;

static const bad_line_t bad_lines[] = {
    {"not JSON", "{\"type\":\"job_event\",", DLB_ERR_DECODE, "not valid JSON (at byte 19)"},
    {"empty line", "", DLB_ERR_DECODE, "not valid JSON (at byte 0)"},
    {"text after the object", REQ_HEAD "\"stage\":\"job_stage_create\"} x", DLB_ERR_DECODE,
     "not valid JSON: text after the object (at byte 100)"},
    {"not an object", "[1,2]", DLB_ERR_DECODE, "expected a JSON object, got [1,2]"},
    {"missing type", "{\"event_id\":\"e\"}", DLB_ERR_DECODE, "type: missing"},
    {"unknown type", "{\"type\":\"bar\"}", DLB_ERR_DECODE, "type: unknown event type \"bar\""},
    {"type not a string", "{\"type\":7}", DLB_ERR_DECODE, "type: expected a string, got 7"},
    {"wrong type in an array item",
     RT_HEAD "\"pods\":[" POD0 ",{\"name\":\"p1\",\"type\":\"worker\",\"memory_used\":\"a\"}]}",
     DLB_ERR_DECODE, "pods[1].memory_used: expected an integer, got \"a\""},
    {"wrong type for a double", RT_HEAD "\"speed\":\"fast\"}", DLB_ERR_DECODE,
     "speed: expected a number, got \"fast\""},
    {"wrong type for a string", REQ_HEAD "\"stage\":5}", DLB_ERR_DECODE,
     "stage: expected a string, got 5"},
    {"wrong type for an optional", REQ_HEAD "\"stage\":\"job_stage_create\",\"oom_pod\":5}",
     DLB_ERR_DECODE, "oom_pod: expected a string, got 5"},
    {"wrong type for a section",
     "{\"type\":\"job_event\",\"event_id\":\"j\",\"event_time_ms\":1,"
     "\"job_uid\":\"u\",\"meta\":\"x\"}",
     DLB_ERR_DECODE, "meta: expected an object, got \"x\""},
    {"wrong type for a list", RT_HEAD "\"pods\":{}}", DLB_ERR_DECODE,
     "pods: expected an array, got {}"},
    {"missing required field", REQ_HEAD "\"oom_pod\":null}", DLB_ERR_DECODE,
     "stage: missing required field"},
    {"missing required nested field", RT_HEAD "\"pods\":[{\"name\":\"p0\"}]}", DLB_ERR_DECODE,
     "pods[0].type: missing required field"},
    {"missing event_id",
     "{\"type\":\"plan_request\",\"event_time_ms\":1,\"job_uid\":\"u\","
     "\"stage\":\"job_stage_create\"}",
     DLB_ERR_DECODE, "event_id: missing required field"},
    {"unknown field", REQ_HEAD "\"stage\":\"job_stage_create\",\"foo\":1}", DLB_ERR_DECODE,
     "foo: unknown field"},
    {"unknown nested field", RT_HEAD "\"pods\":[{\"name\":\"p0\",\"type\":\"ps\",\"gpu\":1}]}",
     DLB_ERR_DECODE, "pods[0].gpu: unknown field"},
    {"field given twice", REQ_HEAD "\"stage\":\"job_stage_create\",\"stage\":\"job_stage_create\"}",
     DLB_ERR_DECODE, "stage: given twice"},
    {"int out of range",
     RT_HEAD "\"pods\":[{\"name\":\"p0\",\"type\":\"ps\",\"index\":3000000000}]}", DLB_ERR_DECODE,
     "pods[0].index: 3000000000 is out of range (a 32-bit int)"},
    {"long not integral", RT_HEAD "\"global_step\":1.5}", DLB_ERR_DECODE,
     "global_step: expected an integer, got 1.5"},
    {"long beyond 2^53", RT_HEAD "\"global_step\":1e300}", DLB_ERR_DECODE,
     "global_step: 1e+300 is out of range (JSON integers are exact up to +-2^53)"},
    {"over-long id",
     "{\"type\":\"plan_request\",\"event_id\":\"p\",\"event_time_ms\":1,"
     "\"job_uid\":\"" UID200 "\",\"stage\":\"job_stage_create\"}",
     DLB_ERR_DECODE, "job_uid: 200 bytes long, more than the limit of 127"},
    {"negative memory", RT_HEAD "\"pods\":[{\"name\":\"p0\",\"type\":\"ps\",\"memory_used\":-5}]}",
     DLB_ERR_INVALID, "pods[0].memory_used: negative (-5)"},
    {"negative speed (JSON has no NaN)", RT_HEAD "\"speed\":-1.5}", DLB_ERR_INVALID,
     "speed: must be a finite non-negative number of steps/s (-1.5)"},
    {"negative pod speed",
     RT_HEAD "\"pods\":[" POD0 ",{\"name\":\"p1\",\"type\":\"worker\",\"speed\":-2}]}",
     DLB_ERR_INVALID, "pods[1].speed: must be a finite non-negative number of steps/s (-2)"},
    {"pod speed not a number",
     RT_HEAD "\"pods\":[{\"name\":\"p0\",\"type\":\"ps\",\"speed\":\"x\"}]}", DLB_ERR_DECODE,
     "pods[0].speed: expected a number, got \"x\""},
    {"unknown action",
     PLAN_HEAD "\"actions\":[{\"pod\":\"w\",\"action\":\"kill\",\"reason\":\"\"}]}",
     DLB_ERR_INVALID,
     "actions[0].action: unknown value \"kill\" (expected one of relaunch, replace)"},
    {"action without a pod",
     PLAN_HEAD "\"actions\":[{\"pod\":\"w\",\"action\":\"replace\",\"reason\":\"\"},"
               "{\"pod\":\"\",\"action\":\"relaunch\",\"reason\":\"\"}]}",
     DLB_ERR_INVALID, "actions[1].pod: must not be empty"},
    {"action missing a field", PLAN_HEAD "\"actions\":[{\"pod\":\"w\",\"reason\":\"\"}]}",
     DLB_ERR_DECODE, "actions[0].action: missing required field"},
    {"unknown stage", REQ_HEAD "\"stage\":\"job_stage_lunch\"}", DLB_ERR_INVALID,
     "stage: unknown value \"job_stage_lunch\" (expected one of job_stage_create, "
     "job_stage_ps_initial, job_stage_worker_initial, job_stage_running, job_stage_ps_running, "
     "job_stage_worker_running)"},
    {"unknown pod type", NODE_HEAD "\"kind\":\"evicted\",\"pod_name\":\"p\",\"pod_type\":\"gpu\"}",
     DLB_ERR_INVALID,
     "pod_type: unknown value \"gpu\" (expected one of ps, worker, chief, evaluator)"},
    {"unknown pod type in a sample", RT_HEAD "\"pods\":[{\"name\":\"p0\",\"type\":\"tpu\"}]}",
     DLB_ERR_INVALID,
     "pods[0].type: unknown value \"tpu\" (expected one of ps, worker, chief, evaluator)"},
    {"OOM pods without oom_pod",
     REQ_HEAD "\"stage\":\"job_stage_running\",\"oom_pods\":[\"u-worker-1\",\"u-worker-2\"]}",
     DLB_ERR_INVALID, "oom_pod: must be the first of oom_pods (\"u-worker-1\")"},
    {"oom_pod not the first OOM pod",
     REQ_HEAD "\"stage\":\"job_stage_running\",\"oom_pod\":\"u-worker-2\",\"oom_pods\":"
              "[\"u-worker-1\",\"u-worker-2\"]}",
     DLB_ERR_INVALID, "oom_pod: must be the first of oom_pods (\"u-worker-1\")"},
    {"empty OOM pod",
     REQ_HEAD "\"stage\":\"job_stage_running\",\"oom_pod\":\"a\",\"oom_pods\":[\"a\",\"\"]}",
     DLB_ERR_INVALID, "oom_pods[1]: must not be empty"},
    {"OOM pod name too long",
     REQ_HEAD "\"stage\":\"job_stage_running\",\"oom_pods\":[\"" UID200 "\"]}", DLB_ERR_INVALID,
     "oom_pods[0]: 200 bytes long, more than the limit of 127"},
    {"OOM pod not a string", REQ_HEAD "\"stage\":\"job_stage_running\",\"oom_pods\":[1]}",
     DLB_ERR_DECODE, "oom_pods[0]: expected a string, got 1"},
    {"empty config key", REQ_HEAD "\"stage\":\"job_stage_running\",\"config\":{\"\":\"x\"}}",
     DLB_ERR_INVALID, "config: a key must not be empty"},
    {"config value not a string",
     REQ_HEAD "\"stage\":\"job_stage_running\",\"config\":{\"k\":{\"a\":1}}}", DLB_ERR_DECODE,
     "config.k: expected a string, got {\"a\":1}"},
    {"pod IP too long",
     RT_HEAD "\"pods\":[{\"name\":\"p0\",\"type\":\"ps\",\"pod_ip\":\"" UID200 "\"}]}",
     DLB_ERR_DECODE, "pods[0].pod_ip: 200 bytes long, more than the limit of 47"},
    {"is_mixed not a boolean",
     RT_HEAD "\"pods\":[{\"name\":\"p0\",\"type\":\"ps\",\"is_mixed\":0}]}", DLB_ERR_DECODE,
     "pods[0].is_mixed: expected a boolean, got 0"},
    {"boolean not a boolean", JOB_HEAD "\"workflow\":{\"is_prod\":1}}", DLB_ERR_DECODE,
     "workflow.is_prod: expected a boolean, got 1"},
    {"long list item not an integer", JOB_HEAD "\"model\":{\"kv_embedding_dims\":[1,\"x\"]}}",
     DLB_ERR_DECODE, "model.kv_embedding_dims[1]: expected an integer, got \"x\""},
    {"long map value not an integer", JOB_HEAD "\"model\":{\"tensor_alloc_bytes\":{\"a\":1.5}}}",
     DLB_ERR_DECODE, "model.tensor_alloc_bytes.a: expected an integer, got 1.5"},
    {"long map key given twice", JOB_HEAD "\"model\":{\"tensor_alloc_bytes\":{\"a\":1,\"a\":2}}}",
     DLB_ERR_DECODE, "model.tensor_alloc_bytes.a: given twice"},
    {"negative tensor bytes", JOB_HEAD "\"model\":{\"tensor_alloc_bytes\":{\"a\":-1}}}",
     DLB_ERR_INVALID, "model.tensor_alloc_bytes.a: negative (-1)"},
    {"negative embedding dim", JOB_HEAD "\"model\":{\"kv_embedding_dims\":[4,-8]}}",
     DLB_ERR_INVALID, "model.kv_embedding_dims[1]: negative (-8)"},
    {"negative storage size", JOB_HEAD "\"dataset\":{\"storage_size\":-1}}", DLB_ERR_INVALID,
     "dataset.storage_size: negative (-1)"},
    {"JSON text not a string", JOB_HEAD "\"resource\":{\"worker\":1}}", DLB_ERR_DECODE,
     "resource: expected a string, got {\"worker\":1}"},
    {"unknown exit reason", JOB_HEAD "\"exit_reason\":\"Oops\"}", DLB_ERR_INVALID,
     "exit_reason: unknown value \"Oops\" (expected one of Completed, CodeError, WorkerOOM, "
     "WorkerError, PSOOM, PSError, EvaluatorOOM, EvaluatorError, UnknownError, HangError, "
     "RdzvTimeout, PendingTimeout, UncompletedTimeout, NodeCheckFailed)"},
    {"empty job uid",
     "{\"type\":\"plan_request\",\"event_id\":\"p\",\"event_time_ms\":1,"
     "\"job_uid\":\"\",\"stage\":\"job_stage_create\"}",
     DLB_ERR_INVALID, "job_uid: must not be empty"},
};

static void test_bad_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
        const bad_line_t *b = &bad_lines[i];
        dlb_event_t ev;
        char err[512] = "";
        int rc = dlb_json_to_event(cat, b->json, strlen(b->json), 0, &ev, err, sizeof(err));

        if (rc != b->err)
            fail_msg("%s: returned %s (%s), expected %s", b->what, dlb_err_name(rc), err,
                     dlb_err_name(b->err));
        if (strcmp(err, b->msg))
            fail_msg("%s: error \"%s\", expected \"%s\"", b->what, err, b->msg);
        assert_int_equal(ev.type, DLB_EV_NONE); /* nothing left to release */
    }
}

/* The caller's length bounds the input: no NUL terminator needed. */
static void test_length_bounds_input(void **state)
{
    static const char line[] = REQ_HEAD "\"stage\":\"job_stage_create\"}{garbage";
    dlb_event_t ev;
    char err[256];

    (void)state;
    assert_int_equal(
        dlb_json_to_event(cat, line, strlen(line) - strlen("{garbage"), 0, &ev, err, sizeof(err)),
        0);
    assert_string_equal(ev.u.req.stage, "job_stage_create");
    dlb_event_clear(&ev);
}

/* ---- generated defaults -------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_gen_defaults(void **state)
{
    static const char line[] =
        "{\"type\":\"plan_request\",\"job_uid\":\"u\",\"stage\":\"job_stage_create\"}";
    dlb_event_t a, b;
    int64_t before, after;
    const char *id;

    (void)state;
    before = wall_ms();
    parse_ok(line, 1, &a);
    parse_ok(line, 1, &b);
    after = wall_ms();
    id = a.u.req.event_id;
    assert_int_equal(strlen(id), 36);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            assert_int_equal(id[i], '-');
        else
            assert_non_null(strchr("0123456789abcdef", id[i]));
    }
    assert_int_equal(id[14], '4');           /* version 4 */
    assert_non_null(strchr("89ab", id[19])); /* RFC 4122 variant */
    assert_string_not_equal(a.u.req.event_id, b.u.req.event_id);
    assert_in_range(a.u.req.event_time_ms, before, after);

    /* Given values are kept. */
    parse_ok("{\"type\":\"plan_request\",\"event_id\":\"mine\",\"event_time_ms\":5,"
             "\"job_uid\":\"u\",\"stage\":\"job_stage_create\"}",
             1, &b);
    assert_string_equal(b.u.req.event_id, "mine");
    assert_int_equal(b.u.req.event_time_ms, 5);
}

/* ---- JSON output --------------------------------------------------------- */

static void test_to_json_shape(void **state)
{
    dlb_event_t ev;
    char *json = NULL, err[256];

    (void)state;
    fx_request(&ev, 0);
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), 0);
    assert_string_equal(json, "{\"type\":\"plan_request\",\"event_id\":\"req-ev-1\","
                              "\"event_time_ms\":1700000000125,\"job_uid\":\"uid-42\","
                              "\"stage\":\"job_stage_running\",\"oom_pod\":null,\"oom_pods\":[],"
                              "\"config\":{}}");
    free(json);
    dlb_event_clear(&ev);
    fx_request(&ev, 1); /* plan_request v2: every OOM pod, DLRover's config in order */
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), 0);
    assert_non_null(strstr(json,
                           "\"oom_pod\":\"uid-42-worker-3\",\"oom_pods\":[\"uid-42-worker-3\","
                           "\"uid-42-worker-1\"],\"config\":{\"" DLB_CONFIG_WORKER_PHASE
                           "\":\"sample\",\"optimizer.ps.flags\":\"\"}}"));
    free(json);
    dlb_event_clear(&ev);

    fx_config_match(&ev, 1);
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), 0);
    assert_string_equal(json, "{\"type\":\"config_match\",\"event_id\":\"cm-1\","
                              "\"event_time_ms\":1700000000126,\"job_uid\":\"uid-42\","
                              "\"rules_version\":17,\"rule_ids\":[\"rule-a\",\"rule-b\"],"
                              "\"values\":{\"ps.memory\":\"8589934592\","
                              "\"optimizer.flags\":\"[\\\"a\\\",{\\\"b\\\":1}]\"},"
                              "\"trigger_event_id\":\"job-ev-1\"}");
    free(json);
    dlb_event_clear(&ev);

    fx_node(&ev, 1);
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), 0);
    assert_non_null(strstr(json, ",\"phase\":\"Failed\","));
    assert_non_null(strstr(json, ",\"memory_requested\":4294967296,\"cpu_requested\":2.5}"));
    free(json);

    /* v2: pods[].speed a number or null, actions after pods; v3: the rest of PodMeta. */
    fx_runtime(&ev, 2);
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), 0);
    assert_non_null(strstr(json, "\"memory_requested\":8589934592,\"speed\":null,"));
    assert_non_null(strstr(json, "\"memory_requested\":8589934592,\"speed\":4.25,"
                                 "\"pod_ip\":\"10.0.0.11\",\"node_ip\":\"192.168.1.7\","
                                 "\"host_name\":\"uid-42-worker-1\",\"namespace\":\"ml\","
                                 "\"is_mixed\":false}]"));
    free(json);
    dlb_event_clear(&ev);
    fx_plan(&ev, 1);
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), 0);
    assert_non_null(strstr(json, "}}],\"actions\":[{\"pod\":\"uid-42-worker-3\","
                                 "\"action\":\"replace\",\"reason\":\"0.4 steps/s against a "
                                 "median of 2.1\"},{\"pod\":\"uid-42-worker-5\",\"action\":"
                                 "\"relaunch\",\"reason\":\"\"}],\"optimizer\":"));
    free(json);
    dlb_event_clear(&ev);

    memset(&ev, 0, sizeof(ev));
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), DLB_ERR_INVALID);
    assert_null(json);
}

/* Doubles render with as many digits as they need to read back exactly:
 * cJSON alone printed 0.1 + 0.2 as 0.3 (found by tests/fuzz/fuzz_json). */
static void test_json_double_exact(void **state)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.1 + 0.2, "0.30000000000000004"},
        {1.0 / 3.0, "0.3333333333333333"},
        {12.75, "12.75"},
        {4.9406564584124654e-324, "4.94065645841247e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {-0.0, "-0"},
    };
    dlb_event_t in, out;
    char *json, want[64], err[512];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fx_runtime(&in, 1);
        in.u.rt.pods[0].cpu_used = cases[i].v;
        assert_int_equal(dlb_event_to_json(cat, &in, &json, err, sizeof(err)), 0);
        snprintf(want, sizeof(want), "\"cpu_used\":%s,", cases[i].text);
        if (!strstr(json, want))
            fail_msg("%s not in %s", want, json);
        if (dlb_json_to_event(cat, json, strlen(json), 0, &out, err, sizeof(err)))
            fail_msg("%s: %s", json, err);
        assert_events_equal(&in, &out); /* bit for bit, -0.0 included */
        free(json);
        dlb_event_clear(&in);
        dlb_event_clear(&out);
    }
}

/* Longs render as their exact digits: cJSON alone printed 9007199254740991
 * as 9.00719925474099e+15 (found by tests/fuzz/fuzz_codec). */
static void test_json_long_exact(void **state)
{
    static const struct {
        int64_t v;
        const char *text;
    } cases[] = {
        {999999999999999LL, "999999999999999"},   {1000000000000000LL, "1000000000000000"},
        {1234567890123457LL, "1234567890123457"}, {9007199254740991LL, "9007199254740991"},
        {9007199254740992LL, "9007199254740992"}, /* 2^53, the largest JSON input takes */
    };
    dlb_event_t in, out;
    char *json, want[64], err[512];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fx_job(&in, 1);
        in.u.job.model.flops = cases[i].v;
        assert_int_equal(dlb_event_to_json(cat, &in, &json, err, sizeof(err)), 0);
        snprintf(want, sizeof(want), "\"flops\":%s,", cases[i].text);
        if (!strstr(json, want))
            fail_msg("%s not in %s", want, json);
        if (dlb_json_to_event(cat, json, strlen(json), 0, &out, err, sizeof(err)))
            fail_msg("%s: %s", json, err);
        assert_events_equal(&in, &out);
        free(json);
        dlb_event_clear(&in);
        dlb_event_clear(&out);
    }
}

static void test_json_roundtrip(void **state)
{
    (void)state;
    for (int i = 0; i < FX_SAMPLES; i++) {
        dlb_event_t in, out;
        char *json = NULL, err[512] = "";

        fx_sample(&in, i);
        assert_int_equal(dlb_event_to_json(cat, &in, &json, err, sizeof(err)), 0);
        assert_memory_equal(json, "{\"type\":\"", 9);
        if (dlb_json_to_event(cat, json, strlen(json), 0, &out, err, sizeof(err)))
            fail_msg("sample %d: %s: %s", i, json, err);
        assert_events_equal(&in, &out);
        free(json);
        dlb_event_clear(&in);
        dlb_event_clear(&out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_job_event),      cmocka_unit_test(test_good_job_event_v2),
        cmocka_unit_test(test_good_runtime_sample), cmocka_unit_test(test_good_node_event),
        cmocka_unit_test(test_good_plan_request),   cmocka_unit_test(test_good_plan_actions),
        cmocka_unit_test(test_bad_lines),           cmocka_unit_test(test_length_bounds_input),
        cmocka_unit_test(test_gen_defaults),        cmocka_unit_test(test_to_json_shape),
        cmocka_unit_test(test_json_roundtrip),      cmocka_unit_test(test_json_double_exact),
        cmocka_unit_test(test_json_long_exact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
