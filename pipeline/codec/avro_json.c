/* JSON <-> avro-c generic values, walking the Avro schema.
 *
 * JSON input becomes a value of the newest schema of its event type, so every
 * schema rule is checked with a field path in the message; a field an older
 * writer lacked takes its JSON default the same way (codec.c). Values print
 * back as JSON in schema order. Knows nothing of the event structs. */
#include "codec_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "err.h"

/* Doubles hold integers exactly up to 2^53; beyond that a JSON number would
 * silently become a different long. */
#define JSON_INT_MAX 9007199254740992.0
#define NESTING_MAX  64

typedef struct jctx {
    const dlb_catalog_t *cat;
    const dlb_schema_entry_t *entry; /* whose field defaults apply */
    char *errstr;
    size_t size;
} jctx_t;

static void child_path(char *out, size_t n, const char *path, const char *name)
{
    snprintf(out, n, "%s%s%s", path, path[0] ? "." : "", name);
}

/* A short rendering of a JSON value for messages: "a", 1.5, {"x":1}. */
void dlb_json_describe(const cJSON *j, char *out, size_t n)
{
    char *s = cJSON_PrintUnformatted(j);

    if (!s) {
        snprintf(out, n, "a value");
        return;
    }
    if (strlen(s) > 40)
        snprintf(out, n, "%.37s...", s);
    else
        snprintf(out, n, "%s", s);
    cJSON_free(s);
}

static int expected(const jctx_t *c, const char *path, const char *what, const cJSON *j)
{
    char got[48];

    dlb_json_describe(j, got, sizeof(got));
    return dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: expected %s, got %s",
                      path[0] ? path : "(top)", what, got);
}

static int avro_failed(const jctx_t *c, const char *path)
{
    return dlb_seterr(c->errstr, c->size, DLB_ERR_GENERIC, "%s: %s", path[0] ? path : "(top)",
                      avro_strerror());
}

static int get_integer(const jctx_t *c, const cJSON *j, const char *path, double lo, double hi,
                       const char *range, int64_t *out)
{
    char got[48];
    double d;

    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble != floor(j->valuedouble))
        return expected(c, path, "an integer", j);
    d = j->valuedouble;
    if (d < lo || d > hi) {
        dlb_json_describe(j, got, sizeof(got));
        return dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: %s is out of range (%s)", path,
                          got, range);
    }
    *out = (int64_t)d;
    return 0;
}

static const char *describe_schema(avro_schema_t s)
{
    switch (avro_typeof(s)) {
    case AVRO_STRING:
    case AVRO_BYTES:
    case AVRO_ENUM:
    case AVRO_FIXED:
        return "a string";
    case AVRO_INT32:
    case AVRO_INT64:
        return "an integer";
    case AVRO_FLOAT:
    case AVRO_DOUBLE:
        return "a number";
    case AVRO_BOOLEAN:
        return "a boolean";
    case AVRO_NULL:
        return "null";
    case AVRO_RECORD:
    case AVRO_MAP:
        return "an object";
    case AVRO_ARRAY:
        return "an array";
    default:
        return "a value";
    }
}

static int j2a(const jctx_t *c, const cJSON *j, avro_value_t *v, const char *path, int depth);

