/* The Redis client under the job-state cache (state_redis.c) and the
 * cluster view: one connection, reopened after a loss, commands pipelined
 * and their replies read in step, errors classed transient or not. */
#include "cache_redis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis.h>

#include "cache_redis_internal.h"
#include "err.h"
#include "lru.h"
#include "metrics.h"

/* The context is unusable after an I/O error or a timeout (a reply may still
 * be in flight): drop it, the next call connects afresh. */
int dlb_redis_lost(dlb_redis_t *r, const char *what, char *errstr, size_t errstr_size)
{
    int err = dlb_seterr(errstr, errstr_size, DLB_ERR_TRANSIENT, "redis %s:%d: %s: %s", r->host,
                         r->port, what, r->c && r->c->errstr[0] ? r->c->errstr : "connection lost");

    if (r->c)
        redisFree(r->c);
    r->c = NULL;
    return err;
}

/* Error replies that mean "not now" rather than "wrong". */
static int reply_err_class(const char *msg)
{
    static const char *const transient[] = {"LOADING",  "BUSY",        "MASTERDOWN", "TRYAGAIN",
                                            "READONLY", "CLUSTERDOWN", "NOAUTH",     NULL};

    for (const char *const *t = transient; *t; t++)
        if (!strncmp(msg, *t, strlen(*t)))
            return DLB_ERR_TRANSIENT;
    /* A key of one job holds another type (written by hand, or by an older
     * build whose keys could collide): that job's cache is wrong, Redis is
     * not down (wrong_type() drops that job's keys alone). */
    if (!strncmp(msg, "WRONGTYPE", 9))
        return DLB_ERR_INVALID;
    return DLB_ERR_GENERIC;
}

/* First error reply in rep, looking inside an EXEC's array. */
static const redisReply *reply_error(const redisReply *rep)
{
    if (rep->type == REDIS_REPLY_ERROR)
        return rep;
    if (rep->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < rep->elements; i++)
            if (rep->element[i] && rep->element[i]->type == REDIS_REPLY_ERROR)
                return rep->element[i];
    return NULL;
}

/* One set-up command on a fresh connection; a refusal closes the connection
 * and returns the class given for it. */
static int redis_setup(dlb_redis_t *r, int refused, const char *what, char *errstr,
                       size_t errstr_size, const char *fmt, ...)
{
    redisReply *rep;
    va_list ap;

    va_start(ap, fmt);
    rep = redisvCommand(r->c, fmt, ap);
    va_end(ap);
    if (!rep)
        return dlb_redis_lost(r, what, errstr, errstr_size);
    if (rep->type == REDIS_REPLY_ERROR) {
        dlb_seterr(errstr, errstr_size, refused, "redis %s:%d: %s: %s", r->host, r->port, what,
                   rep->str);
        freeReplyObject(rep);
        redisFree(r->c);
        r->c = NULL;
        return refused;
    }
    freeReplyObject(rep);
    return 0;
}

static int redis_open(dlb_redis_t *r, char *errstr, size_t errstr_size)
{
    struct timeval tv = {r->timeout_ms / 1000, (r->timeout_ms % 1000) * 1000};
    int err;

    r->c = redisConnectWithTimeout(r->host, r->port, tv);
    if (!r->c)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "redis: out of memory");
    if (r->c->err)
        return dlb_redis_lost(r, "connect", errstr, errstr_size);
    if (redisSetTimeout(r->c, tv) != REDIS_OK)
        return dlb_redis_lost(r, "setting the timeout", errstr, errstr_size);
    /* AUTH refused is transient by contract: a password rotation in progress
     * heals. Without a password AUTH is never sent: PING proves the server
     * serves us (NOAUTH when it wants a password, LOADING while it starts).
     * A database that does not exist is a configuration error. */
    if (r->password[0] && (err = redis_setup(r, DLB_ERR_TRANSIENT, "AUTH", errstr, errstr_size,
                                             "AUTH %s", r->password)))
        return err;
    if ((err = redis_setup(r, DLB_ERR_TRANSIENT, "PING", errstr, errstr_size, "PING")))
        return err;
    if (r->db != 0 &&
        (err = redis_setup(r, DLB_ERR_CONF, "SELECT", errstr, errstr_size, "SELECT %d", r->db)))
        return err;
    return 0;
}

int dlb_redis_ensure(dlb_redis_t *r, char *errstr, size_t errstr_size)
{
    return r->c ? 0 : redis_open(r, errstr, errstr_size);
}

void dlb_redis_decoded_free(void *value)
{
    dlb_event_clear(value);
    free(value);
}

