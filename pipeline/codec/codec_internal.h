/* Internal glue between catalog.c, codec.c, codec_map.c, avro_json.c and
 * json_event.c; not a public API. Calls run one way: json_event and codec use
 * avro_json and codec_map, which use the catalog.
 *
 * avro-c 1.11 drops field defaults when it parses a schema, and its resolved
 * writer refuses a reader field the writer lacks ("Reader field x doesn't
 * appear in writer"), even one with a default. So the catalog keeps each
 * schema's JSON for defaults, resolves an older writer into a *projection* of
 * the newest schema (the newest minus the fields that writer lacks), and the
 * codec copies the projection into a full newest-schema value, filling the
 * missing fields from their JSON defaults through the same JSON -> Avro walker
 * `emit` input uses. */
#ifndef DLB_CODEC_INTERNAL_H
#define DLB_CODEC_INTERNAL_H

#include <stddef.h>

#include <avro.h>
#include <cJSON.h>

#include "catalog.h"
#include "event.h"

/** @returns the generic class of the projection the entry's resolver writes
 *           into, or NULL when the entry is the newest of its type. */
avro_value_iface_t *dlb_catalog_projection(const dlb_catalog_t *cat, const dlb_schema_entry_t *e);

/** @returns the "default" JSON of field `field` of the record named
 *           `record_name` (short name) in entry e's schema, or NULL if none. */
const cJSON *dlb_catalog_field_default(const dlb_catalog_t *cat, const dlb_schema_entry_t *e,
                                       const char *record_name, const char *field);

/** @returns schema with links followed to their target. */
avro_schema_t dlb_avro_deref(avro_schema_t schema);

/** @returns the index of union u's first branch that is null (want_null 1)
 *           or that is not (want_null 0), -1 when it has none or u is not a
 *           union: an optional field's two sides. */
int dlb_avro_union_branch(avro_schema_t u, int want_null);

/** @brief Set generic value v (of schema-entry e's schema, for defaults) from
 *         JSON j, checking types, ranges, unknown and missing fields.
 *  @param path field path of v for messages ("" at the top).
 *  @returns 0, DLB_ERR_DECODE with errstr "path: problem", DLB_ERR_NOMEM. */
int dlb_json_to_avro(const dlb_catalog_t *cat, const dlb_schema_entry_t *e, const cJSON *j,
                     avro_value_t *v, const char *path, char *errstr, size_t errstr_size);

/** @brief A generic value (any schema) as JSON, records as objects in schema
 *         order. @returns NULL when out of memory or nested too deep. */
cJSON *dlb_avro_to_json(avro_value_t *v);

/** @brief A short rendering of a JSON value for messages: "a", 1.5, {"x":1}. */
void dlb_json_describe(const cJSON *j, char *out, size_t n);

/** @brief The one Avro -> struct mapping (decode and JSON input share it).
 *         ev is zeroed first; on error its heap parts may be half filled and
 *         dlb_event_clear() releases them.
 *  @returns 0, DLB_ERR_DECODE (a string longer than its field), DLB_ERR_NOMEM,
 *           DLB_ERR_GENERIC (value does not match the struct's schema). */
int dlb_codec_from_avro(dlb_event_type_t type, avro_value_t *rec, dlb_event_t *ev, char *errstr,
                        size_t errstr_size);

/* Where the fields of an event type's struct are in a record schema. */
typedef struct dlb_codec_fieldmap dlb_codec_fieldmap_t;

/** @brief The map of type's struct fields in record schema rs (a value of rs
 *         is then read by index, not by name). @returns NULL when out of
 *         memory or rs is no record: reading by name is then what is left. */
dlb_codec_fieldmap_t *dlb_codec_fieldmap_new(dlb_event_type_t type, avro_schema_t rs);
void dlb_codec_fieldmap_free(dlb_codec_fieldmap_t *m);

/** @brief dlb_codec_from_avro() through map m (NULL: by name). A record of
 *         another schema than m's is read by name: the same result. */
int dlb_codec_from_avro_mapped(dlb_event_type_t type, const dlb_codec_fieldmap_t *m,
                               avro_value_t *rec, dlb_event_t *ev, char *errstr,
                               size_t errstr_size);

/** @brief The most items list field (an array or map, by its name in the
 *         record that holds it) of an event of type may hold: what the struct
 *         side accepts (DLB_PODS_MAX, DLB_OOM_PODS_MAX, ...), checked by the
 *         decoder before it allocates. @returns 0 for a field that is no list. */
size_t dlb_codec_list_max(dlb_event_type_t type, const char *field);

/** @brief Struct -> Avro: fill rec, a fresh generic value of the newest schema of ev's type.
 *  @returns 0, DLB_ERR_INVALID (unterminated string, NULL list item), DLB_ERR_GENERIC. */
int dlb_codec_to_avro(const dlb_event_t *ev, avro_value_t *rec, char *errstr, size_t errstr_size);

/* A new generic value of the newest schema of ev's type, filled from ev (what
 * encoding and JSON rendering both start from). On success the caller owns *v
 * (avro_value_decref) and *entry (if not NULL) names its schema; on failure
 * nothing is held. */
int dlb_codec_value_new(const dlb_catalog_t *cat, const dlb_event_t *ev,
                        const dlb_schema_entry_t **entry, avro_value_t *v, char *errstr,
                        size_t errstr_size);

#endif
