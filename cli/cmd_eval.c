/* dlbrain eval: compare environments that ran the same workload
 * (env/eval: figures from each environment's PostgreSQL schema, a
 * table, JSON and an HTML report). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "eval.h"
#include "eval_report.h"
#include "log.h"

#define EVAL_BUCKETS_DEFAULT 60
#define EVAL_BUCKETS_MAX     10000

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain eval [options] ENV...\n"
            "Compare environments that ran the same workload: per environment, job completion\n"
            "time (mean, p50, p95), pending time, CPU and memory utilisation, core-hours and\n"
            "GiB-hours, OOMs and repeated OOMs, plans. Reads each ENV's PostgreSQL schema (the\n"
            "name with '-' and '.' as '_') and prints one column per ENV and, with two or more,\n"
            "ratios against the first.\n\n"
            "      --html FILE       write a self-contained HTML report with plots\n"
            "      --json FILE       write the figures and time series as JSON\n"
            "      --buckets N       time buckets of the over-time series (default "
            "%d)\n" CLI_COMMON_HELP,
            EVAL_BUCKETS_DEFAULT);
}

/* Write content to path; 0, or 1 after saying why. */
static int write_out(const char *path, const char *content)
{
    if (cli_write_file(path, content)) {
        dlb_err("%s: cannot write: %s", path, strerror(errno));
        return 1;
    }
    dlb_info("wrote %s", path);
    return 0;
}

int cmd_eval_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"html", required_argument, 0, 'H'},
                                             {"json", required_argument, 0, 'J'},
                                             {"buckets", required_argument, 0, 'N'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    const char *html = NULL, *json = NULL;
    dlb_eval_figures_t *f = NULL;
    dlb_eval_switch_t *sw = NULL;
    size_t sw_cnt = 0;
    cli_opts_t o = {0};
    dlb_conf_t conf;
    char errstr[1024], *end, *text = NULL;
    long buckets = EVAL_BUCKETS_DEFAULT;
    size_t cnt;
    int c, rc = 1;

    while ((c = getopt_long(argc, argv, CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'H':
            html = optarg;
            break;
        case 'J':
            json = optarg;
            break;
        case 'N':
            buckets = strtol(optarg, &end, 10);
            if (!*optarg || *end || buckets < 1 || buckets > EVAL_BUCKETS_MAX) {
                fprintf(stderr, "eval: --buckets wants 1..%d, not '%s'\n", EVAL_BUCKETS_MAX,
                        optarg);
                return 2;
            }
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    cnt = (size_t)(argc - optind);
    if (cli_conf_build(&o, &conf, "eval"))
        return 2;
    rc = 1;
    if (dlb_eval_envs(conf.pg_dsn, (const char *const *)argv + optind, cnt, (size_t)buckets, &f,
                      errstr, sizeof(errstr))) {
        dlb_err("%s", errstr);
        goto out;
    }
    if (dlb_eval_table(stdout, f, cnt)) {
        dlb_err("printing the table: out of memory");
        goto out;
    }
    if (json) {
        if (dlb_eval_json(f, cnt, &text, errstr, sizeof(errstr))) {
            dlb_err("JSON report: %s", errstr);
            goto out;
        }
        if (write_out(json, text))
            goto out;
        free(text);
        text = NULL;
    }
    if (html) {
        /* The switches of the real environment, marked on the plots over
         * time; without a registry, none. */
        if (dlb_eval_switches(conf.pg_dsn, &sw, &sw_cnt, errstr, sizeof(errstr)))
            dlb_dbg("no switches to mark: %s", errstr);
        if (dlb_eval_html_switches(f, cnt, sw, sw_cnt, &text, errstr, sizeof(errstr))) {
            dlb_err("HTML report: %s", errstr);
            goto out;
        }
        if (write_out(html, text))
            goto out;
    }
    rc = 0;
out:
    free(sw);
    free(text);
    dlb_eval_figures_free(f, cnt);
    dlb_conf_destroy(&conf);
    return rc;
}
