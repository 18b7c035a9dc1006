/* Canonical JSON of configuration rules (rules.h): dlb_rules_to_json() and,
 * with a small strict JSON reader, dlb_rules_from_json(). Scalars are
 * written as rules_canon.c has them. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "rules.h"
#include "rules_internal.h"

/* ---- strict JSON reading (RFC 8259) ------------------------------------------------ */

/* Reads dlb_rules_from_json() input and re-writes Configure values
 * canonically. cJSON is not used: it keeps numbers only as doubles, and a
 * canonical value must keep every digit of 12345678901234567890123. */
typedef struct jrd {
    const char *s;
    size_t len, pos;
    char *errstr;
    size_t errstr_size;
    char where[160]; /* what is being read: "rules[2].include.user" */
} jrd_t;

static int jfail(jrd_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jfail(jrd_t *j, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return dlb_seterr(j->errstr, j->errstr_size, DLB_ERR_INVALID, "%s: %s (offset %zu)", j->where,
                      what, j->pos);
}

static int jnomem(jrd_t *j)
{
    return dlb_seterr(j->errstr, j->errstr_size, DLB_ERR_NOMEM, "%s: out of memory", j->where);
}

/* The next significant character (consumed by the caller), 0 at the end. */
static char jpeek(jrd_t *j)
{
    while (j->pos < j->len && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' ||
                               j->s[j->pos] == '\n' || j->s[j->pos] == '\r'))
        j->pos++;
    return j->pos < j->len ? j->s[j->pos] : 0;
}

/* Only white space left. */
static int jend(jrd_t *j)
{
    jpeek(j);
    return j->pos >= j->len;
}

/* After '[' or '{' (n = 0) or a member: 1 when a member follows, 0 at the
 * closing bracket (consumed), or an error. */
static int jmore(jrd_t *j, char close, size_t *n)
{
    char ch = jpeek(j);

    if (ch == close) {
        j->pos++;
        return 0;
    }
    if (*n) {
        if (ch != ',')
            return jfail(j, "expected ',' or '%c'", close);
        j->pos++;
    }
    (*n)++;
    return 1;
}

static int jcolon(jrd_t *j)
{
    if (jpeek(j) != ':')
        return jfail(j, "expected ':'");
    j->pos++;
    return 0;
}

/* cp as UTF-8. */
static int sb_utf8(dlb_sbuf_t *b, unsigned cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return dlb_sbuf_put(b, u, n);
}

static int jhex4(jrd_t *j, unsigned *out)
{
    unsigned v = 0;

    if (j->len - j->pos < 4)
        return jfail(j, "bad \\u escape");
    for (int i = 0; i < 4; i++) {
        char ch = j->s[j->pos + i];

        v <<= 4;
        if (ch >= '0' && ch <= '9')
            v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            v |= (unsigned)(ch - 'A' + 10);
        else
            return jfail(j, "bad \\u escape");
    }
    j->pos += 4;
    *out = v;
    return 0;
}

static int jescape(jrd_t *j, dlb_sbuf_t *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *at;
    unsigned cp, lo;
    int rc;

    if (j->pos >= j->len)
        return jfail(j, "unterminated string");
    if (j->s[j->pos] != 'u') {
        if (!j->s[j->pos] || !(at = strchr(from, j->s[j->pos])))
            return jfail(j, "bad escape in a string");
        j->pos++;
        return dlb_sbuf_put(out, &to[at - from], 1) ? jnomem(j) : 0;
    }
    j->pos++;
    if ((rc = jhex4(j, &cp)))
        return rc;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (j->len - j->pos < 2 || j->s[j->pos] != '\\' || j->s[j->pos + 1] != 'u')
            return jfail(j, "unpaired surrogate in a \\u escape");
        j->pos += 2;
        if ((rc = jhex4(j, &lo)))
            return rc;
        if (lo < 0xdc00 || lo > 0xdfff)
            return jfail(j, "unpaired surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    } else if (cp >= 0xdc00 && cp <= 0xdfff) {
        return jfail(j, "unpaired surrogate in a \\u escape");
    }
    return sb_utf8(out, cp) ? jnomem(j) : 0;
}

