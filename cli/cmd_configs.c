/* dlbrain configs: subscribe to the configs topic as a job master would. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common.h"

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: dlbrain configs [options]\n"
            "Subscribe to <env>.configs like a job master (read_committed, own consumer group)\n"
            "and print each configuration match as it arrives: the rules version it was matched\n"
            "against, the rules that apply (highest precedence first) and the merged Configure\n"
            "values (JSON).\n\n" CLI_SUBSCRIBER_HELP("match", "matches") CLI_COMMON_HELP);
}

static void match_row(const dlb_event_t *ev)
{
    const dlb_config_match_t *m = &ev->u.cm;
    char rules[256] = "-", values[512] = "-";
    size_t off = 0;

    for (size_t i = 0; i < m->rule_ids_cnt && off < sizeof(rules); i++)
        off += (size_t)snprintf(rules + off, sizeof(rules) - off, "%s%s", i ? "," : "",
                                m->rule_ids[i]);
    off = 0;
    for (size_t i = 0; i < m->values_cnt && off < sizeof(values); i++)
        off += (size_t)snprintf(values + off, sizeof(values) - off, "%s%s=%s", i ? " " : "",
                                m->values[i].key, m->values[i].json);
    printf("%-14s %-8lld %-28s %-30s %s\n", m->job_uid, (long long)m->rules_version, rules,
           m->trigger_event_id, values);
}

int cmd_configs_main(int argc, char **argv)
{
    char header[256];

    snprintf(header, sizeof(header), "%-14s %-8s %-28s %-30s %s", "JOB", "VERSION", "RULES",
             "TRIGGER", "VALUES");
    return cli_subscriber_main(argc, argv, "configs", usage, DLB_TOPIC_CONFIGS, DLB_EV_CONFIG_MATCH,
                               header, match_row);
}
