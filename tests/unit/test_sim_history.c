/* Jobs from history: the observed speed curve (medians per worker count,
 * linear between them, Amdahl outside), the workload a history gives, and a
 * simulation of it running each job at its recorded speed, the same bytes
 * for the same seed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "encoded_buf.h"

#include "catalog.h"
#include "codec.h"
#include "conf.h"
#include "err.h"
#include "sim_curve.h"
#include "sim_history.h"
#include "sim_model.h"
#include "sim_run.h"

#define assert_near(a, b, rel)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b), r_ = (rel);                                                     \
        if (!(fabs(a_ - b_) <= r_ * fabs(b_)))                                                     \
            fail_msg("%s = %.6g, expected %.6g within %.3g%%", #a, a_, b_, r_ * 100);              \
    } while (0)

static void test_curve_medians_and_interpolation(void **state)
{
    /* Stalled (0) and bad (-1) rates are no observation. */
    int w[] = {2, 2, 2, 4, 4, 4, 1, 0};
    double r[] = {10, 0, 12, 18, 17, 19, -1, 50};
    dlb_sim_curve_t c;

    (void)state;
    assert_int_equal(dlb_sim_curve_build(w, r, 8, &c), 2);
    assert_int_equal(c.workers[0], 2);
    assert_int_equal(c.samples[0], 2);
    assert_int_equal(c.samples[1], 3);
    /* Observed counts: the (lower) median; between them: linear. */
    assert_near(dlb_sim_curve_rate(&c, 2), 10, 1e-12);
    assert_near(dlb_sim_curve_rate(&c, 4), 18, 1e-12);
    assert_near(dlb_sim_curve_rate(&c, 3), 14, 1e-12);
    /* Two points fix sigma exactly: 18/10 = 2 (1 + s) / (1 + 3 s), s = 1/17. */
    assert_near(c.sigma, 1.0 / 17, 1e-3);
    assert_near(dlb_sim_curve_rate(&c, 8), 18 * 2 * (1 + 3.0 / 17) / (1 + 7.0 / 17), 1e-3);
    assert_near(dlb_sim_curve_rate(&c, 1), 10 * (1 + 1.0 / 17) / 2, 1e-3);
    assert_near(dlb_sim_curve_rate(&c, 0), dlb_sim_curve_rate(&c, 1), 1e-12);
}

static void test_curve_amdahl_fit(void **state)
{
    int w[] = {8, 1, 4, 2};
    double r[4];
    dlb_sim_curve_t c;

    (void)state;
    for (int i = 0; i < 4; i++)
        r[i] = 100.0 * w[i] / (1 + 0.1 * (w[i] - 1));
    assert_int_equal(dlb_sim_curve_build(w, r, 4, &c), 4);
    assert_int_equal(c.workers[0], 1);
    assert_int_equal(c.workers[3], 8);
    assert_near(c.sigma, 0.1, 1e-3);
    assert_near(c.r1, 100, 1e-3);
    assert_near(dlb_sim_curve_rate(&c, 32), 100.0 * 32 / (1 + 3.1), 1e-3);
    assert_near(dlb_sim_curve_rate(&c, 6), (r[2] + r[0]) / 2, 1e-12);
}

static void test_curve_extrapolation_rules(void **state)
{
    int one_w[] = {4}, flat_w[] = {2, 4}, many_w[41];
    double one_r[] = {40}, flat_r[] = {10, 9}, many_r[41];
    dlb_sim_curve_t c;

    (void)state;
    /* One count: per-worker throughput stays the observed one. */
    assert_int_equal(dlb_sim_curve_build(one_w, one_r, 1, &c), 1);
    assert_near(dlb_sim_curve_rate(&c, 8), 80, 1e-12);
    assert_near(dlb_sim_curve_rate(&c, 1), 10, 1e-12);
    /* Fewer samples/s with more workers: sigma stops at 1, the rate stays flat. */
    assert_int_equal(dlb_sim_curve_build(flat_w, flat_r, 2, &c), 2);
    assert_near(c.sigma, 1, 1e-12);
    assert_near(dlb_sim_curve_rate(&c, 16), 9, 1e-12);
    /* Too many counts: the best observed are kept (40 twice). */
    for (int i = 0; i < 40; i++) {
        many_w[i] = i + 1;
        many_r[i] = 10.0 * (i + 1);
    }
    many_w[40] = 40;
    many_r[40] = 400;
    assert_int_equal(dlb_sim_curve_build(many_w, many_r, 41, &c), DLB_SIM_CURVE_MAX);
    assert_int_equal(c.workers[DLB_SIM_CURVE_MAX - 1], 40);
    for (int i = 1; i < c.n; i++)
        assert_true(c.workers[i] > c.workers[i - 1]);
    assert_near(dlb_sim_curve_rate(&c, 20), 200, 1e-9);
}

