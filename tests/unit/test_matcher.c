/* The configuration matcher: Include / Exclude semantics, precedence and
 * merge, each expectation worked out by hand; the cache; and the compiled
 * matcher against the plain scan of every rule on random rules and jobs.
 *
 * A result is compared as text, "<rule ids>|<key>=<json>@<source> ...", e.g.
 * "hi,lo|x=1@hi y=2@lo". */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "event.h"
#include "matcher.h"
#include "rules.h"

/* A job by its attributes; NULL is a missing one. */
typedef struct jspec {
    const char *user, *group, *app, *cluster, *ns, *scenario, *framework, *name;
} jspec_t;

static dlb_job_meta_t job_of(const jspec_t *s)
{
    dlb_job_meta_t j;

    memset(&j, 0, sizeof(j));
    snprintf(j.user, sizeof(j.user), "%s", s->user ? s->user : "");
    snprintf(j.group, sizeof(j.group), "%s", s->group ? s->group : "");
    snprintf(j.app, sizeof(j.app), "%s", s->app ? s->app : "");
    snprintf(j.cluster, sizeof(j.cluster), "%s", s->cluster ? s->cluster : "");
    snprintf(j.ns, sizeof(j.ns), "%s", s->ns ? s->ns : "");
    snprintf(j.scenario, sizeof(j.scenario), "%s", s->scenario ? s->scenario : "");
    snprintf(j.framework, sizeof(j.framework), "%s", s->framework ? s->framework : "");
    snprintf(j.name, sizeof(j.name), "%s", s->name ? s->name : "");
    return j;
}

/* Compiles YAML rules, then clears them: the matcher must hold its own copy. */
static dlb_matcher_t *compile(const char *yaml)
{
    dlb_rules_t rs;
    dlb_matcher_t *m = NULL;
    char err[512] = "";

    if (dlb_rules_parse("t.yaml", yaml, strlen(yaml), &rs, err, sizeof(err)))
        fail_msg("parse: %s\n%s", err, yaml);
    if (dlb_matcher_new(&m, &rs, err, sizeof(err)))
        fail_msg("compile: %s\n%s", err, yaml);
    assert_int_equal(dlb_matcher_rules(m), rs.cnt);
    dlb_rules_clear(&rs);
    return m;
}

/* A result as text (malloc'ed). */
static char *res_text(const dlb_match_t *r)
{
    size_t size = 64, len = 0;
    char *s;

    for (size_t i = 0; i < r->rule_ids_cnt; i++)
        size += strlen(r->rule_ids[i]) + 1;
    for (size_t i = 0; i < r->values_cnt; i++)
        size += strlen(r->values[i].key) + strlen(r->values[i].json) + strlen(r->sources[i]) + 3;
    s = malloc(size);
    assert_non_null(s);
    s[0] = '\0';
    for (size_t i = 0; i < r->rule_ids_cnt; i++)
        len += (size_t)snprintf(s + len, size - len, "%s%s", i ? "," : "", r->rule_ids[i]);
    len += (size_t)snprintf(s + len, size - len, "|");
    for (size_t i = 0; i < r->values_cnt; i++)
        len += (size_t)snprintf(s + len, size - len, "%s%s=%s@%s", i ? " " : "", r->values[i].key,
                                r->values[i].json, r->sources[i]);
    return s;
}

/* What is being checked, for failure messages. */
static const char *context = "";

/* The matcher's result for job as text, checked equal to the plain scan's. */
static char *match_text(dlb_matcher_t *m, const dlb_job_meta_t *job)
{
    dlb_match_t res, scan;
    char *got, *want;

    assert_int_equal(dlb_matcher_match(m, job, &res), 0);
    assert_int_equal(dlb_matcher_match_scan(m, job, &scan), 0);
    got = res_text(&res);
    want = res_text(&scan);
    if (strcmp(got, want))
        fail_msg("%s: matcher \"%s\", scan \"%s\"", context, got, want);
    free(want);
    return got;
}

static void expect(dlb_matcher_t *m, const jspec_t *js, const char *want)
{
    dlb_job_meta_t job = job_of(js);
    char *got = match_text(m, &job);

    if (strcmp(got, want))
        fail_msg("%s: got \"%s\", expected \"%s\"", context, got, want);
    free(got);
}

/* ---- Include / Exclude ------------------------------------------------------- */

