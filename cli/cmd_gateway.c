/* dlbrain gateway: DLRover's brain.Brain gRPC service and HTTP Brain
 * (producers/gateway). */
#include <stdio.h>

#include "cmd.h"
#include "common.h"
#include "gateway.h"
#include "log.h"

static void usage(FILE *fp)
{
    fprintf(
        fp,
        "usage: dlbrain gateway [options]\n"
        "Serve DLRover's Brain (brain.Brain: persist_metrics, optimize, get_job_metrics) over\n"
        "gRPC at gateway.address, so DLRover's masters use dlbrain unchanged: point their\n"
        "DLROVER_BRAIN_SERVICE_ADDR here. Metrics become events on the env's topics (answered\n"
        "once Kafka acknowledged them), optimize a plan request whose plan is awaited on\n"
        "<env>.plans (at most gateway.optimize.timeout.ms), get_job_metrics reads PostgreSQL.\n"
        "DLRover's newer HTTP Brain (POST /optimize, POST /job_config: the configuration\n"
        "rules' matches) is served at gateway.http.address (default 0.0.0.0:8000; empty: off).\n"
        "Stateless: run as many as needed behind one address. Runs until SIGINT/SIGTERM.\n\n"
        "  -a, --address HOST:PORT   where to serve (= -X gateway.address=...)\n"
        "  -D, --dump-config         print the effective configuration and exit\n" CLI_COMMON_HELP);
}

static int gateway_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, void *opaque,
                       char *errstr, size_t errstr_size)
{
    return dlb_gateway_run(conf, stop, opaque, errstr, errstr_size);
}

static void gateway_report(void *opaque)
{
    const dlb_gateway_stats_t *st = opaque;

    dlb_info("stopped: %lld call(s), %lld event(s) acknowledged, %lld plan(s), %lld without a "
             "plan in time, %lld refused, %lld failed, %lld cancelled by the client, %lld "
             "cut off for stalling",
             (long long)st->calls, (long long)st->events, (long long)st->plans,
             (long long)st->no_plan, (long long)st->refused, (long long)st->failed,
             (long long)st->cancelled, (long long)st->stalled);
}

int cmd_gateway_main(int argc, char **argv)
{
    static const cli_alias_t aliases[] = {{'a', "address", "gateway.address"}, {0, NULL, NULL}};
    dlb_gateway_stats_t st = {0};

    return cli_service_main(argc, argv, "gateway", usage, aliases, gateway_run, gateway_report,
                            &st);
}
