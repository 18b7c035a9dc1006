/* An external schema registry: the client (lookup, register, schema by id,
 * basic authentication, its errors) against dlbrain's own read-only endpoint (the read path; no
 * registry that accepts writes can run here), binding the catalog to a
 * registry's ids, and the wire ids: writing with an installed id, resolving
 * unknown ids through the registry once, refusing ids that are not
 * dlbrain's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "codec.h"
#include "conf.h"
#include "err.h"
#include "httpd.h"
#include "schemareg.h"
#include "schemareg_client.h"

static const dlb_http_conf_t test_bounds = {64, 16, 5000};

static dlb_catalog_t *served_cat; /* what the endpoint serves */
static dlb_schemareg_t *reg;
static dlb_schemareg_server_t *srv;
static int port;

static int group_setup(void **state)
{
    static const char *const envs[] = {"dlbrain"};
    char err[256];

    (void)state;
    if (dlb_catalog_new(&served_cat, err, sizeof(err)) ||
        dlb_schemareg_new(&reg, served_cat, err, sizeof(err)) ||
        dlb_schemareg_set_envs(reg, envs, 1, err, sizeof(err)) ||
        dlb_schemareg_serve(reg, "127.0.0.1", 0, &test_bounds, &srv, &port, err, sizeof(err))) {
        fprintf(stderr, "setup: %s\n", err);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    dlb_schemareg_server_stop(srv);
    dlb_schemareg_destroy(reg);
    dlb_catalog_destroy(served_cat);
    return 0;
}

static int reset(void **state)
{
    (void)state;
    dlb_catalog_wire_reset();
    return 0;
}

static dlb_srclient_t *client_to(int p)
{
    dlb_sr_conf_t sc = {.timeout_ms = 5000};
    dlb_srclient_t *c;
    char err[256];

    snprintf(sc.url, sizeof(sc.url), "http://127.0.0.1:%d/", p);
    assert_int_equal(dlb_srclient_new(&c, &sc, err, sizeof(err)), 0);
    return c;
}

static void test_read_path(void **state)
{
    dlb_srclient_t *c = client_to(port);
    const dlb_schema_entry_t *v1 = dlb_catalog_by_id(served_cat, 5);
    char err[512], *schema;
    int32_t id = 0;
    int version = 0;

    (void)state;
    assert_int_equal(
        dlb_srclient_lookup(c, "dlbrain.plans-value", v1->json, &id, &version, err, sizeof(err)),
        0);
    assert_int_equal(id, 5);
    assert_int_equal(version, 1);
    assert_int_equal(
        dlb_srclient_lookup(c, "dlbrain.metrics-value", v1->json, &id, &version, err, sizeof(err)),
        DLB_ERR_NOTFOUND);
    assert_non_null(strstr(err, "error_code 40403: Schema not found"));
    assert_int_equal(
        dlb_srclient_lookup(c, "nope-value", v1->json, &id, &version, err, sizeof(err)),
        DLB_ERR_NOTFOUND);
    assert_non_null(strstr(err, "40401"));
    assert_int_equal(dlb_srclient_schema(c, 11, &schema, err, sizeof(err)), 0);
    {
        avro_schema_t s;
        assert_int_equal(avro_schema_from_json_length(schema, strlen(schema), &s), 0);
        assert_true(avro_schema_equal(s, dlb_catalog_by_id(served_cat, 11)->schema));
        avro_schema_decref(s);
    }
    free(schema);
    assert_int_equal(dlb_srclient_schema(c, 99, &schema, err, sizeof(err)), DLB_ERR_NOTFOUND);
    assert_null(schema);
    /* a read-only registry refuses to register, and says so */
    assert_int_equal(
        dlb_srclient_register(c, "dlbrain.plans-value", v1->json, &id, err, sizeof(err)),
        DLB_ERR_CONF);
    assert_non_null(
        strstr(err, "HTTP 405, error_code 405: dlbrain's schema registry is read-only"));
    dlb_srclient_destroy(c);
}

static void test_unreachable_and_bad_url(void **state)
{
    dlb_sr_conf_t sc = {.url = "ftp://example", .timeout_ms = 1000};
    dlb_srclient_t *c;
    char err[512], *schema;

    (void)state;
    assert_int_equal(dlb_srclient_new(&c, &sc, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "is not an http:// or https:// URL"));
    c = client_to(1); /* nothing listens on port 1 */
    assert_int_equal(dlb_srclient_schema(c, 1, &schema, err, sizeof(err)), DLB_ERR_TRANSIENT);
    assert_non_null(strstr(err, "GET /schemas/ids/1"));
    dlb_srclient_destroy(c);
}

/* A registry behind HTTP basic authentication (user "u", password "p:w"). */
static enum MHD_Result auth_handle(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload,
                                   size_t *upload_size, void **con_cls)
{
    char *pass = NULL, *user = MHD_basic_auth_get_username_password(conn, &pass);
    int ok = user && pass && !strcmp(user, "u") && !strcmp(pass, "p:w");
    const char *body = ok ? "{\"schema\":\"\\\"string\\\"\"}"
                          : "{\"error_code\":40101,\"message\":\"Unauthorized\"}";

    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    MHD_free(user);
    MHD_free(pass);
    return dlb_httpd_respond(conn, ok ? 200 : 401, DLB_SCHEMAREG_CONTENT_TYPE, strdup(body),
                             strlen(body));
}

static void test_basic_auth(void **state)
{
    dlb_sr_conf_t sc = {.user_info = "u:p:w", .timeout_ms = 5000};
    dlb_httpd_t *d;
    dlb_srclient_t *c;
    char err[512], *schema;
    int p;

    (void)state;
    assert_int_equal(dlb_httpd_start("test", "address", "127.0.0.1", 0, &test_bounds, auth_handle,
                                     NULL, NULL, &d, &p, err, sizeof(err)),
                     0);
    snprintf(sc.url, sizeof(sc.url), "http://127.0.0.1:%d", p);
    assert_int_equal(dlb_srclient_new(&c, &sc, err, sizeof(err)), 0);
    assert_int_equal(dlb_srclient_schema(c, 1, &schema, err, sizeof(err)), 0);
    assert_string_equal(schema, "\"string\"");
    free(schema);
    dlb_srclient_destroy(c);
    /* without credentials: refused, and a configuration error */
    sc.user_info[0] = '\0';
    assert_int_equal(dlb_srclient_new(&c, &sc, err, sizeof(err)), 0);
    assert_int_equal(dlb_srclient_schema(c, 1, &schema, err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "HTTP 401, error_code 40101: Unauthorized"));
    dlb_srclient_destroy(c);
    dlb_httpd_stop(d);
}

/* Binding to a registry that holds every schema: each found by lookup, its
 * id installed; a catalog made afterwards writes and reads them. */
static void test_bind(void **state)
{
    dlb_srclient_t *c = client_to(port);
    dlb_catalog_t *cat, *after;
    char err[1024];

    (void)state;
    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    assert_int_equal(dlb_srclient_bind(c, cat, "dlbrain", err, sizeof(err)), 0);
    assert_int_equal(dlb_catalog_new(&after, err, sizeof(err)), 0);
    for (size_t i = 0; i < dlb_catalog_count(after); i++) {
        const dlb_schema_entry_t *e = dlb_catalog_at(after, i), *got;
        /* dlbrain's endpoint assigns the catalog's ids */
        assert_int_equal(e->wire_id, e->id);
        assert_int_equal(dlb_catalog_by_wire_id(after, e->id, &got, err, sizeof(err)), 0);
        assert_ptr_equal(got, e);
    }
    /* a subject the registry lacks must be registered: refused here, named */
    assert_int_equal(dlb_srclient_bind(c, cat, "other", err, sizeof(err)), DLB_ERR_CONF);
    assert_non_null(strstr(err, "subject other.job-events-value, version 1 (job_event.avsc)"));
    assert_non_null(strstr(err, "read-only"));
    dlb_catalog_destroy(after);
    dlb_catalog_destroy(cat);
    dlb_srclient_destroy(c);
}

/* A registry of other ids, played by a resolver that counts its calls. */
static int calls;

static int fake_resolve(void *opaque, int32_t wire_id, char **schema_json, char *errstr,
                        size_t errstr_size)
{
    const dlb_catalog_t *cat = opaque;

    calls++;
    if (wire_id == 200) /* plan_request v2 under another id */
        return (*schema_json = strdup(dlb_catalog_by_id(cat, 12)->json)) ? 0 : DLB_ERR_NOMEM;
    if (wire_id == 300) /* someone else's schema */
        return (*schema_json = strdup("{\"type\":\"record\",\"name\":\"X\",\"fields\":[]}"))
                   ? 0
                   : DLB_ERR_NOMEM;
    if (wire_id == 400)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "connection refused");
    return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "Schema %d not found", wire_id);
}