/* One rule "r" (Configure x: 1) and a job: in scope or not. */
static const struct scope_case {
    const char *rule;
    jspec_t job;
    int in;
} scope_cases[] = {
    /* one value, a list, several attributes (all must match) */
    {"Include: {user: u1}\n", {.user = "u1"}, 1},
    {"Include: {user: u1}\n", {.user = "u2"}, 0},
    {"Include: {user: u1}\n", {.app = "a1"}, 0}, /* missing user: Include fails */
    {"Include: {user: [u1, u2]}\n", {.user = "u2"}, 1},
    {"Include: {user: [u1, u2]}\n", {.user = "u3"}, 0},
    {"Include: {user: u1, app: a1}\n", {.user = "u1", .app = "a1"}, 1},
    {"Include: {user: u1, app: a1}\n", {.user = "u1", .app = "a2"}, 0},
    {"Include: {user: u1, app: a1}\n", {.user = "u2", .app = "a1"}, 0},
    {"Include: {user: u1, app: a1}\n", {.user = "u1"}, 0},
    {"Include: {user: u1, group: g1, app: a1, cluster: c1, namespace: n1, scenario: s1,"
     " framework: tf, name: j1}\n",
     {"u1", "g1", "a1", "c1", "n1", "s1", "tf", "j1"},
     1},
    {"Include: {user: u1, group: g1, app: a1, cluster: c1, namespace: n1, scenario: s1,"
     " framework: tf, name: j1}\n",
     {"u1", "g1", "a1", "c1", "n2", "s1", "tf", "j1"},
     0},
    /* no Include, an empty one: every job, even one with no attribute */
    {"", {0}, 1},
    {"", {"u1", "g1", "a1", "c1", "n1", "s1", "tf", "j1"}, 1},
    {"Include:\n", {.user = "u9"}, 1},
    {"Include: {}\n", {.user = "u9"}, 1},
    /* Exclude: excludes only jobs it matches; a missing attribute matches not */
    {"Include: {user: u1}\nExclude: {cluster: c4}\n", {.user = "u1", .cluster = "c4"}, 0},
    {"Include: {user: u1}\nExclude: {cluster: c4}\n", {.user = "u1", .cluster = "c5"}, 1},
    {"Include: {user: u1}\nExclude: {cluster: c4}\n", {.user = "u1"}, 1},
    {"Exclude: {user: u9}\n", {.user = "u9"}, 0},
    {"Exclude: {user: u9}\n", {.user = "u1"}, 1},
    {"Exclude: {user: u9}\n", {0}, 1},
    {"Exclude: {cluster: [c4, c5]}\n", {.cluster = "c5"}, 0},
    /* Exclude with two attributes: only jobs matching both */
    {"Exclude: {cluster: c4, framework: tf}\n", {.cluster = "c4", .framework = "tf"}, 0},
    {"Exclude: {cluster: c4, framework: tf}\n", {.cluster = "c4", .framework = "pt"}, 1},
    {"Exclude: {cluster: c4, framework: tf}\n", {.cluster = "c5", .framework = "tf"}, 1},
    {"Exclude: {cluster: c4, framework: tf}\n", {.cluster = "c4"}, 1},
    /* empty Exclude: nobody */
    {"Include: {user: u1}\nExclude:\n", {.user = "u1"}, 1},
    {"Exclude: {}\n", {.user = "u1"}, 1},
    /* Include and Exclude on the same attribute */
    {"Include: {user: [u1, u2]}\nExclude: {user: u2}\n", {.user = "u1"}, 1},
    {"Include: {user: [u1, u2]}\nExclude: {user: u2}\n", {.user = "u2"}, 0},
    /* patterns: '*' (also empty), '?' (one character), '[ab]' */
    {"Include: {name: ctr-*}\n", {.name = "ctr-7"}, 1},
    {"Include: {name: ctr-*}\n", {.name = "ctr-"}, 1},
    {"Include: {name: ctr-*}\n", {.name = "xctr-7"}, 0},
    {"Include: {name: ctr-*}\n", {.name = "CTR-7"}, 0},
    {"Include: {name: ctr-*}\n", {.user = "u1"}, 0},
    {"Include: {user: '*'}\n", {.user = "u1"}, 1},
    {"Include: {user: '*'}\n", {.app = "a1"}, 0}, /* "*" does not match a missing value */
    {"Include: {name: job-?}\n", {.name = "job-a"}, 1},
    {"Include: {name: job-?}\n", {.name = "job-ab"}, 0},
    {"Include: {name: job-?}\n", {.name = "job-"}, 0},
    {"Include: {name: '[ab]x'}\n", {.name = "ax"}, 1},
    {"Include: {name: '[ab]x'}\n", {.name = "bx"}, 1},
    {"Include: {name: '[ab]x'}\n", {.name = "cx"}, 0},
    {"Include: {name: '*-[0-9]?'}\n", {.name = "a-b-12"}, 1},
    {"Include: {name: '*-[0-9]?'}\n", {.name = "a-b-x2"}, 0},
    {"Include: {name: [ctr-*, job-1]}\n", {.name = "job-1"}, 1},
    {"Include: {name: [ctr-*, job-1]}\n", {.name = "ctr-x"}, 1},
    {"Include: {name: [ctr-*, job-1]}\n", {.name = "job-2"}, 0},
    {"Exclude: {name: tmp-*}\n", {.name = "tmp-3"}, 0},
    {"Exclude: {name: tmp-*}\n", {.user = "u1"}, 1},
    {"Exclude: {name: tmp-*}\n", {.name = "x-tmp-3"}, 1},
    {"Include: {user: u1}\nExclude: {name: '*-debug', cluster: c1}\n",
     {.user = "u1", .cluster = "c1", .name = "j-debug"},
     0},
    {"Include: {user: u1}\nExclude: {name: '*-debug', cluster: c1}\n",
     {.user = "u1", .cluster = "c2", .name = "j-debug"},
     1},
    /* a backslash escapes: 'a\*' is the two characters a* */
    {"Include: {name: 'a\\*'}\n", {.name = "a*"}, 1},
    {"Include: {name: 'a\\*'}\n", {.name = "ab"}, 0},
    /* a job value is never a pattern; a value without *?[ compares exactly */
    {"Include: {user: u1}\n", {.user = "u*"}, 0},
    {"Include: {user: 'u*'}\n", {.user = "u*"}, 1},
    {"Include: {app: a.b}\n", {.app = "axb"}, 0},
    {"Include: {app: a.b}\n", {.app = "a.b"}, 1},
    /* case-sensitive, exact and pattern */
    {"Include: {user: Alice}\n", {.user = "alice"}, 0},
    {"Include: {user: Alice}\n", {.user = "Alice"}, 1},
    {"Include: {app: 'Train-*'}\n", {.app = "train-1"}, 0},
    {"Include: {app: 'Train-*'}\n", {.app = "Train-1"}, 1},
};

