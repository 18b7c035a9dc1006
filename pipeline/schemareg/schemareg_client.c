#include "schemareg_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "err.h"
#include "event.h"
#include "log.h"
#include "schemareg.h"

/* An answer is a schema or a few ids: anything longer is not a registry's. */
#define SR_ANSWER_MAX (4 * 1024 * 1024)

struct dlb_srclient {
    pthread_mutex_t lock; /* the easy handle: a consumer resolves from its poll thread */
    CURL *h;
    struct curl_slist *headers;
    char *base; /* url without its trailing slashes */
    dlb_sr_conf_t conf;
};

typedef struct answer {
    char *buf;
    size_t len;
    int too_big;
} answer_t;

static size_t answer_add(char *p, size_t size, size_t n, void *opaque)
{
    answer_t *a = opaque;
    size_t k = size * n;
    char *nb;

    if (a->too_big || a->len + k > SR_ANSWER_MAX) {
        a->too_big = 1;
        return 0; /* libcurl fails the transfer */
    }
    if (!(nb = realloc(a->buf, a->len + k + 1)))
        return 0;
    memcpy(nb + a->len, p, k);
    a->buf = nb;
    a->len += k;
    a->buf[a->len] = '\0';
    return k;
}

void dlb_srclient_destroy(dlb_srclient_t *c)
{
    if (!c)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    curl_slist_free_all(c->headers);
    free(c->base);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int dlb_srclient_new(dlb_srclient_t **out, const dlb_sr_conf_t *conf, char *errstr,
                     size_t errstr_size)
{
    dlb_srclient_t *c;
    struct curl_slist *h;
    size_t len = strlen(conf->url);

    *out = NULL;
    if (strncmp(conf->url, "http://", 7) && strncmp(conf->url, "https://", 8))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "schema.registry.url \"%s\" is not an http:// or https:// URL",
                          conf->url);
    if (!(c = calloc(1, sizeof(*c))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->conf = *conf;
    while (len && conf->url[len - 1] == '/')
        len--;
    if (!(c->base = strndup(conf->url, len)) || !(c->h = curl_easy_init()) ||
        !(h = curl_slist_append(NULL, "Content-Type: " DLB_SCHEMAREG_CONTENT_TYPE)))
        goto nomem;
    c->headers = h;
    if (!(h = curl_slist_append(c->headers, "Accept: " DLB_SCHEMAREG_CONTENT_TYPE
                                            ", application/vnd.schemaregistry+json, "
                                            "application/json")))
        goto nomem;
    c->headers = h;
    *out = c;
    return 0;
nomem:
    dlb_srclient_destroy(c);
    return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
}

/* The registry's {"error_code", "message"}, or the body as it came. */
static void answer_reason(const answer_t *a, int *code, char *msg, size_t size)
{
    cJSON *j = a->buf ? cJSON_Parse(a->buf) : NULL;
    const cJSON *ec = cJSON_GetObjectItemCaseSensitive(j, "error_code");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");

    *code = cJSON_IsNumber(ec) ? ec->valueint : 0;
    snprintf(msg, size, "%s", cJSON_IsString(m) ? m->valuestring : (a->buf ? a->buf : ""));
    cJSON_Delete(j);
}

/* One request: method, path below the base URL, a body or NULL. *json is the
 * parsed answer of a 2xx; otherwise status, code and reason say why.
 * @returns 0 (a 2xx, or another status the caller reads), DLB_ERR_TRANSIENT
 *          (no answer, or 5xx), DLB_ERR_CONF (401/403, not JSON). */
static int request(dlb_srclient_t *c, const char *method, const char *path, const char *body,
                   long *status, cJSON **json, int *code, char *errstr, size_t errstr_size)
{
    answer_t a = {0};
    char url[2048], reason[512];
    CURLcode rc;
    int err = 0;

    *json = NULL;
    *code = 0;
    if ((size_t)snprintf(url, sizeof(url), "%s%s", c->base, path) >= sizeof(url))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "schema registry: URL too long");
    pthread_mutex_lock(&c->lock);
    curl_easy_reset(c->h);
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, answer_add);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, (long)c->conf.timeout_ms);
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->conf.user_info[0]) {
        curl_easy_setopt(c->h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(c->h, CURLOPT_USERPWD, c->conf.user_info);
    }
    if (c->conf.ca_location[0])
        curl_easy_setopt(c->h, CURLOPT_CAINFO, c->conf.ca_location);
    if (body)
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
    rc = curl_easy_perform(c->h);
    *status = 0;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, status);
    pthread_mutex_unlock(&c->lock);
    if (rc != CURLE_OK) {
        err = dlb_seterr(errstr, errstr_size, a.too_big ? DLB_ERR_CONF : DLB_ERR_TRANSIENT,
                         "schema registry %s: %s %s: %s", c->base, method, path,
                         a.too_big ? "answer larger than 4 MiB" : curl_easy_strerror(rc));
        goto out;
    }
    if (*status >= 200 && *status < 300) {
        if (!a.buf || !(*json = cJSON_Parse(a.buf)))
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                             "schema registry %s: %s %s: the answer is not JSON", c->base, method,
                             path);
        goto out;
    }
    /* Another status is the caller's to read; errstr says it in any case. */
    answer_reason(&a, code, reason, sizeof(reason));
    if (*status >= 500)
        err = DLB_ERR_TRANSIENT;
    else if (*status == 401 || *status == 403)
        err = DLB_ERR_CONF;
    dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
               "schema registry %s: %s %s: HTTP %ld, error_code %d: %s", c->base, method, path,
               *status, *code, reason);
