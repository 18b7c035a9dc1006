/* DLRover's HTTP Brain messages (producers/gateway/gw_http_map.c): requests
 * parsed to the schema's letter (every field optional; a wrong type, an
 * unknown field, a field twice, bytes that are not JSON refused, naming the
 * field or the place), the plan request an optimize becomes, and the
 * answers rendered as DLRover's pydantic models read them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "err.h"
#include "event.h"
#include "gw_http_map.h"
#include "gw_map.h"
#include "opt_plan.h"

static int parse(dlb_gw_http_kind_t kind, const char *body, dlb_gw_http_request_t *r,
                 unsigned *status, char *err, size_t size)
{
    return dlb_gw_http_parse(kind, body, strlen(body), r, status, err, size);
}

static void test_parse(void **state)
{
    dlb_gw_http_request_t r;
    unsigned status;
    char err[512];

    (void)state;
    /* Everything DLRover's OptimizeRequest has. */
    assert_int_equal(parse(DLB_GW_HTTP_OPTIMIZE,
                           "{\"type\":\"job_stage_worker_initial\",\"config\":{\"optimizer_name\":"
                           "\"BaseOptimizer\",\"customized_config\":{\"optimizer.worker.optimize-"
                           "phase\":\"sample\"}},\"job\":{\"uuid\":\"j-1\",\"cluster\":\"c1\","
                           "\"namespace\":\"ml\",\"user\":\"ana\",\"app\":\"ctr\"}}",
                           &r, &status, err, sizeof(err)),
                     0);
    assert_string_equal(r.type, "job_stage_worker_initial");
    assert_string_equal(r.optimizer_name, "BaseOptimizer");
    assert_int_equal(r.config_cnt, 1);
    assert_string_equal(r.config[0].key, "optimizer.worker.optimize-phase");
    assert_string_equal(r.config[0].value, "sample");
    assert_string_equal(r.job.uuid, "j-1");
    assert_string_equal(r.job.ns, "ml");
    assert_string_equal(r.job.app, "ctr");
    dlb_gw_http_request_clear(&r);
    /* Every field has a default: {} is a request, its strings empty. */
    assert_int_equal(parse(DLB_GW_HTTP_JOB_CONFIG, " {} \n", &r, &status, err, sizeof(err)), 0);
    assert_string_equal(r.type, "");
    assert_string_equal(r.job.uuid, "");
    dlb_gw_http_request_clear(&r);

    static const struct {
        dlb_gw_http_kind_t kind;
        const char *body;
        unsigned status;
        const char *err;
    } bad[] = {
        {DLB_GW_HTTP_OPTIMIZE, "", 400, "the body is empty: a JSON OptimizeRequest expected"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"type\":\n  \"x\",,}", 400,
         "the body is not JSON: it breaks at line 2, column"},
        {DLB_GW_HTTP_OPTIMIZE, "{} {}", 400, "more follows at line 1, column 4"},
        {DLB_GW_HTTP_OPTIMIZE, "\"job\"", 400, "the body: expected a JSON object, got a string"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"type\":1}", 422, "type: expected a string, got a number"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"type\":true}", 422, "type: expected a string, got a boolean"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"job\":[]}", 422, "job: expected an object, got an array"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"job\":{\"uuid\":null}}", 422,
         "job.uuid: expected a string, got null"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"job\":{\"name\":\"x\"}}", 422, "job.name: not a field of job"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"jobs\":[]}", 422, "jobs: not a field of the request"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"job\":{\"app\":\"a\",\"app\":\"b\"}}", 422,
         "job.app: given twice"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"config\":{\"customized_config\":[]}}", 422,
         "config.customized_config: expected an object of strings, got an array"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"config\":{\"customized_config\":{\"a\":\"1\",\"a\":\"2\"}}}",
         422, "config.customized_config.a: given twice"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"config\":{\"optimizer\":\"x\"}}", 422,
         "config.optimizer: not a field of config"},
        {DLB_GW_HTTP_OPTIMIZE, "{\"job\":{\"user\":\"\xc3\"}}", 422, "job.user: not UTF-8"},
        /* a JobConfigRequest has no config */
        {DLB_GW_HTTP_JOB_CONFIG, "{\"config\":{}}", 422, "config: not a field of the request"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(parse(bad[i].kind, bad[i].body, &r, &status, err, sizeof(err)),
                         DLB_ERR_INVALID);
        if (!strstr(err, bad[i].err) || status != bad[i].status) {
            fprintf(stderr, "case %zu: %u \"%s\", expected %u \"%s\"\n", i, status, err,
                    bad[i].status, bad[i].err);
            fail();
        }
        assert_null(r.type); /* cleared */
    }
}

