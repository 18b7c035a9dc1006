/* dlb_schemareg_*: every route of the read-only Confluent Schema Registry API
 * against Confluent's documented shapes (subjects, versions, schemas by id,
 * lookup, config, mode), bad ids, subjects and versions with their error
 * codes, writes answering 405, environments changing under it, and the HTTP
 * server answering with the registry's content type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "catalog_fixture.h"
#include "conf.h"
#include "err.h"
#include "event.h"
#include "kafka.h"
#include "schemareg.h"

static const dlb_http_conf_t test_bounds = {64, 16, 5000};

static dlb_schemareg_t *reg;

static int reg_setup(void **state)
{
    static const char *const envs[] = {"dlbrain", "sim1"};
    char err[256];

    if (setup(state))
        return -1;
    if (dlb_schemareg_new(&reg, cat, err, sizeof(err)) ||
        dlb_schemareg_set_envs(reg, envs, 2, err, sizeof(err))) {
        fprintf(stderr, "schemareg: %s\n", err);
        return -1;
    }
    return 0;
}

static int reg_teardown(void **state)
{
    dlb_schemareg_destroy(reg);
    return teardown(state);
}

/* One request; *json is its parsed body (the caller deletes it). */
static int call(const char *method, const char *path, const char *body, cJSON **json)
{
    char *out = NULL;
    size_t len = 0;
    int status = dlb_schemareg_answer(reg, method, path, body, body ? strlen(body) : 0, &out, &len);

    assert_true(status > 0);
    assert_non_null(out);
    assert_int_equal(strlen(out), len);
    *json = cJSON_Parse(out);
    assert_non_null(*json);
    free(out);
    return status;
}

static char *call_raw(const char *path, int *status)
{
    char *out = NULL;
    size_t len = 0;

    *status = dlb_schemareg_answer(reg, "GET", path, NULL, 0, &out, &len);
    assert_non_null(out);
    return out;
}

/* An error body is exactly {"error_code": code, "message": "..."}. */
static void expect_error(const char *method, const char *path, const char *body, int status,
                         int code, const char *message_part)
{
    cJSON *j;
    const cJSON *c, *m;

    assert_int_equal(call(method, path, body, &j), status);
    assert_int_equal(cJSON_GetArraySize(j), 2);
    c = cJSON_GetObjectItemCaseSensitive(j, "error_code");
    m = cJSON_GetObjectItemCaseSensitive(j, "message");
    assert_true(cJSON_IsNumber(c));
    assert_int_equal(c->valueint, code);
    assert_true(cJSON_IsString(m));
    if (message_part && !strstr(m->valuestring, message_part))
        fail_msg("%s %s: message \"%s\" lacks \"%s\"", method, path, m->valuestring, message_part);
    cJSON_Delete(j);
}

static size_t count_of_type(dlb_event_type_t t)
{
    size_t n = 0;

    for (size_t i = 0; i < dlb_catalog_count(cat); i++)
        n += dlb_catalog_at(cat, i)->type == t;
    return n;
}

/* The catalog entry that is version v (1-based) of topic's subject. */
static const dlb_schema_entry_t *nth_of_topic(const char *topic, size_t v)
{
    for (size_t i = 0; i < dlb_catalog_count(cat); i++) {
        const dlb_schema_entry_t *e = dlb_catalog_at(cat, i);
        if ((!strcmp(topic, DLB_TOPIC_DLQ) || !strcmp(dlb_event_type_topic(e->type), topic)) &&
            !--v)
            return e;
    }
    return NULL;
}

static void expect_same_schema(const char *text, const dlb_schema_entry_t *e)
{
    avro_schema_t s;

    assert_int_equal(avro_schema_from_json_length(text, strlen(text), &s), 0);
    assert_true(avro_schema_equal(s, e->schema));
    avro_schema_decref(s);
}

static void test_subjects(void **state)
{
    cJSON *j;
    size_t topics = 0, i = 0;
    const cJSON *s, *prev = NULL;
    char want[128];

    (void)state;
    while (dlb_kafka_pipeline_topics[topics])
        topics++;
    assert_int_equal(call("GET", "/subjects", NULL, &j), 200);
    assert_true(cJSON_IsArray(j));
    assert_int_equal(cJSON_GetArraySize(j), 2 * topics);
    cJSON_ArrayForEach(s, j)
    {
        assert_true(cJSON_IsString(s));
        if (prev)
            assert_true(strcmp(prev->valuestring, s->valuestring) < 0);
        prev = s;
    }
    /* every topic of both environments, "-value" (TopicNameStrategy) */
    for (const char *const *t = dlb_kafka_pipeline_topics; *t; t++)
        for (const char *const *env = (const char *const[]){"dlbrain", "sim1", NULL}; *env; env++) {
            int found = 0;
            snprintf(want, sizeof(want), "%s.%s-value", *env, *t);
            cJSON_ArrayForEach(s, j) found |= !strcmp(s->valuestring, want);
            if (!found)
                fail_msg("no subject %s", want);
            i++;
        }
    assert_int_equal(i, 2 * topics);
    cJSON_Delete(j);
}

