#include "k8s_client.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "vec.h"

struct dlb_k8s_req {
    CURL *h;
    struct curl_slist *hdrs;
    char *target; /* path?query, for log lines */
    dlb_k8s_line_cb cb;
    void *opaque;
    char *buf; /* a list's (or any non-200) body, or a watch's unfinished line */
    size_t len, cap;
    size_t lines;
    int mode; /* 0 until the status is known, then BODY or LINES */
    int aborted, line_too_long, body_too_long;
    char errbuf[CURL_ERROR_SIZE];
    char error[CURL_ERROR_SIZE + 64];
};

enum { MODE_UNSET, MODE_BODY, MODE_LINES };

static int reserve(dlb_k8s_req_t *r, size_t extra)
{
    /* At least a 16 KiB buffer: a curl chunk is up to CURL_MAX_WRITE_SIZE. */
    size_t need = r->len + extra + 1 < 16384 ? 16384 : r->len + extra + 1;

    return dlb_vec_reserve((void **)&r->buf, &r->cap, need, 1) ? -1 : 0;
}

/* Hands every complete line in buf to the callback and keeps the rest: the
 * API server writes one JSON object per line, but chunks cut lines anywhere. */
static int deliver_lines(dlb_k8s_req_t *r, size_t from)
{
    size_t start = 0;
    char *nl;

    while ((nl = memchr(r->buf + from, '\n', r->len - from))) {
        size_t n = (size_t)(nl - (r->buf + start));
        *nl = '\0';
        if (n && r->buf[n + start - 1] == '\r')
            r->buf[start + --n] = '\0';
        if (n) {
            r->lines++;
            if (r->cb(r->buf + start, n, r->opaque)) {
                r->aborted = 1;
                return -1;
            }
        }
        start = from = (size_t)(nl - r->buf) + 1;
    }
    if (start) {
        memmove(r->buf, r->buf + start, r->len - start);
        r->len -= start;
    }
    return 0;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *opaque)
{
    dlb_k8s_req_t *r = opaque;
    size_t n = size * nmemb, from;
    long status = 0;

    if (r->mode == MODE_UNSET) {
        curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
        r->mode = r->cb && status == 200 ? MODE_LINES : MODE_BODY;
    }
    if (r->len + n > (r->mode == MODE_LINES ? DLB_K8S_LINE_MAX : DLB_K8S_BODY_MAX)) {
        if (r->mode == MODE_LINES)
            r->line_too_long = 1;
        else
            r->body_too_long = 1;
        return 0; /* ends the transfer with CURLE_WRITE_ERROR */
    }
    if (reserve(r, n))
        return 0;
    from = r->len;
    memcpy(r->buf + r->len, data, n);
    r->len += n;
    r->buf[r->len] = '\0';
    if (r->mode == MODE_LINES && deliver_lines(r, from))
        return 0;
    return n;
}

/* "?k=v&k=v" of the params, values URL-encoded. */
static char *query(CURL *h, const char *path, const char *const *params)
{
    size_t cap = strlen(path) + 1, len;
    char *q, *e;

    for (const char *const *p = params; p && p[0]; p += 2)
        if (p[1])
            cap += strlen(p[0]) + 3 * strlen(p[1]) + 2;
    if (!(q = malloc(cap)))
        return NULL;
    len = (size_t)snprintf(q, cap, "%s", path);
    for (const char *const *p = params; p && p[0]; p += 2) {
        if (!p[1])
            continue;
        if (!(e = curl_easy_escape(h, p[1], 0))) {
            free(q);
            return NULL;
        }
        len += (size_t)snprintf(q + len, cap - len, "%c%s=%s", strchr(q, '?') ? '&' : '?', p[0], e);
        curl_free(e);
    }
    return q;
}

static int set_pem(CURL *h, CURLoption file_opt, CURLoption blob_opt, const dlb_k8s_pem_t *pem)
{
    struct curl_blob blob = {.data = pem->data, .len = pem->len, .flags = CURL_BLOB_COPY};

    if (pem->data)
        return curl_easy_setopt(h, blob_opt, &blob) != CURLE_OK;
    if (pem->file)
        return curl_easy_setopt(h, file_opt, pem->file) != CURLE_OK;
    return 0;
}

/* The Authorization header; the token is wiped from every buffer but curl's. */
static int add_token(dlb_k8s_req_t *r, const dlb_k8s_config_t *cfg, char *errstr, size_t size)
{
    char *token = NULL, *hdr = NULL;
    struct curl_slist *l;
    size_t n;
    int err;

    if ((err = dlb_k8s_config_token(cfg, &token, errstr, size)))
        return err;
    if (!token || !*token) {
        free(token);
        return 0;
    }
    n = strlen(token) + 32;
    if ((hdr = malloc(n)))
        snprintf(hdr, n, "Authorization: Bearer %s", token);
    l = hdr ? curl_slist_append(r->hdrs, hdr) : NULL;
    memset(token, 0, strlen(token));
    free(token);
    if (hdr) {
        memset(hdr, 0, strlen(hdr));
        free(hdr);
    }
    if (!l)
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    r->hdrs = l;
    return 0;
}

