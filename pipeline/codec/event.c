#include "event.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "err.h"
#include "id.h"

/* Sources: DLRover's request types (brain/pkg/optimizer), job states of its
 * master, exit reasons of its job reporter, and the Kubernetes pod/node events
 * the monitor maps (reference section 5). */
const char *const dlb_stages[] = {DLB_STAGE_CREATE,
                                  DLB_STAGE_PS_INITIAL,
                                  DLB_STAGE_WORKER_INITIAL,
                                  DLB_STAGE_RUNNING,
                                  DLB_STAGE_PS_RUNNING,
                                  DLB_STAGE_WORKER_RUNNING,
                                  NULL};
const char *const dlb_job_states[] = {"created", "pending", "running", "succeeded",
                                      "failed",  "stopped", NULL};
/* DLRover 0.6.1's JobExitReason, in its order (constants.py:205-219). */
const char *const dlb_exit_reasons[] = {
    "Completed",   "CodeError",      "WorkerOOM",          "WorkerError",     "PSOOM",
    "PSError",     "EvaluatorOOM",   "EvaluatorError",     "UnknownError",    "HangError",
    "RdzvTimeout", "PendingTimeout", "UncompletedTimeout", "NodeCheckFailed", NULL};
const char *const dlb_node_kinds[] = {"pod_phase",      "node_phase",   "oom_killed", "evicted",
                                      "node_not_ready", "preempted",    "deleted",    "error",
                                      "hardware_error", "no_heartbeat", NULL};
const char *const dlb_pod_types[] = {"ps", "worker", "chief", "evaluator", NULL};
/* Actions a plan (v2) may ask for on one pod. */
static const char *const pod_actions[] = {DLB_ACTION_RELAUNCH, DLB_ACTION_REPLACE, NULL};

const char *const dlb_meta_attr_names[DLB_META_ATTRS + 1] = {
    "user", "group", "app", "cluster", "namespace", "scenario", "framework", "name", NULL};
static const size_t meta_attr_offs[DLB_META_ATTRS] = {
    offsetof(dlb_job_meta_t, user),      offsetof(dlb_job_meta_t, group),
    offsetof(dlb_job_meta_t, app),       offsetof(dlb_job_meta_t, cluster),
    offsetof(dlb_job_meta_t, ns),        offsetof(dlb_job_meta_t, scenario),
    offsetof(dlb_job_meta_t, framework), offsetof(dlb_job_meta_t, name)};

char *dlb_meta_attr(dlb_job_meta_t *meta, size_t i)
{
    return (char *)meta + meta_attr_offs[i];
}

const char *dlb_meta_attr_c(const dlb_job_meta_t *meta, size_t i)
{
    return (const char *)meta + meta_attr_offs[i];
}

static const char *const type_names[DLB_EV__CNT] = {
    [DLB_EV_NONE] = "none",
    [DLB_EV_JOB] = "job_event",
    [DLB_EV_RUNTIME] = "runtime_sample",
    [DLB_EV_NODE] = "node_event",
    [DLB_EV_PLAN_REQUEST] = "plan_request",
    [DLB_EV_PLAN] = "plan",
    [DLB_EV_CONFIG_MATCH] = "config_match",
    [DLB_EV_CONFIG_REQUEST] = "config_request",
};

static const char *const type_topics[DLB_EV__CNT] = {
    [DLB_EV_NONE] = NULL,
    [DLB_EV_JOB] = DLB_TOPIC_JOB_EVENTS,
    [DLB_EV_RUNTIME] = DLB_TOPIC_METRICS,
    [DLB_EV_NODE] = DLB_TOPIC_K8S_EVENTS,
    [DLB_EV_PLAN_REQUEST] = DLB_TOPIC_PLAN_REQUESTS,
    [DLB_EV_PLAN] = DLB_TOPIC_PLANS,
    [DLB_EV_CONFIG_MATCH] = DLB_TOPIC_CONFIGS,
    [DLB_EV_CONFIG_REQUEST] = DLB_TOPIC_CONFIG_REQUESTS,
};

const char *dlb_event_type_name(dlb_event_type_t type)
{
    if (type <= DLB_EV_NONE || type >= DLB_EV__CNT)
        return "none";
    return type_names[type];
}

dlb_event_type_t dlb_event_type_parse(const char *name)
{
    for (int t = DLB_EV_NONE + 1; t < DLB_EV__CNT; t++)
        if (!strcmp(type_names[t], name))
            return (dlb_event_type_t)t;
    return DLB_EV_NONE;
}

const char *dlb_event_type_topic(dlb_event_type_t type)
{
    if (type <= DLB_EV_NONE || type >= DLB_EV__CNT)
        return NULL;
    return type_topics[type];
}

int dlb_in_list(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (!strcmp(*list, s))
            return 1;
    return 0;
}

