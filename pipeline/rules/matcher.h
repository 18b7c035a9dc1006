/* The configuration matcher: which rules (pipeline/rules/rules.h) apply to a job,
 * and the Configure values they give it, merged.
 *
 * Semantics (the seed's Include / Exclude / Configure, DLRover reference
 * section 6):
 * - A rule's Include part matches a job when, for every attribute it names,
 *   the job's value is one of the listed values. Its Exclude part matches
 *   the same way (every attribute it names). A job is in the rule's scope
 *   when Include matches (an empty or missing Include matches every job) and
 *   Exclude does not (an empty or missing Exclude excludes nobody): in_scope
 *   = include(job) && !(has_exclude && exclude(job)), as in DLRover.
 * - A listed value containing '*', '?' or '[' is a shell pattern (fnmatch(3),
 *   no flags): "ctr-*" selects every job name starting with "ctr-". Other
 *   values compare exactly (case-sensitive).
 * - A job attribute that is missing (empty string) equals no value and
 *   matches no pattern, not even "*": an Include on it fails, an Exclude on it
 *   does not exclude. Likewise an empty listed value matches no job.
 * - Precedence among the rules in scope: higher Priority first; then the
 *   more specific first (more attributes named in Include and Exclude
 *   together); then the one that comes later in the rule set (a later file of
 *   an apply overrides an earlier one, like overriding config files).
 * - Merge: Configure maps are applied from the lowest precedence to the
 *   highest. A key set by a higher rule replaces the lower one's value, except
 *   that when both values are JSON objects they merge key by key, recursively,
 *   by the same rule. Lists and scalars are replaced whole, never
 *   concatenated. So on a conflict the rule of higher precedence wins, and
 *   every key only lower rules set is kept. A value no merge touched is the
 *   rule's JSON text byte for byte; a merged object is printed compact, its
 *   members in the lower object's order with the higher one's new members
 *   after them, every member no merge touched as its rule wrote it (1.0
 *   stays 1.0, big integers keep their digits).
 *
 * Speed: rules are compiled into per-attribute indexes (a hash of exact
 *   values to the rules that list them, and a bitset of the rules that do not
 *   name the attribute), so a match intersects a few bitsets instead of
 *   scanning every rule; pattern values are tested one by one. The merged
 *   values of a set of matching rules are computed once and cached in the
 *   matcher (DLB_MATCHER_CACHE_ENTRIES sets, least recently used evicted),
 *   since many jobs share the same set. In front of that, a context cache:
 *   what a job's attributes hit in the index (the entry of each value, the
 *   patterns each matches) decides its rule set, so a job hitting the same
 *   entries as an earlier one (another instance of the same kind of job,
 *   whatever its own name) gets that result without intersecting bitsets.
 *
 * Pure and single-threaded: no I/O; a matcher is used by one thread at a time. */
#ifndef DLB_MATCHER_H
#define DLB_MATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "rules.h"

/* Rule sets whose merged result the matcher keeps (8-way set-associative,
 * least recently used evicted). Enough for the distinct sets a cluster's
 * recurring jobs fall into: 16,384 jobs of 5,000 kinds against 10,000 rules
 * (bench/bench_matcher.h) make about 4,500, which 4,096 entries could
 * not hold (92.7 % hits, against 99.6 %). An entry holds pointers for its
 * rules and values: about 2.5 KiB for 35 rules and 40 values, so some 20 MiB
 * when full at that size. */
#define DLB_MATCHER_CACHE_ENTRIES 8192

typedef struct dlb_matcher dlb_matcher_t;

/* A match result. Everything points into the matcher and stays valid until
 * the next dlb_matcher_match() on it or dlb_matcher_destroy(). */
typedef struct dlb_match {
    const char *const *rule_ids; /* the rules in scope, highest precedence first */
    size_t rule_ids_cnt;
    const dlb_config_value_t *values; /* merged Configure, keys sorted bytewise */
    size_t values_cnt;
    const char *const *sources; /* sources[i]: id of the rule that set values[i]
                                   (the highest one when objects were merged) */
} dlb_match_t;

/** @brief Compile rules into a matcher. The rules are copied: rules may be
 *         cleared afterwards.
 *  @param out     the matcher, for dlb_matcher_destroy(); NULL on error
 *  @param rules   the rule set, in its applied order (the precedence tie-break)
 *  @param errstr  what went wrong
 *  @returns 0, DLB_ERR_INVALID (a Configure value that is not valid JSON,
 *           naming the rule and key, or a JSON object in it with a key twice;
 *           an attribute that is not one of the eight, or named twice in one
 *           section; a rule without an id),
 *           DLB_ERR_NOMEM. */
int dlb_matcher_new(dlb_matcher_t **out, const dlb_rules_t *rules, char *errstr,
                    size_t errstr_size);

/** @brief Release a matcher (NULL is fine). */
void dlb_matcher_destroy(dlb_matcher_t *m);

/** @returns the number of rules compiled. */
size_t dlb_matcher_rules(const dlb_matcher_t *m);

/** @brief Match a job by its attributes (user, group, app, cluster,
 *         namespace, scenario, framework, name: the job meta of event.h).
 *  @param m    the matcher
 *  @param job  the job's attributes; empty strings are missing attributes
 *  @param res  filled (see dlb_match_t for lifetime); no rule in scope gives
 *              0 rule ids and 0 values
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_matcher_match(dlb_matcher_t *m, const dlb_job_meta_t *job, dlb_match_t *res);

/** @brief The same result as dlb_matcher_match() by the plain way: every rule
 *         tested against the job in turn, the Configure maps of the rules in
 *         scope merged one after the other, no index and no cache. The
 *         reference the tests compare with and the benchmark's baseline.
 *  @param m    the matcher (its compiled rules; its cache is not used)
 *  @param job  the job's attributes
 *  @param res  filled; valid until the next dlb_matcher_match_scan() on m or
 *              dlb_matcher_destroy()
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_matcher_match_scan(dlb_matcher_t *m, const dlb_job_meta_t *job, dlb_match_t *res);

typedef struct dlb_matcher_stats {
    uint64_t matches;         /* successful dlb_matcher_match() calls */
    uint64_t cache_hits;      /* of those with at least one rule in scope */
    uint64_t cache_misses;    /* the same: merged anew */
    uint64_t cache_evictions; /* results dropped to make room */
    size_t cache_entries;     /* results held now */
} dlb_matcher_stats_t;

/** @brief Counters since dlb_matcher_new(), for benchmarks and metrics. */
void dlb_matcher_stats(const dlb_matcher_t *m, dlb_matcher_stats_t *out);

#endif
