#include "k8s_monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "clock.h"
#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "k8s_client.h"
#include "k8s_config.h"
#include "k8s_map.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"
#include "vec.h"

/* Items per list page: the API server's own suggestion for clients that
 * page (client-go's pager uses 500). */
#define LIST_LIMIT "500"
/* A watch's transfer may run this much longer than its timeoutSeconds
 * before curl gives up on a server that neither ends nor sends. */
#define WATCH_MARGIN_S 30
#define LIST_TIMEOUT_S 120
/* Warnings about pods that are not job pods: once per pod, for this many. */
#define WARNED_MAX 4096

enum { R_PODS, R_NODES, R_EVENTS, R__CNT };

typedef struct mon mon_t;

typedef struct watch {
    mon_t *m;
    int res;          /* R_* */
    const char *kind; /* "pods", for log lines */
    char path[600];
    char rv[128]; /* where the watch resumes; "" until listed */
    char *cont;   /* continue token of a paged list, or NULL */
    int listing;  /* the next request is a list (page) */
    int listed;   /* a first list completed */
    int relist;   /* the watch asked for a relist (ERROR 410) */
    unsigned gen; /* list generation: objects not seen in it are gone */
    dlb_k8s_req_t *req;
    int64_t start_at_ms; /* backoff: not before this */
    int backoff_ms;
    int64_t line_no;
} watch_t;

typedef struct pod_ent {
    dlb_k8s_pod_t pod;
    unsigned gen;
    char **ids; /* node event ids produced for this pod */
    size_t ids_cnt, ids_cap;
} pod_ent_t;

typedef struct node_ent {
    dlb_k8s_node_t node;
    unsigned gen;
    int seen; /* node holds a state seen before */
} node_ent_t;

struct mon {
    const dlb_conf_t *conf;
    volatile sig_atomic_t *stop;
    dlb_k8s_stats_t *st;
    dlb_k8s_config_t cfg;
    dlb_k8s_labels_t labels;
    const char *selector;
    rd_kafka_t *producer;
    dlb_catalog_t *cat;
    char topic[256];
    CURLM *multi;
    watch_t w[R__CNT];
    pod_ent_t *pods;
    size_t pods_cnt, pods_cap;
    node_ent_t *nodes;
    size_t nodes_cnt, nodes_cap;
    char **warned; /* uids of non-job pods already warned about */
    size_t warned_cnt;
    dlb_k8s_out_t out;
    int fatal;           /* out of memory, or the producer failed for good: stop */
    int fatal_err;       /* the error of that (DLB_ERR_NOMEM, DLB_ERR_FATAL) */
    char fatal_why[768]; /* and its message */
    /* The stats as counters: each loop round adds what changed since the
     * last (st is what the process's last log line reports). */
    dlb_k8s_stats_t published;
    dlb_series_t *m_objects, *m_events, *m_skipped, *m_relists, *m_reconnects, *m_errors;
    int kafka_answered;  /* the broker answered once (kafka_probe) */
    int64_t probe_at_ms; /* when kafka_probe asks next */
};

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *get_str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void nomem(mon_t *m)
{
    dlb_err("out of memory; stopping");
    m->fatal = 1;
    m->fatal_err = DLB_ERR_NOMEM;
    snprintf(m->fatal_why, sizeof(m->fatal_why), "out of memory");
}

/* The producer failed for good: no retry delivers anything, so the monitor
 * stops (non-zero exit) and a restart lists everything again. @returns 1
 * when it did. */
static int kafka_failed(mon_t *m)
{
    if (m->fatal || !dlb_kafka_fatal(m->producer, m->fatal_why, sizeof(m->fatal_why)))
        return m->fatal;
    m->fatal = 1;
    m->fatal_err = DLB_ERR_FATAL;
    return 1;
}

/* ---- what the monitor remembers -------------------------------------------- */

static pod_ent_t *pod_find(mon_t *m, const char *uid)
{
    for (size_t i = 0; i < m->pods_cnt; i++)
        if (!strcmp(m->pods[i].pod.uid, uid))
            return &m->pods[i];
    return NULL;
}

static pod_ent_t *pod_add(mon_t *m, const dlb_k8s_pod_t *pod)
{
    pod_ent_t *e;

    if (dlb_vec_reserve((void **)&m->pods, &m->pods_cap, m->pods_cnt + 1, sizeof(*m->pods)))
        return NULL;
    e = &m->pods[m->pods_cnt++];
    memset(e, 0, sizeof(*e));
    e->pod = *pod;
    return e;
}

