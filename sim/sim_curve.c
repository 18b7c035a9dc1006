/* Observed speed against worker count (sim_curve.h). */
#include "sim_curve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct obs {
    int w;
    double r;
} obs_t;

static int obs_cmp(const void *a, const void *b)
{
    const obs_t *x = a, *y = b;

    if (x->w != y->w)
        return x->w < y->w ? -1 : 1;
    return x->r < y->r ? -1 : x->r > y->r;
}

/* Sum of squared log errors of the Amdahl curve with this sigma, r1 at its
 * least-squares value (the mean log residual, closed form). */
static double amdahl_loss(const dlb_sim_curve_t *c, double sigma, double *r1)
{
    double mean = 0, loss = 0;

    for (int i = 0; i < c->n; i++)
        mean += log(c->rate[i]) - log(c->workers[i] / (1.0 + sigma * (c->workers[i] - 1)));
    mean /= c->n;
    for (int i = 0; i < c->n; i++) {
        double e =
            log(c->rate[i]) - log(c->workers[i] / (1.0 + sigma * (c->workers[i] - 1))) - mean;
        loss += e * e;
    }
    *r1 = exp(mean);
    return loss;
}

void dlb_sim_curve_fit(dlb_sim_curve_t *c)
{
    double best = INFINITY, best_s = 0, r1, step = 1.0 / 200;

    c->sigma = 0;
    c->r1 = c->n ? c->rate[0] / c->workers[0] : 0;
    if (c->n < 2)
        return;
    for (int i = 0; i <= 200; i++) {
        double l = amdahl_loss(c, i * step, &r1);
        if (l < best - 1e-15) {
            best = l;
            best_s = i * step;
        }
    }
    {
        /* Golden-section search around the best of the grid (the loss is
         * smooth in sigma there). */
        const double k = 0.6180339887498949;
        double lo = best_s - step > 0 ? best_s - step : 0,
               hi = best_s + step < 1 ? best_s + step : 1;
        double x1 = hi - k * (hi - lo), x2 = lo + k * (hi - lo);
        double f1 = amdahl_loss(c, x1, &r1), f2 = amdahl_loss(c, x2, &r1);

        for (int i = 0; i < 60; i++) {
            if (f1 <= f2) {
                hi = x2;
                x2 = x1;
                f2 = f1;
                x1 = hi - k * (hi - lo);
                f1 = amdahl_loss(c, x1, &r1);
            } else {
                lo = x1;
                x1 = x2;
                f1 = f2;
                x2 = lo + k * (hi - lo);
                f2 = amdahl_loss(c, x2, &r1);
            }
        }
        if (amdahl_loss(c, (lo + hi) / 2, &r1) < best)
            best_s = (lo + hi) / 2;
    }
    c->sigma = best_s;
    amdahl_loss(c, best_s, &c->r1);
}

int dlb_sim_curve_build(const int *workers, const double *rate, size_t n, dlb_sim_curve_t *c)
{
    obs_t *o = malloc((n ? n : 1) * sizeof(*o));
    size_t m = 0;

    memset(c, 0, sizeof(*c));
    if (!o)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (workers[i] >= 1 && rate[i] > 0 && isfinite(rate[i]))
            o[m++] = (obs_t){workers[i], rate[i]};
    qsort(o, m, sizeof(*o), obs_cmp);
    for (size_t i = 0; i < m;) {
        size_t j = i;
        int k, cnt;

        while (j < m && o[j].w == o[i].w)
            j++;
        cnt = (int)(j - i);
        if (c->n < DLB_SIM_CURVE_MAX) {
            k = c->n++;
        } else {
            /* Full: replace the point with the fewest observations, the
             * largest count among equals, if this one has more. */
            k = 0;
            for (int q = 1; q < c->n; q++)
                if (c->samples[q] <= c->samples[k])
                    k = q;
            if (c->samples[k] >= cnt) {
                i = j;
                continue;
            }
            memmove(&c->workers[k], &c->workers[k + 1], (size_t)(c->n - 1 - k) * sizeof(int));
            memmove(&c->rate[k], &c->rate[k + 1], (size_t)(c->n - 1 - k) * sizeof(double));
            memmove(&c->samples[k], &c->samples[k + 1], (size_t)(c->n - 1 - k) * sizeof(int));
            k = c->n - 1;
        }
        c->workers[k] = o[i].w;
        c->rate[k] = o[i + (size_t)(cnt - 1) / 2].r;
        c->samples[k] = cnt;
        i = j;
    }
    free(o);
    dlb_sim_curve_fit(c);
    return c->n;
}

static double amdahl(const dlb_sim_curve_t *c, double w)
{
    return c->r1 * w / (1.0 + c->sigma * (w - 1));
}

double dlb_sim_curve_rate(const dlb_sim_curve_t *c, int workers)
{
    int w = workers < 1 ? 1 : workers, last;

    if (c->n < 1)
        return 0;
    last = c->n - 1;
    if (w <= c->workers[0])
        return c->rate[0] * amdahl(c, w) / amdahl(c, c->workers[0]);
    if (w >= c->workers[last])
        return c->rate[last] * amdahl(c, w) / amdahl(c, c->workers[last]);
    for (int i = 1; i <= last; i++) {
        if (w <= c->workers[i]) {
            double f = (double)(w - c->workers[i - 1]) / (c->workers[i] - c->workers[i - 1]);
            return c->rate[i - 1] + f * (c->rate[i] - c->rate[i - 1]);
        }
    }
    return c->rate[last];
}
