/* The schema registry (schemareg.h) over HTTP: one libmicrohttpd thread
 * collects a request (its body for a lookup) and answers it. */
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "err.h"
#include "httpd.h"
#include "schemareg.h"

/* Clients are a few tools and the serializers of producers and consumers
 * (one keep-alive connection per process, a request per new schema id);
 * what each may hold is bounded by http.* in the shared front (httpd.h). */
struct dlb_schemareg_server {
    dlb_httpd_t *h;
    dlb_schemareg_t *reg;
};

/* A request's body as it arrives; over DLB_SCHEMAREG_BODY_MAX it is dropped. */
typedef struct upload {
    char *buf;
    size_t len;
    int too_big;
} upload_t;

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    upload_t *u = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (u) {
        free(u->buf);
        free(u);
        *con_cls = NULL;
    }
}

static int upload_add(upload_t *u, const char *data, size_t len)
{
    char *nb;

    if (u->too_big || u->len + len > DLB_SCHEMAREG_BODY_MAX) {
        u->too_big = 1;
        return 0;
    }
    if (!(nb = realloc(u->buf, u->len + len + 1)))
        return DLB_ERR_NOMEM;
    memcpy(nb + u->len, data, len);
    u->buf = nb;
    u->len += len;
    u->buf[u->len] = '\0';
    return 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    dlb_schemareg_server_t *s = cls;
    upload_t *u = *con_cls;
    char *body, *path;
    size_t len = 0;
    int status;

    (void)version;
    if (!u) { /* the headers: the body, if any, comes in the next calls */
        if (!(u = calloc(1, sizeof(*u))))
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*upload_size) {
        if (upload_add(u, upload, *upload_size))
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    if (u->too_big) {
        static const char msg[] = "{\"error_code\":413,\"message\":\"the request body is larger "
                                  "than the registry reads\"}";
        return dlb_httpd_respond(c, MHD_HTTP_CONTENT_TOO_LARGE, DLB_SCHEMAREG_CONTENT_TYPE,
                                 strdup(msg), sizeof(msg) - 1);
    }
    /* Clients quote a subject (confluent-kafka: urllib.parse.quote). */
    if (!(path = strdup(url)))
        return MHD_NO;
    MHD_http_unescape(path);
    status = dlb_schemareg_answer(s->reg, method, path, u->buf, u->len, &body, &len);
    free(path);
    if (status < 0)
        return MHD_NO;
    return dlb_httpd_respond(c, (unsigned)status, DLB_SCHEMAREG_CONTENT_TYPE, body, len);
}

int dlb_schemareg_serve(dlb_schemareg_t *r, const char *addr, int port,
                        const dlb_http_conf_t *bounds, dlb_schemareg_server_t **out, int *bound,
                        char *errstr, size_t errstr_size)
{
    dlb_schemareg_server_t *s;
    int err;

    *out = NULL;
    if (!(s = calloc(1, sizeof(*s))))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    s->reg = r;
    if ((err = dlb_httpd_start("schema registry", "registry.address", addr, port, bounds, handle, s,
                               request_done, &s->h, bound, errstr, errstr_size))) {
        free(s);
        return err;
    }
    *out = s;
    return 0;
}

void dlb_schemareg_server_stop(dlb_schemareg_server_t *s)
{
    if (!s)
        return;
    dlb_httpd_stop(s->h);
    free(s);
}
