/* The wire codec: Confluent framing, every schema both ways, error classes,
 * the schema catalog and reading data written with an older schema. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <avro.h>
#include <cJSON.h>

#include "catalog.h"
#include "codec.h"
#include "codec_internal.h"
#include "embedded.h"
#include "err.h"

#include "codec_fixtures.h"

#include "catalog_fixture.h"
#include "old_writer.h"

/* ---- helpers ----------------------------------------------------------- */

typedef struct tfile {
    const char *name;
    const char *text; /* NULL: the embedded schema file of the same name */
} tfile_t;

static const char *embedded(const char *name)
{
    const dlb_embedded_t *e = dlb_embedded_find(dlb_embedded_schemas, name);
    assert_non_null(e);
    return e->data;
}

/* A temporary catalog directory holding `files`. */
static void make_dir(char *dir, const tfile_t *files, size_t n)
{
    strcpy(dir, "/tmp/dlb-codec-XXXXXX");
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < n; i++) {
        char path[512];
        const char *text = files[i].text ? files[i].text : embedded(files[i].name);
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
        assert_non_null(f = fopen(path, "w"));
        assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
        assert_int_equal(fclose(f), 0);
    }
}

static void remove_dir(const char *dir, const tfile_t *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
        unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* Returns a malloc'ed copy of s with the first `from` replaced by `to`. */
static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    char *out;

    assert_non_null(at);
    out = malloc(strlen(s) - strlen(from) + strlen(to) + 1);
    assert_non_null(out);
    sprintf(out, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    return out;
}

/* Confluent-frames an avro-c value: how a foreign or older producer writes. */
static uint8_t *frame_value(int32_t id, avro_value_t *v, size_t *len)
{
    size_t sz = 0;
    uint8_t *buf;
    avro_writer_t w;

    assert_int_equal(avro_value_sizeof(v, &sz), 0);
    buf = malloc(DLB_FRAME_HEADER + sz);
    assert_non_null(buf);
    buf[0] = 0;
    buf[1] = (uint8_t)(id >> 24);
    buf[2] = (uint8_t)(id >> 16);
    buf[3] = (uint8_t)(id >> 8);
    buf[4] = (uint8_t)id;
    w = avro_writer_memory((const char *)buf + DLB_FRAME_HEADER, (int64_t)sz);
    assert_int_equal(avro_value_write(w, v), 0);
    avro_writer_free(w);
    *len = DLB_FRAME_HEADER + sz;
    return buf;
}

static void set_str(avro_value_t *rec, const char *field, const char *s)
{
    avro_value_t f;
    assert_int_equal(avro_value_get_by_name(rec, field, &f, NULL), 0);
    assert_int_equal(avro_value_set_string(&f, s), 0);
}

static void set_long(avro_value_t *rec, const char *field, int64_t x)
{
    avro_value_t f;
    assert_int_equal(avro_value_get_by_name(rec, field, &f, NULL), 0);
    assert_int_equal(avro_value_set_long(&f, x), 0);
}

static void set_null(avro_value_t *rec, const char *field)
{
    avro_value_t f, b;
    assert_int_equal(avro_value_get_by_name(rec, field, &f, NULL), 0);
    assert_int_equal(avro_value_set_branch(&f, 0, &b), 0);
    assert_int_equal(avro_value_set_null(&b), 0);
}

/* runtime_sample as first deployed: no speed, no pods[].memory_requested,
 * cpu_used a float, and a field the current schema dropped. */
static const char old_runtime_schema[] =
    "{\"type\": \"record\", \"name\": \"RuntimeSample\", \"namespace\": \"dlbrain\", \"fields\": ["
    " {\"name\": \"event_id\", \"type\": \"string\"},"
    " {\"name\": \"event_time_ms\", \"type\": \"long\"},"
    " {\"name\": \"job_uid\", \"type\": \"string\"},"
    " {\"name\": \"host\", \"type\": \"string\"},"
    " {\"name\": \"global_step\", \"type\": \"long\", \"default\": 0},"
    " {\"name\": \"pods\", \"default\": [], \"type\": {\"type\": \"array\", \"items\": {"
    "   \"type\": \"record\", \"name\": \"PodUsage\", \"fields\": ["
    "    {\"name\": \"name\", \"type\": \"string\"},"
    "    {\"name\": \"type\", \"type\": \"string\"},"
    "    {\"name\": \"index\", \"type\": \"int\", \"default\": 0},"
    "    {\"name\": \"cpu_used\", \"type\": \"float\", \"default\": 0.0},"
    "    {\"name\": \"cpu_requested\", \"type\": \"double\", \"default\": 0.0},"
    "    {\"name\": \"memory_used\", \"type\": \"long\", \"default\": 0}]}}}]}";

/* ---- catalog ------------------------------------------------------------ */

static void test_catalog_embedded(void **state)
{
    static const struct {
        dlb_event_type_t type;
        const char *file;
        int32_t newest; /* the id writers use for this type */
    } want[] = {
        {DLB_EV_JOB, "job_event.avsc", 10},
        {DLB_EV_RUNTIME, "runtime_sample.avsc", 11},
        {DLB_EV_NODE, "node_event.avsc", 3},
        {DLB_EV_PLAN_REQUEST, "plan_request.avsc", 12},
        {DLB_EV_PLAN, "plan.avsc", 8},
        {DLB_EV_CONFIG_MATCH, "config_match.avsc", 6},
        {DLB_EV_RUNTIME, "runtime_sample_v2.avsc", 11},
        {DLB_EV_PLAN, "plan_v2.avsc", 8},
        {DLB_EV_CONFIG_REQUEST, "config_request.avsc", 9},
        {DLB_EV_JOB, "job_event_v2.avsc", 10},
        {DLB_EV_RUNTIME, "runtime_sample_v3.avsc", 11},
        {DLB_EV_PLAN_REQUEST, "plan_request_v2.avsc", 12},
    };
    const size_t n = sizeof(want) / sizeof(want[0]);

    (void)state;
    assert_int_equal(dlb_catalog_count(cat), n);
    for (size_t i = 0; i < n; i++) {
        const dlb_schema_entry_t *e = dlb_catalog_at(cat, i);
        assert_int_equal(e->id, (int32_t)i + 1);
        assert_int_equal(e->type, want[i].type);
        assert_string_equal(e->file, want[i].file);
        assert_ptr_equal(dlb_catalog_by_id(cat, e->id), e);
        assert_int_equal(dlb_catalog_latest(cat, want[i].type)->id, want[i].newest);
        assert_non_null(e->schema);
        assert_non_null(e->iface);
        assert_non_null(e->json);
        /* Older versions read through a resolver into the newest. */
        if (e->id == want[i].newest)
            assert_null(e->resolver);
        else
            assert_non_null(e->resolver);
    }
    assert_null(dlb_catalog_at(cat, n));
    assert_null(dlb_catalog_by_id(cat, 13));
    assert_null(dlb_catalog_by_id(cat, 0));
    assert_null(dlb_catalog_latest(cat, DLB_EV_NONE));
}

static void check_catalog_error(const char *tsv, const tfile_t *extra, size_t n_extra,
                                const char *want)
{
    tfile_t files[8] = {{"catalog.tsv", tsv}};
    dlb_catalog_t *c = (dlb_catalog_t *)1;
    char dir[64], err[512] = "";
    int rc;

    assert_true(n_extra < 8);
    for (size_t i = 0; i < n_extra; i++)
        files[i + 1] = extra[i];
    make_dir(dir, files, n_extra + 1);
    rc = dlb_catalog_load_dir(&c, dir, err, sizeof(err));
    remove_dir(dir, files, n_extra + 1);
    if (rc != DLB_ERR_CONF)
        fail_msg("load returned %s (%s), expected conf error \"%s\"", dlb_err_name(rc), err, want);
    assert_null(c);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not contain \"%s\"", err, want);
}

