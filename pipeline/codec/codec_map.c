/* The one mapping between Avro records and event.h structs.
 *
 * Field tables describe each struct; rd_* walks a generic value of the newest
 * schema into a struct, wr_* the reverse. Both the binary codec (codec.c) and
 * JSON input and output (json_event.c) go through it. */
#include "codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "err.h"
#include "utf8.h"

/* ---- the field tables: Avro record <-> struct ---------------------------- */

typedef enum fkind {
    F_STR,      /* char[size] */
    F_LONG,     /* int64_t */
    F_INT,      /* int32_t */
    F_DOUBLE,   /* double */
    F_BOOL,     /* int, 0 or 1 */
    F_TEXT,     /* char *, heap, at most max bytes; NULL writes as "" */
    F_REC,      /* embedded struct described by sub */
    F_ARR_REC,  /* heap array of size-byte structs (sub) + size_t count */
    F_ARR_STR,  /* char ** + size_t count */
    F_ARR_LONG, /* int64_t * + size_t count */
    F_MAP_STR,  /* heap array of size-byte entries {char *key at koff; char *value at voff} + count
                 */
    F_MAP_LONG, /* the same with an int64_t value */
} fkind_t;

typedef struct fdesc {
    const char *name; /* Avro field name */
    fkind_t kind;
    size_t off;
    size_t size;
    int opt; /* a union with null; the int at has_off says present */
    size_t has_off;
    size_t cnt_off;
    const struct fdesc *sub;
    size_t max;        /* F_TEXT: bytes; lists and maps: items; 0 = no bound */
    size_t koff, voff; /* maps: key and value in an entry */
} fdesc_t;

