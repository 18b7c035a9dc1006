/* dlbrain plans: subscribe to the plans topic as a job master would. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain plans [options]\n"
            "Subscribe to <env>.plans like a job master (read_committed, own consumer group) and\n"
            "print each plan as it arrives: its group and pod resources, its pod actions\n"
            "(relaunch or replace) and its reason.\n\n" CLI_SUBSCRIBER_HELP("plan", "plans")
                CLI_COMMON_HELP);
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

static void plan_row(const dlb_event_t *ev)
{
    print_row(&ev->u.plan);
}

int cmd_plans_main(int argc, char **argv)
{
    char header[256];

    snprintf(header, sizeof(header), "%-14s %-24s %-20s %-18s %-18s %-26s %-26s %s", "JOB", "STAGE",
             "OPTIMIZER", "PS", "WORKER", "PODS", "ACTIONS", "REASON");
    return cli_subscriber_main(argc, argv, "plans", usage, DLB_TOPIC_PLANS, DLB_EV_PLAN, header,
                               plan_row);
}
