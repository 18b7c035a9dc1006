/* The PS cost fit (sim_psfit.h). */
#include "sim_psfit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "vec.h"

#define HELD "held-out"

int dlb_sim_ps_points_load(const char *path, dlb_sim_ps_point_t **pts, size_t *n, char *errstr,
                           size_t errstr_size)
{
    FILE *fp = fopen(path, "r");
    char line[512];
    int lineno = 0, header = 0, err = 0;

    if (!fp)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "%s: %s", path, strerror(errno));
    while (!err && fgets(line, sizeof(line), fp)) {
        dlb_sim_ps_point_t p = {0}, *slot;
        char base[64] = "";
        int k;

        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!header) {
            header = 1;
            if (strncmp(line, "set,workers,ps,step_s,base_s", 28))
                err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                                 "%s:%d: expected the header set,workers,ps,step_s,base_s", path,
                                 lineno);
            continue;
        }
        k = sscanf(line, "%31[^,],%d,%d,%lf,%63[^,\r\n]", p.set, &p.workers, &p.ps, &p.step, base);
        if (k >= 5 && sscanf(base, "%lf", &p.base) != 1)
            k = 0;
        if (k < 4 || p.workers < 1 || p.ps < 1 || !(p.step > 0) || p.base < 0) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "%s:%d: not a point (set,workers >= 1,ps >= 1,step_s > 0,base_s)",
                             path, lineno);
        } else if (!(slot = dlb_vec_push((void **)pts, n, sizeof(*slot)))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        } else {
            *slot = p;
        }
    }
    fclose(fp);
    return err;
}

double dlb_sim_ps_predict(const dlb_sim_ps_fit_t *f, const dlb_sim_ps_point_t *pt)
{
    double t0 = pt->base > 0 ? pt->base : f->base;

    return t0 * (1.0 + f->beta * pt->workers / pt->ps + f->gamma * (pt->workers - 1));
}

/* Least squares on columns cols of A (rows x 3) by the normal equations;
 * 0 when singular. */
static int lstsq(const double (*a)[3], const double *y, size_t rows, const int *cols, int k,
                 double *x)
{
    double m[3][4] = {{0}};

    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++)
            for (size_t r = 0; r < rows; r++)
                m[i][j] += a[r][cols[i]] * a[r][cols[j]];
        for (size_t r = 0; r < rows; r++)
            m[i][k] += a[r][cols[i]] * y[r];
    }
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(m[r][c]) > fabs(m[piv][c]))
                piv = r;
        if (fabs(m[piv][c]) < 1e-300)
            return 0;
        for (int j = 0; j <= k; j++) {
            double t = m[c][j];
            m[c][j] = m[piv][j];
            m[piv][j] = t;
        }
        for (int r = 0; r < k; r++) {
            double f = m[r][c] / m[c][c];
            if (r == c)
                continue;
            for (int j = c; j <= k; j++)
                m[r][j] -= f * m[c][j];
        }
    }
    for (int i = 0; i < k; i++)
        x[i] = m[i][k] / m[i][i];
    return 1;
}

/* Non-negative least squares on 2 or 3 columns: every subset of columns
 * (the first always, when `first`) solved, the best with no negative
 * coefficient kept. Exact for so few columns. */
static void nnls(const double (*a)[3], const double *y, size_t rows, int ncols, int first,
                 double *out)
{
    double best = HUGE_VAL;

    memset(out, 0, 3 * sizeof(*out));
    for (int mask = 1; mask < (1 << ncols); mask++) {
        int cols[3], k = 0, ok = 1;
        double x[3], xs[3] = {0}, r = 0;

        if (first && !(mask & 1))
            continue;
        for (int c = 0; c < ncols; c++)
            if (mask & (1 << c))
                cols[k++] = c;
        if (!lstsq(a, y, rows, cols, k, x))
            continue;
        for (int i = 0; i < k; i++) {
            ok &= x[i] >= 0;
            xs[cols[i]] = x[i];
        }
        if (!ok)
            continue;
        for (size_t row = 0; row < rows; row++) {
            double d = -y[row];
            for (int c = 0; c < ncols; c++)
                d += a[row][c] * xs[c];
            r += d * d;
        }
        if (r < best) {
            best = r;
            memcpy(out, xs, sizeof(xs));
        }
    }
}

static double mape(const dlb_sim_ps_fit_t *f, const dlb_sim_ps_point_t *pts, size_t n, int held)
{
    double sum = 0;
    size_t cnt = 0;

    for (size_t i = 0; i < n; i++) {
        if ((strcmp(pts[i].set, HELD) == 0) != held)
            continue;
        sum += fabs(dlb_sim_ps_predict(f, &pts[i]) - pts[i].step) / pts[i].step;
        cnt++;
    }
    return cnt ? 100.0 * sum / (double)cnt : NAN;
}

int dlb_sim_ps_fit(const dlb_sim_ps_point_t *pts, size_t n, dlb_sim_ps_fit_t *out)
{
    double(*a)[3], *y, x[3];
    size_t rows = 0, with_base = 0;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(pts[i].set, HELD)) {
            out->n_held++;
        } else {
            out->n_fit++;
            with_base += pts[i].base > 0;
        }
    }
    if (out->n_fit < 3 || (with_base && with_base != out->n_fit))
        return DLB_ERR_INVALID;
    a = calloc(out->n_fit, sizeof(*a));
    y = calloc(out->n_fit, sizeof(*y));
    if (!a || !y) {
        free(a);
        free(y);
        return DLB_ERR_NOMEM;
    }
    /* Residuals relative to the measured step, so that each point weighs
     * the same whatever its size: with T0 measured, (T0 (beta w/p + gamma
     * (w - 1)) - (T - T0)) / T; without, (x0 + x1 w/p + x2 (w - 1)) / T - 1,
     * beta = x1 / x0, gamma = x2 / x0. */
    for (size_t i = 0; i < n; i++) {
        const dlb_sim_ps_point_t *p = &pts[i];
        double ws = (double)p->workers / p->ps, w1 = p->workers - 1;

        if (!strcmp(p->set, HELD))
            continue;
        if (with_base) {
            a[rows][0] = p->base * ws / p->step;
            a[rows][1] = p->base * w1 / p->step;
            y[rows] = (p->step - p->base) / p->step;
        } else {
            a[rows][0] = 1.0 / p->step;
            a[rows][1] = ws / p->step;
            a[rows][2] = w1 / p->step;
            y[rows] = 1.0;
        }
        rows++;
    }
    if (with_base) {
        nnls((const double(*)[3])a, y, rows, 2, 0, x);
        out->beta = x[0];
        out->gamma = x[1];
    } else {
        nnls((const double(*)[3])a, y, rows, 3, 1, x);
        out->base = x[0];
        out->beta = x[0] > 0 ? x[1] / x[0] : 0;
        out->gamma = x[0] > 0 ? x[2] / x[0] : 0;
    }
    free(a);
    free(y);
    out->mape = mape(out, pts, n, 0);
    out->mape_held = mape(out, pts, n, 1);
    return 0;
}
