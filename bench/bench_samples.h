/* The runtime samples the ingest and decode benchmarks use: the same jobs,
 * pods and values every run (fixed seed), so their rates compare. */
#ifndef DLB_BENCH_SAMPLES_H
#define DLB_BENCH_SAMPLES_H

#include <stdint.h>

#include "event.h"

/* Pods of one job: 1-4 PS, 2-16 workers, a chief in one job of three, as
 * DLRover's PS jobs come; 3 to 21 pods, 11.8 on average. */
#define DLB_BENCH_MAX_PODS 21

/** @brief Sample i of a run over jobs jobs (job i % jobs, its sample number
 *         i / jobs, event times 15 s apart from t0_ms): its job uid is
 *         "bench-<tag>-j<job>", its pods point into pods (DLB_BENCH_MAX_PODS),
 *         which must live as long as ev is used. */
void dlb_bench_sample(const char *tag, long i, long jobs, int64_t t0_ms, dlb_event_t *ev,
                      dlb_pod_usage_t *pods);

#endif
