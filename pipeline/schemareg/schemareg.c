#include "schemareg.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "conf.h"
#include "err.h"
#include "event.h"
#include "kafka.h"

#define SUBJECT_SUFFIX "-value"
#define SEGMENTS_MAX   8

/* The Confluent error codes (io.confluent.kafka.schemaregistry.rest.exceptions). */
#define SR_SUBJECT_NOT_FOUND 40401
#define SR_VERSION_NOT_FOUND 40402
#define SR_SCHEMA_NOT_FOUND  40403
#define SR_INVALID_SCHEMA    42201
#define SR_INVALID_VERSION   42202

/* One topic of an environment and the catalog entries its subject lists. */
typedef struct topic_versions {
    const char *topic; /* DLB_TOPIC_* short name */
    size_t *entries;   /* catalog indices, ascending id */
    size_t cnt;
    const char *compat; /* GET /config/{subject} */
} topic_versions_t;

struct dlb_schemareg {
    const dlb_catalog_t *cat;
    char **schema; /* compact JSON text of each catalog entry */
    topic_versions_t *topics;
    size_t topics_cnt;
    pthread_mutex_t lock; /* envs */
    char **envs;
    size_t envs_cnt;
};

/* A parsed subject: the topic's versions, or NULL when not served. */
typedef struct subject {
    const topic_versions_t *tv;
} subject_t;

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void dlb_schemareg_destroy(dlb_schemareg_t *r)
{
    if (!r)
        return;
    free_strs(r->schema, dlb_catalog_count(r->cat));
    for (size_t i = 0; r->topics && i < r->topics_cnt; i++)
        free(r->topics[i].entries);
    free(r->topics);
    free_strs(r->envs, r->envs_cnt);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* The types whose events go to topic; every type for the DLQ. */
static int topic_has(const char *topic, dlb_event_type_t type)
{
    return !strcmp(topic, DLB_TOPIC_DLQ) || !strcmp(dlb_event_type_topic(type), topic);
}

static int build_topics(dlb_schemareg_t *r)
{
    size_t n = 0, cnt = dlb_catalog_count(r->cat);

    while (dlb_kafka_pipeline_topics[n])
        n++;
    if (!(r->topics = calloc(n, sizeof(*r->topics))))
        return DLB_ERR_NOMEM;
    r->topics_cnt = n;
    for (size_t t = 0; t < n; t++) {
        topic_versions_t *tv = &r->topics[t];

        tv->topic = dlb_kafka_pipeline_topics[t];
        /* The DLQ holds any schema's records: no compatibility between them. */
        tv->compat = strcmp(tv->topic, DLB_TOPIC_DLQ) ? "BACKWARD" : "NONE";
        if (!(tv->entries = calloc(cnt, sizeof(*tv->entries))))
            return DLB_ERR_NOMEM;
        for (size_t i = 0; i < cnt; i++) /* the catalog is sorted by id */
            if (topic_has(tv->topic, dlb_catalog_at(r->cat, i)->type))
                tv->entries[tv->cnt++] = i;
    }
    return 0;
}

int dlb_schemareg_new(dlb_schemareg_t **out, const dlb_catalog_t *cat, char *errstr,
                      size_t errstr_size)
{
    dlb_schemareg_t *r;
    size_t cnt = dlb_catalog_count(cat);

    *out = NULL;
    if (!(r = calloc(1, sizeof(*r))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    r->cat = cat;
    pthread_mutex_init(&r->lock, NULL);
    if (!(r->schema = calloc(cnt, sizeof(*r->schema))) || build_topics(r))
        goto nomem;
    for (size_t i = 0; i < cnt; i++) {
        const dlb_schema_entry_t *e = dlb_catalog_at(cat, i);
        cJSON *tree = cJSON_Parse(e->json);

        /* The catalog parsed this text already: only memory can fail here. */
        r->schema[i] = tree ? cJSON_PrintUnformatted(tree) : NULL;
        cJSON_Delete(tree);
        if (!r->schema[i])
            goto nomem;
    }
    *out = r;
    return 0;
nomem:
    dlb_schemareg_destroy(r);
    return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
}

int dlb_schemareg_set_envs(dlb_schemareg_t *r, const char *const *envs, size_t n, char *errstr,
                           size_t errstr_size)
{
    char **copy = NULL, **old;
    size_t old_cnt;

    if (n && !(copy = calloc(n, sizeof(*copy))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        /* A dot would make "<env>.<topic>" ambiguous. */
        if (!envs[i][0] || strpbrk(envs[i], "./")) {
            free_strs(copy, n);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "schema registry: \"%s\" is not an environment name", envs[i]);
        }
        if (!(copy[i] = strdup(envs[i]))) {
            free_strs(copy, n);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        }
    }
    pthread_mutex_lock(&r->lock);
    old = r->envs;
    old_cnt = r->envs_cnt;
    r->envs = copy;
    r->envs_cnt = n;
    pthread_mutex_unlock(&r->lock);
    free_strs(old, old_cnt);
    return 0;
}

/* ---- answers ----------------------------------------------------------- */

typedef struct reply {
    int status;
    cJSON *json;     /* printed into the body, or */
    const char *raw; /* a schema text as it is */
} reply_t;

static int sr_error(reply_t *rp, int status, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int sr_error(reply_t *rp, int status, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rp->status = status;
    if (!(rp->json = cJSON_CreateObject()) ||
        !cJSON_AddNumberToObject(rp->json, "error_code", code) ||
        !cJSON_AddStringToObject(rp->json, "message", msg))
        return DLB_ERR_NOMEM;
    return 0;
}

/* What Jersey answers for a path no resource has (Confluent does the same). */
static int not_found(reply_t *rp)
{
    return sr_error(rp, 404, 404, "HTTP 404 Not Found");
}

static int ok(reply_t *rp, cJSON *json)
{
    rp->status = 200;
    rp->json = json;
    return json ? 0 : DLB_ERR_NOMEM;
}

/* Looks subject up (caller holds the lock). */
static const topic_versions_t *subject_find(const dlb_schemareg_t *r, const char *subject)
{
    size_t len = strlen(subject), sl = strlen(SUBJECT_SUFFIX);
    const char *dot = strchr(subject, '.');

    if (!dot || len <= sl || strcmp(subject + len - sl, SUBJECT_SUFFIX))
        return NULL;
    for (size_t i = 0; i < r->envs_cnt; i++) {
        size_t el = strlen(r->envs[i]);
        if (el != (size_t)(dot - subject) || strncmp(subject, r->envs[i], el))
            continue;
        for (size_t t = 0; t < r->topics_cnt; t++) {
            size_t tl = strlen(r->topics[t].topic);
            if (el + 1 + tl + sl == len && !strncmp(dot + 1, r->topics[t].topic, tl))
                return &r->topics[t];
        }
    }
    return NULL;
}

static int subject_missing(reply_t *rp, const char *subject)
{
    return sr_error(rp, 404, SR_SUBJECT_NOT_FOUND, "Subject '%s' not found.", subject);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int get_subjects(const dlb_schemareg_t *r, reply_t *rp)
{
    size_t n = r->envs_cnt * r->topics_cnt, k = 0;
    char **names = n ? calloc(n, sizeof(*names)) : NULL;
    cJSON *arr = cJSON_CreateArray();
    int err = 0;

    if ((n && !names) || !arr)
        goto nomem;
    for (size_t i = 0; i < r->envs_cnt; i++)
        for (size_t t = 0; t < r->topics_cnt; t++) {
            if (asprintf(&names[k], "%s.%s" SUBJECT_SUFFIX, r->envs[i], r->topics[t].topic) < 0) {
                names[k] = NULL;
                goto nomem;
            }
            k++;
        }
    if (n) /* qsort wants a non-NULL base even for none */
        qsort(names, n, sizeof(*names), cmp_str);
    for (size_t i = 0; i < n; i++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(names[i])))
            goto nomem;
    err = ok(rp, arr);
    arr = NULL;
    goto out;
nomem:
    err = DLB_ERR_NOMEM;
out:
    free_strs(names, k);
    cJSON_Delete(arr);
    return err;
}

static int get_versions(const topic_versions_t *tv, reply_t *rp)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t v = 1; arr && v <= tv->cnt; v++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)v))) {
            cJSON_Delete(arr);
            return DLB_ERR_NOMEM;
        }
    return ok(rp, arr);
}