const char *dlb_plan_request_config(const dlb_plan_request_t *req, const char *key)
{
    for (size_t i = 0; i < req->config_cnt; i++)
        if (req->config[i].key && !strcmp(req->config[i].key, key))
            return req->config[i].value ? req->config[i].value : "";
    return NULL;
}

/* The header fields sit at the same place in every struct, but a switch keeps
 * that an implementation detail. */
const char *dlb_event_id(const dlb_event_t *ev)
{
    switch (ev->type) {
    case DLB_EV_JOB:
        return ev->u.job.event_id;
    case DLB_EV_RUNTIME:
        return ev->u.rt.event_id;
    case DLB_EV_NODE:
        return ev->u.node.event_id;
    case DLB_EV_PLAN_REQUEST:
        return ev->u.req.event_id;
    case DLB_EV_PLAN:
        return ev->u.plan.event_id;
    case DLB_EV_CONFIG_MATCH:
        return ev->u.cm.event_id;
    case DLB_EV_CONFIG_REQUEST:
        return ev->u.creq.event_id;
    default:
        return "";
    }
}

const char *dlb_event_job_uid(const dlb_event_t *ev)
{
    switch (ev->type) {
    case DLB_EV_JOB:
        return ev->u.job.job_uid;
    case DLB_EV_RUNTIME:
        return ev->u.rt.job_uid;
    case DLB_EV_NODE:
        return ev->u.node.job_uid;
    case DLB_EV_PLAN_REQUEST:
        return ev->u.req.job_uid;
    case DLB_EV_PLAN:
        return ev->u.plan.job_uid;
    case DLB_EV_CONFIG_MATCH:
        return ev->u.cm.job_uid;
    case DLB_EV_CONFIG_REQUEST:
        return ev->u.creq.job_uid;
    default:
        return "";
    }
}

int64_t dlb_event_time_ms(const dlb_event_t *ev)
{
    switch (ev->type) {
    case DLB_EV_JOB:
        return ev->u.job.event_time_ms;
    case DLB_EV_RUNTIME:
        return ev->u.rt.event_time_ms;
    case DLB_EV_NODE:
        return ev->u.node.event_time_ms;
    case DLB_EV_PLAN_REQUEST:
        return ev->u.req.event_time_ms;
    case DLB_EV_PLAN:
        return ev->u.plan.event_time_ms;
    case DLB_EV_CONFIG_MATCH:
        return ev->u.cm.event_time_ms;
    case DLB_EV_CONFIG_REQUEST:
        return ev->u.creq.event_time_ms;
    default:
        return 0;
    }
}

/* The heap texts of a job event (job_event v2): field path and place. */
static const struct {
    const char *name;
    size_t off;
} job_texts[] = {
    {"dataset.sparse_features", offsetof(dlb_job_event_t, dataset.sparse_features)},
    {"dataset.sparse_feature_groups", offsetof(dlb_job_event_t, dataset.sparse_feature_groups)},
    {"dataset.sparse_feature_shapes", offsetof(dlb_job_event_t, dataset.sparse_feature_shapes)},
    {"dataset.dense_features", offsetof(dlb_job_event_t, dataset.dense_features)},
    {"dataset.dense_feature_shapes", offsetof(dlb_job_event_t, dataset.dense_feature_shapes)},
    {"workflow.code_address", offsetof(dlb_job_event_t, workflow.code_address)},
    {"resource", offsetof(dlb_job_event_t, resource)},
    {"customized_data", offsetof(dlb_job_event_t, customized_data)},
    {"optimization", offsetof(dlb_job_event_t, optimization)},
};
#define JOB_TEXTS       (sizeof(job_texts) / sizeof(job_texts[0]))
#define JOB_TEXT(j, i)  (*(char **)(void *)((char *)(j) + job_texts[i].off))
#define JOB_TEXTC(j, i) (*(char *const *)(const void *)((const char *)(j) + job_texts[i].off))

void dlb_job_event_clear(dlb_job_event_t *job)
{
    dlb_model_t *m = &job->model;

    for (size_t i = 0; i < JOB_TEXTS; i++)
        free(JOB_TEXT(job, i));
    free(m->kv_embedding_dims);
    for (size_t i = 0; i < m->tensor_alloc_bytes_cnt; i++)
        free(m->tensor_alloc_bytes[i].key);
    free(m->tensor_alloc_bytes);
    memset(job, 0, sizeof(*job));
}

