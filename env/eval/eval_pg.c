/* The evaluator's input: one environment's history, read from its
 * PostgreSQL schema (pipeline/store/sql) into the arrays of eval.h. */
#include "eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "env_registry.h"
#include "err.h"
#include "store_pg_conn.h"

/* The tables the pipeline's migrations create that the evaluator reads. */
#define EVAL_TABLES     "{job_events,runtime_samples,runtime_pods,node_events,plan_requests,plans}"
#define EVAL_TABLES_CNT 6

/* A cell as a number; NULL is -1 (the input's "none"). */
static int64_t cell_ms(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? -1 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static double cell_num(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? 0 : strtod(PQgetvalue(res, row, col), NULL);
}

static const char *cell_str(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col);
}

static int nomem(char *errstr, size_t errstr_size)
{
    return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
}

/* Fill row i of rows (an array of the loader's element) from result row i. */
typedef void (*fill_fn)(const PGresult *res, int i, void *rows);

static void fill_job(const PGresult *res, int i, void *rows)
{
    dlb_eval_job_t *j = (dlb_eval_job_t *)rows + i;

    j->first_ms = cell_ms(res, i, 0);
    j->queued_ms = cell_ms(res, i, 1);
    j->running_ms = cell_ms(res, i, 2);
    j->final_ms = cell_ms(res, i, 3);
    snprintf(j->final_state, sizeof(j->final_state), "%s", cell_str(res, i, 4));
}

static void fill_sample(const PGresult *res, int i, void *rows)
{
    dlb_eval_sample_t *s = (dlb_eval_sample_t *)rows + i;

    /* Rows come by job uid: a new uid is the next key. */
    s->job = i == 0 ? 0 : s[-1].job + !!strcmp(PQgetvalue(res, i, 0), PQgetvalue(res, i - 1, 0));
    s->t_ms = cell_ms(res, i, 1);
    s->cpu_used = cell_num(res, i, 2);
    s->cpu_req = cell_num(res, i, 3);
    s->mem_used = cell_num(res, i, 4);
    s->mem_req = cell_num(res, i, 5);
    for (int r = 0; r < DLB_EVAL_ROLES; r++) {
        s->role[r].cpu_used = cell_num(res, i, 6 + 4 * r);
        s->role[r].cpu_req = cell_num(res, i, 7 + 4 * r);
        s->role[r].mem_used = cell_num(res, i, 8 + 4 * r);
        s->role[r].mem_req = cell_num(res, i, 9 + 4 * r);
    }
}

static void fill_oom(const PGresult *res, int i, void *rows)
{
    dlb_eval_oom_t *o = (dlb_eval_oom_t *)rows + i;

    snprintf(o->job_uid, sizeof(o->job_uid), "%s", cell_str(res, i, 0));
    snprintf(o->pod, sizeof(o->pod), "%s", cell_str(res, i, 1));
    o->t_ms = cell_ms(res, i, 2);
}

static void fill_plans(const PGresult *res, int i, void *rows)
{
    dlb_eval_count_t *c = (dlb_eval_count_t *)rows + i;

    snprintf(c->stage, sizeof(c->stage), "%s", cell_str(res, i, 0));
    snprintf(c->optimizer, sizeof(c->optimizer), "%s", cell_str(res, i, 1));
    c->count = cell_ms(res, i, 2);
}

static void fill_count(const PGresult *res, int i, void *rows)
{
    ((int64_t *)rows)[i] = cell_ms(res, i, 0);
}

/* The sums over a sample's pods of one role (pod type): CPU used and
 * requested, memory used and requested, in fill_sample's order. */
#define ROLE_SUMS(type)                                                                            \
    ", sum(cu) FILTER (WHERE t = '" type "'), sum(cr) FILTER (WHERE t = '" type "'), "             \
    "sum(mu) FILTER (WHERE t = '" type "'), sum(mr) FILTER (WHERE t = '" type "')"

/* The runtime samples' loader (the comment on loaders says why so). */
#define SAMPLES_SQL                                                                                \
    "SELECT s.job_uid, s.event_time_ms, u.* FROM %s.runtime_samples s "                            \
    "CROSS JOIN LATERAL (SELECT sum(cu), sum(cr), sum(mu), sum(mr)" ROLE_SUMS("worker")            \
        ROLE_SUMS("ps") " FROM unnest(s.pod_types, s.pod_cpu_used, s.pod_cpu_requested, "          \
                        "s.pod_memory_used::float8[], s.pod_memory_requested::float8[]) "          \
                        "AS p(t, cu, cr, mu, mr)) u "                                              \
                        "ORDER BY s.job_uid, s.event_time_ms, s.event_id"

/* The loaders' queries: every %s is the quoted schema. Samples are summed
 * over their pods, and over the pods of each role (DLB_EVAL_WORKER, then
 * DLB_EVAL_PS): the durations are per sample, and a sum of used x duration
 * over pods is the pods' sum x duration. A sample's pods are its own row's
 * pod_* arrays: joining runtime_pods by event_id would mix in another job's
 * sample of the same id (ids are unique per job only). A sum over no pods
 * is NULL, read as 0. */