/* A string; its bytes (UTF-8, NULs included) go to out, which is non-NULL
 * even for "". The caller frees out->p, also on error. */
static int jstring(jrd_t *j, dlb_sbuf_t *out)
{
    if (jpeek(j) != '"')
        return jfail(j, "expected a string");
    j->pos++;
    if (dlb_sbuf_put(out, "", 0))
        return jnomem(j);
    for (;;) {
        unsigned cp;
        size_t n;
        int rc;

        if (j->pos >= j->len)
            return jfail(j, "unterminated string");
        if (j->s[j->pos] == '"') {
            j->pos++;
            return 0;
        }
        if ((unsigned char)j->s[j->pos] < 0x20)
            return jfail(j, "control character in a string");
        if (j->s[j->pos] == '\\') {
            j->pos++;
            if ((rc = jescape(j, out)))
                return rc;
            continue;
        }
        if (!(n = dlb_rules_utf8_seq(j->s + j->pos, j->len - j->pos, &cp)))
            return jfail(j, "invalid UTF-8");
        if (dlb_sbuf_put(out, j->s + j->pos, n))
            return jnomem(j);
        j->pos += n;
    }
}

/* A string that becomes a C string (no NUL); non-empty when asked. */
static int jcstring(jrd_t *j, int nonempty, char **out)
{
    dlb_sbuf_t b = {0};
    size_t at;
    int rc;

    jpeek(j);
    at = j->pos;
    if (!(rc = jstring(j, &b)) && (strlen(b.p) != b.len || (nonempty && !b.len))) {
        j->pos = at;
        rc = jfail(j, b.len ? "contains a NUL character" : "expected a non-empty string");
    }
    if (rc) {
        free(b.p);
        return rc;
    }
    *out = b.p;
    return 0;
}

/* A number in JSON's grammar, written to out as the YAML loader types the
 * same text, so that a value reads the same from YAML and from JSON. */
static int jdigit(const jrd_t *j, size_t k)
{
    return k < j->len && j->s[k] >= '0' && j->s[k] <= '9';
}

static int jnumber(jrd_t *j, dlb_sbuf_t *out, int *integer)
{
    const char *s = j->s;
    size_t st = j->pos, i = j->pos;
    int rc = 0, ok;

    *integer = 1;
    if (i < j->len && s[i] == '-')
        i++;
    if (i < j->len && s[i] == '0')
        i++;
    else if (jdigit(j, i))
        while (jdigit(j, i))
            i++;
    else
        return jfail(j, "expected a JSON value");
    if (i < j->len && s[i] == '.') {
        *integer = 0;
        if (!jdigit(j, i + 1)) {
            j->pos = i + 1;
            return jfail(j, "expected a digit");
        }
        for (i++; jdigit(j, i); i++)
            ;
    }
    if (i < j->len && (s[i] == 'e' || s[i] == 'E')) {
        *integer = 0;
        i++;
        if (i < j->len && (s[i] == '-' || s[i] == '+'))
            i++;
        if (!jdigit(j, i)) {
            j->pos = i;
            return jfail(j, "expected a digit");
        }
        while (jdigit(j, i))
            i++;
    }
    ok = *integer ? dlb_rules_json_int(out, s + st, i - st, &rc)
                  : dlb_rules_json_float(out, s + st, i - st, &rc);
    if (rc)
        return jnomem(j);
    if (!ok) /* not finite as a double, or too long to be one */
        return jfail(j, "number %.*s%s does not fit a double", (int)(i - st > 40 ? 40 : i - st),
                     s + st, i - st > 40 ? "..." : "");
    j->pos = i;
    return 0;
}

static int jint(jrd_t *j, int min, int max, int *out)
{
    dlb_sbuf_t b = {0};
    size_t at;
    long long v;
    int integer, rc;

    if (jpeek(j) != '-' && !jdigit(j, j->pos))
        return jfail(j, "expected an integer");
    at = j->pos;
    if (!(rc = jnumber(j, &b, &integer))) {
        errno = 0;
        v = integer ? strtoll(b.p, NULL, 10) : 0;
        if (!integer || errno || v < min || v > max) {
            j->pos = at;
            rc = jfail(j, integer ? "integer out of range" : "expected an integer");
        } else {
            *out = (int)v;
        }
    }
    free(b.p);
    return rc;
}

