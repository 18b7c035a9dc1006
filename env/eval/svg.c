/* Hand-written SVG line plots (svg.h). */
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* Canvas and margins, in SVG user units (the page scales the viewBox). */
#define SVG_W      640.0
#define SVG_H      360.0
#define SVG_LEFT   64.0
#define SVG_RIGHT  20.0
#define SVG_BOTTOM 52.0
#define SVG_TITLE  40.0 /* title band above the legend */
#define SVG_ROW    16.0 /* one legend row */
#define SVG_CHAR   6.6  /* mean width of a 12px sans-serif character */

void dlb_svg_printf(dlb_svg_out_t *o, const char *fmt, ...)
{
    char small[512], *p = small;
    va_list ap;
    int n;

    if (o->err)
        return;
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        o->err = DLB_ERR_GENERIC;
        return;
    }
    if ((size_t)n >= sizeof(small)) {
        if (!(p = malloc((size_t)n + 1))) {
            o->err = DLB_ERR_NOMEM;
            return;
        }
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    o->err = dlb_sbuf_put(&o->buf, p, (size_t)n);
    if (p != small)
        free(p);
}

void dlb_svg_text(dlb_svg_out_t *o, const char *s)
{
    const char *run = s;

    for (; !o->err && *s; s++) {
        const char *ent = *s == '&'    ? "&amp;"
                          : *s == '<'  ? "&lt;"
                          : *s == '>'  ? "&gt;"
                          : *s == '"'  ? "&quot;"
                          : *s == '\'' ? "&#39;"
                                       : NULL;
        if (!ent)
            continue;
        if ((o->err = dlb_sbuf_put(&o->buf, run, (size_t)(s - run))) ||
            (o->err = dlb_sbuf_str(&o->buf, ent)))
            return;
        run = s + 1;
    }
    if (!o->err)
        o->err = dlb_sbuf_put(&o->buf, run, (size_t)(s - run));
}

const char *dlb_svg_color(size_t i)
{
    static const char *const okabe_ito[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                            "#E69F00", "#56B4E9", "#F0E442", "#000000"};

    return okabe_ito[i % (sizeof(okabe_ito) / sizeof(okabe_ito[0]))];
}

double dlb_svg_nice_step(double range, int max_ticks)
{
    double raw, mag, norm;

    if (!(range > 0) || !isfinite(range) || max_ticks < 1)
        return 1;
    raw = range / max_ticks;
    mag = pow(10, floor(log10(raw)));
    norm = raw / mag;
    return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

/* The range of the finite data along x (which = 0) or y (1). */
static void data_range(const dlb_svg_line_t *lines, size_t n, int which, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t l = 0; l < n; l++)
        for (size_t i = 0; i < lines[l].n; i++) {
            double v = which ? lines[l].y[i] : lines[l].x[i];

            if (!isfinite(lines[l].x[i]) || !isfinite(lines[l].y[i]))
                continue;
            *lo = fmin(*lo, v);
            *hi = fmax(*hi, v);
        }
    if (!isfinite(*lo)) {
        *lo = 0;
        *hi = 1;
    }
}

/* An axis range widened to whole steps; *step set for its ticks. */
static void nice_axis(double *lo, double *hi, double *step)
{
    if (*hi <= *lo)
        *hi = *lo + 1;
    *step = dlb_svg_nice_step(*hi - *lo, 6);
    *lo = floor(*lo / *step + 1e-9) * *step;
    *hi = ceil(*hi / *step - 1e-9) * *step;
    if (*hi <= *lo)
        *hi = *lo + *step;
}

/* A tick value with as many decimals as its step needs. */
static void tick_label(char *buf, size_t size, double v, double step)
{
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);

    snprintf(buf, size, "%.*f", dec, fabs(v) < step * 1e-9 ? 0.0 : v);
}

typedef struct frame {
    double x0, x1, y0, y1; /* data ranges */
    double l, t, w, h;     /* plot area in user units */
} frame_t;

static double px(const frame_t *f, double x)
{
    return f->l + (x - f->x0) / (f->x1 - f->x0) * f->w;
}

