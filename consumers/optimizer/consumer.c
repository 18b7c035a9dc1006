/* The optimizer role: job, node and runtime events folded into per-job state
 * (Redis, PostgreSQL), plan requests answered with plans on <env>.plans. The
 * stream (pipeline/stream/stream.h) does the ordering and the exactly-once delivery;
 * this file only says what an event means to the optimizer. */
#include "consumer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "codec.h"
#include "err.h"
#include "log.h"
#include "optimizer.h"
#include "store_pg.h"
#include "stream.h"

/* buf: the job's plan of the request's id, stored before (a redelivered
 * request), or NULL; plan_request() owns it. */
static int plan_request(dlb_stream_t *s, const dlb_plan_request_t *req, const char *plan_id,
                        void *buf, size_t len, char *errstr, size_t size)
{
    const dlb_conf_t *conf = dlb_stream_conf(s);
    dlb_pg_t *pg = dlb_stream_pg(s);
    dlb_job_state_t st = {0};
    dlb_history_t hist = {0};
    dlb_event_t pe = {.type = DLB_EV_PLAN};
    dlb_opt_input_t in = {0};
    dlb_opt_needs_t needs;
    dlb_oom_plan_t *oom_plans = NULL;
    dlb_oom_answers_t answered = {0};
    dlb_cluster_view_t cluster = {0};
    dlb_cluster_job_t self = {0};
    size_t oom_plans_cnt = 0;
    char sub[512];
    int err;

    /* A redelivered request gets the plan it got the first time, byte for
     * byte, even if the job has moved on since: a plan id names one plan of
     * the job (another job may use the same request id). */
    if (buf) {
        dlb_info("plan %s for job %s exists already; sending it again", plan_id, req->job_uid);
        err = dlb_stream_emit(s, req->job_uid, buf, len);
        buf = NULL;
        goto out;
    }
    if ((err = dlb_stream_load_job(s, req->job_uid, req->event_time_ms, &st, errstr, size)))
        goto out;
    needs = dlb_opt_needs(conf->optimizer_set, req, &st);
    if (needs.history &&
        (err = dlb_pg_load_history(pg, st.job.meta.scenario, req->job_uid, req->event_time_ms,
                                   conf->history_hours, conf->history_max_jobs,
                                   4 * conf->window_size, &hist, errstr, size)))
        goto out;
    /* The OOMs and node failures earlier plans answered, as of the request
     * (a redo sees the same rows: later answers have later event times).
     * Only a job with an OOM or a node failure can have any. */
    if (needs.answers && (err = dlb_pg_load_oom_plans(pg, req->job_uid, req->event_time_ms,
                                                      &oom_plans, &oom_plans_cnt, errstr, size)))
        goto out;
    in.req = req;
    in.job = &st;
    in.history = &hist;
    in.limits = &conf->limits;
    in.tuning = &conf->tuning;
    in.oom_plans = oom_plans;
    in.oom_plans_cnt = oom_plans_cnt;
    in.optimizer_set = conf->optimizer_set;
    in.answered = &answered;
    if (needs.cluster && dlb_stream_redis(s)) {
        if (dlb_cluster_redis_load(dlb_stream_redis(s), &cluster, sub, sizeof(sub)))
            dlb_warn("plan for job %s without the cluster's other jobs: %s", req->job_uid, sub);
        else
            in.cluster = &cluster;
        in.cluster_out = &self;
    }
    if ((err = dlb_router_plan(&in, &pe.u.plan, sub, sizeof(sub)))) {
        if (err != DLB_ERR_INVALID) {
            dlb_seterr(errstr, size, err, "planning %s: %s", req->event_id, sub);
            goto out;
        }
        /* A request the router cannot serve is bad input, not a failure. */
        dlb_stream_reject(s, "process", err, sub);
        err = 0;
        goto out;
    }
    if ((err = dlb_codec_encode(dlb_stream_catalog(s), &pe, &buf, &len, errstr, size)) ||
        (err = dlb_pg_put_plan(pg, &pe.u.plan, buf, len, errstr, size)))
        goto out;
    /* In batch_process()'s transaction: the answers are recorded iff the plan
     * is; one row per OOM pod the plan answers. */
    for (size_t i = 0; i < answered.cnt; i++) {
        dlb_oom_plan_t *a = &answered.items[i];
        snprintf(a->plan_id, sizeof(a->plan_id), "%s", pe.u.plan.plan_id);
        a->event_time_ms = req->event_time_ms;
        if ((err = dlb_pg_put_oom_plan(pg, req->job_uid, a, errstr, size)))
            goto out;
    }
    /* The job's cores as of this plan, for the other jobs' plans: an
     * estimate, so a redone batch writing it again does no harm. */
    if (self.time_ms && dlb_cluster_redis_put(dlb_stream_redis(s), &self, sub, sizeof(sub)))
        dlb_stream_redis_down(s, "storing the job's cluster entry", sub);
    dlb_info("plan %s for job %s at %s by %s: %s", pe.u.plan.plan_id, req->job_uid, req->stage,
             pe.u.plan.optimizer, pe.u.plan.reason);
    err = dlb_stream_emit(s, req->job_uid, buf, len);
    buf = NULL;
out:
    free(buf);
    free(oom_plans);
    free(answered.items);
    dlb_cluster_view_clear(&cluster);
    dlb_event_clear(&pe);
    dlb_history_clear(&hist);
    dlb_job_state_clear(&st);
    return err;
}

