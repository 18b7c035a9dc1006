/* Configuration rules from YAML, read with libyaml's event parser so every
 * error has the line and column of the offending token (and never its text:
 * errors are logged, files may hold secrets) and nesting is bounded before
 * anything recurses; rule files, and the helpers of the whole set
 * (rules_internal.h). Canonical JSON is rules_json.c, YAML out and the diff
 * rules_text.c, the canonical text of scalars rules_canon.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "err.h"
#include "rules.h"
#include "rules_internal.h"

typedef struct pctx {
    yaml_parser_t p;
    const char *name;
    const char *text;
    size_t len;
    char *errstr;
    size_t errstr_size;
} pctx_t;

static int fail(pctx_t *c, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(pctx_t *c, const yaml_mark_t *m, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return dlb_seterr(c->errstr, c->errstr_size, DLB_ERR_INVALID, "%s:%zu:%zu: %s", c->name,
                      m->line + 1, m->column + 1, what);
}

static int nomem(pctx_t *c)
{
    return dlb_seterr(c->errstr, c->errstr_size, DLB_ERR_NOMEM, "%s: out of memory", c->name);
}

/* The next event; aliases are refused here so nothing downstream sees one. */
static int next_event(pctx_t *c, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&c->p, ev)) {
        const yaml_parser_t *p = &c->p;
        const yaml_mark_t *m = &p->problem_mark;
        yaml_mark_t at = {0};

        /* Reader errors (bad encoding) carry only a byte offset, and the
         * reader decodes ahead of the parser: count lines and characters up to
         * the offset, as libyaml's own marks do. */
        if (p->error == YAML_READER_ERROR) {
            for (size_t i = 0; i < p->problem_offset && i < c->len; i++) {
                if (c->text[i] == '\n') {
                    at.line++;
                    at.column = 0;
                } else if (((unsigned char)c->text[i] & 0xc0) != 0x80) {
                    at.column++;
                }
            }
            m = &at;
        }
        memset(ev, 0, sizeof(*ev));
        if (p->error == YAML_MEMORY_ERROR)
            return nomem(c);
        if (p->context)
            return fail(c, m, "%s: %s", p->context, p->problem ? p->problem : "bad YAML");
        return fail(c, m, "%s", p->problem ? p->problem : "bad YAML");
    }
    if (ev->type == YAML_ALIAS_EVENT) {
        yaml_mark_t m = ev->start_mark;

        yaml_event_delete(ev);
        return fail(c, &m, "aliases are not supported");
    }
    return 0;
}

static const char *sval(const yaml_event_t *ev)
{
    return (const char *)ev->data.scalar.value;
}

static int is_plain(const yaml_event_t *ev)
{
    return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
}

static int eq(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && !memcmp(s, lit, n);
}

static int is_null_text(const char *s, size_t n)
{
    return n == 0 || eq(s, n, "~") || eq(s, n, "null") || eq(s, n, "Null") || eq(s, n, "NULL");
}

static int is_null_scalar(const yaml_event_t *ev)
{
    return ev->type == YAML_SCALAR_EVENT && is_plain(ev) &&
           is_null_text(sval(ev), ev->data.scalar.length);
}

