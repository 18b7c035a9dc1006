/* A training loop that tells dlbrain about itself with the agent library and
 * prints the plans it gets back.
 *
 *   agent_example [JOB_UID [STEPS]]
 *
 * Brokers and topic prefix come from DLBRAIN_BROKERS and DLBRAIN_ENV. Build:
 *   cc agent_example.c $(pkg-config --cflags --libs dlbrain-agent) */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <dlbrain_agent.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static void on_plan(const dlb_agent_plan_t *plan, void *opaque)
{
    (void)opaque;
    printf("plan %s stage %s by %s:", plan->plan_id, plan->stage, plan->optimizer);
    for (size_t i = 0; i < plan->groups_cnt; i++)
        printf(" %s x%d (%.1f cpu, %lld MiB)", plan->groups[i].group, plan->groups[i].count,
               plan->groups[i].resource.cpu, (long long)(plan->groups[i].resource.memory >> 20));
    printf("\n");
    fflush(stdout);
}

static void on_log(int level, const char *message, void *opaque)
{
    (void)opaque;
    fprintf(stderr, "agent[%d]: %s\n", level, message);
}

int main(int argc, char **argv)
{
    const char *uid = argc > 1 ? argv[1] : "example-job";
    int steps = argc > 2 ? atoi(argv[2]) : 20;
    const char *stages[] = {DLB_AGENT_STAGE_CREATE, DLB_AGENT_STAGE_WORKER_INITIAL,
                            DLB_AGENT_STAGE_RUNNING};
    dlb_agent_meta_t meta = {.name = uid, .user = "alice", .framework = "tensorflow"};
    dlb_agent_hyper_params_t hp = {.batch_size = 512, .epoch = 1, .max_steps = steps};
    dlb_agent_job_t job = {.meta = &meta, .state = "running", .hyper_params = &hp};
    dlb_agent_conf_t *conf = dlb_agent_conf_new();
    dlb_agent_stats_t st;
    dlb_agent_t *agent;
    char errstr[512];
    unsigned requested = 0;

    if (!conf)
        return 1;
    dlb_agent_conf_set_log_cb(conf, on_log, NULL);
    agent = dlb_agent_open(conf, uid, errstr, sizeof(errstr));
    dlb_agent_conf_destroy(conf);
    if (!agent) {
        fprintf(stderr, "agent_example: %s\n", errstr);
        return 1;
    }
    dlb_agent_subscribe_plans(agent, on_plan, NULL);
    dlb_agent_report_job(agent, &job);
    for (int step = 0; step < steps; step++) {
        dlb_agent_pod_usage_t pods[] = {
            {.name = "w-0",
             .type = "worker",
             .cpu_used = 3.5,
             .cpu_requested = 8,
             .memory_used = 6LL << 30,
             .memory_requested = 16LL << 30},
            {.name = "ps-0",
             .type = "ps",
             .cpu_used = 1.5,
             .cpu_requested = 4,
             .memory_used = 3LL << 30,
             .memory_requested = 8LL << 30},
        };
        dlb_agent_sample_t sample = {
            .global_step = step * 100, .speed = 12.5, .pods = pods, .pods_cnt = 2};

        /* A full queue drops the sample (counted): training never waits. */
        dlb_agent_report_sample(agent, &sample);
        /* One plan request per stage, spread over the run. */
        if (step % (steps / 3 + 1) == 0 && requested < 3 &&
            dlb_agent_request_plan(agent, stages[requested], NULL, NULL, 0) == 0)
            requested++;
        sleep_ms(100); /* the "training step" */
    }
    /* Give the answers still on their way up to 10 s. */
    for (int i = 0; i < 100; i++) {
        dlb_agent_stats(agent, &st, sizeof(st));
        if (st.plans_received >= requested)
            break;
        sleep_ms(100);
    }
    dlb_agent_flush(agent, 10000);
    dlb_agent_stats(agent, &st, sizeof(st));
    printf("stats: reported %llu sent %llu dropped %llu failed %llu plans %llu\n",
           (unsigned long long)st.reported, (unsigned long long)st.sent,
           (unsigned long long)st.dropped, (unsigned long long)st.failed,
           (unsigned long long)st.plans_received);
    return dlb_agent_close(agent, 10000) ? 1 : 0;
}
