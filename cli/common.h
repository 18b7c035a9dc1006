/* Options every subcommand shares, and turning them into a dlb_conf_t. */
#ifndef DLB_CLI_COMMON_H
#define DLB_CLI_COMMON_H

#include <getopt.h>
#include <stdio.h>
#include <signal.h>

#include "conf.h"

#define CLI_MAX_X 256

typedef struct cli_opts {
    const char *conf_file;
    const char *xs[CLI_MAX_X]; /* "key=value", in order */
    int xs_cnt;
    int verbosity; /* -v raises, -q lowers */
} cli_opts_t;

/* Short options and long options shared by all subcommands. */
#define CLI_COMMON_SHORT "c:X:b:e:vqh"
#define CLI_COMMON_LONG                                                                            \
    {"config", required_argument, 0, 'c'}, {"brokers", required_argument, 0, 'b'},                 \
        {"env", required_argument, 0, 'e'}, {"log-format", required_argument, 0, 'L'},             \
        {"verbose", no_argument, 0, 'v'}, {"quiet", no_argument, 0, 'q'},                          \
    {                                                                                              \
        "help", no_argument, 0, 'h'                                                                \
    }

#define CLI_COMMON_HELP                                                                            \
    "  -c, --config FILE     key=value configuration file\n"                                       \
    "  -X key=value          set a dlbrain key or a librdkafka property (repeatable)\n"            \
    "  -b, --brokers LIST    Kafka bootstrap servers (= -X brokers=LIST)\n"                        \
    "  -e, --env NAME        environment (= -X env=NAME)\n"                                        \
    "      --log-format F    text or json\n"                                                       \
    "  -v / -q               more / less logging\n"                                                \
    "Settings apply in order: defaults, config file, DLBRAIN_* environment, options.\n"

/** @returns 1 if c was a common option (and recorded it), 0 if not, -1 on error. */
int cli_common_opt(cli_opts_t *o, int c, const char *arg);

/** @brief The default: branch of a subcommand's getopt loop. -h prints usage to
 *         stdout and returns 0; a common option is recorded and -1 returned (go
 *         on parsing); anything else prints usage to stderr and returns 2. A
 *         non-negative result is the subcommand's exit status. */
int cli_default_opt(cli_opts_t *o, int c, const char *arg, void (*usage)(FILE *));

/** @brief Build conf from defaults, file, environment, options; set up logging.
 *  @returns 0, or 1 after printing the error (main exits with it). */
int cli_conf_build(const cli_opts_t *o, dlb_conf_t *conf, const char *program);

/* Set by SIGINT/SIGTERM once cli_signals_install() ran. */
extern volatile sig_atomic_t cli_stop;
void cli_signals_install(void);

/** @brief Write a file atomically (temp + rename). @returns 0 or -1 with errno. */
int cli_write_file(const char *path, const char *content);

#endif
