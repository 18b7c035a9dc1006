/* For the modules of the configuration rules beside rules.c: rules_canon.c
 * (the canonical text of scalars), rules_json.c (canonical JSON out and in)
 * and rules_text.c (YAML out, diff). Not for other callers: rules.h is the
 * API. */
#ifndef DLB_RULES_INTERNAL_H
#define DLB_RULES_INTERNAL_H

#include <stddef.h>

#include "rules.h"
#include "sbuf.h"
#include "vec.h"

/* ---- rules.c ------------------------------------------------------------------------ */

/* The attribute names, lower-case, NULL-terminated. */

/* The keys of one mapping or object, to refuse repeated ones. Zero-initialise. */
typedef struct dlb_rules_keyset {
    char **k;
    size_t *n;
    size_t cnt, cap;
} dlb_rules_keyset_t;

/** @brief Add the n bytes of s. @returns 1 if already there, 0 added, or
 *         DLB_ERR_NOMEM. */
int dlb_rules_keyset_add(dlb_rules_keyset_t *ks, const char *s, size_t n);

void dlb_rules_keyset_free(dlb_rules_keyset_t *ks);

/* A rule id and the index of its rule in the set. */
typedef struct dlb_rules_idref {
    const char *id;
    size_t i;
} dlb_rules_idref_t;

/** @brief The ids of rs sorted by (id, index), malloc'ed; NULL when out of
 *         memory. */
dlb_rules_idref_t *dlb_rules_ids_sorted(const dlb_rules_t *rs);

/** @brief The earliest rule (in set order) whose id an earlier rule has.
 *  @returns 1 with *dup and *first (the earlier rule) set, 0 when ids are
 *           unique, or DLB_ERR_NOMEM. */
int dlb_rules_find_dup_id(const dlb_rules_t *rs, size_t *dup, size_t *first);

/* ---- rules_canon.c ---------------------------------------------------------------- */

/** @brief Append the n bytes of s as a canonical JSON string: only \" \\ \n
 *         \t \r and \u00XX escapes. @returns 0 or DLB_ERR_NOMEM. */
int dlb_rules_json_string(dlb_sbuf_t *b, const char *s, size_t n);

/** @brief Append the integer text s (YAML 1.1: decimal with '_', 0b, 0, 0x)
 *         as a decimal JSON integer.
 *  @returns 1 appended, 0 s is no integer (or *rc = DLB_ERR_NOMEM). */
int dlb_rules_json_int(dlb_sbuf_t *b, const char *s, size_t n, int *rc);

/** @brief Append the float text s as the shortest JSON number that reads
 *         back to the same double, with a '.' or exponent.
 *  @returns 1 appended, 0 s is no finite float (or *rc = DLB_ERR_NOMEM). */
int dlb_rules_json_float(dlb_sbuf_t *b, const char *s, size_t n, int *rc);

/** @brief Length of the valid UTF-8 sequence at s (n > 0 bytes available),
 *         its code point in *cp; 0 when invalid (overlong, surrogate, past
 *         U+10FFFF, truncated). */
size_t dlb_rules_utf8_seq(const char *s, size_t n, unsigned *cp);

/* ---- rules_json.c ----------------------------------------------------------------- */

/** @brief Re-write the JSON text json (one value; NULL reads as "")
 *         canonically into out. errstr names the value as fmt says.
 *  @returns 0, DLB_ERR_INVALID or DLB_ERR_NOMEM. */
int dlb_rules_canon_value(const char *json, dlb_sbuf_t *out, char *errstr, size_t errstr_size,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/** @brief Append s (NULL as "") as a JSON string.
 *  @returns 0, DLB_ERR_INVALID (not UTF-8: "rules[idx].field: not UTF-8")
 *           or DLB_ERR_NOMEM. */
int dlb_rules_put_jstr(dlb_sbuf_t *b, const char *s, char *errstr, size_t errstr_size, size_t idx,
                       const char *field);

/** @brief Append the values of an attribute as a JSON array of strings.
 *  @returns as dlb_rules_put_jstr(), section named as the field. */
int dlb_rules_put_values(dlb_sbuf_t *b, const dlb_rule_match_t *m, char *errstr, size_t errstr_size,
                         size_t idx, const char *section);

#endif
