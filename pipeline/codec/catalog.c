#include "catalog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "codec_internal.h"
#include "embedded.h"
#include "err.h"
#include "vec.h"

#define CATALOG_FILE "catalog.tsv"
/* A schema file is a few KiB; this only stops a wrong path from eating memory. */
#define SCHEMA_FILE_MAX   (4 * 1024 * 1024)
#define PROJECT_DEPTH_MAX 64

/* The record each event type's schema must hold: Avro resolution matches
 * records by name, so a renamed record could never read older data anyway. */
static const char *const type_records[DLB_EV__CNT] = {
    [DLB_EV_JOB] = "JobEvent",
    [DLB_EV_RUNTIME] = "RuntimeSample",
    [DLB_EV_NODE] = "NodeEvent",
    [DLB_EV_PLAN_REQUEST] = "PlanRequest",
    [DLB_EV_PLAN] = "Plan",
    [DLB_EV_CONFIG_MATCH] = "ConfigMatch",
    [DLB_EV_CONFIG_REQUEST] = "ConfigRequest",
};

typedef struct record_json {
    const char *name;    /* short name, inside tree */
    const cJSON *fields; /* the "fields" array */
} record_json_t;

typedef struct schema_priv {
    int line; /* of catalog.tsv, for messages */
    cJSON *tree;
    record_json_t *records;
    size_t records_cnt;
    avro_schema_t proj; /* newest schema minus fields this writer lacks */
    avro_value_iface_t *proj_iface;
} schema_priv_t;

struct dlb_catalog {
    dlb_schema_entry_t *entries; /* sorted by id */
    schema_priv_t *priv;         /* parallel to entries */
    size_t cnt;
    const dlb_schema_entry_t *latest[DLB_EV__CNT];
    char known[96];
    dlb_catalog_wire_t *wire; /* its wire ids: the process's, or a library's own */
};

typedef struct source {
    const char *dir; /* NULL: the embedded table */
} source_t;

avro_schema_t dlb_avro_deref(avro_schema_t s)
{
    while (is_avro_link(s))
        s = avro_schema_link_target(s);
    return s;
}

int dlb_avro_union_branch(avro_schema_t u, int want_null)
{
    u = dlb_avro_deref(u);
    if (!is_avro_union(u))
        return -1;
    for (size_t i = 0; i < avro_schema_union_size(u); i++)
        if (is_avro_null(dlb_avro_deref(avro_schema_union_branch(u, (int)i))) == !!want_null)
            return (int)i;
    return -1;
}

/* Reads a file of the catalog into a NUL-terminated malloc'ed buffer. */
static int source_read(const source_t *src, const char *name, char **data, size_t *len,
                       char *errstr, size_t errstr_size)
{
    char path[4096];
    FILE *f = NULL;
    long size;
    int err = 0;

    *data = NULL;
    if (!src->dir) {
        const dlb_embedded_t *e = dlb_embedded_find(dlb_embedded_schemas, name);
        if (!e)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                              "%s is not embedded in this binary", name);
        if (!(*data = malloc(e->len + 1)))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        memcpy(*data, e->data, e->len);
        (*data)[e->len] = '\0';
        *len = e->len;
        return 0;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", src->dir, name) >= sizeof(path))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s/%s: path too long", src->dir,
                          name);
    if (!(f = fopen(path, "rb")))
        return dlb_seterr(errstr, errstr_size, errno == ENOENT ? DLB_ERR_NOTFOUND : DLB_ERR_CONF,
                          "%s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (size > SCHEMA_FILE_MAX) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s: %ld bytes, larger than %d", path,
                         size, SCHEMA_FILE_MAX);
        goto out;
    }
    if (!(*data = malloc((size_t)size + 1))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (fread(*data, 1, (size_t)size, f) != (size_t)size) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s: short read", path);
        goto out;
    }
    (*data)[size] = '\0';
    *len = (size_t)size;
out:
    if (err) {
        free(*data);
        *data = NULL;
    }
    fclose(f);
    return err;
}