static void test_versions(void **state)
{
    char path[128];
    cJSON *j;

    (void)state;
    for (const char *const *t = dlb_kafka_pipeline_topics; *t; t++) {
        size_t want = 0, v = 0;
        const cJSON *x;

        for (int ty = DLB_EV_NONE + 1; ty < DLB_EV__CNT; ty++)
            if (!strcmp(*t, DLB_TOPIC_DLQ) || !strcmp(dlb_event_type_topic(ty), *t))
                want += count_of_type(ty);
        snprintf(path, sizeof(path), "/subjects/sim1.%s-value/versions", *t);
        assert_int_equal(call("GET", path, NULL, &j), 200);
        assert_int_equal(cJSON_GetArraySize(j), want);
        cJSON_ArrayForEach(x, j) assert_int_equal(x->valueint, ++v);
        cJSON_Delete(j);
    }
    /* the catalog's own history, as docs/events.md tells it */
    assert_int_equal(count_of_type(DLB_EV_PLAN), 2);
    assert_int_equal(count_of_type(DLB_EV_RUNTIME), 3);
    assert_int_equal(call("GET", "/subjects/dlbrain.dlq-value/versions", NULL, &j), 200);
    assert_int_equal(cJSON_GetArraySize(j), dlb_catalog_count(cat));
    cJSON_Delete(j);
}

static void expect_version(const char *subject, const char *vs, int version, int id)
{
    char path[160];
    cJSON *j;
    const cJSON *x;

    snprintf(path, sizeof(path), "/subjects/%s/versions/%s", subject, vs);
    assert_int_equal(call("GET", path, NULL, &j), 200);
    assert_int_equal(cJSON_GetArraySize(j), 4);
    x = cJSON_GetObjectItemCaseSensitive(j, "subject");
    assert_true(cJSON_IsString(x));
    assert_string_equal(x->valuestring, subject);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "version")->valueint, version);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "id")->valueint, id);
    x = cJSON_GetObjectItemCaseSensitive(j, "schema");
    assert_true(cJSON_IsString(x));
    expect_same_schema(x->valuestring, dlb_catalog_by_id(cat, id));
    cJSON_Delete(j);
}

static void test_version(void **state)
{
    char path[160], *raw;
    int status;

    (void)state;
    /* plan v1 = id 5, v2 = id 8; runtime samples 2, 7, 11 */
    expect_version("dlbrain.plans-value", "1", 1, 5);
    expect_version("dlbrain.plans-value", "2", 2, 8);
    expect_version("dlbrain.plans-value", "latest", 2, 8);
    expect_version("dlbrain.plans-value", "-1", 2, 8);
    expect_version("sim1.metrics-value", "2", 2, 7);
    expect_version("sim1.metrics-value", "latest", 3, 11);
    expect_version("dlbrain.dlq-value", "12", 12, 12);
    for (const char *const *t = dlb_kafka_pipeline_topics; *t; t++) {
        const dlb_schema_entry_t *e;
        snprintf(path, sizeof(path), "%s.%s-value", "dlbrain", *t);
        for (size_t v = 1; (e = nth_of_topic(*t, v)); v++) {
            char vs[16];
            snprintf(vs, sizeof(vs), "%zu", v);
            expect_version(path, vs, (int)v, e->id);
        }
    }
    /* .../schema: the schema alone, unescaped */
    raw = call_raw("/subjects/dlbrain.plans-value/versions/1/schema", &status);
    assert_int_equal(status, 200);
    expect_same_schema(raw, dlb_catalog_by_id(cat, 5));
    free(raw);
}

