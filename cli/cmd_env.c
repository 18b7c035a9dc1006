/* dlbrain env: create, list, show, drop and promote environments, and their
 * history (env/registry/env_registry.h for the registry, env/registry/env_ops.h for
 * their topics, schema and keys). One function per action. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "actions.h"
#include "cmd.h"
#include "common.h"
#include "consumer.h"
#include "env_ops.h"
#include "env_registry.h"
#include "env_roles.h"
#include "err.h"
#include "switch_mark.h"

#define ADMIN_TIMEOUT_MS 30000

static int act_create(const cli_args_t *a, const dlb_conf_t *conf);
static int act_list(const cli_args_t *a, const dlb_conf_t *conf);
static int act_show(const cli_args_t *a, const dlb_conf_t *conf);
static int act_drop(const cli_args_t *a, const dlb_conf_t *conf);
static int act_promote(const cli_args_t *a, const dlb_conf_t *conf);
static int act_history(const cli_args_t *a, const dlb_conf_t *conf);
static int act_settle(const cli_args_t *a, const dlb_conf_t *conf);
static int act_standby(const cli_args_t *a, const dlb_conf_t *conf);
static int act_pin(const cli_args_t *a, const dlb_conf_t *conf);
static int act_unpin(const cli_args_t *a, const dlb_conf_t *conf);

static const cli_action_t actions[] = {
    {"create",
     "create NAME [--real|--virtual] [--optimizer-set S] [-s KEY=VALUE]... [--description T]",
     "register NAME, create its topics and its PostgreSQL schema", "rVO:s:d:", 1, 1, act_create},
    {"list", "list [--all]", "live environments (--all: dropped ones too)", "a", 0, 0, act_list},
    {"show", "show NAME [--format text|conf]",
     "everything about NAME; conf: its settings as a -c file for its consumers", "f:", 1, 1,
     act_show},
    {"drop", "drop NAME [--purge]",
     "retire NAME (never the real one); --purge deletes its topics, schema and Redis keys", "p", 1,
     1, act_drop},
    {"promote", "promote NAME [--no-pin]",
     "make NAME real and the real one virtual, in one transaction; pins the choice (automatic "
     "failover off until 'env unpin') unless --no-pin",
     "P", 1, 1, act_promote},
    {"standby", "standby NAME | standby --clear",
     "choose the virtual environment automatic failover promotes (at most one), or none", "C", 0, 1,
     act_standby},
    {"pin", "pin", "pin the real environment: automatic failover off", "", 0, 0, act_pin},
    {"unpin", "unpin", "automatic failover on again (with a standby chosen)", "", 0, 0, act_unpin},
    {"history", "history [NAME]",
     "every create, promote, demote, drop, standby, pin and mark, oldest first", "", 0, 1,
     act_history},
    {"settle", "settle NAME [--events N] [--timeout S]",
     "wait until NAME's optimizer has read its inputs (lag 0) and stored N events", "n:t:", 1, 1,
     act_settle},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};

static const struct option action_longopts[] = {{"real", no_argument, 0, 'r'},
                                                {"virtual", no_argument, 0, 'V'},
                                                {"optimizer-set", required_argument, 0, 'O'},
                                                {"set", required_argument, 0, 's'},
                                                {"description", required_argument, 0, 'd'},
                                                {"all", no_argument, 0, 'a'},
                                                {"format", required_argument, 0, 'f'},
                                                {"purge", no_argument, 0, 'p'},
                                                {"events", required_argument, 0, 'n'},
                                                {"timeout", required_argument, 0, 't'},
                                                {"no-pin", no_argument, 0, 'P'},
                                                {"clear", no_argument, 0, 'C'},
                                                CLI_COMMON_LONG,
                                                {0, 0, 0, 0}};

static const cli_action_opt_help_t action_help[] = {
    {'r', "  -r, --real            create: a real environment (refused if one is real)\n"},
    {'V', "  -V, --virtual         create: a virtual environment (the default)\n"},
    {'O', "  -O, --optimizer-set S create: dlrover or dlbrain (default: optimizer.set)\n"},
    {'s', "  -s, --set KEY=VALUE   create: a setting of its consumers (repeatable)\n"},
    {'d', "  -d, --description T   create: what it is for\n"},
    {'a', "  -a, --all             list: dropped environments too\n"},
    {'f', "  -f, --format F        show: text (default) or conf\n"},
    {'p', "  -p, --purge           drop: delete its topics, schema and Redis keys\n"},
    {'n', "  -n, --events N        settle: the events its producers sent (job events, runtime\n"
          "                        samples, node events, plan requests; dlbrain sim's events=)\n"},
    {'t', "  -t, --timeout S       settle: give up after S seconds (default 300)\n"},
    {'P', "  -P, --no-pin          promote: leave automatic failover on\n"},
    {'C', "  -C, --clear           standby: choose none\n"},
    {0, NULL},
};

const cli_command_t cmd_env_command = {
    "env",
    "Environments: a name that prefixes topics (<name>.plans), consumer groups, the\n"
    "PostgreSQL schema and Redis keys (<name>:...), with the optimizer set and\n"
    "settings its consumers run. At most one is real: the relay (dlbrain relay)\n"
    "forwards its plans and configs to the front; the others are virtual. One\n"
    "virtual one may be the standby that automatic failover promotes when too many\n"
    "of the real one's jobs fail (env.failover.*).",
    actions,
    "rVO:s:d:af:pn:t:PC",
    action_longopts,
    's',
    action_help,
};

/* ---- helpers ------------------------------------------------------------------- */