/* Every record definition in a schema's JSON, for field defaults. */
static int collect_records(schema_priv_t *p, const cJSON *node)
{
    const cJSON *child;

    if (cJSON_IsObject(node)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(node, "type");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(node, "name");
        const cJSON *fields = cJSON_GetObjectItemCaseSensitive(node, "fields");
        if (cJSON_IsString(type) && !strcmp(type->valuestring, "record") && cJSON_IsString(name) &&
            cJSON_IsArray(fields)) {
            record_json_t *r = dlb_vec_push((void **)&p->records, &p->records_cnt, sizeof(*r));
            const char *dot = strrchr(name->valuestring, '.');
            if (!r)
                return DLB_ERR_NOMEM;
            r->name = dot ? dot + 1 : name->valuestring;
            r->fields = fields;
        }
    }
    if (cJSON_IsObject(node) || cJSON_IsArray(node))
        cJSON_ArrayForEach(child, node)
        {
            int err = collect_records(p, child);
            if (err)
                return err;
        }
    return 0;
}

static const schema_priv_t *priv_of(const dlb_catalog_t *cat, const dlb_schema_entry_t *e)
{
    return &cat->priv[e - cat->entries];
}

const cJSON *dlb_catalog_field_default(const dlb_catalog_t *cat, const dlb_schema_entry_t *e,
                                       const char *record_name, const char *field)
{
    const schema_priv_t *p = priv_of(cat, e);
    const cJSON *f;

    if (!record_name)
        return NULL;
    for (size_t i = 0; i < p->records_cnt; i++) {
        if (strcmp(p->records[i].name, record_name))
            continue;
        cJSON_ArrayForEach(f, p->records[i].fields)
        {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
            if (cJSON_IsString(name) && !strcmp(name->valuestring, field))
                return cJSON_GetObjectItemCaseSensitive(f, "default");
        }
    }
    return NULL;
}

avro_value_iface_t *dlb_catalog_projection(const dlb_catalog_t *cat, const dlb_schema_entry_t *e)
{
    return priv_of(cat, e)->proj_iface;
}

/* ---- projection of the newest schema onto an older writer -------------- */

typedef struct proj_ctx {
    const dlb_catalog_t *cat;
    const dlb_schema_entry_t *reader; /* the newest entry: its defaults count */
    char *errstr;
    size_t errstr_size;
} proj_ctx_t;

static int same_kind(avro_schema_t a, avro_schema_t b)
{
    if (avro_typeof(a) != avro_typeof(b))
        return 0;
    if (is_avro_named_type(a))
        return !strcmp(avro_schema_name(a), avro_schema_name(b));
    return 1;
}

/* The part of writer schema w that reader schema r reads from, or NULL. */
static avro_schema_t counterpart(avro_schema_t r, avro_schema_t w)
{
    w = dlb_avro_deref(w);
    if (same_kind(r, w))
        return w;
    if (is_avro_union(w))
        for (size_t i = 0; i < avro_schema_union_size(w); i++) {
            avro_schema_t b = dlb_avro_deref(avro_schema_union_branch(w, (int)i));
            if (same_kind(r, b))
                return b;
        }
    return NULL;
}

/* Builds r without the record fields w lacks (each must have a default), as
 * a new reference in *out. Where w does not match r at all, r is kept as is
 * and avro_resolved_writer_new() reports the incompatibility. */