static void test_catalog_errors(void **state)
{
    const tfile_t job[] = {{"job_event.avsc", NULL}};
    const tfile_t two[] = {{"job_event.avsc", NULL}, {"plan.avsc", NULL}};
    const tfile_t bad[] = {{"bad.avsc", "{\"type\": \"record\", \"name\": "}};
    const tfile_t enm[] = {{"e.avsc", "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"]}"}};
    char *nodefault = replace(embedded("runtime_sample.avsc"),
                              "{\"name\": \"speed\", \"type\": \"double\", \"default\": 0.0,",
                              "{\"name\": \"speed\", \"type\": \"double\",");
    char *strstep =
        replace(embedded("runtime_sample.avsc"), "{\"name\": \"global_step\", \"type\": \"long\"",
                "{\"name\": \"global_step\", \"type\": \"boolean\"");
    const tfile_t evo1[] = {{"old.avsc", old_runtime_schema}, {"new.avsc", nodefault}};
    const tfile_t evo2[] = {{"old.avsc", strstep}, {"new.avsc", embedded("runtime_sample.avsc")}};

    (void)state;
    check_catalog_error("# ids\n0\tjob_event\tjob_event.avsc\n", job, 1,
                        "catalog.tsv:2: id \"0\" is not a positive 32-bit integer");
    check_catalog_error("-3\tjob_event\tjob_event.avsc\n", job, 1,
                        "catalog.tsv:1: id \"-3\" is not a positive");
    check_catalog_error("1\tjob_event\tjob_event.avsc\n1\tplan\tplan.avsc\n", two, 2,
                        "catalog.tsv:2: id 1 is already used on line 1");
    check_catalog_error("\n1\tjob_events\tjob_event.avsc\n", job, 1,
                        "catalog.tsv:2: unknown event type \"job_events\"");
    check_catalog_error("1\tjob_event\tnope.avsc\n", job, 1, "catalog.tsv:1: schema file missing");
    check_catalog_error("1\tjob_event\t../job_event.avsc\n", job, 1,
                        "catalog.tsv:1: \"../job_event.avsc\" is not a plain schema file name");
    check_catalog_error("1\tjob_event\n", job, 1,
                        "catalog.tsv:1: expected 3 tab-separated fields (id, type, file), got 2");
    check_catalog_error("1\tjob_event\tbad.avsc\n", bad, 1, "catalog.tsv:1: bad.avsc: ");
    check_catalog_error("1\tjob_event\te.avsc\n", enm, 1,
                        "catalog.tsv:1: e.avsc: the top-level schema is not a record");
    check_catalog_error("1\truntime_sample\tjob_event.avsc\n", job, 1,
                        "catalog.tsv:1: job_event.avsc: record JobEvent is not a runtime_sample "
                        "(expected record RuntimeSample)");
    check_catalog_error("# c\n", NULL, 0, "catalog.tsv: no schemas listed");
    check_catalog_error("2\truntime_sample\told.avsc\n7\truntime_sample\tnew.avsc\n", evo1, 2,
                        "catalog.tsv:1: old.avsc (id 2) cannot be read as id 7: field "
                        "RuntimeSample.speed of the newer schema has no default");
    check_catalog_error("2\truntime_sample\told.avsc\n7\truntime_sample\tnew.avsc\n", evo2, 2,
                        "catalog.tsv:1: old.avsc (id 2) cannot be read as id 7: ");
    free(nodefault);
    free(strstep);
}

static void test_catalog_dir_missing(void **state)
{
    dlb_catalog_t *c = NULL;
    char err[512];

    (void)state;
    assert_int_equal(dlb_catalog_load_dir(&c, "/nonexistent/dlb", err, sizeof(err)), DLB_ERR_CONF);
    assert_null(c);
    assert_non_null(strstr(err, "/nonexistent/dlb/catalog.tsv"));
}

/* ---- round trips -------------------------------------------------------- */

static void test_roundtrip_all(void **state)
{
    (void)state;
    for (int i = 0; i < FX_SAMPLES; i++) {
        dlb_event_t in, out;
        void *buf = NULL;
        size_t len = 0;
        int32_t id = 0;
        char err[512] = "";

        fx_sample(&in, i);
        assert_int_equal(dlb_codec_encode(cat, &in, &buf, &len, err, sizeof(err)), 0);
        assert_true(len > DLB_FRAME_HEADER);
        assert_int_equal(((uint8_t *)buf)[0], 0);
        assert_int_equal(dlb_codec_peek(buf, len, &id, err, sizeof(err)), 0);
        assert_int_equal(id, dlb_catalog_latest(cat, in.type)->id);
        memset(&out, 0xab, sizeof(out)); /* decode must not trust the old contents */
        if (dlb_codec_decode(cat, buf, len, &out, err, sizeof(err)))
            fail_msg("sample %d: %s", i, err);
        assert_events_equal(&in, &out);
        assert_int_equal(dlb_event_validate(&out, err, sizeof(err)), 0);
        free(buf);
        dlb_event_clear(&in);
        dlb_event_clear(&out);
    }
}

