/* Syncing a directory of rule files into PostgreSQL (config_sync.h). */
#include "config_sync.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "log.h"
#include "rules.h"
#include "vec.h"

/* The rule files of a directory: those read (as named, and their real path),
 * and those skipped with why. */
typedef struct files {
    char **paths; /* dir/name: how the files are named in errors and rules */
    char **reals; /* the real path read, inside the directory's real path */
    size_t cnt, cap, rcap;
    char **skipped; /* "dir/name: why; skipped", for a warning */
    size_t skipped_cnt, skipped_cap;
} files_t;

static void files_free(files_t *f)
{
    for (size_t i = 0; i < f->cnt; i++) {
        free(f->paths[i]);
        free(f->reals[i]);
    }
    for (size_t i = 0; i < f->skipped_cnt; i++)
        free(f->skipped[i]);
    free(f->paths);
    free(f->reals);
    free(f->skipped);
    memset(f, 0, sizeof(*f));
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);

    return n > m && !strcmp(s + n - m, suf);
}

/* Sorts paths and reals together by path. */
typedef struct pair {
    char *path, *real;
} pair_t;

static int cmp_pair(const void *a, const void *b)
{
    return strcmp(((const pair_t *)a)->path, ((const pair_t *)b)->path);
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

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "an unknown kind of file";
}

/* Why the entry path (real path real, or NULL when it does not resolve) is
 * not read, or NULL when it is: only a regular file inside the directory
 * (real path rdir). A ConfigMap's keys are links into its ..data directory,
 * which stay inside; a link out of it could make the watcher read any file
 * the process may read (a secret), and a FIFO would block the read forever. */
static const char *refusal(const char *rdir, const char *real, int resolve_errno, char *why,
                           size_t size)
{
    size_t n = strlen(rdir);
    struct stat st;

    if (!real) {
        snprintf(why, size, "cannot be resolved (%s)", strerror(resolve_errno));
        return why;
    }
    /* "/" as the directory: every real path is inside it. */
    if (strncmp(real, rdir, n) || (n > 1 && real[n] != '/' && real[n]))
        return "a link to a file outside the directory";
    if (stat(real, &st)) {
        snprintf(why, size, "cannot be read (%s)", strerror(errno));
        return why;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, size, "%s, not a regular file", kind_of(st.st_mode));
        return why;
    }
    return NULL;
}

static int add_skipped(files_t *f, const char *path, const char *why)
{
    if (dlb_vec_reserve((void **)&f->skipped, &f->skipped_cap, f->skipped_cnt + 1,
                        sizeof(*f->skipped)) ||
        asprintf(&f->skipped[f->skipped_cnt], "%s: %s; skipped", path, why) < 0)
        return DLB_ERR_NOMEM;
    f->skipped_cnt++;
    return 0;
}

/* path is read from real: taken over by f (freed on error). */
static int add_file(files_t *f, char *path, char *real)
{
    if (dlb_vec_reserve((void **)&f->paths, &f->cap, f->cnt + 1, sizeof(*f->paths)) ||
        dlb_vec_reserve((void **)&f->reals, &f->rcap, f->cnt + 1, sizeof(*f->reals))) {
        free(path);
        free(real);
        return DLB_ERR_NOMEM;
    }
    f->paths[f->cnt] = path;
    f->reals[f->cnt++] = real;
    return 0;
}

/* One *.yaml or *.yml entry of dir, read or skipped. */
static int list_entry(const char *dir, const char *rdir, const char *name, files_t *out)
{
    char *path = NULL, *real, why[256];
    const char *no;
    int e;

    if (asprintf(&path, "%s/%s", dir, name) < 0)
        return DLB_ERR_NOMEM;
    real = realpath(path, NULL);
    e = errno;
    if ((no = refusal(rdir, real, e, why, sizeof(why)))) {
        e = add_skipped(out, path, no);
        free(path);
        free(real);
        return e;
    }
    return add_file(out, path, real);
}

/* The rule files of dir, sorted by name, those skipped, and a fingerprint of
 * the names of both and the sizes, modification times and inodes of those
 * read (links followed: the kubelet's links point at the current
 * generation). */
static int list_files(const char *dir, files_t *out, uint64_t *fp, char *errstr, size_t size)
{
    DIR *d;
    struct dirent *e;
    uint64_t h = 1469598103934665603ULL;
    char *rdir;
    pair_t *pairs = NULL;
    int err = 0;

    memset(out, 0, sizeof(*out));
    if (!(rdir = realpath(dir, NULL)) || !(d = opendir(rdir))) {
        err = errno;
        free(rdir);
        return dlb_seterr(errstr, size, err == ENOENT ? DLB_ERR_NOTFOUND : DLB_ERR_CONF, "%s: %s",
                          dir, strerror(err));
    }
    while ((e = readdir(d)) && !err) {
        if (e->d_name[0] == '.' ||
            !(has_suffix(e->d_name, ".yaml") || has_suffix(e->d_name, ".yml")))
            continue;
        err = list_entry(dir, rdir, e->d_name, out);
    }
    closedir(d);
    free(rdir);
    if (!err && out->cnt && !(pairs = malloc(out->cnt * sizeof(*pairs))))
        err = DLB_ERR_NOMEM;
    if (err) {
        files_free(out);
        return dlb_seterr(errstr, size, err, "out of memory");
    }
    /* qsort(NULL, 0, ...) is undefined */
    if (out->cnt) {
        for (size_t i = 0; i < out->cnt; i++)
            pairs[i] = (pair_t){out->paths[i], out->reals[i]};
        qsort(pairs, out->cnt, sizeof(*pairs), cmp_pair);
        for (size_t i = 0; i < out->cnt; i++) {
            out->paths[i] = pairs[i].path;
            out->reals[i] = pairs[i].real;
        }
    }
    free(pairs);
    if (out->skipped_cnt)
        qsort(out->skipped, out->skipped_cnt, sizeof(*out->skipped), cmp_str);
    for (size_t i = 0; i < out->cnt; i++) {
        struct stat st;

        h = fnv(h, out->paths[i], strlen(out->paths[i]) + 1);
        h = fnv(h, out->reals[i], strlen(out->reals[i]) + 1);
        if (stat(out->reals[i], &st) == 0) {
            h = fnv(h, &st.st_size, sizeof(st.st_size));
            h = fnv(h, &st.st_mtim, sizeof(st.st_mtim));
            h = fnv(h, &st.st_ino, sizeof(st.st_ino));
        }
    }
    for (size_t i = 0; i < out->skipped_cnt; i++)
        h = fnv(h, out->skipped[i], strlen(out->skipped[i]) + 1);
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
    /* Once per change of the directory, as a refusal is reported. */
    for (size_t i = 0; i < f.skipped_cnt; i++)
        dlb_warn("config watch: %s", f.skipped[i]);
    if (f.cnt == 0) {
        /* A mount not populated yet looks the same: never wipe every rule
         * because of it ('dlbrain config apply' of an empty file does that). */
        s->seen = fp;
        *result = DLB_SYNC_REFUSED;
        if (f.skipped_cnt)
            dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                       "%s: no *.yaml or *.yml files to read (%zu skipped); nothing synced", s->dir,
                       f.skipped_cnt);
        else
            dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                       "%s: no *.yaml or *.yml files; nothing synced", s->dir);
        goto out;
    }
    /* The real paths, which hold no link: one swapped in since is refused. */
    lerr = dlb_rules_load_files_as((const char *const *)f.reals, (const char *const *)f.paths,
                                   f.cnt, DLB_RULES_LOAD_NOFOLLOW, &rules, errstr, errstr_size);
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
