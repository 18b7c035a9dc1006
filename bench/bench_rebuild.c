#include "bench_rebuild.h"

#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "err.h"
#include "state.h"

static void node_event(dlb_event_t *ev, int pods, int i)
{
    int pod = i % pods;

    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_NODE;
    snprintf(ev->u.node.event_id, sizeof(ev->u.node.event_id), "e%08d", i);
    snprintf(ev->u.node.job_uid, sizeof(ev->u.node.job_uid), "bench-job");
    ev->u.node.event_time_ms = 1767312000000 + i;
    snprintf(ev->u.node.kind, sizeof(ev->u.node.kind), "%s", i < pods ? "pod_phase" : "oom_killed");
    snprintf(ev->u.node.pod_name, sizeof(ev->u.node.pod_name), "bench-job-worker-%06d",
             pods - 1 - pod);
    snprintf(ev->u.node.pod_type, sizeof(ev->u.node.pod_type), "worker");
    ev->u.node.pod_index = pods - 1 - pod;
}

/* Milliseconds to fold 2 x pods events, one way or the other. */
static int fold(int pods, int rebuild, dlb_job_state_t *st, double *ms)
{
    double t0 = dlb_metric_now() * 1000.0;
    dlb_event_t ev;
    int err;

    if (rebuild && (err = dlb_job_state_begin_rebuild(st)))
        return err;
    for (int i = 0; i < 2 * pods; i++) {
        node_event(&ev, pods, i);
        if ((err = dlb_job_state_apply(st, &ev, 60)))
            return err;
    }
    if (rebuild)
        dlb_job_state_end_rebuild(st);
    *ms = dlb_metric_now() * 1000.0 - t0;
    return 0;
}

int dlb_bench_rebuild(FILE *out, cJSON **json, char *errstr, size_t errstr_size)
{
    static const int sizes[] = {1024, 4096, DLB_JOB_PODS_MAX};
    cJSON *rows = NULL;
    int err = 0;

    if (json) {
        *json = NULL;
        if (!(rows = cJSON_CreateArray()))
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    fprintf(out, "%8s %16s %14s %8s\n", "pods", "sorted inserts", "rebuild", "ratio");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        dlb_job_state_t a = {0}, b = {0};
        double ms_sorted, ms_rebuild;
        cJSON *row;

        if ((err = fold(sizes[s], 0, &a, &ms_sorted)) ||
            (err = fold(sizes[s], 1, &b, &ms_rebuild))) {
            dlb_seterr(errstr, errstr_size, err, "out of memory");
        } else if (a.pods_cnt != b.pods_cnt ||
                   memcmp(a.pods, b.pods, a.pods_cnt * sizeof(*a.pods))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                             "%d pods: the rebuild's state differs from sorted inserts'", sizes[s]);
        }
        dlb_job_state_clear(&a);
        dlb_job_state_clear(&b);
        if (err)
            break;
        fprintf(out, "%8d %13.1f ms %11.1f ms %7.0fx\n", sizes[s], ms_sorted, ms_rebuild,
                ms_sorted / (ms_rebuild > 0 ? ms_rebuild : 1e-3));
        if (rows && (!(row = cJSON_CreateObject()) || !cJSON_AddItemToArray(rows, row) ||
                     !cJSON_AddNumberToObject(row, "pods", sizes[s]) ||
                     !cJSON_AddNumberToObject(row, "sorted_inserts_ms", ms_sorted) ||
                     !cJSON_AddNumberToObject(row, "rebuild_ms", ms_rebuild))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            break;
        }
    }
    if (rows && !err) {
        if (!(*json = cJSON_CreateObject()) || !cJSON_AddItemToObject(*json, "sizes", rows)) {
            cJSON_Delete(*json);
            *json = NULL;
            cJSON_Delete(rows);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        }
        return 0;
    }
    cJSON_Delete(rows);
    return err;
}