/* Forgetting a deleted pod forgets its ids too: no later object names it. */
static void pod_remove(mon_t *m, pod_ent_t *e)
{
    for (size_t i = 0; i < e->ids_cnt; i++)
        free(e->ids[i]);
    free(e->ids);
    *e = m->pods[--m->pods_cnt];
}

static int pod_has_id(const pod_ent_t *e, const char *id)
{
    for (size_t i = 0; i < e->ids_cnt; i++)
        if (!strcmp(e->ids[i], id))
            return 1;
    return 0;
}

static int pod_add_id(pod_ent_t *e, const char *id)
{
    char *s;

    if (dlb_vec_reserve((void **)&e->ids, &e->ids_cap, e->ids_cnt + 1, sizeof(*e->ids)) ||
        !(s = strdup(id)))
        return -1;
    e->ids[e->ids_cnt++] = s;
    return 0;
}

static node_ent_t *node_find(mon_t *m, const char *name)
{
    for (size_t i = 0; i < m->nodes_cnt; i++)
        if (!strcmp(m->nodes[i].node.name, name))
            return &m->nodes[i];
    return NULL;
}

static node_ent_t *node_add(mon_t *m, const char *name)
{
    node_ent_t *e;

    if (dlb_vec_reserve((void **)&m->nodes, &m->nodes_cap, m->nodes_cnt + 1, sizeof(*m->nodes)))
        return NULL;
    e = &m->nodes[m->nodes_cnt++];
    memset(e, 0, sizeof(*e));
    snprintf(e->node.name, sizeof(e->node.name), "%s", name);
    return e;
}

/* ---- producing ------------------------------------------------------------- */

/* Produces one node event, waiting out a full queue (the watch waits too:
 * the API server buffers). @returns 0, or -1 when stopped before. */
static int produce(mon_t *m, const dlb_node_event_t *ev)
{
    dlb_event_t e = {.type = DLB_EV_NODE};
    char sub[512];
    void *buf = NULL;
    size_t len = 0;
    int err, warned = 0;

    e.u.node = *ev;
    if (dlb_event_validate(&e, sub, sizeof(sub)) ||
        dlb_codec_encode(m->cat, &e, &buf, &len, sub, sizeof(sub))) {
        dlb_err("node event %s: %s; event dropped", ev->event_id, sub);
        m->st->skipped++;
        return 0;
    }
    while (
        (err = dlb_kafka_produce(m->producer, m->topic, ev->job_uid, buf, len, sub, sizeof(sub))) &&
        !*m->stop && !kafka_failed(m)) {
        if (!warned++)
            dlb_warn("node event %s to %s: %s; retrying every 100 ms, the watch waits",
                     ev->event_id, m->topic, sub);
        dlb_metrics_beat(); /* waiting out Kafka is not being stuck */
        rd_kafka_poll(m->producer, 100);
    }
    free(buf);
    return err ? -1 : 0;
}

/* Produces the events of out about e's pod that were not produced before. */
static void emit(mon_t *m, pod_ent_t *e)
{
    for (size_t i = 0; i < m->out.cnt && !m->fatal; i++) {
        const dlb_node_event_t *ev = &m->out.ev[i];
        if (pod_has_id(e, ev->event_id))
            continue;
        if (produce(m, ev))
            return;
        if (pod_add_id(e, ev->event_id)) {
            nomem(m);
            return;
        }
        m->st->events++;
        dlb_info("%s: %s pod %s/%s job %s%s%s%s%s", ev->event_id, ev->kind, e->pod.ns, ev->pod_name,
                 ev->job_uid, ev->node_name[0] ? " node " : "", ev->node_name,
                 ev->reason[0] ? " reason " : "", ev->reason);
    }
}

static void map_failed(mon_t *m, const char *where, int err, const char *sub)
{
    if (err == DLB_ERR_NOMEM) {
        nomem(m);
        return;
    }
    dlb_warn("%s: %s; object skipped, the watch goes on", where, sub);
    m->st->skipped++;
}

/* ---- objects --------------------------------------------------------------- */