static const char *by_user(void)
{
    const struct passwd *pw = getpwuid(getuid());
    const char *u = getenv("USER");

    return u && *u ? u : pw ? pw->pw_name : NULL;
}

static void fmt_ms(int64_t ms, char *buf, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    snprintf(buf, size, "-");
    if (ms > 0 && gmtime_r(&t, &tm))
        strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

static int reg_open(const cli_args_t *a, const dlb_conf_t *conf, PGconn **pg)
{
    char errstr[1024];

    if (dlb_env_registry_connect(conf->pg_dsn, pg, errstr, sizeof(errstr)) ||
        dlb_env_registry_migrate(*pg, errstr, sizeof(errstr))) {
        fprintf(stderr, "env %s: %s\n", a->action, errstr);
        if (*pg)
            PQfinish(*pg);
        *pg = NULL;
        return 1;
    }
    return 0;
}

/* --set pairs as a JSON object of strings; keys that name the environment
 * itself are refused, and so are secrets (the registry would keep them for
 * good); values of known keys are checked. */
static char *settings_json(const cli_args_t *a, char *errstr, size_t size)
{
    static const char *const own[] = {"env", "pg.schema", "group.id", "optimizer.set", NULL};
    cJSON *obj = cJSON_CreateObject();
    dlb_conf_t scratch;
    char key[256], *out = NULL;

    dlb_conf_init(&scratch);
    if (!obj) {
        dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < a->multi_cnt; i++) {
        const char *eq = strchr(a->multi[i], '=');
        if (!eq || eq == a->multi[i] || (size_t)(eq - a->multi[i]) >= sizeof(key)) {
            dlb_seterr(errstr, size, DLB_ERR_INVALID, "--set %s: not KEY=VALUE", a->multi[i]);
            goto out;
        }
        snprintf(key, sizeof(key), "%.*s", (int)(eq - a->multi[i]), a->multi[i]);
        for (const char *const *o = own; *o; o++)
            if (!strcmp(key, *o)) {
                dlb_seterr(errstr, size, DLB_ERR_INVALID,
                           "--set %s: the environment decides it (%s)", key,
                           strcmp(key, "optimizer.set") ? "its name" : "use --optimizer-set");
                goto out;
            }
        if (dlb_conf_refuse_secret(DLB_CONF_FROM_REGISTRY, key, eq + 1, errstr, size)) {
            dlb_err_prepend(errstr, size, "--set ");
            goto out;
        }
        if (dlb_conf_set(&scratch, key, eq + 1, errstr, size))
            goto out;
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key); /* the last --set wins */
        if (!cJSON_AddStringToObject(obj, key, eq + 1)) {
            dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    if (!(out = cJSON_PrintUnformatted(obj)))
        dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
out:
    cJSON_Delete(obj);
    dlb_conf_destroy(&scratch);
    return out;
}

/* ---- actions ------------------------------------------------------------------- */

static int act_create(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_env_t env = {0}, old;
    PGconn *pg = NULL;
    rd_kafka_t *admin = NULL;
    char errstr[1024], real[DLB_ENV_NAME_MAX + 1];
    const char *name = a->pos[0];
    int rc = 1;

    if (dlb_env_name_check(name, errstr, sizeof(errstr))) {
        fprintf(stderr, "env create: %s\n", errstr);
        return 2;
    }
    snprintf(env.name, sizeof(env.name), "%s", name);
    if (a->opt['r'] && a->opt['V']) {
        fprintf(stderr, "env create: --real or --virtual, not both\n");
        return 2;
    }
    env.kind = a->opt['r'] ? DLB_ENV_REAL : DLB_ENV_VIRTUAL;
    snprintf(env.optimizer_set, sizeof(env.optimizer_set), "%s",
             a->opt['O'] ? a->opt['O'] : conf->optimizer_set);
    env.description = (char *)(a->opt['d'] ? a->opt['d'] : "");
    if (!(env.settings = settings_json(a, errstr, sizeof(errstr)))) {
        fprintf(stderr, "env create: %s\n", errstr);
        return 2;
    }
    if (reg_open(a, conf, &pg))
        goto out;
    /* Refuse before creating anything; dlb_env_create checks again, locked. */
    if (!dlb_env_get(pg, name, &old, errstr, sizeof(errstr))) {
        dlb_env_clear(&old);
        fprintf(stderr, "env create: environment %s exists already\n", name);
        goto out;
    }
    if (env.kind == DLB_ENV_REAL && !dlb_env_real(pg, real, sizeof(real), errstr, sizeof(errstr))) {
        fprintf(stderr,
                "env create: environment %s is real already and at most one can be: create %s "
                "--virtual, then 'dlbrain env promote %s'\n",
                real, name, name);
        goto out;
    }
    /* Topics and schema first (both idempotent): the environment is
     * registered, and so relayed to, only once it is whole. */
    if (dlb_env_admin_new(conf, &admin, errstr, sizeof(errstr)) ||
        dlb_env_topics_create(admin, conf, name, ADMIN_TIMEOUT_MS, errstr, sizeof(errstr))) {
        fprintf(stderr, "env create: %s\n", errstr);
        goto out;
    }
    if (dlb_env_schema_create(conf, name, errstr, sizeof(errstr))) {
        fprintf(stderr, "env create: %s\n", errstr);
        goto out;
    }
    if (dlb_env_create(pg, &env, by_user(), errstr, sizeof(errstr))) {
        fprintf(stderr, "env create: %s\n", errstr);
        goto out;
    }
    printf("created environment %s (%s, optimizer set %s): topics %s.*, %d partition(s) each; "
           "PostgreSQL schema %s; Redis keys %s:*\n",
           name, dlb_env_kind_name(env.kind), env.optimizer_set, name, conf->partitions, name,
           name);
    rc = 0;
out:
    free(env.settings);
    if (admin)
        rd_kafka_destroy(admin);
    if (pg)
        PQfinish(pg);
    return rc;
}

static int act_list(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_env_t *envs = NULL;
    PGconn *pg = NULL;
    char errstr[1024], created[32], changed[32], dropped[32];
    size_t n = 0;

    if (reg_open(a, conf, &pg))
        return 1;
    if (dlb_env_list_all(pg, a->opt['a'] != NULL, &envs, &n, errstr, sizeof(errstr))) {
        fprintf(stderr, "env list: %s\n", errstr);
        PQfinish(pg);
        return 1;
    }
    PQfinish(pg);
    /* STANDBY last: scripts read the columns before it by position. */
    printf("%-20s  %-7s  %-9s  %-19s  %-19s%s  %s\n", "NAME", "KIND", "OPTIMIZER", "CREATED(UTC)",
           "CHANGED(UTC)", a->opt['a'] ? "  DROPPED(UTC)       " : "", "STANDBY");
    for (size_t i = 0; i < n; i++) {
        fmt_ms(envs[i].created_ms, created, sizeof(created));
        fmt_ms(envs[i].changed_ms, changed, sizeof(changed));
        fmt_ms(envs[i].dropped_ms, dropped, sizeof(dropped));
        printf("%-20s  %-7s  %-9s  %-19s  %-19s%s%-*s  %s\n", envs[i].name,
               dlb_env_kind_name(envs[i].kind), envs[i].optimizer_set, created, changed,
               a->opt['a'] ? "  " : "", a->opt['a'] ? 19 : 0, a->opt['a'] ? dropped : "",
               envs[i].standby ? "standby" : "-");
    }
    dlb_env_list_free(envs, n);
    return 0;
}

/* The environment's settings as a configuration file (dlbrain ... -c FILE).
 * A secret stored before they were refused is a comment: it belongs where
 * the consumers run (its environment variable or .file setting). */
static int print_conf(const dlb_env_t *env)
{
    cJSON *obj = cJSON_Parse(env->settings), *it;
    char *masked;

    if (!obj) {
        fprintf(stderr, "env show: settings of %s are not JSON\n", env->name);
        return 1;
    }
    printf("# environment %s (%s), from dlbrain env show %s --format conf\n", env->name,
           dlb_env_kind_name(env->kind), env->name);
    printf("env=%s\noptimizer.set=%s\n", env->name, env->optimizer_set);
    cJSON_ArrayForEach(it, obj)
    {
        if (!cJSON_IsString(it))
            continue;
        if (!dlb_conf_secret(it->string, it->valuestring)) {
            printf("%s=%s\n", it->string, it->valuestring);
            continue;
        }
        if (!(masked = dlb_conf_mask_dup(it->string, it->valuestring))) {
            fprintf(stderr, "env show: out of memory\n");
            cJSON_Delete(obj);
            return 1;
        }
        printf("# %s=%s (a secret, not printed: give it to the consumers through its "
               "environment variable or %s.file)\n",
               it->string, masked, it->string);
        free(masked);
    }
    cJSON_Delete(obj);
    return 0;
}

static void print_resources(const dlb_conf_t *conf, PGconn *pg, const char *name)
{
    dlb_env_topic_t topics[DLB_ENV_TOPICS_MAX];
    rd_kafka_t *admin = NULL;
    char errstr[1024];
    size_t cnt = 0;
    int missing, exists, tables;

    if (dlb_env_schema_info(pg, name, &exists, &tables, errstr, sizeof(errstr)))
        printf("postgresql:    %s\n", errstr);
    else if (exists)
        printf("postgresql:    schema %s, %d table(s)\n", name, tables);
    else
        printf("postgresql:    schema %s does not exist\n", name);
    printf("redis keys:    %s:*\n", name);
    printf("consumer groups: %s.optimizer, %s.configurer\n", name, name);
    if (dlb_env_admin_new(conf, &admin, errstr, sizeof(errstr)) ||
        dlb_env_topics_describe(admin, conf, name, topics, &cnt, &missing, ADMIN_TIMEOUT_MS, errstr,
                                sizeof(errstr))) {
        printf("topics:        unknown: %s\n", errstr);
    } else {
        printf("topics:\n");
        for (size_t i = 0; i < cnt; i++) {
            if (topics[i].partitions < 0)
                printf("  %-40s  missing\n", topics[i].name);
            else
                printf("  %-40s  %d partition(s)\n", topics[i].name, topics[i].partitions);
        }
    }
    if (admin)
        rd_kafka_destroy(admin);
}

/* Automatic failover as the registry has it: armed or why not, who decides. */
static void print_failover(PGconn *pg)
{
    dlb_env_roles_t roles;
    char errstr[1024], until[32];

    if (dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr))) {
        printf("failover:      unknown: %s\n", errstr);
        return;
    }
    printf("failover:      %s (real %s, standby %s)\n",
           roles.pinned        ? "off: pinned by a manual promotion ('env unpin')"
           : !roles.standby[0] ? "off: no standby ('env standby NAME')"
           : !roles.real[0]    ? "off: no environment is real"
                               : "armed",
           roles.real[0] ? roles.real : "none", roles.standby[0] ? roles.standby : "none");
    fmt_ms(roles.lease_until_ms, until, sizeof(until));
    if (roles.lease_holder[0])
        printf("decider:       %s, lease %s %s UTC\n", roles.lease_holder,
               roles.lease_live ? "until" : "ran out at", until);
    else
        printf("decider:       none yet (a running relay takes the lease)\n");
}