/* {"subject", "version", "id", "schema"}: a version, or a lookup's answer. */
static int version_object(const dlb_schemareg_t *r, const char *subject, const topic_versions_t *tv,
                          size_t v, reply_t *rp)
{
    size_t i = tv->entries[v - 1];
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddStringToObject(o, "subject", subject) ||
        !cJSON_AddNumberToObject(o, "version", (double)v) ||
        !cJSON_AddNumberToObject(o, "id", dlb_catalog_at(r->cat, i)->id) ||
        !cJSON_AddStringToObject(o, "schema", r->schema[i])) {
        cJSON_Delete(o);
        return DLB_ERR_NOMEM;
    }
    return ok(rp, o);
}

/* "latest", -1 (Confluent's alias of latest) or 1..2^31-1; 0 when invalid. */
static long version_parse(const char *s, size_t latest)
{
    char *end;
    long v;

    if (!strcmp(s, "latest") || !strcmp(s, "-1"))
        return (long)latest;
    if (*s < '0' || *s > '9')
        return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    return (*end || errno || v < 1 || v > INT32_MAX) ? 0 : v;
}

static int get_version(const dlb_schemareg_t *r, const char *subject, const topic_versions_t *tv,
                       const char *vs, int raw, reply_t *rp)
{
    long v = version_parse(vs, tv->cnt);

    if (!v)
        return sr_error(rp, 422, SR_INVALID_VERSION,
                        "The specified version '%s' is not a valid version id. Allowed values are "
                        "between [1, 2^31-1] and the string \"latest\"",
                        vs);
    if ((size_t)v > tv->cnt)
        return sr_error(rp, 404, SR_VERSION_NOT_FOUND, "Version %ld not found.", v);
    if (raw) {
        rp->status = 200;
        rp->raw = r->schema[tv->entries[v - 1]];
        return 0;
    }
    return version_object(r, subject, tv, (size_t)v, rp);
}

