/* The growable arrays of vec.h. */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* The first room given: the many small arrays (a rule's values, a pod's ids,
 * a plan's groups) then take one allocation. */
#define VEC_FIRST 8

/* realloc to n elements, refusing a byte size that would wrap. */
static int resize(void **p, size_t n, size_t elem_size)
{
    void *np;

    if (n > SIZE_MAX / elem_size || !(np = realloc(*p, n * elem_size)))
        return DLB_ERR_NOMEM;
    *p = np;
    return 0;
}

int dlb_vec_reserve(void **p, size_t *cap, size_t need, size_t elem_size)
{
    size_t max = SIZE_MAX / elem_size, ncap = *cap ? *cap : VEC_FIRST;

    if (need <= *cap)
        return 0;
    /* Doubling past max would wrap: then exactly need, which resize()
     * refuses if it does not fit either. */
    while (ncap < need)
        ncap = ncap <= max / 2 ? 2 * ncap : need;
    if (ncap > max) /* VEC_FIRST elements of a huge elem_size */
        ncap = need;
    if (resize(p, ncap, elem_size))
        return DLB_ERR_NOMEM;
    *cap = ncap;
    return 0;
}

void *dlb_vec_push(void **p, size_t *cnt, size_t elem_size)
{
    return dlb_vec_insert(p, cnt, *cnt, elem_size);
}

void *dlb_vec_insert(void **p, size_t *cnt, size_t i, size_t elem_size)
{
    char *a;

    if (*cnt == SIZE_MAX || resize(p, *cnt + 1, elem_size))
        return NULL;
    a = *p;
    memmove(a + (i + 1) * elem_size, a + i * elem_size, (*cnt - i) * elem_size);
    memset(a + i * elem_size, 0, elem_size);
    (*cnt)++;
    return a + i * elem_size;
}
