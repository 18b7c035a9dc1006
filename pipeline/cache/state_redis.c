/* The job state in Redis (cache_redis.h's keys): each event folded into
 * its job's hash, window and pods, the whole state loaded and stored; the
 * pods as JSON, the window as framed samples decoded once. */
#include "cache_redis.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <hiredis.h>

#include "cache_redis_internal.h"
#include "codec.h"
#include "err.h"
#include "log.h"
#include "lru.h"

typedef struct job_keys {
    char job[DLB_REDIS_KEY_MAX];
    char rt[DLB_REDIS_KEY_MAX];
    char pods[DLB_REDIS_KEY_MAX];
    char folded[DLB_REDIS_KEY_MAX];
} job_keys_t;

void dlb_redis_job_key(const char *prefix, const char *uid, const char *suffix, char *buf,
                       size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = (size_t)snprintf(buf, size, "%s:job:", prefix);

    /* A uid is at most DLB_ID_MAX - 1 bytes: 3 each encoded, plus the rest,
     * fits DLB_REDIS_KEY_MAX; a smaller buffer cuts the key. */
    for (const unsigned char *u = (const unsigned char *)uid; *u && n + 4 < size; u++) {
        if ((*u >= 'a' && *u <= 'z') || (*u >= 'A' && *u <= 'Z') || (*u >= '0' && *u <= '9') ||
            *u == '.' || *u == '_' || *u == '-') {
            buf[n++] = (char)*u;
        } else {
            buf[n++] = '%';
            buf[n++] = hex[*u >> 4];
            buf[n++] = hex[*u & 15];
        }
    }
    if (n < size)
        snprintf(buf + n, size - n, "%s", suffix);
}

static void keys_of(const dlb_redis_t *r, const char *uid, job_keys_t *k)
{
    dlb_redis_job_key(r->prefix, uid, "", k->job, sizeof(k->job));
    dlb_redis_job_key(r->prefix, uid, ":rt", k->rt, sizeof(k->rt));
    dlb_redis_job_key(r->prefix, uid, ":pods", k->pods, sizeof(k->pods));
    dlb_redis_job_key(r->prefix, uid, ":folded", k->folded, sizeof(k->folded));
}

/* A cached sample decoded into *out, from r->decoded when it holds those
 * bytes: every plan request of a job reads the same window of members, and
 * decoding them again was a quarter of the optimizer's time (perf, 200
 * simulated jobs). *own is what the caller frees when nothing is kept.
 * @returns 0, DLB_ERR_DECODE or DLB_ERR_NOMEM. */
static int member_decode(dlb_redis_t *r, const redisReply *m, const dlb_event_t **out,
                         dlb_event_t **own)
{
    dlb_event_t *ev;
    char sub[256];
    int err;

    *out = NULL;
    *own = NULL;
    if (m->type != REDIS_REPLY_STRING)
        return DLB_ERR_DECODE;
    if (r->decoded && (ev = dlb_lru_get(r->decoded, m->str, m->len))) {
        *out = ev;
        return 0;
    }
    if (!(ev = calloc(1, sizeof(*ev))))
        return DLB_ERR_NOMEM;
    if (dlb_codec_decode(r->cat, m->str, m->len, ev, sub, sizeof(sub)) ||
        ev->type != DLB_EV_RUNTIME) {
        dlb_redis_decoded_free(ev);
        return DLB_ERR_DECODE;
    }
    *out = ev;
    if (!r->decoded)
        *own = ev;
    else if ((err = dlb_lru_put(r->decoded, m->str, m->len, ev,
                                sizeof(*ev) + ev->u.rt.pods_cnt * sizeof(*ev->u.rt.pods))) == 1)
        *own = ev; /* larger than the whole budget */
    else if (err) {
        *out = NULL; /* freed by the cache */
        return DLB_ERR_NOMEM;
    }
    return 0;
}

/* Refresh the TTL of every key of the job: 4 replies. */
static int r_expire_all(dlb_redis_t *r, int *n, const job_keys_t *k)
{
    const char *const keys[] = {k->job, k->rt, k->pods, k->folded};

    for (int i = 0; i < 4; i++)
        if (dlb_redis_append(r, n, "EXPIRE %s %s", keys[i], DLB_REDIS_TTL_S))
            return DLB_ERR_NOMEM;
    return 0;
}

