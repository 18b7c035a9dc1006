/* The table of input partitions the loop and its health watch share: where
 * each partition stands (stream_internal.h, part_t). */
#include "stream_internal.h"

#include <stdint.h>
#include <string.h>

#include "clock.h"
#include "vec.h"

int stream_topic_rank(const ctx_t *c, const char *topic)
{
    for (int r = 0; r < c->ninputs; r++)
        if (!strcmp(c->topics[r], topic))
            return r;
    return -1;
}

part_t *stream_part_find(ctx_t *c, int rank, int32_t partition)
{
    for (size_t i = 0; i < c->parts_cnt; i++)
        if (c->parts[i].rank == rank && c->parts[i].partition == partition)
            return &c->parts[i];
    return NULL;
}

part_t *stream_part(ctx_t *c, int rank, int32_t partition)
{
    part_t *p = stream_part_find(c, rank, partition);

    if (p)
        return p;
    if (dlb_vec_reserve((void **)&c->parts, &c->parts_cap, c->parts_cnt + 1, sizeof(*c->parts)))
        return NULL;
    p = &c->parts[c->parts_cnt++];
    p->rank = rank;
    p->partition = partition;
    stream_part_forget(p, 0);
    return p;
}

void stream_part_forget(part_t *p, int assigned)
{
    p->max_ts = INT64_MIN;
    p->at_eof = 0;
    p->assigned = assigned;
    p->paused = 0;
    p->next = -1;
    p->end_asked_at = -1;
    p->progress_at = dlb_clock_mono_ms();
    p->stalled = 0;
    p->rewound = 0;
    p->stored_known = 0;
    p->stored_next = -1;
}

/* Whether we hold messages of each partition (stream_internal.h). */
void stream_mark_held(ctx_t *c, int barrier_only)
{
    for (size_t i = 0; i < c->parts_cnt; i++)
        c->parts[i].held = 0;
    for (size_t i = 0; i < c->items_cnt; i++) {
        const item_t *it = &c->items[i];
        part_t *p = it->rank >= 0 ? stream_part(c, it->rank, it->msg->partition) : NULL;
        if (p && !(barrier_only && it->ahead))
            p->held = 1;
    }
}