int dlb_job_event_copy(dlb_job_event_t *dst, const dlb_job_event_t *src)
{
    const dlb_model_t *m = &src->model;
    dlb_model_t *d = &dst->model;
    int fail = 0;

    *dst = *src;
    /* dst's pointers are src's until replaced: past a failure they are only
     * cut, so the clear below frees what this copy made and nothing else. */
    for (size_t i = 0; i < JOB_TEXTS; i++)
        if (JOB_TEXT(dst, i) && !(JOB_TEXT(dst, i) = fail ? NULL : strdup(JOB_TEXT(dst, i))))
            fail = 1;
    d->kv_embedding_dims = NULL;
    d->kv_embedding_dims_cnt = 0;
    d->tensor_alloc_bytes = NULL;
    d->tensor_alloc_bytes_cnt = 0;
    if (!fail && m->kv_embedding_dims_cnt) {
        if (!(d->kv_embedding_dims = malloc(m->kv_embedding_dims_cnt * sizeof(int64_t))))
            fail = 1;
        else
            memcpy(d->kv_embedding_dims, m->kv_embedding_dims,
                   m->kv_embedding_dims_cnt * sizeof(int64_t));
        d->kv_embedding_dims_cnt = fail ? 0 : m->kv_embedding_dims_cnt;
    }
    if (!fail && m->tensor_alloc_bytes_cnt) {
        if (!(d->tensor_alloc_bytes = calloc(m->tensor_alloc_bytes_cnt, sizeof(dlb_long_entry_t))))
            fail = 1;
        for (size_t i = 0; !fail && i < m->tensor_alloc_bytes_cnt; i++) {
            d->tensor_alloc_bytes[i].value = m->tensor_alloc_bytes[i].value;
            d->tensor_alloc_bytes_cnt++;
            if (!(d->tensor_alloc_bytes[i].key = strdup(m->tensor_alloc_bytes[i].key)))
                fail = 1;
        }
    }
    if (fail) {
        dlb_job_event_clear(dst);
        return DLB_ERR_NOMEM;
    }
    return 0;
}

/* Lists of heap strings (config_match.rule_ids, plan_request.oom_pods) and
 * of entries holding two heap strings at offsets ka and va
 * (config_match.values, plan_request.config). */
#define PAIR(e, off)  (*(char **)(void *)((char *)(e) + (off)))
#define CPAIR(e, off) (*(char *const *)(const void *)((const char *)(e) + (off)))

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void free_pairs(void *v, size_t n, size_t size, size_t ka, size_t va)
{
    for (size_t i = 0; i < n; i++) {
        free(PAIR((char *)v + i * size, ka));
        free(PAIR((char *)v + i * size, va));
    }
    free(v);
}

/* Copies: *cnt counts the items made, so that a failed copy (*fail set) is
 * released like a whole one. Nothing is copied once *fail is set. */
static char **dup_strs(char *const *src, size_t n, size_t *cnt, int *fail)
{
    char **d;

    *cnt = 0;
    if (*fail || !n)
        return NULL;
    if (!(d = calloc(n, sizeof(*d)))) {
        *fail = 1;
        return NULL;
    }
    for (size_t i = 0; i < n && !*fail; i++) {
        (*cnt)++;
        if (!(d[i] = strdup(src[i])))
            *fail = 1;
    }
    return d;
}

static void *dup_pairs(const void *src, size_t n, size_t size, size_t ka, size_t va, size_t *cnt,
                       int *fail)
{
    char *d;

    *cnt = 0;
    if (*fail || !n)
        return NULL;
    if (!(d = calloc(n, size))) {
        *fail = 1;
        return NULL;
    }
    for (size_t i = 0; i < n && !*fail; i++) {
        const char *from = (const char *)src + i * size;
        char *to = d + i * size;

        PAIR(to, ka) = strdup(CPAIR(from, ka));
        PAIR(to, va) = strdup(CPAIR(from, va));
        (*cnt)++;
        if (!PAIR(to, ka) || !PAIR(to, va))
            *fail = 1;
    }
    return d;
}

/* Events whose heap parts are a list of strings and a list of string pairs,
 * and where those live in the event's union. */
typedef struct str_lists {
    dlb_event_type_t type;
    size_t strs, strs_cnt;   /* char ** and its size_t count */
    size_t pairs, pairs_cnt; /* entries and their size_t count */
    size_t size, ka, va;     /* an entry: its size and its two strings */
} str_lists_t;

