/* The similar jobs a plan request learns from (dlb_pg_load_history): the
 * jobs table's rows of a scenario, and a memo of them for one transaction.
 * A batch of plan requests of one scenario (a burst of creates, 1,000
 * gateway calls a second) asked PostgreSQL the same question once a request;
 * the memo reads the scenario's newest jobs as of no time at all once, and
 * answers a request from it when nothing in it is at or after the request's
 * time (every row then reads as it would as of the request) and this
 * connection wrote no event since; else the request is asked for as before.
 * Other consumers' commits meanwhile are not seen by the memo, as they were
 * not by a request answered a moment earlier: one transaction at most. */
#include "store_pg_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <libpq-fe.h>

#include "err.h"

/* clang-format off */
/* Everything "as of" $3, the request time, so that answering the same
 * request later (a redelivery, a replay) sees the same history: state and
 * exit reason from the newest job event before it, samples and OOMs before it.
 * The job's marks (migration 015) answer without a probe of the events where
 * they can: a newest state before the request is the state as of it; they
 * come back too (the last three columns), to say what a read serves.
 * The last column is the job's OOM-killed pods, at most $6 of them, a JSON
 * array: in the same round trip, as one plan (a statement of its own was
 * planned anew on every call). */
static const dlb_pg_stmt_t st_hist_jobs = {DLB_PG_ST_HIST_JOBS, "dlb_hist_jobs",
    "SELECT j.uid, j.created_ms, "
    "CASE WHEN j.last_state_ms IS NULL THEN '' "
    "WHEN j.last_state_ms < $3::bigint THEN j.last_state "
    "ELSE COALESCE((SELECT e.state FROM job_events e WHERE e.job_uid = j.uid "
    "AND e.state IS NOT NULL AND e.event_time_ms < $3::bigint "
    "ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1), '') END, "
    "CASE WHEN j.last_exit_ms IS NULL THEN '' "
    "WHEN j.last_exit_ms < $3::bigint THEN j.last_exit_reason "
    "ELSE COALESCE((SELECT e.exit_reason FROM job_events e WHERE e.job_uid = j.uid "
    "AND e.exit_reason IS NOT NULL AND e.event_time_ms < $3::bigint "
    "ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1), '') END, "
    "j.samples_seq, j.samples_max_ms, "
    "CASE WHEN j.oom_max_ms IS NULL THEN '[]' "
    "ELSE COALESCE((SELECT json_agg(o.pod_name ORDER BY o.pod_name) FROM ("
    "SELECT DISTINCT n.pod_name FROM node_events n WHERE n.job_uid = j.uid "
    "AND n.kind = 'oom_killed' AND n.pod_name <> '' AND n.event_time_ms < $3::bigint "
    "ORDER BY 1 LIMIT $6::integer) o), '[]') END, "
    "j.last_state_ms, j.last_exit_ms, j.oom_max_ms "
    "FROM jobs j WHERE j.scenario = $1 AND j.created_ms >= $2::bigint "
    "AND j.created_ms < $3::bigint AND j.uid <> $4 "
    "ORDER BY j.created_ms DESC, j.uid LIMIT $5::integer"};

/* clang-format on */

/* A row of st_hist_jobs. */
typedef struct hrow {
    dlb_hist_job_t job; /* no samples; oom_pods owned */
    dlb_pg_hist_mark_t mark;
    int64_t state_ms, exit_ms, oom_ms; /* INT64_MIN: none */
} hrow_t;

/* One scenario's jobs as of no time, read at t_ms by this transaction. */
typedef struct hmemo_entry {
    char scenario[DLB_ID_MAX];
    int hours, max_jobs;
    int64_t t_ms;
    uint64_t writes; /* pg->writes when read (or asked for) */
    int read;        /* rows holds the jobs; else a request only asked */
    hrow_t *rows;
    size_t cnt;
} hmemo_entry_t;

#define HMEMO_SCENARIOS 8

struct dlb_pg_hmemo {
    hmemo_entry_t e[HMEMO_SCENARIOS];
    size_t next; /* the entry a new scenario takes */
};

static void rows_free(hrow_t *rows, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        free(rows[i].job.oom_pods);
    free(rows);
}

static void entry_clear(hmemo_entry_t *e)
{
    rows_free(e->rows, e->cnt);
    memset(e, 0, sizeof(*e));
}

void dlb_pg_hist_jobs_forget(dlb_pg_t *pg)
{
    if (!pg->hmemo)
        return;
    for (size_t i = 0; i < HMEMO_SCENARIOS; i++)
        entry_clear(&pg->hmemo->e[i]);
    free(pg->hmemo);
    pg->hmemo = NULL;
}

