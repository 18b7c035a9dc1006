/* A workload from recorded history (sim_history.h): the pure part. */
#include "sim_history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "err.h"
#include "sim_curve.h"
#include "sim_model.h"

/* What a PS holds besides its share of the variables (sim_job.c adds it to
 * every PS's need): taken off the observed use so the simulated need is the
 * observed one. */
#define HIST_PS_RUNTIME_MEM (512 * DLB_MIB)

/* A job's own profile, curve and scenario name, where its spec points. */
typedef struct hist_owned {
    dlb_sim_profile_t prof;
    dlb_sim_curve_t curve;
    char scenario[64];
} hist_owned_t;

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The lower median of v[0..n) (sorted in place); 0 for none. */
static double median(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), dbl_cmp);
    return v[(n - 1) / 2];
}

/* A uid as a job name (63 bytes): a longer one keeps its first 54 bytes and
 * gains a hash of the whole, so two long uids with one prefix stay apart. */
static void job_name(const char *uid, char *name, size_t size)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    if (strlen(uid) < size) {
        snprintf(name, size, "%s", uid);
        return;
    }
    for (const char *p = uid; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    snprintf(name, size, "%.54s-%08x", uid, (unsigned)h);
}

/* Job j's spec and profile from its samples s[0..n). @returns 1 when it has
 * a speed, 0 when not, -1 out of memory. */
static int job_build(const dlb_sim_hist_job_t *j, const dlb_sim_hist_sample_t *s, size_t n,
                     dlb_sim_spec_t *spec, hist_owned_t *o, size_t *points)
{
    int *w = calloc(n ? n : 1, sizeof(*w));
    double *r = calloc(n ? n : 1, sizeof(*r)), *cpu = calloc(n ? n : 1, sizeof(*cpu));
    double *ps = calloc(n ? n : 1, sizeof(*ps));
    int64_t batch = j->batch_size > 0 ? j->batch_size : 1, steps = 0, wk_lo = 0, wk_hi = 0,
            ps_hi = 0;
    size_t m = 0, mc = 0, mp = 0, first = n;
    int rc = -1, got;

    if (!w || !r || !cpu || !ps)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (s[i].global_step > steps)
            steps = s[i].global_step;
        if (first == n && s[i].workers > 0)
            first = i;
        if (!(s[i].speed > 0) || s[i].workers < 1)
            continue;
        /* Speed is steps of the job's batch per second. */
        w[m] = s[i].workers;
        r[m++] = s[i].speed * (double)batch;
        if (s[i].wk_cpu_used > 0)
            cpu[mc++] = s[i].wk_cpu_used;
        if (s[i].ps > 0)
            ps[mp++] = s[i].ps_cpu_used / (s[i].speed * (double)batch / 1000.0);
        if (!wk_lo || (s[i].wk_mem_used > 0 && s[i].wk_mem_used < wk_lo))
            wk_lo = s[i].wk_mem_used;
        if (s[i].wk_mem_used > wk_hi)
            wk_hi = s[i].wk_mem_used;
        if (s[i].ps > 0 && s[i].ps_mem_used - s[i].ps * HIST_PS_RUNTIME_MEM > ps_hi)
            ps_hi = s[i].ps_mem_used - s[i].ps * HIST_PS_RUNTIME_MEM;
    }
    if ((got = dlb_sim_curve_build(w, r, m, &o->curve)) < 0)
        goto out;
    rc = 0;
    if (!got || first == n)
        goto out;
    *points += (size_t)got;
    memset(spec, 0, sizeof(*spec));
    job_name(j->uid, spec->name, sizeof(spec->name));
    snprintf(spec->model, sizeof(spec->model), "%s",
             j->app[0]        ? j->app
             : j->scenario[0] ? j->scenario
                              : "unknown");
    snprintf(o->scenario, sizeof(o->scenario), "%s", j->scenario[0] ? j->scenario : spec->model);
    spec->batch_size = batch;
    /* As long as it ran there: a failed or stopped job too, up to where it
     * stopped. */
    spec->dataset_size = steps * batch > batch ? steps * batch : batch;
    spec->epochs = 1;
    spec->workers = s[first].workers;
    spec->ps = s[first].ps;
    spec->wk_cpu = s[first].wk_cpu_req;
    spec->ps_cpu = s[first].ps_cpu_req;
    spec->wk_mem = s[first].wk_mem_req;
    spec->ps_mem = s[first].ps_mem_req;
    spec->prof = &o->prof;
    o->prof.name = o->scenario;
    o->prof.dataset_size = spec->dataset_size;
    o->prof.epochs = 1;
    o->prof.worker_cpu = median(cpu, mc);
    if (!(o->prof.worker_cpu > 0))
        o->prof.worker_cpu = 1;
    o->prof.ps_cpu_per_ksample = median(ps, mp);
    o->prof.wk_mem_base = wk_lo;
    o->prof.wk_mem_growth = wk_hi - wk_lo;
    o->prof.ps_mem_base = ps_hi;
    o->prof.variable_count = j->variable_count;
    o->prof.op_count = j->op_count;
    o->prof.recv_op_count = j->recv_op_count;
    o->prof.flops = j->flops;
    o->prof.embedding_dimension = j->embedding_dimension;
    o->prof.observed = &o->curve;
    rc = 1;