#define STR_LISTS(E, T, s, p, ET, k, v)                                                            \
    {                                                                                              \
        E, offsetof(T, s), offsetof(T, s##_cnt), offsetof(T, p), offsetof(T, p##_cnt), sizeof(ET), \
            offsetof(ET, k), offsetof(ET, v)                                                       \
    }
static const str_lists_t str_lists[] = {
    STR_LISTS(DLB_EV_PLAN_REQUEST, dlb_plan_request_t, oom_pods, config, dlb_str_entry_t, key,
              value),
    STR_LISTS(DLB_EV_CONFIG_MATCH, dlb_config_match_t, rule_ids, values, dlb_config_value_t, key,
              json),
};

static const str_lists_t *str_lists_of(dlb_event_type_t type)
{
    for (size_t i = 0; i < sizeof(str_lists) / sizeof(str_lists[0]); i++)
        if (str_lists[i].type == type)
            return &str_lists[i];
    return NULL;
}

/* A member of an event's union, by offset. */
#define UM(ev, off, T)  (*(T *)(void *)((char *)&(ev)->u + (off)))
#define UMC(ev, off, T) (*(T const *)(const void *)((const char *)&(ev)->u + (off)))

void dlb_event_clear(dlb_event_t *ev)
{
    const str_lists_t *l;

    switch (ev->type) {
    case DLB_EV_JOB:
        dlb_job_event_clear(&ev->u.job);
        break;
    case DLB_EV_RUNTIME:
        free(ev->u.rt.pods);
        free(ev->u.rt.pods_by_name);
        break;
    case DLB_EV_PLAN:
        free(ev->u.plan.groups);
        free(ev->u.plan.pods);
        free(ev->u.plan.actions);
        break;
    default:
        if ((l = str_lists_of(ev->type))) {
            free_strs(UM(ev, l->strs, char **), UM(ev, l->strs_cnt, size_t));
            free_pairs(UM(ev, l->pairs, void *), UM(ev, l->pairs_cnt, size_t), l->size, l->ka,
                       l->va);
        }
        break;
    }
    memset(ev, 0, sizeof(*ev));
}

/* What malloc keeps beside each block, roughly: enough that a list of a
 * million empty strings is not counted as nothing. */
#define HEAP_BLOCK_OVERHEAD 32

size_t dlb_event_heap_bytes(const dlb_event_t *ev)
{
    const str_lists_t *l;
    size_t n;

    switch (ev->type) {
    case DLB_EV_JOB:
        /* Its heap texts are bounded by the record's bytes, which the
         * caller counts; the lists are not. */
        return ev->u.job.model.kv_embedding_dims_cnt * sizeof(int64_t) +
               ev->u.job.model.tensor_alloc_bytes_cnt *
                   (sizeof(dlb_long_entry_t) + HEAP_BLOCK_OVERHEAD);
    case DLB_EV_RUNTIME:
        return ev->u.rt.pods_cnt * sizeof(*ev->u.rt.pods);
    case DLB_EV_PLAN:
        return ev->u.plan.groups_cnt * sizeof(*ev->u.plan.groups) +
               ev->u.plan.pods_cnt * sizeof(*ev->u.plan.pods) +
               ev->u.plan.actions_cnt * sizeof(*ev->u.plan.actions);
    default:
        if (!(l = str_lists_of(ev->type)))
            return 0;
        n = UMC(ev, l->strs_cnt, size_t) * (sizeof(char *) + HEAP_BLOCK_OVERHEAD);
        n += UMC(ev, l->pairs_cnt, size_t) * (l->size + 2 * HEAP_BLOCK_OVERHEAD);
        return n;
    }
}

static void *dup_array(const void *src, size_t cnt, size_t size, int *fail)
{
    void *p;

    if (!cnt || !src)
        return NULL;
    p = malloc(cnt * size);
    if (!p) {
        *fail = 1;
        return NULL;
    }
    memcpy(p, src, cnt * size);
    return p;
}

int dlb_event_copy(dlb_event_t *dst, const dlb_event_t *src)
{
    const str_lists_t *l;
    int fail = 0;

    *dst = *src;
    switch (src->type) {
    case DLB_EV_JOB:
        if (dlb_job_event_copy(&dst->u.job, &src->u.job))
            fail = 1;
        break;
    case DLB_EV_RUNTIME:
        dst->u.rt.pods =
            dup_array(src->u.rt.pods, src->u.rt.pods_cnt, sizeof(*src->u.rt.pods), &fail);
        dst->u.rt.pods_by_name = NULL; /* a window's index, not part of the event */
        break;
    case DLB_EV_PLAN:
        dst->u.plan.groups = dup_array(src->u.plan.groups, src->u.plan.groups_cnt,
                                       sizeof(*src->u.plan.groups), &fail);
        dst->u.plan.pods =
            dup_array(src->u.plan.pods, src->u.plan.pods_cnt, sizeof(*src->u.plan.pods), &fail);
        dst->u.plan.actions = dup_array(src->u.plan.actions, src->u.plan.actions_cnt,
                                        sizeof(*src->u.plan.actions), &fail);
        break;
    default:
        if ((l = str_lists_of(src->type))) {
            UM(dst, l->strs, char **) =
                dup_strs(UMC(src, l->strs, char **), UMC(src, l->strs_cnt, size_t),
                         &UM(dst, l->strs_cnt, size_t), &fail);
            UM(dst, l->pairs, void *) =
                dup_pairs(UMC(src, l->pairs, void *), UMC(src, l->pairs_cnt, size_t), l->size,
                          l->ka, l->va, &UM(dst, l->pairs_cnt, size_t), &fail);
        }
        break;
    }
    if (fail) {
        dlb_event_clear(dst);
        return DLB_ERR_NOMEM;
    }
    return 0;
}

static int text_equal(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

static int strs_equal(char *const *a, char *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!text_equal(a[i], b[i]))
            return 0;
    return 1;
}

static int pairs_equal(const void *a, const void *b, size_t n, size_t size, size_t ka, size_t va)
{
    for (size_t i = 0; i < n; i++) {
        const char *x = (const char *)a + i * size, *y = (const char *)b + i * size;
        if (!text_equal(CPAIR(x, ka), CPAIR(y, ka)) || !text_equal(CPAIR(x, va), CPAIR(y, va)))
            return 0;
    }
    return 1;
}

/* Compares the heap parts of two job events (copies) and cuts them from
 * both, so that what is left compares as bytes. */
static int job_heap_equal(dlb_job_event_t *x, dlb_job_event_t *y)
{
    dlb_model_t *a = &x->model, *b = &y->model;

    for (size_t i = 0; i < JOB_TEXTS; i++) {
        if (!text_equal(JOB_TEXT(x, i), JOB_TEXT(y, i)))
            return 0;
        JOB_TEXT(x, i) = JOB_TEXT(y, i) = NULL;
    }
    if (a->kv_embedding_dims_cnt != b->kv_embedding_dims_cnt ||
        (a->kv_embedding_dims_cnt && memcmp(a->kv_embedding_dims, b->kv_embedding_dims,
                                            a->kv_embedding_dims_cnt * sizeof(int64_t))) ||
        a->tensor_alloc_bytes_cnt != b->tensor_alloc_bytes_cnt)
        return 0;
    for (size_t i = 0; i < a->tensor_alloc_bytes_cnt; i++)
        if (!text_equal(a->tensor_alloc_bytes[i].key, b->tensor_alloc_bytes[i].key) ||
            a->tensor_alloc_bytes[i].value != b->tensor_alloc_bytes[i].value)
            return 0;
    a->kv_embedding_dims = b->kv_embedding_dims = NULL;
    a->tensor_alloc_bytes = b->tensor_alloc_bytes = NULL;
    return 1;
}

int dlb_event_equal(const dlb_event_t *a, const dlb_event_t *b)
{
    const str_lists_t *l;
    dlb_event_t x, y;

    if (a->type != b->type)
        return 0;
    /* memcpy, not assignment: padding bytes must come along too. */
    memcpy(&x, a, sizeof(x));
    memcpy(&y, b, sizeof(y));
    switch (a->type) {
    case DLB_EV_JOB:
        if (!job_heap_equal(&x.u.job, &y.u.job))
            return 0;
        break;
    case DLB_EV_RUNTIME:
        if (a->u.rt.pods_cnt != b->u.rt.pods_cnt ||
            (a->u.rt.pods_cnt &&
             memcmp(a->u.rt.pods, b->u.rt.pods, a->u.rt.pods_cnt * sizeof(*a->u.rt.pods))))
            return 0;
        x.u.rt.pods = y.u.rt.pods = NULL;
        x.u.rt.pods_by_name = y.u.rt.pods_by_name = NULL;
        break;
    case DLB_EV_PLAN:
        if (a->u.plan.groups_cnt != b->u.plan.groups_cnt ||
            a->u.plan.pods_cnt != b->u.plan.pods_cnt ||
            a->u.plan.actions_cnt != b->u.plan.actions_cnt ||
            (a->u.plan.actions_cnt && memcmp(a->u.plan.actions, b->u.plan.actions,
                                             a->u.plan.actions_cnt * sizeof(*a->u.plan.actions))) ||
            (a->u.plan.groups_cnt && memcmp(a->u.plan.groups, b->u.plan.groups,
                                            a->u.plan.groups_cnt * sizeof(*a->u.plan.groups))) ||
            (a->u.plan.pods_cnt &&
             memcmp(a->u.plan.pods, b->u.plan.pods, a->u.plan.pods_cnt * sizeof(*a->u.plan.pods))))
            return 0;
        x.u.plan.groups = y.u.plan.groups = NULL;
        x.u.plan.pods = y.u.plan.pods = NULL;
        x.u.plan.actions = y.u.plan.actions = NULL;
        break;
    default:
        if ((l = str_lists_of(a->type))) {
            size_t ns = UMC(a, l->strs_cnt, size_t), np = UMC(a, l->pairs_cnt, size_t);
            if (ns != UMC(b, l->strs_cnt, size_t) || np != UMC(b, l->pairs_cnt, size_t) ||
                !strs_equal(UMC(a, l->strs, char **), UMC(b, l->strs, char **), ns) ||
                !pairs_equal(UMC(a, l->pairs, void *), UMC(b, l->pairs, void *), np, l->size, l->ka,
                             l->va))
                return 0;
            UM(&x, l->strs, char **) = UM(&y, l->strs, char **) = NULL;
            UM(&x, l->pairs, void *) = UM(&y, l->pairs, void *) = NULL;
        }
        break;
    }
    return !memcmp(&x, &y, sizeof(x));
}

/* ---- validation -------------------------------------------------------- */

static int need_id(const char *field, const char *v, char *errstr, size_t size)
{
    if (!v[0])
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: must not be empty", field);
    return 0;
}

static int need_time(int64_t t, char *errstr, size_t size)
{
    if (t < 0)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "event_time_ms: negative (%lld)",
                          (long long)t);
    return 0;
}