/* 1 true, 0 false, -1 not a boolean (YAML 1.1 as PyYAML resolves it). */
static int bool_text(const char *s, size_t n)
{
    static const char *const t[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const char *const f[] = {"no",    "No",  "NO",  "false", "False",
                                    "FALSE", "off", "Off", "OFF"};

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (eq(s, n, t[i]))
            return 1;
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (eq(s, n, f[i]))
            return 0;
    return -1;
}

/* ---- Configure values --------------------------------------------------------- */

/* A scalar as JSON: plain ones typed (rules.h; numbers in rules_canon.c), any
 * other a string. */
static int scalar_json(const yaml_event_t *ev, dlb_sbuf_t *b)
{
    const char *s = sval(ev);
    size_t n = ev->data.scalar.length;
    int rc, t;

    if (is_plain(ev)) {
        if (is_null_text(s, n))
            return dlb_sbuf_str(b, "null");
        if ((t = bool_text(s, n)) >= 0)
            return dlb_sbuf_str(b, t ? "true" : "false");
        if (dlb_rules_json_int(b, s, n, &rc) || rc)
            return rc;
        if (dlb_rules_json_float(b, s, n, &rc) || rc)
            return rc;
    }
    return dlb_rules_json_string(b, s, n);
}

/* One mapping's pairs, its start event read: each key, a scalar (else
 * keys_msg is the error), handed to key, then its value to value; the
 * events are deleted after each call. Stops at the first error. Every
 * mapping of a rule file is read through here, each with its own checks. */
typedef struct map_walk {
    const char *keys_msg;
    int (*key)(pctx_t *c, const yaml_event_t *key, void *arg);
    int (*value)(pctx_t *c, const yaml_event_t *value, void *arg);
    void *arg;
} map_walk_t;

static int map_walk(pctx_t *c, const map_walk_t *w)
{
    yaml_event_t ev;
    int rc;

    for (;;) {
        if ((rc = next_event(c, &ev)))
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        rc = ev.type != YAML_SCALAR_EVENT ? fail(c, &ev.start_mark, "%s", w->keys_msg)
                                          : w->key(c, &ev, w->arg);
        yaml_event_delete(&ev);
        if (rc || (rc = next_event(c, &ev)))
            return rc;
        rc = w->value(c, &ev, w->arg);
        yaml_event_delete(&ev);
        if (rc)
            return rc;
    }
}

static int value_json(pctx_t *c, const yaml_event_t *start, dlb_sbuf_t *b, int depth);

static int seq_json(pctx_t *c, dlb_sbuf_t *b, int depth)
{
    yaml_event_t ev;
    int rc, first = 1;

    if ((rc = dlb_sbuf_put(b, "[", 1)))
        return nomem(c);
    for (;;) {
        if ((rc = next_event(c, &ev)))
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (!first && dlb_sbuf_put(b, ",", 1))
            rc = nomem(c);
        first = 0;
        if (!rc)
            rc = value_json(c, &ev, b, depth + 1);
        yaml_event_delete(&ev);
        if (rc)
            return rc;
    }
    return dlb_sbuf_put(b, "]", 1) ? nomem(c) : 0;
}

/* A mapping as a JSON object, its keys once each. */
typedef struct map_json_walk {
    dlb_sbuf_t *b;
    dlb_rules_keyset_t ks;
    int depth, first;
} map_json_walk_t;

static int map_json_key(pctx_t *c, const yaml_event_t *key, void *arg)
{
    map_json_walk_t *m = arg;
    int rc = dlb_rules_keyset_add(&m->ks, sval(key), key->data.scalar.length);

    if (rc)
        return rc > 0 ? fail(c, &key->start_mark, "duplicate key") : nomem(c);
    if ((!m->first && dlb_sbuf_put(m->b, ",", 1)) ||
        dlb_rules_json_string(m->b, sval(key), key->data.scalar.length) ||
        dlb_sbuf_put(m->b, ":", 1))
        return nomem(c);
    m->first = 0;
    return 0;
}

static int map_json_value(pctx_t *c, const yaml_event_t *value, void *arg)
{
    map_json_walk_t *m = arg;

    return value_json(c, value, m->b, m->depth + 1);
}

static int map_json(pctx_t *c, dlb_sbuf_t *b, int depth)
{
    map_json_walk_t m = {b, {0}, depth, 1};
    int rc;

    if (dlb_sbuf_put(b, "{", 1))
        return nomem(c);
    rc = map_walk(c,
                  &(map_walk_t){"mapping keys must be scalars", map_json_key, map_json_value, &m});
    if (!rc && dlb_sbuf_put(b, "}", 1))
        rc = nomem(c);
    dlb_rules_keyset_free(&m.ks);
    return rc;
}

static int value_json(pctx_t *c, const yaml_event_t *start, dlb_sbuf_t *b, int depth)
{
    if (depth > DLB_RULES_MAX_DEPTH)
        return fail(c, &start->start_mark, "nested deeper than %d levels", DLB_RULES_MAX_DEPTH);
    switch (start->type) {
    case YAML_SCALAR_EVENT:
        return scalar_json(start, b) ? nomem(c) : 0;
    case YAML_SEQUENCE_START_EVENT:
        return seq_json(c, b, depth);
    case YAML_MAPPING_START_EVENT:
        return map_json(c, b, depth);
    default:
        return fail(c, &start->start_mark, "unexpected YAML event");
    }
}

/* ---- rules ----------------------------------------------------------------------- */
static void match_free(dlb_rule_match_t *m, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++) {
        for (size_t j = 0; j < m[i].values_cnt; j++)
            free(m[i].values[j]);
        free(m[i].values);
        free(m[i].attr);
    }
    free(m);
}

