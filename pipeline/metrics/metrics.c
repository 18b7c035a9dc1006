/* Prometheus metrics and their HTTP endpoint (metrics.h). */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "metrics_internal.h"
#include "sbuf.h"

const double dlb_metrics_latency_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const size_t dlb_metrics_latency_buckets_cnt =
    sizeof(dlb_metrics_latency_buckets) / sizeof(dlb_metrics_latency_buckets[0]);

typedef struct family family_t;

struct dlb_series {
    const family_t *fam;
    char *lbl;          /* the label pairs as rendered: topic="a",partition="0" */
    _Atomic uint64_t u; /* counter: the count; gauge: the double's bits */
    _Atomic int hidden;
    /* histogram: per-bucket counts (not cumulative), the last one +Inf; the
     * count rendered is their sum, so _count always equals the +Inf bucket
     * even while the loop observes during a scrape */
    _Atomic uint64_t *buckets;
    _Atomic uint64_t sum_bits;
    dlb_series_t *next;
};

struct family {
    char *name, *help, *labels;
    size_t nlabels;
    dlb_metric_type_t type;
    double *bounds;
    char **le; /* the bounds as rendered: le="0.005" */
    size_t nb;
    dlb_series_t *head, *tail;
    family_t *next;
};

struct dlb_metrics {
    pthread_mutex_t lock; /* the lists: registration and rendering */
    family_t *head, *tail;
    /* The HTTP server (metrics_http.c), stopped through server_stop so this
     * file, which every process links, does not need libmicrohttpd. */
    void *server;
    void (*server_stop)(void *server);
    int port;
    int stall_ms;
    _Atomic int64_t beat_ms;
    _Atomic int dep[DLB_DEP__CNT];          /* -1 never reported, 0 down, 1 up */
    _Atomic int dep_optional[DLB_DEP__CNT]; /* shown by /readyz, never gating it */
    _Atomic(dlb_series_t *) dep_gauge[DLB_DEP__CNT];
    /* Why input is not moving ("" while it is): dlb_metrics_stalled(). */
    pthread_mutex_t stall_lock;
    char stalled[512];
    /* Clients failed for good (dlb_metrics_failed()), under stall_lock. */
    struct {
        const void *who;
        char why[256];
    } failed[DLB_METRICS_FAILED_MAX];
    size_t failed_cnt;
};

static const char *const dep_names[DLB_DEP__CNT] = {"kafka", "postgres"};

static dlb_metrics_t *_Atomic global;
/* Bumped by every dlb_metrics_set_global(), so a slot cached for an earlier
 * registry is looked up again; starts at 1 so a zeroed slot misses. */
static _Atomic unsigned global_gen = 1;

static uint64_t dbits(double v)
{
    uint64_t u;

    memcpy(&u, &v, sizeof(u));
    return u;
}

static double bitsd(uint64_t u)
{
    double v;

    memcpy(&v, &u, sizeof(v));
    return v;
}

int dlb_metrics_new(dlb_metrics_t **out, char *errstr, size_t errstr_size)
{
    dlb_metrics_t *m = calloc(1, sizeof(*m));

    *out = NULL;
    if (!m || pthread_mutex_init(&m->lock, NULL)) {
        free(m);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "metrics: out of memory");
    }
    if (pthread_mutex_init(&m->stall_lock, NULL)) {
        pthread_mutex_destroy(&m->lock);
        free(m);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "metrics: out of memory");
    }
    for (int i = 0; i < DLB_DEP__CNT; i++)
        atomic_init(&m->dep[i], -1);
    atomic_init(&m->beat_ms, dlb_clock_mono_ms());
    *out = m;
    return 0;
}

static void series_free(dlb_series_t *s)
{
    free(s->lbl);
    free((void *)s->buckets);
    free(s);
}

