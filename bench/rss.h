/* Peak memory of a process, for the benchmarks' tables. */
#ifndef DLB_RSS_H
#define DLB_RSS_H

#include <stdint.h>

/** @returns the peak resident set size of this process so far, in bytes
 *           (getrusage's ru_maxrss), or 0 when the kernel does not say. */
int64_t dlb_rss_peak_self(void);

/** @returns the peak resident set size of a running process, in bytes
 *           (VmHWM of /proc/<pid>/status), or 0 when it cannot be read. Unlike
 *           a child's ru_maxrss, which Linux floors at the RSS its parent had
 *           when it was spawned (vfork + exec), this is the process's own. */
int64_t dlb_rss_peak_pid(int pid);

/** @returns ru_maxrss of a struct rusage (kilobytes on Linux) in bytes. */
int64_t dlb_rss_from_maxrss(long maxrss_kb);

#endif
