/* Syncing a directory of rule files into PostgreSQL (config_sync.h). */
#include "config_sync.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "rules.h"
#include "vec.h"

typedef struct files {
    char **paths;
    size_t cnt, cap;
} files_t;

static void files_free(files_t *f)
{
    for (size_t i = 0; i < f->cnt; i++)
        free(f->paths[i]);
    free(f->paths);
    memset(f, 0, sizeof(*f));
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);

    return n > m && !strcmp(s + n - m, suf);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* FNV-1a over the bytes given, continuing from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The rule files of dir, sorted by name, and a fingerprint of their names,
 * sizes and modification times (links followed: the kubelet's links point at
 * the current generation). */
static int list_files(const char *dir, files_t *out, uint64_t *fp, char *errstr, size_t size)
{
    DIR *d;
    struct dirent *e;
    uint64_t h = 1469598103934665603ULL;
    int err = 0;

    memset(out, 0, sizeof(*out));
    if (!(d = opendir(dir)))
        return dlb_seterr(errstr, size, errno == ENOENT ? DLB_ERR_NOTFOUND : DLB_ERR_CONF, "%s: %s",
                          dir, strerror(errno));
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' ||
            !(has_suffix(e->d_name, ".yaml") || has_suffix(e->d_name, ".yml")))
            continue;
        if (dlb_vec_reserve((void **)&out->paths, &out->cap, out->cnt + 1, sizeof(*out->paths)) ||
            asprintf(&out->paths[out->cnt], "%s/%s", dir, e->d_name) < 0) {
            err = DLB_ERR_NOMEM;
            break;
        }
        out->cnt++;
    }
    closedir(d);
    if (err) {
        files_free(out);
        return dlb_seterr(errstr, size, err, "out of memory");
    }
    if (out->cnt) /* qsort(NULL, 0, ...) is undefined */
        qsort(out->paths, out->cnt, sizeof(*out->paths), cmp_str);
    for (size_t i = 0; i < out->cnt; i++) {
        struct stat st;

        h = fnv(h, out->paths[i], strlen(out->paths[i]) + 1);
        if (stat(out->paths[i], &st) == 0) {
            h = fnv(h, &st.st_size, sizeof(st.st_size));
            h = fnv(h, &st.st_mtim, sizeof(st.st_mtim));
            h = fnv(h, &st.st_ino, sizeof(st.st_ino));
        }
    }
    *fp = h;
    return 0;
}

/* The newest version's rules as canonical JSON without source. */
static int latest_json(dlb_pg_t *pg, char **json, int64_t *version, char *errstr, size_t size)
{
    dlb_rules_t rules = {0};
    int err;

    *json = NULL;
    if ((err = dlb_cfg_load(pg, 0, &rules, version, errstr, size)))
        return err;
    err = dlb_rules_to_json(&rules, DLB_RULES_JSON_NO_SOURCE, json, errstr, size);
    dlb_rules_clear(&rules);
    return err;
}

int dlb_cfg_sync_round(dlb_cfg_sync_t *s, dlb_pg_t *pg, dlb_sync_result_t *result,
                       dlb_cfg_version_t *applied, char *errstr, size_t errstr_size)
{
    files_t f;
    dlb_rules_t rules = {0};
    char *mine = NULL, *theirs = NULL, msg[256], sub[512];
    uint64_t fp, after;
    int64_t latest = 0;
    int err, lerr;

    *result = DLB_SYNC_UNCHANGED;
    memset(applied, 0, sizeof(*applied));
    if ((err = list_files(s->dir, &f, &fp, errstr, errstr_size)))
        return err;
    if (s->seen && fp == s->seen)
        goto out;
    if (f.cnt == 0) {
        /* A mount not populated yet looks the same: never wipe every rule
         * because of it ('dlbrain config apply' of an empty file does that). */
        s->seen = fp;
        *result = DLB_SYNC_REFUSED;
        dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                   "%s: no *.yaml or *.yml files; nothing synced", s->dir);
        goto out;
    }
    lerr = dlb_rules_load_files((const char *const *)f.paths, f.cnt, &rules, errstr, errstr_size);
    files_free(&f);
    /* Changed while we read: take it next round, as a whole. */
    if ((err = list_files(s->dir, &f, &after, sub, sizeof(sub)))) {
        dlb_seterr(errstr, errstr_size, err, "%s", sub);
        goto out;
    }
    if (after != fp)
        goto out;
    if (lerr == DLB_ERR_INVALID) {
        s->seen = fp;
        *result = DLB_SYNC_REFUSED;
        goto out;
    }
    if ((err = lerr))
        goto out;
    if ((err = dlb_rules_to_json(&rules, DLB_RULES_JSON_NO_SOURCE, &mine, errstr, errstr_size)) ||
        (err = latest_json(pg, &theirs, &latest, errstr, errstr_size)))
        goto out;
    if (latest > 0 && !strcmp(mine, theirs)) {
        s->seen = fp;
        s->version = latest;
        applied->version = latest;
        *result = DLB_SYNC_SAME;
        goto out;
    }
    snprintf(msg, sizeof(msg), "synced from %zu file(s) of %s", f.cnt, s->dir);
    {
        char source[256];

        snprintf(source, sizeof(source), "configmap:%s", s->dir);
        if ((err = dlb_cfg_apply(pg, &rules, source, msg, applied, errstr, errstr_size)))
            goto out;
    }
    s->seen = fp;
    s->version = applied->version;
    *result = DLB_SYNC_APPLIED;
out:
    files_free(&f);
    dlb_rules_clear(&rules);
    free(mine);
    free(theirs);
    return err;
}