static void test_request_event(void **state)
{
    dlb_gw_http_request_t r;
    dlb_job_meta_t meta;
    dlb_event_t ev;
    unsigned status;
    char err[512], body[512];

    (void)state;
    assert_int_equal(
        parse(DLB_GW_HTTP_OPTIMIZE,
              "{\"type\":\"job_stage_worker_running\",\"config\":{\"customized_config\":"
              "{\"optimizer.worker.optimize-phase\":\"stable\"}},\"job\":{\"uuid\":"
              "\"j-2\",\"user\":\"ana\",\"cluster\":\"c1\"}}",
              &r, &status, err, sizeof(err)),
        0);
    assert_int_equal(dlb_gw_http_request_event(&r, "req-1", 1000, &ev, err, sizeof(err)), 0);
    assert_int_equal(ev.type, DLB_EV_PLAN_REQUEST);
    assert_string_equal(ev.u.req.job_uid, "j-2");
    assert_string_equal(ev.u.req.event_id, "req-1");
    assert_string_equal(ev.u.req.stage, "job_stage_worker_running");
    assert_int_equal(ev.u.req.config_cnt, 1);
    assert_string_equal(ev.u.req.config[0].value, "stable");
    assert_false(ev.u.req.has_oom_pod); /* the HTTP schema has no pods */
    dlb_event_clear(&ev);
    assert_int_equal(dlb_gw_http_job_meta(&r, &meta, err, sizeof(err)), 0);
    assert_string_equal(meta.user, "ana");
    assert_string_equal(meta.cluster, "c1");
    assert_string_equal(meta.group, "");
    dlb_gw_http_request_clear(&r);

    /* What gw_map.c refuses, named as the HTTP schema names it. */
    static const struct {
        const char *body, *err;
    } bad[] = {
        {"{\"type\":\"job_stage_create\"}", "job.uuid: missing"},
        {"{\"job\":{\"uuid\":\"j\"}}", "type: missing"},
        {"{\"type\":\"job_stage_lunch\",\"job\":{\"uuid\":\"j\"}}", "stage"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(DLB_GW_HTTP_OPTIMIZE, bad[i].body, &r, &status, err, sizeof(err)),
                         0);
        assert_int_equal(dlb_gw_http_request_event(&r, "req-2", 1000, &ev, err, sizeof(err)),
                         DLB_ERR_INVALID);
        if (!strstr(err, bad[i].err)) {
            fprintf(stderr, "case %zu: \"%s\", expected \"%s\"\n", i, err, bad[i].err);
            fail();
        }
        dlb_gw_http_request_clear(&r);
    }
    snprintf(body, sizeof(body), "{\"type\":\"job_stage_create\",\"job\":{\"uuid\":\"%0200d\"}}",
             0);
    assert_int_equal(parse(DLB_GW_HTTP_OPTIMIZE, body, &r, &status, err, sizeof(err)), 0);
    assert_int_equal(dlb_gw_http_request_event(&r, "req-3", 1000, &ev, err, sizeof(err)),
                     DLB_ERR_INVALID);
    assert_non_null(strstr(err, "job.uuid: 200 bytes, at most 127"));
    dlb_gw_http_request_clear(&r);
    snprintf(body, sizeof(body), "{\"job\":{\"cluster\":\"%0300d\"}}", 0);
    assert_int_equal(parse(DLB_GW_HTTP_JOB_CONFIG, body, &r, &status, err, sizeof(err)), 0);
    assert_int_equal(dlb_gw_http_job_meta(&r, &meta, err, sizeof(err)), DLB_ERR_INVALID);
    assert_non_null(strstr(err, "job.cluster: 300 bytes, at most 255"));
    dlb_gw_http_request_clear(&r);
}

static const cJSON *at(const cJSON *o, const char *path)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
        o = cJSON_GetObjectItemCaseSensitive(o, k);
    return o;
}

