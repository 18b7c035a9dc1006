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

/* Bounds that only stop a runaway history from exhausting memory (the
 * newest rows win when one is hit). */
#define DLB_PG_MAX_HIST_JOBS 10000
#define DLB_PG_MAX_OOM_ROWS  100000
/* Pods of all history samples together: a decoded pod is about 500 bytes,
 * so 100 similar jobs of 240 samples of 2,000 pods would take 24 GB. The
 * newest jobs' newest samples that fit are read (64 MB decoded at most);
 * 100 jobs of 240 samples of 5 pods fit whole. */
#define DLB_PG_MAX_HIST_PODS 131072

/* clang-format off */
/* Everything "as of" $3, the request time, so that answering the same
 * request later (a redelivery, a replay) sees the same history: state and
 * exit reason from the newest job event before it, samples and OOMs before it. */
static const dlb_pg_stmt_t st_hist_jobs = {DLB_PG_ST_HIST_JOBS, "dlb_hist_jobs",
    "SELECT j.uid, j.created_ms, "
    "COALESCE((SELECT e.state FROM job_events e WHERE e.job_uid = j.uid "
    "AND e.state IS NOT NULL AND e.event_time_ms < $3::bigint "
    "ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1), ''), "
    "COALESCE((SELECT e.exit_reason FROM job_events e WHERE e.job_uid = j.uid "
    "AND e.exit_reason IS NOT NULL AND e.event_time_ms < $3::bigint "
    "ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1), '') "
    "FROM jobs j WHERE j.scenario = $1 AND j.created_ms >= $2::bigint "
    "AND j.created_ms < $3::bigint AND j.uid <> $4 "
    "ORDER BY j.created_ms DESC, j.uid LIMIT $5::integer"};

/* $1 is a JSON array of job uids; ord maps rows back to it (1-based). */
/* Each job's newest $2 samples, while the pods of all of them, newest job
 * and sample first, add up to at most $4; the third column is the pods of
 * all $2 of every job, to say when some were left out. RAW is "" (keys
 * only) or ", raw" (the bytes as a fifth column); the two statements below. */
#define HIST_SAMPLES_SQL(RAW)                                                                      \
    "SELECT x.ord, x.event_time_ms, x.all_pods, x.event_id" RAW " FROM ("                         \
    "SELECT j.ord::integer AS ord, s.event_time_ms, s.event_id" RAW ", "                          \
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

static const dlb_pg_stmt_t st_hist_oom = {DLB_PG_ST_HIST_OOM, "dlb_hist_oom",
    "SELECT DISTINCT j.ord::integer, n.pod_name "
    "FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS j(uid, ord) "
    "JOIN node_events n ON n.job_uid = j.uid AND n.kind = 'oom_killed' "
    "AND n.pod_name <> '' AND n.event_time_ms < $3::bigint "
    "ORDER BY 1, 2 LIMIT $2::integer"};

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

static char *uids_json(const dlb_history_t *h)
{
    cJSON *arr = cJSON_CreateArray();
    char *out = NULL;

    if (!arr)
        return NULL;
    for (size_t i = 0; i < h->jobs_cnt; i++) {
        cJSON *s = cJSON_CreateString(h->jobs[i].job_uid);
        if (!s)
            goto out;
        cJSON_AddItemToArray(arr, s);
    }
    out = cJSON_PrintUnformatted(arr);
out:
    cJSON_Delete(arr);
    return out;
}