static int need_listed(const char *field, const char *const *list, const char *v, char *errstr,
                       size_t size)
{
    char known[512];
    size_t off = 0;

    if (dlb_in_list(list, v))
        return 0;
    known[0] = '\0';
    for (; *list && off < sizeof(known); list++)
        off += (size_t)snprintf(known + off, sizeof(known) - off, "%s%s", off ? ", " : "", *list);
    return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                      "%s: unknown value \"%s\" (expected one of %s)", field, v, known);
}

static int need_cpu(const char *field, double v, char *errstr, size_t size)
{
    if (!isfinite(v) || v < 0)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "%s: must be a finite non-negative number of cores (%g)", field, v);
    return 0;
}

static int need_mem(const char *field, int64_t v, char *errstr, size_t size)
{
    if (v < 0)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: negative (%lld)", field,
                          (long long)v);
    return 0;
}

static int need_nonneg(const char *field, int64_t v, char *errstr, size_t size)
{
    return need_mem(field, v, errstr, size);
}

/* Bounds of the heap parts; the decoder checks the same (codec_map.c). */
static int need_text(const char *field, const char *v, size_t max, char *errstr, size_t size)
{
    size_t len = v ? strlen(v) : 0;

    if (len > max)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "%s: %zu bytes long, more than the limit of %zu", field, len, max);
    return 0;
}