static void rule_free(dlb_rule_t *r)
{
    free(r->id);
    free(r->file);
    match_free(r->include, r->include_cnt);
    match_free(r->exclude, r->exclude_cnt);
    for (size_t i = 0; i < r->configure_cnt; i++) {
        free(r->configure[i].key);
        free(r->configure[i].json);
    }
    free(r->configure);
    memset(r, 0, sizeof(*r));
}

/* A scalar that becomes a C string: no NUL inside ("\0" escapes exist). */
static int scalar_dup(pctx_t *c, const yaml_event_t *ev, const char *what, char **out)
{
    if (strlen(sval(ev)) != ev->data.scalar.length)
        return fail(c, &ev->start_mark, "%s contains a NUL character", what);
    if (!(*out = strdup(sval(ev))))
        return nomem(c);
    return 0;
}

/* Values of one attribute: a scalar or a sequence of scalars, none empty. */
static int match_values(pctx_t *c, const yaml_event_t *start, const char *attr, dlb_rule_match_t *m)
{
    yaml_event_t ev;
    size_t cap = 0;
    int rc;

    if (start->type == YAML_SCALAR_EVENT) {
        if (!start->data.scalar.length)
            return fail(c, &start->start_mark, "attribute %s has an empty value", attr);
        if (!(m->values = malloc(sizeof(*m->values))))
            return nomem(c);
        if ((rc = scalar_dup(c, start, "value", &m->values[0])))
            return rc;
        m->values_cnt = 1;
        return 0;
    }
    if (start->type != YAML_SEQUENCE_START_EVENT)
        return fail(c, &start->start_mark,
                    "attribute %s needs a value or a list of values, not a mapping", attr);
    for (;;) {
        if ((rc = next_event(c, &ev)))
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_SCALAR_EVENT)
            rc = fail(c, &ev.start_mark, "values of attribute %s must be scalars", attr);
        else if (!ev.data.scalar.length)
            rc = fail(c, &ev.start_mark, "attribute %s has an empty value", attr);
        else if (dlb_vec_reserve((void **)&m->values, &cap, m->values_cnt + 1, sizeof(*m->values)))
            rc = nomem(c);
        else if (!(rc = scalar_dup(c, &ev, "value", &m->values[m->values_cnt])))
            m->values_cnt++;
        yaml_event_delete(&ev);
        if (rc)
            return rc;
    }
    if (!m->values_cnt)
        return fail(c, &start->start_mark, "attribute %s has an empty list", attr);
    return 0;
}

/* Include or Exclude: attribute names, each once, to values. */
typedef struct matches_walk {
    const char *section;
    dlb_rule_match_t **out;
    size_t *out_cnt, cap;
} matches_walk_t;

