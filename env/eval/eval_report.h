/* The evaluator's outputs: a text table for the terminal, JSON for scripts,
 * and a self-contained HTML page (inline CSS and SVG, nothing fetched). */
#ifndef DLB_EVAL_REPORT_H
#define DLB_EVAL_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "eval.h"

/** @brief Print one row per figure and one column per environment, then, with
 *         two or more, a ratio column per environment against the first.
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_eval_table(FILE *fp, const dlb_eval_figures_t *f, size_t cnt);

/** @brief The figures as JSON: {"bucket_s", "envs": [{...}, ...]}, durations
 *         in seconds, utilisation as a fraction, NaN as null.
 *  @param out  set to a malloc'ed string
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_eval_json(const dlb_eval_figures_t *f, size_t cnt, char **out, char *errstr,
                  size_t errstr_size);

/** @brief The HTML report: a card per environment, the table (ratios coloured
 *         better / worse), and SVG plots: JCT and pending-time CDFs, CPU and
 *         memory utilisation over time, requested and used CPU and memory over time.
 *  @param out  set to a malloc'ed string
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_eval_html(const dlb_eval_figures_t *f, size_t cnt, char **out, char *errstr,
                  size_t errstr_size);

/** @brief dlb_eval_html() with the switches marked on the plots over time,
 *         at their time since the first environment's first event (the
 *         series' origin); those outside the plotted range are left out. */
int dlb_eval_html_switches(const dlb_eval_figures_t *f, size_t cnt, const dlb_eval_switch_t *sw,
                           size_t sw_cnt, char **out, char *errstr, size_t errstr_size);

#endif
