/* The evaluator's outputs (eval_report.h): one list of rows feeds the text
 * table and the HTML table; JSON and the plots read the figures directly. */
#include "eval_report.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "err.h"
#include "svg.h"

enum { K_COUNT, K_DUR, K_PCT, K_NUM };

/* The fixed rows: label, kind, which way is better (-1 lower, 1 higher, 0
 * neither: a count that only describes the run), and the value of figures x. */
#define EVAL_ROWS(X)                                                                               \
    X("jobs", K_COUNT, 0, x->jobs)                                                                 \
    X("finished", K_COUNT, 1, x->finished)                                                         \
    X("  succeeded", K_COUNT, 1, x->succeeded)                                                     \
    X("  failed", K_COUNT, -1, x->failed)                                                          \
    X("  stopped", K_COUNT, 0, x->stopped)                                                         \
    X("unfinished", K_COUNT, -1, x->unfinished)                                                    \
    X("completion rate", K_PCT, 1, x->completion_rate)                                             \
    X("JCT mean", K_DUR, -1, x->jct.mean)                                                          \
    X("JCT p50", K_DUR, -1, x->jct.p50)                                                            \
    X("JCT p95", K_DUR, -1, x->jct.p95)                                                            \
    X("JCT max", K_DUR, -1, x->jct.max)                                                            \
    X("makespan", K_DUR, -1, x->makespan_s)                                                        \
    X("pending mean", K_DUR, -1, x->pending.mean)                                                  \
    X("pending p95", K_DUR, -1, x->pending.p95)                                                    \
    X("pending total", K_DUR, -1, x->pending.sum)                                                  \
    X("never ran", K_COUNT, -1, x->never_ran)                                                      \
    X("runtime samples", K_COUNT, 0, x->samples)                                                   \
    X("CPU utilisation", K_PCT, 1, x->cpu_util)                                                    \
    X("memory utilisation", K_PCT, 1, x->mem_util)                                                 \
    X("worker CPU utilisation", K_PCT, 1, x->worker_cpu_util)                                      \
    X("worker memory utilisation", K_PCT, 1, x->worker_mem_util)                                   \
    X("PS CPU utilisation", K_PCT, 1, x->ps_cpu_util)                                              \
    X("PS memory utilisation", K_PCT, 1, x->ps_mem_util)                                           \
    X("CPU core-hours requested", K_NUM, -1, x->cpu_req_core_h)                                    \
    X("CPU core-hours used", K_NUM, 0, x->cpu_used_core_h)                                         \
    X("memory GiB-hours requested", K_NUM, -1, x->mem_req_gib_h)                                   \
    X("memory GiB-hours used", K_NUM, 0, x->mem_used_gib_h)                                        \
    X("pods", K_COUNT, 0, x->pods)                                                                 \
    X("OOMs", K_COUNT, -1, x->ooms)                                                                \
    X("pods OOM-killed", K_COUNT, -1, x->oom_pods)                                                 \
    X("pods OOM-killed share", K_PCT, -1, x->oom_pods_share)                                       \
    X("repeated OOMs", K_COUNT, -1, x->repeated_ooms)                                              \
    X("plan requests", K_COUNT, 0, x->plan_requests)                                               \
    X("plans", K_COUNT, 0, x->plans)

#define ROW_ONE(label, kind, better, expr) +1
#define ROWS_FIXED                         (0 EVAL_ROWS(ROW_ONE))

typedef struct row {
    char label[96];
    int kind, better;
} row_t;

/* rows x cnt values, row-major. */
typedef struct table {
    row_t *rows;
    size_t n, cnt;
    double *v;
} table_t;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct stage (by_stage) or optimizer names over every environment,
 * sorted; *names malloc'ed, pointing into f. */
static int plan_names(const dlb_eval_figures_t *f, size_t cnt, int by_stage, const char ***names,
                      size_t *n)
{
    size_t total = 0, k = 0;
    const char **p;

    for (size_t e = 0; e < cnt; e++)
        total += by_stage ? f[e].by_stage_cnt : f[e].by_optimizer_cnt;
    if (!(p = malloc((total ? total : 1) * sizeof(*p))))
        return DLB_ERR_NOMEM;
    for (size_t e = 0; e < cnt; e++) {
        size_t m = by_stage ? f[e].by_stage_cnt : f[e].by_optimizer_cnt;

        for (size_t i = 0; i < m; i++)
            p[k++] = by_stage ? f[e].by_stage[i].stage : f[e].by_optimizer[i].optimizer;
    }
    qsort(p, total, sizeof(*p), cmp_str);
    *n = 0;
    for (size_t i = 0; i < total; i++)
        if (!*n || strcmp(p[*n - 1], p[i]))
            p[(*n)++] = p[i];
    *names = p;
    return 0;
}

static double count_of(const dlb_eval_figures_t *x, int by_stage, const char *name)
{
    const dlb_eval_count_t *l = by_stage ? x->by_stage : x->by_optimizer;
    size_t n = by_stage ? x->by_stage_cnt : x->by_optimizer_cnt;

    for (size_t i = 0; i < n; i++)
        if (!strcmp(by_stage ? l[i].stage : l[i].optimizer, name))
            return (double)l[i].count;
    return 0;
}