static int matches_key(pctx_t *c, const yaml_event_t *key, void *arg)
{
    matches_walk_t *w = arg;
    const char *attr = NULL;
    dlb_rule_match_t *m;

    for (size_t i = 0; dlb_meta_attr_names[i] && !attr; i++)
        if (strlen(dlb_meta_attr_names[i]) == key->data.scalar.length &&
            !strcasecmp(dlb_meta_attr_names[i], sval(key)))
            attr = dlb_meta_attr_names[i];
    if (!attr)
        return fail(c, &key->start_mark,
                    "unknown attribute in %s (expected user, group, app, cluster, "
                    "namespace, scenario, framework or name)",
                    w->section);
    for (size_t i = 0; i < *w->out_cnt; i++)
        if (!strcmp((*w->out)[i].attr, attr))
            return fail(c, &key->start_mark, "duplicate attribute %s in %s", attr, w->section);
    if (dlb_vec_reserve((void **)w->out, &w->cap, *w->out_cnt + 1, sizeof(**w->out)))
        return nomem(c);
    m = &(*w->out)[*w->out_cnt];
    memset(m, 0, sizeof(*m));
    if (!(m->attr = strdup(attr)))
        return nomem(c);
    (*w->out_cnt)++; /* owned by the rule from here on, even half-filled */
    return 0;
}

static int matches_value(pctx_t *c, const yaml_event_t *value, void *arg)
{
    matches_walk_t *w = arg;
    dlb_rule_match_t *m = &(*w->out)[*w->out_cnt - 1];

    return match_values(c, value, m->attr, m);
}

static int section_matches(pctx_t *c, const yaml_event_t *start, const char *section,
                           dlb_rule_match_t **out, size_t *out_cnt)
{
    matches_walk_t w = {section, out, out_cnt, 0};
    char keys_msg[64];

    if (is_null_scalar(start))
        return 0;
    if (start->type != YAML_MAPPING_START_EVENT)
        return fail(c, &start->start_mark, "%s must be a mapping of attribute to values", section);
    snprintf(keys_msg, sizeof(keys_msg), "%s keys must be attribute names", section);
    return map_walk(c, &(map_walk_t){keys_msg, matches_key, matches_value, &w});
}

/* Configure: keys, each once, to values kept as JSON. */
typedef struct configure_walk {
    dlb_rule_t *r;
    size_t cap;
    int depth;
} configure_walk_t;

static int configure_key(pctx_t *c, const yaml_event_t *key, void *arg)
{
    configure_walk_t *w = arg;
    dlb_rule_t *r = w->r;
    dlb_config_value_t *v;
    int rc;

    for (size_t i = 0; i < r->configure_cnt; i++)
        if (!strcmp(r->configure[i].key, sval(key)))
            return fail(c, &key->start_mark, "duplicate Configure key");
    if (dlb_vec_reserve((void **)&r->configure, &w->cap, r->configure_cnt + 1,
                        sizeof(*r->configure)))
        return nomem(c);
    v = &r->configure[r->configure_cnt];
    memset(v, 0, sizeof(*v));
    if (!(rc = scalar_dup(c, key, "Configure key", &v->key)))
        r->configure_cnt++;
    return rc;
}

static int configure_value(pctx_t *c, const yaml_event_t *value, void *arg)
{
    configure_walk_t *w = arg;
    dlb_sbuf_t b = {0};
    int rc = value_json(c, value, &b, w->depth + 1);

    if (rc) {
        free(b.p);
        return rc;
    }
    w->r->configure[w->r->configure_cnt - 1].json = b.p;
    return 0;
}

static int section_configure(pctx_t *c, const yaml_event_t *start, dlb_rule_t *r, int depth)
{
    configure_walk_t w = {r, 0, depth};

    if (is_null_scalar(start))
        return 0;
    if (start->type != YAML_MAPPING_START_EVENT)
        return fail(c, &start->start_mark, "Configure must be a mapping of key to value");
    return map_walk(
        c, &(map_walk_t){"Configure keys must be scalars", configure_key, configure_value, &w});
}

