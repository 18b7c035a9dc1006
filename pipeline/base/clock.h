/* Clocks in milliseconds, for the processes and the agent library alike. */
#ifndef DLB_CLOCK_H
#define DLB_CLOCK_H

#include <stdint.h>

/** @returns the wall-clock time in ms since the epoch (event times). */
int64_t dlb_clock_wall_ms(void);

/** @returns a monotonic time in ms (durations, deadlines: never jumps). */
int64_t dlb_clock_mono_ms(void);

#endif
