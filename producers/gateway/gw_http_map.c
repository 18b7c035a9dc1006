/* DLRover's HTTP Brain messages <-> dlbrain (gw_http_map.h). */
#include "gw_http_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "brain.pb-c.h"
#include "err.h"
#include "gw_map.h"
#include "utf8.h"
#include "vec.h"

/* ---- parsing ----------------------------------------------------------------- */

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsArray(v))
        return "an array";
    return "an object";
}

/* "job.uuid" from a parent path (ours: short) and a key (a client's: cut). */
static void path_join(char *buf, size_t size, const char *parent, const char *key)
{
    snprintf(buf, size, "%.50s%s%.200s", parent, parent[0] ? "." : "", key);
}

static int wrong_type(const char *path, const char *want, const cJSON *v, char *errstr, size_t size)
{
    return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: expected %s, got %s", path, want,
                      json_type(v));
}

/* A string field: a JSON string of well-formed UTF-8 (cJSON does not check). */
static int take_str(const cJSON *v, const char *path, char **dst, char *errstr, size_t size)
{
    size_t n;

    if (!cJSON_IsString(v))
        return wrong_type(path, "a string", v, errstr, size);
    n = strlen(v->valuestring);
    if (dlb_utf8_check(v->valuestring, n) != n)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: not UTF-8", path);
    free(*dst);
    if (!(*dst = strdup(v->valuestring)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

/* Each member of object o once, by name: names[i] goes to take(i, member).
 * A member the schema does not have, or one given twice, is refused. */
typedef int (*member_fn)(void *ctx, size_t i, const cJSON *v, const char *path, char *errstr,
                         size_t size);

static int members(const cJSON *o, const char *path, const char *const *names, member_fn take,
                   void *ctx, char *errstr, size_t size)
{
    unsigned seen = 0;
    const cJSON *m;
    char sub[256];

    if (!cJSON_IsObject(o))
        return wrong_type(path[0] ? path : "the body", "an object", o, errstr, size);
    cJSON_ArrayForEach(m, o)
    {
        size_t i;
        int err;

        path_join(sub, sizeof(sub), path, m->string);
        for (i = 0; names[i] && strcmp(names[i], m->string); i++)
            ;
        if (!names[i])
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: not a field of %s", sub,
                              path[0] ? path : "the request");
        if (seen & (1u << i))
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: given twice", sub);
        seen |= 1u << i;
        if ((err = take(ctx, i, m, sub, errstr, size)))
            return err;
    }
    return 0;
}

static const char *const job_names[] = {"uuid", "cluster", "namespace", "user", "app", NULL};

static int take_job(void *ctx, size_t i, const cJSON *v, const char *path, char *errstr,
                    size_t size)
{
    dlb_gw_http_job_t *j = ctx;
    char **f[] = {&j->uuid, &j->cluster, &j->ns, &j->user, &j->app};

    return take_str(v, path, f[i], errstr, size);
}

/* customized_config: a map of strings to strings. */
static int take_str_map(dlb_gw_http_request_t *r, const cJSON *o, const char *path, char *errstr,
                        size_t size)
{
    const cJSON *m;
    char sub[256];
    int err;

    if (!cJSON_IsObject(o))
        return wrong_type(path, "an object of strings", o, errstr, size);
    cJSON_ArrayForEach(m, o)
    {
        dlb_str_entry_t *e;
        size_t n = strlen(m->string);

        path_join(sub, sizeof(sub), path, m->string);
        if (dlb_utf8_check(m->string, n) != n)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: a key that is not UTF-8", path);
        for (size_t k = 0; k < r->config_cnt; k++)
            if (!strcmp(r->config[k].key, m->string))
                return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: given twice", sub);
        if (!(e = dlb_vec_push((void **)&r->config, &r->config_cnt, sizeof(*e))))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        memset(e, 0, sizeof(*e));
        if (!(e->key = strdup(m->string)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        if ((err = take_str(m, sub, &e->value, errstr, size)))
            return err;
    }
    return 0;
}

static const char *const config_names[] = {"optimizer_name", "customized_config", NULL};

static int take_config(void *ctx, size_t i, const cJSON *v, const char *path, char *errstr,
                       size_t size)
{
    dlb_gw_http_request_t *r = ctx;

    if (i == 0)
        return take_str(v, path, &r->optimizer_name, errstr, size);
    return take_str_map(r, v, path, errstr, size);
}

/* OptimizeRequest: type, config, job. JobConfigRequest: type, job. */
static const char *const optimize_names[] = {"type", "job", "config", NULL};
static const char *const job_config_names[] = {"type", "job", NULL};

static int take_request(void *ctx, size_t i, const cJSON *v, const char *path, char *errstr,
                        size_t size)
{
    dlb_gw_http_request_t *r = ctx;

    if (i == 0)
        return take_str(v, path, &r->type, errstr, size);
    if (i == 1)
        return members(v, path, job_names, take_job, &r->job, errstr, size);
    return members(v, path, config_names, take_config, r, errstr, size);
}

/* Where the text stops being JSON, as a line and column (1-based). */
static void where(const char *body, size_t len, const char *at, size_t *line, size_t *col)
{
    size_t off = at && at >= body && at <= body + len ? (size_t)(at - body) : len;

    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (body[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int empty_strs(dlb_gw_http_request_t *r)
{
    char **f[] = {&r->type,   &r->optimizer_name, &r->job.uuid, &r->job.cluster,
                  &r->job.ns, &r->job.user,       &r->job.app};

    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!*f[i] && !(*f[i] = strdup("")))
            return DLB_ERR_NOMEM;
    return 0;
}

int dlb_gw_http_parse(dlb_gw_http_kind_t kind, const char *body, size_t len,
                      dlb_gw_http_request_t *out, unsigned *status, char *errstr, size_t size)
{
    const char *end = NULL;
    cJSON *root;
    int err;

    memset(out, 0, sizeof(*out));
    out->kind = kind;
    *status = 400;
    if (!len)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "the body is empty: a JSON %s expected",
                          kind == DLB_GW_HTTP_OPTIMIZE ? "OptimizeRequest" : "JobConfigRequest");
    if (!(root = cJSON_ParseWithLengthOpts(body, len, &end, 0))) {
        size_t line, col;

        where(body, len, cJSON_GetErrorPtr(), &line, &col);
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "the body is not JSON: it breaks at line %zu, column %zu", line, col);
    }
    /* Only white space may follow the value. */
    while (end && end < body + len && strchr(" \t\r\n", *end))
        end++;
    if (end && end < body + len) {
        size_t line, col;

        cJSON_Delete(root);
        where(body, len, end, &line, &col);
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "the body is not one JSON value: more follows at line %zu, column %zu",
                          line, col);
    }
    if (!cJSON_IsObject(root)) {
        err = wrong_type("the body", "a JSON object", root, errstr, size);
    } else {
        *status = 422;
        err = members(root, "", kind == DLB_GW_HTTP_OPTIMIZE ? optimize_names : job_config_names,
                      take_request, out, errstr, size);
    }
    cJSON_Delete(root);
    if (!err && empty_strs(out))
        err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if (err)
        dlb_gw_http_request_clear(out);
    return err;
}

void dlb_gw_http_request_clear(dlb_gw_http_request_t *r)
{
    free(r->type);
    free(r->optimizer_name);
    for (size_t i = 0; i < r->config_cnt; i++) {
        free(r->config[i].key);
        free(r->config[i].value);
    }
    free(r->config);
    free(r->job.uuid);
    free(r->job.cluster);
    free(r->job.ns);
    free(r->job.user);
    free(r->job.app);
    memset(r, 0, sizeof(*r));
}

/* ---- optimize -> plan request -------------------------------------------------- */

/* gw_map.c names fields as brain.proto does; the HTTP schema's names. */
static void http_names(char *errstr, size_t size)
{
    static const struct {
        const char *grpc, *http;
    } names[] = {{"jobs[0].uid", "job.uuid"}, {"customized_config", "config.customized_config"}};
    char buf[1024];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *at = strstr(errstr, names[i].grpc);

        if (!at || strstr(errstr, names[i].http))
            continue;
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - errstr), errstr, names[i].http,
                 at + strlen(names[i].grpc));
        snprintf(errstr, size, "%s", buf);
    }
}

