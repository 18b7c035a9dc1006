/* The ordering barrier's rule for one partition (stream.c holds the state
 * and asks the broker): whether a plan request may be answered as far as one
 * other input topic's partition of the same number is concerned. Apart so
 * the rule is tested on its own (tests/unit/test_barrier.c). */
#ifndef DLB_BARRIER_H
#define DLB_BARRIER_H

#include <stdint.h>

typedef struct dlb_barrier_view {
    /* the other topic's partition */
    int64_t max_ts; /* newest event time consumed from it, INT64_MIN if none */
    int64_t next;   /* offset after the last message polled from it, -1 if none */
    int at_eof;     /* consumed to its end and nothing since */
    /* the request */
    int64_t req_ts; /* its event time */
    int has_after;  /* it carried a dlb.after header (after.h) */
    int64_t after;  /* the offset on this partition it depends on, -1 for none */
    int grace_over; /* read at least consumer.order.grace.ms ago */
} dlb_barrier_view_t;

/** @brief Whether v's partition lets the request through.
 *  @param end_confirmed asked, only when the answer depends on it, whether
 *         the partition's end as consumed is its end on the broker (a
 *         network round trip: 1 yes, 0 there is more). */
int dlb_barrier_part_ready(const dlb_barrier_view_t *v, int (*end_confirmed)(void *arg), void *arg);

#endif
