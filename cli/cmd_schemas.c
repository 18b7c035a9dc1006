/* dlbrain schemas: list the schema catalog, or print one schema. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cmd.h"
#include "log.h"

int cmd_schemas_main(int argc, char **argv)
{
    dlb_catalog_t *cat;
    char errstr[512];
    int rc = 0;

    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: dlbrain schemas [ID]\n"
               "List the schema catalog (Confluent id, type, file, newest of its type), or print\n"
               "the Avro schema with id ID, e.g. to register it in a schema registry.\n");
        return 0;
    }
    if (dlb_catalog_new(&cat, errstr, sizeof(errstr))) {
        fprintf(stderr, "schemas: %s\n", errstr);
        return 1;
    }
    if (argc > 1) {
        const dlb_schema_entry_t *e = dlb_catalog_by_id(cat, (int32_t)atoi(argv[1]));
        if (e) {
            fputs(e->json, stdout);
        } else {
            fprintf(stderr, "schemas: no schema with id %s\n", argv[1]);
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
