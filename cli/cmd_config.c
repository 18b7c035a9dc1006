/* dlbrain config: apply, list, show, diff and roll back configuration rules
 * (pipeline/rules/rules.h, pipeline/store/store_config.h), match a job against them
 * (pipeline/rules/matcher.h) and sync a ConfigMap directory (pipeline/rulesync/config_sync.h). One
 * function per action; an action is a row of the actions table. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "actions.h"
#include "cmd.h"
#include "common.h"
#include "config_sync.h"
#include "err.h"
#include "log.h"
#include "metrics.h"
#include "matcher.h"
#include "rules.h"
#include "store_config.h"

/* Options of the actions beyond the common ones, each action taking those
 * its opts string names: -m MESSAGE (apply, rollback), -f FORMAT (show),
 * -V VERSION (match), -i MS and -o (watch). */
static const struct option action_longopts[] = {{"message", required_argument, 0, 'm'},
                                                {"format", required_argument, 0, 'f'},
                                                {"version", required_argument, 0, 'V'},
                                                {"interval-ms", required_argument, 0, 'i'},
                                                {"once", no_argument, 0, 'o'},
                                                CLI_COMMON_LONG,
                                                {0, 0, 0, 0}};

static int act_apply(const cli_args_t *a, const dlb_conf_t *conf);
static int act_list(const cli_args_t *a, const dlb_conf_t *conf);
static int act_show(const cli_args_t *a, const dlb_conf_t *conf);
static int act_diff(const cli_args_t *a, const dlb_conf_t *conf);
static int act_rollback(const cli_args_t *a, const dlb_conf_t *conf);
static int act_match(const cli_args_t *a, const dlb_conf_t *conf);
static int act_watch(const cli_args_t *a, const dlb_conf_t *conf);

static const cli_action_t actions[] = {
    {"apply", "apply FILE... [-m MESSAGE]", "store the files' rules as one new version", "m:", 1,
     -1, act_apply},
    {"list", "list", "every version, oldest first", "", 0, 0, act_list},
    {"show", "show [VERSION] [-f yaml|json]", "a version's rules (default: the newest)", "f:", 0, 1,
     act_show},
    {"diff", "diff V1 V2", "what changed from V1 to V2, rule by rule", "", 2, 2, act_diff},
    {"rollback", "rollback VERSION [-m MESSAGE]", "a new version with the rules of VERSION",
     "m:", 1, 1, act_rollback},
    {"match", "match [-V VERSION] ATTR=VALUE...",
     "which rules a job with these attributes gets, and its values (a dry run)", "V:", 0, -1,
     act_match},
    {"watch", "watch DIR [-i MS] [--once]",
     "sync DIR's rule files (a mounted ConfigMap) into new versions when they change", "i:o", 1, 1,
     act_watch},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

static const cli_action_opt_help_t action_help[] = {
    {'m', "  -m, --message TEXT    why (apply, rollback), kept with the version\n"},
    {'f', "  -f, --format F        show: yaml (default) or json\n"},
    {'V', "  -V, --version N       match: against version N (default: the newest);\n"
          "                        ATTR is user, group, app, cluster, namespace,\n"
          "                        scenario, framework or name\n"},
    {'i', "  -i, --interval-ms MS  watch: look at DIR this often (default 2000)\n"
          "  -o, --once            watch: one round, then exit (0 synced or unchanged,\n"
          "                        1 refused or failed)\n"},
    {0, NULL},
};

const cli_command_t cmd_config_command = {
    "config",
    "Configuration rules (YAML: Include / Exclude / Configure) in PostgreSQL, schema\n"
    "pg.schema: every apply or rollback is a new version, never changed afterwards;\n"
    "the newest is the current one. A file with an error is named with its line and\n"
    "column, and then nothing is applied.",
    actions,
    "m:f:V:i:o",
    action_longopts,
    0,
    action_help,
};

/* ---- helpers ------------------------------------------------------------------- */

static int cfg_open(const cli_args_t *a, const dlb_conf_t *conf, dlb_pg_t **pg)
{
    char errstr[1024];

    if (dlb_pg_connect(pg, conf->pg_dsn, conf->pg_schema, errstr, sizeof(errstr)) ||
        dlb_pg_migrate(*pg, errstr, sizeof(errstr))) {
        fprintf(stderr, "config %s: %s\n", a->action, errstr);
        dlb_pg_destroy(*pg);
        *pg = NULL;
        return 1;
    }
    return 0;
}

static int parse_version(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);

    if (!*s || *end || v <= 0) {
        fprintf(stderr, "config: '%s' is not a version (1, 2, ...)\n", s);
        return 2;
    }
    *out = v;
    return 0;
}