static int j2a_record(const jctx_t *c, const cJSON *j, avro_value_t *v, avro_schema_t sch,
                      const char *path, int depth)
{
    unsigned char *seen = NULL;
    const cJSON *m;
    avro_value_t f;
    char cp[256];
    size_t n = 0, idx;
    int err = 0;

    if (!cJSON_IsObject(j))
        return expected(c, path, "an object", j);
    if (avro_value_get_size(v, &n))
        return avro_failed(c, path);
    if (n && !(seen = calloc(n, 1)))
        return dlb_seterr(c->errstr, c->size, DLB_ERR_NOMEM, "out of memory");
    cJSON_ArrayForEach(m, j)
    {
        child_path(cp, sizeof(cp), path, m->string ? m->string : "");
        if (!m->string || avro_value_get_by_name(v, m->string, &f, &idx)) {
            err = dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: unknown field", cp);
            goto out;
        }
        if (seen[idx]) {
            err = dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: given twice", cp);
            goto out;
        }
        seen[idx] = 1;
        if ((err = j2a(c, m, &f, cp, depth + 1)))
            goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = NULL;
        const cJSON *def;
        int nb;

        if (seen[i])
            continue;
        if (avro_value_get_by_index(v, i, &f, &name)) {
            err = avro_failed(c, path);
            goto out;
        }
        child_path(cp, sizeof(cp), path, name);
        if ((def = dlb_catalog_field_default(c->cat, c->entry, avro_schema_name(sch), name))) {
            if ((err = j2a(c, def, &f, cp, depth + 1)))
                goto out;
            continue;
        }
        /* An optional field without a default still reads as "not given". */
        if ((nb = dlb_avro_union_branch(avro_value_get_schema(&f), 1)) >= 0) {
            avro_value_t bv;
            if (avro_value_set_branch(&f, nb, &bv) || avro_value_set_null(&bv)) {
                err = avro_failed(c, cp);
                goto out;
            }
            continue;
        }
        err = dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: missing required field", cp);
        goto out;
    }
out:
    free(seen);
    return err;
}

static int j2a_union(const jctx_t *c, const cJSON *j, avro_value_t *v, avro_schema_t sch,
                     const char *path, int depth)
{
    size_t nb = avro_schema_union_size(sch), candidates = 0;
    int first_err = 0, null_branch = dlb_avro_union_branch(sch, 1);
    char first_msg[512] = "", what[128] = "";
    avro_value_t b;

    if (cJSON_IsNull(j) && null_branch >= 0) {
        if (avro_value_set_branch(v, null_branch, &b) || avro_value_set_null(&b))
            return avro_failed(c, path);
        return 0;
    }
    /* A plain value: the first non-null branch that takes it. */
    for (size_t i = 0; i < nb; i++) {
        avro_schema_t bs = dlb_avro_deref(avro_schema_union_branch(sch, (int)i));
        int err;

        if (is_avro_null(bs))
            continue;
        candidates++;
        snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", what[0] ? " or " : "",
                 describe_schema(bs));
        if (avro_value_set_branch(v, (int)i, &b))
            return avro_failed(c, path);
        err = j2a(c, j, &b, path, depth + 1);
        if (!err)
            return 0;
        if (err == DLB_ERR_NOMEM || err == DLB_ERR_GENERIC)
            return err;
        if (!first_err) {
            first_err = err;
            snprintf(first_msg, sizeof(first_msg), "%s", c->errstr ? c->errstr : "");
        }
    }
    if (candidates == 1) {
        /* The usual ["null", T]: the message about T is the useful one. */
        dlb_seterr(c->errstr, c->size, first_err, "%s", first_msg);
        return first_err;
    }
    return expected(c, path, what[0] ? what : "null", j);
}