static void test_scope_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(scope_cases) / sizeof(scope_cases[0]); i++) {
        const struct scope_case *c = &scope_cases[i];
        char yaml[512];
        dlb_matcher_t *m;

        snprintf(yaml, sizeof(yaml), "id: r\n%sConfigure: {x: 1}\n", c->rule);
        m = compile(yaml);
        context = c->rule;
        expect(m, &c->job, c->in ? "r|x=1@r" : "|");
        context = "";
        dlb_matcher_destroy(m);
    }
}

/* Many rules on the same values: the index keeps bitsets for frequent values
 * and lists for rare ones; both give the same answers. Rules f0..f39 include
 * user u1; rule f<i> also needs app a<i%2>; every 5th excludes cluster c1.
 * Job (u1, a0, c1): even i, less multiples of 5 (i % 10 == 0): 2 4 6 8 12 ... */
static void test_scope_frequent_values(void **state)
{
    char yaml[16384], want[1024];
    size_t len = 0, wlen = 0;
    dlb_matcher_t *m;
    (void)state;

    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(yaml + len, sizeof(yaml) - len,
                                "---\nid: f%d\nInclude: {user: u1, app: a%d}\n%s", i, i % 2,
                                i % 5 == 0 ? "Exclude: {cluster: c1}\n" : "");
    /* Same priority and specificity (2 or 3): later first within each. */
    for (int spec = 3; spec >= 2; spec--)
        for (int i = 39; i >= 0; i--)
            if (i % 2 == 0 && (i % 5 == 0 ? 3 : 2) == spec && i % 10 != 0)
                wlen +=
                    (size_t)snprintf(want + wlen, sizeof(want) - wlen, "%sf%d", wlen ? "," : "", i);
    snprintf(want + wlen, sizeof(want) - wlen, "|");
    m = compile(yaml);
    expect(m, &(jspec_t){.user = "u1", .app = "a0", .cluster = "c1"}, want);
    /* App a1, cluster c2: the odd rules, none excluded; the multiples of 5
     * first (specificity 3: their Exclude counts). */
    expect(m, &(jspec_t){.user = "u1", .app = "a1", .cluster = "c2"},
           "f35,f25,f15,f5,f39,f37,f33,f31,f29,f27,f23,f21,f19,f17,f13,f11,f9,f7,f3,f1|");
    expect(m, &(jspec_t){.user = "u2", .app = "a1"}, "|");
    dlb_matcher_destroy(m);
}

