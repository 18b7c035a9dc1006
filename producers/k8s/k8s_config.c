#include "k8s_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <yaml.h>

#include "err.h"

typedef struct kube {
    yaml_document_t doc;
    const char *path;
    char *dir; /* of path, for relative file names */
    char *errstr;
    size_t size;
} kube_t;

static yaml_node_t *map_get(kube_t *k, const yaml_node_t *m, const char *key)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(&k->doc, p->key);
        if (kn && kn->type == YAML_SCALAR_NODE && !strcmp((const char *)kn->data.scalar.value, key))
            return yaml_document_get_node(&k->doc, p->value);
    }
    return NULL;
}

/* A non-empty scalar's text, or NULL. */
static const char *scalar(kube_t *k, const yaml_node_t *m, const char *key)
{
    const yaml_node_t *n = map_get(k, m, key);

    if (!n || n->type != YAML_SCALAR_NODE || !n->data.scalar.length)
        return NULL;
    return (const char *)n->data.scalar.value;
}

/* The field of the entry of the list whose name is name: clusters[name].cluster. */
static yaml_node_t *named(kube_t *k, const char *list, const char *name, const char *field)
{
    yaml_node_t *seq = map_get(k, yaml_document_get_root_node(&k->doc), list);

    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top;
         i++) {
        yaml_node_t *item = yaml_document_get_node(&k->doc, *i);
        const char *n = scalar(k, item, "name");
        if (n && !strcmp(n, name))
            return map_get(k, item, field);
    }
    return NULL;
}

/* asprintf() that leaves NULL behind on failure. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    char *s;
    int n;

    va_start(ap, f);
    n = vasprintf(&s, f, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

static int nomem(kube_t *k)
{
    return dlb_seterr(k->errstr, k->size, DLB_ERR_NOMEM, "out of memory");
}

/* A file name of the kubeconfig, relative ones resolved against its directory. */
static int path_dup(kube_t *k, const char *file, char **out)
{
    *out = file[0] == '/' || !k->dir ? strdup(file) : fmt("%s/%s", k->dir, file);
    return *out ? 0 : nomem(k);
}

/* Decodes base64 (newlines allowed) with OpenSSL's decoder. @returns 0 or -1. */
static int base64_decode(const char *in, char **out, size_t *out_len)
{
    size_t len = strlen(in);
    EVP_ENCODE_CTX *ctx;
    unsigned char *buf;
    int n = 0, m = 0, rc = -1;

    if (len > (size_t)1 << 30 || !(buf = malloc(len / 4 * 3 + 4)))
        return -1;
    if ((ctx = EVP_ENCODE_CTX_new())) {
        EVP_DecodeInit(ctx);
        if (EVP_DecodeUpdate(ctx, buf, &n, (const unsigned char *)in, (int)len) >= 0 &&
            EVP_DecodeFinal(ctx, buf + n, &m) >= 0 && n + m > 0)
            rc = 0;
        EVP_ENCODE_CTX_free(ctx);
    }
    if (rc) {
        free(buf);
        return -1;
    }
    buf[n + m] = '\0';
    *out = (char *)buf;
    *out_len = (size_t)(n + m);
    return 0;
}

/* field (a file) or field-data (base64 PEM) of m, into pem. */
static int read_pem(kube_t *k, const yaml_node_t *m, const char *where, const char *field,
                    dlb_k8s_pem_t *pem)
{
    const char *file = scalar(k, m, field), *data;
    char key[64];

    snprintf(key, sizeof(key), "%s-data", field);
    if ((data = scalar(k, m, key))) {
        if (base64_decode(data, &pem->data, &pem->len))
            return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF, "kubeconfig %s: %s.%s: not base64",
                              k->path, where, key);
        return 0;
    }
    return file ? path_dup(k, file, &pem->file) : 0;
}

