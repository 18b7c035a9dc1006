/* Configuration rules as text for people (rules.h): dlb_rules_to_yaml(),
 * the YAML that dlb_rules_parse() reads back, and dlb_rules_diff(). Both
 * write values as the canonical JSON of rules_json.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "rules.h"
#include "rules_internal.h"

/* ---- dlb_rules_to_yaml ------------------------------------------------------------- */

/* Code points YAML reads as line breaks (NEL, U+2028/9) or refuses in a
 * stream (C1 controls, BOM, U+FFFE/F): written as \u escapes. */
static int yaml_unsafe(unsigned cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff ||
           cp == 0xfffe || cp == 0xffff;
}

/* YAML allows an implicit key of 1024 characters at most; a longer one
 * needs "? key". Past 256 bytes of JSON a key is written that way, since
 * \u escapes (below) may triple its length. */
#define YAML_KEY_MAX 256

/* Whether the JSON string at s[i] is an object key too long to be implicit. */
static int yaml_long_key(const char *s, size_t n, size_t i)
{
    size_t e = i + 1;

    while (e < n && s[e] != '"')
        e += s[e] == '\\' ? 2 : 1;
    return e + 1 < n && s[e + 1] == ':' && e + 1 - i > YAML_KEY_MAX;
}

/* Our JSON as YAML flow, emptying t: a space after ',' and ':' (libyaml, YAML
 * 1.1, wants one after ':' in a flow mapping), strings double-quoted with the
 * JSON escapes, which YAML shares, plus \u escapes for what YAML cannot hold
 * raw. The YAML loader reads it back to the same canonical JSON. */
static int yaml_flow(dlb_sbuf_t *out, dlb_sbuf_t *t)
{
    int in_str = 0, rc = 0;

    for (size_t i = 0, k; i < t->len && !rc; i += k) {
        const char *s = t->p + i;
        unsigned cp = 0;
        char esc[8];

        k = 1;
        if (!in_str) {
            if (*s == '"' && yaml_long_key(t->p, t->len, i))
                rc = dlb_sbuf_put(out, "? ", 2);
            rc = rc || (*s == ',' || *s == ':' ? dlb_sbuf_put(out, *s == ',' ? ", " : ": ", 2)
                                               : dlb_sbuf_put(out, s, 1));
            in_str = *s == '"';
        } else if (*s == '\\' && i + 1 < t->len) {
            k = 2;
            rc = dlb_sbuf_put(out, s, 2);
        } else if ((unsigned char)*s >= 0x80 && (k = dlb_rules_utf8_seq(s, t->len - i, &cp)) &&
                   yaml_unsafe(cp)) {
            snprintf(esc, sizeof(esc), "\\u%04x", cp);
            rc = dlb_sbuf_put(out, esc, 6);
        } else {
            k = k ? k : 1;
            rc = dlb_sbuf_put(out, s, k);
            in_str = *s != '"';
        }
    }
    t->len = 0;
    return rc ? DLB_ERR_NOMEM : 0;
}

/* The file and line as a YAML comment: ASCII only, so nothing in it can end
 * the comment or be refused by a YAML reader. */
