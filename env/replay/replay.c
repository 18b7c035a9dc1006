/* replay (replay.h): the run, its options and target. The sources are
 * replay_kafka.c and replay_pg.c, which hand every record to the sink
 * (replay_sink.c); times are replay_time.c. */
#include "replay.h"
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

#include "clock.h"
#include "env_registry.h"
#include "err.h"
#include "kafka.h"
#include "log.h"

/* ---- source and target ------------------------------------------------------ */

int dlb_replay_check_target(const dlb_conf_t *conf, const char *source_opt, const char *into,
                            char *source, size_t source_size, char *errstr, size_t errstr_size)
{
    PGconn *pg = NULL;
    dlb_env_t env = {0};
    char sub[512];
    int rc;

    if ((rc = dlb_env_name_check(into, sub, sizeof(sub)))) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "--into: %s", sub);
        goto out;
    }
    /* The source names the topics read and the schema its history is read
     * from; the registry's real environment passed this check when created. */
    if (source_opt && *source_opt && (rc = dlb_env_name_check(source_opt, sub, sizeof(sub)))) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "--source: %s", sub);
        goto out;
    }
    /* The registry decides what is virtual: without it nothing may be
     * written, since the target could be someone's real environment. */
    if ((rc = dlb_env_registry_connect(conf->pg_dsn, &pg, sub, sizeof(sub))) ||
        (rc = dlb_env_registry_migrate(pg, sub, sizeof(sub)))) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                        "cannot read the environment registry: %s", sub);
        goto out;
    }
    if (source_opt && *source_opt) {
        snprintf(source, source_size, "%s", source_opt);
    } else if ((rc = dlb_env_real(pg, source, source_size, sub, sizeof(sub)))) {
        if (rc != DLB_ERR_NOTFOUND) {
            rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "%s", sub);
            goto out;
        }
        snprintf(source, source_size, "%s", conf->env);
    }
    if (!strcmp(source, into)) {
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                        "refusing to replay %s into itself: --into must differ from the source",
                        into);
        goto out;
    }
    if ((rc = dlb_env_get(pg, into, &env, sub, sizeof(sub)))) {
        rc = rc == DLB_ERR_NOTFOUND
                 ? dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                              "refusing to replay into %s: %s (create it with 'dlbrain env "
                              "create %s')",
                              into, sub, into)
                 : dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "%s", sub);
        goto out;
    }
    if (env.kind == DLB_ENV_REAL)
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                        "refusing to replay into %s: it is the real environment; replay only "
                        "into a virtual one",
                        into);
out:
    dlb_env_clear(&env);
    if (pg)
        PQfinish(pg);
    return rc;
}

/* ---- run ------------------------------------------------------------------- */

/* A replay that copied nothing: say what was looked at, so a range of the
 * wrong times (or a source without them) is told from a failure. */
static int empty_range(const dlb_replay_opts_t *o, const dlb_replay_stats_t *st, char *errstr,
                       size_t errstr_size)
{
    char from[40], to[40], first[40], last[40], ahead[64] = "", late[64] = "", unread[200] = "";

    dlb_replay_format_time(o->from_ms, from, sizeof(from));
    dlb_replay_format_time(o->to_ms, to, sizeof(to));
    if (o->from_pg)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                          "nothing to replay: no event in the PostgreSQL history of %s (schema "
                          "%s) has an event time in [%s, %s); --allow-empty accepts an empty "
                          "replay",
                          o->source, o->schema, from, to);
    if (o->max_ahead_ms >= 0)
        snprintf(ahead, sizeof(ahead), "more than %g s before --from (--max-ahead)",
                 (double)o->max_ahead_ms / 1000.0);
    if (o->max_late_ms >= 0)
        snprintf(late, sizeof(late), "more than %g s after --to (--max-late)",
                 (double)o->max_late_ms / 1000.0);
    if (*ahead || *late)
        snprintf(unread, sizeof(unread), "; records stamped %s%s%s were not read", ahead,
                 *ahead && *late ? " or " : "", late);
    if (!st->read)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                          "nothing to replay: no record of %s's topics is stamped where events "
                          "of [%s, %s) can be%s; --allow-empty accepts an empty replay",
                          o->source, from, to, unread);
    return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                      "nothing to replay: none of the %" PRId64 " records read from %s's topics "
                      "has an event time in [%s, %s) (theirs are %s .. %s)%s; --allow-empty "
                      "accepts an empty replay",
                      st->read, o->source, from, to,
                      dlb_replay_format_time(st->seen_first, first, sizeof(first)),
                      dlb_replay_format_time(st->seen_last, last, sizeof(last)), unread);
}

