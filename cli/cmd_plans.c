/* dlbrain plans: subscribe to the plans topic as a job master would. */
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "cmd.h"
#include "codec.h"
#include "common.h"
#include "kafka.h"
#include "log.h"

static void usage(FILE *fp)
{
    fprintf(
        fp,
        "usage: dlbrain plans [options]\n"
        "Subscribe to <env>.plans like a job master (read_committed, own consumer group) and\n"
        "print each plan as it arrives: its group and pod resources, its pod actions\n"
        "(relaunch or replace) and its reason.\n\n"
        "  -j, --job UID         only plans of this job (repeatable)\n"
        "  -n, --count N         exit after N plans (exit 1 if the timeout comes first)\n"
        "  -t, --timeout-ms N    give up after N ms (default: wait forever)\n"
        "  -f, --format F        table (default) or json (one plan per line)\n" CLI_COMMON_HELP);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fmt_res(char *buf, size_t size, int count, const dlb_resource_t *r)
{
    char cpu[24] = "=", mem[24] = "=";

    if (r->cpu > 0)
        snprintf(cpu, sizeof(cpu), "%gc", r->cpu);
    if (r->memory > 0)
        snprintf(mem, sizeof(mem), "%.1fGi", (double)r->memory / (double)DLB_GIB);
    if (count > 0)
        snprintf(buf, size, "%dx %s/%s", count, cpu, mem);
    else
        snprintf(buf, size, "= %s/%s", cpu, mem);
}

static void print_row(const dlb_plan_t *p)
{
    char ps[64] = "-", wk[64] = "-", pods[160] = "-", acts[160] = "-";
    size_t off = 0;

    for (size_t i = 0; i < p->groups_cnt; i++) {
        if (!strcmp(p->groups[i].group, "ps"))
            fmt_res(ps, sizeof(ps), p->groups[i].count, &p->groups[i].resource);
        else if (!strcmp(p->groups[i].group, "worker"))
            fmt_res(wk, sizeof(wk), p->groups[i].count, &p->groups[i].resource);
    }
    for (size_t i = 0; i < p->pods_cnt && off < sizeof(pods); i++) {
        char r[64];
        fmt_res(r, sizeof(r), 0, &p->pods[i].resource);
        off += (size_t)snprintf(pods + off, sizeof(pods) - off, "%s%s:%s", i ? "," : "",
                                p->pods[i].name, r + 2);
    }
    /* "replace:job-worker-3,relaunch:job-worker-5"; each action's own reason
     * is in -f json, the plan's reason sums them up. */
    off = 0;
    for (size_t i = 0; i < p->actions_cnt && off < sizeof(acts); i++)
        off += (size_t)snprintf(acts + off, sizeof(acts) - off, "%s%s:%s", i ? "," : "",
                                p->actions[i].action, p->actions[i].pod);
    printf("%-14s %-24s %-20s %-18s %-18s %-26s %-26s %s\n", p->job_uid, p->stage, p->optimizer, ps,
           wk, pods, acts, p->reason);
}

/* Plan ids already shown. hsearch's one table is enough for a CLI process;
 * when it is full, repeats are no longer recognised (and said once). */
static int plan_seen(const char *plan_id)
{
    static int ready, full_said;
    ENTRY e = {0}, *found;

    if (!ready) {
        if (!hcreate(1 << 20))
            return 0;
        ready = 1;
    }
    e.key = (char *)plan_id;
    if (hsearch(e, FIND))
        return 1;
    if (!(e.key = strdup(plan_id)) || !(found = hsearch(e, ENTER))) {
        free(e.key);
        if (!full_said++)
            dlb_warn("too many plans to remember: repeated plan ids are shown from now on");
    }
    return 0;
}

static int wanted(const char *const *jobs, int n, const char *uid)
{
    if (!n)
        return 1;
    for (int i = 0; i < n; i++)
        if (!strcmp(jobs[i], uid))
            return 1;
    return 0;
}

int cmd_plans_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"job", required_argument, 0, 'j'},
                                             {"count", required_argument, 0, 'n'},
                                             {"timeout-ms", required_argument, 0, 't'},
                                             {"format", required_argument, 0, 'f'},
                                             {"all", no_argument, 0, 'a'},
                                             CLI_COMMON_LONG,
                                             {0, 0, 0, 0}};
    /* Plans are produced in transactions once exactly-once is on; a master must
     * never act on an aborted one. */
    static const char *const extra[] = {"isolation.level", "read_committed", NULL};
    const char *jobs[64];
    cli_opts_t o = {0};
    dlb_conf_t conf;
    dlb_catalog_t *cat = NULL;
    rd_kafka_t *rk = NULL;
    rd_kafka_topic_partition_list_t *sub;
    char errstr[512], topic[256], group[256];
    int c, njobs = 0, json = 0, all = 0, rc = 2;
    long count = 0, seen = 0, repeats = 0, timeout_ms = -1;
    int64_t deadline;

    while ((c = getopt_long(argc, argv, "j:n:t:f:a" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (njobs < 64)
                jobs[njobs++] = optarg;
            break;
        case 'n':
            count = atol(optarg);
            break;
        case 't':
            timeout_ms = atol(optarg);
            break;
        case 'a':
            all = 1;
            break;
        case 'f':
            json = !strcmp(optarg, "json");
            if (!json && strcmp(optarg, "table")) {
                usage(stderr);
                return 2;
            }
            break;
        default:
            if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
                return rc;
        }
    }
    if (cli_conf_build(&o, &conf, "plans"))
        return 2;
    cli_signals_install();
    /* A group of its own, so every subscriber sees every plan. */
    snprintf(group, sizeof(group), "%s.master.%d.%lld", conf.env, (int)getpid(),
             (long long)time(NULL));
    if (dlb_catalog_new(&cat, errstr, sizeof(errstr)) ||
        dlb_kafka_consumer_new(&conf, group, extra, &rk, errstr, sizeof(errstr))) {
        dlb_err("%s; exiting", errstr);
        goto out;
    }
    sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(
        sub, dlb_conf_topic(&conf, DLB_TOPIC_PLANS, topic, sizeof(topic)), RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (!json) {
        printf("%-14s %-24s %-20s %-18s %-18s %-26s %-26s %s\n", "JOB", "STAGE", "OPTIMIZER", "PS",
               "WORKER", "PODS", "ACTIONS", "REASON");
        fflush(stdout);
    }
    rc = 1;
    deadline = timeout_ms >= 0 ? mono_ms() + timeout_ms : INT64_MAX;
    while (!cli_stop && (!count || seen < count) && mono_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        dlb_event_t ev = {0};
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                dlb_warn("kafka: %s; continuing", rd_kafka_message_errstr(m));
        } else if (dlb_codec_decode(cat, m->payload, m->len, &ev, errstr, sizeof(errstr)) ||
                   ev.type != DLB_EV_PLAN) {
            dlb_warn("plans offset %" PRId64 ": not a plan (%s); skipped", m->offset,
                     ev.type ? dlb_event_type_name(ev.type) : errstr);
        } else if (!wanted(jobs, njobs, ev.u.plan.job_uid)) {
            /* another job's plan */
        } else if (!all && plan_seen(ev.u.plan.plan_id)) {
            repeats++;
        } else {
            seen++;
            if (json) {
                char *s = NULL;
                if (!dlb_event_to_json(cat, &ev, &s, errstr, sizeof(errstr)))
                    printf("%s\n", s);
                free(s);
            } else {
                print_row(&ev.u.plan);
            }
            fflush(stdout);
        }
        dlb_event_clear(&ev);
        rd_kafka_message_destroy(m);
    }
    if (repeats)
        dlb_info("%ld repeated plan id(s) skipped (a redelivery; see --all)", repeats);
    if (!count || seen >= count)
        rc = 0;
    else
        dlb_err("received %ld of %ld plan(s) before the timeout", seen, count);
out:
    if (rk) {
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
    }
    if (cat)
        dlb_catalog_destroy(cat);
    dlb_conf_destroy(&conf);
    return rc;
}
