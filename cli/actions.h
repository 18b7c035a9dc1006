/* Subcommands made of actions (dlbrain config apply, dlbrain env create):
 * one table of actions per command, one parser and one usage for all. */
#ifndef DLB_CLI_ACTIONS_H
#define DLB_CLI_ACTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "conf.h"

#define CLI_ACTION_MULTI_MAX 64

/* What an action is given: its options by letter and its arguments. */
typedef struct cli_args {
    const char *action;
    const char *opt[128]; /* opt['m']: the value of -m, "" for a flag, NULL when not given */
    const char *multi[CLI_ACTION_MULTI_MAX]; /* every value of the repeatable option */
    int multi_cnt;
    char **pos; /* the arguments after the action and options */
    int pos_cnt;
} cli_args_t;

typedef struct cli_action {
    const char *name;
    const char *synopsis; /* what follows "dlbrain <command> " */
    const char *summary;
    const char *opts;     /* its letters of the command's options ("m:" or "m") */
    int min_pos, max_pos; /* max_pos -1: no limit */
    int (*run)(const cli_args_t *a, const dlb_conf_t *conf);
} cli_action_t;

/* One line of option help, shown for the actions that take letter. */
typedef struct cli_action_opt_help {
    char letter;
    const char *text; /* "  -m, --message TEXT    why ...\n" */
} cli_action_opt_help_t;

typedef struct cli_command {
    const char *name;                  /* "config" */
    const char *about;                 /* the paragraph under the usage line */
    const cli_action_t *actions;       /* ends with a NULL name */
    const char *shortopts;             /* the command's own options, getopt style */
    const struct option *longopts;     /* those, then CLI_COMMON_LONG */
    char repeatable;                   /* the letter collected in cli_args_t.multi, or 0 */
    const cli_action_opt_help_t *help; /* ends with a 0 letter */
} cli_command_t;

/** @brief main() of a command of actions: argv[1] names the action, the rest
 *         are its options (only those its opts name, and the common ones) and
 *         its arguments; then the configuration is built and the action run.
 *  @returns the exit status: the action's, or 2 (usage) or 1 (configuration). */
int cli_actions_main(const cli_command_t *cmd, int argc, char **argv);

#endif