static int check_opts(const dlb_replay_opts_t *o, dlb_replay_stats_t *st, char *errstr,
                      size_t errstr_size)
{
    const char *const *topics = o->topics ? o->topics : dlb_replay_default_topics(o->from_pg);

    if (!o->source || !*o->source || !o->into || !*o->into)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "a source and a target are needed");
    if (!strcmp(o->source, o->into))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "refusing to replay %s into itself",
                          o->source);
    if (o->from_ms >= o->to_ms)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "empty time range: --from must be before --to");
    if (o->speed < 0)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "speed must be positive");
    if (o->max_ahead_ms < -1 || o->max_late_ms < -1)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "max-ahead and max-late must be -1 (no bound) or at least 0");
    if (o->from_pg && (!o->schema || !*o->schema))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "no PostgreSQL schema");
    for (; *topics; topics++) {
        if (!dlb_replay_known_topic(*topics, o->from_pg))
            return dlb_seterr(
                errstr, errstr_size, DLB_ERR_INVALID, "topic %s: %s", *topics,
                dlb_replay_known_topic(*topics, 0)
                    ? "PostgreSQL does not keep it (replay it from Kafka)"
                    : "not an event topic (job-events, metrics, k8s-events, plan-requests, "
                      "config-requests)");
        for (size_t i = 0; i < st->topic_cnt; i++)
            if (!strcmp(st->topics[i].name, *topics))
                return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "topic %s given twice",
                                  *topics);
        if (st->topic_cnt == DLB_REPLAY_MAX_TOPICS)
            return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "too many topics");
        st->topics[st->topic_cnt++].name = *topics;
    }
    if (!st->topic_cnt)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "no topic to replay");
    return 0;
}

int dlb_replay_run(const dlb_conf_t *conf, const dlb_replay_opts_t *o, dlb_replay_stats_t *st,
                   char *errstr, size_t errstr_size)
{
    dlb_replay_t r = {.o = o, .st = st};
    int64_t deadline;
    int rc, frc = 0;

    memset(st, 0, sizeof(*st));
    r.start_wall = dlb_clock_mono_ms();
    if ((rc = check_opts(o, st, errstr, errstr_size)))
        return rc;
    for (size_t t = 0; t < st->topic_cnt; t++)
        snprintf(r.target[t], sizeof(r.target[t]), "%s.%s", o->into, st->topics[t].name);
    if ((rc = dlb_replay_sink_open(conf, &r, errstr, errstr_size)))
        goto out;
    rc = o->from_pg ? dlb_replay_from_pg(conf, &r, errstr, errstr_size)
                    : dlb_replay_from_kafka(conf, &r, errstr, errstr_size);
    /* Deliver what was produced even after an error, so the counts say what
     * the target really holds. */
    deadline = dlb_clock_mono_ms() + o->timeout_ms;
    while (rd_kafka_outq_len(r.producer) > 0 && dlb_clock_mono_ms() < deadline) {
        rd_kafka_flush(r.producer, DLB_REPLAY_PROGRESS_MS);
        dlb_replay_tick(&r, 0);
    }
    if (rd_kafka_outq_len(r.producer) > 0)
        frc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                         "%d record(s) not delivered within %d ms", rd_kafka_outq_len(r.producer),
                         o->timeout_ms);
    for (size_t i = 0; i < r.jobs.cnt; i++)
        if (r.jobs.v[i].in != r.jobs.v[i].out)
            st->jobs_bad++;
    st->jobs = (int64_t)r.jobs.cnt;
    if (!rc && frc)
        rc = frc;
    if (!rc && (st->failed || st->jobs_bad))
        rc = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT,
                        "%" PRId64 " record(s) failed delivery; %" PRId64
                        " job(s) have fewer records in %s than read",
                        st->failed, st->jobs_bad, o->into);
    if (!rc && dlb_replay_stopped(&r))
        rc =
            dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "stopped before the end of the range");
    if (!rc && !st->in && !o->allow_empty)
        rc = empty_range(o, st, errstr, errstr_size);
out:
    /* Offset ranges count transaction markers too: a finished replay is 100%. */
    if (!rc || st->total < st->read)
        st->total = st->read;
    dlb_replay_tick(&r, 1);
    if (r.producer)
        rd_kafka_destroy(r.producer);
    dlb_replay_sink_close(&r);
    return rc;
}
