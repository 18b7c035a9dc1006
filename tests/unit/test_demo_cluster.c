/* The demo's simulated cluster: every line is an event `emit` accepts, the
 * output is a function of the seed and base time, each phase has the jobs,
 * plan requests and OOMs the demo script waits for, and the live phase asks at
 * every stage, each running job in the situation its optimizer is for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "codec.h"
#include "conf.h"
#include "demo_cluster.h"
#include "err.h"

#define BASE     ((int64_t)1700000000000) /* 2023-11-14T22:13:20Z */
#define MAX_JOBS 64

typedef struct job_sum {
    char uid[DLB_ID_MAX];
    char scenario[DLB_NAME_MAX];
    char final_state[32];
    char exit_reason[32];
    int creates;      /* job_stage_create requests */
    int requests;     /* all plan requests */
    int oom_requests; /* requests with oom_pod, each after the matching node event */
    int samples;
    int next_seq; /* event ids are "<uid>-ev-NNNN" in output order */
    int64_t last_time_ms;
    char oom_pods[4][DLB_ID_MAX];
    int oom_pods_cnt;
} job_sum_t;

typedef struct sum {
    job_sum_t jobs[MAX_JOBS];
    int jobs_cnt;
    int lines;
    int by_type[DLB_EV__CNT];
    int by_stage[DLB_DEMO_STAGES];
    int plan_requests;
    int oom_events;
    int oom_requests;
    int worker_ooms;
    int ps_ooms;
    int64_t min_time_ms, max_time_ms;
} sum_t;

#include "catalog_fixture.h"

/* Generate a phase into memory: *text is malloc'ed. */
static void gen(dlb_demo_phase_t phase, uint64_t seed, int jobs, dlb_demo_counts_t *counts,
                char **text, size_t *len)
{
    dlb_demo_opts_t o = {.phase = phase, .seed = seed, .base_time_ms = BASE, .jobs = jobs};
    char errstr[256];
    FILE *fp = open_memstream(text, len);

    assert_non_null(fp);
    assert_int_equal(dlb_demo_write(&o, fp, counts, errstr, sizeof(errstr)), 0);
    assert_int_equal(fclose(fp), 0);
}

static int stage_index(const char *stage)
{
    for (int i = 0; dlb_stages[i]; i++)
        if (!strcmp(dlb_stages[i], stage))
            return i;
    fail_msg("unknown stage %s", stage);
    return -1;
}

static job_sum_t *job_of(sum_t *s, const char *uid)
{
    for (int i = 0; i < s->jobs_cnt; i++)
        if (!strcmp(s->jobs[i].uid, uid))
            return &s->jobs[i];
    assert_true(s->jobs_cnt < MAX_JOBS);
    memset(&s->jobs[s->jobs_cnt], 0, sizeof(job_sum_t));
    snprintf(s->jobs[s->jobs_cnt].uid, DLB_ID_MAX, "%s", uid);
    return &s->jobs[s->jobs_cnt++];
}

static void check_pod(const dlb_pod_usage_t *p)
{
    double gib = (double)p->memory_used / (double)DLB_GIB;

    assert_true(p->cpu_used > 0 && p->cpu_used <= p->cpu_requested);
    assert_true(p->memory_used > 0 && p->memory_used <= p->memory_requested);
    if (!strcmp(p->type, "ps")) {
        assert_true(gib >= 7.9 && gib <= 20.0);
        assert_false(p->has_speed);
    } else {
        assert_string_equal(p->type, "worker");
        assert_true(gib >= 3.9 && gib <= 12.0);
        /* Workers report their own speed (runtime_sample v2). */
        assert_true(p->has_speed);
    }
}

/* Parse one line strictly (no generated ids or times) and validate it. */
static void parse_line(const char *line, size_t len, int lineno, dlb_event_t *ev)
{
    char errstr[512];

    if (dlb_json_to_event(cat, line, len, 0, ev, errstr, sizeof(errstr)) ||
        dlb_event_validate(ev, errstr, sizeof(errstr))) {
        print_error("line %d: %s\n%.*s\n", lineno, errstr, (int)len, line);
        fail();
    }
}