/* A job's OOM-killed pods from hist_jobs' JSON array of names. */
static int hist_oom_pods(dlb_hist_job_t *j, const char *json, char *errstr, size_t errstr_size)
{
    cJSON *arr = cJSON_Parse(json), *it;
    int err = 0, n;

    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE,
                          "postgresql: the OOM-killed pods of job %s are not a JSON array",
                          j->job_uid);
    }
    if ((n = cJSON_GetArraySize(arr)) > 0 &&
        !(j->oom_pods = calloc((size_t)n, sizeof(*j->oom_pods))))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    cJSON_ArrayForEach(it, arr)
    {
        if (err)
            break;
        if (cJSON_IsString(it))
            snprintf(j->oom_pods[j->oom_pods_cnt++], DLB_ID_MAX, "%s", it->valuestring);
    }
    cJSON_Delete(arr);
    return err;
}

static int64_t col_ms(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? INT64_MIN : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* st_hist_jobs' rows, *rows (*cnt of them) the caller's to free. */
static int query_rows(dlb_pg_t *pg, const char *scenario, const char *exclude_uid, int64_t from_ms,
                      int64_t until_ms, int limit, int max_jobs, hrow_t **rows, size_t *cnt,
                      char *errstr, size_t errstr_size)
{
    char from[24], until[24], lim[24], oom_lim[24];
    const char *v[6] = {scenario, from, until, exclude_uid ? exclude_uid : "", lim, oom_lim};
    PGresult *res = NULL;
    hrow_t *r = NULL;
    int err, n;

    *rows = NULL;
    *cnt = 0;
    snprintf(from, sizeof(from), "%" PRId64, from_ms);
    snprintf(until, sizeof(until), "%" PRId64, until_ms);
    snprintf(lim, sizeof(lim), "%d", limit);
    /* The OOM-killed pods of all the jobs together stay within
     * DLB_PG_MAX_OOM_ROWS. */
    snprintf(oom_lim, sizeof(oom_lim), "%d",
             DLB_PG_MAX_OOM_ROWS / max_jobs > 0 ? DLB_PG_MAX_OOM_ROWS / max_jobs : 1);
    if ((err = dlb_pg_run(pg, &st_hist_jobs, 6, v, NULL, 0, &res, errstr, errstr_size)))
        return err;
    n = PQntuples(res);
    if (n > 0 && !(r = calloc((size_t)n, sizeof(*r)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        dlb_hist_job_t *j = &r[i].job;
        snprintf(j->job_uid, sizeof(j->job_uid), "%s", PQgetvalue(res, i, 0));
        j->created_ms = strtoll(PQgetvalue(res, i, 1), NULL, 10);
        snprintf(j->state, sizeof(j->state), "%s", PQgetvalue(res, i, 2));
        snprintf(j->exit_reason, sizeof(j->exit_reason), "%s", PQgetvalue(res, i, 3));
        j->completed = !strcmp(j->state, "succeeded") || !strcmp(j->exit_reason, "Completed");
        r[i].mark.seq = strtoll(PQgetvalue(res, i, 4), NULL, 10);
        r[i].mark.max_ms = col_ms(res, i, 5);
        r[i].state_ms = col_ms(res, i, 7);
        r[i].exit_ms = col_ms(res, i, 8);
        r[i].oom_ms = col_ms(res, i, 9);
        *cnt = (size_t)i + 1;
        if ((err = hist_oom_pods(j, PQgetvalue(res, i, 6), errstr, errstr_size)))
            goto out;
    }
    *rows = r;
    r = NULL;
out:
    if (r)
        rows_free(r, *cnt), *cnt = 0;
    PQclear(res);
    return err;
}

/* Whether e's rows read as of until_ms as they do as of no time: nothing
 * of them at or after it. */
static int entry_serves(const dlb_pg_t *pg, const hmemo_entry_t *e, const char *scenario,
                        int64_t until_ms, int hours, int max_jobs)
{
    if (!e->read)
        return 0;
    if (strcmp(e->scenario, scenario) || e->hours != hours || e->max_jobs != max_jobs ||
        e->writes != pg->writes || until_ms < e->t_ms)
        return 0;
    for (size_t i = 0; i < e->cnt; i++) {
        const hrow_t *r = &e->rows[i];
        if (r->job.created_ms >= until_ms || r->mark.max_ms >= until_ms ||
            r->state_ms >= until_ms || r->exit_ms >= until_ms || r->oom_ms >= until_ms)
            return 0;
    }
    return 1;
}

/* h's jobs and *marks from rows: those created since from_ms but
 * exclude_uid, at most max_jobs. steal: the rows' OOM-killed pods move to h
 * (rows read for this request alone), else they are copied (the memo's). */
static int take_rows(hrow_t *rows, size_t cnt, int steal, int64_t from_ms, const char *exclude_uid,
                     int max_jobs, dlb_history_t *h, dlb_pg_hist_mark_t **marks, char *errstr,
                     size_t errstr_size)
{
    size_t n = 0;

    if (cnt &&
        (!(h->jobs = calloc(cnt, sizeof(*h->jobs))) || !(*marks = calloc(cnt, sizeof(**marks)))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cnt && n < (size_t)max_jobs; i++) {
        hrow_t *r = &rows[i];
        dlb_hist_job_t *j = &h->jobs[n];
        if (r->job.created_ms < from_ms || (exclude_uid && !strcmp(r->job.job_uid, exclude_uid)))
            continue;
        *j = r->job;
        if (steal) {
            r->job.oom_pods = NULL;
            r->job.oom_pods_cnt = 0;
        } else if (r->job.oom_pods_cnt) {
            if (!(j->oom_pods = malloc(r->job.oom_pods_cnt * sizeof(*j->oom_pods)))) {
                j->oom_pods_cnt = 0;
                h->jobs_cnt = n;
                return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            }
            memcpy(j->oom_pods, r->job.oom_pods, r->job.oom_pods_cnt * sizeof(*j->oom_pods));
        }
        (*marks)[n++] = r->mark;
    }
    h->jobs_cnt = n;
    return 0;
}

/* *out: the memo's entry of scenario, where it serves until_ms. The first
 * request of a scenario since this connection last wrote an event only
 * leaves a mark (a stream of samples between requests would make every
 * memo read wasted); the second reads the jobs as of no time, once. NULL
 * when nothing serves (the caller then asks as before). @returns 0 or the
 * read's error. */
static int memo_entry(dlb_pg_t *pg, const char *scenario, int64_t from_ms, int64_t until_ms,
                      int hours, int max_jobs, hmemo_entry_t **out, char *errstr,
                      size_t errstr_size)
{
    hmemo_entry_t *e = NULL;
    int err;

    *out = NULL;
    if (!dlb_pg_in_tx(pg) || strlen(scenario) >= sizeof(e->scenario) || max_jobs >= INT32_MAX)
        return 0;
    if (!pg->hmemo && !(pg->hmemo = calloc(1, sizeof(*pg->hmemo))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < HMEMO_SCENARIOS && !e; i++)
        if (!strcmp(pg->hmemo->e[i].scenario, scenario))
            e = &pg->hmemo->e[i];
    if (e && entry_serves(pg, e, scenario, until_ms, hours, max_jobs)) {
        *out = e;
        return 0;
    }
    if (!e || e->writes != pg->writes || e->hours != hours || e->max_jobs != max_jobs) {
        if (!e) {
            e = &pg->hmemo->e[pg->hmemo->next];
            pg->hmemo->next = (pg->hmemo->next + 1) % HMEMO_SCENARIOS;
        }
        entry_clear(e);
        snprintf(e->scenario, sizeof(e->scenario), "%s", scenario);
        e->hours = hours;
        e->max_jobs = max_jobs;
        e->writes = pg->writes;
        return 0;
    }
    if (e->read)
        return 0; /* read in this state already: asking again finds the same */
    if ((err = query_rows(pg, scenario, "", from_ms, INT64_MAX, max_jobs + 1, max_jobs, &e->rows,
                          &e->cnt, errstr, errstr_size)))
        return err;
    e->t_ms = until_ms;
    e->read = 1;
    if (entry_serves(pg, e, scenario, until_ms, hours, max_jobs))
        *out = e;
    return 0;
}

int dlb_pg_hist_jobs(dlb_pg_t *pg, const char *scenario, const char *exclude_uid, int64_t until_ms,
                     int hours, int max_jobs, dlb_history_t *h, dlb_pg_hist_mark_t **marks,
                     char *errstr, size_t errstr_size)
{
    const int64_t from_ms = until_ms - (int64_t)hours * 3600000;
    hmemo_entry_t *e;
    hrow_t *rows;
    size_t cnt;
    int err;

    if ((err =
             memo_entry(pg, scenario, from_ms, until_ms, hours, max_jobs, &e, errstr, errstr_size)))
        return err;
    if (e)
        return take_rows(e->rows, e->cnt, 0, from_ms, exclude_uid, max_jobs, h, marks, errstr,
                         errstr_size);
    if ((err = query_rows(pg, scenario, exclude_uid, from_ms, until_ms, max_jobs, max_jobs, &rows,
                          &cnt, errstr, errstr_size)))
        return err;
    err = take_rows(rows, cnt, 1, from_ms, NULL, max_jobs, h, marks, errstr, errstr_size);
    rows_free(rows, cnt);
    return err;
}