static int parse_priority(pctx_t *c, const yaml_event_t *ev, int *out)
{
    const char *s = sval(ev);
    size_t n = ev->data.scalar.length, i = 0;
    long long v = 0;
    int neg = 0;

    if (ev->type != YAML_SCALAR_EVENT || !is_plain(ev))
        return fail(c, &ev->start_mark, "Priority must be an integer");
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i == n)
        return fail(c, &ev->start_mark, "Priority must be an integer");
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return fail(c, &ev->start_mark, "Priority must be an integer");
        v = v * 10 + (s[i] - '0');
        if (v > (long long)INT_MAX + 1)
            return fail(c, &ev->start_mark, "Priority out of range");
    }
    if (neg)
        v = -v;
    if (v > INT_MAX || v < INT_MIN)
        return fail(c, &ev->start_mark, "Priority out of range");
    *out = (int)v;
    return 0;
}

enum { K_INCLUDE, K_EXCLUDE, K_CONFIGURE, K_PRIORITY, K_ID, K_CNT };
static const char *const rule_keys[K_CNT] = {"Include", "Exclude", "Configure", "Priority", "id"};

/* A rule's keys, each once, and their sections. */
typedef struct rule_walk {
    dlb_rule_t *r;
    yaml_mark_t id_mark;
    int seen[K_CNT], k;
} rule_walk_t;

static int rule_key(pctx_t *c, const yaml_event_t *key, void *arg)
{
    rule_walk_t *w = arg;

    w->k = -1;
    for (int i = 0; i < K_CNT && w->k < 0; i++)
        if (strlen(rule_keys[i]) == key->data.scalar.length && !strcasecmp(rule_keys[i], sval(key)))
            w->k = i;
    if (w->k < 0)
        return fail(c, &key->start_mark,
                    "unknown key (expected id, Priority, Include, Exclude or Configure)");
    if (w->seen[w->k]++)
        return fail(c, &key->start_mark, "duplicate key %s", rule_keys[w->k]);
    return 0;
}

static int rule_value(pctx_t *c, const yaml_event_t *ev, void *arg)
{
    rule_walk_t *w = arg;

    switch (w->k) {
    case K_INCLUDE:
        return section_matches(c, ev, "Include", &w->r->include, &w->r->include_cnt);
    case K_EXCLUDE:
        return section_matches(c, ev, "Exclude", &w->r->exclude, &w->r->exclude_cnt);
    case K_CONFIGURE:
        return section_configure(c, ev, w->r, 1);
    case K_PRIORITY:
        return parse_priority(c, ev, &w->r->priority);
    default:
        w->id_mark = ev->start_mark;
        if (ev->type != YAML_SCALAR_EVENT || !ev->data.scalar.length)
            return fail(c, &ev->start_mark, "id must be a non-empty string");
        return scalar_dup(c, ev, "id", &w->r->id);
    }
}

/* One rule; start is its MAPPING_START. Appended to rs only when complete. */
static int parse_rule(pctx_t *c, const yaml_event_t *start, dlb_rules_t *rs, size_t *cap)
{
    dlb_rule_t r;
    rule_walk_t w = {&r, start->start_mark, {0}, -1};
    int rc = 0;

    memset(&r, 0, sizeof(r));
    r.line = (int)start->start_mark.line + 1;
    if (start->type != YAML_MAPPING_START_EVENT)
        return fail(c, &start->start_mark, "a rule must be a mapping");
    if (!(r.file = strdup(c->name)))
        return nomem(c);
    if ((rc = map_walk(c, &(map_walk_t){"rule keys must be scalars", rule_key, rule_value, &w})))
        goto out;
    if (!r.id) {
        int n = snprintf(NULL, 0, "%s#%zu", c->name, rs->cnt + 1);

        if (!(r.id = malloc((size_t)n + 1))) {
            rc = nomem(c);
            goto out;
        }
        snprintf(r.id, (size_t)n + 1, "%s#%zu", c->name, rs->cnt + 1);
    }
    for (size_t i = 0; i < rs->cnt; i++)
        if (!strcmp(rs->rules[i].id, r.id)) {
            rc = fail(c, &w.id_mark, "duplicate rule id (first at line %d)", rs->rules[i].line);
            goto out;
        }
    if (dlb_vec_reserve((void **)&rs->rules, cap, rs->cnt + 1, sizeof(*rs->rules))) {
        rc = nomem(c);
        goto out;
    }
    rs->rules[rs->cnt++] = r;
    return 0;
out:
    rule_free(&r);
    return rc;
}