/* The catalog index of schema id ids (decimal), or -1 (*valid = 0 when ids
 * is not a number: no route matches, as in Confluent's). */
static long id_index(const dlb_schemareg_t *r, const char *ids, int *valid)
{
    char *end;
    long id;
    const dlb_schema_entry_t *e;

    errno = 0;
    id = strtol(ids, &end, 10);
    *valid = *ids && !*end && !errno && id >= INT32_MIN && id <= INT32_MAX;
    if (!*valid || !(e = dlb_catalog_by_id(r->cat, (int32_t)id)))
        return -1;
    for (size_t i = 0; i < dlb_catalog_count(r->cat); i++)
        if (dlb_catalog_at(r->cat, i) == e)
            return (long)i;
    return -1;
}

/* Every subject and version that holds catalog entry i. */
static int get_id_versions(const dlb_schemareg_t *r, size_t i, reply_t *rp)
{
    cJSON *arr = cJSON_CreateArray(), *o;
    char subject[256];

    if (!arr)
        return DLB_ERR_NOMEM;
    for (size_t e = 0; e < r->envs_cnt; e++)
        for (size_t t = 0; t < r->topics_cnt; t++)
            for (size_t v = 0; v < r->topics[t].cnt; v++) {
                if (r->topics[t].entries[v] != i)
                    continue;
                snprintf(subject, sizeof(subject), "%s.%s" SUBJECT_SUFFIX, r->envs[e],
                         r->topics[t].topic);
                o = cJSON_CreateObject();
                if (!o || !cJSON_AddStringToObject(o, "subject", subject) ||
                    !cJSON_AddNumberToObject(o, "version", (double)(v + 1)) ||
                    !cJSON_AddItemToArray(arr, o)) {
                    cJSON_Delete(o);
                    cJSON_Delete(arr);
                    return DLB_ERR_NOMEM;
                }
            }
    return ok(rp, arr);
}

