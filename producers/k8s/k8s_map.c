#include "k8s_map.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "vec.h"

/* Disruption reasons of the pod condition DisruptionTarget (Kubernetes 1.26+). */
static const struct {
    const char *reason;
    const char *kind;
} disruptions[] = {
    {"PreemptionByScheduler", "preempted"},     /* room made for a higher-priority pod */
    {"PreemptionByKubeScheduler", "preempted"}, /* the same, its 1.26 alpha name */
    {"EvictionByEvictionAPI", "evicted"},       /* kubectl drain, descheduler */
    {"DeletionByTaintManager", "evicted"},      /* NoExecute taint, e.g. node unreachable */
    {"TerminationByKubelet", "preempted"},      /* graceful node shutdown (a spot node going
                                                   away); node-pressure eviction sets
                                                   status.reason Evicted, checked first */
    {NULL, NULL},
};

/* Taints that announce a node is being reclaimed: GKE's spot/preemptible
 * shutdown and aws-node-termination-handler's spot interruption notice. */
static const char *const preempt_taints[] = {
    "cloud.google.com/impending-node-termination",
    "aws-node-termination-handler/spot-itn",
    NULL,
};

/* Reasons of core/v1 Events about pods that are node events. */
static const struct {
    const char *reason;
    const char *kind;
} event_reasons[] = {
    {"Preempted", "preempted"}, /* kube-scheduler: "Preempted by pod ... on node ..." */
    {"Evicted", "evicted"},     /* kubelet: node-pressure eviction */
    {NULL, NULL},
};

/* ---- small helpers -------------------------------------------------------- */

/* The value at a path of object keys, NULL-terminated; NULL when any is missing. */
static const cJSON *at(const cJSON *o, ...)
{
    va_list ap;
    const char *k;

    va_start(ap, o);
    while (o && (k = va_arg(ap, const char *)))
        o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    va_end(ap);
    return o;
}

/* The string value of key in o, or NULL. */
static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *str_or(const char *s, const char *def)
{
    return s ? s : def;
}

/* Copies src; @returns -1 when it does not fit (identifiers are never cut). */
static int copy_id(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);

    if (n >= size)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* Copies src, cut to fit (prose: reasons and messages). */
static void copy_text(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* 16 hex digits of the FNV-1a hash of a and b joined by a newline. */
static void hash2(const char *a, const char *b, char out[17])
{
    uint64_t h = fnv1a(14695981039346656037ULL, a);

    h = fnv1a(fnv1a(h, "\n"), b);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int dlb_k8s_time_ms(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int n = 0, ms = 0, sign, oh, om;
    const char *p;
    time_t t;

    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
        return -1;
    p = s + n;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        if (!digits)
            return -1;
        for (; digits < 3; digits++)
            ms *= 10;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    if ((t = timegm(&tm)) == (time_t)-1)
        return -1;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) == 2) {
        sign = *p == '+' ? 1 : -1;
        t -= sign * (oh * 3600 + om * 60);
        p += 1 + n;
    } else {
        return -1;
    }
    if (*p)
        return -1;
    *out = (int64_t)t * 1000 + ms;
    return 0;
}

int dlb_k8s_quantity(const char *s, double *out)
{
    /* resource.Quantity suffixes: binary, decimal, and the decimal fractions. */
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
        {"Pi", 0x1p50}, {"Ei", 0x1p60},    {"n", 1e-9},          {"u", 1e-6},
        {"m", 1e-3},    {"k", 1e3},        {"M", 1e6},           {"G", 1e9},
        {"T", 1e12},    {"P", 1e15},       {"E", 1e18},          {"", 1.0},
    };
    char *end;
    double v;

    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (!strcmp(end, units[i].suffix)) {
            *out = v * units[i].mult;
            return 0;
        }
    }
    return -1;
}

/* ms of an RFC 3339 string, or fallback. */
static int64_t time_or(const char *s, int64_t fallback)
{
    int64_t ms;
    return s && !dlb_k8s_time_ms(s, &ms) ? ms : fallback;
}