static void test_roundtrip_values(void **state)
{
    dlb_event_t in, out;
    void *buf;
    size_t len;
    char err[256];

    (void)state;
    fx_runtime(&in, 2);
    assert_int_equal(dlb_codec_encode(cat, &in, &buf, &len, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_decode(cat, buf, len, &out, err, sizeof(err)), 0);
    assert_int_equal(out.type, DLB_EV_RUNTIME);
    assert_string_equal(out.u.rt.event_id, "rt-ev-1");
    assert_int_equal(out.u.rt.event_time_ms, FX_T0 + 15000);
    assert_string_equal(out.u.rt.job_uid, "uid-42");
    assert_int_equal(out.u.rt.global_step, 4200);
    assert_true(out.u.rt.speed == 12.75);
    assert_int_equal(out.u.rt.pods_cnt, 2);
    assert_string_equal(out.u.rt.pods[1].name, "uid-42-worker-1");
    assert_string_equal(out.u.rt.pods[1].type, "worker");
    assert_int_equal(out.u.rt.pods[1].index, 1);
    assert_true(out.u.rt.pods[1].cpu_used == 2.5);
    assert_true(out.u.rt.pods[1].cpu_requested == 4.0);
    assert_int_equal(out.u.rt.pods[1].memory_used, 2LL << 30);
    assert_int_equal(out.u.rt.pods[1].memory_requested, 8LL << 30);
    assert_int_equal(out.u.rt.pods[0].has_speed, 0); /* runtime_sample v2: not reported */
    assert_int_equal(out.u.rt.pods[1].has_speed, 1);
    assert_true(out.u.rt.pods[1].speed == 4.25);
    assert_string_equal(out.u.rt.pods[1].pod_ip, "10.0.0.11"); /* runtime_sample v3 */
    assert_string_equal(out.u.rt.pods[1].node_ip, "192.168.1.7");
    assert_string_equal(out.u.rt.pods[1].host_name, "uid-42-worker-1");
    assert_string_equal(out.u.rt.pods[1].ns, "ml");
    assert_int_equal(out.u.rt.pods[1].is_mixed, 0);
    free(buf);
    dlb_event_clear(&in);
    dlb_event_clear(&out);

    fx_plan(&in, 1);
    assert_int_equal(dlb_codec_encode(cat, &in, &buf, &len, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_decode(cat, buf, len, &out, err, sizeof(err)), 0);
    assert_int_equal(out.u.plan.actions_cnt, 2);
    assert_string_equal(out.u.plan.actions[0].pod, "uid-42-worker-3");
    assert_string_equal(out.u.plan.actions[0].action, "replace");
    assert_string_equal(out.u.plan.actions[0].reason, "0.4 steps/s against a median of 2.1");
    assert_string_equal(out.u.plan.actions[1].pod, "uid-42-worker-5");
    assert_string_equal(out.u.plan.actions[1].action, "relaunch");
    assert_string_equal(out.u.plan.actions[1].reason, "");
    free(buf);
    dlb_event_clear(&in);
    dlb_event_clear(&out);
}

/* A string filling its field exactly (limit - 1 bytes + NUL) survives. */
static void test_roundtrip_max_length(void **state)
{
    dlb_event_t in, out;
    void *buf;
    size_t len;
    char err[256];

    (void)state;
    fx_request(&in, 1);
    memset(in.u.req.job_uid, 'u', DLB_ID_MAX - 1);
    memset(in.u.req.oom_pod, 'p', DLB_ID_MAX - 1);
    /* plan_request v2: an OOM pod name of the same limit, heap-held */
    free(in.u.req.oom_pods[0]);
    in.u.req.oom_pods[0] = strdup(in.u.req.oom_pod);
    assert_non_null(in.u.req.oom_pods[0]);
    assert_int_equal(dlb_event_validate(&in, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_encode(cat, &in, &buf, &len, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_decode(cat, buf, len, &out, err, sizeof(err)), 0);
    assert_events_equal(&in, &out);
    free(buf);
    dlb_event_clear(&in);
    dlb_event_clear(&out);
}

/* ---- errors --------------------------------------------------------------- */

static void *encode_sample(int which, size_t *len)
{
    dlb_event_t ev;
    void *buf = NULL;
    char err[256];

    fx_sample(&ev, which);
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, len, err, sizeof(err)), 0);
    dlb_event_clear(&ev);
    return buf;
}

static void expect_decode(const void *buf, size_t len, int want, const char *want_msg)
{
    dlb_event_t ev;
    char err[512] = "";
    int rc = dlb_codec_decode(cat, buf, len, &ev, err, sizeof(err));

    if (rc != want)
        fail_msg("decode returned %s (%s), expected %s", dlb_err_name(rc), err, dlb_err_name(want));
    if (want_msg && !strstr(err, want_msg))
        fail_msg("error \"%s\" does not contain \"%s\"", err, want_msg);
    if (rc)
        assert_int_equal(ev.type, DLB_EV_NONE); /* a failed decode leaves nothing to release */
    dlb_event_clear(&ev);
}

static void test_framing_errors(void **state)
{
    static const uint8_t four[] = {0, 0, 0, 1};
    static const uint8_t json[] = "{\"type\":\"job_event\"}";
    size_t len;
    uint8_t *buf = encode_sample(7, &len);
    int32_t id = 0;
    char err[256];

    (void)state;
    expect_decode("", 0, DLB_ERR_FRAMING,
                  "message of 0 bytes is shorter than the 5-byte Confluent header");
    expect_decode(NULL, 0, DLB_ERR_FRAMING, "message of 0 bytes");
    expect_decode(four, sizeof(four), DLB_ERR_FRAMING, "message of 4 bytes");
    expect_decode(json, sizeof(json) - 1, DLB_ERR_FRAMING,
                  "magic byte is 0x7b, not 0: not Confluent-framed Avro (it looks like JSON)");
    buf[0] = 1;
    expect_decode(buf, len, DLB_ERR_FRAMING, "magic byte is 0x01, not 0");
    assert_int_equal(dlb_codec_peek(buf, len, &id, err, sizeof(err)), DLB_ERR_FRAMING);
    buf[0] = 0;
    buf[4] = 77;
    expect_decode(buf, len, DLB_ERR_SCHEMA_ID, "schema id 77 is not in the catalog (known: 1..12)");
    buf[1] = 0x80; /* ids are signed 32-bit on the wire, as in the registry */
    buf[4] = 0;
    expect_decode(buf, len, DLB_ERR_SCHEMA_ID, "schema id -2147483648 is not in the catalog");
    free(buf);
}

static void test_peek(void **state)
{
    static const uint8_t hdr[] = {0, 1, 2, 3, 4};
    int32_t id = 0;
    char err[256];

    (void)state;
    assert_int_equal(dlb_codec_peek(hdr, sizeof(hdr), &id, err, sizeof(err)), 0);
    assert_int_equal(id, 0x01020304);
    assert_int_equal(dlb_codec_peek(hdr, 4, &id, err, sizeof(err)), DLB_ERR_FRAMING);
}

static void test_truncated(void **state)
{
    (void)state;
    /* Every cut of a full sample of each type: the header alone up to one byte short. */
    for (int which = 1; which < FX_SAMPLES; which += 2) {
        size_t len;
        uint8_t *buf = encode_sample(which, &len);
        for (size_t cut = DLB_FRAME_HEADER; cut < len; cut++)
            expect_decode(buf, cut, DLB_ERR_DECODE, "truncated Avro data");
        free(buf);
    }
}

static void test_truncated_message_names_field(void **state)
{
    size_t len;
    uint8_t *buf = encode_sample(3, &len); /* runtime sample, 3 pods */

    (void)state;
    /* The last byte ends the pods array; before it pods[2]'s v3 fields:
     * is_mixed (1 byte), namespace "ml" (a length byte and 2), host_name,
     * node_ip and pod_ip (a length byte and 15, 11 and 9 bytes); before those
     * pods[2].speed (a union branch byte and an 8-byte double), before that
     * pods[2].memory_requested, a varint of several bytes. */
    const size_t v3 = 1 + 3 + 16 + 12 + 10;

    expect_decode(buf, len - 1, DLB_ERR_DECODE,
                  "pods: truncated Avro data: 1 more bytes needed at offset ");
    expect_decode(buf, len - 2, DLB_ERR_DECODE,
                  "pods[2].is_mixed: truncated Avro data: 1 more bytes needed at offset ");
    expect_decode(buf, len - 3, DLB_ERR_DECODE,
                  "pods[2].namespace: truncated Avro data: 2 more bytes needed at offset ");
    expect_decode(buf, len - 1 - v3 - 1, DLB_ERR_DECODE,
                  "pods[2].speed: truncated Avro data: 8 more bytes needed at offset ");
    expect_decode(buf, len - 1 - v3 - 9, DLB_ERR_DECODE,
                  "pods[2].speed: truncated Avro data: 1 more bytes needed at offset ");
    expect_decode(buf, len - 1 - v3 - 10, DLB_ERR_DECODE,
                  "pods[2].memory_requested: truncated Avro data: 1 more bytes needed at offset ");
    free(buf);
}

static void test_trailing_garbage(void **state)
{
    size_t len;
    uint8_t *buf = encode_sample(6, &len), *longer = malloc(len + 3);

    (void)state;
    assert_non_null(longer);
    memcpy(longer, buf, len);
    memcpy(longer + len, "xyz", 3);
    expect_decode(longer, len + 3, DLB_ERR_DECODE, "3 trailing bytes after the record");
    expect_decode(longer, len + 1, DLB_ERR_DECODE, "1 trailing bytes after the record");
    free(longer);
    free(buf);
}

static void test_corrupt_lengths(void **state)
{
    /* event_id claims 2^62 bytes: avro-c would try to allocate it. */
    static const uint8_t huge[] = {0,    0,    0,    0,    1,    0xfe, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    /* event_id of length -1 */
    static const uint8_t negative[] = {0, 0, 0, 0, 1, 0x01};
    /* a varint that never ends */
    static const uint8_t endless[] = {0,    0,    0,    0,    1,    0x82, 0x80, 0x80, 0x80,
                                      0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    /* "e", t=1, "j", then union branch 5 of meta (it has 2) */
    static const uint8_t branch[] = {0, 0, 0, 0, 1, 2, 'e', 2, 2, 'j', 10};
    /* plan_request whose stage has a NUL inside */
    static const uint8_t nul[] = {0, 0, 0, 0, 4, 2, 'e', 2, 2, 'j', 4, 'a', 0, 0};

    (void)state;
    expect_decode(huge, sizeof(huge), DLB_ERR_DECODE, "event_id: truncated Avro data");
    expect_decode(negative, sizeof(negative), DLB_ERR_DECODE, "event_id: negative length -1");
    expect_decode(endless, sizeof(endless), DLB_ERR_DECODE,
                  "event_id: varint longer than 10 bytes");
    expect_decode(branch, sizeof(branch), DLB_ERR_DECODE,
                  "meta: union branch 5 out of range at offset 10");
    expect_decode(nul, sizeof(nul), DLB_ERR_DECODE, "stage: contains a NUL byte");
}

/* A foreign producer writes a job_uid longer than the struct holds. */
static void test_overlong_job_uid(void **state)
{
    const dlb_schema_entry_t *e = dlb_catalog_latest(cat, DLB_EV_JOB);
    static const char *const optional[] = {
        "meta",     "state",    "hyper_params", "dataset",         "model",       "exit_reason",
        "workflow", "job_type", "resource",     "customized_data", "optimization"};
    char uid[201];
    avro_value_t v;
    uint8_t *buf;
    size_t len;

    (void)state;
    memset(uid, 'x', 200);
    uid[200] = '\0';
    assert_int_equal(avro_generic_value_new(e->iface, &v), 0);
    set_str(&v, "event_id", "ev-1");
    set_long(&v, "event_time_ms", FX_T0);
    set_str(&v, "job_uid", uid);
    for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
        set_null(&v, optional[i]);
    buf = frame_value(e->id, &v, &len);
    expect_decode(buf, len, DLB_ERR_DECODE, "job_uid: 200 bytes long, more than the limit of 127");
    free(buf);

    /* One byte shorter than the limit + 1 fits exactly. */
    uid[DLB_ID_MAX - 1] = '\0';
    set_str(&v, "job_uid", uid);
    buf = frame_value(e->id, &v, &len);
    expect_decode(buf, len, 0, NULL);
    free(buf);
    avro_value_decref(&v);
}

static void test_encode_errors(void **state)
{
    dlb_event_t ev;
    void *buf = (void *)1;
    size_t len = 1;
    char err[256];

    (void)state;
    fx_request(&ev, 0);
    memset(ev.u.req.stage, 'x', sizeof(ev.u.req.stage));
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "stage: not NUL-terminated within its 64 bytes");
    assert_null(buf);
    assert_int_equal(len, 0);

    memset(&ev, 0, sizeof(ev));
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);

    fx_config_match(&ev, 1);
    free(ev.u.cm.rule_ids[1]);
    ev.u.cm.rule_ids[1] = NULL;
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "rule_ids[1]: NULL string");
    dlb_event_clear(&ev);

    fx_runtime(&ev, 0);
    ev.u.rt.pods_cnt = 2;
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "pods: 2 items but no array");
}