static const struct {
    const char *what, *sql;
    size_t size;
    fill_fn fill;
} loaders[] = {
    {"loading jobs",
     "SELECT min(event_time_ms), "
     "min(event_time_ms) FILTER (WHERE state IN ('created', 'pending')), "
     "min(event_time_ms) FILTER (WHERE state = 'running'), "
     "min(event_time_ms) FILTER (WHERE state IN ('succeeded', 'failed', 'stopped')), "
     "(array_agg(state ORDER BY event_time_ms, event_id) "
     "FILTER (WHERE state IN ('succeeded', 'failed', 'stopped')))[1] "
     "FROM %s.job_events GROUP BY job_uid ORDER BY job_uid",
     sizeof(dlb_eval_job_t), fill_job},
    {"loading runtime samples", SAMPLES_SQL, sizeof(dlb_eval_sample_t), fill_sample},
    {"loading OOMs",
     "SELECT job_uid, pod_name, event_time_ms FROM %s.node_events "
     "WHERE kind = 'oom_killed' ORDER BY job_uid, pod_name, event_time_ms, event_id",
     sizeof(dlb_eval_oom_t), fill_oom},
    {"loading plans", "SELECT stage, optimizer, count(*) FROM %s.plans GROUP BY 1, 2 ORDER BY 1, 2",
     sizeof(dlb_eval_count_t), fill_plans},
    {"counting plan requests", "SELECT count(*) FROM %s.plan_requests", sizeof(int64_t),
     fill_count},
    {"counting pods",
     "SELECT count(*) FROM (SELECT DISTINCT s.job_uid, p.name FROM %s.runtime_samples s "
     "CROSS JOIN LATERAL unnest(s.pod_names) AS p(name)) d",
     sizeof(int64_t), fill_count},
};

#define LOADERS_CNT (sizeof(loaders) / sizeof(loaders[0]))
_Static_assert(LOADERS_CNT == 6, "load_all() knows every loader by its index");

/* tmpl with every "%s" replaced by id (not printf: the templates are not
 * literals at the call). @returns 0, or -1 when it does not fit in size. */
static int sql_schema(char *out, size_t size, const char *tmpl, const char *id)
{
    size_t n = 0, idlen = strlen(id);

    for (const char *t = tmpl; *t; t++) {
        int is_id = t[0] == '%' && t[1] == 's';
        size_t add = is_id ? idlen : 1;

        if (n + add >= size)
            return -1;
        memcpy(out + n, is_id ? id : t, add);
        n += add;
        t += is_id;
    }
    out[n] = '\0';
    return 0;
}

/* Run loader l against schema id (quoted): *rows one element per result
 * row (at least one allocated, so NULL always means out of memory). */
static int load_rows(PGconn *conn, size_t l, const char *id, void **rows, size_t *cnt, char *errstr,
                     size_t errstr_size)
{
    char sql[2048];
    PGresult *res;
    int err, n;

    if (sql_schema(sql, sizeof(sql), loaders[l].sql, id))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s: schema name too long",
                          loaders[l].what);
    if ((err = dlb_pg_conn_exec(conn, sql, 0, NULL, NULL, 0, &res, loaders[l].what, errstr,
                                errstr_size)))
        return err;
    n = PQntuples(res);
    if (!(*rows = calloc(n > 0 ? (size_t)n : 1, loaders[l].size))) {
        PQclear(res);
        return nomem(errstr, errstr_size);
    }
    for (int i = 0; i < n; i++)
        loaders[l].fill(res, i, *rows);
    *cnt = (size_t)n;
    PQclear(res);
    return 0;
}

static int load_all(PGconn *conn, const char *id, dlb_eval_input_t *in, char *errstr,
                    size_t errstr_size)
{
    void *rows[LOADERS_CNT] = {0};
    size_t one, *cnts[LOADERS_CNT] = {
                    &in->jobs_cnt, &in->samples_cnt, &in->ooms_cnt, &in->plans_cnt, &one, &one};
    int err = 0;

    for (size_t l = 0; l < LOADERS_CNT && !err; l++)
        err = load_rows(conn, l, id, &rows[l], cnts[l], errstr, errstr_size);
    in->jobs = rows[0];
    in->samples = rows[1];
    in->ooms = rows[2];
    in->plans = rows[3];
    /* The counts: one row each. */
    if (rows[4])
        in->plan_requests = *(int64_t *)rows[4];
    if (rows[5])
        in->pods = *(int64_t *)rows[5];
    free(rows[4]);
    free(rows[5]);
    return err;
}

