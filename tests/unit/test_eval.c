/* The evaluator's figures (env/eval) on a tiny workload whose every
 * figure is worked out by hand in the comments, then the outputs built from
 * them: the table, JSON and the HTML report with its SVG plots.
 *
 * The workload, times in seconds after T0:
 *
 *   job  created  pending  running  final            JCT   pending
 *   j0   0        10       60       660 succeeded    660   60 - 0 = 60
 *   j1   0        -        120      1200 failed      1200  120
 *   j2   100      100      100      1900 succeeded   1800  0
 *   j3   200      -        500      -                -     300
 *   j4   300      -        -        -                -     (never ran)
 *
 * Runtime samples (sums over pods; memory in GiB), with the duration each
 * stands for: the gap to the job's next sample, the last one the job's
 * median gap; j1 has one sample, so the environment's median gap.
 *
 *   key  t    cpu used/req  mem used/req  duration
 *   0    60   1 / 2         1 / 4         60
 *   0    120  3 / 4         2 / 4         120
 *   0    240  2 / 4         3 / 4         median(60, 120) = 90
 *   1    120  1 / 1         1 / 2         median(60 120 30 30 30) = 30
 *   2    100  1 / 2         1 / 2         30
 *   2    130  1 / 2         1 / 2         30
 *   2    160  2 / 2         1 / 2         30
 *   2    190  2 / 2         1 / 2         median(30, 30, 30) = 30
 *
 * The same samples by role (pod type): j0 has a worker and a PS, j1 a worker
 * alone, j2 a worker and a chief, which counts in the totals only:
 *
 *   key  t    worker cpu  worker mem  ps cpu   ps mem   duration
 *   0    60   1 / 1       1 / 2       0 / 1    0 / 2    60
 *   0    120  2 / 3       1 / 2       1 / 1    1 / 2    120
 *   0    240  2 / 3       2 / 2       0 / 1    1 / 2    90
 *   1    120  1 / 1       1 / 2       -        -        30
 *   2    100  .5 / 1      .5 / 1      -        -        30
 *   2    130  .5 / 1      .5 / 1      -        -        30
 *   2    160  1 / 1       .5 / 1      -        -        30
 *   2    190  1 / 1       .5 / 1      -        -        30
 *
 * 6 pods (the loader's count): j0's worker-0, ps-0 and worker-1 (OOM-killed
 * between samples), j1's worker-0, j2's worker-0 and chief-0.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "err.h"
#include "eval.h"
#include "eval_report.h"
#include "svg.h"

#define T0  1700000000000LL
#define S   1000LL /* ms per second */
#define GiB 1073741824.0

/* Figures are sums and quotients of small numbers: compare to 1e-9 relative. */
#define assert_near(got, want)                                                                     \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        if (!(fabs(g_ - w_) <= 1e-9 * fmax(1, fabs(w_))))                                          \
            fail_msg("%s = %.17g, expected %.17g", #got, g_, w_);                                  \
    } while (0)

static dlb_eval_job_t jobs[] = {
    {T0, T0, T0 + 60 * S, T0 + 660 * S, "succeeded"},
    {T0, T0, T0 + 120 * S, T0 + 1200 * S, "failed"},
    {T0 + 100 * S, T0 + 100 * S, T0 + 100 * S, T0 + 1900 * S, "succeeded"},
    {T0 + 200 * S, T0 + 200 * S, T0 + 500 * S, -1, ""},
    {T0 + 300 * S, T0 + 300 * S, -1, -1, ""},
};

/* Totals, then {worker, ps}: {cpu used, requested, memory used, requested}. */
static dlb_eval_sample_t samples[] = {
    {0, T0 + 60 * S, 1, 2, 1 * GiB, 4 * GiB, {{1, 1, 1 * GiB, 2 * GiB}, {0, 1, 0, 2 * GiB}}},
    {0, T0 + 120 * S, 3, 4, 2 * GiB, 4 * GiB, {{2, 3, 1 * GiB, 2 * GiB}, {1, 1, 1 * GiB, 2 * GiB}}},
    {0, T0 + 240 * S, 2, 4, 3 * GiB, 4 * GiB, {{2, 3, 2 * GiB, 2 * GiB}, {0, 1, 1 * GiB, 2 * GiB}}},
    {1, T0 + 120 * S, 1, 1, 1 * GiB, 2 * GiB, {{1, 1, 1 * GiB, 2 * GiB}}},
    {2, T0 + 100 * S, 1, 2, 1 * GiB, 2 * GiB, {{.5, 1, .5 * GiB, 1 * GiB}}},
    {2, T0 + 130 * S, 1, 2, 1 * GiB, 2 * GiB, {{.5, 1, .5 * GiB, 1 * GiB}}},
    {2, T0 + 160 * S, 2, 2, 1 * GiB, 2 * GiB, {{1, 1, .5 * GiB, 1 * GiB}}},
    {2, T0 + 190 * S, 2, 2, 1 * GiB, 2 * GiB, {{1, 1, .5 * GiB, 1 * GiB}}},
};

