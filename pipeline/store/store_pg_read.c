/* The reads only the optimizer consumer makes (store_pg.h): the history of
 * similar jobs a create-stage optimizer learns from, the OOMs earlier plans
 * answered, and a plan already written for a redelivered request. */
#include "store_pg.h"
#include "store_pg_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <libpq-fe.h>

#include "err.h"
#include "log.h"
#include "vec.h"

/* Bounds that only stop a runaway history from exhausting memory (the
 * newest rows win when one is hit). */
#define DLB_PG_MAX_HIST_JOBS 10000
/* Pods of all history samples together: a decoded pod is about 500 bytes,
 * so 100 similar jobs of 240 samples of 2,000 pods would take 24 GB. The
 * newest jobs' newest samples that fit are read (64 MB decoded at most);
 * 100 jobs of 240 samples of 5 pods fit whole. */
#define DLB_PG_MAX_HIST_PODS 131072

/* clang-format off */
/* $1 is a JSON array of job uids; ord maps rows back to it (1-based). */
/* Each job's newest $2 samples, while the pods of all of them, newest job
 * and sample first, add up to at most $4; the third column is the pods of
 * all $2 of every job, to say when some were left out, the fifth each
 * sample's pods. RAW is "" (keys only) or ", raw" (the bytes as a sixth
 * column); the two statements below. The loader applies the bound again
 * over all the similar jobs, those whose keys it kept included: this one
 * only keeps a runaway history from being sent. */
#define HIST_SAMPLES_SQL(RAW)                                                                      \
    "SELECT x.ord, x.event_time_ms, x.all_pods, x.event_id, x.n" RAW " FROM ("                    \
    "SELECT j.ord::integer AS ord, s.event_time_ms, s.event_id, s.pods AS n" RAW ", "             \
    "sum(s.pods) OVER (ORDER BY j.ord, s.event_time_ms DESC, s.event_id DESC "                     \
    "ROWS UNBOUNDED PRECEDING) AS pods, "                                                          \
    "LEAST(sum(s.pods) OVER (), 2147483647)::integer AS all_pods "                                 \
    "FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS j(uid, ord) "                    \
    "CROSS JOIN LATERAL (SELECT r.event_time_ms, r.event_id" RAW ", "                             \
    "cardinality(r.pod_names) AS pods "                                                            \
    "FROM runtime_samples r WHERE r.job_uid = j.uid "                                              \
    "AND r.event_time_ms < $3::bigint "                                                            \
    "ORDER BY r.event_time_ms DESC, r.event_id DESC LIMIT $2::integer) s) x "                      \
    "WHERE x.pods <= $4::bigint "                                                                  \
    "ORDER BY x.ord, x.event_time_ms, x.event_id"
/* Keys only: the raw bytes of the samples not already decoded come from
 * st_hist_raw. */
static const dlb_pg_stmt_t st_hist_samples = {DLB_PG_ST_HIST_SAMPLES, "dlb_hist_samples",
    HIST_SAMPLES_SQL("")};
/* With each row's raw bytes: one round trip where the cache is cold. */
static const dlb_pg_stmt_t st_hist_samples_raw = {DLB_PG_ST_HIST_SAMPLES_RAW,
    "dlb_hist_samples_raw", HIST_SAMPLES_SQL(", raw")};

/* $1: a JSON array of [job_uid, event_time_ms, event_id], runtime_samples'
 * primary key; the first column maps rows back to it (1-based). */
static const dlb_pg_stmt_t st_hist_raw = {DLB_PG_ST_HIST_RAW, "dlb_hist_raw",
    "SELECT k.ord::integer, r.raw "
    "FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS k(v, ord) "
    "JOIN runtime_samples r ON r.job_uid = k.v->>0 "
    "AND r.event_time_ms = (k.v->>1)::bigint AND r.event_id = k.v->>2"};

/* Plan ids are per job (a plan id is its request's event id, chosen by the
 * producer): another job's plan of the same id is not this job's answer. */
static const dlb_pg_stmt_t st_get_plan = {DLB_PG_ST_GET_PLAN, "dlb_get_plan",
    "SELECT raw FROM plans WHERE job_uid = $1 AND plan_id = $2"};

