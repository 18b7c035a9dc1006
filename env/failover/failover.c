/* The failover decider (failover.h): lease, inputs, policy, switch. */
#include "failover.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "clock.h"
#include "env_roles.h"
#include "err.h"
#include "failover_policy.h"
#include "log.h"
#include "metrics.h"
#include "store_pg_conn.h"
#include "switch_mark.h"

/* A switch the process that made it has not marked in this long gets its
 * markers from the decider (env promote writes its own at once; one that
 * failed, or died in between, leaves them to the decider). */
#define MARK_GRACE_MS 10000

struct dlb_failover {
    const dlb_conf_t *conf; /* the front: conf->env */
    dlb_failover_policy_t policy;
    int64_t lease_ms;
    char holder[128];
    int leader; /* held the lease at the last tick */
    dlb_failover_verdict_t last_verdict;
    int last_logged;                    /* the last verdict was logged (only the leader logs it) */
    char standby[DLB_ENV_NAME_MAX + 1]; /* of the last tick, for its metric */
    dlb_series_t *m_leader, *m_jobs, *m_failed, *m_share, *m_late, *m_threshold, *m_pinned,
        *m_switches, *m_standby, *m_verdict;
};

int dlb_failover_new(const dlb_conf_t *conf, const char *role, dlb_failover_t **out, char *errstr,
                     size_t errstr_size)
{
    dlb_failover_t *f = calloc(1, sizeof(*f));
    char host[64] = "?";

    *out = NULL;
    if (!f)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    f->conf = conf;
    f->policy.window_ms = (int64_t)conf->failover.window_s * 1000;
    f->policy.min_jobs = conf->failover.min_jobs;
    f->policy.threshold = conf->failover.threshold;
    f->policy.cooldown_ms = (int64_t)conf->failover.cooldown_s * 1000;
    f->lease_ms = (int64_t)conf->failover.lease_s * 1000;
    f->policy.late_ms = conf->failover.late_ms;
    f->policy.min_requests = conf->failover.late_min_requests;
    f->policy.late_threshold = conf->failover.late_threshold;
    f->last_verdict = (dlb_failover_verdict_t)-1;
    gethostname(host, sizeof(host) - 1);
    snprintf(f->holder, sizeof(f->holder), "%s@%s:%ld:%" PRId64, role, host, (long)getpid(),
             dlb_clock_wall_ms());
    f->m_leader =
        dlb_metric_gauge("dlbrain_failover_leader",
                         "1 while this process holds the failover lease and decides", "", NULL);
    f->m_jobs = dlb_metric_gauge("dlbrain_failover_window_jobs",
                                 "Jobs of the real environment whose newest outcome (succeeded or "
                                 "failed) is in the failover window",
                                 "", NULL);
    f->m_failed = dlb_metric_gauge("dlbrain_failover_window_failed_jobs",
                                   "... of them, those that failed", "", NULL);
    f->m_share = dlb_metric_gauge("dlbrain_failover_failed_ratio",
                                  "Failed share of the window's jobs (0 when none)", "", NULL);
    f->m_late = dlb_metric_gauge("dlbrain_failover_late_ratio",
                                 "Share of the window's judged plan requests whose plan was late "
                                 "or is missing (0 when none, or env.failover.late.ms is 0)",
                                 "", NULL);
    f->m_threshold =
        dlb_metric_gauge("dlbrain_failover_threshold_ratio",
                         "env.failover.threshold: the failed share that trips", "", NULL);
    f->m_pinned =
        dlb_metric_gauge("dlbrain_failover_pinned",
                         "1 while a manual promotion pins the real environment", "", NULL);
    f->m_switches = dlb_metric_counter("dlbrain_failover_switches_total",
                                       "Automatic switches this process made", "", NULL);
    dlb_metric_set(f->m_threshold, f->policy.threshold);
    *out = f;
    return 0;
}

const char *dlb_failover_holder(const dlb_failover_t *f)
{
    return f->holder;
}

