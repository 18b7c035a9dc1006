/* dlbrain settings: show the effective configuration, or the reference of every key. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common.h"

static void usage(FILE *fp)
{
    fprintf(
        fp,
        "usage: dlbrain settings [options]\n"
        "Print the effective settings (defaults, file, environment, options applied;\n"
        "secrets masked), or with --reference the table of every key.\n\n"
        "  -r, --reference       print the configuration reference as markdown\n" CLI_COMMON_HELP);
}

int cmd_settings_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"reference", no_argument, 0, 'r'}, CLI_COMMON_LONG, {0, 0, 0, 0}};
    cli_opts_t o = {0};
    dlb_conf_t conf;
    int c, ref = 0, rc;

    while ((c = getopt_long(argc, argv, "r" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            ref = 1;
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (ref) {
        dlb_conf_reference(stdout);
        return 0;
    }
    if (cli_conf_build(&o, &conf, "settings"))
        return 2;
    dlb_conf_dump(&conf, stdout);
    dlb_conf_destroy(&conf);
    return 0;
}
