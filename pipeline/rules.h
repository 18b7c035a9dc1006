/* Configuration rules (DLRover Brain "Configuration" component): YAML files of
 * rules, each selecting jobs by Include / Exclude attributes and giving the
 * Configure values those jobs receive.
 *
 *   id: big-batch            # optional; default "<name>#<index>", index from 1
 *   Priority: 10             # optional integer, default 0
 *   Include:
 *     User: "user1"
 *     Group: [group2, group3]
 *   Exclude:
 *     Cluster: "cluster4"
 *   Configure:
 *     A: 1
 *     B: "C"
 *
 * One rule per document ("---" separated), or a top-level sequence of rules.
 * Keys id / Priority / Include / Exclude / Configure and the attribute names
 * (user, group, app, cluster, namespace, scenario, framework, name) are
 * case-insensitive; attribute names are stored lower-case. A null value
 * ("Include:" with nothing after it) is an empty section. A document holding
 * only null ("---" alone, "~") has no rule.
 *
 * Configure values become JSON text. Only untagged plain scalars are typed,
 * following YAML 1.1 (PyYAML's resolver):
 *   null:  "" ~ null Null NULL                                  -> null
 *   bool:  yes/no true/false on/off in lower, Capital or UPPER  -> true / false
 *   int:   [-+]?(0|[1-9][0-9_]*) decimal, 0b binary, 0 octal, 0x hex, '_'
 *          ignored -> a JSON integer in decimal (binary/octal/hex beyond
 *          int64 stay strings)
 *   float: [-+]?(digits.digits?|.digits)([eE][-+]?digits)? and, as YAML 1.2,
 *          digits[eE][-+]?digits -> a JSON number; .inf and .nan have no JSON
 *          form and stay strings
 * Everything else, quoted or tagged scalars included, is a JSON string. Aliases
 * are refused (they would let a small file expand without bound), as are
 * complex keys and duplicate keys at any level. */
#ifndef DLB_RULES_H
#define DLB_RULES_H

#include <stddef.h>

#include "event.h"

/* Bounds that keep a hostile file (or the fuzzer) from exhausting the stack or
 * memory: nesting counts from the document (rule mapping = 1). */
#define DLB_RULES_MAX_DEPTH 32
#define DLB_RULES_MAX_BYTES (4 * 1024 * 1024)

typedef struct dlb_rule_match {
    char *attr; /* lower-case attribute name */
    char **values;
    size_t values_cnt;
} dlb_rule_match_t;

typedef struct dlb_rule {
    char *id;     /* "id" key if given, else "<file>#<index>" (index from 1) */
    int priority; /* "Priority" / "priority", default 0 */
    dlb_rule_match_t *include;
    size_t include_cnt;
    dlb_rule_match_t *exclude;
    size_t exclude_cnt;
    dlb_config_value_t *configure; /* key -> value as JSON text (pipeline/event.h) */
    size_t configure_cnt;
    int line; /* 1-based line of the rule in its file */
} dlb_rule_t;

typedef struct dlb_rules {
    dlb_rule_t *rules;
    size_t cnt;
} dlb_rules_t;

/** @brief Parse YAML rules text. name is used in error messages
 *         ("<name>:<line>:<col>: <what>") and default rule ids.
 *  @returns 0, or DLB_ERR_INVALID (bad YAML, unknown key or attribute, wrong
 *           type, duplicate key or rule id, too deep or too large) or
 *           DLB_ERR_NOMEM. On error *out is empty ({NULL, 0}). */
int dlb_rules_parse(const char *name, const char *text, size_t len, dlb_rules_t *out, char *errstr,
                    size_t errstr_size);

/** @brief Read path and parse it with the path as name.
 *  @returns as dlb_rules_parse(), or DLB_ERR_NOTFOUND (no such file),
 *           DLB_ERR_CONF (unreadable). */
int dlb_rules_load_file(const char *path, dlb_rules_t *out, char *errstr, size_t errstr_size);

/** @brief Free everything and leave r empty. Safe on an empty or cleared r. */
void dlb_rules_clear(dlb_rules_t *r);

#endif