static void family_free(family_t *f)
{
    while (f->head) {
        dlb_series_t *n = f->head->next;
        series_free(f->head);
        f->head = n;
    }
    for (size_t i = 0; f->le && i < f->nb; i++)
        free(f->le[i]);
    free(f->le);
    free(f->name);
    free(f->help);
    free(f->labels);
    free(f->bounds);
    free(f);
}

void dlb_metrics_destroy(dlb_metrics_t *m)
{
    dlb_metrics_t *expected = m;

    if (!m)
        return;
    if (atomic_compare_exchange_strong(&global, &expected, NULL))
        atomic_fetch_add(&global_gen, 1);
    if (m->server)
        m->server_stop(m->server);
    while (m->head) {
        family_t *n = m->head->next;
        family_free(m->head);
        m->head = n;
    }
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->stall_lock);
    free(m);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; labels have no ':'. */
static int valid_name(const char *s, size_t n, int colon)
{
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                 (colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

/* A number as Prometheus reads it: the shortest digits that read back the
 * same double, NaN and infinities by name. */
static int put_num(dlb_sbuf_t *b, double v)
{
    char buf[40];

    if (isnan(v))
        return dlb_sbuf_str(b, "NaN");
    if (isinf(v))
        return dlb_sbuf_str(b, v > 0 ? "+Inf" : "-Inf");
    /* Whole numbers as such: "200000", not the shorter "2e+05". */
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, sizeof(buf), "%.0f", v);
        return dlb_sbuf_str(b, buf);
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return dlb_sbuf_str(b, buf);
}

static int put_u64(dlb_sbuf_t *b, uint64_t v)
{
    char buf[24];

    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    return dlb_sbuf_str(b, buf);
}

/* The format escapes \ and newline in help texts, and " too in label values. */
static int put_escaped(dlb_sbuf_t *b, const char *s, int quote)
{
    int err = 0;

    for (; *s && !err; s++) {
        if (*s == '\\')
            err = dlb_sbuf_put(b, "\\\\", 2);
        else if (*s == '\n')
            err = dlb_sbuf_put(b, "\\n", 2);
        else if (quote && *s == '"')
            err = dlb_sbuf_put(b, "\\\"", 2);
        else
            err = dlb_sbuf_put(b, s, 1);
    }
    return err;
}

static family_t *family_get(dlb_metrics_t *m, dlb_metric_type_t type, const char *name,
                            const char *help, const char *labels, const double *bounds, size_t nb)
{
    family_t *f;

    for (f = m->head; f; f = f->next) {
        if (strcmp(f->name, name))
            continue;
        if (f->type == type && !strcmp(f->labels, labels))
            return f;
        dlb_err("metrics: %s registered twice with different types or labels; this metric is "
                "not recorded (a bug)",
                name);
        return NULL;
    }
    if (!valid_name(name, strlen(name), 1)) {
        dlb_err("metrics: \"%s\" is not a valid metric name; not recorded (a bug)", name);
        return NULL;
    }
    for (const char *l = labels; *l;) {
        size_t n = strcspn(l, ",");
        if (!valid_name(l, n, 0) || (n == 2 && !strncmp(l, "le", 2))) {
            dlb_err("metrics: %s: bad label names \"%s\"; not recorded (a bug)", name, labels);
            return NULL;
        }
        l += n + (l[n] == ',');
    }
    if (!(f = calloc(1, sizeof(*f))) || !(f->name = strdup(name)) || !(f->help = strdup(help)) ||
        !(f->labels = strdup(labels)) ||
        (nb &&
         (!(f->bounds = malloc(nb * sizeof(*f->bounds))) || !(f->le = calloc(nb, sizeof(*f->le))))))
        goto nomem;
    f->type = type;
    f->nb = nb;
    for (const char *l = labels; *l; l += strcspn(l, ",") + (l[strcspn(l, ",")] == ','))
        f->nlabels++;
    for (size_t i = 0; i < nb; i++) {
        dlb_sbuf_t num = {0};

        f->bounds[i] = bounds[i];
        if (put_num(&num, bounds[i]) || asprintf(&f->le[i], "le=\"%s\"", num.p) < 0) {
            free(num.p);
            f->le[i] = NULL;
            goto nomem;
        }
        free(num.p);
    }
    if (m->tail)
        m->tail->next = f;
    else
        m->head = f;
    m->tail = f;
    return f;
nomem:
    if (f)
        family_free(f);
    return NULL;
}

/* The label pairs of values as rendered. */
static char *labels_render(const family_t *f, const char *const *values)
{
    dlb_sbuf_t b = {0};
    const char *l = f->labels;
    int err = dlb_sbuf_put(&b, "", 0);

    for (size_t i = 0; i < f->nlabels && !err; i++) {
        size_t n = strcspn(l, ",");
        err = (i && dlb_sbuf_put(&b, ",", 1)) || dlb_sbuf_put(&b, l, n) ||
              dlb_sbuf_put(&b, "=\"", 2) || put_escaped(&b, values[i] ? values[i] : "", 1) ||
              dlb_sbuf_put(&b, "\"", 1);
        l += n + (l[n] == ',');
    }
    if (err) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

dlb_series_t *dlb_metrics_series(dlb_metrics_t *m, dlb_metric_type_t type, const char *name,
                                 const char *help, const char *labels, const char *const *values,
                                 const double *buckets, size_t buckets_cnt)
{
    dlb_series_t *s = NULL;
    family_t *f;
    char *lbl = NULL;

    if (!m)
        return NULL;
    pthread_mutex_lock(&m->lock);
    if (!(f = family_get(m, type, name, help, labels ? labels : "", buckets,
                         type == DLB_HISTOGRAM ? buckets_cnt : 0)) ||
        (f->nlabels && !values) || !(lbl = labels_render(f, values)))
        goto out;
    for (s = f->head; s; s = s->next)
        if (!strcmp(s->lbl, lbl))
            goto out;
    if (!(s = calloc(1, sizeof(*s))) ||
        (f->type == DLB_HISTOGRAM && !(s->buckets = calloc(f->nb + 1, sizeof(*s->buckets))))) {
        free(s);
        s = NULL;
        goto out;
    }
    s->fam = f;
    s->lbl = lbl;
    lbl = NULL;
    if (f->type == DLB_GAUGE)
        atomic_init(&s->u, dbits(0));
    if (f->tail)
        f->tail->next = s;
    else
        f->head = s;
    f->tail = s;
out:
    pthread_mutex_unlock(&m->lock);
    free(lbl);
    return s;
}

void dlb_metric_add(dlb_series_t *s, uint64_t n)
{
    if (s)
        atomic_fetch_add_explicit(&s->u, n, memory_order_relaxed);
}

void dlb_metric_set(dlb_series_t *s, double v)
{
    if (!s)
        return;
    atomic_store_explicit(&s->u, dbits(v), memory_order_relaxed);
    if (atomic_load_explicit(&s->hidden, memory_order_relaxed))
        atomic_store_explicit(&s->hidden, 0, memory_order_relaxed);
}

void dlb_metric_hide(dlb_series_t *s)
{
    if (s)
        atomic_store_explicit(&s->hidden, 1, memory_order_relaxed);
}

void dlb_metric_observe(dlb_series_t *s, double v)
{
    uint64_t old;
    size_t i = 0;

    if (!s || !s->buckets)
        return;
    while (i < s->fam->nb && !(v <= s->fam->bounds[i]))
        i++;
    atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
    old = atomic_load_explicit(&s->sum_bits, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->sum_bits, &old, dbits(bitsd(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

static uint64_t hist_count(const dlb_series_t *s)
{
    uint64_t n = 0;

    for (size_t i = 0; i <= s->fam->nb; i++)
        n += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
    return n;
}

double dlb_metric_value(const dlb_series_t *s)
{
    uint64_t u;

    if (!s)
        return 0;
    if (s->fam->type == DLB_HISTOGRAM)
        return (double)hist_count(s);
    u = atomic_load_explicit(&s->u, memory_order_relaxed);
    return s->fam->type == DLB_GAUGE ? bitsd(u) : (double)u;
}

double dlb_metric_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void dlb_metric_observe_since(dlb_series_t *s, double t0)
{
    if (s)
        dlb_metric_observe(s, dlb_metric_now() - t0);
}

/* ---- rendering --------------------------------------------------------------- */

/* name{labels,extra} value\n; no braces when there is nothing to put in them. */
static int put_sample(dlb_sbuf_t *b, const family_t *f, const char *suffix, const char *lbl,
                      const char *extra, double v, int integral)
{
    int braces = lbl[0] || extra;

    return dlb_sbuf_str(b, f->name) || dlb_sbuf_str(b, suffix) ||
           (braces && dlb_sbuf_put(b, "{", 1)) || dlb_sbuf_str(b, lbl) ||
           (lbl[0] && extra && dlb_sbuf_put(b, ",", 1)) || (extra && dlb_sbuf_str(b, extra)) ||
           (braces && dlb_sbuf_put(b, "}", 1)) || dlb_sbuf_put(b, " ", 1) ||
           (integral ? put_u64(b, (uint64_t)v) : put_num(b, v)) || dlb_sbuf_put(b, "\n", 1);
}

static int render_series(dlb_sbuf_t *b, const family_t *f, const dlb_series_t *s)
{
    uint64_t cum = 0;

    if (f->type == DLB_COUNTER)
        return put_sample(b, f, "", s->lbl, NULL, dlb_metric_value(s), 1);
    if (f->type == DLB_GAUGE)
        return atomic_load_explicit(&s->hidden, memory_order_relaxed)
                   ? 0
                   : put_sample(b, f, "", s->lbl, NULL, dlb_metric_value(s), 0);
    for (size_t i = 0; i <= f->nb; i++) {
        cum += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
        if (put_sample(b, f, "_bucket", s->lbl, i < f->nb ? f->le[i] : "le=\"+Inf\"", (double)cum,
                       1))
            return DLB_ERR_NOMEM;
    }
    return put_sample(b, f, "_sum", s->lbl, NULL,
                      bitsd(atomic_load_explicit(&s->sum_bits, memory_order_relaxed)), 0) ||
           put_sample(b, f, "_count", s->lbl, NULL, (double)cum, 1);
}

int dlb_metrics_render(dlb_metrics_t *m, char **out, size_t *len)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    dlb_sbuf_t b = {0};
    int err = dlb_sbuf_put(&b, "", 0); /* a string even with no family */

    *out = NULL;
    *len = 0;
    pthread_mutex_lock(&m->lock);
    for (const family_t *f = m->head; f && !err; f = f->next) {
        err = dlb_sbuf_str(&b, "# HELP ") || dlb_sbuf_str(&b, f->name) ||
              dlb_sbuf_put(&b, " ", 1) || put_escaped(&b, f->help, 0) ||
              dlb_sbuf_str(&b, "\n# TYPE ") || dlb_sbuf_str(&b, f->name) ||
              dlb_sbuf_put(&b, " ", 1) || dlb_sbuf_str(&b, types[f->type]) ||
              dlb_sbuf_put(&b, "\n", 1);
        for (const dlb_series_t *s = f->head; s && !err; s = s->next)
            err = render_series(&b, f, s);
    }
    pthread_mutex_unlock(&m->lock);
    if (err) {
        free(b.p);
        return DLB_ERR_NOMEM;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}

/* ---- the global registry and the probes ------------------------------------- */

void dlb_metrics_set_global(dlb_metrics_t *m)
{
    atomic_store(&global, m);
    atomic_fetch_add(&global_gen, 1);
}

dlb_metrics_t *dlb_metrics_global(void)
{
    return atomic_load_explicit(&global, memory_order_acquire);
}

dlb_series_t *dlb_metric_counter(const char *name, const char *help, const char *labels,
                                 const char *const *values)
{
    return dlb_metrics_series(dlb_metrics_global(), DLB_COUNTER, name, help, labels, values, NULL,
                              0);
}

dlb_series_t *dlb_metric_gauge(const char *name, const char *help, const char *labels,
                               const char *const *values)
{
    return dlb_metrics_series(dlb_metrics_global(), DLB_GAUGE, name, help, labels, values, NULL, 0);
}

dlb_series_t *dlb_metric_histogram(const char *name, const char *help, const char *labels,
                                   const char *const *values)
{
    return dlb_metrics_series(dlb_metrics_global(), DLB_HISTOGRAM, name, help, labels, values,
                              dlb_metrics_latency_buckets, dlb_metrics_latency_buckets_cnt);
}

dlb_series_t *dlb_metric_errors(const char *cls)
{
    return dlb_metric_counter("dlbrain_errors_total",
                              "Failures by class: decode, validate, process (bad input, sent to "
                              "the DLQ); postgres, redis, kafka (a dependency failed, the work is "
                              "retried); internal",
                              "class", DLB_LV(cls));
}

dlb_series_t *dlb_metric_rebalances(const char *event)
{
    return dlb_metric_counter("dlbrain_kafka_rebalances_total",
                              "Consumer group rebalances seen, by what they did to this member "
                              "(assign, revoke)",
                              "event", DLB_LV(event));
}

dlb_series_t *dlb_metric_transactions(const char *result)
{
    return dlb_metric_counter("dlbrain_kafka_transactions_total",
                              "Kafka transactions of batches (outputs, DLQ copies and input "
                              "offsets together), by result (committed, aborted)",
                              "result", DLB_LV(result));
}

dlb_series_t *dlb_metric_slot_histogram(dlb_metric_slot_t *slot, const char *name, const char *help,
                                        const char *labels, const char *const *values)
{
    unsigned gen = atomic_load_explicit(&global_gen, memory_order_acquire);

    if (slot->gen != gen) {
        slot->s = dlb_metric_histogram(name, help, labels, values);
        slot->gen = gen;
    }
    return slot->s;
}

void dlb_metrics_dep(dlb_dep_t dep, int up)
{
    dlb_metrics_t *m = dlb_metrics_global();
    dlb_series_t *g;

    up = !!up;
    if (!m || atomic_load_explicit(&m->dep[dep], memory_order_relaxed) == up)
        return;
    atomic_store(&m->dep[dep], up);
    if (!(g = atomic_load(&m->dep_gauge[dep]))) {
        g = dlb_metrics_series(m, DLB_GAUGE, "dlbrain_dependency_up",
                               "1 when the dependency answered its last call (as /readyz sees it), "
                               "0 when it did not",
                               "dependency", DLB_LV(dep_names[dep]), NULL, 0);
        atomic_store(&m->dep_gauge[dep], g);
    }
    dlb_metric_set(g, up);
}

void dlb_metrics_stalled(const char *why)
{
    dlb_metrics_t *m = dlb_metrics_global();

    if (!m)
        return;
    pthread_mutex_lock(&m->stall_lock);
    snprintf(m->stalled, sizeof(m->stalled), "%s", why ? why : "");
    pthread_mutex_unlock(&m->stall_lock);
}

void dlb_metrics_failed(const void *who, const char *why)
{
    dlb_metrics_t *m = dlb_metrics_global();
    size_t i;

    if (!m || !who)
        return;
    pthread_mutex_lock(&m->stall_lock);
    for (i = 0; i < m->failed_cnt && m->failed[i].who != who; i++)
        ;
    if (!why) {
        if (i < m->failed_cnt)
            m->failed[i] = m->failed[--m->failed_cnt];
    } else {
        /* Past the table's size the last entry is reused: /healthz fails
         * all the same, naming the latest. */
        if (i == m->failed_cnt && m->failed_cnt < DLB_METRICS_FAILED_MAX)
            m->failed_cnt++;
        else if (i == m->failed_cnt)
            i = DLB_METRICS_FAILED_MAX - 1;
        m->failed[i].who = who;
        snprintf(m->failed[i].why, sizeof(m->failed[i].why), "%s", why);
    }
    pthread_mutex_unlock(&m->stall_lock);
}

/* The first client failed for good into why. @returns 1 when there is one. */
static int failed_why(dlb_metrics_t *m, char *why, size_t why_size)
{
    int any;

    pthread_mutex_lock(&m->stall_lock);
    any = m->failed_cnt > 0;
    if (any)
        snprintf(why, why_size, "%s", m->failed[0].why);
    pthread_mutex_unlock(&m->stall_lock);
    return any;
}

void dlb_metrics_dep_optional(dlb_dep_t dep)
{
    dlb_metrics_t *m = dlb_metrics_global();

    if (m)
        atomic_store(&m->dep_optional[dep], 1);
}

void dlb_metrics_beat(void)
{
    dlb_metrics_t *m = dlb_metrics_global();

    if (m)
        atomic_store_explicit(&m->beat_ms, dlb_clock_mono_ms(), memory_order_relaxed);
}

void dlb_metrics_nap_ms(volatile sig_atomic_t *stop, int ms)
{
    for (int i = 0; i < ms / 50 && !*stop; i++) {
        dlb_metrics_beat();
        usleep(50 * 1000);
    }
}

int dlb_metrics_healthy(dlb_metrics_t *m, char *why, size_t why_size)
{
    int64_t age = dlb_clock_mono_ms() - atomic_load_explicit(&m->beat_ms, memory_order_relaxed);

    if (failed_why(m, why, why_size))
        return 0;
    if (m->stall_ms > 0 && age > m->stall_ms) {
        snprintf(why, why_size, "the main loop has not come round for %lld ms (limit %d ms)",
                 (long long)age, m->stall_ms);
        return 0;
    }
    snprintf(why, why_size, "the main loop came round %lld ms ago", (long long)age);
    return 1;
}

int dlb_metrics_ready(dlb_metrics_t *m, char *why, size_t why_size)
{
    size_t n = 0;
    int ok = 1;

    why[0] = '\0';
    /* A process whose client failed for good serves nothing either. */
    if (failed_why(m, why, why_size))
        return 0;
    for (int i = 0; i < DLB_DEP__CNT; i++) {
        int st = atomic_load_explicit(&m->dep[i], memory_order_relaxed);
        int optional = atomic_load_explicit(&m->dep_optional[i], memory_order_relaxed);
        if (st < 0)
            continue;
        if (!optional)
            ok &= st;
        if (n < why_size)
            n += (size_t)snprintf(why + n, why_size - n, "%s%s %s%s", n ? ", " : "", dep_names[i],
                                  st ? "up" : "down", optional ? " (not needed to serve)" : "");
    }
    /* Every process that serves /readyz talks to Kafka or PostgreSQL: before
     * either has answered it cannot serve, and a probe must not route to it. */
    if (!n) {
        n = (size_t)snprintf(why, why_size, "no dependency has answered yet");
        ok = 0;
    }
    pthread_mutex_lock(&m->stall_lock);
    if (m->stalled[0]) {
        ok = 0;
        if (n < why_size)
            snprintf(why + n, why_size - n, "; %s", m->stalled);
    }
    pthread_mutex_unlock(&m->stall_lock);
    return ok;
}

void dlb_metrics_attach(dlb_metrics_t *m, void *server, void (*stop)(void *), int port, int stall_s)
{
    m->server = server;
    m->server_stop = stop;
    m->port = port;
    m->stall_ms = stall_s > 0 ? stall_s * 1000 : 0;
    atomic_store(&m->beat_ms, dlb_clock_mono_ms());
}

int dlb_metrics_port(const dlb_metrics_t *m)
{
    return m && m->server ? m->port : 0;
}
