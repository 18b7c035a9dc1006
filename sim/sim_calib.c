/* The calibration check (sim_calib.h). */
#include "sim_calib.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "vec.h"

#define CALIB_WORKLOADS 4
#define CALIB_SEEDS     3

int dlb_sim_summary_figure(const dlb_sim_summary_t *s, const char *figure, double *v)
{
    const struct {
        const char *name;
        double v;
    } figs[] = {
        {"worker_cpu_util", s->worker_cpu_util},
        {"worker_mem_util", s->worker_mem_util},
        {"ps_cpu_util", s->ps_cpu_util},
        {"ps_mem_util", s->ps_mem_util},
        {"pods_oom_killed_share", s->pods ? (double)s->pods_oom_killed / (double)s->pods : NAN},
        {"completion_rate", s->completion_rate},
        {"pending_mean_s", s->pending_mean_s},
        {"jct_mean_s", s->jct_mean_s},
    };

    for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++) {
        if (!strcmp(figs[i].name, figure)) {
            *v = figs[i].v;
            return 0;
        }
    }
    return DLB_ERR_NOTFOUND;
}

int dlb_sim_targets_load(const char *path, dlb_sim_target_t **out, size_t *n, char *errstr,
                         size_t errstr_size)
{
    FILE *fp = fopen(path, "r");
    char line[512];
    int lineno = 0, header = 0, err = 0;
    dlb_sim_summary_t zero = {0};

    *out = NULL;
    *n = 0;
    if (!fp)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "%s: %s", path, strerror(errno));
    while (!err && fgets(line, sizeof(line), fp)) {
        dlb_sim_target_t t = {0}, *slot;
        double v;

        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!header) {
            header = 1;
            if (strncmp(line, "figure,low,high,prod_low,prod_high,source", 41))
                err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                                 "%s:%d: expected the header "
                                 "figure,low,high,prod_low,prod_high,source",
                                 path, lineno);
            continue;
        }
        if (sscanf(line, "%31[^,],%lf,%lf,%lf,%lf,%31[^,\r\n]", t.figure, &t.low, &t.high,
                   &t.prod_low, &t.prod_high, t.source) != 6 ||
            !(t.low <= t.high) || !(t.prod_low <= t.prod_high)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "%s:%d: not a target row (figure,low,high,prod_low,prod_high,source "
                             "with low <= high)",
                             path, lineno);
        } else if (dlb_sim_summary_figure(&zero, t.figure, &v)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s:%d: unknown figure '%s'",
                             path, lineno, t.figure);
        } else if (!(slot = dlb_vec_push((void **)out, n, sizeof(*slot)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        } else {
            *slot = t;
        }
    }
    fclose(fp);
    if (!err && !*n)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s: no targets", path);
    if (err) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return err;
}

static int discard(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    (void)opaque;
    (void)ev;
    (void)errstr;
    (void)errstr_size;
    return 0;
}

int dlb_sim_calibrate(const dlb_sim_opts_t *base, const char *data_dir, size_t jobs, FILE *fp,
                      int *in_band, char *errstr, size_t errstr_size)
{
    dlb_sim_target_t *t = NULL;
    size_t nt = 0;
    double *sum = NULL, *lo = NULL, *hi = NULL;
    char path[4096];
    int err, runs = 0;
    const dlb_sim_io_t io = {.publish = discard};

    *in_band = 0;
    snprintf(path, sizeof(path), "%s/production/targets.csv", data_dir);
    if ((err = dlb_sim_targets_load(path, &t, &nt, errstr, errstr_size)))
        return err;
    sum = calloc(nt, sizeof(*sum));
    lo = calloc(nt, sizeof(*lo));
    hi = calloc(nt, sizeof(*hi));
    if (!sum || !lo || !hi) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    fprintf(fp, "| workload | seed |");
    for (size_t i = 0; i < nt; i++)
        fprintf(fp, " %s |", t[i].figure);
    fprintf(fp, "\n|---|---|");
    for (size_t i = 0; i < nt; i++)
        fprintf(fp, "---|");
    fputc('\n', fp);
    for (int w = 1; w <= CALIB_WORKLOADS && !err; w++) {
        dlb_sim_workload_t wl = {0};

        snprintf(path, sizeof(path), "%s/pollux/workloads/workload-%d.csv", data_dir, w);
        if ((err = dlb_sim_workload_load(path, jobs, &wl, errstr, errstr_size)))
            break;
        for (uint64_t seed = 1; seed <= CALIB_SEEDS && !err; seed++) {
            dlb_sim_opts_t o = *base;
            dlb_sim_summary_t s;

            o.wl = &wl;
            o.seed = seed;
            o.jobs_csv = NULL;
            if ((err = dlb_sim_run(&o, &io, &s, errstr, errstr_size)))
                break;
            fprintf(fp, "| workload-%d | %d |", w, (int)seed);
            for (size_t i = 0; i < nt; i++) {
                double v = NAN;

                dlb_sim_summary_figure(&s, t[i].figure, &v);
                fprintf(fp, " %.3f |", v);
                sum[i] += v;
                if (!runs || v < lo[i])
                    lo[i] = v;
                if (!runs || v > hi[i])
                    hi[i] = v;
            }
            fputc('\n', fp);
            runs++;
        }
        dlb_sim_workload_free(&wl);
    }
    if (err)
        goto out;
    *in_band = 1;
    fprintf(fp,
            "\n| figure | simulated, mean of %d runs | range | production | source | band | "
            "|\n|---|---|---|---|---|---|---|\n",
            runs);
    for (size_t i = 0; i < nt; i++) {
        double m = sum[i] / runs;
        int ok = m >= t[i].low && m <= t[i].high; /* NaN is out */

        *in_band &= ok;
        fprintf(fp, "| %s | %.3f | %.3f-%.3f | ", t[i].figure, m, lo[i], hi[i]);
        if (t[i].prod_low == t[i].prod_high)
            fprintf(fp, "%.3f", t[i].prod_low);
        else
            fprintf(fp, "%.3f-%.3f", t[i].prod_low, t[i].prod_high);
        fprintf(fp, " | %s | %.2f-%.2f | %s |\n", t[i].source, t[i].low, t[i].high,
                ok ? "in band" : "OUT OF BAND");
    }
out:
    free(t);
    free(sum);
    free(lo);
    free(hi);
    return err;
}