/* Out of order on purpose: the figures must not depend on it. */
static dlb_eval_oom_t ooms[] = {
    {"j0", "j0-worker-0", T0 + 300 * S}, {"j1", "j1-worker-0", T0 + 400 * S},
    {"j0", "j0-worker-1", T0 + 200 * S}, {"j0", "j0-worker-0", T0 + 100 * S},
    {"j0", "j0-worker-0", T0 + 500 * S},
};

static dlb_eval_count_t plans[] = {
    {"job_stage_create", "opt_a", 3},
    {"job_stage_running", "opt_a", 1},
    {"job_stage_running", "opt_b", 2},
};

static dlb_eval_input_t workload(void)
{
    return (dlb_eval_input_t){jobs, 5, samples, 8, ooms, 5, plans, 3, 7, 6};
}

static void test_quantile(void **state)
{
    const double v[] = {10, 20, 40, 80};
    (void)state;

    assert_true(isnan(dlb_eval_quantile(v, 0, 0.5)));
    assert_near(dlb_eval_quantile(v, 1, 0.95), 10);
    assert_near(dlb_eval_quantile(v, 4, 0), 10);
    assert_near(dlb_eval_quantile(v, 4, 1), 80);
    assert_near(dlb_eval_quantile(v, 4, 0.5), 30);  /* h = 1.5: 20 + .5 (40 - 20) */
    assert_near(dlb_eval_quantile(v, 4, 0.95), 74); /* h = 2.85: 40 + .85 (80 - 40) */
    assert_near(dlb_eval_quantile(v, 2, 0.5), 15);  /* h = .5 */
}

static void test_weights(void **state)
{
    /* The durations of the header's table, in ms. */
    const double want[] = {60, 120, 90, 30, 30, 30, 30, 30};
    dlb_eval_sample_t bad[2] = {{0, 200, 0, 0, 0, 0}, {0, 100, 0, 0, 0, 0}};
    double w[8];
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_weights(samples, 8, w, errstr, sizeof(errstr)), 0);
    for (size_t i = 0; i < 8; i++)
        assert_near(w[i], want[i] * S);
    /* A lone sample anywhere and no gap at all: it stands for nothing. */
    assert_int_equal(dlb_eval_weights(samples + 3, 1, w, errstr, sizeof(errstr)), 0);
    assert_near(w[0], 0);
    /* Time going back within a job, and a job key going back. */
    assert_int_equal(dlb_eval_weights(bad, 2, w, errstr, sizeof(errstr)), DLB_ERR_INVALID);
    assert_non_null(strstr(errstr, "out of order"));
    bad[0] = (dlb_eval_sample_t){1, 100, 0, 0, 0, 0};
    bad[1] = (dlb_eval_sample_t){0, 200, 0, 0, 0, 0};
    assert_int_equal(dlb_eval_weights(bad, 2, w, errstr, sizeof(errstr)), DLB_ERR_INVALID);
}

