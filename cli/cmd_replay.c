/* dlbrain replay: copy an event-time range of one environment's events into a
 * virtual environment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cmd.h"
#include "common.h"
#include "err.h"
#include "log.h"
#include "replay.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain replay --from TIME [--to TIME] --into ENV [options]\n"
            "Copy the events whose event time is in [--from, --to) from the source\n"
            "environment's event topics (or its PostgreSQL history) into the virtual\n"
            "environment ENV: same topics under ENV's prefix, same keys, values and headers,\n"
            "in order per job, each record stamped when produced (its event time is in the\n"
            "value). ENV must be registered ('dlbrain env create'), virtual, and not the\n"
            "source.\n"
            "TIME: RFC 3339 (2026-01-01T00:00:00Z), ms since the epoch, now, or relative to\n"
            "now (-1h, -15m, -90s, -500ms).\n"
            "Exit status: 0 every record delivered and in = out for every job, 1 the replay\n"
            "failed or was interrupted, 2 usage error or refused target, 3 nothing in the\n"
            "range (without --allow-empty).\n\n"
            "  -f, --from TIME          start of the range of event times (inclusive)\n"
            "  -t, --to TIME            end of the range (exclusive, default now)\n"
            "  -i, --into ENV           the virtual environment written to\n"
            "  -s, --source ENV         the environment read (default: the registry's real\n"
            "                           one, else the env setting)\n"
            "      --speed max|N        as fast as possible (default) or N times real time,\n"
            "                           paced by the event times\n"
            "      --from-pg            read the source's PostgreSQL history (event time, then\n"
            "                           event id) instead of its topics\n"
            "      --topics LIST        comma-separated event topics (default: job-events,\n"
            "                           metrics, k8s-events, plan-requests, config-requests;\n"
            "                           with --from-pg all but config-requests)\n"
            "      --allow-empty        a range without events is no error (exit 0)\n"
            "      --max-ahead DURATION from Kafka, which finds offsets by record time: an\n"
            "                           event's time is at most this far ahead of its\n"
            "                           record's, so start reading where records are stamped\n"
            "                           this long before --from (1h, 30m, 90s, none; default\n"
            "                           event.time.skew.s, beyond which consumers refuse it)\n"
            "      --max-late DURATION  from Kafka: an event's time is at most this far behind\n"
            "                           its record's, so stop reading where records are\n"
            "                           stamped this long after --to (default none: read each\n"
            "                           partition to its end)\n"
            "      --progress           show the progress bar even when stderr is not a terminal\n"
            "      --timeout-ms N       longest wait for the brokers and for delivery (30000)\n"
            "  -q, --quiet              no progress bar and no summary (repeat: less "
            "logging)\n" CLI_COMMON_HELP);
}

static void show_progress(const dlb_replay_stats_t *st, void *opaque)
{
    char line[160];

    (void)opaque;
    dlb_replay_progress_line(st, line, sizeof(line));
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
}

/* Split a comma-separated list in place into at most max names. */
static int split_topics(char *list, const char **out, size_t max)
{
    size_t n = 0;

    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return -1;
        out[n++] = tok;
    }
    out[n] = NULL;
    return n ? 0 : -1;
}

