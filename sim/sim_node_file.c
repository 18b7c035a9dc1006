/* Node-shape files (sim_node_file.h). */
#include "sim_node_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "embedded.h"
#include "err.h"
#include "vec.h"

enum { COL_COUNT, COL_CPU, COL_MEM, COL_GPUS, COL_GPU_TYPE, COL_LABEL, COLS };

static const char *const col_names[COLS] = {"count", "cpu_cores", "memory_gib",
                                            "gpus",  "gpu_type",  "label"};

#define MAX_FIELDS 16
#define LABEL_MAX  32

/* Split line at commas into at most MAX_FIELDS trimmed fields (in place).
 * @returns the field count, or -1 when there are more. */
static int split(char *line, char **f)
{
    int n = 0;
    char *p = line;

    line[strcspn(line, "\r\n")] = '\0';
    for (;;) {
        char *end = p + strcspn(p, ","), *e = end;
        int last = *end == '\0';

        if (n == MAX_FIELDS)
            return -1;
        while (*p == ' ' || *p == '\t')
            p++;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        *e = '\0';
        f[n++] = p;
        if (last)
            return n;
        p = end + 1;
    }
}

/* @returns the header's column count, or -1 (why says). */
static int read_header(char *line, int *col, char *why, size_t why_size)
{
    char *f[MAX_FIELDS];
    int n = split(line, f);

    for (int c = 0; c < COLS; c++)
        col[c] = -1;
    if (n < 0) {
        snprintf(why, why_size, "more than %d columns", MAX_FIELDS);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int c = 0;

        while (c < COLS && strcmp(f[i], col_names[c]))
            c++;
        if (c == COLS) {
            snprintf(why, why_size,
                     "unknown column '%.32s' (count, cpu_cores, memory_gib, gpus, gpu_type, "
                     "label)",
                     f[i]);
            return -1;
        }
        if (col[c] >= 0) {
            snprintf(why, why_size, "column '%s' twice", col_names[c]);
            return -1;
        }
        col[c] = i;
    }
    for (int c = COL_COUNT; c <= COL_MEM; c++) {
        if (col[c] < 0) {
            snprintf(why, why_size, "no '%s' column (count, cpu_cores and memory_gib are required)",
                     col_names[c]);
            return -1;
        }
    }
    return n;
}