static void test_optimize_json(void **state)
{
    dlb_gw_http_job_t job = {"j-1", "c1", "ml", "ana", "ctr"};
    dlb_event_t pev = {.type = DLB_EV_PLAN}, req = {.type = DLB_EV_PLAN_REQUEST};
    dlb_plan_t *plan = &pev.u.plan;
    dlb_group_resource_t *g;
    dlb_pod_resource_t *pod;
    char err[256], *json;
    uint8_t *out;
    size_t len;
    cJSON *o;

    (void)state;
    snprintf(req.u.req.job_uid, sizeof(req.u.req.job_uid), "j-1");
    snprintf(req.u.req.stage, sizeof(req.u.req.stage), "job_stage_ps_running");
    snprintf(plan->reason, sizeof(plan->reason), "PS hot: 3 -> 4");
    plan->event_time_ms = 1767225600123;
    assert_non_null(g = dlb_plan_add_group(plan, "ps"));
    g->count = 4;
    g->resource.memory = (int64_t)12 << 30;
    g->resource.cpu = 1.2;
    assert_non_null(pod = dlb_plan_add_pod(plan, "j-1-edljob-ps-1"));
    pod->resource.memory = (int64_t)20 << 30;
    pod->resource.cpu = 10.5;
    snprintf(pod->resource.priority, sizeof(pod->resource.priority), "high");
    assert_int_equal(dlb_gw_plan_response(&req.u.req, plan, NULL, &out, &len, err, sizeof(err)), 0);
    assert_non_null(json = dlb_gw_http_optimize_json(out, len, &job));
    assert_non_null(o = cJSON_Parse(json));
    assert_true(cJSON_IsTrue(at(o, "response.success")));
    assert_string_equal(at(o, "response.reason")->valuestring, "PS hot: 3 -> 4");
    assert_true(at(o, "job_opt_plan.timestamp")->valuedouble == 1767225600123.0);
    assert_true(at(o, "job_opt_plan.job_resource.node_group_resources.ps.count")->valuedouble == 4);
    /* memory in bytes, as over gRPC; cpu the decimal the plan holds, not float's 1.2000000477 */
    assert_true(
        at(o, "job_opt_plan.job_resource.node_group_resources.ps.resource.memory")->valuedouble ==
        (double)((int64_t)12 << 30));
    assert_non_null(strstr(json, "\"cpu\":1.2,"));
    assert_true(
        at(o, "job_opt_plan.job_resource.node_resources.j-1-edljob-ps-1.cpu")->valuedouble == 10.5);
    /* priority is an integer in the HTTP schema: a name is 0 */
    assert_true(
        at(o, "job_opt_plan.job_resource.node_resources.j-1-edljob-ps-1.priority")->valuedouble ==
        0);
    assert_string_equal(at(o, "job_opt_plan.job_meta.namespace")->valuestring, "ml");
    assert_string_equal(at(o, "job_opt_plan.job_meta.app")->valuestring, "ctr");
    cJSON_Delete(o);
    free(json);
    free(out);
    dlb_event_clear(&pev);

    /* No plan in time: success false, the reason, an empty plan. */
    assert_int_equal(
        dlb_gw_plan_response(&req.u.req, NULL, "no plan within 5 ms", &out, &len, err, sizeof(err)),
        0);
    assert_non_null(json = dlb_gw_http_optimize_json(out, len, &job));
    assert_non_null(o = cJSON_Parse(json));
    assert_true(cJSON_IsFalse(at(o, "response.success")));
    assert_string_equal(at(o, "response.reason")->valuestring, "no plan within 5 ms");
    assert_int_equal(cJSON_GetArraySize(at(o, "job_opt_plan.job_resource.node_group_resources")),
                     0);
    cJSON_Delete(o);
    free(json);
    free(out);
    assert_null(dlb_gw_http_optimize_json((const uint8_t *)"\xff\xff", 2, &job));
}

static void test_config_json(void **state)
{
    const char *ids[] = {"ads-big", "default"};
    dlb_config_value_t v[] = {
        {"log", "\"debug\""}, {"lr", "0.01"}, {"ps", "{\"cpu\": 12}"}, {"tags", "[\"a\",\"b\"]"}};
    dlb_match_t m = {.rule_ids = ids, .rule_ids_cnt = 2, .values = v, .values_cnt = 4};
    char *json;

    (void)state;
    assert_non_null(json = dlb_gw_http_config_json(&m, 7));
    assert_string_equal(json, "{\"response\":{\"success\":true,\"reason\":\"rules version 7: 2 "
                              "rule(s) in scope, first ads-big\"},\"job_configs\":{\"log\":"
                              "\"debug\",\"lr\":\"0.01\",\"ps\":\"{\\\"cpu\\\": 12}\",\"tags\":"
                              "\"[\\\"a\\\",\\\"b\\\"]\"}}");
    free(json);
    m.rule_ids_cnt = m.values_cnt = 0;
    assert_non_null(json = dlb_gw_http_config_json(&m, 0));
    assert_string_equal(json, "{\"response\":{\"success\":true,\"reason\":\"no rules version "
                              "applied yet: no configuration\"},\"job_configs\":{}}");
    free(json);
    assert_non_null(json = dlb_gw_http_error_json("job.uuid: \"x\""));
    assert_string_equal(json, "{\"detail\":\"job.uuid: \\\"x\\\"\"}");
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_request_event),
        cmocka_unit_test(test_optimize_json),
        cmocka_unit_test(test_config_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