static void test_jobs(void **state)
{
    dlb_eval_input_t in = workload();
    dlb_eval_figures_t f = {0};
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    assert_int_equal(f.jobs, 5);
    assert_int_equal(f.finished, 3);
    assert_int_equal(f.succeeded, 2);
    assert_int_equal(f.failed, 1);
    assert_int_equal(f.stopped, 0);
    assert_int_equal(f.unfinished, 2);
    assert_int_equal(f.never_ran, 1);
    assert_near(f.completion_rate, 0.4); /* j0 and j2 succeeded, of 5 */
    /* JCT: 660 1200 1800 */
    assert_int_equal(f.jct.n, 3);
    assert_near(f.jct.mean, 1220); /* 3660 / 3 */
    assert_near(f.jct.p50, 1200);
    assert_near(f.jct.p95, 1740); /* h = 1.9: 1200 + .9 (1800 - 1200) */
    assert_near(f.jct.max, 1800);
    assert_near(f.jct_s[0], 660);
    assert_near(f.jct_s[2], 1800);
    assert_near(f.makespan_s, 1900); /* j2 ends at 1900, j0 was created at 0 */
    /* Pending: 0 60 120 300 */
    assert_int_equal(f.pending.n, 4);
    assert_near(f.pending.mean, 120); /* 480 / 4 */
    assert_near(f.pending.p50, 90);   /* h = 1.5: 60 + .5 (120 - 60) */
    assert_near(f.pending.p95, 273);  /* h = 2.85: 120 + .85 (300 - 120) */
    assert_near(f.pending.sum, 480);
    /* From j0's creation to j2's end; the last sample ends at 240 + 90 = 330. */
    assert_int_equal(f.start_ms, T0);
    assert_int_equal(f.end_ms, T0 + 1900 * S);
    dlb_eval_figures_clear(&f);
}

static void test_usage(void **state)
{
    dlb_eval_input_t in = workload();
    dlb_eval_figures_t f = {0};
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    assert_int_equal(f.samples, 8);
    /* CPU used x s:  j0 1*60 + 3*120 + 2*90 = 600, j1 1*30 = 30, j2 (1+1+2+2)*30 = 180: 810
     * CPU req x s:   j0 2*60 + 4*120 + 4*90 = 960, j1 1*30 = 30, j2 2*4*30 = 240: 1230 */
    assert_near(f.cpu_util, 810.0 / 1230.0);
    assert_near(f.cpu_req_core_h, 1230.0 / 3600.0);
    assert_near(f.cpu_used_core_h, 810.0 / 3600.0);
    /* GiB used x s:  j0 1*60 + 2*120 + 3*90 = 570, j1 1*30 = 30, j2 1*4*30 = 120: 720
     * GiB req x s:   j0 4*270 = 1080, j1 2*30 = 60, j2 2*120 = 240: 1380 */
    assert_near(f.mem_util, 720.0 / 1380.0);
    assert_near(f.mem_req_gib_h, 1380.0 / 3600.0);
    assert_near(f.mem_used_gib_h, 720.0 / 3600.0);
    /* Each job's own: CPU j0 600/960, j1 30/30, j2 180/240; memory j0
     * 570/1080, j1 30/60, j2 120/240; sorted. */
    assert_int_equal(f.job_cpu.n, 3);
    assert_near(f.job_cpu_util[0], 600.0 / 960.0);
    assert_near(f.job_cpu_util[1], 0.75);
    assert_near(f.job_cpu_util[2], 1);
    assert_near(f.job_cpu.mean, (600.0 / 960.0 + 0.75 + 1) / 3);
    assert_near(f.job_cpu.p50, 0.75);
    assert_int_equal(f.job_mem.n, 3);
    assert_near(f.job_mem.p50, 0.5);
    assert_near(f.job_mem.max, 570.0 / 1080.0);
    dlb_eval_figures_clear(&f);
}

static void test_roles(void **state)
{
    dlb_eval_input_t in = workload();
    dlb_eval_figures_t f = {0};
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    /* Worker CPU used x s: j0 1*60 + 2*120 + 2*90 = 480, j1 1*30 = 30,
     *                      j2 (.5 + .5 + 1 + 1)*30 = 90: 600
     * requested x s:       j0 1*60 + 3*120 + 3*90 = 690, j1 30, j2 4*30 = 120: 840 */
    assert_near(f.worker_cpu_util, 600.0 / 840.0);
    /* Worker GiB used x s: j0 1*60 + 1*120 + 2*90 = 360, j1 30, j2 .5*120 = 60: 450
     * requested x s:       j0 2*270 = 540, j1 2*30 = 60, j2 1*120 = 120: 720 */
    assert_near(f.worker_mem_util, 450.0 / 720.0);
    /* PS (j0 alone) CPU: 1*120 = 120 used over 1*270 = 270 requested;
     * GiB: 1*120 + 1*90 = 210 over 2*270 = 540. */
    assert_near(f.ps_cpu_util, 120.0 / 270.0);
    assert_near(f.ps_mem_util, 210.0 / 540.0);
    /* The totals take in j2's chief: as test_usage, not a role's figure. */
    assert_near(f.cpu_util, 810.0 / 1230.0);
    dlb_eval_figures_clear(&f);

    /* j2 alone has no PS: nothing requested, no figure (not 0). Its worker
     * used 3 of 4 cores over 4 samples of 30 s; .5 of 1 GiB throughout. */
    in.samples = samples + 4;
    in.samples_cnt = 4;
    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    assert_near(f.worker_cpu_util, 0.75);
    assert_near(f.worker_mem_util, 0.5);
    assert_true(isnan(f.ps_cpu_util));
    assert_true(isnan(f.ps_mem_util));
    dlb_eval_figures_clear(&f);
}