static int act_show(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_env_t env;
    PGconn *pg = NULL;
    char errstr[1024], created[32], changed[32], dropped[32], *settings;
    int rc = 1;

    if (a->opt['f'] && strcmp(a->opt['f'], "text") && strcmp(a->opt['f'], "conf")) {
        fprintf(stderr, "env: --format is text or conf\n");
        return 2;
    }
    if (reg_open(a, conf, &pg))
        return 1;
    if (dlb_env_get_any(pg, a->pos[0], &env, errstr, sizeof(errstr))) {
        fprintf(stderr, "env show: %s\n", errstr);
        PQfinish(pg);
        return 1;
    }
    if (a->opt['f'] && !strcmp(a->opt['f'], "conf")) {
        rc = print_conf(&env);
        goto out;
    }
    if (dlb_env_json_mask(env.settings, &settings)) {
        fprintf(stderr, "env show: settings of %s: not JSON or out of memory\n", env.name);
        goto out;
    }
    fmt_ms(env.created_ms, created, sizeof(created));
    fmt_ms(env.changed_ms, changed, sizeof(changed));
    fmt_ms(env.dropped_ms, dropped, sizeof(dropped));
    printf("name:          %s\nkind:          %s%s\nstandby:       %s\noptimizer set: %s\n"
           "description:   %s\nsettings:      %s\ncreated (UTC): %s\nchanged (UTC): %s\n"
           "dropped (UTC): %s\n",
           env.name, dlb_env_kind_name(env.kind), env.dropped_ms ? " (dropped)" : "",
           env.standby ? "yes: automatic failover promotes it" : "no", env.optimizer_set,
           env.description, settings, created, changed, dropped);
    free(settings);
    print_failover(pg);
    print_resources(conf, pg, env.name);
    rc = 0;
out:
    dlb_env_clear(&env);
    PQfinish(pg);
    return rc;
}