static int get_schema_id(const dlb_schemareg_t *r, const char *ids, const char *what, reply_t *rp)
{
    int valid;
    long i = id_index(r, ids, &valid);
    cJSON *o;

    if (!valid)
        return not_found(rp);
    if (i < 0)
        return sr_error(rp, 404, SR_SCHEMA_NOT_FOUND, "Schema %s not found", ids);
    if (!what) {
        /* schemaType is left out for AVRO, as Confluent does. */
        if (!(o = cJSON_CreateObject()) || !cJSON_AddStringToObject(o, "schema", r->schema[i])) {
            cJSON_Delete(o);
            return DLB_ERR_NOMEM;
        }
        return ok(rp, o);
    }
    if (!strcmp(what, "versions"))
        return get_id_versions(r, (size_t)i, rp);
    if (!strcmp(what, "schema")) {
        rp->status = 200;
        rp->raw = r->schema[i];
        return 0;
    }
    return not_found(rp);
}

/* POST /subjects/{subject}: the version of subject whose schema is the
 * posted one (Avro-equal: names, types, fields; not docs or formatting). */
static int lookup(const dlb_schemareg_t *r, const char *subject, const topic_versions_t *tv,
                  const char *body, size_t body_len, reply_t *rp)
{
    cJSON *req = body_len ? cJSON_ParseWithLength(body, body_len) : NULL;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(req, "schema");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(req, "schemaType");
    avro_schema_t posted = NULL;
    int err;

    if (!cJSON_IsObject(req)) {
        err = sr_error(rp, 400, 400, "the request body is not a JSON object");
        goto out;
    }
    if (type && !cJSON_IsNull(type) &&
        (!cJSON_IsString(type) || strcmp(type->valuestring, "AVRO"))) {
        err = sr_error(rp, 422, SR_INVALID_SCHEMA,
                       "Invalid schema type: dlbrain's schemas are AVRO only");
        goto out;
    }
    if (!cJSON_IsString(schema) ||
        avro_schema_from_json_length(schema->valuestring, strlen(schema->valuestring), &posted)) {
        err = sr_error(rp, 422, SR_INVALID_SCHEMA, "Invalid schema: %s",
                       cJSON_IsString(schema) ? avro_strerror() : "no \"schema\" string");
        posted = NULL;
        goto out;
    }
    for (size_t v = tv->cnt; v > 0; v--)
        if (avro_schema_equal(posted, dlb_catalog_at(r->cat, tv->entries[v - 1])->schema)) {
            err = version_object(r, subject, tv, v, rp);
            goto out;
        }
    err = sr_error(rp, 404, SR_SCHEMA_NOT_FOUND, "Schema not found");
out:
    if (posted)
        avro_schema_decref(posted);
    cJSON_Delete(req);
    return err;
}

static int compat(const char *level, reply_t *rp)
{
    cJSON *o = cJSON_CreateObject();

    if (o && !cJSON_AddStringToObject(o, "compatibilityLevel", level)) {
        cJSON_Delete(o);
        o = NULL;
    }
    return ok(rp, o);
}

static int get_mode(reply_t *rp)
{
    cJSON *o = cJSON_CreateObject();

    if (o && !cJSON_AddStringToObject(o, "mode", "READONLY")) {
        cJSON_Delete(o);
        o = NULL;
    }
    return ok(rp, o);
}