static void test_ooms_plans(void **state)
{
    dlb_eval_input_t in = workload();
    dlb_eval_figures_t f = {0};
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    /* 5 OOMs of 3 pods (j0-worker-0 three times, the same pod name of j1 is
     * another pod): 5 - 3 = 2 repeats. */
    assert_int_equal(f.ooms, 5);
    assert_int_equal(f.oom_pods, 3);
    assert_int_equal(f.repeated_ooms, 2);
    /* 3 of the 6 pods were OOM-killed. */
    assert_int_equal(f.pods, 6);
    assert_near(f.oom_pods_share, 0.5);
    /* 3 + 1 + 2 plans; create 3, running 1 + 2; opt_a 3 + 1, opt_b 2 */
    assert_int_equal(f.plans, 6);
    assert_int_equal(f.plan_requests, 7);
    assert_int_equal(f.by_stage_cnt, 2);
    assert_string_equal(f.by_stage[0].stage, "job_stage_create");
    assert_int_equal(f.by_stage[0].count, 3);
    assert_string_equal(f.by_stage[1].stage, "job_stage_running");
    assert_int_equal(f.by_stage[1].count, 3);
    assert_int_equal(f.by_optimizer_cnt, 2);
    assert_string_equal(f.by_optimizer[0].optimizer, "opt_a");
    assert_int_equal(f.by_optimizer[0].count, 4);
    assert_string_equal(f.by_optimizer[1].optimizer, "opt_b");
    assert_int_equal(f.by_optimizer[1].count, 2);
    dlb_eval_figures_clear(&f);
    /* Pods and no OOM: a share of 0, not no figure. */
    in.ooms_cnt = 0;
    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    assert_int_equal(f.oom_pods, 0);
    assert_near(f.oom_pods_share, 0);
    dlb_eval_figures_clear(&f);
}

/* Buckets of 100 s: [0,100) [100,200) [200,300) [300,400). Each sample's
 * interval ([t, t + duration)) split over them (cpu req x s, used x s):
 *   0: j0 [60,100) 40*2 = 80, 40*1 = 40
 *   1: j0 [100,120) 40, 20; [120,200) 80*4 = 320, 80*3 = 240; j1 [120,150) 30, 30;
 *      j2 [100,190) 90*2 = 180, 30+30+60 = 120; [190,200) 20, 20  => 590, 430
 *   2: j0 [200,240) 160, 120; [240,300) 240, 120; j2 [200,220) 40, 40 => 440, 280
 *   3: j0 [300,330) 120, 60
 * (sums 1230 and 810, as test_usage). Means divide by 100 s. */
static void test_series(void **state)
{
    dlb_eval_input_t in = workload();
    dlb_eval_figures_t f = {0};
    const dlb_eval_series_t *s = &f.series;
    char errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_eval_series(&in, 100 * S, 5, &f, errstr, sizeof(errstr)), 0);
    assert_int_equal(s->buckets, 5);
    assert_near(s->cpu_req[0], 0.8);
    assert_near(s->cpu_used[0], 0.4);
    assert_near(s->cpu_util[0], 0.5);
    assert_near(s->cpu_req[1], 5.9);
    assert_near(s->cpu_used[1], 4.3);
    assert_near(s->cpu_util[1], 430.0 / 590.0);
    assert_near(s->cpu_req[2], 4.4);
    assert_near(s->cpu_util[2], 280.0 / 440.0);
    assert_near(s->cpu_req[3], 1.2);
    assert_near(s->cpu_util[3], 0.5);
    /* Nothing requested after 330 s: no utilisation, zero resources. */
    assert_true(isnan(s->cpu_util[4]));
    assert_near(s->cpu_req[4], 0);
    /* Memory: bucket 0 j0 [60,100) 40 s of 4 GiB req, 1 GiB used;
     * bucket 3 j0 [300,330) 30 s of 4 GiB, 3 GiB. */
    assert_near(s->mem_req[0], 1.6 * GiB);
    assert_near(s->mem_used[0], 0.4 * GiB);
    assert_near(s->mem_util[0], 0.25);
    assert_near(s->mem_req[3], 1.2 * GiB);
    assert_near(s->mem_util[3], 0.75);
    dlb_eval_figures_clear(&f);
}