static int jvalue(jrd_t *j, dlb_sbuf_t *out, int depth);

static int jarray(jrd_t *j, dlb_sbuf_t *out, int depth)
{
    size_t n = 0;
    int rc;

    j->pos++;
    if (dlb_sbuf_put(out, "[", 1))
        return jnomem(j);
    while ((rc = jmore(j, ']', &n)) > 0) {
        if (n > 1 && dlb_sbuf_put(out, ",", 1))
            return jnomem(j);
        if ((rc = jvalue(j, out, depth + 1)))
            return rc;
    }
    return rc ? rc : dlb_sbuf_put(out, "]", 1) ? jnomem(j) : 0;
}

static int jobject(jrd_t *j, dlb_sbuf_t *out, int depth)
{
    dlb_rules_keyset_t ks = {0};
    size_t n = 0;
    int rc;

    j->pos++;
    if (dlb_sbuf_put(out, "{", 1))
        return jnomem(j);
    while ((rc = jmore(j, '}', &n)) > 0) {
        dlb_sbuf_t k = {0};
        size_t at;

        jpeek(j);
        at = j->pos;
        if (!(rc = jstring(j, &k))) {
            if ((rc = dlb_rules_keyset_add(&ks, k.p, k.len)) > 0) {
                j->pos = at;
                rc = jfail(j, "duplicate key \"%.64s\"", k.p);
            } else if (rc || (n > 1 && dlb_sbuf_put(out, ",", 1)) ||
                       dlb_rules_json_string(out, k.p, k.len) || dlb_sbuf_put(out, ":", 1)) {
                rc = jnomem(j);
            } else if (!(rc = jcolon(j))) {
                rc = jvalue(j, out, depth + 1);
            }
        }
        free(k.p);
        if (rc)
            break;
    }
    dlb_rules_keyset_free(&ks);
    return rc ? rc : dlb_sbuf_put(out, "}", 1) ? jnomem(j) : 0;
}

/* Any value, written canonically to out; depth counts as in the YAML loader. */
static int jvalue(jrd_t *j, dlb_sbuf_t *out, int depth)
{
    static const char *const lits[] = {"true", "false", "null"};
    char ch = jpeek(j);
    dlb_sbuf_t s = {0};
    int rc, integer;

    if (depth > DLB_RULES_MAX_DEPTH)
        return jfail(j, "nested deeper than %d levels", DLB_RULES_MAX_DEPTH);
    switch (ch) {
    case '"':
        if (!(rc = jstring(j, &s)) && dlb_rules_json_string(out, s.p, s.len))
            rc = jnomem(j);
        free(s.p);
        return rc;
    case '[':
        return jarray(j, out, depth);
    case '{':
        return jobject(j, out, depth);
    case 't':
    case 'f':
    case 'n':
        for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
            size_t n = strlen(lits[i]);

            if (j->len - j->pos >= n && !memcmp(j->s + j->pos, lits[i], n)) {
                j->pos += n;
                return dlb_sbuf_put(out, lits[i], n) ? jnomem(j) : 0;
            }
        }
        return jfail(j, "expected a JSON value");
    default:
        return jnumber(j, out, &integer);
    }
}

/* One JSON text holding one value (a Configure value), canonically. */
int dlb_rules_canon_value(const char *json, dlb_sbuf_t *out, char *errstr, size_t errstr_size,
                          const char *fmt, ...)
{
    jrd_t j = {json ? json : "", json ? strlen(json) : 0, 0, errstr, errstr_size, ""};
    va_list ap;
    int rc;

    va_start(ap, fmt);
    vsnprintf(j.where, sizeof(j.where), fmt, ap);
    va_end(ap);
    if (!(rc = jvalue(&j, out, 2)) && !jend(&j))
        rc = jfail(&j, "unexpected text after the value");
    return rc;
}

/* ---- dlb_rules_from_json ----------------------------------------------------------- */

