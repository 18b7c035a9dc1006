/* The schema catalog: every schema version dlbrain knows, by Confluent id.
 *
 * Built from schemas/catalog.tsv and the .avsc files it names, embedded into
 * the binary at build time, so a deployed binary needs no files. A catalog can
 * also be loaded from a directory holding the same files (tests, tooling). */
#ifndef DLB_CATALOG_H
#define DLB_CATALOG_H

#include <stdint.h>

#include <avro.h>

#include "event.h"

typedef struct dlb_schema_entry {
    int32_t id;
    dlb_event_type_t type;
    char file[128];
    char *json;                /* schema text */
    avro_schema_t schema;      /* parsed */
    avro_value_iface_t *iface; /* generic value class of this schema */
    /* Reads data written with this schema into the newest schema of its type
     * (avro-c resolved writer); NULL when this entry is the newest. */
    avro_value_iface_t *resolver;
} dlb_schema_entry_t;

typedef struct dlb_catalog dlb_catalog_t;

/** @brief Load the catalog embedded at build time. */
int dlb_catalog_new(dlb_catalog_t **out, char *errstr, size_t errstr_size);

/** @brief Load from dir/catalog.tsv and the .avsc files beside it. */
int dlb_catalog_load_dir(dlb_catalog_t **out, const char *dir, char *errstr, size_t errstr_size);

void dlb_catalog_destroy(dlb_catalog_t *cat);

/** @returns the entry with this id, or NULL. */
const dlb_schema_entry_t *dlb_catalog_by_id(const dlb_catalog_t *cat, int32_t id);

/** @returns the newest entry (highest id) of a type: what writers use. */
const dlb_schema_entry_t *dlb_catalog_latest(const dlb_catalog_t *cat, dlb_event_type_t type);

/** @returns number of entries; entries are indexable 0..n-1 for listing. */
size_t dlb_catalog_count(const dlb_catalog_t *cat);
const dlb_schema_entry_t *dlb_catalog_at(const dlb_catalog_t *cat, size_t i);

#endif