#define MSIZE(T, m) sizeof(((T *)0)->m)
/* clang-format off */
#define FS(T, m) {.name = #m, .kind = F_STR, .off = offsetof(T, m), .size = MSIZE(T, m)}
#define FSN(T, m, n) {.name = n, .kind = F_STR, .off = offsetof(T, m), .size = MSIZE(T, m)}
#define FL(T, m) {.name = #m, .kind = F_LONG, .off = offsetof(T, m)}
#define FI(T, m) {.name = #m, .kind = F_INT, .off = offsetof(T, m)}
#define FD(T, m) {.name = #m, .kind = F_DOUBLE, .off = offsetof(T, m)}
#define FB(T, m) {.name = #m, .kind = F_BOOL, .off = offsetof(T, m)}
#define FT(T, m) {.name = #m, .kind = F_TEXT, .off = offsetof(T, m), .max = DLB_TEXT_MAX}
#define FR(T, m, s) {.name = #m, .kind = F_REC, .off = offsetof(T, m), .sub = s}
#define FOPT(T, has) .opt = 1, .has_off = offsetof(T, has)
#define FOS(T, m, has) \
    {.name = #m, .kind = F_STR, .off = offsetof(T, m), .size = MSIZE(T, m), FOPT(T, has)}
#define FOL(T, m, has) {.name = #m, .kind = F_LONG, .off = offsetof(T, m), FOPT(T, has)}
#define FOD(T, m, has) {.name = #m, .kind = F_DOUBLE, .off = offsetof(T, m), FOPT(T, has)}
#define FOT(T, m, has) \
    {.name = #m, .kind = F_TEXT, .off = offsetof(T, m), .max = DLB_TEXT_MAX, FOPT(T, has)}
#define FOR(T, m, has, s) {.name = #m, .kind = F_REC, .off = offsetof(T, m), .sub = s, FOPT(T, has)}
#define FAR(T, m, cnt, ET, s, lim) \
    {.name = #m, .kind = F_ARR_REC, .off = offsetof(T, m), .size = sizeof(ET), \
     .cnt_off = offsetof(T, cnt), .sub = s, .max = lim}
#define FAS(T, m, cnt, lim) \
    {.name = #m, .kind = F_ARR_STR, .off = offsetof(T, m), .size = sizeof(char *), \
     .cnt_off = offsetof(T, cnt), .max = lim}
#define FAL(T, m, cnt, lim) \
    {.name = #m, .kind = F_ARR_LONG, .off = offsetof(T, m), .size = sizeof(int64_t), \
     .cnt_off = offsetof(T, cnt), .max = lim}
#define FMAP(K, T, m, cnt, ET, v, lim) \
    {.name = #m, .kind = K, .off = offsetof(T, m), .size = sizeof(ET), \
     .cnt_off = offsetof(T, cnt), .max = lim, .koff = offsetof(ET, key), .voff = offsetof(ET, v)}
#define FEND {.name = NULL}
/* clang-format on */

static const fdesc_t meta_fields[] = {FS(dlb_job_meta_t, name),
                                      FS(dlb_job_meta_t, user),
                                      FS(dlb_job_meta_t, group),
                                      FS(dlb_job_meta_t, app),
                                      FS(dlb_job_meta_t, cluster),
                                      FSN(dlb_job_meta_t, ns, "namespace"),
                                      FS(dlb_job_meta_t, scenario),
                                      FS(dlb_job_meta_t, framework),
                                      FEND};
static const fdesc_t hyper_fields[] = {FL(dlb_hyper_params_t, batch_size),
                                       FL(dlb_hyper_params_t, epoch),
                                       FL(dlb_hyper_params_t, max_steps), FEND};
static const fdesc_t dataset_fields[] = {FS(dlb_dataset_t, name),
                                         FL(dlb_dataset_t, size),
                                         FS(dlb_dataset_t, storage),
                                         FL(dlb_dataset_t, sparse_item_count),
                                         FT(dlb_dataset_t, sparse_features),
                                         FT(dlb_dataset_t, sparse_feature_groups),
                                         FT(dlb_dataset_t, sparse_feature_shapes),
                                         FT(dlb_dataset_t, dense_features),
                                         FT(dlb_dataset_t, dense_feature_shapes),
                                         FL(dlb_dataset_t, storage_size),
                                         FEND};
static const fdesc_t model_fields[] = {
    FL(dlb_model_t, variable_count),
    FL(dlb_model_t, op_count),
    FL(dlb_model_t, total_variable_size),
    FL(dlb_model_t, recv_op_count),
    FL(dlb_model_t, flops),
    FL(dlb_model_t, embedding_dimension),
    FL(dlb_model_t, max_variable_size),
    FL(dlb_model_t, update_op_count),
    FL(dlb_model_t, read_op_count),
    FL(dlb_model_t, input_fetch_dur),
    FAL(dlb_model_t, kv_embedding_dims, kv_embedding_dims_cnt, DLB_LIST_MAX),
    FMAP(F_MAP_LONG, dlb_model_t, tensor_alloc_bytes, tensor_alloc_bytes_cnt, dlb_long_entry_t,
         value, DLB_LIST_MAX),
    FEND};
static const fdesc_t workflow_fields[] = {
    FS(dlb_workflow_t, job_name),     FS(dlb_workflow_t, user_id),
    FT(dlb_workflow_t, code_address), FS(dlb_workflow_t, workflow_id),
    FS(dlb_workflow_t, node_id),      FS(dlb_workflow_t, odps_project),
    FB(dlb_workflow_t, is_prod),      FEND};
static const fdesc_t job_fields[] = {
    FS(dlb_job_event_t, event_id),
    FL(dlb_job_event_t, event_time_ms),
    FS(dlb_job_event_t, job_uid),
    FOR(dlb_job_event_t, meta, has_meta, meta_fields),
    FOS(dlb_job_event_t, state, has_state),
    FOR(dlb_job_event_t, hyper_params, has_hyper_params, hyper_fields),
    FOR(dlb_job_event_t, dataset, has_dataset, dataset_fields),
    FOR(dlb_job_event_t, model, has_model, model_fields),
    FOS(dlb_job_event_t, exit_reason, has_exit_reason),
    FOR(dlb_job_event_t, workflow, has_workflow, workflow_fields),
    FOS(dlb_job_event_t, job_type, has_job_type),
    FOT(dlb_job_event_t, resource, has_resource),
    FOT(dlb_job_event_t, customized_data, has_customized_data),
    FOT(dlb_job_event_t, optimization, has_optimization),
    FEND};

static const fdesc_t pod_usage_fields[] = {FS(dlb_pod_usage_t, name),
                                           FS(dlb_pod_usage_t, type),
                                           FI(dlb_pod_usage_t, index),
                                           FD(dlb_pod_usage_t, cpu_used),
                                           FD(dlb_pod_usage_t, cpu_requested),
                                           FL(dlb_pod_usage_t, memory_used),
                                           FL(dlb_pod_usage_t, memory_requested),
                                           FOD(dlb_pod_usage_t, speed, has_speed),
                                           FS(dlb_pod_usage_t, pod_ip),
                                           FS(dlb_pod_usage_t, node_ip),
                                           FS(dlb_pod_usage_t, host_name),
                                           FSN(dlb_pod_usage_t, ns, "namespace"),
                                           FB(dlb_pod_usage_t, is_mixed),
                                           FEND};
static const fdesc_t runtime_fields[] = {
    FS(dlb_runtime_sample_t, event_id),
    FL(dlb_runtime_sample_t, event_time_ms),
    FS(dlb_runtime_sample_t, job_uid),
    FL(dlb_runtime_sample_t, global_step),
    FD(dlb_runtime_sample_t, speed),
    FAR(dlb_runtime_sample_t, pods, pods_cnt, dlb_pod_usage_t, pod_usage_fields, DLB_PODS_MAX),
    FEND};

static const fdesc_t node_fields[] = {FS(dlb_node_event_t, event_id),
                                      FL(dlb_node_event_t, event_time_ms),
                                      FS(dlb_node_event_t, job_uid),
                                      FS(dlb_node_event_t, kind),
                                      FS(dlb_node_event_t, pod_name),
                                      FS(dlb_node_event_t, pod_type),
                                      FI(dlb_node_event_t, pod_index),
                                      FS(dlb_node_event_t, node_name),
                                      FOS(dlb_node_event_t, phase, has_phase),
                                      FS(dlb_node_event_t, reason),
                                      FS(dlb_node_event_t, message),
                                      FOL(dlb_node_event_t, memory_requested, has_memory_requested),
                                      FOD(dlb_node_event_t, cpu_requested, has_cpu_requested),
                                      FEND};

static const fdesc_t request_fields[] = {
    FS(dlb_plan_request_t, event_id),
    FL(dlb_plan_request_t, event_time_ms),
    FS(dlb_plan_request_t, job_uid),
    FS(dlb_plan_request_t, stage),
    FOS(dlb_plan_request_t, oom_pod, has_oom_pod),
    FAS(dlb_plan_request_t, oom_pods, oom_pods_cnt, DLB_OOM_PODS_MAX),
    FMAP(F_MAP_STR, dlb_plan_request_t, config, config_cnt, dlb_str_entry_t, value, DLB_CONFIG_MAX),
    FEND};

static const fdesc_t resource_fields[] = {
    FD(dlb_resource_t, cpu),      FL(dlb_resource_t, memory),   FI(dlb_resource_t, gpu),
    FS(dlb_resource_t, gpu_type), FS(dlb_resource_t, priority), FEND};
static const fdesc_t group_fields[] = {FS(dlb_group_resource_t, group),
                                       FI(dlb_group_resource_t, count),
                                       FR(dlb_group_resource_t, resource, resource_fields), FEND};
static const fdesc_t pod_res_fields[] = {FS(dlb_pod_resource_t, name),
                                         FR(dlb_pod_resource_t, resource, resource_fields), FEND};
static const fdesc_t action_fields[] = {FS(dlb_pod_action_t, pod), FS(dlb_pod_action_t, action),
                                        FS(dlb_pod_action_t, reason), FEND};
static const fdesc_t plan_fields[] = {
    FS(dlb_plan_t, event_id),
    FL(dlb_plan_t, event_time_ms),
    FS(dlb_plan_t, plan_id),
    FS(dlb_plan_t, job_uid),
    FS(dlb_plan_t, stage),
    FAR(dlb_plan_t, groups, groups_cnt, dlb_group_resource_t, group_fields, DLB_GROUPS_MAX),
    FAR(dlb_plan_t, pods, pods_cnt, dlb_pod_resource_t, pod_res_fields, DLB_PODS_MAX),
    FAR(dlb_plan_t, actions, actions_cnt, dlb_pod_action_t, action_fields, DLB_ACTIONS_MAX),
    FS(dlb_plan_t, optimizer),
    FS(dlb_plan_t, reason),
    FS(dlb_plan_t, trigger_event_id),
    FEND};

static const fdesc_t config_match_fields[] = {
    FS(dlb_config_match_t, event_id),
    FL(dlb_config_match_t, event_time_ms),
    FS(dlb_config_match_t, job_uid),
    FL(dlb_config_match_t, rules_version),
    FAS(dlb_config_match_t, rule_ids, rule_ids_cnt, DLB_LIST_MAX),
    FMAP(F_MAP_STR, dlb_config_match_t, values, values_cnt, dlb_config_value_t, json, DLB_LIST_MAX),
    FS(dlb_config_match_t, trigger_event_id),
    FEND};

static const fdesc_t config_request_fields[] = {
    FS(dlb_config_request_t, event_id), FL(dlb_config_request_t, event_time_ms),
    FS(dlb_config_request_t, job_uid), FOR(dlb_config_request_t, meta, has_meta, meta_fields),
    FEND};

static const fdesc_t *const type_fields[DLB_EV__CNT] = {
    [DLB_EV_JOB] = job_fields,
    [DLB_EV_RUNTIME] = runtime_fields,
    [DLB_EV_NODE] = node_fields,
    [DLB_EV_PLAN_REQUEST] = request_fields,
    [DLB_EV_PLAN] = plan_fields,
    [DLB_EV_CONFIG_MATCH] = config_match_fields,
    [DLB_EV_CONFIG_REQUEST] = config_request_fields,
};

/* The limit of list field name in table t or the records below it. */
static size_t list_max(const fdesc_t *t, const char *field)
{
    size_t m;

    for (; t && t->name; t++) {
        if (t->kind >= F_ARR_REC && !strcmp(t->name, field))
            return t->max;
        if (t->sub && (m = list_max(t->sub, field)))
            return m;
    }
    return 0;
}

size_t dlb_codec_list_max(dlb_event_type_t type, const char *field)
{
    if ((int)type <= DLB_EV_NONE || type >= DLB_EV__CNT || !field)
        return 0;
    return list_max(type_fields[type], field);
}

static int avro_fail(char *errstr, size_t size, const char *field, const char *what)
{
    return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: %s: %s", field, what, avro_strerror());
}

/* ---- Avro -> struct -------------------------------------------------------- */

/* Avro strings are UTF-8 by the spec, and PostgreSQL refuses anything else
 * (SQLSTATE 22021) only after the record was taken: checked here, where the
 * record can still go to the DLQ, naming the field and the byte. */
static int check_text(const char *field, const char *s, size_t len, char *errstr, size_t size)
{
    size_t bad;

    if (len && memchr(s, '\0', len))
        return dlb_seterr(errstr, size, DLB_ERR_DECODE, "%s: contains a NUL byte", field);
    if ((bad = dlb_utf8_check(s, len)) < len)
        return dlb_seterr(errstr, size, DLB_ERR_DECODE, "%s: not UTF-8: byte %zu of %zu is 0x%02x",
                          field, bad + 1, len, (unsigned char)s[bad]);
    return 0;
}

static int copy_str(const char *field, const char *s, size_t sz, char *dst, size_t cap,
                    char *errstr, size_t size)
{
    /* avro-c sizes include the NUL terminator. */
    size_t len = (s && sz) ? sz - 1 : 0;
    int err;

    if ((err = check_text(field, s, len, errstr, size)))
        return err;
    if (len >= cap)
        return dlb_seterr(errstr, size, DLB_ERR_DECODE,
                          "%s: %zu bytes long, more than the limit of %zu", field, len, cap - 1);
    if (len)
        memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

/* A heap copy of string v, at most max bytes long (0: no bound). */
static int dup_str(const char *field, avro_value_t *v, size_t max, char **out, char *errstr,
                   size_t size)
{
    const char *s = NULL;
    size_t sz = 0, len;
    int err;

    if (avro_value_get_string(v, &s, &sz))
        return avro_fail(errstr, size, field, "not a string");
    len = (s && sz) ? sz - 1 : 0;
    if ((err = check_text(field, s, len, errstr, size)))
        return err;
    if (max && len > max)
        return dlb_seterr(errstr, size, DLB_ERR_DECODE,
                          "%s: %zu bytes long, more than the limit of %zu", field, len, max);
    if (!(*out = malloc(len + 1)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    if (len)
        memcpy(*out, s, len);
    (*out)[len] = '\0';
    return 0;
}

/* Where a table's fields are in one record schema (the newest of a type), so
 * a decoder reads them by index: by name, avro-c hashes the name for every
 * field of every record of every message (a sixth of decoding a sample). */
struct dlb_codec_fieldmap {
    avro_schema_t schema;            /* the record schema the indexes are of */
    int *idx;                        /* per table field: its index there, -1 if absent */
    struct dlb_codec_fieldmap **sub; /* per table field: its record's map (F_REC, F_ARR_REC) */
    size_t n;
};

static int rd_record(const fdesc_t *t, const dlb_codec_fieldmap_t *m, avro_value_t *rec, char *base,
                     char *errstr, size_t size);

/* Lists and maps: the pointer and count are set before the items are
 * filled, so dlb_event_clear() releases a half-filled list. */
static int rd_list(const fdesc_t *t, const dlb_codec_fieldmap_t *m, avro_value_t *f, char *base,
                   size_t n, char *errstr, size_t size)
{
    char *p = base + t->off;
    size_t *cnt = (size_t *)(void *)(base + t->cnt_off);
    avro_value_t el;
    char *arr;
    int err;

    if (!(arr = calloc(n, t->size)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    *(void **)(void *)p = arr;
    /* Items of records and longs own nothing until filled: counted at once;
     * strings and entries as they are made. */
    *cnt = t->kind == F_ARR_REC || t->kind == F_ARR_LONG ? n : 0;
    for (size_t i = 0; i < n; i++) {
        const char *key = NULL;
        char *item = arr + i * t->size;

        if (avro_value_get_by_index(f, i, &el, &key))
            return avro_fail(errstr, size, t->name, "item");
        switch (t->kind) {
        case F_ARR_REC:
            if ((err = rd_record(t->sub, m, &el, item, errstr, size))) {
                dlb_err_prepend(errstr, size, "%s[%zu].", t->name, i);
                return err;
            }
            break;
        case F_ARR_STR:
            if ((err = dup_str(t->name, &el, 0, (char **)(void *)item, errstr, size))) {
                dlb_err_prepend(errstr, size, "%s[%zu]", t->name, i);
                return err;
            }
            (*cnt)++;
            break;
        case F_ARR_LONG:
            if (avro_value_get_long(&el, (int64_t *)(void *)item))
                return avro_fail(errstr, size, t->name, "not a long");
            break;
        case F_MAP_STR:
        case F_MAP_LONG:
            (*cnt)++;
            if (!(*(char **)(void *)(item + t->koff) = strdup(key ? key : "")))
                return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            if (t->kind == F_MAP_STR)
                err = dup_str(t->name, &el, 0, (char **)(void *)(item + t->voff), errstr, size);
            else if ((err = avro_value_get_long(&el, (int64_t *)(void *)(item + t->voff))))
                err = avro_fail(errstr, size, t->name, "not a long");
            if (err)
                return err;
            break;
        default:
            return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: bad field kind", t->name);
        }
    }
    return 0;
}

/* m: the map of t's record (F_REC) or items (F_ARR_REC), or NULL. */
static int rd_value(const fdesc_t *t, const dlb_codec_fieldmap_t *m, avro_value_t *f, char *base,
                    char *errstr, size_t size)
{
    char *p = base + t->off;
    size_t n = 0;
    int err, b;

    switch (t->kind) {
    case F_STR: {
        const char *s = NULL;
        size_t sz = 0;
        if (avro_value_get_string(f, &s, &sz))
            return avro_fail(errstr, size, t->name, "not a string");
        return copy_str(t->name, s, sz, p, t->size, errstr, size);
    }
    case F_TEXT:
        return dup_str(t->name, f, t->max, (char **)(void *)p, errstr, size);
    case F_LONG:
        if (avro_value_get_long(f, (int64_t *)(void *)p))
            return avro_fail(errstr, size, t->name, "not a long");
        return 0;
    case F_INT:
        if (avro_value_get_int(f, (int32_t *)(void *)p))
            return avro_fail(errstr, size, t->name, "not an int");
        return 0;
    case F_DOUBLE:
        if (avro_value_get_double(f, (double *)(void *)p))
            return avro_fail(errstr, size, t->name, "not a double");
        return 0;
    case F_BOOL:
        if (avro_value_get_boolean(f, &b))
            return avro_fail(errstr, size, t->name, "not a boolean");
        *(int *)(void *)p = b != 0;
        return 0;
    case F_REC:
        if ((err = rd_record(t->sub, m, f, p, errstr, size)))
            dlb_err_prepend(errstr, size, "%s.", t->name);
        return err;
    default:
        break;
    }
    if (avro_value_get_size(f, &n))
        return avro_fail(errstr, size, t->name, "not a list");
    /* Before anything is allocated for it. */
    if (t->max && n > t->max)
        return dlb_seterr(errstr, size, DLB_ERR_DECODE, "%s: %zu items, more than the limit of %zu",
                          t->name, n, t->max);
    return n ? rd_list(t, m, f, base, n, errstr, size) : 0;
}

static int rd_record(const fdesc_t *t, const dlb_codec_fieldmap_t *m, avro_value_t *rec, char *base,
                     char *errstr, size_t size)
{
    /* A map of another schema than rec's is not used (by name instead). */
    if (m && avro_value_get_schema(rec) != m->schema)
        m = NULL;
    for (size_t i = 0; t->name; t++, i++) {
        avro_value_t f, b;
        int err;

        if (m && m->idx[i] >= 0 ? avro_value_get_by_index(rec, (size_t)m->idx[i], &f, NULL)
                                : avro_value_get_by_name(rec, t->name, &f, NULL))
            return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: not in the schema", t->name);
        if (t->opt) {
            if (avro_value_get_current_branch(&f, &b))
                return avro_fail(errstr, size, t->name, "not a union");
            if (avro_value_get_type(&b) == AVRO_NULL) {
                *(int *)(void *)(base + t->has_off) = 0;
                continue;
            }
            *(int *)(void *)(base + t->has_off) = 1;
            f = b;
        }
        if ((err = rd_value(t, m ? m->sub[i] : NULL, &f, base, errstr, size)))
            return err;
    }
    return 0;
}

int dlb_codec_from_avro(dlb_event_type_t type, avro_value_t *rec, dlb_event_t *ev, char *errstr,
                        size_t errstr_size)
{
    return dlb_codec_from_avro_mapped(type, NULL, rec, ev, errstr, errstr_size);
}

int dlb_codec_from_avro_mapped(dlb_event_type_t type, const dlb_codec_fieldmap_t *m,
                               avro_value_t *rec, dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    memset(ev, 0, sizeof(*ev));
    if (type <= DLB_EV_NONE || type >= DLB_EV__CNT)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "unknown event type %d", (int)type);
    ev->type = type;
    return rd_record(type_fields[type], m, rec, (char *)&ev->u, errstr, errstr_size);
}

/* ---- field maps ------------------------------------------------------------ */

void dlb_codec_fieldmap_free(dlb_codec_fieldmap_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; m->sub && i < m->n; i++)
        dlb_codec_fieldmap_free(m->sub[i]);
    free(m->sub);
    free(m->idx);
    free(m);
}

/* The record a field of kind F_REC or F_ARR_REC holds in schema s (through
 * links, an optional's union, an array's items), or NULL. */
static avro_schema_t record_of(avro_schema_t s, fkind_t kind)
{
    int b = dlb_avro_union_branch(s, 0);

    s = dlb_avro_deref(s);
    if (b >= 0)
        s = dlb_avro_deref(avro_schema_union_branch(s, b));
    if (kind == F_ARR_REC) {
        if (!is_avro_array(s))
            return NULL;
        s = dlb_avro_deref(avro_schema_array_items(s));
    }
    return is_avro_record(s) ? s : NULL;
}

static dlb_codec_fieldmap_t *fieldmap_build(const fdesc_t *t, avro_schema_t rs, int depth)
{
    dlb_codec_fieldmap_t *m;
    size_t n = 0;

    while (t[n].name)
        n++;
    if (depth > 16 || !(m = calloc(1, sizeof(*m))))
        return NULL;
    m->schema = rs;
    m->n = n;
    if (!(m->idx = calloc(n ? n : 1, sizeof(*m->idx))) ||
        !(m->sub = calloc(n ? n : 1, sizeof(*m->sub)))) {
        dlb_codec_fieldmap_free(m);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        avro_schema_t sub;

        m->idx[i] = avro_schema_record_field_get_index(rs, t[i].name);
        if (m->idx[i] < 0 || (t[i].kind != F_REC && t[i].kind != F_ARR_REC))
            continue;
        sub = record_of(avro_schema_record_field_get_by_index(rs, m->idx[i]), t[i].kind);
        /* Without a map, that record is read by name. */
        if (sub)
            m->sub[i] = fieldmap_build(t[i].sub, sub, depth + 1);
    }
    return m;
}

dlb_codec_fieldmap_t *dlb_codec_fieldmap_new(dlb_event_type_t type, avro_schema_t rs)
{
    if (type <= DLB_EV_NONE || type >= DLB_EV__CNT)
        return NULL;
    rs = dlb_avro_deref(rs);
    return is_avro_record(rs) ? fieldmap_build(type_fields[type], rs, 0) : NULL;
}

/* ---- struct -> Avro -------------------------------------------------------- */

/* Selects the null branch (present = 0) or the first other branch. */
static int set_optional(avro_value_t *u, int present, avro_value_t *branch, const char *field,
                        char *errstr, size_t size)
{
    int b = dlb_avro_union_branch(avro_value_get_schema(u), !present);

    if (b >= 0) {
        if (avro_value_set_branch(u, b, branch))
            return avro_fail(errstr, size, field, "union");
        return 0;
    }
    return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: not an optional union", field);
}

static int wr_record(const fdesc_t *t, avro_value_t *rec, const char *base, char *errstr,
                     size_t size);

/* Lists and maps; n items, checked against the bound the decoder holds to. */
static int wr_list(const fdesc_t *t, avro_value_t *f, const char *base, size_t n, char *errstr,
                   size_t size)
{
    const char *arr = *(char *const *)(const void *)(base + t->off);
    avro_value_t el;
    int err, is_new;

    if (n && !arr)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: %zu items but no array", t->name, n);
    if (t->max && n > t->max)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "%s: %zu items, more than the limit of %zu", t->name, n, t->max);
    for (size_t i = 0; i < n; i++) {
        const char *item = arr + i * t->size, *key, *str;

        switch (t->kind) {
        case F_ARR_REC:
            if (avro_value_append(f, &el, NULL))
                return avro_fail(errstr, size, t->name, "append");
            if ((err = wr_record(t->sub, &el, item, errstr, size))) {
                dlb_err_prepend(errstr, size, "%s[%zu].", t->name, i);
                return err;
            }
            break;
        case F_ARR_STR:
            if (!(str = *(char *const *)(const void *)item))
                return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s[%zu]: NULL string", t->name,
                                  i);
            if (avro_value_append(f, &el, NULL) || avro_value_set_string(&el, str))
                return avro_fail(errstr, size, t->name, "append");
            break;
        case F_ARR_LONG:
            if (avro_value_append(f, &el, NULL) ||
                avro_value_set_long(&el, *(const int64_t *)(const void *)item))
                return avro_fail(errstr, size, t->name, "append");
            break;
        case F_MAP_STR:
        case F_MAP_LONG:
            key = *(char *const *)(const void *)(item + t->koff);
            str = t->kind == F_MAP_STR ? *(char *const *)(const void *)(item + t->voff) : "";
            if (!key || !str)
                return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s[%zu]: NULL key or value",
                                  t->name, i);
            if (avro_value_add(f, key, &el, NULL, &is_new))
                return avro_fail(errstr, size, t->name, "add");
            /* A second value would silently replace the first on the wire. */
            if (!is_new)
                return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s: key \"%s\" given twice",
                                  t->name, key);
            if (t->kind == F_MAP_STR
                    ? avro_value_set_string(&el, str)
                    : avro_value_set_long(&el, *(const int64_t *)(const void *)(item + t->voff)))
                return avro_fail(errstr, size, t->name, "add");
            break;
        default:
            return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: bad field kind", t->name);
        }
    }
    return 0;
}

static int wr_value(const fdesc_t *t, avro_value_t *f, const char *base, char *errstr, size_t size)
{
    const char *p = base + t->off, *text;
    int err;

    switch (t->kind) {
    case F_STR:
        if (strnlen(p, t->size) == t->size)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "%s: not NUL-terminated within its %zu bytes", t->name, t->size);
        if (avro_value_set_string(f, p))
            return avro_fail(errstr, size, t->name, "set string");
        return 0;
    case F_TEXT:
        text = *(char *const *)(const void *)p;
        if (!text)
            text = "";
        if (strlen(text) > t->max)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                              "%s: %zu bytes long, more than the limit of %zu", t->name,
                              strlen(text), t->max);
        if (avro_value_set_string(f, text))
            return avro_fail(errstr, size, t->name, "set string");
        return 0;
    case F_LONG:
        if (avro_value_set_long(f, *(const int64_t *)(const void *)p))
            return avro_fail(errstr, size, t->name, "set long");
        return 0;
    case F_INT:
        if (avro_value_set_int(f, *(const int32_t *)(const void *)p))
            return avro_fail(errstr, size, t->name, "set int");
        return 0;
    case F_DOUBLE:
        if (avro_value_set_double(f, *(const double *)(const void *)p))
            return avro_fail(errstr, size, t->name, "set double");
        return 0;
    case F_BOOL:
        if (avro_value_set_boolean(f, *(const int *)(const void *)p != 0))
            return avro_fail(errstr, size, t->name, "set boolean");
        return 0;
    case F_REC:
        if ((err = wr_record(t->sub, f, p, errstr, size)))
            dlb_err_prepend(errstr, size, "%s.", t->name);
        return err;
    default:
        return wr_list(t, f, base, *(const size_t *)(const void *)(base + t->cnt_off), errstr,
                       size);
    }
}