static void warn_not_job(mon_t *m, const char *where, const cJSON *obj, const char *why)
{
    const cJSON *meta = get(obj, "metadata");
    const char *uid = get_str(meta, "uid"), *ns = get_str(meta, "namespace");
    const char *name = get_str(meta, "name");
    char *s;

    m->st->skipped++;
    for (size_t i = 0; uid && i < m->warned_cnt; i++)
        if (!strcmp(m->warned[i], uid))
            return;
    if (uid && m->warned_cnt < WARNED_MAX && (s = strdup(uid))) {
        char **p = dlb_vec_push((void **)&m->warned, &m->warned_cnt, sizeof(*p));
        if (p)
            *p = s;
        else
            free(s);
    }
    dlb_warn("%s: pod %s/%s: %s: not a job pod; skipped (k8s.selector should "
             "leave it out)",
             where, ns ? ns : "", name ? name : "?", why);
}

static void on_pod(mon_t *m, const cJSON *obj, int deleted, const char *where)
{
    dlb_k8s_pod_t pod;
    pod_ent_t *e;
    char sub[512];
    int err;

    if ((err = dlb_k8s_pod_read(obj, &m->labels, &pod, sub, sizeof(sub)))) {
        if (err == DLB_ERR_NOTFOUND)
            warn_not_job(m, where, obj, sub);
        else
            map_failed(m, where, err, sub);
        return;
    }
    if (!(e = pod_find(m, pod.uid)) && !(e = pod_add(m, &pod))) {
        nomem(m);
        return;
    }
    e->pod = pod;
    e->gen = m->w[R_PODS].gen;
    dlb_k8s_out_reset(&m->out);
    if ((err = dlb_k8s_map_pod(obj, &e->pod, deleted, dlb_clock_wall_ms(), &m->out, sub,
                               sizeof(sub))))
        map_failed(m, where, err, sub);
    else
        emit(m, e);
    if (deleted)
        pod_remove(m, e);
}

static void on_node(mon_t *m, const cJSON *obj, int deleted, const char *where)
{
    dlb_k8s_node_t cur, prev;
    const dlb_k8s_node_t *before;
    node_ent_t *e;
    char sub[512];
    int err;

    if ((err = dlb_k8s_node_read(obj, &cur, sub, sizeof(sub)))) {
        map_failed(m, where, err, sub);
        return;
    }
    e = node_find(m, cur.name);
    if (deleted) {
        /* its pods are deleted too, and say so themselves */
        if (e)
            *e = m->nodes[--m->nodes_cnt];
        return;
    }
    if (!e && !(e = node_add(m, cur.name))) {
        nomem(m);
        return;
    }
    prev = e->node;
    before = e->seen ? &prev : NULL;
    e->node = cur;
    e->seen = 1;
    e->gen = m->w[R_NODES].gen;
    if (!dlb_k8s_node_changed(before, &cur))
        return;
    for (size_t i = 0; i < m->pods_cnt && !m->fatal; i++) {
        const dlb_k8s_pod_t *p = &m->pods[i].pod;
        dlb_k8s_out_reset(&m->out);
        if ((err = dlb_k8s_map_node(before, &cur, &p, 1, dlb_clock_wall_ms(), &m->out, sub,
                                    sizeof(sub))))
            map_failed(m, where, err, sub);
        else
            emit(m, &m->pods[i]);
    }
}

static void on_event(mon_t *m, const cJSON *obj, int deleted, const char *where)
{
    const char *uid = dlb_k8s_event_pod_uid(obj);
    pod_ent_t *e;
    char sub[512];
    int err;

    /* An Event's deletion is its expiry (1 h by default), not news. */
    if (deleted || !uid || !(e = pod_find(m, uid)))
        return;
    dlb_k8s_out_reset(&m->out);
    if ((err = dlb_k8s_map_event(obj, &e->pod, dlb_clock_wall_ms(), &m->out, sub, sizeof(sub))))
        map_failed(m, where, err, sub);
    else
        emit(m, e);
}

static void on_object(watch_t *w, const cJSON *obj, int deleted, const char *where)
{
    static void (*const handlers[R__CNT])(mon_t *, const cJSON *, int,
                                          const char *) = {on_pod, on_node, on_event};

    w->m->st->objects++;
    handlers[w->res](w->m, obj, deleted, where);
}

/* ---- requests -------------------------------------------------------------- */

