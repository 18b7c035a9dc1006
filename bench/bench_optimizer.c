#include "bench_optimizer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "latency.h"
#include "log.h"
#include "optimizer.h"
#include "recording.h"

#define NSTAGES 6  /* dlb_stages[] */
#define NOPTS   64 /* rows for optimizers (and combinations of them) per set */

/* A request as the timed runs see it. */
typedef struct breq {
    int stage;
    char optimizer[64]; /* who answered in the reference run of the current set */
    int skip;           /* the router refused it */
} breq_t;

typedef struct stat {
    char name[64];
    size_t requests;
    dlb_lat_t lat;
} stat_t;

typedef struct obench {
    const dlb_bench_optimizer_opts_t *opts;
    const dlb_catalog_t *cat;
    dlb_recording_t *rec;
    breq_t *reqs;
    size_t reqs_cnt;
    FILE *plans_out;
} obench_t;

static int stopped(const obench_t *b)
{
    return b->opts->stop && *b->opts->stop;
}

static int index_requests(obench_t *b, char *errstr, size_t size)
{
    b->reqs_cnt = dlb_recording_requests(b->rec);
    if (!(b->reqs = calloc(b->reqs_cnt, sizeof(*b->reqs))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < b->reqs_cnt; i++) {
        const dlb_plan_request_t *req = dlb_recording_request(b->rec, i);
        /* Only if dlb_stages[] grew and NSTAGES did not follow. */
        if ((b->reqs[i].stage = dlb_recording_stage(b->rec, i)) >= NSTAGES)
            return dlb_seterr(errstr, size, DLB_ERR_INVALID, "request %s: unknown stage %s",
                              req->event_id, req->stage);
    }
    return 0;
}

/* One plan as a line of --plans-out: the plan event's JSON with "set". */
static int write_plan(obench_t *b, const char *set, const dlb_event_t *pe, char *errstr,
                      size_t size)
{
    char *text = NULL, sub[512];
    cJSON *o = NULL;
    int err;

    if ((err = dlb_event_to_json(b->cat, pe, &text, sub, sizeof(sub))) ||
        !(o = cJSON_Parse(text)) || !cJSON_AddStringToObject(o, "set", set)) {
        free(text);
        cJSON_Delete(o);
        return dlb_seterr(errstr, size, err ? err : DLB_ERR_NOMEM, "plan %s as JSON: %s",
                          pe->u.plan.plan_id, err ? sub : "out of memory");
    }
    free(text);
    if (!(text = cJSON_PrintUnformatted(o)) || fprintf(b->plans_out, "%s\n", text) < 0)
        err = dlb_seterr(errstr, size, DLB_ERR_GENERIC, "writing plans failed");
    cJSON_free(text);
    cJSON_Delete(o);
    return err;
}

/* Plan every request once, in each job's order, as the consumer would: the
 * OOMs a plan answers are what later requests of the job see. Fixes each
 * request's input and notes its optimizer for the timed runs. */
static int reference_run(obench_t *b, const char *set, char *errstr, size_t size)
{
    char sub[512];

    dlb_recording_rewind(b->rec);
    for (size_t i = 0; i < b->reqs_cnt; i++) {
        const dlb_plan_request_t *req = dlb_recording_request(b->rec, i);
        breq_t *r = &b->reqs[i];
        dlb_event_t pe = {.type = DLB_EV_PLAN};
        dlb_oom_answers_t answered;
        dlb_opt_input_t in;
        int err;

        if (dlb_recording_input(b->rec, i, set, &answered, &in))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        r->skip = 0;
        if ((err = dlb_router_plan(&in, &pe.u.plan, sub, sizeof(sub)))) {
            free(answered.items);
            if (err != DLB_ERR_INVALID)
                return dlb_seterr(errstr, size, err, "set %s, request %s: %s", set, req->event_id,
                                  sub);
            dlb_warn("set %s, request %s: %s; left out of the timing", set, req->event_id, sub);
            r->skip = 1;
            continue;
        }
        snprintf(r->optimizer, sizeof(r->optimizer), "%s", pe.u.plan.optimizer);
        if (dlb_recording_answer(b->rec, i, &pe.u.plan, &answered))
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        else if (b->plans_out)
            err = write_plan(b, set, &pe, errstr, size);
        dlb_event_clear(&pe);
        free(answered.items);
        if (err)
            return err;
    }
    return 0;
}

static stat_t *stat_get(stat_t *stats, size_t *cnt, size_t cap, const char *name)
{
    for (size_t i = 0; i < *cnt; i++)
        if (!strcmp(stats[i].name, name))
            return &stats[i];
    if (*cnt >= cap)
        return NULL;
    memset(&stats[*cnt], 0, sizeof(stats[*cnt]));
    snprintf(stats[*cnt].name, sizeof(stats[*cnt].name), "%s", name);
    return &stats[(*cnt)++];
}

static cJSON *stat_json(stat_t *s, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    double mean = dlb_lat_mean(&s->lat);

    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, key, s->name);
    cJSON_AddNumberToObject(o, "requests", (double)s->requests);
    cJSON_AddNumberToObject(o, "calls", (double)s->lat.count);
    cJSON_AddNumberToObject(o, "plans_per_s", mean > 0 ? 1e9 / mean : 0);
    cJSON_AddNumberToObject(o, "mean_us", mean / 1e3);
    cJSON_AddNumberToObject(o, "p50_us", dlb_lat_pct(&s->lat, 50) / 1e3);
    cJSON_AddNumberToObject(o, "p99_us", dlb_lat_pct(&s->lat, 99) / 1e3);
    cJSON_AddNumberToObject(o, "max_us", (double)s->lat.max / 1e3);
    return o;
}

