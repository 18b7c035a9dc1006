/* dlbrain sim: the job simulator (virtual trainer) of producers/sim_*.c. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cmd.h"
#include "common.h"
#include "err.h"
#include "env_registry.h"
#include "log.h"
#include "replay.h"
#include "sim_calib.h"
#include "sim_history.h"
#include "sim_psfit.h"
#include "sim_model.h"
#include "sim_node_file.h"
#include "sim_run.h"
#include "sim_workload.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain sim --workload FILE [options]\n"
            "       dlbrain sim --workload-from-env ENV [--from T] [--to T] [options]\n"
            "Simulate training jobs that follow plans: each job of the workload arrives, asks\n"
            "for plans as DLRover 0.6.1's master does (create; worker_initial, ps_initial,\n"
            "then ps_running at most once per --ps-change-every and the workers when it\n"
            "has no plan; again only --ask-every after a plan, none while a PS migrates;\n"
            "at each OOM of a pod below 64 GiB relaunched fewer than 3 times), applies\n"
            "them within the limits.* settings, and publishes job events, runtime samples and\n"
            "node events into <env>. Virtual time moves in lock-step with the optimizer:\n"
            "each tick's requests wait for their plans. A summary line goes to stderr at\n"
            "the end.\n\n"
            "  -w, --workload FILE     Pollux workload-N.csv or dlbrain CSV (docs/simulator.md)\n"
            "      --workload-from-env ENV\n"
            "                          the jobs recorded in ENV's PostgreSQL history, each at\n"
            "                          its observed speed per worker count (docs/simulator.md)\n"
            "      --from T, --to T    with --workload-from-env: jobs that arrived in [T, T)\n"
            "                          (RFC 3339, ms since the epoch, -1h, ...; default all)\n"
            "  -n, --jobs N            the first N jobs (a shorter file repeats)\n"
            "  -s, --seed N            random seed (default 1)\n"
            "      --start MS          virtual start, ms since the epoch (default %" PRId64 ",\n"
            "                          2024-01-01T00:00:00Z)\n"
            "      --time-scale X      arrivals and job lengths times X (default 1)\n"
            "      --node-failures R   node failures per running pod-hour (default 0): the\n"
            "                          pod stops until a plan replaces it or, 300 s later,\n"
            "                          the master relaunches it\n"
            "      --cluster-nodes FILE\n"
            "                          the cluster as nodes of the shapes in FILE (CSV:\n"
            "                          count,cpu_cores,memory_gib[,gpus,gpu_type,label]), each\n"
            "                          pod placed as kube-scheduler scores nodes; default: the\n"
            "                          built-in data/pai/nodes.csv, 64 of Alibaba PAI's machines\n"
            "      --cluster-cores N   instead of nodes, one pool of N cores (the quick run;\n"
            "                          default 5280, the nodes' total)\n"
            "      --cluster-memory G  and G GiB (default 32000)\n"
            "      --sample-interval S runtime sample and tick, virtual s (default 30)\n"
            "      --ask-every S       no periodic ask for S virtual s after a plan\n"
            "                          (default 300, DLRover's seconds_interval_to_optimize)\n"
            "      --ps-change-every S PS asked again only S virtual s after a PS change\n"
            "                          (default 3600, seconds_interval_to_change_ps)\n"
            "      --pending-timeout S a job pending longer fails (default 14400)\n"
            "      --max-hours H       stop after H virtual hours (default: all done)\n"
            "      --plans MODE        kafka (default: wait for <env>.plans), none (apply\n"
            "                          nothing: the baseline) or local (optimizer.set run\n"
            "                          in this process, history in memory: a quick\n"
            "                          what-if, no broker, no PostgreSQL)\n"
            "      --plan-timeout-ms N how long a tick waits for its plans (default 10000)\n"
            "      --out FILE          write events as JSON lines to FILE (- = stdout)\n"
            "                          instead of Kafka; implies --plans none\n"
            "      --summary-json FILE write the summary as JSON\n"
            "      --jobs-csv FILE     write one CSV line per job (times, final resources)\n"
            "      --fit DIR           fit the speed model of every profile on\n"
            "                          DIR/<model>/{placements,scalability}.csv (Pollux\n"
            "                          layout), print the constants, the MAPE on all points and\n"
            "                          held out (fitted on one file, scored on the other) as\n"
            "                          a Markdown table, and exit\n"
            "      --fit-ps DIR        fit the PS cost on DIR/dense.csv and DIR/embedding.csv\n"
            "                          (published PS measurements), print it beside the\n"
            "                          built-in constants, and exit\n"
            "      --oversize F        users' over-request: 1 (default) asks what production's\n"
            "                          users ask (data/production), 0.5 the square root of\n"
            "                          that over-request, 0 exactly the need\n"
            "      --predict MODEL:WORKERS:PS:LOCAL_BSZ\n"
            "                          print the speed model's step_s= and samples_per_s= for\n"
            "                          one job (PS 0: an all-reduce job) and exit\n"
            "      --calibration DIR   run the none arm on DIR/pollux/workloads (seeds 1-3,\n"
            "                          -n jobs each, default 200), print its figures beside\n"
            "                          DIR/production/targets.csv; exit 1 when one leaves\n"
            "                          its band\n" CLI_COMMON_HELP,
            DLB_SIM_START_MS);
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo) || !(v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* Append DIR/model/file's points to *pts. */
static int load_points(const char *dir, const char *model, const char *file, dlb_sim_point_t **pts,
                       size_t *n)
{
    char path[4096], errstr[512];

    snprintf(path, sizeof(path), "%s/%s/%s", dir, model, file);
    if (dlb_sim_points_load(path, pts, n, errstr, sizeof(errstr))) {
        fprintf(stderr, "sim: --fit: %s\n", errstr);
        return -1;
    }
    return 0;
}