static int purge(const dlb_conf_t *conf, PGconn *pg, const char *name)
{
    dlb_env_purged_t p;

    printf("waiting %d ms for relays to stop relaying to %s\n", 2 * conf->relay_refresh_ms, name);
    fflush(stdout);
    dlb_env_purge(conf, pg, name, ADMIN_TIMEOUT_MS, &p);
    if (p.topics_err[0])
        fprintf(stderr, "env drop: topics: %s\n", p.topics_err);
    else
        printf("deleted %d topic(s) %s.*\n", p.topics, name);
    if (p.schema_err[0])
        fprintf(stderr, "env drop: %s\n", p.schema_err);
    else
        printf("dropped PostgreSQL schema %s\n", name);
    if (p.redis_err[0])
        fprintf(stderr, "env drop: %s\n", p.redis_err);
    else
        printf("deleted %lld Redis key(s) %s:*\n", (long long)p.keys, name);
    return p.topics_err[0] || p.schema_err[0] || p.redis_err[0];
}

static int act_drop(const cli_args_t *a, const dlb_conf_t *conf)
{
    PGconn *pg = NULL;
    char errstr[1024];
    int rc = 1;

    if (reg_open(a, conf, &pg))
        return 1;
    if (dlb_env_drop(pg, a->pos[0], a->opt['p'] != NULL, by_user(), errstr, sizeof(errstr))) {
        fprintf(stderr, "env drop: %s\n", errstr);
        goto out;
    }
    printf("dropped environment %s\n", a->pos[0]);
    rc = a->opt['p'] ? purge(conf, pg, a->pos[0]) : 0;
out:
    PQfinish(pg);
    return rc;
}