static int number(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo) || !(v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* Kubernetes node names are DNS subdomains: lowercase alphanumerics, '-'
 * and '.', starting and ending with an alphanumeric. */
static int label_ok(const char *s)
{
    size_t n = strlen(s);

    if (!n || n > LABEL_MAX || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
            return 0;
    return 1;
}

/* One row: its count and a node of its shape (no name yet) into *shape. */
static int read_row(char *line, const int *col, int cols, int *count, dlb_sim_node_t *shape,
                    char *label, char *why, size_t why_size)
{
    char *f[MAX_FIELDS];
    int n = split(line, f);
    double v;

    if (n != cols) {
        snprintf(why, why_size, "%d fields, the header has %d", n < 0 ? MAX_FIELDS + 1 : n, cols);
        return -1;
    }
    memset(shape, 0, sizeof(*shape));
    if (number(f[col[COL_COUNT]], 1, DLB_SIM_MAX_NODES, &v) || v != floor(v)) {
        snprintf(why, why_size, "count '%.32s' is not a whole number of nodes 1..%d",
                 f[col[COL_COUNT]], DLB_SIM_MAX_NODES);
        return -1;
    }
    *count = (int)v;
    if (number(f[col[COL_CPU]], 0.001, 1e6, &v)) {
        snprintf(why, why_size, "cpu_cores '%.32s' is not a number of cores 0.001..1e6",
                 f[col[COL_CPU]]);
        return -1;
    }
    shape->cpu_m = llround(v * 1000.0);
    if (number(f[col[COL_MEM]], 0.001, 1e7, &v)) {
        snprintf(why, why_size, "memory_gib '%.32s' is not a number of GiB 0.001..1e7",
                 f[col[COL_MEM]]);
        return -1;
    }
    shape->memory = llround(v * (double)DLB_GIB);
    if (col[COL_GPUS] >= 0 && f[col[COL_GPUS]][0] &&
        (number(f[col[COL_GPUS]], 0, 1024, &v) || v != floor(v))) {
        snprintf(why, why_size, "gpus '%.32s' is not a whole number 0..1024", f[col[COL_GPUS]]);
        return -1;
    }
    if (col[COL_GPU_TYPE] >= 0 && strlen(f[col[COL_GPU_TYPE]]) > 31) {
        snprintf(why, why_size, "gpu_type '%.32s...' is longer than 31 characters",
                 f[col[COL_GPU_TYPE]]);
        return -1;
    }
    snprintf(label, LABEL_MAX + 1, "node");
    if (col[COL_LABEL] >= 0 && f[col[COL_LABEL]][0]) {
        if (!label_ok(f[col[COL_LABEL]])) {
            snprintf(why, why_size,
                     "label '%.40s' is not a node name prefix (1-%d of a-z, 0-9, '-', '.', "
                     "starting and ending with a letter or digit)",
                     f[col[COL_LABEL]], LABEL_MAX);
            return -1;
        }
        snprintf(label, LABEL_MAX + 1, "%s", f[col[COL_LABEL]]);
    }
    return 0;
}

/* Read fp (named path in errors) to its end and close it. */
static int load_stream(FILE *fp, const char *path, dlb_sim_node_t **nodes, size_t *n, char *errstr,
                       size_t errstr_size)
{
    char line[1024], why[256], label[LABEL_MAX + 1];
    int col[COLS], cols = 0, lineno = 0, header = 0, err = 0;
    dlb_sim_node_t *v = NULL;
    size_t cnt = 0, cap = 0;

    *nodes = NULL;
    *n = 0;
    while (!err && fgets(line, sizeof(line), fp)) {
        dlb_sim_node_t shape;
        int count;

        lineno++;
        if (!strchr(line, '\n') && !feof(fp)) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "%s:%d: line longer than %zu characters", path, lineno,
                             sizeof(line) - 2);
            break;
        }
        if (line[strspn(line, " \t")] == '#' || line[strspn(line, " \t\r\n")] == '\0')
            continue;
        if (!header) {
            if ((cols = read_header(line, col, why, sizeof(why))) < 0) {
                err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                                 "%s:%d: not a node-shape header: %s", path, lineno, why);
                break;
            }
            header = 1;
            continue;
        }
        if (read_row(line, col, cols, &count, &shape, label, why, sizeof(why))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s:%d: %s", path, lineno, why);
            break;
        }
        if (cnt + (size_t)count > DLB_SIM_MAX_NODES) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                             "%s:%d: more than %d nodes in all", path, lineno, DLB_SIM_MAX_NODES);
            break;
        }
        if (dlb_vec_reserve((void **)&v, &cap, cnt + (size_t)count, sizeof(*v))) {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        for (int k = 0; k < count; k++, cnt++) {
            v[cnt] = shape;
            snprintf(v[cnt].name, sizeof(v[cnt].name), "%s-%04zu", label, cnt);
        }
    }
    if (!err && ferror(fp))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC, "%s: read error", path);
    fclose(fp);
    if (!err && !header)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                         "%s: no header (count,cpu_cores,memory_gib[,gpus][,gpu_type][,label])",
                         path);
    else if (!err && !cnt)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "%s: no nodes", path);
    if (err) {
        free(v);
        return err;
    }
    *nodes = v;
    *n = cnt;
    return 0;
}

int dlb_sim_node_file_load(const char *path, dlb_sim_node_t **nodes, size_t *n, char *errstr,
                           size_t errstr_size)
{
    FILE *fp = fopen(path, "r");

    *nodes = NULL;
    *n = 0;
    if (!fp)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "%s: %s", path, strerror(errno));
    return load_stream(fp, path, nodes, n, errstr, errstr_size);
}

/* data/pai/nodes.csv, compiled in (CMakeLists.txt). */
extern const dlb_embedded_t dlb_embedded_sim[];

int dlb_sim_nodes_default(dlb_sim_node_t **nodes, size_t *n, char *errstr, size_t errstr_size)
{
    const dlb_embedded_t *e = dlb_embedded_find(dlb_embedded_sim, "nodes.csv");
    FILE *fp = e ? fmemopen((void *)e->data, e->len, "r") : NULL;

    *nodes = NULL;
    *n = 0;
    if (!fp)
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM,
                          "the built-in cluster (data/pai/nodes.csv): %s",
                          e ? strerror(errno) : "not compiled in");
    return load_stream(fp, "data/pai/nodes.csv (built in)", nodes, n, errstr, errstr_size);
}