enum { J_ID, J_PRIORITY, J_INCLUDE, J_EXCLUDE, J_CONFIGURE, J_FILE, J_LINE, J_CNT };
static const char *const json_keys[J_CNT] = {"id",        "priority", "include", "exclude",
                                             "configure", "file",     "line"};

/* '{' or '[', else an error saying what was expected. */
static int jopen(jrd_t *j, char open, const char *what)
{
    if (jpeek(j) != open)
        return jfail(j, "expected %s", what);
    j->pos++;
    return 0;
}

/* The next member of an object jopen() opened (*n = 0 before the first): 1
 * with its key (a C string the caller frees; its offset in *at) and the ':'
 * read, 0 at the closing '}', or an error. */
static int jkey(jrd_t *j, size_t *n, char **key, size_t *at)
{
    int rc = jmore(j, '}', n);

    if (rc <= 0)
        return rc;
    jpeek(j);
    *at = j->pos;
    if ((rc = jcstring(j, 0, key)))
        return rc;
    if ((rc = jcolon(j))) {
        free(*key);
        return rc;
    }
    return 1;
}

/* A key refused ("unknown field", "duplicate key" ...) at its offset. */
static int jbadkey(jrd_t *j, size_t at, char *key, const char *what)
{
    int rc;

    j->pos = at;
    rc = jfail(j, "%s \"%.64s\"", what, key);
    free(key);
    return rc;
}

static int jmatches(jrd_t *j, size_t idx, const char *section, dlb_rule_match_t **out,
                    size_t *out_cnt)
{
    size_t n = 0, cap = 0, at;
    char *attr;
    int rc;

    if ((rc = jopen(j, '{', "an object of attribute to values")))
        return rc;
    while ((rc = jkey(j, &n, &attr, &at)) > 0) {
        dlb_rule_match_t *m;
        size_t vn = 0, vcap = 0;
        int known = 0, dup = 0;

        for (size_t i = 0; dlb_meta_attr_names[i]; i++)
            known |= !strcmp(dlb_meta_attr_names[i], attr);
        for (size_t i = 0; i < *out_cnt; i++)
            dup |= !strcmp((*out)[i].attr, attr);
        if (!known || dup)
            return jbadkey(j, at, attr, known ? "duplicate attribute" : "unknown attribute");
        if (dlb_vec_reserve((void **)out, &cap, *out_cnt + 1, sizeof(**out))) {
            free(attr);
            return jnomem(j);
        }
        m = &(*out)[(*out_cnt)++];
        memset(m, 0, sizeof(*m));
        m->attr = attr;
        snprintf(j->where, sizeof(j->where), "rules[%zu].%s.%s", idx, section, attr);
        if ((rc = jopen(j, '[', "a non-empty array of strings")))
            return rc;
        while ((rc = jmore(j, ']', &vn)) > 0) {
            if (dlb_vec_reserve((void **)&m->values, &vcap, m->values_cnt + 1, sizeof(*m->values)))
                return jnomem(j);
            if ((rc = jcstring(j, 1, &m->values[m->values_cnt])))
                return rc;
            m->values_cnt++;
        }
        if (rc)
            return rc;
        if (!m->values_cnt)
            return jfail(j, "expected a non-empty array of strings");
        snprintf(j->where, sizeof(j->where), "rules[%zu].%s", idx, section);
    }
    return rc;
}

static int jconfigure(jrd_t *j, size_t idx, dlb_rule_t *r)
{
    size_t n = 0, cap = 0, at;
    char *key;
    int rc;

    if ((rc = jopen(j, '{', "an object of key to value")))
        return rc;
    while ((rc = jkey(j, &n, &key, &at)) > 0) {
        dlb_config_value_t *v;
        dlb_sbuf_t b = {0};
        int dup = 0;

        for (size_t i = 0; i < r->configure_cnt; i++)
            dup |= !strcmp(r->configure[i].key, key);
        if (dup)
            return jbadkey(j, at, key, "duplicate key");
        if (dlb_vec_reserve((void **)&r->configure, &cap, r->configure_cnt + 1,
                            sizeof(*r->configure))) {
            free(key);
            return jnomem(j);
        }
        v = &r->configure[r->configure_cnt++];
        v->key = key;
        v->json = NULL;
        snprintf(j->where, sizeof(j->where), "rules[%zu].configure.%.64s", idx, key);
        if ((rc = jvalue(j, &b, 2))) {
            free(b.p);
            return rc;
        }
        v->json = b.p;
        snprintf(j->where, sizeof(j->where), "rules[%zu].configure", idx);
    }
    return rc;
}

