#include "bench_samples.h"

#include <stdio.h>
#include <string.h>

#include "conf.h"

static uint64_t rnd(uint64_t *s)
{
    /* xorshift64: the same jobs every run, no libc state */
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The pods of job j in sample k: names and counts fixed per job, usage
 * moving with k so that rows differ. @returns the pod count. */
static size_t job_pods(const char *uid, long j, long k, dlb_pod_usage_t *pods)
{
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(j + 1);
    int ps = 1 + (int)(rnd(&s) % 4), workers = 2 + (int)(rnd(&s) % 15), chief = rnd(&s) % 3 == 0;
    size_t n = 0;

    for (int g = 0; g < 3; g++) {
        const char *type = g == 0 ? "ps" : g == 1 ? "worker" : "chief";
        int cnt = g == 0 ? ps : g == 1 ? workers : chief;
        for (int i = 0; i < cnt; i++, n++) {
            dlb_pod_usage_t *p = &pods[n];
            memset(p, 0, sizeof(*p));
            snprintf(p->name, sizeof(p->name), "%.100s-%s-%d", uid, type, i);
            snprintf(p->type, sizeof(p->type), "%s", type);
            p->index = i;
            p->cpu_requested = g == 0 ? 8.0 : 4.0;
            p->cpu_used = p->cpu_requested * (0.3 + 0.05 * (double)((k + i) % 10));
            p->memory_requested = 16 * DLB_GIB;
            p->memory_used = 4 * DLB_GIB + ((k + i) % 16) * 64 * 1024 * 1024;
            p->has_speed = g == 1;
            p->speed = g == 1 ? 1.0 + 0.05 * (double)((k + i) % 10) : 0;
        }
    }
    return n;
}

void dlb_bench_sample(const char *tag, long i, long jobs, int64_t t0_ms, dlb_event_t *ev,
                      dlb_pod_usage_t *pods)
{
    long j = i % jobs, k = i / jobs;
    dlb_runtime_sample_t *s = &ev->u.rt;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_RUNTIME;
    snprintf(s->job_uid, sizeof(s->job_uid), "bench-%s-j%05ld", tag, j);
    snprintf(s->event_id, sizeof(s->event_id), "%.100s-s%ld", s->job_uid, k);
    s->event_time_ms = t0_ms + k * 15000;
    s->global_step = 100 * k;
    s->speed = 10.0 + 0.5 * (double)(k % 7);
    s->pods = pods;
    s->pods_cnt = job_pods(s->job_uid, j, k, pods);
}