static void test_bucket_ms(void **state)
{
    dlb_eval_figures_t f[2] = {{.start_ms = 0, .end_ms = 1900 * S},
                               {.start_ms = 5000, .end_ms = 5000 + 2001 * S}};
    (void)state;

    /* The longest span, 2001 s, over 4: 500.25 s, up to a whole second. */
    assert_int_equal(dlb_eval_bucket_ms(f, 2, 4), 501 * S);
    assert_int_equal(dlb_eval_bucket_ms(f, 1, 4), 475 * S);
    /* Nothing happened: one second. */
    f[0].end_ms = 0;
    assert_int_equal(dlb_eval_bucket_ms(f, 1, 60), 1 * S);
}

static double jget(const cJSON *o, const char *path);

static void test_empty(void **state)
{
    dlb_eval_input_t in = {0};
    dlb_eval_figures_t f = {0};
    cJSON *root, *e;
    char *text, errstr[256];
    (void)state;

    snprintf(f.env, sizeof(f.env), "empty");
    assert_int_equal(dlb_eval_compute(&in, &f, errstr, sizeof(errstr)), 0);
    assert_string_equal(f.env, "empty");
    assert_int_equal(f.jobs, 0);
    assert_true(isnan(f.jct.mean));
    assert_true(isnan(f.jct.p95));
    assert_true(isnan(f.makespan_s));
    assert_true(isnan(f.cpu_util));
    assert_true(isnan(f.worker_cpu_util));
    assert_true(isnan(f.ps_mem_util));
    assert_int_equal(f.job_cpu.n, 0);
    assert_true(isnan(f.job_mem.p50));
    assert_true(isnan(f.completion_rate));
    assert_int_equal(f.pods, 0);
    assert_true(isnan(f.oom_pods_share));
    assert_near(f.cpu_req_core_h, 0);
    assert_int_equal(f.start_ms, 0);
    assert_int_equal(f.end_ms, 0);
    assert_int_equal(dlb_eval_series(&in, 1000, 3, &f, errstr, sizeof(errstr)), 0);
    assert_true(isnan(f.series.cpu_util[2]));
    /* No figure is null in the JSON, not 0 or NaN (which is no JSON). */
    assert_int_equal(dlb_eval_json(&f, 1, &text, errstr, sizeof(errstr)), 0);
    assert_non_null(root = cJSON_Parse(text));
    e = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "envs"), 0);
    assert_true(isnan(jget(e, "completion_rate")));
    assert_true(isnan(jget(e, "worker_cpu_util")));
    assert_true(isnan(jget(e, "ps_mem_util")));
    assert_true(isnan(jget(e, "pods_oom_killed_share")));
    assert_near(jget(e, "pods"), 0);
    cJSON_Delete(root);
    free(text);
    dlb_eval_figures_clear(&f);
}

/* Two environments: the workload as "a" and again as "b" with j1's failure
 * at 600 s instead of 1200 s (JCT 660 600 1800: mean 1020, p50 660) and 4
 * pods, not 6 (the same 3 OOM-killed: a share of 75%). */
