/* Configuration rules YAML: the design's example, value lists, Configure
 * values as exact JSON text, documents and sequences, ids, every error with
 * its exact file:line:col, and nothing returned on error. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "rules.h"

static dlb_rules_t parse_ok(const char *name, const char *text)
{
    dlb_rules_t rs;
    char err[512] = "";
    int rc = dlb_rules_parse(name, text, strlen(text), &rs, err, sizeof(err));

    if (rc)
        fail_msg("%s: rc %d: %s\n%s", name, rc, err, text);
    return rs;
}

static void assert_match(const dlb_rule_match_t *m, const char *attr, size_t cnt, ...)
{
    va_list ap;

    assert_string_equal(m->attr, attr);
    assert_int_equal(m->values_cnt, cnt);
    va_start(ap, cnt);
    for (size_t i = 0; i < cnt; i++)
        assert_string_equal(m->values[i], va_arg(ap, const char *));
    va_end(ap);
}

/* The example of dlrover-brain-design.md, verbatim. */
static void test_design_example(void **state)
{
    dlb_rules_t rs = parse_ok("seed.yaml", "Include:\n"
                                           "  User: \"user1\"\n"
                                           "  Group: \"group2\"\n"
                                           "Exclude:\n"
                                           "  Cluster: \"cluster4\"\n"
                                           "Configure:\n"
                                           "  A: 1\n"
                                           "  B: \"C\"\n");
    const dlb_rule_t *r;
    (void)state;

    assert_int_equal(rs.cnt, 1);
    r = &rs.rules[0];
    assert_string_equal(r->id, "seed.yaml#1");
    assert_int_equal(r->priority, 0);
    assert_int_equal(r->line, 1);
    assert_int_equal(r->include_cnt, 2);
    assert_match(&r->include[0], "user", 1, "user1");
    assert_match(&r->include[1], "group", 1, "group2");
    assert_int_equal(r->exclude_cnt, 1);
    assert_match(&r->exclude[0], "cluster", 1, "cluster4");
    assert_int_equal(r->configure_cnt, 2);
    assert_string_equal(r->configure[0].key, "A");
    assert_string_equal(r->configure[0].json, "1");
    assert_string_equal(r->configure[1].key, "B");
    assert_string_equal(r->configure[1].json, "\"C\"");
    dlb_rules_clear(&rs);
    assert_null(rs.rules);
    assert_int_equal(rs.cnt, 0);
    dlb_rules_clear(&rs); /* twice is fine */
}

static void test_value_lists_ok(void **state)
{
    dlb_rules_t rs = parse_ok("lists.yaml", "Include:\n"
                                            "  user: [u1, \"u2\", 'u3']\n"
                                            "  NAME:\n"
                                            "    - \"train-*\"\n"
                                            "    - job-?\n"
                                            "  Framework: 42\n"
                                            "Exclude:\n"
                                            "  namespace: [kube-system]\n"
                                            "  scenario: s\n"
                                            "  app: a\n");
    const dlb_rule_t *r = &rs.rules[0];
    (void)state;

    assert_int_equal(rs.cnt, 1);
    assert_int_equal(r->include_cnt, 3);
    assert_match(&r->include[0], "user", 3, "u1", "u2", "u3");
    assert_match(&r->include[1], "name", 2, "train-*", "job-?");
    assert_match(&r->include[2], "framework", 1, "42");
    assert_int_equal(r->exclude_cnt, 3);
    assert_match(&r->exclude[0], "namespace", 1, "kube-system");
    assert_match(&r->exclude[1], "scenario", 1, "s");
    assert_match(&r->exclude[2], "app", 1, "a");
    assert_int_equal(r->configure_cnt, 0);
    dlb_rules_clear(&rs);
}

static const struct {
    const char *yaml; /* the value of Configure key k */
    const char *json;
} json_cases[] = {
    {"1", "1"},
    {"-17", "-17"},
    {"+5", "5"},
    {"0", "0"},
    {"1_000", "1000"},
    {"12345678901234567890123", "12345678901234567890123"},
    {"0x1F", "31"},
    {"-0x1f", "-31"},
    {"010", "8"},
    {"0b101", "5"},
    {"0x7fffffffffffffff", "9223372036854775807"},
    {"-0x8000000000000000", "-9223372036854775808"},
    {"0x8000000000000000", "\"0x8000000000000000\""},
    {"08", "\"08\""},
    {"1.5", "1.5"},
    {"1.", "1.0"},
    {".5", "0.5"},
    {"0.1", "0.1"},
    {"-2.5E-3", "-0.0025"},
    {"1e3", "1000.0"},
    {"1_0.2_5", "10.25"},
    {"1e400", "\"1e400\""},
    {".inf", "\".inf\""},
    {".nan", "\".nan\""},
    {"true", "true"},
    {"TRUE", "true"},
    {"yes", "true"},
    {"On", "true"},
    {"false", "false"},
    {"no", "false"},
    {"Off", "false"},
    {"y", "\"y\""},
    {"~", "null"},
    {"null", "null"},
    {"", "null"},
    {"\"1\"", "\"1\""},
    {"'true'", "\"true\""},
    {"!!str 5", "\"5\""},
    {"\"\"", "\"\""},
    {"\"a\\\"b\\\\c\\td\"", "\"a\\\"b\\\\c\\td\""},
    {"\"caf\\u00e9\"", "\"caf\xc3\xa9\""},
    {"\"a\\0b\\x01\"", "\"a\\u0000b\\u0001\""},
    {"2001-12-14", "\"2001-12-14\""},
    {"1:30", "\"1:30\""},
    {"hello world", "\"hello world\""},
    {"[1, \"x\", [true, ~]]", "[1,\"x\",[true,null]]"},
    {"{a: 1, b: {c: [d]}}", "{\"a\":1,\"b\":{\"c\":[\"d\"]}}"},
    {"{1: one, \"q\\\"k\": 2}", "{\"1\":\"one\",\"q\\\"k\":2}"},
    {"[]", "[]"},
    {"{}", "{}"},
    {"\n    x: 1\n    y:\n      - 2.0\n      - z: \"w\"\n", "{\"x\":1,\"y\":[2.0,{\"z\":\"w\"}]}"},
    {"|\n    line1\n    line2\n", "\"line1\\nline2\\n\""},
};

