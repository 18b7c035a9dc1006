/* Where the Kubernetes API is: kubeconfig files (good and bad, each error
 * naming the file and the field), the in-cluster service account, and files
 * that are read on each connect (a missing CA is an error then, not at load). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "k8s_config.h"

static char dir[] = "/tmp/dlb-k8s-config-XXXXXX";

static void write_file(const char *name, const char *text, char *path, size_t size)
{
    FILE *fp;

    snprintf(path, size, "%s/%s", dir, name);
    assert_non_null(fp = fopen(path, "w"));
    fputs(text, fp);
    fclose(fp);
}

#define CLUSTER(extra)                                                                             \
    "clusters:\n- name: c\n  cluster:\n    server: https://k8s.example:6443/\n" extra
#define CONTEXT "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"

typedef struct cfg_case {
    const char *name;
    const char *yaml;
    const char *context;
    int rc;
    const char *errpart; /* in errstr when rc != 0 */
} cfg_case_t;

static const cfg_case_t cases[] = {
    {"token", CLUSTER("") CONTEXT "users:\n- name: u\n  user: {token: abc}\n", "", 0, NULL},
    {"relative files",
     CLUSTER("    certificate-authority: ca.crt\n") CONTEXT
     "users:\n- name: u\n  user: {client-certificate: c.crt, client-key: c.key}\n",
     "", 0, NULL},
    {"embedded CA",
     CLUSTER("    certificate-authority-data: LS0tLS1CRUdJTg==\n") CONTEXT
     "users:\n- name: u\n  user: {tokenFile: /var/token}\n",
     "", 0, NULL},
    {"not base64",
     CLUSTER("    certificate-authority-data: '!!!'\n") CONTEXT "users:\n- name: u\n  user: {}\n",
     "", DLB_ERR_CONF, "certificate-authority-data: not base64"},
    {"no such context", CLUSTER("") CONTEXT "users:\n- name: u\n  user: {}\n", "y", DLB_ERR_CONF,
     "context \"y\" not found"},
    {"no current-context", CLUSTER("") "users: []\n", "", DLB_ERR_CONF, "no current-context"},
    {"no such user", CLUSTER("") CONTEXT, "", DLB_ERR_CONF, "user \"u\" not found"},
    {"exec plugin", CLUSTER("") CONTEXT "users:\n- name: u\n  user: {exec: {command: aws}}\n", "",
     DLB_ERR_CONF, "exec plugins"},
    {"cert without key", CLUSTER("") CONTEXT "users:\n- name: u\n  user: {client-certificate: c}\n",
     "", DLB_ERR_CONF, "needs its key"},
    {"no server", "clusters:\n- name: c\n  cluster: {}\n" CONTEXT, "", DLB_ERR_CONF, "no server"},
    {"not YAML", "clusters: [\n", "", DLB_ERR_CONF, "kubeconfig"},
    {"not a mapping", "- a\n- b\n", "", DLB_ERR_CONF, "not a YAML mapping"},
};

static void test_kubeconfig_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const cfg_case_t *t = &cases[i];
        dlb_k8s_config_t cfg;
        char path[512], errstr[512] = "";
        int rc;

        write_file("config", t->yaml, path, sizeof(path));
        rc = dlb_k8s_config_kubeconfig(path, t->context, &cfg, errstr, sizeof(errstr));
        if (rc != t->rc)
            fail_msg("%s: rc %d (%s), expected %d", t->name, rc, errstr, t->rc);
        if (rc) {
            if (!strstr(errstr, t->errpart) || !strstr(errstr, path))
                fail_msg("%s: \"%s\" should name %s and say \"%s\"", t->name, errstr, path,
                         t->errpart);
            continue;
        }
        assert_string_equal(cfg.server, "https://k8s.example:6443");
        dlb_k8s_config_free(&cfg);
    }
}

static void test_kubeconfig_fields(void **state)
{
    dlb_k8s_config_t cfg;
    char path[512], ca[512], errstr[512], *token;
    (void)state;

    write_file("config", cases[1].yaml, path, sizeof(path));
    assert_int_equal(dlb_k8s_config_kubeconfig(path, "", &cfg, errstr, sizeof(errstr)), 0);
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    assert_string_equal(cfg.ca.file, ca); /* relative to the kubeconfig's directory */
    assert_null(cfg.ca.data);
    assert_non_null(strstr(cfg.source, "context x"));
    /* the CA is not there: an error when connecting, naming it */
    unlink(ca);
    assert_int_equal(dlb_k8s_config_check_files(&cfg, errstr, sizeof(errstr)), DLB_ERR_CONF);
    assert_non_null(strstr(errstr, "certificate-authority"));
    assert_non_null(strstr(errstr, ca));
    dlb_k8s_config_free(&cfg);

    write_file("config", cases[2].yaml, path, sizeof(path));
    assert_int_equal(dlb_k8s_config_kubeconfig(path, "", &cfg, errstr, sizeof(errstr)), 0);
    assert_int_equal(cfg.ca.len, 10);
    assert_memory_equal(cfg.ca.data, "-----BEGIN", 10);
    dlb_k8s_config_free(&cfg);

    write_file("config", cases[0].yaml, path, sizeof(path));
    assert_int_equal(dlb_k8s_config_kubeconfig(path, "", &cfg, errstr, sizeof(errstr)), 0);
    assert_int_equal(dlb_k8s_config_token(&cfg, &token, errstr, sizeof(errstr)), 0);
    assert_string_equal(token, "abc");
    free(token);
    dlb_k8s_config_free(&cfg);

    snprintf(path, sizeof(path), "%s/missing", dir);
    assert_int_equal(dlb_k8s_config_kubeconfig(path, "", &cfg, errstr, sizeof(errstr)),
                     DLB_ERR_CONF);
    assert_non_null(strstr(errstr, "cannot open"));
}

static void test_in_cluster(void **state)
{
    dlb_k8s_config_t cfg;
    char path[512], errstr[512], *token;
    (void)state;

    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(dlb_k8s_config_in_cluster(dir, &cfg, errstr, sizeof(errstr)), DLB_ERR_CONF);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(dlb_k8s_config_in_cluster(dir, &cfg, errstr, sizeof(errstr)), 0);
    assert_string_equal(cfg.server, "https://[fd00::1]:443");
    /* the token file is read on each connect: a rotated token is used */
    write_file("token", "tok-1\n", path, sizeof(path));
    assert_int_equal(dlb_k8s_config_token(&cfg, &token, errstr, sizeof(errstr)), 0);
    assert_string_equal(token, "tok-1");
    free(token);
    write_file("token", "tok-2", path, sizeof(path));
    assert_int_equal(dlb_k8s_config_token(&cfg, &token, errstr, sizeof(errstr)), 0);
    assert_string_equal(token, "tok-2");
    free(token);
    unlink(path);
    assert_int_equal(dlb_k8s_config_token(&cfg, &token, errstr, sizeof(errstr)), DLB_ERR_CONF);
    assert_non_null(strstr(errstr, path));
    dlb_k8s_config_free(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char path[600];
    (void)state;
    snprintf(path, sizeof(path), "%s/config", dir);
    unlink(path);
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig_cases),
        cmocka_unit_test(test_kubeconfig_fields),
        cmocka_unit_test(test_in_cluster),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
