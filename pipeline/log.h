/* Levelled logging to stderr, one line per event, text or JSON.
 *
 * Every error line should say what failed, where, and what happens next. */
#ifndef DLB_LOG_H
#define DLB_LOG_H

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

#define dlb_err(...)  dlb_log(DLB_LOG_ERROR, __VA_ARGS__)
#define dlb_warn(...) dlb_log(DLB_LOG_WARN, __VA_ARGS__)
#define dlb_info(...) dlb_log(DLB_LOG_INFO, __VA_ARGS__)
#define dlb_dbg(...)                                                                               \
    do {                                                                                           \
        if (dlb_log_enabled(DLB_LOG_DEBUG))                                                        \
            dlb_log(DLB_LOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

#endif