static void set_rv(watch_t *w, const cJSON *obj, const char *where)
{
    const char *rv = get_str(get(obj, "metadata"), "resourceVersion");

    if (!rv || !*rv)
        return;
    if (strlen(rv) >= sizeof(w->rv)) {
        dlb_warn("%s: resourceVersion longer than %zu bytes; not kept, the watch "
                 "resumes from the one before",
                 where, sizeof(w->rv) - 1);
        return;
    }
    memcpy(w->rv, rv, strlen(rv) + 1);
}

/* One line of a watch: {"type": ..., "object": {...}}. */
static int on_line(const char *line, size_t len, void *opaque)
{
    watch_t *w = opaque;
    mon_t *m = w->m;
    cJSON *j = cJSON_ParseWithLength(line, len);
    const cJSON *obj = get(j, "object");
    const char *type = get_str(j, "type");
    char where[160];
    int end = 0;

    snprintf(where, sizeof(where), "%s watch line %lld", w->kind, (long long)++w->line_no);
    if (!j || !type || !cJSON_IsObject(obj)) {
        dlb_warn("%s: %s (%.60s%s); line skipped, the watch goes on", where,
                 !j ? "not JSON" : "no \"type\" and \"object\"", line, len > 60 ? "..." : "");
        m->st->skipped++;
    } else if (!strcmp(type, "ERROR")) {
        const cJSON *code = get(obj, "code");
        const char *msg = get_str(obj, "message");
        if (cJSON_IsNumber(code) && code->valueint == 410) {
            dlb_info("%s: 410 Gone (%s); relisting %s", where, msg ? msg : "", w->kind);
            w->relist = 1;
        } else {
            dlb_warn("%s: watch error %d (%s); reconnecting", where,
                     cJSON_IsNumber(code) ? code->valueint : 0, msg ? msg : "");
        }
        end = 1;
    } else if (!strcmp(type, "BOOKMARK")) {
        set_rv(w, obj, where);
    } else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        on_object(w, obj, !strcmp(type, "DELETED"), where);
        set_rv(w, obj, where);
    } else {
        dlb_warn("%s: unknown event type \"%.32s\"; line skipped, the watch goes on", where, type);
        m->st->skipped++;
    }
    cJSON_Delete(j);
    return end || m->fatal || *m->stop;
}

static void backoff(watch_t *w, const char *what, const char *why)
{
    const dlb_k8s_conf_t *k = &w->m->conf->k8s;

    if (w->backoff_ms <= 0)
        w->backoff_ms = k->backoff_ms > 0 ? k->backoff_ms : 1;
    dlb_warn("%s: %s; retrying in %d ms", what, why, w->backoff_ms);
    w->m->st->reconnects++;
    w->start_at_ms = dlb_clock_mono_ms() + w->backoff_ms;
    w->backoff_ms = w->backoff_ms > k->backoff_max_ms / 2 ? k->backoff_max_ms : w->backoff_ms * 2;
}

static void start(watch_t *w)
{
    mon_t *m = w->m;
    const dlb_k8s_conf_t *k = &m->conf->k8s;
    char timeout[16], errstr[512], what[64];
    const char *sel = w->res == R_PODS ? m->selector : NULL;
    /* only Events about pods: the API server filters by this field */
    const char *field = w->res == R_EVENTS ? "involvedObject.kind=Pod" : NULL;
    int err;

    snprintf(timeout, sizeof(timeout), "%d", k->watch_timeout_s);
    if (w->listing) {
        const char *params[] = {"labelSelector", sel,        "fieldSelector", field, "limit",
                                LIST_LIMIT,      "continue", w->cont,         NULL};
        if (!w->cont)
            w->gen++;
        err = dlb_k8s_req_new(&m->cfg, w->path, params, LIST_TIMEOUT_S, NULL, NULL, &w->req, errstr,
                              sizeof(errstr));
    } else {
        const char *params[] = {"watch",
                                "1",
                                "resourceVersion",
                                w->rv,
                                "labelSelector",
                                sel,
                                "fieldSelector",
                                field,
                                "timeoutSeconds",
                                timeout,
                                "allowWatchBookmarks",
                                "true",
                                NULL};
        w->line_no = 0;
        err = dlb_k8s_req_new(&m->cfg, w->path, params, k->watch_timeout_s + WATCH_MARGIN_S,
                              on_line, w, &w->req, errstr, sizeof(errstr));
    }
    snprintf(what, sizeof(what), "%s %s", w->kind, w->listing ? "list" : "watch");
    if (err == DLB_ERR_NOMEM) {
        nomem(m);
        return;
    }
    if (err) {
        backoff(w, what, errstr);
        return;
    }
    if (curl_multi_add_handle(m->multi, dlb_k8s_req_handle(w->req)) != CURLM_OK) {
        dlb_k8s_req_free(w->req);
        w->req = NULL;
        backoff(w, what, "curl_multi_add_handle failed");
        return;
    }
    dlb_dbg("GET %s", dlb_k8s_req_target(w->req));
}