static int jrule(jrd_t *j, size_t idx, dlb_rule_t *r)
{
    unsigned seen = 0;
    size_t n = 0, at;
    char *key;
    int rc, k;

    snprintf(j->where, sizeof(j->where), "rules[%zu]", idx);
    if ((rc = jopen(j, '{', "a rule object")))
        return rc;
    while ((rc = jkey(j, &n, &key, &at)) > 0) {
        for (k = 0; k < J_CNT && strcmp(json_keys[k], key); k++)
            ;
        if (k == J_CNT || (seen & (1u << k)))
            return jbadkey(j, at, key, k == J_CNT ? "unknown field" : "duplicate field");
        free(key);
        seen |= 1u << k;
        snprintf(j->where, sizeof(j->where), "rules[%zu].%s", idx, json_keys[k]);
        switch (k) {
        case J_ID:
            rc = jcstring(j, 1, &r->id);
            break;
        case J_PRIORITY:
            rc = jint(j, INT_MIN, INT_MAX, &r->priority);
            break;
        case J_INCLUDE:
            rc = jmatches(j, idx, "include", &r->include, &r->include_cnt);
            break;
        case J_EXCLUDE:
            rc = jmatches(j, idx, "exclude", &r->exclude, &r->exclude_cnt);
            break;
        case J_CONFIGURE:
            rc = jconfigure(j, idx, r);
            break;
        case J_FILE:
            rc = jcstring(j, 0, &r->file);
            break;
        default:
            rc = jint(j, 0, INT_MAX, &r->line);
            break;
        }
        if (rc)
            return rc;
        snprintf(j->where, sizeof(j->where), "rules[%zu]", idx);
    }
    for (k = 0; !rc && k < J_CNT; k++)
        if (!(seen & (1u << k)))
            rc = jfail(j, "missing field \"%s\"", json_keys[k]);
    return rc;
}

int dlb_rules_from_json(const char *json, size_t len, dlb_rules_t *out, char *errstr,
                        size_t errstr_size)
{
    jrd_t j = {json, len, 0, errstr, errstr_size, "rules"};
    dlb_rules_t rs = {0};
    size_t cap = 0, n = 0, dup = 0, first = 0;
    int rc;

    out->rules = NULL;
    out->cnt = 0;
    if (errstr_size)
        errstr[0] = '\0';
    if ((rc = jopen(&j, '[', "an array of rules")))
        goto out;
    while ((rc = jmore(&j, ']', &n)) > 0) {
        if (dlb_vec_reserve((void **)&rs.rules, &cap, rs.cnt + 1, sizeof(*rs.rules))) {
            rc = jnomem(&j);
            break;
        }
        memset(&rs.rules[rs.cnt], 0, sizeof(rs.rules[rs.cnt]));
        rs.cnt++; /* owned by the set from here on, even half-filled */
        if ((rc = jrule(&j, rs.cnt - 1, &rs.rules[rs.cnt - 1])))
            break;
        snprintf(j.where, sizeof(j.where), "rules");
    }
    if (!rc && !jend(&j))
        rc = jfail(&j, "unexpected text after the rules");
    if (!rc && (rc = dlb_rules_find_dup_id(&rs, &dup, &first)) < 0)
        rc = jnomem(&j);
    else if (rc > 0)
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                        "rules[%zu].id: duplicate rule id \"%.64s\" (first at rules[%zu])", dup,
                        rs.rules[dup].id, first);
out:
    if (rc) {
        dlb_rules_clear(&rs);
        return rc;
    }
    *out = rs;
    return 0;
}

/* ---- dlb_rules_to_json ------------------------------------------------------------- */