/* ---- schema evolution ---------------------------------------------------- */

static uint8_t *old_runtime_bytes(size_t *len)
{
    avro_schema_t s;
    avro_value_iface_t *iface;
    avro_value_t v, pods, pod, f;
    uint8_t *buf;

    assert_int_equal(
        avro_schema_from_json_length(old_runtime_schema, strlen(old_runtime_schema), &s), 0);
    assert_non_null(iface = avro_generic_class_from_schema(s));
    assert_int_equal(avro_generic_value_new(iface, &v), 0);
    set_str(&v, "event_id", "old-1");
    set_long(&v, "event_time_ms", FX_T0);
    set_str(&v, "job_uid", "uid-7");
    set_str(&v, "host", "h1");
    set_long(&v, "global_step", 99);
    assert_int_equal(avro_value_get_by_name(&v, "pods", &pods, NULL), 0);
    assert_int_equal(avro_value_append(&pods, &pod, NULL), 0);
    set_str(&pod, "name", "uid-7-worker-0");
    set_str(&pod, "type", "worker");
    assert_int_equal(avro_value_get_by_name(&pod, "index", &f, NULL), 0);
    assert_int_equal(avro_value_set_int(&f, 4), 0);
    assert_int_equal(avro_value_get_by_name(&pod, "cpu_used", &f, NULL), 0);
    assert_int_equal(avro_value_set_float(&f, 1.5f), 0);
    assert_int_equal(avro_value_get_by_name(&pod, "cpu_requested", &f, NULL), 0);
    assert_int_equal(avro_value_set_double(&f, 2.0), 0);
    set_long(&pod, "memory_used", 3LL << 30);
    buf = frame_value(2, &v, len);
    avro_value_decref(&v);
    avro_value_iface_decref(iface);
    avro_schema_decref(s);
    return buf;
}