out:
    free(a.buf);
    return err;
}

/* {"schema": text} */
static char *schema_body(const char *schema)
{
    cJSON *o = cJSON_CreateObject();
    char *s = NULL;

    if (o && cJSON_AddStringToObject(o, "schema", schema))
        s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int subject_path(dlb_srclient_t *c, const char *subject, const char *tail, char *path,
                        size_t size, char *errstr, size_t errstr_size)
{
    char *esc = curl_easy_escape(c->h, subject, 0);
    int n;

    if (!esc)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    n = snprintf(path, size, "/subjects/%s%s", esc, tail);
    curl_free(esc);
    if (n < 0 || (size_t)n >= size)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "subject %s: too long", subject);
    return 0;
}

static int json_int(const cJSON *j, const char *key, int32_t *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, key);

    if (!cJSON_IsNumber(x) || x->valuedouble < 1 || x->valuedouble > INT32_MAX)
        return -1;
    *v = (int32_t)x->valuedouble;
    return 0;
}

/* POST {"schema": schema} to /subjects/{subject}<tail>; path is set for messages. */
static int post_schema(dlb_srclient_t *c, const char *subject, const char *tail, const char *schema,
                       char *path, size_t path_size, long *status, cJSON **j, int *code,
                       char *errstr, size_t errstr_size)
{
    char *body;
    int err;

    if ((err = subject_path(c, subject, tail, path, path_size, errstr, errstr_size)))
        return err;
    if (!(body = schema_body(schema)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    err = request(c, "POST", path, body, status, j, code, errstr, errstr_size);
    free(body);
    return err;
}

int dlb_srclient_lookup(dlb_srclient_t *c, const char *subject, const char *schema, int32_t *id,
                        int *version, char *errstr, size_t errstr_size)
{
    char path[600];
    cJSON *j = NULL;
    long status;
    int32_t v = 0;
    int err, code;

    if ((err = post_schema(c, subject, "", schema, path, sizeof(path), &status, &j, &code, errstr,
                           errstr_size)))
        return err;
    if (!j)
        return (status == 404 && (code == 40401 || code == 40403)) ? DLB_ERR_NOTFOUND
                                                                   : DLB_ERR_CONF;
    if (json_int(j, "id", id) || json_int(j, "version", &v))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                         "schema registry %s: POST %s: no id and version in the answer", c->base,
                         path);
    *version = (int)v;
    cJSON_Delete(j);
    return err;
}

int dlb_srclient_register(dlb_srclient_t *c, const char *subject, const char *schema, int32_t *id,
                          char *errstr, size_t errstr_size)
{
    char path[600];
    cJSON *j = NULL;
    long status;
    int err, code;

    if ((err = post_schema(c, subject, "/versions", schema, path, sizeof(path), &status, &j, &code,
                           errstr, errstr_size)))
        return err;
    if (!j) /* 409: incompatible; 422: invalid schema (42201) */
        return (status == 409 || status == 422) ? DLB_ERR_INVALID : DLB_ERR_CONF;
    if (json_int(j, "id", id))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                         "schema registry %s: POST %s: no id in the answer", c->base, path);
    cJSON_Delete(j);
    return err;
}

int dlb_srclient_schema(dlb_srclient_t *c, int32_t id, char **schema, char *errstr,
                        size_t errstr_size)
{
    char path[64];
    cJSON *j = NULL;
    const cJSON *s;
    long status;
    int err, code;

    *schema = NULL;
    snprintf(path, sizeof(path), "/schemas/ids/%d", (int)id);
    if ((err = request(c, "GET", path, NULL, &status, &j, &code, errstr, errstr_size)))
        return err;
    if (!j)
        return status == 404 ? DLB_ERR_NOTFOUND : DLB_ERR_CONF;
    s = cJSON_GetObjectItemCaseSensitive(j, "schema");
    if (!cJSON_IsString(s))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                         "schema registry %s: GET %s: no schema in the answer", c->base, path);
    else if (!(*schema = strdup(s->valuestring)))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    cJSON_Delete(j);
    return err;
}

