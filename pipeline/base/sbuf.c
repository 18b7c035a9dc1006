/* The growing text buffer of sbuf.h. */
#include "sbuf.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

int dlb_sbuf_put(dlb_sbuf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *p;

        while (cap < b->len + n + 1)
            cap *= 2;
        if (!(p = realloc(b->p, cap)))
            return DLB_ERR_NOMEM;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int dlb_sbuf_str(dlb_sbuf_t *b, const char *s)
{
    return dlb_sbuf_put(b, s, strlen(s));
}