/* A document: a rule, a sequence of rules, or null (no rule). */
static int parse_document(pctx_t *c, dlb_rules_t *rs, size_t *cap)
{
    yaml_event_t ev, item;
    int rc;

    if ((rc = next_event(c, &ev)))
        return rc;
    if (ev.type == YAML_SEQUENCE_START_EVENT) {
        for (;;) {
            if ((rc = next_event(c, &item)))
                break;
            if (item.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&item);
                break;
            }
            rc = parse_rule(c, &item, rs, cap);
            yaml_event_delete(&item);
            if (rc)
                break;
        }
    } else if (!is_null_scalar(&ev)) {
        rc = parse_rule(c, &ev, rs, cap);
    }
    yaml_event_delete(&ev);
    if (rc)
        return rc;
    if ((rc = next_event(c, &ev)))
        return rc;
    /* The parser guarantees DOCUMENT_END after one root node. */
    yaml_event_delete(&ev);
    return 0;
}

int dlb_rules_parse(const char *name, const char *text, size_t len, dlb_rules_t *out, char *errstr,
                    size_t errstr_size)
{
    pctx_t c;
    dlb_rules_t rs = {0};
    size_t cap = 0;
    yaml_event_t ev;
    int rc = 0, done = 0;

    out->rules = NULL;
    out->cnt = 0;
    if (errstr_size)
        errstr[0] = '\0';
    if (len > DLB_RULES_MAX_BYTES)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "%s:1:1: %zu bytes, more than the limit of %d", name, len,
                          DLB_RULES_MAX_BYTES);
    memset(&c, 0, sizeof(c));
    c.name = name;
    c.text = text;
    c.len = len;
    c.errstr = errstr;
    c.errstr_size = errstr_size;
    if (!yaml_parser_initialize(&c.p))
        return nomem(&c);
    yaml_parser_set_input_string(&c.p, (const unsigned char *)text, len);
    while (!done && !rc) {
        if ((rc = next_event(&c, &ev)))
            break;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            rc = parse_document(&c, &rs, &cap);
            break;
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        default: /* STREAM_START */
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&c.p);
    if (rc) {
        dlb_rules_clear(&rs);
        return rc;
    }
    *out = rs;
    return 0;
}

/* Open path for reading without ever blocking (a FIFO or a terminal named
 * like a rules file would hold open() or read() forever) and only as a
 * regular file; flags DLB_RULES_LOAD_NOFOLLOW adds O_NOFOLLOW. Errors name
 * the file as name, never its content. */
static int open_regular(const char *path, const char *name, unsigned flags, int *fd, off_t *size,
                        char *errstr, size_t errstr_size)
{
    struct stat st;
    int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

    if (flags & DLB_RULES_LOAD_NOFOLLOW)
        oflags |= O_NOFOLLOW;
    if ((*fd = open(path, oflags)) < 0) {
        if (errno == ELOOP && (flags & DLB_RULES_LOAD_NOFOLLOW))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "%s: became a link while being read; not read", name);
        return dlb_seterr(errstr, errstr_size, errno == ENOENT ? DLB_ERR_NOTFOUND : DLB_ERR_CONF,
                          "%s: %s", name, strerror(errno));
    }
    if (fstat(*fd, &st)) {
        int e = errno;

        close(*fd);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s: %s", name, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(*fd);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "%s: not a regular file (%s); not read", name,
                          S_ISFIFO(st.st_mode)   ? "a FIFO"
                          : S_ISSOCK(st.st_mode) ? "a socket"
                          : S_ISDIR(st.st_mode)  ? "a directory"
                                                 : "a device");
    }
    *size = st.st_size;
    return 0;
}

