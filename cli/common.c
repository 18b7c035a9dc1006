#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "env_registry.h"
#include "log.h"
#include "metrics.h"
#include "schemareg_client.h"
#include "subscribe.h"

volatile sig_atomic_t cli_stop;

static void on_signal(int sig)
{
    (void)sig;
    cli_stop = 1;
}

void cli_signals_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int add_x(cli_opts_t *o, const char *kv)
{
    if (o->xs_cnt >= CLI_MAX_X) {
        fprintf(stderr, "dlbrain: too many -X options (at most %d)\n", CLI_MAX_X);
        return -1;
    }
    o->xs[o->xs_cnt++] = kv;
    return 1;
}

int cli_common_opt(cli_opts_t *o, int c, const char *arg)
{
    static char kv[8][1100]; /* storage for options rewritten as -X */
    static int kv_cnt;

    switch (c) {
    case 'c':
        o->conf_file = arg;
        return 1;
    case 'X':
        return add_x(o, arg);
    case 'b':
    case 'e':
    case 'L':
        if (kv_cnt >= 8)
            return -1;
        snprintf(kv[kv_cnt], sizeof(kv[kv_cnt]), "%s=%s",
                 c == 'b'   ? "brokers"
                 : c == 'e' ? "env"
                            : "log.format",
                 arg);
        return add_x(o, kv[kv_cnt++]);
    case 'v':
        o->verbosity++;
        return 1;
    case 'q':
        o->verbosity--;
        return 1;
    default:
        return 0;
    }
}

int cli_default_opt(cli_opts_t *o, int c, const char *arg, void (*usage)(FILE *))
{
    if (c == 'h') {
        usage(stdout);
        return 0;
    }
    if (cli_common_opt(o, c, arg) > 0)
        return -1;
    usage(stderr);
    return 2;
}

int cli_conf_build(const cli_opts_t *o, dlb_conf_t *conf, const char *program)
{
    char errstr[512];
    int level;

    dlb_conf_init(conf);
    if (o->conf_file && dlb_conf_load_file(conf, o->conf_file, errstr, sizeof(errstr)))
        goto fail;
    if (dlb_conf_load_env(conf, errstr, sizeof(errstr)))
        goto fail;
    for (int i = 0; i < o->xs_cnt; i++)
        if (dlb_conf_set_kv(conf, o->xs[i], errstr, sizeof(errstr)))
            goto fail;
    dlb_conf_finish(conf);
    level = conf->log_level + o->verbosity;
    if (level < DLB_LOG_ERROR)
        level = DLB_LOG_ERROR;
    if (level > DLB_LOG_DEBUG)
        level = DLB_LOG_DEBUG;
    dlb_log_setup(program, level, conf->log_json);
    return 0;
fail:
    fprintf(stderr, "%s: configuration: %s\n", program, errstr);
    dlb_conf_destroy(conf);
    return 1;
}

/* The external schema registry's client, when schema.registry.url is set:
 * catalogs resolve unknown ids through it until cli_release(). */
static dlb_srclient_t *sr_client;

int cli_conf_build_env(const cli_opts_t *o, dlb_conf_t *conf, const char *program)
{
    char errstr[256], sr_err[1024];

    if (cli_conf_build(o, conf, program))
        return 1;
    /* The name is checked where environments are created, but a consumer
     * takes it from its own settings: a name like "a*" or "a:b" would
     * widen a SCAN MATCH or split a Redis key, "a.b" collide with another
     * environment's topics. */
    if (dlb_env_name_check(conf->env, errstr, sizeof(errstr))) {
        fprintf(stderr, "%s: configuration: env: %s; nothing started\n", program, errstr);
        dlb_conf_destroy(conf);
        return 1;
    }
    /* Before any catalog is made: they take the registry's ids. */
    if (dlb_srclient_setup(conf, &sr_client, sr_err, sizeof(sr_err))) {
        fprintf(stderr, "%s: %s; nothing started\n", program, sr_err);
        dlb_conf_destroy(conf);
        return 1;
    }
    return 0;
}

void cli_release(void)
{
    dlb_catalog_wire_reset();
    dlb_srclient_destroy(sr_client);
    sr_client = NULL;
}

