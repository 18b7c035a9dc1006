/* The dlbrain set's worker count ("dlbrain.worker_model"): a throughput model
 * fitted per job from its own runtime window, as DLRover-RM describes (PVLDB
 * 2024, section "auto-scaling"):
 *
 *     1 / speed = a / w + b / p + c,    a, b, c >= 0
 *
 * w = workers, p = PS pods, speed = global steps/s. a/w is the part of a
 * step the workers share, b/p the part the PS serve (each holds 1/p of the
 * variables, and every step's pushes and pulls go through them), c what
 * neither helps. A PS short of CPU is the hot-PS and PS-utilisation rules'
 * concern, not the model's.
 * Fitted by non-negative least squares, each sample weighted equally. The
 * count then grows while one more worker still pays for itself. DLRover's Go
 * Brain only has a rule of thumb (dlb_opt_worker_resource), used here when the
 * window cannot determine the model. The same model sizes the PS count at
 * the PS stages (dlb_opt_ps_model). */
#include "optimizer.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_cluster.h"
#include "opt_dlbrain.h"
#include "opt_oom.h"
#include "opt_util.h"

#define MODEL_MIN_SAMPLES 4 /* 3 unknowns and at least one degree of freedom */
#define MODEL_MIN_COUNTS  2 /* one worker count cannot separate a/w from c */
#define NCOEF             3
#define HIST_HEADROOM_MAX (8 * DLB_GIB) /* DLRover's worker rule: max + min(20%, 8 GiB) */

/* One usable sample: the model's inputs and 1/speed. */
typedef struct point {
    double x[NCOEF]; /* 1/w, 1/p, 1 */
    double y;        /* 1/speed, seconds per step */
    int workers;
} point_t;

typedef struct model {
    double coef[NCOEF]; /* a, b, c */
    double ss_res, ss_tot;
} model_t;

static int is_worker(const dlb_pod_usage_t *p)
{
    /* The first letter settles most pods without a call. */
    return p->type[0] == 'w' && !strcmp(p->type, "worker");
}

/* Workers and PS pods of a sample. */
static void sample_inputs(const dlb_runtime_sample_t *s, int *workers, double *ps)
{
    size_t k;

    *workers = 0;
    *ps = 0;
    for (k = 0; k < s->pods_cnt; k++) {
        const dlb_pod_usage_t *p = &s->pods[k];

        if (is_worker(p))
            (*workers)++;
        else if (p->type[0] == 'p' && dlb_is_ps(p->type))
            (*ps)++;
    }
}

/* Solve the normal equations G z = h restricted to the columns in mask, by
 * Gaussian elimination with partial pivoting. A pivot below 1e-12 of the
 * largest diagonal entry means the columns are (nearly) dependent, e.g. 1/p
 * and 1 when p never changed: @returns 0, and that active set is skipped. */
static int solve_subset(const double g[NCOEF][NCOEF], const double h[NCOEF], unsigned mask,
                        double z[NCOEF])
{
    double m[NCOEF][NCOEF + 1], scale = 0;
    int idx[NCOEF], n = 0, i, j, r;

    for (i = 0; i < NCOEF; i++)
        if (mask & (1u << i))
            idx[n++] = i;
    for (i = 0; i < n; i++) {
        for (j = 0; j < n; j++)
            m[i][j] = g[idx[i]][idx[j]];
        m[i][n] = h[idx[i]];
        if (fabs(m[i][i]) > scale)
            scale = fabs(m[i][i]);
    }
    for (i = 0; i < n; i++) {
        int piv = i;

        for (r = i + 1; r < n; r++)
            if (fabs(m[r][i]) > fabs(m[piv][i]))
                piv = r;
        if (!(fabs(m[piv][i]) > 1e-12 * scale))
            return 0;
        if (piv != i)
            for (j = 0; j <= n; j++) {
                double t = m[i][j];

                m[i][j] = m[piv][j];
                m[piv][j] = t;
            }
        for (r = i + 1; r < n; r++) {
            double f = m[r][i] / m[i][i];

            for (j = i; j <= n; j++)
                m[r][j] -= f * m[i][j];
        }
    }
    memset(z, 0, NCOEF * sizeof(*z));
    for (i = n; i-- > 0;) {
        double v = m[i][n];

        for (j = i + 1; j < n; j++)
            v -= m[i][j] * z[idx[j]];
        z[idx[i]] = v / m[i][i];
    }
    return 1;
}

static double residual(const point_t *pts, size_t n, const double z[NCOEF])
{
    double ss = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        double e = pts[i].y - (z[0] * pts[i].x[0] + z[1] * pts[i].x[1] + z[2] * pts[i].x[2]);

        ss += e * e;
    }
    return ss;
}