static int wr_record(const fdesc_t *t, avro_value_t *rec, const char *base, char *errstr,
                     size_t size)
{
    for (; t->name; t++) {
        avro_value_t f, b;
        int err;

        if (avro_value_get_by_name(rec, t->name, &f, NULL))
            return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "%s: not in the schema", t->name);
        if (t->opt) {
            int present = *(const int *)(const void *)(base + t->has_off) != 0;
            if ((err = set_optional(&f, present, &b, t->name, errstr, size)))
                return err;
            if (!present)
                continue;
            f = b;
        }
        if ((err = wr_value(t, &f, base, errstr, size)))
            return err;
    }
    return 0;
}

int dlb_codec_to_avro(const dlb_event_t *ev, avro_value_t *rec, char *errstr, size_t errstr_size)
{
    if (ev->type <= DLB_EV_NONE || ev->type >= DLB_EV__CNT)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "type: unknown event type %d",
                          (int)ev->type);
    return wr_record(type_fields[ev->type], rec, (const char *)&ev->u, errstr, errstr_size);
}

int dlb_codec_value_new(const dlb_catalog_t *cat, const dlb_event_t *ev,
                        const dlb_schema_entry_t **entry, avro_value_t *v, char *errstr,
                        size_t errstr_size)
{
    const dlb_schema_entry_t *e = dlb_catalog_latest(cat, ev->type);
    int err;

    if (!e)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "no schema for event type %d in the catalog", (int)ev->type);
    if (avro_generic_value_new(e->iface, v))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "%s", avro_strerror());
    if ((err = dlb_codec_to_avro(ev, v, errstr, errstr_size))) {
        avro_value_decref(v);
        return err;
    }
    if (entry)
        *entry = e;
    return 0;
}