static int too_large(const char *name, char *errstr, size_t errstr_size)
{
    return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                      "%s: larger than the limit of %d bytes for a rules file; not read", name,
                      DLB_RULES_MAX_BYTES);
}

/* Read path (named name) and parse it. */
static int load_one(const char *path, const char *name, unsigned flags, dlb_rules_t *out,
                    char *errstr, size_t errstr_size)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    off_t size = 0;
    ssize_t n;
    int fd, rc;

    out->rules = NULL;
    out->cnt = 0;
    if ((rc = open_regular(path, name, flags, &fd, &size, errstr, errstr_size)))
        return rc;
    /* Refused before reading a byte; the file may still grow while read,
     * which the loop below catches. */
    if (size > DLB_RULES_MAX_BYTES) {
        rc = too_large(name, errstr, errstr_size);
        goto out;
    }
    for (;;) {
        if (len == cap) {
            /* One byte past the limit is enough to know it is too large. */
            if (len > DLB_RULES_MAX_BYTES) {
                rc = too_large(name, errstr, errstr_size);
                goto out;
            }
            /* At least 8 KiB to read into: room doubles from 8 KiB. */
            if (dlb_vec_reserve((void **)&buf, &cap, len + 8192, 1)) {
                rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "%s: out of memory", name);
                goto out;
            }
        }
        n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "%s: read error: %s", name,
                            strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > DLB_RULES_MAX_BYTES) {
        rc = too_large(name, errstr, errstr_size);
        goto out;
    }
    rc = dlb_rules_parse(name, buf ? buf : "", len, out, errstr, errstr_size);
out:
    free(buf);
    close(fd);
    return rc;
}

int dlb_rules_load_file(const char *path, dlb_rules_t *out, char *errstr, size_t errstr_size)
{
    return load_one(path, path, 0, out, errstr, errstr_size);
}

void dlb_rules_clear(dlb_rules_t *r)
{
    for (size_t i = 0; i < r->cnt; i++)
        rule_free(&r->rules[i]);
    free(r->rules);
    r->rules = NULL;
    r->cnt = 0;
}

/* ---- several files ----------------------------------------------------------------- */

int dlb_rules_load_files(const char *const *paths, size_t n, dlb_rules_t *out, char *errstr,
                         size_t errstr_size)
{
    return dlb_rules_load_files_as(paths, NULL, n, 0, out, errstr, errstr_size);
}

int dlb_rules_load_files_as(const char *const *paths, const char *const *names, size_t n,
                            unsigned flags, dlb_rules_t *out, char *errstr, size_t errstr_size)
{
    dlb_rules_t all = {0};
    size_t cap = 0, dup = 0, first = 0;
    int rc = 0;

    out->rules = NULL;
    out->cnt = 0;
    for (size_t f = 0; f < n && !rc; f++) {
        dlb_rules_t one;

        const char *name = names ? names[f] : paths[f];

        if ((rc = load_one(paths[f], name, flags, &one, errstr, errstr_size)))
            break;
        for (size_t i = 0; i < one.cnt && !rc; i++) {
            if (dlb_vec_reserve((void **)&all.rules, &cap, all.cnt + 1, sizeof(*all.rules))) {
                rc = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "%s: out of memory", name);
                break;
            }
            all.rules[all.cnt++] = one.rules[i];
            memset(&one.rules[i], 0, sizeof(one.rules[i]));
        }
        dlb_rules_clear(&one);
    }
    /* Each file's parse refused its own repeated ids: a repetition here is
     * across files. */
    if (!rc && (rc = dlb_rules_find_dup_id(&all, &dup, &first)) < 0)
        dlb_seterr(errstr, errstr_size, rc, "out of memory");
    else if (rc > 0)
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                        "%s:%d: duplicate rule id (first at %s:%d)", all.rules[dup].file,
                        all.rules[dup].line, all.rules[first].file, all.rules[first].line);
    if (rc) {
        dlb_rules_clear(&all);
        return rc;
    }
    *out = all;
    return 0;
}

