/* Levelled logging to stderr, one line per event, text or JSON.
 *
 * Every error line should say what failed, where, and what happens next. */
#ifndef DLB_LOG_H
#define DLB_LOG_H

#include <stddef.h>

typedef enum dlb_log_level {
    DLB_LOG_ERROR = 0,
    DLB_LOG_WARN = 1,
    DLB_LOG_INFO = 2,
    DLB_LOG_DEBUG = 3,
} dlb_log_level_t;

/** @brief Process-wide settings; call once from main before threads start. */
void dlb_log_setup(const char *program, int level, int json);

/** @returns level for "error", "warn", "info", "debug", or -1. */
int dlb_log_level_parse(const char *name);

int dlb_log_enabled(int level);

void dlb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** @brief One log line as dlb_log() writes it, newline included: text
 *         ("<ts> <level> <program>: <msg>", newlines in msg as spaces) or one
 *         JSON object {"ts","level","program","msg"} with every string
 *         escaped (quotes, backslashes, control characters, bytes that are
 *         not UTF-8). A message too long for out is cut, the line stays whole
 *         (out must hold at least ts, level and program: 256 bytes do).
 *  @returns the length written (at most size - 1). */
size_t dlb_log_format(char *out, size_t size, int json, const char *ts, int level,
                      const char *program, const char *msg);

#define dlb_err(...)  dlb_log(DLB_LOG_ERROR, __VA_ARGS__)
#define dlb_warn(...) dlb_log(DLB_LOG_WARN, __VA_ARGS__)
#define dlb_info(...) dlb_log(DLB_LOG_INFO, __VA_ARGS__)
#define dlb_dbg(...)                                                                               \
    do {                                                                                           \
        if (dlb_log_enabled(DLB_LOG_DEBUG))                                                        \
            dlb_log(DLB_LOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

#endif