static void table_free(table_t *t)
{
    free(t->rows);
    free(t->v);
    memset(t, 0, sizeof(*t));
}

static int table_build(const dlb_eval_figures_t *f, size_t cnt, table_t *t)
{
    static const row_t fixed[] = {
#define ROW_SPEC(label, kind, better, expr) {label, kind, better},
        EVAL_ROWS(ROW_SPEC)
#undef ROW_SPEC
    };
    const char **stages = NULL, **opts = NULL;
    size_t nst = 0, nopt = 0, r;
    int err = DLB_ERR_NOMEM;

    memset(t, 0, sizeof(*t));
    if (plan_names(f, cnt, 1, &stages, &nst) || plan_names(f, cnt, 0, &opts, &nopt))
        goto out;
    t->n = ROWS_FIXED + nst + nopt;
    t->cnt = cnt;
    if (!(t->rows = calloc(t->n, sizeof(*t->rows))) ||
        !(t->v = calloc(t->n * (cnt ? cnt : 1), sizeof(*t->v))))
        goto out;
    memcpy(t->rows, fixed, sizeof(fixed));
    for (size_t e = 0; e < cnt; e++) {
        const dlb_eval_figures_t *x = &f[e];
        double *v = t->v + e;

        r = 0;
#define ROW_VALUE(label, kind, better, expr) v[cnt * r++] = (double)(expr);
        EVAL_ROWS(ROW_VALUE)
#undef ROW_VALUE
        for (size_t i = 0; i < nst; i++)
            v[cnt * (ROWS_FIXED + i)] = count_of(x, 1, stages[i]);
        for (size_t i = 0; i < nopt; i++)
            v[cnt * (ROWS_FIXED + nst + i)] = count_of(x, 0, opts[i]);
    }
    for (size_t i = 0; i < nst; i++) {
        row_t *rw = &t->rows[ROWS_FIXED + i];
        snprintf(rw->label, sizeof(rw->label), "  plans %s", stages[i]);
        rw->kind = K_COUNT;
    }
    for (size_t i = 0; i < nopt; i++) {
        row_t *rw = &t->rows[ROWS_FIXED + nst + i];
        snprintf(rw->label, sizeof(rw->label), "  plans by %s", opts[i]);
        rw->kind = K_COUNT;
    }
    err = 0;
out:
    free(stages);
    free(opts);
    if (err)
        table_free(t);
    return err;
}

/* "12.5s", "20m05s", "3h02m", "2d04h": exact enough to compare at a glance. */
static void fmt_duration(char *buf, size_t size, double s)
{
    long long r = llround(s);

    if (s < 60)
        snprintf(buf, size, "%.1fs", s);
    else if (r < 3600)
        snprintf(buf, size, "%lldm%02llds", r / 60, r % 60);
    else if (r < 86400)
        snprintf(buf, size, "%lldh%02lldm", r / 3600, r % 3600 / 60);
    else
        snprintf(buf, size, "%lldd%02lldh", r / 86400, r % 86400 / 3600);
}

static void fmt_value(char *buf, size_t size, int kind, double v)
{
    if (!isfinite(v))
        snprintf(buf, size, "-");
    else if (kind == K_COUNT)
        snprintf(buf, size, "%.0f", v);
    else if (kind == K_DUR)
        fmt_duration(buf, size, v);
    else if (kind == K_PCT)
        snprintf(buf, size, "%.1f%%", v * 100);
    else
        snprintf(buf, size, "%.2f", v);
}

/* v / base, or "-" when there is nothing to divide by. */
static double ratio(double v, double base)
{
    return isfinite(v) && isfinite(base) && base != 0 ? v / base : NAN;
}

static void fmt_ratio(char *buf, size_t size, double q)
{
    if (isfinite(q))
        snprintf(buf, size, "%.2fx", q);
    else
        snprintf(buf, size, "-");
}