/* The newest $3 answers before $2, handed out oldest first. */
static const dlb_pg_stmt_t st_oom_plans = {DLB_PG_ST_OOM_PLANS, "dlb_oom_plans",
    "SELECT pod_name, oom_event_id, plan_id, memory, event_time_ms FROM ("
    "SELECT * FROM oom_plans WHERE job_uid = $1 AND event_time_ms < $2::bigint "
    "ORDER BY event_time_ms DESC, plan_id DESC, pod_name DESC, oom_event_id DESC "
    "LIMIT $3::integer) o ORDER BY event_time_ms, plan_id, pod_name, oom_event_id"};
/* clang-format on */

int dlb_pg_load_oom_plans(dlb_pg_t *pg, const char *job_uid, int64_t before_ms,
                          dlb_oom_plan_t **out, size_t *cnt, char *errstr, size_t errstr_size)
{
    char before[24], lim[24];
    const char *v[3] = {job_uid, before, lim};
    dlb_oom_plan_t *ops = NULL;
    PGresult *res = NULL;
    int err, n;

    *out = NULL;
    *cnt = 0;
    snprintf(before, sizeof(before), "%" PRId64, before_ms);
    snprintf(lim, sizeof(lim), "%d", DLB_PG_MAX_OOM_ROWS);
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_flush(pg, errstr, errstr_size)) ||
        (err = dlb_pg_run(pg, &st_oom_plans, 3, v, NULL, 0, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    if (n > 0 && !(ops = calloc((size_t)n, sizeof(*ops)))) {
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        dlb_oom_plan_t *o = &ops[i];
        snprintf(o->pod_name, sizeof(o->pod_name), "%s", PQgetvalue(res, i, 0));
        snprintf(o->oom_event_id, sizeof(o->oom_event_id), "%s", PQgetvalue(res, i, 1));
        snprintf(o->plan_id, sizeof(o->plan_id), "%s", PQgetvalue(res, i, 2));
        o->memory = strtoll(PQgetvalue(res, i, 3), NULL, 10);
        o->event_time_ms = strtoll(PQgetvalue(res, i, 4), NULL, 10);
    }
    PQclear(res);
    *out = ops;
    *cnt = (size_t)n;
    return 0;
}

int dlb_pg_get_plan(dlb_pg_t *pg, const char *job_uid, const char *plan_id, void **raw,
                    size_t *raw_len, char *errstr, size_t errstr_size)
{
    const char *v[2] = {job_uid, plan_id};
    PGresult *res = NULL;
    int err;

    *raw = NULL;
    *raw_len = 0;
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_flush(pg, errstr, errstr_size)) ||
        (err = dlb_pg_run(pg, &st_get_plan, 2, v, NULL, DLB_PG_BINARY, &res, errstr, errstr_size)))
        return err;
    err = dlb_pg_first_bytes(res, raw, raw_len, errstr, errstr_size);
    PQclear(res);
    return err;
}

static uint32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;

    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static int64_t be64(const char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)p[i];
    return (int64_t)v;
}

/* A sample's key in runtime_samples, with its pods and its job (an index
 * into the history's jobs). */
typedef struct hist_key {
    int64_t t;
    int32_t pods;
    uint32_t job;
    char event_id[DLB_ID_MAX];
} hist_key_t;

/* A job's sample keys as a load read them, kept between loads (pg->hkeys):
 * the newest max_samples of all its samples, oldest first, read when
 * samples_seq was seq. Until samples_seq moves, a load later than the
 * newest sample gets exactly these again, without asking. */
typedef struct hist_keys {
    int64_t seq;
    int max_samples;
    size_t n;
    hist_key_t keys[];
} hist_keys_t;

/* The uids of the jobs only[] names (indexes into h->jobs) as a JSON array. */
static char *uids_json(const dlb_history_t *h, const uint32_t *only, size_t cnt)
{
    cJSON *arr = cJSON_CreateArray();
    char *out = NULL;

    if (!arr)
        return NULL;
    for (size_t i = 0; i < cnt; i++) {
        cJSON *s = cJSON_CreateString(h->jobs[only[i]].job_uid);
        if (!s)
            goto out;
        cJSON_AddItemToArray(arr, s);
    }
    out = cJSON_PrintUnformatted(arr);
out:
    cJSON_Delete(arr);
    return out;
}

