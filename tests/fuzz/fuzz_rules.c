/* libFuzzer target: dlb_rules_parse() of arbitrary bytes, what the
 * configuration component does with every rules file it syncs.
 *
 * Properties, besides no crash, leak, stack exhaustion or undefined behaviour:
 *  - a failure is invalid (or out of memory), with a "<name>:" message, and
 *    leaves nothing;
 *  - an accepted rule has an id, known lower-case attributes with at least one
 *    non-empty value each, and Configure values that are valid JSON to cJSON;
 *  - accepted rules round-trip: their canonical JSON (dlb_rules_to_json())
 *    reads back (dlb_rules_from_json(), also in the PRETTY form) to rules
 *    whose canonical JSON is the same bytes, and their YAML
 *    (dlb_rules_to_yaml()) parses back to rules with the same canonical JSON
 *    without file and line. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzz_fail.h"

static void check_matches(const dlb_rule_t *r, const dlb_rule_match_t *m, size_t cnt)
{
    static const char *const attrs[] = {"user",      "group",    "app",       "cluster",
                                        "namespace", "scenario", "framework", "name"};

    for (size_t i = 0; i < cnt; i++) {
        size_t a = 0;

        while (a < sizeof(attrs) / sizeof(attrs[0]) && strcmp(attrs[a], m[i].attr))
            a++;
        if (a == sizeof(attrs) / sizeof(attrs[0]))
            fuzz_fail("rule %s: attribute \"%s\" accepted", r->id, m[i].attr);
        if (!m[i].values_cnt)
            fuzz_fail("rule %s: attribute %s without values", r->id, m[i].attr);
        for (size_t j = 0; j < m[i].values_cnt; j++)
            if (!m[i].values[j] || !m[i].values[j][0])
                fuzz_fail("rule %s: attribute %s has an empty value", r->id, m[i].attr);
    }
}

/* Rules as JSON with flags, which accepted rules always have. */
static char *to_json(const char *what, const dlb_rules_t *rs, unsigned flags)
{
    char err[512] = "", *json = NULL;
    int rc = dlb_rules_to_json(rs, flags, &json, err, sizeof(err));

    if (rc || !json)
        fuzz_fail("%s: dlb_rules_to_json(%u) failed: %s: %s", what, flags, dlb_err_name(rc), err);
    return json;
}

/* JSON text read back and written again (flags 0), to compare with want. */
static void check_json_reads_back(const char *what, const char *json, const char *want)
{
    dlb_rules_t back;
    char err[512] = "", *again;
    int rc = dlb_rules_from_json(json, strlen(json), &back, err, sizeof(err));

    if (rc)
        fuzz_fail("%s does not read back: %s: %s\n%s", what, dlb_err_name(rc), err, json);
    again = to_json(what, &back, 0);
    if (strcmp(again, want))
        fuzz_fail("%s read back and written again differs:\n%s\n%s", what, want, again);
    free(again);
    dlb_rules_clear(&back);
}

static void check_round_trips(const dlb_rules_t *rs)
{
    char err[512] = "", *json, *pretty, *bare, *yaml = NULL, *bare2;
    dlb_rules_t back;
    int rc;

    json = to_json("rules", rs, 0);
    pretty = to_json("rules", rs, DLB_RULES_JSON_PRETTY);
    check_json_reads_back("canonical JSON", json, json);
    check_json_reads_back("pretty JSON", pretty, json);

    bare = to_json("rules", rs, DLB_RULES_JSON_NO_SOURCE);
    if ((rc = dlb_rules_to_yaml(rs, &yaml, err, sizeof(err))) || !yaml)
        fuzz_fail("dlb_rules_to_yaml failed: %s: %s", dlb_err_name(rc), err);
    if ((rc = dlb_rules_parse("out.yaml", yaml, strlen(yaml), &back, err, sizeof(err))))
        fuzz_fail("written YAML does not parse: %s: %s\n%s", dlb_err_name(rc), err, yaml);
    bare2 = to_json("YAML read back", &back, DLB_RULES_JSON_NO_SOURCE);
    if (strcmp(bare, bare2))
        fuzz_fail("YAML read back differs:\n%s\n%s\n%s", bare, bare2, yaml);
    dlb_rules_clear(&back);
    free(json);
    free(pretty);
    free(bare);
    free(bare2);
    free(yaml);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlb_rules_t rs;
    char err[512] = "";
    int rc;

    rc = dlb_rules_parse("fuzz.yaml", (const char *)data, size, &rs, err, sizeof(err));
    if (rc) {
        if (rc != DLB_ERR_INVALID && rc != DLB_ERR_NOMEM)
            fuzz_fail("dlb_rules_parse returned %s: %s", dlb_err_name(rc), err);
        if (strncmp(err, "fuzz.yaml:", 10))
            fuzz_fail("error message without the file name: \"%s\"", err);
        if (rs.rules || rs.cnt)
            fuzz_fail("failed (%s) but returned %zu rules", err, rs.cnt);
        return 0;
    }
    if (!!rs.rules != !!rs.cnt)
        fuzz_fail("%zu rules at %p", rs.cnt, (void *)rs.rules);
    for (size_t i = 0; i < rs.cnt; i++) {
        const dlb_rule_t *r = &rs.rules[i];

        if (!r->id || !r->id[0])
            fuzz_fail("rule %zu without id", i + 1);
        if (r->line < 1)
            fuzz_fail("rule %s at line %d", r->id, r->line);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(rs.rules[j].id, r->id))
                fuzz_fail("two rules with id %s", r->id);
        check_matches(r, r->include, r->include_cnt);
        check_matches(r, r->exclude, r->exclude_cnt);
        for (size_t j = 0; j < r->configure_cnt; j++) {
            const dlb_config_value_t *v = &r->configure[j];
            cJSON *json;

            if (!v->key || !v->json)
                fuzz_fail("rule %s: Configure entry %zu incomplete", r->id, j);
            if (!(json = cJSON_ParseWithLength(v->json, strlen(v->json))))
                fuzz_fail("rule %s: Configure %s is not JSON: %s", r->id, v->key, v->json);
            cJSON_Delete(json);
        }
    }
    check_round_trips(&rs);
    dlb_rules_clear(&rs);
    if (rs.rules || rs.cnt)
        fuzz_fail("clear left %zu rules", rs.cnt);
    return 0;
}
