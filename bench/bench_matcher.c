#include "bench_matcher.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "event.h"
#include "latency.h"
#include "matcher.h"
#include "rules.h"
#include "vec.h"

#define SEED   0x6d61746368ULL /* "match" */
#define POOL   16384
#define KINDS  5000
#define BATCH  1024       /* matcher calls between clock reads */
#define DRAWS  (1u << 20) /* the jobs to match, in order, drawn before timing */
#define SAMPLE 64         /* every SAMPLE-th matcher call is timed alone */

enum { A_USER, A_GROUP, A_APP, A_CLUSTER, A_NS, A_SCENARIO, A_FRAMEWORK, A_NAME };

static const char *const attr_keys[] = {"user",      "group",    "app",       "cluster",
                                        "namespace", "scenario", "framework", "name"};
static const char *const frameworks[] = {"tensorflow", "pytorch", "xgboost", "paddle"};
static const char *const prefixes[] = {"ctr", "rank", "recall", "train", "eval", "search",
                                       "ads", "nlp",  "cv",     "rec",   "sim",  "test"};
static const char *const obj_keys[] = {"autoscale", "env", "resources"};
static const char *const roles[] = {"chief", "evaluator", "ps", "worker"};

/* Rule shapes: the attributes a rule's Include names, per mille of rules.
 * Specific rules (a user, an app, a job) are common; broad ones (a whole
 * cluster or framework) rare. A shape that names one attribute alone stops
 * at cap rules (2 per value): a large rule set grows by specific rules, it
 * does not hold 50 rules for user-017 alone. */