/* Pods a completed pods relist did not show were deleted meanwhile; nodes it
 * did not show are simply forgotten. */
static void list_done(watch_t *w)
{
    mon_t *m = w->m;
    char sub[512];
    int err;

    if (w->res == R_PODS) {
        for (size_t i = 0; i < m->pods_cnt && !m->fatal;) {
            pod_ent_t *e = &m->pods[i];
            if (e->gen == w->gen) {
                i++;
                continue;
            }
            dlb_k8s_out_reset(&m->out);
            if ((err =
                     dlb_k8s_map_pod_gone(&e->pod, dlb_clock_wall_ms(), &m->out, sub, sizeof(sub))))
                map_failed(m, "pods list", err, sub);
            else
                emit(m, e);
            pod_remove(m, e);
        }
    } else if (w->res == R_NODES) {
        for (size_t i = 0; i < m->nodes_cnt;)
            if (m->nodes[i].gen != w->gen)
                m->nodes[i] = m->nodes[--m->nodes_cnt];
            else
                i++;
    }
    if (w->listed)
        m->st->relists++;
    w->listed = 1;
    w->listing = 0;
    dlb_info("%s listed at resourceVersion %s; watching", w->kind, w->rv);
}

/* A list page: its items, then the next page or the watch. @returns 0 or -1
 * (not a list: retry). */
static int on_list(watch_t *w, const char *body, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *items = get(j, "items"), *item, *meta = get(j, "metadata");
    const char *cont = get_str(meta, "continue");
    char where[160];
    int i = 0;

    if (!cJSON_IsArray(items)) {
        dlb_warn("%s list: %s (%.60s); the list is retried", w->kind,
                 j ? "no \"items\" array" : "not JSON", body);
        w->m->st->skipped++;
        cJSON_Delete(j);
        return -1;
    }
    cJSON_ArrayForEach(item, items)
    {
        snprintf(where, sizeof(where), "%s list item %d", w->kind, i++);
        if (w->m->fatal)
            break;
        on_object(w, item, 0, where);
    }
    free(w->cont);
    w->cont = NULL;
    if (cont && *cont && !(w->cont = strdup(cont)))
        nomem(w->m);
    set_rv(w, j, w->kind);
    cJSON_Delete(j);
    if (!w->cont)
        list_done(w);
    return 0;
}

static void done(watch_t *w, CURLcode rc)
{
    dlb_k8s_result_t r;
    char what[64], why[600], msg[400];

    dlb_k8s_req_result(w->req, rc, &r);
    snprintf(what, sizeof(what), "%s %s", w->kind, w->listing ? "list" : "watch");
    msg[0] = '\0';
    if (r.status && r.status != 200)
        dlb_k8s_status_message(r.body, r.len, msg, sizeof(msg));
    if (r.status == 200 && !r.error[0] && (w->listing || r.lines))
        w->backoff_ms = 0; /* the server works: the next failure starts the backoff over */
    w->start_at_ms = 0;
    if (w->listing) {
        if (r.status == 200 && !r.error[0]) {
            if (on_list(w, r.body, r.len))
                backoff(w, what, "not a list");
        } else if (r.status == 410 && w->cont) {
            /* the continue token expired: the list starts over */
            dlb_info("%s: 410 Gone (%s); listing again from the start", what, msg);
            free(w->cont);
            w->cont = NULL;
        } else {
            snprintf(why, sizeof(why), "%s%s%ld %s", r.error, r.error[0] ? ", HTTP " : "HTTP ",
                     r.status, msg);
            backoff(w, what, why);
        }
    } else if (w->relist || r.status == 410) {
        if (r.status == 410)
            dlb_info("%s: 410 Gone (%s); relisting %s", what, msg, w->kind);
        w->relist = 0;
        w->listing = 1;
        w->rv[0] = '\0';
    } else if (r.status == 200 && !r.error[0] && !r.aborted) {
        dlb_dbg("%s ended after %zu line(s); resuming from resourceVersion %s", what, r.lines,
                w->rv);
    } else if (r.status == 200) {
        snprintf(why, sizeof(why),
                 "connection lost after %zu line(s) (%s)%s; resuming from resourceVersion %s",
                 r.lines, r.aborted ? "ended by an ERROR event" : r.error,
                 r.partial ? ", an unfinished line dropped" : "", w->rv);
        backoff(w, what, why);
    } else {
        snprintf(why, sizeof(why), "%s%sHTTP %ld %s", r.error, r.error[0] ? ", " : "", r.status,
                 msg);
        backoff(w, what, why);
    }
    curl_multi_remove_handle(w->m->multi, dlb_k8s_req_handle(w->req));
    dlb_k8s_req_free(w->req);
    w->req = NULL;
}

