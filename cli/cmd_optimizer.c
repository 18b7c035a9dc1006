/* dlbrain optimizer: the plan-making consumer. */
#include <stdio.h>

#include "cmd.h"
#include "common.h"
#include "consumer.h"

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
    return cli_consumer_main(argc, argv, "optimizer", usage, dlb_optimizer_run, "plans");
}
