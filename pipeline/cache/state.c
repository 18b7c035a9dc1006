#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "vec.h"

void dlb_job_state_clear(dlb_job_state_t *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->window_cnt; i++) {
        free(st->window[i].pods);
        free(st->window[i].pods_by_name);
    }
    free(st->window);
    free(st->pods);
    free(st->pod_index);
    dlb_job_event_clear(&st->job);
    memset(st, 0, sizeof(*st));
}

void dlb_history_clear(dlb_history_t *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->jobs_cnt; i++) {
        dlb_hist_job_t *j = &h->jobs[i];
        for (size_t k = 0; k < j->samples_cnt && !h->borrowed; k++) {
            free(j->samples[k].pods);
            free(j->samples[k].pods_by_name);
        }
        free(j->samples);
        free(j->oom_pods);
        if (!h->borrowed)
            free((void *)j->last_pods);
    }
    free(h->jobs);
    memset(h, 0, sizeof(*h));
}

static uint64_t pod_hash(const dlb_pod_usage_t *p)
{
    uint64_t h = 14695981039346656037ULL;

    for (const char *c = p->name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    for (const char *c = p->type; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return h;
}

/* Whether a pod of p's name and type was already in the open-addressing set
 * (cap a power of two, more than the pods put in it), putting p there if not. */
static int pod_seen(const dlb_pod_usage_t **set, size_t cap, const dlb_pod_usage_t *p)
{
    for (size_t i = pod_hash(p) & (cap - 1);; i = (i + 1) & (cap - 1)) {
        if (!set[i]) {
            set[i] = p;
            return 0;
        }
        if (!strcmp(set[i]->name, p->name) && !strcmp(set[i]->type, p->type))
            return 1;
    }
}

/* Samples walked newest first, a pod met again skipped through a hash set:
 * neither a scan per pod (a job of 16,384 pods made that ~10^9 strcmp) nor a
 * sort by name (up to 100 jobs x 240 samples for every plan request). */
int dlb_hist_job_last_pods(const dlb_hist_job_t *j, dlb_hist_pod_t **out, size_t *cnt)
{
    dlb_hist_pod_t *pods = NULL;
    const dlb_pod_usage_t **set = NULL;
    size_t n = 0, cap;

    *out = NULL;
    *cnt = 0;
    for (size_t i = 0; i < j->samples_cnt; i++)
        n += j->samples[i].pods_cnt;
    if (!n)
        return 0;
    for (cap = 16; cap < 2 * n; cap <<= 1)
        ;
    if (!(set = calloc(cap, sizeof(*set))) || !(pods = malloc(n * sizeof(*pods)))) {
        free(set);
        return DLB_ERR_NOMEM;
    }
    for (size_t i = j->samples_cnt; i-- > 0;) {
        const dlb_runtime_sample_t *s = &j->samples[i];

        for (size_t k = 0; k < s->pods_cnt; k++) {
            const dlb_pod_usage_t *p = &s->pods[k];
            dlb_hist_pod_t *o;

            if (pod_seen(set, cap, p))
                continue;
            o = &pods[(*cnt)++];
            memcpy(o->name, p->name, sizeof(o->name));
            memcpy(o->type, p->type, sizeof(o->type));
            o->memory_used = p->memory_used;
        }
    }
    free(set);
    /* Most jobs keep their pods: give back what n reserved for renames. */
    if (*cnt < n) {
        dlb_hist_pod_t *shrunk = realloc(pods, *cnt * sizeof(*pods));
        if (shrunk)
            pods = shrunk;
    }
    *out = pods;
    return 0;
}

/* Total order of events: event time, then event id bytewise. PostgreSQL replays
 * in the same order (ORDER BY event_time_ms, event_id COLLATE "C"), so folding
 * live and rebuilding agree even when two events share a timestamp. */
static int event_cmp(int64_t t1, const char *id1, int64_t t2, const char *id2)
{
    if (t1 != t2)
        return t1 < t2 ? -1 : 1;
    return strcmp(id1, id2);
}

static void copy_str(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void swap_bytes(void *a, void *b, size_t n)
{
    unsigned char *x = a, *y = b, t;

    for (size_t i = 0; i < n; i++) {
        t = x[i];
        x[i] = y[i];
        y[i] = t;
    }
}

/* A newer event overwrites every section it carries; an older one (a late or
 * re-delivered event) only fills sections never seen, so applying the same
 * events again, in any order, never moves the state backwards. Sections own
 * heap parts (job_event v2): the state takes them from a deep copy of the
 * event, whose leftovers (and the sections they replace) are then freed. */
static int merge_job(dlb_job_state_t *st, const dlb_job_event_t *ev)
{
    dlb_job_event_t *job = &st->job, c;
    int first = job->event_id[0] == '\0';
    int cmp =
        first ? 1 : event_cmp(ev->event_time_ms, ev->event_id, job->event_time_ms, job->event_id);
    int newer = cmp > 0, err;

    if (cmp == 0)
        return 0;
    if ((err = dlb_job_event_copy(&c, ev)))
        return err;
    if (first || ev->event_time_ms < st->created_ms)
        st->created_ms = ev->event_time_ms;
    if (!job->job_uid[0])
        copy_str(job->job_uid, sizeof(job->job_uid), ev->job_uid);

#define DLB_MERGE(has, field)                                                                      \
    do {                                                                                           \
        if (c.has && (newer || !job->has)) {                                                       \
            swap_bytes(&job->field, &c.field, sizeof(job->field));                                 \
            job->has = 1;                                                                          \
        }                                                                                          \
    } while (0)
    DLB_MERGE(has_meta, meta);
    DLB_MERGE(has_state, state);
    DLB_MERGE(has_hyper_params, hyper_params);
    DLB_MERGE(has_dataset, dataset);
    DLB_MERGE(has_model, model);
    DLB_MERGE(has_exit_reason, exit_reason);
    DLB_MERGE(has_workflow, workflow);
    DLB_MERGE(has_job_type, job_type);
    DLB_MERGE(has_resource, resource);
    DLB_MERGE(has_customized_data, customized_data);
    DLB_MERGE(has_optimization, optimization);
#undef DLB_MERGE

    if (newer) {
        copy_str(job->event_id, sizeof(job->event_id), ev->event_id);
        job->event_time_ms = ev->event_time_ms;
    }
    dlb_job_event_clear(&c);
    return 0;
}

/* Keep the newest window_size samples, fewer when their pods add up to more
 * than DLB_WINDOW_PODS_MAX (never fewer than one). Every path that builds a
 * state folds through here, so they keep the same samples. */
static void trim_window(dlb_job_state_t *st, size_t window_size)
{
    size_t drop = st->window_cnt > window_size ? st->window_cnt - window_size : 0, pods = 0;

    for (size_t i = st->window_cnt; i-- > drop;) {
        pods += st->window[i].pods_cnt;
        if (pods > DLB_WINDOW_PODS_MAX && i + 1 < st->window_cnt) {
            drop = i + 1;
            break;
        }
    }
    if (!drop)
        return;
    for (size_t i = 0; i < drop; i++) {
        free(st->window[i].pods);
        free(st->window[i].pods_by_name);
    }
    memmove(st->window, st->window + drop, (st->window_cnt - drop) * sizeof(*st->window));
    st->window_cnt -= drop;
}

typedef struct pod_pos {
    const char *name;
    uint32_t pos;
} pod_pos_t;

static int pod_pos_cmp(const void *a, const void *b)
{
    const pod_pos_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* s->pods_by_name for a window sample (event.h): the optimizers look pods up
 * by name per pod and sample, which scanning made quadratic in the pods. */
static int index_pods(dlb_runtime_sample_t *s)
{
    pod_pos_t *tmp;

    s->pods_by_name = NULL;
    if (s->pods_cnt < 2)
        return 0;
    tmp = malloc(s->pods_cnt * sizeof(*tmp));
    s->pods_by_name = malloc(s->pods_cnt * sizeof(*s->pods_by_name));
    if (!tmp || !s->pods_by_name) {
        free(tmp);
        free(s->pods_by_name);
        s->pods_by_name = NULL;
        return DLB_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->pods_cnt; i++) {
        tmp[i].name = s->pods[i].name;
        tmp[i].pos = (uint32_t)i;
    }
    qsort(tmp, s->pods_cnt, sizeof(*tmp), pod_pos_cmp);
    for (size_t i = 0; i < s->pods_cnt; i++)
        s->pods_by_name[i] = tmp[i].pos;
    free(tmp);
    return 0;
}

static int apply_sample(dlb_job_state_t *st, const dlb_runtime_sample_t *s, int window_size)
{
    dlb_runtime_sample_t copy, *win;
    size_t pos, ws, drop;

    /* A window of 0 would make every runtime optimizer blind; keep at least one. */
    ws = window_size < 1 ? 1 : (size_t)window_size;
    for (size_t i = 0; i < st->window_cnt; i++)
        if (!strcmp(st->window[i].event_id, s->event_id))
            return 0;

    pos = st->window_cnt;
    while (pos > 0 && event_cmp(st->window[pos - 1].event_time_ms, st->window[pos - 1].event_id,
                                s->event_time_ms, s->event_id) > 0)
        pos--;
    /* Older than everything a full window keeps: it would be trimmed at once. */
    drop = st->window_cnt + 1 > ws ? st->window_cnt + 1 - ws : 0;
    if (pos < drop) {
        trim_window(st, ws);
        return 0;
    }

    copy = *s;
    copy.pods = NULL;
    copy.pods_by_name = NULL;
    if (s->pods_cnt > 0) {
        copy.pods = malloc(s->pods_cnt * sizeof(*copy.pods));
        if (!copy.pods)
            return DLB_ERR_NOMEM;
        memcpy(copy.pods, s->pods, s->pods_cnt * sizeof(*copy.pods));
    }
    if (index_pods(&copy) ||
        !(win = dlb_vec_insert((void **)&st->window, &st->window_cnt, pos, sizeof(*win)))) {
        free(copy.pods);
        free(copy.pods_by_name);
        return DLB_ERR_NOMEM;
    }
    *win = copy;
    trim_window(st, ws);
    return 0;
}

/* Index of the first pod whose name is >= name (pods are kept sorted by name, so
 * every path that builds a state lists them in the same order). */
static size_t pod_lower_bound(const dlb_job_state_t *st, const char *name)
{
    size_t lo = 0, hi = st->pods_cnt;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(st->pods[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const dlb_pod_status_t *dlb_job_state_pod(const dlb_job_state_t *st, const char *name)
{
    size_t i = pod_lower_bound(st, name);

    if (i < st->pods_cnt && !strcmp(st->pods[i].name, name))
        return &st->pods[i];
    return NULL;
}

/* ---- rebuild: pods appended and found by hash, sorted once at the end -------- */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* Slot of name in the index: the one holding it, or the empty one where it
 * would go. Slots hold a pod's position + 1, 0 being empty. */
static size_t index_slot(const dlb_job_state_t *st, const char *name)
{
    size_t mask = st->pod_index_cap - 1, i = (size_t)name_hash(name) & mask;

    while (st->pod_index[i] && strcmp(st->pods[st->pod_index[i] - 1].name, name))
        i = (i + 1) & mask;
    return i;
}

/* Keeps the index at most half full, so a probe stays short. */
static int index_fit(dlb_job_state_t *st, size_t pods)
{
    size_t cap = st->pod_index_cap;
    uint32_t *idx;

    if (cap && pods * 2 <= cap)
        return 0;
    if (!cap)
        cap = 64;
    while (cap < pods * 2)
        cap *= 2;
    if (!(idx = calloc(cap, sizeof(*idx))))
        return DLB_ERR_NOMEM;
    free(st->pod_index);
    st->pod_index = idx;
    st->pod_index_cap = cap;
    for (size_t i = 0; i < st->pods_cnt; i++)
        st->pod_index[index_slot(st, st->pods[i].name)] = (uint32_t)(i + 1);
    return 0;
}

int dlb_job_state_begin_rebuild(dlb_job_state_t *st)
{
    return index_fit(st, st->pods_cnt + 1);
}

static int pod_cmp(const void *a, const void *b)
{
    return strcmp(((const dlb_pod_status_t *)a)->name, ((const dlb_pod_status_t *)b)->name);
}

void dlb_job_state_end_rebuild(dlb_job_state_t *st)
{
    /* Names are unique, so the order is total and the same as sorted inserts give. */
    if (st->pods_cnt > 1)
        qsort(st->pods, st->pods_cnt, sizeof(*st->pods), pod_cmp);
    free(st->pod_index);
    st->pod_index = NULL;
    st->pod_index_cap = 0;
}

/* The pod named by a node event: found, or a new one made (in name order,
 * or at the end while rebuilding); NULL with *err set when none can be. */
static dlb_pod_status_t *pod_for(dlb_job_state_t *st, const char *name, int *err)
{
    dlb_pod_status_t *p;
    size_t i, slot = 0;

    *err = 0;
    if (st->pod_index) {
        slot = index_slot(st, name);
        if (st->pod_index[slot])
            return &st->pods[st->pod_index[slot] - 1];
        i = st->pods_cnt;
    } else {
        i = pod_lower_bound(st, name);
        if (i < st->pods_cnt && !strcmp(st->pods[i].name, name))
            return &st->pods[i];
    }
    if (st->pods_cnt >= DLB_JOB_PODS_MAX) {
        st->pods_refused++;
        return NULL;
    }
    /* Room doubles (dlb_vec_insert grows by one: a realloc per new
     * pod, which copies the whole array where realloc cannot grow in
     * place; under AddressSanitizer always). */
    if (st->pods_cap < st->pods_cnt)
        st->pods_cap = st->pods_cnt;
    if (dlb_vec_reserve((void **)&st->pods, &st->pods_cap, st->pods_cnt + 1, sizeof(*p))) {
        *err = DLB_ERR_NOMEM;
        return NULL;
    }
    p = &st->pods[i];
    memmove(p + 1, p, (st->pods_cnt - i) * sizeof(*p));
    memset(p, 0, sizeof(*p));
    st->pods_cnt++;
    copy_str(p->name, sizeof(p->name), name);
    if (st->pod_index) {
        st->pod_index[slot] = (uint32_t)st->pods_cnt;
        if (index_fit(st, st->pods_cnt + 1)) {
            /* The pod is in; only the index is gone: finish as a sorted insert would. */
            dlb_job_state_end_rebuild(st);
            p = (dlb_pod_status_t *)dlb_job_state_pod(st, name);
        }
    }
    return p;
}

int dlb_node_failure_kind(const char *kind)
{
    if (!strcmp(kind, "node_not_ready") || !strcmp(kind, "hardware_error"))
        return 2;
    return !strcmp(kind, "evicted") || !strcmp(kind, "preempted") || !strcmp(kind, "no_heartbeat");
}

int dlb_node_back_kind(const char *kind, const char *phase)
{
    if (!strcmp(kind, "deleted"))
        return 1;
    if (!strcmp(kind, "pod_phase"))
        return !strcmp(phase, "Running") || !strcmp(phase, "Succeeded");
    return !strcmp(kind, "node_phase") && !strcmp(phase, "Ready");
}

/* The newest failure and the newest back-or-gone event of a pod: maxima by
 * (time, id), the same whatever order events come in, a redelivery included. */
static void fold_failure(dlb_pod_status_t *p, const dlb_node_event_t *ev)
{
    const char *phase = ev->has_phase ? ev->phase : "";

    if (dlb_node_failure_kind(ev->kind) &&
        (!p->fail_event_id[0] ||
         event_cmp(ev->event_time_ms, ev->event_id, p->fail_time_ms, p->fail_event_id) > 0)) {
        copy_str(p->fail_kind, sizeof(p->fail_kind), ev->kind);
        copy_str(p->fail_event_id, sizeof(p->fail_event_id), ev->event_id);
        copy_str(p->fail_node, sizeof(p->fail_node),
                 ev->node_name[0] ? ev->node_name : p->node_name);
        p->fail_time_ms = ev->event_time_ms;
    }
    if (dlb_node_back_kind(ev->kind, phase) &&
        (!p->back_event_id[0] ||
         event_cmp(ev->event_time_ms, ev->event_id, p->back_time_ms, p->back_event_id) > 0)) {
        /* The word that says which: Running, Succeeded, Ready or deleted. */
        copy_str(p->back_kind, sizeof(p->back_kind),
                 strcmp(ev->kind, "deleted") ? phase : "deleted");
        copy_str(p->back_event_id, sizeof(p->back_event_id), ev->event_id);
        p->back_time_ms = ev->event_time_ms;
    }
}

static int apply_node(dlb_job_state_t *st, const dlb_node_event_t *ev)
{
    dlb_pod_status_t *p;
    int newer, oom, err;

    /* A node-level event (node_phase, node_not_ready without a pod) has no pod to fold into. */
    if (!ev->pod_name[0])
        return 0;
    if (!(p = pod_for(st, ev->pod_name, &err)))
        return err;
    if (!strcmp(p->last_event_id, ev->event_id) || !strcmp(p->last_oom_event_id, ev->event_id))
        return 0;

    newer = !p->last_event_id[0] ||
            event_cmp(ev->event_time_ms, ev->event_id, p->last_event_time_ms, p->last_event_id) > 0;
    oom = !strcmp(ev->kind, "oom_killed");
    if (oom) {
        /* Counted even when late: every distinct OOM is one more reason to grow memory. */
        p->oom_count++;
        if (newer || !p->last_oom_event_id[0])
            copy_str(p->last_oom_event_id, sizeof(p->last_oom_event_id), ev->event_id);
    }
    if (newer || !p->type[0]) {
        if (ev->pod_type[0]) {
            copy_str(p->type, sizeof(p->type), ev->pod_type);
            p->index = ev->pod_index;
        }
    }
    if (newer || !p->node_name[0])
        if (ev->node_name[0])
            copy_str(p->node_name, sizeof(p->node_name), ev->node_name);
    fold_failure(p, ev);
    if (!newer)
        return 0;
    copy_str(p->last_kind, sizeof(p->last_kind), ev->kind);
    if (ev->has_phase)
        copy_str(p->phase, sizeof(p->phase), ev->phase);
    if (ev->has_memory_requested)
        p->memory_requested = ev->memory_requested;
    p->last_event_time_ms = ev->event_time_ms;
    copy_str(p->last_event_id, sizeof(p->last_event_id), ev->event_id);
    return 0;
}

int dlb_job_state_apply(dlb_job_state_t *st, const dlb_event_t *ev, int window_size)
{
    switch (ev->type) {
    case DLB_EV_JOB:
        return merge_job(st, &ev->u.job);
    case DLB_EV_RUNTIME:
        /* The uid names the state even before (or without) a job event. */
        if (!st->job.job_uid[0])
            copy_str(st->job.job_uid, sizeof(st->job.job_uid), ev->u.rt.job_uid);
        return apply_sample(st, &ev->u.rt, window_size);
    case DLB_EV_NODE:
        if (!st->job.job_uid[0])
            copy_str(st->job.job_uid, sizeof(st->job.job_uid), ev->u.node.job_uid);
        return apply_node(st, &ev->u.node);
    default:
        /* Plan requests, plans and config matches are not part of a job's state. */
        return 0;
    }
}