out:
    free(w);
    free(r);
    free(cpu);
    free(ps);
    return rc;
}

int dlb_sim_history_begin(dlb_sim_history_builder_t *b, size_t cap, size_t max_jobs, char *errstr,
                          size_t errstr_size)
{
    memset(b, 0, sizeof(*b));
    b->cap = max_jobs && max_jobs < cap ? max_jobs : cap;
    if (!(b->wl.jobs = calloc(b->cap ? b->cap : 1, sizeof(*b->wl.jobs))) ||
        !(b->wl.owned = calloc(b->cap ? b->cap : 1, sizeof(hist_owned_t)))) {
        dlb_sim_workload_free(&b->wl);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory for %zu jobs", b->cap);
    }
    return 0;
}

int dlb_sim_history_add(dlb_sim_history_builder_t *b, const dlb_sim_hist_job_t *j,
                        const dlb_sim_hist_sample_t *s, size_t n)
{
    hist_owned_t *owned = b->wl.owned;
    dlb_sim_spec_t *spec;
    int rc;

    if (b->wl.n >= b->cap)
        return 0;
    spec = &b->wl.jobs[b->wl.n];
    if ((rc = job_build(j, s, n, spec, &owned[b->wl.n], &b->stats.points)) < 0)
        return DLB_ERR_NOMEM;
    if (!rc) {
        b->stats.skipped++;
        return 0;
    }
    if (!b->wl.n)
        b->t0 = j->created_ms;
    spec->arrival_ms = j->created_ms - b->t0;
    b->wl.n++;
    return 0;
}

int dlb_sim_history_end(dlb_sim_history_builder_t *b, dlb_sim_workload_t *wl,
                        dlb_sim_history_stats_t *stats, char *errstr, size_t errstr_size)
{
    b->stats.jobs = b->wl.n;
    *stats = b->stats;
    if (!b->wl.n) {
        dlb_sim_workload_free(&b->wl);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "no job in the range has a runtime sample with a speed (%zu jobs)",
                          b->stats.skipped);
    }
    *wl = b->wl;
    memset(&b->wl, 0, sizeof(b->wl));
    return 0;
}

int dlb_sim_history_workload(const dlb_sim_history_t *h, size_t max_jobs, dlb_sim_workload_t *wl,
                             dlb_sim_history_stats_t *stats, char *errstr, size_t errstr_size)
{
    dlb_sim_history_builder_t b;
    int err;

    memset(wl, 0, sizeof(*wl));
    memset(stats, 0, sizeof(*stats));
    if ((err = dlb_sim_history_begin(&b, h->jobs_cnt, max_jobs, errstr, errstr_size)))
        return err;
    for (size_t i = 0, s = 0; i < h->jobs_cnt && b.wl.n < b.cap; i++) {
        size_t e;

        /* Samples come by job, in the jobs' order. */
        while (s < h->samples_cnt && h->samples[s].job < i)
            s++;
        for (e = s; e < h->samples_cnt && h->samples[e].job == i;)
            e++;
        if ((err = dlb_sim_history_add(&b, &h->jobs[i], h->samples + s, e - s))) {
            dlb_sim_workload_free(&b.wl);
            return dlb_seterr(errstr, errstr_size, err, "out of memory");
        }
        s = e;
    }
    return dlb_sim_history_end(&b, wl, stats, errstr, errstr_size);
}

void dlb_sim_history_free(dlb_sim_history_t *h)
{
    free(h->jobs);
    free(h->samples);
    memset(h, 0, sizeof(*h));
}