/* ---- a small history -------------------------------------------------------- */

static const dlb_sim_hist_job_t hist_jobs[] = {
    {.uid = "hist-a-0001",
     .app = "deepfm",
     .scenario = "ctr",
     .state = "succeeded",
     .created_ms = 1000,
     .batch_size = 512,
     .variable_count = 7},
    {.uid = "hist-c-0003",
     .app = "never-ran",
     .state = "failed",
     .created_ms = 30000,
     .batch_size = 64},
    {.uid = "hist-b-0002",
     .app = "",
     .scenario = "lm",
     .state = "failed",
     .created_ms = 61000,
     .batch_size = 64},
};

#define GIB DLB_GIB
static const dlb_sim_hist_sample_t hist_samples[] = {
    /* a: 2 workers at 10 steps/s (one stalled sample), then 4 at 18 */
    {0, 31000, 100, 10, 2, 1, 3, 2, 4 * GIB, (int64_t)(4.5 * GIB), 4, 4, 8 * GIB, 8 * GIB},
    {0, 61000, 300, 0, 2, 1, 0.1, 0.1, 5 * GIB, (int64_t)(4.5 * GIB), 4, 4, 8 * GIB, 8 * GIB},
    {0, 91000, 600, 10.2, 2, 1, 3, 2, 5 * GIB, (int64_t)(4.5 * GIB), 4, 4, 8 * GIB, 8 * GIB},
    {0, 121000, 900, 9.8, 2, 1, 3, 2, 6 * GIB, (int64_t)(4.5 * GIB), 4, 4, 8 * GIB, 8 * GIB},
    {0, 151000, 1400, 18, 4, 1, 3, 3.6, 6 * GIB, 5 * GIB, 4, 4, 8 * GIB, 8 * GIB},
    {0, 181000, 20000, 18.3, 4, 1, 3, 3.6, 6 * GIB, 5 * GIB, 4, 4, 8 * GIB, 8 * GIB},
    /* c: pending, then only stalled samples */
    {1, 60000, 0, 0, 1, 1, 0.1, 0.1, GIB, GIB, 2, 2, 4 * GIB, 4 * GIB},
    /* b: one worker at 5 steps/s; it failed after 3000 steps */
    {2, 91000, 150, 5, 1, 1, 2, 1, 3 * GIB, (int64_t)(1.5 * GIB), 2, 2, 4 * GIB, 4 * GIB},
    {2, 121000, 3000, 5, 1, 1, 2, 1, 3 * GIB, (int64_t)(1.5 * GIB), 2, 2, 4 * GIB, 4 * GIB},
};

static const dlb_sim_history_t hist = {(dlb_sim_hist_job_t *)hist_jobs, 3,
                                       (dlb_sim_hist_sample_t *)hist_samples, 9};