static int get_types(reply_t *rp)
{
    const char *avro = "AVRO";

    return ok(rp, cJSON_CreateStringArray(&avro, 1));
}

/* GET /subjects/{s}[/versions[/{v}[/schema]]], POST /subjects/{s} */
static int route_subject(const dlb_schemareg_t *r, int get, char **seg, size_t n, const char *body,
                         size_t body_len, reply_t *rp)
{
    const topic_versions_t *tv;

    if (n > 5 || (n >= 3 && strcmp(seg[2], "versions")) || (n == 5 && strcmp(seg[4], "schema")))
        return not_found(rp);
    if (!(tv = subject_find(r, seg[1])))
        return subject_missing(rp, seg[1]);
    if (n == 2)
        return get ? not_found(rp) : lookup(r, seg[1], tv, body, body_len, rp);
    if (n == 3)
        return get_versions(tv, rp);
    return get_version(r, seg[1], tv, seg[3], n == 5, rp);
}

static int route(const dlb_schemareg_t *r, const char *method, const char *path, char **seg,
                 size_t n, const char *body, size_t body_len, reply_t *rp)
{
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    int lookup_post = !strcmp(method, "POST") && n == 2 && !strcmp(seg[0], "subjects");

    if (!get && !lookup_post)
        return sr_error(rp, 405, 405,
                        "dlbrain's schema registry is read-only: %s %s is not served. Its "
                        "schemas are dlbrain's catalog (schemas/catalog.tsv), changed by a new "
                        "dlbrain release",
                        method, path);
    if (n == 0)
        return ok(rp, cJSON_CreateObject());
    if (!strcmp(seg[0], "subjects")) {
        if (n == 1)
            return get_subjects(r, rp);
        return route_subject(r, get, seg, n, body, body_len, rp);
    }
    if (!strcmp(seg[0], "schemas")) {
        if (n == 2 && !strcmp(seg[1], "types"))
            return get_types(rp);
        if ((n == 3 || n == 4) && !strcmp(seg[1], "ids"))
            return get_schema_id(r, seg[2], n == 4 ? seg[3] : NULL, rp);
        return not_found(rp);
    }
    if (!strcmp(seg[0], "config")) {
        const topic_versions_t *tv;
        if (n == 1)
            return compat("BACKWARD", rp);
        if (n > 2)
            return not_found(rp);
        if (!(tv = subject_find(r, seg[1])))
            return subject_missing(rp, seg[1]);
        return compat(tv->compat, rp);
    }
    if (!strcmp(seg[0], "mode") && n == 1)
        return get_mode(rp);
    return not_found(rp);
}

int dlb_schemareg_answer(dlb_schemareg_t *r, const char *method, const char *path, const char *body,
                         size_t body_len, char **out, size_t *out_len)
{
    char *copy = strdup(path), *seg[SEGMENTS_MAX + 1], *save = NULL, *tok;
    reply_t rp = {0};
    size_t n = 0;
    int err;

    *out = NULL;
    if (!copy)
        return DLB_ERR_NOMEM;
    for (tok = strtok_r(copy, "/", &save); tok && n <= SEGMENTS_MAX;
         tok = strtok_r(NULL, "/", &save))
        seg[n++] = tok;
    pthread_mutex_lock(&r->lock);
    if (n > SEGMENTS_MAX)
        err = not_found(&rp);
    else
        err = route(r, method, path, seg, n, body, body_len, &rp);
    pthread_mutex_unlock(&r->lock);
    free(copy);
    if (!err && rp.raw)
        *out = strdup(rp.raw);
    else if (!err)
        *out = cJSON_PrintUnformatted(rp.json);
    cJSON_Delete(rp.json);
    if (!*out)
        return DLB_ERR_NOMEM;
    *out_len = strlen(*out);
    return rp.status;
}
