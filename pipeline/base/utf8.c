/* Well-formed UTF-8 (utf8.h). */
#include "utf8.h"

size_t dlb_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
    size_t len;

    if (!n)
        return 0;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4;
    else
        return 0; /* a continuation byte, an overlong C0/C1 lead, or past U+10FFFF */
    if (s[0] == 0xe0)
        lo = 0xa0; /* overlong */
    else if (s[0] == 0xed)
        hi = 0x9f; /* surrogates */
    else if (s[0] == 0xf0)
        lo = 0x90; /* overlong */
    else if (s[0] == 0xf4)
        hi = 0x8f; /* past U+10FFFF */
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

size_t dlb_utf8_check(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, len;

    while (i < n && (len = dlb_utf8_seq(u + i, n - i)))
        i += len;
    return i;
}

size_t dlb_utf8_cut(const char *s, size_t n, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, len;

    if (n <= max)
        return n;
    while (i < max) {
        if (!(len = dlb_utf8_seq(u + i, n - i)))
            len = 1;
        if (len > max - i)
            break;
        i += len;
    }
    return i;
}