/* ---- output --------------------------------------------------------------- */

void dlb_k8s_out_reset(dlb_k8s_out_t *out)
{
    out->cnt = 0;
}

void dlb_k8s_out_free(dlb_k8s_out_t *out)
{
    free(out->ev);
    memset(out, 0, sizeof(*out));
}

/* Appends an event about pod with id "<pod uid>-<suffix>", kind and time,
 * unless out holds that id already (then *evp is NULL). */
static int add(dlb_k8s_out_t *out, const dlb_k8s_pod_t *pod, const char *kind, const char *suffix,
               int64_t time_ms, dlb_node_event_t **evp, char *errstr, size_t size)
{
    dlb_node_event_t *ev;
    char id[DLB_ID_MAX + 1];

    *evp = NULL;
    if ((size_t)snprintf(id, sizeof(id), "%s-%s", pod->uid, suffix) >= DLB_ID_MAX)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                          "pod %s/%s: event id \"%s-%s\" is longer than %d bytes", pod->ns,
                          pod->name, pod->uid, suffix, DLB_ID_MAX - 1);
    for (size_t i = 0; i < out->cnt; i++)
        if (!strcmp(out->ev[i].event_id, id))
            return 0;
    if (dlb_vec_reserve((void **)&out->ev, &out->cap, out->cnt + 1, sizeof(*out->ev)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    ev = &out->ev[out->cnt++];
    memset(ev, 0, sizeof(*ev));
    memcpy(ev->event_id, id, strlen(id) + 1);
    ev->event_time_ms = time_ms;
    memcpy(ev->job_uid, pod->job_uid, sizeof(ev->job_uid));
    copy_text(ev->kind, sizeof(ev->kind), kind);
    memcpy(ev->pod_name, pod->name, sizeof(ev->pod_name));
    memcpy(ev->pod_type, pod->type, sizeof(ev->pod_type));
    ev->pod_index = pod->index;
    memcpy(ev->node_name, pod->node, sizeof(ev->node_name));
    ev->has_memory_requested = pod->has_memory;
    ev->memory_requested = pod->memory;
    ev->has_cpu_requested = pod->has_cpu;
    ev->cpu_requested = pod->cpu;
    *evp = ev;
    return 0;
}

static void set_phase(dlb_node_event_t *ev, const char *phase)
{
    if (phase && *phase) {
        ev->has_phase = 1;
        copy_text(ev->phase, sizeof(ev->phase), phase);
    }
}

/* ---- pods ----------------------------------------------------------------- */

static const char *pod_type(const char *label)
{
    static const char *const known[] = {"ps", "worker", "chief", "evaluator", NULL};

    if (!label)
        return "";
    /* DLRover's (TensorFlow's) "master" replica is the chief. */
    if (!strcmp(label, "master"))
        return "chief";
    for (const char *const *k = known; *k; k++)
        if (!strcmp(label, *k))
            return *k;
    return "";
}

static const char *controller_uid(const cJSON *meta)
{
    const cJSON *ref;

    cJSON_ArrayForEach(ref, at(meta, "ownerReferences", NULL))
    {
        if (cJSON_IsTrue(at(ref, "controller", NULL)) && str(ref, "uid"))
            return str(ref, "uid");
    }
    return NULL;
}

/* Sums one resource request over the containers; @returns 1 if any had it. */
static int sum_requests(const cJSON *spec, const char *resource, double *sum)
{
    const cJSON *c;
    double v;
    int any = 0;

    *sum = 0;
    cJSON_ArrayForEach(c, at(spec, "containers", NULL))
    {
        if (!dlb_k8s_quantity(str(at(c, "resources", "requests", NULL), resource), &v)) {
            *sum += v;
            any = 1;
        }
    }
    return any;
}

int dlb_k8s_pod_read(const cJSON *obj, const dlb_k8s_labels_t *lb, dlb_k8s_pod_t *pod, char *errstr,
                     size_t size)
{
    const cJSON *meta = at(obj, "metadata", NULL), *labels = at(meta, "labels", NULL),
                *spec = at(obj, "spec", NULL);
    const char *uid = str(meta, "uid"), *name = str(meta, "name"), *job = str(labels, lb->job);
    const char *index = str(labels, lb->index), *f = NULL, *v = NULL;
    char *end;
    long idx;
    double sum;

    memset(pod, 0, sizeof(*pod));
    if (!uid || !*uid || !name || !*name)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "no metadata.%s", !name ? "name" : "uid");
    if (!job || !*job)
        return dlb_seterr(errstr, size, DLB_ERR_NOTFOUND, "no label \"%s\"", lb->job);
    if (lb->job_uid_owner && !(job = controller_uid(meta)))
        return dlb_seterr(errstr, size, DLB_ERR_NOTFOUND,
                          "no controller in metadata.ownerReferences (k8s.job.uid=owner)");
    if (copy_id(pod->uid, sizeof(pod->uid), v = uid))
        f = "metadata.uid";
    else if (copy_id(pod->name, sizeof(pod->name), v = name))
        f = "metadata.name";
    else if (copy_id(pod->ns, sizeof(pod->ns), v = str_or(str(meta, "namespace"), "")))
        f = "metadata.namespace";
    else if (copy_id(pod->job_uid, sizeof(pod->job_uid), v = job))
        f = "job uid";
    else if (copy_id(pod->node, sizeof(pod->node), v = str_or(str(spec, "nodeName"), "")))
        f = "spec.nodeName";
    if (f)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "%s \"%.40s...\" is longer than %d bytes",
                          f, v, DLB_ID_MAX - 1);
    copy_text(pod->type, sizeof(pod->type), pod_type(str(labels, lb->type)));
    if (index && (idx = strtol(index, &end, 10)) >= 0 && idx <= INT32_MAX && end != index && !*end)
        pod->index = (int32_t)idx;
    copy_text(pod->phase, sizeof(pod->phase), str(at(obj, "status", NULL), "phase"));
    if ((pod->has_memory = sum_requests(spec, "memory", &sum)))
        pod->memory = (int64_t)llround(sum);
    pod->has_cpu = sum_requests(spec, "cpu", &pod->cpu);
    return 0;
}

