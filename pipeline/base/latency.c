#include "latency.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "vec.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

int dlb_lat_add(dlb_lat_t *l, int64_t ns)
{
    l->count++;
    l->sum += ns;
    if (ns > l->max)
        l->max = ns;
    if (l->n >= DLB_LAT_CAP)
        return 0;
    if (dlb_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
        return DLB_ERR_NOMEM;
    l->v[l->n++] = ns;
    l->sorted = 0;
    return 0;
}

double dlb_lat_pct(dlb_lat_t *l, double p)
{
    size_t i;

    if (!l->n)
        return 0;
    if (!l->sorted) {
        qsort(l->v, l->n, sizeof(*l->v), cmp_i64);
        l->sorted = 1;
    }
    /* Nearest rank: the smallest value with at least p% of the values at or
     * below it, index ceil(p/100 * n) - 1 (adding just under 1 rounds up; an
     * exact product keeps its rank). */
    i = (size_t)(p / 100.0 * (double)l->n + 0.999999);
    i = i < 1 ? 0 : i - 1;
    return (double)l->v[i < l->n ? i : l->n - 1];
}

double dlb_lat_mean(const dlb_lat_t *l)
{
    return l->count ? (double)l->sum / (double)l->count : 0;
}

void dlb_lat_free(dlb_lat_t *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int64_t dlb_lat_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