/* ---- precedence and merge ---------------------------------------------------- */

/* Priority first, then specificity, then the later rule. */
static void test_precedence(void **state)
{
    dlb_matcher_t *m = compile("id: broad-high\n"
                               "Priority: 5\n"
                               "Configure: {x: 1}\n"
                               "---\n"
                               "id: specific\n"
                               "Include: {user: u1, app: a1}\n"
                               "Configure: {x: 2, y: 2}\n"
                               "---\n"
                               "id: later\n"
                               "Include: {user: u1}\n"
                               "Configure: {x: 3, y: 3, z: 3}\n");
    (void)state;

    /* broad-high (priority 5), specific (0, 2 attributes), later (0, 1) */
    expect(m, &(jspec_t){.user = "u1", .app = "a1"},
           "broad-high,specific,later|x=1@broad-high y=2@specific z=3@later");
    expect(m, &(jspec_t){.user = "u1"}, "broad-high,later|x=1@broad-high y=3@later z=3@later");
    expect(m, &(jspec_t){.user = "u2"}, "broad-high|x=1@broad-high");
    dlb_matcher_destroy(m);
}

/* Specificity counts Include and Exclude attributes together; a tie goes to
 * the later rule; a lower priority loses whatever its specificity. */
static void test_specificity_and_order(void **state)
{
    dlb_matcher_t *m = compile("id: a\n"
                               "Include: {user: u1}\n"
                               "Exclude: {cluster: c9}\n"
                               "Configure: {k: a}\n"
                               "---\n"
                               "id: b\n"
                               "Include: {user: u1, app: a1}\n"
                               "Configure: {k: b}\n"
                               "---\n"
                               "id: c\n"
                               "Include: {user: u1}\n"
                               "Configure: {k: c, only_c: true}\n"
                               "---\n"
                               "id: d\n"
                               "Priority: -1\n"
                               "Include: {user: u1, app: a1, cluster: c1}\n"
                               "Configure: {k: d, only_d: null}\n");
    (void)state;

    /* a and b both 2 attributes: b is later; c 1; d priority -1 */
    expect(m, &(jspec_t){.user = "u1", .app = "a1", .cluster = "c1"},
           "b,a,c,d|k=\"b\"@b only_c=true@c only_d=null@d");
    /* cluster c9: a excluded, d out (needs c1) */
    expect(m, &(jspec_t){.user = "u1", .app = "a1", .cluster = "c9"},
           "b,c|k=\"b\"@b only_c=true@c");
    /* no app: b and d out, a (2) before c (1) */
    expect(m, &(jspec_t){.user = "u1"}, "a,c|k=\"a\"@a only_c=true@c");
    dlb_matcher_destroy(m);
}

/* Three rules for every job, lowest first in the file:
 *   res:  low {worker {cpu 1, memory 2}, ps {cpu 1}}; mid {worker {cpu 4},
 *         chief 1}; high {ps 8, worker {gpu 1}}
 *         -> worker merges in all three: cpu 4 (mid over low), memory 2
 *            (low), gpu 1 (high), in the order low, then new keys going up;
 *            ps: high's scalar replaces low's object; chief from mid.
 *   env:  a list: mid's replaces low's whole, no concatenation.
 *   mode: low {x 1}, mid 5, high {y 2}: the scalar cut the chain, so high's
 *         object does not merge with low's: {"y":2}.
 *   opts: only low.
 *   k1:   high's object on mid's list: replaced, not merged.
 *   deep: the same one level down: w is low {a 1}, mid 5, high {b 2}: high's
 *         object alone, while v merges through all three. */
