/* libFuzzer target: dlb_rules_parse() of arbitrary bytes, what the
 * configuration component does with every rules file it syncs.
 *
 * Properties, besides no crash, leak, stack exhaustion or undefined behaviour:
 *  - a failure is invalid (or out of memory), with a "<name>:" message, and
 *    leaves nothing;
 *  - an accepted rule has an id, known lower-case attributes with at least one
 *    non-empty value each, and Configure values that are valid JSON to cJSON. */
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
    dlb_rules_clear(&rs);
    if (rs.rules || rs.cnt)
        fuzz_fail("clear left %zu rules", rs.cnt);
    return 0;
}