static double py(const frame_t *f, double y)
{
    return f->t + f->h - (y - f->y0) / (f->y1 - f->y0) * f->h;
}

/* Where legend entry i starts: its row and x; returns the rows used. */
static int legend_layout(const dlb_svg_line_t *lines, size_t n, double *xs, int *rows)
{
    double x = SVG_LEFT;
    int row = 0;

    for (size_t i = 0; i < n; i++) {
        double wd = lines[i].name ? 30 + SVG_CHAR * (double)strlen(lines[i].name) + 14 : 0;

        if (!lines[i].name)
            continue;
        if (x > SVG_LEFT && x + wd > SVG_W - SVG_RIGHT) {
            row++;
            x = SVG_LEFT;
        }
        xs[i] = x;
        rows[i] = row;
        x += wd;
    }
    return row + 1;
}

static void draw_axes(dlb_svg_out_t *o, const frame_t *f, const dlb_svg_plot_t *p, double xs,
                      double ys)
{
    char lab[32];

    dlb_svg_printf(o, "<g stroke=\"#e3e3e3\" stroke-width=\"1\">");
    for (double v = f->y0; v <= f->y1 + ys * 1e-6; v += ys)
        dlb_svg_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", f->l, py(f, v),
                       f->l + f->w, py(f, v));
    for (double v = f->x0; v <= f->x1 + xs * 1e-6; v += xs)
        dlb_svg_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", px(f, v), f->t,
                       px(f, v), f->t + f->h);
    dlb_svg_printf(o, "</g><g fill=\"#444\" text-anchor=\"end\">");
    for (double v = f->y0; v <= f->y1 + ys * 1e-6; v += ys) {
        tick_label(lab, sizeof(lab), v, ys);
        dlb_svg_printf(o, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", f->l - 6, py(f, v) + 4, lab);
    }
    dlb_svg_printf(o, "</g><g fill=\"#444\" text-anchor=\"middle\">");
    for (double v = f->x0; v <= f->x1 + xs * 1e-6; v += xs) {
        tick_label(lab, sizeof(lab), v, xs);
        dlb_svg_printf(o, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", px(f, v), f->t + f->h + 16, lab);
    }
    dlb_svg_printf(o,
                   "</g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                   "fill=\"none\" stroke=\"#888\"/>",
                   f->l, f->t, f->w, f->h);
    dlb_svg_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#222\">",
                   f->l + f->w / 2, SVG_H - 12);
    dlb_svg_text(o, p->xlabel ? p->xlabel : "");
    dlb_svg_printf(o,
                   "</text><text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#222\" "
                   "transform=\"rotate(-90 14 %.1f)\">",
                   f->t + f->h / 2, f->t + f->h / 2);
    dlb_svg_text(o, p->ylabel ? p->ylabel : "");
    dlb_svg_printf(o, "</text>");
}

/* One line: a polyline per run of finite points, a dot for a lone point. */
static void draw_line(dlb_svg_out_t *o, const frame_t *f, const dlb_svg_line_t *ln)
{
    size_t i = 0;

    while (i < ln->n) {
        size_t a = i, b;

        if (!isfinite(ln->x[i]) || !isfinite(ln->y[i])) {
            i++;
            continue;
        }
        for (b = a + 1; b < ln->n && isfinite(ln->x[b]) && isfinite(ln->y[b]); b++)
            ;
        i = b;
        if (b - a == 1) {
            dlb_svg_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                           px(f, ln->x[a]), py(f, ln->y[a]), ln->color);
            continue;
        }
        dlb_svg_printf(o,
                       "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                       "stroke-linejoin=\"round\"%s points=\"",
                       ln->color, ln->dashed ? " stroke-dasharray=\"6 4\"" : "");
        for (size_t k = a; k < b; k++) {
            if (ln->step && k > a)
                dlb_svg_printf(o, "%.1f,%.1f ", px(f, ln->x[k]), py(f, ln->y[k - 1]));
            dlb_svg_printf(o, "%.1f,%.1f ", px(f, ln->x[k]), py(f, ln->y[k]));
        }
        dlb_svg_printf(o, "\"/>");
    }
}

/* The vertical markers inside the x range: a dashed grey line, its label
 * along it at the top. */
