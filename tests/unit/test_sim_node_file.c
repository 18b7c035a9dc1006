/* Node-shape files (sim/sim_node_file.c): the PAI table and its sample in
 * data/pai load with the totals their comments state; columns in any
 * order, optional ones left out, comments and blanks skipped; bad input is
 * refused naming the file, the line and what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "err.h"
#include "sim_node_file.h"

static void totals(const dlb_sim_node_t *v, size_t n, int64_t *cpu_m, int64_t *mem)
{
    *cpu_m = *mem = 0;
    for (size_t i = 0; i < n; i++) {
        *cpu_m += v[i].cpu_m;
        *mem += v[i].memory;
        assert_int_equal(v[i].cpu_used_m, 0);
        assert_int_equal(v[i].pods, 0);
    }
}

static void load_data(const char *file, size_t want_n, int64_t want_cores, int64_t want_gib)
{
    const char *src = getenv("DLB_SOURCE_DIR");
    char path[4096], errstr[512];
    dlb_sim_node_t *v;
    size_t n;
    int64_t cpu_m, mem;

    snprintf(path, sizeof(path), "%s/data/pai/%s", src ? src : ".", file);
    if (dlb_sim_node_file_load(path, &v, &n, errstr, sizeof(errstr)))
        fail_msg("%s", errstr);
    assert_int_equal(n, want_n);
    totals(v, n, &cpu_m, &mem);
    assert_int_equal(cpu_m, want_cores * 1000);
    assert_int_equal(mem, want_gib * DLB_GIB);
    free(v);
}

static void test_pai_files(void **state)
{
    const char *src = getenv("DLB_SOURCE_DIR");
    char path[4096], errstr[512];
    dlb_sim_node_t *v;
    size_t n;

    (void)state;
    /* The table: 1,897 machines, 156,576 cores, 948,224 GB. */
    load_data("machines.csv", 1897, 156576, 948224);
    /* The sample: 27 p100 (64 cores), 17 t4, 9 misc, 5 v100m32, 3 cpu, 2 v100 and 1 v100b. */
    load_data("nodes.csv", 64, 5280, 32000);
    snprintf(path, sizeof(path), "%s/data/pai/nodes.csv", src ? src : ".");
    assert_int_equal(dlb_sim_node_file_load(path, &v, &n, errstr, sizeof(errstr)), 0);
    assert_string_equal(v[0].name, "p100-0000");
    assert_int_equal(v[0].cpu_m, 64000);
    assert_string_equal(v[27].name, "t4-0027");
    assert_int_equal(v[27].cpu_m, 96000);
    assert_string_equal(v[53].name, "v100m32-0053");
    assert_int_equal(v[53].memory, 384 * DLB_GIB);
    assert_string_equal(v[58].name, "cpu-0058");
    assert_string_equal(v[63].name, "v100b-0063");
    {
        /* The built-in default is this file. */
        dlb_sim_node_t *d;
        size_t dn;

        assert_int_equal(dlb_sim_nodes_default(&d, &dn, errstr, sizeof(errstr)), 0);
        assert_int_equal(dn, n);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(d[i].name, v[i].name);
            assert_int_equal(d[i].cpu_m, v[i].cpu_m);
            assert_int_equal(d[i].memory, v[i].memory);
        }
        free(d);
    }
    free(v);
}

/* Load text as a file; @returns the error (0: loaded into *v, *n). */
static int load_text(const char *text, dlb_sim_node_t **v, size_t *n, char *errstr, size_t size,
                     char *path)
{
    int fd, err;
    FILE *fp;

    strcpy(path, "/tmp/dlb-test-nodes-XXXXXX");
    assert_true((fd = mkstemp(path)) >= 0);
    assert_non_null(fp = fdopen(fd, "w"));
    fputs(text, fp);
    fclose(fp);
    err = dlb_sim_node_file_load(path, v, n, errstr, size);
    unlink(path);
    return err;
}

