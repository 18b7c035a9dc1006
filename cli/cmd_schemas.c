/* dlbrain schemas: list the schema catalog, print one schema, or decode
 * framed messages given in hex. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "catalog.h"
#include "cmd.h"
#include "codec.h"
#include "common.h"
#include "err.h"
#include "log.h"

static int hex_nibble(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Hex digits of line (its newline dropped) into buf, in place. @returns the
 * byte count, or -1 when it is not an even count of hex digits. */
static long hex_decode(char *line)
{
    size_t n = strcspn(line, "\r\n");
    unsigned char *out = (unsigned char *)line;

    if (n % 2)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_nibble(line[i]), lo = hex_nibble(line[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

/* {"error": "<class>: <message>"} */
static void print_error(int err, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    char line[600], *s;

    snprintf(line, sizeof(line), "%s: %s", dlb_err_name(err), msg);
    s = o && cJSON_AddStringToObject(o, "error", line) ? cJSON_PrintUnformatted(o) : NULL;
    printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
    free(s);
    cJSON_Delete(o);
}

/* One line of hex per message on stdin -> one line of JSON per message on
 * stdout: the event as the consumers decode it, or why it does not decode. */
static int decode_lines(const dlb_catalog_t *cat)
{
    char *line = NULL, errstr[512], *json;
    size_t cap = 0;
    long len;

    while (getline(&line, &cap, stdin) >= 0) {
        dlb_event_t ev;
        int err;

        memset(&ev, 0, sizeof(ev));
        json = NULL;
        if ((len = hex_decode(line)) < 0) {
            print_error(DLB_ERR_DECODE, "the line is not hex digits");
            continue;
        }
        if (!(err = dlb_codec_decode(cat, line, (size_t)len, &ev, errstr, sizeof(errstr))))
            err = dlb_event_to_json(cat, &ev, &json, errstr, sizeof(errstr));
        if (err)
            print_error(err, errstr);
        else
            printf("%s\n", json);
        free(json);
        dlb_event_clear(&ev);
    }
    free(line);
    return fflush(stdout) ? 1 : 0;
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: dlbrain schemas [ID | --decode] [options]\n"
                "List the schema catalog (Confluent id, type, file, newest of its type), or print\n"
                "the Avro schema with id ID, e.g. to register it in a schema registry.\n"
                "--decode: read framed messages (Confluent header + Avro), one per line in hex,\n"
                "on stdin, and print each as the consumers decode it, one JSON line each (the\n"
                "shape emit reads), or {\"error\": \"<class>: <why>\"}.\n"
                "The catalog is built in: settings are checked but change nothing.\n\n"
                "  -d, --decode          decode framed messages from stdin\n" CLI_COMMON_HELP);
}

int cmd_schemas_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"decode", no_argument, 0, 'd'}, CLI_COMMON_LONG, {0, 0, 0, 0}};
    dlb_catalog_t *cat;
    cli_opts_t o = {0};
    dlb_conf_t conf;
    const char *id = NULL;
    char errstr[512];
    int c, rc = 0, decode = 0;

    while ((c = getopt_long(argc, argv, "d" CLI_COMMON_SHORT, longopts, NULL)) != -1) {
        if (c == 'd')
            decode = 1;
        else if ((rc = cli_default_opt(&o, c, optarg, usage)) >= 0)
            return rc;
    }
    if (optind < argc)
        id = argv[optind++];
    if (optind < argc || (id && decode)) {
        fprintf(stderr, "schemas: unexpected argument '%s'\n", optind < argc ? argv[optind] : id);
        usage(stderr);
        return 2;
    }
    /* Like every command: a bad setting is refused, not silently ignored. */
    if (cli_conf_build(&o, &conf, "schemas"))
        return 2;
    dlb_conf_destroy(&conf);
    rc = 0;
    if (dlb_catalog_new(&cat, errstr, sizeof(errstr))) {
        fprintf(stderr, "schemas: %s\n", errstr);
        return 1;
    }
    if (decode) {
        rc = decode_lines(cat);
    } else if (id) {
        const dlb_schema_entry_t *e = dlb_catalog_by_id(cat, (int32_t)atoi(id));
        if (e) {
            fputs(e->json, stdout);
        } else {
            fprintf(stderr, "schemas: no schema with id %s\n", id);
            rc = 1;
        }
    } else {
        printf("%-4s %-16s %-22s %s\n", "ID", "TYPE", "FILE", "NEWEST");
        for (size_t i = 0; i < dlb_catalog_count(cat); i++) {
            const dlb_schema_entry_t *e = dlb_catalog_at(cat, i);
            printf("%-4d %-16s %-22s %s\n", (int)e->id, dlb_event_type_name(e->type), e->file,
                   dlb_catalog_latest(cat, e->type) == e ? "yes" : "no");
        }
    }
    dlb_catalog_destroy(cat);
    return rc;
}