static int utf8_valid(const char *s)
{
    size_t n = strlen(s);
    unsigned cp;

    for (size_t i = 0, k; i < n; i += k)
        if (!(k = dlb_rules_utf8_seq(s + i, n - i, &cp)))
            return 0;
    return 1;
}

/* Strings of a rule as JSON; they must be UTF-8 (PostgreSQL and every JSON
 * reader refuse anything else), which the YAML loader guarantees but a rule
 * built in code or a file name may not. */
int dlb_rules_put_jstr(dlb_sbuf_t *b, const char *s, char *errstr, size_t errstr_size, size_t idx,
                       const char *field)
{
    if (!s)
        s = "";
    if (!utf8_valid(s))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "rules[%zu].%s: not UTF-8", idx,
                          field);
    return dlb_rules_json_string(b, s, strlen(s)) ? DLB_ERR_NOMEM : 0;
}

static int put_int(dlb_sbuf_t *b, int v)
{
    char num[16];

    snprintf(num, sizeof(num), "%d", v);
    return dlb_sbuf_str(b, num) ? DLB_ERR_NOMEM : 0;
}

/* The values of an attribute as a JSON array. */
int dlb_rules_put_values(dlb_sbuf_t *b, const dlb_rule_match_t *m, char *errstr, size_t errstr_size,
                         size_t idx, const char *section)
{
    int rc = dlb_sbuf_put(b, "[", 1) ? DLB_ERR_NOMEM : 0;

    for (size_t k = 0; !rc && k < m->values_cnt; k++) {
        if (k && dlb_sbuf_put(b, ",", 1))
            return DLB_ERR_NOMEM;
        rc = dlb_rules_put_jstr(b, m->values[k], errstr, errstr_size, idx, section);
    }
    return rc ? rc : dlb_sbuf_put(b, "]", 1) ? DLB_ERR_NOMEM : 0;
}

static int put_matches(dlb_sbuf_t *b, const dlb_rule_match_t *m, size_t cnt, char *errstr,
                       size_t errstr_size, size_t idx, const char *section)
{
    int rc = dlb_sbuf_put(b, "{", 1) ? DLB_ERR_NOMEM : 0;

    for (size_t i = 0; !rc && i < cnt; i++) {
        if ((i && dlb_sbuf_put(b, ",", 1)) ||
            dlb_rules_json_string(b, m[i].attr, strlen(m[i].attr)) || dlb_sbuf_put(b, ":", 1))
            return DLB_ERR_NOMEM;
        rc = dlb_rules_put_values(b, &m[i], errstr, errstr_size, idx, section);
    }
    return rc ? rc : dlb_sbuf_put(b, "}", 1) ? DLB_ERR_NOMEM : 0;
}

static int put_rule(dlb_sbuf_t *b, const dlb_rule_t *r, size_t idx, unsigned flags, char *errstr,
                    size_t errstr_size)
{
    int rc;

    if (dlb_sbuf_str(b, "{\"id\":"))
        return DLB_ERR_NOMEM;
    if ((rc = dlb_rules_put_jstr(b, r->id, errstr, errstr_size, idx, "id")))
        return rc;
    if (dlb_sbuf_str(b, ",\"priority\":") || put_int(b, r->priority) ||
        dlb_sbuf_str(b, ",\"include\":"))
        return DLB_ERR_NOMEM;
    if ((rc = put_matches(b, r->include, r->include_cnt, errstr, errstr_size, idx, "include")))
        return rc;
    if (dlb_sbuf_str(b, ",\"exclude\":"))
        return DLB_ERR_NOMEM;
    if ((rc = put_matches(b, r->exclude, r->exclude_cnt, errstr, errstr_size, idx, "exclude")))
        return rc;
    if (dlb_sbuf_str(b, ",\"configure\":{"))
        return DLB_ERR_NOMEM;
    for (size_t i = 0; i < r->configure_cnt; i++) {
        const dlb_config_value_t *v = &r->configure[i];

        if (i && dlb_sbuf_put(b, ",", 1))
            return DLB_ERR_NOMEM;
        if ((rc = dlb_rules_put_jstr(b, v->key, errstr, errstr_size, idx, "configure")) ||
            dlb_sbuf_put(b, ":", 1))
            return rc ? rc : DLB_ERR_NOMEM;
        if ((rc = dlb_rules_canon_value(v->json, b, errstr, errstr_size,
                                        "rules[%zu].configure.%.64s", idx, v->key ? v->key : "")))
            return rc;
    }
    if (dlb_sbuf_put(b, "}", 1))
        return DLB_ERR_NOMEM;
    if (!(flags & DLB_RULES_JSON_NO_SOURCE)) {
        if (dlb_sbuf_str(b, ",\"file\":"))
            return DLB_ERR_NOMEM;
        if ((rc = dlb_rules_put_jstr(b, r->file, errstr, errstr_size, idx, "file")))
            return rc;
        if (dlb_sbuf_str(b, ",\"line\":") || put_int(b, r->line))
            return DLB_ERR_NOMEM;
    }
    return dlb_sbuf_put(b, "}", 1) ? DLB_ERR_NOMEM : 0;
}

