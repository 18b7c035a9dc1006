/* The growing text buffer of sbuf.h. */
#include "sbuf.h"

#include <stdint.h>
#include <string.h>

#include "err.h"
#include "vec.h"

int dlb_sbuf_put(dlb_sbuf_t *b, const char *s, size_t n)
{
    /* len is below cap (the NUL has room), so only n can wrap len + n + 1. */
    if (n > SIZE_MAX - b->len - 1 || dlb_vec_reserve((void **)&b->p, &b->cap, b->len + n + 1, 1))
        return DLB_ERR_NOMEM;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int dlb_sbuf_str(dlb_sbuf_t *b, const char *s)
{
    return dlb_sbuf_put(b, s, strlen(s));
}