int dlb_eval_table(FILE *fp, const dlb_eval_figures_t *f, size_t cnt)
{
    table_t t;
    int lw = 6, vw = 8, rw = 6;
    char buf[2 * sizeof(f->env)]; /* also holds the "env/env" ratio headers */

    if (table_build(f, cnt, &t))
        return DLB_ERR_NOMEM;
    for (size_t r = 0; r < t.n; r++) {
        if ((int)strlen(t.rows[r].label) > lw)
            lw = (int)strlen(t.rows[r].label);
        for (size_t e = 0; e < cnt; e++) {
            fmt_value(buf, sizeof(buf), t.rows[r].kind, t.v[r * cnt + e]);
            if ((int)strlen(buf) > vw)
                vw = (int)strlen(buf);
        }
    }
    for (size_t e = 0; e < cnt; e++) {
        if ((int)strlen(f[e].env) > vw)
            vw = (int)strlen(f[e].env);
        if (e && (int)(strlen(f[e].env) + strlen(f[0].env) + 1) > rw)
            rw = (int)(strlen(f[e].env) + strlen(f[0].env) + 1);
    }
    fprintf(fp, "%-*s", lw, "figure");
    for (size_t e = 0; e < cnt; e++)
        fprintf(fp, "  %*s", vw, f[e].env);
    for (size_t e = 1; e < cnt; e++) {
        snprintf(buf, sizeof(buf), "%s/%s", f[e].env, f[0].env);
        fprintf(fp, "  %*s", rw, buf);
    }
    fprintf(fp, "\n");
    for (size_t r = 0; r < t.n; r++) {
        const double *v = t.v + r * cnt;

        fprintf(fp, "%-*s", lw, t.rows[r].label);
        for (size_t e = 0; e < cnt; e++) {
            fmt_value(buf, sizeof(buf), t.rows[r].kind, v[e]);
            fprintf(fp, "  %*s", vw, buf);
        }
        for (size_t e = 1; e < cnt; e++) {
            fmt_ratio(buf, sizeof(buf), ratio(v[e], v[0]));
            fprintf(fp, "  %*s", rw, buf);
        }
        fprintf(fp, "\n");
    }
    table_free(&t);
    return 0;
}

/* ---- JSON ------------------------------------------------------------------------ */

/* Adders that remember a failed allocation in *bad (cJSON returns NULL). */
static cJSON *jobj(cJSON *parent, const char *name, int *bad)
{
    cJSON *o = cJSON_AddObjectToObject(parent, name);

    *bad |= !o;
    return o;
}

static void jnum(cJSON *o, const char *name, double v, int *bad)
{
    if (!o)
        return;
    *bad |= !(isfinite(v) ? cJSON_AddNumberToObject(o, name, v) : cJSON_AddNullToObject(o, name));
}

/* The quantiles the distributions table shows, besides the mean. */
static const struct {
    const char *name;
    double q;
} quants[] = {{"p10", 0.10}, {"p25", 0.25}, {"p50", 0.50}, {"p75", 0.75}, {"p90", 0.90}};
#define QUANTS (sizeof(quants) / sizeof(quants[0]))

/* A distribution's summary; sorted (d->n values) adds the quantiles. */
static void jdist(cJSON *parent, const char *name, const dlb_eval_dist_t *d, const double *sorted,
                  int *bad)
{
    cJSON *o = jobj(parent, name, bad);

    jnum(o, "n", (double)d->n, bad);
    jnum(o, "mean", d->mean, bad);
    for (size_t i = 0; i < QUANTS; i++)
        jnum(o, quants[i].name, dlb_eval_quantile(sorted, d->n, quants[i].q), bad);
    jnum(o, "p95", d->p95, bad);
    jnum(o, "max", d->max, bad);
    jnum(o, "total", d->sum, bad);
}

static void jarray(cJSON *parent, const char *name, const double *v, size_t n, double scale,
                   int *bad)
{
    cJSON *a = cJSON_AddArrayToObject(parent, name);

    if (!a) {
        *bad = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *x = isfinite(v[i]) ? cJSON_CreateNumber(v[i] * scale) : cJSON_CreateNull();

        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            *bad = 1;
            return;
        }
    }
}

static void jcounts(cJSON *parent, const char *name, const dlb_eval_count_t *l, size_t n,
                    int by_stage, int *bad)
{
    cJSON *o = jobj(parent, name, bad);

    for (size_t i = 0; o && i < n; i++)
        jnum(o, by_stage ? l[i].stage : l[i].optimizer, (double)l[i].count, bad);
}