enum { S_PLAIN, S_NAME, S_PATTERN, S_NONE };
static const struct shape {
    unsigned permille;
    unsigned cap; /* 0: none */
    int kind;
    int n;
    int attrs[3];
} shapes[] = {
    {198, 400, S_PLAIN, 1, {A_USER}},
    {150, 200, S_PLAIN, 1, {A_APP}},
    {150, 0, S_PLAIN, 2, {A_USER, A_APP}},
    {50, 100, S_PLAIN, 1, {A_GROUP}},
    {50, 0, S_PLAIN, 2, {A_GROUP, A_CLUSTER}},
    {80, 0, S_PLAIN, 2, {A_APP, A_CLUSTER}},
    {40, 0, S_PLAIN, 2, {A_NS, A_SCENARIO}},
    {30, 60, S_PLAIN, 1, {A_SCENARIO}},
    {60, 0, S_PLAIN, 3, {A_USER, A_APP, A_CLUSTER}},
    {30, 0, S_PLAIN, 2, {A_APP, A_FRAMEWORK}},
    {20, 40, S_PLAIN, 1, {A_NS}},
    {5, 20, S_PLAIN, 1, {A_CLUSTER}},
    {5, 8, S_PLAIN, 1, {A_FRAMEWORK}},
    {100, 0, S_NAME, 1, {A_NAME}},
    {15, 24, S_PATTERN, 1, {A_NAME}},
    {15, 0, S_PATTERN, 2, {A_NAME, A_APP}},
    {2, 2, S_NONE, 0, {0}},
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* nrand48(3): POSIX fixes the generator, so every platform draws the same
 * rules and jobs from a seed. */
typedef struct rng {
    unsigned short x[3];
} rng_t;

static rng_t rng_seed(uint64_t seed)
{
    return (rng_t){
        {(unsigned short)seed, (unsigned short)(seed >> 16), (unsigned short)(seed >> 32)}};
}

/* Uniform in [0, n). */
static unsigned below(rng_t *r, unsigned n)
{
    return (unsigned)(((uint64_t)nrand48(r->x) * n) >> 31);
}

static int chance(rng_t *r, unsigned permille)
{
    return below(r, 1000) < permille;
}

/* Attributes that follow from others: a user is in one group, a group in one
 * namespace; an app has one framework (4 in 10 TensorFlow, 4 PyTorch), one
 * scenario and one job-name prefix. */
static unsigned group_of(unsigned user)
{
    return (user * 37 + 11) % 50;
}

static unsigned ns_of(unsigned group)
{
    return group % 20;
}

static unsigned framework_of(unsigned app)
{
    return app % 10 < 4 ? 0 : app % 10 < 8 ? 1 : app % 10 - 6;
}

static unsigned scenario_of(unsigned app)
{
    return (app * 13 + 5) % 30;
}

/* A value of attribute a as jobs have them: users, apps and clusters
 * uniform, the rest through them. */
static void draw_value(rng_t *r, int a, char *buf, size_t size)
{
    switch (a) {
    case A_USER:
        snprintf(buf, size, "user-%03u", below(r, 200));
        break;
    case A_GROUP:
        snprintf(buf, size, "group-%02u", group_of(below(r, 200)));
        break;
    case A_APP:
        snprintf(buf, size, "app-%03u", below(r, 100));
        break;
    case A_CLUSTER:
        snprintf(buf, size, "cluster-%u", below(r, 10));
        break;
    case A_NS:
        snprintf(buf, size, "ns-%02u", ns_of(group_of(below(r, 200))));
        break;
    case A_SCENARIO:
        snprintf(buf, size, "scenario-%02u", scenario_of(below(r, 100)));
        break;
    default:
        snprintf(buf, size, "%s", frameworks[framework_of(below(r, 100))]);
    }
}

static void job_fill(dlb_job_meta_t *j, unsigned user, unsigned app, unsigned cluster, unsigned seq)
{
    unsigned g = group_of(user);

    snprintf(j->name, sizeof(j->name), "%s-app-%03u-%06u", prefixes[app % 12], app, seq);
    snprintf(j->user, sizeof(j->user), "user-%03u", user);
    snprintf(j->group, sizeof(j->group), "group-%02u", g);
    snprintf(j->app, sizeof(j->app), "app-%03u", app);
    snprintf(j->cluster, sizeof(j->cluster), "cluster-%u", cluster);
    snprintf(j->ns, sizeof(j->ns), "ns-%02u", ns_of(g));
    snprintf(j->scenario, sizeof(j->scenario), "scenario-%02u", scenario_of(app));
    snprintf(j->framework, sizeof(j->framework), "%s", frameworks[framework_of(app)]);
}

/* POOL job instances of KINDS recurring (user, app, cluster) kinds, the
 * kinds Zipf-distributed (s = 1): a few run all the time, most now and then. */
static dlb_job_meta_t *make_pool(void)
{
    unsigned kind[KINDS][3];
    double cdf[KINDS], sum = 0;
    dlb_job_meta_t *pool = calloc(POOL, sizeof(*pool));
    rng_t r = rng_seed(SEED);

    if (!pool)
        return NULL;
    for (unsigned k = 0; k < KINDS; k++) {
        kind[k][0] = below(&r, 200);
        kind[k][1] = below(&r, 100);
        kind[k][2] = below(&r, 10);
        cdf[k] = (sum += 1.0 / (k + 1));
    }
    for (unsigned i = 0; i < POOL; i++) {
        double u = (double)nrand48(r.x) / 2147483648.0 * sum;
        unsigned lo = 0, hi = KINDS - 1;
        while (lo < hi) {
            unsigned mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        job_fill(&pool[i], kind[lo][0], kind[lo][1], kind[lo][2], i);
    }
    return pool;
}

/* ---- rules ---------------------------------------------------------------- */

static int add_cond(dlb_rule_match_t **arr, size_t *cnt, int a, char (*vals)[DLB_NAME_MAX],
                    size_t n)
{
    /* Counted once pushed: dlb_rules_clear frees whatever follows. */
    dlb_rule_match_t *m = dlb_vec_push((void **)arr, cnt, sizeof(*m));

    if (!m)
        return DLB_ERR_NOMEM;
    if (!(m->attr = strdup(attr_keys[a])) || !(m->values = calloc(n, sizeof(char *))))
        return DLB_ERR_NOMEM;
    for (; m->values_cnt < n; m->values_cnt++)
        if (!(m->values[m->values_cnt] = strdup(vals[m->values_cnt])))
            return DLB_ERR_NOMEM;
    return 0;
}

/* One value, 1 in 5 times a list of 2-3. */
static int add_plain(rng_t *r, dlb_rule_match_t **arr, size_t *cnt, int a)
{
    char vals[3][DLB_NAME_MAX];
    size_t n = chance(r, 200) ? 2 + below(r, 2) : 1;

    for (size_t i = 0; i < n; i++)
        draw_value(r, a, vals[i], sizeof(vals[i]));
    return add_cond(arr, cnt, a, vals, n);
}

/* A name pattern for the jobs of an app's prefix, with the app if with_app. */
static int add_pattern(rng_t *r, dlb_rule_t *rule, int with_app)
{
    char vals[1][DLB_NAME_MAX];
    unsigned app = below(r, 100), kind = below(r, 100);
    int err;

    /* Mostly a prefix, as people write them; one pattern with no literal
     * prefix, which every job name is tested against. */
    if (kind < 80)
        snprintf(vals[0], sizeof(vals[0]), "%s-*", prefixes[app % 12]);
    else if (kind < 92)
        snprintf(vals[0], sizeof(vals[0]), "%s-app-%02u?-*", prefixes[app % 12], app / 10);
    else if (kind < 97)
        snprintf(vals[0], sizeof(vals[0]), "%s-app-0[0-4]?-*", prefixes[app % 12]);
    else
        snprintf(vals[0], sizeof(vals[0]), "*-00000?");
    if ((err = add_cond(&rule->include, &rule->include_cnt, A_NAME, vals, 1)) || !with_app)
        return err;
    snprintf(vals[0], sizeof(vals[0]), "app-%03u", app);
    return add_cond(&rule->include, &rule->include_cnt, A_APP, vals, 1);
}

static void scalar_json(rng_t *r, char *buf, size_t size)
{
    unsigned k = below(r, 100);

    if (k < 50)
        snprintf(buf, size, "%u", below(r, 1000));
    else if (k < 65)
        snprintf(buf, size, "%u.%02u", below(r, 10), below(r, 100));
    else if (k < 80)
        snprintf(buf, size, "\"mode-%u\"", below(r, 8));
    else if (k < 90)
        snprintf(buf, size, "%s", chance(r, 500) ? "true" : "false");
    else
        snprintf(buf, size, "[%u,%u]", below(r, 100), below(r, 100));
}

/* {"worker":{"cpu":4},"ps":2}: 1-3 roles, each a number or a resource map. */
static void object_json(rng_t *r, char *buf, size_t size)
{
    size_t len = 0, n = 1 + below(r, 3);
    unsigned first = below(r, 4);

    len += (size_t)snprintf(buf + len, size - len, "{");
    for (size_t i = 0; i < n; i++) {
        const char *role = roles[(first + i) % 4];
        if (chance(r, 500))
            len += (size_t)snprintf(buf + len, size - len, "%s\"%s\":%u", i ? "," : "", role,
                                    1 + below(r, 16));
        else
            len += (size_t)snprintf(buf + len, size - len, "%s\"%s\":{\"cpu\":%u,\"memory\":%u}",
                                    i ? "," : "", role, 1 + below(r, 32), 1 + below(r, 64));
    }
    snprintf(buf + len, size - len, "}");
}

/* 1-3 distinct keys, 15 % of values objects under the object keys. */
static int add_configure(rng_t *r, dlb_rule_t *rule)
{
    size_t n = 1 + below(r, 3);

    if (!(rule->configure = calloc(n, sizeof(*rule->configure))))
        return DLB_ERR_NOMEM;
    while (rule->configure_cnt < n) {
        dlb_config_value_t *v = &rule->configure[rule->configure_cnt];
        char key[32], json[256];
        size_t i;
        if (chance(r, 150)) {
            snprintf(key, sizeof(key), "%s", obj_keys[below(r, 3)]);
            object_json(r, json, sizeof(json));
        } else {
            snprintf(key, sizeof(key), "opt.%02u", below(r, 61));
            scalar_json(r, json, sizeof(json));
        }
        for (i = 0; i < rule->configure_cnt && strcmp(rule->configure[i].key, key); i++)
            ;
        if (i < rule->configure_cnt)
            continue;
        if (!(v->key = strdup(key)) || !(v->json = strdup(json))) {
            free(v->key);
            v->key = NULL;
            return DLB_ERR_NOMEM;
        }
        rule->configure_cnt++;
    }
    return 0;
}

static int add_exclude(rng_t *r, dlb_rule_t *rule)
{
    unsigned k = below(r, 100);
    int err;

    if (k >= 80) {
        if ((err = add_plain(r, &rule->exclude, &rule->exclude_cnt, A_CLUSTER)))
            return err;
        return add_plain(r, &rule->exclude, &rule->exclude_cnt, A_FRAMEWORK);
    }
    return add_plain(r, &rule->exclude, &rule->exclude_cnt,
                     k < 40   ? A_CLUSTER
                     : k < 64 ? A_USER
                              : A_NS);
}

/* A shape by the weights, drawn again while the drawn one is at its cap. */
static const struct shape *draw_shape(rng_t *r, unsigned used[NSHAPES])
{
    for (;;) {
        unsigned pick = below(r, 1000), acc = 0;
        size_t k = 0;
        while ((acc += shapes[k].permille) <= pick)
            k++;
        if (!shapes[k].cap || used[k] < shapes[k].cap) {
            used[k]++;
            return &shapes[k];
        }
    }
}

static int make_rule(rng_t *r, const dlb_job_meta_t *pool, size_t i, unsigned used[NSHAPES],
                     dlb_rule_t *rule)
{
    const struct shape *s;
    char id[32], vals[1][DLB_NAME_MAX];
    int err = 0;

    snprintf(id, sizeof(id), "bench#%zu", i + 1);
    if (!(rule->id = strdup(id)))
        return DLB_ERR_NOMEM;
    rule->priority = chance(r, 250) ? 1 + (int)below(r, 10) : 0;
    s = draw_shape(r, used);
    if (s->kind == S_PLAIN) {
        for (int k = 0; k < s->n && !err; k++)
            err = add_plain(r, &rule->include, &rule->include_cnt, s->attrs[k]);
    } else if (s->kind == S_NAME) {
        snprintf(vals[0], sizeof(vals[0]), "%s", pool[below(r, POOL)].name);
        err = add_cond(&rule->include, &rule->include_cnt, A_NAME, vals, 1);
    } else if (s->kind == S_PATTERN) {
        err = add_pattern(r, rule, s->n == 2);
    }
    if (!err && chance(r, 100))
        err = add_exclude(r, rule);
    if (!err)
        err = add_configure(r, rule);
    return err;
}

static int make_rules(const dlb_job_meta_t *pool, size_t n, dlb_rules_t *out)
{
    unsigned used[NSHAPES] = {0};
    rng_t r = rng_seed(SEED ^ n);

    if (!(out->rules = calloc(n, sizeof(*out->rules))))
        return DLB_ERR_NOMEM;
    for (; out->cnt < n; out->cnt++)
        if (make_rule(&r, pool, out->cnt, used, &out->rules[out->cnt])) {
            out->cnt++; /* the partly made rule is freed too */
            return DLB_ERR_NOMEM;
        }
    return 0;
}

/* ---- timing ---------------------------------------------------------------- */

typedef struct mbench {
    const dlb_bench_matcher_opts_t *opts;
    dlb_job_meta_t *pool;
    uint32_t *draws; /* DRAWS indexes into pool, uniform */
} mbench_t;

typedef struct path {
    const char *name;
    int scan;
    uint64_t calls, in_scope;
    int64_t elapsed_ns;
    dlb_lat_t lat;
    dlb_matcher_stats_t stats; /* over the timed calls (matcher path) */
} path_t;

static int stopped(const dlb_bench_matcher_opts_t *o)
{
    return o->stop && *o->stop;
}

/* The next job is fetched while this one is matched: a consumer matches the
 * job it has just decoded, in cache, not one from a 32 MiB pool. */
static void prefetch_job(const dlb_job_meta_t *j)
{
    for (size_t off = 0; off < sizeof(*j); off += DLB_NAME_MAX)
        __builtin_prefetch((const char *)j + off);
}

/* Matches the jobs of b->draws in turn for b->opts->seconds. */
static int timed(const mbench_t *b, dlb_matcher_t *m, path_t *p, char *errstr, size_t size)
{
    int (*match)(dlb_matcher_t *, const dlb_job_meta_t *, dlb_match_t *) =
        p->scan ? dlb_matcher_match_scan : dlb_matcher_match;
    unsigned batch = p->scan ? 1 : BATCH, sample = p->scan ? 1 : SAMPLE;
    const dlb_bench_matcher_opts_t *o = b->opts;
    dlb_matcher_stats_t before, after;
    int64_t t0, now, t_end;
    dlb_match_t res;
    int err;

    dlb_matcher_stats(m, &before);
    t0 = dlb_lat_clock_ns();
    t_end = t0 + (int64_t)(o->seconds * 1e9);
    do {
        for (unsigned i = 0; i < batch; i++, p->calls++) {
            const dlb_job_meta_t *job = &b->pool[b->draws[p->calls % DRAWS]];
            prefetch_job(&b->pool[b->draws[(p->calls + 1) % DRAWS]]);
            if (p->calls % sample == 0) {
                int64_t t1 = dlb_lat_clock_ns();
                err = match(m, job, &res);
                if (dlb_lat_add(&p->lat, dlb_lat_clock_ns() - t1))
                    err = DLB_ERR_NOMEM;
            } else {
                err = match(m, job, &res);
            }
            if (err)
                return dlb_seterr(errstr, size, err, "%s: matching job %s failed: %s", p->name,
                                  job->name, dlb_err_name(err));
            p->in_scope += res.rule_ids_cnt;
        }
        now = dlb_lat_clock_ns();
    } while (now < t_end && !stopped(o));
    p->elapsed_ns = now - t0;
    dlb_matcher_stats(m, &after);
    p->stats.matches = after.matches - before.matches;
    p->stats.cache_hits = after.cache_hits - before.cache_hits;
    p->stats.cache_misses = after.cache_misses - before.cache_misses;
    p->stats.cache_evictions = after.cache_evictions - before.cache_evictions;
    p->stats.cache_entries = after.cache_entries;
    return 0;
}

static double per_s(const path_t *p)
{
    return p->elapsed_ns > 0 ? (double)p->calls * 1e9 / (double)p->elapsed_ns : 0;
}

static double hit_rate(const path_t *p)
{
    uint64_t n = p->stats.cache_hits + p->stats.cache_misses;

    return n ? (double)p->stats.cache_hits / (double)n : 0;
}

static void path_print(FILE *out, size_t rules, path_t *p, double compile_ms, double speedup)
{
    fprintf(out, "%-6zu %-8s %11.0f %9.1f %8.0f %8.0f %9.2f", rules, p->name, per_s(p),
            p->calls ? (double)p->elapsed_ns / (double)p->calls : 0, dlb_lat_pct(&p->lat, 50),
            dlb_lat_pct(&p->lat, 99), p->calls ? (double)p->in_scope / (double)p->calls : 0);
    if (p->scan)
        fprintf(out, " %8s %8s %10s\n", "-", "-", "-");
    else
        fprintf(out, " %7.2f%% %7.0fx %10.1f\n", 100 * hit_rate(p), speedup, compile_ms);
}

static cJSON *path_json(path_t *p)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "calls", (double)p->calls);
    cJSON_AddNumberToObject(o, "matches_per_s", per_s(p));
    cJSON_AddNumberToObject(o, "mean_ns", p->calls ? (double)p->elapsed_ns / (double)p->calls : 0);
    cJSON_AddNumberToObject(o, "p50_ns", dlb_lat_pct(&p->lat, 50));
    cJSON_AddNumberToObject(o, "p99_ns", dlb_lat_pct(&p->lat, 99));
    cJSON_AddNumberToObject(o, "max_sampled_ns", (double)p->lat.max);
    cJSON_AddNumberToObject(o, "sampled_calls", (double)p->lat.count);
    cJSON_AddNumberToObject(o, "rules_in_scope",
                            p->calls ? (double)p->in_scope / (double)p->calls : 0);
    if (!p->scan) {
        cJSON_AddNumberToObject(o, "cache_hit_rate", hit_rate(p));
        cJSON_AddNumberToObject(o, "cache_misses", (double)p->stats.cache_misses);
        cJSON_AddNumberToObject(o, "cache_evictions", (double)p->stats.cache_evictions);
        cJSON_AddNumberToObject(o, "cache_entries", (double)p->stats.cache_entries);
    }
    return o;
}