static int project(const proj_ctx_t *pc, avro_schema_t r, avro_schema_t w, avro_schema_t *out,
                   int depth)
{
    avro_schema_t wc, sub, np = NULL;
    int err = 0;

    r = dlb_avro_deref(r);
    if (depth > PROJECT_DEPTH_MAX)
        return dlb_seterr(pc->errstr, pc->errstr_size, DLB_ERR_CONF, "schema nested too deep");
    wc = counterpart(r, w);
    if (!wc) {
        *out = avro_schema_incref(r);
        return 0;
    }
    switch (avro_typeof(r)) {
    case AVRO_RECORD:
        if (!(np = avro_schema_record(avro_schema_name(r), avro_schema_namespace(r))))
            goto nomem;
        for (size_t i = 0; i < avro_schema_record_size(r); i++) {
            const char *fname = avro_schema_record_field_name(r, (int)i);
            /* avro_schema_record_field_get() reads garbage for a missing field. */
            int wi = avro_schema_record_field_get_index(wc, fname);
            if (wi < 0) {
                if (!dlb_catalog_field_default(pc->cat, pc->reader, avro_schema_name(r), fname)) {
                    err = dlb_seterr(pc->errstr, pc->errstr_size, DLB_ERR_CONF,
                                     "field %s.%s of the newer schema has no default, and this "
                                     "schema lacks it",
                                     avro_schema_name(r), fname);
                    goto out;
                }
                continue;
            }
            if ((err = project(pc, avro_schema_record_field_get_by_index(r, (int)i),
                               avro_schema_record_field_get_by_index(wc, wi), &sub, depth + 1)))
                goto out;
            err = avro_schema_record_field_append(np, fname, sub);
            avro_schema_decref(sub);
            if (err)
                goto avro_fail;
        }
        break;
    case AVRO_ARRAY:
        if ((err = project(pc, avro_schema_array_items(r), avro_schema_array_items(wc), &sub,
                           depth + 1)))
            goto out;
        np = avro_schema_array(sub);
        avro_schema_decref(sub);
        if (!np)
            goto nomem;
        break;
    case AVRO_MAP:
        if ((err = project(pc, avro_schema_map_values(r), avro_schema_map_values(wc), &sub,
                           depth + 1)))
            goto out;
        np = avro_schema_map(sub);
        avro_schema_decref(sub);
        if (!np)
            goto nomem;
        break;
    case AVRO_UNION:
        /* Branches stay in the reader's order, so discriminants of the
         * projection are those of the newest schema. */
        if (!(np = avro_schema_union()))
            goto nomem;
        for (size_t i = 0; i < avro_schema_union_size(r); i++) {
            avro_schema_t b = dlb_avro_deref(avro_schema_union_branch(r, (int)i));
            avro_schema_t wb = counterpart(b, wc);
            if (wb) {
                if ((err = project(pc, b, wb, &sub, depth + 1)))
                    goto out;
            } else {
                sub = avro_schema_incref(b);
            }
            err = avro_schema_union_append(np, sub);
            avro_schema_decref(sub);
            if (err)
                goto avro_fail;
        }
        break;
    default:
        np = avro_schema_incref(r);
        break;
    }
    *out = np;
    return 0;
nomem:
    err = dlb_seterr(pc->errstr, pc->errstr_size, DLB_ERR_NOMEM, "out of memory");
    goto out;
avro_fail:
    err = dlb_seterr(pc->errstr, pc->errstr_size, DLB_ERR_CONF, "%s", avro_strerror());
out:
    if (np)
        avro_schema_decref(np);
    return err;
}

/* ---- wire ids ---------------------------------------------------------- */

/* A table of wire ids: the process's (dlb_catalog_wire_install), or one of a
 * library's own (dlb_catalog_wire_new), as the ids are a registry's, not a
 * catalog's. */
struct dlb_catalog_wire {
    pthread_mutex_t lock;
    int32_t (*assigned)[2]; /* {catalog id, wire id} */
    size_t assigned_cnt;
    int32_t (*seen)[2]; /* {wire id, catalog id, or 0: not one of dlbrain's} */
    size_t seen_cnt;
    dlb_catalog_resolve_fn resolve;
    void *opaque;
};

static dlb_catalog_wire_t process_wire = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, NULL, 0, NULL, NULL};

static int32_t wire_of(dlb_catalog_wire_t *w, int32_t id)
{
    int32_t wid = id;

    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->assigned_cnt; i++)
        if (w->assigned[i][0] == id)
            wid = w->assigned[i][1];
    pthread_mutex_unlock(&w->lock);
    return wid;
}