static void test_history_workload(void **state)
{
    dlb_sim_workload_t wl;
    dlb_sim_history_stats_t st;
    const dlb_sim_spec_t *a, *b;
    char errstr[256];

    (void)state;
    assert_int_equal(dlb_sim_history_workload(&hist, 0, &wl, &st, errstr, sizeof(errstr)), 0);
    assert_int_equal(wl.n, 2);
    assert_int_equal(st.jobs, 2);
    assert_int_equal(st.skipped, 1);
    assert_int_equal(st.points, 3);
    a = &wl.jobs[0];
    b = &wl.jobs[1];
    assert_string_equal(a->name, "hist-a-0001");
    assert_string_equal(a->model, "deepfm");
    assert_int_equal(a->arrival_ms, 0);
    assert_int_equal(a->batch_size, 512);
    assert_int_equal(a->dataset_size, 20000 * 512);
    assert_int_equal(a->epochs, 1);
    assert_int_equal(a->workers, 2);
    assert_int_equal(a->ps, 1);
    assert_near(a->wk_cpu, 4, 0);
    assert_int_equal(a->wk_mem, 8 * GIB);
    assert_string_equal(a->prof->name, "ctr");
    assert_near(a->prof->worker_cpu, 3, 0);
    /* PS: 2 cores at 10 x 512 samples/s, 3.6 at 18 x 512: the lower median. */
    assert_near(a->prof->ps_cpu_per_ksample, 2 / 5.12, 1e-9);
    assert_int_equal(a->prof->wk_mem_base, 4 * GIB);
    assert_int_equal(a->prof->wk_mem_growth, 2 * GIB);
    assert_int_equal(a->prof->ps_mem_base, 5 * GIB - 512 * DLB_MIB);
    assert_int_equal(a->prof->variable_count, 7);
    assert_int_equal(a->prof->observed->n, 2);
    assert_near(dlb_sim_curve_rate(a->prof->observed, 2), 10 * 512, 1e-12);
    assert_near(dlb_sim_curve_rate(a->prof->observed, 4), 18 * 512, 1e-12);
    /* b: arrival from a's, no app: the scenario names the model. */
    assert_string_equal(b->name, "hist-b-0002");
    assert_string_equal(b->model, "lm");
    assert_int_equal(b->arrival_ms, 60000);
    assert_int_equal(b->dataset_size, 3000 * 64);
    assert_int_equal(b->workers, 1);
    dlb_sim_workload_free(&wl);

    assert_int_equal(dlb_sim_history_workload(&hist, 1, &wl, &st, errstr, sizeof(errstr)), 0);
    assert_int_equal(wl.n, 1);
    dlb_sim_workload_free(&wl);
    {
        /* Two long uids with one 63-byte prefix: two names. */
        dlb_sim_hist_job_t lj[2] = {hist_jobs[0], hist_jobs[0]};
        dlb_sim_hist_sample_t ls[2] = {hist_samples[0], hist_samples[0]};
        dlb_sim_history_t lh = {lj, 2, ls, 2};

        memset(lj[0].uid, 'x', 100);
        memcpy(lj[1].uid, lj[0].uid, sizeof(lj[0].uid));
        lj[1].uid[99] = 'y';
        ls[1].job = 1;
        assert_int_equal(dlb_sim_history_workload(&lh, 0, &wl, &st, errstr, sizeof(errstr)), 0);
        assert_int_equal(wl.n, 2);
        assert_int_equal(strlen(wl.jobs[0].name), 63);
        assert_string_not_equal(wl.jobs[0].name, wl.jobs[1].name);
        assert_memory_equal(wl.jobs[0].name, lj[0].uid, 54);
        dlb_sim_workload_free(&wl);
    }
    {
        dlb_sim_history_t none = {(dlb_sim_hist_job_t *)hist_jobs + 1, 1,
                                  (dlb_sim_hist_sample_t *)hist_samples + 6, 0};
        assert_int_equal(dlb_sim_history_workload(&none, 0, &wl, &st, errstr, sizeof(errstr)),
                         DLB_ERR_INVALID);
    }
}

/* The speed model on an observed profile: the curve's step at any count. */
static void test_speed_from_curve(void **state)
{
    dlb_sim_workload_t wl;
    dlb_sim_history_stats_t st;
    dlb_sim_speed_t sp;
    double share[1] = {1}, cpu[1] = {100};
    char errstr[256];

    (void)state;
    assert_int_equal(dlb_sim_history_workload(&hist, 0, &wl, &st, errstr, sizeof(errstr)), 0);
    for (int w = 1; w <= 8; w++) {
        dlb_sim_speed_in_t in = {wl.jobs[0].prof, w, 256, 4, 1, 1, share, cpu};
        dlb_sim_speed(&in, &sp);
        assert_near(sp.samples_per_s, dlb_sim_curve_rate(wl.jobs[0].prof->observed, w), 1e-12);
    }
    {
        /* Half the cores it used: twice the step; a straggler 2x: twice again. */
        dlb_sim_speed_in_t in = {wl.jobs[0].prof, 2, 256, 1.5, 2, 1, share, cpu};
        dlb_sim_speed(&in, &sp);
        assert_near(sp.samples_per_s, 10 * 512 / 4.0, 1e-12);
    }
    dlb_sim_workload_free(&wl);
}

