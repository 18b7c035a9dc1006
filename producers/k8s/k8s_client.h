/* GET requests to the Kubernetes API over libcurl: a list (the body is kept)
 * or a watch (the chunked body is cut into lines, each handed to a callback
 * as it arrives). The caller drives the handles with a curl multi. */
#ifndef DLB_K8S_CLIENT_H
#define DLB_K8S_CLIENT_H

#include <stddef.h>

#include <curl/curl.h>

#include "k8s_config.h"

/* The longest watch line (one object) and list body accepted. */
#define DLB_K8S_LINE_MAX ((size_t)16 << 20)
#define DLB_K8S_BODY_MAX ((size_t)256 << 20)

typedef struct dlb_k8s_req dlb_k8s_req_t;

/* One complete line of a watch (no newline; NUL-terminated at line[len]).
 * @returns 0 to go on, non-zero to end the transfer (an ERROR event). */
typedef int (*dlb_k8s_line_cb)(const char *line, size_t len, void *opaque);

/** @brief Make a GET of cfg->server + path with the query params (NULL-terminated
 *         key, value pairs; a NULL value leaves the key out; values are
 *         URL-encoded). The bearer token is read now (a token file afresh).
 *  @param timeout_s the whole transfer's limit (a watch's timeoutSeconds plus a margin).
 *  @param cb NULL for a list; for a watch, called per line of a 200 response.
 *  @returns 0, DLB_ERR_CONF (a file the configuration names cannot be read:
 *           errstr names it), DLB_ERR_NOMEM. */
int dlb_k8s_req_new(const dlb_k8s_config_t *cfg, const char *path, const char *const *params,
                    long timeout_s, dlb_k8s_line_cb cb, void *opaque, dlb_k8s_req_t **out,
                    char *errstr, size_t errstr_size);

CURL *dlb_k8s_req_handle(const dlb_k8s_req_t *req);
/** @returns path and query of the request, for log lines. */
const char *dlb_k8s_req_target(const dlb_k8s_req_t *req);

/* How a finished request went. */
typedef struct dlb_k8s_result {
    long status;       /* HTTP status, 0 when none was received */
    const char *error; /* the transfer's error ("" when it completed) */
    const char *body;  /* a list's body, or any non-200 response's (a Status) */
    size_t len;
    size_t lines;      /* watch lines delivered */
    size_t partial;    /* bytes of an unfinished last line, dropped */
    int aborted;       /* the line callback ended it */
    int line_too_long; /* a line passed DLB_K8S_LINE_MAX */
} dlb_k8s_result_t;

/** @brief The result of req once the multi reported it done with rc. Valid
 *         until dlb_k8s_req_free(). */
void dlb_k8s_req_result(dlb_k8s_req_t *req, CURLcode rc, dlb_k8s_result_t *res);

/** @brief "message" of a Kubernetes Status body, or the body's start. */
void dlb_k8s_status_message(const char *body, size_t len, char *out, size_t out_size);

void dlb_k8s_req_free(dlb_k8s_req_t *req);

#endif
