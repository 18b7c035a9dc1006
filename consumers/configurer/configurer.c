/* The configurer role (configurer.h): job events and config requests in,
 * config matches out. The stream (pipeline/stream/stream.h) does the ordering and
 * the exactly-once delivery; this file says what an event means here.
 *
 * Per job, the configurer keeps only the job's attributes (its merged meta)
 * in Redis under <env>:job:<uid>:cfg, written by no other role: the
 * optimizer's job state is read-modify-written by the optimizer alone, one
 * consumer per job, and a second writer could lose its updates. A miss is
 * rebuilt from the job events in PostgreSQL, which both roles store
 * (idempotently). */
#include "configurer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "codec.h"
#include "err.h"
#include "id.h"
#include "latency.h"
#include "log.h"
#include "matcher.h"
#include "store_config.h"
#include "store_pg.h"
#include "vec.h"

#define JOB_TTL_S 604800 /* a job's attributes live as long as its other keys (7 days) */

typedef struct cfg_state {
    dlb_matcher_t *m; /* compiled rules of version */
    int64_t version;  /* 0: none applied yet (no rule matches) */
    int64_t checked_at;
    int64_t cache_hits, cache_misses;
} cfg_state_t;

/* ---- rules version --------------------------------------------------------- */

/* Look for a new version every config.refresh.ms. A version that cannot be
 * loaded or compiled leaves the current one in force (and says so): matching
 * goes on with what worked. */
static int refresh(dlb_stream_t *s, char *errstr, size_t size)
{
    cfg_state_t *cs = dlb_stream_opaque(s);
    const dlb_conf_t *conf = dlb_stream_conf(s);
    dlb_cfg_version_t v;
    dlb_rules_t rules = {0};
    dlb_matcher_t *m = NULL;
    int64_t now = dlb_lat_clock_ns() / 1000000, loaded = 0;
    char sub[512];

    (void)errstr;
    (void)size;
    if (cs->m && now - cs->checked_at < conf->config_refresh_ms)
        return 0;
    cs->checked_at = now;
    if (dlb_cfg_latest(dlb_stream_pg(s), &v, sub, sizeof(sub))) {
        dlb_warn("configurer: looking for a new rules version: %s; matching with version %" PRId64
                 " until it can",
                 sub, cs->version);
        if (!cs->m && dlb_matcher_new(&cs->m, &rules, sub, sizeof(sub)))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "configurer: %s", sub);
        return 0;
    }
    if (cs->m && v.version == cs->version)
        return 0;
    if (v.version > 0 &&
        dlb_cfg_load(dlb_stream_pg(s), v.version, &rules, &loaded, sub, sizeof(sub))) {
        dlb_warn("configurer: loading rules version %" PRId64 ": %s; still matching with version "
                 "%" PRId64,
                 v.version, sub, cs->version);
        return 0;
    }
    if (dlb_matcher_new(&m, &rules, sub, sizeof(sub))) {
        dlb_err("configurer: rules version %" PRId64 " cannot be compiled: %s; still matching with "
                "version %" PRId64,
                v.version, sub, cs->version);
        dlb_rules_clear(&rules);
        return 0;
    }
    dlb_info("configurer: rules version %" PRId64 " in force (%zu rules)%s", v.version, rules.cnt,
             cs->m ? "" : " at start");
    dlb_rules_clear(&rules);
    dlb_matcher_destroy(cs->m);
    cs->m = m;
    cs->version = v.version;
    return 0;
}

/* ---- the job's attributes -------------------------------------------------- */

/* The cached attributes: {"t": time, "id": event id, "meta": {...}} of the
 * newest job event that carried meta. */
typedef struct attrs {
    int64_t t;
    char id[DLB_ID_MAX];
    dlb_job_meta_t meta;
    int known; /* some job event carried meta */
} attrs_t;

