/* A simulated job as its master runs it (sim_job.h).
 *
 * Memory: a worker needs base + per-sample x local batch + growth x
 * min(1, progress / 0.3) (caches warm up over the first 30% of the job); the
 * PS together need ps_mem_base + ps_mem_growth x progress (new embedding ids
 * keep arriving), each PS its share of that plus 512 MiB of runtime. A pod
 * whose request is below its need at a sample is OOMKilled. */
#include "sim_job.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "vec.h"

#define PS_RUNTIME_MEM     (512 * DLB_MIB)
#define WK_GROWTH_PROGRESS 0.3
/* Share of the jobs with a hot PS. */
#define HOT_PS_P      0.3
#define RESCALE_STALL 30000 /* ms: re-rendezvous after a worker count change */
/* The largest pod a user asks for: the largest requests in Alibaba PAI's
 * GPU trace of 2020 (plan_cpu 9000 = 90 cores, plan_mem 400 GB), and the
 * smallest requests a user makes here (half a core, 1 GiB). */
#define USER_CPU_MIN 0.5
#define USER_CPU_MAX 90.0
#define USER_MEM_MAX ((int64_t)400 * 1000 * 1000 * 1000)

static void next_id(dlb_sim_job_t *j, char *buf)
{
    snprintf(buf, DLB_ID_MAX, "%.100s-%05d", j->uid, j->seq++);
}

static void publish(dlb_sim_out_t *out, const dlb_event_t *ev)
{
    if (out->err)
        return;
    out->err = out->publish(out->opaque, ev, out->errstr, sizeof(out->errstr));
    out->events++;
}

static void job_state(dlb_sim_job_t *j, int64_t now, const char *state, const char *exit_reason,
                      int full, dlb_sim_out_t *out)
{
    dlb_event_t ev = {.type = DLB_EV_JOB};
    dlb_job_event_t *e = &ev.u.job;
    const dlb_sim_profile_t *p = j->prof;

    next_id(j, e->event_id);
    e->event_time_ms = now;
    snprintf(e->job_uid, sizeof(e->job_uid), "%s", j->uid);
    e->has_state = 1;
    snprintf(e->state, sizeof(e->state), "%s", state);
    if (exit_reason) {
        e->has_exit_reason = 1;
        snprintf(e->exit_reason, sizeof(e->exit_reason), "%s", exit_reason);
    }
    if (full) {
        /* The scenario is the model: create optimizers learn from earlier
         * jobs of the same model, as a team's jobs of one model. */
        e->has_meta = 1;
        snprintf(e->meta.name, sizeof(e->meta.name), "%s", j->spec->name);
        snprintf(e->meta.user, sizeof(e->meta.user), "sim");
        snprintf(e->meta.group, sizeof(e->meta.group), "sim");
        snprintf(e->meta.app, sizeof(e->meta.app), "%s", j->spec->model);
        snprintf(e->meta.cluster, sizeof(e->meta.cluster), "sim");
        snprintf(e->meta.ns, sizeof(e->meta.ns), "sim");
        snprintf(e->meta.scenario, sizeof(e->meta.scenario), "%s", p->name);
        snprintf(e->meta.framework, sizeof(e->meta.framework), "tensorflow");
        e->has_hyper_params = 1;
        e->hyper_params.batch_size = j->spec->batch_size;
        e->hyper_params.epoch = j->epochs;
        e->has_dataset = 1;
        snprintf(e->dataset.name, sizeof(e->dataset.name), "%s-data", p->name);
        e->dataset.size = j->dataset_size;
        snprintf(e->dataset.storage, sizeof(e->dataset.storage), "sim");
        e->has_model = 1;
        e->model.variable_count = p->variable_count;
        e->model.op_count = p->op_count;
        e->model.total_variable_size = p->ps_mem_base;
        e->model.recv_op_count = p->recv_op_count;
        e->model.flops = p->flops;
        e->model.embedding_dimension = p->embedding_dimension;
    }
    publish(out, &ev);
}

/* A node event of pod, on its node; in a pool, a node name drawn from rng
 * (the job's own stream, or its node-failure stream for those events). */
static void node_event_rng(dlb_sim_job_t *j, dlb_rng_t *rng, int64_t now, const dlb_sim_pod_t *pod,
                           const char *kind, const char *phase, const char *reason,
                           dlb_sim_out_t *out)
{
    dlb_event_t ev = {.type = DLB_EV_NODE};
    dlb_node_event_t *e = &ev.u.node;
    /* Drawn on nodes too, so that a job's random stream does not depend on
     * the cluster's kind. */
    int drawn = (int)(dlb_rng_next(rng) % 500);

    next_id(j, e->event_id);
    e->event_time_ms = now;
    snprintf(e->job_uid, sizeof(e->job_uid), "%s", j->uid);
    snprintf(e->kind, sizeof(e->kind), "%s", kind);
    snprintf(e->pod_name, sizeof(e->pod_name), "%s", pod->name);
    snprintf(e->pod_type, sizeof(e->pod_type), "%s", pod->ps ? "ps" : "worker");
    e->pod_index = pod->index;
    if (pod->node)
        snprintf(e->node_name, sizeof(e->node_name), "%s", pod->node->name);
    else
        snprintf(e->node_name, sizeof(e->node_name), "sim-node-%03d", drawn);
    e->has_phase = 1;
    snprintf(e->phase, sizeof(e->phase), "%s", phase);
    snprintf(e->reason, sizeof(e->reason), "%s", reason);
    e->has_memory_requested = 1;
    e->memory_requested = pod->mem_req;
    e->has_cpu_requested = 1;
    e->cpu_requested = pod->cpu_req;
    out->node_events++;
    publish(out, &ev);
}

static void node_event(dlb_sim_job_t *j, int64_t now, const dlb_sim_pod_t *pod, const char *kind,
                       const char *phase, const char *reason, dlb_sim_out_t *out)
{
    node_event_rng(j, &j->rng, now, pod, kind, phase, reason, out);
}

void dlb_sim_out_reset(dlb_sim_out_t *out)
{
    for (size_t i = 0; i < out->reqs_cnt; i++) {
        dlb_event_t ev = {.type = DLB_EV_PLAN_REQUEST};
        ev.u.req = out->reqs[i];
        dlb_event_clear(&ev);
    }
    out->reqs_cnt = 0;
}

static void ask_nomem(dlb_sim_out_t *out)
{
    if (!out->err)
        out->err = dlb_seterr(out->errstr, sizeof(out->errstr), DLB_ERR_NOMEM,
                              "out of memory queueing a plan request");
}

/* Queue a plan request: stage, the OOM pod (or NULL), the worker phase in
 * config (or NULL: an empty config, as DLRover's PS and create asks). */
