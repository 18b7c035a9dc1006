/* dlbrain simulate: the events of a small simulated training cluster as JSON lines. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cmd.h"
#include "common.h"
#include "demo_cluster.h"
#include "event.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain simulate [options]\n"
            "Print the events of a small simulated TensorFlow PS training cluster as JSON lines,\n"
            "the input of 'dlbrain emit'. The output is the same for the same seed, base time\n"
            "and job count: job uids come from the seed, event ids are \"<job uid>-ev-NNNN\",\n"
            "event times are the base time plus fixed offsets.\n"
            "A summary line goes to stderr.\n\n"
            "  -p, --phase P         history (default): %d finished jobs of the scenarios\n"
            "                        ctr-ranking and recsys-dnn with runtime samples, one worker\n"
            "                        OOM and one failed job; base time = now - 3 days.\n"
            "                        live: %d new jobs of ctr-ranking, recsys-dnn and the new\n"
            "                        scenario nlp-bert, each asking for a create plan. A third\n"
            "                        of them (at least %d, all if fewer) run: they ask for\n"
            "                        ps_initial and worker_initial plans, then each goes\n"
            "                        through one of: a worker OOM, a PS OOM, a CPU-hot PS, a\n"
            "                        memory-hot PS, an under-used PS, workers scaled 4 -> 8 ->\n"
            "                        12, a leaking worker, a hang (global_step stuck 11 min), a\n"
            "                        straggler; and ask at job_stage_running, _ps_running or\n"
            "                        _worker_running (OOMs name the pod). Base time = now -\n"
            "                        30 min, so the longest job has ended by now.\n"
            "  -s, --seed N          random seed (default 1)\n"
            "  -T, --base-time-ms T  event time of the first job, ms since the epoch\n"
            "  -n, --jobs N          jobs in the phase, 1..%d (the scenario mix is kept)\n"
            "  -E, --expect          print what the phase produces instead of the events, one\n"
            "                        key=value per line (values are integers except phase):\n"
            "                        phase, jobs, events, plan_requests (= plans the optimizer\n"
            "                        will publish), oom_requests, oom_events, finished_jobs\n"
            "                        (jobs that end succeeded or failed), failed_jobs,\n"
            "                        running_jobs, requests.<stage> (plan requests per stage)\n"
            "The events do not depend on the settings: they are checked but change "
            "nothing.\n" CLI_COMMON_HELP,
            DLB_DEMO_HISTORY_JOBS, DLB_DEMO_LIVE_JOBS, DLB_DEMO_ROLES, DLB_DEMO_MAX_JOBS);
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cmd_simulate_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"phase", required_argument, 0, 'p'},
                                             {"seed", required_argument, 0, 's'},
                                             {"base-time-ms", required_argument, 0, 'T'},
                                             {"jobs", required_argument, 0, 'n'},
                                             {"expect", no_argument, 0, 'E'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    dlb_demo_opts_t o = {.phase = DLB_DEMO_HISTORY, .seed = 1, .base_time_ms = -1};
    dlb_demo_counts_t cnt;
    cli_opts_t co = {0};
    dlb_conf_t conf;
    char errstr[256];
    int c, rc, expect = 0;
    int64_t v;

    while ((c = getopt_long(argc, argv, "p:s:T:n:E" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (dlb_demo_phase_parse(optarg, &o.phase)) {
                fprintf(stderr, "simulate: --phase: '%s' is not history or live\n", optarg);
                return 2;
            }
            break;
        case 's':
            if (parse_i64(optarg, 0, INT64_MAX, &v)) {
                fprintf(stderr, "simulate: --seed: '%s' is not a non-negative integer\n", optarg);
                return 2;
            }
            o.seed = (uint64_t)v;
            break;
        case 'T':
            if (parse_i64(optarg, 0, INT64_MAX, &o.base_time_ms)) {
                fprintf(stderr, "simulate: --base-time-ms: '%s' is not a time in ms\n", optarg);
                return 2;
            }
            break;
        case 'n':
            if (parse_i64(optarg, 1, DLB_DEMO_MAX_JOBS, &v)) {
                fprintf(stderr, "simulate: --jobs: '%s' is not in 1..%d\n", optarg,
                        DLB_DEMO_MAX_JOBS);
                return 2;
            }
            o.jobs = (int)v;
            break;
        case 'E':
            expect = 1;
            break;
        default:
            if ((rc = cli_default_opt(&co, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "simulate: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    /* Like every command: a bad setting is refused, not silently ignored. */
    if (cli_conf_build(&co, &conf, "simulate"))
        return 2;
    dlb_conf_destroy(&conf);
    if (o.base_time_ms < 0)
        o.base_time_ms =
            dlb_clock_wall_ms() -
            (o.phase == DLB_DEMO_HISTORY ? DLB_DEMO_HISTORY_AGE_MS : DLB_DEMO_LIVE_AGE_MS);
    if (dlb_demo_write(&o, expect ? NULL : stdout, &cnt, errstr, sizeof(errstr))) {
        fprintf(stderr, "simulate: %s\n", errstr);
        return 1;
    }
    if (expect) {
        printf("phase=%s\njobs=%d\nevents=%d\nplan_requests=%d\noom_requests=%d\noom_events=%d\n"
               "finished_jobs=%d\nfailed_jobs=%d\nrunning_jobs=%d\n",
               dlb_demo_phase_name(o.phase), cnt.jobs, cnt.events, cnt.plan_requests,
               cnt.oom_requests, cnt.oom_events, cnt.finished_jobs, cnt.failed_jobs,
               cnt.running_jobs);
        for (int i = 0; i < DLB_DEMO_STAGES && dlb_stages[i]; i++)
            printf("requests.%s=%d\n", dlb_stages[i], cnt.stage_requests[i]);
        return fflush(stdout) ? 1 : 0;
    }
    fprintf(stderr, "simulate: %d jobs (%s), %d events, %d plan requests expected\n", cnt.jobs,
            dlb_demo_phase_name(o.phase), cnt.events, cnt.plan_requests);
    return 0;
}