static dlb_eval_figures_t *two_envs(void)
{
    dlb_eval_figures_t *f = calloc(2, sizeof(*f));
    dlb_eval_job_t jb[5];
    dlb_eval_input_t a = workload(), b = workload();
    char errstr[256];

    assert_non_null(f);
    memcpy(jb, jobs, sizeof(jb));
    jb[1].final_ms = T0 + 600 * S;
    b.jobs = jb;
    b.pods = 4;
    snprintf(f[0].env, sizeof(f[0].env), "a");
    snprintf(f[1].env, sizeof(f[1].env), "b<&>");
    assert_int_equal(dlb_eval_compute(&a, &f[0], errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_eval_compute(&b, &f[1], errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_eval_bucket_ms(f, 2, 19), 100 * S);
    assert_int_equal(dlb_eval_series(&a, 100 * S, 19, &f[0], errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_eval_series(&b, 100 * S, 19, &f[1], errstr, sizeof(errstr)), 0);
    return f;
}

/* The cells of the table line labelled label, single-spaced ("" if none). */
static const char *row_cells(const char *text, const char *label)
{
    static char out[256];
    const char *p = text;
    size_t n = 0, ll = strlen(label);

    out[0] = '\0';
    while (p && (strncmp(p, label, ll) || p[ll] != ' ')) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    if (!p)
        return out;
    for (p += ll; *p && *p != '\n' && n + 1 < sizeof(out); p++)
        if (*p != ' ' || (n && out[n - 1] != ' '))
            out[n++] = *p;
    while (n && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
    return out;
}

static void test_table(void **state)
{
    dlb_eval_figures_t *f = two_envs();
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    (void)state;

    assert_non_null(fp);
    assert_int_equal(dlb_eval_table(fp, f, 2), 0);
    fclose(fp);
    /* Aligned columns: one value column per env, then b/a. */
    assert_non_null(strstr(text, "b<&>/a"));
    assert_string_equal(row_cells(text, "figure"), "a b<&> b<&>/a");
    /* 1220 s and 1020 s: 1020 / 1220 = 0.836 */
    assert_string_equal(row_cells(text, "JCT mean"), "20m20s 17m00s 0.84x");
    /* 1200 s and 660 s: 0.55 */
    assert_string_equal(row_cells(text, "JCT p50"), "20m00s 11m00s 0.55x");
    assert_string_equal(row_cells(text, "finished"), "3 3 1.00x");
    assert_string_equal(row_cells(text, "never ran"), "1 1 1.00x");
    /* 810 / 1230 = 65.85% */
    assert_string_equal(row_cells(text, "CPU utilisation"), "65.9% 65.9% 1.00x");
    /* 1230 / 3600 = 0.342 core-hours */
    assert_string_equal(row_cells(text, "CPU core-hours requested"), "0.34 0.34 1.00x");
    assert_string_equal(row_cells(text, "repeated OOMs"), "2 2 1.00x");
    /* 2 of 5 succeeded */
    assert_string_equal(row_cells(text, "completion rate"), "40.0% 40.0% 1.00x");
    /* 600 / 840 = 71.43%, 450 / 720 = 62.5%, 120 / 270 = 44.44%, 210 / 540 = 38.89% */
    assert_string_equal(row_cells(text, "worker CPU utilisation"), "71.4% 71.4% 1.00x");
    assert_string_equal(row_cells(text, "worker memory utilisation"), "62.5% 62.5% 1.00x");
    assert_string_equal(row_cells(text, "PS CPU utilisation"), "44.4% 44.4% 1.00x");
    assert_string_equal(row_cells(text, "PS memory utilisation"), "38.9% 38.9% 1.00x");
    assert_string_equal(row_cells(text, "pods"), "6 4 0.67x");
    assert_string_equal(row_cells(text, "pods OOM-killed"), "3 3 1.00x");
    assert_string_equal(row_cells(text, "pods OOM-killed share"), "50.0% 75.0% 1.50x");
    assert_string_equal(row_cells(text, "  stopped"), "0 0 -");
    assert_string_equal(row_cells(text, "  plans by opt_a"), "4 4 1.00x");
    assert_string_equal(row_cells(text, "  plans job_stage_create"), "3 3 1.00x");
    free(text);
    dlb_eval_figures_free(f, 2);
}

static double jget(const cJSON *o, const char *path)
{
    char buf[128], *save = NULL;
    const cJSON *x = o;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *k = strtok_r(buf, ".", &save); k && x; k = strtok_r(NULL, ".", &save))
        x = cJSON_GetObjectItemCaseSensitive(x, k);
    if (!x)
        fail_msg("no %s in the JSON", path);
    return cJSON_IsNull(x) ? NAN : cJSON_GetNumberValue(x);
}

static void test_json(void **state)
{
    dlb_eval_figures_t *f = two_envs();
    cJSON *root, *a, *b;
    char *text, errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_json(f, 2, &text, errstr, sizeof(errstr)), 0);
    assert_non_null(root = cJSON_Parse(text));
    assert_near(jget(root, "bucket_s"), 100);
    assert_near(jget(root, "buckets"), 19);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "envs"), 0);
    b = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "envs"), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(b, "env")), "b<&>");
    assert_near(jget(a, "jct_s.mean"), 1220);
    assert_near(jget(a, "jct_s.p95"), 1740);
    /* JCT 660 1200 1800: p10 h = 0.2, 660 + .2 (1200 - 660) */
    assert_near(jget(a, "jct_s.p10"), 768);
    /* CPU .625 .75 1: p10 h = .2: .625 + .2 * .125 = .65; p90 h = 1.8 */
    assert_near(jget(a, "job_cpu_util.p10"), 0.65);
    assert_near(jget(a, "job_cpu_util.p90"), 0.75 + 0.8 * 0.25);
    assert_near(jget(a, "job_mem_util.n"), 3);
    assert_near(jget(b, "jct_s.mean"), 1020);
    assert_near(jget(a, "pending_s.total"), 480);
    assert_near(jget(a, "jobs.unfinished"), 2);
    assert_near(jget(a, "cpu_util"), 810.0 / 1230.0);
    assert_near(jget(a, "mem_gib_hours.requested"), 1380.0 / 3600.0);
    assert_near(jget(a, "ooms.repeated"), 2);
    assert_near(jget(a, "completion_rate"), 0.4);
    assert_near(jget(a, "worker_cpu_util"), 600.0 / 840.0);
    assert_near(jget(a, "worker_mem_util"), 450.0 / 720.0);
    assert_near(jget(a, "ps_cpu_util"), 120.0 / 270.0);
    assert_near(jget(a, "ps_mem_util"), 210.0 / 540.0);
    assert_near(jget(a, "pods"), 6);
    assert_near(jget(a, "pods_oom_killed"), 3);
    assert_near(jget(a, "ooms.pods"), 3);
    assert_near(jget(a, "pods_oom_killed_share"), 0.5);
    assert_near(jget(b, "pods"), 4);
    assert_near(jget(b, "pods_oom_killed_share"), 0.75);
    assert_near(jget(a, "plans.by_stage.job_stage_running"), 3);
    assert_near(jget(a, "plans.by_optimizer.opt_b"), 2);
    /* Series: bucket 1 of test_series; an empty bucket's utilisation is null. */
    assert_near(cJSON_GetNumberValue(cJSON_GetArrayItem(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(a, "series"), "cpu_requested"), 1)),
                5.9);
    assert_true(cJSON_IsNull(
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "series"), "cpu_util"), 18)));
    assert_near(cJSON_GetNumberValue(cJSON_GetArrayItem(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(a, "series"), "mem_requested_gib"), 0)),
                1.6);
    cJSON_Delete(root);
    free(text);
    dlb_eval_figures_free(f, 2);
}