/* --fit: the constants sim_model.c carries, recomputed from the data, with
 * the fit's MAPE, the built-in constants' and the held-out MAPEs, as the
 * Markdown table docs/simulator.md shows. */
static int fit_dir(const char *dir)
{
    size_t n;
    const dlb_sim_profile_t *profs = dlb_sim_profiles(&n);

    printf("| model | points (placements + scalability) | a (s) | b (s/sample) | ar | br | an | bn "
           "| g | fit MAPE | built-in MAPE | placements -> scalability | scalability -> "
           "placements |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        dlb_sim_point_t *place = NULL, *scale = NULL;
        size_t np = 0, ns = 0;
        dlb_sim_fit_report_t r;
        const dlb_sim_fit_t *f = &r.fit;
        int rc = 1;

        if (load_points(dir, profs[i].name, "placements.csv", &place, &np) ||
            load_points(dir, profs[i].name, "scalability.csv", &scale, &ns))
            goto next;
        if (dlb_sim_fit_report(place, np, scale, ns, &r)) {
            fprintf(stderr, "sim: --fit: %s: too few points or out of memory\n", profs[i].name);
            goto next;
        }
        printf("| %s | %zu + %zu | %.6g | %.6g | %.6g | %.6g | %.6g | %.6g | %.6g | %.2f%% | "
               "%.2f%% | %.1f%% | %.1f%% |\n",
               profs[i].name, np, ns, f->a, f->b, f->ar, f->br, f->an, f->bn, f->g, r.mape,
               (dlb_sim_mape(&profs[i].fit, place, np) * (double)np +
                dlb_sim_mape(&profs[i].fit, scale, ns) * (double)ns) /
                   (double)(np + ns),
               r.mape_p_to_s, r.mape_s_to_p);
        fflush(stdout);
        rc = 0;
    next:
        free(place);
        free(scale);
        if (rc)
            return 1;
    }
    return 0;
}

/* --fit-ps: the PS cost of each family refitted on DIR/<family>.csv, beside
 * the constants sim_model.c carries, as the Markdown table docs/simulator.md
 * shows. */
static int fit_ps_dir(const char *dir)
{
    static const char *const families[] = {"dense", "embedding"};

    printf("| family | points (fitted + held out) | beta | gamma | T0 fitted (s) | fit MAPE | "
           "held-out MAPE | built-in beta | built-in gamma "
           "|\n|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        dlb_sim_ps_point_t *pts = NULL;
        dlb_sim_ps_fit_t f;
        size_t n = 0;
        char path[4096], errstr[512];
        double beta, gamma;
        int err;

        snprintf(path, sizeof(path), "%s/%s.csv", dir, families[i]);
        if ((err = dlb_sim_ps_points_load(path, &pts, &n, errstr, sizeof(errstr))) ||
            (err = dlb_sim_ps_fit(pts, n, &f))) {
            fprintf(stderr, "sim: --fit-ps: %s\n",
                    err == DLB_ERR_INVALID && !errstr[0] ? "too few points" : errstr);
            free(pts);
            return 1;
        }
        dlb_sim_ps_constants(families[i], &beta, &gamma);
        printf("| %s | %zu + %zu | %.3g | %.3g | ", families[i], f.n_fit, f.n_held, f.beta,
               f.gamma);
        if (f.base > 0)
            printf("%.4g", f.base);
        else
            printf("measured");
        printf(" | %.2f%% | ", f.mape);
        if (f.n_held)
            printf("%.1f%%", f.mape_held);
        else
            printf("-");
        printf(" | %.4g | %.4g |\n", beta, gamma);
        free(pts);
    }
    return 0;
}