static void test_schema_by_id(void **state)
{
    char path[64], *raw;
    cJSON *j;
    int status;

    (void)state;
    for (size_t i = 0; i < dlb_catalog_count(cat); i++) {
        const dlb_schema_entry_t *e = dlb_catalog_at(cat, i);
        const cJSON *x;
        size_t subjects = 0;

        snprintf(path, sizeof(path), "/schemas/ids/%d", (int)e->id);
        assert_int_equal(call("GET", path, NULL, &j), 200);
        /* {"schema": "..."}: no schemaType for AVRO, as Confluent answers */
        assert_int_equal(cJSON_GetArraySize(j), 1);
        x = cJSON_GetObjectItemCaseSensitive(j, "schema");
        assert_true(cJSON_IsString(x));
        expect_same_schema(x->valuestring, e);
        cJSON_Delete(j);

        snprintf(path, sizeof(path), "/schemas/ids/%d/schema", (int)e->id);
        raw = call_raw(path, &status);
        assert_int_equal(status, 200);
        expect_same_schema(raw, e);
        free(raw);

        /* [{"subject", "version"}]: its topic's subject and the DLQ's, per env */
        snprintf(path, sizeof(path), "/schemas/ids/%d/versions", (int)e->id);
        assert_int_equal(call("GET", path, NULL, &j), 200);
        assert_int_equal(cJSON_GetArraySize(j), 4);
        cJSON_ArrayForEach(x, j)
        {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(x, "subject");
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, "version");
            char topic[64];
            const char *dot;

            assert_int_equal(cJSON_GetArraySize(x), 2);
            assert_true(cJSON_IsString(s));
            assert_true(cJSON_IsNumber(v));
            dot = strchr(s->valuestring, '.');
            assert_non_null(dot);
            snprintf(topic, sizeof(topic), "%.*s", (int)(strlen(dot + 1) - strlen("-value")),
                     dot + 1);
            assert_ptr_equal(nth_of_topic(topic, (size_t)v->valueint), e);
            subjects++;
        }
        assert_int_equal(subjects, 4);
        cJSON_Delete(j);
    }
}

static void test_bad_ids(void **state)
{
    (void)state;
    expect_error("GET", "/schemas/ids/99", NULL, 404, 40403, "Schema 99 not found");
    expect_error("GET", "/schemas/ids/0", NULL, 404, 40403, "not found");
    expect_error("GET", "/schemas/ids/-1", NULL, 404, 40403, "not found");
    expect_error("GET", "/schemas/ids/99/versions", NULL, 404, 40403, "not found");
    expect_error("GET", "/schemas/ids/99/schema", NULL, 404, 40403, "not found");
    /* not an integer: no resource matches (Jersey's 404, as Confluent's) */
    expect_error("GET", "/schemas/ids/abc", NULL, 404, 404, "HTTP 404 Not Found");
    expect_error("GET", "/schemas/ids/2147483648", NULL, 404, 404, NULL);
    expect_error("GET", "/schemas/ids/1x", NULL, 404, 404, NULL);
    expect_error("GET", "/schemas/ids/1/other", NULL, 404, 404, NULL);
    expect_error("GET", "/schemas/ids", NULL, 404, 404, NULL);
    expect_error("GET", "/nowhere", NULL, 404, 404, NULL);
    expect_error("GET", "/a/b/c/d/e/f/g/h/i/j", NULL, 404, 404, NULL);
}

static void test_bad_subjects(void **state)
{
    static const char *const bad[] = {
        "x",
        "dlbrain.plans",      /* no -value */
        "dlbrain.plans-key",  /* keys are not Avro */
        "other.plans-value",  /* an environment not served */
        "dlbrain.nope-value", /* no such topic */
        "dlbrain.plans-value-value",
        "dlbrain-value",
        ".plans-value",
        "dlbrain.-value",
        "sim1.dlbrain.plans-value",
    };
    char path[160], msg[160];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(msg, sizeof(msg), "Subject '%s' not found.", bad[i]);
        snprintf(path, sizeof(path), "/subjects/%s/versions", bad[i]);
        expect_error("GET", path, NULL, 404, 40401, msg);
        snprintf(path, sizeof(path), "/subjects/%s/versions/1", bad[i]);
        expect_error("GET", path, NULL, 404, 40401, msg);
        snprintf(path, sizeof(path), "/subjects/%s/versions/latest/schema", bad[i]);
        expect_error("GET", path, NULL, 404, 40401, msg);
        snprintf(path, sizeof(path), "/config/%s", bad[i]);
        expect_error("GET", path, NULL, 404, 40401, msg);
        snprintf(path, sizeof(path), "/subjects/%s", bad[i]);
        expect_error("POST", path, "{\"schema\":\"\\\"string\\\"\"}", 404, 40401, msg);
    }
}