/* ---- helpers of the whole set (rules_internal.h) --------------------------------- */

void dlb_rules_keyset_free(dlb_rules_keyset_t *ks)
{
    for (size_t i = 0; i < ks->cnt; i++)
        free(ks->k[i]);
    free(ks->k);
    free(ks->n);
    memset(ks, 0, sizeof(*ks));
}

/* 1 if already there, 0 added, <0 out of memory. Linear: rule files are small
 * and bounded by DLB_RULES_MAX_BYTES. */
int dlb_rules_keyset_add(dlb_rules_keyset_t *ks, const char *s, size_t n)
{
    size_t kcap = ks->cap, ncap = ks->cap;

    for (size_t i = 0; i < ks->cnt; i++)
        if (ks->n[i] == n && !memcmp(ks->k[i], s, n))
            return 1;
    /* k and n are parallel: cap is the room both have. */
    if (dlb_vec_reserve((void **)&ks->k, &kcap, ks->cnt + 1, sizeof(*ks->k)) ||
        dlb_vec_reserve((void **)&ks->n, &ncap, ks->cnt + 1, sizeof(*ks->n)))
        return DLB_ERR_NOMEM;
    ks->cap = kcap < ncap ? kcap : ncap;
    if (!(ks->k[ks->cnt] = malloc(n + 1)))
        return DLB_ERR_NOMEM;
    memcpy(ks->k[ks->cnt], s, n);
    ks->k[ks->cnt][n] = '\0';
    ks->n[ks->cnt++] = n;
    return 0;
}

/* Rule ids sorted, to find duplicates and look rules up without comparing
 * every pair (a set may hold many thousands of rules). */
static int idref_cmp(const void *a, const void *b)
{
    const dlb_rules_idref_t *x = a, *y = b;
    int c = strcmp(x->id, y->id);

    return c ? c : (x->i > y->i) - (x->i < y->i);
}

dlb_rules_idref_t *dlb_rules_ids_sorted(const dlb_rules_t *rs)
{
    dlb_rules_idref_t *ix = malloc((rs->cnt ? rs->cnt : 1) * sizeof(*ix));

    if (!ix)
        return NULL;
    for (size_t i = 0; i < rs->cnt; i++) {
        ix[i].id = rs->rules[i].id;
        ix[i].i = i;
    }
    qsort(ix, rs->cnt, sizeof(*ix), idref_cmp);
    return ix;
}

/* The earliest rule (in set order) whose id an earlier rule has: 1 with
 * *dup and *first set, 0 when ids are unique, or DLB_ERR_NOMEM. */
int dlb_rules_find_dup_id(const dlb_rules_t *rs, size_t *dup, size_t *first)
{
    dlb_rules_idref_t *ix = dlb_rules_ids_sorted(rs);
    int found = 0;

    if (!ix)
        return DLB_ERR_NOMEM;
    for (size_t k = 1; k < rs->cnt; k++) {
        /* Sorted by (id, index): the first two of a run of equal ids are its
         * first use and its first repetition. */
        if (strcmp(ix[k].id, ix[k - 1].id) || (k >= 2 && !strcmp(ix[k].id, ix[k - 2].id)))
            continue;
        if (!found || ix[k].i < *dup) {
            *dup = ix[k].i;
            *first = ix[k - 1].i;
            found = 1;
        }
    }
    free(ix);
    return found;
}