static char *attrs_to_json(const attrs_t *a)
{
    cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
    char *s = NULL;

    if (!o || !m || !cJSON_AddItemToObject(o, "meta", m)) {
        cJSON_Delete(o);
        if (!o || !m)
            cJSON_Delete(m);
        return NULL;
    }
    if (cJSON_AddNumberToObject(o, "t", (double)a->t) && cJSON_AddStringToObject(o, "id", a->id)) {
        size_t i;

        for (i = 0; i < DLB_META_ATTRS; i++)
            if (!cJSON_AddStringToObject(m, dlb_meta_attr_names[i], dlb_meta_attr_c(&a->meta, i)))
                break;
        if (i == DLB_META_ATTRS)
            s = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(o);
    return s;
}

/* @returns 1 when the text is a well-formed entry (else the entry is ignored
 * and rebuilt: a cache never fails a match). */
static int attrs_from_json(const char *text, attrs_t *a)
{
    cJSON *o = cJSON_Parse(text);
    const cJSON *t, *id, *m;
    int ok = 0;

    memset(a, 0, sizeof(*a));
    if (o && cJSON_IsNumber(t = cJSON_GetObjectItemCaseSensitive(o, "t")) &&
        cJSON_IsString(id = cJSON_GetObjectItemCaseSensitive(o, "id")) &&
        cJSON_IsObject(m = cJSON_GetObjectItemCaseSensitive(o, "meta"))) {
        ok = 1;
        a->t = (int64_t)t->valuedouble;
        snprintf(a->id, sizeof(a->id), "%s", id->valuestring);
        for (size_t i = 0; i < DLB_META_ATTRS && ok; i++) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(m, dlb_meta_attr_names[i]);

            if (!cJSON_IsString(f) || strlen(f->valuestring) >= DLB_NAME_MAX)
                ok = 0;
            else
                snprintf(dlb_meta_attr(&a->meta, i), DLB_NAME_MAX, "%s", f->valuestring);
        }
        a->known = ok;
    }
    cJSON_Delete(o);
    return ok;
}

static void attrs_key(const char *job_uid, char *buf, size_t size)
{
    snprintf(buf, size, "job:%s:cfg", job_uid);
}

/* The job's attributes: Redis, else rebuilt from its job events in
 * PostgreSQL (this batch's included: same transaction) and cached again. */
static int load_attrs(dlb_stream_t *s, const char *job_uid, attrs_t *a, char *errstr, size_t size)
{
    dlb_redis_t *r = dlb_stream_redis(s);
    dlb_job_state_t st = {0};
    char key[DLB_ID_MAX + 16], sub[512], *val = NULL, *json;
    size_t len;
    int found = 0, err;

    attrs_key(job_uid, key, sizeof(key));
    if (r) {
        if (dlb_redis_get(r, key, &val, &len, &found, sub, sizeof(sub))) {
            dlb_stream_redis_down(s, "reading a job's attributes", sub);
            found = 0;
        }
        if (found && attrs_from_json(val, a)) {
            free(val);
            return 0;
        }
        free(val);
    }
    memset(a, 0, sizeof(*a));
    if ((err = dlb_pg_load_job_state(dlb_stream_pg(s), job_uid, 1, &st, errstr, size)))
        return err;
    if (st.job.has_meta) {
        a->known = 1;
        a->meta = st.job.meta;
        a->t = st.job.event_time_ms;
        snprintf(a->id, sizeof(a->id), "%s", st.job.event_id);
    }
    dlb_job_state_clear(&st);
    if ((r = dlb_stream_redis(s)) && (json = attrs_to_json(a))) {
        if (dlb_redis_set(r, key, json, strlen(json), JOB_TTL_S, sub, sizeof(sub)))
            dlb_stream_redis_down(s, "caching a job's attributes", sub);
        free(json);
    }
    return 0;
}

/* Fold a job event's meta into the cached attributes: the newest (event
 * time, event id) wins, as in the job-state fold. */