/* --predict: the speed model as a what-if, one line. */
static int predict_one(const char *spec)
{
    dlb_sim_speed_t sp;
    char errstr[512];

    if (dlb_sim_predict(spec, &sp, errstr, sizeof(errstr))) {
        fprintf(stderr, "sim: --predict: %s\n", errstr);
        return 2;
    }
    printf("step_s=%.6g samples_per_s=%.6g\n", sp.step_time, sp.samples_per_s);
    return 0;
}

/* --calibration: the none arm beside production; 1 when a figure left its band. */
static int calibrate(const dlb_sim_opts_t *o, const char *dir, size_t jobs)
{
    char errstr[512];
    int in_band;

    if (dlb_sim_calibrate(o, dir, jobs, stdout, &in_band, errstr, sizeof(errstr))) {
        fprintf(stderr, "sim: --calibration: %s\n", errstr);
        return 1;
    }
    if (!in_band)
        fprintf(stderr, "sim: --calibration: a figure is out of its band (the table says which)\n");
    return in_band ? 0 : 1;
}

enum {
    OPT_START = 256,
    OPT_TIME_SCALE,
    OPT_NODE_FAILURES,
    OPT_NODES,
    OPT_CORES,
    OPT_MEMORY,
    OPT_SAMPLE,
    OPT_ASK,
    OPT_PS_CHANGE,
    OPT_PENDING,
    OPT_MAX_HOURS,
    OPT_PLANS,
    OPT_PLAN_TIMEOUT,
    OPT_OUT,
    OPT_SUMMARY,
    OPT_JOBS_CSV,
    OPT_FIT,
    OPT_FROM_ENV,
    OPT_FROM,
    OPT_TO,
    OPT_OVERSIZE,
    OPT_PREDICT,
    OPT_CALIBRATION,
    OPT_FIT_PS,
};