/* One rule count: generate, compile, warm up, time both paths, report. */
static int bench_count(const mbench_t *b, size_t n, cJSON *jrows, char *errstr, size_t size)
{
    const dlb_bench_matcher_opts_t *o = b->opts;
    path_t paths[2] = {{.name = "matcher"}, {.name = "scan", .scan = 1}};
    dlb_rules_t rules = {0};
    dlb_matcher_t *m = NULL;
    double compile_ms, speedup;
    dlb_match_t res;
    int64_t t0;
    cJSON *row;
    int err;

    if ((err = make_rules(b->pool, n, &rules))) {
        err = dlb_seterr(errstr, size, err, "generating %zu rules: out of memory", n);
        goto out;
    }
    t0 = dlb_lat_clock_ns();
    if ((err = dlb_matcher_new(&m, &rules, errstr, size)))
        goto out;
    compile_ms = (double)(dlb_lat_clock_ns() - t0) / 1e6;
    for (size_t i = 0; i < POOL && !err; i++)
        err = dlb_matcher_match(m, &b->pool[i], &res);
    if (err) {
        err = dlb_seterr(errstr, size, err, "warm-up: %s", dlb_err_name(err));
        goto out;
    }
    for (int i = 0; i < 2 && !stopped(o); i++)
        if ((err = timed(b, m, &paths[i], errstr, size)))
            goto out;
    speedup = per_s(&paths[1]) > 0 ? per_s(&paths[0]) / per_s(&paths[1]) : 0;
    path_print(o->out, n, &paths[0], compile_ms, speedup);
    path_print(o->out, n, &paths[1], 0, 0);
    fflush(o->out);
    if (jrows) {
        if (!(row = cJSON_CreateObject()) || !cJSON_AddItemToArray(jrows, row)) {
            cJSON_Delete(row);
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        cJSON_AddNumberToObject(row, "rules", (double)n);
        cJSON_AddNumberToObject(row, "compile_ms", compile_ms);
        cJSON_AddItemToObject(row, "matcher", path_json(&paths[0]));
        cJSON_AddItemToObject(row, "scan", path_json(&paths[1]));
        cJSON_AddNumberToObject(row, "speedup", speedup);
    }
out:
    dlb_lat_free(&paths[0].lat);
    dlb_lat_free(&paths[1].lat);
    dlb_matcher_destroy(m);
    dlb_rules_clear(&rules);
    return err;
}

int dlb_bench_matcher(const dlb_bench_matcher_opts_t *opts, cJSON **json, char *errstr,
                      size_t errstr_size)
{
    static const size_t counts[] = {10, 1000, 10000};
    mbench_t b = {.opts = opts};
    cJSON *root = NULL, *jrows = NULL;
    rng_t r = rng_seed(SEED + 1);
    int err = 0;

    if (json)
        *json = NULL;
    if (!(b.pool = make_pool()) || !(b.draws = malloc(DRAWS * sizeof(*b.draws)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < DRAWS; i++)
        b.draws[i] = below(&r, POOL);
    if (json) {
        if (!(root = cJSON_CreateObject()) ||
            !cJSON_AddStringToObject(root, "benchmark", "matcher") ||
            !(jrows = cJSON_AddArrayToObject(root, "rows"))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        cJSON_AddNumberToObject(root, "seed", (double)SEED);
        cJSON_AddNumberToObject(root, "jobs", POOL);
        cJSON_AddNumberToObject(root, "job_kinds", KINDS);
        cJSON_AddNumberToObject(root, "cache_entries", DLB_MATCHER_CACHE_ENTRIES);
        cJSON_AddNumberToObject(root, "seconds_per_path", opts->seconds);
    }
    fprintf(opts->out,
            "matcher bench: %d jobs of %d recurring kinds (Zipf), seed %#" PRIx64
            "; %.3g s per rule count and path; one core.\n"
            "matcher: dlb_matcher_match (index + cache of %d rule sets); scan: every rule "
            "tested, values merged, per call.\n"
            "P50/P99 from single timed calls (every %d-th matcher call, every scan call), clock "
            "read included.\n\n",
            POOL, KINDS, (uint64_t)SEED, opts->seconds, DLB_MATCHER_CACHE_ENTRIES, SAMPLE);
    fprintf(opts->out, "%-6s %-8s %11s %9s %8s %8s %9s %8s %8s %10s\n", "RULES", "PATH",
            "MATCHES/S", "MEAN_NS", "P50_NS", "P99_NS", "IN_SCOPE", "HIT_RATE", "SPEEDUP",
            "COMPILE_MS");
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]) && !stopped(opts); i++)
        if ((err = bench_count(&b, counts[i], jrows, errstr, errstr_size)))
            goto out;
    if (json) {
        *json = root;
        root = NULL;
    }
out:
    cJSON_Delete(root);
    free(b.pool);
    free(b.draws);
    return err;
}