static void json_env(cJSON *o, const dlb_eval_figures_t *x, int *bad)
{
    const dlb_eval_series_t *s = &x->series;
    cJSON *jobs, *sub;

    *bad |= !cJSON_AddStringToObject(o, "env", x->env);
    jnum(o, "start_ms", (double)x->start_ms, bad);
    jnum(o, "end_ms", (double)x->end_ms, bad);
    jobs = jobj(o, "jobs", bad);
    jnum(jobs, "total", (double)x->jobs, bad);
    jnum(jobs, "finished", (double)x->finished, bad);
    jnum(jobs, "succeeded", (double)x->succeeded, bad);
    jnum(jobs, "failed", (double)x->failed, bad);
    jnum(jobs, "stopped", (double)x->stopped, bad);
    jnum(jobs, "unfinished", (double)x->unfinished, bad);
    jnum(jobs, "never_ran", (double)x->never_ran, bad);
    jnum(o, "completion_rate", x->completion_rate, bad);
    jdist(o, "jct_s", &x->jct, x->jct_s, bad);
    jnum(o, "makespan_s", x->makespan_s, bad);
    jdist(o, "pending_s", &x->pending, x->pending_s, bad);
    jnum(o, "samples", (double)x->samples, bad);
    jnum(o, "cpu_util", x->cpu_util, bad);
    jnum(o, "mem_util", x->mem_util, bad);
    jnum(o, "worker_cpu_util", x->worker_cpu_util, bad);
    jnum(o, "worker_mem_util", x->worker_mem_util, bad);
    jnum(o, "ps_cpu_util", x->ps_cpu_util, bad);
    jnum(o, "ps_mem_util", x->ps_mem_util, bad);
    jdist(o, "job_cpu_util", &x->job_cpu, x->job_cpu_util, bad);
    jdist(o, "job_mem_util", &x->job_mem, x->job_mem_util, bad);
    sub = jobj(o, "cpu_core_hours", bad);
    jnum(sub, "requested", x->cpu_req_core_h, bad);
    jnum(sub, "used", x->cpu_used_core_h, bad);
    sub = jobj(o, "mem_gib_hours", bad);
    jnum(sub, "requested", x->mem_req_gib_h, bad);
    jnum(sub, "used", x->mem_used_gib_h, bad);
    sub = jobj(o, "ooms", bad);
    jnum(sub, "total", (double)x->ooms, bad);
    jnum(sub, "pods", (double)x->oom_pods, bad);
    jnum(sub, "repeated", (double)x->repeated_ooms, bad);
    /* Flat as well, by the names of the simulator's summary. */
    jnum(o, "pods", (double)x->pods, bad);
    jnum(o, "pods_oom_killed", (double)x->oom_pods, bad);
    jnum(o, "pods_oom_killed_share", x->oom_pods_share, bad);
    jnum(o, "plan_requests", (double)x->plan_requests, bad);
    sub = jobj(o, "plans", bad);
    jnum(sub, "total", (double)x->plans, bad);
    if (sub) {
        jcounts(sub, "by_stage", x->by_stage, x->by_stage_cnt, 1, bad);
        jcounts(sub, "by_optimizer", x->by_optimizer, x->by_optimizer_cnt, 0, bad);
    }
    if (!(sub = jobj(o, "series", bad)))
        return;
    jarray(sub, "cpu_util", s->cpu_util, s->buckets, 1, bad);
    jarray(sub, "mem_util", s->mem_util, s->buckets, 1, bad);
    jarray(sub, "cpu_requested", s->cpu_req, s->buckets, 1, bad);
    jarray(sub, "cpu_used", s->cpu_used, s->buckets, 1, bad);
    jarray(sub, "mem_requested_gib", s->mem_req, s->buckets, 1.0 / (double)(1 << 30), bad);
    jarray(sub, "mem_used_gib", s->mem_used, s->buckets, 1.0 / (double)(1 << 30), bad);
}

int dlb_eval_json(const dlb_eval_figures_t *f, size_t cnt, char **out, char *errstr,
                  size_t errstr_size)
{
    cJSON *root = cJSON_CreateObject(), *envs;
    int bad = !root;

    *out = NULL;
    if (root) {
        jnum(root, "buckets", cnt ? (double)f[0].series.buckets : 0, &bad);
        jnum(root, "bucket_s", cnt ? (double)f[0].series.bucket_ms / 1000.0 : 0, &bad);
        envs = cJSON_AddArrayToObject(root, "envs");
        bad |= !envs;
        for (size_t e = 0; envs && e < cnt && !bad; e++) {
            cJSON *o = cJSON_CreateObject();

            if (!o || !cJSON_AddItemToArray(envs, o)) {
                cJSON_Delete(o);
                bad = 1;
                break;
            }
            json_env(o, &f[e], &bad);
        }
    }
    if (!bad) {
        /* cJSON's allocator may be hooked: hand out a malloc'ed copy. */
        char *p = cJSON_Print(root);

        if (!p || !(*out = strdup(p)))
            bad = 1;
        cJSON_free(p);
    }
    cJSON_Delete(root);
    return bad ? dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory") : 0;
}

/* ---- HTML ------------------------------------------------------------------------ */

static const char html_css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;max-width:1180px;"
    "margin:24px auto;padding:0 16px;line-height:1.4}"
    "h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.2em;margin:28px 0 10px;"
    "border-bottom:1px solid #ddd;padding-bottom:4px}.sub{color:#666;margin:0 0 16px}"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(250px,1fr));gap:12px}"
    ".card{border:1px solid #ddd;border-top:5px solid var(--c);border-radius:6px;padding:10px 14px}"
    ".card h3{margin:0 0 6px;color:var(--c)}.card dl{display:grid;grid-template-columns:auto auto;"
    "margin:0;gap:2px 12px}.card dt{color:#666}.card dd{margin:0;text-align:right;"
    "font-variant-numeric:tabular-nums;font-weight:600}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
    "th,td{padding:3px 12px;border-bottom:1px solid #eee;text-align:right}"
    "th:first-child,td:first-child{text-align:left;white-space:pre}"
    "thead th{border-bottom:2px solid #999}td.better{background:#e3f4e8;color:#14632d}"
    "td.worse{background:#fbe4e4;color:#8a1c1c}"
    ".plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:18px}"
    "figure{margin:0;border:1px solid #eee;border-radius:6px;padding:8px}"
    "figure svg{width:100%;height:auto;display:block}figcaption{color:#555;font-size:.9em;"
    "margin-top:4px}dl.defs dt{font-weight:600;margin-top:8px}dl.defs dd{margin-left:16px}"
    "footer{color:#888;font-size:.85em;margin:28px 0}";

