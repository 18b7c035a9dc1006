/* dlbrain configurer: the configuration-matching consumer. */
#include <stdio.h>

#include "cmd.h"
#include "common.h"
#include "configurer.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain configurer [options]\n"
            "Consume job events and config requests of the environment and answer, for each\n"
            "job event that carries the job's attributes (meta) and each config request, which\n"
            "configuration rules apply to the job and their merged Configure values: a\n"
            "config_match on <env>.configs (keyed by job uid) and in PostgreSQL. Matches\n"
            "against the newest rules version ('dlbrain config apply'), picked up within\n"
            "config.refresh.ms. Runs until SIGINT/SIGTERM.\n\n"
            "  -D, --dump-config     print the effective configuration and exit\n" CLI_COMMON_HELP);
}

int cmd_configurer_main(int argc, char **argv)
{
    return cli_consumer_main(argc, argv, "configurer", usage, dlb_configurer_run, "matches");
}