static void wire_clear(dlb_catalog_wire_t *w)
{
    pthread_mutex_lock(&w->lock);
    free(w->assigned);
    free(w->seen);
    w->assigned = w->seen = NULL;
    w->assigned_cnt = w->seen_cnt = 0;
    w->resolve = NULL;
    w->opaque = NULL;
    pthread_mutex_unlock(&w->lock);
}

/* Replace what w holds by ids (copied), resolve and opaque. */
static int wire_set(dlb_catalog_wire_t *w, const int32_t (*ids)[2], size_t n,
                    dlb_catalog_resolve_fn resolve, void *opaque, char *errstr, size_t errstr_size)
{
    int32_t(*copy)[2] = n ? malloc(n * sizeof(*copy)) : NULL;

    if (n && !copy)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if (n)
        memcpy(copy, ids, n * sizeof(*copy));
    wire_clear(w);
    pthread_mutex_lock(&w->lock);
    w->assigned = copy;
    w->assigned_cnt = n;
    w->resolve = resolve;
    w->opaque = opaque;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

void dlb_catalog_wire_reset(void)
{
    wire_clear(&process_wire);
}

int dlb_catalog_wire_install(const int32_t (*ids)[2], size_t n, dlb_catalog_resolve_fn resolve,
                             void *opaque, char *errstr, size_t errstr_size)
{
    return wire_set(&process_wire, ids, n, resolve, opaque, errstr, errstr_size);
}

int dlb_catalog_wire_new(dlb_catalog_wire_t **out, const int32_t (*ids)[2], size_t n,
                         dlb_catalog_resolve_fn resolve, void *opaque, char *errstr,
                         size_t errstr_size)
{
    dlb_catalog_wire_t *w;
    int err;

    *out = NULL;
    if (!(w = calloc(1, sizeof(*w))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&w->lock, NULL);
    if ((err = wire_set(w, ids, n, resolve, opaque, errstr, errstr_size))) {
        dlb_catalog_wire_destroy(w);
        return err;
    }
    *out = w;
    return 0;
}

void dlb_catalog_wire_destroy(dlb_catalog_wire_t *w)
{
    if (!w || w == &process_wire)
        return;
    wire_clear(w);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* What was learnt of wire_id before: 1 and *cid (0 = not dlbrain's), or 0. */
static int wire_seen(dlb_catalog_wire_t *w, int32_t wire_id, int32_t *cid)
{
    int found = 0;

    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->seen_cnt && !found; i++)
        if (w->seen[i][0] == wire_id) {
            *cid = w->seen[i][1];
            found = 1;
        }
    pthread_mutex_unlock(&w->lock);
    return found;
}

static void wire_remember(dlb_catalog_wire_t *w, int32_t wire_id, int32_t cid)
{
    int32_t(*slot)[2];
    int32_t known;

    if (wire_seen(w, wire_id, &known))
        return;
    pthread_mutex_lock(&w->lock);
    /* Out of memory only costs asking the registry again. */
    if ((slot = dlb_vec_push((void **)&w->seen, &w->seen_cnt, sizeof(*slot)))) {
        (*slot)[0] = wire_id;
        (*slot)[1] = cid;
    }
    pthread_mutex_unlock(&w->lock);
}

/* The catalog id whose schema equals the registry's text, or 0. */
static int32_t wire_match(const dlb_catalog_t *cat, const char *json)
{
    avro_schema_t s;
    int32_t cid = 0;

    if (avro_schema_from_json_length(json, strlen(json), &s))
        return 0;
    for (size_t i = 0; i < cat->cnt && !cid; i++)
        if (avro_schema_equal(s, cat->entries[i].schema))
            cid = cat->entries[i].id;
    avro_schema_decref(s);
    return cid;
}

int dlb_catalog_by_wire_id(const dlb_catalog_t *cat, int32_t wire_id,
                           const dlb_schema_entry_t **out, char *errstr, size_t errstr_size)
{
    dlb_catalog_wire_t *w = cat->wire;
    dlb_catalog_resolve_fn resolve;
    void *opaque;
    char sub[512], *json = NULL;
    int32_t cid;
    int err;

    *out = NULL;
    for (size_t i = 0; i < cat->cnt; i++)
        if (cat->entries[i].wire_id == wire_id) {
            *out = &cat->entries[i];
            return 0;
        }
    pthread_mutex_lock(&w->lock);
    resolve = w->resolve;
    opaque = w->opaque;
    pthread_mutex_unlock(&w->lock);
    if (!resolve)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_SCHEMA_ID,
                          "schema id %d is not in the catalog (known: %s)", (int)wire_id,
                          cat->known);
    if (!wire_seen(w, wire_id, &cid)) {
        if ((err = resolve(opaque, wire_id, &json, sub, sizeof(sub)))) {
            /* An outage says nothing of the record: the caller retries
             * (the stream rewinds its batch), nothing is remembered. */
            if (err != DLB_ERR_NOTFOUND)
                return dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                                  "schema id %d: the schema registry did not answer: %s",
                                  (int)wire_id, sub);
            cid = 0;
        } else {
            cid = wire_match(cat, json);
            free(json);
        }
        wire_remember(w, wire_id, cid);
    }
    if (cid && (*out = dlb_catalog_by_id(cat, cid)))
        return 0;
    return dlb_seterr(errstr, errstr_size, DLB_ERR_SCHEMA_ID,
                      "schema id %d is not one of dlbrain's schemas in the schema registry",
                      (int)wire_id);
}

/* ---- loading ----------------------------------------------------------- */

void dlb_catalog_destroy(dlb_catalog_t *cat)
{
    if (!cat)
        return;
    for (size_t i = 0; i < cat->cnt; i++) {
        dlb_schema_entry_t *e = &cat->entries[i];
        schema_priv_t *p = &cat->priv[i];
        if (e->resolver)
            avro_value_iface_decref(e->resolver);
        if (e->iface)
            avro_value_iface_decref(e->iface);
        if (e->schema)
            avro_schema_decref(e->schema);
        free(e->json);
        if (p->proj_iface)
            avro_value_iface_decref(p->proj_iface);
        if (p->proj)
            avro_schema_decref(p->proj);
        free(p->records);
        cJSON_Delete(p->tree);
    }
    free(cat->entries);
    free(cat->priv);
    free(cat);
}

/* Splits a catalog line into at most `max` whitespace-separated fields. */
static size_t split_fields(char *line, char **fields, size_t max)
{
    size_t n = 0;
    char *save = NULL, *tok;

    for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (n == max)
            return max + 1;
        fields[n++] = tok;
    }
    return n;
}

