/* Subcommands of the dlbrain CLI: one cmd_<name>.c each, holding only option
 * parsing and calls into pipeline/, consumers/ and producers/. */
#ifndef DLB_CMD_H
#define DLB_CMD_H

#include "conf.h"

/* Shared option handling: -c FILE, -X key=value, -v/-q, --log-format, --env.
 * Fills conf in order defaults -> file -> environment -> -X and sets up logging.
 * Returns the index of the first unhandled argument via *optind_out semantics
 * of getopt_long; subcommands call it and then read their own options. */
typedef struct dlb_cmd {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} dlb_cmd_t;

int cmd_mock_kafka_main(int argc, char **argv);
int cmd_emit_main(int argc, char **argv);
int cmd_optimizer_main(int argc, char **argv);
int cmd_plans_main(int argc, char **argv);
int cmd_simulate_main(int argc, char **argv);
int cmd_schemas_main(int argc, char **argv);

#endif
