#include "cluster.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "vec.h"

#define CLUSTER_KEY   "cluster"
#define CLUSTER_TTL_S 604800 /* as every job key: 7 days after the last write */

int dlb_cluster_job_event(const dlb_job_event_t *ev, dlb_cluster_job_t *e)
{
    if (!ev->has_state)
        return 0;
    if (!strcmp(ev->state, "succeeded") || !strcmp(ev->state, "failed") ||
        !strcmp(ev->state, "stopped"))
        return -1;
    if (strcmp(ev->state, "created") && strcmp(ev->state, "pending") &&
        strcmp(ev->state, "running"))
        return 0;
    memset(e, 0, sizeof(*e));
    snprintf(e->job_uid, sizeof(e->job_uid), "%s", ev->job_uid);
    e->waiting = strcmp(ev->state, "running") != 0;
    e->time_ms = ev->event_time_ms;
    return 1;
}

/* A new last entry, or NULL when out of memory. */
static dlb_cluster_job_t *view_add(dlb_cluster_view_t *v)
{
    if (dlb_vec_reserve((void **)&v->jobs, &v->cap, v->cnt + 1, sizeof(*v->jobs)))
        return NULL;
    return &v->jobs[v->cnt++];
}

int dlb_cluster_view_put(dlb_cluster_view_t *v, const dlb_cluster_job_t *e)
{
    size_t i;

    for (i = 0; i < v->cnt && strcmp(v->jobs[i].job_uid, e->job_uid); i++)
        ;
    if (i == v->cnt && !view_add(v))
        return DLB_ERR_NOMEM;
    v->jobs[i] = *e;
    return 0;
}

void dlb_cluster_view_del(dlb_cluster_view_t *v, const char *uid)
{
    for (size_t i = 0; i < v->cnt; i++)
        if (!strcmp(v->jobs[i].job_uid, uid)) {
            v->jobs[i] = v->jobs[--v->cnt];
            return;
        }
}

void dlb_cluster_view_clear(dlb_cluster_view_t *v)
{
    free(v->jobs);
    memset(v, 0, sizeof(*v));
}

int dlb_cluster_job_encode(const dlb_cluster_job_t *e, char *buf, size_t size)
{
    int n =
        snprintf(buf, size, "%d %.17g %lld", e->waiting ? 1 : 0, e->cores, (long long)e->time_ms);

    return n < 0 || (size_t)n >= size ? -1 : 0;
}

int dlb_cluster_job_decode(const char *uid, const char *text, size_t len, dlb_cluster_job_t *e)
{
    char buf[96];
    long long t;
    int w, used = 0;

    if (len >= sizeof(buf) || strlen(uid) >= sizeof(e->job_uid))
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    memset(e, 0, sizeof(*e));
    if (sscanf(buf, "%d %lf %lld%n", &w, &e->cores, &t, &used) != 3 || (size_t)used != len ||
        (w != 0 && w != 1) || !isfinite(e->cores) || e->cores < 0)
        return -1;
    e->waiting = w;
    e->time_ms = t;
    snprintf(e->job_uid, sizeof(e->job_uid), "%s", uid);
    return 0;
}

int dlb_cluster_redis_put(dlb_redis_t *r, const dlb_cluster_job_t *e, char *errstr,
                          size_t errstr_size)
{
    char val[96];

    if (dlb_cluster_job_encode(e, val, sizeof(val)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "cluster entry of %s too long",
                          e->job_uid);
    return dlb_redis_hset(r, CLUSTER_KEY, e->job_uid, val, strlen(val), CLUSTER_TTL_S, errstr,
                          errstr_size);
}

int dlb_cluster_redis_event(dlb_redis_t *r, const dlb_job_event_t *ev, char *errstr,
                            size_t errstr_size)
{
    dlb_cluster_job_t e;
    int what = dlb_cluster_job_event(ev, &e);

    if (what < 0)
        return dlb_redis_hdel(r, CLUSTER_KEY, ev->job_uid, errstr, errstr_size);
    return what ? dlb_cluster_redis_put(r, &e, errstr, errstr_size) : 0;
}

static int load_field(void *opaque, const char *field, const char *val, size_t len)
{
    dlb_cluster_view_t *v = opaque;
    dlb_cluster_job_t e, *slot;

    if (dlb_cluster_job_decode(field, val, len, &e))
        return 0;
    if (!(slot = view_add(v))) /* hash fields are unique: no look-up */
        return DLB_ERR_NOMEM;
    *slot = e;
    return 0;
}

int dlb_cluster_redis_load(dlb_redis_t *r, dlb_cluster_view_t *v, char *errstr, size_t errstr_size)
{
    v->cnt = 0;
    return dlb_redis_hgetall(r, CLUSTER_KEY, DLB_CLUSTER_JOBS_MAX, load_field, v, errstr,
                             errstr_size);
}