static int add_entry(dlb_catalog_t *cat, const source_t *src, int line, char **f, char *errstr,
                     size_t errstr_size)
{
    dlb_schema_entry_t *e;
    schema_priv_t *p;
    char *end, sub[512];
    const char *rec_name;
    long id;
    size_t len;
    int err;

    errno = 0;
    id = strtol(f[0], &end, 10);
    if (*end || errno || id <= 0 || id > INT32_MAX)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          CATALOG_FILE ":%d: id \"%s\" is not a positive 32-bit integer", line,
                          f[0]);
    for (size_t i = 0; i < cat->cnt; i++)
        if (cat->entries[i].id == (int32_t)id)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                              CATALOG_FILE ":%d: id %ld is already used on line %d", line, id,
                              cat->priv[i].line);
    if (dlb_event_type_parse(f[1]) == DLB_EV_NONE)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          CATALOG_FILE ":%d: unknown event type \"%s\"", line, f[1]);
    if (strlen(f[2]) >= sizeof(e->file) || strchr(f[2], '/') || f[2][0] == '.')
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          CATALOG_FILE ":%d: \"%s\" is not a plain schema file name", line, f[2]);

    e = realloc(cat->entries, (cat->cnt + 1) * sizeof(*e));
    if (!e)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    cat->entries = e;
    p = realloc(cat->priv, (cat->cnt + 1) * sizeof(*p));
    if (!p)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    cat->priv = p;
    e = &cat->entries[cat->cnt];
    p = &cat->priv[cat->cnt];
    memset(e, 0, sizeof(*e));
    memset(p, 0, sizeof(*p));
    cat->cnt++; /* from here on destroy() releases what the entry holds */

    e->id = (int32_t)id;
    e->type = dlb_event_type_parse(f[1]);
    snprintf(e->file, sizeof(e->file), "%s", f[2]);
    p->line = line;
    if ((err = source_read(src, e->file, &e->json, &len, sub, sizeof(sub))))
        return dlb_seterr(errstr, errstr_size, err == DLB_ERR_NOMEM ? err : DLB_ERR_CONF,
                          CATALOG_FILE ":%d: schema file missing: %s", line, sub);
    e->wire_id = wire_of(cat->wire, (int32_t)id);
    if (avro_schema_from_json_length(e->json, len, &e->schema))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, CATALOG_FILE ":%d: %s: %s", line,
                          e->file, avro_strerror());
    if (!is_avro_record(e->schema))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          CATALOG_FILE ":%d: %s: the top-level schema is not a record", line,
                          e->file);
    rec_name = avro_schema_name(e->schema);
    if (strcmp(rec_name, type_records[e->type]))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          CATALOG_FILE ":%d: %s: record %s is not a %s (expected record %s)", line,
                          e->file, rec_name, f[1], type_records[e->type]);
    if (!(p->tree = cJSON_ParseWithLength(e->json, len)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, CATALOG_FILE ":%d: %s: invalid JSON",
                          line, e->file);
    if (collect_records(p, p->tree))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if (!(e->iface = avro_generic_class_from_schema(e->schema)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, CATALOG_FILE ":%d: %s: %s", line,
                          e->file, avro_strerror());
    return 0;
}

static int cmp_entry_id(const void *a, const void *b)
{
    const dlb_schema_entry_t *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Sorts entries by id (keeping priv parallel), finds the newest of each type
 * and builds resolvers for the others. */
static int finish(dlb_catalog_t *cat, char *errstr, size_t errstr_size)
{
    dlb_schema_entry_t *sorted = NULL;
    schema_priv_t *psorted = NULL;
    size_t off = 0;
    int err = 0, contiguous = 1;

    if (!cat->cnt)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, CATALOG_FILE ": no schemas listed");
    /* Sort a copy to carry priv along: entries move, so sort indices. */
    {
        size_t *idx = malloc(cat->cnt * sizeof(*idx));
        sorted = malloc(cat->cnt * sizeof(*sorted));
        psorted = malloc(cat->cnt * sizeof(*psorted));
        if (!idx || !sorted || !psorted) {
            free(idx);
            free(sorted);
            free(psorted);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        }
        memcpy(sorted, cat->entries, cat->cnt * sizeof(*sorted));
        qsort(sorted, cat->cnt, sizeof(*sorted), cmp_entry_id);
        for (size_t i = 0; i < cat->cnt; i++)
            for (size_t j = 0; j < cat->cnt; j++)
                if (cat->entries[j].id == sorted[i].id)
                    idx[i] = j;
        for (size_t i = 0; i < cat->cnt; i++)
            psorted[i] = cat->priv[idx[i]];
        free(idx);
        free(cat->entries);
        free(cat->priv);
        cat->entries = sorted;
        cat->priv = psorted;
    }

    for (size_t i = 0; i < cat->cnt; i++)
        cat->latest[cat->entries[i].type] = &cat->entries[i]; /* ascending: last wins */

    for (size_t i = 0; i < cat->cnt; i++) {
        dlb_schema_entry_t *e = &cat->entries[i];
        schema_priv_t *p = &cat->priv[i];
        const dlb_schema_entry_t *newest = cat->latest[e->type];
        char sub[512];
        proj_ctx_t pc = {cat, newest, sub, sizeof(sub)};

        if (newest == e)
            continue;
        if ((err = project(&pc, newest->schema, e->schema, &p->proj, 0)))
            return dlb_seterr(errstr, errstr_size, err,
                              CATALOG_FILE ":%d: %s (id %d) cannot be read as id %d: %s", p->line,
                              e->file, (int)e->id, (int)newest->id, sub);
        if (!(e->resolver = avro_resolved_writer_new(e->schema, p->proj)))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                              CATALOG_FILE ":%d: %s (id %d) cannot be read as id %d: %s", p->line,
                              e->file, (int)e->id, (int)newest->id, avro_strerror());
        if (!(p->proj_iface = avro_generic_class_from_schema(p->proj)))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, CATALOG_FILE ":%d: %s: %s",
                              p->line, e->file, avro_strerror());
    }

    for (size_t i = 1; i < cat->cnt; i++)
        if (cat->entries[i].id != cat->entries[i - 1].id + 1)
            contiguous = 0;
    if (contiguous) {
        snprintf(cat->known, sizeof(cat->known), "%d..%d", (int)cat->entries[0].id,
                 (int)cat->entries[cat->cnt - 1].id);
    } else {
        for (size_t i = 0; i < cat->cnt && off < sizeof(cat->known); i++)
            off += (size_t)snprintf(cat->known + off, sizeof(cat->known) - off, "%s%d",
                                    i ? ", " : "", (int)cat->entries[i].id);
    }
    return 0;
}