/* Exit status of env promote when the switch is recorded but its markers
 * are not in the front's topics: not 1 (nothing changed, try again), not 0
 * (in effect at the front). */
#define PROMOTE_UNMARKED 3

/* Write the markers of switch id (name became real; was: the former real
 * one, NULL when unknown). @returns 0 when they are in the front's topics,
 * written here or meanwhile by the failover decider, else PROMOTE_UNMARKED
 * after saying so. */
static int promote_mark(const dlb_conf_t *conf, PGconn *pg, int64_t id, const char *name,
                        const char *was)
{
    dlb_env_roles_t roles;
    char errstr[1024], sub[512], who[256];
    int64_t marked = 0;
    int written = 0;

    /* The switch takes effect at the front at its markers: the requests
     * after them in each partition are the new real one's to answer. */
    if (!dlb_switch_mark(conf, pg, id, name, by_user(), &written, errstr, sizeof(errstr))) {
        printf("switch %lld marked in %d partition(s) of %s.*: the requests after the markers "
               "are %s's to answer\n",
               (long long)id, written, conf->env, name);
        return 0;
    }
    if (written > 0) { /* in Kafka, only the mark row is missing */
        fprintf(stderr,
                "env promote: switch %lld marked in %d partition(s) of %s.*, but not recorded "
                "in the history (%s): the relay holding the failover lease marks it again\n",
                (long long)id, written, conf->env, errstr);
        return 0;
    }
    /* The decider writes the markers of a switch 10 s old, and giving up on
     * Kafka takes longer than that: it may have done it meanwhile. */
    if (!dlb_env_mark_last(pg, conf->env, &marked, sub, sizeof(sub)) && marked >= id) {
        printf("switch %lld marked in %s.* by the relay holding the failover lease (here: %s): "
               "the requests after the markers are %s's to answer\n",
               (long long)id, conf->env, errstr, name);
        return 0;
    }
    if (dlb_env_roles_get(pg, &roles, sub, sizeof(sub)))
        snprintf(who, sizeof(who), "The relay that holds the failover lease writes them");
    else if (roles.lease_holder[0] && roles.lease_live)
        snprintf(who, sizeof(who),
                 "The relay holding the failover lease (%.128s) writes them at its next check",
                 roles.lease_holder);
    else
        snprintf(who, sizeof(who),
                 "No relay holds the failover lease now: the first one to take it writes them");
    fprintf(stderr,
            "env promote: switch %lld is recorded (%s is real in the registry), but its markers "
            "are not in %s.*: %s. Until they are, %s answers the front. %s; or run 'dlbrain env "
            "promote %s' again once Kafka is reachable\n",
            (long long)id, name, conf->env, errstr,
            was && *was ? was
            : was       ? "no environment"
                        : "the former real environment",
            who, name);
    return PROMOTE_UNMARKED;
}