/* Parse every line and fold it into a per-job summary. */
static void summarize(const char *text, sum_t *s)
{
    const char *line = text;
    char want_id[DLB_ID_MAX + 16];

    memset(s, 0, sizeof(*s));
    s->min_time_ms = INT64_MAX;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        dlb_event_t ev = {0};
        job_sum_t *j;
        int64_t t;

        s->lines++;
        parse_line(line, len, s->lines, &ev);
        s->by_type[ev.type]++;
        j = job_of(s, dlb_event_job_uid(&ev));
        snprintf(want_id, sizeof(want_id), "%s-ev-%04d", j->uid, j->next_seq++);
        assert_string_equal(dlb_event_id(&ev), want_id);
        t = dlb_event_time_ms(&ev);
        assert_true(t >= j->last_time_ms);
        j->last_time_ms = t;
        if (t < s->min_time_ms)
            s->min_time_ms = t;
        if (t > s->max_time_ms)
            s->max_time_ms = t;
        switch (ev.type) {
        case DLB_EV_JOB:
            if (ev.u.job.has_meta) {
                snprintf(j->scenario, sizeof(j->scenario), "%s", ev.u.job.meta.scenario);
                assert_string_equal(ev.u.job.meta.framework, "tensorflow");
                assert_true(ev.u.job.has_hyper_params && ev.u.job.has_dataset &&
                            ev.u.job.has_model);
            }
            assert_true(ev.u.job.has_state);
            snprintf(j->final_state, sizeof(j->final_state), "%s", ev.u.job.state);
            if (ev.u.job.has_exit_reason)
                snprintf(j->exit_reason, sizeof(j->exit_reason), "%s", ev.u.job.exit_reason);
            break;
        case DLB_EV_RUNTIME:
            j->samples++;
            /* Speed 0 only in the hung job, whose step stands still. */
            assert_true(ev.u.rt.speed >= 0 && ev.u.rt.global_step > 0);
            for (size_t i = 0; i < ev.u.rt.pods_cnt; i++)
                check_pod(&ev.u.rt.pods[i]);
            break;
        case DLB_EV_NODE:
            assert_string_equal(ev.u.node.kind, "oom_killed");
            assert_true(ev.u.node.has_memory_requested && ev.u.node.memory_requested > 0);
            assert_true(j->oom_pods_cnt < 4);
            snprintf(j->oom_pods[j->oom_pods_cnt++], DLB_ID_MAX, "%s", ev.u.node.pod_name);
            s->oom_events++;
            if (!strcmp(ev.u.node.pod_type, "ps"))
                s->ps_ooms++;
            else if (!strcmp(ev.u.node.pod_type, "worker"))
                s->worker_ooms++;
            break;
        case DLB_EV_PLAN_REQUEST:
            s->plan_requests++;
            s->by_stage[stage_index(ev.u.req.stage)]++;
            j->requests++;
            if (!strcmp(ev.u.req.stage, DLB_STAGE_CREATE)) {
                assert_false(ev.u.req.has_oom_pod);
                /* The first request of every job, before any sample. */
                assert_int_equal(j->requests, 1);
                assert_int_equal(j->samples, 0);
                j->creates++;
            } else if (ev.u.req.has_oom_pod) {
                assert_true(!strcmp(ev.u.req.stage, DLB_STAGE_RUNNING) ||
                            !strcmp(ev.u.req.stage, DLB_STAGE_PS_RUNNING));
                /* The master asks after the monitor reported the kill. */
                assert_true(j->oom_pods_cnt > 0);
                assert_string_equal(ev.u.req.oom_pod, j->oom_pods[j->oom_pods_cnt - 1]);
                j->oom_requests++;
                s->oom_requests++;
            } else {
                /* A job whose pod was OOMKilled asks nothing else: the router
                 * would answer it with an OOM plan. */
                assert_int_equal(j->oom_pods_cnt, 0);
                assert_true(j->samples > 0);
            }
            break;
        default:
            fail_msg("line %d: unexpected event type %d", s->lines, (int)ev.type);
        }
        dlb_event_clear(&ev);
        line += len + (nl ? 1 : 0);
    }
}