/* ---- the loop -------------------------------------------------------------- */

static int setup(mon_t *m, char *errstr, size_t size)
{
    const dlb_k8s_conf_t *k = &m->conf->k8s;
    static const char *const kinds[R__CNT] = {"pods", "nodes", "events"};
    int err;

    if (strcmp(k->job_uid, "label") && strcmp(k->job_uid, "owner"))
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "k8s.job.uid: \"%s\" is neither label nor owner", k->job_uid);
    if (!k->job_label[0])
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "k8s.job.label is empty");
    m->labels = (dlb_k8s_labels_t){k->job_label, k->type_label, k->index_label,
                                   !strcmp(k->job_uid, "owner")};
    /* by default, pods that have the job label: a selector of just the key */
    m->selector = k->selector[0] ? k->selector : k->job_label;
    for (int i = 0; i < R__CNT; i++) {
        watch_t *w = &m->w[i];
        w->m = m;
        w->res = i;
        w->kind = kinds[i];
        w->listing = 1;
        if (i == R_NODES || !k->ns[0])
            snprintf(w->path, sizeof(w->path), "/api/v1/%s", kinds[i]);
        else
            snprintf(w->path, sizeof(w->path), "/api/v1/namespaces/%s/%s", k->ns, kinds[i]);
    }
    if ((err = dlb_k8s_config_load(k->kubeconfig, k->context, &m->cfg, errstr, size)))
        return err;
    dlb_conf_topic(m->conf, DLB_TOPIC_K8S_EVENTS, m->topic, sizeof(m->topic));
    if ((err = dlb_catalog_new(&m->cat, errstr, size)) ||
        (err = dlb_kafka_producer_new(m->conf, NULL, &m->producer, errstr, size)))
        return err;
    if (!(m->multi = curl_multi_init()))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    dlb_info("%s at %s; pods with labelSelector %s in %s, nodes, pod Events; node "
             "events to %s",
             m->cfg.source, m->cfg.server, m->selector, k->ns[0] ? k->ns : "all namespaces",
             m->topic);
    return 0;
}

static void metrics_setup(mon_t *m)
{
    m->m_objects =
        dlb_metric_counter("dlbrain_k8s_objects_total",
                           "Pods, nodes and Events read from lists and watches", "", NULL);
    m->m_events =
        dlb_metric_counter("dlbrain_events_produced_total",
                           "Events a producer delivered to its topic", "topic", DLB_LV(m->topic));
    m->m_skipped = dlb_metric_counter(
        "dlbrain_k8s_skipped_total",
        "Watch lines and objects skipped: not JSON, not a job pod, invalid", "", NULL);
    m->m_relists = dlb_metric_counter("dlbrain_k8s_relists_total",
                                      "Lists after a resource's first (410 Gone)", "", NULL);
    m->m_reconnects = dlb_metric_counter(
        "dlbrain_k8s_reconnects_total",
        "Kubernetes API requests retried after a failure (with backoff)", "", NULL);
    m->m_errors = dlb_metric_errors("kubernetes");
}

static void metrics_publish(mon_t *m)
{
    dlb_k8s_stats_t *p = &m->published;
    const dlb_k8s_stats_t *st = m->st;

    dlb_metrics_beat();
    dlb_metric_add(m->m_objects, (uint64_t)(st->objects - p->objects));
    dlb_metric_add(m->m_events, (uint64_t)(st->events - p->events));
    dlb_metric_add(m->m_skipped, (uint64_t)(st->skipped - p->skipped));
    dlb_metric_add(m->m_relists, (uint64_t)(st->relists - p->relists));
    dlb_metric_add(m->m_reconnects, (uint64_t)(st->reconnects - p->reconnects));
    dlb_metric_add(m->m_errors, (uint64_t)(st->reconnects - p->reconnects));
    *p = *st;
}

