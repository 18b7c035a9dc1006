/* Hand-written SVG (and the HTML around it): a markup buffer that remembers
 * its first error, text escaping, and line plots with axes, ticks, labels and
 * a legend. No scripts, no external resources: the output stands alone. */
#ifndef DLB_SVG_H
#define DLB_SVG_H

#include <stddef.h>

#include "sbuf.h"

/* Appends never fail one by one: the first error sticks in err, and the
 * caller checks it once at the end. */
typedef struct dlb_svg_out {
    dlb_sbuf_t buf;
    int err; /* 0 or DLB_ERR_NOMEM */
} dlb_svg_out_t;

void dlb_svg_printf(dlb_svg_out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** @brief Append s with & < > " ' escaped (for text and attribute values). */
void dlb_svg_text(dlb_svg_out_t *o, const char *s);

/* One line of a plot. Points with a non-finite y break the line. */
typedef struct dlb_svg_line {
    const char *name;  /* legend entry; NULL = none */
    const char *color; /* CSS color */
    const double *x, *y;
    size_t n;
    int step;   /* a step function (CDFs): horizontal, then vertical */
    int dashed; /* drawn dashed */
} dlb_svg_line_t;

/* A vertical marker at x (an event on a time axis), labelled at its top. */
typedef struct dlb_svg_mark {
    double x;
    const char *label;
} dlb_svg_mark_t;

typedef struct dlb_svg_plot {
    const char *title;
    const char *xlabel, *ylabel;
    /* Axis ranges; max <= min: from the data (y from 0). */
    double xmin, xmax, ymin, ymax;
    const dlb_svg_mark_t *marks; /* drawn when inside the x range; may be NULL */
    size_t marks_cnt;
} dlb_svg_plot_t;

/** @brief Append one <svg> element: title, axes with nice ticks and grid,
 *         the lines clipped to the plot area, and a legend. */
void dlb_svg_plot(dlb_svg_out_t *o, const dlb_svg_plot_t *p, const dlb_svg_line_t *lines, size_t n);

/** @returns a step (1, 2 or 5 x 10^k) giving at most about max_ticks ticks over range. */
double dlb_svg_nice_step(double range, int max_ticks);

/** @returns the color of series i: the Okabe-Ito palette, safe for colour blindness. */
const char *dlb_svg_color(size_t i);

#endif
