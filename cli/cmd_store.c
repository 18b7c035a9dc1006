/* dlbrain store: the environment's PostgreSQL history (pipeline/store/):
 * prune what is older than the retention window, once, as the consumers do
 * every store.retention.interval.s. One function per action. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actions.h"
#include "clock.h"
#include "cmd.h"
#include "common.h"
#include "err.h"
#include "store_pg.h"

static int act_prune(const cli_args_t *a, const dlb_conf_t *conf);

static const cli_action_t actions[] = {
    {"prune", "prune [--days N] [--dry-run]",
     "remove the history older than N days of event time (default store.retention.days)", "d:n", 0,
     0, act_prune},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

static const struct option action_longopts[] = {{"days", required_argument, 0, 'd'},
                                                {"dry-run", no_argument, 0, 'n'},
                                                CLI_COMMON_LONG,
                                                {0, 0, 0, 0}};

static const cli_action_opt_help_t action_help[] = {
    {'d', "  -d, --days N          prune: keep N days (default: store.retention.days)\n"},
    {'n', "  -n, --dry-run         prune: count what would be deleted, delete nothing\n"},
    {0, NULL},
};

const cli_command_t cmd_store_command = {
    "store",
    "The environment's PostgreSQL history (schema pg.schema). prune removes the rows\n"
    "of job_events, runtime_samples, node_events, plan_requests, plans, oom_plans\n"
    "and config_matches whose event time is older than the window: it drops their\n"
    "partitions wholly older than it, then deletes the default partitions' older\n"
    "rows in batches of store.retention.batch.rows, waiting for a consumer's prune\n"
    "of the same environment to end first; the jobs registry and configuration\n"
    "rules stay.",
    actions,
    "d:n",
    action_longopts,
    0,
    action_help,
};

static int act_prune(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_conf_t c = *conf; /* shallow: only its retention is changed, nothing freed */
    dlb_pg_prune_opts_t o = {.batch_rows = conf->retention.batch_rows, .wait = 1};
    dlb_pg_prune_result_t r;
    dlb_pg_t *pg = NULL;
    char errstr[1024], when[32] = "?";
    int64_t window_ms, n;
    time_t t;
    struct tm tm;
    int rc = 1;

    if (a->opt['d']) {
        char *end;
        long v = strtol(a->opt['d'], &end, 10);
        if (!*a->opt['d'] || *end || v < 1 || v > INT_MAX) {
            fprintf(stderr, "store prune: --days '%s' is not a number of days from 1\n",
                    a->opt['d']);
            return 2;
        }
        c.retention.days = (int)v;
    }
    if (dlb_conf_retention(&c, &window_ms, errstr, sizeof(errstr))) {
        fprintf(stderr, "store prune: %s\n", errstr);
        return 2;
    }
    if (!window_ms) {
        fprintf(stderr, "store prune: store.retention.days is 0 (history is kept forever); "
                        "give --days N\n");
        return 2;
    }
    o.before_ms = dlb_clock_wall_ms() - window_ms;
    o.dry_run = a->opt['n'] != NULL;
    t = (time_t)(o.before_ms / 1000);
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    if (dlb_pg_connect(&pg, conf->pg_dsn, conf->pg_schema, errstr, sizeof(errstr))) {
        fprintf(stderr, "store prune: %s\n", errstr);
        goto out;
    }
    /* A mistyped environment is reported, not created by the migrations. */
    if (dlb_pg_count(pg, "schema_migrations", &n, errstr, sizeof(errstr))) {
        fprintf(stderr, "store prune: schema %s is no environment's: %s\n", conf->pg_schema,
                errstr);
        goto out;
    }
    /* Migrated, for the partitions and the default partitions' event-time
     * indexes the prune uses (012). */
    if (dlb_pg_migrate(pg, errstr, sizeof(errstr)) ||
        dlb_pg_prune(pg, &o, &r, errstr, sizeof(errstr))) {
        fprintf(stderr, "store prune: %s\n", errstr);
        goto out;
    }
    printf("%s history of schema %s older than %s UTC (%d days):\n",
           o.dry_run ? "would delete" : "deleted", conf->pg_schema, when, c.retention.days);
    for (size_t i = 0; i < DLB_PG_HISTORY_TABLES; i++)
        printf("  %-16s %12" PRId64 "\n", dlb_pg_history_table(i), r.rows[i]);
    printf("  %-16s %12" PRId64 "\n", "total", r.total);
    rc = 0;
out:
    dlb_pg_destroy(pg);
    return rc;
}

int cmd_store_main(int argc, char **argv)
{
    return cli_actions_main(&cmd_store_command, argc, argv);
}
