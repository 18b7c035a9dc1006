/* The ordering barrier's rule for one partition (barrier.h). */
#include "barrier.h"

int dlb_barrier_part_ready(const dlb_barrier_view_t *v, int (*end_confirmed)(void *arg), void *arg)
{
    /* The producer's own events, by position: consumed past them, whatever
     * the clocks say. A position the broker's log does not reach (a crafted
     * header) holds nothing: waiting for it would only end with
     * consumer.order.wait.ms. */
    if (v->has_after && v->after >= 0 && v->after >= v->next && !(v->at_eof && end_confirmed(arg)))
        return 0;
    /* Everyone else's, by event time: the partition has shown an event at or
     * after the request's time, or was consumed to its end. Without a
     * header, that end is trusted only after the grace, as the producer's
     * own events may still be in flight to it. */
    if (v->max_ts >= v->req_ts)
        return 1;
    return v->at_eof && (v->has_after || v->grace_over) && end_confirmed(arg);
}
