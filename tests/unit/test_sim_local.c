/* `dlbrain sim --plans local` (sim/sim_local.c): the optimizer set run in
 * this process against the simulator, no broker, no PostgreSQL. Every
 * request is answered, the same seed gives the same run, and the sets differ
 * where they should: the dlbrain set keeps the worker count users asked for
 * at create, where DLRover's worker create asks 1 worker once the scenario
 * has completed jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf.h"
#include "err.h"
#include "sim_run.h"

#define JOBS 40

static dlb_sim_workload_t wl;

static int setup(void **state)
{
    const char *src = getenv("DLB_SOURCE_DIR");
    char path[4096], errstr[256];

    (void)state;
    snprintf(path, sizeof(path), "%s/data/pollux/workloads/workload-1.csv", src ? src : ".");
    return dlb_sim_workload_load(path, JOBS, &wl, errstr, sizeof(errstr));
}

static int teardown(void **state)
{
    (void)state;
    dlb_sim_workload_free(&wl);
    return 0;
}

/* One run; the per-job CSV goes to *csv (malloc'ed). */
static void run(const char *set, dlb_sim_summary_t *sum, char **csv)
{
    dlb_conf_t conf;
    dlb_sim_opts_t o;
    dlb_sim_local_t *l = NULL;
    dlb_sim_io_t io;
    char errstr[512];
    size_t len = 0;

    dlb_conf_init(&conf);
    assert_int_equal(dlb_conf_set(&conf, "optimizer.set", set, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_sim_local_new(&conf, &l, &io, errstr, sizeof(errstr)), 0);
    dlb_sim_opts_init(&o);
    o.wl = &wl;
    o.seed = 2;
    o.params.time_scale = 0.2;
    o.params.limits = conf.limits;
    assert_non_null(o.jobs_csv = open_memstream(csv, &len));
    memset(sum, 0, sizeof(*sum));
    if (dlb_sim_run(&o, &io, sum, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    assert_int_equal(fclose(o.jobs_csv), 0);
    dlb_sim_local_destroy(l);
    dlb_conf_destroy(&conf);
    assert_int_equal(sum->jobs, JOBS);
    assert_int_equal(sum->unfinished, 0);
    assert_true(sum->plan_requests > 0);
    assert_int_equal(sum->plans_received, sum->plan_requests);
    assert_int_equal(sum->plans_missing, 0);
    print_message("%s: jct mean %.0f s, %.1f core-hours, %.1f GiB-hours, %ld OOMs, %ld plans "
                  "applied\n",
                  set, sum->jct_mean_s, sum->core_hours, sum->memory_gib_hours, sum->ooms,
                  sum->plans_applied);
}

static void test_local_deterministic(void **state)
{
    dlb_sim_summary_t a, b;
    char *ca = NULL, *cb = NULL;

    (void)state;
    run("dlbrain", &a, &ca);
    run("dlbrain", &b, &cb);
    assert_string_equal(ca, cb);
    assert_int_equal(a.virtual_ms, b.virtual_ms);
    assert_true(a.plans_applied > 0);
    free(ca);
    free(cb);
}

static void test_local_sets_differ(void **state)
{
    dlb_sim_summary_t dr, db;
    char *cr = NULL, *cb = NULL;

    (void)state;
    run("dlrover", &dr, &cr);
    run("dlbrain", &db, &cb);
    assert_true(strstr(cr, "job,name,model,state") == cr);
    assert_true(db.jct_mean_s < dr.jct_mean_s);
    /* The dlrover set sizes a first OOM by a fixed step, the dlbrain set
     * from the observed peak: far fewer OOMs. */
    assert_true(db.ooms < dr.ooms);
    free(cr);
    free(cb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_deterministic),
        cmocka_unit_test(test_local_sets_differ),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