static void ask(dlb_sim_job_t *j, int64_t now, const char *stage, const char *oom_pod,
                const char *phase, dlb_sim_out_t *out)
{
    dlb_event_t ev = {.type = DLB_EV_PLAN_REQUEST};
    dlb_plan_request_t *r = &ev.u.req;

    if (dlb_vec_reserve((void **)&out->reqs, &out->reqs_cap, out->reqs_cnt + 1,
                        sizeof(*out->reqs))) {
        ask_nomem(out);
        return;
    }
    next_id(j, r->event_id);
    r->event_time_ms = now;
    snprintf(r->job_uid, sizeof(r->job_uid), "%s", j->uid);
    snprintf(r->stage, sizeof(r->stage), "%s", stage);
    if (oom_pod) {
        /* plan_request v2: oom_pods names it too (a simulated OOM is one pod). */
        r->has_oom_pod = 1;
        snprintf(r->oom_pod, sizeof(r->oom_pod), "%s", oom_pod);
        if (!(r->oom_pods = calloc(1, sizeof(*r->oom_pods))) ||
            !(r->oom_pods[0] = strdup(oom_pod))) {
            free(r->oom_pods);
            ask_nomem(out);
            return;
        }
        r->oom_pods_cnt = 1;
    }
    if (phase) {
        if ((r->config = calloc(1, sizeof(*r->config))))
            r->config_cnt = 1;
        if (!r->config || !(r->config[0].key = strdup(DLB_CONFIG_WORKER_PHASE)) ||
            !(r->config[0].value = strdup(phase))) {
            dlb_event_clear(&ev); /* frees what was made */
            ask_nomem(out);
            return;
        }
    }
    /* Queued: sim_run publishes a tick's requests after its other events
     * are in Kafka, so an optimizer never answers before seeing them. The
     * queue owns the request's heap parts (dlb_sim_out_reset()). */
    out->reqs[out->reqs_cnt++] = *r;
    out->requests++;
}

static double round_cores(double v)
{
    return ceil(v * 2.0) / 2.0; /* users ask in half cores */
}

static int64_t round_gib(double bytes)
{
    return (int64_t)ceil(bytes / (double)DLB_GIB) * DLB_GIB;
}

/* A user's request of a resource whose need is `need`, in the units users
 * ask in, at least the smallest and at most the largest request of the
 * production trace (sim_users.c). */
static double user_cores(double need, const dlb_sim_users_t *u, int res, dlb_rng_t *r)
{
    double v = round_cores(need * dlb_sim_users_ratio(u, res, r));

    return v < USER_CPU_MIN ? USER_CPU_MIN : v > USER_CPU_MAX ? USER_CPU_MAX : v;
}

static int64_t user_mem(double need, const dlb_sim_users_t *u, int res, dlb_rng_t *r)
{
    double v = need * dlb_sim_users_ratio(u, res, r);

    if (v > (double)USER_MEM_MAX)
        v = (double)USER_MEM_MAX;
    return v < (double)DLB_GIB ? DLB_GIB : round_gib(v);
}

static double progress(const dlb_sim_job_t *j)
{
    double p = j->done_samples / (double)j->total_samples;
    return p < 1 ? p : 1;
}

static int64_t worker_need(const dlb_sim_job_t *j)
{
    const dlb_sim_profile_t *p = j->prof;
    double g = progress(j) / WK_GROWTH_PROGRESS;

    return p->wk_mem_base + (int64_t)((double)p->wk_mem_per_sample * j->local_bsz) +
           (int64_t)((double)p->wk_mem_growth * (g < 1 ? g : 1));
}

static double ps_share(const dlb_sim_job_t *j, int i)
{
    double total = j->ps_hot + (j->ps_cnt - 1);
    return (i == 0 ? j->ps_hot : 1.0) / total;
}

static int64_t ps_need(const dlb_sim_job_t *j, int i)
{
    const dlb_sim_profile_t *p = j->prof;
    double all = (double)p->ps_mem_base + (double)p->ps_mem_growth * progress(j);

    return (int64_t)(all * ps_share(j, i)) + PS_RUNTIME_MEM;
}

static void pod_init(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int ps)
{
    memset(pod, 0, sizeof(*pod));
    pod->ps = ps;
    pod->index = ps ? j->next_ps_index++ : j->next_wk_index++;
    snprintf(pod->name, sizeof(pod->name), "%.100s-%s-%d", j->uid, ps ? "ps" : "worker",
             pod->index);
    pod->cpu_req = ps ? j->ps_cpu : j->wk_cpu;
    pod->mem_req = ps ? j->ps_mem : j->wk_mem;
    pod->slow = 1;
    pod->episode = 1;
    pod->factor = ps ? 1.0 : dlb_sim_vary_factor(&j->vary, &j->vary_rng);
}

/* ---- placement on nodes -------------------------------------------------- */

/* With --cluster-nodes, every running pod is bound to a node
 * (sim_cluster.h): placed one at a time as kube-scheduler places a pod, PS
 * first, then the workers by index. In a pool nothing here binds anything
 * (pod->node stays NULL). */

static dlb_sim_pod_t *pod_at(dlb_sim_job_t *j, int ps, int k)
{
    return ps ? &j->ps[k] : &j->wk[k];
}

/* Place one pod (avoid: the node it leaves, taken only when no other fits).
 * @returns 0, or -1 when it fits no node. */
static void pod_bind_to(dlb_sim_pod_t *pod, dlb_sim_node_t *n)
{
    int64_t cpu_m = dlb_sim_cpu_milli(pod->cpu_req);

    dlb_sim_cluster_bind(n, cpu_m, pod->mem_req);
    pod->node = n;
    pod->node_cpu_m = cpu_m;
    pod->node_mem = pod->mem_req;
}

static int pod_bind(dlb_sim_cluster_t *c, dlb_sim_pod_t *pod, dlb_sim_node_t *avoid)
{
    dlb_sim_node_t *n =
        dlb_sim_cluster_pick(c, dlb_sim_cpu_milli(pod->cpu_req), pod->mem_req, avoid);

    if (!n)
        return -1;
    pod_bind_to(pod, n);
    return 0;
}

static void pod_unbind(dlb_sim_pod_t *pod)
{
    if (!pod->node)
        return;
    dlb_sim_cluster_unbind(pod->node, pod->node_cpu_m, pod->node_mem);
    pod->node = NULL;
}

static void unplace_all(dlb_sim_job_t *j)
{
    for (int k = 0; k < j->ps_cnt; k++)
        pod_unbind(&j->ps[k]);
    for (int k = 0; k < j->wk_cnt; k++)
        pod_unbind(&j->wk[k]);
}

/* A job starts only when all its pods are placed (gang, as in a pool).
 * @returns 0, or -1 with nothing bound. */
static int place_all(dlb_sim_job_t *j, dlb_sim_cluster_t *c)
{
    for (int ps = 1; ps >= 0; ps--) {
        for (int k = 0; k < (ps ? j->ps_cnt : j->wk_cnt); k++) {
            if (pod_bind(c, pod_at(j, ps, k), NULL)) {
                unplace_all(j);
                return -1;
            }
        }
    }
    return 0;
}

/* A replaced or relaunched pod is a new pod: placed again, away from the
 * node it leaves when another node fits (where it was always does). */
static void pod_move(dlb_sim_cluster_t *c, dlb_sim_pod_t *pod)
{
    dlb_sim_node_t *from = pod->node;

    if (!from)
        return;
    pod_unbind(pod);
    pod_bind(c, pod, from);
}

/* Old pod k of the group is gone from j, or j's has other requests (a new
 * pod: Kubernetes cannot resize one). */
static int pod_renewed(dlb_sim_job_t *j, dlb_sim_job_t *old, int ps, int k)
{
    const dlb_sim_pod_t *a = pod_at(j, ps, k), *b = pod_at(old, ps, k);

    return k >= (ps ? j->ps_cnt : j->wk_cnt) || a->cpu_req != b->cpu_req ||
           a->mem_req != b->mem_req;
}

/* A running job's plan on nodes, j changed from old: the pods gone or
 * renewed give back their nodes, then the renewed and new pods are placed,
 * PS first. A new worker that fits no node is cut with the ones after it;
 * any other pod that fits none drops the plan: every pod is bound as in old
 * again (@returns -1; the caller restores j from old). */
