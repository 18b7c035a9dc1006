/* dlbrain optimizer: the plan-making consumer. */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "common.h"
#include "consumer.h"
#include "log.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain optimizer [options]\n"
            "Consume job events, runtime samples, node events and plan requests of the\n"
            "environment, keep per-job state in Redis and history in PostgreSQL, and answer\n"
            "plan requests on <env>.plans. Runs until SIGINT/SIGTERM.\n\n"
            "  -D, --dump-config     print the effective configuration and exit\n" CLI_COMMON_HELP);
}

int cmd_optimizer_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"dump-config", no_argument, 0, 'D'}, CLI_COMMON_LONG, {0, 0, 0, 0}};
    cli_opts_t o = {0};
    dlb_conf_t conf;
    dlb_optimizer_stats_t st = {0};
    char errstr[1024];
    int c, dump = 0, rc;

    while ((c = getopt_long(argc, argv, "D" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'D':
            dump = 1;
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (cli_conf_build(&o, &conf, "optimizer"))
        return 2;
    if (dump) {
        dlb_conf_dump(&conf, stdout);
        dlb_conf_destroy(&conf);
        return 0;
    }
    cli_signals_install();
    rc = dlb_optimizer_run(&conf, &cli_stop, &st, errstr, sizeof(errstr)) ? 1 : 0;
    if (rc)
        dlb_err("%s; exiting", errstr);
    dlb_info("stopped: %lld consumed, %lld accepted, %lld to DLQ, %lld plans, %lld batches, %lld "
             "retried",
             (long long)st.consumed, (long long)st.accepted, (long long)st.dlq, (long long)st.plans,
             (long long)st.batches, (long long)st.retries);
    dlb_conf_destroy(&conf);
    return rc;
}
