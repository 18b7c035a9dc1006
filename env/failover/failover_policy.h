/* The failover policy: whether the real environment has failed badly enough
 * that its standby should take over (DLRover's virtual environment design:
 * "if ... too many jobs fail, the real system will be switched to virtual and
 * a pre-chosen virtual system takes the control").
 *
 * Pure: structs in, a verdict and its figures out; no I/O, no clock. The
 * decider (failover.h) feeds it the real environment's job outcomes (and,
 * optionally, its plan requests and when they were answered) read from its
 * own history, and acts on the verdict. */
#ifndef DLB_FAILOVER_POLICY_H
#define DLB_FAILOVER_POLICY_H

#include <stddef.h>
#include <stdint.h>

typedef struct dlb_failover_policy {
    int64_t window_ms;   /* env.failover.window.s: outcomes this recent count */
    int64_t min_jobs;    /* env.failover.min.jobs: fewer finished jobs never trip */
    double threshold;    /* env.failover.threshold: failed share that trips, (0, 1] */
    int64_t cooldown_ms; /* env.failover.cooldown.s: no switch this soon after the last one */
    /* Plans missing or late (env.failover.late.*): off when late_ms is 0. */
    int64_t late_ms;       /* env.failover.late.ms: a plan later than this is late */
    int64_t min_requests;  /* env.failover.late.min.requests: fewer judged never trip */
    double late_threshold; /* env.failover.late.threshold: late share that trips */
} dlb_failover_policy_t;

/* One terminal job event of the real environment: a job that succeeded or
 * failed at at_ms (event time). A job may finish more than once (retried);
 * its newest outcome in the window counts. */
typedef struct dlb_failover_outcome {
    const char *job; /* job uid, owned by the caller */
    int64_t at_ms;
    int failed; /* 1 failed, 0 succeeded */
} dlb_failover_outcome_t;

/* One plan request of the real environment: when it was received, and when
 * its plan was stored (-1: none yet). It is judged once answered or once
 * late_ms old; late when its plan came after late_ms or not at all. */
typedef struct dlb_failover_request {
    int64_t at_ms;
    int64_t answered_ms;
} dlb_failover_request_t;

/* What the registry says, as the decider read it. */
typedef struct dlb_failover_state {
    int has_real;
    int has_standby;
    int pinned;             /* a manual promotion pinned the choice */
    int64_t last_switch_ms; /* the newest promotion, manual or automatic; 0 = never */
} dlb_failover_state_t;

typedef enum {
    DLB_FAILOVER_TRIP = 0, /* switch: the real one to virtual, the standby real */
    DLB_FAILOVER_HEALTHY,  /* enough jobs, failed share below the threshold */
    DLB_FAILOVER_FEW_JOBS, /* fewer than min_jobs finished in the window */
    DLB_FAILOVER_COOLDOWN, /* the last switch is younger than the cool-down */
    DLB_FAILOVER_PINNED,   /* a manual promotion pinned the real environment */
    DLB_FAILOVER_NO_STANDBY,
    DLB_FAILOVER_NO_REAL,
} dlb_failover_verdict_t;

typedef struct dlb_failover_figures {
    int64_t from_ms, to_ms; /* the window: from_ms < at_ms <= to_ms */
    int64_t jobs;           /* distinct jobs whose newest outcome is in the window */
    int64_t failed;         /* ... and failed */
    double share;           /* failed / jobs, 0 when no job */
    int64_t requests;       /* plan requests of the window judged (0 when late_ms is 0) */
    int64_t late;           /* ... whose plan was late or is missing */
    double late_share;      /* late / requests, 0 when none */
    int by_late;            /* a trip is the late plans' (else the failed jobs') */
} dlb_failover_figures_t;

/** @brief Decide at now_ms. outcomes must be grouped by job, and in time
 *         order within a job (the decider's query orders by job uid, event
 *         time, event id): the last one of a job inside the window is its
 *         outcome. The window is (now_ms - window_ms, now_ms], cut
 *         at the last switch: outcomes at or before it were reported under
 *         the previous real environment (every environment sees the same
 *         front input), so they never count against the new one.
 *         Figures are filled whatever the verdict. Checks in this order:
 *         no real, pinned, no standby, cool-down, too few jobs, threshold.
 *  @param out  may be NULL */
dlb_failover_verdict_t dlb_failover_decide(const dlb_failover_policy_t *p,
                                           const dlb_failover_outcome_t *outcomes, size_t n,
                                           int64_t now_ms, const dlb_failover_state_t *st,
                                           dlb_failover_figures_t *out);

/** @brief dlb_failover_decide() with the plan requests of the real
 *         environment too (when p->late_ms > 0): in the same window, those
 *         judged (answered, or received at least late_ms before now_ms), at
 *         least min_requests of them, and the late share at or above
 *         late_threshold trip as well. The verdict is few_jobs only when
 *         neither has enough data; healthy when one has and neither trips.
 *  @param requests  in any order; may be NULL when m is 0 */
dlb_failover_verdict_t dlb_failover_decide_all(const dlb_failover_policy_t *p,
                                               const dlb_failover_outcome_t *outcomes, size_t n,
                                               const dlb_failover_request_t *requests, size_t m,
                                               int64_t now_ms, const dlb_failover_state_t *st,
                                               dlb_failover_figures_t *out);

/** @returns the verdict's name: "trip", "healthy", "few_jobs", "cooldown",
 *           "pinned", "no_standby", "no_real". */
const char *dlb_failover_verdict_name(dlb_failover_verdict_t v);

#endif
