/* The demo's simulated cluster: every line is an event `emit` accepts, the
 * output is a function of the seed and base time, and each phase has the jobs,
 * plan requests and OOMs the demo script waits for. */
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
    int plan_requests;
    int oom_events;
    int oom_requests;
    int worker_ooms;
    int ps_ooms;
    int64_t min_time_ms, max_time_ms;
} sum_t;

#include "catalog_fixture.h"

/* Generate a phase into memory. @returns the malloc'ed text. */
static char *gen(dlb_demo_phase_t phase, uint64_t seed, int jobs, dlb_demo_counts_t *counts,
                 size_t *len)
{
    dlb_demo_opts_t o = {.phase = phase, .seed = seed, .base_time_ms = BASE, .jobs = jobs};
    char *buf = NULL, errstr[256];
    FILE *fp = open_memstream(&buf, len);

    assert_non_null(fp);
    assert_int_equal(dlb_demo_write(&o, fp, counts, errstr, sizeof(errstr)), 0);
    assert_int_equal(fclose(fp), 0);
    return buf;
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
        assert_true(gib >= 8.0 && gib <= 20.0);
        assert_true(p->cpu_used >= 1.0 && p->cpu_used <= 8.0);
    } else {
        assert_string_equal(p->type, "worker");
        assert_true(gib >= 4.0 && gib <= 12.0);
    }
}

/* Parse every line strictly (no generated ids or times), validate it, and
 * fold it into a per-job summary. */
static void summarize(const char *text, sum_t *s)
{
    const char *line = text;
    char errstr[512], want_id[DLB_ID_MAX + 16];

    memset(s, 0, sizeof(*s));
    s->min_time_ms = INT64_MAX;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        dlb_event_t ev = {0};
        job_sum_t *j;
        int64_t t;

        s->lines++;
        if (dlb_json_to_event(cat, line, len, 0, &ev, errstr, sizeof(errstr)) ||
            dlb_event_validate(&ev, errstr, sizeof(errstr))) {
            print_error("line %d: %s\n%.*s\n", s->lines, errstr, (int)len, line);
            fail();
        }
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
            assert_true(ev.u.rt.speed > 0 && ev.u.rt.global_step > 0);
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
            if (!strcmp(ev.u.req.stage, DLB_STAGE_CREATE)) {
                assert_false(ev.u.req.has_oom_pod);
                j->creates++;
            } else {
                assert_string_equal(ev.u.req.stage, DLB_STAGE_RUNNING);
                assert_true(ev.u.req.has_oom_pod);
                /* The master asks after the monitor reported the kill. */
                assert_true(j->oom_pods_cnt > 0);
                assert_string_equal(ev.u.req.oom_pod, j->oom_pods[j->oom_pods_cnt - 1]);
                j->oom_requests++;
                s->oom_requests++;
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
    char *text = gen(DLB_DEMO_HISTORY, 7, 0, &c, &len);
    sum_t *s = calloc(1, sizeof(*s));

    (void)state;
    assert_non_null(s);
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
    dlb_demo_counts_t c;
    size_t len;
    char *text = gen(DLB_DEMO_LIVE, 7, 0, &c, &len);
    sum_t *s = calloc(1, sizeof(*s));
    int running = 0;

    (void)state;
    assert_non_null(s);
    summarize(text, s);
    /* 24 x (meta, create) + 4 x (running, 3 samples, OOM, OOM request). */
    assert_int_equal(s->lines, 72);
    assert_int_equal(c.events, 72);
    assert_int_equal(s->jobs_cnt, 24);
    assert_int_equal(jobs_in(s, "ctr-ranking"), 8);
    assert_int_equal(jobs_in(s, "recsys-dnn"), 8);
    assert_int_equal(jobs_in(s, "nlp-bert"), 8);
    assert_int_equal(s->plan_requests, 28);
    assert_int_equal(c.plan_requests, 28);
    assert_int_equal(s->oom_requests, 4);
    assert_int_equal(c.oom_requests, 4);
    assert_int_equal(s->oom_events, 4);
    assert_int_equal(c.oom_events, 4);
    assert_int_equal(s->worker_ooms, 2);
    assert_int_equal(s->ps_ooms, 2);
    assert_int_equal(c.finished_jobs, 0);
    assert_int_equal(c.running_jobs, 4);
    for (int i = 0; i < s->jobs_cnt; i++) {
        const job_sum_t *j = &s->jobs[i];
        assert_int_equal(j->creates, 1);
        if (j->samples) {
            running++;
            assert_int_equal(j->samples, 3);
            assert_int_equal(j->oom_requests, 1);
            assert_string_equal(j->final_state, "running");
        } else {
            assert_int_equal(j->oom_requests, 0);
            assert_string_equal(j->final_state, "created");
        }
    }
    assert_int_equal(running, 4);
    assert_true(s->min_time_ms == BASE);
    free(s);
    free(text);
}

static void test_same_seed_same_output(void **state)
{
    size_t len1, len2;
    char *a = gen(DLB_DEMO_LIVE, 42, 0, NULL, &len1);
    char *b = gen(DLB_DEMO_LIVE, 42, 0, NULL, &len2);
    char *h1 = gen(DLB_DEMO_HISTORY, 42, 0, NULL, &len1);
    char *h2 = gen(DLB_DEMO_HISTORY, 42, 0, NULL, &len2);

    (void)state;
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
    char *a = gen(DLB_DEMO_HISTORY, 1, 2, NULL, &len);
    char *b = gen(DLB_DEMO_HISTORY, 2, 2, NULL, &len);
    sum_t *sa = calloc(1, sizeof(*sa)), *sb = calloc(1, sizeof(*sb));
    const char *ra, *rb;
    char errstr[512];
    dlb_event_t ea = {0}, eb = {0};
    int differ = 0;

    (void)state;
    assert_non_null(sa);
    assert_non_null(sb);
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

/* --jobs keeps the mix: live is a third per scenario, one in six runs (at
 * least a worker and a PS OOM); history alternates the two scenarios. */
static void test_scaled_job_counts(void **state)
{
    static const struct {
        dlb_demo_phase_t phase;
        int jobs, running, plan_requests, failed, per_scenario;
    } cases[] = {
        {DLB_DEMO_LIVE, 1, 1, 2, 0, 1},    {DLB_DEMO_LIVE, 3, 2, 5, 0, 1},
        {DLB_DEMO_LIVE, 6, 2, 8, 0, 2},    {DLB_DEMO_LIVE, 48, 8, 56, 0, 16},
        {DLB_DEMO_HISTORY, 1, 0, 1, 0, 1}, {DLB_DEMO_HISTORY, 2, 0, 2, 1, 1},
        {DLB_DEMO_HISTORY, 4, 0, 4, 1, 2},
    };
    sum_t *s = calloc(1, sizeof(*s));

    (void)state;
    assert_non_null(s);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlb_demo_counts_t c, only;
        dlb_demo_opts_t o = {
            .phase = cases[i].phase, .seed = 9, .base_time_ms = BASE, .jobs = cases[i].jobs};
        char errstr[256];
        size_t len;
        char *text = gen(cases[i].phase, 9, cases[i].jobs, &c, &len);

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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_phase),
        cmocka_unit_test(test_live_phase),
        cmocka_unit_test(test_same_seed_same_output),
        cmocka_unit_test(test_other_seed_other_numbers),
        cmocka_unit_test(test_base_time_shifts_times_only),
        cmocka_unit_test(test_scaled_job_counts),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
