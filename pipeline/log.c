#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

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

/* JSON string escaping for the message; control characters become \uXXXX. */
static void json_escape(FILE *fp, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
}

void dlb_log(int level, const char *fmt, ...)
{
    char msg[2048];
    char ts[96];
    struct timeval tv;
    struct tm tm;
    va_list ap;

    if (level > log_level)
        return;
    if (level < 0)
        level = 0;
    if (level > DLB_LOG_DEBUG)
        level = DLB_LOG_DEBUG;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* One line per event even if a caller passes a multi-line message. */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
    /* flockfile keeps lines from concurrent threads whole. */
    flockfile(stderr);
    if (log_json) {
        fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"program\":\"", ts, level_names[level]);
        json_escape(stderr, log_program);
        fputs("\",\"msg\":\"", stderr);
        json_escape(stderr, msg);
        fputs("\"}\n", stderr);
    } else {
        fprintf(stderr, "%s %-5s %s: %s\n", ts, level_names[level], log_program, msg);
    }
    funlockfile(stderr);
}