/* "applied version N: <what> (checksum ...)", and whether it repeats the
 * version before it. */
static int print_applied(dlb_pg_t *pg, const cli_args_t *a, const dlb_cfg_version_t *v,
                         const char *what)
{
    dlb_cfg_version_t prev;
    char errstr[1024];

    printf("applied version %" PRId64 ": %s (checksum %.12s...)\n", v->version, what, v->checksum);
    if (v->version < 2)
        return 0;
    if (dlb_cfg_get(pg, v->version - 1, &prev, errstr, sizeof(errstr))) {
        fprintf(stderr, "config %s: %s\n", a->action, errstr);
        return 1;
    }
    if (!strcmp(prev.checksum, v->checksum))
        printf("same rules as version %" PRId64 "\n", prev.version);
    return 0;
}

static const char *plural(int64_t n)
{
    return n == 1 ? "" : "s";
}

/* ---- actions ------------------------------------------------------------------- */

static int act_apply(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_rules_t rules;
    dlb_cfg_version_t v;
    dlb_pg_t *pg = NULL;
    char errstr[1024], what[128];
    int rc = 1;

    /* Every file is read and checked before anything is stored. */
    if (dlb_rules_load_files((const char *const *)a->pos, (size_t)a->pos_cnt, &rules, errstr,
                             sizeof(errstr))) {
        fprintf(stderr, "config apply: %s; nothing applied\n", errstr);
        return 1;
    }
    if (cfg_open(a, conf, &pg))
        goto out;
    if (dlb_cfg_apply(pg, &rules, "cli", a->opt['m'], &v, errstr, sizeof(errstr))) {
        fprintf(stderr, "config apply: %s\n", errstr);
        goto out;
    }
    snprintf(what, sizeof(what), "%zu rule%s from %d file%s", rules.cnt, plural((int64_t)rules.cnt),
             a->pos_cnt, plural(a->pos_cnt));
    rc = print_applied(pg, a, &v, what);
out:
    dlb_rules_clear(&rules);
    dlb_pg_destroy(pg);
    return rc;
}

static int act_list(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_cfg_version_t *vs = NULL;
    dlb_pg_t *pg = NULL;
    char errstr[1024], (*src)[300] = NULL;
    size_t n = 0;
    int w = 6;

    if (cfg_open(a, conf, &pg))
        return 1;
    if (dlb_cfg_list(pg, &vs, &n, errstr, sizeof(errstr))) {
        fprintf(stderr, "config list: %s\n", errstr);
        dlb_pg_destroy(pg);
        return 1;
    }
    dlb_pg_destroy(pg);
    if (n && !(src = calloc(n, sizeof(*src)))) {
        fprintf(stderr, "config list: out of memory\n");
        free(vs);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        int len = vs[i].rollback_of
                      ? snprintf(src[i], sizeof(src[i]), "rollback of %" PRId64, vs[i].rollback_of)
                      : snprintf(src[i], sizeof(src[i]), "%s", vs[i].source);
        w = len > w ? len : w;
    }
    printf("%-7s  %-19s  %-*s  %5s  %-12s  %s\n", "VERSION", "CREATED(UTC)", w, "SOURCE", "RULES",
           "CHECKSUM", "MESSAGE");
    for (size_t i = 0; i < n; i++) {
        time_t t = (time_t)(vs[i].created_ms / 1000);
        struct tm tm;
        char when[32] = "?";

        if (gmtime_r(&t, &tm))
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
        printf("%-7" PRId64 "  %-19s  %-*s  %5" PRId64 "  %.12s%s%s\n", vs[i].version, when, w,
               src[i], vs[i].rules, vs[i].checksum, vs[i].message[0] ? "  " : "", vs[i].message);
    }
    free(src);
    free(vs);
    return 0;
}

