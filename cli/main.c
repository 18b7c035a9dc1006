/* dlbrain: one binary, several subcommands, like git. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common.h"

static const dlb_cmd_t cmds[] = {
    {"mock-kafka", cmd_mock_kafka_main, "run an embedded mock Kafka cluster (tests, demo)"},
    {"emit", cmd_emit_main, "publish JSON-lines events to the pipeline"},
    {"k8s-monitor", cmd_k8s_monitor_main,
     "watch Kubernetes pods, nodes, events; publish node events"},
    {"gateway", cmd_gateway_main, "serve DLRover's Brain gRPC service for DLRover's masters"},
    {"optimizer", cmd_optimizer_main, "run the plan-making consumer"},
    {"plans", cmd_plans_main, "subscribe to plans as a job master would"},
    {"configurer", cmd_configurer_main, "run the configuration-matching consumer"},
    {"configs", cmd_configs_main, "subscribe to configuration matches as a job master would"},
    {"simulate", cmd_simulate_main, "print a simulated training cluster's events (demo)"},
    {"sim", cmd_sim_main, "simulate training jobs that follow plans (virtual trainer)"},
    {"schemas", cmd_schemas_main, "list the Avro schema catalog or print a schema"},
    {"registry", cmd_registry_main,
     "serve the schema catalog as a read-only Confluent Schema Registry"},
    {"settings", cmd_settings_main, "print the effective settings or the settings reference"},
    {"config", cmd_config_main, "apply, list, show, diff and roll back configuration rules"},
    {"env", cmd_env_main, "create, list, show, drop and promote environments"},
    {"store", cmd_store_main, "prune the PostgreSQL history older than the retention window"},
    {"relay", cmd_relay_main,
     "relay the front's events to every environment, the real one's plans back"},
    {"replay", cmd_replay_main, "copy a time range of events into a virtual environment"},
    {"eval", cmd_eval_main, "compare environments that ran the same workload (table, HTML)"},
    {"bench", cmd_bench_main, "measure plans/s of the optimizer core and the plan round trip"},
    {NULL, NULL, NULL},
};

static void usage(FILE *fp)
{
    fprintf(fp, "usage: dlbrain <command> [options]\n\ncommands:\n");
    for (const dlb_cmd_t *c = cmds; c->name; c++)
        fprintf(fp, "  %-12s %s\n", c->name, c->summary);
    fprintf(fp, "\nRun 'dlbrain <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
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