/* Non-negative least squares for 3 unknowns, exactly. The NNLS optimum is the
 * unconstrained least-squares solution on its active set (the coefficients
 * that are not held at 0), and some optimum has linearly independent active
 * columns; with 3 unknowns there are only 2^3 = 8 active sets, so try each:
 * solve the least squares on it, keep it when every coefficient is >= 0, and
 * take the feasible one with the smallest residual. This is what Lawson-Hanson
 * converges to, without its iteration and tolerances. Active sets are tried in
 * a fixed order, fewer coefficients first and c before b, and a later one wins
 * only when clearly better (by 1e-12 of sum y^2), so ties are deterministic
 * and go to the simpler model. allowed masks out coefficients (b when there
 * are no PS). */
static void nnls3(const point_t *pts, size_t n, unsigned allowed, model_t *m)
{
    static const unsigned order[] = {0x0, 0x4, 0x1, 0x2, 0x5, 0x6, 0x3, 0x7};
    double g[NCOEF][NCOEF] = {{0}}, h[NCOEF] = {0}, yy = 0, ymean = 0, best = INFINITY;
    size_t i, o;
    int r, c;

    for (i = 0; i < n; i++) {
        for (r = 0; r < NCOEF; r++) {
            for (c = 0; c < NCOEF; c++)
                g[r][c] += pts[i].x[r] * pts[i].x[c];
            h[r] += pts[i].x[r] * pts[i].y;
        }
        yy += pts[i].y * pts[i].y;
        ymean += pts[i].y;
    }
    ymean /= (double)n;
    memset(m, 0, sizeof(*m));
    for (o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
        double z[NCOEF], ss;

        if (order[o] & ~allowed)
            continue;
        if (!solve_subset((const double(*)[NCOEF])g, h, order[o], z))
            continue;
        if (z[0] < 0 || z[1] < 0 || z[2] < 0)
            continue;
        ss = residual(pts, n, z);
        if (ss < best - 1e-12 * yy) {
            best = ss;
            memcpy(m->coef, z, sizeof(z));
        }
    }
    m->ss_res = residual(pts, n, m->coef);
    for (i = 0; i < n; i++)
        m->ss_tot += (pts[i].y - ymean) * (pts[i].y - ymean);
}

/* Model speed at w workers: w / (a + k w), k = b/p + c at today's PS CPU. */
static double model_speed(double a, double k, int w)
{
    return (double)w / (a + k * (double)w);
}

/* What the (w+1)-th worker adds, as a fraction of the speed per worker at w:
 * (speed(w+1) - speed(w)) / (speed(w) / w) = a / (a + k (w+1)). */
static double gain_ratio(double a, double k, int w)
{
    return a / (a + k * (double)(w + 1));
}

static void plan_free_scratch(dlb_plan_t *p)
{
    free(p->groups);
    free(p->pods);
    free(p->actions);
}

/* Worker CPU and memory as DLRover's worker resource rule computes them. */
static int worker_resource(const dlb_opt_input_t *in, dlb_resource_t *res)
{
    dlb_plan_t scratch;
    const dlb_group_resource_t *g;
    int err;

    memset(&scratch, 0, sizeof(scratch));
    memset(res, 0, sizeof(*res));
    if (!(err = dlb_opt_worker_resource(in, &scratch)) && (g = dlb_plan_group(&scratch, "worker")))
        *res = g->resource;
    plan_free_scratch(&scratch);
    return err;
}

/* DLRover's rule sizes worker memory from this job's own samples (max + 20%,
 * at most +8 GiB), taken minutes into the job: memory that is still warming
 * up (caches, embeddings) is cut below what the job will need, and every
 * worker is OOMKilled at once later. Completed workers of the same scenario
 * have shown the need: their peak (the last memory_used of each history
 * worker, x1.2 when it was OOMKilled, as the OOM answer's floor) with the
 * rule's own headroom is the least a worker group is given. */
static int history_floor(const dlb_opt_input_t *in, int64_t *memory, dlb_plan_t *plan)
{
    int64_t hist = 0, floor, head;
    size_t pods = 0;
    int err;

    if (*memory <= 0)
        return 0;
    if ((err = dlb_oom_history_memory(in->history, "worker", &hist, &pods)))
        return err;
    head = (int64_t)((double)hist * dlb_opt_tuning(in)->history_headroom);
    floor = dlb_mem_add(hist, head < HIST_HEADROOM_MAX ? head : HIST_HEADROOM_MAX);
    if (hist <= 0 || floor <= *memory)
        return 0;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       " Worker memory %.2fGiB raised to the history peak %.2fGiB + min(%.0f%%, "
                       "8GiB) = %.2fGiB (%zu worker pods of %zu jobs).",
                       DLB_GIB_F(*memory), DLB_GIB_F(hist),
                       100 * dlb_opt_tuning(in)->history_headroom, DLB_GIB_F(floor), pods,
                       in->history->jobs_cnt);
    *memory = floor;
    return 0;
}

/* The workers' requests in the newest sample that has them (0 when
 * unknown): what a plan's group resources are compared against. */