static void test_bad_versions(void **state)
{
    static const char *const bad[] = {"0",  "-2", "abc", "1.5",   "2147483648",
                                      "+1", " 1", "1a",  "LATEST"};
    char path[160], msg[160];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(path, sizeof(path), "/subjects/dlbrain.plans-value/versions/%s", bad[i]);
        snprintf(msg, sizeof(msg), "The specified version '%s' is not a valid version id", bad[i]);
        expect_error("GET", path, NULL, 422, 42202, msg);
    }
    expect_error("GET", "/subjects/dlbrain.plans-value/versions/3", NULL, 404, 40402,
                 "Version 3 not found.");
    expect_error("GET", "/subjects/dlbrain.plans-value/versions/2147483647", NULL, 404, 40402,
                 NULL);
    expect_error("GET", "/subjects/dlbrain.plans-value/versions/3/schema", NULL, 404, 40402, NULL);
    expect_error("GET", "/subjects/dlbrain.plans-value/versions/1/other", NULL, 404, 404, NULL);
    /* GET /subjects/{s} is no route of the API (POST is the lookup) */
    expect_error("GET", "/subjects/dlbrain.plans-value", NULL, 404, 404, NULL);
}

/* A lookup body: {"schema": text} plus extra members (schemaType, ...). */
static char *lookup_body(const char *schema_text, const char *extra_key, const char *extra)
{
    cJSON *o = cJSON_CreateObject();
    char *s;

    assert_non_null(cJSON_AddStringToObject(o, "schema", schema_text));
    if (extra_key)
        assert_non_null(cJSON_AddStringToObject(o, extra_key, extra));
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    assert_non_null(s);
    return s;
}

static void test_lookup(void **state)
{
    char path[160], *body;
    cJSON *j;

    (void)state;
    /* each schema's file as written (whitespace, docs) finds its version */
    for (const char *const *t = dlb_kafka_pipeline_topics; *t; t++) {
        const dlb_schema_entry_t *e;
        snprintf(path, sizeof(path), "/subjects/sim1.%s-value", *t);
        for (size_t v = 1; (e = nth_of_topic(*t, v)); v++) {
            body = lookup_body(e->json, NULL, NULL);
            assert_int_equal(call("POST", path, body, &j), 200);
            assert_int_equal(cJSON_GetArraySize(j), 4);
            assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "subject")->valuestring,
                                path + strlen("/subjects/"));
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "id")->valueint, e->id);
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "version")->valueint, v);
            expect_same_schema(cJSON_GetObjectItemCaseSensitive(j, "schema")->valuestring, e);
            cJSON_Delete(j);
            free(body);
        }
    }
    body = lookup_body(dlb_catalog_by_id(cat, 8)->json, "schemaType", "AVRO");
    assert_int_equal(call("POST", "/subjects/dlbrain.plans-value", body, &j), 200);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "id")->valueint, 8);
    cJSON_Delete(j);
    free(body);
    /* a schema of another topic is not under this subject */
    body = lookup_body(dlb_catalog_by_id(cat, 11)->json, NULL, NULL);
    expect_error("POST", "/subjects/dlbrain.plans-value", body, 404, 40403, "Schema not found");
    free(body);
    body = lookup_body("{\"type\":\"record\",\"name\":\"Plan\",\"fields\":[]}", NULL, NULL);
    expect_error("POST", "/subjects/dlbrain.plans-value", body, 404, 40403, "Schema not found");
    free(body);
    body = lookup_body("{\"type\":", NULL, NULL);
    expect_error("POST", "/subjects/dlbrain.plans-value", body, 422, 42201, "Invalid schema");
    free(body);
    body = lookup_body("syntax = \"proto3\";", "schemaType", "PROTOBUF");
    expect_error("POST", "/subjects/dlbrain.plans-value", body, 422, 42201, "schema type");
    free(body);
    expect_error("POST", "/subjects/dlbrain.plans-value", "{\"schemaType\":\"AVRO\"}", 422, 42201,
                 "Invalid schema");
    expect_error("POST", "/subjects/dlbrain.plans-value", "not json", 400, 400, NULL);
    expect_error("POST", "/subjects/dlbrain.plans-value", NULL, 400, 400, NULL);
}