static int need_count(const char *field, size_t n, size_t max, char *errstr, size_t size)
{
    if (n > max)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "%s: %zu items, more than the limit of %zu", field, n, max);
    return 0;
}

static int need_key(const char *field, const char *key, char *errstr, size_t size)
{
    size_t len = key ? strlen(key) : 0;

    if (len > DLB_KEY_MAX)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "%s: a key of %zu bytes, more than the limit of %d", field, len,
                          DLB_KEY_MAX);
    return 0;
}

static int validate_resource(const char *prefix, const dlb_resource_t *r, char *errstr, size_t size)
{
    char f[160];
    int err;

    snprintf(f, sizeof(f), "%s.cpu", prefix);
    if ((err = need_cpu(f, r->cpu, errstr, size)))
        return err;
    snprintf(f, sizeof(f), "%s.memory", prefix);
    if ((err = need_mem(f, r->memory, errstr, size)))
        return err;
    if (r->gpu < 0) {
        snprintf(f, sizeof(f), "%s.gpu", prefix);
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: negative (%d)", f, (int)r->gpu);
    }
    return 0;
}

static int validate_model(const dlb_model_t *m, char *errstr, size_t size)
{
    char f[64];
    int err;

    if ((err = need_nonneg("model.variable_count", m->variable_count, errstr, size)) ||
        (err = need_nonneg("model.op_count", m->op_count, errstr, size)) ||
        (err = need_nonneg("model.total_variable_size", m->total_variable_size, errstr, size)) ||
        (err = need_nonneg("model.recv_op_count", m->recv_op_count, errstr, size)) ||
        (err = need_nonneg("model.flops", m->flops, errstr, size)) ||
        (err = need_nonneg("model.embedding_dimension", m->embedding_dimension, errstr, size)) ||
        (err = need_nonneg("model.max_variable_size", m->max_variable_size, errstr, size)) ||
        (err = need_nonneg("model.update_op_count", m->update_op_count, errstr, size)) ||
        (err = need_nonneg("model.read_op_count", m->read_op_count, errstr, size)) ||
        (err = need_nonneg("model.input_fetch_dur", m->input_fetch_dur, errstr, size)) ||
        (err = need_count("model.kv_embedding_dims", m->kv_embedding_dims_cnt, DLB_LIST_MAX, errstr,
                          size)) ||
        (err = need_count("model.tensor_alloc_bytes", m->tensor_alloc_bytes_cnt, DLB_LIST_MAX,
                          errstr, size)))
        return err;
    for (size_t i = 0; i < m->kv_embedding_dims_cnt; i++)
        if (m->kv_embedding_dims[i] < 0) {
            snprintf(f, sizeof(f), "model.kv_embedding_dims[%zu]", i);
            return need_nonneg(f, m->kv_embedding_dims[i], errstr, size);
        }
    for (size_t i = 0; i < m->tensor_alloc_bytes_cnt; i++) {
        const dlb_long_entry_t *e = &m->tensor_alloc_bytes[i];
        if ((err = need_key("model.tensor_alloc_bytes", e->key, errstr, size)))
            return err;
        if (e->value < 0)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "model.tensor_alloc_bytes.%s: negative (%lld)", e->key,
                              (long long)e->value);
    }
    return 0;
}

