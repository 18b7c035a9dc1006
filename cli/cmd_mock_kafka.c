/* dlbrain mock-kafka: librdkafka's in-memory mock cluster as a server process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "common.h"
#include "kafka.h"
#include "log.h"

static void usage(FILE *fp)
{
    fprintf(
        fp,
        "usage: dlbrain mock-kafka [options]\n"
        "Run librdkafka's mock Kafka cluster on loopback until SIGINT/SIGTERM, with the\n"
        "pipeline's topics created. Limits (librdkafka 2.0.2): in memory only, about 5 MiB\n"
        "kept per partition, transactions accepted but not implemented.\n\n"
        "  -n, --brokers-count N     mock brokers (default 3)\n"
        "  -p, --partitions N        partitions per topic (= -X topic.partitions=N, default 12)\n"
        "  -w, --bootstrap-file F    also write the bootstrap servers to F\n"
        "  -f, --fail-request K:ERR  answer the next request of Kafka API number K (22\n"
        "                            InitProducerId, 0 Produce ...) with librdkafka's error\n"
        "                            ERR (e.g. CLUSTER_AUTHORIZATION_FAILED), for fault\n"
        "                            tests; repeat to queue more\n" CLI_COMMON_HELP);
}

int cmd_mock_kafka_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"brokers-count", required_argument, 0, 'n'},
                                             {"partitions", required_argument, 0, 'p'},
                                             {"bootstrap-file", required_argument, 0, 'w'},
                                             {"fail-request", required_argument, 0, 'f'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    cli_opts_t o = {0};
    dlb_conf_t conf;
    dlb_mock_t *mock = NULL;
    const char *file = NULL, *fails[16];
    size_t fails_cnt = 0;
    char errstr[512], buf[1100], pkv[64];
    int c, n = 3, rc = 1;

    while ((c = getopt_long(argc, argv, "n:p:w:f:" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            n = atoi(optarg);
            break;
        case 'p':
            snprintf(pkv, sizeof(pkv), "topic.partitions=%s", optarg);
            if (cli_common_opt(&o, 'X', pkv) < 0)
                return 2;
            break;
        case 'w':
            file = optarg;
            break;
        case 'f':
            if (fails_cnt == sizeof(fails) / sizeof(fails[0])) {
                fprintf(stderr, "dlbrain mock-kafka: at most %zu --fail-request\n", fails_cnt);
                return 2;
            }
            fails[fails_cnt++] = optarg;
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (cli_conf_build_env(&o, &conf, "mock-kafka"))
        return 1;
    cli_signals_install();
    if (dlb_mock_start(&mock, n, &conf, errstr, sizeof(errstr))) {
        dlb_err("%s; exiting", errstr);
        goto out;
    }
    for (size_t i = 0; i < fails_cnt; i++) {
        if (dlb_mock_fail_request(mock, fails[i], errstr, sizeof(errstr))) {
            dlb_err("--fail-request %s; exiting", errstr);
            goto out;
        }
    }
    /* stdout carries exactly one line, the bootstrap servers, for scripts. */
    printf("%s\n", dlb_mock_bootstraps(mock));
    fflush(stdout);
    if (file) {
        snprintf(buf, sizeof(buf), "%s\n", dlb_mock_bootstraps(mock));
        if (cli_write_file(file, buf)) {
            dlb_err("cannot write %s: %s; exiting", file, strerror(errno));
            goto out;
        }
    }
    dlb_info("%d broker(s) at %s, topics %s.* with %d partition(s); Ctrl-C stops", n,
             dlb_mock_bootstraps(mock), conf.env, conf.partitions);
    while (!cli_stop)
        usleep(100 * 1000);
    dlb_info("stopping");
    rc = 0;
out:
    dlb_mock_stop(mock);
    if (file && rc == 0)
        unlink(file);
    dlb_conf_destroy(&conf);
    return rc;
}