static void current_worker(const dlb_job_state_t *st, double *cpu, int64_t *memory)
{
    *cpu = 0;
    *memory = 0;
    for (size_t i = st->window_cnt; i-- > 0 && !*cpu && !*memory;)
        for (size_t k = 0; k < st->window[i].pods_cnt; k++) {
            const dlb_pod_usage_t *p = &st->window[i].pods[k];

            if (!is_worker(p))
                continue;
            if (p->cpu_requested > *cpu)
                *cpu = p->cpu_requested;
            if (p->memory_requested > *memory)
                *memory = p->memory_requested;
        }
}

/* Cores the job's pods requested in its newest sample. */
static double held_cores(const dlb_job_state_t *st)
{
    double c = 0;

    if (st->window_cnt)
        for (size_t k = 0; k < st->window[st->window_cnt - 1].pods_cnt; k++)
            c += st->window[st->window_cnt - 1].pods[k].cpu_requested;
    return c;
}

/* Weigh the growth from w_cur to *w against the cores the other jobs hold
 * (opt_cluster.c) and leave the job's own entry in in->cluster_out: the cores
 * it holds as of this plan. A worker has the plan's cpu, or (0: kept)
 * today's. */
static void cluster_check(const dlb_opt_input_t *in, int w_cur, int *w, double worker_cpu,
                          dlb_plan_t *plan)
{
    dlb_cluster_growth_t g = {.current = w_cur, .want = *w, .cores = held_cores(in->job)};
    int64_t cur_mem;

    if (!(worker_cpu > 0))
        current_worker(in->job, &worker_cpu, &cur_mem);
    g.worker_cpu = worker_cpu;
    if (in->cluster_out) {
        memset(in->cluster_out, 0, sizeof(*in->cluster_out));
        snprintf(in->cluster_out->job_uid, sizeof(in->cluster_out->job_uid), "%s",
                 in->req->job_uid);
        in->cluster_out->cores = g.cores;
        in->cluster_out->time_ms = in->req->event_time_ms;
    }
    *w = dlb_opt_cluster_grow(in, &g, plan);
}

/* Kubernetes resizes a pod by restarting it, and a synchronous job waits for
 * its slowest worker: any change to the worker group stops the whole job for
 * about dlbrain.restart.seconds. So: no resize at all in the job's last 10
 * restarts' worth of time (what is left cannot pay it back); more workers
 * only when the model says they save more of the remaining time than the
 * restart costs; and a CPU or memory cut (a change DLRover's rule makes at
 * every ask as the job's usage wanders) only when it is larger than
 * dlbrain.resize.min.change of the request. Raises always go through: they
 * are what keeps a pod from its OOM. In the simulator, 12 runs of 200 jobs,
 * these cut the dlbrain set's mean JCT from 0.67x to 0.62x DLRover's and
 * core-hours from 0.85x to 0.83x (docs/optimizers.md). */
/* Too few samples for a line (dlb_mem_trend_fit): the slope from the
 * oldest to the newest sample of the pod's newest run at its request, so a
 * pod whose memory climbs in its first minutes is not cut. @returns 1 with
 * f->predicted at ahead_s after the newest sample, or 0 (< 2 samples). */
static int two_point_trend(const dlb_job_state_t *st, const char *name, int64_t requested,
                           double ahead_s, dlb_mem_trend_t *f)
{
    const dlb_pod_usage_t *first = NULL, *last = NULL;
    int64_t t_first = 0, t_last = 0;

    for (size_t i = st->window_cnt; i-- > 0;) {
        const dlb_pod_usage_t *p = dlb_sample_pod(&st->window[i], name);

        if (!p || p->memory_requested != requested)
            break;
        if (!last) {
            last = p;
            t_last = st->window[i].event_time_ms;
        }
        first = p;
        t_first = st->window[i].event_time_ms;
    }
    if (!last || t_last <= t_first)
        return 0;
    memset(f, 0, sizeof(*f));
    f->slope =
        (double)(last->memory_used - first->memory_used) / ((double)(t_last - t_first) / 1e3);
    f->last_used = (double)last->memory_used;
    f->predicted = f->last_used + (f->slope > 0 ? f->slope * ahead_s : 0);
    return 1;
}

