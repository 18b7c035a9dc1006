/* dlb_recording_*: a JSON-lines recording folded per job in event-time order,
 * and each plan request's optimizer input as the consumer would build it at
 * the request's time: job state, similar jobs' history, OOMs already answered.
 * Every expectation below is worked out by hand from the fixture's times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalog.h"
#include "conf.h"
#include "err.h"
#include "optimizer.h"
#include "recording.h"

#include "catalog_fixture.h"

/* ---- JSON lines ---------------------------------------------------------- */

#define HEAD(type, id, t, uid)                                                                     \
    "{\"type\":\"" type "\",\"event_id\":\"" id "\",\"event_time_ms\":" #t ",\"job_uid\":\"" uid   \
    "\""
#define JOB(id, t, uid, rest) HEAD("job_event", id, t, uid) rest "}\n"
#define META(scenario)        ",\"meta\":{\"name\":\"m\",\"scenario\":\"" scenario "\"}"
#define STATE(s)              ",\"state\":\"" s "\""
#define REQ(id, t, uid, stage, ...)                                                                \
    HEAD("plan_request", id, t, uid) ",\"stage\":\"" stage "\"" __VA_ARGS__ "}\n"
#define OOM_POD(pod) ",\"oom_pod\":\"" pod "\""
#define NODE(id, t, uid, kind, pod, type, rest)                                                    \
    HEAD("node_event", id, t, uid)                                                                 \
    ",\"kind\":\"" kind "\",\"pod_name\":\"" pod "\",\"pod_type\":\"" type                         \
    "\",\"pod_index\":0" rest "}\n"
/* A sample of one PS and one worker; the worker uses `used` bytes of 8 GiB. */
#define RT(id, t, uid, step, used)                                                                 \
    HEAD("runtime_sample", id, t, uid)                                                             \
    ",\"global_step\":" #step ",\"speed\":2.0,\"pods\":["                                          \
    "{\"name\":\"" uid "-ps-0\",\"type\":\"ps\",\"cpu_used\":1,\"cpu_requested\":4,"               \
    "\"memory_used\":2147483648,\"memory_requested\":4294967296},"                                 \
    "{\"name\":\"" uid "-worker-0\",\"type\":\"worker\",\"cpu_used\":2,\"cpu_requested\":4,"       \
    "\"memory_used\":" #used ",\"memory_requested\":8589934592}]}\n"

/* Times: T0 = 1767225600000 (2026-01-01 00:00 UTC); history.hours = 24
 * (86400000 ms), state.window.size = 3, so history keeps 4*3 = 12 samples.
 *
 * a-hist (s1): created T0, samples a-r1..a-r5 at T0+10s..+50s, OOMs on
 *   worker-0 (twice) and ps-0, succeeded at RB+1s, one more sample a-r6 at
 *   RB+4s: a request before RB+1s sees it running with 5 samples.
 * b-new (s1): created T0+2h, asks job_stage_create at RB = T0+2h+1s =
 *   1767232801000.
 * e-edge (s1): created at exactly RB-24h = 1767146401000: inside b-new's
 *   window (created >= from), outside c-run's.
 * c-run (s1): created T0+3h = 1767236400000; c-r1 +10s; OOM c-k1 on
 *   c-run-worker-0 +20s; c-q1 +21s (RC1 = 1767236421000) naming it; c-r2 +30s;
 *   c-q2 +40s naming it, and c-k2 (ps-0 Running) at the same time; c-q3 +50s
 *   (job_stage_worker_running, no pod named), and c-r3 and job event c-e2
 *   (batch size 1024) at the same time. Its history as of RC1 starts at
 *   RC1-24h = 1767150021000 > e-edge's creation.
 * d-other (s2): created T0+30min, asks job_stage_create 1 s later.
 *
 * The lines are out of time order on purpose; one plan line (not an input:
 * skipped), a comment, a blank line and CRLF endings are mixed in. */