int dlb_gw_http_request_event(const dlb_gw_http_request_t *r, const char *event_id, int64_t now_ms,
                              dlb_event_t *ev, char *errstr, size_t size)
{
    Brain__OptimizeRequest q = BRAIN__OPTIMIZE_REQUEST__INIT;
    Brain__OptimizeConfig oc = BRAIN__OPTIMIZE_CONFIG__INIT;
    Brain__OptimizeJobMeta job = BRAIN__OPTIMIZE_JOB_META__INIT, *jobs[1] = {&job};
    Brain__OptimizeConfig__CustomizedConfigEntry *entries = NULL, **ptrs = NULL;
    int err;

    memset(ev, 0, sizeof(*ev));
    if (r->config_cnt && (!(entries = calloc(r->config_cnt, sizeof(*entries))) ||
                          !(ptrs = calloc(r->config_cnt, sizeof(*ptrs))))) {
        free(entries);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < r->config_cnt; i++) {
        brain__optimize_config__customized_config_entry__init(&entries[i]);
        entries[i].key = r->config[i].key;
        entries[i].value = r->config[i].value;
        ptrs[i] = &entries[i];
    }
    oc.n_customized_config = r->config_cnt;
    oc.customized_config = ptrs;
    q.type = r->type;
    q.config = &oc;
    q.n_jobs = 1;
    q.jobs = jobs;
    job.uid = r->job.uuid;
    job.cluster = r->job.cluster;
    job.namespace_ = r->job.ns;
    if ((err = dlb_gw_request_event(&q, event_id, now_ms, ev, errstr, size)) == DLB_ERR_INVALID)
        http_names(errstr, size);
    free(ptrs);
    free(entries);
    return err;
}

