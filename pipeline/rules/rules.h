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
    dlb_config_value_t *configure; /* key -> value as JSON text (pipeline/codec/event.h) */
    size_t configure_cnt;
    char *file; /* the file (name given to dlb_rules_parse()) it came from */
    int line;   /* 1-based line of the rule in its file */
} dlb_rule_t;

typedef struct dlb_rules {
    dlb_rule_t *rules;
    size_t cnt;
} dlb_rules_t;

/** @brief Parse YAML rules text. name is used in error messages
 *         ("<name>:<line>:<col>: <what>") and default rule ids. An error
 *         says what is wrong and where, never quoting the text: a rules
 *         file may hold a secret or garbage, and errors end up in logs.
 *  @returns 0, or DLB_ERR_INVALID (bad YAML, unknown key or attribute, wrong
 *           type, duplicate key or rule id, too deep or too large) or
 *           DLB_ERR_NOMEM. On error *out is empty ({NULL, 0}). */
int dlb_rules_parse(const char *name, const char *text, size_t len, dlb_rules_t *out, char *errstr,
                    size_t errstr_size);

/** @brief Read path and parse it with the path as name. Only a regular file
 *         is read: anything else (a FIFO, socket, device or directory) is
 *         refused without blocking, as is a file of more than
 *         DLB_RULES_MAX_BYTES ("<name>: larger than the limit of 4194304
 *         bytes for a rules file; not read").
 *  @returns as dlb_rules_parse() (DLB_ERR_INVALID also for a file that is not
 *           regular or too large), or DLB_ERR_NOTFOUND (no such file),
 *           DLB_ERR_CONF (unreadable). */
int dlb_rules_load_file(const char *path, dlb_rules_t *out, char *errstr, size_t errstr_size);

/** @brief Load several files into one set, in the given order (a rule of a
 *         later file comes after every rule of an earlier one), all or
 *         nothing: any file's error, or a rule id used in two files
 *         ("b.yaml:7: duplicate rule id (first at a.yaml:2)"), leaves *out
 *         empty.
 *  @returns as dlb_rules_load_file(). */
int dlb_rules_load_files(const char *const *paths, size_t n, dlb_rules_t *out, char *errstr,
                         size_t errstr_size);

/* Flags of dlb_rules_load_files_as(). NOFOLLOW: refuse a path whose last
 * component is a symbolic link (a caller that resolved the path itself, so a
 * link swapped in afterwards is not followed). */
#define DLB_RULES_LOAD_NOFOLLOW 1u

/** @brief dlb_rules_load_files(), reading paths[i] under the name names[i]
 *         (errors, rule files and default ids; names NULL: the paths), as
 *         flags say.
 *  @returns as dlb_rules_load_file(). */
int dlb_rules_load_files_as(const char *const *paths, const char *const *names, size_t n,
                            unsigned flags, dlb_rules_t *out, char *errstr, size_t errstr_size);

/* Canonical JSON (dlb_rules_to_json()): an array of rules, each an object with
 * the keys id, priority, include, exclude, configure, file, line in that
 * order; include / exclude map attribute -> array of values and configure maps
 * key -> value, all in the order of the rule; Configure values are the JSON
 * they are, written compactly, numbers as the YAML loader types them (1e3 ->
 * 1000.0), strings with only \" \\ \n \t \r and \u00XX escapes:
 *
 *   [{"id":"a","priority":0,"include":{"user":["u1","u2"]},"exclude":{},
 *     "configure":{"lr":0.1},"file":"a.yaml","line":1}]      (one line)
 *
 * Two rule sets with the same rules in the same order have the same canonical
 * JSON byte for byte, however their YAML was laid out (quoting, flow or block
 * style, comments, 0x1F or 31), as long as they come from the same files and
 * lines; without file and line (NO_SOURCE below), wherever they came from. */

/* Flags of dlb_rules_to_json(). PRETTY: indented, for people (not canonical;
 * dlb_rules_from_json() reads it). NO_SOURCE: without file and line, what a
 * version's checksum covers, so that moving a rule to another file or line
 * changes nothing. */
#define DLB_RULES_JSON_PRETTY    1u
#define DLB_RULES_JSON_NO_SOURCE 2u

/** @brief Write rules as canonical JSON (flags 0), or as flags say.
 *  @param out  set to a malloc'ed NUL-terminated string the caller frees
 *  @returns 0, DLB_ERR_INVALID (a Configure value that is not JSON, or a
 *           string that is not UTF-8; errstr names the rule index and field,
 *           e.g. "rules[0].configure.lr: expected a JSON value (offset 0)")
 *           or DLB_ERR_NOMEM; *out is NULL on error. */
int dlb_rules_to_json(const dlb_rules_t *rules, unsigned flags, char **out, char *errstr,
                      size_t errstr_size);

/** @brief Read rules back from dlb_rules_to_json() output (canonical or
 *         pretty; with file and line). Strict: any JSON (RFC 8259), but every
 *         key is required, none may be unknown or repeated, types must match,
 *         attribute names must be the lower-case ones, values and ids
 *         non-empty, ids unique. Configure values are re-written canonically.
 *  @returns 0 or DLB_ERR_INVALID (errstr names the rule index and field, e.g.
 *           "rules[2].include.user: expected a non-empty string (offset 181)")
 *           or DLB_ERR_NOMEM. On error *out is empty. */
int dlb_rules_from_json(const char *json, size_t len, dlb_rules_t *out, char *errstr,
                        size_t errstr_size);

/** @brief Write rules in the YAML format dlb_rules_parse() reads, one document
 *         per rule with its id, Priority and non-empty sections, strings
 *         double-quoted and Configure values as JSON (YAML flow), so that
 *         parsing the text gives the same canonical JSON without source.
 *  @param out  set to a malloc'ed string the caller frees
 *  @returns as dlb_rules_to_json(). */
int dlb_rules_to_yaml(const dlb_rules_t *rules, char **out, char *errstr, size_t errstr_size);

/** @brief What changed from rules a to rules b, by rule id, one line each:
 *         "- id" removed; "~ id" changed, followed by one indented line per
 *         changed field ("    priority: 0 -> 10", "    include.user:
 *         [\"a\"] -> [\"a\",\"b\"]", "    configure.lr: 0.1 -> (none)");
 *         "+ id (file:line)" added; and last "~ order: [ids] -> [ids]" when
 *         the rules of both come in another order. Removed rules come first
 *         (in a's order), then changed and added ones in b's order.
 *  @param out  set to a malloc'ed string, "" when the sets are equal
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_rules_diff(const dlb_rules_t *a, const dlb_rules_t *b, char **out, char *errstr,
                   size_t errstr_size);

/** @brief Free everything and leave r empty. Safe on an empty or cleared r. */
void dlb_rules_clear(dlb_rules_t *r);

#endif