static int is_request(const dlb_event_t *ev)
{
    return ev->type == DLB_EV_PLAN_REQUEST;
}

static int accepts(const dlb_event_t *ev)
{
    return ev->type == DLB_EV_JOB || ev->type == DLB_EV_NODE || ev->type == DLB_EV_RUNTIME ||
           ev->type == DLB_EV_PLAN_REQUEST;
}

static int process(dlb_stream_t *s, const dlb_event_t *ev, const void *raw, size_t raw_len,
                   char *errstr, size_t size)
{
    char sub[512], plan_id[DLB_ID_MAX];
    void *plan = NULL;
    size_t plan_len = 0;
    int err;

    if (is_request(ev)) {
        dlb_plan_id(&ev->u.req, plan_id, sizeof(plan_id));
        if ((err = dlb_stream_store_request(s, ev, raw, raw_len, plan_id, &plan, &plan_len, errstr,
                                            size)))
            return err;
        return plan_request(s, &ev->u.req, plan_id, plan, plan_len, errstr, size);
    }
    if ((err = dlb_stream_store_event(s, ev, raw, raw_len, errstr, size)))
        return err;
    /* Which jobs wait for room and which run, for the dlbrain set's worker
     * plans of every job (opt_cluster.c). */
    if (ev->type == DLB_EV_JOB && !strcmp(dlb_stream_conf(s)->optimizer_set, "dlbrain") &&
        dlb_stream_redis(s) &&
        dlb_cluster_redis_event(dlb_stream_redis(s), &ev->u.job, sub, sizeof(sub)))
        dlb_stream_redis_down(s, "storing the job's cluster entry", sub);
    return 0;
}

/* Input topics in tie-break order: at equal event times a job's meta, node
 * and runtime events are folded before a plan request of that instant. */
const char *const dlb_optimizer_inputs[] = {DLB_TOPIC_JOB_EVENTS, DLB_TOPIC_K8S_EVENTS,
                                            DLB_TOPIC_METRICS, DLB_TOPIC_PLAN_REQUESTS, NULL};

int dlb_optimizer_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                      dlb_stream_stats_t *stats, char *errstr, size_t errstr_size)
{
    const dlb_stream_role_t role = {.name = "optimizer",
                                    .inputs = dlb_optimizer_inputs,
                                    .output = DLB_TOPIC_PLANS,
                                    .is_request = is_request,
                                    .accepts = accepts,
                                    .process = process};
    char group[256];

    dlb_info("optimizer: optimizer set %s", conf->optimizer_set);
    return dlb_stream_run(conf, &role, dlb_conf_group(conf, "optimizer", group, sizeof(group)),
                          stop, stats, errstr, errstr_size);
}
