/* Switch markers (switch_mark.h). */
#include "switch_mark.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "env_roles.h"
#include "err.h"
#include "kafka.h"
#include "log.h"

#define MARK_TIMEOUT_MS 30000
#define MARKS_MAX       4096 /* partitions of the five topics together */

const char *const dlb_switch_topics[] = {DLB_TOPIC_JOB_EVENTS,      DLB_TOPIC_METRICS,
                                         DLB_TOPIC_K8S_EVENTS,      DLB_TOPIC_PLAN_REQUESTS,
                                         DLB_TOPIC_CONFIG_REQUESTS, NULL};

int dlb_switch_stamp_format(const dlb_switch_stamp_t *s, char *buf, size_t size)
{
    char errstr[8];
    int n;

    /* What parse refuses must never be written: a relay could not tell
     * whom the records after it are for. */
    if (s->id < 0 || dlb_env_name_check(s->env, errstr, sizeof(errstr)))
        return -1;
    n = snprintf(buf, size, "%" PRId64 ":%s", s->id, s->env);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int dlb_switch_stamp_parse(const void *val, size_t len, dlb_switch_stamp_t *out)
{
    char buf[32 + DLB_ENV_NAME_MAX + 2], *end, errstr[8];
    const char *colon;
    long long id;

    memset(out, 0, sizeof(*out));
    if (!val || len == 0 || len >= sizeof(buf))
        return DLB_ERR_INVALID;
    memcpy(buf, val, len);
    buf[len] = '\0';
    if (!(colon = strchr(buf, ':')) || colon == buf)
        return DLB_ERR_INVALID;
    id = strtoll(buf, &end, 10);
    if (end != colon || id < 0)
        return DLB_ERR_INVALID;
    if (dlb_env_name_check(colon + 1, errstr, sizeof(errstr)))
        return DLB_ERR_INVALID;
    out->id = id;
    snprintf(out->env, sizeof(out->env), "%s", colon + 1);
    return 0;
}

dlb_switch_kind_t dlb_switch_headers_marker(const rd_kafka_headers_t *hdrs, dlb_switch_stamp_t *out,
                                            char *raw, size_t raw_size)
{
    const unsigned char *val;
    size_t len, n = 0;

    memset(out, 0, sizeof(*out));
    if (raw && raw_size)
        raw[0] = '\0';
    if (!hdrs || rd_kafka_header_get_last(hdrs, DLB_SWITCH_HEADER, (const void **)&val, &len))
        return DLB_SWITCH_NONE;
    for (; raw && val && n < len && n + 1 < raw_size; n++)
        raw[n] = val[n] >= 0x20 && val[n] < 0x7f ? (char)val[n] : '?';
    if (raw && raw_size)
        raw[n] = '\0';
    return dlb_switch_stamp_parse(val, len, out) ? DLB_SWITCH_MALFORMED : DLB_SWITCH_MARKER;
}

dlb_switch_kind_t dlb_switch_marker_get(const rd_kafka_message_t *m, dlb_switch_stamp_t *out,
                                        char *raw, size_t raw_size)
{
    rd_kafka_headers_t *hdrs = NULL;

    /* rd_kafka_message_headers() parses them once; it takes a non-const. */
    if (rd_kafka_message_headers((rd_kafka_message_t *)m, &hdrs))
        hdrs = NULL;
    return dlb_switch_headers_marker(hdrs, out, raw, raw_size);
}

/* One marker's partition and, once acknowledged, its offset (-1 before). */
typedef struct mark {
    const char *topic; /* into topics[] of dlb_switch_mark */
    int32_t partition;
    int64_t offset;
} mark_t;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    mark_t *mk = m->_private;

    (void)rk;
    (void)opaque;
    if (mk && !m->err)
        mk->offset = m->offset;
}

/* The mark row's detail: {"switch", "front", "offsets": {topic: {partition: offset}}}. */
static char *mark_detail(const dlb_conf_t *front, int64_t id, const mark_t *marks, size_t n)
{
    cJSON *o = cJSON_CreateObject(), *offs, *t = NULL;
    const char *cur = NULL;
    char p[16], *s = NULL;

    if (!o || !cJSON_AddNumberToObject(o, "switch", (double)id) ||
        !cJSON_AddStringToObject(o, "front", front->env) ||
        !(offs = cJSON_AddObjectToObject(o, "offsets")))
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (marks[i].topic != cur) {
            cur = marks[i].topic;
            if (!(t = cJSON_AddObjectToObject(offs, cur)))
                goto out;
        }
        snprintf(p, sizeof(p), "%" PRId32, marks[i].partition);
        if (!cJSON_AddNumberToObject(t, p, (double)marks[i].offset))
            goto out;
    }
    s = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    return s;
}