static void test_writes(void **state)
{
    static const char *const writes[][2] = {
        {"POST", "/subjects/dlbrain.plans-value/versions"},
        {"POST", "/subjects/new.topic-value/versions"},
        {"DELETE", "/subjects/dlbrain.plans-value"},
        {"DELETE", "/subjects/dlbrain.plans-value/versions/1"},
        {"PUT", "/config"},
        {"PUT", "/config/dlbrain.plans-value"},
        {"DELETE", "/config/dlbrain.plans-value"},
        {"PUT", "/mode"},
        {"POST", "/compatibility/subjects/dlbrain.plans-value/versions/latest"},
        {"PATCH", "/subjects"},
    };
    char msg[200];

    (void)state;
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
        snprintf(msg, sizeof(msg), "read-only: %s %s is not served", writes[i][0], writes[i][1]);
        expect_error(writes[i][0], writes[i][1], "{\"schema\":\"\\\"string\\\"\"}", 405, 405, msg);
    }
}

static void expect_object(const char *path, const char *key, const char *value)
{
    cJSON *j;

    assert_int_equal(call("GET", path, NULL, &j), 200);
    assert_int_equal(cJSON_GetArraySize(j), 1);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, key)->valuestring, value);
    cJSON_Delete(j);
}

static void test_config_mode_types(void **state)
{
    cJSON *j;

    (void)state;
    expect_object("/config", "compatibilityLevel", "BACKWARD");
    expect_object("/config/dlbrain.metrics-value", "compatibilityLevel", "BACKWARD");
    /* the DLQ's subject holds every record type: no compatibility among them */
    expect_object("/config/sim1.dlq-value", "compatibilityLevel", "NONE");
    expect_object("/mode", "mode", "READONLY");
    assert_int_equal(call("GET", "/schemas/types", NULL, &j), 200);
    assert_int_equal(cJSON_GetArraySize(j), 1);
    assert_string_equal(cJSON_GetArrayItem(j, 0)->valuestring, "AVRO");
    cJSON_Delete(j);
    assert_int_equal(call("GET", "/", NULL, &j), 200);
    assert_true(cJSON_IsObject(j));
    assert_int_equal(cJSON_GetArraySize(j), 0);
    cJSON_Delete(j);
    /* HEAD answers as GET (libmicrohttpd drops the body) */
    assert_int_equal(call("HEAD", "/subjects", NULL, &j), 200);
    cJSON_Delete(j);
}

static void test_set_envs(void **state)
{
    static const char *const one[] = {"prod"};
    static const char *const both[] = {"dlbrain", "sim1"};
    static const char *const bad[] = {"a.b", "", "x/y"};
    char err[256];
    cJSON *j;

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(dlb_schemareg_set_envs(reg, &bad[i], 1, err, sizeof(err)),
                         DLB_ERR_INVALID);
        assert_non_null(strstr(err, "is not an environment name"));
    }
    /* a refused list leaves what was served */
    assert_int_equal(call("GET", "/subjects", NULL, &j), 200);
    assert_int_equal(cJSON_GetArraySize(j), 16);
    cJSON_Delete(j);
    assert_int_equal(dlb_schemareg_set_envs(reg, NULL, 0, err, sizeof(err)), 0);
    assert_int_equal(call("GET", "/subjects", NULL, &j), 200);
    assert_int_equal(cJSON_GetArraySize(j), 0);
    cJSON_Delete(j);
    expect_error("GET", "/subjects/dlbrain.plans-value/versions", NULL, 404, 40401, NULL);
    /* ids stay: they do not depend on the environments */
    assert_int_equal(call("GET", "/schemas/ids/5", NULL, &j), 200);
    cJSON_Delete(j);
    assert_int_equal(call("GET", "/schemas/ids/5/versions", NULL, &j), 200);
    assert_int_equal(cJSON_GetArraySize(j), 0);
    cJSON_Delete(j);
    assert_int_equal(dlb_schemareg_set_envs(reg, one, 1, err, sizeof(err)), 0);
    expect_version("prod.plans-value", "latest", 2, 8);
    assert_int_equal(dlb_schemareg_set_envs(reg, both, 2, err, sizeof(err)), 0);
}

/* ---- over HTTP ---------------------------------------------------------- */

typedef struct got {
    char body[4096];
    size_t len;
} got_t;

static size_t got_write(char *p, size_t size, size_t n, void *opaque)
{
    got_t *g = opaque;
    size_t k = size * n;

    if (k > sizeof(g->body) - 1 - g->len)
        k = sizeof(g->body) - 1 - g->len;
    memcpy(g->body + g->len, p, k);
    g->len += k;
    g->body[g->len] = '\0';
    return size * n;
}