static int worth_restart(const dlb_opt_input_t *in, const model_t *m, double k, int w_cur, int *w,
                         dlb_resource_t *res, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    const double restart = tun->restart_seconds > 0 ? tun->restart_seconds : 0;
    const double min_change = tun->resize_min_change;
    double cur_cpu, left, ahead, saved;
    int64_t cur_mem, need = 0;

    if (!st->window_cnt)
        return 0;
    ahead = dlb_mem_trend_ahead(in, &left);
    if (ahead > tun->cut_horizon_seconds)
        ahead = tun->cut_horizon_seconds;
    current_worker(st, &cur_cpu, &cur_mem);
    if (left >= 0 && left < 10 * restart && (*w != w_cur || res->cpu > 0 || res->memory > 0)) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Remaining %.0fs < 10 restarts of %.0fs: workers, cpu and memory "
                           "kept (memory raises excepted).",
                           left, restart);
        *w = w_cur;
        res->cpu = 0;
        if (!cur_mem || res->memory <= cur_mem)
            res->memory = 0;
        return 0;
    }
    if (m && *w > w_cur && left > 0) {
        saved = left * (1.0 - model_speed(m->coef[0], k, w_cur) / model_speed(m->coef[0], k, *w));
        if (saved < restart) {
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               " %d workers would save %.0fs of the remaining %.0fs, less than a "
                               "restart (%.0fs): kept at %d.",
                               *w, saved, left, restart, w_cur);
            *w = w_cur;
        }
    }
    if (cur_cpu > 0 && res->cpu > 0 && res->cpu < cur_cpu &&
        res->cpu > (1.0 - min_change) * cur_cpu) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Worker cpu %g -> %g is a cut under %.0f%%: kept.", cur_cpu, res->cpu,
                           100 * min_change);
        res->cpu = 0;
    }
    if (!(cur_mem > 0 && res->memory > 0 && res->memory < cur_mem))
        return 0;
    if ((double)res->memory > (1.0 - min_change) * (double)cur_mem) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Worker memory %.2fGiB -> %.2fGiB is a cut under %.0f%%: kept.",
                           DLB_GIB_F(cur_mem), DLB_GIB_F(res->memory), 100 * min_change);
        res->memory = 0;
        return 0;
    }
    /* DLRover's rule cuts to the usage so far + 20%, minutes into a job
     * whose memory may still be rising: a whole worker group then OOMs at
     * once. A cut goes no lower than every worker's trend predicts for
     * dlbrain.memory.cut.horizon.seconds ahead (a line through >= 4
     * samples, else the slope between the first and the newest sample at
     * the request); with one sample it waits. Memory that rises does so
     * with the data seen (ids, caches), so per step: a plan that makes the
     * job faster brings the same need sooner, and the horizon stretches by
     * the speed-up (the model's, or the worker ratio without one). */
    if (*w > w_cur && w_cur > 0)
        ahead *= m ? model_speed(m->coef[0], k, *w) / model_speed(m->coef[0], k, w_cur)
                   : (double)*w / (double)w_cur;
    for (size_t i = 0; i < st->window[st->window_cnt - 1].pods_cnt; i++) {
        const dlb_pod_usage_t *p = &st->window[st->window_cnt - 1].pods[i];
        dlb_mem_trend_t f;

        if (!is_worker(p))
            continue;
        if (!dlb_mem_trend_fit(st, p->name, p->memory_requested, ahead, &f) &&
            !two_point_trend(st, p->name, p->memory_requested, ahead, &f)) {
            need = -1;
            break;
        }
        if (f.predicted > (double)need)
            need = (int64_t)f.predicted;
    }
    if (need < 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Worker memory %.2fGiB -> %.2fGiB kept: no memory trend to cut by "
                           "yet.",
                           DLB_GIB_F(cur_mem), DLB_GIB_F(res->memory));
        res->memory = 0;
    } else if (need > res->memory) {
        int64_t to = need;

        if ((double)to > (1.0 - min_change) * (double)cur_mem) {
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               " Worker memory %.2fGiB -> %.2fGiB kept: the trend needs %.2fGiB "
                               "within the horizon.",
                               DLB_GIB_F(cur_mem), DLB_GIB_F(res->memory), DLB_GIB_F(need));
            res->memory = 0;
        } else {
            dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                               " Worker memory cut to %.2fGiB, not %.2fGiB: the trend needs that "
                               "within the horizon.",
                               DLB_GIB_F(to), DLB_GIB_F(res->memory));
            res->memory = to;
        }
    }
    return 0;
}

/* DLRover's worker resource rule, when the model cannot answer, with the
 * dlbrain set's memory floor and its restart and cut checks. */
static int fall_back(const dlb_opt_input_t *in, dlb_plan_t *plan, const char *why, size_t usable,
                     size_t counts)
{
    dlb_group_resource_t *g;
    int err, w_cur = 0, w;

    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sWorker model: %s (%zu usable samples, %zu worker counts; needs >= %d "
                       "and >= %d), DLRover's worker resource rule instead.",
                       dlb_reason_sep(plan->reason), why, usable, counts, MODEL_MIN_SAMPLES,
                       MODEL_MIN_COUNTS);
    if ((err = dlb_opt_worker_resource(in, plan)))
        return err;
    if (!(g = dlb_plan_group(plan, "worker")))
        return 0;
    if ((err = history_floor(in, &g->resource.memory, plan)))
        return err;
    if (in->job->window_cnt)
        w_cur = (int)dlb_sample_count(&in->job->window[in->job->window_cnt - 1], "worker");
    w = g->count > 0 ? g->count : w_cur;
    cluster_check(in, w_cur, &w, g->resource.cpu, plan);
    if ((err = worth_restart(in, NULL, 0, w_cur, &w, &g->resource, plan)))
        return err;
    g->count = w != w_cur ? w : 0;
    return 0;
}