static int j2a(const jctx_t *c, const cJSON *j, avro_value_t *v, const char *path, int depth)
{
    avro_schema_t sch = dlb_avro_deref(avro_value_get_schema(v));
    avro_value_t el;
    char cp[256];
    int64_t i64 = 0;
    int err, idx = 0;

    if (depth > NESTING_MAX)
        return dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: nested deeper than %d", path,
                          NESTING_MAX);
    switch (avro_typeof(sch)) {
    case AVRO_STRING:
        if (!cJSON_IsString(j))
            return expected(c, path, "a string", j);
        if (avro_value_set_string(v, j->valuestring))
            return avro_failed(c, path);
        return 0;
    case AVRO_BYTES:
        if (!cJSON_IsString(j))
            return expected(c, path, "a string", j);
        if (avro_value_set_bytes(v, j->valuestring, strlen(j->valuestring)))
            return avro_failed(c, path);
        return 0;
    case AVRO_INT32:
        if ((err = get_integer(c, j, path, INT32_MIN, INT32_MAX, "a 32-bit int", &i64)))
            return err;
        if (avro_value_set_int(v, (int32_t)i64))
            return avro_failed(c, path);
        return 0;
    case AVRO_INT64:
        if ((err = get_integer(c, j, path, -JSON_INT_MAX, JSON_INT_MAX,
                               "JSON integers are exact up to +-2^53", &i64)))
            return err;
        if (avro_value_set_long(v, i64))
            return avro_failed(c, path);
        return 0;
    case AVRO_FLOAT:
        if (!cJSON_IsNumber(j))
            return expected(c, path, "a number", j);
        if (avro_value_set_float(v, (float)j->valuedouble))
            return avro_failed(c, path);
        return 0;
    case AVRO_DOUBLE:
        if (!cJSON_IsNumber(j))
            return expected(c, path, "a number", j);
        if (avro_value_set_double(v, j->valuedouble))
            return avro_failed(c, path);
        return 0;
    case AVRO_BOOLEAN:
        if (!cJSON_IsBool(j))
            return expected(c, path, "a boolean", j);
        if (avro_value_set_boolean(v, cJSON_IsTrue(j)))
            return avro_failed(c, path);
        return 0;
    case AVRO_NULL:
        if (!cJSON_IsNull(j))
            return expected(c, path, "null", j);
        if (avro_value_set_null(v))
            return avro_failed(c, path);
        return 0;
    case AVRO_ENUM:
        if (!cJSON_IsString(j))
            return expected(c, path, "a string", j);
        if ((idx = avro_schema_enum_get_by_name(sch, j->valuestring)) < 0)
            return dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: unknown symbol \"%s\"", path,
                              j->valuestring);
        if (avro_value_set_enum(v, idx))
            return avro_failed(c, path);
        return 0;
    case AVRO_FIXED: {
        size_t want = (size_t)avro_schema_fixed_size(sch);
        if (!cJSON_IsString(j) || strlen(j->valuestring) != want) {
            char what[48];
            snprintf(what, sizeof(what), "a string of %zu bytes", want);
            return expected(c, path, what, j);
        }
        if (avro_value_set_fixed(v, j->valuestring, want))
            return avro_failed(c, path);
        return 0;
    }
    case AVRO_RECORD:
        return j2a_record(c, j, v, sch, path, depth);
    case AVRO_ARRAY: {
        const cJSON *item;
        int i = 0;
        if (!cJSON_IsArray(j))
            return expected(c, path, "an array", j);
        cJSON_ArrayForEach(item, j)
        {
            snprintf(cp, sizeof(cp), "%s[%d]", path, i++);
            if (avro_value_append(v, &el, NULL))
                return avro_failed(c, cp);
            if ((err = j2a(c, item, &el, cp, depth + 1)))
                return err;
        }
        return 0;
    }
    case AVRO_MAP: {
        const cJSON *item;
        if (!cJSON_IsObject(j))
            return expected(c, path, "an object", j);
        cJSON_ArrayForEach(item, j)
        {
            int is_new = 0;
            child_path(cp, sizeof(cp), path, item->string ? item->string : "");
            if (avro_value_add(v, item->string ? item->string : "", &el, NULL, &is_new))
                return avro_failed(c, cp);
            if (!is_new)
                return dlb_seterr(c->errstr, c->size, DLB_ERR_DECODE, "%s: given twice", cp);
            if ((err = j2a(c, item, &el, cp, depth + 1)))
                return err;
        }
        return 0;
    }
    case AVRO_UNION:
        return j2a_union(c, j, v, sch, path, depth);
    default:
        return dlb_seterr(c->errstr, c->size, DLB_ERR_GENERIC, "%s: unsupported Avro type %s", path,
                          avro_schema_type_name(sch));
    }
}

int dlb_json_to_avro(const dlb_catalog_t *cat, const dlb_schema_entry_t *e, const cJSON *j,
                     avro_value_t *v, const char *path, char *errstr, size_t errstr_size)
{
    const jctx_t c = {cat, e, errstr, errstr_size};
    return j2a(&c, j, v, path ? path : "", 0);
}

/* ---- Avro value -> JSON ------------------------------------------------ */

/* cJSON prints a double with 15 significant digits whenever its epsilon
 * comparison calls that close enough, which can be one ulp off (it prints
 * 0.30000000000000004 as 0.3), so event -> JSON -> event would change the
 * value. Found by tests/fuzz/fuzz_json. The shortest of 15..17 digits that
 * reads back to the same double; 17 always does. Not finite: null, as cJSON. */