static void test_configure_json(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++) {
        char text[512];
        dlb_rules_t rs;

        snprintf(text, sizeof(text), "Configure:\n  k: %s\n  after: 0\n", json_cases[i].yaml);
        rs = parse_ok("json.yaml", text);
        assert_int_equal(rs.cnt, 1);
        assert_int_equal(rs.rules[0].configure_cnt, 2);
        assert_string_equal(rs.rules[0].configure[0].key, "k");
        if (strcmp(rs.rules[0].configure[0].json, json_cases[i].json))
            fail_msg("case %zu: %s -> %s, want %s", i, json_cases[i].yaml,
                     rs.rules[0].configure[0].json, json_cases[i].json);
        assert_string_equal(rs.rules[0].configure[1].json, "0");
        dlb_rules_clear(&rs);
    }
}

static void test_documents_and_ids(void **state)
{
    dlb_rules_t rs = parse_ok("multi.yaml", "id: first\n"
                                            "Priority: 5\n"
                                            "Include: {user: a}\n"
                                            "Configure: {x: 1}\n"
                                            "---\n"
                                            "# a comment\n"
                                            "include:\n"
                                            "  APP: b\n"
                                            "configure:\n"
                                            "  y: \"s\"\n"
                                            "---\n"
                                            "--- ~\n"
                                            "---\n"
                                            "- ID: third\n"
                                            "  PRIORITY: -3\n"
                                            "- Exclude: {namespace: [x, y]}\n"
                                            "  Include:\n"
                                            "  Configure:\n"
                                            "...\n");
    const dlb_rule_t *r = rs.rules;
    (void)state;

    assert_int_equal(rs.cnt, 4);
    assert_string_equal(r[0].id, "first");
    assert_int_equal(r[0].priority, 5);
    assert_int_equal(r[0].line, 1);
    assert_match(&r[0].include[0], "user", 1, "a");
    assert_string_equal(r[0].configure[0].json, "1");
    assert_string_equal(r[1].id, "multi.yaml#2");
    assert_int_equal(r[1].priority, 0);
    assert_int_equal(r[1].line, 7);
    assert_match(&r[1].include[0], "app", 1, "b");
    assert_string_equal(r[1].configure[0].key, "y");
    assert_string_equal(r[1].configure[0].json, "\"s\"");
    assert_string_equal(r[2].id, "third");
    assert_int_equal(r[2].priority, -3);
    assert_int_equal(r[2].line, 14);
    assert_int_equal(r[2].include_cnt + r[2].exclude_cnt + r[2].configure_cnt, 0);
    assert_string_equal(r[3].id, "multi.yaml#4");
    assert_int_equal(r[3].line, 16);
    assert_match(&r[3].exclude[0], "namespace", 2, "x", "y");
    assert_int_equal(r[3].include_cnt, 0);
    assert_int_equal(r[3].configure_cnt, 0);
    dlb_rules_clear(&rs);

    rs = parse_ok("seq.yaml", "- Include: {user: a}\n- Include: {user: b}\n");
    assert_int_equal(rs.cnt, 2);
    assert_string_equal(rs.rules[0].id, "seq.yaml#1");
    assert_string_equal(rs.rules[1].id, "seq.yaml#2");
    assert_int_equal(rs.rules[1].line, 2);
    dlb_rules_clear(&rs);
}

static void test_empty(void **state)
{
    static const char *const texts[] = {"", "# only a comment\n", "---\n", "~\n", "[]\n", "\n\n"};
    (void)state;

    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        dlb_rules_t rs = parse_ok("empty.yaml", texts[i]);

        assert_int_equal(rs.cnt, 0);
        assert_null(rs.rules);
    }
}