static int fold_attrs(dlb_stream_t *s, const dlb_job_event_t *ev, attrs_t *a, char *errstr,
                      size_t size)
{
    dlb_redis_t *r;
    char key[DLB_ID_MAX + 16], sub[512], *json;
    int err;

    if ((err = load_attrs(s, ev->job_uid, a, errstr, size)))
        return err;
    if (a->known && (a->t > ev->event_time_ms ||
                     (a->t == ev->event_time_ms && strcmp(a->id, ev->event_id) >= 0)))
        return 0; /* a newer (or this) meta is in already */
    a->known = 1;
    a->meta = ev->meta;
    a->t = ev->event_time_ms;
    snprintf(a->id, sizeof(a->id), "%s", ev->event_id);
    if ((r = dlb_stream_redis(s)) && (json = attrs_to_json(a))) {
        attrs_key(ev->job_uid, key, sizeof(key));
        if (dlb_redis_set(r, key, json, strlen(json), JOB_TTL_S, sub, sizeof(sub)))
            dlb_stream_redis_down(s, "caching a job's attributes", sub);
        free(json);
    }
    return 0;
}

/* ---- matching, through the Redis cache -------------------------------------- */

/* The attributes as one unambiguous string (length-prefixed fields): what a
 * cached match is checked against, since its key holds only a hash. */
static void attrs_canon(const dlb_job_meta_t *m, char *buf, size_t size)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < DLB_META_ATTRS && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%zu:%s;", strlen(dlb_meta_attr_c(m, i)),
                              dlb_meta_attr_c(m, i));
}

/* FNV-1a, 64 bits: a short key; a collision is caught by the stored canon. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* Drop rule ids and values (a cache entry that did not parse to the end). */
static void match_values_clear(dlb_config_match_t *cm)
{
    for (size_t i = 0; i < cm->rule_ids_cnt; i++)
        free(cm->rule_ids[i]);
    free(cm->rule_ids);
    for (size_t i = 0; i < cm->values_cnt; i++) {
        free(cm->values[i].key);
        free(cm->values[i].json);
    }
    free(cm->values);
    cm->rule_ids = NULL;
    cm->values = NULL;
    cm->rule_ids_cnt = cm->values_cnt = 0;
}

static int add_str(char ***arr, size_t *cnt, const char *s)
{
    char *d = strdup(s), **p;

    if (!d || !(p = dlb_vec_push((void **)arr, cnt, sizeof(**arr)))) {
        free(d);
        return DLB_ERR_NOMEM;
    }
    *p = d;
    return 0;
}

static int add_value(dlb_config_match_t *cm, const char *key, const char *json)
{
    dlb_config_value_t *p = dlb_vec_push((void **)&cm->values, &cm->values_cnt, sizeof(*p));

    if (!p)
        return DLB_ERR_NOMEM;
    p->key = strdup(key);
    p->json = strdup(json);
    return p->key && p->json ? 0 : DLB_ERR_NOMEM;
}

/* {"a": canon, "r": [rule ids], "v": [[key, json], ...]} */
static char *result_to_json(const char *canon, const dlb_config_match_t *cm)
{
    cJSON *o = cJSON_CreateObject(), *r, *v;
    char *s = NULL;
    size_t i;

    if (!o || !cJSON_AddStringToObject(o, "a", canon) || !(r = cJSON_AddArrayToObject(o, "r")) ||
        !(v = cJSON_AddArrayToObject(o, "v")))
        goto out;
    for (i = 0; i < cm->rule_ids_cnt; i++)
        if (!cJSON_AddItemToArray(r, cJSON_CreateString(cm->rule_ids[i])))
            goto out;
    for (i = 0; i < cm->values_cnt; i++) {
        cJSON *pair = cJSON_CreateArray();

        if (!pair || !cJSON_AddItemToArray(v, pair) ||
            !cJSON_AddItemToArray(pair, cJSON_CreateString(cm->values[i].key)) ||
            !cJSON_AddItemToArray(pair, cJSON_CreateString(cm->values[i].json)))
            goto out;
    }
    s = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    return s;
}