int dlb_gw_http_job_meta(const dlb_gw_http_request_t *r, dlb_job_meta_t *meta, char *errstr,
                         size_t size)
{
    const struct {
        const char *v, *name;
        char *dst;
    } f[] = {{r->job.user, "job.user", meta->user},
             {r->job.app, "job.app", meta->app},
             {r->job.cluster, "job.cluster", meta->cluster},
             {r->job.ns, "job.namespace", meta->ns}};

    memset(meta, 0, sizeof(*meta));
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        size_t n = f[i].v ? strlen(f[i].v) : 0;

        if (n >= DLB_NAME_MAX)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: %zu bytes, at most %d", f[i].name,
                              n, DLB_NAME_MAX - 1);
        memcpy(f[i].dst, f[i].v ? f[i].v : "", n + 1);
    }
    return 0;
}

/* ---- answers --------------------------------------------------------------------- */

/* A float of brain.proto as the decimal it was made from (cores: 1.2, not
 * 1.2000000476837158): seven significant digits are what a float holds. */
static double from_float(float f)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%.7g", (double)f);
    return strtod(buf, NULL);
}

/* NodeResource {memory, cpu, gpu, gpu_type, priority}: priority is an
 * integer there, a string in brain.proto (dlbrain's plans leave it empty). */