int cli_write_file(const char *path, const char *content)
{
    char tmp[4096];
    FILE *fp;

    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    if (!(fp = fopen(tmp, "w")))
        return -1;
    if (fputs(content, fp) < 0 || fclose(fp) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return rename(tmp, path);
}

int cli_metrics_start(const dlb_conf_t *conf, const char *program)
{
    dlb_metrics_t *m;
    char errstr[512];
    int err;

    if (conf->metrics_port < 0)
        return 0;
    if ((err = dlb_metrics_new(&m, errstr, sizeof(errstr))) ||
        (err = dlb_metrics_serve(m, conf->metrics_address, conf->metrics_port,
                                 conf->metrics_stall_s, &conf->http, errstr, sizeof(errstr)))) {
        dlb_err("%s; set metrics.port to a free port (0 = any, -1 = no endpoint); exiting", errstr);
        dlb_metrics_destroy(m);
        return 1;
    }
    dlb_metrics_set_global(m);
    dlb_metric_set(dlb_metric_gauge("dlbrain_build_info",
                                    "Always 1: the dlbrain version and the command this process "
                                    "runs",
                                    "version,command", DLB_LV(DLB_VERSION, program)),
                   1);
    dlb_info("metrics: serving http://%s%s%s:%d/metrics, /healthz and /readyz",
             strchr(conf->metrics_address, ':') ? "[" : "", conf->metrics_address,
             strchr(conf->metrics_address, ':') ? "]" : "", dlb_metrics_port(m));
    return 0;
}

void cli_metrics_stop(void)
{
    dlb_metrics_destroy(dlb_metrics_global());
}

static int service_start(const cli_opts_t *o, dlb_conf_t *conf, const char *program, int dump)
{
    if (cli_conf_build_env(o, conf, program))
        return 2;
    if (dump) {
        dlb_conf_dump(conf, stdout);
        dlb_conf_destroy(conf);
        return 0;
    }
    cli_signals_install();
    if (cli_metrics_start(conf, program)) {
        dlb_conf_destroy(conf);
        return 1;
    }
    return -1;
}

static void service_end(dlb_conf_t *conf)
{
    cli_metrics_stop();
    dlb_conf_destroy(conf);
}

int cli_service_run(const cli_opts_t *o, const char *program, int dump, cli_service_fn run,
                    void (*report)(void *opaque), void *opaque)
{
    dlb_conf_t conf;
    char errstr[1024];
    int rc;

    if ((rc = service_start(o, &conf, program, dump)) >= 0)
        return rc;
    rc = run(&conf, &cli_stop, opaque, errstr, sizeof(errstr)) ? 1 : 0;
    if (rc)
        dlb_err("%s; exiting", errstr);
    report(opaque);
    service_end(&conf);
    return rc;
}

int cli_service_main(int argc, char **argv, const char *program, void (*usage)(FILE *),
                     const cli_alias_t *aliases, cli_service_fn run, void (*report)(void *opaque),
                     void *opaque)
{
    static const struct option common[] = {
        {"dump-config", no_argument, 0, 'D'}, CLI_COMMON_LONG, {0, 0, 0, 0}};
    /* An alias's value rewritten as "key=value": cli_opts_t keeps pointers. */
    static char kv[CLI_MAX_ALIASES][1100];
    struct option longopts[CLI_MAX_ALIASES + sizeof(common) / sizeof(common[0])];
    char shortopts[3 * CLI_MAX_ALIASES + sizeof("D" CLI_COMMON_SHORT)];
    cli_opts_t o = {0};
    size_t n = 0, sl = 0;
    int c, rc, dump = 0;

    for (; aliases && aliases[n].letter; n++) {
        if (n == CLI_MAX_ALIASES)
            return 2;
        longopts[n] = (struct option){aliases[n].name, required_argument, 0, aliases[n].letter};
        shortopts[sl++] = aliases[n].letter;
        shortopts[sl++] = ':';
    }
    memcpy(longopts + n, common, sizeof(common));
    snprintf(shortopts + sl, sizeof(shortopts) - sl, "D" CLI_COMMON_SHORT);
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        size_t i;

        for (i = 0; i < n && aliases[i].letter != c; i++)
            ;
        if (i < n) {
            snprintf(kv[i], sizeof(kv[i]), "%s=%s", aliases[i].key, optarg);
            if (cli_common_opt(&o, 'X', kv[i]) < 0)
                return 2;
        } else if (c == 'D') {
            dump = 1;
        } else if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0) {
            return rc;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    return cli_service_run(&o, program, dump, run, report, opaque);
}

typedef struct consumer_run {
    cli_consumer_fn fn;
    const char *outputs;
    dlb_stream_stats_t st;
} consumer_run_t;

static int consumer_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, void *opaque,
                        char *errstr, size_t errstr_size)
{
    consumer_run_t *c = opaque;

    return c->fn(conf, stop, &c->st, errstr, errstr_size);
}