static void test_merge(void **state)
{
    dlb_matcher_t *m = compile("id: low\n"
                               "Priority: 1\n"
                               "Configure:\n"
                               "  res: {worker: {cpu: 1, memory: 2}, ps: {cpu: 1}}\n"
                               "  env: [a]\n"
                               "  mode: {x: 1}\n"
                               "  opts: {keep: 1}\n"
                               "  deep: {v: {l: 1}, w: {a: 1}}\n"
                               "---\n"
                               "id: mid\n"
                               "Priority: 2\n"
                               "Configure:\n"
                               "  res: {worker: {cpu: 4}, chief: 1}\n"
                               "  env: [b, c]\n"
                               "  mode: 5\n"
                               "  k1: [1]\n"
                               "  deep: {w: 5, v: {m: 1}}\n"
                               "---\n"
                               "id: high\n"
                               "Priority: 3\n"
                               "Configure:\n"
                               "  res: {ps: 8, worker: {gpu: 1}}\n"
                               "  mode: {y: 2}\n"
                               "  k1: {z: 1}\n"
                               "  deep: {w: {b: 2}, v: {h: 1}}\n");
    (void)state;

    expect(m, &(jspec_t){0},
           "high,mid,low|deep={\"v\":{\"l\":1,\"m\":1,\"h\":1},\"w\":{\"b\":2}}@high "
           "env=[\"b\",\"c\"]@mid k1={\"z\":1}@high mode={\"y\":2}@high "
           "opts={\"keep\":1}@low "
           "res={\"worker\":{\"cpu\":4,\"memory\":2,\"gpu\":1},\"ps\":8,\"chief\":1}@high");
    dlb_matcher_destroy(m);
}

/* Only two of three objects merge when the middle rule is out of scope; a
 * merged object keeps every member's text as written (1.0, 23 digits). */
static void test_merge_in_scope_only(void **state)
{
    dlb_matcher_t *m = compile("id: n1\n"
                               "Configure: {o: {a: 1.0, big: 12345678901234567890123}}\n"
                               "---\n"
                               "id: n2\n"
                               "Include: {app: a1}\n"
                               "Configure: {o: {a: 2, n: {x: 1}}}\n"
                               "---\n"
                               "id: n3\n"
                               "Priority: 1\n"
                               "Configure: {o: {b: 0x1F, n: {y: 2}}}\n");
    (void)state;

    /* n3, n2 (1 attribute), n1: n1's members, then n2's and n3's new ones */
    expect(m, &(jspec_t){.app = "a1"},
           "n3,n2,n1|o={\"a\":2,\"big\":12345678901234567890123,\"n\":{\"x\":1,\"y\":2},"
           "\"b\":31}@n3");
    expect(m, &(jspec_t){.app = "a2"},
           "n3,n1|o={\"a\":1.0,\"big\":12345678901234567890123,\"b\":31,\"n\":{\"y\":2}}@n3");
    dlb_matcher_destroy(m);
}

/* Keys bytewise: 'B' (66) < '_' (95) < 'a' (97) < 'b'; "a" < "a.b" < "a_b". */
static void test_key_order(void **state)
{
    dlb_matcher_t *m = compile("id: r\nConfigure: {b: 1, a_b: 2, B: 3, a.b: 4, _: 5, a: 6}\n");
    (void)state;

    expect(m, &(jspec_t){0}, "r|B=3@r _=5@r a=6@r a.b=4@r a_b=2@r b=1@r");
    dlb_matcher_destroy(m);
}

/* A rule in scope without Configure is listed; a job in no rule's scope gets
 * nothing; an empty rule set matches nothing. */
static void test_nothing(void **state)
{
    dlb_matcher_t *m = compile("id: bare\nInclude: {user: u1}\n---\n"
                               "id: other\nInclude: {user: u2}\nConfigure: {x: 1}\n");
    dlb_rules_t none = {NULL, 0};
    dlb_match_t res;
    char err[256];
    (void)state;

    expect(m, &(jspec_t){.user = "u1"}, "bare|");
    expect(m, &(jspec_t){.user = "u3"}, "|");
    dlb_matcher_destroy(m);

    assert_int_equal(dlb_matcher_new(&m, &none, err, sizeof(err)), 0);
    assert_int_equal(dlb_matcher_rules(m), 0);
    expect(m, &(jspec_t){.user = "u1"}, "|");
    assert_int_equal(dlb_matcher_match(m, &(dlb_job_meta_t){{0}}, &res), 0);
    assert_int_equal(res.rule_ids_cnt, 0);
    assert_int_equal(res.values_cnt, 0);
    dlb_matcher_destroy(m);
    dlb_matcher_destroy(NULL);
}