/* ---- pod status as JSON -------------------------------------------------- */

static cJSON *json_i64(int64_t v)
{
    char buf[24];

    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

static char *pod_to_json(const dlb_pod_status_t *p)
{
    cJSON *o = cJSON_CreateObject();
    char *out = NULL;
    struct {
        const char *key;
        cJSON *item;
    } f[] = {
        {"name", cJSON_CreateString(p->name)},
        {"type", cJSON_CreateString(p->type)},
        {"index", cJSON_CreateNumber(p->index)},
        {"node_name", cJSON_CreateString(p->node_name)},
        {"last_kind", cJSON_CreateString(p->last_kind)},
        {"phase", cJSON_CreateString(p->phase)},
        {"last_event_time_ms", json_i64(p->last_event_time_ms)},
        {"oom_count", cJSON_CreateNumber(p->oom_count)},
        {"last_oom_event_id", cJSON_CreateString(p->last_oom_event_id)},
        {"memory_requested", json_i64(p->memory_requested)},
        {"last_event_id", cJSON_CreateString(p->last_event_id)},
    };
    size_t nf = sizeof(f) / sizeof(f[0]);
    int ok = o != NULL;

    for (size_t i = 0; i < nf; i++) {
        if (ok && f[i].item)
            cJSON_AddItemToObject(o, f[i].key, f[i].item);
        else {
            ok = 0;
            cJSON_Delete(f[i].item);
        }
    }
    /* Node failures, only for a pod that had one: most pods never do. */
    if (ok && p->fail_event_id[0])
        ok = cJSON_AddStringToObject(o, "fail_kind", p->fail_kind) &&
             cJSON_AddStringToObject(o, "fail_event_id", p->fail_event_id) &&
             cJSON_AddStringToObject(o, "fail_node", p->fail_node) &&
             cJSON_AddItemToObject(o, "fail_time_ms", json_i64(p->fail_time_ms));
    if (ok && p->back_event_id[0])
        ok = cJSON_AddStringToObject(o, "back_kind", p->back_kind) &&
             cJSON_AddStringToObject(o, "back_event_id", p->back_event_id) &&
             cJSON_AddItemToObject(o, "back_time_ms", json_i64(p->back_time_ms));
    if (ok)
        out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return out;
}

static void json_str(const cJSON *o, const char *key, char *dst, size_t size)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

    if (cJSON_IsString(it))
        snprintf(dst, size, "%s", it->valuestring);
}

/* JSON numbers are doubles: exact for the int64s here (bytes and ms < 2^53). */
static int64_t json_num(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNumber(it) ? (int64_t)it->valuedouble : 0;
}

static int pod_from_json(const char *s, size_t len, dlb_pod_status_t *p)
{
    cJSON *o = cJSON_ParseWithLength(s, len);

    memset(p, 0, sizeof(*p));
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return DLB_ERR_DECODE;
    }
    json_str(o, "name", p->name, sizeof(p->name));
    json_str(o, "type", p->type, sizeof(p->type));
    p->index = (int32_t)json_num(o, "index");
    json_str(o, "node_name", p->node_name, sizeof(p->node_name));
    json_str(o, "last_kind", p->last_kind, sizeof(p->last_kind));
    json_str(o, "phase", p->phase, sizeof(p->phase));
    p->last_event_time_ms = json_num(o, "last_event_time_ms");
    p->oom_count = (int)json_num(o, "oom_count");
    json_str(o, "last_oom_event_id", p->last_oom_event_id, sizeof(p->last_oom_event_id));
    p->memory_requested = json_num(o, "memory_requested");
    json_str(o, "last_event_id", p->last_event_id, sizeof(p->last_event_id));
    json_str(o, "fail_kind", p->fail_kind, sizeof(p->fail_kind));
    json_str(o, "fail_event_id", p->fail_event_id, sizeof(p->fail_event_id));
    json_str(o, "fail_node", p->fail_node, sizeof(p->fail_node));
    p->fail_time_ms = json_num(o, "fail_time_ms");
    json_str(o, "back_kind", p->back_kind, sizeof(p->back_kind));
    json_str(o, "back_event_id", p->back_event_id, sizeof(p->back_event_id));
    p->back_time_ms = json_num(o, "back_time_ms");
    cJSON_Delete(o);
    return p->name[0] ? 0 : DLB_ERR_DECODE;
}

