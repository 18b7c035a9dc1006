/* The job simulator's loop and its Kafka and JSON-lines io (sim_run.h). */
#include "sim_run.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "kafka.h"
#include "latency.h"
#include "log.h"
#include "vec.h"

void dlb_sim_opts_init(dlb_sim_opts_t *o)
{
    dlb_conf_t conf;

    memset(o, 0, sizeof(*o));
    o->seed = 1;
    o->start_ms = DLB_SIM_START_MS;
    o->params.sample_ms = 30000;
    /* DLRover 0.6.1's defaults (global_context.py): seconds_interval_to_optimize,
     * seconds_interval_to_change_ps, seconds_for_stable_worker_count. */
    o->params.ask_every_ms = 300000;
    o->params.ps_change_ms = 3600000;
    o->params.steady_ms = 60000;
    o->params.restart_ms = 60000;
    o->params.max_relaunch = 3;
    o->params.time_scale = 1.0;
    o->params.node_wait_ms = DLB_SIM_NODE_WAIT_MS;
    dlb_sim_users_init(&o->params.users);
    o->params.pod_pending_ms = 900000;
    dlb_conf_init(&conf); /* the limits.* defaults */
    o->params.limits = conf.limits;
    dlb_conf_destroy(&conf);
    o->cluster_cores = 5280;
    o->cluster_memory = (int64_t)32000 * DLB_GIB;
    o->pending_timeout_ms = (int64_t)4 * 3600 * 1000;
}

static dlb_sim_job_t *job_of(dlb_sim_job_t *jobs, size_t n, const char *uid)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].uid, uid))
            return &jobs[i];
    return NULL;
}

/* One round: send the queued requests, wait for their plans, apply them in
 * request order and let each job's master read its answers (which may
 * queue the next round's requests into out). */