static int place_plan(dlb_sim_job_t *j, dlb_sim_job_t *old, dlb_sim_cluster_t *c)
{
    for (int ps = 1; ps >= 0; ps--) {
        for (int k = 0; k < (ps ? old->ps_cnt : old->wk_cnt); k++) {
            const dlb_sim_pod_t *b = pod_at(old, ps, k);

            if (!b->node || !pod_renewed(j, old, ps, k))
                continue;
            dlb_sim_cluster_unbind(b->node, b->node_cpu_m, b->node_mem);
            if (k < (ps ? j->ps_cnt : j->wk_cnt))
                pod_at(j, ps, k)->node = NULL;
        }
    }
    for (int ps = 1; ps >= 0; ps--) {
        for (int k = 0; k < (ps ? j->ps_cnt : j->wk_cnt); k++) {
            dlb_sim_pod_t *pod = pod_at(j, ps, k);

            if (pod->node || !pod_bind(c, pod, NULL))
                continue;
            if (!ps && k >= old->wk_cnt) {
                j->next_wk_index -= j->wk_cnt - k;
                j->wk_cnt = k;
                return 0;
            }
            /* Undo: the pods placed here, then the old pods back. */
            for (int q = 1; q >= 0; q--)
                for (int i = 0; i < (q ? j->ps_cnt : j->wk_cnt); i++)
                    if (i >= (q ? old->ps_cnt : old->wk_cnt) || pod_renewed(j, old, q, i))
                        pod_unbind(pod_at(j, q, i));
            for (int q = 1; q >= 0; q--) {
                for (int i = 0; i < (q ? old->ps_cnt : old->wk_cnt); i++) {
                    const dlb_sim_pod_t *b = pod_at(old, q, i);

                    if (b->node && pod_renewed(j, old, q, i))
                        dlb_sim_cluster_bind(b->node, b->node_cpu_m, b->node_mem);
                }
            }
            return -1;
        }
    }
    return 0;
}

/* ---- node failures ------------------------------------------------------- */

/* Node failures of the simulated cluster (--node-failures, off by default:
 * then nothing here draws a number or publishes an event).
 *
 * A running pod's node fails at --node-failures per pod-hour (a Poisson
 * rate, drawn once per pod per sample interval from the job's own node
 * stream). The pod stops; a synchronous job stops with it. Two ways back:
 * - a plan's replace action: the pod starts on another node at once and the
 *   job restarts (the usual restart stall);
 * - none: Kubernetes evicts the pod after the node's not-ready toleration
 *   and DLRover's master relaunches it (params->node_wait_ms, 300 s), then
 *   the restart.
 * A failure takes one pod, not the other pods on its node. A pod that
 * comes back is placed again away from the failed node (on nodes;
 * placement on nodes). */

static void nodes_init(dlb_sim_job_t *j, uint64_t seed, size_t i)
{
    /* Another constant than the job's own stream's, so the two differ. */
    j->node_rng.s = seed ^ ((uint64_t)i + 1) * 0xd1b54a32d192ed03ULL ^ 0x6e6f646573ULL;
    dlb_rng_next(&j->node_rng);
}

/* The pod runs again at now (replaced or relaunched), on another node. */
static void node_back(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int64_t now, const char *reason,
                      dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    j->node_down_ms += now - pod->down_ms;
    pod->down_ms = 0;
    pod_move(c, pod);
    node_event_rng(j, &j->node_rng, now, pod, "pod_phase", "Running", reason, out);
}

/* One pod: relaunched when its wait is over; else, when up, maybe its node
 * fails. @returns 1 when it was down before now and still is. */
static int node_pod_tick(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int64_t now,
                         const dlb_sim_params_t *p, double fail_p, int *failed,
                         dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    if (pod->down_ms) {
        if (now < pod->down_ms + p->node_wait_ms)
            return 1;
        node_back(j, pod, now, "Relaunched", c, out);
        j->node_relaunched++;
        if (j->stall_until_ms < now + p->restart_ms)
            j->stall_until_ms = now + p->restart_ms;
        return 0;
    }
    if (dlb_rng_unit(&j->node_rng) >= fail_p)
        return 0;
    pod->down_ms = now;
    j->node_failures++;
    *failed = 1;
    node_event_rng(j, &j->node_rng, now, pod, "node_not_ready", "NotReady", "NodeNotReady", out);
    return 0;
}

static int nodes_tick(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p,
                      dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    double fail_p;
    int down = 0, failed = 0;

    if (p->node_fail_per_hour <= 0)
        return 0;
    fail_p = 1.0 - exp(-p->node_fail_per_hour * (double)p->sample_ms / 3.6e6);
    for (int k = 0; k < j->ps_cnt; k++)
        down |= node_pod_tick(j, &j->ps[k], now, p, fail_p, &failed, c, out);
    for (int k = 0; k < j->wk_cnt; k++)
        down |= node_pod_tick(j, &j->wk[k], now, p, fail_p, &failed, c, out);
    /* A master that reads plans asks at once, as it asks at an OOM. */
    if (failed)
        ask(j, now, DLB_STAGE_WORKER_RUNNING, NULL, NULL, out);
    return down;
}

static int nodes_replace(dlb_sim_job_t *j, dlb_sim_pod_t *pod, int64_t now, dlb_sim_cluster_t *c,
                         dlb_sim_out_t *out)
{
    if (!pod->down_ms)
        return pod->replaced_ms && pod->replaced_ms == now ? -1 : 0;
    node_back(j, pod, now, "Replaced", c, out);
    pod->replaced_ms = now;
    j->node_replaced++;
    return 1;
}