/* Units for axes: the largest value decides seconds, minutes or hours. */
typedef struct unit {
    const char *name;
    double s; /* seconds per unit */
} unit_t;

static unit_t time_unit(double max_s)
{
    if (max_s < 120)
        return (unit_t){"s", 1};
    if (max_s < 7200)
        return (unit_t){"min", 60};
    return (unit_t){"h", 3600};
}

static void html_cards(dlb_svg_out_t *o, const dlb_eval_figures_t *f, size_t cnt)
{
    char a[64], b[64];

    dlb_svg_printf(o, "<div class=\"cards\">");
    for (size_t e = 0; e < cnt; e++) {
        const dlb_eval_figures_t *x = &f[e];

        dlb_svg_printf(o, "<div class=\"card\" style=\"--c:%s\"><h3>", dlb_svg_color(e));
        dlb_svg_text(o, x->env);
        dlb_svg_printf(o, "</h3><dl><dt>jobs finished</dt><dd>%zu / %zu</dd>", x->finished,
                       x->jobs);
        fmt_value(a, sizeof(a), K_DUR, x->jct.p50);
        fmt_value(b, sizeof(b), K_DUR, x->jct.p95);
        dlb_svg_printf(o, "<dt>JCT p50 / p95</dt><dd>%s / %s</dd>", a, b);
        fmt_value(a, sizeof(a), K_DUR, x->pending.mean);
        dlb_svg_printf(o, "<dt>pending mean</dt><dd>%s</dd>", a);
        fmt_value(a, sizeof(a), K_PCT, x->cpu_util);
        fmt_value(b, sizeof(b), K_PCT, x->mem_util);
        dlb_svg_printf(o, "<dt>CPU / memory used</dt><dd>%s / %s</dd>", a, b);
        dlb_svg_printf(o, "<dt>core-hours / GiB-hours</dt><dd>%.1f / %.1f</dd>", x->cpu_req_core_h,
                       x->mem_req_gib_h);
        dlb_svg_printf(o,
                       "<dt>OOMs (repeated)</dt><dd>%lld (%lld)</dd><dt>plans</dt><dd>%lld</dd>"
                       "</dl></div>",
                       (long long)x->ooms, (long long)x->repeated_ooms, (long long)x->plans);
    }
    dlb_svg_printf(o, "</div>");
}

static void html_table(dlb_svg_out_t *o, const dlb_eval_figures_t *f, const table_t *t)
{
    size_t cnt = t->cnt;
    char buf[64];

    dlb_svg_printf(o, "<table><thead><tr><th>figure</th>");
    for (size_t e = 0; e < cnt; e++) {
        dlb_svg_printf(o, "<th style=\"color:%s\">", dlb_svg_color(e));
        dlb_svg_text(o, f[e].env);
        dlb_svg_printf(o, "</th>");
    }
    for (size_t e = 1; e < cnt; e++) {
        dlb_svg_printf(o, "<th>");
        dlb_svg_text(o, f[e].env);
        dlb_svg_printf(o, " / ");
        dlb_svg_text(o, f[0].env);
        dlb_svg_printf(o, "</th>");
    }
    dlb_svg_printf(o, "</tr></thead><tbody>");
    for (size_t r = 0; r < t->n; r++) {
        const double *v = t->v + r * cnt;

        dlb_svg_printf(o, "<tr><td>");
        dlb_svg_text(o, t->rows[r].label);
        dlb_svg_printf(o, "</td>");
        for (size_t e = 0; e < cnt; e++) {
            fmt_value(buf, sizeof(buf), t->rows[r].kind, v[e]);
            dlb_svg_printf(o, "<td>%s</td>", buf);
        }
        for (size_t e = 1; e < cnt; e++) {
            double q = ratio(v[e], v[0]);
            /* Differences under 0.5% are noise, not better or worse. */
            int dir = !isfinite(q) || fabs(q - 1) < 0.005 ? 0 : q > 1 ? 1 : -1;
            const char *cls = !t->rows[r].better || !dir ? ""
                              : dir == t->rows[r].better ? " class=\"better\""
                                                         : " class=\"worse\"";

            fmt_ratio(buf, sizeof(buf), q);
            dlb_svg_printf(o, "<td%s>%s</td>", cls, buf);
        }
        dlb_svg_printf(o, "</tr>");
    }
    dlb_svg_printf(o, "</tbody></table>");
}

/* The distributions the CDFs draw, in one place: each figure's values in an
 * environment, sorted, and how to show them. */
enum { D_JCT, D_PENDING, D_JOB_CPU, D_JOB_MEM, D_COUNT };

static const struct {
    const char *label;
    int kind; /* K_DUR or K_PCT */
} dists[D_COUNT] = {
    {"JCT", K_DUR},
    {"pending", K_DUR},
    {"job CPU utilisation", K_PCT},
    {"job memory utilisation", K_PCT},
};