/* dlbrain_failover_standby{env} is 1 for the standby; a former one's hidden. */
static void metrics_roles(dlb_failover_t *f, const dlb_env_roles_t *roles, dlb_failover_verdict_t v)
{
    if (strcmp(f->standby, roles->standby) || !f->m_standby) {
        dlb_metric_hide(f->m_standby);
        f->m_standby = roles->standby[0]
                           ? dlb_metric_gauge("dlbrain_failover_standby",
                                              "1 for the standby environment, the one automatic "
                                              "failover promotes",
                                              "env", DLB_LV(roles->standby))
                           : NULL;
        snprintf(f->standby, sizeof(f->standby), "%s", roles->standby);
    }
    dlb_metric_set(f->m_standby, 1);
    dlb_metric_set(f->m_pinned, roles->pinned);
    if (v != f->last_verdict) {
        dlb_metric_hide(f->m_verdict);
        f->m_verdict = dlb_metric_gauge("dlbrain_failover_verdict",
                                        "1 for the policy's last verdict (every relay evaluates, "
                                        "the leader acts on it): trip, "
                                        "healthy, few_jobs, cooldown, pinned, no_standby, no_real",
                                        "verdict", DLB_LV(dlb_failover_verdict_name(v)));
    }
    dlb_metric_set(f->m_verdict, 1);
}

/* Run a query over a time window of the real environment's tables. parts
 * (NULL-ended) is the SQL around the schema's quoted name, which goes
 * between each two of them: an identifier cannot be a parameter. The
 * window's ends can: $1 and $2. */
static int window_query(PGconn *pg, const char *real, const char *const *parts, int64_t from,
                        int64_t to, const char *reading, PGresult **res, char *errstr, size_t size)
{
    char a[32], b[32], sql[768], what[128], *ident;
    const char *values[2] = {a, b};
    size_t len = 0;
    int err;

    snprintf(a, sizeof(a), "%" PRId64, from);
    snprintf(b, sizeof(b), "%" PRId64, to);
    if ((err = dlb_pg_conn_ident(pg, real, &ident, errstr, size)))
        return err;
    for (size_t i = 0; parts[i] && len < sizeof(sql); i++)
        len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s%s", i ? ident : "", parts[i]);
    PQfreemem(ident);
    if (len >= sizeof(sql))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "environment name %s is too long", real);
    snprintf(what, sizeof(what), "reading the %s of %s", reading, real);
    return dlb_pg_conn_exec(pg, sql, 2, values, NULL, 0, res, what, errstr, size);
}

/* The real environment's outcomes in (from, to], grouped by job and in
 * order, as the policy wants them. *res holds the job uids the outcomes
 * point into: PQclear() it after deciding. job_events_time_idx serves the
 * range. */
static int outcomes_read(PGconn *pg, const char *real, int64_t from, int64_t to,
                         dlb_failover_outcome_t **out, size_t *cnt, PGresult **res, char *errstr,
                         size_t size)
{
    static const char *const sql[] = {
        "SELECT job_uid, event_time_ms, state = 'failed' FROM ",
        ".job_events WHERE event_time_ms > $1::bigint AND event_time_ms <= $2::bigint AND state "
        "IN ('succeeded', 'failed') ORDER BY job_uid, event_time_ms, event_id",
        NULL};
    dlb_failover_outcome_t *o = NULL;
    size_t n;
    int err;

    *out = NULL;
    *cnt = 0;
    *res = NULL;
    if ((err = window_query(pg, real, sql, from, to, "job outcomes", res, errstr, size)))
        return err;
    n = (size_t)PQntuples(*res);
    if (n && !(o = calloc(n, sizeof(*o)))) {
        PQclear(*res);
        *res = NULL;
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        o[i].job = PQgetvalue(*res, (int)i, 0);
        o[i].at_ms = strtoll(PQgetvalue(*res, (int)i, 1), NULL, 10);
        o[i].failed = !strcmp(PQgetvalue(*res, (int)i, 2), "t");
    }
    *out = o;
    *cnt = n;
    return 0;
}

/* The real environment's plan requests stored in (from, to] (the
 * database's clock, as the switch's), each with when its plan was stored
 * (a plan answers its trigger request: plans_trigger_event_id_job_uid_key). */
