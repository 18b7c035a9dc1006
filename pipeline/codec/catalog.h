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
    int32_t id;      /* the catalog's (schemas/catalog.tsv) */
    int32_t wire_id; /* what a frame of it says: id, or an external registry's id */
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

/* ---- wire ids: an external schema registry ------------------------------
 * A frame's bytes 1-4 are the catalog's id, unless the process bound an
 * external registry (schema.registry.url, schemareg_client.h): then they are
 * the ids it assigned, installed here once before any catalog is made, and
 * an id it does not know is asked of the registry through resolve. A library
 * living in someone else's process (the agent) keeps a table of its own
 * (dlb_catalog_wire_new) and makes its catalogs with it, so two agents bound
 * to different registries or environments never share ids. */

/** @brief Fetch the schema text the registry holds under wire_id.
 *  @returns 0 (*schema_json malloc'ed), DLB_ERR_NOTFOUND (no such id), or
 *           another error (unreachable: not remembered, asked again later). */
typedef int (*dlb_catalog_resolve_fn)(void *opaque, int32_t wire_id, char **schema_json,
                                      char *errstr, size_t errstr_size);

/** @brief Install the wire ids of this process: ids[i] = {catalog id, wire
 *         id}, and resolve for others (NULL: unknown ids are refused). Catalogs
 *         made afterwards write and read them. Replaces what was installed. */
int dlb_catalog_wire_install(const int32_t (*ids)[2], size_t n, dlb_catalog_resolve_fn resolve,
                             void *opaque, char *errstr, size_t errstr_size);

/** @brief Back to the catalog's ids, forgetting what was resolved. */
void dlb_catalog_wire_reset(void);

typedef struct dlb_catalog_wire dlb_catalog_wire_t;

/** @brief A table of wire ids of its own (ids and resolve as for
 *         dlb_catalog_wire_install), for dlb_catalog_new_wire(); it must
 *         outlive every catalog made with it, and opaque must outlive it. */
int dlb_catalog_wire_new(dlb_catalog_wire_t **out, const int32_t (*ids)[2], size_t n,
                         dlb_catalog_resolve_fn resolve, void *opaque, char *errstr,
                         size_t errstr_size);

void dlb_catalog_wire_destroy(dlb_catalog_wire_t *w);

/** @brief dlb_catalog_new() writing and reading the ids of wire (NULL: the
 *         process's, as dlb_catalog_new()). */
int dlb_catalog_new_wire(dlb_catalog_t **out, dlb_catalog_wire_t *wire, char *errstr,
                         size_t errstr_size);

/** @brief The entry a frame with wire_id was written with: an installed id,
 *         one resolved before, or one the resolver fetches now whose schema
 *         equals a catalog schema (remembered either way, as ids never change).
 *  @returns 0, or DLB_ERR_SCHEMA_ID (errstr says why). */
int dlb_catalog_by_wire_id(const dlb_catalog_t *cat, int32_t wire_id,
                           const dlb_schema_entry_t **out, char *errstr, size_t errstr_size);

#endif