static void draw_marks(dlb_svg_out_t *o, const frame_t *f, const dlb_svg_plot_t *p)
{
    for (size_t i = 0; i < p->marks_cnt; i++) {
        double x = p->marks[i].x;

        if (!isfinite(x) || x < f->x0 || x > f->x1)
            continue;
        dlb_svg_printf(o,
                       "<g class=\"mark\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                       "y2=\"%.1f\" stroke=\"#666\" stroke-width=\"1\" "
                       "stroke-dasharray=\"3 3\"/><text x=\"%.1f\" y=\"%.1f\" "
                       "font-size=\"10\" fill=\"#444\" transform=\"rotate(90 %.1f %.1f)\">",
                       px(f, x), f->t, px(f, x), f->t + f->h, px(f, x) + 3, f->t + 4, px(f, x) + 3,
                       f->t + 4);
        dlb_svg_text(o, p->marks[i].label ? p->marks[i].label : "");
        dlb_svg_printf(o, "</text></g>");
    }
}

void dlb_svg_plot(dlb_svg_out_t *o, const dlb_svg_plot_t *p, const dlb_svg_line_t *lines, size_t n)
{
    double *lx = calloc(n ? n : 1, sizeof(*lx)), xs, ys;
    int *lrow = calloc(n ? n : 1, sizeof(*lrow)), rows;
    frame_t f;
    size_t clip = o->buf.len; /* unique within one document */

    if (!lx || !lrow) {
        o->err = DLB_ERR_NOMEM;
        goto out;
    }
    rows = legend_layout(lines, n, lx, lrow);
    f.l = SVG_LEFT;
    f.t = SVG_TITLE + SVG_ROW * rows + 6;
    f.w = SVG_W - SVG_LEFT - SVG_RIGHT;
    f.h = SVG_H - f.t - SVG_BOTTOM;
    f.x0 = p->xmin;
    f.x1 = p->xmax;
    f.y0 = p->ymin;
    f.y1 = p->ymax;
    if (f.x1 <= f.x0)
        data_range(lines, n, 0, &f.x0, &f.x1);
    if (f.y1 <= f.y0) {
        data_range(lines, n, 1, &f.y0, &f.y1);
        f.y0 = fmin(0, f.y0);
    }
    nice_axis(&f.x0, &f.x1, &xs);
    nice_axis(&f.y0, &f.y1, &ys);

    dlb_svg_printf(o,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                   "font-family=\"sans-serif\" font-size=\"12\" role=\"img\"><title>",
                   SVG_W, SVG_H);
    dlb_svg_text(o, p->title ? p->title : "");
    dlb_svg_printf(o,
                   "</title><text x=\"%.1f\" y=\"22\" font-size=\"15\" font-weight=\"bold\" "
                   "fill=\"#222\">",
                   SVG_LEFT);
    dlb_svg_text(o, p->title ? p->title : "");
    dlb_svg_printf(o, "</text>");
    for (size_t i = 0; i < n; i++) {
        double y = SVG_TITLE + SVG_ROW * lrow[i];

        if (!lines[i].name)
            continue;
        dlb_svg_printf(o,
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                       "stroke-width=\"2\"%s/><text x=\"%.1f\" y=\"%.1f\" fill=\"#222\">",
                       lx[i], y - 4, lx[i] + 24, y - 4, lines[i].color,
                       lines[i].dashed ? " stroke-dasharray=\"6 4\"" : "", lx[i] + 30, y);
        dlb_svg_text(o, lines[i].name);
        dlb_svg_printf(o, "</text>");
    }
    draw_axes(o, &f, p, xs, ys);
    dlb_svg_printf(o,
                   "<clipPath id=\"clip%zu\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\"/></clipPath><g clip-path=\"url(#clip%zu)\">",
                   clip, f.l, f.t - 2, f.w, f.h + 4, clip);
    for (size_t i = 0; i < n; i++)
        draw_line(o, &f, &lines[i]);
    dlb_svg_printf(o, "</g>");
    draw_marks(o, &f, p);
    dlb_svg_printf(o, "</svg>\n");
out:
    free(lx);
    free(lrow);
}