/* The model's points from a run of samples: those with a speed and
 * workers (and PS pods, when any sample has them; with none, all-reduce,
 * b is held at 0). */
typedef struct points {
    point_t *pts;
    size_t n;
    size_t counts;    /* distinct worker counts */
    size_t ps_counts; /* distinct PS counts */
    int w_cur, w_min, w_max;
    double p_cur; /* the newest usable sample's */
    int with_ps;
    unsigned allowed;
} points_t;

/* A sample's speed. A job that makes a step in minutes reports 0.00 steps/s
 * (speeds come rounded to two decimals) while it runs: dropped, its samples
 * at that count were never seen, and a fit on faster counts that says
 * workers do not matter (their 0.02 steps/s all alike after rounding) kept
 * shrinking it. In the simulator a job so went from 24 workers to one and
 * ran 19 times longer (workload-3 seed 2). When the reported speed is 0 but
 * global_step advanced since the first sample at the same worker and PS
 * counts (seg), the steps over that time are its speed. */
static double sample_speed(const dlb_runtime_sample_t *samples, size_t i, size_t seg)
{
    const dlb_runtime_sample_t *a = &samples[seg], *b = &samples[i];

    if (samples[i].speed > 0 || i == seg || b->global_step <= a->global_step ||
        b->event_time_ms <= a->event_time_ms)
        return samples[i].speed;
    return (double)(b->global_step - a->global_step) * 1000.0 /
           (double)(b->event_time_ms - a->event_time_ms);
}

static int collect(const dlb_runtime_sample_t *samples, size_t cnt, points_t *o)
{
    double seen_p[64];
    size_t seen_pn = 0, seg = 0;

    memset(o, 0, sizeof(*o));
    o->w_min = INT_MAX;
    o->allowed = 0x7;
    if (cnt && !(o->pts = malloc(cnt * sizeof(*o->pts))))
        return DLB_ERR_NOMEM;
    /* Each sample's pods counted once (a history job's samples are walked
     * for every plan request of its scenario): pts[i] holds sample i's
     * counts and speed until the second pass, which never writes ahead of
     * i. seg: the first sample at sample i's counts. */
    for (size_t i = 0; i < cnt; i++) {
        int wk;
        double p;

        sample_inputs(&samples[i], &wk, &p);
        o->pts[i].workers = wk;
        o->pts[i].x[1] = p;
        if (o->pts[seg].workers != wk || o->pts[seg].x[1] != p)
            seg = i;
        o->pts[i].y = sample_speed(samples, i, seg);
        if (o->pts[i].y > 0 && wk > 0 && p > 0)
            o->with_ps = 1;
    }
    if (!o->with_ps)
        o->allowed = 0x5;
    for (size_t i = 0; i < cnt; i++) {
        point_t *pt = &o->pts[o->n];
        size_t j;
        int wk = o->pts[i].workers;
        double p = o->pts[i].x[1], speed = o->pts[i].y;

        if (!(speed > 0) || wk <= 0 || (o->with_ps && !(p > 0)))
            continue;
        pt->x[0] = 1.0 / wk;
        pt->x[1] = o->with_ps ? 1.0 / p : 0;
        pt->x[2] = 1;
        pt->y = 1.0 / speed;
        pt->workers = wk;
        for (j = 0; j < o->n && o->pts[j].workers != wk; j++)
            ;
        o->counts += j == o->n; /* a worker count not seen before */
        for (j = 0; j < seen_pn && seen_p[j] != p; j++)
            ;
        if (j == seen_pn && seen_pn < sizeof(seen_p) / sizeof(seen_p[0]))
            seen_p[seen_pn++] = p;
        o->n++;
        if (wk < o->w_min)
            o->w_min = wk;
        if (wk > o->w_max)
            o->w_max = wk;
        o->w_cur = wk;
        o->p_cur = p;
    }
    o->ps_counts = seen_pn;
    return 0;
}

