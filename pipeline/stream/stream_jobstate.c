/* The job state a role reads and writes through the stream
 * (stream.h): events stored in the batch's PostgreSQL transaction and folded
 * into Redis, runtime samples held for one write a batch, and a job's state
 * read from Redis, else rebuilt from PostgreSQL and seeded back. Here and not
 * in cache/, since it uses the store, which sits above the cache. */
#include <stdlib.h>

#include "cache_redis.h"
#include "store_pg.h"
#include "stream_internal.h"

int dlb_stream_store_event(dlb_stream_t *s, const dlb_event_t *ev, const void *raw, size_t raw_len,
                           char *errstr, size_t errstr_size)
{
    char sub[512];
    int err;

    /* A runtime sample only adds rows and a window entry: it waits for the
     * batch's others (the event and its bytes live until the batch ends),
     * unless the batch is redone to find a bad record. */
    if (ev->type == DLB_EV_RUNTIME && s->cur && !s->exact && s->pend_cnt < s->items_cap) {
        s->pend_ev[s->pend_cnt] = ev;
        s->pend_raw[s->pend_cnt] = raw;
        s->pend_len[s->pend_cnt] = raw_len;
        s->pend_stored[s->pend_cnt] = (unsigned char)stream_position_stored(s, s->cur);
        s->pend_cnt++;
        return 0;
    }
    if ((err = stream_pending_flush(s, errstr, errstr_size)) ||
        (err = dlb_pg_put_event(s->pg, ev, raw, raw_len, errstr, errstr_size)))
        return err;
    if (s->redis && !s->role->is_request(ev) &&
        dlb_redis_apply_event(s->redis, ev, sub, sizeof(sub)))
        stream_redis_down(s, "applying an event", sub);
    return 0;
}

int dlb_stream_store_request(dlb_stream_t *s, const dlb_event_t *ev, const void *raw,
                             size_t raw_len, const char *plan_id, void **plan, size_t *plan_len,
                             char *errstr, size_t errstr_size)
{
    int err;

    *plan = NULL;
    *plan_len = 0;
    if ((err = stream_pending_flush(s, errstr, errstr_size)))
        return err;
    return dlb_pg_put_request(s->pg, ev, raw, raw_len, plan_id, plan, plan_len, errstr,
                              errstr_size);
}

int dlb_stream_load_job(dlb_stream_t *s, const char *job_uid, int64_t until_ms, dlb_job_state_t *st,
                        char *errstr, size_t errstr_size)
{
    int found = 0, err;
    char sub[512];

    if ((err = stream_pending_flush(s, errstr, errstr_size)))
        return err;

    if (s->redis) {
        if ((err = dlb_redis_load_job(s->redis, job_uid, st, &found, sub, sizeof(sub)))) {
            stream_redis_down(s, "loading job state", sub);
            found = 0;
        }
    }
    if (!found) {
        dlb_job_state_clear(st);
        if ((err = dlb_pg_load_job_state(s->pg, job_uid, s->conf->window_size, st, errstr,
                                         errstr_size)))
            return err;
        if (s->redis && dlb_redis_store_job(s->redis, st, sub, sizeof(sub)))
            stream_redis_down(s, "seeding job state", sub);
    }
    while (st->window_cnt > 0 && st->window[st->window_cnt - 1].event_time_ms > until_ms) {
        st->window_cnt--;
        free(st->window[st->window_cnt].pods);
        free(st->window[st->window_cnt].pods_by_name);
        st->window[st->window_cnt].pods = NULL;
        st->window[st->window_cnt].pods_by_name = NULL;
    }
    return 0;
}
