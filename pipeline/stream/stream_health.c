/* Health that tells the truth (consumer.stall.s): which assigned partitions
 * have messages waiting and have not moved, reported to /readyz and the
 * stall gauge, so one record refused for ever or a dependency failing only
 * for some statements shows, though every dependency answers. */
#include "stream_internal.h"

#include <stdio.h>

#include "clock.h"
#include "log.h"

/* Progress is a committed batch holding messages of the partition, or
 * nothing waiting (its cached high watermark is where we polled to). */
void stream_watch_progress(ctx_t *c)
{
    int64_t now = dlb_clock_mono_ms(), limit = (int64_t)c->conf->stall_s * 1000;
    char why[512] = "";
    size_t n = 0;
    int stalled = 0;

    if (limit <= 0 || now - c->watched_at < 1000)
        return;
    c->watched_at = now;
    stream_mark_held(c, 0);
    for (size_t i = 0; i < c->parts_cnt; i++) {
        part_t *p = &c->parts[i];
        int64_t lo, hi, waiting;

        if (!p->assigned) {
            p->stalled = 0;
            continue;
        }
        if (p->held || p->rewound)
            waiting = 1;
        else if (p->next < 0)
            waiting = !p->at_eof;
        else if (rd_kafka_get_watermark_offsets(c->consumer, c->topics[p->rank], p->partition, &lo,
                                                &hi) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                 hi >= 0)
            waiting = hi > p->next;
        else
            waiting = p->stalled; /* not known (a seek forgets it): as it was */
        if (!waiting || now - p->progress_at <= limit) {
            if (!waiting)
                p->progress_at = now;
            if (p->stalled)
                dlb_info("%s [%d] moves again", c->topics[p->rank], (int)p->partition);
            p->stalled = 0;
            continue;
        }
        if (!stalled++ && n < sizeof(why))
            n += (size_t)snprintf(why + n, sizeof(why) - n, "no progress for %lld s on",
                                  (long long)((now - p->progress_at) / 1000));
        if (n < sizeof(why))
            n += (size_t)snprintf(why + n, sizeof(why) - n, " %s [%d]", c->topics[p->rank],
                                  (int)p->partition);
        if (!p->stalled)
            dlb_warn("%s [%d]: messages waiting and no progress for %lld s: %s", c->topics[p->rank],
                     (int)p->partition, (long long)((now - p->progress_at) / 1000),
                     c->last_failure[0] ? c->last_failure : "held back by the ordering barrier");
        p->stalled = 1;
    }
    if (stalled && n < sizeof(why))
        snprintf(why + n, sizeof(why) - n, " with messages waiting: %.400s",
                 c->last_failure[0] ? c->last_failure : "held back by the ordering barrier");
    dlb_metric_set(c->m.stalled, stalled);
    dlb_metrics_stalled(why);
}

/* A batch committed: every partition it held messages of moved. */
void stream_batch_progressed(ctx_t *c)
{
    int64_t now = dlb_clock_mono_ms();

    c->last_failure[0] = '\0';
    for (size_t k = 0; k < c->order_cnt; k++) {
        const item_t *it = &c->items[c->order[k]];
        part_t *p = it->rank >= 0 ? stream_part(c, it->rank, it->msg->partition) : NULL;
        if (p)
            p->progress_at = now;
    }
}