static size_t count_of(const char *s, const char *what)
{
    size_t n = 0;

    for (; (s = strstr(s, what)); s++)
        n++;
    return n;
}

static void test_html(void **state)
{
    dlb_eval_figures_t *f = two_envs();
    char *html, errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_html(f, 2, &html, errstr, sizeof(errstr)), 0);
    assert_true(!strncmp(html, "<!DOCTYPE html>", 15));
    /* Eight plots, each a whole <svg> element with axes titles and a legend. */
    assert_int_equal(count_of(html, "<svg "), 8);
    assert_int_equal(count_of(html, "</svg>"), 8);
    assert_non_null(strstr(html, "Job completion time (CDF)"));
    assert_non_null(strstr(html, "Per-job CPU utilisation (CDF)"));
    assert_non_null(strstr(html, "Per-job memory utilisation (CDF)"));
    /* The distributions table: a's per-job CPU, n 3, mean 79.2%, p10 65.0%,
     * p25 68.8% (h = .5), p50 75.0%. */
    assert_non_null(strstr(html, "<td>job CPU utilisation</td>"));
    assert_non_null(
        strstr(html, "<td>3</td><td>79.2%</td><td>65.0%</td><td>68.8%</td><td>75.0%</td>"));
    assert_non_null(strstr(html, "CPU utilisation over time"));
    assert_non_null(strstr(html, "Memory over time"));
    /* The env name is escaped everywhere, never raw. */
    assert_null(strstr(html, "b<&>"));
    assert_non_null(strstr(html, "b&lt;&amp;&gt;"));
    assert_non_null(strstr(html, "b&lt;&amp;&gt; requested"));
    /* Self-contained: no script, nothing fetched. */
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "http://www.w3.org/1999"));
    assert_null(strstr(html, "src="));
    assert_null(strstr(html, "href="));
    /* b's JCT mean is better (lower): its ratio cell is green. */
    assert_non_null(strstr(html, "<td class=\"better\">0.84x</td>"));
    /* A larger share of pods OOM-killed is worse: red. */
    assert_non_null(strstr(html, "<tr><td>pods OOM-killed share</td><td>50.0%</td><td>75.0%</td>"
                                 "<td class=\"worse\">1.50x</td></tr>"));
    assert_non_null(strstr(html, "<tr><td>worker CPU utilisation</td><td>71.4%</td>"));
    assert_non_null(strstr(html, "<tr><td>completion rate</td><td>40.0%</td>"));
    free(html);
    dlb_eval_figures_free(f, 2);
}

