/* The canonical text of scalars, which the YAML loader (rules.c), the JSON
 * reader and writer (rules_json.c) and the YAML writer (rules_text.c) share,
 * so that a value reads the same from YAML and from JSON: JSON strings with
 * the fewest escapes, numbers as YAML 1.1 types them, UTF-8 as libyaml
 * accepts it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "rules_internal.h"

int dlb_rules_json_string(dlb_sbuf_t *b, const char *s, size_t n)
{
    int rc;

    if ((rc = dlb_sbuf_put(b, "\"", 1)))
        return rc;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];

        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            rc = dlb_sbuf_put(b, esc, 2);
        } else if (ch == '\n' || ch == '\t' || ch == '\r') {
            esc[0] = '\\';
            esc[1] = ch == '\n' ? 'n' : ch == '\t' ? 't' : 'r';
            rc = dlb_sbuf_put(b, esc, 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", ch);
            rc = dlb_sbuf_put(b, esc, 6);
        } else {
            rc = dlb_sbuf_put(b, (const char *)&s[i], 1);
        }
        if (rc)
            return rc;
    }
    return dlb_sbuf_put(b, "\"", 1);
}

/* Integers: decimal written back without '_'; binary, octal and hex converted
 * to decimal. Returns 1 and appends, 0 if s is no integer, or an error. */
int dlb_rules_json_int(dlb_sbuf_t *b, const char *s, size_t n, int *rc)
{
    size_t i = 0, digits = 0;
    int neg = 0, base = 10;
    uint64_t v = 0;
    char out[32];

    *rc = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i >= n)
        return 0;
    if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'b' || s[i + 1] == 'x')) {
        base = s[i + 1] == 'b' ? 2 : 16;
        i += 2;
    } else if (n - i > 1 && s[i] == '0') {
        base = 8;
        i++;
    } else if (s[i] == '_') {
        return 0;
    }
    if (base == 10) {
        dlb_sbuf_t d = {0};

        /* Any length is a valid JSON number; no leading zeros by the pattern. */
        for (size_t j = i; j < n; j++)
            if (!(s[j] >= '0' && s[j] <= '9') && s[j] != '_')
                return 0;
        if (neg && (*rc = dlb_sbuf_put(&d, "-", 1)))
            return 0;
        for (size_t j = i; j < n && !*rc; j++)
            if (s[j] != '_')
                *rc = dlb_sbuf_put(&d, &s[j], 1);
        if (!*rc)
            *rc = dlb_sbuf_put(b, d.p, d.len);
        free(d.p);
        return *rc ? 0 : 1;
    }
    for (; i < n; i++) {
        int dv;

        if (s[i] == '_')
            continue;
        if (s[i] >= '0' && s[i] <= '9')
            dv = s[i] - '0';
        else if (s[i] >= 'a' && s[i] <= 'f')
            dv = s[i] - 'a' + 10;
        else if (s[i] >= 'A' && s[i] <= 'F')
            dv = s[i] - 'A' + 10;
        else
            return 0;
        if (dv >= base)
            return 0;
        if (v > (UINT64_MAX - (uint64_t)dv) / (uint64_t)base)
            return 0;
        v = v * (uint64_t)base + (uint64_t)dv;
        digits++;
    }
    if (!digits || v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return 0;
    snprintf(out, sizeof(out), "%s%llu", neg && v ? "-" : "", (unsigned long long)v);
    *rc = dlb_sbuf_str(b, out);
    return *rc ? 0 : 1;
}

int dlb_rules_json_float(dlb_sbuf_t *b, const char *s, size_t n, int *rc)
{
    size_t i = 0, k = 0, idig = 0, fdig = 0, edig = 0;
    int dot = 0, expo = 0;
    char clean[128], out[64];
    double d;

    *rc = 0;
    if (n >= sizeof(clean))
        return 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        clean[k++] = s[i++];
    if (i < n && s[i] == '_')
        return 0;
    for (; i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'); i++)
        if (s[i] != '_') {
            clean[k++] = s[i];
            idig++;
        }
    if (i < n && s[i] == '.') {
        dot = 1;
        clean[k++] = s[i++];
        for (; i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'); i++)
            if (s[i] != '_') {
                clean[k++] = s[i];
                fdig++;
            }
    }
    if (!idig && !fdig)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        expo = 1;
        clean[k++] = s[i++];
        if (i < n && (s[i] == '-' || s[i] == '+'))
            clean[k++] = s[i++];
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, edig++)
            clean[k++] = s[i];
        if (!edig)
            return 0;
    }
    if (i != n || (!dot && !expo))
        return 0;
    clean[k] = '\0';
    d = strtod(clean, NULL);
    if (!isfinite(d))
        return 0;
    /* Shortest of %.15g..%.17g that reads back to the same double. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, sizeof(out), "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            break;
    }
    if (!strpbrk(out, ".eEn"))
        strcat(out, ".0"); /* keep it visibly a float: 1.0, not 1 */
    *rc = dlb_sbuf_str(b, out);
    return *rc ? 0 : 1;
}

/* Length of the valid UTF-8 sequence at s (n bytes available) with its code
 * point in *cp, or 0: overlong forms, surrogates and values past U+10FFFF
 * are invalid, as libyaml's reader has them. */
size_t dlb_rules_utf8_seq(const char *str, size_t n, unsigned *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned v;
    size_t len;

    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2;
        v = s[0] & 0x1fu;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        v = s[0] & 0x0fu;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        v = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3fu);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) ||
        (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}