/* The condition of type in status.conditions with status "True", or NULL. */
static const cJSON *condition(const cJSON *status, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, at(status, "conditions", NULL))
    {
        const char *t = str(c, "type"), *s = str(c, "status");
        if (t && s && !strcmp(t, type) && !strcmp(s, "True"))
            return c;
    }
    return NULL;
}

/* One OOM kill per container instance: the id hashes the container's name and
 * containerID, so the same kill seen first in state.terminated and after the
 * restart in lastState.terminated is one event. */
static int map_oom(const cJSON *status, const dlb_k8s_pod_t *pod, int64_t now_ms,
                   dlb_k8s_out_t *out, char *errstr, size_t size)
{
    static const char *const states[] = {"lastState", "state"};
    const cJSON *cs;
    int err;

    cJSON_ArrayForEach(cs, at(status, "containerStatuses", NULL))
    {
        for (size_t i = 0; i < 2; i++) {
            const cJSON *t = at(cs, states[i], "terminated", NULL);
            const char *reason = str(t, "reason"), *cname = str_or(str(cs, "name"), "");
            const char *instance = str(t, "containerID");
            const cJSON *code = at(t, "exitCode", NULL), *restarts = at(cs, "restartCount", NULL);
            dlb_node_event_t *ev;
            char h[17], suffix[32];

            if (!reason || strcmp(reason, "OOMKilled"))
                continue;
            if (!instance || !*instance)
                instance = str_or(str(t, "finishedAt"), str_or(str(t, "startedAt"), ""));
            hash2(cname, instance, h);
            snprintf(suffix, sizeof(suffix), "oom-%s", h);
            if ((err = add(out, pod, "oom_killed", suffix, time_or(str(t, "finishedAt"), now_ms),
                           &ev, errstr, size)))
                return err;
            if (!ev)
                continue;
            copy_text(ev->reason, sizeof(ev->reason), reason);
            snprintf(ev->message, sizeof(ev->message), "container %s: exit code %d, restarts %d",
                     cname, cJSON_IsNumber(code) ? code->valueint : -1,
                     cJSON_IsNumber(restarts) ? restarts->valueint : 0);
            set_phase(ev, pod->phase);
        }
    }
    return 0;
}

