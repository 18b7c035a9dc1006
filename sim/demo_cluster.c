#include "demo_cluster.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "conf.h"
#include "err.h"
#include "event.h"

/* DLRover masters report a runtime sample every 15 s. */
#define SAMPLE_MS       15000
#define HISTORY_SAMPLES 8
/* A running live job: samples before its job_stage_ps_initial request, then
 * before job_stage_worker_initial, then its role's own stretch. */
#define INITIAL_SAMPLES        5
#define WORKER_INITIAL_SAMPLES 2
#define SEGMENT_SAMPLES        4
#define SCALING_SAMPLES        6
#define LEAK_SAMPLES           12
/* 44 samples = 11 minutes without a step: past the 10 minutes of
 * dlbrain.hang.seconds (600). */
#define HANG_SAMPLES      44
#define STRAGGLER_SAMPLES 5
/* History jobs start 20 min apart, so the newest-first history order is
 * the order they were generated in. */
#define HISTORY_SPACING_MS ((int64_t)20 * 60 * 1000)
/* Live jobs arrive in a burst, 2 s apart, like a team submitting a sweep. */
#define LIVE_SPACING_MS ((int64_t)2000)
/* Pods start training about a minute after the job is created. */
#define WARMUP_MS ((int64_t)60000)
/* An OOM'd pod's usage climbs to this share of its request before the kill. */
#define OOM_FILL 0.96
/* Step time grows linearly with the workers, T = a + b*w, the form Pollux
 * fits for the network part of a step; data/pollux/ncf's
 * scalability.csv gives b/a of about 0.014 for allreduce. PS jobs share their
 * PS, so we take 0.08: 4 workers run 3.0x one worker, 8 run 4.9x, 12 run 6.1x,
 * 16 run 7.0x, so a fitted throughput model sees diminishing returns. */
#define CONTENTION 0.08
/* Memory of a pod that is not in a situation stays flat within +-0.2%: a
 * least-squares line through a few noisy samples, stretched over the 30 min
 * of dlbrain.memory.horizon.seconds, would otherwise predict an OOM that is
 * not coming (4 samples at +-1% can "predict" +60%). Usage starts at 80% of
 * the top of its range at most, so noise never looks like a trend towards
 * 90% of the request. */
#define MEM_NOISE 0.002

typedef struct scenario {
    const char *name;       /* meta.scenario */
    const char *short_name; /* job uid prefix */
    const char *group;
    const char *app;
    const char *dataset;
    const char *storage;
    double ps_cpu_lo, ps_cpu_hi;  /* cores used per PS */
    int64_t ps_mem_lo, ps_mem_hi; /* MiB used per PS */
    double wk_cpu_lo, wk_cpu_hi;
    int64_t wk_mem_lo, wk_mem_hi;
    double ps_cpu_req, wk_cpu_req;    /* cores */
    double step_per_worker;           /* steps/s of one worker */
    int64_t dataset_lo, dataset_hi;   /* samples */
    int64_t var_size_lo, var_size_hi; /* MiB of model variables */
    int64_t embedding_dim;
    int64_t flops_lo, flops_hi;
} scenario_t;

/* Requests every scenario's pods get: usage stays below them (PS 8-20 GiB,
 * workers 4-12 GiB) except for the pods that are about to be OOMKilled. */
#define PS_MEM_REQ_MIB ((int64_t)20 * 1024)
#define WK_MEM_REQ_MIB ((int64_t)12 * 1024)

/* Usage ranges per scenario: CTR models carry the biggest embeddings (PS
 * memory), BERT the heaviest workers and the slowest steps. */