/* @returns 1 when text is the cached result for canon, filling cm. */
static int result_from_json(const char *text, const char *canon, dlb_config_match_t *cm)
{
    cJSON *o = cJSON_Parse(text);
    const cJSON *a, *r, *v, *it;
    int ok = 0;

    if (!o || !cJSON_IsString(a = cJSON_GetObjectItemCaseSensitive(o, "a")) ||
        strcmp(a->valuestring, canon) ||
        !cJSON_IsArray(r = cJSON_GetObjectItemCaseSensitive(o, "r")) ||
        !cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(o, "v")))
        goto out;
    cJSON_ArrayForEach(it, r)
    {
        if (!cJSON_IsString(it) || add_str(&cm->rule_ids, &cm->rule_ids_cnt, it->valuestring))
            goto out;
    }
    cJSON_ArrayForEach(it, v)
    {
        const cJSON *k = cJSON_GetArrayItem(it, 0), *j = cJSON_GetArrayItem(it, 1);

        if (!cJSON_IsString(k) || !cJSON_IsString(j) ||
            add_value(cm, k->valuestring, j->valuestring))
            goto out;
    }
    ok = 1;
out:
    cJSON_Delete(o);
    return ok;
}

/* Fill cm's rules_version, rule_ids and values for meta: from the Redis
 * cache when the same attributes were matched against this version before,
 * else from the matcher (and cached). Redis being down only costs the match. */
static int match(dlb_stream_t *s, const dlb_job_meta_t *meta, dlb_config_match_t *cm)
{
    cfg_state_t *cs = dlb_stream_opaque(s);
    dlb_redis_t *r = dlb_stream_redis(s);
    char canon[8 * (DLB_NAME_MAX + 24)], key[96], sub[512], *val = NULL, *json;
    dlb_match_t res;
    size_t len, i;
    int found = 0, err;

    cm->rules_version = cs->version;
    attrs_canon(meta, canon, sizeof(canon));
    snprintf(key, sizeof(key), "cfg:%" PRId64 ":%016" PRIx64, cs->version, fnv1a(canon));
    if (r) {
        if (dlb_redis_get(r, key, &val, &len, &found, sub, sizeof(sub))) {
            dlb_stream_redis_down(s, "reading a cached match", sub);
            found = 0;
        }
        if (found && result_from_json(val, canon, cm)) {
            free(val);
            cs->cache_hits++;
            return 0;
        }
        free(val);
        match_values_clear(cm);
    }
    cs->cache_misses++;
    if ((err = dlb_matcher_match(cs->m, meta, &res)))
        return err;
    for (i = 0; i < res.rule_ids_cnt; i++)
        if ((err = add_str(&cm->rule_ids, &cm->rule_ids_cnt, res.rule_ids[i])))
            return err;
    for (i = 0; i < res.values_cnt; i++)
        if ((err = add_value(cm, res.values[i].key, res.values[i].json)))
            return err;
    if ((r = dlb_stream_redis(s)) && (json = result_to_json(canon, cm))) {
        if (dlb_redis_set(r, key, json, strlen(json), dlb_stream_conf(s)->config_cache_ttl_s, sub,
                          sizeof(sub)))
            dlb_stream_redis_down(s, "caching a match", sub);
        free(json);
    }
    return 0;
}

/* ---- answering -------------------------------------------------------------- */

void dlb_config_match_id(const char *trigger_id, char *buf, size_t size)
{
    dlb_id_derive("cfg-", trigger_id, buf, size);
}

/* Answer the trigger (a job event with meta, or a config request) with the
 * match of meta: the stored answer when the trigger was answered before (a
 * redelivery re-sends the same bytes), else a new one, stored and sent. */
