/* dlbrain k8s-monitor: watch job pods, nodes and pod Events through the
 * Kubernetes API and publish node events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "k8s_monitor.h"
#include "log.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain k8s-monitor [options]\n"
            "List then watch the training jobs' pods, the nodes and the pods' Events through the\n"
            "Kubernetes API (a kubeconfig or the in-cluster service account) and publish what\n"
            "happens to them (phases, OOM kills, evictions, preemptions, node outages,\n"
            "deletions) as node events to <env>.k8s-events, keyed by job uid. Runs until\n"
            "SIGINT/SIGTERM. Needs get/list/watch on pods, nodes, events (deploy/).\n"
            "Exit status: 0 stopped by a signal, 1 could not start, 2 usage.\n\n"
            "  -k, --kubeconfig FILE     kubeconfig (= -X k8s.kubeconfig=FILE)\n"
            "  -n, --namespace NS        watch only this namespace (= -X k8s.namespace=NS)\n"
            "  -l, --selector SEL        pod label selector (= -X k8s.selector=SEL)\n"
            "  -D, --dump-config         print the effective configuration and exit\n"
            "See 'dlbrain settings' for the k8s.* settings.\n" CLI_COMMON_HELP);
}

static int monitor_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, void *opaque,
                       char *errstr, size_t errstr_size)
{
    return dlb_k8s_monitor_run(conf, stop, opaque, errstr, errstr_size);
}

static void monitor_report(void *opaque)
{
    const dlb_k8s_stats_t *st = opaque;

    dlb_info("stopped: %lld object(s) read, %lld node event(s) produced, %lld skipped, %lld "
             "relist(s), %lld retried request(s)",
             (long long)st->objects, (long long)st->events, (long long)st->skipped,
             (long long)st->relists, (long long)st->reconnects);
}

int cmd_k8s_monitor_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"kubeconfig", required_argument, 0, 'k'},
                                             {"namespace", required_argument, 0, 'n'},
                                             {"selector", required_argument, 0, 'l'},
                                             {"dump-config", no_argument, 0, 'D'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    static char kv[3][1100]; /* the options above rewritten as -X key=value */
    cli_opts_t o = {0};
    dlb_k8s_stats_t st = {0};
    int c, rc, dump = 0;

    while ((c = getopt_long(argc, argv, "k:n:l:D" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'k':
        case 'n':
        case 'l': {
            int i = c == 'k' ? 0 : c == 'n' ? 1 : 2;
            snprintf(kv[i], sizeof(kv[i]), "%s=%s",
                     i == 0   ? "k8s.kubeconfig"
                     : i == 1 ? "k8s.namespace"
                              : "k8s.selector",
                     optarg);
            if (cli_common_opt(&o, 'X', kv[i]) < 0)
                return 2;
            break;
        }
        case 'D':
            dump = 1;
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    return cli_service_run(&o, "k8s-monitor", dump, monitor_run, monitor_report, &st);
}