int dlb_opt_worker_model(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    points_t pp;
    point_t *pts;
    size_t n, counts;
    int w_cur, w_min, w_max, w, steps = 0, step_max, max_w, err = 0;
    double p_cur, k, ratio = 0, r2, min_gain;
    size_t waiting;
    const char *stop = "";
    dlb_resource_t res;
    model_t m;

    if ((err = collect(st->window, st->window_cnt, &pp)))
        return err;
    pts = pp.pts;
    n = pp.n;
    counts = pp.counts;
    w_cur = pp.w_cur;
    w_min = pp.w_min;
    w_max = pp.w_max;
    p_cur = pp.p_cur;
    if (n < MODEL_MIN_SAMPLES || counts < MODEL_MIN_COUNTS) {
        err = fall_back(in, plan, "too little to fit", n, counts);
        goto out;
    }

    nnls3(pts, n, pp.allowed, &m);
    k = m.coef[1] * (pp.with_ps ? 1.0 / p_cur : 0) + m.coef[2];
    if (!(m.coef[0] + k > 0)) {
        err = fall_back(in, plan, "the fit is degenerate (a = b = c = 0)", n, counts);
        goto out;
    }

    /* Grow one worker at a time while the next one adds at least
     * min_gain of the speed per worker; if not even one is added and the
     * last worker does not pay either, shrink the same way. The ratio that
     * decided the stop is kept for the reason. */
    step_max = tun->scale_step_max > 0 ? tun->scale_step_max : 0;
    max_w = in->limits && in->limits->max_workers > 0 ? in->limits->max_workers : INT_MAX;
    min_gain = dlb_opt_cluster_min_gain(in, &waiting);
    if (waiting && min_gain > tun->scale_min_gain)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%s%zu other jobs wait for room: a worker must add %.2f of the speed "
                           "per worker, not %.2f.",
                           dlb_reason_sep(plan->reason), waiting, min_gain, tun->scale_min_gain);
    w = w_cur;
    for (;;) {
        ratio = gain_ratio(m.coef[0], k, w);
        if (steps >= step_max) {
            stop = "the step cap";
            break;
        }
        if (w >= max_w) {
            stop = "the worker limit";
            break;
        }
        if (ratio < min_gain) {
            stop = "";
            break;
        }
        w++;
        steps++;
    }
    if (w == w_cur && !stop[0]) {
        while (w > 1 && (ratio = gain_ratio(m.coef[0], k, w - 1)) < min_gain) {
            if (steps >= step_max) {
                stop = "the step cap";
                break;
            }
            w--;
            steps++;
        }
        if (w == 1 && w < w_cur)
            stop = "one worker";
    }

    r2 = m.ss_tot > 0 ? 1.0 - m.ss_res / m.ss_tot : 1.0;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sWorker model from %zu samples (%d..%d workers): 1/speed = %.6g/w + "
                       "%.6g/p + %.6g, R^2=%.4f, rms residual %.4fs; at p=%g PS "
                       "speed(%d)=%.4g steps/s, speed(%d)=%.4g: workers %d -> %d",
                       dlb_reason_sep(plan->reason), n, w_min, w_max, m.coef[0], m.coef[1],
                       m.coef[2], r2, sqrt(m.ss_res / (double)n), p_cur, w_cur,
                       model_speed(m.coef[0], k, w_cur), w, model_speed(m.coef[0], k, w), w_cur, w);
    if (w < w_cur && !stop[0])
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " (worker %d added %.3f < %.2f of the speed per worker; shrunk until "
                           "worker %d adds %.3f).",
                           w_cur, gain_ratio(m.coef[0], k, w_cur - 1), min_gain, w, ratio);
    else if (w < w_cur)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " (worker %d added %.3f < %.2f of the speed per worker; shrunk until "
                           "%s).",
                           w_cur, gain_ratio(m.coef[0], k, w_cur - 1), min_gain,
                           !strcmp(stop, "one worker") ? "one worker was left" : "the step cap");
    else if (stop[0])
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " (stopped by %s; worker %d would add %.3f of the speed per worker).",
                           stop, w + 1, gain_ratio(m.coef[0], k, w));
    else
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " (worker %d would add %.3f < %.2f of the speed per worker).", w + 1,
                           gain_ratio(m.coef[0], k, w), min_gain);

    if ((err = worker_resource(in, &res)) || (err = history_floor(in, &res.memory, plan)))
        goto out;
    cluster_check(in, w_cur, &w, res.cpu, plan);
    if ((err = worth_restart(in, &m, k, w_cur, &w, &res, plan)))
        goto out;
    if (w != w_cur || res.cpu > 0 || res.memory > 0) {
        dlb_group_resource_t *g;

        if (!(g = dlb_plan_group_get(plan, "worker"))) {
            err = DLB_ERR_NOMEM;
            goto out;
        }
        g->count = w != w_cur ? w : 0;
        g->resource.cpu = res.cpu;
        g->resource.memory = res.memory;
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Worker cpu %g, memory %.2fGiB by DLRover's worker resource rule (0 = "
                           "keep).",
                           res.cpu, DLB_GIB_F(res.memory));
    }
out:
    free(pts);
    return err;
}

/* The PS term's share b/a of the scenario's earlier jobs, each fitted on its
 * own samples where they ran at several worker and PS counts (so that a/w
 * and b/p are told apart): their median, in *ratio (0 jobs: returns 0). */