int dlb_sim_job_init(dlb_sim_job_t *j, const dlb_sim_spec_t *spec, uint64_t seed, size_t i,
                     int64_t start_ms, const dlb_sim_params_t *p, char *errstr, size_t errstr_size)
{
    dlb_rng_t tag = {seed};
    const dlb_sim_profile_t *prof;
    int known;
    dlb_sim_speed_t sp;
    double share[DLB_SIM_MAX_PS], cpu[DLB_SIM_MAX_PS];

    memset(j, 0, sizeof(*j));
    prof = spec->prof ? spec->prof : dlb_sim_profile_find(spec->model, &known);
    j->spec = spec;
    j->prof = prof;
    snprintf(j->uid, sizeof(j->uid), "%.64s-%04x", spec->name,
             (unsigned)(dlb_rng_next(&tag) >> 48) & 0xffffu);
    /* Each job its own stream: its numbers do not depend on other jobs. */
    j->rng.s = seed ^ ((uint64_t)i + 1) * 0x9e3779b97f4a7c15ULL;
    dlb_rng_next(&j->rng);
    j->arrival_ms = start_ms + (int64_t)((double)spec->arrival_ms * p->time_scale);
    j->dataset_size = spec->dataset_size ? spec->dataset_size : prof->dataset_size;
    j->epochs = spec->epochs ? spec->epochs : prof->epochs;
    j->total_samples = (int64_t)((double)j->dataset_size * j->epochs * p->time_scale);
    if (j->total_samples < spec->batch_size)
        j->total_samples = spec->batch_size;
    if (spec->workers > DLB_SIM_MAX_WORKERS)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "job %s: %d workers, at most %d",
                          spec->name, spec->workers, DLB_SIM_MAX_WORKERS);
    j->local_bsz = (double)spec->batch_size / spec->workers;
    /* The user's own request, what the job runs with when no brain answers:
     * the need times a draw calibrated on production (sim_users.h), PS
     * counted one per 8 workers. The need is what the job uses at full
     * speed: a worker's busy cores, the PS's demand, each pod's memory at
     * the end of the job. */
    j->wk_cnt = spec->workers;
    j->ps_cnt = (spec->workers + 7) / 8;
    for (int k = 0; k < j->ps_cnt; k++) {
        share[k] = 1.0 / j->ps_cnt;
        cpu[k] = 1e6; /* no PS shortage: the need is the demand at full speed */
    }
    {
        dlb_sim_speed_in_t in = {prof, j->wk_cnt, j->local_bsz, prof->worker_cpu,
                                 1,    j->ps_cnt, share,        cpu};
        dlb_sim_speed(&in, &sp);
    }
    j->wk_cpu = user_cores(prof->worker_cpu * sp.t_compute / sp.step_time, &p->users,
                           DLB_SIM_RES_WK_CPU, &j->rng);
    j->ps_cpu = user_cores(sp.ps_demand / j->ps_cnt, &p->users, DLB_SIM_RES_PS_CPU, &j->rng);
    j->ps_hot = dlb_rng_unit(&j->rng) < HOT_PS_P ? dlb_rng_range(&j->rng, 2.0, 4.0) : 1.0;
    {
        double wk_end = (double)(prof->wk_mem_base + prof->wk_mem_growth) +
                        (double)prof->wk_mem_per_sample * j->local_bsz;
        double ps_end =
            (double)(prof->ps_mem_base + prof->ps_mem_growth) / j->ps_cnt + (double)PS_RUNTIME_MEM;
        j->wk_mem = user_mem(wk_end, &p->users, DLB_SIM_RES_WK_MEM, &j->rng);
        j->ps_mem = user_mem(ps_end, &p->users, DLB_SIM_RES_PS_MEM, &j->rng);
    }
    /* A job from history starts as its pods did there (the draws above
     * still happen, so its random stream is the same either way). */
    if (spec->ps > 0)
        j->ps_cnt = spec->ps < DLB_SIM_MAX_PS ? spec->ps : DLB_SIM_MAX_PS;
    if (spec->wk_cpu > 0)
        j->wk_cpu = spec->wk_cpu;
    if (spec->ps_cpu > 0)
        j->ps_cpu = spec->ps_cpu;
    if (spec->wk_mem > 0)
        j->wk_mem = spec->wk_mem;
    if (spec->ps_mem > 0)
        j->ps_mem = spec->ps_mem;
    /* Worker variation from a stream of its own, so that it does not move
     * the job's other draws. */
    j->vary_rng.s = seed ^ ((uint64_t)i + 1) * 0x94d049bb133111ebULL ^ 0x7661727931ULL;
    dlb_rng_next(&j->vary_rng);
    dlb_sim_vary_job(&j->vary, j->wk_cnt, &j->vary_rng);
    for (int k = 0; k < j->ps_cnt; k++)
        pod_init(j, &j->ps[k], 1);
    for (int k = 0; k < j->wk_cnt; k++)
        pod_init(j, &j->wk[k], 0);
    /* A persistently imbalanced job's slow workers: on slow nodes from the start. */
    for (int k = 0; k < j->vary.slow_workers && k < j->wk_cnt; k++)
        j->wk[k].slow = j->vary.slow;
    j->straggled = j->vary.slow_workers > 0;
    nodes_init(j, seed, i);
    return 0;
}

void dlb_sim_job_arrive(dlb_sim_job_t *j, int64_t now, dlb_sim_out_t *out)
{
    j->state = DLB_SIM_PENDING;
    job_state(j, now, "created", NULL, 1, out);
    /* DLRover's init_job_resource: job_stage_create before any pod exists,
     * then the stage is worker_initial whatever the answer. */
    ask(j, now, DLB_STAGE_CREATE, NULL, NULL, out);
    j->stage = DLB_SIM_STAGE_WORKER_INITIAL;
    job_state(j, now, "pending", NULL, 0, out);
}

void dlb_sim_job_totals(const dlb_sim_job_t *j, double *cores, int64_t *memory)
{
    *cores = 0;
    *memory = 0;
    for (int k = 0; k < j->ps_cnt; k++) {
        *cores += j->ps[k].cpu_req;
        *memory += j->ps[k].mem_req;
    }
    for (int k = 0; k < j->wk_cnt; k++) {
        *cores += j->wk[k].cpu_req;
        *memory += j->wk[k].mem_req;
    }
}

/* Hold exactly what the pods request now. */
static void hold(dlb_sim_job_t *j, dlb_sim_cluster_t *c)
{
    double cores;
    int64_t mem;

    dlb_sim_job_totals(j, &cores, &mem);
    dlb_sim_cluster_take(c, cores - j->held_cores, mem - j->held_mem);
    j->held_cores = cores;
    j->held_mem = mem;
}

int dlb_sim_job_start(dlb_sim_job_t *j, int64_t now, dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    double cores;
    int64_t mem;

    /* The total first: on nodes too, a job the free total cannot hold has
     * no placement to look for. */
    dlb_sim_job_totals(j, &cores, &mem);
    if (!dlb_sim_cluster_fits(c, cores, mem) || (c->nodes_cnt && place_all(j, c)))
        return 0;
    j->state = DLB_SIM_RUNNING;
    j->start_ms = now;
    hold(j, c);
    job_state(j, now, "running", NULL, 0, out);
    for (int k = 0; k < j->ps_cnt; k++)
        node_event(j, now, &j->ps[k], "pod_phase", "Running", "Started", out);
    for (int k = 0; k < j->wk_cnt; k++)
        node_event(j, now, &j->wk[k], "pod_phase", "Running", "Started", out);
    return 1;
}

static void finish(dlb_sim_job_t *j, int64_t now, dlb_sim_state_t st, const char *reason,
                   dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    j->state = st;
    j->end_ms = now;
    snprintf(j->exit_reason, sizeof(j->exit_reason), "%s", reason);
    dlb_sim_cluster_take(c, -j->held_cores, -j->held_mem);
    unplace_all(j);
    j->held_cores = 0;
    j->held_mem = 0;
    job_state(j, now, st == DLB_SIM_SUCCEEDED ? "succeeded" : "failed", reason, 0, out);
    dlb_log(st == DLB_SIM_SUCCEEDED ? DLB_LOG_DEBUG : DLB_LOG_INFO, "job %s %s (%s) after %.0f s",
            j->uid, st == DLB_SIM_SUCCEEDED ? "succeeded" : "failed", reason,
            (double)(now - j->arrival_ms) / 1000.0);
}

void dlb_sim_job_fail(dlb_sim_job_t *j, int64_t now, const char *reason, dlb_sim_cluster_t *c,
                      dlb_sim_out_t *out)
{
    finish(j, now, DLB_SIM_FAILED, reason, c, out);
}