/* Figure d of x: its summary (*dist) and its values, sorted, (*dist)->n of them. */
static const double *dist_values(const dlb_eval_figures_t *x, int d, const dlb_eval_dist_t **dist)
{
    switch (d) {
    case D_JCT:
        *dist = &x->jct;
        return x->jct_s;
    case D_PENDING:
        *dist = &x->pending;
        return x->pending_s;
    case D_JOB_CPU:
        *dist = &x->job_cpu;
        return x->job_cpu_util;
    default:
        *dist = &x->job_mem;
        return x->job_mem_util;
    }
}

/* Per environment and figure: the mean and the quantiles, so an arm that
 * helps the mean job at the cost of the median (or of the short jobs) shows
 * it without reading the plots. */
static void html_dists(dlb_svg_out_t *o, const dlb_eval_figures_t *f, size_t cnt)
{
    char buf[64];

    dlb_svg_printf(o, "<table><thead><tr><th>figure</th><th>environment</th><th>n</th>"
                      "<th>mean</th>");
    for (size_t i = 0; i < QUANTS; i++)
        dlb_svg_printf(o, "<th>%s</th>", quants[i].name);
    dlb_svg_printf(o, "</tr></thead><tbody>");
    for (int d = 0; d < D_COUNT; d++)
        for (size_t e = 0; e < cnt; e++) {
            const dlb_eval_dist_t *dist;
            const double *v = dist_values(&f[e], d, &dist);

            dlb_svg_printf(o, "<tr><td>%s</td><td style=\"color:%s\">", e ? "" : dists[d].label,
                           dlb_svg_color(e));
            dlb_svg_text(o, f[e].env);
            fmt_value(buf, sizeof(buf), dists[d].kind, dist->mean);
            dlb_svg_printf(o, "</td><td>%zu</td><td>%s</td>", dist->n, buf);
            for (size_t i = 0; i < QUANTS; i++) {
                fmt_value(buf, sizeof(buf), dists[d].kind,
                          dlb_eval_quantile(v, dist->n, quants[i].q));
                dlb_svg_printf(o, "<td>%s</td>", buf);
            }
            dlb_svg_printf(o, "</tr>");
        }
    dlb_svg_printf(o, "</tbody></table>");
}

/* Per-plot scratch: x and y for every line. */
typedef struct plot_buf {
    dlb_svg_line_t *lines;
    double *xy; /* 2 x per_line values per line */
    size_t per_line;
} plot_buf_t;

static int plot_buf_init(plot_buf_t *p, size_t lines, size_t per_line)
{
    p->per_line = per_line ? per_line : 1;
    p->lines = calloc(lines ? lines : 1, sizeof(*p->lines));
    p->xy = calloc(2 * p->per_line * (lines ? lines : 1), sizeof(*p->xy));
    if (p->lines && p->xy)
        return 0;
    free(p->lines);
    free(p->xy);
    return DLB_ERR_NOMEM;
}

static void plot_buf_free(plot_buf_t *p)
{
    free(p->lines);
    free(p->xy);
}

/* A CDF of one distribution per environment. JCT and pending: the share of
 * all its jobs (so a run that leaves jobs unfinished tops out below 100%)
 * done within x; utilisation: the share of the jobs that have samples. */
static void html_cdf(dlb_svg_out_t *o, const dlb_eval_figures_t *f, size_t cnt, int d,
                     const char *title, const char *xname, const char *caption)
{
    int pct = dists[d].kind == K_PCT;
    double max_x = 0;
    size_t most = 0;
    char xlabel[64];
    plot_buf_t pb;
    unit_t u = {"%", 0.01};

    for (size_t e = 0; e < cnt; e++) {
        const dlb_eval_dist_t *dist;

        dist_values(&f[e], d, &dist);
        if (dist->n && dist->max > max_x)
            max_x = dist->max;
        if (dist->n > most)
            most = dist->n;
    }
    /* Points: the origin, one per job, and the last level carried on to the
     * axis end, so the final step is not lost on the plot's edge. */
    if (plot_buf_init(&pb, cnt, most + 2)) {
        o->err = DLB_ERR_NOMEM;
        return;
    }
    if (!pct)
        u = time_unit(max_x);
    for (size_t e = 0; e < cnt; e++) {
        const dlb_eval_dist_t *dist;
        const double *v = dist_values(&f[e], d, &dist);
        size_t n = dist->n;
        double *x = pb.xy + 2 * e * pb.per_line, *y = x + pb.per_line;
        double of = pct ? (double)n : (double)f[e].jobs;

        x[0] = y[0] = 0;
        for (size_t i = 0; i < n; i++) {
            x[i + 1] = v[i] / u.s;
            y[i + 1] = 100.0 * (double)(i + 1) / of;
        }
        x[n + 1] = max_x * 1.05 / u.s;
        y[n + 1] = y[n];
        pb.lines[e] = (dlb_svg_line_t){f[e].env, dlb_svg_color(e), x, y, n + 2, 1, 0};
    }
    snprintf(xlabel, sizeof(xlabel), "%s (%s)", xname, u.name);
    dlb_svg_printf(o, "<figure>");
    dlb_svg_plot(o, &(dlb_svg_plot_t){title, xlabel, "% of jobs", 0, 0, 0, 100}, pb.lines, cnt);
    dlb_svg_printf(o, "<figcaption>%s</figcaption></figure>", caption);
    plot_buf_free(&pb);
}

