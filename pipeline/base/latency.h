/* Durations of repeated calls: count, mean, max and nearest-rank percentiles.
 *
 * Used by the benchmarks (one collector per stage, optimizer or path) and
 * meant for metrics too. Values are nanoseconds by convention (take them with
 * dlb_lat_clock_ns()); the collector itself does not care about the unit. */
#ifndef DLB_LATENCY_H
#define DLB_LATENCY_H

#include <stddef.h>
#include <stdint.h>

/* Durations kept for percentiles: 32 MiB of int64_t. Calls beyond it still
 * count in count, sum (so the mean) and max; percentiles then describe the
 * first DLB_LAT_CAP calls only. */
#define DLB_LAT_CAP ((size_t)4 << 20)

/* Zero-initialise ({0}) before the first dlb_lat_add(). */
typedef struct dlb_lat {
    int64_t *v; /* the first DLB_LAT_CAP durations, sorted once sorted is set */
    size_t n, cap;
    int64_t count, sum, max; /* over every call */
    int sorted;
} dlb_lat_t;

/** @brief Record one duration.
 *  @param l   the collector
 *  @param ns  the duration
 *  @returns 0, or DLB_ERR_NOMEM when the kept values could not grow (the
 *           call is still counted in count, sum and max). */
int dlb_lat_add(dlb_lat_t *l, int64_t ns);

/** @brief Nearest-rank percentile of the kept durations (sorts them on first
 *         use after an add, hence the non-const collector).
 *  @param l  the collector
 *  @param p  the percentile, in (0, 100]
 *  @returns the duration, or 0 when nothing was recorded. */
double dlb_lat_pct(dlb_lat_t *l, double p);

/** @brief Mean over every recorded call.
 *  @param l  the collector
 *  @returns sum / count, or 0 when nothing was recorded. */
double dlb_lat_mean(const dlb_lat_t *l);

/** @brief Release the kept durations and zero the collector (reusable after). */
void dlb_lat_free(dlb_lat_t *l);

/** @brief A monotonic clock, the timebase for durations given to dlb_lat_add().
 *  @returns nanoseconds since an arbitrary start. */
int64_t dlb_lat_clock_ns(void);

#endif
