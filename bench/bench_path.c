#include "bench_path.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

/* How long one wait for answers lasts at most: the stop flag and the drain
 * are looked at this often. */
#define POLL_MAX_NS ((int64_t)100 * 1000000)

int dlb_bench_path_init(dlb_bench_path_t *p, const char *name, long n)
{
    memset(p, 0, sizeof(*p));
    p->name = name;
    p->n = n;
    if (!(p->sent_ns = calloc(n > 0 ? (size_t)n : 1, sizeof(*p->sent_ns))) ||
        !(p->got = calloc(n > 0 ? (size_t)n : 1, 1))) {
        dlb_bench_path_free(p);
        return DLB_ERR_NOMEM;
    }
    return 0;
}

void dlb_bench_path_free(dlb_bench_path_t *p)
{
    free(p->sent_ns);
    free(p->got);
    p->sent_ns = NULL;
    p->got = NULL;
    dlb_lat_free(&p->lat);
}

int dlb_bench_path_answer(dlb_bench_path_t *p, long i, int64_t at_ns, int good)
{
    if (i < 0 || i >= p->n || !p->sent_ns[i])
        return 0;
    if (p->got[i]) {
        p->repeats++;
        return 0;
    }
    p->got[i] = 1;
    if (!p->received && !p->failed)
        p->first_answer_ns = at_ns;
    p->last_answer_ns = at_ns;
    if (!good) {
        p->failed++;
        return 0;
    }
    p->received++;
    return dlb_lat_add(&p->lat, at_ns - p->sent_ns[i]);
}

long dlb_bench_path_inflight(const dlb_bench_path_t *p)
{
    return p->sent - p->received - p->failed;
}

static int64_t due_ns(int64_t start, long i, double rate)
{
    return start + (int64_t)((double)i * 1e9 / rate);
}

int dlb_bench_path_run(dlb_bench_path_t *p, const dlb_bench_path_ops_t *ops, double rate,
                       long drain_ms, long max_inflight, volatile sig_atomic_t *stop, char *errstr,
                       size_t errstr_size)
{
    const int64_t start = dlb_lat_clock_ns(), drain_ns = (int64_t)drain_ms * 1000000;
    long next = 0;
    int err;

    while (!(stop && *stop)) {
        int64_t now = dlb_lat_clock_ns(), until;
        int full = max_inflight > 0 && dlb_bench_path_inflight(p) >= max_inflight;

        while (next < p->n && !full && due_ns(start, next, rate) <= now) {
            int64_t t;
            if ((err = ops->send(ops->ctx, p, next, errstr, errstr_size)))
                return err;
            t = p->sent_ns[next];
            if (!p->sent++)
                p->first_ns = t;
            p->last_ns = t;
            if (t - due_ns(start, next, rate) > p->max_lag_ns)
                p->max_lag_ns = t - due_ns(start, next, rate);
            next++;
            now = dlb_lat_clock_ns();
            full = max_inflight > 0 && dlb_bench_path_inflight(p) >= max_inflight;
        }
        if (next >= p->n && (dlb_bench_path_inflight(p) <= 0 || now - p->last_ns > drain_ns))
            break;
        /* Until the next request is due, or (all sent, or as many in flight
         * as allowed) until an answer comes or the drain ends. */
        until = now + POLL_MAX_NS;
        if (next < p->n && !full && due_ns(start, next, rate) < until)
            until = due_ns(start, next, rate);
        if (next >= p->n && p->last_ns + drain_ns < until)
            until = p->last_ns + drain_ns;
        if ((err = ops->poll(ops->ctx, p, until, errstr, errstr_size)))
            return err;
    }
    return 0;
}

static double per_s(long n, int64_t first_ns, int64_t last_ns)
{
    return n < 2 || last_ns <= first_ns ? 0 : (double)(n - 1) * 1e9 / (double)(last_ns - first_ns);
}

double dlb_bench_path_rate(const dlb_bench_path_t *p)
{
    return per_s(p->sent, p->first_ns, p->last_ns);
}

double dlb_bench_path_answer_rate(const dlb_bench_path_t *p)
{
    return per_s(p->received + p->failed, p->first_answer_ns, p->last_answer_ns);
}