int dlb_eval_load(PGconn *conn, const char *schema, dlb_eval_input_t *in, char *errstr,
                  size_t errstr_size)
{
    char *id = NULL;
    int err;

    memset(in, 0, sizeof(*in));
    if ((err = dlb_pg_conn_check_tables(conn, schema, EVAL_TABLES, EVAL_TABLES_CNT, errstr,
                                        errstr_size)))
        return err;
    if ((err = dlb_pg_conn_ident(conn, schema, &id, errstr, errstr_size)))
        return err;
    /* One snapshot for every query: the pipeline may be writing meanwhile. */
    if ((err = dlb_pg_conn_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL,
                                NULL, 0, NULL, "begin", errstr, errstr_size)))
        goto out;
    if ((err = load_all(conn, id, in, errstr, errstr_size))) {
        dlb_pg_conn_rollback(conn);
        goto out;
    }
    err = dlb_pg_conn_exec(conn, "COMMIT", 0, NULL, NULL, 0, NULL, "commit", errstr, errstr_size);
out:
    PQfreemem(id);
    if (err)
        dlb_eval_input_clear(in);
    return err;
}

void dlb_eval_input_clear(dlb_eval_input_t *in)
{
    free(in->jobs);
    free(in->samples);
    free(in->ooms);
    free(in->plans);
    memset(in, 0, sizeof(*in));
}

/* The schema of an environment, as dlb_conf_finish() derives pg.schema
 * from env: '-' and '.' become '_'. */
static void env_schema(const char *env, char *schema, size_t size)
{
    snprintf(schema, size, "%s", env);
    for (char *p = schema; *p; p++)
        if (*p == '-' || *p == '.')
            *p = '_';
}

int dlb_eval_envs(const char *dsn, const char *const *envs, size_t cnt, size_t buckets,
                  dlb_eval_figures_t **out, char *errstr, size_t errstr_size)
{
    dlb_eval_input_t *in = NULL;
    dlb_eval_figures_t *f = NULL;
    PGconn *conn = NULL;
    char schema[64], why[512];
    int64_t bucket_ms;
    int err = 0;

    *out = NULL;
    if ((err = dlb_pg_open(&conn, dsn, errstr, errstr_size)))
        goto out;
    if (!(in = calloc(cnt ? cnt : 1, sizeof(*in))) || !(f = calloc(cnt ? cnt : 1, sizeof(*f)))) {
        err = nomem(errstr, errstr_size);
        goto out;
    }
    for (size_t i = 0; i < cnt; i++) {
        env_schema(envs[i], schema, sizeof(schema));
        snprintf(f[i].env, sizeof(f[i].env), "%s", envs[i]);
        if ((err = dlb_eval_load(conn, schema, &in[i], why, sizeof(why))) ||
            (err = dlb_eval_compute(&in[i], &f[i], why, sizeof(why)))) {
            dlb_seterr(errstr, errstr_size, err, "environment %s: %s", envs[i], why);
            goto out;
        }
    }
    /* One bucket width for all, so the plots share their time axis. */
    bucket_ms = dlb_eval_bucket_ms(f, cnt, buckets);
    for (size_t i = 0; i < cnt; i++)
        if ((err = dlb_eval_series(&in[i], bucket_ms, buckets, &f[i], why, sizeof(why)))) {
            dlb_seterr(errstr, errstr_size, err, "environment %s: %s", envs[i], why);
            goto out;
        }
    *out = f;
    f = NULL;
out:
    for (size_t i = 0; in && i < cnt; i++)
        dlb_eval_input_clear(&in[i]);
    free(in);
    dlb_eval_figures_free(f, cnt);
    PQfinish(conn);
    return err;
}

void dlb_eval_figures_free(dlb_eval_figures_t *f, size_t cnt)
{
    for (size_t i = 0; f && i < cnt; i++)
        dlb_eval_figures_clear(&f[i]);
    free(f);
}

int dlb_eval_switches(const char *dsn, dlb_eval_switch_t **out, size_t *cnt, char *errstr,
                      size_t errstr_size)
{
    dlb_env_change_t *ch = NULL;
    dlb_eval_switch_t *sw = NULL;
    PGconn *pg = NULL;
    size_t n = 0, k = 0;
    int err;

    *out = NULL;
    *cnt = 0;
    /* Read only: an evaluation never creates the registry. */
    if ((err = dlb_env_registry_connect(dsn, &pg, errstr, errstr_size)) ||
        (err = dlb_env_history(pg, NULL, &ch, &n, errstr, errstr_size)))
        goto out;
    if (n && !(sw = calloc(n, sizeof(*sw)))) {
        err = nomem(errstr, errstr_size);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *d, *cause;

        if (strcmp(ch[i].action, "promote"))
            continue;
        d = cJSON_Parse(ch[i].detail);
        cause = d ? cJSON_GetObjectItemCaseSensitive(d, "cause") : NULL;
        sw[k].at_ms = ch[i].at_ms;
        snprintf(sw[k].env, sizeof(sw[k].env), "%s", ch[i].name);
        snprintf(sw[k].cause, sizeof(sw[k].cause), "%s",
                 cJSON_IsString(cause) ? cause->valuestring : "manual");
        cJSON_Delete(d);
        k++;
    }
    *out = sw;
    *cnt = k;
    sw = NULL;
out:
    free(sw);
    dlb_env_history_free(ch, n);
    if (pg)
        PQfinish(pg);
    return err;
}