static const char *const fixture_lines[] = {
    "# a recording\n",
    /* c-run's requests and its same-time events, the request first */
    REQ("c-q3", 1767236450000, "c-run", "job_stage_worker_running"),
    RT("c-r3", 1767236450000, "c-run", 300, 7000000000),
    JOB("c-e2", 1767236450000, "c-run", ",\"hyper_params\":{\"batch_size\":1024}"),
    RT("a-r3", 1767225630000, "a-hist", 30, 5000000000),
    JOB("a-e2", 1767232802000, "a-hist", STATE("succeeded") ",\"exit_reason\":\"Completed\""),
    REQ("b-q1", 1767232801000, "b-new", "job_stage_create"),
    "\n",
    RT("c-r2", 1767236430000, "c-run", 200, 6000000000),
    JOB("a-e1", 1767225600000, "a-hist", META("s1") STATE("running")),
    REQ("c-q2", 1767236440000, "c-run", "job_stage_running", OOM_POD("c-run-worker-0")),
    NODE("c-k2", 1767236440000, "c-run", "pod_phase", "c-run-ps-0", "ps", ",\"phase\":\"Running\""),
    "{\"type\":\"plan\",\"event_id\":\"plan-x\",\"event_time_ms\":5,\"plan_id\":\"plan-x\","
    "\"job_uid\":\"c-run\",\"stage\":\"job_stage_running\",\"optimizer\":\"o\",\"reason\":\"r\","
    "\"trigger_event_id\":\"x\"}\n",
    RT("a-r1", 1767225610000, "a-hist", 10, 3000000000),
    RT("a-r5", 1767225650000, "a-hist", 50, 7000000000),
    NODE("a-k1", 1767225625000, "a-hist", "oom_killed", "a-hist-worker-0", "worker", ""),
    NODE("a-k3", 1767225645000, "a-hist", "oom_killed", "a-hist-ps-0", "ps", ""),
    RT("a-r6", 1767232805000, "a-hist", 60, 7000000000),
    RT("a-r2", 1767225620000, "a-hist", 20, 4000000000),
    NODE("a-k2", 1767225640000, "a-hist", "oom_killed", "a-hist-worker-0", "worker", ""),
    RT("a-r4", 1767225640000, "a-hist", 40, 6000000000),
    REQ("c-q1", 1767236421000, "c-run", "job_stage_running", OOM_POD("c-run-worker-0")),
    NODE("c-k1", 1767236420000, "c-run", "oom_killed", "c-run-worker-0", "worker",
         ",\"phase\":\"Failed\",\"memory_requested\":8589934592"),
    JOB("c-e1", 1767236400000, "c-run", META("s1") STATE("running")),
    RT("c-r1", 1767236410000, "c-run", 100, 5000000000),
    JOB("b-e1", 1767232800000, "b-new", META("s1") STATE("created")),
    "{\"type\":\"plan_request\",\"event_id\":\"d-q1\",\"event_time_ms\":1767227401000,"
    "\"job_uid\":\"d-other\",\"stage\":\"job_stage_create\"}\r\n",
    "{\"type\":\"job_event\",\"event_id\":\"d-e1\",\"event_time_ms\":1767227400000,"
    "\"job_uid\":\"d-other\",\"meta\":{\"name\":\"m\",\"scenario\":\"s2\"},"
    "\"state\":\"created\"}\r\n",
    JOB("e-e1", 1767146401000, "e-edge", META("s1") STATE("running")),
    NULL,
};

#define T0 1767225600000LL
#define RB 1767232801000LL
#define RC 1767236400000LL /* c-run's creation */

/* Request numbers: job by job in uid order (a-hist has none). */
enum { Q_B1, Q_C1, Q_C2, Q_C3, Q_D1, Q__CNT };

/* ---- fixture helpers ------------------------------------------------------ */

static dlb_conf_t conf;

static int group_setup(void **state)
{
    char err[256];

    if (setup(state))
        return -1;
    dlb_conf_init(&conf);
    if (dlb_conf_set_kv(&conf, "state.window.size=3", err, sizeof(err)) ||
        dlb_conf_set_kv(&conf, "history.hours=24", err, sizeof(err)) ||
        dlb_conf_set_kv(&conf, "history.max.jobs=10", err, sizeof(err))) {
        fprintf(stderr, "conf: %s\n", err);
        return -1;
    }
    dlb_conf_finish(&conf);
    return 0;
}

