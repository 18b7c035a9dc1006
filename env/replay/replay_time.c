/* replay's times (replay.h): RFC 3339, milliseconds since the epoch, now,
 * or relative to now; durations; formatted as RFC 3339 UTC. */
#include "replay.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"

/* n decimal digits at *p into *v; advances *p. */
static int digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return -1;
        *v = *v * 10 + (**p - '0');
    }
    return 0;
}

/* A sum of spans, "1h30m", "500ms": *total_ms. */
static int parse_span(const char *s, int64_t *total_ms)
{
    int64_t total = 0;

    if (!*s)
        return -1;
    while (*s) {
        char *end;
        int64_t unit;
        long long n;

        if (!isdigit((unsigned char)*s))
            return -1;
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno || end == s)
            return -1;
        s = end;
        if (!strncmp(s, "ms", 2)) {
            unit = 1;
            s += 2;
        } else if (*s == 's' || *s == 'm' || *s == 'h' || *s == 'd') {
            unit = *s == 's' ? 1000 : *s == 'm' ? 60000 : *s == 'h' ? 3600000 : 86400000;
            s++;
        } else {
            return -1;
        }
        if (n > INT64_MAX / unit / 2 || total > INT64_MAX / 2 - n * unit)
            return -1;
        total += n * unit;
    }
    *total_ms = total;
    return 0;
}

static int parse_relative(const char *s, int64_t now, int64_t *out)
{
    int sign = *s == '-' ? -1 : 1;
    int64_t total;

    if (parse_span(s + 1, &total))
        return -1;
    *out = now + sign * total;
    return 0;
}

static int parse_rfc3339(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, off = 0, oh, om;
    time_t t;

    if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) || *s++ != '-' || digits(&s, 2, &d))
        return -1;
    if (*s) {
        if (*s != 'T' && *s != 't' && *s != ' ')
            return -1;
        s++;
        if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi) || *s++ != ':' ||
            digits(&s, 2, &sec))
            return -1;
        if (*s == '.') {
            int scale = 100;
            s++;
            if (!isdigit((unsigned char)*s))
                return -1;
            /* Digits past milliseconds are truncated. */
            for (; isdigit((unsigned char)*s); s++, scale /= 10)
                ms += (*s - '0') * scale;
        }
        if (*s == 'Z' || *s == 'z') {
            s++;
        } else if (*s == '+' || *s == '-') {
            int sign = *s++ == '-' ? -1 : 1;
            if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om) || oh > 23 || om > 59)
                return -1;
            off = sign * (oh * 60 + om);
        } else {
            return -1; /* RFC 3339 requires the offset */
        }
        if (*s)
            return -1;
    }
    /* 60 seconds: a leap second, which timegm() rolls into the next minute. */
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    /* timegm() normalises 31 February: refuse a date that is not one. */
    if (tm.tm_mday != d || tm.tm_mon != mo - 1)
        return -1;
    *out = ((int64_t)t - (int64_t)off * 60) * 1000 + ms;
    return 0;
}

int dlb_replay_parse_time(const char *s, int64_t now, int64_t *out_ms, char *errstr,
                          size_t errstr_size)
{
    const char *p = s;
    int all_digits = *s != '\0';

    for (; *p; p++)
        if (!isdigit((unsigned char)*p))
            all_digits = 0;
    if (!strcmp(s, "now")) {
        *out_ms = now;
        return 0;
    }
    if (all_digits) {
        char *end;
        errno = 0;
        *out_ms = strtoll(s, &end, 10);
        if (!errno)
            return 0;
    } else if ((*s == '-' || *s == '+') && !parse_relative(s, now, out_ms)) {
        return 0;
    } else if (!strncmp(s, "now", 3) && (s[3] == '-' || s[3] == '+') &&
               !parse_relative(s + 3, now, out_ms)) {
        return 0;
    } else if (!parse_rfc3339(s, out_ms)) {
        return 0;
    }
    return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                      "time \"%s\": expected RFC 3339 (2026-01-01T00:00:00Z), ms since the epoch, "
                      "now, or relative like -1h, -15m, -90s, -500ms",
                      s);
}

int dlb_replay_parse_duration(const char *s, int64_t *out_ms, char *errstr, size_t errstr_size)
{
    if (!strcmp(s, "none")) {
        *out_ms = -1;
        return 0;
    }
    if (!strcmp(s, "0")) {
        *out_ms = 0;
        return 0;
    }
    if (!parse_span(s, out_ms))
        return 0;
    return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                      "duration \"%s\": expected none, 0, or a span like 1h, 15m, 90s, 2d, "
                      "500ms, 1h30m",
                      s);
}

const char *dlb_replay_format_time(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int frac = (int)(ms - (int64_t)t * 1000);
    struct tm tm;
    char tmp[32];

    gmtime_r(&t, &tm);
    strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03dZ", tmp, frac);
    return buf;
}