/* ---- errors ----------------------------------------------------------------- */

static void expect_invalid(dlb_rules_t *rs, const char *msg)
{
    dlb_matcher_t *m = (dlb_matcher_t *)1;
    char err[256] = "";

    assert_int_equal(dlb_matcher_new(&m, rs, err, sizeof(err)), DLB_ERR_INVALID);
    assert_null(m);
    assert_string_equal(err, msg);
}

static void test_errors(void **state)
{
    char id[] = "r1", key[] = "k", attr[] = "user", bad_attr[] = "colour", v[] = "u1";
    char *vals[] = {v};
    char json_bad[] = "{\"a\":", json_dup[] = "{\"a\":1,\"b\":{\"c\":1,\"c\":2}}",
         json_trailing[] = "1 2";
    dlb_config_value_t cfg = {key, json_bad};
    dlb_rule_match_t inc[2] = {{attr, vals, 1}, {attr, vals, 1}};
    dlb_rule_t rule = {.id = id, .configure = &cfg, .configure_cnt = 1};
    dlb_rules_t rs = {&rule, 1};
    (void)state;

    expect_invalid(&rs, "rule r1: Configure k: not valid JSON (at byte 5)");
    cfg.json = json_trailing;
    expect_invalid(&rs, "rule r1: Configure k: not valid JSON (at byte 2)");
    cfg.json = json_dup;
    expect_invalid(&rs, "rule r1: Configure k: a key occurs twice");
    rule.configure_cnt = 0;
    rule.include = inc;
    rule.include_cnt = 2;
    expect_invalid(&rs, "rule r1: Include: attribute user named twice");
    inc[0].attr = bad_attr;
    rule.include_cnt = 1;
    expect_invalid(&rs, "rule r1: Include: unknown attribute \"colour\"");
    rule.include_cnt = 0;
    rule.exclude = inc;
    rule.exclude_cnt = 1;
    expect_invalid(&rs, "rule r1: Exclude: unknown attribute \"colour\"");
    rule.id = NULL;
    expect_invalid(&rs, "rule 1 has no id");
}

/* ---- the cache ---------------------------------------------------------------- */

/* The same job gives the same result, from the cache the second time. */
static void test_cache_repeat(void **state)
{
    dlb_matcher_t *m = compile("id: u\nInclude: {user: u1}\nConfigure: {o: {a: 1}}\n---\n"
                               "id: g\nInclude: {group: g1}\nConfigure: {o: {b: 2}}\n");
    dlb_job_meta_t a = job_of(&(jspec_t){.user = "u1", .group = "g1"}),
                   b = job_of(&(jspec_t){.user = "u1"});
    dlb_matcher_stats_t st;
    char *first, *other, *again;
    (void)state;

    first = match_text(m, &a);
    other = match_text(m, &b);
    again = match_text(m, &a);
    assert_string_equal(first, "g,u|o={\"a\":1,\"b\":2}@g");
    assert_string_equal(other, "u|o={\"a\":1}@u");
    assert_string_equal(again, first);
    dlb_matcher_stats(m, &st);
    assert_int_equal(st.matches, 3);
    assert_int_equal(st.cache_misses, 2);
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(st.cache_entries, 2);
    free(first);
    free(other);
    free(again);
    dlb_matcher_destroy(m);
}

/* Jobs that hit the same index entries share the context cache: the second
 * job differs only in attributes no rule names (its name, its app) and gets
 * the first one's result without a rule set computed; a job that hits
 * nothing is cached as "no rule" too. */