/* name is real already: the markers of the switch that made it real, when
 * none reached the front (a promote that could not reach Kafka). */
static int promote_mark_missing(const dlb_conf_t *conf, PGconn *pg, const char *name)
{
    dlb_env_roles_t roles;
    char errstr[1024];
    int64_t marked = 0;

    if (dlb_env_roles_get(pg, &roles, errstr, sizeof(errstr)) ||
        dlb_env_mark_last(pg, conf->env, &marked, errstr, sizeof(errstr))) {
        fprintf(stderr, "env promote: looking for unmarked switches: %s\n", errstr);
        return 1;
    }
    if (!roles.last_switch_id || strcmp(roles.last_switch_env, name) ||
        marked >= roles.last_switch_id)
        return 0;
    printf("switch %lld (%s real) has no markers in %s.*: writing them\n",
           (long long)roles.last_switch_id, name, conf->env);
    return promote_mark(conf, pg, roles.last_switch_id, name, NULL);
}

static int act_promote(const cli_args_t *a, const dlb_conf_t *conf)
{
    PGconn *pg = NULL;
    char errstr[1024], was[DLB_ENV_NAME_MAX + 1];
    int64_t id = 0;
    int rc = 1;

    if (reg_open(a, conf, &pg))
        return 1;
    if (dlb_env_promote(pg, a->pos[0], !a->opt['P'], by_user(), was, sizeof(was), &id, errstr,
                        sizeof(errstr))) {
        fprintf(stderr, "env promote: %s\n", errstr);
        goto out;
    }
    printf("environment %s is real%s%s%s%s\n", a->pos[0], was[0] ? " (" : "", was,
           was[0] ? " is virtual now)" : "",
           a->opt['P'] ? "" : "; pinned: automatic failover off until 'dlbrain env unpin'");
    rc =
        id ? promote_mark(conf, pg, id, a->pos[0], was) : promote_mark_missing(conf, pg, a->pos[0]);
out:
    PQfinish(pg);
    return rc;
}

static int act_standby(const cli_args_t *a, const dlb_conf_t *conf)
{
    PGconn *pg = NULL;
    char errstr[1024], was[DLB_ENV_NAME_MAX + 1];
    const char *name = a->pos_cnt ? a->pos[0] : NULL;
    int rc = 1;

    if (!name == !a->opt['C']) {
        fprintf(stderr, "env standby: NAME or --clear, one of them\n");
        return 2;
    }
    if (reg_open(a, conf, &pg))
        return 1;
    if (dlb_env_standby_set(pg, name, by_user(), was, sizeof(was), errstr, sizeof(errstr))) {
        fprintf(stderr, "env standby: %s\n", errstr);
        goto out;
    }
    if (name)
        printf("environment %s is the standby%s%s%s\n", name, was[0] ? " (was " : "", was,
               was[0] ? ")" : "");
    else
        printf("no standby%s%s%s: automatic failover off\n", was[0] ? " (was " : "", was,
               was[0] ? ")" : "");
    rc = 0;
out:
    PQfinish(pg);
    return rc;
}