/* The speed with the pods as they are now. */
static void job_speed(const dlb_sim_job_t *j, dlb_sim_speed_t *sp)
{
    double share[DLB_SIM_MAX_PS], cpu[DLB_SIM_MAX_PS], slowest = 0, wcpu = 1e9;

    for (int k = 0; k < j->ps_cnt; k++) {
        share[k] = ps_share(j, k);
        cpu[k] = j->ps[k].cpu_req;
    }
    /* The slowest worker (its node, a transient episode, or the fewest
     * cores) sets the synchronous step, which also waits for each step's
     * slowest worker (sim_vary.h). A job from history has its own
     * variation in its recorded speed: only nodes and episodes slow it. */
    for (int k = 0; k < j->wk_cnt; k++) {
        double f = j->wk[k].slow * j->wk[k].episode * (j->prof->observed ? 1.0 : j->wk[k].factor);

        if (f > slowest)
            slowest = f;
        if (j->wk[k].cpu_req < wcpu)
            wcpu = j->wk[k].cpu_req;
    }
    if (!j->prof->observed)
        slowest *= dlb_sim_vary_sync(j->wk_cnt);
    dlb_sim_speed_in_t in = {j->prof, j->wk_cnt, j->local_bsz, wcpu,
                             slowest, j->ps_cnt, share,        cpu};
    dlb_sim_speed(&in, sp);
}

static double jitter(dlb_sim_job_t *j, double spread)
{
    return dlb_rng_range(&j->rng, 1.0 - spread, 1.0 + spread);
}

/* Two decimals: what a real agent reports, and the same number after a JSON
 * round trip. */
static double round2(double v)
{
    return floor(v * 100.0 + 0.5) / 100.0;
}

/* A pod's line of a sample: usage capped at what it requested (a pod over
 * its memory request is OOMKilled, not reported above it). */
static void pod_usage(dlb_pod_usage_t *u, const dlb_sim_pod_t *pod, double cpu, int64_t need)
{
    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "%s", pod->name);
    snprintf(u->type, sizeof(u->type), "%s", pod->ps ? "ps" : "worker");
    u->index = pod->index;
    u->cpu_used = round2(cpu < pod->cpu_req ? cpu : pod->cpu_req);
    u->cpu_requested = pod->cpu_req;
    u->memory_used = need < pod->mem_req ? need : pod->mem_req;
    u->memory_requested = pod->mem_req;
}

/* A pod's use and request over the interval that ends at this sample, in
 * core-seconds and GiB-seconds: the sample stands for its interval. */
static void account(dlb_sim_job_t *j, dlb_sim_pod_t *pod, const dlb_pod_usage_t *u, int ps,
                    int64_t need, double dt_s)
{
    double gib = (double)need / (double)DLB_GIB;

    if (!pod->sampled) {
        pod->sampled = 1;
        j->pods_ran++;
    }
    int c = ps ? DLB_SIM_USE_PS_CPU : DLB_SIM_USE_WK_CPU;
    int m = ps ? DLB_SIM_USE_PS_MEM : DLB_SIM_USE_WK_MEM;

    j->use_s[c] += u->cpu_used * dt_s;
    j->req_s[c] += u->cpu_requested * dt_s;
    j->use_s[m] += (double)u->memory_used / (double)DLB_GIB * dt_s;
    j->req_s[m] += (double)u->memory_requested / (double)DLB_GIB * dt_s;
    j->need_s[ps] += gib * dt_s;
    j->pod_s[ps] += dt_s;
    if (gib > j->need_peak[ps])
        j->need_peak[ps] = gib;
}

static void sample(dlb_sim_job_t *j, int64_t now, int64_t dt_ms, const dlb_sim_speed_t *sp,
                   int stalled, dlb_sim_out_t *out)
{
    dlb_event_t ev = {.type = DLB_EV_RUNTIME};
    dlb_runtime_sample_t *s = &ev.u.rt;
    dlb_pod_usage_t pods[DLB_SIM_MAX_PS + DLB_SIM_MAX_WORKERS];
    double busy = sp->t_compute / sp->step_time;
    double steps = (double)dt_ms / 1000.0 / sp->step_time; /* in the sample */
    int n = 0;

    next_id(j, s->event_id);
    s->event_time_ms = now;
    snprintf(s->job_uid, sizeof(s->job_uid), "%s", j->uid);
    s->global_step = (int64_t)(j->done_samples / (double)j->spec->batch_size);
    /* The master's speed record (perf_monitor.py, collect_global_step): the
     * first step, then each step larger than the last. */
    if (!j->rec_any || s->global_step > j->rec_step) {
        j->rec_any = 1;
        j->rec_step = s->global_step;
        j->rec_last_ms = now;
        if (!j->rec_first_ms)
            j->rec_first_ms = now;
    }
    s->speed = stalled ? 0 : round2(j->speed);
    for (int k = 0; k < j->ps_cnt; k++) {
        dlb_pod_usage_t *u = &pods[n++];
        const dlb_sim_pod_t *pod = &j->ps[k];
        double cpu = stalled ? 0.1 : ps_share(j, k) * sp->ps_demand * jitter(j, 0.03);
        int64_t need = ps_need(j, k);

        pod_usage(u, pod, cpu, need);
        account(j, &j->ps[k], u, 1, need, (double)dt_ms / 1000.0);
    }
    for (int k = 0; k < j->wk_cnt; k++) {
        dlb_pod_usage_t *u = &pods[n++];
        const dlb_sim_pod_t *pod = &j->wk[k];
        double cpu = stalled ? 0.1 : j->prof->worker_cpu * busy * jitter(j, 0.03);
        int64_t need = (int64_t)((double)worker_need(j) * jitter(j, 0.005));

        pod_usage(u, pod, cpu, need);
        account(j, &j->wk[k], u, 0, need, (double)dt_ms / 1000.0);
        /* Each worker's own rate over the sample: a straggler shows slower
         * than its peers, and every worker varies a little around its own. */
        u->has_speed = 1;
        u->speed =
            stalled ? 0
                    : round2(j->speed / j->wk_cnt /
                             (pod->slow * pod->episode * (j->prof->observed ? 1.0 : pod->factor)) *
                             dlb_sim_vary_window(steps, &j->vary_rng));
    }
    s->pods = pods;
    s->pods_cnt = (size_t)n;
    out->samples++;
    publish(out, &ev);
}

/* A pod OOMKilled at or above this memory request is not relaunched
 * (DLRover's NodeResourceLimit.MAX_MEMORY, 65536 MiB). */
#define MASTER_MAX_MEMORY (64 * DLB_GIB)

/* A worker the master does not relaunch is gone: the job trains on with
 * the others, which re-rendezvous. */
static void worker_drop(dlb_sim_job_t *j, int k, int64_t now, dlb_sim_cluster_t *c)
{
    pod_unbind(&j->wk[k]);
    memmove(&j->wk[k], &j->wk[k + 1], (size_t)(j->wk_cnt - k - 1) * sizeof(j->wk[0]));
    j->wk_cnt--;
    j->rec_first_ms = 0; /* the speed monitor's target count shrank with it */
    if (j->stall_until_ms < now + RESCALE_STALL)
        j->stall_until_ms = now + RESCALE_STALL;
    hold(j, c);
}

/* Kill every pod whose need is over its request. DLRover's master
 * (dist_job_manager.py, _should_relaunch) relaunches an OOMKilled pod and
 * asks about it, unless its memory request is already MASTER_MAX_MEMORY or
 * its relaunches are spent (the 4th OOM): then it neither relaunches it nor
 * asks. Such a pod ends the job when it is critical (event_callback.py,
 * TFPSNodeHandlingCallback._stop_job_if_needed): a PS, or worker 0; another
 * worker is dropped. @returns 1 when the job failed. */