static int history_ratio(const dlb_history_t *h, double *ratio, size_t *jobs)
{
    double r[64];
    size_t n = 0;
    int err = 0;

    *jobs = 0;
    for (size_t i = 0; h && i < h->jobs_cnt && n < sizeof(r) / sizeof(r[0]); i++) {
        points_t pp;
        model_t m;

        if ((err = collect(h->jobs[i].samples, h->jobs[i].samples_cnt, &pp)))
            return err;
        if (pp.with_ps && pp.n >= MODEL_MIN_SAMPLES && pp.counts >= MODEL_MIN_COUNTS &&
            pp.ps_counts >= 2) {
            nnls3(pp.pts, pp.n, pp.allowed, &m);
            if (m.coef[0] > 0)
                r[n++] = m.coef[1] / m.coef[0];
        }
        free(pp.pts);
    }
    if (!n)
        return 0;
    /* Insertion sort: a few dozen values. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && r[j - 1] > r[j]; j--) {
            double t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    *ratio = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    *jobs = n;
    return 0;
}

/* speed(w, p) of the model. */
static double speed_wp(const model_t *m, double w, double p)
{
    return 1.0 / (m->coef[0] / w + m->coef[1] / p + m->coef[2]);
}

/* The largest CPU request of a type in the newest sample (0: none). */
static double newest_cpu(const dlb_job_state_t *st, int ps)
{
    double c = 0;

    if (st->window_cnt)
        for (size_t k = 0; k < st->window[st->window_cnt - 1].pods_cnt; k++) {
            const dlb_pod_usage_t *p = &st->window[st->window_cnt - 1].pods[k];

            if ((ps ? dlb_is_ps(p->type) : is_worker(p)) && p->cpu_requested > c)
                c = p->cpu_requested;
        }
    return c;
}

/* A job whose PS count never changed, in a scenario where none did, cannot
 * tell b/p from c: its step time has a part that workers do not reduce, and
 * only another PS count shows whether PS pods would. When that part is at
 * least dlbrain.ps.probe.share of the step time at the current workers, the
 * PS count doubles (within dlbrain.scale.step.max, the job's PS limit and
 * the cluster's room), and the samples that follow fit the whole model: a
 * PS that did not pay for its cores goes again by the rule above. */
static int ps_probe(const dlb_opt_input_t *in, const points_t *pp, dlb_group_resource_t *g,
                    dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    double share, t, cp;
    int p_cur = (int)pp->p_cur, p, max_ps;
    model_t m;

    if (!(tun->ps_probe_share > 0) || pp->n < MODEL_MIN_SAMPLES || pp->counts < MODEL_MIN_COUNTS) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS model: the job never changed its PS count and no earlier job of "
                           "the scenario did: PS count kept.",
                           dlb_reason_sep(plan->reason));
        return 0;
    }
    memset(&m, 0, sizeof(m));
    nnls3(pp->pts, pp->n, pp->allowed & ~0x2u, &m);
    t = m.coef[0] / pp->w_cur + m.coef[2];
    share = t > 0 ? m.coef[2] / t : 0;
    max_ps = in->limits && in->limits->max_ps > 0 ? in->limits->max_ps : 15;
    p = 2 * p_cur;
    if (tun->scale_step_max > 0 && p > p_cur + tun->scale_step_max)
        p = p_cur + tun->scale_step_max;
    if (p > max_ps)
        p = max_ps;
    cp = g && g->resource.cpu > 0 ? g->resource.cpu : newest_cpu(st, 1);
    if (share < tun->ps_probe_share || p <= p_cur || !(cp > 0)) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS model: one PS count seen here and in the scenario; 1/speed = "
                           "%.6g/w + %.6g at %d workers leaves %.2f of the step time to neither "
                           "(probe above %.2f, up to %d PS): PS count kept.",
                           dlb_reason_sep(plan->reason), m.coef[0], m.coef[2], pp->w_cur, share,
                           tun->ps_probe_share, max_ps);
        return 0;
    }
    {
        dlb_cluster_growth_t cg = {
            .current = p_cur, .want = p, .worker_cpu = cp, .cores = held_cores(st)};

        p = dlb_opt_cluster_grow(in, &cg, plan);
    }
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sPS probe: one PS count seen here and in the scenario; 1/speed = "
                       "%.6g/w + %.6g at %d workers leaves %.2f of the step time (>= %.2f) to "
                       "what workers do not reduce, maybe the PS: PS %d -> %d, to measure.",
                       dlb_reason_sep(plan->reason), m.coef[0], m.coef[2], pp->w_cur, share,
                       tun->ps_probe_share, p_cur, p);
    if (p != p_cur) {
        if (!g && !(g = dlb_plan_group_get(plan, "ps")))
            return DLB_ERR_NOMEM;
        g->count = p;
    }
    return 0;
}

