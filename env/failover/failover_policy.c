/* The failover policy (failover_policy.h): pure, one pass over the outcomes. */
#include "failover_policy.h"

#include <string.h>

static const char *const verdict_names[] = {"trip",   "healthy",    "few_jobs", "cooldown",
                                            "pinned", "no_standby", "no_real"};

const char *dlb_failover_verdict_name(dlb_failover_verdict_t v)
{
    if ((size_t)v >= sizeof(verdict_names) / sizeof(verdict_names[0]))
        return "unknown";
    return verdict_names[v];
}

/* The window's figures: each job's last outcome inside (from, to]. */
static void figures(const dlb_failover_outcome_t *o, size_t n, int64_t from, int64_t to,
                    dlb_failover_figures_t *f)
{
    memset(f, 0, sizeof(*f));
    f->from_ms = from;
    f->to_ms = to;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int have = 0, failed = 0;

        /* One run of the same job; the input is grouped by job. */
        for (; j < n && !strcmp(o[j].job, o[i].job); j++) {
            if (o[j].at_ms > from && o[j].at_ms <= to) {
                have = 1;
                failed = o[j].failed != 0;
            }
        }
        f->jobs += have;
        f->failed += have && failed;
        i = j;
    }
    f->share = f->jobs ? (double)f->failed / (double)f->jobs : 0.0;
}

/* The window's plan requests judged, and the late ones among them. */
static void late_figures(const dlb_failover_policy_t *p, const dlb_failover_request_t *r, size_t m,
                         dlb_failover_figures_t *f)
{
    for (size_t i = 0; p->late_ms > 0 && i < m; i++) {
        int answered = r[i].answered_ms >= 0;

        if (r[i].at_ms <= f->from_ms || r[i].at_ms > f->to_ms)
            continue;
        /* Unanswered and younger than late_ms: not late yet, not judged. */
        if (!answered && f->to_ms - r[i].at_ms < p->late_ms)
            continue;
        f->requests++;
        f->late += !answered || r[i].answered_ms - r[i].at_ms > p->late_ms;
    }
    f->late_share = f->requests ? (double)f->late / (double)f->requests : 0.0;
}

dlb_failover_verdict_t dlb_failover_decide(const dlb_failover_policy_t *p,
                                           const dlb_failover_outcome_t *outcomes, size_t n,
                                           int64_t now_ms, const dlb_failover_state_t *st,
                                           dlb_failover_figures_t *out)
{
    return dlb_failover_decide_all(p, outcomes, n, NULL, 0, now_ms, st, out);
}

dlb_failover_verdict_t dlb_failover_decide_all(const dlb_failover_policy_t *p,
                                               const dlb_failover_outcome_t *outcomes, size_t n,
                                               const dlb_failover_request_t *requests, size_t m,
                                               int64_t now_ms, const dlb_failover_state_t *st,
                                               dlb_failover_figures_t *out)
{
    dlb_failover_figures_t f;
    int64_t from = now_ms - p->window_ms;
    int jobs_enough, late_enough;

    /* Outcomes reported before the last switch belong to the environment
     * that was real then. */
    if (st->last_switch_ms > from)
        from = st->last_switch_ms;
    figures(outcomes, n, from, now_ms, &f);
    late_figures(p, requests, m, &f);
    jobs_enough = f.jobs >= p->min_jobs && f.jobs > 0;
    late_enough = p->late_ms > 0 && f.requests >= p->min_requests && f.requests > 0;
    f.by_late = !(jobs_enough && f.share >= p->threshold) && late_enough &&
                f.late_share >= p->late_threshold;
    if (out)
        *out = f;
    if (!st->has_real)
        return DLB_FAILOVER_NO_REAL;
    if (st->pinned)
        return DLB_FAILOVER_PINNED;
    if (!st->has_standby)
        return DLB_FAILOVER_NO_STANDBY;
    if (st->last_switch_ms > 0 && now_ms - st->last_switch_ms < p->cooldown_ms)
        return DLB_FAILOVER_COOLDOWN;
    if ((jobs_enough && f.share >= p->threshold) || f.by_late)
        return DLB_FAILOVER_TRIP;
    return jobs_enough || late_enough ? DLB_FAILOVER_HEALTHY : DLB_FAILOVER_FEW_JOBS;
}
