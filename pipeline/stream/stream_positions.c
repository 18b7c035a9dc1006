/* The group's consumed positions in PostgreSQL (stream_internal.h): saved in
 * each batch's transaction, so they commit with the rows, and read back once
 * a partition is assigned, so the samples of a redelivered batch are known to
 * be stored and are not sent with COPY again (docs/operations.md, "Exactly
 * once in PostgreSQL"). Between loads the positions this process saved are
 * kept in its partition table. */
#include "stream_internal.h"

#include <stdlib.h>

#include "err.h"
#include "store_pg.h"

static void on_position(void *arg, const dlb_pg_position_t *pos)
{
    ctx_t *c = arg;
    int rank = stream_topic_rank(c, pos->topic);
    part_t *p = rank >= 0 ? stream_part_find(c, rank, pos->partition) : NULL;

    if (p && !p->stored_known)
        p->stored_next = pos->next_offset;
}

static part_t *item_part(ctx_t *c, const item_t *it)
{
    return it->rank >= 0 ? stream_part_find(c, it->rank, it->msg->partition) : NULL;
}

int stream_positions_load(ctx_t *c, char *errstr, size_t size)
{
    int need = 0, err;

    for (size_t k = 0; k < c->order_cnt && !need; k++) {
        const part_t *p = item_part(c, &c->items[c->order[k]]);
        need = p && !p->stored_known;
    }
    if (!need)
        return 0;
    if ((err = dlb_pg_load_positions(c->pg, c->group, on_position, c, errstr, size)))
        return err;
    for (size_t i = 0; i < c->parts_cnt; i++)
        c->parts[i].stored_known = 1;
    return 0;
}

int stream_position_stored(ctx_t *c, const item_t *it)
{
    const part_t *p = item_part(c, it);

    return p && p->stored_known && it->msg->offset < p->stored_next;
}

int stream_positions_save(ctx_t *c, char *errstr, size_t size)
{
    dlb_pg_position_t *pos;
    size_t n = 0;
    int err;

    if (!c->order_cnt)
        return 0;
    if (!(pos = malloc(c->order_cnt * sizeof(*pos))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < c->order_cnt; k++) {
        const item_t *it = &c->items[c->order[k]];
        int64_t next = it->msg->offset + 1;
        size_t j = 0;

        if (it->rank < 0)
            continue;
        while (j < n &&
               !(pos[j].partition == it->msg->partition && pos[j].topic == c->topics[it->rank]))
            j++;
        if (j == n)
            pos[n++] = (dlb_pg_position_t){c->topics[it->rank], it->msg->partition, next};
        else if (next > pos[j].next_offset)
            pos[j].next_offset = next;
    }
    err = dlb_pg_save_positions(c->pg, c->group, pos, n, errstr, size);
    /* Kept even should the transaction fail: a position ahead of the rows
     * only sends their samples through the idempotent statement. */
    for (size_t j = 0; j < n && !err; j++) {
        part_t *p = stream_part_find(c, stream_topic_rank(c, pos[j].topic), pos[j].partition);
        if (p && p->stored_known && pos[j].next_offset > p->stored_next)
            p->stored_next = pos[j].next_offset;
    }
    free(pos);
    return err;
}
