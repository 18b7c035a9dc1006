/* Options every subcommand shares, and turning them into a dlb_conf_t. */
#ifndef DLB_CLI_COMMON_H
#define DLB_CLI_COMMON_H

#include <getopt.h>
#include <stdio.h>
#include <signal.h>

#include "conf.h"
#include "stream.h"

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

/** @brief cli_conf_build(), then refuse an invalid environment name (the env
 *         setting, -e): for a command that names topics, consumer groups, a
 *         PostgreSQL schema or Redis keys after it, before it names any; with
 *         schema.registry.url, bind the registry's ids (dlb_srclient_setup).
 *  @returns 0, or 1 after printing the error (conf released). */
int cli_conf_build_env(const cli_opts_t *o, dlb_conf_t *conf, const char *program);

/** @brief Release what the command's set-up left for the whole process (the
 *         schema registry's client); main() calls it when the command ends. */
void cli_release(void);

/* Set by SIGINT/SIGTERM once cli_signals_install() ran. */
extern volatile sig_atomic_t cli_stop;
void cli_signals_install(void);

/* What a long-running command runs: until *stop, counting into opaque. */
typedef int (*cli_service_fn)(const dlb_conf_t *conf, volatile sig_atomic_t *stop, void *opaque,
                              char *errstr, size_t errstr_size);

/** @brief main()'s tail of every long-running command: build conf from o
 *         (print it and stop when dump, -D), install the signal handlers and
 *         the metrics endpoint, run until SIGINT/SIGTERM, log why it failed,
 *         then report(opaque) logs the last line counting what was done.
 *  @returns the exit status: 0, 1 (could not run, or the metrics port cannot
 *           be served) or 2 (bad configuration). */
int cli_service_run(const cli_opts_t *o, const char *program, int dump, cli_service_fn run,
                    void (*report)(void *opaque), void *opaque);

/* A service command's option that stands for a setting: -k FILE is
 * -X k8s.kubeconfig=FILE. */
typedef struct cli_alias {
    char letter;      /* short option */
    const char *name; /* long option */
    const char *key;  /* the setting */
} cli_alias_t;
#define CLI_MAX_ALIASES 8

/** @brief main() of a long-running command: its aliases (a table ending in a
 *         0 letter, or NULL), -D (print the effective configuration), the
 *         common options, then cli_service_run().
 *  @returns the exit status: 0, 1 (could not run), 2 (usage). */
int cli_service_main(int argc, char **argv, const char *program, void (*usage)(FILE *),
                     const cli_alias_t *aliases, cli_service_fn run, void (*report)(void *opaque),
                     void *opaque);

/** @brief Serve /metrics, /healthz and /readyz as metrics.* say (nothing when
 *         metrics.port is -1) and install the process's global registry;
 *         logs the URL (with the port chosen when metrics.port is 0).
 *  @returns 0, or 1 after logging why it cannot listen (the port is taken):
 *           a careful operator wants that visible, not a process without
 *           metrics. */
int cli_metrics_start(const dlb_conf_t *conf, const char *program);
/** @brief Stop the endpoint and release the global registry (if any). */
void cli_metrics_stop(void);

/* A consumer role's run function (dlb_optimizer_run, dlb_configurer_run). */
typedef int (*cli_consumer_fn)(const dlb_conf_t *conf, volatile sig_atomic_t *stop,
                               dlb_stream_stats_t *stats, char *errstr, size_t errstr_size);

/** @brief main() of a consumer command: options (-D prints the effective
 *         configuration), signals, run until SIGINT/SIGTERM, a last log line
 *         counting what was done ("N <outputs>").
 *  @returns the exit status: 0, 1 (could not run), 2 (usage). */
int cli_consumer_main(int argc, char **argv, const char *program, void (*usage)(FILE *),
                      cli_consumer_fn run, const char *outputs);

/* Options of a subscriber command (plans, configs); what is one output, what
 * are several. */
#define CLI_SUBSCRIBER_HELP(one, many)                                                             \
    "  -j, --job UID         only " many " of this job (repeatable)\n"                             \
    "  -n, --count N         exit after N " many " (exit 1 if the timeout comes first)\n"          \
    "  -t, --timeout-ms N    give up after N ms (default: wait forever)\n"                         \
    "  -f, --format F        table (default) or json (one " one " per line)\n"                     \
    "  -a, --all             show every copy of a redelivered " one " (default: each id once)\n"

/** @brief main() of a subscriber command: options (CLI_SUBSCRIBER_HELP),
 *         subscribe to topic like a job master (pipeline/subscribe/subscribe.h) and print
 *         each output of type as it arrives: header then row(ev) per output in
 *         table format, or one JSON object per line.
 *  @returns the exit status: 0, 1 (timeout before --count, or could not
 *           subscribe), 2 (usage). */
int cli_subscriber_main(int argc, char **argv, const char *program, void (*usage)(FILE *),
                        const char *topic, dlb_event_type_t type, const char *header,
                        void (*row)(const dlb_event_t *ev));

/** @brief Write a file atomically (temp + rename). @returns 0 or -1 with errno. */
int cli_write_file(const char *path, const char *content);

#endif