static void decode_old_runtime(const char *new_schema, double want_speed, int64_t want_mem_req)
{
    const tfile_t files[] = {
        {"catalog.tsv", "# id\ttype\tfile\n"
                        "2\truntime_sample\truntime_sample_v1.avsc\n"
                        "7\truntime_sample\truntime_sample.avsc\n"},
        {"runtime_sample_v1.avsc", old_runtime_schema},
        {"runtime_sample.avsc", new_schema},
    };
    dlb_catalog_t *c = NULL;
    dlb_event_t ev, again;
    char dir[64], err[512] = "";
    uint8_t *buf;
    void *enc;
    size_t len, enc_len;
    int32_t id;

    make_dir(dir, files, 3);
    if (dlb_catalog_load_dir(&c, dir, err, sizeof(err)))
        fail_msg("load: %s", err);
    remove_dir(dir, files, 3);
    assert_int_equal(dlb_catalog_count(c), 2);
    assert_non_null(dlb_catalog_by_id(c, 2)->resolver);
    assert_null(dlb_catalog_by_id(c, 7)->resolver);
    assert_int_equal(dlb_catalog_latest(c, DLB_EV_RUNTIME)->id, 7);
    assert_null(dlb_catalog_latest(c, DLB_EV_JOB));

    buf = old_runtime_bytes(&len);
    if (dlb_codec_decode(c, buf, len, &ev, err, sizeof(err)))
        fail_msg("decode: %s", err);
    assert_int_equal(ev.type, DLB_EV_RUNTIME);
    assert_string_equal(ev.u.rt.event_id, "old-1");
    assert_int_equal(ev.u.rt.event_time_ms, FX_T0);
    assert_string_equal(ev.u.rt.job_uid, "uid-7");
    assert_int_equal(ev.u.rt.global_step, 99);
    assert_true(ev.u.rt.speed == want_speed);
    assert_int_equal(ev.u.rt.pods_cnt, 1);
    assert_string_equal(ev.u.rt.pods[0].name, "uid-7-worker-0");
    assert_string_equal(ev.u.rt.pods[0].type, "worker");
    assert_int_equal(ev.u.rt.pods[0].index, 4);
    assert_true(ev.u.rt.pods[0].cpu_used == 1.5);
    assert_true(ev.u.rt.pods[0].cpu_requested == 2.0);
    assert_int_equal(ev.u.rt.pods[0].memory_used, 3LL << 30);
    assert_int_equal(ev.u.rt.pods[0].memory_requested, want_mem_req);
    assert_int_equal(ev.u.rt.pods[0].has_speed, 0); /* v2's pods[].speed: default null */
    assert_true(ev.u.rt.pods[0].speed == 0.0);

    /* Writers use the newest id. */
    assert_int_equal(dlb_codec_encode(c, &ev, &enc, &enc_len, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_peek(enc, enc_len, &id, err, sizeof(err)), 0);
    assert_int_equal(id, 7);
    assert_int_equal(dlb_codec_decode(c, enc, enc_len, &again, err, sizeof(err)), 0);
    assert_events_equal(&ev, &again);
    dlb_event_clear(&again);

    /* A truncated old message is still a decode error, and ids are listed. */
    expect_decode(buf, 0, DLB_ERR_FRAMING, NULL);
    assert_int_equal(dlb_codec_decode(c, buf, len - 2, &again, err, sizeof(err)), DLB_ERR_DECODE);
    buf[4] = 3;
    assert_int_equal(dlb_codec_decode(c, buf, len, &again, err, sizeof(err)), DLB_ERR_SCHEMA_ID);
    assert_string_equal(err, "schema id 3 is not in the catalog (known: 2, 7)");

    free(enc);
    free(buf);
    dlb_event_clear(&ev);
    dlb_event_clear(&again);
    dlb_catalog_destroy(c);
}

static void test_evolution_default(void **state)
{
    (void)state;
    decode_old_runtime(embedded("runtime_sample_v3.avsc"), 0.0, 0);
}

/* Defaults come from the newest schema's JSON, not from zeroed memory. */
static void test_evolution_nonzero_default(void **state)
{
    char *a = replace(embedded("runtime_sample_v3.avsc"),
                      "{\"name\": \"speed\", \"type\": \"double\", \"default\": 0.0",
                      "{\"name\": \"speed\", \"type\": \"double\", \"default\": 2.5");
    char *b = replace(a, "{\"name\": \"memory_requested\", \"type\": \"long\", \"default\": 0",
                      "{\"name\": \"memory_requested\", \"type\": \"long\", \"default\": 7");

    (void)state;
    decode_old_runtime(b, 2.5, 7);
    free(a);
    free(b);
}

/* Every fixture written by every older schema of its type in the embedded
 * catalog (runtime_sample v1 and v2, plan v1, job_event v1, ...), read by the
 * newest reader through the catalog's projection and default filling: the
 * fields the writer lacked take their defaults, as the same fields left out of
 * an `emit` line do. */
static void test_evolution_old_writers(void **state)
{
    size_t checked = 0;

    (void)state;
    for (int which = 0; which < FX_SAMPLES; which++) {
        for (size_t k = 0; k < dlb_catalog_count(cat); k++) {
            const dlb_schema_entry_t *old = dlb_catalog_at(cat, k);
            dlb_event_t ev, want, back;
            uint8_t *buf;
            void *enc;
            size_t len, enc_len;
            int32_t id;
            char *json, err[512] = "";

            fx_sample(&ev, which);
            if (old->type != ev.type || !old->resolver) {
                dlb_event_clear(&ev);
                continue;
            }
            buf = ow_frame(cat, old->id, &ev, &len, &json);
            if (dlb_json_to_event(cat, json, strlen(json), 0, &want, err, sizeof(err)))
                fail_msg("sample %d as id %d: JSON: %s", which, (int)old->id, err);
            if (dlb_codec_decode(cat, buf, len, &back, err, sizeof(err)))
                fail_msg("sample %d as id %d: %s", which, (int)old->id, err);
            assert_events_equal(&want, &back);
            assert_int_equal(dlb_event_validate(&back, err, sizeof(err)), 0);
            /* Re-encoded, it is a message of the newest schema. */
            assert_int_equal(dlb_codec_encode(cat, &back, &enc, &enc_len, err, sizeof(err)), 0);
            assert_int_equal(dlb_codec_peek(enc, enc_len, &id, err, sizeof(err)), 0);
            assert_int_equal(id, dlb_catalog_latest(cat, ev.type)->id);
            /* Every cut of the old message is still a decode error. */
            for (size_t cut = DLB_FRAME_HEADER; cut < len; cut++)
                expect_decode(buf, cut, DLB_ERR_DECODE, "truncated Avro data");
            checked++;
            free(enc);
            free(buf);
            cJSON_free(json);
            dlb_event_clear(&back);
            dlb_event_clear(&want);
            dlb_event_clear(&ev);
        }
    }
    /* job_event v1 x2, runtime_sample v1 x2, plan v1 x2 */
    assert_true(checked >= 6);
}

/* The JSON of an older writer's message read through the newest reader
 * shows the newer fields as absent or at their defaults: pods[].speed null
 * and the v3 pod fields empty (runtime_sample v1), actions [] (plan v1),
 * job_event v2's sections null and its new fields 0, "", [] or {}
 * (job_event v1), no oom_pods and no config (plan_request v1). */
static void test_evolution_v1_json(void **state)
{
    static const struct {
        int which; /* fx_sample() */
        int32_t id;
        const char *want;
    } cases[] = {
        {3, 2,
         "\"memory_requested\":8589934592,\"speed\":null,\"pod_ip\":\"\",\"node_ip\":\"\","
         "\"host_name\":\"\",\"namespace\":\"\",\"is_mixed\":false}"},
        {8, 5, "\"pods\":[],\"actions\":[],\"optimizer\":"},
        {1, 1,
         "\"storage\":\"odps\",\"sparse_item_count\":0,\"sparse_features\":\"\","
         "\"sparse_feature_groups\":\"\",\"sparse_feature_shapes\":\"\",\"dense_features\":\"\","
         "\"dense_feature_shapes\":\"\",\"storage_size\":0},"},
        {1, 1,
         "\"embedding_dimension\":16,\"max_variable_size\":0,\"update_op_count\":0,"
         "\"read_op_count\":0,\"input_fetch_dur\":0,\"kv_embedding_dims\":[],"
         "\"tensor_alloc_bytes\":{}},\"exit_reason\":\"Completed\",\"workflow\":null,"
         "\"job_type\":null,\"resource\":null,\"customized_data\":null,\"optimization\":null}"},
        {7, 4, "\"oom_pod\":\"uid-42-worker-3\",\"oom_pods\":[],\"config\":{}}"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlb_event_t ev, back;
        uint8_t *buf;
        size_t len;
        char *json = NULL, err[512] = "";

        fx_sample(&ev, cases[i].which);
        buf = ow_frame(cat, cases[i].id, &ev, &len, NULL);
        assert_int_equal(dlb_codec_decode(cat, buf, len, &back, err, sizeof(err)), 0);
        assert_int_equal(dlb_event_to_json(cat, &back, &json, err, sizeof(err)), 0);
        if (!strstr(json, cases[i].want))
            fail_msg("id %d: %s\n lacks %s", (int)cases[i].id, json, cases[i].want);
        free(json);
        free(buf);
        dlb_event_clear(&back);
        dlb_event_clear(&ev);
    }
}

/* ---- validation of the v2 fields ------------------------------------------- */

static void expect_invalid(const dlb_event_t *ev, const char *want)
{
    char err[512] = "";
    int rc = dlb_event_validate(ev, err, sizeof(err));

    if (rc != DLB_ERR_INVALID)
        fail_msg("validate returned %s (%s), expected invalid: %s", dlb_err_name(rc), err, want);
    if (strcmp(err, want))
        fail_msg("error \"%s\", expected \"%s\"", err, want);
}

static void test_validate_v2_fields(void **state)
{
    dlb_event_t ev;
    char err[256];

    (void)state;
    fx_runtime(&ev, 3);
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    ev.u.rt.pods[2].speed = -2;
    expect_invalid(&ev, "pods[2].speed: must be a finite non-negative number of steps/s (-2)");
    ev.u.rt.pods[2].speed = NAN;
    expect_invalid(&ev, "pods[2].speed: must be a finite non-negative number of steps/s (nan)");
    ev.u.rt.pods[2].speed = INFINITY;
    expect_invalid(&ev, "pods[2].speed: must be a finite non-negative number of steps/s (inf)");
    ev.u.rt.pods[2].has_speed = 0; /* not reported: whatever the double holds */
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    ev.u.rt.pods[2].has_speed = 1;
    ev.u.rt.pods[2].speed = 0;
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    dlb_event_clear(&ev);

    fx_plan(&ev, 1);
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    strcpy(ev.u.plan.actions[1].action, "kill");
    expect_invalid(&ev, "actions[1].action: unknown value \"kill\" (expected one of relaunch, "
                        "replace)");
    strcpy(ev.u.plan.actions[1].action, "");
    expect_invalid(&ev, "actions[1].action: unknown value \"\" (expected one of relaunch, "
                        "replace)");
    strcpy(ev.u.plan.actions[1].action, DLB_ACTION_RELAUNCH);
    ev.u.plan.actions[0].pod[0] = '\0';
    expect_invalid(&ev, "actions[0].pod: must not be empty");
    dlb_event_clear(&ev);
}

/* ---- job_event v2 ---------------------------------------------------------- */

static void test_job_v2_values(void **state)
{
    dlb_event_t in, out;
    const dlb_job_event_t *j = &out.u.job;
    void *buf;
    size_t len;
    char err[256];

    (void)state;
    fx_job(&in, 1);
    assert_int_equal(dlb_codec_encode(cat, &in, &buf, &len, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_decode(cat, buf, len, &out, err, sizeof(err)), 0);
    assert_int_equal(j->dataset.sparse_item_count, 1000000);
    assert_string_equal(j->dataset.sparse_features, "user_id,item_id,city");
    assert_string_equal(j->dataset.dense_feature_shapes, "1,1");
    assert_int_equal(j->dataset.storage_size, 5LL << 30);
    assert_int_equal(j->model.max_variable_size, 2LL << 30);
    assert_int_equal(j->model.input_fetch_dur, 56);
    assert_int_equal(j->model.kv_embedding_dims_cnt, 3);
    assert_int_equal(j->model.kv_embedding_dims[2], 32);
    /* map entries in wire order, the order they were added in */
    assert_int_equal(j->model.tensor_alloc_bytes_cnt, 2);
    assert_string_equal(j->model.tensor_alloc_bytes[0].key, "embedding/user_id/part_0");
    assert_int_equal(j->model.tensor_alloc_bytes[0].value, 1LL << 30);
    assert_string_equal(j->model.tensor_alloc_bytes[1].key, "dense/kernel");
    assert_int_equal(j->has_workflow, 1);
    assert_string_equal(j->workflow.odps_project, "ads_prod");
    assert_string_equal(j->workflow.code_address, "https://git.example.com/ads/ctr.git#a1b2c3");
    assert_int_equal(j->workflow.is_prod, 1);
    assert_string_equal(j->job_type, "ParameterServerStrategy");
    assert_string_equal(j->resource, "{\"worker\":{\"count\":2,\"cpu\":8}}");
    assert_string_equal(j->customized_data, "{\"init_training_time\": 42, \"rdzv_round\": 1}");
    assert_string_equal(j->optimization, "{\"timestamp\": 1700000000}");
    assert_string_equal(j->exit_reason, "Completed");
    free(buf);
    dlb_event_clear(&out);

    /* NULL texts write as "", and is_prod false, sections without lists. */
    free(in.u.job.workflow.code_address);
    in.u.job.workflow.code_address = NULL;
    in.u.job.workflow.is_prod = 0;
    assert_int_equal(dlb_codec_encode(cat, &in, &buf, &len, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_decode(cat, buf, len, &out, err, sizeof(err)), 0);
    assert_string_equal(j->workflow.code_address, "");
    assert_int_equal(j->workflow.is_prod, 0);
    assert_true(dlb_event_equal(&in, &out));
    free(buf);
    dlb_event_clear(&out);
    dlb_event_clear(&in);
}

static char *text_of(size_t n)
{
    char *t = malloc(n + 1);

    assert_non_null(t);
    memset(t, 'f', n);
    t[n] = '\0';
    return t;
}

/* Every heap part is bounded: validation names the field and the limit. */
static void test_job_v2_validate_bounds(void **state)
{
    dlb_event_t ev;
    dlb_model_t *m = &ev.u.job.model;
    char err[256], *keep;

    (void)state;
    fx_job(&ev, 1);
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    strcpy(ev.u.job.exit_reason, "NodeCheckFailed"); /* DLRover 0.6.1's */
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    strcpy(ev.u.job.exit_reason, "Oops");
    expect_invalid(&ev, "exit_reason: unknown value \"Oops\" (expected one of Completed, "
                        "CodeError, WorkerOOM, WorkerError, PSOOM, PSError, EvaluatorOOM, "
                        "EvaluatorError, UnknownError, HangError, RdzvTimeout, PendingTimeout, "
                        "UncompletedTimeout, NodeCheckFailed)");
    strcpy(ev.u.job.exit_reason, "Completed");

    keep = ev.u.job.dataset.sparse_features;
    ev.u.job.dataset.sparse_features = text_of(DLB_TEXT_MAX);
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    free(ev.u.job.dataset.sparse_features);
    ev.u.job.dataset.sparse_features = text_of(DLB_TEXT_MAX + 1);
    expect_invalid(&ev,
                   "dataset.sparse_features: 262145 bytes long, more than the limit of 262144");
    free(ev.u.job.dataset.sparse_features);
    ev.u.job.dataset.sparse_features = keep;
    keep = ev.u.job.optimization;
    ev.u.job.optimization = text_of(DLB_TEXT_MAX + 7);
    expect_invalid(&ev, "optimization: 262151 bytes long, more than the limit of 262144");
    free(ev.u.job.optimization);
    ev.u.job.optimization = keep;

    ev.u.job.dataset.storage_size = -1;
    expect_invalid(&ev, "dataset.storage_size: negative (-1)");
    ev.u.job.dataset.storage_size = 0;
    m->input_fetch_dur = -2;
    expect_invalid(&ev, "model.input_fetch_dur: negative (-2)");
    m->input_fetch_dur = 0;
    m->kv_embedding_dims[1] = -3;
    expect_invalid(&ev, "model.kv_embedding_dims[1]: negative (-3)");
    m->kv_embedding_dims[1] = 3;
    m->tensor_alloc_bytes[1].value = -4;
    expect_invalid(&ev, "model.tensor_alloc_bytes.dense/kernel: negative (-4)");
    m->tensor_alloc_bytes[1].value = 4;
    keep = m->tensor_alloc_bytes[0].key;
    m->tensor_alloc_bytes[0].key = text_of(DLB_KEY_MAX + 1);
    expect_invalid(&ev,
                   "model.tensor_alloc_bytes: a key of 1025 bytes, more than the limit of 1024");
    free(m->tensor_alloc_bytes[0].key);
    m->tensor_alloc_bytes[0].key = keep;

    /* Counts are checked before any item is looked at. */
    m->kv_embedding_dims_cnt = DLB_LIST_MAX + 1;
    expect_invalid(&ev, "model.kv_embedding_dims: 65537 items, more than the limit of 65536");
    m->kv_embedding_dims_cnt = 3;
    m->tensor_alloc_bytes_cnt = DLB_LIST_MAX + 1;
    expect_invalid(&ev, "model.tensor_alloc_bytes: 65537 items, more than the limit of 65536");
    m->tensor_alloc_bytes_cnt = 2;
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    dlb_event_clear(&ev);
}

/* What the encoder refuses: what it could not read back. */
static void test_job_v2_encode_errors(void **state)
{
    dlb_event_t ev;
    dlb_model_t *m = &ev.u.job.model;
    void *buf = NULL;
    size_t len = 0;
    char err[256], *keep;

    (void)state;
    fx_job(&ev, 1);
    keep = ev.u.job.resource;
    ev.u.job.resource = text_of(DLB_TEXT_MAX + 1);
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "resource: 262145 bytes long, more than the limit of 262144");
    free(ev.u.job.resource);
    ev.u.job.resource = keep;

    keep = m->tensor_alloc_bytes[1].key;
    m->tensor_alloc_bytes[1].key = m->tensor_alloc_bytes[0].key;
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err,
                        "model.tensor_alloc_bytes: key \"embedding/user_id/part_0\" given twice");
    m->tensor_alloc_bytes[1].key = NULL;
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "model.tensor_alloc_bytes[1]: NULL key or value");
    m->tensor_alloc_bytes[1].key = keep;

    m->kv_embedding_dims_cnt = DLB_LIST_MAX + 1;
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "model.kv_embedding_dims: 65537 items, more than the limit of 65536");
    m->kv_embedding_dims_cnt = 3;
    assert_null(buf);
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), 0);
    free(buf);
    dlb_event_clear(&ev);
}