static int setup(dlb_k8s_req_t *r, const dlb_k8s_config_t *cfg, const char *url, long timeout_s)
{
    CURL *h = r->h;
    struct curl_slist *l;

    if (!(l = curl_slist_append(r->hdrs, "Accept: application/json")))
        return -1;
    r->hdrs = l;
    return curl_easy_setopt(h, CURLOPT_URL, url) || curl_easy_setopt(h, CURLOPT_HTTPGET, 1L) ||
           curl_easy_setopt(h, CURLOPT_HTTPHEADER, r->hdrs) ||
           curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") ||
           curl_easy_setopt(h, CURLOPT_USERAGENT, "dlbrain-k8s-monitor") ||
           curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data) ||
           curl_easy_setopt(h, CURLOPT_WRITEDATA, r) ||
           curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf) ||
           curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) ||
           curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L) ||
           curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s) ||
           /* a watch may be silent for minutes: keepalives find a dead peer */
           curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) ||
           curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, cfg->insecure ? 0L : 1L) ||
           curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, cfg->insecure ? 0L : 2L) ||
           set_pem(h, CURLOPT_CAINFO, CURLOPT_CAINFO_BLOB, &cfg->ca) ||
           set_pem(h, CURLOPT_SSLCERT, CURLOPT_SSLCERT_BLOB, &cfg->cert) ||
           set_pem(h, CURLOPT_SSLKEY, CURLOPT_SSLKEY_BLOB, &cfg->key);
}

int dlb_k8s_req_new(const dlb_k8s_config_t *cfg, const char *path, const char *const *params,
                    long timeout_s, dlb_k8s_line_cb cb, void *opaque, dlb_k8s_req_t **out,
                    char *errstr, size_t size)
{
    dlb_k8s_req_t *r;
    char *url = NULL;
    size_t n;
    int err;

    *out = NULL;
    /* A missing CA or key file would otherwise surface as a TLS error. */
    if ((err = dlb_k8s_config_check_files(cfg, errstr, size)))
        return err;
    if (!(r = calloc(1, sizeof(*r))))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    r->cb = cb;
    r->opaque = opaque;
    if (!(r->h = curl_easy_init()) || !(r->target = query(r->h, path, params))) {
        err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((err = add_token(r, cfg, errstr, size)))
        goto fail;
    n = strlen(cfg->server) + strlen(r->target) + 1;
    if (!(url = malloc(n))) {
        err = dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
        goto fail;
    }
    snprintf(url, n, "%s%s", cfg->server, r->target);
    if (setup(r, cfg, url, timeout_s)) {
        err = dlb_seterr(errstr, size, DLB_ERR_CONF,
                         "%s: libcurl refused an option (is it built with TLS?)", cfg->source);
        goto fail;
    }
    free(url);
    *out = r;
    return 0;
fail:
    free(url);
    dlb_k8s_req_free(r);
    return err;
}

CURL *dlb_k8s_req_handle(const dlb_k8s_req_t *req)
{
    return req->h;
}

const char *dlb_k8s_req_target(const dlb_k8s_req_t *req)
{
    return req->target;
}

void dlb_k8s_req_result(dlb_k8s_req_t *r, CURLcode rc, dlb_k8s_result_t *res)
{
    memset(res, 0, sizeof(*res));
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &res->status);
    res->lines = r->lines;
    res->aborted = r->aborted;
    res->line_too_long = r->line_too_long;
    if (r->mode == MODE_LINES) {
        res->partial = r->len;
    } else {
        res->body = r->buf ? r->buf : "";
        res->len = r->len;
    }
    if (rc == CURLE_OK || r->aborted)
        r->error[0] = '\0';
    else if (r->line_too_long)
        snprintf(r->error, sizeof(r->error), "a watch line is longer than %zu bytes",
                 DLB_K8S_LINE_MAX);
    else if (r->body_too_long)
        snprintf(r->error, sizeof(r->error), "the response is longer than %zu bytes",
                 DLB_K8S_BODY_MAX);
    else
        snprintf(r->error, sizeof(r->error), "%s",
                 r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
    res->error = r->error;
}

void dlb_k8s_status_message(const char *body, size_t len, char *out, size_t out_size)
{
    cJSON *j = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    size_t i = 0;

    if (!out_size)
        return;
    if (cJSON_IsString(m)) {
        snprintf(out, out_size, "%s", m->valuestring);
    } else {
        /* Not a Status (a proxy's HTML page): its start, printable. */
        for (; body && i < len && i + 1 < out_size && i < 200; i++)
            out[i] = isprint((unsigned char)body[i]) ? body[i] : ' ';
        out[i] = '\0';
    }
    cJSON_Delete(j);
}

void dlb_k8s_req_free(dlb_k8s_req_t *req)
{
    if (!req)
        return;
    if (req->h)
        curl_easy_cleanup(req->h);
    curl_slist_free_all(req->hdrs);
    free(req->target);
    free(req->buf);
    free(req);
}