static void test_html_switches(void **state)
{
    dlb_eval_figures_t *f = two_envs();
    const dlb_eval_switch_t sw[] = {
        {f[0].start_ms + 500 * S, "b", "failover"}, /* inside the 1900 s plotted */
        {f[0].start_ms - 10 * S, "a", "manual"},    /* before the first event */
        {f[0].start_ms + 5000 * S, "c", "manual"},  /* after the last bucket */
    };
    char *html, errstr[256];
    (void)state;

    assert_int_equal(dlb_eval_html_switches(f, 2, sw, 3, &html, errstr, sizeof(errstr)), 0);
    /* On each of the four plots over time, not on the four CDFs. */
    assert_int_equal(count_of(html, "<g class=\"mark\">"), 4);
    assert_int_equal(count_of(html, "b real (failover)"), 4);
    assert_null(strstr(html, "a real (manual)"));
    assert_null(strstr(html, "c real (manual)"));
    assert_int_equal(count_of(html, "Dashed grey lines: switches"), 4);
    free(html);
    /* Without switches: no mark, no caption about them. */
    assert_int_equal(dlb_eval_html(f, 2, &html, errstr, sizeof(errstr)), 0);
    assert_null(strstr(html, "class=\"mark\""));
    assert_null(strstr(html, "Dashed grey lines"));
    free(html);
    dlb_eval_figures_free(f, 2);
}

static void test_svg(void **state)
{
    const double x[] = {0, 1, 2, 3}, y[] = {0, NAN, 2, 3};
    dlb_svg_line_t line = {"a \"q\"", "#000", x, y, 4, 0, 1};
    dlb_svg_out_t o = {0};
    (void)state;

    dlb_svg_text(&o, "<a href='x'>&</a>");
    assert_string_equal(o.buf.p, "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;");
    assert_near(dlb_svg_nice_step(10, 5), 2);
    assert_near(dlb_svg_nice_step(0.3, 6), 0.05);
    assert_near(dlb_svg_nice_step(7200, 6), 2000);
    free(o.buf.p);
    memset(&o, 0, sizeof(o));
    dlb_svg_plot(&o, &(dlb_svg_plot_t){"t & u", "x", "y", 0, 0, 0, 0}, &line, 1);
    assert_int_equal(o.err, 0);
    assert_non_null(strstr(o.buf.p, "<title>t &amp; u</title>"));
    assert_non_null(strstr(o.buf.p, "a &quot;q&quot;"));
    /* The NaN splits the line: a dot for (0, 0), a dashed polyline for 2..3. */
    assert_int_equal(count_of(o.buf.p, "<circle"), 1);
    assert_int_equal(count_of(o.buf.p, "<polyline"), 1);
    assert_non_null(strstr(o.buf.p, "stroke-dasharray"));
    free(o.buf.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantile),      cmocka_unit_test(test_weights),
        cmocka_unit_test(test_jobs),          cmocka_unit_test(test_usage),
        cmocka_unit_test(test_roles),         cmocka_unit_test(test_ooms_plans),
        cmocka_unit_test(test_series),        cmocka_unit_test(test_bucket_ms),
        cmocka_unit_test(test_empty),         cmocka_unit_test(test_table),
        cmocka_unit_test(test_json),          cmocka_unit_test(test_html),
        cmocka_unit_test(test_html_switches), cmocka_unit_test(test_svg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
