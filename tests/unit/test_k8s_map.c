/* Kubernetes objects -> node events: each case is a pod (or node, or Event)
 * as the API server sends it and the events it must give, ids included; the
 * same state mapped twice gives the same ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "k8s_map.h"

static const dlb_k8s_labels_t labels = {"job", "type", "index", 0};

#define META(uid, extra)                                                                           \
    "\"metadata\":{\"name\":\"p-" uid "\",\"namespace\":\"ns\",\"uid\":\"" uid "\","               \
    "\"creationTimestamp\":\"2024-05-01T10:00:00Z\"," extra "}"
#define JOB_LABELS "\"labels\":{\"job\":\"j1\",\"type\":\"worker\",\"index\":\"3\"}"
#define SPEC                                                                                       \
    "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"main\",\"resources\":{"             \
    "\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}},{\"name\":\"side\",\"resources\":{"      \
    "\"requests\":{\"memory\":\"512Mi\"}}}]}"

typedef struct pod_case {
    const char *name;
    const char *json;
    int deleted;
    int read_err;         /* dlb_k8s_pod_read's result */
    const char *expected; /* "kind id-suffix phase|..." in order, "" for none */
} pod_case_t;

static const pod_case_t pod_cases[] = {
    {"pending", "{" META("u1", JOB_LABELS) ",\"spec\":{},\"status\":{\"phase\":\"Pending\"}}", 0, 0,
     "pod_phase u1-phase-Pending Pending"},
    {"running", "{" META("u2", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Running\"}}", 0, 0,
     "pod_phase u2-phase-Running Running"},
    {"oom in lastState",
     "{" META("u3", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Running\","
                                "\"containerStatuses\":[{\"name\":\"main\",\"restartCount\":1,"
                                "\"lastState\":{\"terminated\":{\"reason\":\"OOMKilled\","
                                "\"exitCode\":137,\"containerID\":\"c://1\"}}}]}}",
     0, 0, "oom_killed u3-oom-* Running|pod_phase u3-phase-Running Running"},
    {"evicted",
     "{" META("u4", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Failed\","
                                "\"reason\":\"Evicted\",\"message\":\"low memory\"}}",
     0, 0, "evicted u4-evicted Failed|pod_phase u4-phase-Failed Failed"},
    {"preempted (DisruptionTarget)",
     "{" META("u5", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Running\",\"conditions\":[{"
                                "\"type\":\"DisruptionTarget\",\"status\":\"True\","
                                "\"reason\":\"PreemptionByScheduler\"}]}}",
     0, 0, "preempted u5-preempted Running|pod_phase u5-phase-Running Running"},
    {"deleted", "{" META("u6", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Succeeded\"}}", 1, 0,
     "pod_phase u6-phase-Succeeded Succeeded|deleted u6-deleted Succeeded"},
    {"no job label", "{" META("u7", "\"labels\":{\"app\":\"x\"}") ",\"status\":{}}", 0,
     DLB_ERR_NOTFOUND, NULL},
    {"no labels at all", "{\"metadata\":{\"name\":\"p\",\"uid\":\"u8\"}}", 0, DLB_ERR_NOTFOUND,
     NULL},
    {"no uid", "{\"metadata\":{\"name\":\"p\"," JOB_LABELS "}}", 0, DLB_ERR_INVALID, NULL},
    {"not an object", "[1,2]", 0, DLB_ERR_INVALID, NULL},
};

/* Compares out with "kind id phase|..." ('*' at the end of an id matches any rest). */
static void check_out(const char *name, const dlb_k8s_out_t *out, const char *expected)
{
    char buf[1024], *save = NULL, *tok;
    size_t i = 0;

    snprintf(buf, sizeof(buf), "%s", expected);
    for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save), i++) {
        char kind[64], id[160], phase[32];
        size_t n;
        assert_int_equal(sscanf(tok, "%63s %159s %31s", kind, id, phase), 3);
        if (i >= out->cnt)
            fail_msg("%s: event %zu (%s) missing", name, i, tok);
        assert_string_equal(out->ev[i].kind, kind);
        n = strlen(id);
        if (id[n - 1] == '*')
            assert_int_equal(strncmp(out->ev[i].event_id, id, n - 1), 0);
        else
            assert_string_equal(out->ev[i].event_id, id);
        assert_string_equal(out->ev[i].phase, phase);
        assert_string_equal(out->ev[i].job_uid, "j1");
    }
    if (out->cnt != i)
        fail_msg("%s: %zu events, expected %zu", name, out->cnt, i);
}

static void test_pods(void **state)
{
    dlb_k8s_out_t out = {0}, again = {0};
    (void)state;

    for (size_t c = 0; c < sizeof(pod_cases) / sizeof(pod_cases[0]); c++) {
        const pod_case_t *t = &pod_cases[c];
        cJSON *obj = cJSON_Parse(t->json);
        dlb_k8s_pod_t pod;
        char errstr[256];
        int rc;

        if (!obj)
            fail_msg("%s: bad fixture", t->name);
        rc = dlb_k8s_pod_read(obj, &labels, &pod, errstr, sizeof(errstr));
        if (rc != t->read_err)
            fail_msg("%s: read returned %d (%s), expected %d", t->name, rc, errstr, t->read_err);
        if (!rc) {
            dlb_k8s_out_reset(&out);
            dlb_k8s_out_reset(&again);
            assert_int_equal(
                dlb_k8s_map_pod(obj, &pod, t->deleted, 1000, &out, errstr, sizeof(errstr)), 0);
            check_out(t->name, &out, t->expected);
            /* stateless: the same state, the same ids */
            assert_int_equal(
                dlb_k8s_map_pod(obj, &pod, t->deleted, 2000, &again, errstr, sizeof(errstr)), 0);
            assert_int_equal(again.cnt, out.cnt);
            for (size_t i = 0; i < out.cnt; i++)
                assert_string_equal(again.ev[i].event_id, out.ev[i].event_id);
        } else {
            assert_true(strlen(errstr) > 0);
        }
        cJSON_Delete(obj);
    }
    dlb_k8s_out_free(&out);
    dlb_k8s_out_free(&again);
}

static void test_pod_fields(void **state)
{
    cJSON *obj =
        cJSON_Parse("{" META("u2", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Running\"}}");
    dlb_k8s_labels_t owner = labels;
    dlb_k8s_pod_t pod;
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_k8s_pod_read(obj, &labels, &pod, errstr, sizeof(errstr)), 0);
    assert_string_equal(pod.name, "p-u2");
    assert_string_equal(pod.ns, "ns");
    assert_string_equal(pod.type, "worker");
    assert_int_equal(pod.index, 3);
    assert_string_equal(pod.node, "n1");
    assert_int_equal(pod.memory, 1536 * 1024 * 1024LL);
    assert_true(pod.cpu > 0.499 && pod.cpu < 0.501);
    /* k8s.job.uid=owner without a controller: not a job pod */
    owner.job_uid_owner = 1;
    assert_int_equal(dlb_k8s_pod_read(obj, &owner, &pod, errstr, sizeof(errstr)), DLB_ERR_NOTFOUND);
    cJSON_Delete(obj);
}

static void test_nodes(void **state)
{
    static const char *const ready =
        "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\",\"lastTransitionTime\":\"2024-05-01T09:00:00Z\"}]}}";
    static const char *const unknown =
        "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"Unknown\",\"lastTransitionTime\":\"2024-05-01T10:00:00Z\"}]}}";
    static const char *const tainted =
        "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":"
        "\"cloud.google.com/impending-node-termination\",\"effect\":\"NoSchedule\"}]},"
        "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
        "\"lastTransitionTime\":\"2024-05-01T11:00:00Z\"}]}}";
    cJSON *pj =
        cJSON_Parse("{" META("u2", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Running\"}}");
    const struct {
        const char *prev, *cur;
        const char *expected;
    } cases[] = {
        {NULL, ready, ""},
        {ready, unknown, "node_not_ready u2-notready-* NotReady"},
        {unknown, ready, "node_phase u2-ready-* Ready"},
        {unknown, tainted, "node_phase u2-ready-* Ready|preempted u2-preempted Running"},
    };
    dlb_k8s_out_t out = {0};
    dlb_k8s_pod_t pod;
    const dlb_k8s_pod_t *pods[1] = {&pod};
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_k8s_pod_read(pj, &labels, &pod, errstr, sizeof(errstr)), 0);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        dlb_k8s_node_t prev, cur;
        cJSON *pc = cases[c].prev ? cJSON_Parse(cases[c].prev) : NULL;
        cJSON *cc = cJSON_Parse(cases[c].cur);
        if (pc)
            assert_int_equal(dlb_k8s_node_read(pc, &prev, errstr, sizeof(errstr)), 0);
        assert_int_equal(dlb_k8s_node_read(cc, &cur, errstr, sizeof(errstr)), 0);
        assert_true(dlb_k8s_node_changed(pc ? &prev : NULL, &cur));
        dlb_k8s_out_reset(&out);
        assert_int_equal(
            dlb_k8s_map_node(pc ? &prev : NULL, &cur, pods, 1, 5, &out, errstr, sizeof(errstr)), 0);
        check_out(cases[c].cur, &out, cases[c].expected);
        cJSON_Delete(pc);
        cJSON_Delete(cc);
    }
    dlb_k8s_out_free(&out);
    cJSON_Delete(pj);
}

static void test_events(void **state)
{
    const struct {
        const char *json;
        const char *expected;
    } cases[] = {
        {"{\"involvedObject\":{\"kind\":\"Pod\",\"uid\":\"u2\"},\"reason\":\"Preempted\","
         "\"lastTimestamp\":\"2024-05-01T10:00:00Z\"}",
         "preempted u2-preempted Running"},
        {"{\"involvedObject\":{\"kind\":\"Pod\",\"uid\":\"u2\"},\"reason\":\"Evicted\"}",
         "evicted u2-evicted Running"},
        {"{\"involvedObject\":{\"kind\":\"Pod\",\"uid\":\"u2\"},\"reason\":\"Scheduled\"}", ""},
    };
    cJSON *pj =
        cJSON_Parse("{" META("u2", JOB_LABELS) "," SPEC ",\"status\":{\"phase\":\"Running\"}}");
    cJSON *node_ev = cJSON_Parse("{\"involvedObject\":{\"kind\":\"Node\",\"uid\":\"x\"}}");
    dlb_k8s_out_t out = {0};
    dlb_k8s_pod_t pod;
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_k8s_pod_read(pj, &labels, &pod, errstr, sizeof(errstr)), 0);
    assert_null(dlb_k8s_event_pod_uid(node_ev));
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        cJSON *e = cJSON_Parse(cases[c].json);
        assert_string_equal(dlb_k8s_event_pod_uid(e), "u2");
        dlb_k8s_out_reset(&out);
        assert_int_equal(dlb_k8s_map_event(e, &pod, 5, &out, errstr, sizeof(errstr)), 0);
        check_out(cases[c].json, &out, cases[c].expected);
        cJSON_Delete(e);
    }
    dlb_k8s_out_reset(&out);
    assert_int_equal(dlb_k8s_map_pod_gone(&pod, 5, &out, errstr, sizeof(errstr)), 0);
    check_out("gone", &out, "deleted u2-deleted Running");
    dlb_k8s_out_free(&out);
    cJSON_Delete(node_ev);
    cJSON_Delete(pj);
}