static int oom_check(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p, dlb_sim_cluster_t *c,
                     dlb_sim_out_t *out)
{
    for (int k = 0; k < j->ps_cnt + j->wk_cnt; k++) {
        int ps = k < j->ps_cnt;
        dlb_sim_pod_t *pod = ps ? &j->ps[k] : &j->wk[k - j->ps_cnt];
        int64_t need = ps ? ps_need(j, k) : worker_need(j);

        if (need <= pod->mem_req)
            continue;
        if (!pod->ooms++)
            j->pods_oom_killed++;
        j->ooms++;
        out->ooms++;
        node_event(j, now, pod, "oom_killed", "Failed", "OOMKilled", out);
        dlb_dbg("%s OOMKilled: needs %.2f GiB, has %.2f GiB", pod->name,
                (double)need / (double)DLB_GIB, (double)pod->mem_req / (double)DLB_GIB);
        if (pod->mem_req >= MASTER_MAX_MEMORY || pod->ooms > p->max_relaunch) {
            /* The job's exit reason as get_job_exit_reason gives it: a
             * worker's OOM is a code error until the master saw a step. */
            if (ps || pod->index == 0) {
                finish(j, now, DLB_SIM_FAILED,
                       ps                              ? "PSOOM"
                       : j->rec_any && j->rec_step > 0 ? "WorkerOOM"
                                                       : "CodeError",
                       c, out);
                return 1;
            }
            worker_drop(j, k - j->ps_cnt, now, c);
            k--;
            continue;
        }
        /* The master relaunches it and asks what memory to give it, as
         * DLRover's adjust_oom_resource (job.py): a PS at ps_initial naming
         * the pod, which counts as a PS change; a worker at create naming
         * the pod while the stage is still worker_initial (before the
         * first periodic ask), later with a plain worker_initial ask in
         * the initial phase. */
        pod->oom_mem = pod->mem_req;
        if (j->stall_until_ms < now + p->restart_ms)
            j->stall_until_ms = now + p->restart_ms;
        if (ps) {
            ask(j, now, DLB_STAGE_PS_INITIAL, pod->name, NULL, out);
            j->ps_changed_ms = now;
        } else if (j->stage == DLB_SIM_STAGE_WORKER_INITIAL) {
            ask(j, now, DLB_STAGE_CREATE, pod->name, NULL, out);
        } else {
            ask(j, now, DLB_STAGE_WORKER_INITIAL, NULL, "initial", out);
        }
    }
    return 0;
}

/* ---- PS migration ---------------------------------------------------------
 *
 * A per-pod PS resource plan that the master's autoscaler loop executes
 * migrates the PS (job_auto_scaler.py, _migrate_nodes; ps.py,
 * migrate_parameter_servers): the master creates a new pod with those
 * resources, the job keeps training on the old one until the new one runs,
 * then moves to it (the restart: the new pod's start) and the old one is
 * dropped (ps.py, process_after_ps_cluster_ready). The new pod needs room
 * in the cluster while the old one still holds its own: it waits for it.
 * While a migration lasts the loop makes no check
 * (_periodic_optimize_running_resource: exist_migrated_ps_nodes), and a new
 * pod still pending after pod_pending_ms fails the job
 * (dist_job_manager.py, should_early_stop;
 * ps.py, find_pending_node_caused_training_hang). */

static int migrating(const dlb_sim_job_t *j)
{
    for (int k = 0; k < j->ps_cnt; k++)
        if (j->ps[k].mig_ms)
            return 1;
    return 0;
}

/* Start the new pods that fit now. */
static void migrations_place(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p,
                             dlb_sim_cluster_t *c)
{
    for (int k = 0; k < j->ps_cnt; k++) {
        dlb_sim_pod_t *pod = &j->ps[k];
        dlb_sim_node_t *n = NULL;

        if (!pod->mig_ms || pod->mig_run_ms || !dlb_sim_cluster_fits(c, pod->mig_cpu, pod->mig_mem))
            continue;
        /* On nodes, a node with room for it beside the old pod. */
        if (c->nodes_cnt &&
            !(n = dlb_sim_cluster_pick(c, dlb_sim_cpu_milli(pod->mig_cpu), pod->mig_mem, NULL)))
            continue;
        pod_unbind(pod);
        pod->cpu_req = pod->mig_cpu;
        pod->mem_req = pod->mig_mem;
        if (n)
            pod_bind_to(pod, n);
        pod->mig_run_ms = now + p->restart_ms;
        if (j->stall_until_ms < pod->mig_run_ms)
            j->stall_until_ms = pod->mig_run_ms;
        hold(j, c);
    }
}

/* A tick of the job's migrations: the new pods that run now end theirs,
 * waiting ones start when they fit. @returns 1 when one was pending too
 * long and failed the job. */
static int migrations_tick(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p,
                           dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    for (int k = 0; k < j->ps_cnt; k++) {
        dlb_sim_pod_t *pod = &j->ps[k];

        if (pod->mig_run_ms && now >= pod->mig_run_ms) {
            pod->mig_ms = pod->mig_run_ms = 0;
            node_event(j, now, pod, "pod_phase", "Running", "Migrated", out);
        }
    }
    migrations_place(j, now, p, c);
    for (int k = 0; k < j->ps_cnt; k++) {
        const dlb_sim_pod_t *pod = &j->ps[k];

        if (pod->mig_ms && now - pod->mig_ms > p->pod_pending_ms) {
            finish(j, now, DLB_SIM_FAILED, "PendingTimeout", c, out);
            return 1;
        }
    }
    return 0;
}

/* A periodic ask of the master: remembered until answered, so that
 * dlb_sim_job_answered() knows it from the OOM asks. */
static void ask_periodic(dlb_sim_job_t *j, int64_t now, const char *stage, const char *phase,
                         int ps_running, dlb_sim_out_t *out)
{
    size_t n = out->reqs_cnt;

    ask(j, now, stage, NULL, phase, out);
    if (out->reqs_cnt == n)
        return;
    snprintf(j->asked, sizeof(j->asked), "%s", out->reqs[n].event_id);
    j->asked_ps_running = ps_running;
}

/* DLRover's _get_worker_resource_at_running: the sample phase once, then
 * the stable phase. */
static void ask_workers(dlb_sim_job_t *j, int64_t now, dlb_sim_out_t *out)
{
    if (!j->worker_sampled) {
        j->worker_sampled = 1;
        ask_periodic(j, now, DLB_STAGE_WORKER_INITIAL, "sample", 0, out);
    } else {
        ask_periodic(j, now, DLB_STAGE_WORKER_RUNNING, "stable", 0, out);
    }
}

/* DLRover's autoscaler loop (job_auto_scaler.py,
 * _periodic_optimize_running_resource), one check per tick: the master asks
 * (job.py, get_job_resource_plan) once the worker count has been steady in
 * its speed records for steady_ms, and more than ask_every_ms after the
 * last periodic ask that got a plan. PS is asked at most once per
 * ps_change_ms after a PS change (_get_ps_resource_plan). */
