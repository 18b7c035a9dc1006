/* Events as a producer that knows only an older schema version writes them,
 * for the schema-evolution tests and the fuzz seeds. Include after <cmocka.h>.
 *
 * The event's JSON loses every field the older schema lacks (at any depth),
 * is set into a value of that schema and framed with its id. What the newest
 * reader must make of it is that same JSON read as an `emit` line: the
 * missing fields take the newest schema's defaults both ways. */
#ifndef DLB_OLD_WRITER_H
#define DLB_OLD_WRITER_H

#include <stdint.h>
#include <stdlib.h>

#include <avro.h>
#include <cJSON.h>

#include "catalog.h"
#include "codec.h"
#include "codec_internal.h"

/* Removes from j what schema s cannot hold: record fields it lacks, through
 * unions, arrays and maps. */
static void ow_strip(cJSON *j, avro_schema_t s)
{
    cJSON *m, *next;

    s = dlb_avro_deref(s);
    if (is_avro_union(s)) {
        for (size_t i = 0; i < avro_schema_union_size(s); i++) {
            avro_schema_t b = dlb_avro_deref(avro_schema_union_branch(s, (int)i));
            if ((is_avro_record(b) || is_avro_map(b)) ? cJSON_IsObject(j)
                                                      : is_avro_array(b) && cJSON_IsArray(j)) {
                ow_strip(j, b);
                return;
            }
        }
    } else if (is_avro_record(s) && cJSON_IsObject(j)) {
        for (m = j->child; m; m = next) {
            int idx = avro_schema_record_field_get_index(s, m->string);
            next = m->next;
            if (idx < 0)
                cJSON_Delete(cJSON_DetachItemViaPointer(j, m));
            else
                ow_strip(m, avro_schema_record_field_get_by_index(s, idx));
        }
    } else if (is_avro_array(s) && cJSON_IsArray(j)) {
        cJSON_ArrayForEach(m, j) ow_strip(m, avro_schema_array_items(s));
    } else if (is_avro_map(s) && cJSON_IsObject(j)) {
        cJSON_ArrayForEach(m, j) ow_strip(m, avro_schema_map_values(s));
    }
}

/* ev framed with the older schema `id` of its type in catalog c (malloc'ed, *len bytes),
 * and in *json (when not NULL; cJSON_free) the `emit` line of what it holds,
 * which reads as the event the newest reader must decode it to. */
static uint8_t *ow_frame(const dlb_catalog_t *c, int32_t id, const dlb_event_t *ev, size_t *len,
                         char **json)
{
    const dlb_schema_entry_t *e = dlb_catalog_by_id(c, id);
    char *text = NULL, err[512] = "";
    avro_writer_t w;
    avro_value_t v;
    uint8_t *buf;
    cJSON *j;
    size_t sz = 0;

    assert_non_null(e);
    assert_int_equal(e->type, ev->type);
    assert_non_null(e->resolver); /* older than the newest */
    if (dlb_event_to_json(c, ev, &text, err, sizeof(err)))
        fail_msg("id %d: %s", (int)id, err);
    assert_non_null(j = cJSON_Parse(text));
    free(text);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "type");
    ow_strip(j, e->schema);
    assert_int_equal(avro_generic_value_new(e->iface, &v), 0);
    if (dlb_json_to_avro(c, e, j, &v, "", err, sizeof(err)))
        fail_msg("id %d: %s", (int)id, err);
    assert_int_equal(avro_value_sizeof(&v, &sz), 0);
    assert_non_null(buf = calloc(1, DLB_FRAME_HEADER + sz));
    buf[1] = (uint8_t)((uint32_t)id >> 24);
    buf[2] = (uint8_t)((uint32_t)id >> 16);
    buf[3] = (uint8_t)((uint32_t)id >> 8);
    buf[4] = (uint8_t)id;
    assert_non_null(w = avro_writer_memory((const char *)buf + DLB_FRAME_HEADER, (int64_t)sz));
    assert_int_equal(avro_value_write(w, &v), 0);
    avro_writer_free(w);
    avro_value_decref(&v);
    *len = DLB_FRAME_HEADER + sz;
    if (json) {
        /* "type" first, as dlb_event_to_json() puts it. */
        cJSON *t = cJSON_CreateString(dlb_event_type_name(ev->type));
        assert_non_null(t);
        assert_true(cJSON_InsertItemInArray(j, 0, t));
        t->string = strdup("type");
        assert_non_null(t->string);
        assert_non_null(*json = cJSON_PrintUnformatted(j));
    }
    cJSON_Delete(j);
    return buf;
}

#endif
