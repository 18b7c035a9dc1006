/* Where the Kubernetes API is and how to authenticate to it: a kubeconfig file
 * (libyaml) or the in-cluster service account.
 *
 * Files a configuration names (token, CA, client certificate and key) are not
 * read here but on each connect, so a rotated service-account token is picked
 * up and a file that appears later is used: the watch goes on meanwhile.
 * Embedded *-data fields are base64-decoded here (OpenSSL's decoder). */
#ifndef DLB_K8S_CONFIG_H
#define DLB_K8S_CONFIG_H

#include <stddef.h>

#define DLB_K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* A PEM file's name, or its content when the kubeconfig embeds it. */
typedef struct dlb_k8s_pem {
    char *file; /* NULL when absent or embedded */
    char *data; /* decoded *-data, NULL when absent or a file */
    size_t len;
} dlb_k8s_pem_t;

typedef struct dlb_k8s_config {
    char *server;     /* "https://host:port", no trailing '/' */
    char *source;     /* for log lines: "kubeconfig F, context C" or "in-cluster ..." */
    char *token;      /* a literal bearer token, or NULL */
    char *token_file; /* read on each connect, or NULL */
    dlb_k8s_pem_t ca, cert, key;
    int insecure; /* insecure-skip-tls-verify */
} dlb_k8s_config_t;

/** @brief Load the configuration the k8s.kubeconfig setting names: the file when
 *         kubeconfig is set; else in-cluster when KUBERNETES_SERVICE_HOST is set;
 *         else the first file of $KUBECONFIG; else ~/.kube/config.
 *  @param context the context to use, "" for current-context.
 *  @returns 0 or DLB_ERR_CONF (errstr names the file and the field), DLB_ERR_NOMEM. */
int dlb_k8s_config_load(const char *kubeconfig, const char *context, dlb_k8s_config_t *cfg,
                        char *errstr, size_t errstr_size);

/** @brief Load one kubeconfig file (see dlb_k8s_config_load()). Relative paths in
 *         it are relative to its directory, as kubectl reads them. */
int dlb_k8s_config_kubeconfig(const char *path, const char *context, dlb_k8s_config_t *cfg,
                              char *errstr, size_t errstr_size);

/** @brief The in-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
 *         sa_dir/token and sa_dir/ca.crt (sa_dir is DLB_K8S_SA_DIR in a pod). */
int dlb_k8s_config_in_cluster(const char *sa_dir, dlb_k8s_config_t *cfg, char *errstr,
                              size_t errstr_size);

/** @brief The bearer token now: token_file read afresh (trailing whitespace
 *         dropped), else the literal token, else NULL (no token).
 *  @param out malloc'ed, or NULL.
 *  @returns 0 or DLB_ERR_CONF naming the file that cannot be read. */
int dlb_k8s_config_token(const dlb_k8s_config_t *cfg, char **out, char *errstr, size_t errstr_size);

/** @brief Check that every file the configuration names can be read.
 *  @returns 0 or DLB_ERR_CONF naming the first one that cannot. */
int dlb_k8s_config_check_files(const dlb_k8s_config_t *cfg, char *errstr, size_t errstr_size);

void dlb_k8s_config_free(dlb_k8s_config_t *cfg);

#endif
