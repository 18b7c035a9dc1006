/* dlbrain relay: the front <-> environments relay (env/relay/relay.h). */
#include <stdio.h>

#include "cmd.h"
#include "common.h"
#include "relay.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain relay [options]\n"
            "Connect the front prefix (the env setting, e.g. dlbrain) that agents, masters and\n"
            "the Kubernetes monitor use to the registered environments (dlbrain env): copy the\n"
            "front's job-events, metrics, k8s-events, plan-requests and config-requests into\n"
            "every live environment, and forward the plans and configs of the real one to the\n"
            "front. The registry is re-read every relay.refresh.ms, so a promotion takes effect\n"
            "without restarting anything. Exactly once (Kafka transactions). Refuses to run when\n"
            "the front prefix is a registered environment. Runs until SIGINT/SIGTERM.\n\n"
            "  -D, --dump-config     print the effective configuration and exit\n" CLI_COMMON_HELP);
}

int cmd_relay_main(int argc, char **argv)
{
    return cli_consumer_main(argc, argv, "relay", usage, dlb_relay_run, "records relayed");
}