int dlb_switch_mark(const dlb_conf_t *front, PGconn *pg, int64_t id, const char *env,
                    const char *by_user, int *written, char *errstr, size_t errstr_size)
{
    static const char *const base[] = {"enable.idempotence", "true", "acks", "all", NULL};
    const struct rd_kafka_metadata *md = NULL;
    dlb_switch_stamp_t stamp = {.id = id};
    char topics[8][256], val[64], sub[512], *detail = NULL;
    mark_t *marks = NULL;
    rd_kafka_conf_t *kc;
    rd_kafka_t *rk = NULL;
    rd_kafka_resp_err_t kerr;
    size_t n = 0, t = 0;
    int err = 0;

    *written = 0;
    /* A name too long stays "", which the format refuses: cut to fit, it
     * could be another environment's. */
    if (env && strlen(env) < sizeof(stamp.env))
        snprintf(stamp.env, sizeof(stamp.env), "%s", env);
    if (dlb_switch_stamp_format(&stamp, val, sizeof(val)) < 0)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "switch %" PRId64 " to '%.64s': not a switch number and an environment "
                          "name; no marker written",
                          id, env ? env : "");
    if (!(kc = dlb_kafka_conf_new(front, base, NULL, errstr, errstr_size)))
        return DLB_ERR_CONF;
    rd_kafka_conf_set_dr_msg_cb(kc, dr_cb);
    if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, sub, sizeof(sub)))) {
        rd_kafka_conf_destroy(kc);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "kafka producer: %s", sub);
    }
    if (!(marks = calloc(MARKS_MAX, sizeof(*marks)))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* All topics: asking for one by name could auto-create it. */
    if ((kerr = rd_kafka_metadata(rk, 1, NULL, &md, MARK_TIMEOUT_MS))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "kafka metadata from %s: %s",
                         front->brokers, rd_kafka_err2str(kerr));
        goto out;
    }
    for (const char *const *tn = dlb_switch_topics; *tn; tn++, t++) {
        int found = 0;

        dlb_conf_topic(front, *tn, topics[t], sizeof(topics[t]));
        for (int i = 0; i < md->topic_cnt && !found; i++) {
            if (md->topics[i].err || strcmp(md->topics[i].topic, topics[t]))
                continue;
            found = 1;
            for (int p = 0; p < md->topics[i].partition_cnt && n < MARKS_MAX; p++) {
                marks[n].topic = topics[t];
                marks[n].partition = md->topics[i].partitions[p].id;
                marks[n++].offset = -1;
            }
        }
        if (!found) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                             "front topic %s does not exist: no marker written", topics[t]);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        rd_kafka_headers_t *hdrs = rd_kafka_headers_new(1);

        if (!hdrs) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
        rd_kafka_header_add(hdrs, DLB_SWITCH_HEADER, -1, val, -1);
        kerr = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(marks[i].topic),
                                 RD_KAFKA_V_PARTITION(marks[i].partition),
                                 RD_KAFKA_V_VALUE(NULL, 0), RD_KAFKA_V_HEADERS(hdrs),
                                 RD_KAFKA_V_OPAQUE(&marks[i]), RD_KAFKA_V_END);
        if (kerr) {
            rd_kafka_headers_destroy(hdrs); /* only librdkafka's on success */
            err =
                dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "marker to %s [%" PRId32 "]: %s",
                           marks[i].topic, marks[i].partition, rd_kafka_err2str(kerr));
            goto out;
        }
    }
    rd_kafka_flush(rk, MARK_TIMEOUT_MS);
    for (size_t i = 0; i < n; i++) {
        if (marks[i].offset < 0) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                             "the marker of switch %" PRId64 " to %s [%" PRId32
                             "] was not acknowledged in %d ms",
                             id, marks[i].topic, marks[i].partition, MARK_TIMEOUT_MS);
            goto out;
        }
        (*written)++;
    }
    if (!(detail = mark_detail(front, id, marks, n))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    err = dlb_env_mark_record(pg, env, detail, by_user, errstr, errstr_size);
out:
    free(detail);
    free(marks);
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rk) {
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_destroy(rk);
    }
    return err;
}
