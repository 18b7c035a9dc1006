/* The dlbrain set's health check ("dlbrain.health"): a hung job gets its
 * workers relaunched, a straggling worker gets replaced on another node.
 * DLRover's Brain has neither (its master only exits with HangError); DLRover-RM
 * names stragglers as a post-scaling concern. */
#include "optimizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt_dlbrain.h"
#include "opt_util.h"

#define MIN_PEERS 2 /* a median of one peer is just that peer */

static int is_worker(const dlb_pod_usage_t *p)
{
    return !strcmp(p->type, "worker");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Hang: the newest samples that all show the newest global_step must span at
 * least hang_seconds. Measured over samples only: a gap with no samples (the
 * master stopped reporting) is no evidence that the step stood still.
 * @returns 1 when hung; *stalled_s is the span, *run the samples in it. */
static int hung(const dlb_job_state_t *st, int hang_seconds, double *stalled_s, size_t *run)
{
    const dlb_runtime_sample_t *newest = &st->window[st->window_cnt - 1];
    size_t i, first = st->window_cnt - 1;

    for (i = st->window_cnt - 1; i-- > 0;) {
        if (st->window[i].global_step != newest->global_step)
            break;
        first = i;
    }
    *run = st->window_cnt - first;
    *stalled_s = (double)(newest->event_time_ms - st->window[first].event_time_ms) / 1000.0;
    return *run >= 2 && *stalled_s >= (double)hang_seconds;
}

static int relaunch_workers(const dlb_opt_input_t *in, dlb_plan_t *plan, double stalled_s,
                            size_t run)
{
    const dlb_runtime_sample_t *newest = &in->job->window[in->job->window_cnt - 1];
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    size_t k, n = 0;

    for (k = 0; k < newest->pods_cnt; k++) {
        dlb_pod_action_t *a;

        if (!is_worker(&newest->pods[k]))
            continue;
        if (!(a = dlb_plan_add_action(plan, newest->pods[k].name, DLB_ACTION_RELAUNCH)))
            return DLB_ERR_NOMEM;
        snprintf(a->reason, sizeof(a->reason),
                 "hang: global_step %lld unchanged for %.0fs over %zu samples (>= %ds)",
                 (long long)newest->global_step, stalled_s, run, tun->hang_seconds);
        n++;
    }
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sHealth: hang, global_step %lld unchanged for %.0fs over %zu samples (>= "
                       "%ds): relaunch %zu workers.",
                       dlb_reason_sep(plan->reason), (long long)newest->global_step, stalled_s, run,
                       tun->hang_seconds, n);
    return 0;
}

/* Median speed of the workers of s other than self that report a speed;
 * @returns the number of such peers. peers has room for s->pods_cnt. */
static size_t peer_median(const dlb_runtime_sample_t *s, const char *self, double *peers,
                          double *median)
{
    size_t k, n = 0;

    for (k = 0; k < s->pods_cnt; k++)
        if (is_worker(&s->pods[k]) && s->pods[k].has_speed && strcmp(s->pods[k].name, self))
            peers[n++] = s->pods[k].speed;
    if (n == 0)
        return 0;
    qsort(peers, n, sizeof(*peers), cmp_double);
    *median = n % 2 ? peers[n / 2] : (peers[n / 2 - 1] + peers[n / 2]) / 2.0;
    return n;
}

/* The speeds of one sample's workers, arranged so that the median of a
 * worker's peers costs O(log^2 n) instead of a pass and a sort per worker
 * (quadratic in a sample's pods: 16,384 workers took minutes). all: every
 * worker's speed, sorted. byname: the same speeds in the order of the
 * sample's pods_by_name index, each run of one name sorted; cnt[i]: how
 * many of them the run starting at index position i holds. */
typedef struct speeds {
    double *all, *byname;
    size_t all_cnt, *cnt;
} speeds_t;

static void speeds_free(speeds_t *sp)
{
    free(sp->all);
    free(sp->byname);
    free(sp->cnt);
}

static int speeds_build(const dlb_runtime_sample_t *s, speeds_t *sp)
{
    const uint32_t *ix = s->pods_by_name;
    size_t a, b, c;

    memset(sp, 0, sizeof(*sp));
    if (!s->pods_cnt)
        return 0;
    sp->all = malloc(s->pods_cnt * sizeof(*sp->all));
    sp->byname = malloc(s->pods_cnt * sizeof(*sp->byname));
    sp->cnt = calloc(s->pods_cnt, sizeof(*sp->cnt));
    if (!sp->all || !sp->byname || !sp->cnt) {
        speeds_free(sp);
        return DLB_ERR_NOMEM;
    }
    for (a = 0; a < s->pods_cnt; a = b) {
        for (b = a, c = 0; b < s->pods_cnt && !strcmp(s->pods[ix[b]].name, s->pods[ix[a]].name);
             b++) {
            const dlb_pod_usage_t *p = &s->pods[ix[b]];
            if (is_worker(p) && p->has_speed) {
                sp->byname[a + c++] = p->speed;
                sp->all[sp->all_cnt++] = p->speed;
            }
        }
        qsort(sp->byname + a, c, sizeof(double), cmp_double);
        sp->cnt[a] = c;
    }
    qsort(sp->all, sp->all_cnt, sizeof(double), cmp_double);
    return 0;
}

/* How many of the n sorted values v are <= x. */
static size_t count_le(const double *v, size_t n, double x)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The k-th smallest (from 0) of the multiset s minus its sub-multiset e:
 * the smallest value of s with more than k values of s - e at or below it. */
static double kth_without(const double *s, size_t ns, const double *e, size_t ne, size_t k)
{
    size_t lo = 0, hi = ns - 1;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (count_le(s, ns, s[mid]) - count_le(e, ne, s[mid]) > k)
            hi = mid;
        else
            lo = mid + 1;
    }
    return s[lo];
}