/* A foreign producer's message past a bound is a decode error, found before
 * the decoder allocates for it. */
static void test_job_v2_decode_bounds(void **state)
{
    const dlb_schema_entry_t *e = dlb_catalog_latest(cat, DLB_EV_JOB);
    dlb_event_t ev;
    cJSON *j, *model, *dims;
    avro_value_t v;
    uint8_t *buf;
    size_t len;
    char *json = NULL, *text, err[512] = "";

    (void)state;
    fx_job(&ev, 1);
    assert_int_equal(dlb_event_to_json(cat, &ev, &json, err, sizeof(err)), 0);
    dlb_event_clear(&ev);
    assert_non_null(j = cJSON_Parse(json));
    free(json);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "type");
    model = cJSON_GetObjectItemCaseSensitive(j, "model");
    assert_non_null(dims = cJSON_CreateArray());
    for (int i = 0; i <= DLB_LIST_MAX; i++)
        assert_true(cJSON_AddItemToArray(dims, cJSON_CreateNumber(i % 100)));
    assert_true(cJSON_ReplaceItemInObjectCaseSensitive(model, "kv_embedding_dims", dims));
    assert_int_equal(avro_generic_value_new(e->iface, &v), 0);
    assert_int_equal(dlb_json_to_avro(cat, e, j, &v, "", err, sizeof(err)), 0);
    buf = frame_value(e->id, &v, &len);
    expect_decode(buf, len, DLB_ERR_DECODE,
                  "model.kv_embedding_dims: 65537 items, more than the limit of 65536");
    free(buf);
    avro_value_decref(&v);

    assert_true(
        cJSON_ReplaceItemInObjectCaseSensitive(model, "kv_embedding_dims", cJSON_CreateArray()));
    text = text_of(DLB_TEXT_MAX + 1);
    assert_true(
        cJSON_ReplaceItemInObjectCaseSensitive(j, "customized_data", cJSON_CreateString(text)));
    free(text);
    assert_int_equal(avro_generic_value_new(e->iface, &v), 0);
    assert_int_equal(dlb_json_to_avro(cat, e, j, &v, "", err, sizeof(err)), 0);
    buf = frame_value(e->id, &v, &len);
    expect_decode(buf, len, DLB_ERR_DECODE,
                  "customized_data: 262145 bytes long, more than the limit of 262144");
    free(buf);
    avro_value_decref(&v);
    cJSON_Delete(j);
}

/* ---- plan_request v2 ------------------------------------------------------ */