static int resolve(void *opaque, int32_t wire_id, char **schema_json, char *errstr,
                   size_t errstr_size)
{
    return dlb_srclient_schema(opaque, wire_id, schema_json, errstr, errstr_size);
}

/* The wire id of catalog entry e under subject: looked up, else registered. */
static int bind_one(dlb_srclient_t *c, const char *subject, const dlb_schema_entry_t *e,
                    int version, int32_t *wire_id, char *errstr, size_t errstr_size)
{
    char sub[1024];
    int got_version, err;

    err = dlb_srclient_lookup(c, subject, e->json, wire_id, &got_version, sub, sizeof(sub));
    if (err == DLB_ERR_NOTFOUND)
        err = dlb_srclient_register(c, subject, e->json, wire_id, sub, sizeof(sub));
    if (err == DLB_ERR_INVALID)
        return dlb_seterr(errstr, errstr_size, err,
                          "schema registry: subject %s refuses dlbrain's version %d (%s, "
                          "catalog id %d): %s",
                          subject, version, e->file, (int)e->id, sub);
    if (err)
        return dlb_seterr(errstr, errstr_size, err, "subject %s, version %d (%s): %s", subject,
                          version, e->file, sub);
    return 0;
}

/* The {catalog id, wire id} of every schema of env's typed topics: looked up
 * or registered, subject by subject, version by version. */
static int bind_ids(dlb_srclient_t *c, const dlb_catalog_t *cat, const char *env,
                    int32_t (**out)[2], size_t *out_cnt, char *errstr, size_t errstr_size)
{
    size_t n = dlb_catalog_count(cat);
    int32_t(*ids)[2] = calloc(n ? n : 1, sizeof(*ids));
    int err = 0;

    *out = NULL;
    *out_cnt = 0;
    if (!ids)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (int t = DLB_EV_NONE + 1; t < DLB_EV__CNT && !err; t++) {
        char subject[256];
        int version = 0;

        snprintf(subject, sizeof(subject), "%s.%s-value", env,
                 dlb_event_type_topic((dlb_event_type_t)t));
        for (size_t i = 0; i < n && !err; i++) {
            const dlb_schema_entry_t *e = dlb_catalog_at(cat, i);
            if (e->type != (dlb_event_type_t)t)
                continue;
            ids[i][0] = e->id;
            err = bind_one(c, subject, e, ++version, &ids[i][1], errstr, errstr_size);
        }
    }
    if (err) {
        free(ids);
        return err;
    }
    *out = ids;
    *out_cnt = n;
    return 0;
}

int dlb_srclient_bind(dlb_srclient_t *c, const dlb_catalog_t *cat, const char *env, char *errstr,
                      size_t errstr_size)
{
    int32_t(*ids)[2];
    size_t n;
    int err;

    if ((err = bind_ids(c, cat, env, &ids, &n, errstr, errstr_size)))
        return err;
    err = dlb_catalog_wire_install((const int32_t(*)[2])ids, n, resolve, c, errstr, errstr_size);
    free(ids);
    return err;
}

int dlb_srclient_bind_wire(dlb_srclient_t *c, const dlb_catalog_t *cat, const char *env,
                           dlb_catalog_wire_t **out, char *errstr, size_t errstr_size)
{
    int32_t(*ids)[2];
    size_t n;
    int err;

    *out = NULL;
    if ((err = bind_ids(c, cat, env, &ids, &n, errstr, errstr_size)))
        return err;
    err = dlb_catalog_wire_new(out, (const int32_t(*)[2])ids, n, resolve, c, errstr, errstr_size);
    free(ids);
    return err;
}

int dlb_srclient_setup(const dlb_conf_t *conf, dlb_srclient_t **out, char *errstr,
                       size_t errstr_size)
{
    dlb_catalog_t *cat = NULL;
    dlb_srclient_t *c = NULL;
    int err;

    *out = NULL;
    if (!conf->sr.url[0])
        return 0;
    if ((err = dlb_srclient_new(&c, &conf->sr, errstr, errstr_size)) ||
        (err = dlb_catalog_new(&cat, errstr, errstr_size)) ||
        (err = dlb_srclient_bind(c, cat, conf->env, errstr, errstr_size))) {
        dlb_catalog_destroy(cat);
        dlb_srclient_destroy(c);
        return err;
    }
    dlb_info("schema registry %s: dlbrain's schemas found or registered under "
             "%s.<topic>-value; writing and reading with its ids",
             c->base, conf->env);
    dlb_catalog_destroy(cat);
    *out = c;
    return 0;
}