enum { S_CPU_UTIL, S_MEM_UTIL, S_CPU, S_MEM };

#define LABEL_MAX 128

/* A series plot over the environments' shared buckets (mid-bucket times);
 * S_CPU and S_MEM draw requested solid and used dashed. */
/* The switches as marks on a time axis in unit u since origin_ms. */
typedef struct switch_marks {
    const dlb_eval_switch_t *sw;
    size_t cnt;
} switch_marks_t;

static void html_series(dlb_svg_out_t *o, const dlb_eval_figures_t *f, size_t cnt, int which,
                        const switch_marks_t *sm, const char *title, const char *ylabel,
                        const char *caption)
{
    dlb_svg_mark_t *marks = NULL;
    char *mark_labels = NULL;
    size_t nb = cnt ? f[0].series.buckets : 0, per_env = which >= S_CPU ? 2 : 1;
    size_t k = cnt * per_env;
    double bucket_s = cnt ? (double)f[0].series.bucket_ms / 1000.0 : 1;
    unit_t u = time_unit(bucket_s * (double)nb);
    char xlabel[64], *names = calloc(k ? k : 1, LABEL_MAX);
    plot_buf_t pb;

    if (!names || plot_buf_init(&pb, k, nb)) {
        free(names);
        o->err = DLB_ERR_NOMEM;
        return;
    }
    for (size_t i = 0; i < k; i++) {
        const dlb_eval_series_t *s = &f[i / per_env].series;
        int used = per_env == 2 && i % 2;
        const double *src = which == S_CPU_UTIL   ? s->cpu_util
                            : which == S_MEM_UTIL ? s->mem_util
                            : which == S_CPU      ? (used ? s->cpu_used : s->cpu_req)
                                                  : (used ? s->mem_used : s->mem_req);
        double scale = which <= S_MEM_UTIL ? 100 : which == S_CPU ? 1 : 1.0 / (1 << 30);
        double *x = pb.xy + 2 * i * pb.per_line, *y = x + pb.per_line;
        char *name = names + i * LABEL_MAX;

        for (size_t b = 0; b < nb && b < s->buckets; b++) {
            x[b] = ((double)b + 0.5) * bucket_s / u.s;
            y[b] = src[b] * scale;
        }
        snprintf(name, LABEL_MAX, "%s%s", f[i / per_env].env,
                 per_env == 1 ? ""
                 : used       ? " used"
                              : " requested");
        pb.lines[i] = (dlb_svg_line_t){
            name, dlb_svg_color(i / per_env), x, y, s->buckets < nb ? s->buckets : nb, 0, used};
    }
    snprintf(xlabel, sizeof(xlabel), "time since the environment's first event (%s)", u.name);
    if (sm->cnt && cnt &&
        (!(marks = calloc(sm->cnt, sizeof(*marks))) ||
         !(mark_labels = calloc(sm->cnt, LABEL_MAX)))) {
        o->err = DLB_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < sm->cnt && cnt; i++) {
        char *label = mark_labels + i * LABEL_MAX;

        snprintf(label, LABEL_MAX, "%s real (%s)", sm->sw[i].env, sm->sw[i].cause);
        marks[i].x = (double)(sm->sw[i].at_ms - f[0].start_ms) / 1000.0 / u.s;
        marks[i].label = label;
    }
    dlb_svg_printf(o, "<figure>");
    dlb_svg_plot(o,
                 &(dlb_svg_plot_t){title, xlabel, ylabel, 0, (double)nb * bucket_s / u.s, 0, 0,
                                   marks, marks ? sm->cnt : 0},
                 pb.lines, k);
    dlb_svg_printf(o, "<figcaption>%s%s</figcaption></figure>", caption,
                   marks ? " Dashed grey lines: switches of the real environment." : "");
out:
    free(marks);
    free(mark_labels);
    plot_buf_free(&pb);
    free(names);
}

static const char html_defs[] =
    "<dl class=\"defs\">"
    "<dt>JCT (job completion time)</dt><dd>first terminal state (succeeded, failed or stopped) "
    "minus the job's first event (created), over finished jobs; p50 and p95 interpolate "
    "linearly between order statistics.</dd>"
    "<dt>makespan</dt><dd>last terminal state minus the first job's first event.</dd>"
    "<dt>pending time</dt><dd>first running minus first created or pending event, over jobs "
    "that ran; never ran counts the others.</dd>"
    "<dt>utilisation</dt><dd>sum of used &times; duration over sum of requested &times; "
    "duration over every pod of every runtime sample. A sample stands for the time until its "
    "job's next sample; a job's last sample for the median interval of the job (of the "
    "environment when the job has one sample).</dd>"
    "<dt>worker, PS utilisation</dt><dd>the same over the pods of type worker (ps) alone; no "
    "value where nothing of that type was requested.</dd>"
    "<dt>job utilisation</dt><dd>the same over one job's pods and samples; its quantiles "
    "and CDF are over the jobs that have samples.</dd>"
    "<dt>completion rate</dt><dd>succeeded jobs over all jobs (every job with a job event).</dd>"
    "<dt>core-hours, GiB-hours</dt><dd>requested (used) CPU cores and memory GiB &times; that "
    "duration, summed.</dd>"
    "<dt>pods</dt><dd>distinct pods (job uid + pod name) in the runtime samples.</dd>"
    "<dt>OOMs</dt><dd>oom_killed node events; pods OOM-killed counts distinct pods (job uid + "
    "pod name), its share is that over pods; repeated OOMs are a pod's OOMs after its "
    "first.</dd>"
    "<dt>plans</dt><dd>plans written (by stage and by optimizer); plan requests are the "
    "requests received.</dd></dl>";