static void test_format(void **state)
{
    dlb_sim_node_t *v;
    size_t n;
    char errstr[512], path[64];

    (void)state;
    /* Columns in any order, spaces around fields, comments and blank lines,
     * no optional columns: named "node-NNNN". */
    assert_int_equal(load_text("# a comment\n\n  # another\nmemory_gib, count ,cpu_cores\r\n"
                               "16, 2, 4.5\r\n\n1.5,1,0.5\n",
                               &v, &n, errstr, sizeof(errstr), path),
                     0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, "node-0000");
    assert_string_equal(v[2].name, "node-0002");
    assert_int_equal(v[1].cpu_m, 4500);
    assert_int_equal(v[1].memory, 16 * DLB_GIB);
    assert_int_equal(v[2].cpu_m, 500);
    assert_int_equal(v[2].memory, DLB_GIB + DLB_GIB / 2);
    free(v);
    /* An empty label or gpus: the defaults; the last line needs no newline. */
    assert_int_equal(load_text("count,cpu_cores,memory_gib,gpus,gpu_type,label\n1,8,32,,,\n"
                               "1,8,32,4,A100,gpu.a-1",
                               &v, &n, errstr, sizeof(errstr), path),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "node-0000");
    assert_string_equal(v[1].name, "gpu.a-1-0001");
    free(v);
}

/* text is refused with an error naming the file, "line" (":N:") and why. */
static void refused(const char *text, const char *line, const char *why)
{
    dlb_sim_node_t *v = (dlb_sim_node_t *)1;
    size_t n = 1;
    char errstr[512], path[64], want[128];

    assert_int_equal(load_text(text, &v, &n, errstr, sizeof(errstr), path), DLB_ERR_INVALID);
    assert_null(v);
    assert_int_equal(n, 0);
    snprintf(want, sizeof(want), "%s%s", path, line);
    if (!strstr(errstr, want) || !strstr(errstr, why))
        fail_msg("error '%s' does not name '%s' and '%s'", errstr, want, why);
}

static void test_bad_input(void **state)
{
    dlb_sim_node_t *v;
    size_t n;
    char errstr[512];

    (void)state;
    refused("count,cpu,memory_gib\n1,2,3\n", ":1:", "unknown column 'cpu'");
    refused("# src\ncount,memory_gib\n1,2\n", ":2:", "no 'cpu_cores' column");
    refused("count,cpu_cores,memory_gib,count\n", ":1:", "column 'count' twice");
    refused("count,cpu_cores,memory_gib\n0,2,3\n", ":2:", "count '0'");
    refused("count,cpu_cores,memory_gib\n1.5,2,3\n", ":2:", "count '1.5'");
    refused("count,cpu_cores,memory_gib\n1,2,3\n100000,2,3\n", ":3:", "more than 100000 nodes");
    refused("count,cpu_cores,memory_gib\n1,-2,3\n", ":2:", "cpu_cores '-2'");
    refused("count,cpu_cores,memory_gib\n1,2,lots\n", ":2:", "memory_gib 'lots'");
    refused("count,cpu_cores,memory_gib,gpus\n1,2,3,0.5\n", ":2:", "gpus '0.5'");
    refused("count,cpu_cores,memory_gib,label\n1,2,3,P100\n", ":2:", "label 'P100'");
    refused("count,cpu_cores,memory_gib,label\n1,2,3,-a\n", ":2:", "label '-a'");
    refused("count,cpu_cores,memory_gib\n1,2\n", ":2:", "2 fields, the header has 3");
    refused("# only comments\n", ": no header", "count,cpu_cores,memory_gib");
    refused("count,cpu_cores,memory_gib\n# none\n", ": no nodes", "no nodes");
    assert_int_equal(
        dlb_sim_node_file_load("/nonexistent/nodes.csv", &v, &n, errstr, sizeof(errstr)),
        DLB_ERR_NOTFOUND);
    assert_non_null(strstr(errstr, "/nonexistent/nodes.csv"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pai_files),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
