/* The state-rebuild benchmark: folding a job's node events into its state,
 * as a rebuild from PostgreSQL does (dlb_job_state_begin_rebuild: new pods
 * appended through a hash index, sorted once), beside folding the same
 * events one sorted insert at a time (the path that was the rebuild before,
 * and is still the live path of one event), in the same run.
 *
 * Each size folds one event per pod, pod names in reverse name order (the
 * worst case for sorted inserts: every insert moves the whole array), times
 * increasing, then one more event for every pod (found, not inserted). */
#ifndef DLB_BENCH_REBUILD_H
#define DLB_BENCH_REBUILD_H

#include <stdio.h>

#include <cJSON.h>

/** @brief For 1,024, 4,096 and 16,384 pods (the most a job's state keeps):
 *         fold both ways, check both give the same pods, and print a row per
 *         size: milliseconds each way and their ratio.
 *  @param json    NULL, or receives the results as a JSON object (the
 *                 caller's, for cJSON_Delete); NULL on error
 *  @returns 0, DLB_ERR_NOMEM, or DLB_ERR_GENERIC when the two states differ. */
int dlb_bench_rebuild(FILE *out, cJSON **json, char *errstr, size_t errstr_size);

#endif