static const struct {
    const char *yaml;
    const char *err;
} err_cases[] = {
    {"Include:\n  User: a\nFoo: 1\n",
     "bad.yaml:3:1: unknown key (expected id, Priority, Include, Exclude or Configure)"},
    {"Include:\n  Owner: a\n",
     "bad.yaml:2:3: unknown attribute in Include "
     "(expected user, group, app, cluster, namespace, scenario, framework or name)"},
    {"Exclude: {user: a, job: b}\n",
     "bad.yaml:1:20: unknown attribute in Exclude "
     "(expected user, group, app, cluster, namespace, scenario, framework or name)"},
    {"Include:\n  - user\n", "bad.yaml:2:3: Include must be a mapping of attribute to values"},
    {"Exclude: x\n", "bad.yaml:1:10: Exclude must be a mapping of attribute to values"},
    {"Priority: high\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: \"3\"\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: 1.5\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: [1]\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: 2147483648\n", "bad.yaml:1:11: Priority out of range"},
    {"Include: {user: a}\ninclude: {user: b}\n", "bad.yaml:2:1: duplicate key Include"},
    {"Include: {user: a, User: b}\n", "bad.yaml:1:20: duplicate attribute user in Include"},
    {"Configure: {a: 1, a: 2}\n", "bad.yaml:1:19: duplicate Configure key"},
    {"Configure:\n  a:\n    b: 1\n    b: 2\n", "bad.yaml:4:5: duplicate key"},
    {"Configure: [1, 2]\n", "bad.yaml:1:12: Configure must be a mapping of key to value"},
    {"Configure: {[a]: 1}\n", "bad.yaml:1:13: Configure keys must be scalars"},
    {"Configure: {a: {[b]: 1}}\n", "bad.yaml:1:17: mapping keys must be scalars"},
    {"Include: {user: [a, [b]]}\n", "bad.yaml:1:21: values of attribute user must be scalars"},
    {"Include: {user: {a: b}}\n",
     "bad.yaml:1:17: attribute user needs a value or a list of values, not a mapping"},
    {"Include: {user: \"\"}\n", "bad.yaml:1:17: attribute user has an empty value"},
    {"Include: {user: []}\n", "bad.yaml:1:17: attribute user has an empty list"},
    {"Configure: {a: &x 1, b: *x}\n", "bad.yaml:1:25: aliases are not supported"},
    {"hello\n", "bad.yaml:1:1: a rule must be a mapping"},
    {"- x\n", "bad.yaml:1:3: a rule must be a mapping"},
    {"- [x]\n", "bad.yaml:1:3: a rule must be a mapping"},
    {"? [a]\n: b\n", "bad.yaml:1:3: rule keys must be scalars"},
    {"id: [a]\n", "bad.yaml:1:5: id must be a non-empty string"},
    {"id: \"\"\n", "bad.yaml:1:5: id must be a non-empty string"},
    {"id: \"a\\0b\"\n", "bad.yaml:1:5: id contains a NUL character"},
    {"- id: a\n- id: a\n", "bad.yaml:2:7: duplicate rule id (first at line 1)"},
    {"id: bad.yaml#2\n---\nInclude: {user: a}\n",
     "bad.yaml:3:1: duplicate rule id (first at line 1)"},
    {"Include: {user: a}\n---\nInclude: {user: a}\nBogus: 1\n",
     "bad.yaml:4:1: unknown key (expected id, Priority, Include, Exclude or Configure)"},
    {"Include: {user: [a\n",
     "bad.yaml:2:1: while parsing a flow sequence: did not find expected ',' or ']'"},
    {"Configure:\n  k: a: b\n", "bad.yaml:2:7: mapping values are not allowed in this context"},
    {"Include:\n  user: a\n user: b\n",
     "bad.yaml:3:2: while parsing a block mapping: did not find expected key"},
    {"Configure: {a: \"\xff\"}\n", "bad.yaml:1:17: invalid leading UTF-8 octet"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
        dlb_rules_t rs = {(dlb_rule_t *)&rs, 7};
        char err[512] = "";
        int rc;

        rc = dlb_rules_parse("bad.yaml", err_cases[i].yaml, strlen(err_cases[i].yaml), &rs, err,
                             sizeof(err));
        if (rc != DLB_ERR_INVALID || strcmp(err, err_cases[i].err))
            fail_msg("case %zu: rc %d, errstr \"%s\", want \"%s\"", i, rc, err, err_cases[i].err);
        assert_null(rs.rules);
        assert_int_equal(rs.cnt, 0);
    }
}

/* What a rules file holds may be a secret or garbage, and errors are logged:
 * every error names the place and the problem, never the text there. */
#define MARK "s3cret-MARK"
static const char *const quoting_cases[] = {
    MARK ": 1\n",
    "Include: {" MARK ": a}\n",
    "Exclude:\n  " MARK ": a\n",
    "Configure: {" MARK ": 1, " MARK ": 2}\n",
    "Configure:\n  a: {" MARK ": 1, " MARK ": 2}\n",
    "- id: " MARK "\n- id: " MARK "\n",
    "Priority: " MARK "\n",
    "id: [" MARK "]\n",
    "Include: {user: [" MARK "\n",
    MARK "\n",
    "- " MARK "\n",
    "Configure: {a: \"" MARK "\xff\"}\n",
    "Configure: {a: &" MARK " 1, b: *" MARK "}\n",
    "Include: {user: {" MARK ": b}}\n",
};

static void test_errors_never_quote(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(quoting_cases) / sizeof(quoting_cases[0]); i++) {
        dlb_rules_t rs;
        char err[512] = "";
        int rc = dlb_rules_parse("bad.yaml", quoting_cases[i], strlen(quoting_cases[i]), &rs, err,
                                 sizeof(err));

        if (rc != DLB_ERR_INVALID || strstr(err, MARK) || strncmp(err, "bad.yaml:", 9))
            fail_msg("case %zu: rc %d, errstr \"%s\"", i, rc, err);
    }
}

static void test_depth_and_size_limits(void **state)
{
    char text[256], err[512];
    dlb_rules_t rs;
    size_t n;
    char *big;
    (void)state;

    /* rule = 1, Configure value = 2, so 31 '[' reach depth 32: allowed. */
    n = (size_t)snprintf(text, sizeof(text), "Configure: {k: ");
    for (int i = 0; i < 31; i++)
        text[n++] = '[';
    for (int i = 0; i < 31; i++)
        text[n++] = ']';
    memcpy(text + n, "}\n", 3);
    rs = parse_ok("deep.yaml", text);
    assert_int_equal(strlen(rs.rules[0].configure[0].json), 62);
    dlb_rules_clear(&rs);

    n = (size_t)snprintf(text, sizeof(text), "Configure: {k: ");
    for (int i = 0; i < 32; i++)
        text[n++] = '[';
    for (int i = 0; i < 32; i++)
        text[n++] = ']';
    memcpy(text + n, "}\n", 3);
    assert_int_equal(dlb_rules_parse("deep.yaml", text, strlen(text), &rs, err, sizeof(err)),
                     DLB_ERR_INVALID);
    assert_string_equal(err, "deep.yaml:1:47: nested deeper than 32 levels");
    assert_null(rs.rules);

    big = malloc(DLB_RULES_MAX_BYTES + 1);
    assert_non_null(big);
    memset(big, '\n', DLB_RULES_MAX_BYTES + 1);
    assert_int_equal(
        dlb_rules_parse("big.yaml", big, DLB_RULES_MAX_BYTES + 1, &rs, err, sizeof(err)),
        DLB_ERR_INVALID);
    assert_string_equal(err, "big.yaml:1:1: 4194305 bytes, more than the limit of 4194304");
    assert_int_equal(dlb_rules_parse("big.yaml", big, DLB_RULES_MAX_BYTES, &rs, err, sizeof(err)),
                     0);
    assert_int_equal(rs.cnt, 0);
    free(big);
}