static void test_values(void **state)
{
    const struct {
        const char *s;
        int rc;
        double v;
    } q[] = {{"16Gi", 0, 17179869184.0}, {"500m", 0, 0.5}, {"1e3", 0, 1000.0}, {"2", 0, 2.0},
             {"1k", 0, 1000.0},          {"", -1, 0},      {"-1", -1, 0},      {"3Qi", -1, 0}};
    const struct {
        const char *s;
        int rc;
        int64_t ms;
    } t[] = {{"2024-05-01T10:00:00Z", 0, 1714557600000LL},
             {"2024-05-01T10:00:00.5Z", 0, 1714557600500LL},
             {"2024-05-01T12:00:00+02:00", 0, 1714557600000LL},
             {"2024-05-01", -1, 0},
             {"2024-05-01T10:00:00", -1, 0}};
    double v;
    int64_t ms;
    (void)state;

    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        assert_int_equal(dlb_k8s_quantity(q[i].s, &v), q[i].rc);
        if (!q[i].rc)
            assert_true(v > q[i].v * 0.999999 && v < q[i].v * 1.000001);
    }
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        assert_int_equal(dlb_k8s_time_ms(t[i].s, &ms), t[i].rc);
        if (!t[i].rc)
            assert_int_equal(ms, t[i].ms);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pods),   cmocka_unit_test(test_pod_fields),
        cmocka_unit_test(test_nodes),  cmocka_unit_test(test_events),
        cmocka_unit_test(test_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
