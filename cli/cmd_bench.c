/* dlbrain bench: how fast plans are made.
 *
 *   optimizer  the optimizer core alone (dlb_router_plan, a pure function) on
 *              the inputs a recording of events gives each of its plan requests
 *              (bench/bench_optimizer.c)
 *   roundtrip  end to end: plan request produced -> plan received by a master,
 *              through a running `dlbrain optimizer`, against the raw Kafka
 *              produce -> consume round trip on the same broker in the same run
 *              (bench/bench_roundtrip.c); with --gateway, also brain.Brain
 *              optimize calls through a running `dlbrain gateway`
 *              (bench/bench_gateway.c)
 *   matcher    the configuration matcher alone (dlb_matcher_match) on synthetic
 *              rules and jobs, against a plain scan of every rule
 *              (bench/bench_matcher.c)
 *   ingest     runtime samples through `dlbrain optimizer` processes into Redis
 *              and PostgreSQL, against a plain consumer reading the same
 *              messages (bench/bench_ingest.c)
 *   decode     the ingest bench's samples decoded and validated with values
 *              built per message and through a decoder keeping them
 *              (bench/bench_decode.c)
 *
 * scripts/bench makes the recording and starts the servers. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "bench_decode.h"
#include "bench_ingest.h"
#include "bench_matcher.h"
#include "bench_optimizer.h"
#include "bench_rebuild.h"
#include "bench_roundtrip.h"
#include "cmd.h"
#include "common.h"
#include "event.h"
#include "log.h"
#include "rss.h"

/* The benchmarks, the word after "dlbrain bench". */
const char *const cmd_bench_modes[] = {"optimizer", "roundtrip", "matcher", "ingest",
                                       "rebuild",   "decode",    NULL};

