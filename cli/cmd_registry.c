/* dlbrain registry: the read-only Confluent Schema Registry API over the
 * schema catalog (env/registry/env_schemareg.h). */
#include <stdio.h>

#include "cmd.h"
#include "common.h"
#include "env_schemareg.h"
#include "log.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain registry [options]\n"
            "Serve the read side of the Confluent Schema Registry REST API over dlbrain's\n"
            "schema catalog at registry.address, so kcat -s avro, confluent-kafka's\n"
            "AvroDeserializer, Kafka UI or Spark's from_avro read dlbrain's topics: schemas by\n"
            "id, subjects <env>.<topic>-value (TopicNameStrategy) with their versions, lookup\n"
            "by schema, config. Writes answer 405. Environments: registry.envs, or env and\n"
            "every live one of the environment registry (pg.dsn). Runs until SIGINT/SIGTERM.\n\n"
            "  -a, --address HOST:PORT   where to serve (= -X registry.address=...)\n"
            "  -D, --dump-config         print the effective configuration and exit\n"
            "See docs/schema-registry.md.\n" CLI_COMMON_HELP);
}

static int registry_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, void *opaque,
                        char *errstr, size_t errstr_size)
{
    return dlb_env_schemareg_run(conf, stop, opaque, errstr, errstr_size);
}

static void registry_report(void *opaque)
{
    dlb_info("stopped: served the subjects of %zu environment(s)", *(const size_t *)opaque);
}

int cmd_registry_main(int argc, char **argv)
{
    static const cli_alias_t aliases[] = {{'a', "address", "registry.address"}, {0, NULL, NULL}};
    size_t envs = 0;

    return cli_service_main(argc, argv, "registry", usage, aliases, registry_run, registry_report,
                            &envs);
}
