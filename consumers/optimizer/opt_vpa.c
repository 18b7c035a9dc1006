/* The dlbrain set's OOM plan ("dlbrain.oom"): answered once per OOM event, and
 * grown the way Kubernetes' VPA grows an OOMKilled container, within the
 * bounds DLRover's master puts on memory growth (reference sections 3 and 4).
 *
 * DLRover issue #302: the same OOM can be bumped twice when the master asks
 * again. Here an OOM is the pair (pod, OOM node event id); when in->oom_plans
 * holds an answer for that pair, the plan gives the pod that answer's memory
 * again, whatever has been observed since. */
#include "optimizer.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "opt_dlbrain.h"
#include "opt_oom.h"
#include "opt_util.h"

#define ASSUMED_MEMORY  (16 * DLB_GIB) /* what create gives a job without history */
#define VPA_CAP_FORMULA "min(max(min(2*cur,64GiB),cur),cur+8GiB)"

/* The pod's largest memory_used over the window, and how many samples had it. */
static int64_t window_peak(const dlb_job_state_t *st, const char *name, size_t *samples)
{
    int64_t peak = 0;
    size_t i, k;

    *samples = 0;
    for (i = 0; i < st->window_cnt; i++) {
        const dlb_runtime_sample_t *s = &st->window[i];

        for (k = 0; k < s->pods_cnt; k++) {
            if (strcmp(s->pods[k].name, name))
                continue;
            (*samples)++;
            if (s->pods[k].memory_used > peak)
                peak = s->pods[k].memory_used;
            break;
        }
    }
    return peak;
}

/* Workers are alike (same model, same input pipeline), so the memory goes to
 * the whole group and to the pod; a PS holds its own shard, so only the OOM'd
 * PS grows (DLRover doubles the PS count or every PS instead). */
static const char *target_group(const dlb_oom_target_t *t)
{
    return dlb_is_ps(t->type) ? NULL : t->type;
}

static int repeat_answer(dlb_plan_t *plan, const dlb_oom_target_t *t, const dlb_oom_plan_t *prev)
{
    int err;

    if (prev->memory <= 0) {
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "%sOOM of %s %s (event %s) was answered by plan %s without a memory "
                           "change; nothing more to change (one answer per OOM).",
                           dlb_reason_sep(plan->reason), t->type, t->name, t->event, prev->plan_id);
        return 0;
    }
    if ((err = dlb_oom_set_memory(plan, target_group(t), t->name, prev->memory)))
        return err;
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%sOOM of %s %s (event %s) was answered by plan %s: memory %.2fGiB again, "
                       "no second bump for the same OOM (DLRover issue #302).",
                       dlb_reason_sep(plan->reason), t->type, t->name, t->event, prev->plan_id,
                       DLB_GIB_F(prev->memory));
    return 0;
}