static void periodic(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p, dlb_sim_out_t *out)
{
    int ps_open = !j->ps_changed_ms || now - j->ps_changed_ms > p->ps_change_ms;

    /* perf_monitor.py, worker_adjustment_finished: records with the current
     * worker count span steady_ms. */
    if (!j->rec_first_ms || j->rec_last_ms - j->rec_first_ms < p->steady_ms)
        return;
    if (j->last_plan_ms && now - j->last_plan_ms <= p->ask_every_ms)
        return;
    if (migrating(j))
        return;
    switch (j->stage) {
    case DLB_SIM_STAGE_CREATE:
        break;
    case DLB_SIM_STAGE_WORKER_INITIAL:
        ask_periodic(j, now, DLB_STAGE_WORKER_INITIAL, "initial", 0, out);
        j->stage = DLB_SIM_STAGE_PS_INITIAL;
        break;
    case DLB_SIM_STAGE_PS_INITIAL:
        /* Whatever comes (or is skipped), the workers wait for the next check. */
        if (ps_open)
            ask_periodic(j, now, DLB_STAGE_PS_INITIAL, NULL, 0, out);
        j->stage = DLB_SIM_STAGE_PS_RUNNING;
        break;
    case DLB_SIM_STAGE_PS_RUNNING:
        if (ps_open)
            ask_periodic(j, now, DLB_STAGE_PS_RUNNING, NULL, 1, out);
        else
            ask_workers(j, now, out);
        break;
    }
}

void dlb_sim_job_answered(dlb_sim_job_t *j, const dlb_plan_request_t *req, const dlb_plan_t *plan,
                          int64_t now, dlb_sim_out_t *out)
{
    /* As DLRover's ResourcePlan.empty() sees the gateway's answer: actions
     * and reasons do not count. */
    int got = plan && plan->plan_id[0] && (plan->groups_cnt || plan->pods_cnt);
    int ps = !strcmp(req->stage, DLB_STAGE_PS_INITIAL) || !strcmp(req->stage, DLB_STAGE_PS_RUNNING);

    if (!j->asked[0] || strcmp(req->event_id, j->asked))
        return; /* an OOM ask: it moves no clock but the PS one, at the ask */
    j->asked[0] = 0;
    if (got) {
        j->last_plan_ms = now;
        if (ps)
            j->ps_changed_ms = now;
    } else if (j->asked_ps_running && j->state == DLB_SIM_RUNNING) {
        ask_workers(j, now, out); /* "asks for workers only when the PS plan is empty" */
    }
}

/* A transient episode (sim_vary.h): it starts on a worker drawn at its
 * point of the job and ends by itself. */
static void episode_tick(dlb_sim_job_t *j, int64_t now)
{
    if (j->episode_end_ms && now >= j->episode_end_ms) {
        for (int k = 0; k < j->wk_cnt; k++)
            j->wk[k].episode = 1;
        j->episode_end_ms = 0;
    }
    if (j->wk_cnt > 0 && progress(j) >= j->vary.episode_at && j->vary.episode_at <= 1) {
        int k = (int)(dlb_rng_unit(&j->vary_rng) * j->wk_cnt);

        j->wk[k < j->wk_cnt ? k : j->wk_cnt - 1].episode = j->vary.episode;
        j->episode_end_ms = now + j->vary.episode_ms;
        j->vary.episode_at = 2; /* once */
    }
}

void dlb_sim_job_tick(dlb_sim_job_t *j, int64_t now, const dlb_sim_params_t *p,
                      dlb_sim_cluster_t *c, dlb_sim_out_t *out)
{
    dlb_sim_speed_t sp;
    int64_t from = now - p->sample_ms, from0, run_ms;
    int stalled;

    if (j->state != DLB_SIM_RUNNING)
        return;
    if (nodes_tick(j, now, p, c, out) && j->stall_until_ms < now)
        j->stall_until_ms = now; /* a pod is down: the synchronous job waits */
    if (from < j->start_ms)
        from = j->start_ms;
    from0 = from; /* the pods held their resources since, stalled or not */
    if (from < j->stall_until_ms)
        from = j->stall_until_ms < now ? j->stall_until_ms : now;
    run_ms = now - from;
    stalled = run_ms < p->sample_ms / 2;
    episode_tick(j, now);
    job_speed(j, &sp);
    j->speed = sp.samples_per_s / (double)j->spec->batch_size * jitter(j, 0.02);
    j->done_samples += j->speed * (double)j->spec->batch_size * (double)run_ms / 1000.0;
    if (j->done_samples >= (double)j->total_samples) {
        j->done_samples = (double)j->total_samples;
        sample(j, now, now - from0, &sp, 0, out);
        finish(j, now, DLB_SIM_SUCCEEDED, "Completed", c, out);
        return;
    }
    if (oom_check(j, now, p, c, out))
        return;
    sample(j, now, now - from0, &sp, stalled, out);
    if (migrations_tick(j, now, p, c, out))
        return;
    periodic(j, now, p, out);
}

/* ---- applying a plan ------------------------------------------------------ */

static double clamp_cpu(const dlb_limits_t *l, double v)
{
    if (l->cpu_min > 0 && v < l->cpu_min)
        v = l->cpu_min;
    if (l->cpu_max > 0 && v > l->cpu_max)
        v = l->cpu_max;
    return v;
}

static int64_t clamp_mem(const dlb_limits_t *l, int64_t v)
{
    if (l->memory_min > 0 && v < l->memory_min)
        v = l->memory_min;
    if (l->memory_max > 0 && v > l->memory_max)
        v = l->memory_max;
    return v;
}

static int clamp_count(int v, int max, int hard)
{
    if (max > 0 && v > max)
        v = max;
    if (v > hard)
        v = hard;
    return v < 1 ? 1 : v;
}

static dlb_sim_pod_t *pod_by_name(dlb_sim_job_t *j, const char *name)
{
    for (int k = 0; k < j->ps_cnt; k++)
        if (!strcmp(j->ps[k].name, name))
            return &j->ps[k];
    for (int k = 0; k < j->wk_cnt; k++)
        if (!strcmp(j->wk[k].name, name))
            return &j->wk[k];
    return NULL;
}

/* Group resources to every pod of the group and counts; new pods get the
 * group's resources. @returns 1 when a pod's resources or a count changed. */
static int set_group(dlb_sim_job_t *j, const dlb_group_resource_t *g, const dlb_limits_t *l,
                     int *rescaled)
{
    int ps = !strcmp(g->group, "ps"), changed = 0;
    dlb_sim_pod_t *pods = ps ? j->ps : j->wk;
    int *cnt = ps ? &j->ps_cnt : &j->wk_cnt;
    double *cpu = ps ? &j->ps_cpu : &j->wk_cpu;
    int64_t *mem = ps ? &j->ps_mem : &j->wk_mem;

    if (!ps && strcmp(g->group, "worker"))
        return 0; /* chief, evaluator: the simulated jobs have none */
    if (g->resource.cpu > 0)
        *cpu = clamp_cpu(l, g->resource.cpu);
    if (g->resource.memory > 0)
        *mem = clamp_mem(l, g->resource.memory);
    for (int k = 0; k < *cnt; k++) {
        if (g->resource.cpu > 0 && pods[k].cpu_req != *cpu) {
            pods[k].cpu_req = *cpu;
            changed = 1;
        }
        if (g->resource.memory > 0 && pods[k].mem_req != *mem) {
            pods[k].mem_req = *mem;
            changed = 1;
        }
    }
    if (g->count > 0) {
        int n = clamp_count(g->count, ps ? l->max_ps : l->max_workers,
                            ps ? DLB_SIM_MAX_PS : DLB_SIM_MAX_WORKERS);
        for (int k = *cnt; k < n; k++)
            pod_init(j, &pods[k], ps);
        if (n != *cnt) {
            *cnt = n;
            changed = 1;
            *rescaled = 1;
        }
    }
    return changed;
}

