#include "rss.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/time.h>

int64_t dlb_rss_from_maxrss(long maxrss_kb)
{
    /* Linux reports ru_maxrss in kilobytes (getrusage(2)). */
    return maxrss_kb > 0 ? (int64_t)maxrss_kb * 1024 : 0;
}

int64_t dlb_rss_peak_self(void)
{
    struct rusage ru;

    return getrusage(RUSAGE_SELF, &ru) ? 0 : dlb_rss_from_maxrss(ru.ru_maxrss);
}

int64_t dlb_rss_peak_pid(int pid)
{
    char path[64], line[256];
    int64_t kb = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    if (!(f = fopen(path, "r")))
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %" SCNd64 " kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}
