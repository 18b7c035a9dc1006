/* A recording of events, replayed as the optimizer consumer would see it.
 *
 * The recording is JSON lines as `dlbrain emit` reads them, each with its
 * event_id and event_time_ms (e.g. from `dlbrain simulate`). Each job's events
 * are folded in event-time order (ties: job, node, metrics, requests, as the
 * consumer merges them) with the cache's job-state fold. Each plan request gets
 * what the consumer would hand dlb_router_plan() at its time: the job state
 * as of the request, the job's OOMs already answered, and, when the consumer
 * loads it (a create request, or a job with an OOM), the history PostgreSQL
 * would give: jobs of the same scenario created in the history.hours before
 * the request, newest history.max.jobs first, with their samples and OOMs
 * before it.
 *
 * All I/O happens in dlb_recording_load(); the rest is pure, so a recording
 * can be replayed through optimizers any number of times (the benchmark, a
 * simulator). */
#ifndef DLB_RECORDING_H
#define DLB_RECORDING_H

#include <stddef.h>

#include "catalog.h"
#include "conf.h"
#include "event.h"
#include "optimizer.h"
#include "state.h"

typedef struct dlb_recording dlb_recording_t;

/** @brief Read a recording and build every plan request's job state and
 *         history. Lines that are blank or start with '#' are skipped, and so
 *         are events that are no consumer input (e.g. plans), with a warning.
 *  @param out       the recording, for dlb_recording_free(); NULL on error
 *  @param path      the JSON lines file
 *  @param conf      window size, history and limits settings; must outlive
 *                   the recording
 *  @param cat       the schemas the lines are checked against
 *  @param errstr    what went wrong, e.g. "FILE:12: event_id: missing ..."
 *  @returns 0, DLB_ERR_GENERIC (cannot open or read), DLB_ERR_DECODE or
 *           DLB_ERR_INVALID (a bad line, or no plan request at all),
 *           DLB_ERR_NOMEM. */
int dlb_recording_load(dlb_recording_t **out, const char *path, const dlb_conf_t *conf,
                       const dlb_catalog_t *cat, char *errstr, size_t errstr_size);

/** @brief Release a recording and everything dlb_recording_input() gave out.
 *  @param rec  the recording, or NULL */
void dlb_recording_free(dlb_recording_t *rec);

/** @returns the number of input events (job, node, runtime, plan request) read. */
size_t dlb_recording_events(const dlb_recording_t *rec);

/** @returns the number of distinct jobs among the events. */
size_t dlb_recording_jobs(const dlb_recording_t *rec);

/** @brief Requests are numbered 0 .. count-1 job by job (in job uid order),
 *         each job's in the order the consumer folds them. Jobs do not see
 *         each other's answers, so this order replays every job as the
 *         consumer would.
 *  @returns the number of plan requests (at least 1 after a successful load). */
size_t dlb_recording_requests(const dlb_recording_t *rec);

/** @returns plan request i (i < dlb_recording_requests()); owned by the recording. */
const dlb_plan_request_t *dlb_recording_request(const dlb_recording_t *rec, size_t i);

/** @returns the index of request i's stage in dlb_stages[]. */
int dlb_recording_stage(const dlb_recording_t *rec, size_t i);

/** @brief Start a replay with no OOM answered yet, as on an empty oom_plans
 *         table. Which OOMs get answered depends on the optimizer set, so a
 *         replay with another set starts here. */
void dlb_recording_rewind(dlb_recording_t *rec);

/** @brief Fill the optimizer input of request i. The first call for i after
 *         load or dlb_recording_rewind() fixes the OOMs it sees: its job's
 *         answers recorded so far with dlb_recording_answer() whose event time
 *         is before the request's, as PostgreSQL would give them (only to a job
 *         with an OOM). So replay in request order and record each request's
 *         answer before the next one's input. Later calls for i give the same
 *         input and allocate nothing (for timing).
 *  @param rec       the recording
 *  @param i         the request, i < dlb_recording_requests()
 *  @param set       the optimizer set, "dlrover" or "dlbrain"
 *  @param answered  out for the optimizer (zeroed here: free its items after
 *                   the plan), or NULL
 *  @param in        filled; points into rec (and at set and answered) until the
 *                   next dlb_recording_rewind() or dlb_recording_free()
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_recording_input(dlb_recording_t *rec, size_t i, const char *set,
                        dlb_oom_answers_t *answered, dlb_opt_input_t *in);

/** @brief Record the plan made for request i. The OOMs the optimizer answered
 *         (answered, one per OOM pod) are seen by later requests of the job,
 *         with the plan's id and the request's event time, as the consumer
 *         stores them.
 *  @param rec       the recording
 *  @param i         the request the plan answers
 *  @param plan      the plan dlb_router_plan() made from request i's input
 *  @param answered  the input's answered after dlb_router_plan()
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_recording_answer(dlb_recording_t *rec, size_t i, const dlb_plan_t *plan,
                         const dlb_oom_answers_t *answered);

#endif