int dlb_sim_job_apply(dlb_sim_job_t *j, const dlb_plan_request_t *req, const dlb_plan_t *plan,
                      int64_t now, const dlb_sim_params_t *p, dlb_sim_cluster_t *c,
                      dlb_sim_out_t *out)
{
    dlb_sim_job_t old;
    dlb_sim_pod_t *oom = NULL;
    int changed = 0, rescaled = 0, restarted = 0, ps_reset = 0;
    /* A plan of the autoscaler loop (not an OOM's or the create one): the
     * master executes it (job_auto_scaler.py, execute_job_optimization_plan). */
    int loop = j->state == DLB_SIM_RUNNING && j->asked[0] && !strcmp(req->event_id, j->asked);

    if (j->state != DLB_SIM_PENDING && j->state != DLB_SIM_RUNNING)
        return 0;
    if (req->has_oom_pod)
        oom = pod_by_name(j, req->oom_pod);
    old = *j;
    for (size_t i = 0; plan && i < plan->groups_cnt; i++) {
        changed |= set_group(j, &plan->groups[i], &p->limits, &rescaled);
        /* A PS count resets the master's speed records, even an unchanged one. */
        ps_reset |= loop && plan->groups[i].count > 0 && !strcmp(plan->groups[i].group, "ps");
    }
    for (size_t i = 0; plan && i < plan->pods_cnt; i++) {
        dlb_sim_pod_t *pod = pod_by_name(j, plan->pods[i].name);
        const dlb_resource_t *r = &plan->pods[i].resource;

        if (!pod)
            continue;
        if (loop && pod->ps && (r->cpu > 0 || r->memory > 0)) {
            /* A new pod, even with the same resources; none for a PS
             * already migrating (ps.py, _migrate_parameter_server). */
            if (!pod->mig_ms) {
                pod->mig_cpu = r->cpu > 0 ? clamp_cpu(&p->limits, r->cpu) : pod->cpu_req;
                pod->mig_mem = r->memory > 0 ? clamp_mem(&p->limits, r->memory) : pod->mem_req;
                pod->mig_ms = now;
                pod->mig_run_ms = 0;
                changed = ps_reset = 1;
            }
            continue;
        }
        if (r->cpu > 0 && clamp_cpu(&p->limits, r->cpu) != pod->cpu_req) {
            pod->cpu_req = clamp_cpu(&p->limits, r->cpu);
            changed = 1;
        }
        if (r->memory > 0 && clamp_mem(&p->limits, r->memory) != pod->mem_req) {
            pod->mem_req = clamp_mem(&p->limits, r->memory);
            changed = 1;
        }
    }
    if (j->state == DLB_SIM_RUNNING && c->nodes_cnt) {
        if (place_plan(j, &old, c)) {
            *j = old;
            return 0;
        }
    } else if (j->state == DLB_SIM_RUNNING) {
        double cores, held = j->held_cores;
        int64_t mem, held_mem = j->held_mem;

        /* A running job grows only into free capacity: fewer new workers,
         * then nothing. */
        dlb_sim_job_totals(j, &cores, &mem);
        while (!dlb_sim_cluster_fits(c, cores - held, mem - held_mem) && j->wk_cnt > old.wk_cnt) {
            j->wk_cnt--;
            j->next_wk_index--;
            dlb_sim_job_totals(j, &cores, &mem);
        }
        if (!dlb_sim_cluster_fits(c, cores - held, mem - held_mem)) {
            *j = old;
            return 0;
        }
    }
    for (size_t i = 0; plan && i < plan->actions_cnt; i++) {
        dlb_sim_pod_t *pod = pod_by_name(j, plan->actions[i].pod);
        int replaced_down = 0;

        if (!pod)
            continue;
        /* A pod replaced at this instant already is gone: a no-op. */
        if (!strcmp(plan->actions[i].action, DLB_ACTION_REPLACE)) {
            replaced_down = nodes_replace(j, pod, now, c, out);
            if (replaced_down < 0)
                continue;
            if (!replaced_down)
                pod_move(c, pod); /* its node did not fail: placed again all the same */
        }
        /* A replaced pod starts on another node: a straggler's slow node
         * is left behind, a transient episode too, and the new node has a
         * speed of its own. A relaunch restarts it where it is. Either is
         * not needed when the pod was up and (for a replace) its node was
         * not slow: an episode ends by itself. */
        if (!strcmp(plan->actions[i].action, DLB_ACTION_REPLACE)) {
            j->replaces++;
            if (pod->slow > 1)
                j->stragglers_replaced++;
            else if (!replaced_down)
                j->replaces_unneeded++;
            pod->slow = 1;
            pod->episode = 1;
            if (!pod->ps)
                pod->factor = dlb_sim_vary_factor(&j->vary, &j->vary_rng);
        } else if (!strcmp(plan->actions[i].action, DLB_ACTION_RELAUNCH)) {
            j->relaunches++;
            j->relaunches_unneeded += !pod->down_ms;
        }
        restarted = changed = 1;
    }
    /* An OOM is answered when a plan raises the pod's memory before its
     * next OOM: a worker OOM after the first periodic ask is asked without
     * naming the pod (job.py), so any plan may answer it. */
    for (int k = 0; k < j->ps_cnt + j->wk_cnt; k++) {
        dlb_sim_pod_t *pod = k < j->ps_cnt ? &j->ps[k] : &j->wk[k - j->ps_cnt];

        if (pod->oom_mem && pod->mem_req > pod->oom_mem) {
            j->oom_answered++;
            pod->oom_mem = 0;
        } else if (pod == oom) {
            oom->oom_mem = 0; /* the answer naming it did not raise it */
        }
    }
    /* Records with the new count start at the next step; the master clears
     * them after a PS plan (reset_running_perf_monitor), and the workers
     * register again when they train on. */
    if (j->wk_cnt != old.wk_cnt || ps_reset)
        j->rec_first_ms = 0;
    if (!changed)
        return 0;
    j->plans_applied++;
    if (j->state == DLB_SIM_RUNNING) {
        /* Kubernetes cannot resize a pod: a changed pod restarts, and the
         * synchronous job waits for it; a new worker count re-rendezvouses. */
        for (int k = 0; k < j->ps_cnt && k < old.ps_cnt; k++)
            restarted |=
                j->ps[k].cpu_req != old.ps[k].cpu_req || j->ps[k].mem_req != old.ps[k].mem_req;
        for (int k = 0; k < j->wk_cnt && k < old.wk_cnt; k++)
            restarted |=
                j->wk[k].cpu_req != old.wk[k].cpu_req || j->wk[k].mem_req != old.wk[k].mem_req;
        if (restarted && j->stall_until_ms < now + p->restart_ms)
            j->stall_until_ms = now + p->restart_ms;
        if (rescaled && j->stall_until_ms < now + RESCALE_STALL)
            j->stall_until_ms = now + RESCALE_STALL;
        for (int k = old.ps_cnt; k < j->ps_cnt; k++)
            node_event(j, now, &j->ps[k], "pod_phase", "Running", "Started", out);
        for (int k = old.wk_cnt; k < j->wk_cnt; k++)
            node_event(j, now, &j->wk[k], "pod_phase", "Running", "Started", out);
        for (int k = j->ps_cnt; k < old.ps_cnt; k++)
            node_event(j, now, &old.ps[k], "deleted", "Succeeded", "ScaledDown", out);
        for (int k = j->wk_cnt; k < old.wk_cnt; k++)
            node_event(j, now, &old.wk[k], "deleted", "Succeeded", "ScaledDown", out);
        hold(j, c);
        migrations_place(j, now, p, c);
    }
    return 1;
}