int dlb_eval_html(const dlb_eval_figures_t *f, size_t cnt, char **out, char *errstr,
                  size_t errstr_size)
{
    return dlb_eval_html_switches(f, cnt, NULL, 0, out, errstr, errstr_size);
}

int dlb_eval_html_switches(const dlb_eval_figures_t *f, size_t cnt, const dlb_eval_switch_t *sw,
                           size_t sw_cnt, char **out, char *errstr, size_t errstr_size)
{
    const switch_marks_t sm = {sw, sw_cnt};
    dlb_svg_out_t o = {0};
    table_t t;
    char when[64];
    time_t now = time(NULL);
    struct tm tm;

    *out = NULL;
    if (table_build(f, cnt, &t))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
    dlb_svg_printf(&o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                       "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                       "<title>dlbrain evaluation: ");
    for (size_t e = 0; e < cnt; e++) {
        dlb_svg_printf(&o, "%s", e ? " vs " : "");
        dlb_svg_text(&o, f[e].env);
    }
    dlb_svg_printf(&o,
                   "</title><style>%s</style></head><body><h1>dlbrain evaluation</h1>"
                   "<p class=\"sub\">",
                   html_css);
    for (size_t e = 0; e < cnt; e++) {
        dlb_svg_printf(&o, "%s<b style=\"color:%s\">", e ? " vs " : "", dlb_svg_color(e));
        dlb_svg_text(&o, f[e].env);
        dlb_svg_printf(&o, "</b>");
    }
    dlb_svg_printf(&o,
                   ": %zu jobs%s. Ratios compare each environment with the first; green is "
                   "better, red worse.</p>",
                   cnt ? f[0].jobs : 0, cnt > 1 ? " in the first" : "");
    html_cards(&o, f, cnt);
    dlb_svg_printf(&o, "<h2>Figures</h2>");
    html_table(&o, f, &t);
    dlb_svg_printf(&o, "<h2>Distributions</h2><p class=\"sub\">Per job: the mean and quantiles "
                       "of each arm's JCT and pending time, and of each job's own "
                       "utilisation (its pods' used over requested over its whole run).</p>");
    html_dists(&o, f, cnt);
    dlb_svg_printf(&o, "<h2>Plots</h2><div class=\"plots\">");
    html_cdf(&o, f, cnt, D_JCT, "Job completion time (CDF)", "job completion time",
             "Share of all jobs finished within a given time; further left and higher is "
             "better. A curve ending below 100% left jobs unfinished.");
    html_cdf(&o, f, cnt, D_PENDING, "Pending time (CDF)", "pending time",
             "Share of all jobs that started running within a given wait.");
    html_cdf(&o, f, cnt, D_JOB_CPU, "Per-job CPU utilisation (CDF)", "job's CPU used / requested",
             "Share of the jobs with samples whose own CPU utilisation, over all their pods and "
             "their whole run, is at most a given value; further right is better.");
    html_cdf(&o, f, cnt, D_JOB_MEM, "Per-job memory utilisation (CDF)",
             "job's memory used / requested",
             "The same for memory: a curve far right with OOMs in the table sizes too tight.");
    html_series(&o, f, cnt, S_CPU_UTIL, &sm, "CPU utilisation over time", "used / requested (%)",
                "CPU used over CPU requested by all pods, per time bucket.");
    html_series(&o, f, cnt, S_MEM_UTIL, &sm, "Memory utilisation over time", "used / requested (%)",
                "Memory used over memory requested by all pods, per time bucket.");
    html_series(&o, f, cnt, S_CPU, &sm, "CPU over time", "cores",
                "Mean CPU cores requested (solid) and used (dashed) by all pods.");
    html_series(&o, f, cnt, S_MEM, &sm, "Memory over time", "GiB",
                "Mean memory requested (solid) and used (dashed) by all pods.");
    dlb_svg_printf(&o,
                   "</div><h2>Definitions</h2>%s<footer>dlbrain eval, %s; %zu time buckets "
                   "of %.0f s.</footer></body></html>\n",
                   html_defs, when, cnt ? f[0].series.buckets : 0,
                   cnt ? (double)f[0].series.bucket_ms / 1000.0 : 0);
    table_free(&t);
    if (o.err) {
        free(o.buf.p);
        return dlb_seterr(errstr, errstr_size, o.err, "out of memory");
    }
    *out = o.buf.p;
    return 0;
}