static int answer(dlb_stream_t *s, const char *trigger_id, int64_t time_ms, const char *job_uid,
                  const dlb_job_meta_t *meta, char *errstr, size_t size)
{
    dlb_event_t me = {.type = DLB_EV_CONFIG_MATCH};
    dlb_config_match_t *cm = &me.u.cm;
    dlb_pg_t *pg = dlb_stream_pg(s);
    void *buf = NULL;
    size_t len = 0;
    int err;

    dlb_config_match_id(trigger_id, cm->event_id, sizeof(cm->event_id));
    if ((err = dlb_cfg_get_match(pg, job_uid, cm->event_id, &buf, &len, errstr, size)))
        goto out;
    if (buf) {
        dlb_info("config %s for job %s exists already; sending it again", cm->event_id, job_uid);
        err = dlb_stream_emit(s, job_uid, buf, len);
        buf = NULL;
        goto out;
    }
    cm->event_time_ms = time_ms;
    snprintf(cm->job_uid, sizeof(cm->job_uid), "%s", job_uid);
    snprintf(cm->trigger_event_id, sizeof(cm->trigger_event_id), "%s", trigger_id);
    if ((err = match(s, meta, cm))) {
        dlb_seterr(errstr, size, err, "matching %s: out of memory", trigger_id);
        goto out;
    }
    if ((err = dlb_codec_encode(dlb_stream_catalog(s), &me, &buf, &len, errstr, size)) ||
        (err = dlb_cfg_put_match(pg, cm, buf, len, errstr, size)))
        goto out;
    dlb_info("config %s for job %s: rules version %" PRId64 ", %zu rule(s)%s%s, %zu value(s)",
             cm->event_id, job_uid, cm->rules_version, cm->rule_ids_cnt,
             cm->rule_ids_cnt ? " first " : "", cm->rule_ids_cnt ? cm->rule_ids[0] : "",
             cm->values_cnt);
    err = dlb_stream_emit(s, job_uid, buf, len);
    buf = NULL;
out:
    free(buf);
    dlb_event_clear(&me);
    return err;
}

static int is_request(const dlb_event_t *ev)
{
    return ev->type == DLB_EV_CONFIG_REQUEST;
}

static int accepts(const dlb_event_t *ev)
{
    return ev->type == DLB_EV_JOB || ev->type == DLB_EV_CONFIG_REQUEST;
}

static int process(dlb_stream_t *s, const dlb_event_t *ev, const void *raw, size_t raw_len,
                   char *errstr, size_t size)
{
    attrs_t a;
    int err;

    if (ev->type == DLB_EV_JOB) {
        /* PostgreSQL only: the optimizer's Redis job state is the optimizer's. */
        if ((err = dlb_pg_put_event(dlb_stream_pg(s), ev, raw, raw_len, errstr, size)))
            return err;
        if (!ev->u.job.has_meta)
            return 0;
        if ((err = fold_attrs(s, &ev->u.job, &a, errstr, size)))
            return err;
        return answer(s, ev->u.job.event_id, ev->u.job.event_time_ms, ev->u.job.job_uid, &a.meta,
                      errstr, size);
    }
    /* A config request: the job's attributes, each one the request names
     * taking precedence (the asker may know more than the job has said). */
    if ((err = load_attrs(s, ev->u.creq.job_uid, &a, errstr, size)))
        return err;
    if (ev->u.creq.has_meta)
        for (size_t i = 0; i < DLB_META_ATTRS; i++)
            if (dlb_meta_attr_c(&ev->u.creq.meta, i)[0])
                snprintf(dlb_meta_attr(&a.meta, i), DLB_NAME_MAX, "%s",
                         dlb_meta_attr_c(&ev->u.creq.meta, i));
    return answer(s, ev->u.creq.event_id, ev->u.creq.event_time_ms, ev->u.creq.job_uid, &a.meta,
                  errstr, size);
}

/* At equal event times a job's own job event is folded before a request of
 * that instant. */
static const char *const inputs[] = {DLB_TOPIC_JOB_EVENTS, DLB_TOPIC_CONFIG_REQUESTS, NULL};

int dlb_configurer_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                       dlb_stream_stats_t *stats, char *errstr, size_t errstr_size)
{
    cfg_state_t cs = {0};
    const dlb_stream_role_t role = {.name = "configurer",
                                    .inputs = inputs,
                                    .output = DLB_TOPIC_CONFIGS,
                                    .is_request = is_request,
                                    .accepts = accepts,
                                    .process = process,
                                    .tick = refresh,
                                    .opaque = &cs};
    char group[256];
    int err;

    err = dlb_stream_run(conf, &role, dlb_conf_group(conf, "configurer", group, sizeof(group)),
                         stop, stats, errstr, errstr_size);
    dlb_info("configurer: match cache %" PRId64 " hits, %" PRId64 " misses", cs.cache_hits,
             cs.cache_misses);
    dlb_matcher_destroy(cs.m);
    return err;
}