static int validate_job(const dlb_job_event_t *j, char *errstr, size_t size)
{
    int err;

    if (j->has_state && (err = need_listed("state", dlb_job_states, j->state, errstr, size)))
        return err;
    if (j->has_exit_reason &&
        (err = need_listed("exit_reason", dlb_exit_reasons, j->exit_reason, errstr, size)))
        return err;
    if (j->has_hyper_params) {
        if ((err = need_nonneg("hyper_params.batch_size", j->hyper_params.batch_size, errstr,
                               size)) ||
            (err = need_nonneg("hyper_params.epoch", j->hyper_params.epoch, errstr, size)) ||
            (err = need_nonneg("hyper_params.max_steps", j->hyper_params.max_steps, errstr, size)))
            return err;
    }
    if (j->has_dataset &&
        ((err = need_nonneg("dataset.size", j->dataset.size, errstr, size)) ||
         (err = need_nonneg("dataset.sparse_item_count", j->dataset.sparse_item_count, errstr,
                            size)) ||
         (err = need_nonneg("dataset.storage_size", j->dataset.storage_size, errstr, size))))
        return err;
    if (j->has_model && (err = validate_model(&j->model, errstr, size)))
        return err;
    /* Absent sections hold no texts: checked whatever has_* says. */
    for (size_t i = 0; i < JOB_TEXTS; i++)
        if ((err = need_text(job_texts[i].name, JOB_TEXTC(j, i), DLB_TEXT_MAX, errstr, size)))
            return err;
    return 0;
}

/* Every pod of every sample is checked: a field's name ("pods[3].cpu_used")
 * is formatted only for the message of a check that failed, by running the
 * check again with it (formatting six names a pod was half of decoding). */
#define POD_NEED(check, i, key, ...)                                                               \
    do {                                                                                           \
        if (check("", __VA_ARGS__, NULL, 0)) {                                                     \
            snprintf(f, sizeof(f), "pods[%zu]." key, (i));                                         \
            return check(f, __VA_ARGS__, errstr, size);                                            \
        }                                                                                          \
    } while (0)

static int validate_runtime(const dlb_runtime_sample_t *rt, char *errstr, size_t size)
{
    char f[64];
    int err;

    if ((err = need_nonneg("global_step", rt->global_step, errstr, size)))
        return err;
    if (!isfinite(rt->speed) || rt->speed < 0)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "speed: must be a finite non-negative number of steps/s (%g)", rt->speed);
    for (size_t i = 0; i < rt->pods_cnt; i++) {
        const dlb_pod_usage_t *p = &rt->pods[i];
        POD_NEED(need_id, i, "name", p->name);
        POD_NEED(need_listed, i, "type", dlb_pod_types, p->type);
        if (p->index < 0)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "pods[%zu].index: negative (%d)", i,
                              (int)p->index);
        POD_NEED(need_cpu, i, "cpu_used", p->cpu_used);
        POD_NEED(need_cpu, i, "cpu_requested", p->cpu_requested);
        POD_NEED(need_mem, i, "memory_used", p->memory_used);
        POD_NEED(need_mem, i, "memory_requested", p->memory_requested);
        if (p->has_speed && (!isfinite(p->speed) || p->speed < 0))
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "pods[%zu].speed: must be a finite non-negative number of steps/s "
                              "(%g)",
                              i, p->speed);
    }
    return 0;
}

static int validate_node(const dlb_node_event_t *n, char *errstr, size_t size)
{
    int err;

    if ((err = need_listed("kind", dlb_node_kinds, n->kind, errstr, size)))
        return err;
    if (n->pod_type[0] && (err = need_listed("pod_type", dlb_pod_types, n->pod_type, errstr, size)))
        return err;
    /* Everything but a node-level event is about a pod. */
    if (strcmp(n->kind, "node_phase") && strcmp(n->kind, "node_not_ready") &&
        (err = need_id("pod_name", n->pod_name, errstr, size)))
        return err;
    if (n->pod_index < 0)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "pod_index: negative (%d)",
                          (int)n->pod_index);
    if (n->has_memory_requested &&
        (err = need_mem("memory_requested", n->memory_requested, errstr, size)))
        return err;
    if (n->has_cpu_requested && (err = need_cpu("cpu_requested", n->cpu_requested, errstr, size)))
        return err;
    return 0;
}

