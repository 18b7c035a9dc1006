/* A simulated training cluster for the demo: the JSON lines `dlbrain emit`
 * reads, as agents and job masters of a small TensorFlow PS cluster would send.
 *
 * Output is a pure function of (phase, seed, base time, job count): job uids
 * come from the seed, event ids from the job uid plus a sequence number, event
 * times from the base time plus fixed offsets. Replaying the same output is
 * therefore a redelivery the pipeline must absorb, not new events. */
#ifndef DLB_DEMO_CLUSTER_H
#define DLB_DEMO_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

typedef enum dlb_demo_phase {
    /* Finished jobs of two scenarios ("ctr-ranking", "recsys-dnn") with full
     * runtime samples: what create-stage optimizers learn from. */
    DLB_DEMO_HISTORY = 0,
    /* New jobs of those scenarios plus a cold-start one ("nlp-bert"). A third
     * of them (at least one per situation) start running and ask for plans at
     * every stage a DLRover master uses, each in one situation an optimizer is
     * there for (dlb_demo_role_t). */
    DLB_DEMO_LIVE = 1,
} dlb_demo_phase_t;

#define DLB_DEMO_HISTORY_JOBS 12
#define DLB_DEMO_LIVE_JOBS    24
#define DLB_DEMO_MAX_JOBS     1000
/* History jobs are placed this far before "now" by default: inside the 168 h
 * similar-job window of the create optimizers (reference section 3). */
#define DLB_DEMO_HISTORY_AGE_MS ((int64_t)3 * 24 * 3600 * 1000)
/* Live jobs start this far before "now" by default, so the longest one (the
 * hung job, about 15 minutes) has ended by now: every event is in the past. */
#define DLB_DEMO_LIVE_AGE_MS ((int64_t)30 * 60 * 1000)

/* What a running live job goes through after its initial stages, in the
 * order they are handed out (job i of the running ones gets role i % count). */
typedef enum dlb_demo_role {
    DLB_DEMO_WORKER_OOM = 0, /* a worker's memory climbs until it is OOMKilled */
    DLB_DEMO_PS_OOM,         /* the same for a PS */
    DLB_DEMO_CPU_HOT_PS,     /* one PS at 90% of its CPU request */
    DLB_DEMO_MEM_HOT_PS,     /* one PS at 93% of its memory request */
    DLB_DEMO_PS_UNDERUSED,   /* one PS busy with 27 cores, the others under 40% */
    DLB_DEMO_WORKER_SCALING, /* 4, then 8, then 12 workers, asking after each */
    DLB_DEMO_MEMORY_LEAK,    /* a worker's memory grows steadily towards its request */
    DLB_DEMO_HANG,           /* global_step stops for 11 minutes */
    DLB_DEMO_STRAGGLER,      /* one worker at a third of its peers' speed */
    DLB_DEMO_ROLES
} dlb_demo_role_t;

/** @returns a short name of a role ("worker-oom", "cpu-hot-ps", ...). */
const char *dlb_demo_role_name(dlb_demo_role_t role);

/* Stages in the order of dlb_stages[] (pipeline/codec/event.h). */
#define DLB_DEMO_STAGES 6

typedef struct dlb_demo_opts {
    dlb_demo_phase_t phase;
    uint64_t seed;
    int64_t base_time_ms; /* event time of the first event; >= 0 */
    int jobs;             /* 0 = the phase default (12 history, 24 live) */
} dlb_demo_opts_t;

/* What a phase produces, so scripts know what to wait for. */
typedef struct dlb_demo_counts {
    int jobs;
    int events;        /* JSON lines written */
    int plan_requests; /* = plans the optimizer answers with */
    int oom_requests;  /* plan requests with oom_pod set */
    int oom_events;    /* node events of kind oom_killed */
    int finished_jobs; /* jobs whose last job event is succeeded or failed */
    int failed_jobs;
    int running_jobs; /* live jobs that report runtime samples */
    /* plan requests per stage, indexed like dlb_stages[] */
    int stage_requests[DLB_DEMO_STAGES];
} dlb_demo_counts_t;

/** @brief Parse "history" or "live". @returns 0 or DLB_ERR_INVALID. */
int dlb_demo_phase_parse(const char *name, dlb_demo_phase_t *out);

/** @returns "history" or "live". */
const char *dlb_demo_phase_name(dlb_demo_phase_t phase);

/** @brief Write every event of the phase to out, one JSON object per line,
 *         in the order a cluster would send them (jobs interleaved by time is
 *         not needed: each job's events are keyed, and so ordered, by job uid).
 *  @param out may be NULL to only count.
 *  @param counts filled with what was (or would be) written; may be NULL.
 *  @returns 0, DLB_ERR_INVALID (bad options: job count outside
 *           0..DLB_DEMO_MAX_JOBS, negative base time), DLB_ERR_GENERIC (a
 *           write to out failed). */
int dlb_demo_write(const dlb_demo_opts_t *opts, FILE *out, dlb_demo_counts_t *counts, char *errstr,
                   size_t errstr_size);

#endif