int cmd_replay_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"from", required_argument, 0, 'f'},
                                             {"to", required_argument, 0, 't'},
                                             {"into", required_argument, 0, 'i'},
                                             {"source", required_argument, 0, 's'},
                                             {"speed", required_argument, 0, 'S'},
                                             {"from-pg", no_argument, 0, 'P'},
                                             {"topics", required_argument, 0, 'T'},
                                             {"progress", no_argument, 0, 'p'},
                                             {"timeout-ms", required_argument, 0, 'w'},
                                             {"allow-empty", no_argument, 0, 'E'},
                                             {"max-late", required_argument, 0, 'L'},
                                             {"max-ahead", required_argument, 0, 'A'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    const char *from = NULL, *to = "now", *speed = "max", *late = "none", *ahead = NULL,
               *topics[DLB_REPLAY_MAX_TOPICS + 1];
    char *topic_list = NULL, source[128], errstr[1024];
    dlb_replay_opts_t o = {.timeout_ms = 30000, .max_late_ms = -1};
    dlb_replay_stats_t st;
    cli_opts_t co = {0};
    dlb_conf_t conf;
    struct timeval tv;
    int c, rc, quiet = 0, progress = 0;
    int64_t now;

    while ((c = getopt_long(argc, argv, "f:t:i:s:" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            from = optarg;
            break;
        case 't':
            to = optarg;
            break;
        case 'i':
            o.into = optarg;
            break;
        case 's':
            o.source = optarg;
            break;
        case 'S':
            speed = optarg;
            break;
        case 'P':
            o.from_pg = 1;
            break;
        case 'T':
            topic_list = optarg;
            break;
        case 'p':
            progress = 1;
            break;
        case 'w':
            o.timeout_ms = atoi(optarg);
            break;
        case 'E':
            o.allow_empty = 1;
            break;
        case 'L':
            late = optarg;
            break;
        case 'A':
            ahead = optarg;
            break;
        case 'q':
            quiet = 1;
            cli_common_opt(&co, c, optarg); /* also lowers the log level */
            break;
        default:
            if ((rc = cli_default_opt(&co, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (!from || !o.into || optind < argc) {
        usage(stderr);
        return 2;
    }
    if (cli_conf_build_env(&co, &conf, "replay"))
        return 2;
    rc = 2;
    gettimeofday(&tv, NULL);
    now = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    if (dlb_replay_parse_time(from, now, &o.from_ms, errstr, sizeof(errstr)) ||
        dlb_replay_parse_time(to, now, &o.to_ms, errstr, sizeof(errstr))) {
        dlb_err("%s", errstr);
        goto out;
    }
    if (dlb_replay_parse_duration(late, &o.max_late_ms, errstr, sizeof(errstr))) {
        dlb_err("--max-late: %s", errstr);
        goto out;
    }
    /* By default what the consumers accept: an event further ahead of its
     * record's time is dead-lettered (0 there: no check, so no bound). */
    o.max_ahead_ms = conf.skew_s > 0 ? (int64_t)conf.skew_s * 1000 : -1;
    if (ahead && dlb_replay_parse_duration(ahead, &o.max_ahead_ms, errstr, sizeof(errstr))) {
        dlb_err("--max-ahead: %s", errstr);
        goto out;
    }
    if (strcmp(speed, "max") && ((o.speed = strtod(speed, NULL)) <= 0)) {
        dlb_err("--speed %s: expected max or a positive factor", speed);
        goto out;
    }
    if (topic_list && split_topics(topic_list, topics, DLB_REPLAY_MAX_TOPICS)) {
        dlb_err("--topics %s: expected 1 to %d comma-separated topics", topic_list,
                DLB_REPLAY_MAX_TOPICS);
        goto out;
    }
    o.topics = topic_list ? topics : NULL;
    if ((rc = dlb_replay_check_target(&conf, o.source, o.into, source, sizeof(source), errstr,
                                      sizeof(errstr)))) {
        dlb_err("%s", errstr);
        rc = rc == DLB_ERR_INVALID ? 2 : 1;
        goto out;
    }
    o.source = source;
    /* The source's schema is its name, unless it is this process's env. */
    o.schema = strcmp(source, conf.env) ? source : conf.pg_schema;
    cli_signals_install();
    o.stop = &cli_stop;
    if (!quiet && (progress || isatty(STDERR_FILENO)))
        o.progress = show_progress;
    rc = dlb_replay_run(&conf, &o, &st, errstr, sizeof(errstr));
    if (o.progress && rc != DLB_ERR_INVALID)
        fputc('\n', stderr);
    if (!quiet && rc != DLB_ERR_INVALID)
        dlb_replay_summary(stdout, &o, &st);
    rc = !rc ? 0 : rc == DLB_ERR_INVALID ? 2 : rc == DLB_ERR_NOTFOUND ? 3 : 1;
    if (rc)
        dlb_err("replay into %s: %s", o.into, errstr);
out:
    dlb_conf_destroy(&conf);
    return rc;
}