static int requests_read(PGconn *pg, const char *real, int64_t from, int64_t to,
                         dlb_failover_request_t **out, size_t *cnt, char *errstr, size_t size)
{
    static const char *const sql[] = {
        "SELECT (extract(epoch FROM r.received_at) * 1000)::bigint, COALESCE((extract(epoch "
        "FROM p.created_at) * 1000)::bigint, -1) FROM ",
        ".plan_requests r LEFT JOIN ",
        ".plans p ON p.trigger_event_id = r.event_id AND p.job_uid = r.job_uid WHERE "
        "r.received_at > to_timestamp($1::bigint / 1000.0) AND r.received_at <= "
        "to_timestamp($2::bigint / 1000.0)",
        NULL};
    dlb_failover_request_t *r = NULL;
    PGresult *res;
    size_t n;
    int err;

    *out = NULL;
    *cnt = 0;
    if ((err = window_query(pg, real, sql, from, to, "plan requests", &res, errstr, size)))
        return err;
    n = (size_t)PQntuples(res);
    if (n && !(r = calloc(n, sizeof(*r)))) {
        PQclear(res);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        r[i].at_ms = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
        r[i].answered_ms = strtoll(PQgetvalue(res, (int)i, 1), NULL, 10);
    }
    PQclear(res);
    *out = r;
    *cnt = n;
    return 0;
}