static int jobs_in(const sum_t *s, const char *scenario)
{
    int n = 0;

    for (int i = 0; i < s->jobs_cnt; i++)
        n += !strcmp(s->jobs[i].scenario, scenario);
    return n;
}

static int jobs_with_state(const sum_t *s, const char *state, const char *exit_reason)
{
    int n = 0;

    for (int i = 0; i < s->jobs_cnt; i++)
        n += !strcmp(s->jobs[i].final_state, state) && !strcmp(s->jobs[i].exit_reason, exit_reason);
    return n;
}

static void test_history_phase(void **state)
{
    dlb_demo_counts_t c;
    size_t len;
    char *text = NULL;
    sum_t *s = calloc(1, sizeof(*s));

    (void)state;
    assert_non_null(s);
    gen(DLB_DEMO_HISTORY, 7, 0, &c, &text, &len);
    summarize(text, s);
    /* 12 jobs x (meta, create request, 8 samples, final state) + 1 OOM. */
    assert_int_equal(s->lines, 133);
    assert_int_equal(c.events, 133);
    assert_int_equal(s->jobs_cnt, 12);
    assert_int_equal(c.jobs, 12);
    assert_int_equal(jobs_in(s, "ctr-ranking"), 6);
    assert_int_equal(jobs_in(s, "recsys-dnn"), 6);
    assert_int_equal(s->by_type[DLB_EV_JOB], 24);
    assert_int_equal(s->by_type[DLB_EV_RUNTIME], 96);
    assert_int_equal(s->by_type[DLB_EV_NODE], 1);
    assert_int_equal(s->plan_requests, 12);
    assert_int_equal(c.plan_requests, 12);
    assert_int_equal(c.stage_requests[0], 12);
    assert_int_equal(s->oom_events, 1);
    assert_int_equal(s->worker_ooms, 1);
    assert_int_equal(s->oom_requests, 0);
    assert_int_equal(c.oom_requests, 0);
    assert_int_equal(jobs_with_state(s, "succeeded", "Completed"), 11);
    assert_int_equal(jobs_with_state(s, "failed", "WorkerError"), 1);
    assert_int_equal(c.finished_jobs, 12);
    assert_int_equal(c.failed_jobs, 1);
    for (int i = 0; i < s->jobs_cnt; i++) {
        assert_int_equal(s->jobs[i].creates, 1);
        assert_int_equal(s->jobs[i].samples, 8);
    }
    assert_true(s->min_time_ms == BASE);
    /* Twelve jobs 20 min apart, each done in 3 minutes. */
    assert_true(s->max_time_ms == BASE + 11 * 20 * 60000 + 180000);
    free(s);
    free(text);
}

