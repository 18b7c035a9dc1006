#include "emit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "err.h"
#include "kafka.h"
#include "log.h"

static int blank_or_comment(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    return !*s || *s == '#';
}

int dlb_emit_stream(FILE *in, const char *name, rd_kafka_t *producer, const dlb_conf_t *conf,
                    const dlb_catalog_t *cat, int gen_defaults, int timeout_ms,
                    dlb_emit_stats_t *stats, char *errstr, size_t errstr_size)
{
    char *line = NULL, topic[256], sub[512];
    size_t cap = 0;
    ssize_t len;
    int err = 0;

    if ((err = dlb_kafka_producer_follow(producer, conf, errstr, errstr_size)))
        return err;
    while ((len = getline(&line, &cap, in)) != -1) {
        dlb_event_t ev = {0};
        void *buf = NULL;
        size_t buf_len = 0;

        stats->lines++;
        if (blank_or_comment(line))
            continue;
        if ((err =
                 dlb_json_to_event(cat, line, (size_t)len, gen_defaults, &ev, sub, sizeof(sub))) ||
            (err = dlb_codec_encode(cat, &ev, &buf, &buf_len, sub, sizeof(sub)))) {
            dlb_err("%s:%lld: %s; line skipped", name, (long long)stats->lines, sub);
            stats->rejected++;
            dlb_event_clear(&ev);
            err = 0;
            continue;
        }
        if ((int64_t)buf_len > conf->max_message_bytes) {
            dlb_err("%s:%lld: encoded event is %zu bytes, more than message.max.bytes %lld; line "
                    "skipped",
                    name, (long long)stats->lines, buf_len, (long long)conf->max_message_bytes);
            stats->rejected++;
        } else {
            /* As the agent does: a plan request goes out only once the events
             * before it are in the log, so the optimizer's ordering barrier
             * never finds its job's partitions "consumed to the end" while
             * those events are still in our queue (a wave of events and
             * requests from one file would otherwise race, the requests
             * topic's batch landing before the metrics topic's). */
            if (ev.type == DLB_EV_PLAN_REQUEST && rd_kafka_outq_len(producer) > 0)
                err = dlb_kafka_flush(producer, timeout_ms, sub, sizeof(sub));
            dlb_conf_topic(conf, dlb_event_type_topic(ev.type), topic, sizeof(topic));
            if (!err && ev.type == DLB_EV_PLAN_REQUEST)
                err = dlb_kafka_produce_request(producer, topic, dlb_event_job_uid(&ev), buf,
                                                buf_len, sub, sizeof(sub));
            else if (!err)
                err = dlb_kafka_produce(producer, topic, dlb_event_job_uid(&ev), buf, buf_len, sub,
                                        sizeof(sub));
            if (!err)
                stats->sent++;
        }
        free(buf);
        dlb_event_clear(&ev);
        if (err) {
            dlb_seterr(errstr, errstr_size, err, "%s:%lld: %s", name, (long long)stats->lines, sub);
            break;
        }
    }
    if (!err && ferror(in))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "%s: read error: %s", name,
                         strerror(errno));
    free(line);
    return err;
}