/* The promote row's detail: why, and the figures it was decided on. */
static char *switch_detail(const dlb_failover_t *f, const dlb_failover_figures_t *fig,
                           const char *reason)
{
    cJSON *o = cJSON_CreateObject();
    char *s = NULL;

    if (o && cJSON_AddStringToObject(o, "reason", reason) &&
        cJSON_AddNumberToObject(o, "jobs", (double)fig->jobs) &&
        cJSON_AddNumberToObject(o, "failed", (double)fig->failed) &&
        cJSON_AddNumberToObject(o, "share", fig->share) &&
        cJSON_AddNumberToObject(o, "threshold", f->policy.threshold) &&
        cJSON_AddNumberToObject(o, "min_jobs", (double)f->policy.min_jobs) &&
        cJSON_AddNumberToObject(o, "window_from_ms", (double)fig->from_ms) &&
        cJSON_AddNumberToObject(o, "window_to_ms", (double)fig->to_ms) &&
        (!f->policy.late_ms ||
         (cJSON_AddNumberToObject(o, "requests", (double)fig->requests) &&
          cJSON_AddNumberToObject(o, "late", (double)fig->late) &&
          cJSON_AddNumberToObject(o, "late_share", fig->late_share) &&
          cJSON_AddNumberToObject(o, "late_ms", (double)f->policy.late_ms) &&
          cJSON_AddNumberToObject(o, "late_threshold", f->policy.late_threshold))) &&
        cJSON_AddStringToObject(o, "decided_by", f->holder))
        s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Write the markers of switch id (env became real) into the front's topics. */
static int mark(dlb_failover_t *f, PGconn *pg, int64_t id, const char *env, char *errstr,
                size_t size)
{
    int written, err;

    if ((err = dlb_switch_mark(f->conf, pg, id, env, "failover", &written, errstr, size)))
        return err;
    dlb_info("failover: switch %" PRId64 " (%s real) marked in %d partition(s) of %s.*", id, env,
             written, f->conf->env);
    return 0;
}

/* The newest switch, when it is older than the grace and the front holds no
 * marker of it. */
static int mark_missing(dlb_failover_t *f, PGconn *pg, const dlb_env_roles_t *roles, char *errstr,
                        size_t size)
{
    int64_t marked;
    int err;

    if (!roles->last_switch_id || roles->now_ms - roles->last_switch_ms < MARK_GRACE_MS)
        return 0;
    if ((err = dlb_env_mark_last(pg, f->conf->env, &marked, errstr, size)))
        return err;
    if (marked >= roles->last_switch_id)
        return 0;
    dlb_warn("failover: switch %" PRId64 " (%s real) has no markers in %s.* after %d s; writing "
             "them",
             roles->last_switch_id, roles->last_switch_env, f->conf->env, MARK_GRACE_MS / 1000);
    return mark(f, pg, roles->last_switch_id, roles->last_switch_env, errstr, size);
}

int dlb_failover_tick(dlb_failover_t *f, PGconn *pg, dlb_failover_tick_t *out, char *errstr,
                      size_t errstr_size)
{
    dlb_env_roles_t roles;
    dlb_failover_state_t st;
    dlb_failover_figures_t fig;
    dlb_failover_outcome_t *o = NULL;
    dlb_failover_request_t *rq = NULL;
    dlb_failover_verdict_t v;
    PGresult *res = NULL;
    char reason[256], *detail = NULL;
    size_t n = 0, m = 0;
    int err, held;

    memset(out, 0, sizeof(*out));
    if ((err = dlb_env_lease_take(pg, f->holder, f->lease_ms, &held, errstr, errstr_size)))
        return err;
    if (held != f->leader)
        dlb_info("failover: %s the lease (%s): %s", held ? "took" : "lost", f->holder,
                 held ? "this relay decides" : "another process decides");
    f->leader = held;
    dlb_metric_set(f->m_leader, held);
    out->leader = held;
    /* Every relay reads and evaluates, so each one's gauges say what the
     * registry and the real environment say; only the leader acts. */
    if ((err = dlb_env_roles_get(pg, &roles, errstr, errstr_size)) ||
        (held && (err = mark_missing(f, pg, &roles, errstr, errstr_size))))
        return err;
    st.has_real = roles.real[0] != '\0';
    st.has_standby = roles.standby[0] != '\0';
    st.pinned = roles.pinned;
    st.last_switch_ms = roles.last_switch_ms;
    /* The database's clock, the one the switch re-checks the cool-down by. */
    if (st.has_real && (err = outcomes_read(pg, roles.real, roles.now_ms - f->policy.window_ms,
                                            roles.now_ms, &o, &n, &res, errstr, errstr_size)))
        return err;
    if (st.has_real && f->policy.late_ms > 0 &&
        (err = requests_read(pg, roles.real, roles.now_ms - f->policy.window_ms, roles.now_ms, &rq,
                             &m, errstr, errstr_size))) {
        free(o);
        PQclear(res);
        return err;
    }
    v = dlb_failover_decide_all(&f->policy, o, n, rq, m, roles.now_ms, &st, &fig);
    free(o);
    free(rq);
    PQclear(res);
    dlb_metric_set(f->m_jobs, (double)fig.jobs);
    dlb_metric_set(f->m_failed, (double)fig.failed);
    dlb_metric_set(f->m_share, fig.share);
    dlb_metric_set(f->m_late, fig.late_share);
    metrics_roles(f, &roles, v);
    if (held && (v != f->last_verdict || held != f->last_logged))
        dlb_info("failover: %s (real %s, standby %s): %" PRId64 " of %" PRId64
                 " job(s) failed in the window",
                 dlb_failover_verdict_name(v), roles.real[0] ? roles.real : "none",
                 roles.standby[0] ? roles.standby : "none", fig.failed, fig.jobs);
    f->last_verdict = v;
    f->last_logged = held;
    if (!held || v != DLB_FAILOVER_TRIP)
        return 0;
    if (fig.by_late)
        snprintf(reason, sizeof(reason),
                 "%" PRId64 " of %" PRId64 " plan requests got no plan within %" PRId64
                 " ms (%.1f %%) in the last %" PRId64 " s, threshold %.1f %%",
                 fig.late, fig.requests, f->policy.late_ms, 100.0 * fig.late_share,
                 (fig.to_ms - fig.from_ms) / 1000, 100.0 * f->policy.late_threshold);
    else
        snprintf(reason, sizeof(reason),
                 "%" PRId64 " of %" PRId64 " jobs failed (%.1f %%) in the last %" PRId64
                 " s, threshold %.1f %%",
                 fig.failed, fig.jobs, 100.0 * fig.share, (fig.to_ms - fig.from_ms) / 1000,
                 100.0 * f->policy.threshold);
    if (!(detail = switch_detail(f, &fig, reason)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    err = dlb_env_failover_switch(pg, f->holder, roles.real, f->policy.cooldown_ms, detail,
                                  out->now, sizeof(out->now), &out->switch_id, errstr, errstr_size);
    free(detail);
    if (err == DLB_ERR_INVALID) { /* the registry changed meanwhile: next tick */
        dlb_info("failover: %s", errstr);
        return 0;
    }
    if (err)
        return err;
    out->switched = 1;
    snprintf(out->was, sizeof(out->was), "%s", roles.real);
    dlb_metric_add(f->m_switches, 1);
    dlb_warn("failover: switched %s -> %s (switch %" PRId64 "): %s", out->was, out->now,
             out->switch_id, reason);
    /* Failing here leaves the markers to the next ticks' mark_missing(). */
    return mark(f, pg, out->switch_id, out->now, errstr, errstr_size);
}

void dlb_failover_destroy(dlb_failover_t *f, PGconn *pg)
{
    char errstr[256];

    if (!f)
        return;
    if (pg && f->leader && dlb_env_lease_release(pg, f->holder, errstr, sizeof(errstr)))
        dlb_warn("failover: %s", errstr);
    free(f);
}