static int yaml_source(dlb_sbuf_t *y, const dlb_rule_t *r)
{
    char num[16];

    if (!r->file || r->line <= 0)
        return dlb_sbuf_put(y, "---\n", 4);
    if (dlb_sbuf_str(y, "--- # "))
        return DLB_ERR_NOMEM;
    for (const char *p = r->file; *p; p++) {
        char ch = (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f ? '?' : *p;

        if (dlb_sbuf_put(y, &ch, 1))
            return DLB_ERR_NOMEM;
    }
    snprintf(num, sizeof(num), ":%d\n", r->line);
    return dlb_sbuf_str(y, num);
}

static int yaml_matches(dlb_sbuf_t *y, dlb_sbuf_t *t, const char *section,
                        const dlb_rule_match_t *m, size_t cnt, size_t idx, char *errstr,
                        size_t errstr_size)
{
    int rc = 0;

    if (cnt && (dlb_sbuf_str(y, section) || dlb_sbuf_str(y, ":\n")))
        return DLB_ERR_NOMEM;
    for (size_t i = 0; !rc && i < cnt; i++) {
        if (dlb_sbuf_str(y, "  ") || dlb_sbuf_str(y, m[i].attr) || dlb_sbuf_str(y, ": "))
            return DLB_ERR_NOMEM;
        if (!(rc = dlb_rules_put_values(t, &m[i], errstr, errstr_size, idx, section)) &&
            (yaml_flow(y, t) || dlb_sbuf_put(y, "\n", 1)))
            rc = DLB_ERR_NOMEM;
    }
    return rc;
}

static int yaml_rule(dlb_sbuf_t *y, dlb_sbuf_t *t, const dlb_rule_t *r, size_t idx, char *errstr,
                     size_t errstr_size)
{
    char num[32];
    int rc, explicit;

    if (yaml_source(y, r) || dlb_sbuf_str(y, "id: "))
        return DLB_ERR_NOMEM;
    if ((rc = dlb_rules_put_jstr(t, r->id, errstr, errstr_size, idx, "id")))
        return rc;
    snprintf(num, sizeof(num), "\nPriority: %d\n", r->priority);
    if (yaml_flow(y, t) || dlb_sbuf_str(y, num))
        return DLB_ERR_NOMEM;
    if ((rc =
             yaml_matches(y, t, "Include", r->include, r->include_cnt, idx, errstr, errstr_size)) ||
        (rc = yaml_matches(y, t, "Exclude", r->exclude, r->exclude_cnt, idx, errstr, errstr_size)))
        return rc;
    if (r->configure_cnt && (dlb_sbuf_str(y, "Configure") || dlb_sbuf_str(y, ":\n")))
        return DLB_ERR_NOMEM;
    for (size_t i = 0; i < r->configure_cnt; i++) {
        const dlb_config_value_t *v = &r->configure[i];

        if ((rc = dlb_rules_put_jstr(t, v->key, errstr, errstr_size, idx, "configure")))
            return rc;
        explicit = t->len > YAML_KEY_MAX;
        if (dlb_sbuf_str(y, explicit ? "  ? " : "  ") || yaml_flow(y, t) ||
            dlb_sbuf_str(y, explicit ? "\n  : " : ": "))
            return DLB_ERR_NOMEM;
        if ((rc = dlb_rules_canon_value(v->json, t, errstr, errstr_size,
                                        "rules[%zu].configure.%.64s", idx, v->key ? v->key : "")))
            return rc;
        if (yaml_flow(y, t) || dlb_sbuf_put(y, "\n", 1))
            return DLB_ERR_NOMEM;
    }
    return 0;
}

int dlb_rules_to_yaml(const dlb_rules_t *rules, char **out, char *errstr, size_t errstr_size)
{
    dlb_sbuf_t y = {0}, t = {0};
    int rc = 0;

    *out = NULL;
    if (!rules->cnt && dlb_sbuf_str(&y, "# no rules\n"))
        rc = DLB_ERR_NOMEM;
    for (size_t i = 0; !rc && i < rules->cnt; i++)
        rc = yaml_rule(&y, &t, &rules->rules[i], i, errstr, errstr_size);
    free(t.p);
    if (rc) {
        free(y.p);
        if (rc == DLB_ERR_NOMEM)
            dlb_seterr(errstr, errstr_size, rc, "out of memory");
        return rc;
    }
    *out = y.p;
    return 0;
}

/* ---- dlb_rules_diff ---------------------------------------------------------------- */

/* One field of a rule for comparison: a name ("priority", "include.user",
 * "configure.lr") and its value as JSON. */
typedef struct field {
    int section; /* 0 priority, 1 include, 2 exclude, 3 configure */
    char *name;
    char *json;
} field_t;

typedef struct fields {
    field_t *f;
    size_t cnt, cap;
} fields_t;

static void fields_free(fields_t *fs)
{
    for (size_t i = 0; i < fs->cnt; i++) {
        free(fs->f[i].name);
        free(fs->f[i].json);
    }
    free(fs->f);
    memset(fs, 0, sizeof(*fs));
}

/* Appends name (prefix.key) with json; takes over json (freed on error). */
static int fields_add(fields_t *fs, int section, const char *prefix, const char *key, char *json)
{
    dlb_sbuf_t n = {0};

    if ((prefix && (dlb_sbuf_str(&n, prefix) || dlb_sbuf_put(&n, ".", 1))) ||
        dlb_sbuf_str(&n, key) ||
        dlb_vec_reserve((void **)&fs->f, &fs->cap, fs->cnt + 1, sizeof(*fs->f))) {
        free(n.p);
        free(json);
        return DLB_ERR_NOMEM;
    }
    fs->f[fs->cnt].section = section;
    fs->f[fs->cnt].name = n.p;
    fs->f[fs->cnt++].json = json;
    return 0;
}

/* Values of an attribute as a JSON array; NULL when out of memory (or not
 * UTF-8, which a rule the YAML or JSON reader made never is). */
static char *values_json(const dlb_rule_match_t *m)
{
    dlb_sbuf_t b = {0};

    if (dlb_rules_put_values(&b, m, NULL, 0, 0, "")) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* priority, include.<attr>, exclude.<attr>, configure.<key>, in rule order. */
static int rule_fields(const dlb_rule_t *r, fields_t *fs)
{
    const dlb_rule_match_t *sec[2] = {r->include, r->exclude};
    const size_t cnt[2] = {r->include_cnt, r->exclude_cnt};
    const char *names[2] = {"include", "exclude"};
    char num[16], *v;

    snprintf(num, sizeof(num), "%d", r->priority);
    if (!(v = strdup(num)) || fields_add(fs, 0, NULL, "priority", v))
        return DLB_ERR_NOMEM;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < cnt[s]; i++)
            if (!(v = values_json(&sec[s][i])) ||
                fields_add(fs, 1 + s, names[s], sec[s][i].attr, v))
                return DLB_ERR_NOMEM;
    for (size_t i = 0; i < r->configure_cnt; i++) {
        const dlb_config_value_t *c = &r->configure[i];

        if (!(v = strdup(c->json ? c->json : "null")) || fields_add(fs, 3, "configure", c->key, v))
            return DLB_ERR_NOMEM;
    }
    return 0;
}

static const field_t *field_find(const fields_t *fs, const char *name)
{
    for (size_t i = 0; i < fs->cnt; i++)
        if (!strcmp(fs->f[i].name, name))
            return &fs->f[i];
    return NULL;
}

static int diff_line(dlb_sbuf_t *out, const char *name, const field_t *a, const field_t *b)
{
    return dlb_sbuf_str(out, "    ") || dlb_sbuf_str(out, name) || dlb_sbuf_str(out, ": ") ||
           dlb_sbuf_str(out, a ? a->json : "(none)") || dlb_sbuf_str(out, " -> ") ||
           dlb_sbuf_str(out, b ? b->json : "(none)") || dlb_sbuf_put(out, "\n", 1);
}

/* "~ id" and a line per changed field, when anything changed. */
static int diff_rule(dlb_sbuf_t *out, const dlb_rule_t *ra, const dlb_rule_t *rb)
{
    fields_t fa = {0}, fb = {0};
    dlb_sbuf_t lines = {0};
    int rc;

    if (!(rc = rule_fields(ra, &fa)) && !(rc = rule_fields(rb, &fb))) {
        /* Section by section: a's fields in a's order, then those only b
         * has, in b's. */
        for (int s = 0; s < 4; s++)
            for (size_t i = 0; !rc && i < fa.cnt + fb.cnt; i++) {
                const field_t *f = i < fa.cnt ? &fa.f[i] : &fb.f[i - fa.cnt];
                const field_t *x = field_find(&fa, f->name), *y = field_find(&fb, f->name);

                if (f->section != s || (i >= fa.cnt && x))
                    continue;
                if ((!x || !y || strcmp(x->json, y->json)) && diff_line(&lines, f->name, x, y))
                    rc = DLB_ERR_NOMEM;
            }
    }
    if (!rc && lines.len &&
        (dlb_sbuf_str(out, "~ ") || dlb_sbuf_str(out, rb->id) || dlb_sbuf_put(out, "\n", 1) ||
         dlb_sbuf_put(out, lines.p, lines.len)))
        rc = DLB_ERR_NOMEM;
    fields_free(&fa);
    fields_free(&fb);
    free(lines.p);
    return rc;
}

/* The rule of rs with this id, via ix (dlb_rules_ids_sorted(rs)); NULL if none. */
static const dlb_rule_t *rule_by_id(const dlb_rules_t *rs, const dlb_rules_idref_t *ix,
                                    const char *id)
{
    size_t lo = 0, hi = rs->cnt;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ix[mid].id, id);

        if (!c)
            return &rs->rules[ix[mid].i];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The ids of rs that other also has, in rs's order, as a JSON array. */
static int common_ids(dlb_sbuf_t *b, const dlb_rules_t *rs, const dlb_rules_t *other,
                      const dlb_rules_idref_t *oix)
{
    size_t n = 0;

    if (dlb_sbuf_put(b, "[", 1))
        return DLB_ERR_NOMEM;
    for (size_t i = 0; i < rs->cnt; i++)
        if (rule_by_id(other, oix, rs->rules[i].id) &&
            ((n++ && dlb_sbuf_put(b, ",", 1)) ||
             dlb_rules_json_string(b, rs->rules[i].id, strlen(rs->rules[i].id))))
            return DLB_ERR_NOMEM;
    return dlb_sbuf_put(b, "]", 1) ? DLB_ERR_NOMEM : 0;
}

int dlb_rules_diff(const dlb_rules_t *a, const dlb_rules_t *b, char **out, char *errstr,
                   size_t errstr_size)
{
    dlb_rules_idref_t *ia = dlb_rules_ids_sorted(a), *ib = dlb_rules_ids_sorted(b);
    dlb_sbuf_t o = {0}, oa = {0}, ob = {0};
    char num[32];
    int rc = !ia || !ib || dlb_sbuf_put(&o, "", 0) ? DLB_ERR_NOMEM : 0;

    *out = NULL;
    for (size_t i = 0; !rc && i < a->cnt; i++)
        if (!rule_by_id(b, ib, a->rules[i].id) &&
            (dlb_sbuf_str(&o, "- ") || dlb_sbuf_str(&o, a->rules[i].id) ||
             dlb_sbuf_put(&o, "\n", 1)))
            rc = DLB_ERR_NOMEM;
    for (size_t i = 0; !rc && i < b->cnt; i++) {
        const dlb_rule_t *rb = &b->rules[i], *ra = rule_by_id(a, ia, rb->id);

        if (ra) {
            rc = diff_rule(&o, ra, rb);
            continue;
        }
        snprintf(num, sizeof(num), ":%d)\n", rb->line);
        if (dlb_sbuf_str(&o, "+ ") || dlb_sbuf_str(&o, rb->id) || dlb_sbuf_str(&o, " (") ||
            dlb_sbuf_str(&o, rb->file ? rb->file : "?") || dlb_sbuf_str(&o, num))
            rc = DLB_ERR_NOMEM;
    }
    if (!rc && ((rc = common_ids(&oa, a, b, ib)) || (rc = common_ids(&ob, b, a, ia))))
        rc = DLB_ERR_NOMEM;
    if (!rc && strcmp(oa.p, ob.p) &&
        (dlb_sbuf_str(&o, "~ order: ") || dlb_sbuf_str(&o, oa.p) || dlb_sbuf_str(&o, " -> ") ||
         dlb_sbuf_str(&o, ob.p) || dlb_sbuf_put(&o, "\n", 1)))
        rc = DLB_ERR_NOMEM;
    free(ia);
    free(ib);
    free(oa.p);
    free(ob.p);
    if (rc) {
        free(o.p);
        return dlb_seterr(errstr, errstr_size, rc, "out of memory");
    }
    *out = o.p;
    return 0;
}