/* Evicted (status.reason, the kubelet's node-pressure eviction) or a
 * DisruptionTarget condition: evicted or preempted. */
static int map_disruption(const cJSON *status, const dlb_k8s_pod_t *pod, int64_t now_ms,
                          dlb_k8s_out_t *out, char *errstr, size_t size)
{
    const cJSON *dt = condition(status, "DisruptionTarget");
    const char *sreason = str(status, "reason"), *kind = NULL, *reason = NULL, *msg = NULL;
    dlb_node_event_t *ev;
    int err;

    if (sreason && !strcmp(sreason, "Evicted")) {
        kind = "evicted";
        reason = sreason;
        msg = str(status, "message");
    } else if (dt) {
        reason = str(dt, "reason");
        for (size_t i = 0; reason && disruptions[i].reason; i++)
            if (!strcmp(reason, disruptions[i].reason))
                kind = disruptions[i].kind;
        msg = str(dt, "message");
    }
    if (!kind)
        return 0;
    if ((err = add(out, pod, kind, kind, time_or(str(dt, "lastTransitionTime"), now_ms), &ev,
                   errstr, size)) ||
        !ev)
        return err;
    copy_text(ev->reason, sizeof(ev->reason), reason);
    copy_text(ev->message, sizeof(ev->message), msg);
    set_phase(ev, pod->phase);
    return 0;
}

/* The newest time of a container state field: state.running.startedAt for
 * Running, state.terminated.finishedAt for a finished pod. */
static int64_t containers_time(const cJSON *status, const char *state, const char *field,
                               int64_t fallback)
{
    const cJSON *cs;
    int64_t best = -1, ms;

    cJSON_ArrayForEach(cs, at(status, "containerStatuses", NULL))
    {
        if (!dlb_k8s_time_ms(str(at(cs, "state", state, NULL), field), &ms) && ms > best)
            best = ms;
    }
    return best >= 0 ? best : fallback;
}

/* The first container's waiting or terminated reason and message. */
static void container_reason(const cJSON *status, const char **reason, const char **msg)
{
    static const char *const states[] = {"waiting", "terminated"};
    const cJSON *cs;

    cJSON_ArrayForEach(cs, at(status, "containerStatuses", NULL))
    {
        for (size_t i = 0; i < 2; i++) {
            const cJSON *s = at(cs, "state", states[i], NULL);
            if (str(s, "reason")) {
                *reason = str(s, "reason");
                *msg = str(s, "message");
                return;
            }
        }
    }
}

static int map_phase(const cJSON *obj, const dlb_k8s_pod_t *pod, int64_t now_ms, dlb_k8s_out_t *out,
                     char *errstr, size_t size)
{
    const cJSON *status = at(obj, "status", NULL);
    const char *reason = str(status, "reason"), *msg = str(status, "message");
    dlb_node_event_t *ev;
    char suffix[48];
    int64_t t = now_ms;
    int err;

    if (!pod->phase[0])
        return 0;
    if (!strcmp(pod->phase, "Pending"))
        t = time_or(str(at(obj, "metadata", NULL), "creationTimestamp"), now_ms);
    else if (!strcmp(pod->phase, "Running"))
        t = containers_time(status, "running", "startedAt",
                            time_or(str(status, "startTime"), now_ms));
    else if (!strcmp(pod->phase, "Succeeded") || !strcmp(pod->phase, "Failed"))
        t = containers_time(status, "terminated", "finishedAt", now_ms);
    snprintf(suffix, sizeof(suffix), "phase-%s", pod->phase);
    if ((err = add(out, pod, "pod_phase", suffix, t, &ev, errstr, size)) || !ev)
        return err;
    if (!reason)
        container_reason(status, &reason, &msg);
    set_phase(ev, pod->phase);
    copy_text(ev->reason, sizeof(ev->reason), reason);
    copy_text(ev->message, sizeof(ev->message), msg);
    return 0;
}

