/* Prometheus metrics of a long-running dlbrain process, and its HTTP endpoint
 * (libmicrohttpd): /metrics in the text exposition format 0.0.4, /healthz
 * (the main loop is alive) and /readyz (Kafka and PostgreSQL answer).
 *
 * A metric family is registered once (name, help, type, label names) and
 * hands out series, one per set of label values; callers look their series
 * up once at set-up and update them without locks (C11 atomics), so the
 * processing loop pays an atomic add per update while the HTTP thread
 * renders. Names follow Prometheus conventions: "dlbrain_" prefix, base units
 * (seconds, bytes), "_total" on counters; label values are few (topics,
 * partitions, error classes), never a job uid.
 *
 * The CLI makes one registry per process and installs it as the global one
 * (dlb_metrics_set_global), so modules deep in the pipeline (store_pg_conn.c,
 * cache_redis.c, kafka.c) record without an API change. Without a global
 * registry the dlb_metric_* look-ups return NULL and every update through a
 * NULL series is a no-op: library users and tests pay nothing. */
#ifndef DLB_METRICS_H
#define DLB_METRICS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

typedef struct dlb_metrics dlb_metrics_t;
typedef struct dlb_series dlb_series_t;

typedef enum { DLB_COUNTER, DLB_GAUGE, DLB_HISTOGRAM } dlb_metric_type_t;

/* Latency buckets in seconds, 0.5 ms .. 10 s: batches, PostgreSQL, Redis. */
extern const double dlb_metrics_latency_buckets[];
extern const size_t dlb_metrics_latency_buckets_cnt;

/* Label values of one series, in the order of the family's label names:
 * DLB_LV("dlbrain.metrics", "3"). */
#define DLB_LV(...) ((const char *const[]){__VA_ARGS__})

/** @brief A registry with no families. @returns 0 or DLB_ERR_NOMEM. */
int dlb_metrics_new(dlb_metrics_t **out, char *errstr, size_t errstr_size);

/** @brief Stop serving (if it was) and release everything (NULL is fine).
 *         Uninstalls it first when it is the global registry. */
void dlb_metrics_destroy(dlb_metrics_t *m);

/** @brief The series of family name with these label values, registering the
 *         family on first use of name and the series on first use of its
 *         values. Thread-safe; meant for set-up and for rare new label values
 *         (a newly assigned partition), not per update.
 *  @param labels   label names, comma-separated ("topic,partition"), or ""
 *  @param values   one value per label name (any bytes; escaped when
 *                  rendered), NULL when there are no labels
 *  @param buckets  upper bounds, ascending, of a histogram (else NULL, 0)
 *  @returns the series, or NULL when out of memory, when a name is not a
 *           valid Prometheus name, or when name was registered before with
 *           another type or other labels (a bug: logged). */
dlb_series_t *dlb_metrics_series(dlb_metrics_t *m, dlb_metric_type_t type, const char *name,
                                 const char *help, const char *labels, const char *const *values,
                                 const double *buckets, size_t buckets_cnt);

/** @brief Add n to a counter (no-op on NULL). */
void dlb_metric_add(dlb_series_t *s, uint64_t n);
/** @brief Set a gauge, and show it again if it was hidden (no-op on NULL). */
void dlb_metric_set(dlb_series_t *s, double v);
/** @brief Leave a gauge out of the output until it is set again: a series
 *         that no longer describes anything (a revoked partition's lag). */
void dlb_metric_hide(dlb_series_t *s);
/** @brief Record one observation in a histogram (no-op on NULL). */
void dlb_metric_observe(dlb_series_t *s, double v);
/** @returns a counter's or gauge's current value, a histogram's count. */
double dlb_metric_value(const dlb_series_t *s);

/** @returns seconds on the monotonic clock, for dlb_metric_observe_since(). */
double dlb_metric_now(void);
/** @brief Observe the seconds elapsed since t0 (from dlb_metric_now()). */
void dlb_metric_observe_since(dlb_series_t *s, double t0);

/** @brief Render every family in the text exposition format 0.0.4, families
 *         in registration order, series in creation order.
 *  @param out  a malloc'ed NUL-terminated string the caller frees
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_metrics_render(dlb_metrics_t *m, char **out, size_t *len);

/* ---- the process-global registry ------------------------------------------ */

/** @brief Install m (NULL uninstalls) as the registry the dlb_metric_*
 *         look-ups and the probes below use. Call before threads start. */
void dlb_metrics_set_global(dlb_metrics_t *m);
dlb_metrics_t *dlb_metrics_global(void);

/** @brief dlb_metrics_series() on the global registry; NULL without one.
 *         A histogram gets dlb_metrics_latency_buckets. */