static const scenario_t scenarios[] = {
    {
        .name = "ctr-ranking",
        .short_name = "ctr",
        .group = "ads",
        .app = "ranking",
        .dataset = "ctr-clicks-30d",
        .storage = "hdfs",
        .ps_cpu_lo = 3.0,
        .ps_cpu_hi = 5.5,
        .ps_mem_lo = 12 * 1024,
        .ps_mem_hi = 18 * 1024,
        .wk_cpu_lo = 2.5,
        .wk_cpu_hi = 5.0,
        .wk_mem_lo = 6 * 1024,
        .wk_mem_hi = 10 * 1024,
        .ps_cpu_req = 8.0,
        .wk_cpu_req = 6.0,
        .step_per_worker = 3.0,
        .dataset_lo = 80000000,
        .dataset_hi = 200000000,
        .var_size_lo = 2048,
        .var_size_hi = 6144,
        .embedding_dim = 32,
        .flops_lo = 2000000000,
        .flops_hi = 6000000000,
    },
    {
        .name = "recsys-dnn",
        .short_name = "rec",
        .group = "feeds",
        .app = "recommend",
        .dataset = "feed-impressions-7d",
        .storage = "oss",
        .ps_cpu_lo = 2.0,
        .ps_cpu_hi = 4.0,
        .ps_mem_lo = 8 * 1024,
        .ps_mem_hi = 14 * 1024,
        .wk_cpu_lo = 2.0,
        .wk_cpu_hi = 4.0,
        .wk_mem_lo = 4 * 1024,
        .wk_mem_hi = 9 * 1024,
        .ps_cpu_req = 8.0,
        .wk_cpu_req = 6.0,
        .step_per_worker = 4.0,
        .dataset_lo = 40000000,
        .dataset_hi = 120000000,
        .var_size_lo = 1024,
        .var_size_hi = 3072,
        .embedding_dim = 16,
        .flops_lo = 1000000000,
        .flops_hi = 3000000000,
    },
    {
        /* BERT-base: 110 M parameters, 440 MB of float32 variables. */
        .name = "nlp-bert",
        .short_name = "nlp",
        .group = "search",
        .app = "qa",
        .dataset = "wiki-zh-corpus",
        .storage = "hdfs",
        .ps_cpu_lo = 3.0,
        .ps_cpu_hi = 5.0,
        .ps_mem_lo = 10 * 1024,
        .ps_mem_hi = 16 * 1024,
        .wk_cpu_lo = 4.0,
        .wk_cpu_hi = 6.0,
        .wk_mem_lo = 8 * 1024,
        .wk_mem_hi = 11 * 1024,
        .ps_cpu_req = 8.0,
        .wk_cpu_req = 8.0,
        .step_per_worker = 1.2,
        .dataset_lo = 8000000,
        .dataset_hi = 20000000,
        .var_size_lo = 420,
        .var_size_hi = 440,
        .embedding_dim = 768,
        .flops_lo = 20000000000,
        .flops_hi = 24000000000,
    },
};
enum { SC_CTR = 0, SC_REC = 1, SC_NLP = 2 };

static const char *const users[] = {"alice", "bob", "carol", "dave", "erin"};
static const int64_t batch_sizes[] = {512, 1024, 2048};

typedef struct rng {
    uint64_t s;
} rng_t;

/* splitmix64 (Steele, Lea, Flood 2014): tiny, and the same sequence on every
 * platform, which is all the demo needs. */
static uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static double rng_unit(rng_t *r)
{
    return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

static double rng_range(rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * rng_unit(r);
}

static int rng_int(rng_t *r, int lo, int hi) /* inclusive */
{
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

static int64_t rng_i64(rng_t *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* Two decimals, so the JSON text and the value read back are the same number. */
static double round2(double v)
{
    return (double)(int64_t)(v * 100.0 + 0.5) / 100.0;
}

typedef struct pod {
    char name[DLB_ID_MAX];
    const char *type;
    int ps;
    int index;
    double cpu_base;  /* cores at the job's initial load */
    int64_t mem_base; /* MiB before warm-up */
    double cpu_req;
    int64_t mem_req; /* MiB */
    /* Situations (0 = off). Memory climbs linearly from its usual value at
     * sample climb_k0 to OOM_FILL of the request at climb_k1. */
    int climb_k0, climb_k1;
    double cpu_frac;        /* CPU held at this fraction of the request (+-3%) */
    double mem_frac;        /* memory held at this fraction of the request */
    double leak_from, leak; /* memory = request x (leak_from + leak x sample index) */
    double slow;            /* this worker runs at this fraction of its peers' speed */
} pod_t;

#define MAX_PS      4
#define MAX_WORKERS 16

typedef struct job {
    const scenario_t *sc;
    char uid[32]; /* "ctr-h01-5f1c" */
    int index;    /* 1-based within the phase */
    int role;     /* dlb_demo_role_t, -1 for none */
    int seq;      /* next event sequence number */
    int64_t t0;
    int64_t grid0; /* sample k is at grid0 + (k + 1) x SAMPLE_MS */
    int k;         /* runtime samples written so far */
    rng_t rng;
    /* PS first, then MAX_WORKERS workers of which the first wk_cnt run. */
    pod_t pods[MAX_PS + MAX_WORKERS];
    int ps_cnt, wk_cnt, wk_initial;
    int64_t step;
    int hung; /* global_step stands still */
} job_t;

typedef struct gen {
    FILE *out;
    dlb_demo_counts_t *c;
    int err;
} gen_t;

static const char *const role_names[DLB_DEMO_ROLES] = {
    "worker-oom",     "ps-oom",       "cpu-hot-ps", "memory-hot-ps", "ps-underused",
    "worker-scaling", "memory-trend", "hang",       "straggler",
};

const char *dlb_demo_role_name(dlb_demo_role_t role)
{
    return role >= 0 && role < DLB_DEMO_ROLES ? role_names[role] : "none";
}

static void put(gen_t *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(gen_t *g, const char *fmt, ...)
{
    va_list ap;

    if (!g->out || g->err)
        return;
    va_start(ap, fmt);
    if (vfprintf(g->out, fmt, ap) < 0)
        g->err = 1;
    va_end(ap);
}

/* Starts a line: the type and the header every event shares. */
static void header(gen_t *g, job_t *j, const char *type, int64_t t)
{
    put(g,
        "{\"type\":\"%s\",\"event_id\":\"%s-ev-%04d\",\"event_time_ms\":%" PRId64
        ",\"job_uid\":\"%s\"",
        type, j->uid, j->seq, t, j->uid);
    j->seq++;
    g->c->events++;
}

static pod_t *ps_pod(job_t *j, int i)
{
    return &j->pods[i];
}

static pod_t *worker_pod(job_t *j, int i)
{
    return &j->pods[j->ps_cnt + i];
}

static void job_init(job_t *j, const scenario_t *sc, dlb_demo_phase_t phase, int index, int role,
                     uint64_t seed, int64_t t0)
{
    rng_t tag = {seed};

    memset(j, 0, sizeof(*j));
    j->sc = sc;
    j->index = index;
    j->role = role;
    j->t0 = t0;
    /* One tag per seed in every uid, so two runs with different seeds never
     * share job uids or event ids. */
    snprintf(j->uid, sizeof(j->uid), "%s-%c%02d-%04x", sc->short_name,
             phase == DLB_DEMO_HISTORY ? 'h' : 'l', index,
             (unsigned)(rng_next(&tag) >> 48) & 0xffffu);
    /* Each job its own stream, so one job's numbers do not depend on how many
     * jobs came before it. */
    j->rng.s = seed ^ ((uint64_t)phase + 1) * 0xd1b54a32d192ed03ULL ^
               (uint64_t)index * 0x8cb92ba72f3d8dd7ULL;
    rng_next(&j->rng);
    j->ps_cnt = rng_int(&j->rng, 2, MAX_PS);
    j->wk_cnt = j->wk_initial = rng_int(&j->rng, 4, 8);
    for (int i = 0; i < j->ps_cnt + MAX_WORKERS; i++) {
        pod_t *p = &j->pods[i];
        p->ps = i < j->ps_cnt;
        p->type = p->ps ? "ps" : "worker";
        p->index = p->ps ? i : i - j->ps_cnt;
        snprintf(p->name, sizeof(p->name), "%s-%s-%d", j->uid, p->type, p->index);
        if (p->ps) {
            p->cpu_base = rng_range(&j->rng, sc->ps_cpu_lo, sc->ps_cpu_hi);
            p->mem_base =
                (int64_t)rng_range(&j->rng, (double)sc->ps_mem_lo, (double)sc->ps_mem_hi * 0.8);
            p->cpu_req = sc->ps_cpu_req;
            p->mem_req = PS_MEM_REQ_MIB;
        } else {
            p->cpu_base = rng_range(&j->rng, sc->wk_cpu_lo, sc->wk_cpu_hi);
            p->mem_base =
                (int64_t)rng_range(&j->rng, (double)sc->wk_mem_lo, (double)sc->wk_mem_hi * 0.8);
            p->cpu_req = sc->wk_cpu_req;
            p->mem_req = WK_MEM_REQ_MIB;
        }
    }
    j->step = rng_i64(&j->rng, 100, 2000);
}

static void job_event_full(gen_t *g, job_t *j, const char *state, int64_t t)
{
    const scenario_t *sc = j->sc;
    rng_t *r = &j->rng;
    int64_t var_size = rng_i64(r, sc->var_size_lo, sc->var_size_hi) * DLB_MIB;
    int64_t vars = rng_i64(r, 200, 800);
    int64_t batch = batch_sizes[rng_next(r) % (sizeof(batch_sizes) / sizeof(batch_sizes[0]))];
    int epoch = rng_int(r, 1, 3);
    int64_t max_steps = rng_i64(r, 50, 200) * 1000;

    /* PS utilisation only shrinks PS of a job with an hour or more to go. */
    if (j->role == DLB_DEMO_PS_UNDERUSED) {
        batch = 512;
        epoch = 3;
        max_steps = 1000000;
    }
    header(g, j, "job_event", t);
    put(g,
        ",\"meta\":{\"name\":\"%s-train-%02d\",\"user\":\"%s\",\"group\":\"%s\",\"app\":\"%s\","
        "\"cluster\":\"dlc-east-1\",\"namespace\":\"training\",\"scenario\":\"%s\","
        "\"framework\":\"tensorflow\"}",
        sc->name, j->index, users[rng_next(r) % (sizeof(users) / sizeof(users[0]))], sc->group,
        sc->app, sc->name);
    put(g, ",\"state\":\"%s\"", state);
    put(g, ",\"hyper_params\":{\"batch_size\":%" PRId64 ",\"epoch\":%d,\"max_steps\":%" PRId64 "}",
        batch, epoch, max_steps);
    put(g, ",\"dataset\":{\"name\":\"%s\",\"size\":%" PRId64 ",\"storage\":\"%s\"}", sc->dataset,
        rng_i64(r, sc->dataset_lo, sc->dataset_hi), sc->storage);
    put(g,
        ",\"model\":{\"variable_count\":%" PRId64 ",\"op_count\":%" PRId64
        ",\"total_variable_size\":%" PRId64 ",\"recv_op_count\":%" PRId64 ",\"flops\":%" PRId64
        ",\"embedding_dimension\":%" PRId64 "}}\n",
        vars, vars * rng_i64(r, 40, 60), var_size, rng_i64(r, 80, 300),
        rng_i64(r, sc->flops_lo, sc->flops_hi), sc->embedding_dim);
}

static void job_event_state(gen_t *g, job_t *j, const char *state, const char *exit_reason,
                            int64_t t)
{
    header(g, j, "job_event", t);
    put(g, ",\"state\":\"%s\"", state);
    if (exit_reason)
        put(g, ",\"exit_reason\":\"%s\"", exit_reason);
    put(g, "}\n");
}

static void plan_request(gen_t *g, job_t *j, const char *stage, const char *oom_pod, int64_t t)
{
    header(g, j, "plan_request", t);
    put(g, ",\"stage\":\"%s\"", stage);
    if (oom_pod) /* plan_request v2: oom_pods names it too, oom_pod for v1 readers */
        put(g, ",\"oom_pod\":\"%s\",\"oom_pods\":[\"%s\"]", oom_pod, oom_pod);
    put(g, "}\n");
    g->c->plan_requests++;
    if (oom_pod)
        g->c->oom_requests++;
    for (int i = 0; dlb_stages[i] && i < DLB_DEMO_STAGES; i++)
        if (!strcmp(dlb_stages[i], stage))
            g->c->stage_requests[i]++;
}

/* A request one second after the newest sample, as a master asks after
 * looking at it. */
static void ask(gen_t *g, job_t *j, const char *stage)
{
    plan_request(g, j, stage, NULL, j->grid0 + (int64_t)j->k * SAMPLE_MS + 1000);
}

/* Steps/s of w workers (CONTENTION). */
static double nominal_speed(const scenario_t *sc, int w)
{
    return sc->step_per_worker * w / (1.0 + CONTENTION * (w - 1));
}

/* CPU of pod p at the current sample: jitter +-10% around its base (PS scale
 * with the job's throughput), or the fraction of the request a situation
 * holds it at; a hung job idles, a straggler's node starves it. */
static double pod_cpu(job_t *j, const pod_t *p, double load)
{
    double cpu;

    if (p->cpu_frac > 0) {
        cpu = p->cpu_req * p->cpu_frac * rng_range(&j->rng, 0.97, 1.03);
    } else {
        cpu = p->cpu_base * rng_range(&j->rng, 0.9, 1.1);
        if (p->ps)
            cpu *= load;
        if (j->hung)
            cpu *= p->ps ? 0.1 : 0.05;
        else if (p->slow > 0)
            cpu *= 0.5;
    }
    if (cpu > p->cpu_req)
        cpu = p->cpu_req;
    cpu = round2(cpu);
    return cpu < 0.01 ? 0.01 : cpu;
}

/* Memory (MiB) of pod p at sample k: flat, climbing to its OOM, held near
 * its request, or leaking. */
static int64_t pod_memory(job_t *j, const pod_t *p, int k)
{
    double m;

    if (p->climb_k1 > p->climb_k0 && k >= p->climb_k0) {
        double from = (double)p->mem_base, to = (double)p->mem_req * OOM_FILL;
        m = k >= p->climb_k1 ? to
                             : from + (to - from) * (k - p->climb_k0) / (p->climb_k1 - p->climb_k0);
    } else if (p->mem_frac > 0) {
        m = (double)p->mem_req * p->mem_frac * rng_range(&j->rng, 1 - MEM_NOISE, 1 + MEM_NOISE);
    } else if (p->leak > 0) {
        m = (double)p->mem_req * (p->leak_from + p->leak * k) *
            rng_range(&j->rng, 1 - MEM_NOISE, 1 + MEM_NOISE);
    } else {
        m = (double)p->mem_base * rng_range(&j->rng, 1 - MEM_NOISE, 1 + MEM_NOISE);
    }
    return (int64_t)m;
}

/* One runtime sample on the 15 s grid. Workers report their own speed; the
 * job's speed is their sum (asynchronous PS training). */
static void runtime_sample(gen_t *g, job_t *j)
{
    double per = nominal_speed(j->sc, j->wk_cnt) / j->wk_cnt;
    double load = nominal_speed(j->sc, j->wk_cnt) / nominal_speed(j->sc, j->wk_initial);
    double speeds[MAX_WORKERS], total = 0;
    int64_t t = j->grid0 + (int64_t)(j->k + 1) * SAMPLE_MS;

    for (int w = 0; w < j->wk_cnt; w++) {
        const pod_t *p = worker_pod(j, w);
        speeds[w] =
            j->hung ? 0.0
                    : round2(per * (p->slow > 0 ? p->slow : 1.0) * rng_range(&j->rng, 0.97, 1.03));
        total += speeds[w];
    }
    header(g, j, "runtime_sample", t);
    j->step += (int64_t)(total * SAMPLE_MS / 1000);
    put(g, ",\"global_step\":%" PRId64 ",\"speed\":%.2f,\"pods\":[", j->step, round2(total));
    for (int i = 0; i < j->ps_cnt + j->wk_cnt; i++) {
        const pod_t *p = &j->pods[i];
        double cpu = pod_cpu(j, p, load);
        int64_t mem = pod_memory(j, p, j->k);

        put(g,
            "%s{\"name\":\"%s\",\"type\":\"%s\",\"index\":%d,\"cpu_used\":%.2f,"
            "\"cpu_requested\":%.2f,\"memory_used\":%" PRId64 ",\"memory_requested\":%" PRId64,
            i ? "," : "", p->name, p->type, p->index, cpu, p->cpu_req, mem * DLB_MIB,
            p->mem_req * DLB_MIB);
        if (!p->ps)
            put(g, ",\"speed\":%.2f", speeds[i - j->ps_cnt]);
        put(g, "}");
    }
    put(g, "]}\n");
    j->k++;
}

static void samples(gen_t *g, job_t *j, int n)
{
    for (int i = 0; i < n; i++)
        runtime_sample(g, j);
}

static void oom_killed(gen_t *g, job_t *j, const pod_t *p, int64_t t)
{
    header(g, j, "node_event", t);
    put(g,
        ",\"kind\":\"oom_killed\",\"pod_name\":\"%s\",\"pod_type\":\"%s\",\"pod_index\":%d,"
        "\"node_name\":\"dlc-node-%02d\",\"phase\":\"Failed\",\"reason\":\"OOMKilled\","
        "\"message\":\"container tensorflow exceeded its memory limit\","
        "\"memory_requested\":%" PRId64 ",\"cpu_requested\":%.2f}\n",
        p->name, p->type, p->index, rng_int(&j->rng, 1, 40), p->mem_req * DLB_MIB, p->cpu_req);
    g->c->oom_events++;
}

static pod_t *pick_pod(job_t *j, int ps)
{
    return ps ? ps_pod(j, rng_int(&j->rng, 0, j->ps_cnt - 1))
              : worker_pod(j, rng_int(&j->rng, 0, j->wk_cnt - 1));
}

/* History: every job runs to its end. Job 1 has a worker OOMKilled halfway
 * (the worker restarts and finishes), the last job fails with WorkerError, so
 * worker-create's "completed jobs only" rule has something to skip. */
static void history_job(gen_t *g, job_t *j, int oom, int failed)
{
    pod_t *victim = NULL;

    j->grid0 = j->t0 + WARMUP_MS - SAMPLE_MS;
    job_event_full(g, j, "running", j->t0);
    plan_request(g, j, DLB_STAGE_CREATE, NULL, j->t0 + 1000);
    if (oom) {
        /* Climbs over samples 0..4, is killed before sample 5, and is back
         * at its usual level after the restart. */
        victim = pick_pod(j, 0);
        victim->climb_k0 = 0;
        victim->climb_k1 = HISTORY_SAMPLES / 2;
    }
    for (int k = 0; k < HISTORY_SAMPLES; k++) {
        if (victim && k == HISTORY_SAMPLES / 2 + 1) {
            oom_killed(g, j, victim, j->grid0 + (int64_t)(k + 1) * SAMPLE_MS - 7000);
            victim->climb_k0 = victim->climb_k1 = 0;
        }
        runtime_sample(g, j);
    }
    job_event_state(g, j, failed ? "failed" : "succeeded", failed ? "WorkerError" : "Completed",
                    j->grid0 + (int64_t)(HISTORY_SAMPLES + 1) * SAMPLE_MS);
    g->c->finished_jobs++;
    if (failed)
        g->c->failed_jobs++;
}

/* Situations that hold from the job's start. */
static void role_setup(job_t *j)
{
    pod_t *p;

    switch (j->role) {
    case DLB_DEMO_PS_UNDERUSED:
        /* DLRover's PS utilisation rule runs when some PS averages 25.6 cores
         * or more (80% of 32); it then shrinks the PS under 40% of their
         * request. PS 0 was given 36 cores and uses 75% (27 cores, not hot). */
        ps_pod(j, 0)->cpu_req = 36;
        ps_pod(j, 0)->cpu_frac = 0.75;
        for (int i = 1; i < j->ps_cnt; i++) {
            ps_pod(j, i)->cpu_req = 16;
            ps_pod(j, i)->cpu_base = rng_range(&j->rng, 2.0, 4.0);
        }
        break;
    case DLB_DEMO_WORKER_SCALING:
        /* Starts small, PS sized for 12 workers (at 12 the PS run about 2x
         * their 4-worker load, under 70% of 20 cores). */
        j->wk_cnt = j->wk_initial = 4;
        for (int i = 0; i < j->ps_cnt; i++)
            ps_pod(j, i)->cpu_req = 20;
        break;
    case DLB_DEMO_MEMORY_LEAK:
        /* +0.5% of the request every 15 s (about 240 MiB a minute of a 12 GiB
         * worker) from 56%: the request is reached about 15 minutes after the
         * plan request, well inside dlbrain.memory.horizon.seconds (1800). */
        p = pick_pod(j, 0);
        p->leak_from = 0.56;
        p->leak = 0.005;
        break;
    default:
        break;
    }
}

/* Live, second wave: a running job reports samples, asks for its PS and its
 * worker initial plans as a DLRover master does once they run, then goes
 * through its role and asks again. */
static void live_run(gen_t *g, job_t *j)
{
    const int64_t t = j->t0 + WARMUP_MS;
    pod_t *p;
    int64_t last;

    j->grid0 = t;
    role_setup(j);
    job_event_state(g, j, "running", NULL, t);
    samples(g, j, INITIAL_SAMPLES);
    ask(g, j, DLB_STAGE_PS_INITIAL);
    samples(g, j, WORKER_INITIAL_SAMPLES);
    ask(g, j, DLB_STAGE_WORKER_INITIAL);
    switch (j->role) {
    case DLB_DEMO_WORKER_OOM:
    case DLB_DEMO_PS_OOM:
        p = pick_pod(j, j->role == DLB_DEMO_PS_OOM);
        p->climb_k0 = j->k;
        p->climb_k1 = j->k + SEGMENT_SAMPLES - 1;
        samples(g, j, SEGMENT_SAMPLES);
        last = j->grid0 + (int64_t)j->k * SAMPLE_MS;
        oom_killed(g, j, p, last + 5000);
        /* The Go master asks at job_stage_running, the Python master at
         * job_stage_ps_running / job_stage_worker_running: both occur. */
        plan_request(g, j, j->role == DLB_DEMO_PS_OOM ? DLB_STAGE_PS_RUNNING : DLB_STAGE_RUNNING,
                     p->name, last + 6000);
        break;
    case DLB_DEMO_CPU_HOT_PS:
        pick_pod(j, 1)->cpu_frac = 0.9;
        samples(g, j, SEGMENT_SAMPLES);
        ask(g, j, DLB_STAGE_RUNNING);
        break;
    case DLB_DEMO_MEM_HOT_PS:
        pick_pod(j, 1)->mem_frac = 0.93;
        samples(g, j, SEGMENT_SAMPLES);
        ask(g, j, DLB_STAGE_PS_RUNNING);
        break;
    case DLB_DEMO_PS_UNDERUSED:
        samples(g, j, SEGMENT_SAMPLES);
        ask(g, j, DLB_STAGE_RUNNING);
        break;
    case DLB_DEMO_WORKER_SCALING:
        samples(g, j, 2);
        ask(g, j, DLB_STAGE_WORKER_RUNNING);
        j->wk_cnt = 8;
        samples(g, j, SCALING_SAMPLES);
        ask(g, j, DLB_STAGE_WORKER_RUNNING);
        j->wk_cnt = 12;
        samples(g, j, SCALING_SAMPLES);
        ask(g, j, DLB_STAGE_WORKER_RUNNING);
        break;
    case DLB_DEMO_MEMORY_LEAK:
        samples(g, j, LEAK_SAMPLES);
        ask(g, j, DLB_STAGE_RUNNING);
        break;
    case DLB_DEMO_HANG:
        j->hung = 1;
        samples(g, j, HANG_SAMPLES);
        ask(g, j, DLB_STAGE_RUNNING);
        break;
    case DLB_DEMO_STRAGGLER:
        pick_pod(j, 0)->slow = 0.3;
        samples(g, j, STRAGGLER_SAMPLES);
        ask(g, j, DLB_STAGE_WORKER_RUNNING);
        break;
    default:
        break;
    }
    g->c->running_jobs++;
}

int dlb_demo_phase_parse(const char *name, dlb_demo_phase_t *out)
{
    if (!strcmp(name, "history"))
        *out = DLB_DEMO_HISTORY;
    else if (!strcmp(name, "live"))
        *out = DLB_DEMO_LIVE;
    else
        return DLB_ERR_INVALID;
    return 0;
}

const char *dlb_demo_phase_name(dlb_demo_phase_t phase)
{
    return phase == DLB_DEMO_HISTORY ? "history" : "live";
}

int dlb_demo_write(const dlb_demo_opts_t *opts, FILE *out, dlb_demo_counts_t *counts, char *errstr,
                   size_t errstr_size)
{
    dlb_demo_counts_t local;
    gen_t g = {out, counts ? counts : &local, 0};
    int n = opts->jobs                        ? opts->jobs
            : opts->phase == DLB_DEMO_HISTORY ? DLB_DEMO_HISTORY_JOBS
                                              : DLB_DEMO_LIVE_JOBS;
    job_t j;

    memset(g.c, 0, sizeof(*g.c));
    if (opts->phase != DLB_DEMO_HISTORY && opts->phase != DLB_DEMO_LIVE)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "phase: unknown (%d)",
                          (int)opts->phase);
    if (n < 0 || n > DLB_DEMO_MAX_JOBS)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "jobs: %d is not in 1..%d", n,
                          DLB_DEMO_MAX_JOBS);
    if (opts->base_time_ms < 0)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "base time: negative (%" PRId64 ")",
                          opts->base_time_ms);
    g.c->jobs = n;
    if (opts->phase == DLB_DEMO_HISTORY) {
        for (int i = 0; i < n; i++) {
            job_init(&j, &scenarios[i % 2 ? SC_REC : SC_CTR], opts->phase, i + 1, -1, opts->seed,
                     opts->base_time_ms + (int64_t)i * HISTORY_SPACING_MS);
            history_job(&g, &j, i == 0, n >= 2 && i == n - 1);
        }
    } else {
        /* A third of the jobs run, at least one per role when there are that
         * many jobs; roles go round in their order, so two jobs give a worker
         * and a PS OOM. */
        int running = n <= DLB_DEMO_ROLES ? n : n / 3 > DLB_DEMO_ROLES ? n / 3 : DLB_DEMO_ROLES;

        /* First wave: every job is submitted and asks for its create plan. */
        for (int i = 0; i < n; i++) {
            job_init(&j, &scenarios[i % 3], opts->phase, i + 1,
                     i < running ? i % DLB_DEMO_ROLES : -1, opts->seed,
                     opts->base_time_ms + (int64_t)i * LIVE_SPACING_MS);
            job_event_full(&g, &j, "created", j.t0);
            plan_request(&g, &j, DLB_STAGE_CREATE, NULL, j.t0 + 500);
        }
        /* Second wave: the first jobs start. job_init again gives the same
         * uid and pods; the sequence continues after the two events above. */
        for (int i = 0; i < running; i++) {
            job_init(&j, &scenarios[i % 3], opts->phase, i + 1, i % DLB_DEMO_ROLES, opts->seed,
                     opts->base_time_ms + (int64_t)i * LIVE_SPACING_MS);
            j.seq = 2;
            live_run(&g, &j);
        }
    }
    if (g.err || (out && fflush(out)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "writing events failed");
    return 0;
}