static int pin_set(const cli_args_t *a, const dlb_conf_t *conf, int pinned)
{
    PGconn *pg = NULL;
    char errstr[1024];
    int rc = 1;

    if (reg_open(a, conf, &pg))
        return 1;
    if (dlb_env_pin_set(pg, pinned, by_user(), errstr, sizeof(errstr))) {
        fprintf(stderr, "env %s: %s\n", a->action, errstr);
        goto out;
    }
    printf(pinned ? "pinned: automatic failover off until 'dlbrain env unpin'\n"
                  : "unpinned: automatic failover on (with a standby chosen)\n");
    rc = 0;
out:
    PQfinish(pg);
    return rc;
}

static int act_pin(const cli_args_t *a, const dlb_conf_t *conf)
{
    return pin_set(a, conf, 1);
}

static int act_unpin(const cli_args_t *a, const dlb_conf_t *conf)
{
    return pin_set(a, conf, 0);
}

static int act_history(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_env_change_t *ch = NULL;
    PGconn *pg = NULL;
    char errstr[1024], at[32];
    size_t n = 0;

    if (reg_open(a, conf, &pg))
        return 1;
    if (dlb_env_history(pg, a->pos_cnt ? a->pos[0] : NULL, &ch, &n, errstr, sizeof(errstr))) {
        fprintf(stderr, "env history: %s\n", errstr);
        PQfinish(pg);
        return 1;
    }
    PQfinish(pg);
    printf("%-6s  %-19s  %-9s  %-20s  %-12s  %s\n", "ID", "AT(UTC)", "ACTION", "NAME", "BY",
           "DETAIL");
    for (size_t i = 0; i < n; i++) {
        char *detail;

        /* A create row's detail holds the settings, secrets too if stored before
         * they were refused. */
        if (dlb_env_json_mask(ch[i].detail, &detail)) {
            fprintf(stderr, "env history: detail of row %lld: not JSON or out of memory\n",
                    (long long)ch[i].id);
            dlb_env_history_free(ch, n);
            return 1;
        }
        fmt_ms(ch[i].at_ms, at, sizeof(at));
        printf("%-6lld  %-19s  %-9s  %-20s  %-12s  %s\n", (long long)ch[i].id, at, ch[i].action,
               ch[i].name, ch[i].by_user, detail);
        free(detail);
    }
    dlb_env_history_free(ch, n);
    return 0;
}

/* Whether an evaluation may start (dlb_env_settle). */
static int act_settle(const cli_args_t *a, const dlb_conf_t *conf)
{
    dlb_env_settled_t st;
    char errstr[1024], *end;
    long long expect = -1;
    double timeout_s = 300;

    if (a->opt['n'] &&
        ((expect = strtoll(a->opt['n'], &end, 10)) < 0 || *end || end == a->opt['n'])) {
        fprintf(stderr, "env settle: --events: '%s' is not a non-negative integer\n", a->opt['n']);
        return 2;
    }
    if (a->opt['t'] &&
        (!((timeout_s = strtod(a->opt['t'], &end)) >= 0) || *end || end == a->opt['t'])) {
        fprintf(stderr, "env settle: --timeout: '%s' is not a number of seconds\n", a->opt['t']);
        return 2;
    }
    if (dlb_env_settle(conf, a->pos[0], dlb_optimizer_inputs, expect, (int64_t)(timeout_s * 1000.0),
                       ADMIN_TIMEOUT_MS, &cli_stop, &st, errstr, sizeof(errstr))) {
        fprintf(stderr, "env settle: %s\n", errstr);
        return 1;
    }
    printf("%s: %lld events stored, consumer group %s lag 0 (%.1f s)\n", a->pos[0],
           (long long)st.stored, st.group, (double)st.waited_ms / 1000.0);
    return 0;
}

int cmd_env_main(int argc, char **argv)
{
    return cli_actions_main(&cmd_env_command, argc, argv);
}