static void test_context_cache(void **state)
{
    dlb_matcher_t *m = compile("id: u\nInclude: {user: u1}\nConfigure: {k: 1}\n---\n"
                               "id: c\nInclude: {name: \"ctr-*\"}\nConfigure: {k: 2}\n");
    dlb_job_meta_t a = job_of(&(jspec_t){.user = "u1", .name = "ctr-1", .app = "x"}),
                   b = job_of(&(jspec_t){.user = "u1", .name = "ctr-2", .app = "y"}),
                   c = job_of(&(jspec_t){.user = "u9", .name = "bert-1"}),
                   d = job_of(&(jspec_t){.user = "u8", .name = "bert-2"});
    dlb_matcher_stats_t st;
    char *ra, *rb, *rc, *rd;
    (void)state;

    /* Both rules: the later one (c) first at equal priority and specificity. */
    ra = match_text(m, &a);
    rb = match_text(m, &b);
    rc = match_text(m, &c);
    rd = match_text(m, &d);
    assert_string_equal(ra, "c,u|k=2@c");
    assert_string_equal(rb, ra);
    assert_string_equal(rc, "|");
    assert_string_equal(rd, "|");
    dlb_matcher_stats(m, &st);
    assert_int_equal(st.matches, 4);
    /* a: miss (a new rule set); b: the same context, a hit; c: no rule, not a
     * rule set (neither); d: the same empty context as c, a hit. */
    assert_int_equal(st.cache_misses, 1);
    assert_int_equal(st.cache_hits, 2);
    free(ra);
    free(rb);
    free(rc);
    free(rd);
    dlb_matcher_destroy(m);
}

/* 16 user rules, 16 app rules, 16 cluster rules and 2 namespace rules, in
 * that order (so namespace first, users last): 16 * 16 * 16 * 2 = 8192 rule
 * sets, twice the cache. Each rule sets its own key and a member of "o". */
static void test_cache_eviction(void **state)
{
    static const char *const kinds[4][2] = {
        {"user", "u"}, {"app", "a"}, {"cluster", "c"}, {"namespace", "n"}};
    size_t size = 1 << 16, len = 0;
    char *yaml = malloc(size), want[256], v[4][8];
    dlb_matcher_stats_t st;
    dlb_matcher_t *m;
    (void)state;

    assert_non_null(yaml);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < (k == 3 ? 2 : 16); i++)
            len += (size_t)snprintf(yaml + len, size - len,
                                    "---\nid: %s%d\nInclude: {%s: %s%d}\n"
                                    "Configure: {%s_k: %d, o: {%s: %d}}\n",
                                    kinds[k][1], i, kinds[k][0], kinds[k][1], i, kinds[k][0], i,
                                    kinds[k][1], i);
    m = compile(yaml);
    free(yaml);
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < 8192; j++) {
            int u = j % 16, a = j / 16 % 16, c = j / 256 % 16, n = j / 4096;
            snprintf(v[0], sizeof(v[0]), "u%d", u);
            snprintf(v[1], sizeof(v[1]), "a%d", a);
            snprintf(v[2], sizeof(v[2]), "c%d", c);
            snprintf(v[3], sizeof(v[3]), "n%d", n);
            snprintf(want, sizeof(want),
                     "n%d,c%d,a%d,u%d|app_k=%d@a%d cluster_k=%d@c%d namespace_k=%d@n%d "
                     "o={\"u\":%d,\"a\":%d,\"c\":%d,\"n\":%d}@n%d user_k=%d@u%d",
                     n, c, a, u, a, a, c, c, n, n, u, a, c, n, n, u, u);
            expect(m, &(jspec_t){.user = v[0], .app = v[1], .cluster = v[2], .ns = v[3]}, want);
        }
    dlb_matcher_stats(m, &st);
    assert_int_equal(st.matches, 2 * 8192);
    assert_int_equal(st.cache_hits + st.cache_misses, 2 * 8192);
    assert_true(st.cache_evictions > 0);
    assert_true(st.cache_entries <= DLB_MATCHER_CACHE_ENTRIES);
    assert_int_equal(st.cache_misses - st.cache_evictions, st.cache_entries);
    dlb_matcher_destroy(m);
}

/* ---- compiled = scan ------------------------------------------------------------ */

/* nrand48(3): the same draws on every platform. */
typedef struct rng {
    unsigned short x[3];
} rng_t;

static unsigned rnd(rng_t *r, unsigned n)
{
    return (unsigned)nrand48(r->x) % n;
}

static const char *const attr_names[8] = {"user",      "group",    "app",       "cluster",
                                          "namespace", "scenario", "framework", "name"};

/* A value of a small vocabulary, so rules and jobs meet often: v0..v4, and
 * in rules also patterns. */
static const char *rule_value(rng_t *r)
{
    static const char *const vals[] = {"v0",   "v1",     "v2",  "v3",     "'v*'",
                                       "'?1'", "'[v]2'", "'*'", "'v[!0]'"};
    return rnd(r, 3) ? vals[rnd(r, 4)] : vals[rnd(r, 9)];
}

