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
    static const cli_alias_t aliases[] = {{'k', "kubeconfig", "k8s.kubeconfig"},
                                          {'n', "namespace", "k8s.namespace"},
                                          {'l', "selector", "k8s.selector"},
                                          {0, NULL, NULL}};
    dlb_k8s_stats_t st = {0};

    return cli_service_main(argc, argv, "k8s-monitor", usage, aliases, monitor_run, monitor_report,
                            &st);
}
