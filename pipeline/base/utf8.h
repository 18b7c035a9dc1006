/* Well-formed UTF-8 (Unicode Table 3-7): what PostgreSQL, Avro and JSON
 * readers accept. No overlong forms, no surrogates, nothing past U+10FFFF. */
#ifndef DLB_UTF8_H
#define DLB_UTF8_H

#include <stddef.h>

/** @returns the length (1 to 4) of the well-formed sequence at s, which has
 *           n bytes left, or 0 when it is not one. */
size_t dlb_utf8_seq(const unsigned char *s, size_t n);

/** @returns the offset of the first byte of s[0..n) that does not start a
 *           well-formed sequence, or n when all of it is UTF-8. */
size_t dlb_utf8_check(const char *s, size_t n);

/** @returns how many of the n bytes of s to keep so that at most max are
 *           kept and no well-formed sequence is cut in two: where to cut a
 *           text that must stay UTF-8 (a byte of no sequence counts as one). */
size_t dlb_utf8_cut(const char *s, size_t n, size_t max);

#endif