int dlb_redis_connect(dlb_redis_t **out, const dlb_conf_t *conf, const dlb_catalog_t *cat,
                      char *errstr, size_t errstr_size)
{
    dlb_redis_t *r;
    int err;

    *out = NULL;
    if (!(r = calloc(1, sizeof(*r))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    r->cat = cat;
    snprintf(r->prefix, sizeof(r->prefix), "%s", conf->env);
    snprintf(r->host, sizeof(r->host), "%s", conf->redis_host);
    snprintf(r->password, sizeof(r->password), "%s", conf->redis_password);
    r->port = conf->redis_port;
    r->db = conf->redis_db;
    r->timeout_ms = conf->redis_timeout_ms > 0 ? conf->redis_timeout_ms : 2000;
    r->window_size = conf->window_size > 0 ? conf->window_size : 60;
    r->folded_max =
        conf->batch_size > DLB_REDIS_FOLDED_MIN / 4 ? 4L * conf->batch_size : DLB_REDIS_FOLDED_MIN;
    if (conf->state_cache_bytes > 0 &&
        !(r->decoded = dlb_lru_new((size_t)conf->state_cache_bytes, dlb_redis_decoded_free))) {
        dlb_redis_destroy(r);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    if ((err = redis_open(r, errstr, errstr_size))) {
        dlb_redis_destroy(r);
        return err;
    }
    *out = r;
    return 0;
}

void dlb_redis_destroy(dlb_redis_t *r)
{
    if (!r)
        return;
    if (r->c)
        redisFree(r->c);
    dlb_lru_free(r->decoded);
    /* The password should not outlive the handle in freed memory. */
    memset(r->password, 0, sizeof(r->password));
    free(r);
}

/* ---- pipelining ---------------------------------------------------------- */

/* Drop the connection with commands still queued in its output buffer, so
 * half a pipeline (or half a MULTI) is never sent by a later call. */
void dlb_redis_abandon(dlb_redis_t *r)
{
    if (r->c)
        redisFree(r->c);
    r->c = NULL;
}

/* Queue one command; *n counts the replies to read. */
int dlb_redis_append(dlb_redis_t *r, int *n, const char *fmt, ...)
{
    va_list ap;
    int rc;

    if (!r->c)
        return DLB_ERR_NOMEM;
    va_start(ap, fmt);
    rc = redisvAppendCommand(r->c, fmt, ap);
    va_end(ap);
    if (rc != REDIS_OK) {
        dlb_redis_abandon(r);
        return DLB_ERR_NOMEM;
    }
    (*n)++;
    return 0;
}

int dlb_redis_appendv(dlb_redis_t *r, int *n, int argc, const char **argv, const size_t *lens)
{
    if (!r->c || redisAppendCommandArgv(r->c, argc, argv, lens) != REDIS_OK) {
        dlb_redis_abandon(r);
        return DLB_ERR_NOMEM;
    }
    (*n)++;
    return 0;
}

void dlb_redis_replies_free(redisReply **rep, int n)
{
    for (int i = 0; i < n; i++)
        if (rep[i])
            freeReplyObject(rep[i]);
}

/* Send the queued commands and read their n replies into rep[0..n-1] (or
 * discard them when rep is NULL). Every reply is read even after an error
 * reply, so the connection stays in step. */
/* dlbrain_redis_call_duration_seconds: one round trip (a pipeline of
 * commands sent and all their replies read); per thread, so no lock. */
static _Thread_local dlb_metric_slot_t redis_slot;

int dlb_redis_collect(dlb_redis_t *r, int n, redisReply **rep, const char *what, char *errstr,
                      size_t errstr_size)
{
    double t0 = dlb_metric_now();
    int err = 0;

    for (int i = 0; i < n; i++) {
        void *p = NULL;
        const redisReply *e;

        if (redisGetReply(r->c, &p) != REDIS_OK || !p) {
            if (rep)
                dlb_redis_replies_free(rep, i);
            return dlb_redis_lost(r, what, errstr, errstr_size);
        }
        if (!err && (e = reply_error(p)))
            err = dlb_seterr(errstr, errstr_size, reply_err_class(e->str), "redis %s:%d: %s: %s",
                             r->host, r->port, what, e->str);
        if (rep)
            rep[i] = p;
        else
            freeReplyObject(p);
    }
    dlb_metric_observe_since(
        dlb_metric_slot_histogram(&redis_slot, "dlbrain_redis_call_duration_seconds",
                                  "Redis round trips (pipelined commands and their replies)", "",
                                  NULL),
        t0);
    if (err && rep) {
        dlb_redis_replies_free(rep, n);
        memset(rep, 0, (size_t)n * sizeof(*rep));
    }
    return err;
}

int dlb_redis_unlink_matching(dlb_redis_t *r, const char *glob, int64_t *deleted, char *errstr,
                              size_t errstr_size)
{
    char cursor[32] = "0", match[160];
    redisReply *rep;
    int err;

    if (deleted)
        *deleted = 0;
    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    snprintf(match, sizeof(match), "%s:%s", r->prefix, glob);
    do {
        if (!(rep = redisCommand(r->c, "SCAN %s MATCH %s COUNT 1000", cursor, match)))
            return dlb_redis_lost(r, "SCAN", errstr, errstr_size);
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
            rep->element[0]->type != REDIS_REPLY_STRING ||
            rep->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(rep);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                              "redis %s:%d: SCAN: unexpected reply", r->host, r->port);
        }
        snprintf(cursor, sizeof(cursor), "%s", rep->element[0]->str);
        /* UNLINK frees the values in the background: a big purge does not
         * stall the server for other clients. */
        for (size_t i = 0; i < rep->element[1]->elements; i++) {
            const redisReply *k = rep->element[1]->element[i];
            redisAppendCommand(r->c, "UNLINK %b", k->str, (size_t)k->len);
        }
        for (size_t i = 0; i < rep->element[1]->elements; i++) {
            redisReply *d = NULL;
            if (redisGetReply(r->c, (void **)&d) != REDIS_OK) {
                freeReplyObject(rep);
                return dlb_redis_lost(r, "UNLINK", errstr, errstr_size);
            }
            if (deleted && d && d->type == REDIS_REPLY_INTEGER)
                *deleted += d->integer;
            freeReplyObject(d);
        }
        freeReplyObject(rep);
    } while (strcmp(cursor, "0"));
    return 0;
}

int dlb_redis_invalidate_all(dlb_redis_t *r, char *errstr, size_t errstr_size)
{
    return dlb_redis_unlink_matching(r, "job:*", NULL, errstr, errstr_size);
}

int dlb_redis_get(dlb_redis_t *r, const char *key, char **val, size_t *len, int *found,
                  char *errstr, size_t errstr_size)
{
    redisReply *rep = NULL;
    int n = 0, err;

    *val = NULL;
    *len = 0;
    *found = 0;
    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    if (dlb_redis_append(r, &n, "GET %s:%s", r->prefix, key))
        return dlb_redis_lost(r, "GET", errstr, errstr_size);
    if ((err = dlb_redis_collect(r, n, &rep, "GET", errstr, errstr_size)))
        return err;
    if (rep->type == REDIS_REPLY_STRING) {
        if (!(*val = malloc(rep->len + 1))) {
            freeReplyObject(rep);
            return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
        }
        memcpy(*val, rep->str, rep->len);
        (*val)[rep->len] = '\0';
        *len = rep->len;
        *found = 1;
    }
    freeReplyObject(rep);
    return 0;
}

int dlb_redis_set(dlb_redis_t *r, const char *key, const char *val, size_t len, int ttl_s,
                  char *errstr, size_t errstr_size)
{
    int n = 0, err;

    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    if (dlb_redis_append(r, &n, "SET %s:%s %b EX %d", r->prefix, key, val, len, ttl_s))
        return dlb_redis_lost(r, "SET", errstr, errstr_size);
    return dlb_redis_collect(r, n, NULL, "SET", errstr, errstr_size);
}

int dlb_redis_hset(dlb_redis_t *r, const char *key, const char *field, const char *val, size_t len,
                   int ttl_s, char *errstr, size_t errstr_size)
{
    int n = 0, err;

    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    if (dlb_redis_append(r, &n, "HSET %s:%s %s %b", r->prefix, key, field, val, len) ||
        dlb_redis_append(r, &n, "EXPIRE %s:%s %d", r->prefix, key, ttl_s))
        return dlb_redis_lost(r, "HSET", errstr, errstr_size);
    return dlb_redis_collect(r, n, NULL, "HSET", errstr, errstr_size);
}

int dlb_redis_hdel(dlb_redis_t *r, const char *key, const char *field, char *errstr,
                   size_t errstr_size)
{
    int n = 0, err;

    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    if (dlb_redis_append(r, &n, "HDEL %s:%s %s", r->prefix, key, field))
        return dlb_redis_lost(r, "HDEL", errstr, errstr_size);
    return dlb_redis_collect(r, n, NULL, "HDEL", errstr, errstr_size);
}

int dlb_redis_hgetall(dlb_redis_t *r, const char *key, size_t max_fields, dlb_redis_field_cb cb,
                      void *opaque, char *errstr, size_t errstr_size)
{
    redisReply *rep = NULL;
    int n = 0, err;

    if ((err = dlb_redis_ensure(r, errstr, errstr_size)))
        return err;
    /* HLEN first: a hash past max_fields is refused before its reply is
     * read into memory. */
    if (dlb_redis_append(r, &n, "HLEN %s:%s", r->prefix, key))
        return dlb_redis_lost(r, "HLEN", errstr, errstr_size);
    if ((err = dlb_redis_collect(r, n, &rep, "HLEN", errstr, errstr_size)))
        return err;
    if (rep->type == REDIS_REPLY_INTEGER && (unsigned long long)rep->integer > max_fields) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                         "redis %s:%d: %s:%s has %lld fields, more than %zu", r->host, r->port,
                         r->prefix, key, rep->integer, max_fields);
        freeReplyObject(rep);
        return err;
    }
    freeReplyObject(rep);
    rep = NULL;
    n = 0;
    if (dlb_redis_append(r, &n, "HGETALL %s:%s", r->prefix, key))
        return dlb_redis_lost(r, "HGETALL", errstr, errstr_size);
    if ((err = dlb_redis_collect(r, n, &rep, "HGETALL", errstr, errstr_size)))
        return err;
    if (rep->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < rep->elements && !err; i += 2) {
            const redisReply *f = rep->element[i], *v = rep->element[i + 1];

            if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING)
                err = cb(opaque, f->str, v->str, v->len);
        }
    freeReplyObject(rep);
    return err ? dlb_seterr(errstr, errstr_size, err, "out of memory reading %s", key) : 0;
}