static void test_live_phase(void **state)
{
    /* 24 creates; 9 running jobs ask at ps_initial and worker_initial, then
     * once each (the scaling job three times) at a running stage. */
    static const int want_stage[DLB_DEMO_STAGES] = {24, 9, 9, 5, 2, 4};
    dlb_demo_counts_t c;
    size_t len;
    char *text = NULL;
    sum_t *s = calloc(1, sizeof(*s));
    int running = 0;

    (void)state;
    assert_non_null(s);
    gen(DLB_DEMO_LIVE, 7, 0, &c, &text, &len);
    summarize(text, s);
    assert_int_equal(s->lines, 246);
    assert_int_equal(c.events, 246);
    assert_int_equal(s->jobs_cnt, 24);
    assert_int_equal(jobs_in(s, "ctr-ranking"), 8);
    assert_int_equal(jobs_in(s, "recsys-dnn"), 8);
    assert_int_equal(jobs_in(s, "nlp-bert"), 8);
    assert_int_equal(s->plan_requests, 53);
    assert_int_equal(c.plan_requests, 53);
    for (int i = 0; i < DLB_DEMO_STAGES; i++) {
        assert_int_equal(s->by_stage[i], want_stage[i]);
        assert_int_equal(c.stage_requests[i], want_stage[i]);
    }
    assert_int_equal(s->oom_requests, 2);
    assert_int_equal(c.oom_requests, 2);
    assert_int_equal(s->oom_events, 2);
    assert_int_equal(c.oom_events, 2);
    assert_int_equal(s->worker_ooms, 1);
    assert_int_equal(s->ps_ooms, 1);
    assert_int_equal(c.finished_jobs, 0);
    assert_int_equal(c.running_jobs, 9);
    for (int i = 0; i < s->jobs_cnt; i++) {
        const job_sum_t *j = &s->jobs[i];
        assert_int_equal(j->creates, 1);
        if (j->samples) {
            running++;
            assert_true(j->samples >= 11);
            assert_true(j->requests >= 4);
            assert_string_equal(j->final_state, "running");
        } else {
            assert_int_equal(j->requests, 1);
            assert_string_equal(j->final_state, "created");
        }
    }
    assert_int_equal(running, 9);
    assert_true(s->min_time_ms == BASE);
    free(s);
    free(text);
}

/* ---- situations: what each running-stage request sees ---------------------- */

typedef enum sit {
    SIT_CPU_HOT_PS,
    SIT_MEM_HOT_PS,
    SIT_PS_UNDERUSED,
    SIT_SCALED,
    SIT_MEMORY_TREND,
    SIT_HANG,
    SIT_STRAGGLER,
    SIT__CNT
} sit_t;

#define MAX_SAMPLES 64

typedef struct job_hist {
    char uid[DLB_ID_MAX];
    dlb_event_t samples[MAX_SAMPLES];
    int cnt;
} job_hist_t;

static double avg_last(const job_hist_t *h, int n, const char *pod, int cpu_share)
{
    double sum = 0;
    int seen = 0;

    for (int k = h->cnt - n; k < h->cnt; k++) {
        const dlb_runtime_sample_t *rt = &h->samples[k].u.rt;
        for (size_t i = 0; i < rt->pods_cnt; i++)
            if (!strcmp(rt->pods[i].name, pod)) {
                sum += cpu_share ? rt->pods[i].cpu_used / rt->pods[i].cpu_requested
                                 : rt->pods[i].cpu_used;
                seen++;
            }
    }
    return seen ? sum / seen : 0;
}