int cmd_sim_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"workload", required_argument, 0, 'w'},
        {"jobs", required_argument, 0, 'n'},
        {"seed", required_argument, 0, 's'},
        {"start", required_argument, 0, OPT_START},
        {"time-scale", required_argument, 0, OPT_TIME_SCALE},
        {"node-failures", required_argument, 0, OPT_NODE_FAILURES},
        {"cluster-nodes", required_argument, 0, OPT_NODES},
        {"cluster-cores", required_argument, 0, OPT_CORES},
        {"cluster-memory", required_argument, 0, OPT_MEMORY},
        {"sample-interval", required_argument, 0, OPT_SAMPLE},
        {"ask-every", required_argument, 0, OPT_ASK},
        {"ps-change-every", required_argument, 0, OPT_PS_CHANGE},
        {"pending-timeout", required_argument, 0, OPT_PENDING},
        {"max-hours", required_argument, 0, OPT_MAX_HOURS},
        {"plans", required_argument, 0, OPT_PLANS},
        {"jobs-csv", required_argument, 0, OPT_JOBS_CSV},
        {"plan-timeout-ms", required_argument, 0, OPT_PLAN_TIMEOUT},
        {"out", required_argument, 0, OPT_OUT},
        {"summary-json", required_argument, 0, OPT_SUMMARY},
        {"fit", required_argument, 0, OPT_FIT},
        {"workload-from-env", required_argument, 0, OPT_FROM_ENV},
        {"from", required_argument, 0, OPT_FROM},
        {"to", required_argument, 0, OPT_TO},
        {"oversize", required_argument, 0, OPT_OVERSIZE},
        {"predict", required_argument, 0, OPT_PREDICT},
        {"calibration", required_argument, 0, OPT_CALIBRATION},
        {"fit-ps", required_argument, 0, OPT_FIT_PS},
        CLI_COMMON_LONG,
        {0, 0, 0, 0}};
    cli_opts_t co = {0};
    dlb_conf_t conf;
    dlb_sim_opts_t o;
    dlb_sim_workload_t wl = {0};
    dlb_sim_summary_t sum;
    dlb_sim_io_t io;
    dlb_sim_kafka_t *k = NULL;
    dlb_sim_local_t *local = NULL;
    const char *workload = NULL, *out_path = NULL, *summary_path = NULL, *fit = NULL;
    const char *from_env = NULL, *jobs_path = NULL, *predict = NULL, *calibration = NULL;
    const char *fit_ps = NULL, *nodes_path = NULL;
    dlb_sim_node_t *nodes = NULL;
    int pool_set = 0;
    int64_t from_ms = 0, to_ms = INT64_MAX;
    char errstr[512];
    double v = 0, jobs = 0, plan_timeout = 10000;
    int c, rc, plans = 1, conf_built = 0, json_io = 0;
    FILE *out_fp = NULL;

    dlb_sim_opts_init(&o);
    while ((c = getopt_long(argc, argv, "w:n:s:" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        const char *bad = NULL;

        switch (c) {
        case 'w':
            workload = optarg;
            break;
        case 'n':
            if (parse_num(optarg, 1, 1000000, &jobs))
                bad = "--jobs";
            break;
        case 's':
            if (parse_num(optarg, 0, 9007199254740992.0, &v))
                bad = "--seed";
            o.seed = (uint64_t)v;
            break;
        case OPT_START:
            if (parse_num(optarg, 0, 4e15, &v))
                bad = "--start";
            o.start_ms = (int64_t)v;
            break;
        case OPT_TIME_SCALE:
            if (parse_num(optarg, 1e-6, 1e6, &o.params.time_scale))
                bad = "--time-scale";
            break;
        case OPT_NODE_FAILURES:
            if (parse_num(optarg, 0, 3600, &o.params.node_fail_per_hour))
                bad = "--node-failures";
            break;
        case OPT_NODES:
            nodes_path = optarg;
            break;
        case OPT_CORES:
            if (parse_num(optarg, 1, 1e9, &o.cluster_cores))
                bad = "--cluster-cores";
            pool_set = 1;
            break;
        case OPT_MEMORY:
            if (parse_num(optarg, 1, 1e9, &v))
                bad = "--cluster-memory";
            o.cluster_memory = (int64_t)(v * (double)DLB_GIB);
            pool_set = 1;
            break;
        case OPT_SAMPLE:
            if (parse_num(optarg, 1, 86400, &v))
                bad = "--sample-interval";
            o.params.sample_ms = (int64_t)(v * 1000);
            break;
        case OPT_ASK:
            if (parse_num(optarg, 0, 1e7, &v))
                bad = "--ask-every";
            o.params.ask_every_ms = (int64_t)(v * 1000);
            break;
        case OPT_PS_CHANGE:
            if (parse_num(optarg, 0, 1e7, &v))
                bad = "--ps-change-every";
            o.params.ps_change_ms = (int64_t)(v * 1000);
            break;
        case OPT_PENDING:
            if (parse_num(optarg, 0, 1e9, &v))
                bad = "--pending-timeout";
            o.pending_timeout_ms = (int64_t)(v * 1000);
            break;
        case OPT_MAX_HOURS:
            if (parse_num(optarg, 0, 1e6, &v))
                bad = "--max-hours";
            o.max_virtual_ms = (int64_t)(v * 3.6e6);
            break;
        case OPT_PLANS:
            if (!strcmp(optarg, "kafka"))
                plans = 1;
            else if (!strcmp(optarg, "none"))
                plans = 0;
            else if (!strcmp(optarg, "local"))
                plans = 2;
            else
                bad = "--plans (kafka, none or local)";
            break;
        case OPT_PLAN_TIMEOUT:
            if (parse_num(optarg, 0, 3.6e6, &plan_timeout))
                bad = "--plan-timeout-ms";
            break;
        case OPT_OUT:
            out_path = optarg;
            break;
        case OPT_SUMMARY:
            summary_path = optarg;
            break;
        case OPT_JOBS_CSV:
            jobs_path = optarg;
            break;
        case OPT_FIT:
            fit = optarg;
            break;
        case OPT_FROM_ENV:
            from_env = optarg;
            break;
        case OPT_OVERSIZE:
            if (parse_num(optarg, 0, 4, &o.params.users.oversize))
                bad = "--oversize (0 to 4)";
            break;
        case OPT_PREDICT:
            predict = optarg;
            break;
        case OPT_CALIBRATION:
            calibration = optarg;
            break;
        case OPT_FIT_PS:
            fit_ps = optarg;
            break;
        case OPT_FROM:
            if (dlb_replay_parse_time(optarg, dlb_clock_wall_ms(), &from_ms, errstr,
                                      sizeof(errstr)))
                bad = "--from";
            break;
        case OPT_TO:
            if (dlb_replay_parse_time(optarg, dlb_clock_wall_ms(), &to_ms, errstr, sizeof(errstr)))
                bad = "--to";
            break;
        default:
            if ((rc = cli_default_opt(&co, c, optarg, usage)) >= 0)
                return rc;
        }
        if (bad) {
            fprintf(stderr, "sim: %s: '%s' is not valid\n", bad, optarg);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sim: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (fit)
        return fit_dir(fit);
    if (fit_ps)
        return fit_ps_dir(fit_ps);
    if (predict)
        return predict_one(predict);
    if (calibration)
        return calibrate(&o, calibration, jobs ? (size_t)jobs : 200);
    if (!workload == !from_env || ((from_ms || to_ms != INT64_MAX) && !from_env)) {
        fprintf(stderr, "sim: one of --workload FILE and --workload-from-env ENV is required"
                        " (--from and --to go with the latter)\n");
        usage(stderr);
        return 2;
    }
    if (from_env && dlb_env_name_check(from_env, errstr, sizeof(errstr))) {
        fprintf(stderr, "sim: --workload-from-env: %s\n", errstr);
        return 2;
    }
    if (nodes_path && pool_set) {
        fprintf(stderr, "sim: --cluster-cores and --cluster-memory size the pool; with "
                        "--cluster-nodes the nodes are the cluster\n");
        return 2;
    }
    /* The cluster: nodes, from the file or the built-in PAI sample, unless
     * the pool's size is given. */
    if (nodes_path || !pool_set) {
        if (nodes_path
                ? dlb_sim_node_file_load(nodes_path, &nodes, &o.nodes_cnt, errstr, sizeof(errstr))
                : dlb_sim_nodes_default(&nodes, &o.nodes_cnt, errstr, sizeof(errstr))) {
            fprintf(stderr, "sim: --cluster-nodes: %s\n", errstr);
            return 2;
        }
        o.nodes = nodes;
    }
    if (cli_conf_build_env(&co, &conf, "sim")) {
        free(nodes);
        return 1;
    }
    conf_built = 1;
    rc = 1;
    o.params.limits = conf.limits;
    if (from_env) {
        dlb_sim_history_stats_t st;

        if (dlb_sim_history_read(conf.pg_dsn, from_env, from_ms, to_ms, (size_t)jobs, &wl, &st,
                                 errstr, sizeof(errstr))) {
            dlb_err("--workload-from-env %s: %s", from_env, errstr);
            goto out;
        }
        dlb_info("workload from %s: %zu jobs, %zu speed points, %zu jobs without a speed left out",
                 from_env, st.jobs, st.points, st.skipped);
    } else if (dlb_sim_workload_load(workload, (size_t)jobs, &wl, errstr, sizeof(errstr))) {
        dlb_err("%s", errstr);
        goto out;
    }
    o.wl = &wl;
    if (jobs_path && !(o.jobs_csv = fopen(jobs_path, "w"))) {
        dlb_err("%s: %s", jobs_path, strerror(errno));
        goto out;
    }
    cli_signals_install();
    o.stop = &cli_stop;
    if (out_path) {
        out_fp = strcmp(out_path, "-") ? fopen(out_path, "w") : stdout;
        if (!out_fp) {
            dlb_err("%s: %s", out_path, strerror(errno));
            goto out;
        }
        if (dlb_sim_json_io(out_fp, &io, errstr, sizeof(errstr))) {
            dlb_err("%s", errstr);
            goto out;
        }
        json_io = 1;
    } else if (plans == 2) {
        if (dlb_sim_local_new(&conf, &local, &io, errstr, sizeof(errstr))) {
            dlb_err("%s", errstr);
            goto out;
        }
    } else if (dlb_sim_kafka_new(&conf, plans, (long)plan_timeout, &k, &io, errstr,
                                 sizeof(errstr))) {
        dlb_err("%s", errstr);
        goto out;
    }
    if (dlb_sim_run(&o, &io, &sum, errstr, sizeof(errstr))) {
        dlb_err("%s", errstr);
        goto out;
    }
    dlb_sim_summary_print(&sum, stderr);
    rc = 0;
    if (summary_path) {
        FILE *fp = fopen(summary_path, "w");
        if (!fp || dlb_sim_summary_json(&sum, fp) || fclose(fp)) {
            dlb_err("%s: cannot write the summary", summary_path);
            rc = 1;
        }
    }
out:
    if (json_io)
        dlb_sim_json_io_free(&io);
    if (out_fp && out_fp != stdout && fclose(out_fp))
        rc = 1;
    else if (out_fp == stdout && fflush(stdout))
        rc = 1;
    dlb_sim_kafka_destroy(k);
    dlb_sim_local_destroy(local);
    if (o.jobs_csv && fclose(o.jobs_csv)) {
        dlb_err("%s: cannot write", jobs_path);
        rc = 1;
    }
    dlb_sim_workload_free(&wl);
    free(nodes);
    if (conf_built)
        dlb_conf_destroy(&conf);
    return rc;
}