static int load_user(kube_t *k, const char *name, dlb_k8s_config_t *cfg)
{
    const yaml_node_t *u = named(k, "users", name, "user");
    char where[300];
    const char *token = scalar(k, u, "token"), *token_file = scalar(k, u, "tokenFile");
    int err;

    snprintf(where, sizeof(where), "users[%s]", name);
    if (!u)
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF, "kubeconfig %s: user \"%s\" not found",
                          k->path, name);
    if (map_get(k, u, "exec") || map_get(k, u, "auth-provider") || map_get(k, u, "username"))
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF,
                          "kubeconfig %s: %s: exec plugins, auth providers and basic auth are not "
                          "supported; give k8s-monitor a token, tokenFile or client certificate "
                          "(a service account)",
                          k->path, where);
    if (token && !(cfg->token = strdup(token)))
        return nomem(k);
    if (token_file && (err = path_dup(k, token_file, &cfg->token_file)))
        return err;
    if ((err = read_pem(k, u, where, "client-certificate", &cfg->cert)) ||
        (err = read_pem(k, u, where, "client-key", &cfg->key)))
        return err;
    if (!cfg->cert.file && !cfg->cert.data ? cfg->key.file || cfg->key.data
                                           : !cfg->key.file && !cfg->key.data)
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF,
                          "kubeconfig %s: %s: a client certificate needs its key and a key its "
                          "certificate",
                          k->path, where);
    return 0;
}

static int load_doc(kube_t *k, const char *context, dlb_k8s_config_t *cfg)
{
    const yaml_node_t *root = yaml_document_get_root_node(&k->doc), *ctx, *cluster;
    const char *cname, *uname, *server, *insecure;
    char where[300];
    int err;

    if (!root || root->type != YAML_MAPPING_NODE)
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF, "kubeconfig %s: not a YAML mapping",
                          k->path);
    if (!context || !*context) {
        if (!(context = scalar(k, root, "current-context")))
            return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF,
                              "kubeconfig %s: no current-context (set k8s.context)", k->path);
    }
    if (!(ctx = named(k, "contexts", context, "context")))
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF,
                          "kubeconfig %s: context \"%s\" not found", k->path, context);
    if (!(cname = scalar(k, ctx, "cluster")))
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF,
                          "kubeconfig %s: contexts[%s]: no cluster", k->path, context);
    snprintf(where, sizeof(where), "clusters[%s]", cname);
    if (!(cluster = named(k, "clusters", cname, "cluster")))
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF,
                          "kubeconfig %s: cluster \"%s\" not found", k->path, cname);
    if (!(server = scalar(k, cluster, "server")))
        return dlb_seterr(k->errstr, k->size, DLB_ERR_CONF, "kubeconfig %s: %s: no server", k->path,
                          where);
    if (!(cfg->server = strdup(server)))
        return nomem(k);
    for (size_t n = strlen(cfg->server); n > 0 && cfg->server[n - 1] == '/'; n--)
        cfg->server[n - 1] = '\0';
    insecure = scalar(k, cluster, "insecure-skip-tls-verify");
    cfg->insecure = insecure && !strcmp(insecure, "true");
    if ((err = read_pem(k, cluster, where, "certificate-authority", &cfg->ca)))
        return err;
    uname = scalar(k, ctx, "user");
    if (uname && (err = load_user(k, uname, cfg)))
        return err;
    cfg->source =
        fmt("kubeconfig %s, context %s, user %s", k->path, context, uname ? uname : "(none)");
    return cfg->source ? 0 : nomem(k);
}

int dlb_k8s_config_kubeconfig(const char *path, const char *context, dlb_k8s_config_t *cfg,
                              char *errstr, size_t size)
{
    kube_t k = {.path = path, .errstr = errstr, .size = size};
    yaml_parser_t parser;
    const char *slash = strrchr(path, '/');
    FILE *fp;
    int err;

    memset(cfg, 0, sizeof(*cfg));
    if (!(fp = fopen(path, "r")))
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "kubeconfig %s: cannot open: %s", path,
                          strerror(errno));
    if (!yaml_parser_initialize(&parser)) {
        fclose(fp);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    yaml_parser_set_input_file(&parser, fp);
    if (!yaml_parser_load(&parser, &k.doc)) {
        err = dlb_seterr(errstr, size, DLB_ERR_CONF, "kubeconfig %s:%zu:%zu: %s", path,
                         parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "not YAML");
        yaml_parser_delete(&parser);
        fclose(fp);
        return err;
    }
    yaml_parser_delete(&parser);
    fclose(fp);
    if (slash && !(k.dir = strndup(path, slash == path ? 1 : (size_t)(slash - path))))
        err = nomem(&k);
    else
        err = load_doc(&k, context, cfg);
    yaml_document_delete(&k.doc);
    free(k.dir);
    if (err)
        dlb_k8s_config_free(cfg);
    return err;
}