static cJSON *json_double(double x)
{
    char buf[32];

    if (!isfinite(x))
        return cJSON_CreateNull();
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return cJSON_CreateRaw(buf);
}

static cJSON *a2j(avro_value_t *v, int depth)
{
    avro_schema_t sch = dlb_avro_deref(avro_value_get_schema(v));
    cJSON *out = NULL, *child;
    avro_value_t el;
    size_t n = 0;

    if (depth > NESTING_MAX)
        return NULL;
    switch (avro_value_get_type(v)) {
    case AVRO_STRING: {
        const char *s = NULL;
        size_t sz;
        if (avro_value_get_string(v, &s, &sz))
            return NULL;
        return cJSON_CreateString(s ? s : "");
    }
    case AVRO_BYTES:
    case AVRO_FIXED: {
        const void *b = NULL;
        char *s;
        size_t sz = 0;
        if ((avro_value_get_type(v) == AVRO_BYTES ? avro_value_get_bytes(v, &b, &sz)
                                                  : avro_value_get_fixed(v, &b, &sz)) ||
            !(s = malloc(sz + 1)))
            return NULL;
        if (sz)
            memcpy(s, b, sz);
        s[sz] = '\0';
        out = cJSON_CreateString(s);
        free(s);
        return out;
    }
    case AVRO_INT32: {
        int32_t x;
        return avro_value_get_int(v, &x) ? NULL : cJSON_CreateNumber(x);
    }
    case AVRO_INT64: {
        int64_t x;
        char raw[24];
        if (avro_value_get_long(v, &x))
            return NULL;
        /* Exact digits always: beyond 2^53 a double cannot hold them, and
         * from 10^15 on cJSON's epsilon comparison may settle for 15
         * significant digits (9007199254740991 became 9.00719925474099e+15;
         * found by tests/fuzz/fuzz_codec). */
        snprintf(raw, sizeof(raw), "%lld", (long long)x);
        return cJSON_CreateRaw(raw);
    }
    case AVRO_FLOAT: {
        float x;
        return avro_value_get_float(v, &x) ? NULL : json_double(x);
    }
    case AVRO_DOUBLE: {
        double x;
        return avro_value_get_double(v, &x) ? NULL : json_double(x);
    }
    case AVRO_BOOLEAN: {
        int x;
        return avro_value_get_boolean(v, &x) ? NULL : cJSON_CreateBool(x);
    }
    case AVRO_NULL:
        return cJSON_CreateNull();
    case AVRO_ENUM: {
        int x;
        const char *sym;
        if (avro_value_get_enum(v, &x) || !(sym = avro_schema_enum_get(sch, x)))
            return NULL;
        return cJSON_CreateString(sym);
    }
    case AVRO_RECORD:
    case AVRO_MAP:
        if (avro_value_get_size(v, &n) || !(out = cJSON_CreateObject()))
            return NULL;
        for (size_t i = 0; i < n; i++) {
            const char *name = NULL;
            if (avro_value_get_by_index(v, i, &el, &name) || !(child = a2j(&el, depth + 1)))
                goto fail;
            if (!cJSON_AddItemToObject(out, name, child)) {
                cJSON_Delete(child);
                goto fail;
            }
        }
        return out;
    case AVRO_ARRAY:
        if (avro_value_get_size(v, &n) || !(out = cJSON_CreateArray()))
            return NULL;
        for (size_t i = 0; i < n; i++) {
            if (avro_value_get_by_index(v, i, &el, NULL) || !(child = a2j(&el, depth + 1)))
                goto fail;
            if (!cJSON_AddItemToArray(out, child)) {
                cJSON_Delete(child);
                goto fail;
            }
        }
        return out;
    case AVRO_UNION:
        if (avro_value_get_current_branch(v, &el))
            return NULL;
        return a2j(&el, depth + 1);
    default:
        return NULL;
    }
fail:
    cJSON_Delete(out);
    return NULL;
}

cJSON *dlb_avro_to_json(avro_value_t *v)
{
    return a2j(v, 0);
}
