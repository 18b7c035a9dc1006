/* Maintenance of the environment's PostgreSQL history, run by every consumer
 * between batches, once it has started (its first committed batch, or
 * STREAM_FIRST_ROUND_MS) and every store.retention.interval.s: the time
 * partitions of the span before now's to store.partition.ahead spans ahead
 * are created (dlb_pg_partitions_ensure), then, with store.retention.days
 * set, what is older than the window goes (dlb_pg_prune: old partitions
 * dropped, the default partitions' old rows deleted), at most PRUNE_ROUND_MS
 * a round so batches are never held up for long; a backlog larger than that
 * is taken in further rounds PRUNE_RESUME_MS apart. Consumers of one
 * environment share the work through the prune lock: whoever finds it taken
 * leaves it to the holder until the next interval. A failing round is logged
 * and tried again later; it never stops the consumer. */
#include "stream_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "err.h"
#include "log.h"

/* A round's share of the loop: a batch of 500 samples takes about 35 ms
 * (docs/results/benchmarks-history.md, Ingest, 2026-11-22), so a full round
 * costs a consumer some fifteen batches' time, and only while there is a
 * backlog to remove. */
#define PRUNE_ROUND_MS 500
/* Between rounds of a backlog: the consumer spends about a tenth of its time
 * pruning until the backlog is gone ('dlbrain store prune' takes it at once). */
#define PRUNE_RESUME_MS 5000
/* After a failed prune (PostgreSQL down, a statement refused). */
#define PRUNE_RETRY_MS 60000

static void utc(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, size, "%" PRId64 " ms", ms);
}

void stream_retention(ctx_t *c)
{
    const dlb_retention_conf_t *rc = &c->conf->retention;
    int64_t now = dlb_clock_mono_ms(), interval = (int64_t)rc->interval_s * 1000;
    dlb_pg_prune_opts_t o = {.batch_rows = rc->batch_rows,
                             .budget_ms = PRUNE_ROUND_MS,
                             .span_ms = (int64_t)rc->span_hours * 3600000,
                             .ahead = rc->ahead};
    dlb_pg_prune_result_t r;
    char errstr[512], when[32];
    int64_t in_default;
    int first;

    /* With no interval the partitions are made once, in the first round
     * (prune_at is then never reached), and only 'dlbrain store prune'
     * removes history. */
    if (now < c->prune_at || (!c->rounds && !c->st->batches && now < c->first_round_at))
        return;
    o.now_ms = dlb_clock_wall_ms();
    o.before_ms = c->retention_ms && interval ? o.now_ms - c->retention_ms : 0;
    utc(o.before_ms, when, sizeof(when));
    if (dlb_pg_prune(c->pg, &o, &r, errstr, sizeof(errstr))) {
        dlb_metric_add(c->m.err_pg, 1);
        dlb_warn("retention: creating history partitions%s%s failed: %s; retrying in %d s",
                 o.before_ms ? " or removing the history older than " : "", o.before_ms ? when : "",
                 errstr, PRUNE_RETRY_MS / 1000);
        c->prune_at = now + (interval && interval < PRUNE_RETRY_MS ? interval : PRUNE_RETRY_MS);
        return;
    }
    for (size_t t = 0; t < DLB_PG_HISTORY_TABLES && o.before_ms; t++)
        dlb_metric_add(c->m.pruned[t], (double)r.rows[t]);
    first = !c->rounds++;
    if (r.busy) {
        dlb_dbg("retention: another process of the environment is pruning");
        /* The holder may be 'dlbrain store prune', which makes no partitions. */
        c->prune_at = now + (interval ? interval : PRUNE_RETRY_MS);
        return;
    }
    if (r.created)
        dlb_info("retention: created %d history partition(s) of %d h, up to %d ahead", r.created,
                 rc->span_hours, rc->ahead);
    if (r.total || !r.done)
        dlb_info("retention: removed %" PRId64 " history row(s) older than %s%s", r.total, when,
                 r.done ? "" : "; more in the next rounds");
    /* What no partition covered is kept, and said once a round: a clock far
     * off, or a replay of a past no partition was made for. Not at start,
     * where it would delay a restarted consumer's first batch. */
    if (r.done && !first &&
        !dlb_pg_partitions_default_rows(c->pg, &in_default, errstr, sizeof(errstr)) && in_default)
        dlb_info("retention: %s%" PRId64 " history row(s) in the default partitions (no partition "
                 "covers their event time; kept, and removed in batches once older than "
                 "store.retention.days)",
                 in_default >= 10000 ? "at least " : "", in_default);
    c->prune_at = interval ? now + (r.done ? interval : PRUNE_RESUME_MS) : INT64_MAX;
}