static void consumer_report(void *opaque)
{
    const consumer_run_t *c = opaque;
    const dlb_stream_stats_t *st = &c->st;

    dlb_info("stopped: %lld consumed, %lld accepted, %lld to DLQ, %lld %s, %lld batches, %lld "
             "retried",
             (long long)st->consumed, (long long)st->accepted, (long long)st->dlq,
             (long long)st->outputs, c->outputs, (long long)st->batches, (long long)st->retries);
}

int cli_consumer_main(int argc, char **argv, const char *program, void (*usage)(FILE *),
                      cli_consumer_fn run, const char *outputs)
{
    consumer_run_t cr = {.fn = run, .outputs = outputs};

    return cli_service_main(argc, argv, program, usage, NULL, consumer_run, consumer_report, &cr);
}

typedef struct sub_print {
    int json;
    void (*row)(const dlb_event_t *ev);
} sub_print_t;

static void sub_print(const dlb_catalog_t *cat, const dlb_event_t *ev, void *opaque)
{
    const sub_print_t *p = opaque;
    char errstr[256], *s = NULL;

    if (!p->json)
        p->row(ev);
    else if (!dlb_event_to_json(cat, ev, &s, errstr, sizeof(errstr)))
        printf("%s\n", s);
    else
        dlb_warn("%s %s: %s", dlb_event_type_name(ev->type), dlb_event_id(ev), errstr);
    free(s);
    fflush(stdout);
}

int cli_subscriber_main(int argc, char **argv, const char *program, void (*usage)(FILE *),
                        const char *topic, dlb_event_type_t type, const char *header,
                        void (*row)(const dlb_event_t *ev))
{
    static const struct option longopts[] = {{"job", required_argument, 0, 'j'},
                                             {"count", required_argument, 0, 'n'},
                                             {"timeout-ms", required_argument, 0, 't'},
                                             {"format", required_argument, 0, 'f'},
                                             {"all", no_argument, 0, 'a'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    const char *jobs[64];
    dlb_subscribe_opts_t so = {.topic = topic, .type = type, .jobs = jobs, .timeout_ms = -1};
    sub_print_t pr = {0, row};
    cli_opts_t o = {0};
    dlb_conf_t conf;
    char errstr[512];
    long delivered;
    int c, rc;

    while ((c = getopt_long(argc, argv, "j:n:t:f:a" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (so.njobs < sizeof(jobs) / sizeof(jobs[0]))
                jobs[so.njobs++] = optarg;
            break;
        case 'n':
            so.count = atol(optarg);
            break;
        case 't':
            so.timeout_ms = atol(optarg);
            break;
        case 'a':
            so.all = 1;
            break;
        case 'f':
            pr.json = !strcmp(optarg, "json");
            if (!pr.json && strcmp(optarg, "table")) {
                usage(stderr);
                return 2;
            }
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (cli_conf_build_env(&o, &conf, program))
        return 2;
    cli_signals_install();
    so.stop = &cli_stop;
    if (!pr.json) {
        printf("%s\n", header);
        fflush(stdout);
    }
    rc = dlb_subscribe_run(&conf, &so, sub_print, &pr, &delivered, errstr, sizeof(errstr)) ? 1 : 0;
    if (rc)
        dlb_err("%s", errstr);
    dlb_conf_destroy(&conf);
    return rc;
}