static void test_request_v2_bounds(void **state)
{
    const dlb_schema_entry_t *e = dlb_catalog_latest(cat, DLB_EV_PLAN_REQUEST);
    dlb_event_t ev;
    dlb_plan_request_t *r = &ev.u.req;
    void *buf = NULL;
    size_t len = 0;
    char err[256], *keep;
    cJSON *j, *pods;
    avro_value_t v;

    (void)state;
    fx_request(&ev, 1);
    assert_int_equal(dlb_event_validate(&ev, err, sizeof(err)), 0);
    r->oom_pods_cnt = DLB_OOM_PODS_MAX + 1;
    expect_invalid(&ev, "oom_pods: 1025 items, more than the limit of 1024");
    r->oom_pods_cnt = 2;
    r->config_cnt = DLB_CONFIG_MAX + 1;
    expect_invalid(&ev, "config: 257 items, more than the limit of 256");
    r->config_cnt = 2;
    keep = r->config[1].value;
    r->config[1].value = text_of(DLB_KEY_MAX + 1);
    expect_invalid(&ev, "config.optimizer.ps.flags: 1025 bytes long, more than the limit of 1024");
    free(r->config[1].value);
    r->config[1].value = keep;
    keep = r->config[1].key;
    r->config[1].key = text_of(DLB_KEY_MAX + 2);
    expect_invalid(&ev, "config: a key of 1026 bytes, more than the limit of 1024");
    free(r->config[1].key);
    /* The encoder refuses a key given twice: the second would replace the first. */
    r->config[1].key = fx_strdup(DLB_CONFIG_WORKER_PHASE);
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "config: key \"" DLB_CONFIG_WORKER_PHASE "\" given twice");
    free(r->config[1].key);
    r->config[1].key = keep;
    keep = r->oom_pods[1];
    r->oom_pods[1] = NULL;
    assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "oom_pods[1]: NULL string");
    r->oom_pods[1] = keep;
    /* oom_pod alone (v1 writers) is fine, oom_pods without it is not. */
    r->has_oom_pod = 0;
    expect_invalid(&ev, "oom_pod: must be the first of oom_pods (\"uid-42-worker-3\")");

    /* A foreign producer's 1025 OOM pods: refused before they are copied. */
    r->has_oom_pod = 1;
    assert_int_equal(dlb_event_to_json(cat, &ev, &keep, err, sizeof(err)), 0);
    dlb_event_clear(&ev);
    assert_non_null(j = cJSON_Parse(keep));
    free(keep);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "type");
    pods = cJSON_GetObjectItemCaseSensitive(j, "oom_pods");
    for (int i = 2; i <= DLB_OOM_PODS_MAX; i++)
        assert_true(cJSON_AddItemToArray(pods, cJSON_CreateString("uid-42-worker-9")));
    assert_int_equal(avro_generic_value_new(e->iface, &v), 0);
    assert_int_equal(dlb_json_to_avro(cat, e, j, &v, "", err, sizeof(err)), 0);
    buf = frame_value(e->id, &v, &len);
    expect_decode(buf, len, DLB_ERR_DECODE, "oom_pods: 1025 items, more than the limit of 1024");
    free(buf);
    avro_value_decref(&v);
    cJSON_Delete(j);
}

/* Issue 18, found by fuzz_struct: a list's second block declaring INT64_MAX
 * items after a first one overflowed the sum the limit's message names
 * (undefined behaviour; a negative count in the message). */
static void test_block_count_overflow(void **state)
{
    /* plan_request v2; event_id "e", time 2, job_uid "j", stage "s", no
     * oom_pod; oom_pods: a block of one "p", then a block of INT64_MAX. */
    /* clang-format off */
    static const uint8_t msg[] = {
        0, 0, 0, 0, 12,
        2, 'e', 4, 2, 'j', 2, 's', 0,
        2, 2, 'p',
        0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    };
    /* clang-format on */

    (void)state;
    expect_decode(msg, sizeof(msg), DLB_ERR_DECODE,
                  "oom_pods: 9223372036854775808 items, more than the limit of 1024");
}

/* Every type through the resolver: each newest schema listed twice, old ids
 * 1..7 and new ids 11..17; an encoded message relabelled with the old id
 * decodes through the projection and default filling to the same struct. */
static void test_resolution_all_types(void **state)
{
    const tfile_t files[] = {
        {"catalog.tsv", "1\tjob_event\tjob_event_v2.avsc\n"
                        "2\truntime_sample\truntime_sample_v3.avsc\n"
                        "3\tnode_event\tnode_event.avsc\n"
                        "4\tplan_request\tplan_request_v2.avsc\n"
                        "5\tplan\tplan_v2.avsc\n"
                        "6\tconfig_match\tconfig_match.avsc\n"
                        "7\tconfig_request\tconfig_request.avsc\n"
                        "11\tjob_event\tjob_event_v2.avsc\n"
                        "12\truntime_sample\truntime_sample_v3.avsc\n"
                        "13\tnode_event\tnode_event.avsc\n"
                        "14\tplan_request\tplan_request_v2.avsc\n"
                        "15\tplan\tplan_v2.avsc\n"
                        "16\tconfig_match\tconfig_match.avsc\n"
                        "17\tconfig_request\tconfig_request.avsc\n"},
        {"job_event_v2.avsc", NULL},
        {"runtime_sample_v3.avsc", NULL},
        {"node_event.avsc", NULL},
        {"plan_request_v2.avsc", NULL},
        {"plan_v2.avsc", NULL},
        {"config_match.avsc", NULL},
        {"config_request.avsc", NULL},
    };
    dlb_catalog_t *c = NULL;
    char dir[64], err[512] = "";

    (void)state;
    make_dir(dir, files, 8);
    if (dlb_catalog_load_dir(&c, dir, err, sizeof(err)))
        fail_msg("load: %s", err);
    remove_dir(dir, files, 8);
    for (int i = 0; i < FX_SAMPLES; i++) {
        dlb_event_t in, out;
        uint8_t *buf;
        void *enc;
        size_t len;

        fx_sample(&in, i);
        assert_int_equal(dlb_codec_encode(c, &in, &enc, &len, err, sizeof(err)), 0);
        buf = enc;
        assert_int_equal(buf[4], 10 + (int)in.type);
        buf[4] = (uint8_t)in.type;
        assert_non_null(dlb_catalog_by_id(c, buf[4])->resolver);
        if (dlb_codec_decode(c, buf, len, &out, err, sizeof(err)))
            fail_msg("sample %d: %s", i, err);
        assert_events_equal(&in, &out);
        free(buf);
        dlb_event_clear(&in);
        dlb_event_clear(&out);
    }
    dlb_catalog_destroy(c);
}

/* ---- a decoder keeping its values between messages ------------------------ */

typedef struct wire {
    uint8_t *buf;
    size_t len;
} wire_t;

static void wire_add(wire_t *w, size_t *n, size_t cap, const void *buf, size_t len)
{
    assert_true(*n < cap);
    w[*n].buf = malloc(len ? len : 1);
    assert_non_null(w[*n].buf);
    memcpy(w[*n].buf, buf, len);
    w[*n].len = len;
    (*n)++;
}

/* Decoded through dec and afresh: the same result, error message and event. */
static int same_both_ways(dlb_codec_decoder_t *dec, const wire_t *w, size_t i)
{
    dlb_event_t a, b;
    char ea[512] = "", eb[512] = "";
    int ra = dlb_codec_decode(cat, w->buf, w->len, &a, ea, sizeof(ea));
    int rb = dlb_codec_decoder_decode(dec, w->buf, w->len, &b, eb, sizeof(eb));

    if (ra != rb)
        fail_msg("message %zu: %s (%s) afresh, %s (%s) through the decoder", i, dlb_err_name(ra),
                 ea, dlb_err_name(rb), eb);
    if (ra)
        assert_string_equal(ea, eb);
    else
        assert_events_equal(&a, &b);
    if (rb)
        assert_int_equal(b.type, DLB_EV_NONE);
    dlb_event_clear(&a);
    dlb_event_clear(&b);
    return ra;
}

/* Messages of every type and schema id, old writers, a sample over
 * DLB_CODEC_KEEP_BYTES, and damaged copies of each (cut, bytes changed: bad
 * UTF-8, lengths, counts, union branches), decoded in turn by one decoder, in
 * two orders: whatever came before, each decodes as it does afresh. */