static int map_deleted(const dlb_k8s_pod_t *pod, int64_t time_ms, const char *msg,
                       dlb_k8s_out_t *out, char *errstr, size_t size)
{
    dlb_node_event_t *ev;
    int err;

    if ((err = add(out, pod, "deleted", "deleted", time_ms, &ev, errstr, size)) || !ev)
        return err;
    set_phase(ev, pod->phase);
    copy_text(ev->reason, sizeof(ev->reason), "Deleted");
    copy_text(ev->message, sizeof(ev->message), msg);
    return 0;
}

int dlb_k8s_map_pod(const cJSON *obj, const dlb_k8s_pod_t *pod, int deleted, int64_t now_ms,
                    dlb_k8s_out_t *out, char *errstr, size_t size)
{
    const cJSON *status = at(obj, "status", NULL);
    int err;

    if ((err = map_oom(status, pod, now_ms, out, errstr, size)) ||
        (err = map_disruption(status, pod, now_ms, out, errstr, size)) ||
        (err = map_phase(obj, pod, now_ms, out, errstr, size)))
        return err;
    if (deleted)
        return map_deleted(pod,
                           time_or(str(at(obj, "metadata", NULL), "deletionTimestamp"), now_ms),
                           "pod deleted", out, errstr, size);
    return 0;
}

int dlb_k8s_map_pod_gone(const dlb_k8s_pod_t *pod, int64_t now_ms, dlb_k8s_out_t *out, char *errstr,
                         size_t size)
{
    return map_deleted(pod, now_ms, "pod missing from a relist: deleted while the watch was down",
                       out, errstr, size);
}

/* ---- nodes ---------------------------------------------------------------- */

int dlb_k8s_node_read(const cJSON *obj, dlb_k8s_node_t *node, char *errstr, size_t size)
{
    const char *name = str(at(obj, "metadata", NULL), "name");
    const cJSON *c, *t;

    memset(node, 0, sizeof(*node));
    node->ready = -1;
    if (!name || !*name)
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "no metadata.name");
    if (copy_id(node->name, sizeof(node->name), name))
        return dlb_seterr(errstr, size, DLB_ERR_INVALID, "metadata.name is longer than %d bytes",
                          DLB_ID_MAX - 1);
    cJSON_ArrayForEach(c, at(obj, "status", "conditions", NULL))
    {
        const char *type = str(c, "type"), *s = str(c, "status");
        if (!type || strcmp(type, "Ready") || !s)
            continue;
        node->ready = !strcmp(s, "True");
        copy_text(node->since, sizeof(node->since), str(c, "lastTransitionTime"));
        copy_text(node->reason, sizeof(node->reason), str(c, "reason"));
        copy_text(node->message, sizeof(node->message), str(c, "message"));
    }
    cJSON_ArrayForEach(t, at(obj, "spec", "taints", NULL))
    {
        const char *key = str(t, "key");
        for (const char *const *p = preempt_taints; key && *p; p++) {
            if (!strcmp(key, *p) && !node->preempt_taint[0]) {
                copy_text(node->preempt_taint, sizeof(node->preempt_taint), key);
                copy_text(node->taint_added, sizeof(node->taint_added), str(t, "timeAdded"));
            }
        }
    }
    return 0;
}

int dlb_k8s_node_changed(const dlb_k8s_node_t *prev, const dlb_k8s_node_t *cur)
{
    return !prev || prev->ready != cur->ready || strcmp(prev->since, cur->since) ||
           strcmp(prev->preempt_taint, cur->preempt_taint);
}