/* One OOM: its earlier answer again, or the first. */
static int vpa_one(const dlb_opt_input_t *in, dlb_plan_t *plan, const dlb_oom_target_t *tp)
{
    const dlb_oom_target_t t = *tp;
    const dlb_pod_usage_t *wp;
    const dlb_oom_plan_t *prev;
    dlb_vpa_growth_t g;
    dlb_mem_trend_t f;
    int64_t used_peak, req, current, peak, hist_mem = 0, memory, grown = 0;
    double ahead_s = 0, remaining;
    size_t samples, hist_pods = 0;
    const char *req_src, *group;
    int err, ps;

    if ((prev = dlb_oom_find_answer(in, t.name, t.event)))
        return repeat_answer(plan, &t, prev);

    /* The request at the OOM: node events carry it and it is fixed per OOM
     * event; else the newest sample's. An OOMKilled pod needed at least it. */
    wp = dlb_oom_window_pod(in->job, t.name);
    used_peak = window_peak(in->job, t.name, &samples);
    if (t.st_pod && t.st_pod->memory_requested > 0) {
        req = t.st_pod->memory_requested;
        req_src = "requested at its node events";
    } else if (wp && wp->memory_requested > 0) {
        req = wp->memory_requested;
        req_src = "requested in its newest runtime sample";
    } else {
        req = 0;
        req_src = "its used peak, request unknown";
    }
    current = req > 0 ? req : used_peak;
    if (current <= 0) {
        current = ASSUMED_MEMORY;
        req_src = "unknown, assumed the cold-start size";
    }
    peak = used_peak > current ? used_peak : current;
    /* A pod whose memory kept rising until the OOM will need more still: a
     * bump of 20% over the peak is soon outgrown, and every OOM restarts the
     * pod (DLRover relaunches it at most 3 times). So the need is also taken
     * where the pod's rising line (the memory trend's, through its samples
     * at the request it had at the OOM) will be at the horizon, cut at the
     * job's estimated end; the bound on growth below still holds. Samples at
     * the request are clipped (used cannot pass it), which only flattens the
     * line: the estimate errs low, never high. */
    if (in->job->window_cnt && req > 0) {
        ahead_s = dlb_mem_trend_ahead(in, &remaining);
        if (dlb_mem_trend_fit(in->job, t.name, req, ahead_s, &f) && f.slope > 0 &&
            f.predicted > (double)peak) {
            grown = f.predicted < (double)(INT64_MAX / 2) ? (int64_t)llround(f.predicted)
                                                          : INT64_MAX / 2;
        }
    }
    g = dlb_vpa_grow(grown > peak ? grown : peak, current);
    memory = g.memory;

    ps = dlb_is_ps(t.type);
    if (!ps) {
        /* History is what pods of this kind needed: a floor the cap does not
         * lower. A PS's memory depends on how many PS share the model, which
         * differs between jobs, so PS get no history floor. */
        if ((err = dlb_oom_history_memory(in->history, t.type, &hist_mem, &hist_pods)))
            return err;
        if (hist_mem > memory)
            memory = hist_mem;
    }
    group = target_group(&t);
    if ((err = dlb_oom_set_memory(plan, group, t.name, memory)) ||
        (err = dlb_oom_answer(in, plan, &t, memory)))
        return err;

    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "%s%s %s OOMKilled (event %s), first answer: peak %.2fGiB = max(used peak "
                       "%.2fGiB over %zu samples, current %.2fGiB (%s))",
                       dlb_reason_sep(plan->reason), t.type, t.name,
                       t.event[0] ? t.event : "unknown", DLB_GIB_F(peak), DLB_GIB_F(used_peak),
                       samples, DLB_GIB_F(current), req_src);
    if (grown)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           "; rising %.1fMiB/min over %zu samples at that request: %.2fGiB in "
                           "%.0fs, the need to grow for",
                           f.slope * 60.0 / (double)DLB_MIB, f.n, DLB_GIB_F(grown), ahead_s);
    dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                       "; VPA max(peak*1.2, peak+100MiB)=%.2fGiB, cap " VPA_CAP_FORMULA "=%.2fGiB",
                       DLB_GIB_F(g.vpa), DLB_GIB_F(g.cap));
    if (!ps)
        dlb_reason_appendf(plan->reason, sizeof(plan->reason),
                           ", history floor %.2fGiB (%zu %s pods of %zu jobs)", DLB_GIB_F(hist_mem),
                           hist_pods, t.type, in->history->jobs_cnt);
    dlb_reason_appendf(plan->reason, sizeof(plan->reason), ": memory=%.2fGiB for the %s%s.",
                       DLB_GIB_F(memory), ps ? "PS pod only" : t.type, ps ? "" : " group and pod");
    return 0;
}

/* Several OOM pods named by one request: each answered as one would be, the
 * group getting the largest of its pods' memories. */
int dlb_opt_oom_vpa(const dlb_opt_input_t *in, dlb_plan_t *plan)
{
    return dlb_oom_each(in, 1, vpa_one, plan);
}