static void test_decoder_reuse(void **state)
{
    enum { CAP = 4096 };
    wire_t *w = calloc(CAP, sizeof(*w));
    size_t n = 0, good, failed = 0;
    dlb_codec_decoder_t *dec = NULL;
    dlb_pod_usage_t *pods = calloc(3000, sizeof(*pods));
    char err[512] = "";
    uint64_t rnd = 42;

    (void)state;
    assert_non_null(w);
    assert_non_null(pods);
    for (int which = 0; which < FX_SAMPLES; which++) {
        dlb_event_t ev;
        void *buf;
        size_t len;

        fx_sample(&ev, which);
        assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), 0);
        wire_add(w, &n, CAP, buf, len);
        free(buf);
        for (size_t k = 0; k < dlb_catalog_count(cat); k++) {
            const dlb_schema_entry_t *old = dlb_catalog_at(cat, k);
            char *json;
            if (old->type != ev.type || !old->resolver)
                continue;
            buf = ow_frame(cat, old->id, &ev, &len, &json);
            wire_add(w, &n, CAP, buf, len);
            free(buf);
            cJSON_free(json);
        }
        dlb_event_clear(&ev);
    }
    {
        /* A sample of 3,000 pods, about 150 KB: its values are not kept. */
        dlb_event_t ev = {.type = DLB_EV_RUNTIME};
        void *buf;
        size_t len;

        snprintf(ev.u.rt.event_id, sizeof(ev.u.rt.event_id), "big");
        snprintf(ev.u.rt.job_uid, sizeof(ev.u.rt.job_uid), "big-job");
        ev.u.rt.event_time_ms = 1767312000000;
        ev.u.rt.pods = pods;
        ev.u.rt.pods_cnt = 3000;
        for (size_t i = 0; i < 3000; i++) {
            snprintf(pods[i].name, sizeof(pods[i].name), "big-job-worker-%zu", i);
            snprintf(pods[i].type, sizeof(pods[i].type), "worker");
            pods[i].index = (int32_t)i;
            pods[i].has_speed = i % 2;
            pods[i].speed = 1.5;
        }
        assert_int_equal(dlb_codec_encode(cat, &ev, &buf, &len, err, sizeof(err)), 0);
        assert_true(len > DLB_CODEC_KEEP_BYTES);
        wire_add(w, &n, CAP, buf, len);
        free(buf);
    }
    good = n;
    for (size_t i = 0; i < good; i++) {
        /* Three cuts and eight changed bytes of each (xorshift: the same
         * every run); the original stays. */
        for (int c = 0; c < 3 && w[i].len > DLB_FRAME_HEADER; c++) {
            rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
            wire_add(w, &n, CAP, w[i].buf, DLB_FRAME_HEADER + rnd % (w[i].len - DLB_FRAME_HEADER));
        }
        for (int c = 0; c < 8; c++) {
            static const uint8_t bytes[] = {0xff, 0xc3, 0x80, 0x00, 0x01, 0x7f, 0x28, 0x02};
            rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
            wire_add(w, &n, CAP, w[i].buf, w[i].len);
            w[n - 1].buf[DLB_FRAME_HEADER + rnd % (w[i].len - DLB_FRAME_HEADER)] = bytes[c];
        }
    }
    assert_int_equal(dlb_codec_decoder_new(cat, &dec, err, sizeof(err)), 0);
    for (size_t i = 0; i < n; i++)
        failed += same_both_ways(dec, &w[i], i) != 0;
    for (size_t i = n; i-- > 0;)
        same_both_ways(dec, &w[i], i);
    /* The damaged copies hold failures of every kind, and some still decode. */
    assert_true(failed > n / 4);
    assert_true(failed < n - good / 2);
    dlb_codec_decoder_destroy(dec);
    for (size_t i = 0; i < n; i++)
        free(w[i].buf);
    free(w);
    free(pods);
}

/* dlb_codec_event_time: the time of every sample, written with the newest
 * schema and with each older one, read without building the event; what a
 * decode refuses (a cut, a trailing byte) refused too; a writer schema that
 * does not lead with the time read through a full decode. */
static void test_event_time(void **state)
{
    static const char id_time[] =
        "    {\"name\": \"event_id\", \"type\": \"string\"},\n"
        "    {\"name\": \"event_time_ms\", \"type\": {\"type\": \"long\", \"logicalType\": "
        "\"timestamp-millis\"}},\n";
    static const char time_id[] =
        "    {\"name\": \"event_time_ms\", \"type\": {\"type\": \"long\", \"logicalType\": "
        "\"timestamp-millis\"}},\n"
        "    {\"name\": \"event_id\", \"type\": \"string\"},\n";
    tfile_t files[] = {
        {"catalog.tsv",
         "1\truntime_sample\tswapped.avsc\n2\truntime_sample\truntime_sample_v3.avsc\n"},
        {"swapped.avsc", NULL},
        {"runtime_sample_v3.avsc", NULL},
    };
    static const uint8_t unknown_id[] = {0, 0, 0, 3, 0xe7, 2, 'x'};
    dlb_catalog_t *c = NULL;
    char dir[64], err[512] = "", *swapped;
    int64_t ms;
    size_t checked = 0, runtime = 0;

    (void)state;
    for (int which = 0; which < FX_SAMPLES; which++) {
        dlb_event_t ev;
        uint8_t *buf, *longer;
        size_t len;

        fx_sample(&ev, which);
        assert_int_equal(dlb_codec_encode(cat, &ev, (void **)&buf, &len, err, sizeof(err)), 0);
        ms = -1;
        if (dlb_codec_event_time(cat, buf, len, &ms, err, sizeof(err)))
            fail_msg("sample %d: %s", which, err);
        assert_int_equal(ms, dlb_event_time_ms(&ev));
        for (size_t cut = 0; cut < len; cut++)
            assert_int_equal(dlb_codec_event_time(cat, buf, cut, &ms, err, sizeof(err)),
                             cut < DLB_FRAME_HEADER ? DLB_ERR_FRAMING : DLB_ERR_DECODE);
        assert_non_null(longer = calloc(1, len + 1));
        memcpy(longer, buf, len);
        assert_int_equal(dlb_codec_event_time(cat, longer, len + 1, &ms, err, sizeof(err)),
                         DLB_ERR_DECODE);
        assert_non_null(strstr(err, "trailing"));
        free(longer);
        free(buf);
        for (size_t k = 0; k < dlb_catalog_count(cat); k++) {
            const dlb_schema_entry_t *old = dlb_catalog_at(cat, k);
            char *json;
            if (old->type != ev.type || !old->resolver)
                continue;
            buf = ow_frame(cat, old->id, &ev, &len, &json);
            ms = -1;
            if (dlb_codec_event_time(cat, buf, len, &ms, err, sizeof(err)))
                fail_msg("sample %d as id %d: %s", which, (int)old->id, err);
            assert_int_equal(ms, dlb_event_time_ms(&ev));
            checked++;
            free(buf);
            cJSON_free(json);
        }
        dlb_event_clear(&ev);
    }
    assert_true(checked >= 6);
    assert_int_equal(dlb_codec_event_time(cat, "", 0, &ms, err, sizeof(err)), DLB_ERR_FRAMING);
    assert_int_equal(
        dlb_codec_event_time(cat, unknown_id, sizeof(unknown_id), &ms, err, sizeof(err)),
        DLB_ERR_SCHEMA_ID);

    /* An older writer whose record starts with the time, not the id. */
    swapped = replace(embedded("runtime_sample_v3.avsc"), id_time, time_id);
    files[1].text = swapped;
    make_dir(dir, files, 3);
    if (dlb_catalog_load_dir(&c, dir, err, sizeof(err)))
        fail_msg("load: %s", err);
    remove_dir(dir, files, 3);
    for (int which = 0; which < FX_SAMPLES; which++) {
        dlb_event_t ev;
        uint8_t *buf;
        size_t len;
        char *json;

        fx_sample(&ev, which);
        if (ev.type == DLB_EV_RUNTIME) {
            buf = ow_frame(c, 1, &ev, &len, &json);
            ms = -1;
            if (dlb_codec_event_time(c, buf, len, &ms, err, sizeof(err)))
                fail_msg("sample %d, swapped writer: %s", which, err);
            assert_int_equal(ms, dlb_event_time_ms(&ev));
            assert_int_equal(dlb_codec_event_time(c, buf, len - 1, &ms, err, sizeof(err)),
                             DLB_ERR_DECODE);
            runtime++;
            free(buf);
            cJSON_free(json);
        }
        dlb_event_clear(&ev);
    }
    assert_true(runtime >= 1);
    dlb_catalog_destroy(c);
    free(swapped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog_embedded),
        cmocka_unit_test(test_catalog_errors),
        cmocka_unit_test(test_catalog_dir_missing),
        cmocka_unit_test(test_roundtrip_all),
        cmocka_unit_test(test_roundtrip_values),
        cmocka_unit_test(test_roundtrip_max_length),
        cmocka_unit_test(test_framing_errors),
        cmocka_unit_test(test_peek),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_truncated_message_names_field),
        cmocka_unit_test(test_trailing_garbage),
        cmocka_unit_test(test_corrupt_lengths),
        cmocka_unit_test(test_overlong_job_uid),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_evolution_default),
        cmocka_unit_test(test_evolution_nonzero_default),
        cmocka_unit_test(test_resolution_all_types),
        cmocka_unit_test(test_evolution_old_writers),
        cmocka_unit_test(test_evolution_v1_json),
        cmocka_unit_test(test_validate_v2_fields),
        cmocka_unit_test(test_job_v2_values),
        cmocka_unit_test(test_job_v2_validate_bounds),
        cmocka_unit_test(test_job_v2_encode_errors),
        cmocka_unit_test(test_job_v2_decode_bounds),
        cmocka_unit_test(test_request_v2_bounds),
        cmocka_unit_test(test_block_count_overflow),
        cmocka_unit_test(test_decoder_reuse),
        cmocka_unit_test(test_event_time),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