void dlb_pg_set_history_cache(dlb_pg_t *pg, size_t bytes)
{
    pg->hcache_budget = bytes;
}

/* Decode the sample in res's row, column col, into the cache, under key. */
static int hist_put(dlb_pg_t *pg, const dlb_history_t *h, const PGresult *res, int row, int col,
                    const hist_key_t *key, char *errstr, size_t errstr_size)
{
    const dlb_hist_job_t *j = &h->jobs[key->job];
    dlb_event_t ev = {0};
    int err;

    if ((err = dlb_pg_decode_cell(pg, res, row, col, &ev, errstr, errstr_size)))
        return err;
    if (ev.type != DLB_EV_RUNTIME) {
        dlb_event_clear(&ev);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE,
                          "postgresql: runtime_samples row %s of job %s holds a %s", key->event_id,
                          j->job_uid, dlb_event_type_name(ev.type));
    }
    snprintf(ev.u.rt.job_uid, sizeof(ev.u.rt.job_uid), "%s", j->job_uid);
    snprintf(ev.u.rt.event_id, sizeof(ev.u.rt.event_id), "%s", key->event_id);
    ev.u.rt.event_time_ms = key->t;
    if (!dlb_pg_hcache_put(pg->hcache, &ev.u.rt))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

/* The samples of keys the cache does not hold (miss[], indexes into keys),
 * fetched and decoded into it. */
