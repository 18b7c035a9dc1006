#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

volatile sig_atomic_t cli_stop;

static void on_signal(int sig)
{
    (void)sig;
    cli_stop = 1;
}

void cli_signals_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int add_x(cli_opts_t *o, const char *kv)
{
    if (o->xs_cnt >= CLI_MAX_X) {
        fprintf(stderr, "dlbrain: too many -X options (at most %d)\n", CLI_MAX_X);
        return -1;
    }
    o->xs[o->xs_cnt++] = kv;
    return 1;
}

int cli_common_opt(cli_opts_t *o, int c, const char *arg)
{
    static char kv[8][1100]; /* storage for options rewritten as -X */
    static int kv_cnt;

    switch (c) {
    case 'c':
        o->conf_file = arg;
        return 1;
    case 'X':
        return add_x(o, arg);
    case 'b':
    case 'e':
    case 'L':
        if (kv_cnt >= 8)
            return -1;
        snprintf(kv[kv_cnt], sizeof(kv[kv_cnt]), "%s=%s",
                 c == 'b'   ? "brokers"
                 : c == 'e' ? "env"
                            : "log.format",
                 arg);
        return add_x(o, kv[kv_cnt++]);
    case 'v':
        o->verbosity++;
        return 1;
    case 'q':
        o->verbosity--;
        return 1;
    default:
        return 0;
    }
}

int cli_default_opt(cli_opts_t *o, int c, const char *arg, void (*usage)(FILE *))
{
    if (c == 'h') {
        usage(stdout);
        return 0;
    }
    if (cli_common_opt(o, c, arg) > 0)
        return -1;
    usage(stderr);
    return 2;
}

int cli_conf_build(const cli_opts_t *o, dlb_conf_t *conf, const char *program)
{
    char errstr[512];
    int level;

    dlb_conf_init(conf);
    if (o->conf_file && dlb_conf_load_file(conf, o->conf_file, errstr, sizeof(errstr)))
        goto fail;
    if (dlb_conf_load_env(conf, errstr, sizeof(errstr)))
        goto fail;
    for (int i = 0; i < o->xs_cnt; i++)
        if (dlb_conf_set_kv(conf, o->xs[i], errstr, sizeof(errstr)))
            goto fail;
    dlb_conf_finish(conf);
    level = conf->log_level + o->verbosity;
    if (level < DLB_LOG_ERROR)
        level = DLB_LOG_ERROR;
    if (level > DLB_LOG_DEBUG)
        level = DLB_LOG_DEBUG;
    dlb_log_setup(program, level, conf->log_json);
    return 0;
fail:
    fprintf(stderr, "%s: configuration: %s\n", program, errstr);
    dlb_conf_destroy(conf);
    return 1;
}

int cli_write_file(const char *path, const char *content)
{
    char tmp[4096];
    FILE *fp;

    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    if (!(fp = fopen(tmp, "w")))
        return -1;
    if (fputs(content, fp) < 0 || fclose(fp) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return rename(tmp, path);
}