static const dlb_pod_usage_t *pod_at(const job_hist_t *h, int k, const char *pod)
{
    const dlb_runtime_sample_t *rt = &h->samples[k].u.rt;

    for (size_t i = 0; i < rt->pods_cnt; i++)
        if (!strcmp(rt->pods[i].name, pod))
            return &rt->pods[i];
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The situations a request sees in its job's samples, by the thresholds of
 * ../shared/reference/dlrover-brain-algorithms.md and the dlbrain.* defaults. */
static unsigned situations(const job_hist_t *h, int64_t req_ms)
{
    const dlb_runtime_sample_t *last = &h->samples[h->cnt - 1].u.rt;
    unsigned found = 0;
    int busy = 0, idle = 0, counts[MAX_SAMPLES], distinct = 0;

    assert_true(h->cnt >= 3);
    for (size_t i = 0; i < last->pods_cnt; i++) {
        const dlb_pod_usage_t *p = &last->pods[i];
        int mem_hot = 1, rising = h->cnt >= 12;
        double max_share = 0;

        /* Hot PS: CPU over 80% of the request on average over the last 3,
         * memory over 90% in each of them. */
        if (!strcmp(p->type, "ps") && avg_last(h, 3, p->name, 1) > 0.8)
            found |= 1u << SIT_CPU_HOT_PS;
        for (int k = h->cnt - 3; k < h->cnt; k++) {
            const dlb_pod_usage_t *q = pod_at(h, k, p->name);
            mem_hot &= q && (double)q->memory_used > 0.9 * (double)q->memory_requested;
        }
        if (!strcmp(p->type, "ps") && mem_hot)
            found |= 1u << SIT_MEM_HOT_PS;
        /* PS utilisation: one PS averaging 25.6 cores or more, another whose
         * highest CPU is under 40% of its request. */
        for (int k = 0; k < h->cnt; k++) {
            const dlb_pod_usage_t *q = pod_at(h, k, p->name);
            if (q && q->cpu_used / q->cpu_requested > max_share)
                max_share = q->cpu_used / q->cpu_requested;
        }
        if (!strcmp(p->type, "ps")) {
            busy |= avg_last(h, h->cnt, p->name, 0) >= 25.6;
            idle |= max_share < 0.4;
        }
        /* A memory trend: rising in each of the last 12 samples, under 90%
         * now, past 90% of the request within 1800 s at that pace. */
        for (int k = h->cnt - 11; rising && k < h->cnt; k++) {
            const dlb_pod_usage_t *a = pod_at(h, k - 1, p->name), *b = pod_at(h, k, p->name);
            rising = a && b && b->memory_used > a->memory_used;
        }
        if (rising) {
            const dlb_pod_usage_t *a = pod_at(h, h->cnt - 12, p->name);
            double slope = (double)(p->memory_used - a->memory_used) / 11.0; /* per 15 s */
            if ((double)p->memory_used < 0.9 * (double)p->memory_requested &&
                (double)p->memory_used + slope * 120 > 0.9 * (double)p->memory_requested)
                found |= 1u << SIT_MEMORY_TREND;
        }
        /* Straggler: under half its peers' median speed in the last 3. */
        if (p->has_speed) {
            int slow = 1;
            for (int k = h->cnt - 3; k < h->cnt; k++) {
                const dlb_runtime_sample_t *rt = &h->samples[k].u.rt;
                double peers[32];
                size_t n = 0;
                const dlb_pod_usage_t *me = pod_at(h, k, p->name);
                for (size_t m = 0; m < rt->pods_cnt && n < 32; m++)
                    if (rt->pods[m].has_speed && strcmp(rt->pods[m].name, p->name))
                        peers[n++] = rt->pods[m].speed;
                qsort(peers, n, sizeof(peers[0]), cmp_double);
                slow &= me && n > 0 && peers[n / 2] > 0 && me->speed < 0.5 * peers[n / 2];
            }
            if (slow)
                found |= 1u << SIT_STRAGGLER;
        }
    }
    if (busy && idle && !(found & (1u << SIT_CPU_HOT_PS)))
        found |= 1u << SIT_PS_UNDERUSED;
    /* Throughput model: three worker counts or more. */
    for (int k = 0; k < h->cnt; k++) {
        int w = 0, seen = 0;
        for (size_t i = 0; i < h->samples[k].u.rt.pods_cnt; i++)
            w += !strcmp(h->samples[k].u.rt.pods[i].type, "worker");
        for (int m = 0; m < distinct; m++)
            seen |= counts[m] == w;
        if (!seen)
            counts[distinct++] = w;
    }
    if (distinct >= 3)
        found |= 1u << SIT_SCALED;
    /* Hang: no step for more than 600 s before the request. */
    for (int k = h->cnt - 1; k > 0; k--)
        if (h->samples[k - 1].u.rt.global_step != last->global_step) {
            if (req_ms - h->samples[k - 1].u.rt.event_time_ms > 600000)
                found |= 1u << SIT_HANG;
            break;
        }
    return found;
}

/* Each situation is seen by exactly one job's request, whatever the seed. */
static void live_situations(uint64_t seed)
{
    static const char *const names[SIT__CNT] = {"cpu-hot PS",      "memory-hot PS", "PS under-used",
                                                "3 worker counts", "memory trend",  "hang",
                                                "straggler"};
    job_hist_t *hs = calloc(MAX_JOBS, sizeof(*hs));
    int hs_cnt = 0, seen[SIT__CNT] = {0}, asked = 0, lineno = 0;
    char *text = NULL;
    const char *line;
    size_t len;

    assert_non_null(hs);
    gen(DLB_DEMO_LIVE, seed, 0, NULL, &text, &len);
    for (line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        dlb_event_t ev = {0};
        job_hist_t *h = NULL;

        parse_line(line, n, ++lineno, &ev);
        for (int i = 0; i < hs_cnt; i++)
            if (!strcmp(hs[i].uid, dlb_event_job_uid(&ev)))
                h = &hs[i];
        if (!h) {
            assert_true(hs_cnt < MAX_JOBS);
            h = &hs[hs_cnt++];
            snprintf(h->uid, sizeof(h->uid), "%s", dlb_event_job_uid(&ev));
        }
        if (ev.type == DLB_EV_RUNTIME) {
            assert_true(h->cnt < MAX_SAMPLES);
            h->samples[h->cnt++] = ev;
            memset(&ev, 0, sizeof(ev));
        } else if (ev.type == DLB_EV_PLAN_REQUEST && !ev.u.req.has_oom_pod &&
                   (!strcmp(ev.u.req.stage, DLB_STAGE_RUNNING) ||
                    !strcmp(ev.u.req.stage, DLB_STAGE_PS_RUNNING) ||
                    !strcmp(ev.u.req.stage, DLB_STAGE_WORKER_RUNNING))) {
            unsigned f = situations(h, ev.u.req.event_time_ms);
            asked++;
            for (int i = 0; i < SIT__CNT; i++)
                seen[i] += !!(f & (1u << i));
        } else if (ev.type == DLB_EV_PLAN_REQUEST && !ev.u.req.has_oom_pod &&
                   strcmp(ev.u.req.stage, DLB_STAGE_CREATE)) {
            /* ps_initial, worker_initial: an ordinary running job. */
            assert_int_equal(situations(h, ev.u.req.event_time_ms) & ~(1u << SIT_PS_UNDERUSED), 0);
        }
        dlb_event_clear(&ev);
        line += n + (nl ? 1 : 0);
    }
    /* 9 running-stage requests without an OOM, the scaling job's three among
     * them; each situation is seen by exactly one job's request. */
    assert_int_equal(asked, 9);
    for (int i = 0; i < SIT__CNT; i++)
        if (seen[i] != 1)
            fail_msg("seed %llu: %s: seen by %d requests, want 1", (unsigned long long)seed,
                     names[i], seen[i]);
    for (int i = 0; i < hs_cnt; i++)
        for (int k = 0; k < hs[i].cnt; k++)
            dlb_event_clear(&hs[i].samples[k]);
    free(hs);
    free(text);
}

static void test_live_situations(void **state)
{
    static const uint64_t seeds[] = {1, 7, 42, 1234, 99991};

    (void)state;
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
        live_situations(seeds[i]);
}

static void test_same_seed_same_output(void **state)
{
    size_t len;
    char *a = NULL, *b = NULL, *h1 = NULL, *h2 = NULL;

    (void)state;
    gen(DLB_DEMO_LIVE, 42, 0, NULL, &a, &len);
    gen(DLB_DEMO_LIVE, 42, 0, NULL, &b, &len);
    gen(DLB_DEMO_HISTORY, 42, 0, NULL, &h1, &len);
    gen(DLB_DEMO_HISTORY, 42, 0, NULL, &h2, &len);
    assert_string_equal(a, b);
    assert_string_equal(h1, h2);
    free(a);
    free(b);
    free(h1);
    free(h2);
}

/* Another seed: other job uids (so no event id collides) and other numbers
 * (the usage of the same pod of the same job position). */
static void test_other_seed_other_numbers(void **state)
{
    size_t len;
    char *a = NULL, *b = NULL;
    sum_t *sa = calloc(1, sizeof(*sa)), *sb = calloc(1, sizeof(*sb));
    const char *ra, *rb;
    char errstr[512];
    dlb_event_t ea = {0}, eb = {0};
    int differ = 0;

    (void)state;
    assert_non_null(sa);
    assert_non_null(sb);
    gen(DLB_DEMO_HISTORY, 1, 2, NULL, &a, &len);
    gen(DLB_DEMO_HISTORY, 2, 2, NULL, &b, &len);
    summarize(a, sa);
    summarize(b, sb);
    assert_int_equal(sa->lines, sb->lines);
    assert_string_not_equal(sa->jobs[0].uid, sb->jobs[0].uid);
    /* Same structure, different values: compare the first runtime samples. */
    ra = strstr(a, "{\"type\":\"runtime_sample\"");
    rb = strstr(b, "{\"type\":\"runtime_sample\"");
    assert_non_null(ra);
    assert_non_null(rb);
    assert_int_equal(dlb_json_to_event(cat, ra, strcspn(ra, "\n"), 0, &ea, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(dlb_json_to_event(cat, rb, strcspn(rb, "\n"), 0, &eb, errstr, sizeof(errstr)),
                     0);
    assert_int_equal(ea.u.rt.event_time_ms, eb.u.rt.event_time_ms);
    for (size_t i = 0; i < ea.u.rt.pods_cnt && i < eb.u.rt.pods_cnt; i++)
        differ += ea.u.rt.pods[i].memory_used != eb.u.rt.pods[i].memory_used;
    assert_true(differ > 0);
    dlb_event_clear(&ea);
    dlb_event_clear(&eb);
    free(sa);
    free(sb);
    free(a);
    free(b);
}

/* Remove the digits of every event_time_ms, in place. */
static void strip_times(char *s)
{
    char *w = s;

    while (*s) {
        if (!strncmp(s, "\"event_time_ms\":", 16)) {
            memmove(w, s, 16);
            w += 16;
            s += 16;
            while (*s >= '0' && *s <= '9')
                s++;
        } else {
            *w++ = *s++;
        }
    }
    *w = '\0';
}

static void test_base_time_shifts_times_only(void **state)
{
    dlb_demo_opts_t o = {.phase = DLB_DEMO_LIVE, .seed = 3, .base_time_ms = BASE, .jobs = 3};
    char *a = NULL, *b = NULL, errstr[256];
    size_t la, lb;
    FILE *fa = open_memstream(&a, &la), *fb = open_memstream(&b, &lb);
    char *p, *q;

    (void)state;
    assert_int_equal(dlb_demo_write(&o, fa, NULL, errstr, sizeof(errstr)), 0);
    o.base_time_ms = BASE + 1000;
    assert_int_equal(dlb_demo_write(&o, fb, NULL, errstr, sizeof(errstr)), 0);
    fclose(fa);
    fclose(fb);
    /* Every time is 1000 ms later; with the times cut out the text is equal. */
    for (p = a, q = b; (p = strstr(p, "\"event_time_ms\":")); p++, q++) {
        assert_non_null(q = strstr(q, "\"event_time_ms\":"));
        assert_true(strtoll(q + 16, NULL, 10) == strtoll(p + 16, NULL, 10) + 1000);
    }
    assert_null(strstr(q, "\"event_time_ms\":"));
    strip_times(a);
    strip_times(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

/* --jobs keeps the mix: live is a third per scenario; up to 9 jobs all run,
 * above that a third (at least 9), roles in turn, the scaling one asking 5
 * times and the others 3 besides the create; history alternates the two
 * scenarios. */
static void test_scaled_job_counts(void **state)
{
    static const struct {
        dlb_demo_phase_t phase;
        int jobs, running, plan_requests, failed, per_scenario;
    } cases[] = {
        {DLB_DEMO_LIVE, 1, 1, 4, 0, 1},      {DLB_DEMO_LIVE, 3, 3, 12, 0, 1},
        {DLB_DEMO_LIVE, 6, 6, 26, 0, 2},     {DLB_DEMO_LIVE, 18, 9, 47, 0, 6},
        {DLB_DEMO_LIVE, 48, 16, 100, 0, 16}, {DLB_DEMO_HISTORY, 1, 0, 1, 0, 1},
        {DLB_DEMO_HISTORY, 2, 0, 2, 1, 1},   {DLB_DEMO_HISTORY, 4, 0, 4, 1, 2},
    };
    sum_t *s = calloc(1, sizeof(*s));

    (void)state;
    assert_non_null(s);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlb_demo_counts_t c, only;
        dlb_demo_opts_t o = {
            .phase = cases[i].phase, .seed = 9, .base_time_ms = BASE, .jobs = cases[i].jobs};
        char errstr[256], *text = NULL;
        size_t len;

        gen(cases[i].phase, 9, cases[i].jobs, &c, &text, &len);
        summarize(text, s);
        assert_int_equal(s->jobs_cnt, cases[i].jobs);
        assert_int_equal(c.running_jobs, cases[i].running);
        assert_int_equal(s->plan_requests, cases[i].plan_requests);
        assert_int_equal(c.plan_requests, cases[i].plan_requests);
        assert_int_equal(c.failed_jobs, cases[i].failed);
        assert_int_equal(jobs_in(s, "ctr-ranking"), cases[i].per_scenario);
        if (cases[i].phase == DLB_DEMO_LIVE && cases[i].running >= 2) {
            assert_true(s->worker_ooms >= 1);
            assert_true(s->ps_ooms >= 1);
        }
        /* Counting without output gives the same numbers. */
        assert_int_equal(dlb_demo_write(&o, NULL, &only, errstr, sizeof(errstr)), 0);
        assert_memory_equal(&c, &only, sizeof(c));
        assert_int_equal(c.events, s->lines);
        free(text);
    }
    free(s);
}

static void test_bad_options(void **state)
{
    dlb_demo_opts_t o = {.phase = DLB_DEMO_LIVE, .seed = 1, .base_time_ms = BASE, .jobs = -1};
    dlb_demo_phase_t ph;
    char errstr[256];

    (void)state;
    assert_int_equal(dlb_demo_write(&o, NULL, NULL, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    o.jobs = DLB_DEMO_MAX_JOBS + 1;
    assert_int_equal(dlb_demo_write(&o, NULL, NULL, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    assert_string_equal(errstr, "jobs: 1001 is not in 1..1000");
    o.jobs = 2;
    o.base_time_ms = -5;
    assert_int_equal(dlb_demo_write(&o, NULL, NULL, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    assert_int_equal(dlb_demo_phase_parse("live", &ph), 0);
    assert_int_equal(ph, DLB_DEMO_LIVE);
    assert_int_equal(dlb_demo_phase_parse("history", &ph), 0);
    assert_int_equal(ph, DLB_DEMO_HISTORY);
    assert_int_equal(dlb_demo_phase_parse("past", &ph), DLB_ERR_INVALID);
    assert_string_equal(dlb_demo_role_name(DLB_DEMO_HANG), "hang");
    assert_string_equal(dlb_demo_role_name(DLB_DEMO_ROLES), "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_phase),
        cmocka_unit_test(test_live_phase),
        cmocka_unit_test(test_live_situations),
        cmocka_unit_test(test_same_seed_same_output),
        cmocka_unit_test(test_other_seed_other_numbers),
        cmocka_unit_test(test_base_time_shifts_times_only),
        cmocka_unit_test(test_scaled_job_counts),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
