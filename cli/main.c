/* dlbrain: one binary, several subcommands, like git. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common.h"

static const dlb_cmd_t cmds[] = {
    {"mock-kafka", cmd_mock_kafka_main,
     "librdkafka's mock Kafka cluster on loopback, with the pipeline's topics"},
    {"emit", cmd_emit_main, "JSON lines -> validated Avro -> the type's topic, keyed by job uid"},
    {"k8s-monitor", cmd_k8s_monitor_main, "watch job pods, nodes and Events; publish node events"},
    {"gateway", cmd_gateway_main,
     "DLRover's Brain over gRPC and HTTP, for DLRover's masters unchanged"},
    {"optimizer", cmd_optimizer_main, "the plan-making consumer"},
    {"plans", cmd_plans_main, "follow an environment's plans as a job master, each plan once"},
    {"configurer", cmd_configurer_main, "the configuration-matching consumer"},
    {"configs", cmd_configs_main, "follow an environment's configuration matches as a job master"},
    {"simulate", cmd_simulate_main, "the demo's simulated cluster as JSON lines"},
    {"sim", cmd_sim_main, "the job simulator: jobs that follow their plans, in virtual time"},
    {"schemas", cmd_schemas_main, "the schema catalog, one schema, or framed messages decoded"},
    {"registry", cmd_registry_main, "the catalog as a read-only Confluent Schema Registry"},
    {"settings", cmd_settings_main, "the effective settings (secrets masked), or their reference"},
    {"config", cmd_config_main,
     "configuration rules: versions, dry-run matches, a ConfigMap synced", &cmd_config_command},
    {"env", cmd_env_main, "environments: register, drop, promote, the standby failover promotes",
     &cmd_env_command},
    {"store", cmd_store_main, "delete the PostgreSQL history older than the retention window",
     &cmd_store_command},
    {"relay", cmd_relay_main, "front events to every environment, the real one's answers back"},
    {"replay", cmd_replay_main, "a time range of events into a virtual environment"},
    {"eval", cmd_eval_main, "compare environments that ran the same workload: table, JSON, HTML"},
    {"bench", cmd_bench_main, "measure rates and latencies of the pipeline's parts and round trip",
     NULL, cmd_bench_modes},
    {NULL, NULL, NULL},
};

/* A command's subcommands, each followed by sep, the last by nothing. */
static void print_subs(FILE *fp, const dlb_cmd_t *c, const char *sep)
{
    if (c->actions)
        for (const cli_action_t *a = c->actions->actions; a->name; a++)
            fprintf(fp, "%s%s", a->name, a[1].name ? sep : "");
    else
        for (const char *const *m = c->modes; *m; m++)
            fprintf(fp, "%s%s", *m, m[1] ? sep : "");
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: dlbrain <command> [options]\n\ncommands:\n");
    for (const dlb_cmd_t *c = cmds; c->name; c++) {
        fprintf(fp, "  %-12s %s\n", c->name, c->summary);
        if (c->actions || c->modes) {
            fprintf(fp, "  %-12s ", "");
            print_subs(fp, c, "|");
            fprintf(fp, "\n");
        }
    }
    fprintf(fp, "\nRun 'dlbrain <command> --help' for a command's options.\n");
}

/* The table of docs/commands.md, between its commands-reference markers. */
static void usage_markdown(FILE *fp)
{
    fprintf(fp, "| command | what it does |\n|---|---|\n");
    for (const dlb_cmd_t *c = cmds; c->name; c++) {
        fprintf(fp, "| `dlbrain %s", c->name);
        if (c->actions || c->modes) {
            fprintf(fp, " ");
            print_subs(fp, c, "\\|");
        }
        fprintf(fp, "` | %s |\n", c->summary);
    }
}

/* dlbrain help [COMMAND | --markdown] */
static int help_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--markdown")) {
        usage_markdown(stdout);
        return fflush(stdout) ? 1 : 0;
    }
    if (argc == 2)
        for (const dlb_cmd_t *c = cmds; c->name; c++)
            if (!strcmp(argv[1], c->name)) {
                static char help[] = "--help";
                char *sub[] = {argv[1], help, NULL};
                return c->main(2, sub);
            }
    fprintf(stderr, "dlbrain help: expected a command or --markdown, got '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "help"))
        return help_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("dlbrain %s\n", DLB_VERSION);
        return 0;
    }
    for (const dlb_cmd_t *c = cmds; c->name; c++)
        if (!strcmp(argv[1], c->name)) {
            int rc = c->main(argc - 1, argv + 1);
            cli_release();
            return rc;
        }
    fprintf(stderr, "dlbrain: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
