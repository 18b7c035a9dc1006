/* Subcommands of the dlbrain CLI: one cmd_<name>.c each, holding only option
 * parsing and calls into pipeline/, consumers/ and producers/. */
#ifndef DLB_CMD_H
#define DLB_CMD_H

#include "actions.h"
#include "conf.h"

/* A row of main.c's command table: what dispatches, `dlbrain --help` and
 * `dlbrain help --markdown` (docs/commands.md) all read. A command's
 * subcommands come from its own tables, so the help cannot fall behind them. */
typedef struct dlb_cmd {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;          /* one line */
    const cli_command_t *actions; /* a command of actions (config, env), or NULL */
    const char *const *modes;     /* a command's first words (bench), NULL-ended, or NULL */
} dlb_cmd_t;

/* The actions of the commands made of actions, and the benchmarks. */
extern const cli_command_t cmd_config_command;
extern const cli_command_t cmd_env_command;
extern const cli_command_t cmd_store_command;
extern const char *const cmd_bench_modes[];

int cmd_mock_kafka_main(int argc, char **argv);
int cmd_emit_main(int argc, char **argv);
int cmd_k8s_monitor_main(int argc, char **argv);
int cmd_optimizer_main(int argc, char **argv);
int cmd_plans_main(int argc, char **argv);
int cmd_configurer_main(int argc, char **argv);
int cmd_configs_main(int argc, char **argv);
int cmd_simulate_main(int argc, char **argv);
int cmd_sim_main(int argc, char **argv);
int cmd_schemas_main(int argc, char **argv);
int cmd_settings_main(int argc, char **argv);
int cmd_bench_main(int argc, char **argv);
int cmd_config_main(int argc, char **argv);
int cmd_eval_main(int argc, char **argv);
int cmd_replay_main(int argc, char **argv);
int cmd_env_main(int argc, char **argv);
int cmd_store_main(int argc, char **argv);
int cmd_relay_main(int argc, char **argv);
int cmd_gateway_main(int argc, char **argv);
int cmd_registry_main(int argc, char **argv);

#endif