static void test_load_file(void **state)
{
    char dir[] = "/tmp/dlb-rules-XXXXXX", path[256], err[512];
    dlb_rules_t rs;
    FILE *fp;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/rules.yaml", dir);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("Include: {user: u}\nConfigure: {lr: 0.001}\n---\nPriority: x\n", fp);
    fclose(fp);
    assert_int_equal(dlb_rules_load_file(path, &rs, err, sizeof(err)), DLB_ERR_INVALID);
    assert_true(!strncmp(err, path, strlen(path)));
    assert_string_equal(err + strlen(path), ":4:11: Priority must be an integer");

    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("Include: {user: u}\nConfigure: {lr: 0.001}\n", fp);
    fclose(fp);
    assert_int_equal(dlb_rules_load_file(path, &rs, err, sizeof(err)), 0);
    assert_int_equal(rs.cnt, 1);
    assert_true(!strncmp(rs.rules[0].id, path, strlen(path)));
    assert_string_equal(rs.rules[0].id + strlen(path), "#1");
    assert_string_equal(rs.rules[0].configure[0].json, "0.001");
    dlb_rules_clear(&rs);
    assert_int_equal(unlink(path), 0);

    assert_int_equal(dlb_rules_load_file(path, &rs, err, sizeof(err)), DLB_ERR_NOTFOUND);
    assert_null(rs.rules);
    assert_int_equal(rmdir(dir), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static void on_alarm(int sig)
{
    (void)sig;
    /* Only async-signal-safe calls: the test would otherwise hang in open(). */
    static const char msg[] = "a FIFO blocked the rules loader\n";
    if (write(2, msg, sizeof(msg) - 1) < 0)
        _exit(2);
    _exit(1);
}

/* Only regular files are read, none past the size limit, and nothing blocks
 * (a FIFO named like a rules file held the old loader in open()). */
static void test_load_file_kinds(void **state)
{
    char dir[] = "/tmp/dlb-rules-XXXXXX", path[256], link[256], sub[256], err[512], want[512];
    const char *paths[1] = {link}, *names[1] = {"shown.yaml"};
    dlb_rules_t rs;
    int fd;
    (void)state;

    assert_non_null(mkdtemp(dir));
    signal(SIGALRM, on_alarm);
    alarm(10);
    snprintf(path, sizeof(path), "%s/fifo.yaml", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(dlb_rules_load_file(path, &rs, err, sizeof(err)), DLB_ERR_INVALID);
    snprintf(want, sizeof(want), "%s: not a regular file (a FIFO); not read", path);
    assert_string_equal(err, want);
    assert_null(rs.rules);
    assert_int_equal(unlink(path), 0);
    alarm(0);

    snprintf(sub, sizeof(sub), "%s/dir.yaml", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(dlb_rules_load_file(sub, &rs, err, sizeof(err)), DLB_ERR_INVALID);
    snprintf(want, sizeof(want), "%s: not a regular file (a directory); not read", sub);
    assert_string_equal(err, want);
    assert_int_equal(rmdir(sub), 0);

    /* One byte past the limit (sparse: nothing is written). */
    snprintf(path, sizeof(path), "%s/big.yaml", dir);
    assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
    assert_int_equal(ftruncate(fd, DLB_RULES_MAX_BYTES + 1), 0);
    assert_int_equal(close(fd), 0);
    assert_int_equal(dlb_rules_load_file(path, &rs, err, sizeof(err)), DLB_ERR_INVALID);
    snprintf(want, sizeof(want),
             "%s: larger than the limit of 4194304 bytes for a rules file; not read", path);
    assert_string_equal(err, want);
    assert_null(rs.rules);

    /* Named as the caller says; a link refused with NOFOLLOW, read without. */
    write_file(path, "id: x\nPriority: high\n");
    snprintf(link, sizeof(link), "%s/link.yaml", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(dlb_rules_load_files_as(paths, names, 1, 0, &rs, err, sizeof(err)),
                     DLB_ERR_INVALID);
    assert_string_equal(err, "shown.yaml:2:11: Priority must be an integer");
    assert_int_equal(
        dlb_rules_load_files_as(paths, names, 1, DLB_RULES_LOAD_NOFOLLOW, &rs, err, sizeof(err)),
        DLB_ERR_INVALID);
    assert_string_equal(err, "shown.yaml: became a link while being read; not read");
    write_file(path, "id: x\n");
    assert_int_equal(dlb_rules_load_files_as(paths, names, 1, 0, &rs, err, sizeof(err)), 0);
    assert_int_equal(rs.cnt, 1);
    assert_string_equal(rs.rules[0].file, "shown.yaml");
    dlb_rules_clear(&rs);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* ---- canonical JSON, YAML out, several files, diff -------------------------------- */

static char *to_json(const dlb_rules_t *rs, unsigned flags)
{
    char err[512] = "", *out = NULL;

    if (dlb_rules_to_json(rs, flags, &out, err, sizeof(err)))
        fail_msg("dlb_rules_to_json: %s", err);
    return out;
}

static dlb_rules_t from_json_ok(const char *json)
{
    dlb_rules_t rs;
    char err[512] = "";

    if (dlb_rules_from_json(json, strlen(json), &rs, err, sizeof(err)))
        fail_msg("dlb_rules_from_json: %s\n%s", err, json);
    return rs;
}

/* JSON -> rules -> JSON gives back the same bytes; so does the pretty form. */
static void assert_json_fixed_point(const char *json)
{
    dlb_rules_t rs = from_json_ok(json);
    char *again = to_json(&rs, 0), *pretty = to_json(&rs, DLB_RULES_JSON_PRETTY);

    assert_string_equal(again, json);
    dlb_rules_clear(&rs);
    rs = from_json_ok(pretty);
    free(again);
    again = to_json(&rs, 0);
    assert_string_equal(again, json);
    dlb_rules_clear(&rs);
    free(again);
    free(pretty);
}

static const char seed_yaml[] = "id: big-batch\n"
                                "Priority: 10\n"
                                "Include:\n"
                                "  User: \"user1\"\n"
                                "  Group: [group2, group3]\n"
                                "Exclude:\n"
                                "  Cluster: \"cluster4\"\n"
                                "Configure:\n"
                                "  A: 1\n"
                                "  B: \"C\"\n"
                                "---\n"
                                "Include: {user: u2}\n";

static void test_to_json(void **state)
{
    dlb_rules_t rs = parse_ok("seed.yaml", seed_yaml), none = {0};
    char *json = to_json(&rs, 0), *bare, *pretty;
    (void)state;

    assert_string_equal(json, "[{\"id\":\"big-batch\",\"priority\":10,\"include\":{\"user\":["
                              "\"user1\"],\"group\":[\"group2\",\"group3\"]},\"exclude\":{"
                              "\"cluster\":[\"cluster4\"]},\"configure\":{\"A\":1,\"B\":\"C\"},"
                              "\"file\":\"seed.yaml\",\"line\":1},{\"id\":\"seed.yaml#2\","
                              "\"priority\":0,\"include\":{\"user\":[\"u2\"]},\"exclude\":{},"
                              "\"configure\":{},\"file\":\"seed.yaml\",\"line\":12}]");
    assert_string_equal(rs.rules[1].file, "seed.yaml");
    assert_json_fixed_point(json);
    bare = to_json(&rs, DLB_RULES_JSON_NO_SOURCE);
    assert_string_equal(bare, "[{\"id\":\"big-batch\",\"priority\":10,\"include\":{\"user\":["
                              "\"user1\"],\"group\":[\"group2\",\"group3\"]},\"exclude\":{"
                              "\"cluster\":[\"cluster4\"]},\"configure\":{\"A\":1,\"B\":\"C\"}},"
                              "{\"id\":\"seed.yaml#2\",\"priority\":0,\"include\":{\"user\":["
                              "\"u2\"]},\"exclude\":{},\"configure\":{}}]");
    free(bare);
    dlb_rules_clear(&rs);

    rs = parse_ok("p.yaml", "id: p\nInclude: {app: [x]}\nConfigure: {k: {a: [1, []], b: {}}}\n");
    pretty = to_json(&rs, DLB_RULES_JSON_PRETTY);
    assert_string_equal(pretty, "[\n"
                                "  {\n"
                                "    \"id\": \"p\",\n"
                                "    \"priority\": 0,\n"
                                "    \"include\": {\n"
                                "      \"app\": [\n"
                                "        \"x\"\n"
                                "      ]\n"
                                "    },\n"
                                "    \"exclude\": {},\n"
                                "    \"configure\": {\n"
                                "      \"k\": {\n"
                                "        \"a\": [\n"
                                "          1,\n"
                                "          []\n"
                                "        ],\n"
                                "        \"b\": {}\n"
                                "      }\n"
                                "    },\n"
                                "    \"file\": \"p.yaml\",\n"
                                "    \"line\": 1\n"
                                "  }\n"
                                "]\n");
    free(pretty);
    dlb_rules_clear(&rs);
    free(json);

    json = to_json(&none, 0);
    assert_string_equal(json, "[]");
    assert_json_fixed_point(json);
    free(json);
}

/* Every Configure value of test_configure_json, and strings that need
 * escaping in JSON and in YAML, survive YAML -> rules -> JSON -> rules ->
 * JSON byte for byte, and YAML -> rules -> YAML -> rules unchanged. */
static void test_round_trips(void **state)
{
    static const char strings[] =
        "id: \"we\\\"ird: # id\\\\\"\n"
        "Include:\n"
        "  user: [\"caf\\u00e9\", \"nel\\u0085x\", \"ls\\u2028ps\\u2029\","
        " \"bom\\ufeff\", \"c1\\u0080\\u009f\", \"tab\\tnl\\ncr\\r\","
        " \"del\\u007f\", \"astral\\U0001F600\", \"- [x]\", \"*\"]\n"
        "Configure:\n"
        "  \"k: v, #\": \"s\\u0085\\u2028\\ufffe\"\n"
        "  \"\": {\"\\\"\": [\"\\\\\", \"\\u0001\"]}\n";
    char text[16384], key[1500], *json, *again, *yaml, err[512];
    size_t n = 0;
    dlb_rules_t rs, back;
    (void)state;

    n += (size_t)snprintf(text + n, sizeof(text) - n, "id: values\nConfigure:\n");
    for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "  k%zu: %s\n", i, json_cases[i].yaml);
    n += (size_t)snprintf(text + n, sizeof(text) - n, "---\n%s---\nid: empty\n", strings);
    /* Keys past YAML's 1024 characters for an implicit key, raw and as
     * escapes that the YAML written must use for U+0085. */
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    n += (size_t)snprintf(text + n, sizeof(text) - n,
                          "---\nid: long keys\nConfigure:\n  ? %s\n  : {? %s : [{? %s : 1}]}\n",
                          key, key, key);
    strcpy(key, "\"");
    for (int i = 0; i < 200; i++)
        strcat(key, "\\u0085");
    n += (size_t)snprintf(text + n, sizeof(text) - n, "  short: {? %s\" : 1}\n", key);
    rs = parse_ok("trip.yaml", text);
    assert_int_equal(rs.cnt, 4);
    assert_int_equal(rs.rules[0].configure_cnt, sizeof(json_cases) / sizeof(json_cases[0]));

    json = to_json(&rs, 0);
    assert_json_fixed_point(json);

    assert_int_equal(dlb_rules_to_yaml(&rs, &yaml, err, sizeof(err)), 0);
    back = parse_ok("shown.yaml", yaml);
    free(json);
    json = to_json(&rs, DLB_RULES_JSON_NO_SOURCE);
    again = to_json(&back, DLB_RULES_JSON_NO_SOURCE);
    if (strcmp(json, again))
        fail_msg("YAML round trip differs:\n%s\n%s\nYAML:\n%s", json, again, yaml);
    dlb_rules_clear(&back);
    dlb_rules_clear(&rs);
    free(json);
    free(again);
    free(yaml);
}

static void test_to_yaml(void **state)
{
    dlb_rules_t rs = parse_ok("seed.yaml", seed_yaml), none = {0};
    char *yaml, err[512];
    (void)state;

    assert_int_equal(dlb_rules_to_yaml(&rs, &yaml, err, sizeof(err)), 0);
    assert_string_equal(yaml, "--- # seed.yaml:1\n"
                              "id: \"big-batch\"\n"
                              "Priority: 10\n"
                              "Include:\n"
                              "  user: [\"user1\"]\n"
                              "  group: [\"group2\", \"group3\"]\n"
                              "Exclude:\n"
                              "  cluster: [\"cluster4\"]\n"
                              "Configure:\n"
                              "  \"A\": 1\n"
                              "  \"B\": \"C\"\n"
                              "--- # seed.yaml:12\n"
                              "id: \"seed.yaml#2\"\n"
                              "Priority: 0\n"
                              "Include:\n"
                              "  user: [\"u2\"]\n");
    free(yaml);
    dlb_rules_clear(&rs);
    assert_int_equal(dlb_rules_to_yaml(&none, &yaml, err, sizeof(err)), 0);
    assert_string_equal(yaml, "# no rules\n");
    rs = parse_ok("none.yaml", yaml);
    assert_int_equal(rs.cnt, 0);
    free(yaml);
}

/* A rule made in code: Configure values in any JSON layout come out
 * canonical; a value that is not JSON, or a string that is not UTF-8, is
 * refused by name. */
static void test_to_json_built(void **state)
{
    dlb_config_value_t cv[2] = {{"a", " { \"x\" : [ 1e3 , \"\\u00e9\\/\" ] } "}, {"b", "tru"}};
    char *vals[1] = {"u\xff"};
    dlb_rule_match_t inc = {"user", vals, 1};
    dlb_rule_t r = {.id = "r", .configure = cv, .configure_cnt = 1};
    dlb_rules_t rs = {&r, 1};
    char *out = (char *)1, err[512];
    (void)state;

    assert_int_equal(dlb_rules_to_json(&rs, DLB_RULES_JSON_NO_SOURCE, &out, err, sizeof(err)), 0);
    assert_string_equal(out, "[{\"id\":\"r\",\"priority\":0,\"include\":{},\"exclude\":{},"
                             "\"configure\":{\"a\":{\"x\":[1000.0,\"\xc3\xa9/\"]}}}]");
    free(out);
    r.configure_cnt = 2;
    assert_int_equal(dlb_rules_to_json(&rs, 0, &out, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "rules[0].configure.b: expected a JSON value (offset 0)");
    assert_null(out);
    r.configure_cnt = 0;
    r.include = &inc;
    r.include_cnt = 1;
    assert_int_equal(dlb_rules_to_yaml(&rs, &out, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(err, "rules[0].Include: not UTF-8");
    assert_null(out);
}

#define R0H "{\"id\":\"a\",\"priority\":0,\"include\":{},\"exclude\":{},"
#define R0  R0H "\"configure\":{},"
#define R1  "\"file\":\"f\",\"line\":1}"

/* A rule whose Configure value k is levels arrays deep. */
static void deep_json(char *buf, size_t size, int levels)
{
    size_t n = (size_t)snprintf(buf, size, "[" R0H "\"configure\":{\"k\":");

    for (int i = 0; i < 2 * levels && n + 1 < size; i++)
        buf[n++] = i < levels ? '[' : ']';
    snprintf(buf + n, size - n, "}," R1 "]");
}

static const struct {
    const char *json;
    const char *err;
} from_json_errors[] = {
    {"", "rules: expected an array of rules (offset 0)"},
    {"{}", "rules: expected an array of rules (offset 0)"},
    {"[", "rules[0]: expected a rule object (offset 1)"},
    {"[1]", "rules[0]: expected a rule object (offset 1)"},
    {"[" R0 R1 ",]", "rules[1]: expected a rule object (offset 86)"},
    {"[" R0 R1 " " R0 R1 "]", "rules: expected ',' or ']' (offset 86)"},
    {"[" R0 R1 "] x", "rules: unexpected text after the rules (offset 87)"},
    {"[{\"id\":\"a\"}]", "rules[0]: missing field \"priority\" (offset 11)"},
    {"[{\"id\":\"a\",\"x\":1}]", "rules[0]: unknown field \"x\" (offset 11)"},
    {"[{\"id\":\"a\",\"id\":\"b\"}]", "rules[0]: duplicate field \"id\" (offset 11)"},
    {"[{\"ID\":\"a\"}]", "rules[0]: unknown field \"ID\" (offset 2)"},
    {"[{\"id\":\"\"}]", "rules[0].id: expected a non-empty string (offset 7)"},
    {"[{\"id\":\"a\\u0000b\"}]", "rules[0].id: contains a NUL character (offset 7)"},
    {"[{\"id\":7}]", "rules[0].id: expected a string (offset 7)"},
    {"[{\"priority\":\"high\"}]", "rules[0].priority: expected an integer (offset 13)"},
    {"[{\"priority\":1.5}]", "rules[0].priority: expected an integer (offset 13)"},
    {"[{\"priority\":2147483648}]", "rules[0].priority: integer out of range (offset 13)"},
    {"[{\"line\":-1}]", "rules[0].line: integer out of range (offset 9)"},
    {"[{\"priority\":01}]", "rules[0]: expected ',' or '}' (offset 14)"},
    {"[{\"include\":[]}]",
     "rules[0].include: expected an object of attribute to values (offset 12)"},
    {"[{\"include\":{\"owner\":[\"x\"]}}]",
     "rules[0].include: unknown attribute \"owner\" (offset 13)"},
    {"[{\"exclude\":{\"User\":[\"x\"]}}]",
     "rules[0].exclude: unknown attribute \"User\" (offset 13)"},
    {"[{\"include\":{\"user\":[\"x\"],\"user\":[\"y\"]}}]",
     "rules[0].include: duplicate attribute \"user\" (offset 26)"},
    {"[{\"include\":{\"user\":\"x\"}}]",
     "rules[0].include.user: expected a non-empty array of strings (offset 20)"},
    {"[{\"include\":{\"user\":[]}}]",
     "rules[0].include.user: expected a non-empty array of strings (offset 22)"},
    {"[{\"include\":{\"user\":[\"\"]}}]",
     "rules[0].include.user: expected a non-empty string (offset 21)"},
    {"[{\"include\":{\"user\":[1]}}]", "rules[0].include.user: expected a string (offset 21)"},
    {"[{\"configure\":[]}]", "rules[0].configure: expected an object of key to value (offset 14)"},
    {"[{\"configure\":{\"k\":1,\"k\":2}}]", "rules[0].configure: duplicate key \"k\" (offset 21)"},
    {"[{\"configure\":{\"k\":tru}}]", "rules[0].configure.k: expected a JSON value (offset 19)"},
    {"[{\"configure\":{\"k\":1e400}}]",
     "rules[0].configure.k: number 1e400 does not fit a double (offset 19)"},
    {"[{\"configure\":{\"k\":-}}]", "rules[0].configure.k: expected a JSON value (offset 19)"},
    {"[{\"configure\":{\"k\":1.}}]", "rules[0].configure.k: expected a digit (offset 21)"},
    {"[{\"configure\":{\"k\":{\"a\":1,\"a\":2}}}]",
     "rules[0].configure.k: duplicate key \"a\" (offset 26)"},
    {"[{\"configure\":{\"k\":[1,]}}]", "rules[0].configure.k: expected a JSON value (offset 22)"},
    {"[{\"configure\":{\"k\":\"a\\x\"}}]",
     "rules[0].configure.k: bad escape in a string (offset 22)"},
    {"[{\"configure\":{\"k\":\"\\ud800\"}}]",
     "rules[0].configure.k: unpaired surrogate in a \\u escape (offset 26)"},
    {"[{\"configure\":{\"k\":\"\\udc00\"}}]",
     "rules[0].configure.k: unpaired surrogate in a \\u escape (offset 26)"},
    {"[{\"configure\":{\"k\":\"\xc3\"}}]", "rules[0].configure.k: invalid UTF-8 (offset 20)"},
    {"[{\"configure\":{\"k\":\"a\nb\"}}]",
     "rules[0].configure.k: control character in a string (offset 21)"},
    {"[{\"configure\":{\"k\":\"ab}}]", "rules[0].configure.k: unterminated string (offset 25)"},
    {"[" R0 R1 "," R0 R1 "]", "rules[1].id: duplicate rule id \"a\" (first at rules[0])"},
    {"[" R0 R1 ",{\"id\":2}]", "rules[1].id: expected a string (offset 92)"},
};

static void test_from_json(void **state)
{
    char deep[256], err[512];
    dlb_rules_t rs;
    char *json;
    (void)state;

    for (size_t i = 0; i < sizeof(from_json_errors) / sizeof(from_json_errors[0]); i++) {
        rs.rules = (dlb_rule_t *)&rs;
        rs.cnt = 9;
        if (dlb_rules_from_json(from_json_errors[i].json, strlen(from_json_errors[i].json), &rs,
                                err, sizeof(err)) != DLB_ERR_INVALID ||
            strcmp(err, from_json_errors[i].err))
            fail_msg("case %zu: %s\n  got  \"%s\"\n  want \"%s\"", i, from_json_errors[i].json, err,
                     from_json_errors[i].err);
        assert_null(rs.rules);
        assert_int_equal(rs.cnt, 0);
    }

    /* Any JSON layout; values come out as the YAML loader writes them. */
    rs = from_json_ok(" [ { \"line\" : 3 , \"file\" : \"x\\/y\" , \"configure\" : { \"n\" : "
                      "[ 1E3 , -0 , 0.10 , 12345678901234567890123 , \"\\u00e9\\ud83d\\ude00\" , "
                      "true , null ] } , \"exclude\" : { } , \"include\" : { \"name\" : [ \"a\" ] "
                      "} , \"priority\" : -2 , \"id\" : \"i\" } ] \n");
    json = to_json(&rs, 0);
    assert_string_equal(json, "[{\"id\":\"i\",\"priority\":-2,\"include\":{\"name\":[\"a\"]},"
                              "\"exclude\":{},\"configure\":{\"n\":[1000.0,-0,0.1,"
                              "12345678901234567890123,\"\xc3\xa9\xf0\x9f\x98\x80\",true,null]},"
                              "\"file\":\"x/y\",\"line\":3}]");
    free(json);
    dlb_rules_clear(&rs);

    /* The YAML loader's depth limit: rule 1, Configure value 2. */
    deep_json(deep, sizeof(deep), 31);
    rs = from_json_ok(deep);
    dlb_rules_clear(&rs);
    deep_json(deep, sizeof(deep), 32);
    assert_int_equal(dlb_rules_from_json(deep, strlen(deep), &rs, err, sizeof(err)),
                     DLB_ERR_INVALID);
    assert_string_equal(err, "rules[0].configure.k: nested deeper than 32 levels (offset 98)");
}

static void test_load_files(void **state)
{
    char dir[] = "/tmp/dlb-rules-XXXXXX", a[64], b[64], c[64], err[512], want[512];
    const char *paths[3] = {a, b, c};
    dlb_rules_t rs = {(dlb_rule_t *)&rs, 5};
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(a, sizeof(a), "%s/a.yaml", dir);
    snprintf(b, sizeof(b), "%s/b.yaml", dir);
    snprintf(c, sizeof(c), "%s/c.yaml", dir);
    write_file(a, "id: one\nConfigure: {x: 1}\n---\nInclude: {user: u}\n");
    write_file(b, "- id: two\n  Priority: 3\n- id: three\n");

    assert_int_equal(dlb_rules_load_files(paths, 2, &rs, err, sizeof(err)), 0);
    assert_int_equal(rs.cnt, 4);
    assert_string_equal(rs.rules[0].id, "one");
    assert_string_equal(rs.rules[0].file, a);
    assert_int_equal(rs.rules[0].line, 1);
    snprintf(want, sizeof(want), "%s#2", a);
    assert_string_equal(rs.rules[1].id, want);
    assert_int_equal(rs.rules[1].line, 4);
    assert_string_equal(rs.rules[2].id, "two");
    assert_string_equal(rs.rules[2].file, b);
    assert_int_equal(rs.rules[2].priority, 3);
    assert_string_equal(rs.rules[3].id, "three");
    assert_int_equal(rs.rules[3].line, 3);
    dlb_rules_clear(&rs);

    /* A bad later file: nothing, and its own file:line:col. */
    write_file(c, "id: four\nPriority: high\n");
    rs.rules = (dlb_rule_t *)&rs;
    rs.cnt = 5;
    assert_int_equal(dlb_rules_load_files(paths, 3, &rs, err, sizeof(err)), DLB_ERR_INVALID);
    snprintf(want, sizeof(want), "%s:2:11: Priority must be an integer", c);
    assert_string_equal(err, want);
    assert_null(rs.rules);
    assert_int_equal(rs.cnt, 0);

    /* An id of an earlier file: both places named. */
    write_file(c, "id: four\n---\nid: two\n");
    assert_int_equal(dlb_rules_load_files(paths, 3, &rs, err, sizeof(err)), DLB_ERR_INVALID);
    snprintf(want, sizeof(want), "%s:3: duplicate rule id (first at %s:1)", c, b);
    assert_string_equal(err, want);
    assert_null(rs.rules);

    /* The same file twice: its default ids repeat. */
    paths[1] = a;
    assert_int_equal(dlb_rules_load_files(paths, 2, &rs, err, sizeof(err)), DLB_ERR_INVALID);
    snprintf(want, sizeof(want), "%s:1: duplicate rule id (first at %s:1)", a, a);
    assert_string_equal(err, want);

    /* A missing file. */
    paths[1] = "/nonexistent/x.yaml";
    assert_int_equal(dlb_rules_load_files(paths, 2, &rs, err, sizeof(err)), DLB_ERR_NOTFOUND);
    assert_string_equal(err, "/nonexistent/x.yaml: No such file or directory");
    assert_null(rs.rules);

    assert_int_equal(dlb_rules_load_files(paths, 0, &rs, err, sizeof(err)), 0);
    assert_int_equal(rs.cnt, 0);
    assert_int_equal(unlink(a), 0);
    assert_int_equal(unlink(b), 0);
    assert_int_equal(unlink(c), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void test_diff(void **state)
{
    dlb_rules_t a = parse_ok("a.yaml", "- id: r1\n"
                                       "  Include: {user: a}\n"
                                       "  Configure: {lr: 0.1, bs: 32}\n"
                                       "- id: r2\n"
                                       "  Configure: {x: 1}\n"
                                       "- id: r3\n"
                                       "  Priority: 1\n");
    dlb_rules_t b = parse_ok("b.yaml", "- id: r3\n"
                                       "  Priority: 5\n"
                                       "- id: r1\n"
                                       "  Include: {user: [a, b]}\n"
                                       "  Exclude: {cluster: c}\n"
                                       "  Configure: {lr: 0.2}\n"
                                       "- id: r4\n"
                                       "  Configure: {y: true}\n");
    char *out, err[512];
    (void)state;

    assert_int_equal(dlb_rules_diff(&a, &b, &out, err, sizeof(err)), 0);
    assert_string_equal(out, "- r2\n"
                             "~ r3\n"
                             "    priority: 1 -> 5\n"
                             "~ r1\n"
                             "    include.user: [\"a\"] -> [\"a\",\"b\"]\n"
                             "    exclude.cluster: (none) -> [\"c\"]\n"
                             "    configure.lr: 0.1 -> 0.2\n"
                             "    configure.bs: 32 -> (none)\n"
                             "+ r4 (b.yaml:7)\n"
                             "~ order: [\"r1\",\"r3\"] -> [\"r3\",\"r1\"]\n");
    free(out);
    assert_int_equal(dlb_rules_diff(&b, &b, &out, err, sizeof(err)), 0);
    assert_string_equal(out, "");
    free(out);
    dlb_rules_clear(&a);
    dlb_rules_clear(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_design_example),
        cmocka_unit_test(test_value_lists_ok),
        cmocka_unit_test(test_configure_json),
        cmocka_unit_test(test_documents_and_ids),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_errors_never_quote),
        cmocka_unit_test(test_depth_and_size_limits),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_load_file_kinds),
        cmocka_unit_test(test_to_json),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_to_yaml),
        cmocka_unit_test(test_to_json_built),
        cmocka_unit_test(test_from_json),
        cmocka_unit_test(test_load_files),
        cmocka_unit_test(test_diff),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