static void reframe(unsigned char *buf, int32_t id)
{
    buf[1] = (unsigned char)((uint32_t)id >> 24);
    buf[2] = (unsigned char)((uint32_t)id >> 16);
    buf[3] = (unsigned char)((uint32_t)id >> 8);
    buf[4] = (unsigned char)id;
}

static void expect_decode(const dlb_catalog_t *cat, const void *buf, size_t len, int want,
                          const char *errpart)
{
    dlb_event_t ev;
    char err[512];

    assert_int_equal(dlb_codec_decode(cat, buf, len, &ev, err, sizeof(err)), want);
    if (!want)
        assert_int_equal(ev.type, DLB_EV_PLAN_REQUEST);
    else if (!strstr(err, errpart))
        fail_msg("\"%s\" lacks \"%s\"", err, errpart);
    dlb_event_clear(&ev);
}

static void test_wire_ids(void **state)
{
    static const int32_t ids[][2] = {{12, 112}, {8, 108}};
    dlb_catalog_t *cat;
    dlb_event_t ev;
    unsigned char *buf;
    size_t len;
    char err[512];

    (void)state;
    calls = 0;
    assert_int_equal(dlb_catalog_wire_install(ids, 2, fake_resolve, served_cat, err, sizeof(err)),
                     0);
    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    assert_int_equal(dlb_catalog_by_id(cat, 12)->wire_id, 112);
    assert_int_equal(dlb_catalog_by_id(cat, 8)->wire_id, 108);
    assert_int_equal(dlb_catalog_by_id(cat, 5)->wire_id, 5);
    /* writers frame the registry's id */
    {
        static const char line[] =
            "{\"type\":\"plan_request\",\"event_id\":\"q1\",\"event_time_ms\":"
            "1767312001000,\"job_uid\":\"j1\",\"stage\":\"job_stage_create\"}";
        assert_int_equal(dlb_json_to_event(cat, line, strlen(line), 0, &ev, err, sizeof(err)), 0);
    }
    assert_int_equal(dlb_codec_encode(cat, &ev, (void **)&buf, &len, err, sizeof(err)), 0);
    dlb_event_clear(&ev);
    assert_int_equal(buf[0], 0);
    assert_int_equal(((int)buf[3] << 8) | buf[4], 112);
    expect_decode(cat, buf, len, 0, NULL);
    assert_int_equal(calls, 0);
    /* the catalog's own id 12 is no longer a wire id: the registry is asked */
    reframe(buf, 12);
    expect_decode(cat, buf, len, DLB_ERR_SCHEMA_ID, "not one of dlbrain's schemas");
    assert_int_equal(calls, 1);
    /* another id of the same schema: fetched once, then remembered */
    reframe(buf, 200);
    expect_decode(cat, buf, len, 0, NULL);
    expect_decode(cat, buf, len, 0, NULL);
    assert_int_equal(calls, 2);
    /* a schema that is not dlbrain's: refused, remembered */
    reframe(buf, 300);
    expect_decode(cat, buf, len, DLB_ERR_SCHEMA_ID, "schema id 300 is not one of dlbrain's");
    expect_decode(cat, buf, len, DLB_ERR_SCHEMA_ID, "schema id 300 is not one of dlbrain's");
    assert_int_equal(calls, 3);
    /* an outage is not remembered, and is transient (the stream retries the
     * batch rather than dead-lettering the record): asked again next time */
    reframe(buf, 400);
    expect_decode(cat, buf, len, DLB_ERR_TRANSIENT, "did not answer: connection refused");
    expect_decode(cat, buf, len, DLB_ERR_TRANSIENT, "did not answer");
    assert_int_equal(calls, 5);
    dlb_catalog_destroy(cat);
    /* back to the catalog's ids: no resolver, the old message */
    dlb_catalog_wire_reset();
    assert_int_equal(dlb_catalog_new(&cat, err, sizeof(err)), 0);
    assert_int_equal(dlb_catalog_by_id(cat, 12)->wire_id, 12);
    reframe(buf, 200);
    expect_decode(cat, buf, len, DLB_ERR_SCHEMA_ID,
                  "schema id 200 is not in the catalog (known: 1..12)");
    assert_int_equal(calls, 5);
    reframe(buf, 12);
    expect_decode(cat, buf, len, 0, NULL);
    free(buf);
    dlb_catalog_destroy(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_read_path, reset),
        cmocka_unit_test_setup(test_unreachable_and_bad_url, reset),
        cmocka_unit_test_setup(test_basic_auth, reset),
        cmocka_unit_test_setup(test_bind, reset),
        cmocka_unit_test_setup(test_wire_ids, reset),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);

    dlb_catalog_wire_reset();
    return rc;
}