static double ms(double ns)
{
    return ns / 1e6;
}

void dlb_bench_path_print_header(FILE *out)
{
    fprintf(out, "%-36s %6s %8s %6s %5s %8s %8s %8s %8s %7s %7s\n", "PATH", "SENT", "RECEIVED",
            "FAILED", "LOST", "P50_MS", "P99_MS", "MAX_MS", "MEAN_MS", "SENT/S", "ANS/S");
}

void dlb_bench_path_print(FILE *out, dlb_bench_path_t *p)
{
    fprintf(out, "%-36s %6ld %8ld %6ld %5ld %8.2f %8.2f %8.2f %8.2f %7.1f %7.1f\n", p->name,
            p->sent, p->received, p->failed, dlb_bench_path_inflight(p),
            ms(dlb_lat_pct(&p->lat, 50)), ms(dlb_lat_pct(&p->lat, 99)), ms((double)p->lat.max),
            ms(dlb_lat_mean(&p->lat)), dlb_bench_path_rate(p), dlb_bench_path_answer_rate(p));
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

/* p over base: p50, p99, max, mean. */
static void ratios(dlb_bench_path_t *p, dlb_bench_path_t *base, double out[4])
{
    out[0] = ratio(dlb_lat_pct(&p->lat, 50), dlb_lat_pct(&base->lat, 50));
    out[1] = ratio(dlb_lat_pct(&p->lat, 99), dlb_lat_pct(&base->lat, 99));
    out[2] = ratio((double)p->lat.max, (double)base->lat.max);
    out[3] = ratio(dlb_lat_mean(&p->lat), dlb_lat_mean(&base->lat));
}

void dlb_bench_path_print_ratio(FILE *out, const char *name, dlb_bench_path_t *p,
                                dlb_bench_path_t *base)
{
    double x[4];

    ratios(p, base, x);
    fprintf(out, "%-36s %6s %8s %6s %5s %7.1fx %7.1fx %7.1fx %7.1fx\n", name, "", "", "", "", x[0],
            x[1], x[2], x[3]);
}

cJSON *dlb_bench_path_json(dlb_bench_path_t *p)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "path", p->name) ||
        !cJSON_AddStringToObject(o, "to", p->where) ||
        !cJSON_AddNumberToObject(o, "sent", (double)p->sent) ||
        !cJSON_AddNumberToObject(o, "received", (double)p->received) ||
        !cJSON_AddNumberToObject(o, "failed", (double)p->failed) ||
        !cJSON_AddNumberToObject(o, "lost", (double)dlb_bench_path_inflight(p)) ||
        !cJSON_AddNumberToObject(o, "repeats", (double)p->repeats) ||
        !cJSON_AddNumberToObject(o, "p50_ms", ms(dlb_lat_pct(&p->lat, 50))) ||
        !cJSON_AddNumberToObject(o, "p99_ms", ms(dlb_lat_pct(&p->lat, 99))) ||
        !cJSON_AddNumberToObject(o, "max_ms", ms((double)p->lat.max)) ||
        !cJSON_AddNumberToObject(o, "mean_ms", ms(dlb_lat_mean(&p->lat))) ||
        !cJSON_AddNumberToObject(o, "rate_reached", dlb_bench_path_rate(p)) ||
        !cJSON_AddNumberToObject(o, "answers_per_s", dlb_bench_path_answer_rate(p)) ||
        !cJSON_AddNumberToObject(o, "max_start_lag_ms", ms((double)p->max_lag_ns))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *dlb_bench_path_ratio_json(dlb_bench_path_t *p, dlb_bench_path_t *base)
{
    cJSON *o = cJSON_CreateObject();
    double x[4];

    if (!o)
        return NULL;
    ratios(p, base, x);
    if (!cJSON_AddNumberToObject(o, "p50", x[0]) || !cJSON_AddNumberToObject(o, "p99", x[1]) ||
        !cJSON_AddNumberToObject(o, "max", x[2]) || !cJSON_AddNumberToObject(o, "mean", x[3])) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