static int hist_jobs(dlb_pg_t *pg, const char *scenario, const char *exclude_uid, int64_t until_ms,
                     int hours, int max_jobs, dlb_history_t *h, char *errstr, size_t errstr_size)
{
    char from[24], until[24], lim[24];
    const char *v[5] = {scenario, from, until, exclude_uid ? exclude_uid : "", lim};
    PGresult *res = NULL;
    int err, n;

    snprintf(from, sizeof(from), "%" PRId64, until_ms - (int64_t)hours * 3600000);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    snprintf(lim, sizeof(lim), "%d", max_jobs);
    if ((err = dlb_pg_run(pg, &st_hist_jobs, 5, v, NULL, 0, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    if (n > 0 && !(h->jobs = calloc((size_t)n, sizeof(*h->jobs)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = &h->jobs[i];
        snprintf(j->job_uid, sizeof(j->job_uid), "%s", PQgetvalue(res, i, 0));
        j->created_ms = strtoll(PQgetvalue(res, i, 1), NULL, 10);
        snprintf(j->state, sizeof(j->state), "%s", PQgetvalue(res, i, 2));
        snprintf(j->exit_reason, sizeof(j->exit_reason), "%s", PQgetvalue(res, i, 3));
        j->completed = !strcmp(j->state, "succeeded") || !strcmp(j->exit_reason, "Completed");
    }
    h->jobs_cnt = (size_t)n;
out:
    PQclear(res);
    return err;
}

/* Row i's 1-based ordinal (first column, binary int4) as an index into h->jobs. */
static dlb_hist_job_t *hist_row_job(dlb_history_t *h, const PGresult *res, int i)
{
    uint32_t ord = be32(PQgetvalue(res, i, 0));

    return ord >= 1 && ord <= h->jobs_cnt ? &h->jobs[ord - 1] : NULL;
}

void dlb_pg_set_history_cache(dlb_pg_t *pg, size_t bytes)
{
    pg->hcache_budget = bytes;
}

static int64_t be64(const char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)p[i];
    return (int64_t)v;
}

/* Decode the sample in res's row, column col, into the cache, keyed as the
 * table keys it: row of keys names its job (first column), time (second)
 * and event id (fourth). */
static int hist_put(dlb_pg_t *pg, dlb_history_t *h, const PGresult *res, int row, int col,
                    const PGresult *keys, int key_row, char *errstr, size_t errstr_size)
{
    const dlb_hist_job_t *j = hist_row_job(h, keys, key_row);
    dlb_event_t ev = {0};
    int err;

    if ((err = dlb_pg_decode_cell(pg, res, row, col, &ev, errstr, errstr_size)))
        return err;
    if (ev.type != DLB_EV_RUNTIME) {
        dlb_event_clear(&ev);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE,
                          "postgresql: runtime_samples row %s of job %s holds a %s",
                          PQgetvalue(keys, key_row, 3), j->job_uid, dlb_event_type_name(ev.type));
    }
    snprintf(ev.u.rt.job_uid, sizeof(ev.u.rt.job_uid), "%s", j->job_uid);
    snprintf(ev.u.rt.event_id, sizeof(ev.u.rt.event_id), "%s", PQgetvalue(keys, key_row, 3));
    ev.u.rt.event_time_ms = be64(PQgetvalue(keys, key_row, 1));
    if (!dlb_pg_hcache_put(pg->hcache, &ev.u.rt))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

/* The samples st_hist_samples named that the cache does not hold (miss[],
 * rows of keys), decoded into it. */
static int hist_fetch(dlb_pg_t *pg, dlb_history_t *h, const PGresult *keys, const int *miss,
                      size_t nmiss, char *errstr, size_t errstr_size)
{
    cJSON *arr = cJSON_CreateArray();
    PGresult *res = NULL;
    char *json = NULL;
    const char *v[1];
    int err = 0;

    if (!arr)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nmiss; i++) {
        cJSON *k = cJSON_CreateArray();
        char t[24];
        snprintf(t, sizeof(t), "%" PRId64, be64(PQgetvalue(keys, miss[i], 1)));
        if (!k || !cJSON_AddItemToArray(arr, k)) {
            cJSON_Delete(k);
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (!cJSON_AddItemToArray(k, cJSON_CreateString(hist_row_job(h, keys, miss[i])->job_uid)) ||
            !cJSON_AddItemToArray(k, cJSON_CreateString(t)) ||
            !cJSON_AddItemToArray(k, cJSON_CreateString(PQgetvalue(keys, miss[i], 3)))) {
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
            (err = hist_put(pg, h, res, i, 1, keys, miss[ord - 1], errstr, errstr_size)))
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

/* The samples, borrowed from the cache of decoded ones: a row the cache
 * does not hold is fetched and decoded once (hist_fetch), then every later
 * request of the scenario finds it there. Where the last load found less
 * than half of its samples there (a consumer just started, a scenario not
 * seen lately), the raw bytes come with the keys, in one round trip: a
 * consumer that keeps restarting costs what it did without the cache. */
static int hist_samples(dlb_pg_t *pg, const char *scenario, const char *uids, int max_samples,
                        int64_t until_ms, dlb_history_t *h, char *errstr, size_t errstr_size)
{
    char lim[24], until[24], pods[24];
    const char *v[4] = {uids, lim, until, pods};
    PGresult *res = NULL;
    job_fp_t *fp = NULL;
    const dlb_runtime_sample_t **hit = NULL;
    int *miss = NULL;
    size_t nmiss = 0, misses = 0;
    uint32_t all;
    int err, n, with_raw;

    if (!pg->hcache && !(pg->hcache = dlb_pg_hcache_new(pg->hcache_budget)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    dlb_pg_hcache_begin(pg->hcache);
    h->borrowed = 1;
    snprintf(lim, sizeof(lim), "%d", max_samples);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    snprintf(pods, sizeof(pods), "%d", DLB_PG_MAX_HIST_PODS);
    with_raw = !pg->hcache_warm;
    if ((err = dlb_pg_run(pg, with_raw ? &st_hist_samples_raw : &st_hist_samples, 4, v, NULL,
                          DLB_PG_BINARY, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    if (n && (all = be32(PQgetvalue(res, 0, 2))) > DLB_PG_MAX_HIST_PODS)
        dlb_warn("history of scenario %s: the samples of its %zu similar jobs hold %" PRIu32
                 " pods, more than the %d read; using the newest %d samples",
                 scenario, h->jobs_cnt, all, DLB_PG_MAX_HIST_PODS, n);
    if (n &&
        (!(miss = malloc((size_t)n * sizeof(*miss))) || !(hit = calloc((size_t)n, sizeof(*hit))))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* Rows come grouped by job: size each job's array before filling it;
     * what the cache has is kept for this load on the way. */
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        if (!j)
            continue;
        j->samples_cnt++;
        if ((hit[i] = dlb_pg_hcache_get(pg->hcache, j->job_uid, PQgetvalue(res, i, 3),
                                        be64(PQgetvalue(res, i, 1)))))
            continue;
        misses++;
        if (!with_raw)
            miss[nmiss++] = i;
        else if ((err = hist_put(pg, h, res, i, 4, res, i, errstr, errstr_size)))
            goto out;
    }
    pg->hcache_warm = 2 * misses <= (size_t)n;
    if (nmiss && (err = hist_fetch(pg, h, res, miss, nmiss, errstr, errstr_size)))
        goto out;
    for (size_t k = 0; k < h->jobs_cnt; k++) {
        dlb_hist_job_t *j = &h->jobs[k];
        if (j->samples_cnt && !(j->samples = calloc(j->samples_cnt, sizeof(*j->samples)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        j->samples_cnt = 0;
    }
    if (h->jobs_cnt && !(fp = calloc(h->jobs_cnt, sizeof(*fp)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        const dlb_runtime_sample_t *s;
        if (!j)
            continue;
        /* Deleted between the two reads (retention): left out. A hit of
         * the first pass is still there: this load's samples stay. */
        if (!(s = hit[i]) && !(s = dlb_pg_hcache_get(pg->hcache, j->job_uid, PQgetvalue(res, i, 3),
                                                     be64(PQgetvalue(res, i, 1)))))
            continue;
        j->samples[j->samples_cnt++] = *s;
        fp[j - h->jobs].newest = s;
        fp[j - h->jobs].fp = fp[j - h->jobs].fp * 1099511628211ULL ^
                             dlb_pg_hcache_key_hash(s->job_uid, s->event_id, s->event_time_ms);
    }
    err = hist_last_pods(pg, h, fp, errstr, errstr_size);
out:
    free(fp);
    free(hit);
    free(miss);
    PQclear(res);
    return err;
}

static int hist_oom(dlb_pg_t *pg, const char *uids, int64_t until_ms, dlb_history_t *h,
                    char *errstr, size_t errstr_size)
{
    char lim[24], until[24];
    const char *v[3] = {uids, lim, until};
    PGresult *res = NULL;
    int err, n;

    snprintf(lim, sizeof(lim), "%d", DLB_PG_MAX_OOM_ROWS);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    if ((err = dlb_pg_run(pg, &st_hist_oom, 3, v, NULL, DLB_PG_BINARY, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        if (j)
            j->oom_pods_cnt++;
    }
    for (size_t k = 0; k < h->jobs_cnt; k++) {
        dlb_hist_job_t *j = &h->jobs[k];
        if (j->oom_pods_cnt && !(j->oom_pods = calloc(j->oom_pods_cnt, sizeof(*j->oom_pods)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        j->oom_pods_cnt = 0;
    }
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = hist_row_job(h, res, i);
        if (j)
            snprintf(j->oom_pods[j->oom_pods_cnt++], DLB_ID_MAX, "%s", PQgetvalue(res, i, 1));
    }
out:
    PQclear(res);
    return err;
}

int dlb_pg_load_history(dlb_pg_t *pg, const char *scenario, const char *exclude_uid,
                        int64_t until_ms, int hours, int max_jobs, int max_samples,
                        dlb_history_t *out, char *errstr, size_t errstr_size)
{
    dlb_history_t h = {0};
    char *uids = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    /* No scenario, no similarity key: every optimizer then cold-starts. */
    if (!scenario || !*scenario || max_jobs <= 0 || hours <= 0)
        return 0;
    if (max_jobs > DLB_PG_MAX_HIST_JOBS)
        max_jobs = DLB_PG_MAX_HIST_JOBS;
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = hist_jobs(pg, scenario, exclude_uid, until_ms, hours, max_jobs, &h, errstr,
                         errstr_size)))
        goto out;
    if (!h.jobs_cnt)
        goto done;
    if (!(uids = uids_json(&h))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((max_samples > 0 && (err = hist_samples(pg, scenario, uids, max_samples, until_ms, &h,
                                                errstr, errstr_size))) ||
        (err = hist_oom(pg, uids, until_ms, &h, errstr, errstr_size)))
        goto out;
done:
    *out = h;
    memset(&h, 0, sizeof(h));
out:
    cJSON_free(uids);
    dlb_history_clear(&h);
    return err;
}