static int pod_cmp(const void *a, const void *b)
{
    return strcmp(((const dlb_pod_status_t *)a)->name, ((const dlb_pod_status_t *)b)->name);
}

/* ---- apply ---------------------------------------------------------------- */

/* A cached entry that does not decode is dropped, never trusted: without the
 * job hash the next load misses and the caller rebuilds from PostgreSQL. */
static int invalidate(dlb_redis_t *r, const job_keys_t *k, const char *why, char *errstr,
                      size_t errstr_size)
{
    int n = 0;

    dlb_warn("redis: dropping cached state %s: %s; it will be rebuilt from PostgreSQL", k->job,
             why);
    if (dlb_redis_append(r, &n, "DEL %s", k->job))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    return dlb_redis_collect(r, n, NULL, "DEL", errstr, errstr_size);
}

/* A key of the job held the wrong type: drop all its keys (the next load
 * rebuilds it from PostgreSQL), so one job's bad cache never reads as Redis
 * being down, which would drop every job's. @returns 0 once dropped. */
static int wrong_type(dlb_redis_t *r, const job_keys_t *k, const char *reason, char *errstr,
                      size_t errstr_size)
{
    char why[256];
    int n = 0;

    snprintf(why, sizeof(why), "%s", reason);
    dlb_warn("redis: a key of %s holds the wrong type (%s); dropping the job's cached state, "
             "it will be rebuilt from PostgreSQL",
             k->job, why);
    if (dlb_redis_append(r, &n, "DEL %s %s %s %s", k->job, k->rt, k->pods, k->folded))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    return dlb_redis_collect(r, n, NULL, "DEL", errstr, errstr_size);
}

/* One round trip: add the framed sample scored by its event time, keep the
 * newest window_size, refresh TTLs. A duplicate is the same member (same
 * event, same bytes), so ZADD leaves the set as it was. */
