/* The one parser and usage of every command made of actions (actions.h). */
#include "actions.h"

#include <ctype.h>
#include <string.h>

#include "common.h"

/* getopt's usage callback takes a FILE only: the command and action whose
 * usage -h prints are set before parsing. A CLI runs one command at a time. */
static const cli_command_t *cur_cmd;
static const cli_action_t *cur_act;

static int takes(const cli_action_t *act, char letter)
{
    return !act || strchr(act->opts, letter) != NULL;
}

static void usage(FILE *fp)
{
    const cli_command_t *cmd = cur_cmd;

    if (cur_act) {
        fprintf(fp, "usage: dlbrain %s %s\n%c%s.\n\n", cmd->name, cur_act->synopsis,
                toupper((unsigned char)cur_act->summary[0]), cur_act->summary + 1);
    } else {
        fprintf(fp, "usage: dlbrain %s <action> [options]\n%s\n\nactions:\n", cmd->name,
                cmd->about);
        /* One column when every synopsis fits in 30, else each on two lines. */
        int wide = 0;
        for (const cli_action_t *c = cmd->actions; c->name; c++)
            wide |= strlen(c->synopsis) > 30;
        for (const cli_action_t *c = cmd->actions; c->name; c++)
            fprintf(fp, wide ? "  %s\n      %s\n" : "  %-30s  %s\n", c->synopsis, c->summary);
        fprintf(fp, "\n");
    }
    for (const cli_action_opt_help_t *h = cmd->help; h->letter; h++)
        if (takes(cur_act, h->letter))
            fputs(h->text, fp);
    fputs(CLI_COMMON_HELP, fp);
}

static int run_action(const cli_command_t *cmd, const cli_action_t *act, int argc, char **argv)
{
    char shortopts[64];
    cli_args_t a = {.action = act->name};
    cli_opts_t o = {0};
    dlb_conf_t conf;
    int c, rc;

    cur_act = act;
    snprintf(shortopts, sizeof(shortopts), "%s%s", cmd->shortopts, CLI_COMMON_SHORT);
    while ((c = getopt_long(argc, argv, shortopts, cmd->longopts, NULL)) != -1) {
        if (c > 0 && c < 128 && c != ':' && strchr(cmd->shortopts, c)) {
            if (!takes(act, (char)c)) {
                fprintf(stderr, "%s %s: no option -%c\n", cmd->name, act->name, c);
                usage(stderr);
                return 2;
            }
            a.opt[c] = optarg ? optarg : "";
            if (c == cmd->repeatable) {
                if (a.multi_cnt == CLI_ACTION_MULTI_MAX) {
                    fprintf(stderr, "%s %s: at most %d -%c\n", cmd->name, act->name,
                            CLI_ACTION_MULTI_MAX, c);
                    return 2;
                }
                a.multi[a.multi_cnt++] = optarg;
            }
        } else if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0) {
            return rc;
        }
    }
    a.pos = argv + optind;
    a.pos_cnt = argc - optind;
    if (a.pos_cnt < act->min_pos || (act->max_pos >= 0 && a.pos_cnt > act->max_pos)) {
        usage(stderr);
        return 2;
    }
    if (cli_conf_build(&o, &conf, cmd->name))
        return 2;
    rc = act->run(&a, &conf);
    dlb_conf_destroy(&conf);
    return rc;
}

int cli_actions_main(const cli_command_t *cmd, int argc, char **argv)
{
    cur_cmd = cmd;
    cur_act = NULL;
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const cli_action_t *act = cmd->actions; act->name; act++)
        if (!strcmp(argv[1], act->name))
            return run_action(cmd, act, argc - 1, argv + 1);
    fprintf(stderr, "dlbrain %s: unknown action '%s'\n", cmd->name, argv[1]);
    usage(stderr);
    return 2;
}
