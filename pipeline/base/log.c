/* Levelled logging (log.h): one line per event to stderr, text or JSON. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "utf8.h"

static const char *log_program = "dlbrain";
static int log_level = DLB_LOG_INFO;
static int log_json;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void dlb_log_setup(const char *program, int level, int json)
{
    if (program)
        log_program = program;
    log_level = level;
    log_json = json;
}

int dlb_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, level_names[i]))
            return i;
    return -1;
}

int dlb_log_enabled(int level)
{
    return level <= log_level;
}

/* Appends to out[*n..size-1], always leaving room for the NUL; what does not
 * fit is cut (a long message loses its end, never the line its shape). */
static void put(char *out, size_t size, size_t *n, const char *s, size_t len)
{
    if (*n + 1 >= size)
        return;
    if (len > size - 1 - *n)
        len = size - 1 - *n;
    memcpy(out + *n, s, len);
    *n += len;
    out[*n] = '\0';
}

/* A JSON string's contents: " and \ escaped, control characters as \uXXXX,
 * bytes that are not UTF-8 (a message quoting bad input) as U+FFFD, so every
 * line is JSON a strict parser accepts. An escape is never cut in half. */
static void put_json(char *out, size_t size, size_t *n, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    char esc[8];

    while (*s) {
        size_t len = dlb_utf8_seq(s, strnlen((const char *)s, 4));
        const char *p = (const char *)s;

        if (*s == '"' || *s == '\\') {
            snprintf(esc, sizeof(esc), "\\%c", *s);
            p = esc;
            len = 1;
        } else if (*s < 0x20 || *s == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", *s);
            p = esc;
            len = 1;
        } else if (!len) {
            p = "\\ufffd";
            len = 1;
        }
        if (p != (const char *)s) {
            if (*n + strlen(p) + 1 > size)
                return;
            put(out, size, n, p, strlen(p));
        } else {
            if (*n + len + 1 > size)
                return;
            put(out, size, n, p, len);
        }
        s += len;
    }
}

size_t dlb_log_format(char *out, size_t size, int json, const char *ts, int level,
                      const char *program, const char *msg)
{
    /* Room kept for the closing "} and newline of a JSON line. */
    size_t n = 0, body = size > 4 ? size - 3 : 0;

    if (!size)
        return 0;
    out[0] = '\0';
    if (level < 0)
        level = 0;
    if (level > DLB_LOG_DEBUG)
        level = DLB_LOG_DEBUG;
    if (json) {
        put(out, body, &n, "{\"ts\":\"", 7);
        put_json(out, body, &n, ts);
        put(out, body, &n, "\",\"level\":\"", 11);
        put(out, body, &n, level_names[level], strlen(level_names[level]));
        put(out, body, &n, "\",\"program\":\"", 13);
        put_json(out, body, &n, program);
        put(out, body, &n, "\",\"msg\":\"", 9);
        put_json(out, body, &n, msg);
        put(out, size, &n, "\"}\n", 3);
        return n;
    }
    if (size < 2)
        return 0;
    n = (size_t)snprintf(out, size, "%s %-5s %s: ", ts, level_names[level], program);
    if (n + 2 > size)
        n = size - 2;
    /* One line per event even if a caller passes a multi-line message. */
    for (const char *p = msg; *p && n + 2 < size; p++)
        out[n++] = *p == '\n' || *p == '\r' ? ' ' : *p;
    out[n++] = '\n';
    out[n] = '\0';
    return n;
}

void dlb_log(int level, const char *fmt, ...)
{
    char msg[2048], line[8192], ts[96];
    struct timeval tv;
    struct tm tm;
    va_list ap;
    size_t n;

    if (level > log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
    n = dlb_log_format(line, sizeof(line), log_json, ts, level, log_program, msg);
    /* One write per line: lines of concurrent threads stay whole. */
    flockfile(stderr);
    fwrite(line, 1, n, stderr);
    funlockfile(stderr);
}