static int act_show(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_rules_t rules = {0};
    dlb_cfg_version_t v;
    dlb_pg_t *pg = NULL;
    int64_t version = 0, loaded = 0;
    char errstr[1024], *text = NULL;
    const char *format = a->opt['f'] ? a->opt['f'] : "yaml";
    int json = !strcmp(format, "json"), rc;

    if (!json && strcmp(format, "yaml")) {
        fprintf(stderr, "config show: format '%s' is not yaml or json\n", format);
        return 2;
    }
    if (a->pos_cnt && (rc = parse_version(a->pos[0], &version)))
        return rc;
    if (cfg_open(a, conf, &pg))
        return 1;
    rc = 1;
    if (dlb_cfg_load(pg, version, &rules, &loaded, errstr, sizeof(errstr)) ||
        (loaded && dlb_cfg_get(pg, loaded, &v, errstr, sizeof(errstr)))) {
        fprintf(stderr, "config show: %s\n", errstr);
        goto out;
    }
    if (!loaded) {
        fprintf(stderr, "config show: no configuration version was applied yet\n");
        goto out;
    }
    if (json ? dlb_rules_to_json(&rules, DLB_RULES_JSON_PRETTY, &text, errstr, sizeof(errstr))
             : dlb_rules_to_yaml(&rules, &text, errstr, sizeof(errstr))) {
        fprintf(stderr, "config show: %s\n", errstr);
        goto out;
    }
    if (!json)
        printf("# dlbrain configuration version %" PRId64 ", %" PRId64 " rule%s, checksum %s\n",
               v.version, v.rules, plural(v.rules), v.checksum);
    fputs(text, stdout);
    rc = 0;
out:
    free(text);
    dlb_rules_clear(&rules);
    dlb_pg_destroy(pg);
    return rc;
}

static int act_diff(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_rules_t r1 = {0}, r2 = {0};
    dlb_pg_t *pg = NULL;
    int64_t v1, v2;
    char errstr[1024], *text = NULL;
    int rc;

    if ((rc = parse_version(a->pos[0], &v1)) || (rc = parse_version(a->pos[1], &v2)))
        return rc;
    if (cfg_open(a, conf, &pg))
        return 1;
    rc = 1;
    if (dlb_cfg_load(pg, v1, &r1, NULL, errstr, sizeof(errstr)) ||
        dlb_cfg_load(pg, v2, &r2, NULL, errstr, sizeof(errstr)) ||
        dlb_rules_diff(&r1, &r2, &text, errstr, sizeof(errstr))) {
        fprintf(stderr, "config diff: %s\n", errstr);
        goto out;
    }
    fputs(*text ? text : "no differences\n", stdout);
    rc = 0;
out:
    free(text);
    dlb_rules_clear(&r1);
    dlb_rules_clear(&r2);
    dlb_pg_destroy(pg);
    return rc;
}

static int act_rollback(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_cfg_version_t v;
    dlb_pg_t *pg = NULL;
    int64_t to;
    char errstr[1024], what[96];
    int rc;

    if ((rc = parse_version(a->pos[0], &to)))
        return rc;
    if (cfg_open(a, conf, &pg))
        return 1;
    rc = 1;
    if (dlb_cfg_rollback(pg, to, a->opt['m'], &v, errstr, sizeof(errstr))) {
        fprintf(stderr, "config rollback: %s\n", errstr);
    } else {
        snprintf(what, sizeof(what), "rollback of version %" PRId64 ", %" PRId64 " rule%s", to,
                 v.rules, plural(v.rules));
        rc = print_applied(pg, a, &v, what);
    }
    dlb_pg_destroy(pg);
    return rc;
}

/* ---- match ---------------------------------------------------------------------- */

static int set_attr(dlb_job_meta_t *m, const char *pair)
{
    const char *eq = strchr(pair, '=');

    for (size_t i = 0; eq && i < DLB_META_ATTRS; i++)
        if (strlen(dlb_meta_attr_names[i]) == (size_t)(eq - pair) &&
            !strncasecmp(pair, dlb_meta_attr_names[i], (size_t)(eq - pair)) &&
            strlen(eq + 1) < DLB_NAME_MAX) {
            snprintf(dlb_meta_attr(m, i), DLB_NAME_MAX, "%s", eq + 1);
            return 0;
        }
    fprintf(stderr,
            "config match: '%s' is not ATTR=VALUE with a known attribute (user, group, "
            "app, cluster, namespace, scenario, framework, name)\n",
            pair);
    return 2;
}

