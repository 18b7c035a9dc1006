/* dlbrain emit: publish JSON-lines events as Avro to the pipeline's topics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cmd.h"
#include "common.h"
#include "emit.h"
#include "kafka.h"
#include "log.h"

static void usage(FILE *fp)
{
    fprintf(fp, "usage: dlbrain emit [options] [FILE...]\n"
                "Read events as JSON lines (one object per line with a \"type\" field) from the\n"
                "FILEs or stdin, validate them against the schemas, and publish each to its topic\n"
                "keyed by job uid. A bad line is reported with its line number and field, and the\n"
                "other lines still go out. Optional fields may be left out or null, e.g. a\n"
                "runtime_sample pod's own \"speed\" (steps/s of that worker). A plan_request is\n"
                "sent only once every event before it is acknowledged by Kafka, so the optimizer\n"
                "reads the job's events before the request that refers to them.\n"
                "Exit status: 0 all sent, 1 some line rejected, 2 usage or configuration error,\n"
                "3 Kafka did not take every event.\n\n"
                "      --strict              require event_id and event_time_ms on every line\n"
                "                            (default: generate a UUID and use the current time)\n"
                "  -t, --timeout-ms N        wait at most N ms for delivery (default "
                "30000)\n" CLI_COMMON_HELP);
}

int cmd_emit_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"strict", no_argument, 0, 'S'},
                                             {"timeout-ms", required_argument, 0, 't'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    cli_opts_t o = {0};
    dlb_conf_t conf;
    dlb_catalog_t *cat = NULL;
    rd_kafka_t *producer = NULL;
    dlb_emit_stats_t st = {0};
    char errstr[512];
    int c, strict = 0, timeout_ms = 30000, rc = 2;

    while ((c = getopt_long(argc, argv, "t:" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'S':
            strict = 1;
            break;
        case 't':
            timeout_ms = atoi(optarg);
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (cli_conf_build_env(&o, &conf, "emit"))
        return 2;
    if (dlb_catalog_new(&cat, errstr, sizeof(errstr)) ||
        dlb_kafka_producer_new(&conf, NULL, &producer, errstr, sizeof(errstr))) {
        dlb_err("%s; nothing sent", errstr);
        goto out;
    }
    rc = 0;
    for (int i = optind; i < argc || (i == optind && optind == argc); i++) {
        const char *name = i < argc ? argv[i] : "stdin";
        FILE *in = i < argc && strcmp(argv[i], "-") ? fopen(argv[i], "r") : stdin;
        if (!in) {
            dlb_err("%s: cannot open: %s; file skipped", name, strerror(errno));
            rc = 1;
            continue;
        }
        if (dlb_emit_stream(in, name, producer, &conf, cat, !strict, timeout_ms, &st, errstr,
                            sizeof(errstr))) {
            dlb_err("%s; stopping", errstr);
            rc = 3;
        }
        if (in != stdin)
            fclose(in);
        if (rc == 3)
            break;
    }
    if (dlb_kafka_flush(producer, timeout_ms, errstr, sizeof(errstr))) {
        dlb_err("delivery: %s", errstr);
        rc = 3;
    }
    if (rc == 0 && st.rejected)
        rc = 1;
    dlb_info("%lld line(s), %lld event(s) sent, %lld rejected", (long long)st.lines,
             (long long)st.sent, (long long)st.rejected);
out:
    dlb_kafka_producer_destroy(producer);
    if (cat)
        dlb_catalog_destroy(cat);
    dlb_conf_destroy(&conf);
    return rc;
}
