#include "env_schemareg.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "clock.h"
#include "env_registry.h"
#include "err.h"
#include "httpd.h"
#include "log.h"
#include "schemareg.h"
#include "vec.h"

typedef struct names {
    char (*v)[DLB_ENV_NAME_MAX + 1];
    size_t cnt;
} names_t;

static int names_add(names_t *n, const char *name, size_t len, char *errstr, size_t errstr_size)
{
    char one[DLB_ENV_NAME_MAX + 1], sub[256];
    char(*slot)[DLB_ENV_NAME_MAX + 1];

    if (len > DLB_ENV_NAME_MAX)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "environment name \"%.*s\" is longer than %d characters", (int)len, name,
                          DLB_ENV_NAME_MAX);
    memcpy(one, name, len);
    one[len] = '\0';
    if (dlb_env_name_check(one, sub, sizeof(sub)))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF, "registry.envs: %s", sub);
    for (size_t i = 0; i < n->cnt; i++)
        if (!strcmp(n->v[i], one))
            return 0;
    if (!(slot = dlb_vec_push((void **)&n->v, &n->cnt, sizeof(*slot))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    memcpy(*slot, one, len + 1);
    return 0;
}

/* registry.envs, split at commas (blanks around a name are dropped). */
static int names_parse(names_t *n, const char *list, char *errstr, size_t errstr_size)
{
    const char *p = list;

    while (*p) {
        size_t len = strcspn(p, ","), b = strspn(p, " \t");
        size_t e = len;
        int err;

        while (e > b && (p[e - 1] == ' ' || p[e - 1] == '\t'))
            e--;
        if (e > b && (err = names_add(n, p + b, e - b, errstr, errstr_size)))
            return err;
        p += len + (p[len] == ',');
    }
    if (!n->cnt)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_CONF,
                          "registry.envs \"%s\" names no environment", list);
    return 0;
}

/* env and the live environments of the registry; an unreachable registry
 * keeps what is served (a warning, once per outage). */
static int names_from_registry(const dlb_conf_t *conf, PGconn **pg, names_t *n, int *warned,
                               char *errstr, size_t errstr_size)
{
    dlb_env_t *envs = NULL;
    size_t cnt = 0;
    char sub[1024];
    int err;

    if ((err = names_add(n, conf->env, strlen(conf->env), errstr, errstr_size)))
        return err;
    if ((err = dlb_env_registry_open(conf->pg_dsn, pg, sub, sizeof(sub))) ||
        (err = dlb_env_list(*pg, &envs, &cnt, sub, sizeof(sub)))) {
        if (!*warned)
            dlb_warn("environment registry: %s; serving the environments known", sub);
        *warned = 1;
        return DLB_ERR_TRANSIENT;
    }
    *warned = 0;
    for (size_t i = 0; i < cnt && !err; i++)
        err = names_add(n, envs[i].name, strlen(envs[i].name), errstr, errstr_size);
    dlb_env_list_free(envs, cnt);
    return err;
}

static int serve_names(dlb_schemareg_t *reg, const names_t *n, size_t *served, char *errstr,
                       size_t errstr_size)
{
    const char **v = calloc(n->cnt ? n->cnt : 1, sizeof(*v));
    int err;

    if (!v)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n->cnt; i++)
        v[i] = n->v[i];
    if (!(err = dlb_schemareg_set_envs(reg, v, n->cnt, errstr, errstr_size))) {
        if (*served != n->cnt)
            dlb_info("serving the subjects of %zu environment(s)", n->cnt);
        *served = n->cnt;
    }
    free(v);
    return err;
}

/* Re-reads the environment registry; what it cannot read stays served. */
static int refresh(const dlb_conf_t *conf, dlb_schemareg_t *reg, PGconn **pg, int *warned,
                   size_t *served, char *errstr, size_t errstr_size)
{
    names_t n = {0};
    int err = names_from_registry(conf, pg, &n, warned, errstr, errstr_size);

    if (!err || (err == DLB_ERR_TRANSIENT && !*served))
        err = serve_names(reg, &n, served, errstr, errstr_size);
    else if (err == DLB_ERR_TRANSIENT)
        err = 0;
    free(n.v);
    return err;
}

int dlb_env_schemareg_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, size_t *envs_served,
                          char *errstr, size_t errstr_size)
{
    dlb_catalog_t *cat = NULL;
    dlb_schemareg_t *reg = NULL;
    dlb_schemareg_server_t *srv = NULL;
    PGconn *pg = NULL;
    names_t fixed = {0};
    char host[256];
    int err, port, bound = 0, warned = 0, dynamic = !conf->registry.envs[0];
    int64_t refresh_at;

    *envs_served = 0;
    if ((err = dlb_httpd_hostport("registry.address", conf->registry.address, host, sizeof(host),
                                  &port, errstr, errstr_size)) ||
        (err = dlb_catalog_new(&cat, errstr, errstr_size)) ||
        (err = dlb_schemareg_new(&reg, cat, errstr, errstr_size)))
        goto out;
    if (dynamic)
        err = refresh(conf, reg, &pg, &warned, envs_served, errstr, errstr_size);
    else if (!(err = names_parse(&fixed, conf->registry.envs, errstr, errstr_size)))
        err = serve_names(reg, &fixed, envs_served, errstr, errstr_size);
    if (err || (err = dlb_schemareg_serve(reg, host, port, &conf->http, &srv, &bound, errstr,
                                          errstr_size)))
        goto out;
    dlb_info("serving the Confluent Schema Registry API (read-only) on "
             "http://%s%s%s:%d/",
             strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", bound);
    refresh_at = dlb_clock_mono_ms() + conf->registry.refresh_ms;
    while (!*stop) {
        poll(NULL, 0, 100);
        if (!dynamic || dlb_clock_mono_ms() < refresh_at)
            continue;
        if ((err = refresh(conf, reg, &pg, &warned, envs_served, errstr, errstr_size)))
            goto out;
        refresh_at = dlb_clock_mono_ms() + conf->registry.refresh_ms;
    }
out:
    dlb_schemareg_server_stop(srv);
    dlb_schemareg_destroy(reg);
    dlb_catalog_destroy(cat);
    if (pg)
        PQfinish(pg);
    free(fixed.v);
    return err;
}