static cJSON *node_resource(const Brain__PodResource *pr)
{
    cJSON *o = cJSON_CreateObject();
    const char *prio = pr && pr->priority ? pr->priority : "";
    char *end;
    long p = strtol(prio, &end, 10);

    if (!o || !cJSON_AddNumberToObject(o, "memory", pr ? (double)pr->memory : 0) ||
        !cJSON_AddNumberToObject(o, "cpu", pr ? from_float(pr->cpu) : 0) ||
        !cJSON_AddNumberToObject(o, "gpu", pr ? from_float(pr->gpu) : 0) ||
        !cJSON_AddStringToObject(o, "gpu_type", pr && pr->gpu_type ? pr->gpu_type : "") ||
        !cJSON_AddNumberToObject(o, "priority", prio[0] && !*end ? (double)p : 0)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *job_meta(const dlb_gw_http_job_t *j)
{
    cJSON *o = cJSON_CreateObject();
    const char *const v[] = {j->uuid, j->cluster, j->ns, j->user, j->app};

    for (size_t i = 0; o && i < 5; i++)
        if (!cJSON_AddStringToObject(o, job_names[i], v[i] ? v[i] : "")) {
            cJSON_Delete(o);
            return NULL;
        }
    return o;
}

static cJSON *response_obj(int success, const char *reason)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddBoolToObject(o, "success", success) ||
        !cJSON_AddStringToObject(o, "reason", reason ? reason : "")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static char *print_free(cJSON *o, int ok)
{
    char *s = ok ? cJSON_PrintUnformatted(o) : NULL;

    cJSON_Delete(o);
    return s;
}

char *dlb_gw_http_optimize_json(const uint8_t *packed, size_t len, const dlb_gw_http_job_t *job)
{
    Brain__OptimizeResponse *r = brain__optimize_response__unpack(NULL, len, packed);
    const Brain__JobOptimizePlan *p;
    cJSON *o, *plan, *res, *groups, *nodes, *x;
    int ok;

    if (!r)
        return NULL;
    p = r->n_job_optimize_plans ? r->job_optimize_plans[0] : NULL;
    o = cJSON_CreateObject();
    ok = o &&
         (x = response_obj(r->response && r->response->success,
                           r->response ? r->response->reason : "")) &&
         cJSON_AddItemToObject(o, "response", x) &&
         (plan = cJSON_AddObjectToObject(o, "job_opt_plan")) &&
         cJSON_AddNumberToObject(plan, "timestamp", p ? (double)p->timestamp : 0) &&
         (res = cJSON_AddObjectToObject(plan, "job_resource")) &&
         (groups = cJSON_AddObjectToObject(res, "node_group_resources")) &&
         (nodes = cJSON_AddObjectToObject(res, "node_resources")) && (x = job_meta(job)) &&
         cJSON_AddItemToObject(plan, "job_meta", x);
    for (size_t i = 0; ok && p && p->resource && i < p->resource->n_task_group_resources; i++) {
        const Brain__JobResource__TaskGroupResourcesEntry *e = p->resource->task_group_resources[i];
        cJSON *g = cJSON_CreateObject();

        ok = g && cJSON_AddItemToObject(groups, e->key, g) &&
             cJSON_AddNumberToObject(g, "count", e->value ? (double)e->value->count : 0) &&
             (x = node_resource(e->value ? e->value->resource : NULL)) &&
             cJSON_AddItemToObject(g, "resource", x);
    }
    for (size_t i = 0; ok && p && p->resource && i < p->resource->n_pod_resources; i++) {
        const Brain__JobResource__PodResourcesEntry *e = p->resource->pod_resources[i];

        ok = (x = node_resource(e->value)) && cJSON_AddItemToObject(nodes, e->key, x);
    }
    brain__optimize_response__free_unpacked(r, NULL);
    return print_free(o, ok);
}

char *dlb_gw_http_config_json(const dlb_match_t *m, int64_t version)
{
    cJSON *o = cJSON_CreateObject(), *cfg, *x;
    char reason[512];
    int ok;

    if (!version)
        snprintf(reason, sizeof(reason), "no rules version applied yet: no configuration");
    else if (!m->rule_ids_cnt)
        snprintf(reason, sizeof(reason), "rules version %lld: no rule in scope",
                 (long long)version);
    else
        snprintf(reason, sizeof(reason), "rules version %lld: %zu rule(s) in scope, first %.200s",
                 (long long)version, m->rule_ids_cnt, m->rule_ids[0]);
    ok = o && (x = response_obj(1, reason)) && cJSON_AddItemToObject(o, "response", x) &&
         (cfg = cJSON_AddObjectToObject(o, "job_configs"));
    for (size_t i = 0; ok && i < m->values_cnt; i++) {
        /* A JSON string is given as its text: DLRover's values are strings. */
        cJSON *v = cJSON_Parse(m->values[i].json);

        ok = (x = cJSON_IsString(v) ? cJSON_CreateString(v->valuestring)
                                    : cJSON_CreateString(m->values[i].json)) &&
             cJSON_AddItemToObject(cfg, m->values[i].key, x);
        cJSON_Delete(v);
    }
    return print_free(o, ok);
}

char *dlb_gw_http_error_json(const char *detail)
{
    cJSON *o = cJSON_CreateObject();

    return print_free(o, o && cJSON_AddStringToObject(o, "detail", detail));
}