dlb_series_t *dlb_metric_counter(const char *name, const char *help, const char *labels,
                                 const char *const *values);
dlb_series_t *dlb_metric_gauge(const char *name, const char *help, const char *labels,
                               const char *const *values);
dlb_series_t *dlb_metric_histogram(const char *name, const char *help, const char *labels,
                                   const char *const *values);

/** @brief dlbrain_errors_total{class}: failures by class (decode, validate,
 *         process: bad input; postgres, redis, kafka: a dependency failed;
 *         internal). NULL without a global registry. */
dlb_series_t *dlb_metric_errors(const char *cls);

/** @brief dlbrain_kafka_rebalances_total{event}: event "assign" or "revoke". */
dlb_series_t *dlb_metric_rebalances(const char *event);
/** @brief dlbrain_kafka_transactions_total{result}: "committed" or "aborted". */
dlb_series_t *dlb_metric_transactions(const char *result);

/* A series cached where no context can hold it (store_pg_conn.c's calls): looked
 * up again only when another global registry was installed since. Keep it
 * _Thread_local or per connection, zero-initialised. */
typedef struct dlb_metric_slot {
    unsigned gen;
    dlb_series_t *s;
} dlb_metric_slot_t;

/** @brief The histogram (latency buckets) of slot, looked up on the global
 *         registry on first use. @returns NULL without a global registry. */
dlb_series_t *dlb_metric_slot_histogram(dlb_metric_slot_t *slot, const char *name, const char *help,
                                        const char *labels, const char *const *values);

/* ---- probes -------------------------------------------------------------- */

/* Dependencies /readyz waits for. One that no code of the process ever
 * reported on is not required (the k8s monitor has no PostgreSQL). */
typedef enum {
    DLB_DEP_KAFKA,    /* the group assigned us (or metadata answered) */
    DLB_DEP_POSTGRES, /* the last call reached the server */
    DLB_DEP__CNT
} dlb_dep_t;

/** @brief Report whether dep answered (global registry; no-op without one).
 *         Also the gauge dlbrain_dependency_up{dependency}. Cheap when the
 *         state does not change: call it on every outcome. */
void dlb_metrics_dep(dlb_dep_t dep, int up);

/** @brief Input is not moving: why names the partition and the reason (""
 *         or NULL once it moves again). /readyz answers 503 with why while
 *         it is set: a consumer held by one record or a dependency outage
 *         is not ready, whatever its dependencies answer. */
void dlb_metrics_stalled(const char *why);

/** @brief who (a client, by its address) failed for good and can serve no
 *         more (librdkafka's fatal error): /healthz and /readyz answer 503
 *         with why until the process replaced it, which calls this again
 *         with why NULL, or exits. A process that stays up with such a
 *         client is dead, and liveness must say so. */
#define DLB_METRICS_FAILED_MAX 8
void dlb_metrics_failed(const void *who, const char *why);

/** @brief dep is shown by /readyz and its gauge, but its being down does not
 *         make the process unready (the gateway needs PostgreSQL for one
 *         call DLRover's masters never make). */
void dlb_metrics_dep_optional(dlb_dep_t dep);

/** @brief The main loop came round: /healthz answers 200 while the last beat
 *         is younger than the stall time given to dlb_metrics_serve(). */
void dlb_metrics_beat(void);

/** @brief Sleep ms (in 50 ms steps) unless *stop becomes non-zero, beating
 *         all the while: waiting out a dependency is the loop being alive. */
void dlb_metrics_nap_ms(volatile sig_atomic_t *stop, int ms);

/** @brief Serve /metrics, /healthz and /readyz on addr:port (IPv4 or IPv6
 *         literal) from a thread of libmicrohttpd's. port 0 takes a free one
 *         (dlb_metrics_port()).
 *  @param stall_s  /healthz fails when no beat came for this long
 *  @param bounds   what a client may hold of the endpoint (http.*)
 *  @returns 0, or DLB_ERR_CONF (cannot listen: errstr names addr:port and
 *           why, e.g. the port is in use). */
int dlb_metrics_serve(dlb_metrics_t *m, const char *addr, int port, int stall_s,
                      const dlb_http_conf_t *bounds, char *errstr, size_t errstr_size);

/** @returns the port served, 0 when not serving. */
int dlb_metrics_port(const dlb_metrics_t *m);

/** @brief What /healthz and /readyz answer, without HTTP (tests).
 *  @returns 1 ok, 0 not (why says which check failed). */
int dlb_metrics_healthy(dlb_metrics_t *m, char *why, size_t why_size);
int dlb_metrics_ready(dlb_metrics_t *m, char *why, size_t why_size);

#endif