static int map_node_pod(const dlb_k8s_node_t *prev, const dlb_k8s_node_t *cur,
                        const dlb_k8s_pod_t *pod, int64_t now_ms, dlb_k8s_out_t *out, char *errstr,
                        size_t size)
{
    int64_t since = time_or(cur->since, now_ms);
    dlb_node_event_t *ev;
    char h[17], suffix[48];
    int err;

    hash2(cur->name, cur->since, h);
    if (cur->ready == 0) {
        snprintf(suffix, sizeof(suffix), "notready-%s", h);
        if ((err = add(out, pod, "node_not_ready", suffix, since, &ev, errstr, size)))
            return err;
    } else if (cur->ready == 1 && prev && prev->ready == 0) {
        snprintf(suffix, sizeof(suffix), "ready-%s", h);
        if ((err = add(out, pod, "node_phase", suffix, since, &ev, errstr, size)))
            return err;
    } else {
        ev = NULL;
    }
    if (ev) {
        set_phase(ev, cur->ready ? "Ready" : "NotReady");
        copy_text(ev->reason, sizeof(ev->reason), cur->reason);
        copy_text(ev->message, sizeof(ev->message), cur->message);
    }
    if (cur->preempt_taint[0]) {
        if ((err = add(out, pod, "preempted", "preempted", time_or(cur->taint_added, now_ms), &ev,
                       errstr, size)))
            return err;
        if (ev) {
            set_phase(ev, pod->phase);
            copy_text(ev->reason, sizeof(ev->reason), "NodePreempted");
            snprintf(ev->message, sizeof(ev->message), "node %s has taint %s", cur->name,
                     cur->preempt_taint);
        }
    }
    return 0;
}

int dlb_k8s_map_node(const dlb_k8s_node_t *prev, const dlb_k8s_node_t *cur,
                     const dlb_k8s_pod_t *const *pods, size_t pods_cnt, int64_t now_ms,
                     dlb_k8s_out_t *out, char *errstr, size_t size)
{
    int err;

    for (size_t i = 0; i < pods_cnt; i++) {
        const dlb_k8s_pod_t *p = pods[i];
        if (strcmp(p->node, cur->name) || !strcmp(p->phase, "Succeeded") ||
            !strcmp(p->phase, "Failed"))
            continue;
        if ((err = map_node_pod(prev, cur, p, now_ms, out, errstr, size)))
            return err;
    }
    return 0;
}

/* ---- events --------------------------------------------------------------- */

const char *dlb_k8s_event_pod_uid(const cJSON *obj)
{
    const cJSON *io = at(obj, "involvedObject", NULL);
    const char *kind = str(io, "kind"), *uid = str(io, "uid");

    return kind && !strcmp(kind, "Pod") && uid && *uid ? uid : NULL;
}

int dlb_k8s_map_event(const cJSON *obj, const dlb_k8s_pod_t *pod, int64_t now_ms,
                      dlb_k8s_out_t *out, char *errstr, size_t size)
{
    const char *reason = str(obj, "reason"), *kind = NULL;
    const char *when = str(obj, "lastTimestamp");
    dlb_node_event_t *ev;
    int err;

    for (size_t i = 0; reason && event_reasons[i].reason; i++)
        if (!strcmp(reason, event_reasons[i].reason))
            kind = event_reasons[i].kind;
    if (!kind)
        return 0;
    if (!when)
        when = str(obj, "eventTime");
    if (!when)
        when = str(obj, "firstTimestamp");
    if (!when)
        when = str(at(obj, "metadata", NULL), "creationTimestamp");
    if ((err = add(out, pod, kind, kind, time_or(when, now_ms), &ev, errstr, size)) || !ev)
        return err;
    set_phase(ev, pod->phase);
    copy_text(ev->reason, sizeof(ev->reason), reason);
    copy_text(ev->message, sizeof(ev->message), str(obj, "message"));
    return 0;
}
