/* A growing text buffer: the bytes appended so far, always NUL-terminated
 * once anything (even "") was appended. Zero-initialise it ({0}); the
 * caller owns p and frees it, or hands it on as a malloc'ed string. */
#ifndef DLB_SBUF_H
#define DLB_SBUF_H

#include <stddef.h>

typedef struct dlb_sbuf {
    char *p; /* NULL until the first append */
    size_t len, cap;
} dlb_sbuf_t;

/** @brief Append n bytes of s (NULs included) and keep p NUL-terminated.
 *  @returns 0 or DLB_ERR_NOMEM (b unchanged). */
int dlb_sbuf_put(dlb_sbuf_t *b, const char *s, size_t n);

/** @brief Append the C string s. @returns as dlb_sbuf_put(). */
int dlb_sbuf_str(dlb_sbuf_t *b, const char *s);

#endif