static int load(dlb_catalog_t **out, const source_t *src, dlb_catalog_wire_t *wire, char *errstr,
                size_t errstr_size)
{
    dlb_catalog_t *cat;
    char *text = NULL, *line, *next;
    size_t len;
    int err, lineno = 0;

    *out = NULL;
    if (!(cat = calloc(1, sizeof(*cat))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    cat->wire = wire ? wire : &process_wire;
    if ((err = source_read(src, CATALOG_FILE, &text, &len, errstr, errstr_size))) {
        if (err != DLB_ERR_NOMEM)
            err = DLB_ERR_CONF;
        goto out;
    }
    for (line = text; line; line = next) {
        char *fields[4];
        size_t n;

        lineno++;
        if ((next = strchr(line, '\n')))
            *next++ = '\0';
        line[strcspn(line, "\r#")] = '\0'; /* comments may also follow a line */
        n = split_fields(line, fields, 3);
        if (n == 0)
            continue;
        if (n != 3) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                             CATALOG_FILE ":%d: expected 3 tab-separated fields (id, type, "
                                          "file), got %zu",
                             lineno, n > 3 ? (size_t)4 : n);
            goto out;
        }
        if ((err = add_entry(cat, src, lineno, fields, errstr, errstr_size)))
            goto out;
    }
    if ((err = finish(cat, errstr, errstr_size)))
        goto out;
    *out = cat;
out:
    free(text);
    if (err)
        dlb_catalog_destroy(cat);
    return err;
}