static int newline_indent(dlb_sbuf_t *b, int depth)
{
    if (dlb_sbuf_put(b, "\n", 1))
        return DLB_ERR_NOMEM;
    for (int i = 0; i < depth; i++)
        if (dlb_sbuf_put(b, "  ", 2))
            return DLB_ERR_NOMEM;
    return 0;
}

/* Compact JSON (ours: no white space outside strings) indented, two spaces a
 * level, "key": value, empty containers kept on one line. */
static int json_pretty(dlb_sbuf_t *out, const char *s, size_t n)
{
    int depth = 0, in_str = 0, rc = 0;

    for (size_t i = 0; i < n && !rc; i++) {
        if (in_str) {
            if (s[i] == '\\' && i + 1 < n) {
                rc = dlb_sbuf_put(out, s + i, 2);
                i++;
            } else {
                rc = dlb_sbuf_put(out, s + i, 1);
                in_str = s[i] != '"';
            }
            continue;
        }
        switch (s[i]) {
        case '{':
        case '[':
            if (i + 1 < n && (s[i + 1] == '}' || s[i + 1] == ']')) {
                rc = dlb_sbuf_put(out, s + i++, 2);
                break;
            }
            rc = dlb_sbuf_put(out, s + i, 1) || newline_indent(out, ++depth);
            break;
        case '}':
        case ']':
            rc = newline_indent(out, --depth) || dlb_sbuf_put(out, s + i, 1);
            break;
        case ',':
            rc = dlb_sbuf_put(out, ",", 1) || newline_indent(out, depth);
            break;
        case ':':
            rc = dlb_sbuf_put(out, ": ", 2);
            break;
        default:
            in_str = s[i] == '"';
            rc = dlb_sbuf_put(out, s + i, 1);
            break;
        }
    }
    return rc || dlb_sbuf_put(out, "\n", 1) ? DLB_ERR_NOMEM : 0;
}

int dlb_rules_to_json(const dlb_rules_t *rules, unsigned flags, char **out, char *errstr,
                      size_t errstr_size)
{
    dlb_sbuf_t b = {0}, p = {0};
    int rc = 0;

    *out = NULL;
    if (dlb_sbuf_put(&b, "[", 1))
        rc = DLB_ERR_NOMEM;
    for (size_t i = 0; !rc && i < rules->cnt; i++) {
        if (i && dlb_sbuf_put(&b, ",", 1))
            rc = DLB_ERR_NOMEM;
        else
            rc = put_rule(&b, &rules->rules[i], i, flags, errstr, errstr_size);
    }
    if (!rc && dlb_sbuf_put(&b, "]", 1))
        rc = DLB_ERR_NOMEM;
    if (!rc && (flags & DLB_RULES_JSON_PRETTY)) {
        rc = json_pretty(&p, b.p, b.len);
        free(b.p);
        b = p;
    }
    if (rc) {
        free(b.p);
        if (rc == DLB_ERR_NOMEM)
            dlb_seterr(errstr, errstr_size, rc, "out of memory");
        return rc;
    }
    *out = b.p;
    return 0;
}