static void stat_print(FILE *out, const char *set, const char *label, stat_t *s)
{
    double mean = dlb_lat_mean(&s->lat);

    fprintf(out, "%-8s %-58s %8zu %10.0f %9.2f %9.2f %9.2f %11" PRId64 "\n", set, label,
            s->requests, mean > 0 ? 1e9 / mean : 0, mean / 1e3, dlb_lat_pct(&s->lat, 50) / 1e3,
            dlb_lat_pct(&s->lat, 99) / 1e3, s->lat.count);
}

/* Time dlb_router_plan on each stage's requests in turn, seconds split evenly
 * over the stages present. Per call: the plan and its release. */
static int timed_run(obench_t *b, const char *set, cJSON *jsets, char *errstr, size_t size)
{
    FILE *out = b->opts->out;
    stat_t stages[NSTAGES], opts[NOPTS];
    size_t opts_cnt = 0, present = 0, counted = 0;
    double mix_ns = 0;
    char sub[512];
    int err = 0;
    cJSON *jset = NULL, *arr;

    memset(stages, 0, sizeof(stages));
    for (int s = 0; s < NSTAGES; s++)
        snprintf(stages[s].name, sizeof(stages[s].name), "%s", dlb_stages[s]);
    for (size_t i = 0; i < b->reqs_cnt; i++)
        if (!b->reqs[i].skip) {
            stat_t *o = stat_get(opts, &opts_cnt, NOPTS, b->reqs[i].optimizer);
            if (o)
                o->requests++;
            present += stages[b->reqs[i].stage].requests++ == 0;
        }
    for (int s = 0; s < NSTAGES && !stopped(b); s++) {
        int64_t budget = (int64_t)(b->opts->seconds * 1e9 / (double)(present ? present : 1)), t_end;
        if (!stages[s].requests)
            continue;
        t_end = dlb_lat_clock_ns() + budget;
        do {
            for (size_t i = 0; i < b->reqs_cnt; i++) {
                breq_t *r = &b->reqs[i];
                dlb_event_t pe = {.type = DLB_EV_PLAN};
                dlb_oom_answers_t answered;
                dlb_opt_input_t in;
                stat_t *o;
                int64_t t0, t1;
                if (r->stage != s || r->skip)
                    continue;
                /* Fixed by the reference run: cannot fail, allocates nothing. */
                if ((err = dlb_recording_input(b->rec, i, set, &answered, &in))) {
                    err = dlb_seterr(errstr, size, err, "out of memory");
                    goto out;
                }
                t0 = dlb_lat_clock_ns();
                err = dlb_router_plan(&in, &pe.u.plan, sub, sizeof(sub));
                dlb_event_clear(&pe);
                free(answered.items);
                t1 = dlb_lat_clock_ns();
                if (err) {
                    err = dlb_seterr(errstr, size, err, "set %s, request %s: %s", set,
                                     dlb_recording_request(b->rec, i)->event_id, sub);
                    goto out;
                }
                o = stat_get(opts, &opts_cnt, NOPTS, r->optimizer);
                if (dlb_lat_add(&stages[s].lat, t1 - t0) || (o && dlb_lat_add(&o->lat, t1 - t0))) {
                    err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
                    goto out;
                }
            }
        } while (dlb_lat_clock_ns() < t_end && !stopped(b));
    }
    /* "all": the mean time per plan weighted by the recording's stage mix. */
    for (int s = 0; s < NSTAGES; s++)
        if (stages[s].requests && stages[s].lat.count) {
            mix_ns += (double)stages[s].requests * dlb_lat_mean(&stages[s].lat);
            counted += stages[s].requests;
        }
    mix_ns = counted ? mix_ns / (double)counted : 0;
    fprintf(out, "%-8s %-58s %8zu %10.0f %9.2f %9s %9s %11s\n", set,
            "all (the recording's stage mix)", counted, mix_ns > 0 ? 1e9 / mix_ns : 0, mix_ns / 1e3,
            "-", "-", "-");
    for (int s = 0; s < NSTAGES; s++)
        if (stages[s].requests)
            stat_print(out, set, stages[s].name, &stages[s]);
    for (size_t i = 0; i < opts_cnt; i++) {
        char label[sizeof(opts[i].name) + 16];
        snprintf(label, sizeof(label), "  answered by %.63s", opts[i].name);
        stat_print(out, set, label, &opts[i]);
    }
    if (jsets) {
        if (!(jset = cJSON_CreateObject()) || !cJSON_AddItemToArray(jsets, jset)) {
            cJSON_Delete(jset);
            err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        cJSON_AddStringToObject(jset, "set", set);
        cJSON_AddNumberToObject(jset, "requests", (double)counted);
        cJSON_AddNumberToObject(jset, "plans_per_s", mix_ns > 0 ? 1e9 / mix_ns : 0);
        cJSON_AddNumberToObject(jset, "mean_us", mix_ns / 1e3);
        if ((arr = cJSON_AddArrayToObject(jset, "stages")))
            for (int s = 0; s < NSTAGES; s++)
                if (stages[s].requests)
                    cJSON_AddItemToArray(arr, stat_json(&stages[s], "stage"));
        if ((arr = cJSON_AddArrayToObject(jset, "optimizers")))
            for (size_t i = 0; i < opts_cnt; i++)
                cJSON_AddItemToArray(arr, stat_json(&opts[i], "optimizer"));
    }
out:
    for (int s = 0; s < NSTAGES; s++)
        dlb_lat_free(&stages[s].lat);
    for (size_t i = 0; i < opts_cnt; i++)
        dlb_lat_free(&opts[i].lat);
    return err;
}

int dlb_bench_optimizer(const dlb_conf_t *conf, const dlb_bench_optimizer_opts_t *opts,
                        cJSON **json, char *errstr, size_t errstr_size)
{
    static const char *const sets[] = {"dlrover", "dlbrain", NULL};
    obench_t b = {.opts = opts};
    dlb_catalog_t *cat = NULL;
    cJSON *root = NULL, *jsets = NULL;
    int err;

    if (json)
        *json = NULL;
    if ((err = dlb_catalog_new(&cat, errstr, errstr_size)))
        goto out;
    b.cat = cat;
    if ((err = dlb_recording_load(&b.rec, opts->events, conf, cat, errstr, errstr_size)) ||
        (err = index_requests(&b, errstr, errstr_size)))
        goto out;
    /* Opened only once the recording loaded: a bad one leaves the file alone. */
    if (opts->plans_path && !(b.plans_out = fopen(opts->plans_path, "w"))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "--plans-out %s: %s",
                         opts->plans_path, strerror(errno));
        goto out;
    }
    if (json) {
        if (!(root = cJSON_CreateObject()) || !(jsets = cJSON_AddArrayToObject(root, "sets"))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        cJSON_AddStringToObject(root, "benchmark", "optimizer");
        cJSON_AddStringToObject(root, "events_file", opts->events);
        cJSON_AddNumberToObject(root, "events", (double)dlb_recording_events(b.rec));
        cJSON_AddNumberToObject(root, "jobs", (double)dlb_recording_jobs(b.rec));
        cJSON_AddNumberToObject(root, "plan_requests", (double)b.reqs_cnt);
        cJSON_AddNumberToObject(root, "seconds_per_set", opts->seconds);
    }
    fprintf(opts->out,
            "optimizer bench: %s: %zu events, %zu jobs, %zu plan requests; %.3g s per set;\n"
            "window %d samples, history %d h / %d jobs; one core, per call: dlb_router_plan and "
            "the plan's release\n\n",
            opts->events, dlb_recording_events(b.rec), dlb_recording_jobs(b.rec), b.reqs_cnt,
            opts->seconds, conf->window_size, conf->history_hours, conf->history_max_jobs);
    fprintf(opts->out, "%-8s %-58s %8s %10s %9s %9s %9s %11s\n", "SET", "STAGE / OPTIMIZER",
            "REQUESTS", "PLANS/S", "MEAN_US", "P50_US", "P99_US", "CALLS");
    for (int i = 0; sets[i] && !stopped(&b); i++) {
        if (opts->only_set && strcmp(opts->only_set, sets[i]))
            continue;
        if ((err = reference_run(&b, sets[i], errstr, errstr_size)) ||
            (err = timed_run(&b, sets[i], jsets, errstr, errstr_size)))
            goto out;
        fflush(opts->out);
    }
    if (b.plans_out) {
        int rc = fclose(b.plans_out);
        b.plans_out = NULL;
        if (rc) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "--plans-out %s: %s",
                             opts->plans_path, strerror(errno));
            goto out;
        }
    }
    if (json) {
        *json = root;
        root = NULL;
    }
out:
    if (b.plans_out)
        fclose(b.plans_out);
    cJSON_Delete(root);
    free(b.reqs);
    dlb_recording_free(b.rec);
    if (cat)
        dlb_catalog_destroy(cat);
    return err;
}