static int group_teardown(void **state)
{
    dlb_conf_destroy(&conf);
    return teardown(state);
}

/* Writes text to a new temporary file; path gets its name. */
static void write_tmp(const char *text, char *path, size_t size)
{
    size_t len = strlen(text);
    int fd;

    snprintf(path, size, "/tmp/dlb-rec-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

/* The lines of a NULL-terminated list as one text; free() it. */
static char *join(const char *const *lines)
{
    size_t len = 1;
    char *text;

    for (size_t i = 0; lines[i]; i++)
        len += strlen(lines[i]);
    text = malloc(len);
    assert_non_null(text);
    text[0] = '\0';
    for (size_t i = 0; lines[i]; i++)
        strcat(text, lines[i]);
    return text;
}

static dlb_recording_t *load_ok(const char *text, const dlb_conf_t *c)
{
    dlb_recording_t *rec = NULL;
    char path[64], err[512] = "";
    int rc;

    write_tmp(text, path, sizeof(path));
    rc = dlb_recording_load(&rec, path, c, cat, err, sizeof(err));
    unlink(path);
    if (rc)
        fail_msg("load: %s (%s)", dlb_err_name(rc), err);
    assert_non_null(rec);
    return rec;
}

static dlb_recording_t *load_fixture(const dlb_conf_t *c)
{
    char *text = join(fixture_lines);
    dlb_recording_t *rec = load_ok(text, c);

    free(text);
    return rec;
}

/* Loads text, expecting err_code and an errstr that starts with the file's
 * path and then want when want starts with ':' ("PATH:LINE: ..."), else
 * that holds want. */
static void load_fails(const char *text, int err_code, const char *want)
{
    dlb_recording_t *rec = (dlb_recording_t *)1;
    char path[64], err[512] = "", prefix[640];
    int rc;

    write_tmp(text, path, sizeof(path));
    rc = dlb_recording_load(&rec, path, &conf, cat, err, sizeof(err));
    unlink(path);
    if (rc != err_code)
        fail_msg("load returned %s (%s), expected %s", dlb_err_name(rc), err,
                 dlb_err_name(err_code));
    assert_null(rec);
    if (want[0] != ':') {
        if (!strstr(err, want))
            fail_msg("errstr \"%s\", expected \"%s\" in it", err, want);
        return;
    }
    snprintf(prefix, sizeof(prefix), "%s%s", path, want);
    if (strncmp(err, prefix, strlen(prefix)))
        fail_msg("errstr \"%s\", expected it to start with \"%s\"", err, prefix);
}

static void assert_window(const dlb_job_state_t *st, size_t n, const char *const *ids)
{
    assert_int_equal(st->window_cnt, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(st->window[i].event_id, ids[i]);
}

static void assert_samples(const dlb_hist_job_t *h, size_t n, const char *const *ids)
{
    assert_int_equal(h->samples_cnt, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(h->samples[i].event_id, ids[i]);
        assert_string_equal(h->samples[i].job_uid, h->job_uid);
        assert_int_equal(h->samples[i].pods_cnt, 2);
    }
}

/* The count and the array of a list of event ids: IDS("a", "b") -> 2, {"a", "b"}. */
#define IDS(...)                                                                                   \
    (sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), (const char *[])                     \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }

/* ---- tests ------------------------------------------------------------------ */

/* 26 input events: a-hist 11 (2 job, 6 samples, 3 OOMs), b-new 2, c-run 10
 * (2 job, 3 samples, 2 node, 3 requests), d-other 2, e-edge 1; the plan line,
 * the comment and the blank line are not counted. */
static void test_counts_and_order(void **state)
{
    static const char *const ids[Q__CNT] = {"b-q1", "c-q1", "c-q2", "c-q3", "d-q1"};
    /* Indexes in dlb_stages[]: create 0, running 3, worker_running 5. */
    static const int stages[Q__CNT] = {0, 3, 3, 5, 0};
    dlb_recording_t *rec = load_fixture(&conf);
    (void)state;

    assert_int_equal(dlb_recording_events(rec), 26);
    assert_int_equal(dlb_recording_jobs(rec), 5);
    assert_int_equal(dlb_recording_requests(rec), Q__CNT);
    for (size_t i = 0; i < Q__CNT; i++) {
        const dlb_plan_request_t *req = dlb_recording_request(rec, i);
        assert_string_equal(req->event_id, ids[i]);
        assert_int_equal(dlb_recording_stage(rec, i), stages[i]);
        assert_string_equal(dlb_stages[stages[i]], req->stage);
    }
    assert_int_equal(dlb_recording_request(rec, Q_C1)->event_time_ms, RC + 21000);
    assert_int_equal(dlb_recording_request(rec, Q_C1)->has_oom_pod, 1);
    assert_string_equal(dlb_recording_request(rec, Q_C1)->oom_pod, "c-run-worker-0");
    assert_int_equal(dlb_recording_request(rec, Q_C3)->has_oom_pod, 0);
    dlb_recording_free(rec);
    dlb_recording_free(NULL);
}

/* b-new at job_stage_create: history is the s1 jobs created in
 * [RB-24h, RB): a-hist (T0) and e-edge (RB-24h exactly), newest first; not
 * c-run (created after RB), not d-other (s2). a-hist as of RB: still running
 * (succeeded at RB+1s), samples a-r1..a-r5 (a-r6 is at RB+4s), OOM pods
 * distinct and sorted. */
static void test_create_history(void **state)
{
    dlb_recording_t *rec = load_fixture(&conf);
    dlb_oom_answers_t answered;
    dlb_opt_input_t in;
    const char *set = "dlrover";
    const dlb_hist_job_t *h;
    (void)state;

    memset(&answered, 0x5a, sizeof(answered));
    assert_int_equal(dlb_recording_input(rec, Q_B1, set, &answered, &in), 0);
    assert_ptr_equal(in.req, dlb_recording_request(rec, Q_B1));
    assert_ptr_equal(in.optimizer_set, set);
    assert_ptr_equal(in.answered, &answered);
    assert_null(answered.items); /* zeroed for the optimizer */
    assert_int_equal(answered.cnt, 0);
    assert_ptr_equal(in.limits, &conf.limits);
    assert_ptr_equal(in.tuning, &conf.tuning);
    assert_null(in.oom_plans); /* no OOM in b-new */
    assert_int_equal(in.oom_plans_cnt, 0);

    assert_string_equal(in.job->job.job_uid, "b-new");
    assert_string_equal(in.job->job.meta.scenario, "s1");
    assert_string_equal(in.job->job.state, "created");
    assert_int_equal(in.job->created_ms, RB - 1000);
    assert_int_equal(in.job->window_cnt, 0);
    assert_int_equal(in.job->pods_cnt, 0);

    assert_int_equal(in.history->jobs_cnt, 2);
    h = &in.history->jobs[0];
    assert_string_equal(h->job_uid, "a-hist");
    assert_int_equal(h->created_ms, T0);
    assert_string_equal(h->state, "running");
    assert_string_equal(h->exit_reason, "");
    assert_int_equal(h->completed, 0);
    assert_samples(h, IDS("a-r1", "a-r2", "a-r3", "a-r4", "a-r5"));
    assert_int_equal(h->samples[4].global_step, 50);
    assert_int_equal(h->samples[4].pods[1].memory_used, 7000000000LL);
    assert_int_equal(h->oom_pods_cnt, 2); /* worker-0 twice, ps-0 once */
    assert_string_equal(h->oom_pods[0], "a-hist-ps-0");
    assert_string_equal(h->oom_pods[1], "a-hist-worker-0");
    h = &in.history->jobs[1];
    assert_string_equal(h->job_uid, "e-edge");
    assert_int_equal(h->created_ms, RB - 86400000);
    assert_string_equal(h->state, "running");
    assert_int_equal(h->samples_cnt, 0);
    assert_int_equal(h->oom_pods_cnt, 0);

    /* d-other (s2): the only job of its scenario, so no history. */
    assert_int_equal(dlb_recording_input(rec, Q_D1, set, NULL, &in), 0);
    assert_null(in.answered);
    assert_string_equal(in.job->job.meta.scenario, "s2");
    assert_string_equal(in.job->job.event_id, "d-e1"); /* the CRLF lines read fine */
    assert_int_equal(in.history->jobs_cnt, 0);
    dlb_recording_free(rec);
}

/* Each request sees its job's events up to its time in event-time order,
 * whatever the file order; at the same time, job, node and metrics events
 * come before the request. */
static void test_fold_as_of_request(void **state)
{
    dlb_recording_t *rec = load_fixture(&conf);
    const dlb_pod_status_t *p;
    dlb_opt_input_t in;
    (void)state;

    /* c-q1 (+21s): c-e1, c-r1, c-k1; not c-r2 (+30s), listed before it. */
    assert_int_equal(dlb_recording_input(rec, Q_C1, "dlrover", NULL, &in), 0);
    assert_string_equal(in.job->job.event_id, "c-e1");
    assert_int_equal(in.job->created_ms, RC);
    assert_int_equal(in.job->job.has_hyper_params, 0);
    assert_window(in.job, IDS("c-r1"));
    assert_int_equal(in.job->pods_cnt, 1);
    p = &in.job->pods[0];
    assert_string_equal(p->name, "c-run-worker-0");
    assert_int_equal(p->oom_count, 1);
    assert_string_equal(p->last_oom_event_id, "c-k1");
    assert_string_equal(p->last_kind, "oom_killed");
    assert_int_equal(p->memory_requested, 8589934592LL);
    /* The OOM loads history as of RC1: b-new (T0+2h) then a-hist (T0);
     * e-edge was created before RC1-24h. a-hist has now succeeded, with all
     * six samples. */
    assert_int_equal(in.history->jobs_cnt, 2);
    assert_string_equal(in.history->jobs[0].job_uid, "b-new");
    assert_string_equal(in.history->jobs[0].state, "created");
    assert_int_equal(in.history->jobs[0].completed, 0);
    assert_int_equal(in.history->jobs[0].samples_cnt, 0);
    assert_string_equal(in.history->jobs[1].job_uid, "a-hist");
    assert_string_equal(in.history->jobs[1].state, "succeeded");
    assert_string_equal(in.history->jobs[1].exit_reason, "Completed");
    assert_int_equal(in.history->jobs[1].completed, 1);
    assert_samples(&in.history->jobs[1], IDS("a-r1", "a-r2", "a-r3", "a-r4", "a-r5", "a-r6"));

    /* c-q2 (+40s): c-r2 now, and c-k2 of the same time although it comes
     * after the request in the file; pods sorted by name. */
    assert_int_equal(dlb_recording_input(rec, Q_C2, "dlrover", NULL, &in), 0);
    assert_window(in.job, IDS("c-r1", "c-r2"));
    assert_int_equal(in.job->pods_cnt, 2);
    assert_string_equal(in.job->pods[0].name, "c-run-ps-0");
    assert_string_equal(in.job->pods[0].last_kind, "pod_phase");
    assert_string_equal(in.job->pods[0].phase, "Running");
    assert_int_equal(in.job->pods[0].oom_count, 0);
    assert_string_equal(in.job->pods[1].name, "c-run-worker-0");
    assert_int_equal(in.job->pods[1].oom_count, 1);
    assert_int_equal(in.job->job.has_hyper_params, 0);

    /* c-q3 (+50s): c-r3 and c-e2 of the same time, both listed after it. No
     * pod named, but the job has an OOM: history is loaded as for c-q1. */
    assert_int_equal(dlb_recording_input(rec, Q_C3, "dlrover", NULL, &in), 0);
    assert_window(in.job, IDS("c-r1", "c-r2", "c-r3"));
    assert_string_equal(in.job->job.event_id, "c-e2");
    assert_int_equal(in.job->job.has_hyper_params, 1);
    assert_int_equal(in.job->job.hyper_params.batch_size, 1024);
    assert_string_equal(in.job->job.state, "running"); /* c-e2 has no state */
    assert_int_equal(in.job->window[2].global_step, 300);
    assert_int_equal(in.history->jobs_cnt, 2);
    assert_string_equal(in.history->jobs[0].job_uid, "b-new");
    dlb_recording_free(rec);
}

/* A window of 1 keeps 4 history samples, the newest before the request;
 * history.max.jobs = 1 keeps the newest job. */
static void test_window_and_max_jobs(void **state)
{
    dlb_conf_t c2;
    dlb_recording_t *rec;
    dlb_opt_input_t in;
    char err[256];
    (void)state;

    dlb_conf_init(&c2);
    assert_int_equal(dlb_conf_set_kv(&c2, "state.window.size=1", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_set_kv(&c2, "history.hours=24", err, sizeof(err)), 0);
    assert_int_equal(dlb_conf_set_kv(&c2, "history.max.jobs=1", err, sizeof(err)), 0);
    dlb_conf_finish(&c2);
    rec = load_fixture(&c2);

    /* b-q1: a-hist (newer than e-edge), its 5 samples before RB cut to the
     * newest 4. */
    assert_int_equal(dlb_recording_input(rec, Q_B1, "dlrover", NULL, &in), 0);
    assert_int_equal(in.history->jobs_cnt, 1);
    assert_string_equal(in.history->jobs[0].job_uid, "a-hist");
    assert_samples(&in.history->jobs[0], IDS("a-r2", "a-r3", "a-r4", "a-r5"));
    /* c-q3: only the newest sample; history only b-new. */
    assert_int_equal(dlb_recording_input(rec, Q_C3, "dlrover", NULL, &in), 0);
    assert_window(in.job, IDS("c-r3"));
    assert_int_equal(in.history->jobs_cnt, 1);
    assert_string_equal(in.history->jobs[0].job_uid, "b-new");
    dlb_recording_free(rec);
    dlb_conf_destroy(&c2);
}

static dlb_oom_plan_t oom_answer(const char *pod, const char *ev, int64_t memory)
{
    dlb_oom_plan_t a;

    memset(&a, 0, sizeof(a));
    snprintf(a.pod_name, sizeof(a.pod_name), "%s", pod);
    snprintf(a.oom_event_id, sizeof(a.oom_event_id), "%s", ev);
    a.memory = memory;
    return a;
}

/* Answers recorded with dlb_recording_answer() reach the job's later
 * requests (and only those fixed after the answer), with the plan's id and
 * the answering request's time; rewind forgets them. */
static void test_oom_answers(void **state)
{
    dlb_recording_t *rec = load_fixture(&conf);
    dlb_plan_t plan1, plan2;
    dlb_oom_plan_t one = oom_answer("c-run-worker-0", "c-k1", 12 * DLB_GIB);
    dlb_oom_answers_t a = {&one, 1}, none = {NULL, 0};
    dlb_opt_input_t in, again;
    (void)state;

    memset(&plan1, 0, sizeof(plan1));
    snprintf(plan1.plan_id, sizeof(plan1.plan_id), "plan-c-q1");
    memset(&plan2, 0, sizeof(plan2));
    snprintf(plan2.plan_id, sizeof(plan2.plan_id), "plan-c-q2");

    /* Replay 1, in request order. */
    assert_int_equal(dlb_recording_input(rec, Q_C1, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 0);
    one.event_time_ms = 5; /* overwritten by the request's time */
    assert_int_equal(dlb_recording_answer(rec, Q_C1, &plan1, &a), 0);
    assert_int_equal(dlb_recording_input(rec, Q_C2, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 1);
    assert_string_equal(in.oom_plans[0].pod_name, "c-run-worker-0");
    assert_string_equal(in.oom_plans[0].oom_event_id, "c-k1");
    assert_string_equal(in.oom_plans[0].plan_id, "plan-c-q1");
    assert_int_equal(in.oom_plans[0].memory, 12 * DLB_GIB);
    assert_int_equal(in.oom_plans[0].event_time_ms, RC + 21000); /* c-q1's time */
    /* c-q2 answered nothing: not recorded. */
    assert_int_equal(dlb_recording_answer(rec, Q_C2, &plan2, &none), 0);
    /* c-q3 names no pod but its job has an OOM: it sees the answer too. */
    assert_int_equal(dlb_recording_input(rec, Q_C3, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 1);
    assert_string_equal(in.oom_plans[0].plan_id, "plan-c-q1");
    /* Asked again: the same input, the same memory (nothing reallocated). */
    assert_int_equal(dlb_recording_input(rec, Q_C3, "dlbrain", NULL, &again), 0);
    assert_ptr_equal(again.oom_plans, in.oom_plans);
    assert_ptr_equal(again.job, in.job);
    assert_ptr_equal(again.history, in.history);
    assert_int_equal(again.oom_plans_cnt, 1);
    /* b-new has no OOM: nothing loaded for it. */
    assert_int_equal(dlb_recording_input(rec, Q_B1, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 0);

    /* Replay 2: rewind forgets every answer. c-q2 fixed first sees none, and
     * stays so when c-q1's answer comes after it was fixed. */
    dlb_recording_rewind(rec);
    assert_int_equal(dlb_recording_input(rec, Q_C2, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 0);
    assert_int_equal(dlb_recording_answer(rec, Q_C1, &plan1, &a), 0);
    assert_int_equal(dlb_recording_input(rec, Q_C2, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 0);
    /* c-q3, first asked now, sees it. */
    assert_int_equal(dlb_recording_input(rec, Q_C3, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 1);

    /* Replay 3: an answer made at c-q2's time (+40s) is not before c-q1
     * (+21s), nor before c-q2 itself; c-q3 (+50s) sees it. */
    dlb_recording_rewind(rec);
    assert_int_equal(dlb_recording_answer(rec, Q_C2, &plan2, &a), 0);
    assert_int_equal(dlb_recording_input(rec, Q_C1, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 0);
    assert_int_equal(dlb_recording_input(rec, Q_C2, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 0);
    assert_int_equal(dlb_recording_input(rec, Q_C3, "dlbrain", NULL, &in), 0);
    assert_int_equal(in.oom_plans_cnt, 1);
    assert_string_equal(in.oom_plans[0].plan_id, "plan-c-q2");
    assert_int_equal(in.oom_plans[0].event_time_ms, RC + 40000);
    dlb_recording_free(rec);
}

/* The replay the benchmark does, through the dlbrain router: c-q1 answers
 * the OOM c-k1 once; c-q2 names the same OOM, sees that answer and answers
 * nothing new. */
static void test_replay_through_router(void **state)
{
    dlb_recording_t *rec = load_fixture(&conf);
    dlb_oom_answers_t answered[Q__CNT];
    char err[512];
    (void)state;

    for (int round = 0; round < 2; round++) {
        dlb_recording_rewind(rec);
        for (size_t i = 0; i < Q__CNT; i++) {
            dlb_plan_t plan;
            dlb_opt_input_t in;

            memset(&plan, 0, sizeof(plan));
            assert_int_equal(dlb_recording_input(rec, i, "dlbrain", &answered[i], &in), 0);
            if (i == Q_C2) {
                assert_int_equal(in.oom_plans_cnt, 1);
                assert_string_equal(in.oom_plans[0].plan_id, "plan-c-q1");
            }
            if (dlb_router_plan(&in, &plan, err, sizeof(err)))
                fail_msg("request %zu: %s", i, err);
            snprintf(err, sizeof(err), "plan-%s", dlb_recording_request(rec, i)->event_id);
            assert_string_equal(plan.plan_id, err);
            assert_int_equal(dlb_recording_answer(rec, i, &plan, &answered[i]), 0);
            free(plan.groups);
            free(plan.pods);
            free(plan.actions);
        }
        assert_int_equal(answered[Q_C1].cnt, 1);
        assert_string_equal(answered[Q_C1].items[0].pod_name, "c-run-worker-0");
        assert_string_equal(answered[Q_C1].items[0].oom_event_id, "c-k1");
        assert_true(answered[Q_C1].items[0].memory > 8589934592LL); /* more than it had */
        assert_int_equal(answered[Q_C2].cnt, 0);
        assert_int_equal(answered[Q_B1].cnt, 0);
        assert_int_equal(answered[Q_D1].cnt, 0);
        for (size_t i = 0; i < Q__CNT; i++)
            free(answered[i].items);
    }
    dlb_recording_free(rec);
}

/* The similarity key is the requesting job's scenario as of the request, as
 * the consumer reads it from the job state it hands the router: y's meta came
 * before its request, x's only after (ms 3001 > 3000), so x, not knowing its
 * scenario yet, gets no history, exactly as the consumer would give it. */
static void test_history_scenario_as_of_request(void **state)
{
    static const char *const lines[] = {
        JOB("h-e1", 1000, "h", META("s1") STATE("succeeded")),
        JOB("y-e1", 2000, "y", META("s1") STATE("created")),
        REQ("y-q1", 2001, "y", "job_stage_create"),
        REQ("x-q1", 3000, "x", "job_stage_create"),
        JOB("x-e1", 3001, "x", META("s1") STATE("created")),
        NULL,
    };
    char *text = join(lines);
    dlb_recording_t *rec = load_ok(text, &conf);
    dlb_opt_input_t in;
    (void)state;

    free(text);
    assert_int_equal(dlb_recording_requests(rec), 2);
    /* x sorts before y: request 0 is x-q1. */
    assert_string_equal(dlb_recording_request(rec, 0)->event_id, "x-q1");
    assert_int_equal(dlb_recording_input(rec, 0, "dlrover", NULL, &in), 0);
    assert_string_equal(in.job->job.meta.scenario, "");
    assert_int_equal(in.history->jobs_cnt, 0);
    /* y-q1 (2001): h only; x was created after it. */
    assert_int_equal(dlb_recording_input(rec, 1, "dlrover", NULL, &in), 0);
    assert_string_equal(in.job->job.meta.scenario, "s1");
    assert_int_equal(in.history->jobs_cnt, 1);
    assert_string_equal(in.history->jobs[0].job_uid, "h");
    assert_int_equal(in.history->jobs[0].completed, 1);
    dlb_recording_free(rec);
}

#define GOOD_JOB JOB("j-1", 1000, "j", META("s1") STATE("created"))

static void test_errors(void **state)
{
    dlb_recording_t *rec = (dlb_recording_t *)1;
    char err[512] = "";
    (void)state;

    /* Cannot open. */
    assert_int_equal(
        dlb_recording_load(&rec, "/nonexistent-dlb/rec.jsonl", &conf, cat, err, sizeof(err)),
        DLB_ERR_GENERIC);
    assert_null(rec);
    assert_non_null(strstr(err, "/nonexistent-dlb/rec.jsonl: cannot open"));

    /* Not JSON on line 3 (line 2 is a comment: lines are counted anyway). */
    load_fails("# x\n" JOB("j-1", 1000, "j", "") "{\"type\":\"plan_request\",\"event_id\":\"q\"\n",
               DLB_ERR_DECODE, ":3: not valid JSON");
    /* A value the schema does not know: the stage. */
    load_fails(JOB("j-1", 1000, "j", "") REQ("q-1", 2000, "j", "job_stage_bogus"), DLB_ERR_INVALID,
               ":2: ");
    /* Strict: no event id is made up for a recording. */
    load_fails(GOOD_JOB "{\"type\":\"plan_request\",\"event_time_ms\":5,\"job_uid\":\"j\","
                        "\"stage\":\"job_stage_create\"}\n",
               DLB_ERR_DECODE, ":2: event_id");
    /* Nothing to plan: only job events and samples, a plan, or nothing. */
    load_fails(GOOD_JOB RT("r-1", 2000, "j", 1, 1), DLB_ERR_INVALID, "no plan request");
    load_fails("{\"type\":\"plan\",\"event_id\":\"p\",\"event_time_ms\":5,\"plan_id\":\"p\","
               "\"job_uid\":\"j\",\"stage\":\"job_stage_running\",\"optimizer\":\"o\","
               "\"reason\":\"r\",\"trigger_event_id\":\"x\"}\n",
               DLB_ERR_INVALID, "no plan request");
    load_fails("\n# only a comment\n", DLB_ERR_INVALID, "no plan request");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_order),
        cmocka_unit_test(test_create_history),
        cmocka_unit_test(test_fold_as_of_request),
        cmocka_unit_test(test_window_and_max_jobs),
        cmocka_unit_test(test_oom_answers),
        cmocka_unit_test(test_replay_through_router),
        cmocka_unit_test(test_history_scenario_as_of_request),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