/* /readyz waits for Kafka to have answered once, and a monitor of a quiet
 * cluster may have nothing to deliver for a long time: until the broker
 * answered (a delivery says so too), ask it for metadata every 5 s. */
static void kafka_probe(mon_t *m, int64_t now)
{
    const struct rd_kafka_metadata *md = NULL;

    if (m->kafka_answered || now < m->probe_at_ms)
        return;
    m->probe_at_ms = now + 5000;
    if (rd_kafka_metadata(m->producer, 0, NULL, &md, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        m->kafka_answered = 1;
        dlb_metrics_dep(DLB_DEP_KAFKA, 1);
        rd_kafka_metadata_destroy(md);
    }
}

static void loop(mon_t *m)
{
    metrics_setup(m);
    m->published = *m->st;
    while (!*m->stop && !m->fatal) {
        metrics_publish(m);
        int64_t now = dlb_clock_mono_ms(), wait_ms = 200;
        CURLMsg *msg;
        int running, left;
        int64_t failed;

        for (int i = 0; i < R__CNT && !m->fatal; i++) {
            watch_t *w = &m->w[i];
            /* nodes and Events map onto known pods: after the first pods list */
            if (w->req || (i != R_PODS && !m->w[R_PODS].listed))
                continue;
            if (w->start_at_ms > now) {
                if (w->start_at_ms - now < wait_ms)
                    wait_ms = w->start_at_ms - now;
                continue;
            }
            start(w);
        }
        curl_multi_perform(m->multi, &running);
        while ((msg = curl_multi_info_read(m->multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            for (int i = 0; i < R__CNT; i++)
                if (m->w[i].req && dlb_k8s_req_handle(m->w[i].req) == msg->easy_handle) {
                    done(&m->w[i], msg->data.result);
                    wait_ms = 0;
                    break;
                }
        }
        rd_kafka_poll(m->producer, 0);
        if (kafka_failed(m))
            break;
        kafka_probe(m, now);
        if ((failed = dlb_kafka_delivery_failures(m->producer)) > 0)
            dlb_err("%lld node event(s) failed delivery to %s; a restart of the "
                    "monitor produces them again",
                    (long long)failed, m->topic);
        if (wait_ms > 0)
            curl_multi_poll(m->multi, NULL, 0, (int)wait_ms, NULL);
    }
}

static void teardown(mon_t *m)
{
    char errstr[256];

    for (int i = 0; i < R__CNT; i++) {
        watch_t *w = &m->w[i];
        if (w->req) {
            curl_multi_remove_handle(m->multi, dlb_k8s_req_handle(w->req));
            dlb_k8s_req_free(w->req);
        }
        free(w->cont);
    }
    if (m->multi)
        curl_multi_cleanup(m->multi);
    if (m->producer) {
        if (dlb_kafka_flush(m->producer, 10000, errstr, sizeof(errstr)))
            dlb_err("flushing %s: %s; those node events are lost until the monitor "
                    "lists again",
                    m->topic, errstr);
        dlb_kafka_producer_destroy(m->producer);
    }
    if (m->cat)
        dlb_catalog_destroy(m->cat);
    while (m->pods_cnt)
        pod_remove(m, &m->pods[m->pods_cnt - 1]);
    free(m->pods);
    free(m->nodes);
    for (size_t i = 0; i < m->warned_cnt; i++)
        free(m->warned[i]);
    free(m->warned);
    dlb_k8s_out_free(&m->out);
    dlb_k8s_config_free(&m->cfg);
}

int dlb_k8s_monitor_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, dlb_k8s_stats_t *stats,
                        char *errstr, size_t size)
{
    mon_t m = {.conf = conf, .stop = stop, .st = stats};
    int err;

    if (curl_global_init(CURL_GLOBAL_DEFAULT))
        return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "curl_global_init failed");
    if (!(err = setup(&m, errstr, size))) {
        loop(&m);
        if (m.fatal)
            err = dlb_seterr(errstr, size, m.fatal_err, "%s", m.fatal_why);
    }
    teardown(&m);
    curl_global_cleanup();
    return err;
}