static int hist_fetch(dlb_pg_t *pg, const dlb_history_t *h, const hist_key_t *keys,
                      const size_t *miss, size_t nmiss, char *errstr, size_t errstr_size)
{
    cJSON *arr = cJSON_CreateArray();
    PGresult *res = NULL;
    char *json = NULL;
    const char *v[1];
    int err = 0;

    if (!arr)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nmiss; i++) {
        const hist_key_t *key = &keys[miss[i]];
        cJSON *k = cJSON_CreateArray();
        char t[24];
        snprintf(t, sizeof(t), "%" PRId64, key->t);
        if (!k || !cJSON_AddItemToArray(arr, k)) {
            cJSON_Delete(k);
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (!cJSON_AddItemToArray(k, cJSON_CreateString(h->jobs[key->job].job_uid)) ||
            !cJSON_AddItemToArray(k, cJSON_CreateString(t)) ||
            !cJSON_AddItemToArray(k, cJSON_CreateString(key->event_id))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    if (!(json = cJSON_PrintUnformatted(arr))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    v[0] = json;
    if ((err = dlb_pg_run(pg, &st_hist_raw, 1, v, NULL, DLB_PG_BINARY, &res, errstr, errstr_size)))
        goto out;
    for (int i = 0; i < PQntuples(res); i++) {
        uint32_t ord = be32(PQgetvalue(res, i, 0));
        if (ord >= 1 && ord <= nmiss &&
            (err = hist_put(pg, h, res, i, 1, &keys[miss[ord - 1]], errstr, errstr_size)))
            goto out;
    }
out:
    PQclear(res);
    cJSON_free(json);
    cJSON_Delete(arr);
    return err;
}

/* A job's samples in a load: the newest, and a fingerprint of their keys. */
typedef struct job_fp {
    const dlb_runtime_sample_t *newest;
    uint64_t fp;
} job_fp_t;

/* Each job's pods as its newest samples show them (dlb_hist_job_last_pods),
 * borrowed from the cache: a job whose samples are those of the last load
 * (a finished job's do not change) is not walked again. */
static int hist_last_pods(dlb_pg_t *pg, dlb_history_t *h, const job_fp_t *fp, char *errstr,
                          size_t errstr_size)
{
    for (size_t k = 0; k < h->jobs_cnt; k++) {
        dlb_hist_job_t *j = &h->jobs[k];
        dlb_hist_pod_t *pods;
        size_t cnt;

        if (!fp[k].newest)
            continue; /* no samples: no pods */
        if ((j->last_pods = dlb_pg_hcache_pods_get(fp[k].newest, fp[k].fp, &cnt))) {
            j->last_pods_cnt = cnt;
            j->has_last_pods = 1;
            continue;
        }
        if (dlb_hist_job_last_pods(j, &pods, &cnt))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        j->last_pods = dlb_pg_hcache_pods_put(pg->hcache, fp[k].newest, fp[k].fp, pods, cnt);
        j->last_pods_cnt = cnt;
        j->has_last_pods = 1;
    }
    return 0;
}

/* The keys of one load, every job's together, each job's oldest first. */
typedef struct key_list {
    hist_key_t *keys;
    size_t cnt, cap;
    size_t *first, *count; /* per job: where its keys are */
} key_list_t;

static hist_key_t *key_add(key_list_t *l)
{
    if (dlb_vec_reserve((void **)&l->keys, &l->cap, l->cnt + 1, sizeof(*l->keys)))
        return NULL;
    return &l->keys[l->cnt++];
}

static void key_list_clear(key_list_t *l)
{
    free(l->keys);
    free(l->first);
    free(l->count);
}

/* A job's kept keys, when still what the table holds for a load as of
 * until_ms (hist_keys_t). */
static const hist_keys_t *keys_kept(dlb_pg_t *pg, const dlb_hist_job_t *j,
                                    const dlb_pg_hist_mark_t *m, int max_samples, int64_t until_ms)
{
    const hist_keys_t *e;

    if (!pg->hkeys || !(e = dlb_lru_get(pg->hkeys, j->job_uid, strlen(j->job_uid))))
        return NULL;
    return e->seq == m->seq && e->max_samples == max_samples && m->max_ms < until_ms ? e : NULL;
}

/* Keep the keys a load read of job k (l->keys from first, cnt of them). */
static int keys_keep(dlb_pg_t *pg, const dlb_hist_job_t *j, const dlb_pg_hist_mark_t *m,
                     int max_samples, const hist_key_t *keys, size_t cnt)
{
    hist_keys_t *e;
    size_t len = strlen(j->job_uid);
    int err;

    dlb_lru_del(pg->hkeys, j->job_uid, len);
    if (!(e = malloc(sizeof(*e) + cnt * sizeof(*keys))))
        return DLB_ERR_NOMEM;
    e->seq = m->seq;
    e->max_samples = max_samples;
    e->n = cnt;
    if (cnt)
        memcpy(e->keys, keys, cnt * sizeof(*keys));
    err = dlb_lru_put(pg->hkeys, j->job_uid, len, e, sizeof(*e) + cnt * sizeof(*keys));
    if (err == 1)
        free(e);
    return err == DLB_ERR_NOMEM ? err : 0;
}

/* The keys of the jobs whose kept keys do not serve (ask[], asked of them),
 * appended to l grouped by job, and their samples decoded into the cache
 * when with_raw (*decoded of them were not there). *whole says the query's
 * bound cut nothing. */
static int keys_ask(dlb_pg_t *pg, dlb_history_t *h, const uint32_t *ask, size_t asked,
                    int max_samples, int64_t until_ms, int with_raw, key_list_t *l, size_t *decoded,
                    int *whole, char *errstr, size_t errstr_size)
{
    char lim[24], until[24], pods[24];
    const char *v[4] = {NULL, lim, until, pods};
    PGresult *res = NULL;
    char *uids;
    int err, n;

    if (!(uids = uids_json(h, ask, asked)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    v[0] = uids;
    snprintf(lim, sizeof(lim), "%d", max_samples);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    snprintf(pods, sizeof(pods), "%d", DLB_PG_MAX_HIST_PODS);
    err = dlb_pg_run(pg, with_raw ? &st_hist_samples_raw : &st_hist_samples, 4, v, NULL,
                     DLB_PG_BINARY, &res, errstr, errstr_size);
    cJSON_free(uids);
    if (err)
        return err;
    n = PQntuples(res);
    *whole = !n || be32(PQgetvalue(res, 0, 2)) <= DLB_PG_MAX_HIST_PODS;
    for (int i = 0; i < n; i++) {
        uint32_t ord = be32(PQgetvalue(res, i, 0));
        hist_key_t *k;
        if (ord < 1 || ord > asked)
            continue;
        if (!(k = key_add(l))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            break;
        }
        k->job = ask[ord - 1];
        k->t = be64(PQgetvalue(res, i, 1));
        k->pods = (int32_t)be32(PQgetvalue(res, i, 4));
        snprintf(k->event_id, sizeof(k->event_id), "%s", PQgetvalue(res, i, 3));
        if (!l->count[k->job]++)
            l->first[k->job] = l->cnt - 1;
        if (!with_raw || dlb_pg_hcache_get(pg->hcache, h->jobs[k->job].job_uid, k->event_id, k->t))
            continue;
        (*decoded)++;
        if ((err = hist_put(pg, h, res, i, 5, k, errstr, errstr_size)))
            break;
    }
    PQclear(res);
    return err;
}

/* The keys of every job's samples: kept ones where they still serve (a
 * finished job's, mostly), the others asked for in one query, kept in
 * turn when whole; *decoded as keys_ask says. */
static int hist_keys(dlb_pg_t *pg, dlb_history_t *h, const dlb_pg_hist_mark_t *marks,
                     int max_samples, int64_t until_ms, int with_raw, key_list_t *l,
                     size_t *decoded, char *errstr, size_t errstr_size)
{
    uint32_t *ask = NULL;
    size_t asked = 0;
    int err = 0, whole = 1;

    if (!(l->first = calloc(h->jobs_cnt, sizeof(*l->first))) ||
        !(l->count = calloc(h->jobs_cnt, sizeof(*l->count))) ||
        !(ask = malloc(h->jobs_cnt * sizeof(*ask))))
        goto nomem;
    for (size_t k = 0; k < h->jobs_cnt; k++) {
        const hist_keys_t *e = keys_kept(pg, &h->jobs[k], &marks[k], max_samples, until_ms);
        if (!e) {
            ask[asked++] = (uint32_t)k;
            continue;
        }
        l->first[k] = l->cnt;
        l->count[k] = e->n;
        for (size_t i = 0; i < e->n; i++) {
            hist_key_t *key = key_add(l);
            if (!key)
                goto nomem;
            *key = e->keys[i];
            key->job = (uint32_t)k;
        }
    }
    if (asked && (err = keys_ask(pg, h, ask, asked, max_samples, until_ms, with_raw, l, decoded,
                                 &whole, errstr, errstr_size)))
        goto out;
    /* Only a list of all samples up to now serves later loads: a job with
     * samples at or after until_ms may get more before it. */
    for (size_t i = 0; whole && pg->hkeys && i < asked; i++) {
        uint32_t k = ask[i];
        if (marks[k].max_ms < until_ms &&
            keys_keep(pg, &h->jobs[k], &marks[k], max_samples, l->keys + l->first[k], l->count[k]))
            goto nomem;
    }
    goto out;
nomem:
    err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
out:
    free(ask);
    return err;
}

/* Which keys the load takes: newest job and sample first while their pods
 * add up to at most DLB_PG_MAX_HIST_PODS. */
static size_t keys_bound(const dlb_history_t *h, const key_list_t *l, char *take)
{
    uint64_t pods = 0;
    size_t taken = 0;

    for (size_t k = 0; k < h->jobs_cnt; k++)
        for (size_t i = l->count[k]; i-- > 0;) {
            size_t at = l->first[k] + i;
            pods += (uint64_t)(l->keys[at].pods > 0 ? l->keys[at].pods : 0);
            if ((take[at] = pods <= DLB_PG_MAX_HIST_PODS))
                taken++;
        }
    if (pods > DLB_PG_MAX_HIST_PODS)
        dlb_warn("history: the samples of %zu similar jobs hold %" PRIu64
                 " pods, more than the %d read; using the newest %zu samples",
                 h->jobs_cnt, pods, DLB_PG_MAX_HIST_PODS, taken);
    return taken;
}

/* The samples, borrowed from the cache of decoded ones: a key the cache
 * does not hold is fetched and decoded once (hist_fetch), then every later
 * request of the scenario finds it there. Where the last load found less
 * than half of its samples there (a consumer just started, a scenario not
 * seen lately), the raw bytes come with the keys, in one round trip: a
 * consumer that keeps restarting costs what it did without the cache. */
static int hist_samples(dlb_pg_t *pg, const dlb_pg_hist_mark_t *marks, int max_samples,
                        int64_t until_ms, dlb_history_t *h, char *errstr, size_t errstr_size)
{
    key_list_t l = {0};
    job_fp_t *fp = NULL;
    const dlb_runtime_sample_t **hit = NULL;
    size_t *miss = NULL, nmiss = 0, decoded = 0, taken;
    char *take = NULL;
    int err, with_raw = !pg->hcache_warm;

    if (!pg->hcache && !(pg->hcache = dlb_pg_hcache_new(pg->hcache_budget)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    /* An eighth of history.cache.mb for the keys: 100 jobs of 240 keys
     * take 3.5 MB. */
    if (!pg->hkeys && pg->hcache_budget / 8 &&
        !(pg->hkeys = dlb_lru_new(pg->hcache_budget / 8, free)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    dlb_pg_hcache_begin(pg->hcache);
    h->borrowed = 1;
    if ((err = hist_keys(pg, h, marks, max_samples, until_ms, with_raw, &l, &decoded, errstr,
                         errstr_size)))
        goto out;
    if (l.cnt && (!(take = malloc(l.cnt)) || !(miss = malloc(l.cnt * sizeof(*miss))) ||
                  !(hit = calloc(l.cnt, sizeof(*hit))))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    taken = keys_bound(h, &l, take);
    for (size_t i = 0; i < l.cnt; i++) {
        const hist_key_t *k = &l.keys[i];
        if (take[i] &&
            !(hit[i] = dlb_pg_hcache_get(pg->hcache, h->jobs[k->job].job_uid, k->event_id, k->t)))
            miss[nmiss++] = i;
    }
    /* Samples not there when the load began: those fetched now and those
     * that came with the keys. */
    pg->hcache_warm = 2 * (nmiss + decoded) <= taken;
    if (nmiss && (err = hist_fetch(pg, h, l.keys, miss, nmiss, errstr, errstr_size)))
        goto out;
    if (h->jobs_cnt && !(fp = calloc(h->jobs_cnt, sizeof(*fp)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < h->jobs_cnt; k++) {
        dlb_hist_job_t *j = &h->jobs[k];
        if (l.count[k] && !(j->samples = calloc(l.count[k], sizeof(*j->samples)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = l.first[k]; i < l.first[k] + l.count[k]; i++) {
            const hist_key_t *key = &l.keys[i];
            const dlb_runtime_sample_t *s;
            if (!take[i])
                continue;
            /* Deleted since the keys were read (retention): left out. A hit
             * of the first pass is still there: this load's samples stay. */
            if (!(s = hit[i]) &&
                !(s = dlb_pg_hcache_get(pg->hcache, j->job_uid, key->event_id, key->t)))
                continue;
            j->samples[j->samples_cnt++] = *s;
            fp[k].newest = s;
            fp[k].fp = fp[k].fp * 1099511628211ULL ^
                       dlb_pg_hcache_key_hash(s->job_uid, s->event_id, s->event_time_ms);
        }
    }
    err = hist_last_pods(pg, h, fp, errstr, errstr_size);
out:
    free(fp);
    free(hit);
    free(miss);
    free(take);
    key_list_clear(&l);
    return err;
}

int dlb_pg_load_history(dlb_pg_t *pg, const char *scenario, const char *exclude_uid,
                        int64_t until_ms, int hours, int max_jobs, int max_samples,
                        dlb_history_t *out, char *errstr, size_t errstr_size)
{
    dlb_history_t h = {0};
    dlb_pg_hist_mark_t *marks = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    /* No scenario, no similarity key: every optimizer then cold-starts. */
    if (!scenario || !*scenario || max_jobs <= 0 || hours <= 0)
        return 0;
    if (max_jobs > DLB_PG_MAX_HIST_JOBS)
        max_jobs = DLB_PG_MAX_HIST_JOBS;
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_hist_jobs(pg, scenario, exclude_uid, until_ms, hours, max_jobs, &h, &marks,
                                errstr, errstr_size)))
        goto out;
    if (h.jobs_cnt && max_samples > 0 &&
        (err = hist_samples(pg, marks, max_samples, until_ms, &h, errstr, errstr_size)))
        goto out;
    *out = h;
    memset(&h, 0, sizeof(h));
out:
    free(marks);
    dlb_history_clear(&h);
    return err;
}