static int apply_sample(dlb_redis_t *r, const dlb_event_t *ev, const job_keys_t *k, char *errstr,
                        size_t errstr_size)
{
    char score[24], stop[24];
    void *buf = NULL;
    size_t len = 0;
    int n = 0, err;

    if ((err = dlb_codec_encode(r->cat, ev, &buf, &len, errstr, errstr_size)))
        return err;
    snprintf(score, sizeof(score), "%" PRId64, ev->u.rt.event_time_ms);
    snprintf(stop, sizeof(stop), "%d", -(r->window_size + 1));
    if (dlb_redis_append(r, &n, "ZADD %s %s %b", k->rt, score, buf, len) ||
        dlb_redis_append(r, &n, "ZREMRANGEBYRANK %s 0 %s", k->rt, stop) || r_expire_all(r, &n, k)) {
        free(buf);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    free(buf);
    return dlb_redis_collect(r, n, NULL, "adding a runtime sample", errstr, errstr_size);
}

/* A sample of a batch with the frame it arrived in (NULL: none). */
typedef struct batch_sample {
    const dlb_event_t *ev;
    const void *raw;
    size_t raw_len;
} batch_sample_t;

static int by_job(const void *a, const void *b)
{
    const batch_sample_t *x = a, *y = b;

    return strcmp(x->ev->u.rt.job_uid, y->ev->u.rt.job_uid);
}

/* apply_sample() for many samples, one round trip: a ZADD per sample, then
 * per job one trim and one TTL refresh (top window_size of the union is what
 * adding and trimming one at a time leaves too). A sample's window entry is
 * its frame as encoded with the newest schema: the frame it arrived in when
 * it was written with that schema (the same bytes: Avro's encoding of the
 * same values is unique), else encoded anew. */
int dlb_redis_apply_samples(dlb_redis_t *r, const dlb_event_t *const *evs, const void *const *raws,
                            const size_t *raw_lens, size_t n, char *errstr, size_t errstr_size)
{
    const int32_t newest = r->cat ? dlb_catalog_latest(r->cat, DLB_EV_RUNTIME)->id : -1;
    batch_sample_t *sorted = NULL;
    char score[24], stop[24];
    job_keys_t k;
    size_t m = 0;
    int cnt = 0, err;

    if (!n)
        return 0;
    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    if (!(sorted = malloc(n * sizeof(*sorted))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int32_t id;
        char sub[64];

        if (evs[i]->type != DLB_EV_RUNTIME)
            continue;
        sorted[m].ev = evs[i];
        sorted[m].raw = NULL;
        sorted[m].raw_len = 0;
        if (raws && raws[i] && !dlb_codec_peek(raws[i], raw_lens[i], &id, sub, sizeof(sub)) &&
            id == newest) {
            sorted[m].raw = raws[i];
            sorted[m].raw_len = raw_lens[i];
        }
        m++;
    }
    /* Stable enough: a job's samples keep no order in a sorted set anyway. */
    qsort(sorted, m, sizeof(*sorted), by_job);
    snprintf(stop, sizeof(stop), "%d", -(r->window_size + 1));
    for (size_t i = 0; i < m; i++) {
        const dlb_runtime_sample_t *rt = &sorted[i].ev->u.rt;
        void *buf = NULL;
        size_t len = sorted[i].raw_len;

        if (!sorted[i].raw &&
            (err = dlb_codec_encode(r->cat, sorted[i].ev, &buf, &len, errstr, errstr_size))) {
            dlb_redis_abandon(r); /* never send half a batch */
            goto out;
        }
        keys_of(r, rt->job_uid, &k);
        snprintf(score, sizeof(score), "%" PRId64, rt->event_time_ms);
        err =
            dlb_redis_append(r, &cnt, "ZADD %s %s %b", k.rt, score, buf ? buf : sorted[i].raw, len);
        free(buf);
        if (err || ((i + 1 == m || strcmp(rt->job_uid, sorted[i + 1].ev->u.rt.job_uid)) &&
                    (dlb_redis_append(r, &cnt, "ZREMRANGEBYRANK %s 0 %s", k.rt, stop) ||
                     r_expire_all(r, &cnt, &k)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    err = dlb_redis_collect(r, cnt, NULL, "adding runtime samples", errstr, errstr_size);
    /* Which job's key it was is not known: every job of the batch is
     * rebuilt (its samples are in PostgreSQL already). */
    for (size_t i = 0; err == DLB_ERR_INVALID && i < m; i++) {
        if (i && !strcmp(sorted[i].ev->u.rt.job_uid, sorted[i - 1].ev->u.rt.job_uid))
            continue;
        keys_of(r, sorted[i].ev->u.rt.job_uid, &k);
        if (wrong_type(r, &k, errstr, errstr, errstr_size))
            break;
        if (i + 1 == m)
            err = 0;
    }
out:
    free(sorted);
    return err;
}

/* Two round trips: read (folded already?, pod status), then write both in one
 * MULTI so a crash never marks an event folded without its effect (or the
 * reverse).
 *
 * Why the ids are kept at all: a redelivered node event equal to its pod's
 * newest event or newest OOM is dropped by the fold itself, and any other one
 * folds again as a no-op (older fields only fill what is empty) except a late
 * OOM, which would count its pod's OOMs twice. So ":folded" holds the ids of
 * the node events folded into the pods, each scored by its fold (one more than
 * the highest score), and keeps the newest folded_max: a redelivery replays
 * what was processed since the offsets last committed, one batch, which holds
 * at most 2 x consumer.batch.size messages (new ones and those held over,
 * stream.c), and folded_max is twice that (and at least DLB_REDIS_FOLDED_MIN
 * for duplicates a producer sends later). The fold order, not event time,
 * decides what goes: a late event is as recent as any when it is folded, and
 * no clock is read. */
static int apply_node(dlb_redis_t *r, const dlb_event_t *ev, const job_keys_t *k, char *errstr,
                      size_t errstr_size)
{
    const dlb_node_event_t *ne = &ev->u.node;
    dlb_job_state_t st = {0};
    dlb_pod_status_t pod;
    redisReply *rep[4] = {0}, *wr[10] = {0};
    char *json = NULL, seq[24], stop[24];
    long long top = 0;
    int n = 0, err;

    if (!ne->pod_name[0]) /* nothing to fold: see dlb_job_state_apply() */
        return 0;
    if (dlb_redis_append(r, &n, "ZSCORE %s %s", k->folded, ne->event_id) ||
        dlb_redis_append(r, &n, "HGET %s %s", k->pods, ne->pod_name) ||
        dlb_redis_append(r, &n, "HLEN %s", k->pods) ||
        dlb_redis_append(r, &n, "ZRANGE %s -1 -1 WITHSCORES", k->folded))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if ((err = dlb_redis_collect(r, n, rep, "reading a pod status", errstr, errstr_size)))
        return err;
    if (rep[0]->type == REDIS_REPLY_STRING)
        goto out; /* already applied */
    /* A new pod past what a job's state keeps: not folded, as in state.c. */
    if (rep[1]->type != REDIS_REPLY_STRING && rep[2]->type == REDIS_REPLY_INTEGER &&
        rep[2]->integer >= DLB_JOB_PODS_MAX) {
        dlb_warn("redis: job %s already has %d pods in its state; pod %s (event %s) is not "
                 "folded into it (the history keeps the event)",
                 ev->u.node.job_uid, DLB_JOB_PODS_MAX, ne->pod_name, ne->event_id);
        goto out;
    }
    if (rep[3]->type == REDIS_REPLY_ARRAY && rep[3]->elements == 2 &&
        rep[3]->element[1]->type == REDIS_REPLY_STRING)
        top = strtoll(rep[3]->element[1]->str, NULL, 10);
    if (rep[1]->type == REDIS_REPLY_STRING) {
        if (pod_from_json(rep[1]->str, rep[1]->len, &pod) || strcmp(pod.name, ne->pod_name)) {
            err = invalidate(r, k, "a pod status is not valid JSON", errstr, errstr_size);
            goto out;
        }
        st.pods = &pod;
        st.pods_cnt = 1;
    }
    if ((err = dlb_job_state_apply(&st, ev, r->window_size))) {
        err = dlb_seterr(errstr, errstr_size, err, "out of memory");
        goto out;
    }
    if (!(json = pod_to_json(dlb_job_state_pod(&st, ne->pod_name)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    snprintf(seq, sizeof(seq), "%lld", top + 1);
    snprintf(stop, sizeof(stop), "%ld", -(r->folded_max + 1));
    n = 0;
    if (dlb_redis_append(r, &n, "MULTI") ||
        dlb_redis_append(r, &n, "ZADD %s %s %s", k->folded, seq, ne->event_id) ||
        dlb_redis_append(r, &n, "ZREMRANGEBYRANK %s 0 %s", k->folded, stop) ||
        dlb_redis_append(r, &n, "HSET %s %s %s", k->pods, ne->pod_name, json) ||
        r_expire_all(r, &n, k) || dlb_redis_append(r, &n, "EXEC")) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    err = dlb_redis_collect(r, n, wr, "writing a pod status", errstr, errstr_size);
    dlb_redis_replies_free(wr, err ? 0 : n);
out:
    /* st.pods is either our stack pod or a heap array made by the apply. */
    if (st.pods != &pod)
        free(st.pods);
    cJSON_free(json);
    dlb_redis_replies_free(rep, 4);
    return err;
}

/* Read the merged job event, fold, write it back. */
static int apply_job(dlb_redis_t *r, const dlb_event_t *ev, const job_keys_t *k, char *errstr,
                     size_t errstr_size)
{
    dlb_job_state_t st = {0};
    dlb_event_t merged = {0};
    redisReply *rep[1] = {0};
    char created[24], sub[256];
    void *buf = NULL;
    size_t len = 0;
    int n = 0, err;

    if (dlb_redis_append(r, &n, "HMGET %s event created_ms", k->job))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if ((err = dlb_redis_collect(r, n, rep, "reading a job", errstr, errstr_size)))
        return err;
    if (rep[0]->type == REDIS_REPLY_ARRAY && rep[0]->elements == 2 &&
        rep[0]->element[0]->type == REDIS_REPLY_STRING) {
        if (dlb_codec_decode(r->cat, rep[0]->element[0]->str, rep[0]->element[0]->len, &merged, sub,
                             sizeof(sub)) ||
            merged.type != DLB_EV_JOB) {
            dlb_event_clear(&merged);
            err = invalidate(r, k, "the cached job event does not decode", errstr, errstr_size);
            goto out;
        }
        st.job = merged.u.job; /* the state owns its heap parts now */
        if (rep[0]->element[1]->type == REDIS_REPLY_STRING)
            st.created_ms = strtoll(rep[0]->element[1]->str, NULL, 10);
    }
    err = dlb_job_state_apply(&st, ev, r->window_size);
    merged.type = DLB_EV_JOB;
    merged.u.job = st.job; /* and back: freed with merged */
    if (err) {
        err = dlb_seterr(errstr, errstr_size, err, "out of memory");
        goto out;
    }
    if ((err = dlb_codec_encode(r->cat, &merged, &buf, &len, errstr, errstr_size)))
        goto out;
    snprintf(created, sizeof(created), "%" PRId64, st.created_ms);
    n = 0;
    if (dlb_redis_append(r, &n, "HSET %s event %b created_ms %s", k->job, buf, len, created) ||
        r_expire_all(r, &n, k)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    err = dlb_redis_collect(r, n, NULL, "writing a job", errstr, errstr_size);
out:
    free(buf);
    dlb_redis_replies_free(rep, 1);
    dlb_event_clear(&merged);
    return err;
}

int dlb_redis_apply_event(dlb_redis_t *r, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    job_keys_t k;
    int err;

    if (ev->type != DLB_EV_JOB && ev->type != DLB_EV_RUNTIME && ev->type != DLB_EV_NODE)
        return 0; /* not part of a job's state */
    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    keys_of(r, dlb_event_job_uid(ev), &k);
    switch (ev->type) {
    case DLB_EV_RUNTIME:
        err = apply_sample(r, ev, &k, errstr, errstr_size);
        break;
    case DLB_EV_NODE:
        err = apply_node(r, ev, &k, errstr, errstr_size);
        break;
    default:
        err = apply_job(r, ev, &k, errstr, errstr_size);
        break;
    }
    return err == DLB_ERR_INVALID ? wrong_type(r, &k, errstr, errstr, errstr_size) : err;
}

/* ---- load / store --------------------------------------------------------- */

static int load_job_hash(dlb_redis_t *r, const redisReply *h, dlb_job_state_t *st, int *found,
                         const char **bad)
{
    char sub[256];

    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *f = h->element[i], *v = h->element[i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (!strcmp(f->str, "v")) {
            *found = !strcmp(v->str, DLB_REDIS_FORMAT);
        } else if (!strcmp(f->str, "created_ms")) {
            st->created_ms = strtoll(v->str, NULL, 10);
        } else if (!strcmp(f->str, "event")) {
            dlb_event_t ev = {0};
            if (dlb_codec_decode(r->cat, v->str, v->len, &ev, sub, sizeof(sub)) ||
                ev.type != DLB_EV_JOB) {
                dlb_event_clear(&ev);
                *bad = "the cached job event does not decode";
                return DLB_ERR_DECODE;
            }
            st->job = ev.u.job;
        }
    }
    return 0;
}

int dlb_redis_load_job(dlb_redis_t *r, const char *job_uid, dlb_job_state_t *out, int *found,
                       char *errstr, size_t errstr_size)
{
    dlb_job_state_t st = {0};
    redisReply *rep[3] = {0};
    const char *bad = NULL;
    double cut = 0;
    job_keys_t k;
    int n = 0, err;

    memset(out, 0, sizeof(*out));
    *found = 0;
    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    keys_of(r, job_uid, &k);
    if (dlb_redis_append(r, &n, "HGETALL %s", k.job) ||
        dlb_redis_append(r, &n, "ZRANGE %s 0 -1 WITHSCORES", k.rt) ||
        dlb_redis_append(r, &n, "HGETALL %s", k.pods))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if ((err = dlb_redis_collect(r, n, rep, "loading a job", errstr, errstr_size)))
        return err == DLB_ERR_INVALID ? wrong_type(r, &k, errstr, errstr, errstr_size) : err;
    if (rep[0]->type != REDIS_REPLY_ARRAY || rep[1]->type != REDIS_REPLY_ARRAY ||
        rep[2]->type != REDIS_REPLY_ARRAY || rep[1]->elements % 2) {
        bad = "unexpected reply type";
        goto out;
    }
    if (load_job_hash(r, rep[0], &st, found, &bad) || !*found)
        goto out;
    /* Newest first, and only what the window can keep: once the samples'
     * pods pass DLB_WINDOW_PODS_MAX, an older score cannot be in the window
     * (those of the same score may, ties go by event id). The fold gives
     * the state it would give from all of them; decoding the others cost
     * seconds for a job of 16,384 pods a sample. */
    for (size_t i = rep[1]->elements / 2, pods = 0; i-- > 0;) {
        const redisReply *m = rep[1]->element[2 * i], *sc = rep[1]->element[2 * i + 1];
        const dlb_event_t *ev;
        dlb_event_t *own;
        double score;
        if (sc->type != REDIS_REPLY_STRING || sscanf(sc->str, "%lf", &score) != 1) {
            bad = "a cached runtime sample has no score";
            goto out;
        }
        if (pods > DLB_WINDOW_PODS_MAX && score < cut)
            break;
        if ((err = member_decode(r, m, &ev, &own)) == DLB_ERR_NOMEM) {
            err = dlb_seterr(errstr, errstr_size, err, "out of memory");
            goto out;
        } else if (err) {
            bad = "a cached runtime sample does not decode";
            goto out;
        }
        if (pods <= DLB_WINDOW_PODS_MAX && (pods += ev->u.rt.pods_cnt) > DLB_WINDOW_PODS_MAX)
            cut = score;
        err = dlb_job_state_apply(&st, ev, r->window_size);
        if (own)
            dlb_redis_decoded_free(own);
        if (err) {
            err = dlb_seterr(errstr, errstr_size, err, "out of memory");
            goto out;
        }
    }
    if (rep[2]->elements / 2 > DLB_JOB_PODS_MAX) {
        bad = "more pods than a job's state keeps";
        goto out;
    }
    if (rep[2]->elements >= 2) {
        size_t cnt = rep[2]->elements / 2;
        if (!(st.pods = calloc(cnt, sizeof(*st.pods)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < cnt; i++) {
            const redisReply *v = rep[2]->element[2 * i + 1];
            if (v->type != REDIS_REPLY_STRING || pod_from_json(v->str, v->len, &st.pods[i])) {
                bad = "a cached pod status is not valid JSON";
                goto out;
            }
            st.pods_cnt++;
        }
        /* Hash order is arbitrary; the state keeps pods sorted by name. */
        qsort(st.pods, st.pods_cnt, sizeof(*st.pods), pod_cmp);
    }
    if (!st.job.job_uid[0])
        snprintf(st.job.job_uid, sizeof(st.job.job_uid), "%s", job_uid);
    *out = st;
    memset(&st, 0, sizeof(st));
out:
    dlb_redis_replies_free(rep, 3);
    dlb_job_state_clear(&st);
    if (bad) {
        /* A miss, not an error: the caller rebuilds and overwrites the entry. */
        *found = 0;
        memset(out, 0, sizeof(*out));
        return invalidate(r, &k, bad, errstr, errstr_size);
    }
    if (err)
        *found = 0;
    return err == DLB_ERR_INVALID ? wrong_type(r, &k, errstr, errstr, errstr_size) : err;
}

int dlb_redis_store_job(dlb_redis_t *r, const dlb_job_state_t *st, char *errstr, size_t errstr_size)
{
    const char **argv = NULL;
    size_t *lens = NULL, argc = 0, cap;
    void **bufs = NULL;
    size_t bufs_cnt = 0;
    char created[24], (*scores)[24] = NULL, **jsons = NULL, legacy[DLB_REDIS_KEY_MAX];
    job_keys_t k;
    int n = 0, err;

    if (!st->job.job_uid[0])
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "redis: state without a job uid");
    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    keys_of(r, st->job.job_uid, &k);
    /* One argv buffer big enough for the largest command (ZADD or HSET pods). */
    cap = 2 + 2 * (st->window_cnt > st->pods_cnt ? st->window_cnt : st->pods_cnt) + 8;
    argv = calloc(cap, sizeof(*argv));
    lens = calloc(cap, sizeof(*lens));
    bufs = calloc(st->window_cnt + 1, sizeof(*bufs));
    scores = calloc(st->window_cnt + 1, sizeof(*scores));
    jsons = calloc(st->pods_cnt + 1, sizeof(*jsons));
    if (!argv || !lens || !bufs || !scores || !jsons) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }

#define ARG(s, l) (argv[argc] = (s), lens[argc] = (l), argc++)
    /* The stored state replaces the old one, folded ids included: after a
     * rebuild, "folded" must mean "folded into this state", or an event the
     * rebuilt state lacks would be skipped forever. The rebuilt state starts
     * with none: an event equal to a pod's newest or newest OOM is dropped by
     * the fold itself (state.c), which is all the ids of the pods could add.
     * Format 2's unbounded set goes too. */
    dlb_redis_job_key(r->prefix, st->job.job_uid, DLB_REDIS_LEGACY_SEEN, legacy, sizeof(legacy));
    if ((err = dlb_redis_append(r, &n, "MULTI")) ||
        (err =
             dlb_redis_append(r, &n, "DEL %s %s %s %s %s", k.job, k.rt, k.pods, k.folded, legacy)))
        goto nomem;
    /* The job hash, with the completeness marker. */
    argc = 0;
    snprintf(created, sizeof(created), "%" PRId64, st->created_ms);
    ARG("HSET", 4);
    ARG(k.job, strlen(k.job));
    ARG("v", 1);
    ARG(DLB_REDIS_FORMAT, strlen(DLB_REDIS_FORMAT));
    ARG("created_ms", 10);
    ARG(created, strlen(created));
    if (st->job.event_id[0]) {
        dlb_event_t ev = {.type = DLB_EV_JOB};
        ev.u.job = st->job;
        if ((err = dlb_codec_encode(r->cat, &ev, &bufs[bufs_cnt], &lens[argc + 1], errstr,
                                    errstr_size)))
            goto discard;
        ARG("event", 5);
        argv[argc++] = bufs[bufs_cnt++];
    }
    if ((err = dlb_redis_appendv(r, &n, (int)argc, argv, lens)))
        goto nomem;
    /* The runtime window. */
    if (st->window_cnt > 0) {
        argc = 0;
        ARG("ZADD", 4);
        ARG(k.rt, strlen(k.rt));
        for (size_t i = 0; i < st->window_cnt; i++) {
            dlb_event_t ev = {.type = DLB_EV_RUNTIME};
            ev.u.rt = st->window[i]; /* shallow: encode only reads */
            snprintf(scores[i], sizeof(scores[i]), "%" PRId64, st->window[i].event_time_ms);
            ARG(scores[i], strlen(scores[i]));
            if ((err = dlb_codec_encode(r->cat, &ev, &bufs[bufs_cnt], &lens[argc], errstr,
                                        errstr_size)))
                goto discard;
            argv[argc++] = bufs[bufs_cnt++];
        }
        if ((err = dlb_redis_appendv(r, &n, (int)argc, argv, lens)))
            goto nomem;
    }
    /* Pod statuses. */
    if (st->pods_cnt > 0) {
        argc = 0;
        ARG("HSET", 4);
        ARG(k.pods, strlen(k.pods));
        for (size_t i = 0; i < st->pods_cnt; i++) {
            if (!(jsons[i] = pod_to_json(&st->pods[i])))
                goto nomem;
            ARG(st->pods[i].name, strlen(st->pods[i].name));
            ARG(jsons[i], strlen(jsons[i]));
        }
        if ((err = dlb_redis_appendv(r, &n, (int)argc, argv, lens)))
            goto nomem;
    }
#undef ARG
    if ((err = r_expire_all(r, &n, &k)) || (err = dlb_redis_append(r, &n, "EXEC")))
        goto nomem;
    err = dlb_redis_collect(r, n, NULL, "storing a job", errstr, errstr_size);
    goto out;

nomem:
    err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
discard:
    /* MULTI and more are queued: never send half a transaction. */
    dlb_redis_abandon(r);
out:
    for (size_t i = 0; i < bufs_cnt; i++)
        free(bufs[i]);
    for (size_t i = 0; jsons && i < st->pods_cnt; i++)
        cJSON_free(jsons[i]);
    free(argv);
    free(lens);
    free(bufs);
    free(scores);
    free(jsons);
    return err;
}