/* ---- simulating it ---------------------------------------------------------- */

typedef struct stream {
    dlb_catalog_t *cat;
    unsigned char *buf;
    size_t len, cap;
    int created[2];        /* created job events of a, b */
    int64_t created_ms[2]; /* their times */
    int checked[2];        /* samples compared with the record */
    double worst;          /* largest |simulated / recorded - 1| */
} stream_t;

static int publish(void *opaque, const dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    stream_t *s = opaque;
    int err;

    if (ev->type == DLB_EV_JOB && ev->u.job.has_meta) {
        int k = !strncmp(ev->u.job.job_uid, "hist-b-0002-", 12);
        s->created[k]++;
        s->created_ms[k] = ev->u.job.event_time_ms;
    }
    if (ev->type == DLB_EV_RUNTIME && ev->u.rt.speed > 0) {
        const dlb_runtime_sample_t *rt = &ev->u.rt;
        int k = !strncmp(rt->job_uid, "hist-b-0002-", 12), workers = 0, straggler = 0;
        double first = -1;

        for (size_t i = 0; i < rt->pods_cnt; i++) {
            if (strcmp(rt->pods[i].type, "worker"))
                continue;
            workers++;
            if (first < 0)
                first = rt->pods[i].speed;
            else if (fabs(rt->pods[i].speed - first) > 0.02)
                straggler = 1; /* the simulator's own straggler, not history's */
        }
        if (!straggler) {
            /* a ran with 2 workers at 10 steps/s there, b with 1 at 5. */
            double rec = k ? 5 : 10, d = fabs(rt->speed / rec - 1);

            assert_int_equal(workers, k ? 1 : 2);
            s->checked[k]++;
            if (d > s->worst)
                s->worst = d;
        }
    }
    if ((err = encoded_append(s->cat, ev, &s->buf, &s->len, &s->cap, errstr, errstr_size)))
        return err;
    return 0;
}

static void run(uint64_t seed, stream_t *s, dlb_sim_summary_t *sum)
{
    dlb_sim_workload_t wl;
    dlb_sim_history_stats_t st;
    dlb_sim_opts_t o;
    dlb_sim_io_t io = {.publish = publish, .opaque = s};
    char errstr[512];

    memset(s, 0, sizeof(*s));
    assert_int_equal(dlb_sim_history_workload(&hist, 0, &wl, &st, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_catalog_new(&s->cat, errstr, sizeof(errstr)), 0);
    dlb_sim_opts_init(&o);
    o.wl = &wl;
    o.seed = seed;
    if (dlb_sim_run(&o, &io, sum, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    dlb_catalog_destroy(s->cat);
    dlb_sim_workload_free(&wl);
    assert_int_equal(sum->jobs, 2);
    assert_int_equal(sum->succeeded, 2);
}

static void test_simulated_at_recorded_speed(void **state)
{
    stream_t a, b, c;
    dlb_sim_summary_t sa, sb, sc;

    (void)state;
    run(1, &a, &sa);
    run(1, &b, &sb);
    run(2, &c, &sc);
    /* Both jobs arrive once, 60 s apart, at the ticks their arrivals fall in. */
    assert_int_equal(a.created[0], 1);
    assert_int_equal(a.created[1], 1);
    assert_int_equal(a.created_ms[0], DLB_SIM_START_MS);
    assert_int_equal(a.created_ms[1] - a.created_ms[0], 60000);
    /* Every sample of a straggler-free stretch within 2.5% of the recorded
     * speed (the simulator's 2% jitter, rounded to 0.01 step/s). */
    assert_true(a.checked[0] > 50);
    assert_true(a.checked[1] > 10);
    if (a.worst > 0.025)
        fail_msg("a simulated speed is %.2f%% off the recorded one", a.worst * 100);
    /* Same seed, same bytes; another seed, another stream. */
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.buf, b.buf, a.len);
    assert_true(c.len != a.len || memcmp(a.buf, c.buf, a.len) != 0);
    free(a.buf);
    free(b.buf);
    free(c.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_curve_medians_and_interpolation),
        cmocka_unit_test(test_curve_amdahl_fit),
        cmocka_unit_test(test_curve_extrapolation_rules),
        cmocka_unit_test(test_history_workload),
        cmocka_unit_test(test_speed_from_curve),
        cmocka_unit_test(test_simulated_at_recorded_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