static int validate_plan(const dlb_plan_t *p, char *errstr, size_t size)
{
    char f[160];
    int err;

    if ((err = need_id("plan_id", p->plan_id, errstr, size)) ||
        (err = need_listed("stage", dlb_stages, p->stage, errstr, size)) ||
        (err = need_id("optimizer", p->optimizer, errstr, size)))
        return err;
    for (size_t i = 0; i < p->groups_cnt; i++) {
        snprintf(f, sizeof(f), "groups[%zu].group", i);
        if ((err = need_listed(f, dlb_pod_types, p->groups[i].group, errstr, size)))
            return err;
        if (p->groups[i].count < 0)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "groups[%zu].count: negative (%d)", i,
                              (int)p->groups[i].count);
        snprintf(f, sizeof(f), "groups[%zu].resource", i);
        if ((err = validate_resource(f, &p->groups[i].resource, errstr, size)))
            return err;
    }
    for (size_t i = 0; i < p->pods_cnt; i++) {
        snprintf(f, sizeof(f), "pods[%zu].name", i);
        if ((err = need_id(f, p->pods[i].name, errstr, size)))
            return err;
        snprintf(f, sizeof(f), "pods[%zu].resource", i);
        if ((err = validate_resource(f, &p->pods[i].resource, errstr, size)))
            return err;
    }
    for (size_t i = 0; i < p->actions_cnt; i++) {
        snprintf(f, sizeof(f), "actions[%zu].pod", i);
        if ((err = need_id(f, p->actions[i].pod, errstr, size)))
            return err;
        snprintf(f, sizeof(f), "actions[%zu].action", i);
        if ((err = need_listed(f, pod_actions, p->actions[i].action, errstr, size)))
            return err;
    }
    return 0;
}

static int validate_request(const dlb_plan_request_t *r, char *errstr, size_t size)
{
    char f[DLB_KEY_MAX + 16];
    int err;

    if ((err = need_listed("stage", dlb_stages, r->stage, errstr, size)) ||
        (r->has_oom_pod && (err = need_id("oom_pod", r->oom_pod, errstr, size))) ||
        (err = need_count("oom_pods", r->oom_pods_cnt, DLB_OOM_PODS_MAX, errstr, size)) ||
        (err = need_count("config", r->config_cnt, DLB_CONFIG_MAX, errstr, size)))
        return err;
    for (size_t i = 0; i < r->oom_pods_cnt; i++) {
        snprintf(f, sizeof(f), "oom_pods[%zu]", i);
        /* A pod name: what a plan's pod resource can hold. */
        if ((err = need_id(f, r->oom_pods[i] ? r->oom_pods[i] : "", errstr, size)) ||
            (err = need_text(f, r->oom_pods[i], DLB_ID_MAX - 1, errstr, size)))
            return err;
    }
    /* v1 readers (and the plan_requests.oom_pod column) see only oom_pod. */
    if (r->oom_pods_cnt && (!r->has_oom_pod || strcmp(r->oom_pod, r->oom_pods[0])))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "oom_pod: must be the first of oom_pods (\"%s\")", r->oom_pods[0]);
    for (size_t i = 0; i < r->config_cnt; i++) {
        const dlb_str_entry_t *e = &r->config[i];
        if (!e->key || !e->key[0])
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "config: a key must not be empty");
        if ((err = need_key("config", e->key, errstr, size)))
            return err;
        snprintf(f, sizeof(f), "config.%s", e->key);
        if ((err = need_text(f, e->value, DLB_KEY_MAX, errstr, size)))
            return err;
    }
    return 0;
}

int dlb_event_validate(const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    int err;

    if (ev->type <= DLB_EV_NONE || ev->type >= DLB_EV__CNT)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "type: unknown event type %d",
                          (int)ev->type);
    if ((err = need_id("event_id", dlb_event_id(ev), errstr, errstr_size)) ||
        (err = need_id("job_uid", dlb_event_job_uid(ev), errstr, errstr_size)) ||
        (err = need_time(dlb_event_time_ms(ev), errstr, errstr_size)))
        return err;
    switch (ev->type) {
    case DLB_EV_JOB:
        return validate_job(&ev->u.job, errstr, errstr_size);
    case DLB_EV_RUNTIME:
        return validate_runtime(&ev->u.rt, errstr, errstr_size);
    case DLB_EV_NODE:
        return validate_node(&ev->u.node, errstr, errstr_size);
    case DLB_EV_PLAN_REQUEST:
        return validate_request(&ev->u.req, errstr, errstr_size);
    case DLB_EV_PLAN:
        return validate_plan(&ev->u.plan, errstr, errstr_size);
    case DLB_EV_CONFIG_MATCH:
        if (ev->u.cm.rules_version < 0)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "rules_version: negative (%lld)", (long long)ev->u.cm.rules_version);
        return 0;
    default:
        return 0;
    }
}

void dlb_plan_id(const dlb_plan_request_t *req, char *buf, size_t size)
{
    char id[sizeof(req->event_id) + 1];

    if (!buf || size == 0)
        return;
    /* A request from elsewhere than the decoder may lack the NUL. */
    snprintf(id, sizeof(id), "%.*s", (int)strnlen(req->event_id, sizeof(req->event_id)),
             req->event_id);
    dlb_id_derive("plan-", id, buf, size);
}