static void usage(FILE *fp)
{
    fprintf(fp, "usage: dlbrain bench optimizer --events FILE [options]\n"
                "       dlbrain bench roundtrip [options]\n"
                "       dlbrain bench matcher [--seconds N] [--json FILE]\n"
                "       dlbrain bench ingest [options]\n"
                "       dlbrain bench rebuild [--json FILE]\n"
                "       dlbrain bench decode [--samples N] [--json FILE]\n\n"
                "decode: the ingest bench's runtime samples (newest schema, fixed seed) decoded\n"
                "and validated as the stream does, on one core: with avro-c values built for\n"
                "every message (dlb_codec_decode), and through a decoder that keeps one set of\n"
                "values per schema id and resets it (dlb_codec_decoder_decode); first checked\n"
                "to give the same events, then 5 passes each way, alternating; median rates\n"
                "and their ratio.\n"
                "  -k, --samples N       messages (default 20000)\n\n"
                "rebuild: milliseconds to fold 1,024 / 4,096 / 16,384 pods' node events into a\n"
                "job's state as a rebuild from PostgreSQL does (pods appended through a hash\n"
                "index, sorted once), beside one sorted insert per new pod, and their ratio.\n\n"
                "optimizer: plans per second of the optimizer core alone (dlb_router_plan, one\n"
                "core, no I/O). FILE holds events as JSON lines ('dlbrain emit' input, with\n"
                "event_id and event_time_ms), e.g. from 'dlbrain simulate'. Each job's events\n"
                "are folded in event-time order (ties: job, node, metrics, requests, as the\n"
                "consumer merges them) with the job-state fold of the cache; each plan request\n"
                "gets the state as of its time, the job's OOMs already answered, and, when it\n"
                "needs it, the history PostgreSQL would give it: jobs of the same scenario\n"
                "created in the history.hours before it, newest history.max.jobs, samples and\n"
                "OOMs before it. Then dlb_router_plan runs on each stage's requests in turn.\n"
                "  -E, --events FILE     the recording (required)\n"
                "  -s, --seconds N       timed seconds per optimizer set (default 2), split\n"
                "                        evenly over the stages present\n"
                "  -S, --set NAME        dlrover or dlbrain (default: both)\n"
                "  -P, --plans-out FILE  also write each request's plan (JSON lines with\n"
                "                        \"set\")\n\n"
                "roundtrip: a producer sends plan requests at a steady rate into a running\n"
                "'dlbrain optimizer' (after job meta and a few runtime samples per job); a\n"
                "master subscribed to <env>.plans (read_committed, own group) records each\n"
                "request-produced -> plan-received latency. Baseline, first, in the same run:\n"
                "the same bytes at the same rate through a plain topic <env>.bench-raw (no\n"
                "optimizer), produce -> consume. Both use the same client settings (-X).\n"
                "  -r, --rate R          requests per second (default 100)\n"
                "  -s, --seconds S       seconds per path (default 10)\n"
                "  -n, --jobs N          jobs the requests go round (default 50)\n"
                "  -k, --samples K       runtime samples per job before the requests (default 3)\n"
                "      --stage STAGE     stage of the requests (default job_stage_running)\n"
                "  -w, --warmup-ms MS    longest wait for the optimizer to answer a first request\n"
                "                        of every job (default 60000)\n"
                "  -d, --drain-ms MS     wait after the last request for late answers (default\n"
                "                        10000); what is still missing then counts as lost\n"
                "  -l, --label TEXT      what the run is on, e.g. mock or real (printed)\n"
                "  -g, --gateway HOST:PORT\n"
                "                        then the gateway path: as many brain.Brain optimize\n"
                "                        calls (gRPC, one channel) for the same jobs and stage to\n"
                "                        a running 'dlbrain gateway' on the same brokers, started\n"
                "                        on schedule whether or not earlier ones were answered,\n"
                "                        each timed from its start to its answer; success=false\n"
                "                        or another status counts as failed\n"
                "  -H, --gateway-http URL\n"
                "                        then the HTTP Brain path: as many POST /optimize calls\n"
                "                        (libcurl, keep-alive connections, one call each at a\n"
                "                        time) to a running gateway's gateway.http.address\n"
                "                        (http://HOST:PORT), timed the same way; 201 with\n"
                "                        success=true is good\n"
                "  -m, --max-inflight N  gateway calls in flight at most, per path (default\n"
                "                        1000); a call due beyond it starts late (reported)\n\n"
                "matcher: matches per second of the configuration matcher alone (one core, no\n"
                "I/O) against 10, 1000 and 10000 synthetic rules (fixed seed: the same rules and\n"
                "jobs every run), beside a plain scan of every rule with no index and no cache.\n"
                "  -s, --seconds N       timed seconds per rule count, for each (default 1)\n\n"
                "ingest: runtime samples (3 to 21 pods each, fixed seed) produced into\n"
                "<env>.metrics as fast as the broker takes them (not timed), read back three\n"
                "times by a plain consumer without decoding (the median is the raw rate), then\n"
                "by new 'dlbrain optimizer' processes (this binary, same settings, a group of\n"
                "their own starting at the run's first message) with full persistence, timed\n"
                "from their start until the group has committed the last message and\n"
                "PostgreSQL holds every sample; Redis is checked to hold every job's runtime\n"
                "window. Prints both rates, their ratio and the peak RSS of every process.\n"
                "  -k, --samples N       runtime samples (default 200000)\n"
                "  -n, --jobs N          jobs they belong to (default 1000)\n"
                "  -C, --consumers K     optimizer processes (default 1)\n"
                "  -t, --timeout-s S     longest wait for each path (default 600)\n\n"
                "all:\n"
                "  -j, --json FILE       also write the results as JSON\n" CLI_COMMON_HELP);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int write_json(const char *path, cJSON *root)
{
    char *text;
    int rc;

    /* Every benchmark's JSON says how much memory its process took at most
     * (the ingest bench reports its consumer processes' too). */
    if (!cJSON_HasObjectItem(root, "peak_rss_bytes"))
        cJSON_AddNumberToObject(root, "peak_rss_bytes", (double)dlb_rss_peak_self());
    text = cJSON_Print(root);

    if (!text) {
        dlb_err("--json %s: out of memory", path);
        return -1;
    }
    rc = cli_write_file(path, text);
    if (rc)
        dlb_err("--json %s: %s", path, strerror(errno));
    cJSON_free(text);
    return rc;
}

/* The end of a benchmark that returns err and maybe json: log the error or
 * write the JSON. @returns the exit status. */
static int bench_done(int err, const char *errstr, cJSON *json, const char *json_path)
{
    int rc = 1;

    if (err)
        dlb_err("%s", errstr);
    else if (!json || !write_json(json_path, json))
        rc = cli_stop ? 1 : 0;
    cJSON_Delete(json);
    return rc;
}

static int bench_optimizer(const dlb_conf_t *conf, const dlb_bench_optimizer_opts_t *o,
                           const char *json_path)
{
    cJSON *json = NULL;
    char errstr[512];
    int err = dlb_bench_optimizer(conf, o, json_path ? &json : NULL, errstr, sizeof(errstr));

    return bench_done(err, errstr, json, json_path);
}

static int bench_matcher(const dlb_bench_matcher_opts_t *o, const char *json_path)
{
    cJSON *json = NULL;
    char errstr[512];
    int err = dlb_bench_matcher(o, json_path ? &json : NULL, errstr, sizeof(errstr));

    return bench_done(err, errstr, json, json_path);
}

static int bench_ingest(const dlb_conf_t *conf, const dlb_bench_ingest_opts_t *o,
                        const char *json_path)
{
    cJSON *json = NULL;
    char errstr[512];
    int err = dlb_bench_ingest(conf, o, json_path ? &json : NULL, errstr, sizeof(errstr));

    return bench_done(err, errstr, json, json_path);
}

/* The command line of one `dlbrain optimizer` of the ingest bench: this
 * binary with this command's configuration file and -X settings, so it reads
 * the same brokers, environment, PostgreSQL and Redis. */
static const char **consumer_argv(const cli_opts_t *o, char *self, size_t self_size)
{
    const char **argv = calloc(2 + 2 + 2 * (size_t)o->xs_cnt + 1, sizeof(*argv));
    ssize_t n = readlink("/proc/self/exe", self, self_size - 1);
    size_t i = 0;

    if (!argv)
        return NULL;
    if (n <= 0) {
        dlb_err("bench ingest: cannot find this program (/proc/self/exe): %s", strerror(errno));
        free(argv);
        return NULL;
    }
    self[n] = '\0';
    argv[i++] = self;
    argv[i++] = "optimizer";
    if (o->conf_file) {
        argv[i++] = "-c";
        argv[i++] = o->conf_file;
    }
    for (int k = 0; k < o->xs_cnt; k++) {
        argv[i++] = "-X";
        argv[i++] = o->xs[k];
    }
    return argv;
}

static int bench_roundtrip(const dlb_conf_t *conf, const dlb_bench_roundtrip_opts_t *o,
                           const char *json_path)
{
    dlb_bench_roundtrip_t *rt = NULL;
    dlb_bench_roundtrip_result_t res;
    cJSON *json = NULL;
    char errstr[512];
    int rc = 1;

    /* The error is logged before the run's Kafka clients close: closing can
     * take seconds and log what is still undelivered. */
    if (dlb_bench_roundtrip_new(&rt, conf, o, errstr, sizeof(errstr)) ||
        dlb_bench_roundtrip_run(rt, &res, json_path ? &json : NULL, errstr, sizeof(errstr))) {
        dlb_err("%s", errstr);
        goto out;
    }
    if (res.stopped || (json && write_json(json_path, json)))
        goto out;
    /* Lost answers fail the run: a latency table over what came back hides them. */
    rc = res.raw_received == res.raw_sent && res.plans_received == res.plans_sent &&
                 res.gateway_received == res.gateway_sent && res.http_received == res.http_sent
             ? 0
             : 1;
    if (rc)
        dlb_err("answers missing after %ld ms: raw %ld of %ld, plans %ld of %ld, gateway %ld of "
                "%ld good (%ld failed), HTTP Brain %ld of %ld good (%ld failed)",
                o->drain_ms, res.raw_received, res.raw_sent, res.plans_received, res.plans_sent,
                res.gateway_received, res.gateway_sent, res.gateway_failed, res.http_received,
                res.http_sent, res.http_failed);
out:
    cJSON_Delete(json);
    dlb_bench_roundtrip_destroy(rt);
    return rc;
}

int cmd_bench_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"events", required_argument, 0, 'E'},
                                             {"seconds", required_argument, 0, 's'},
                                             {"set", required_argument, 0, 'S'},
                                             {"plans-out", required_argument, 0, 'P'},
                                             {"rate", required_argument, 0, 'r'},
                                             {"jobs", required_argument, 0, 'n'},
                                             {"samples", required_argument, 0, 'k'},
                                             {"stage", required_argument, 0, 'T'},
                                             {"warmup-ms", required_argument, 0, 'w'},
                                             {"drain-ms", required_argument, 0, 'd'},
                                             {"label", required_argument, 0, 'l'},
                                             {"gateway", required_argument, 0, 'g'},
                                             {"gateway-http", required_argument, 0, 'H'},
                                             {"max-inflight", required_argument, 0, 'm'},
                                             {"json", required_argument, 0, 'j'},
                                             {"consumers", required_argument, 0, 'C'},
                                             {"timeout-s", required_argument, 0, 't'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    const char *mode, *events = NULL, *set = NULL, *plans_path = NULL, *json_path = NULL,
                      *label = NULL, *stage = DLB_STAGE_RUNNING, *gateway = NULL,
                      *gateway_http = NULL;
    long seconds = -1, rate = 100, jobs = -1, samples = 3, warmup_ms = 60000, drain_ms = 10000,
         ingest_samples = 200000, consumers = 1, timeout_s = 600, max_inflight = 1000;
    const char *const *m;
    cli_opts_t o = {0};
    dlb_conf_t conf;
    int c, rc, ingest, decode;

    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    mode = argv[1];
    for (m = cmd_bench_modes; *m && strcmp(*m, mode); m++)
        ;
    if (!*m) {
        fprintf(stderr, "bench: unknown benchmark '%s' (", mode);
        for (m = cmd_bench_modes; *m; m++)
            fprintf(stderr, "%s%s", *m, m[1] ? (m[2] ? ", " : " or ") : ")\n");
        return 2;
    }
    ingest = !strcmp(mode, "ingest");
    decode = !strcmp(mode, "decode");
    argc--;
    argv++;
    while ((c = getopt_long(argc, argv, "E:s:S:P:r:n:k:w:d:l:g:H:m:j:C:t:" CLI_COMMON_SHORT,
                            longopts, NULL)) != -1) {
        long *target = NULL, lo = 1, hi = 1000000000;
        switch (c) {
        case 'E':
            events = optarg;
            break;
        case 'S':
            if (strcmp(optarg, "dlrover") && strcmp(optarg, "dlbrain")) {
                fprintf(stderr, "bench: --set: '%s' is not dlrover or dlbrain\n", optarg);
                return 2;
            }
            set = optarg;
            break;
        case 'P':
            plans_path = optarg;
            break;
        case 'j':
            json_path = optarg;
            break;
        case 'l':
            label = optarg;
            break;
        case 'g':
            gateway = optarg;
            break;
        case 'H':
            gateway_http = optarg;
            break;
        case 'm':
            target = &max_inflight;
            hi = 100000;
            break;
        case 'T':
            if (!dlb_in_list(dlb_stages, optarg)) {
                fprintf(stderr, "bench: --stage: '%s' is not a stage\n", optarg);
                return 2;
            }
            stage = optarg;
            break;
        case 's':
            target = &seconds;
            hi = 86400;
            break;
        case 'r':
            target = &rate;
            hi = 1000000;
            break;
        case 'n':
            target = &jobs;
            hi = 1000000;
            break;
        case 'C':
            target = &consumers;
            hi = 64;
            break;
        case 't':
            target = &timeout_s;
            hi = 86400;
            break;
        case 'k':
            /* runtime samples: per job before the requests, or all of an ingest or
             * decode run */
            target = ingest || decode ? &ingest_samples : &samples;
            lo = ingest || decode ? 1 : 0;
            hi = ingest || decode ? 100000000 : 60;
            break;
        case 'w':
            target = &warmup_ms;
            break;
        case 'd':
            target = &drain_ms;
            lo = 0;
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
        if (target && parse_long(optarg, lo, hi, target)) {
            fprintf(stderr, "bench: -%c: '%s' is not an integer in %ld..%ld\n", c, optarg, lo, hi);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!strcmp(mode, "roundtrip") && jobs > 9999) {
        fprintf(stderr, "bench roundtrip: --jobs: at most 9999\n");
        return 2;
    }
    if (strcmp(mode, "roundtrip") && (gateway || gateway_http)) {
        fprintf(stderr, "bench %s: --gateway and --gateway-http are options of roundtrip\n", mode);
        return 2;
    }
    if (!strcmp(mode, "optimizer") && !events) {
        fprintf(stderr, "bench optimizer: --events FILE is required\n");
        return 2;
    }
    if ((long)rate * (seconds < 0 ? 10 : seconds) > 50000000) {
        fprintf(stderr, "bench roundtrip: --rate x --seconds is more than 50000000 requests\n");
        return 2;
    }
    if (cli_conf_build_env(&o, &conf, "bench"))
        return 2;
    cli_signals_install();
    if (!strcmp(mode, "optimizer")) {
        dlb_bench_optimizer_opts_t bo = {.events = events,
                                         .only_set = set,
                                         .seconds = seconds < 0 ? 2.0 : (double)seconds,
                                         .plans_path = plans_path,
                                         .out = stdout,
                                         .stop = &cli_stop};
        rc = bench_optimizer(&conf, &bo, json_path);
    } else if (!strcmp(mode, "rebuild")) {
        cJSON *json = NULL;
        char errstr[512];
        int err = dlb_bench_rebuild(stdout, json_path ? &json : NULL, errstr, sizeof(errstr));
        rc = bench_done(err, errstr, json, json_path);
    } else if (decode) {
        cJSON *json = NULL;
        char errstr[512];
        dlb_bench_decode_opts_t dopt = {.samples =
                                            ingest_samples == 200000 ? 20000 : ingest_samples,
                                        .passes = 5,
                                        .out = stdout,
                                        .stop = &cli_stop};
        int err = dlb_bench_decode(&dopt, json_path ? &json : NULL, errstr, sizeof(errstr));
        rc = bench_done(err, errstr, json, json_path);
    } else if (!strcmp(mode, "matcher")) {
        dlb_bench_matcher_opts_t mo = {
            .seconds = seconds < 0 ? 1.0 : (double)seconds, .out = stdout, .stop = &cli_stop};
        rc = bench_matcher(&mo, json_path);
    } else if (!strcmp(mode, "ingest")) {
        char self[PATH_MAX];
        const char **cargv = consumer_argv(&o, self, sizeof(self));
        dlb_bench_ingest_opts_t io = {.samples = ingest_samples,
                                      .jobs = jobs < 0 ? 1000 : jobs,
                                      .consumers = (int)consumers,
                                      .timeout_s = timeout_s,
                                      .consumer_argv = cargv,
                                      .label = label,
                                      .out = stdout,
                                      .stop = &cli_stop};
        rc = cargv ? bench_ingest(&conf, &io, json_path) : 1;
        free(cargv);
    } else {
        dlb_bench_roundtrip_opts_t ro = {.rate = (double)rate,
                                         .seconds = seconds < 0 ? 10 : seconds,
                                         .jobs = jobs < 0 ? 50 : jobs,
                                         .samples = samples,
                                         .stage = stage,
                                         .warmup_ms = warmup_ms,
                                         .drain_ms = drain_ms,
                                         .label = label,
                                         .gateway = gateway,
                                         .gateway_http = gateway_http,
                                         .max_inflight = max_inflight,
                                         .out = stdout,
                                         .stop = &cli_stop};
        rc = bench_roundtrip(&conf, &ro, json_path);
    }
    dlb_conf_destroy(&conf);
    return rc;
}