static long http(int port, const char *method, const char *path, const char *body, size_t len,
                 got_t *g, char *type, size_t type_size)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: " DLB_SCHEMAREG_CONTENT_TYPE);
    char url[256];
    long status = 0;
    char *ct = NULL;

    assert_non_null(c);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    memset(g, 0, sizeof(*g));
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, got_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, g);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(type, type_size, "%s", ct ? ct : "");
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return status;
}

static void test_http(void **state)
{
    dlb_schemareg_server_t *srv, *again;
    char err[256], type[128], *big, *body;
    got_t g;
    int port = 0, port2 = 0;

    (void)state;
    assert_int_equal(
        dlb_schemareg_serve(reg, "127.0.0.1", 0, &test_bounds, &srv, &port, err, sizeof(err)), 0);
    assert_true(port > 0);
    assert_int_equal(http(port, "GET", "/subjects/dlbrain.plans-value/versions", NULL, 0, &g, type,
                          sizeof(type)),
                     200);
    assert_string_equal(type, DLB_SCHEMAREG_CONTENT_TYPE);
    assert_string_equal(g.body, "[1,2]");
    /* the query (confluent-kafka sends some) does not change the route */
    assert_int_equal(http(port, "GET", "/schemas/ids/7?fetchMaxId=false&subject=x", NULL, 0, &g,
                          type, sizeof(type)),
                     200);
    assert_non_null(strstr(g.body, "\"schema\":"));
    /* percent-encoded subjects are decoded */
    assert_int_equal(http(port, "GET", "/subjects/sim1%2Eplans-value/versions/latest", NULL, 0, &g,
                          type, sizeof(type)),
                     200);
    assert_non_null(strstr(g.body, "\"id\":8"));
    body = lookup_body(dlb_catalog_by_id(cat, 2)->json, NULL, NULL);
    assert_int_equal(http(port, "POST", "/subjects/dlbrain.metrics-value", body, strlen(body), &g,
                          type, sizeof(type)),
                     200);
    assert_non_null(strstr(g.body, "\"version\":1,\"id\":2,"));
    free(body);
    assert_int_equal(
        http(port, "DELETE", "/subjects/dlbrain.plans-value", NULL, 0, &g, type, sizeof(type)),
        405);
    assert_string_equal(type, DLB_SCHEMAREG_CONTENT_TYPE);
    assert_non_null(strstr(g.body, "\"error_code\":405"));
    assert_int_equal(http(port, "GET", "/schemas/ids/99", NULL, 0, &g, type, sizeof(type)), 404);
    assert_string_equal(g.body, "{\"error_code\":40403,\"message\":\"Schema 99 not found\"}");
    /* a body past the limit is not kept */
    big = malloc(DLB_SCHEMAREG_BODY_MAX + 2);
    assert_non_null(big);
    memset(big, ' ', DLB_SCHEMAREG_BODY_MAX + 1);
    big[DLB_SCHEMAREG_BODY_MAX + 1] = '\0';
    assert_int_equal(http(port, "POST", "/subjects/dlbrain.plans-value", big,
                          DLB_SCHEMAREG_BODY_MAX + 1, &g, type, sizeof(type)),
                     413);
    assert_non_null(strstr(g.body, "\"error_code\":413"));
    free(big);
    /* a port in use says so */
    assert_int_equal(
        dlb_schemareg_serve(reg, "127.0.0.1", port, &test_bounds, &again, &port2, err, sizeof(err)),
        DLB_ERR_CONF);
    assert_null(again);
    assert_non_null(strstr(err, "cannot listen on 127.0.0.1"));
    assert_int_equal(
        dlb_schemareg_serve(reg, "nowhere", 0, &test_bounds, &again, &port2, err, sizeof(err)),
        DLB_ERR_CONF);
    assert_non_null(strstr(err, "registry.address \"nowhere\" is not an IPv4 or IPv6 address"));
    dlb_schemareg_server_stop(srv);
    dlb_schemareg_server_stop(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subjects),     cmocka_unit_test(test_versions),
        cmocka_unit_test(test_version),      cmocka_unit_test(test_schema_by_id),
        cmocka_unit_test(test_bad_ids),      cmocka_unit_test(test_bad_subjects),
        cmocka_unit_test(test_bad_versions), cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_writes),       cmocka_unit_test(test_config_mode_types),
        cmocka_unit_test(test_set_envs),     cmocka_unit_test(test_http),
    };

    curl_global_init(CURL_GLOBAL_DEFAULT);
    return cmocka_run_group_tests(tests, reg_setup, reg_teardown);
}
