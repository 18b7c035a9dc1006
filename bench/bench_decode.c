#include "bench_decode.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_samples.h"
#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "metrics.h"

typedef struct msgs {
    void **buf;
    size_t *len;
    size_t cnt;
    size_t bytes;
} msgs_t;

static void msgs_free(msgs_t *m)
{
    for (size_t i = 0; i < m->cnt; i++)
        free(m->buf[i]);
    free(m->buf);
    free(m->len);
}

static int msgs_make(const dlb_catalog_t *cat, long n, msgs_t *m, char *errstr, size_t size)
{
    dlb_pod_usage_t pods[DLB_BENCH_MAX_PODS];
    int err;

    if (!(m->buf = calloc((size_t)n, sizeof(*m->buf))) ||
        !(m->len = calloc((size_t)n, sizeof(*m->len))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    for (long i = 0; i < n; i++) {
        dlb_event_t ev;

        dlb_bench_sample("decode", i, 1000, 1767312000000, &ev, pods);
        if ((err = dlb_codec_encode(cat, &ev, &m->buf[i], &m->len[i], errstr, size)))
            return err;
        m->cnt++;
        m->bytes += m->len[i];
    }
    return 0;
}

/* One message, one way or the other (dec NULL: values built for it). */
static int decode_one(const dlb_catalog_t *cat, dlb_codec_decoder_t *dec, const msgs_t *m, size_t i,
                      dlb_event_t *ev, char *errstr, size_t size)
{
    int err = dec ? dlb_codec_decoder_decode(dec, m->buf[i], m->len[i], ev, errstr, size)
                  : dlb_codec_decode(cat, m->buf[i], m->len[i], ev, errstr, size);

    if (!err && (err = dlb_event_validate(ev, errstr, size)))
        dlb_event_clear(ev);
    return err;
}

/* Both ways give the same event for every message. */
static int check_same(const dlb_catalog_t *cat, dlb_codec_decoder_t *dec, const msgs_t *m,
                      char *errstr, size_t size)
{
    int err = 0;

    for (size_t i = 0; i < m->cnt && !err; i++) {
        dlb_event_t a, b;

        if ((err = decode_one(cat, NULL, m, i, &a, errstr, size)))
            break;
        if ((err = decode_one(cat, dec, m, i, &b, errstr, size))) {
            dlb_event_clear(&a);
            break;
        }
        if (!dlb_event_equal(&a, &b))
            err = dlb_seterr(errstr, size, DLB_ERR_GENERIC,
                             "message %zu decodes differently through the decoder", i);
        dlb_event_clear(&a);
        dlb_event_clear(&b);
    }
    return err;
}

/* CPU seconds of this thread: decoding is all CPU, and on a shared machine
 * the wall clock also counts the time other processes had the core. */
static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int pass(const dlb_catalog_t *cat, dlb_codec_decoder_t *dec, const msgs_t *m, double *secs,
                double *cpu, char *errstr, size_t size)
{
    double t0 = dlb_metric_now(), c0 = cpu_now();
    int err;

    for (size_t i = 0; i < m->cnt; i++) {
        dlb_event_t ev;
        if ((err = decode_one(cat, dec, m, i, &ev, errstr, size)))
            return err;
        dlb_event_clear(&ev);
    }
    *secs = dlb_metric_now() - t0;
    *cpu = cpu_now() - c0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int dlb_bench_decode(const dlb_bench_decode_opts_t *o, cJSON **json, char *errstr,
                     size_t errstr_size)
{
    dlb_catalog_t *cat = NULL;
    dlb_codec_decoder_t *dec = NULL;
    msgs_t m = {0};
    double *secs[2] = {NULL, NULL}, *cpu[2] = {NULL, NULL}, med[2], cmed[2];
    int passes = o->passes > 0 ? o->passes : 5, err;

    if (json)
        *json = NULL;
    if ((err = dlb_catalog_new(&cat, errstr, errstr_size)) ||
        (err = dlb_codec_decoder_new(cat, &dec, errstr, errstr_size)) ||
        (err = msgs_make(cat, o->samples, &m, errstr, errstr_size)) ||
        (err = check_same(cat, dec, &m, errstr, errstr_size)))
        goto out;
    if (!(secs[0] = calloc((size_t)passes, sizeof(double))) ||
        !(secs[1] = calloc((size_t)passes, sizeof(double))) ||
        !(cpu[0] = calloc((size_t)passes, sizeof(double))) ||
        !(cpu[1] = calloc((size_t)passes, sizeof(double)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* Alternating, so a neighbour's burst of CPU falls on both ways alike. */
    for (int p = 0; p < passes && !(o->stop && *o->stop); p++)
        for (int way = 0; way < 2; way++)
            if ((err = pass(cat, way ? dec : NULL, &m, &secs[way][p], &cpu[way][p], errstr,
                            errstr_size)))
                goto out;
    if (o->stop && *o->stop)
        goto out;
    for (int way = 0; way < 2; way++) {
        qsort(secs[way], (size_t)passes, sizeof(double), cmp_double);
        qsort(cpu[way], (size_t)passes, sizeof(double), cmp_double);
        med[way] = secs[way][passes / 2];
        cmed[way] = cpu[way][passes / 2];
    }
    fprintf(o->out, "%-36s %9s %9s %11s %9s %11s %8s\n", "decode + validate (median of passes)",
            "messages", "seconds", "msgs/s", "cpu s", "msgs/cpu-s", "us/msg");
    for (int way = 0; way < 2; way++)
        fprintf(o->out, "%-36s %9zu %9.3f %11.0f %9.3f %11.0f %8.2f\n",
                way ? "values kept per schema (decoder)" : "values built per message", m.cnt,
                med[way], (double)m.cnt / med[way], cmed[way], (double)m.cnt / cmed[way],
                cmed[way] * 1e6 / (double)m.cnt);
    fprintf(o->out, "%-36s %31.2fx %21.2fx\n", "ratio kept / built", med[0] / med[1],
            cmed[0] / cmed[1]);
    fprintf(o->out, "(%zu messages of %.0f bytes on average, %d passes each way)\n", m.cnt,
            (double)m.bytes / (double)m.cnt, passes);
    if (json && (!(*json = cJSON_CreateObject()) ||
                 !cJSON_AddNumberToObject(*json, "messages", (double)m.cnt) ||
                 !cJSON_AddNumberToObject(*json, "bytes", (double)m.bytes) ||
                 !cJSON_AddNumberToObject(*json, "passes", passes) ||
                 !cJSON_AddNumberToObject(*json, "built_s", med[0]) ||
                 !cJSON_AddNumberToObject(*json, "kept_s", med[1]) ||
                 !cJSON_AddNumberToObject(*json, "built_cpu_s", cmed[0]) ||
                 !cJSON_AddNumberToObject(*json, "kept_cpu_s", cmed[1]) ||
                 !cJSON_AddNumberToObject(*json, "ratio", med[0] / med[1]) ||
                 !cJSON_AddNumberToObject(*json, "cpu_ratio", cmed[0] / cmed[1]))) {
        cJSON_Delete(*json);
        *json = NULL;
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
out:
    free(secs[0]);
    free(secs[1]);
    free(cpu[0]);
    free(cpu[1]);
    msgs_free(&m);
    dlb_codec_decoder_destroy(dec);
    if (cat)
        dlb_catalog_destroy(cat);
    return err;
}