static int exchange_round(const dlb_sim_opts_t *o, const dlb_sim_io_t *io, dlb_sim_job_t *jobs,
                          size_t n, int64_t now, dlb_sim_cluster_t *c, dlb_sim_out_t *out,
                          dlb_sim_summary_t *sum, char *errstr, size_t errstr_size)
{
    /* This round's requests; out collects the next round's. */
    dlb_sim_out_t batch = {.reqs = out->reqs, .reqs_cnt = out->reqs_cnt, .reqs_cap = out->reqs_cap};
    dlb_plan_t *plans = NULL;
    int err = 0;

    out->reqs = NULL;
    out->reqs_cnt = out->reqs_cap = 0;
    /* The tick's events are delivered before its requests exist. */
    if (io->flush && (err = io->flush(io->opaque, errstr, errstr_size)))
        goto out;
    for (size_t i = 0; i < batch.reqs_cnt; i++) {
        dlb_event_t ev = {.type = DLB_EV_PLAN_REQUEST};
        ev.u.req = batch.reqs[i];
        out->events++;
        if ((err = io->publish(io->opaque, &ev, errstr, errstr_size)))
            goto out;
    }
    if (!(plans = calloc(batch.reqs_cnt, sizeof(*plans)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (io->exchange)
        err = io->exchange(io->opaque, batch.reqs, batch.reqs_cnt, plans, errstr, errstr_size);
    for (size_t i = 0; !err && i < batch.reqs_cnt; i++) {
        dlb_sim_job_t *j = job_of(jobs, n, batch.reqs[i].job_uid);

        if (io->exchange && !plans[i].plan_id[0])
            sum->plans_missing++;
        else if (io->exchange)
            sum->plans_received++;
        if (j && plans[i].plan_id[0] &&
            dlb_sim_job_apply(j, &batch.reqs[i], &plans[i], now, &o->params, c, out))
            sum->plans_applied++;
        /* Without an optimizer every answer is "no plan", as DLRover's
         * master reads a failed call. */
        if (j)
            dlb_sim_job_answered(j, &batch.reqs[i], &plans[i], now, out);
    }
out:
    for (size_t i = 0; plans && i < batch.reqs_cnt; i++) {
        dlb_event_t ev = {.type = DLB_EV_PLAN};
        ev.u.plan = plans[i];
        dlb_event_clear(&ev);
    }
    free(plans);
    dlb_sim_out_reset(&batch);
    free(batch.reqs);
    return err;
}

/* Send the tick's requests, then the requests their answers lead to (a
 * worker ask after a PS ask without a plan), until none is left. */
static int exchange(const dlb_sim_opts_t *o, const dlb_sim_io_t *io, dlb_sim_job_t *jobs, size_t n,
                    int64_t now, dlb_sim_cluster_t *c, dlb_sim_out_t *out, dlb_sim_summary_t *sum,
                    char *errstr, size_t errstr_size)
{
    int err = 0;

    while (!err && out->reqs_cnt) {
        err = exchange_round(o, io, jobs, n, now, c, out, sum, errstr, errstr_size);
        if (!err && out->err)
            err = dlb_seterr(errstr, errstr_size, out->err, "%s", out->errstr);
    }
    return err;
}

/* Start pending jobs in arrival order while they fit (first come, first
 * served: a big job at the head holds the ones behind it), fail those
 * pending too long. */
static void schedule(const dlb_sim_opts_t *o, dlb_sim_job_t *jobs, size_t n, int64_t now,
                     dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    int blocked = 0;

    for (size_t i = 0; i < n; i++) {
        dlb_sim_job_t *j = &jobs[i];

        if (j->state != DLB_SIM_PENDING)
            continue;
        if (blocked || !dlb_sim_job_start(j, now, c, out)) {
            blocked = 1;
            if (o->pending_timeout_ms > 0 && now - j->arrival_ms >= o->pending_timeout_ms)
                dlb_sim_job_fail(j, now, "PendingTimeout", c, out);
        }
    }
}

/* Per job, for reading one run job by job: what it was, when it ran, what it
 * ended with. Times in virtual seconds from the start. */
static void jobs_csv(const dlb_sim_opts_t *o, const dlb_sim_job_t *jobs, size_t n)
{
    FILE *fp = o->jobs_csv;

    fprintf(fp, "job,name,model,state,exit_reason,arrival_s,start_s,end_s,jct_s,pending_s,"
                "workers,ps,worker_cpu,worker_memory_gib,ps_cpu,ps_memory_gib,ooms,plans_applied,"
                "core_hours,"
                "memory_gib_hours\n");
    for (size_t i = 0; i < n; i++) {
        const dlb_sim_job_t *j = &jobs[i];
        static const char *const states[] = {"future", "pending", "running", "succeeded", "failed"};

        fprintf(
            fp,
            "%s,%s,%s,%s,%s,%.0f,%.0f,%.0f,%.0f,%.0f,%d,%d,%.1f,%.1f,%.1f,%.1f,%d,%d,%.2f,%.2f\n",
            j->uid, j->spec->name, j->spec->model, states[j->state], j->exit_reason,
            (double)(j->arrival_ms - o->start_ms) / 1000.0,
            j->start_ms ? (double)(j->start_ms - o->start_ms) / 1000.0 : -1.0,
            j->end_ms ? (double)(j->end_ms - o->start_ms) / 1000.0 : -1.0,
            j->end_ms && j->start_ms ? (double)(j->end_ms - j->arrival_ms) / 1000.0 : -1.0,
            j->start_ms ? (double)(j->start_ms - j->arrival_ms) / 1000.0 : -1.0, j->wk_cnt,
            j->ps_cnt, j->wk_cpu, (double)j->wk_mem / (double)DLB_GIB, j->ps_cpu,
            (double)j->ps_mem / (double)DLB_GIB, j->ooms, j->plans_applied, j->core_hours,
            j->memory_gib_hours);
    }
}

/* used over requested; NaN when nothing was requested (JSON null). */
static double share(double used, double requested)
{
    return requested > 0 ? used / requested : NAN;
}

static void summarise(const dlb_sim_opts_t *o, const dlb_sim_job_t *jobs, size_t n,
                      const dlb_sim_out_t *out, int64_t wall_ns, int64_t now, dlb_sim_summary_t *s)
{
    int finished = 0, started = 0;
    double use[4] = {0}, req[4] = {0}, need_s[2] = {0}, peak_s[2] = {0};
    const double floor_gib = (double)o->params.limits.memory_min / (double)DLB_GIB;

    s->jobs = (int)n;
    for (size_t i = 0; i < n; i++) {
        const dlb_sim_job_t *j = &jobs[i];

        if (j->state == DLB_SIM_SUCCEEDED)
            s->succeeded++;
        else if (j->state == DLB_SIM_FAILED)
            s->failed++;
        else
            s->unfinished++;
        if (j->ps_hot > 1)
            s->hot_ps_jobs++;
        s->straggler_jobs += j->straggled;
        s->stragglers_replaced += j->stragglers_replaced;
        s->replaces += j->replaces;
        s->replaces_unneeded += j->replaces_unneeded;
        s->relaunches += j->relaunches;
        s->relaunches_unneeded += j->relaunches_unneeded;
        s->node_failures += j->node_failures;
        s->node_replaced += j->node_replaced;
        s->node_relaunched += j->node_relaunched;
        s->node_down_s += (double)j->node_down_ms / 1000.0;
        s->oom_answered += j->oom_answered;
        s->pods += j->pods_ran;
        s->pods_oom_killed += j->pods_oom_killed;
        for (int r = 0; r < 4; r++) {
            use[r] += j->use_s[r];
            req[r] += j->req_s[r];
        }
        for (int r = 0; r < 2; r++) {
            /* No plan gets a pod less than the master's floor. */
            double peak = j->need_peak[r] > floor_gib ? j->need_peak[r] : floor_gib;

            need_s[r] += j->need_s[r];
            peak_s[r] += peak * j->pod_s[r];
        }
        if (j->end_ms && j->start_ms) {
            s->jct_mean_s += (double)(j->end_ms - j->arrival_ms) / 1000.0;
            finished++;
        }
        if (j->start_ms) {
            s->pending_mean_s += (double)(j->start_ms - j->arrival_ms) / 1000.0;
            started++;
        }
    }
    if (finished)
        s->jct_mean_s /= finished;
    s->completion_rate = n ? (double)s->succeeded / (double)n : NAN;
    s->worker_cpu_util = share(use[DLB_SIM_USE_WK_CPU], req[DLB_SIM_USE_WK_CPU]);
    s->worker_mem_util = share(use[DLB_SIM_USE_WK_MEM], req[DLB_SIM_USE_WK_MEM]);
    s->ps_cpu_util = share(use[DLB_SIM_USE_PS_CPU], req[DLB_SIM_USE_PS_CPU]);
    s->ps_mem_util = share(use[DLB_SIM_USE_PS_MEM], req[DLB_SIM_USE_PS_MEM]);
    s->cpu_util = share(use[DLB_SIM_USE_WK_CPU] + use[DLB_SIM_USE_PS_CPU],
                        req[DLB_SIM_USE_WK_CPU] + req[DLB_SIM_USE_PS_CPU]);
    s->mem_util = share(use[DLB_SIM_USE_WK_MEM] + use[DLB_SIM_USE_PS_MEM],
                        req[DLB_SIM_USE_WK_MEM] + req[DLB_SIM_USE_PS_MEM]);
    s->worker_mem_util_static_bound = share(need_s[0], peak_s[0]);
    s->ps_mem_util_static_bound = share(need_s[1], peak_s[1]);
    s->mem_util_static_bound = share(need_s[0] + need_s[1], peak_s[0] + peak_s[1]);
    if (started)
        s->pending_mean_s /= started;
    s->virtual_ms = now - o->start_ms;
    s->wall_s = (double)wall_ns / 1e9;
    s->speedup = s->wall_s > 0 ? (double)s->virtual_ms / 1000.0 / s->wall_s : 0;
    s->events = out->events;
    s->samples = out->samples;
    s->node_events = out->node_events;
    s->plan_requests = out->requests;
    s->ooms = out->ooms;
    s->nodes = (long)o->nodes_cnt;
}

/* The cluster of the run: o's nodes, nothing bound, or the pool. */
static int cluster_init(const dlb_sim_opts_t *o, dlb_sim_cluster_t *c, char *errstr,
                        size_t errstr_size)
{
    memset(c, 0, sizeof(*c));
    c->cores = o->cluster_cores;
    c->memory = o->cluster_memory;
    if (!o->nodes_cnt)
        return 0;
    if (!(c->nodes = calloc(o->nodes_cnt, sizeof(*c->nodes))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory for %zu nodes",
                          o->nodes_cnt);
    c->nodes_cnt = o->nodes_cnt;
    c->cores = 0;
    c->memory = 0;
    for (size_t i = 0; i < o->nodes_cnt; i++) {
        dlb_sim_node_t *nd = &c->nodes[i];

        *nd = o->nodes[i];
        nd->cpu_used_m = nd->memory_used = 0;
        nd->pods = 0;
        c->cores += (double)nd->cpu_m / 1000.0;
        c->memory += nd->memory;
    }
    return 0;
}

int dlb_sim_run(const dlb_sim_opts_t *o, const dlb_sim_io_t *io, dlb_sim_summary_t *sum,
                char *errstr, size_t errstr_size)
{
    const dlb_sim_workload_t *wl = o->wl;
    dlb_sim_out_t out = {0};
    dlb_sim_cluster_t c;
    dlb_sim_job_t *jobs;
    int64_t t = o->start_ms, t0 = dlb_lat_clock_ns(), dt = o->params.sample_ms;
    size_t next = 0, n = wl->n;
    long ticks = 0, pending_ticks = 0;
    int err = 0;

    memset(sum, 0, sizeof(*sum));
    if (dt <= 0 || o->params.time_scale <= 0)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "sample interval and time scale must be positive");
    if ((err = cluster_init(o, &c, errstr, errstr_size)))
        return err;
    if (!(jobs = calloc(n ? n : 1, sizeof(*jobs)))) {
        free(c.nodes);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory for %zu jobs", n);
    }
    for (size_t i = 0; i < n && !err; i++) {
        /* A model with no measurements runs only under a named profile (a
         * job from history brings its own). */
        if (!wl->jobs[i].prof &&
            (err = dlb_sim_profile_check(wl->jobs[i].model, errstr, errstr_size)))
            break;
        err = dlb_sim_job_init(&jobs[i], &wl->jobs[i], o->seed, i, o->start_ms, &o->params, errstr,
                               errstr_size);
    }
    out.publish = io->publish;
    out.opaque = io->opaque;
    while (!err && !(o->stop && *o->stop)) {
        int active = 0, pending = 0;
        double cores_h = 0;
        int64_t mem_h = 0;

        dlb_sim_out_reset(&out);
        for (; next < n && jobs[next].arrival_ms <= t; next++)
            dlb_sim_job_arrive(&jobs[next], t, &out);
        for (size_t i = 0; i < n; i++) {
            if (jobs[i].state == DLB_SIM_RUNNING && jobs[i].start_ms < t)
                dlb_sim_job_tick(&jobs[i], t, &o->params, &c, &out);
        }
        if ((err = out.err)) {
            dlb_seterr(errstr, errstr_size, err, "%s", out.errstr);
            break;
        }
        if ((err = exchange(o, io, jobs, n, t, &c, &out, sum, errstr, errstr_size)))
            break;
        schedule(o, jobs, n, t, &c, &out);
        if ((err = out.err)) {
            dlb_seterr(errstr, errstr_size, err, "%s", out.errstr);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (jobs[i].state == DLB_SIM_RUNNING || jobs[i].state == DLB_SIM_PENDING)
                active++;
            if (jobs[i].state == DLB_SIM_PENDING)
                pending++;
            if (jobs[i].state == DLB_SIM_RUNNING) {
                cores_h += jobs[i].held_cores;
                mem_h += jobs[i].held_mem;
                jobs[i].core_hours += jobs[i].held_cores * (double)dt / 3.6e6;
                jobs[i].memory_gib_hours +=
                    (double)jobs[i].held_mem / (double)DLB_GIB * (double)dt / 3.6e6;
            }
        }
        sum->core_hours += cores_h * (double)dt / 3.6e6;
        sum->memory_gib_hours += (double)mem_h / (double)DLB_GIB * (double)dt / 3.6e6;
        if (active) {
            ticks++;
            sum->alloc_cpu_share += c.cores_used / c.cores;
            sum->alloc_memory_share += (double)c.memory_used / (double)c.memory;
        }
        if (pending) {
            pending_ticks++;
            sum->pending_free_cpu_share += 1.0 - c.cores_used / c.cores;
            sum->pending_free_memory_share += 1.0 - (double)c.memory_used / (double)c.memory;
        }
        if (!active && next >= n)
            break;
        if (!active) {
            /* Nothing runs: jump to the tick of the next arrival. */
            int64_t gap = jobs[next].arrival_ms - t;
            t += gap > dt ? (gap + dt - 1) / dt * dt : dt;
        } else {
            t += dt;
        }
        if (o->max_virtual_ms > 0 && t - o->start_ms > o->max_virtual_ms)
            break;
    }
    summarise(o, jobs, n, &out, dlb_lat_clock_ns() - t0, t, sum);
    if (ticks) {
        sum->alloc_cpu_share /= (double)ticks;
        sum->alloc_memory_share /= (double)ticks;
    }
    if (pending_ticks) {
        sum->pending_free_cpu_share /= (double)pending_ticks;
        sum->pending_free_memory_share /= (double)pending_ticks;
    }
    if (o->jobs_csv)
        jobs_csv(o, jobs, n);
    dlb_sim_out_reset(&out);
    free(out.reqs);
    free(jobs);
    free(c.nodes);
    return err;
}

void dlb_sim_summary_print(const dlb_sim_summary_t *s, FILE *fp)
{
    fprintf(fp,
            "sim: jobs=%d succeeded=%d failed=%d unfinished=%d virtual_s=%.0f wall_s=%.2f "
            "speedup=%.0f events=%ld samples=%ld plan_requests=%ld plans_received=%ld "
            "plans_applied=%ld plans_missing=%ld ooms=%ld oom_answered=%ld hot_ps_jobs=%ld "
            "straggler_jobs=%ld stragglers_replaced=%ld jct_mean_s=%.0f pending_mean_s=%.0f "
            "core_hours=%.1f memory_gib_hours=%.1f replaces=%ld replaces_unneeded=%ld "
            "relaunches=%ld relaunches_unneeded=%ld pods=%ld pods_oom_killed=%ld "
            "completion_rate=%.3f worker_cpu_util=%.3f worker_mem_util=%.3f ps_cpu_util=%.3f "
            "ps_mem_util=%.3f",
            s->jobs, s->succeeded, s->failed, s->unfinished, (double)s->virtual_ms / 1000.0,
            s->wall_s, s->speedup, s->events, s->samples, s->plan_requests, s->plans_received,
            s->plans_applied, s->plans_missing, s->ooms, s->oom_answered, s->hot_ps_jobs,
            s->straggler_jobs, s->stragglers_replaced, s->jct_mean_s, s->pending_mean_s,
            s->core_hours, s->memory_gib_hours, s->replaces, s->replaces_unneeded, s->relaunches,
            s->relaunches_unneeded, s->pods, s->pods_oom_killed, s->completion_rate,
            s->worker_cpu_util, s->worker_mem_util, s->ps_cpu_util, s->ps_mem_util);
    /* Only a run with node failures (--node-failures) has these. */
    if (s->node_failures)
        fprintf(fp, " node_failures=%ld node_replaced=%ld node_relaunched=%ld node_down_s=%.0f",
                s->node_failures, s->node_replaced, s->node_relaunched, s->node_down_s);
    /* Only a run on nodes (--cluster-nodes) has these. */
    if (s->nodes)
        fprintf(fp, " nodes=%ld alloc_cpu_share=%.3f pending_free_cpu_share=%.3f", s->nodes,
                s->alloc_cpu_share, s->pending_free_cpu_share);
    fputc('\n', fp);
}

int dlb_sim_summary_json(const dlb_sim_summary_t *s, FILE *fp)
{
    int r = fprintf(
        fp,
        "{\"jobs\":%d,\"succeeded\":%d,\"failed\":%d,\"unfinished\":%d,\"virtual_s\":%.0f,"
        "\"wall_s\":%.3f,\"speedup\":%.1f,\"events\":%ld,\"samples\":%ld,\"node_events\":%ld,"
        "\"plan_requests\":%ld,\"plans_received\":%ld,\"plans_applied\":%ld,"
        "\"plans_missing\":%ld,\"ooms\":%ld,\"oom_answered\":%ld,\"hot_ps_jobs\":%ld,"
        "\"straggler_jobs\":%ld,\"stragglers_replaced\":%ld,\"jct_mean_s\":%.1f,"
        "\"pending_mean_s\":%.1f,\"core_hours\":%.2f,\"memory_gib_hours\":%.2f,"
        "\"node_failures\":%ld,\"node_replaced\":%ld,\"node_relaunched\":%ld,"
        "\"node_down_s\":%.0f,\"replaces\":%ld,\"replaces_unneeded\":%ld,"
        "\"relaunches\":%ld,\"relaunches_unneeded\":%ld,\"pods\":%ld,\"pods_oom_killed\":%ld,"
        "\"nodes\":%ld",
        s->jobs, s->succeeded, s->failed, s->unfinished, (double)s->virtual_ms / 1000.0, s->wall_s,
        s->speedup, s->events, s->samples, s->node_events, s->plan_requests, s->plans_received,
        s->plans_applied, s->plans_missing, s->ooms, s->oom_answered, s->hot_ps_jobs,
        s->straggler_jobs, s->stragglers_replaced, s->jct_mean_s, s->pending_mean_s, s->core_hours,
        s->memory_gib_hours, s->node_failures, s->node_replaced, s->node_relaunched, s->node_down_s,
        s->replaces, s->replaces_unneeded, s->relaunches, s->relaunches_unneeded, s->pods,
        s->pods_oom_killed, s->nodes);
    const struct {
        const char *key;
        double v;
    } ratios[] = {{"completion_rate", s->completion_rate},
                  {"cpu_util", s->cpu_util},
                  {"mem_util", s->mem_util},
                  {"mem_util_static_bound", s->mem_util_static_bound},
                  {"worker_mem_util_static_bound", s->worker_mem_util_static_bound},
                  {"ps_mem_util_static_bound", s->ps_mem_util_static_bound},
                  {"worker_cpu_util", s->worker_cpu_util},
                  {"worker_mem_util", s->worker_mem_util},
                  {"ps_cpu_util", s->ps_cpu_util},
                  {"ps_mem_util", s->ps_mem_util},
                  {"alloc_cpu_share", s->alloc_cpu_share},
                  {"alloc_memory_share", s->alloc_memory_share},
                  {"pending_free_cpu_share", s->pending_free_cpu_share},
                  {"pending_free_memory_share", s->pending_free_memory_share}};

    /* JSON has no NaN: a ratio of nothing is null. */
    for (size_t i = 0; r >= 0 && i < sizeof(ratios) / sizeof(ratios[0]); i++)
        r = isnan(ratios[i].v) ? fprintf(fp, ",\"%s\":null", ratios[i].key)
                               : fprintf(fp, ",\"%s\":%.4f", ratios[i].key, ratios[i].v);
    if (r >= 0)
        r = fputs("}\n", fp);
    return r < 0 ? -1 : 0;
}

/* ---- JSON lines io -------------------------------------------------------- */
typedef struct json_io {
    FILE *fp;
    dlb_catalog_t *cat;
} json_io_t;

static int json_publish(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    json_io_t *x = opaque;
    char *line = NULL;
    int err;

    if ((err = dlb_event_to_json(x->cat, ev, &line, errstr, errstr_size)))
        return err;
    if (fputs(line, x->fp) < 0 || fputc('\n', x->fp) < 0)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "writing events failed");
    free(line);
    return err;
}

int dlb_sim_json_io(FILE *fp, dlb_sim_io_t *io, char *errstr, size_t errstr_size)
{
    json_io_t *x = calloc(1, sizeof(*x));
    int err;

    memset(io, 0, sizeof(*io));
    if (!x)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if ((err = dlb_catalog_new(&x->cat, errstr, errstr_size))) {
        free(x);
        return err;
    }
    x->fp = fp;
    io->publish = json_publish;
    io->opaque = x;
    return 0;
}

void dlb_sim_json_io_free(dlb_sim_io_t *io)
{
    json_io_t *x = io->opaque;

    if (x) {
        dlb_catalog_destroy(x->cat);
        free(x);
    }
    memset(io, 0, sizeof(*io));
}

/* ---- Kafka io ------------------------------------------------------------- */
struct dlb_sim_kafka {
    const dlb_conf_t *conf;
    dlb_catalog_t *cat;
    rd_kafka_t *producer, *consumer;
    long plan_timeout_ms;
    dlb_plan_t *spare; /* plans received for no request waited on (yet) */
    size_t spare_cnt, spare_cap;
};

static int kafka_publish(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    dlb_sim_kafka_t *k = opaque;
    char topic[256];
    void *buf = NULL;
    size_t len = 0;
    int err;

    if ((err = dlb_codec_encode(k->cat, ev, &buf, &len, errstr, errstr_size)))
        return err;
    dlb_conf_topic(k->conf, dlb_event_type_topic(ev->type), topic, sizeof(topic));
    /* The tick's events were flushed before its requests (exchange). */
    if (ev->type == DLB_EV_PLAN_REQUEST)
        err = dlb_kafka_produce_request(k->producer, topic, dlb_event_job_uid(ev), buf, len, errstr,
                                        errstr_size);
    else
        err = dlb_kafka_produce(k->producer, topic, dlb_event_job_uid(ev), buf, len, errstr,
                                errstr_size);
    free(buf);
    return err;
}

/* Move a spare plan answering req into *plan. @returns 1 when found. */
static int take_spare(dlb_sim_kafka_t *k, const dlb_plan_request_t *req, dlb_plan_t *plan)
{
    for (size_t i = 0; i < k->spare_cnt; i++) {
        if (strcmp(k->spare[i].trigger_event_id, req->event_id))
            continue;
        *plan = k->spare[i];
        k->spare[i] = k->spare[--k->spare_cnt];
        return 1;
    }
    return 0;
}

static int keep_spare(dlb_sim_kafka_t *k, dlb_event_t *ev)
{
    if (dlb_vec_reserve((void **)&k->spare, &k->spare_cap, k->spare_cnt + 1, sizeof(*k->spare)))
        return DLB_ERR_NOMEM;
    k->spare[k->spare_cnt++] = ev->u.plan;
    memset(ev, 0, sizeof(*ev)); /* the arrays moved with it */
    return 0;
}

static int kafka_flush(void *opaque, char *errstr, size_t errstr_size)
{
    dlb_sim_kafka_t *k = opaque;

    return dlb_kafka_flush(k->producer, 30000, errstr, errstr_size);
}

static int kafka_exchange(void *opaque, const dlb_plan_request_t *reqs, size_t n, dlb_plan_t *plans,
                          char *errstr, size_t errstr_size)
{
    dlb_sim_kafka_t *k = opaque;
    size_t missing = 0;
    int64_t deadline;
    int err;

    if ((err = dlb_kafka_flush(k->producer, 30000, errstr, errstr_size)))
        return err;
    for (size_t i = 0; i < n; i++)
        if (!take_spare(k, &reqs[i], &plans[i]))
            missing++;
    deadline = dlb_lat_clock_ns() / 1000000 + k->plan_timeout_ms;
    while (missing && dlb_lat_clock_ns() / 1000000 < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(k->consumer, 50);
        dlb_event_t ev = {0};
        char sub[256];
        size_t i;

        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
            /* No plan would come: the run stops rather than go on without. */
            rd_kafka_message_destroy(m);
            return dlb_kafka_fatal(k->consumer, errstr, errstr_size);
        }
        if (m->err || dlb_codec_decode(k->cat, m->payload, m->len, &ev, sub, sizeof(sub)) ||
            ev.type != DLB_EV_PLAN) {
            if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                dlb_warn("kafka: %s; continuing", rd_kafka_message_errstr(m));
            dlb_event_clear(&ev);
            rd_kafka_message_destroy(m);
            continue;
        }
        rd_kafka_message_destroy(m);
        for (i = 0; i < n; i++)
            if (!plans[i].plan_id[0] && !strcmp(ev.u.plan.trigger_event_id, reqs[i].event_id))
                break;
        if (i < n) {
            plans[i] = ev.u.plan;
            missing--;
        } else if ((err = keep_spare(k, &ev))) {
            dlb_event_clear(&ev);
            return dlb_seterr(errstr, errstr_size, err, "out of memory keeping plans");
        }
    }
    if (missing)
        dlb_warn("%zu of %zu plan(s) did not come within %ld ms: those jobs keep their "
                 "resources",
                 missing, n, k->plan_timeout_ms);
    return 0;
}

int dlb_sim_kafka_new(const dlb_conf_t *conf, int plans, long plan_timeout_ms,
                      dlb_sim_kafka_t **out, dlb_sim_io_t *io, char *errstr, size_t errstr_size)
{
    static const char *const extra[] = {"isolation.level", "read_committed", NULL};
    /* Every round ends in a flush and waits for its plans: the round is the
     * batch, and linger.ms (5 by default here) only delays it. Measured on
     * workload-1, 200 jobs, alternating on the same servers: 668-911x with
     * it, 931-1,048x without (docs/simulator.md#speed-up-measured). */
    static const char *const no_linger[] = {"linger.ms", "0", NULL};
    const char *const *pextra = dlb_kafka_conf_get(conf, "linger.ms") ? NULL : no_linger;
    dlb_sim_kafka_t *k = calloc(1, sizeof(*k));
    char group[256], topic[256];
    int err;

    *out = NULL;
    memset(io, 0, sizeof(*io));
    if (!k)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    k->conf = conf;
    k->plan_timeout_ms = plan_timeout_ms;
    if ((err = dlb_catalog_new(&k->cat, errstr, errstr_size)) ||
        (err = dlb_kafka_producer_new(conf, pextra, &k->producer, errstr, errstr_size)) ||
        (err = dlb_kafka_producer_follow_whole(k->producer, conf, errstr, errstr_size)))
        goto fail;
    if (plans) {
        rd_kafka_topic_partition_list_t *sub;
        rd_kafka_resp_err_t e;

        /* A group of its own, read from the start: a plan answering a
         * request is never missed for joining late. */
        snprintf(group, sizeof(group), "%s.sim.%d.%lld", conf->env, (int)getpid(),
                 (long long)time(NULL));
        if ((err = dlb_kafka_consumer_new(conf, group, extra, &k->consumer, errstr, errstr_size)))
            goto fail;
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(
            sub, dlb_conf_topic(conf, DLB_TOPIC_PLANS, topic, sizeof(topic)),
            RD_KAFKA_PARTITION_UA);
        e = rd_kafka_subscribe(k->consumer, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (e) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "subscribing to %s: %s", topic,
                             rd_kafka_err2str(e));
            goto fail;
        }
        io->exchange = kafka_exchange;
    }
    io->publish = kafka_publish;
    io->flush = kafka_flush;
    io->opaque = k;
    *out = k;
    return 0;
fail:
    dlb_sim_kafka_destroy(k);
    return err;
}

void dlb_sim_kafka_destroy(dlb_sim_kafka_t *k)
{
    if (!k)
        return;
    if (k->consumer) {
        rd_kafka_consumer_close(k->consumer);
        rd_kafka_destroy(k->consumer);
    }
    if (k->producer)
        dlb_kafka_producer_destroy(k->producer);
    for (size_t i = 0; i < k->spare_cnt; i++) {
        dlb_event_t ev = {.type = DLB_EV_PLAN};
        ev.u.plan = k->spare[i];
        dlb_event_clear(&ev);
    }
    free(k->spare);
    if (k->cat)
        dlb_catalog_destroy(k->cat);
    free(k);
}