/* peer_median() through a sample's speeds_t: the same peers (every worker
 * with a speed not named self) and the same median. */
static size_t peer_median_fast(const dlb_runtime_sample_t *s, const speeds_t *sp, const char *self,
                               double *median)
{
    const uint32_t *ix = s->pods_by_name;
    size_t lo = 0, hi = s->pods_cnt, ne = 0, n;
    const double *e = NULL;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(s->pods[ix[mid]].name, self) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->pods_cnt && !strcmp(s->pods[ix[lo]].name, self)) {
        e = sp->byname + lo;
        ne = sp->cnt[lo];
    }
    if ((n = sp->all_cnt - ne) == 0)
        return 0;
    *median = n % 2 ? kth_without(sp->all, sp->all_cnt, e, ne, n / 2)
                    : (kth_without(sp->all, sp->all_cnt, e, ne, n / 2 - 1) +
                       kth_without(sp->all, sp->all_cnt, e, ne, n / 2)) /
                          2.0;
    return n;
}

/* A straggler is slower than straggler_ratio x the median of its peers (at
 * least two other workers with a speed) in each of the newest
 * straggler_samples samples: one slow sample is noise, a run is a bad node. */
static int stragglers(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    const dlb_runtime_sample_t *newest = &st->window[st->window_cnt - 1];
    size_t need = tun->straggler_samples > 0 ? (size_t)tun->straggler_samples : 1;
    size_t k, j, max_pods = 0, checked = 0, lonely = 0, found = 0;
    speeds_t *sp = NULL;
    double *peers = NULL;
    int err = 0;

    if (st->window_cnt < need) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Stragglers: %zu samples < the %zu needed, not checked.",
                           st->window_cnt, need);
        return 0;
    }
    for (j = st->window_cnt - need; j < st->window_cnt; j++)
        if (st->window[j].pods_cnt > max_pods)
            max_pods = st->window[j].pods_cnt;
    if (max_pods && !(peers = malloc(max_pods * sizeof(*peers))))
        return DLB_ERR_NOMEM;
    /* Window samples of a job state have pods_by_name; for them the medians
     * come from speeds_t (sp[j - (window_cnt - need)]). */
    if (!(sp = calloc(need, sizeof(*sp)))) {
        err = DLB_ERR_NOMEM;
        goto out;
    }
    for (j = st->window_cnt - need; j < st->window_cnt; j++)
        if (st->window[j].pods_by_name &&
            (err = speeds_build(&st->window[j], &sp[j - (st->window_cnt - need)])))
            goto out;

    for (k = 0; k < newest->pods_cnt; k++) {
        const dlb_pod_usage_t *w = &newest->pods[k];
        double median = 0, newest_median = 0;
        size_t npeers = 0, newest_peers = 0;
        int slow = 1;
        dlb_pod_action_t *a;

        if (!is_worker(w) || !w->has_speed)
            continue;
        checked++;
        for (j = st->window_cnt; slow && j-- > st->window_cnt - need;) {
            const dlb_pod_usage_t *p = dlb_sample_pod(&st->window[j], w->name);

            if (!p || !p->has_speed) {
                slow = 0;
            } else if ((npeers =
                            st->window[j].pods_by_name
                                ? peer_median_fast(&st->window[j], &sp[j - (st->window_cnt - need)],
                                                   w->name, &median)
                                : peer_median(&st->window[j], w->name, peers, &median)) <
                       MIN_PEERS) {
                lonely++;
                slow = 0;
            } else {
                if (j == st->window_cnt - 1) {
                    newest_median = median;
                    newest_peers = npeers;
                }
                slow = p->speed < tun->straggler_ratio * median;
            }
        }
        if (!slow)
            continue;
        if (!(a = dlb_plan_add_action(plan, w->name, DLB_ACTION_REPLACE))) {
            err = DLB_ERR_NOMEM;
            goto out;
        }
        snprintf(a->reason, sizeof(a->reason),
                 "straggler: %.3g steps/s < %.2f x median %.3g of %zu peers, in each of the "
                 "newest %zu samples",
                 w->speed, tun->straggler_ratio, newest_median, newest_peers, need);
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Straggler %s: %.3g steps/s < %.2f x median %.3g of %zu peers in "
                           "each of the newest %zu samples: replace.",
                           w->name, w->speed, tun->straggler_ratio, newest_median, newest_peers,
                           need);
        found++;
    }
    if (!found)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           " Stragglers: none among %zu workers with a speed over the newest %zu "
                           "samples (%zu without %d peers with a speed).",
                           checked, need, lonely, MIN_PEERS);
out:
    for (j = 0; sp && j < need; j++)
        speeds_free(&sp[j]);
    free(sp);
    free(peers);
    return err;
}

int dlb_opt_health(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    const dlb_tuning_t *tun = dlb_opt_tuning(in);
    const dlb_job_state_t *st = in->job;
    double stalled_s;
    size_t run;

    if (st->window_cnt == 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sHealth: no runtime samples, nothing to check.",
                           dlb_reason_sep(plan->reason));
        return 0;
    }
    if (hung(st, tun->hang_seconds, &stalled_s, &run))
        return relaunch_workers(in, plan, stalled_s, run); /* a stopped job has no stragglers */
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sHealth: no hang (global_step %lld unchanged for %.0fs over %zu samples, "
                       "< %ds).",
                       dlb_reason_sep(plan->reason),
                       (long long)st->window[st->window_cnt - 1].global_step, stalled_s, run,
                       tun->hang_seconds);
    return stragglers(in, plan);
}
