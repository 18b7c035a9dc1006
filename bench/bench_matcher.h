/* The matcher benchmark: matches per second of dlb_matcher_match alone (one
 * core, no I/O) against 10, 1,000 and 10,000 synthetic rules, beside the
 * plain scan of every rule (dlb_matcher_match_scan) in the same run.
 *
 * Rules and jobs come from a fixed seed, so every run sees the same ones.
 * Values: 200 users (each in one of 50 groups, each group in one of 20
 * namespaces), 100 apps (each with one of 4 frameworks, 30 scenarios and 12
 * job-name prefixes), 10 clusters; jobs are 16,384 instances of 5,000
 * recurring kinds (user, app, cluster), the kinds Zipf-distributed (s = 1),
 * each instance with its own name ("ctr-app-017-000042"). Rules draw their
 * values from the same distributions. They name 1 to 3 attributes (user,
 * app, user+app, ... by fixed weights), 1 value in 5 a list of 2-3; 10 % a
 * job's exact name, 3 % a name pattern (mostly "ctr-*", also
 * "rank-app-01?-*", "cv-app-0[0-4]?-*", "*-00000?"); 10 % have an Exclude,
 * 25 % a priority; each sets 1-3 of 64 Configure keys, 15 % of them objects
 * that merge. A shape naming one attribute alone stops at 2 rules per value:
 * a large rule set grows by specific rules (a user's app, a job), it does not
 * hold 50 rules for user-017 alone.
 *
 * The jobs to match are drawn (uniformly from the 16,384) before timing; the
 * one after the current is prefetched, as a consumer matches the job it has
 * just decoded, in cache, not one from a 32 MiB pool. */
#ifndef DLB_BENCH_MATCHER_H
#define DLB_BENCH_MATCHER_H

#include <signal.h>
#include <stdio.h>

#include <cJSON.h>

typedef struct dlb_bench_matcher_opts {
    double seconds;              /* timed seconds per rule count, for each path */
    FILE *out;                   /* the table */
    volatile sig_atomic_t *stop; /* NULL, or ends the run early when non-zero */
} dlb_bench_matcher_opts_t;

/** @brief For each rule count: generate the rules, compile them (timed),
 *         match every job once (warm-up, fills the cache), then call
 *         dlb_matcher_match on the drawn jobs for opts->seconds, then
 *         dlb_matcher_match_scan the same way. Throughput counts every call;
 *         latency percentiles come from every 64th matcher call and every
 *         scan call, timed one by one (the clock read included). Prints a
 *         header and two rows per rule count.
 *  @param opts    what to run
 *  @param json    NULL, or receives the results as a JSON object (the
 *                 caller's, for cJSON_Delete); NULL on error
 *  @param errstr  what went wrong, ready to log
 *  @returns 0 (also when *opts->stop ended the run early), or an error of
 *           dlb_matcher_new / dlb_matcher_match, or DLB_ERR_NOMEM. */
int dlb_bench_matcher(const dlb_bench_matcher_opts_t *opts, cJSON **json, char *errstr,
                      size_t errstr_size);

#endif