/* The PS count from the same model (dlb_opt_ps_model, optimizer.h). Each PS
 * added must pay for its cores as a worker must: the speed it adds per core
 * at least dlbrain.scale.min.gain (.busy while jobs wait) of the job's speed
 * per core; a PS whose removal loses less goes. Where the job's own samples
 * never changed the PS count, b/p and c cannot be told apart: the ratio b/a
 * of the scenario's earlier jobs that ran at several PS counts is taken,
 * with c = 0 (DLRover-RM's measured PS training had no term that neither
 * workers nor PS help); with no such job, DLRover's count stays. */
int dlb_opt_ps_model(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    dlb_group_resource_t *g = dlb_plan_group(plan, "ps");
    double cp, cw, ratio = 0, min_gain, sp, cores;
    int p, p_cur, steps = 0, step_max, max_ps, err;
    size_t waiting, hist_jobs = 0;
    points_t pp;
    model_t m;
    const char *how;

    if ((err = collect(st->window, st->window_cnt, &pp)))
        return err;
    if (!pp.n || !pp.with_ps) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS model: no sample with a speed, workers and PS: PS count kept.",
                           dlb_reason_sep(plan->reason));
        goto out;
    }
    memset(&m, 0, sizeof(m));
    if (pp.n >= MODEL_MIN_SAMPLES && pp.counts >= MODEL_MIN_COUNTS && pp.ps_counts >= 2) {
        nnls3(pp.pts, pp.n, pp.allowed, &m);
        how = "the job's own samples";
    } else if ((err = history_ratio(in->history, &ratio, &hist_jobs))) {
        goto out;
    } else if (!hist_jobs) {
        err = ps_probe(in, &pp, g, plan);
        goto out;
    } else {
        double sum = 0;

        /* 1/speed = a (1/w + ratio/p): a from each point, averaged. */
        for (size_t i = 0; i < pp.n; i++)
            sum += pp.pts[i].y / (pp.pts[i].x[0] + ratio * pp.pts[i].x[1]);
        m.coef[0] = sum / (double)pp.n;
        m.coef[1] = ratio * m.coef[0];
        how = "b/a of earlier jobs";
    }
    if (!(m.coef[0] > 0) || !(m.coef[1] > 0)) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sPS model (%s): no PS term (a=%.6g, b=%.6g): PS count kept.",
                           dlb_reason_sep(plan->reason), how, m.coef[0], m.coef[1]);
        goto out;
    }
    p_cur = (int)pp.p_cur;
    cp = g && g->resource.cpu > 0 ? g->resource.cpu : newest_cpu(st, 1);
    cw = newest_cpu(st, 0);
    if (!(cp > 0) || !(cw > 0))
        goto out;
    min_gain = dlb_opt_cluster_min_gain(in, &waiting);
    step_max = tun->scale_step_max > 0 ? tun->scale_step_max : 0;
    max_ps = in->limits && in->limits->max_ps > 0 ? in->limits->max_ps : 15;
    /* The gain of the (p+1)-th PS per core, over the speed per core. */
    for (p = p_cur; steps < step_max && p < max_ps; p++, steps++) {
        sp = speed_wp(&m, pp.w_cur, p);
        cores = pp.w_cur * cw + p * cp;
        if ((speed_wp(&m, pp.w_cur, p + 1) - sp) / cp < min_gain * sp / cores)
            break;
    }
    if (p == p_cur)
        for (; steps < step_max && p > 1; p--, steps++) {
            sp = speed_wp(&m, pp.w_cur, p);
            cores = pp.w_cur * cw + p * cp;
            if ((sp - speed_wp(&m, pp.w_cur, p - 1)) / cp >= min_gain * sp / cores)
                break;
        }
    if (p > p_cur) {
        dlb_cluster_growth_t cg = {
            .current = p_cur, .want = p, .worker_cpu = cp, .cores = held_cores(st)};

        p = dlb_opt_cluster_grow(in, &cg, plan);
    }
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sPS model (%s%s): 1/speed = %.6g/w + %.6g/p + %.6g; at %d workers of "
                       "%g cores, PS of %g cores: speed(%d PS)=%.4g, speed(%d PS)=%.4g; a PS "
                       "must add %.2f of the speed per core: PS %d -> %d.",
                       dlb_reason_sep(plan->reason), how,
                       hist_jobs ? (hist_jobs == 1 ? ", 1 job" : ", several jobs") : "", m.coef[0],
                       m.coef[1], m.coef[2], pp.w_cur, cw, cp, p_cur, speed_wp(&m, pp.w_cur, p_cur),
                       p, speed_wp(&m, pp.w_cur, p), min_gain, p_cur, p);
    if (p != p_cur || (g && g->count > 0 && g->count != p)) {
        if (!g && !(g = dlb_plan_group_get(plan, "ps"))) {
            err = DLB_ERR_NOMEM;
            goto out;
        }
        g->count = p;
    }
out:
    free(pp.pts);
    return err;
}