int dlb_k8s_config_in_cluster(const char *sa_dir, dlb_k8s_config_t *cfg, char *errstr, size_t size)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    int v6;

    memset(cfg, 0, sizeof(*cfg));
    if (!host || !*host)
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "in-cluster: KUBERNETES_SERVICE_HOST is not set (not in a pod)");
    v6 = strchr(host, ':') != NULL;
    cfg->server =
        fmt("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port && *port ? port : "443");
    cfg->token_file = fmt("%s/token", sa_dir);
    cfg->ca.file = fmt("%s/ca.crt", sa_dir);
    cfg->source = fmt("in-cluster service account (%s)", sa_dir);
    if (!cfg->server || !cfg->token_file || !cfg->ca.file || !cfg->source) {
        dlb_k8s_config_free(cfg);
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    return 0;
}

int dlb_k8s_config_load(const char *kubeconfig, const char *context, dlb_k8s_config_t *cfg,
                        char *errstr, size_t size)
{
    const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
    char path[4096];

    if (kubeconfig && *kubeconfig)
        return dlb_k8s_config_kubeconfig(kubeconfig, context, cfg, errstr, size);
    if (getenv("KUBERNETES_SERVICE_HOST") && *getenv("KUBERNETES_SERVICE_HOST"))
        return dlb_k8s_config_in_cluster(DLB_K8S_SA_DIR, cfg, errstr, size);
    if (env && *env) {
        /* kubectl merges a ':'-separated list; the first file is enough here */
        snprintf(path, sizeof(path), "%.*s", (int)strcspn(env, ":"), env);
        return dlb_k8s_config_kubeconfig(path, context, cfg, errstr, size);
    }
    snprintf(path, sizeof(path), "%s/.kube/config", home ? home : "");
    if (access(path, F_OK))
        return dlb_seterr(errstr, size, DLB_ERR_CONF,
                          "no Kubernetes API configured: k8s.kubeconfig is empty, "
                          "KUBERNETES_SERVICE_HOST and KUBECONFIG are not set, and %s: %s",
                          path, strerror(errno));
    return dlb_k8s_config_kubeconfig(path, context, cfg, errstr, size);
}

/* Reads a whole file into a malloc'ed string. */
static int slurp(const char *what, const char *path, char **out, char *errstr, size_t size)
{
    FILE *fp = fopen(path, "rb");
    char *buf = NULL;
    long len;

    if (!fp)
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s %s: cannot read: %s", what, path,
                          strerror(errno));
    if (fseek(fp, 0, SEEK_END) || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) ||
        !(buf = malloc((size_t)len + 1)) || fread(buf, 1, (size_t)len, fp) != (size_t)len) {
        int e = errno;
        fclose(fp);
        free(buf);
        return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s %s: cannot read: %s", what, path,
                          buf ? strerror(e) : "out of memory");
    }
    fclose(fp);
    buf[len] = '\0';
    *out = buf;
    return 0;
}

int dlb_k8s_config_token(const dlb_k8s_config_t *cfg, char **out, char *errstr, size_t size)
{
    int err;

    *out = NULL;
    if (cfg->token_file) {
        if ((err = slurp("tokenFile", cfg->token_file, out, errstr, size)))
            return err;
        for (size_t n = strlen(*out); n > 0 && strchr(" \t\r\n", (*out)[n - 1]); n--)
            (*out)[n - 1] = '\0';
        return 0;
    }
    if (cfg->token && !(*out = strdup(cfg->token)))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

int dlb_k8s_config_check_files(const dlb_k8s_config_t *cfg, char *errstr, size_t size)
{
    const struct {
        const char *what, *file;
    } files[] = {
        {"tokenFile", cfg->token_file},
        {"certificate-authority", cfg->ca.file},
        {"client-certificate", cfg->cert.file},
        {"client-key", cfg->key.file},
    };

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (files[i].file && access(files[i].file, R_OK))
            return dlb_seterr(errstr, size, DLB_ERR_CONF, "%s %s: cannot read: %s", files[i].what,
                              files[i].file, strerror(errno));
    return 0;
}

static void pem_free(dlb_k8s_pem_t *p)
{
    free(p->file);
    free(p->data);
}

void dlb_k8s_config_free(dlb_k8s_config_t *cfg)
{
    free(cfg->server);
    free(cfg->source);
    free(cfg->token);
    free(cfg->token_file);
    pem_free(&cfg->ca);
    pem_free(&cfg->cert);
    pem_free(&cfg->key);
    memset(cfg, 0, sizeof(*cfg));
}
