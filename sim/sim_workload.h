/* Workloads of the job simulator: which jobs arrive when.
 *
 * Two CSV formats, told apart by their header line:
 *  - Pollux's workload-N.csv: name,time,application,num_replicas,batch_size
 *    (time in seconds from the start; the dataset and epochs come from the
 *    model profile, sim_model.h);
 *  - dlbrain's: arrival_s,name,model,dataset_size,epochs,batch_size,workers
 *    (dataset_size and epochs may be 0 or empty: the profile's).
 * A model is a measured profile's name or MODEL@PROFILE (sim_model.h); any
 * other name is refused. A third source, an environment's recorded history
 * (sim_history.h), gives each job a profile of its own instead. */
#ifndef DLB_SIM_WORKLOAD_H
#define DLB_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct dlb_sim_spec {
    char name[64];
    char model[64];
    int64_t arrival_ms;   /* from the start of the run */
    int64_t dataset_size; /* samples, 0 = the profile's */
    int epochs;           /* 0 = the profile's */
    int64_t batch_size;   /* global batch */
    int workers;
    /* From history only (0 / NULL otherwise): the job's own profile, and
     * what its pods first requested, instead of the user's random guess. */
    const struct dlb_sim_profile *prof;
    int ps;
    double wk_cpu, ps_cpu;  /* cores per pod */
    int64_t wk_mem, ps_mem; /* bytes per pod */
} dlb_sim_spec_t;

typedef struct dlb_sim_workload {
    dlb_sim_spec_t *jobs; /* in arrival order */
    size_t n;
    void *owned; /* what the specs point to (history profiles), freed with them */
} dlb_sim_workload_t;

/** @brief Read a workload file. With max_jobs > 0, keep the first max_jobs
 *         jobs; when the file has fewer, it is repeated after itself (each
 *         round shifted by the file's span plus its mean gap between
 *         arrivals, names suffixed "-rN") so any count can be run.
 *  @returns 0, DLB_ERR_NOTFOUND, DLB_ERR_INVALID (errstr names path:line;
 *           also a model with no measurements and no profile named),
 *           DLB_ERR_NOMEM. */
int dlb_sim_workload_load(const char *path, size_t max_jobs, dlb_sim_workload_t *wl, char *errstr,
                          size_t errstr_size);

void dlb_sim_workload_free(dlb_sim_workload_t *wl);

#endif