static int act_match(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_job_meta_t meta = {0};
    dlb_rules_t rules = {0};
    dlb_matcher_t *m = NULL;
    dlb_match_t res;
    dlb_pg_t *pg = NULL;
    int64_t version = 0, loaded = 0;
    char errstr[1024];
    int rc;

    for (int i = 0; i < a->pos_cnt; i++)
        if ((rc = set_attr(&meta, a->pos[i])))
            return rc;
    if (a->opt['V'] && (rc = parse_version(a->opt['V'], &version)))
        return rc;
    if (cfg_open(a, conf, &pg))
        return 1;
    rc = 1;
    if (dlb_cfg_load(pg, version, &rules, &loaded, errstr, sizeof(errstr)) ||
        dlb_matcher_new(&m, &rules, errstr, sizeof(errstr)) || dlb_matcher_match(m, &meta, &res)) {
        fprintf(stderr, "config match: %s\n", errstr);
        goto out;
    }
    printf("rules version %" PRId64 ": %zu of %zu rule%s in scope", loaded, res.rule_ids_cnt,
           rules.cnt, plural((int64_t)rules.cnt));
    for (size_t i = 0; i < res.rule_ids_cnt; i++)
        printf("%s%s", i ? ", " : ", highest first: ", res.rule_ids[i]);
    printf("\n");
    for (size_t i = 0; i < res.values_cnt; i++)
        printf("  %s = %s  (%s)\n", res.values[i].key, res.values[i].json, res.sources[i]);
    rc = 0;
out:
    dlb_matcher_destroy(m);
    dlb_rules_clear(&rules);
    dlb_pg_destroy(pg);
    return rc;
}

/* ---- watch ---------------------------------------------------------------------- */

static int act_watch(const cli_args_t *a, const dlb_conf_t *conf)
{
    /* In dlb_sync_result_t order, then a failed round. */
    static const char *const round_names[5] = {"unchanged", "same", "applied", "refused", "failed"};
    dlb_series_t *rounds[5], *version;
    dlb_cfg_sync_t s = {.dir = a->pos[0]};
    dlb_cfg_version_t v;
    dlb_sync_result_t res;
    dlb_pg_t *pg = NULL;
    char errstr[1024];
    long interval = a->opt['i'] ? atol(a->opt['i']) : 2000;
    int err, rc = 0;

    if (interval <= 0) {
        fprintf(stderr, "config watch: --interval-ms must be a positive number\n");
        return 2;
    }
    if (cfg_open(a, conf, &pg))
        return 1;
    cli_signals_install();
    /* Watching is a long-running service (a sidecar of the ConfigMap); one
     * round is a command. */
    if (!a->opt['o'] && cli_metrics_start(conf, "config-watch")) {
        dlb_pg_destroy(pg);
        return 1;
    }
    for (int i = 0; i < 5; i++)
        rounds[i] = dlb_metric_counter("dlbrain_config_sync_rounds_total",
                                       "Rounds of config watch by outcome: applied (a new rules "
                                       "version), same, unchanged, refused (invalid files), failed "
                                       "(PostgreSQL)",
                                       "result", DLB_LV(round_names[i]));
    version = dlb_metric_gauge("dlbrain_config_rules_version",
                               "The rules version the watched files were last applied as or "
                               "matched",
                               "", NULL);
    dlb_info("config watch: syncing %s into schema %s every %ld ms", s.dir, conf->pg_schema,
             interval);
    while (!cli_stop) {
        dlb_metrics_beat();
        err = dlb_cfg_sync_round(&s, pg, &res, &v, errstr, sizeof(errstr));
        dlb_metric_add(rounds[err ? 4 : (int)res], 1);
        if (!err && (res == DLB_SYNC_APPLIED || res == DLB_SYNC_SAME))
            dlb_metric_set(version, (double)v.version);
        if (err) {
            if (err == DLB_ERR_TRANSIENT) {
                dlb_warn("config watch: %s; retrying in %ld ms", errstr, interval);
                dlb_pg_reconnect(pg, errstr, sizeof(errstr));
            } else {
                dlb_err("config watch: %s; retrying in %ld ms", errstr, interval);
            }
            rc = 1;
        } else if (res == DLB_SYNC_APPLIED) {
            dlb_info("config watch: %s: applied version %" PRId64 " (%" PRId64 " rule%s)", s.dir,
                     v.version, v.rules, plural(v.rules));
            rc = 0;
        } else if (res == DLB_SYNC_SAME) {
            dlb_info("config watch: %s changed; its rules are those of version %" PRId64
                     " already, nothing applied",
                     s.dir, v.version);
            rc = 0;
        } else if (res == DLB_SYNC_REFUSED) {
            dlb_err("config watch: %s; nothing applied, the newest version stays in force until "
                    "the files change",
                    errstr);
            rc = 1;
        }
        if (a->opt['o'])
            break;
        for (long t = 0; t < interval && !cli_stop; t += 50)
            usleep(50 * 1000);
    }
    dlb_pg_destroy(pg);
    cli_metrics_stop();
    /* Watching ends with a signal: a clean stop. Only --once reports its round. */
    return a->opt['o'] ? rc : 0;
}

int cmd_config_main(int argc, char **argv)
{
    return cli_actions_main(&cmd_config_command, argc, argv);
}
