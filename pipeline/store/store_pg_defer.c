/* Writes whose rows nobody reads back within the transaction (a plan, its
 * answered OOMs) held until the next read that could see them or the commit,
 * then sent together in one round trip (dlb_pg_run_all): at 1,000 plan
 * requests a second each plan's own round trip was a quarter of the
 * optimizer's time on a request. The order and the statements are those of
 * writing each at once, so what is stored is the same. */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "store_pg_internal.h"
#include "vec.h"

#define DEFER_PARAMS 16

typedef struct deferred {
    const dlb_pg_stmt_t *st;
    int nparams, flags;
    char *values[DEFER_PARAMS];
    int lens[DEFER_PARAMS];
} deferred_t;

struct dlb_pg_defer {
    int on;
    deferred_t *items;
    size_t cnt, cap;
};

static void deferred_clear(deferred_t *d)
{
    for (int i = 0; i < d->nparams; i++)
        free(d->values[i]);
}

void dlb_pg_defer_drop(dlb_pg_t *pg)
{
    dlb_pg_defer_t *q = pg->defer;

    if (!q)
        return;
    for (size_t i = 0; i < q->cnt; i++)
        deferred_clear(&q->items[i]);
    q->cnt = 0;
}

void dlb_pg_defer_free(dlb_pg_t *pg)
{
    if (!pg->defer)
        return;
    dlb_pg_defer_drop(pg);
    free(pg->defer->items);
    free(pg->defer);
    pg->defer = NULL;
}

int dlb_pg_defer_writes(dlb_pg_t *pg, int on, char *errstr, size_t errstr_size)
{
    int err = 0;

    if (!on)
        err = dlb_pg_flush(pg, errstr, errstr_size);
    if (!pg->defer && on && !(pg->defer = calloc(1, sizeof(*pg->defer))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    if (pg->defer)
        pg->defer->on = on;
    return err;
}

int dlb_pg_write(dlb_pg_t *pg, const dlb_pg_stmt_t *st, int nparams, const char *const *values,
                 const int *lens, int flags, char *errstr, size_t errstr_size)
{
    dlb_pg_defer_t *q = pg->defer;
    deferred_t *d;

    if (!q || !q->on || !dlb_pg_in_tx(pg) || nparams > DEFER_PARAMS)
        return dlb_pg_run(pg, st, nparams, values, lens, flags, NULL, errstr, errstr_size);
    if (dlb_vec_reserve((void **)&q->items, &q->cap, q->cnt + 1, sizeof(*q->items)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    d = &q->items[q->cnt];
    memset(d, 0, sizeof(*d));
    d->st = st;
    d->flags = flags;
    for (int i = 0; i < nparams; i++, d->nparams++) {
        size_t len = lens && lens[i] > 0 ? (size_t)lens[i] : values[i] ? strlen(values[i]) : 0;

        d->lens[i] = lens ? lens[i] : 0;
        if (!values[i])
            continue; /* NULL */
        if (!(d->values[i] = malloc(len + 1))) {
            deferred_clear(d);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        }
        memcpy(d->values[i], values[i], len);
        d->values[i][len] = '\0';
    }
    q->cnt++;
    return 0;
}

int dlb_pg_deferred(const dlb_pg_t *pg, const dlb_pg_stmt_t *st, int col0, const char *v0, int col1,
                    const char *v1)
{
    const dlb_pg_defer_t *q = pg->defer;

    for (size_t i = 0; q && i < q->cnt; i++) {
        const deferred_t *d = &q->items[i];
        if (d->st == st && col0 < d->nparams && col1 < d->nparams && d->values[col0] &&
            d->values[col1] && !strcmp(d->values[col0], v0) && !strcmp(d->values[col1], v1))
            return 1;
    }
    return 0;
}

int dlb_pg_flush(dlb_pg_t *pg, char *errstr, size_t errstr_size)
{
    dlb_pg_defer_t *q = pg->defer;
    dlb_pg_call_t *calls;
    int err;

    if (!q || !q->cnt)
        return 0;
    if (!(calls = calloc(q->cnt, sizeof(*calls))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < q->cnt; i++)
        calls[i] = (dlb_pg_call_t){q->items[i].st, q->items[i].nparams,
                                   (const char *const *)q->items[i].values, q->items[i].lens,
                                   q->items[i].flags};
    err = dlb_pg_run_all(pg, calls, q->cnt, errstr, errstr_size);
    free(calls);
    dlb_pg_defer_drop(pg);
    return err;
}
