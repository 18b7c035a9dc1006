/* The gateway paths' messages: the OptimizeRequest the bench packs (gRPC)
 * or writes (HTTP Brain) is what the gateway turns into the plan request a
 * DLRover master's would be, and their reading of an OptimizeResponse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench_gateway.h"
#include "bench_gateway_http.h"
#include "brain.pb-c.h"
#include "event.h"
#include "gw_http_map.h"
#include "gw_map.h"

static void test_pack_request(void **state)
{
    Brain__OptimizeRequest *r;
    dlb_event_t ev;
    char errstr[256];
    uint8_t *buf = NULL;
    size_t len = 0;
    (void)state;

    assert_int_equal(dlb_bench_gw_pack_request("job_stage_running", "bench-x-j0007", &buf, &len,
                                               errstr, sizeof(errstr)),
                     0);
    assert_non_null(r = brain__optimize_request__unpack(NULL, len, buf));
    assert_string_equal(r->type, "job_stage_running");
    assert_int_equal(r->n_jobs, 1);
    assert_string_equal(r->jobs[0]->uid, "bench-x-j0007");
    assert_null(r->jobs[0]->state);
    /* The gateway's own mapping reads it as the plan request of that job and
     * stage, with no OOM pod. */
    assert_int_equal(dlb_gw_request_event(r, "ev-1", 1000, &ev, errstr, sizeof(errstr)), 0);
    assert_int_equal(ev.type, DLB_EV_PLAN_REQUEST);
    assert_string_equal(ev.u.req.job_uid, "bench-x-j0007");
    assert_string_equal(ev.u.req.stage, "job_stage_running");
    assert_int_equal(ev.u.req.has_oom_pod, 0);
    dlb_event_clear(&ev);
    brain__optimize_request__free_unpacked(r, NULL);
    free(buf);
}

/* Pack an OptimizeResponse with or without its Response. */
static uint8_t *pack_response(int with_response, int success, size_t *len)
{
    Brain__OptimizeResponse r = BRAIN__OPTIMIZE_RESPONSE__INIT;
    Brain__Response st = BRAIN__RESPONSE__INIT;
    uint8_t *buf;

    st.success = success;
    st.reason = (char *)(success ? "" : "no plan for job_stage_running within 5000 ms");
    if (with_response)
        r.response = &st;
    *len = brain__optimize_response__get_packed_size(&r);
    buf = malloc(*len ? *len : 1);
    assert_non_null(buf);
    brain__optimize_response__pack(&r, buf);
    return buf;
}

static void test_response_success(void **state)
{
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    uint8_t *buf;
    size_t len;
    (void)state;

    buf = pack_response(1, 1, &len);
    assert_int_equal(dlb_bench_gw_response_success(buf, len), 1);
    free(buf);
    buf = pack_response(1, 0, &len);
    assert_int_equal(dlb_bench_gw_response_success(buf, len), 0);
    free(buf);
    /* No Response at all (an empty message): not a plan. */
    buf = pack_response(0, 0, &len);
    assert_int_equal(len, 0);
    assert_int_equal(dlb_bench_gw_response_success(buf, len), 0);
    free(buf);
    assert_int_equal(dlb_bench_gw_response_success(garbage, sizeof(garbage)), -1);
}

static void test_http_messages(void **state)
{
    dlb_gw_http_request_t r;
    dlb_event_t ev;
    unsigned status;
    char errstr[256], *json;

    (void)state;
    assert_non_null(json = dlb_bench_http_request("job_stage_running", "bench-x-j0007"));
    /* Every field DLRover's client sends, and the gateway reads it. */
    assert_string_equal(json, "{\"type\":\"job_stage_running\",\"config\":{\"optimizer_name\":"
                              "\"\",\"customized_config\":{}},\"job\":{\"uuid\":\"bench-x-j0007\","
                              "\"cluster\":\"\",\"namespace\":\"\",\"user\":\"\",\"app\":\"\"}}");
    assert_int_equal(dlb_gw_http_parse(DLB_GW_HTTP_OPTIMIZE, json, strlen(json), &r, &status,
                                       errstr, sizeof(errstr)),
                     0);
    assert_int_equal(dlb_gw_http_request_event(&r, "e-1", 1000, &ev, errstr, sizeof(errstr)), 0);
    assert_string_equal(ev.u.req.job_uid, "bench-x-j0007");
    assert_string_equal(ev.u.req.stage, "job_stage_running");
    dlb_event_clear(&ev);
    dlb_gw_http_request_clear(&r);
    free(json);
    assert_int_equal(dlb_bench_http_response_success(
                         "{\"response\":{\"success\":true,\"reason\":\"\"},\"job_opt_plan\":{}}"),
                     1);
    assert_int_equal(
        dlb_bench_http_response_success("{\"response\":{\"success\":false},\"job_opt_plan\":{}}"),
        0);
    assert_int_equal(dlb_bench_http_response_success("{\"detail\":\"job.uuid: missing\"}"), -1);
    assert_int_equal(dlb_bench_http_response_success("not json"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_request),
        cmocka_unit_test(test_response_success),
        cmocka_unit_test(test_http_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
