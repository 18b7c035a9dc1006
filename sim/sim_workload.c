/* Workload files of the job simulator (sim_workload.h). */
#include "sim_workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sim_model.h"
#include "vec.h"

static int push(dlb_sim_workload_t *wl, size_t *cap, const dlb_sim_spec_t *s)
{
    if (dlb_vec_reserve((void **)&wl->jobs, cap, wl->n + 1, sizeof(*wl->jobs)))
        return DLB_ERR_NOMEM;
    wl->jobs[wl->n++] = *s;
    return 0;
}

/* One data row of either format into s. @returns 0 or -1. */
static int parse_row(char *line, int pollux, dlb_sim_spec_t *s)
{
    double t;
    long long ds = 0, bs;
    int ep = 0, w, n;

    memset(s, 0, sizeof(*s));
    line[strcspn(line, "\r\n")] = '\0';
    if (pollux) {
        if (sscanf(line, "%63[^,],%lf,%63[^,],%d,%lld%n", s->name, &t, s->model, &w, &bs, &n) < 5 ||
            line[n])
            return -1;
    } else {
        /* Empty dataset_size / epochs fields mean "the profile's". */
        char f_ds[32] = "", f_ep[32] = "";
        if (sscanf(line, "%lf,%63[^,],%63[^,],%31[^,],%31[^,],%lld,%d%n", &t, s->name, s->model,
                   f_ds, f_ep, &bs, &w, &n) < 7) {
            if (sscanf(line, "%lf,%63[^,],%63[^,],,,%lld,%d%n", &t, s->name, s->model, &bs, &w,
                       &n) < 5)
                return -1;
        }
        if (line[n])
            return -1;
        if ((f_ds[0] && sscanf(f_ds, "%lld", &ds) != 1) ||
            (f_ep[0] && sscanf(f_ep, "%d", &ep) != 1))
            return -1;
    }
    if (!(t >= 0) || t > 1e9 || bs < 1 || w < 1 || ds < 0 || ep < 0)
        return -1;
    s->arrival_ms = (int64_t)(t * 1000.0 + 0.5);
    s->dataset_size = ds;
    s->epochs = ep;
    s->batch_size = bs;
    s->workers = w;
    return 0;
}

int dlb_sim_workload_load(const char *path, size_t max_jobs, dlb_sim_workload_t *wl, char *errstr,
                          size_t errstr_size)
{
    FILE *fp = fopen(path, "r");
    char line[1024];
    size_t cap = 0, rows;
    int pollux, lineno = 1, err = 0;

    memset(wl, 0, sizeof(*wl));
    if (!fp)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "%s: %s", path, strerror(errno));
    if (!fgets(line, sizeof(line), fp)) {
        fclose(fp);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s: empty", path);
    }
    if (!strncmp(line, "name,time,application,num_replicas,batch_size", 45)) {
        pollux = 1;
    } else if (!strncmp(line, "arrival_s,name,model,dataset_size,epochs,batch_size,workers", 59)) {
        pollux = 0;
    } else {
        fclose(fp);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "%s:1: not a workload header (name,time,application,num_replicas,"
                          "batch_size or arrival_s,name,model,dataset_size,epochs,batch_size,"
                          "workers)",
                          path);
    }
    while (fgets(line, sizeof(line), fp)) {
        dlb_sim_spec_t s;
        char why[512];

        lineno++;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        if (parse_row(line, pollux, &s)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s:%d: not a valid row", path,
                             lineno);
            break;
        }
        /* No measurements, no made-up speed: the workload names a profile. */
        if (dlb_sim_profile_check(s.model, why, sizeof(why))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s:%d: %s", path, lineno, why);
            break;
        }
        if ((err = push(wl, &cap, &s))) {
            dlb_seterr(errstr, errstr_size, err, "%s: out of memory", path);
            break;
        }
    }
    fclose(fp);
    if (!err && !wl->n)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s: no jobs", path);
    if (err) {
        dlb_sim_workload_free(wl);
        return err;
    }
    /* Insertion sort: stable (equal times keep file order) and linear on
     * the sorted files workloads usually are. */
    for (size_t i = 1; i < wl->n; i++) {
        dlb_sim_spec_t s = wl->jobs[i];
        size_t j = i;
        for (; j > 0 && wl->jobs[j - 1].arrival_ms > s.arrival_ms; j--)
            wl->jobs[j] = wl->jobs[j - 1];
        wl->jobs[j] = s;
    }
    rows = wl->n;
    if (max_jobs && max_jobs < rows) {
        wl->n = max_jobs;
    } else if (max_jobs > rows) {
        int64_t span = wl->jobs[rows - 1].arrival_ms - wl->jobs[0].arrival_ms;
        int64_t shift = span + (rows > 1 ? span / (int64_t)(rows - 1) : 60000);

        for (size_t i = rows; i < max_jobs; i++) {
            dlb_sim_spec_t s = wl->jobs[i % rows];
            size_t round = i / rows;
            char base[64];

            memcpy(base, s.name, sizeof(base));
            snprintf(s.name, sizeof(s.name), "%.40s-r%zu", base, round);
            s.arrival_ms += (int64_t)round * shift;
            if ((err = push(wl, &cap, &s))) {
                dlb_sim_workload_free(wl);
                return dlb_seterr(errstr, errstr_size, err, "%s: out of memory", path);
            }
        }
    }
    return 0;
}

void dlb_sim_workload_free(dlb_sim_workload_t *wl)
{
    free(wl->jobs);
    free(wl->owned);
    memset(wl, 0, sizeof(*wl));
}