int dlb_catalog_new(dlb_catalog_t **out, char *errstr, size_t errstr_size)
{
    const source_t src = {NULL};
    return load(out, &src, NULL, errstr, errstr_size);
}

int dlb_catalog_new_wire(dlb_catalog_t **out, dlb_catalog_wire_t *wire, char *errstr,
                         size_t errstr_size)
{
    const source_t src = {NULL};
    return load(out, &src, wire, errstr, errstr_size);
}

int dlb_catalog_load_dir(dlb_catalog_t **out, const char *dir, char *errstr, size_t errstr_size)
{
    const source_t src = {dir};
    return load(out, &src, NULL, errstr, errstr_size);
}

const dlb_schema_entry_t *dlb_catalog_by_id(const dlb_catalog_t *cat, int32_t id)
{
    size_t lo = 0, hi = cat->cnt;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cat->entries[mid].id == id)
            return &cat->entries[mid];
        if (cat->entries[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const dlb_schema_entry_t *dlb_catalog_latest(const dlb_catalog_t *cat, dlb_event_type_t type)
{
    if (type <= DLB_EV_NONE || type >= DLB_EV__CNT)
        return NULL;
    return cat->latest[type];
}

size_t dlb_catalog_count(const dlb_catalog_t *cat)
{
    return cat->cnt;
}

const dlb_schema_entry_t *dlb_catalog_at(const dlb_catalog_t *cat, size_t i)
{
    return i < cat->cnt ? &cat->entries[i] : NULL;
}
