/* Retention of the environment's PostgreSQL history, run by every consumer
 * between batches (store.retention.*): when due, the rows older than
 * store.retention.days go (dlb_pg_prune), at most PRUNE_ROUND_MS a round so
 * batches are never held up for long; a backlog larger than that is taken in
 * further rounds PRUNE_RESUME_MS apart. Consumers of one environment share
 * the work through the prune lock: whoever finds it taken leaves it to the
 * holder until the next interval. A failing prune is logged and tried again
 * later; it never stops the consumer. */
#include "stream_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "err.h"
#include "log.h"

/* A round's share of the loop: a batch of 500 samples takes about 35 ms
 * (docs/benchmarks.md), so a full round costs a consumer some fifteen
 * batches' time, and only while there is a backlog to remove. */
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
    dlb_pg_prune_opts_t o = {.batch_rows = rc->batch_rows, .budget_ms = PRUNE_ROUND_MS};
    dlb_pg_prune_result_t r;
    char errstr[512], when[32];

    if (!c->retention_ms || !interval || now < c->prune_at)
        return;
    o.before_ms = dlb_clock_wall_ms() - c->retention_ms;
    utc(o.before_ms, when, sizeof(when));
    if (dlb_pg_prune(c->pg, &o, &r, errstr, sizeof(errstr))) {
        dlb_metric_add(c->m.err_pg, 1);
        dlb_warn("retention: removing history older than %s failed: %s; retrying in %d s", when,
                 errstr, PRUNE_RETRY_MS / 1000);
        c->prune_at = now + (interval < PRUNE_RETRY_MS ? interval : PRUNE_RETRY_MS);
        return;
    }
    for (size_t t = 0; t < DLB_PG_HISTORY_TABLES; t++)
        dlb_metric_add(c->m.pruned[t], (double)r.rows[t]);
    if (r.busy) {
        dlb_dbg("retention: another process of the environment is pruning");
        c->prune_at = now + interval;
        return;
    }
    if (r.total || !r.done)
        dlb_info("retention: removed %" PRId64 " history row(s) older than %s%s", r.total, when,
                 r.done ? "" : "; more in the next rounds");
    c->prune_at = now + (r.done ? interval : PRUNE_RESUME_MS);
}