static const char *json_value(rng_t *r)
{
    static const char *const vals[] = {"1",
                                       "'s'",
                                       "[1, 2]",
                                       "{a: 1}",
                                       "{a: {b: 2}, c: 3}",
                                       "{b: [3], a: {c: 1}}",
                                       "{c: {b: {a: 1}}}",
                                       "null",
                                       "2.50"};
    return vals[rnd(r, 9)];
}

static size_t random_section(rng_t *r, char *buf, size_t size, const char *section, int max_attrs)
{
    int n = 1 + (int)rnd(r, (unsigned)max_attrs), used = 0;
    size_t len = (size_t)snprintf(buf, size, "%s:\n", section);

    for (int i = 0; i < n; i++) {
        int a = (int)rnd(r, 8), cnt = 1 + (int)rnd(r, 3);
        if (used & (1 << a))
            continue;
        used |= 1 << a;
        len += (size_t)snprintf(buf + len, size - len, "  %s: [", attr_names[a]);
        for (int j = 0; j < cnt; j++)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", j ? ", " : "", rule_value(r));
        len += (size_t)snprintf(buf + len, size - len, "]\n");
    }
    return len;
}

static char *random_rules(rng_t *r, int n)
{
    size_t size = (size_t)n * 512 + 64, len = 0;
    char *yaml = malloc(size);

    assert_non_null(yaml);
    yaml[0] = '\0';
    for (int i = 0; i < n; i++) {
        int keys = 1 + (int)rnd(r, 3), used = 0;
        len += (size_t)snprintf(yaml + len, size - len, "---\nid: p%d\nPriority: %d\n", i,
                                (int)rnd(r, 4) - 1);
        if (rnd(r, 5))
            len += random_section(r, yaml + len, size - len, "Include", 3);
        if (!rnd(r, 3))
            len += random_section(r, yaml + len, size - len, "Exclude", 2);
        len += (size_t)snprintf(yaml + len, size - len, "Configure:\n");
        for (int k = 0; k < keys; k++) {
            int key = (int)rnd(r, 6);
            if (used & (1 << key))
                continue;
            used |= 1 << key;
            len += (size_t)snprintf(yaml + len, size - len, "  k%d: %s\n", key, json_value(r));
        }
    }
    return yaml;
}

static dlb_job_meta_t random_job(rng_t *r)
{
    static const char *const vals[] = {"v0", "v1", "v2", "v3", "v4", "x1", "v*"};
    const char *v[8];

    for (int a = 0; a < 8; a++)
        v[a] = rnd(r, 6) ? vals[rnd(r, 7)] : NULL;
    return job_of(&(jspec_t){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]});
}

/* Random rule sets of 1 to 2000 rules (lists for rare values, bitsets for
 * frequent ones, patterns, Exclude, nested objects), random jobs drawn from
 * a pool so the cache is hit too: the matcher equals the scan every time. */
static void test_compiled_equals_scan(void **state)
{
    static const int sizes[] = {1, 7, 60, 300, 2000};
    rng_t r = {{2024, 6, 7}};
    (void)state;

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        char *yaml = random_rules(&r, sizes[s]);
        dlb_matcher_t *m = compile(yaml);
        dlb_job_meta_t pool[200];
        dlb_matcher_stats_t st;
        size_t in_scope = 0;

        free(yaml);
        for (int i = 0; i < 200; i++)
            pool[i] = random_job(&r);
        for (int i = 0; i < (sizes[s] >= 2000 ? 600 : 2000); i++) {
            char *t = match_text(m, &pool[rnd(&r, 200)]);
            in_scope += strchr(t, '|') != t;
            free(t);
        }
        dlb_matcher_stats(m, &st);
        print_message("%d rules: %zu of %" PRIu64 " matches with rules in scope, %" PRIu64
                      " cache hits\n",
                      sizes[s], in_scope, st.matches, st.cache_hits);
        assert_true(sizes[s] < 60 || (in_scope > st.matches / 2 && st.cache_hits > 0));
        dlb_matcher_destroy(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scope_table),
        cmocka_unit_test(test_scope_frequent_values),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_specificity_and_order),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_merge_in_scope_only),
        cmocka_unit_test(test_key_order),
        cmocka_unit_test(test_nothing),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cache_repeat),
        cmocka_unit_test(test_cache_eviction),
        cmocka_unit_test(test_context_cache),
        cmocka_unit_test(test_compiled_equals_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
