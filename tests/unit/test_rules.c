/* Configuration rules YAML: the design's example, value lists, Configure
 * values as exact JSON text, documents and sequences, ids, every error with
 * its exact file:line:col, and nothing returned on error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    {"Include:\n  User: a\nFoo: 1\n", "bad.yaml:3:1: unknown key \"Foo\""},
    {"Include:\n  Owner: a\n", "bad.yaml:2:3: unknown attribute \"Owner\" in Include"},
    {"Exclude: {user: a, job: b}\n", "bad.yaml:1:20: unknown attribute \"job\" in Exclude"},
    {"Include:\n  - user\n", "bad.yaml:2:3: Include must be a mapping of attribute to values"},
    {"Exclude: x\n", "bad.yaml:1:10: Exclude must be a mapping of attribute to values"},
    {"Priority: high\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: \"3\"\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: 1.5\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: [1]\n", "bad.yaml:1:11: Priority must be an integer"},
    {"Priority: 2147483648\n", "bad.yaml:1:11: Priority out of range"},
    {"Include: {user: a}\ninclude: {user: b}\n", "bad.yaml:2:1: duplicate key Include"},
    {"Include: {user: a, User: b}\n", "bad.yaml:1:20: duplicate attribute user in Include"},
    {"Configure: {a: 1, a: 2}\n", "bad.yaml:1:19: duplicate Configure key \"a\""},
    {"Configure:\n  a:\n    b: 1\n    b: 2\n", "bad.yaml:4:5: duplicate key \"b\""},
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
    {"- id: a\n- id: a\n", "bad.yaml:2:7: duplicate rule id \"a\" (first at line 1)"},
    {"id: bad.yaml#2\n---\nInclude: {user: a}\n",
     "bad.yaml:3:1: duplicate rule id \"bad.yaml#2\" (first at line 1)"},
    {"Include: {user: a}\n---\nInclude: {user: a}\nBogus: 1\n",
     "bad.yaml:4:1: unknown key \"Bogus\""},
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_design_example),
        cmocka_unit_test(test_value_lists_ok),
        cmocka_unit_test(test_configure_json),
        cmocka_unit_test(test_documents_and_ids),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_depth_and_size_limits),
        cmocka_unit_test(test_load_file),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
