/* JSON text <-> events, for `emit` input lines and human-readable output.
 *
 * JSON becomes an Avro value of the newest schema (avro_json.c), then a struct
 * through the same mapping as the binary decoder (codec_map.c); output goes
 * the other way. */
#include "codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "clock.h"
#include "codec_internal.h"
#include "err.h"
#include "uuid.h"

/* ---- generated defaults ------------------------------------------------ */

static int add_defaults(cJSON *root, char *errstr, size_t size)
{
    if (!cJSON_GetObjectItemCaseSensitive(root, "event_id")) {
        char id[37];
        if (dlb_uuid4(id))
            return dlb_seterr(errstr, size, DLB_ERR_GENERIC, "no random bytes for an event id");
        if (!cJSON_AddStringToObject(root, "event_id", id))
            return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    }
    if (!cJSON_GetObjectItemCaseSensitive(root, "event_time_ms") &&
        !cJSON_AddNumberToObject(root, "event_time_ms", (double)dlb_clock_wall_ms()))
        return dlb_seterr(errstr, size, DLB_ERR_NOMEM, "out of memory");
    return 0;
}

/* ---- JSON -> event ------------------------------------------------------- */

int dlb_json_to_event(const dlb_catalog_t *cat, const char *json, size_t len, int gen_defaults,
                      dlb_event_t *ev, char *errstr, size_t errstr_size)
{
    const dlb_schema_entry_t *e;
    const char *end = NULL;
    const cJSON *type;
    dlb_event_type_t t;
    cJSON *root;
    avro_value_t v;
    int have_v = 0, err = 0;

    memset(ev, 0, sizeof(*ev));
    root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        return dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE, "not valid JSON (at byte %zu)", at);
    }
    for (const char *p = end; p && p < json + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != '\0') {
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE,
                             "not valid JSON: text after the object (at byte %zu)",
                             (size_t)(p - json));
            goto out;
        }
    if (!cJSON_IsObject(root)) {
        char got[48];
        dlb_json_describe(root, got, sizeof(got));
        err =
            dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE, "expected a JSON object, got %s", got);
        goto out;
    }
    type = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (!type) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE, "type: missing");
        goto out;
    }
    if (!cJSON_IsString(type)) {
        char got[48];
        dlb_json_describe(type, got, sizeof(got));
        err =
            dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE, "type: expected a string, got %s", got);
        goto out;
    }
    if ((t = dlb_event_type_parse(type->valuestring)) == DLB_EV_NONE) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE, "type: unknown event type \"%s\"",
                         type->valuestring);
        goto out;
    }
    if (!(e = dlb_catalog_latest(cat, t))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_DECODE,
                         "type: no schema for \"%s\" in the catalog", type->valuestring);
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(root, "type");
    if (gen_defaults && (err = add_defaults(root, errstr, errstr_size)))
        goto out;
    if (avro_generic_value_new(e->iface, &v)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "%s", avro_strerror());
        goto out;
    }
    have_v = 1;
    if ((err = dlb_json_to_avro(cat, e, root, &v, "", errstr, errstr_size)) ||
        (err = dlb_codec_from_avro(t, &v, ev, errstr, errstr_size)) ||
        (err = dlb_event_validate(ev, errstr, errstr_size)))
        goto out;
out:
    if (err)
        dlb_event_clear(ev);
    if (have_v)
        avro_value_decref(&v);
    cJSON_Delete(root);
    return err;
}

/* ---- event -> JSON ------------------------------------------------------- */

int dlb_event_to_json(const dlb_catalog_t *cat, const dlb_event_t *ev, char **out, char *errstr,
                      size_t errstr_size)
{
    cJSON *obj = NULL, *fields = NULL, *item;
    avro_value_t v;
    int err;

    *out = NULL;
    if ((err = dlb_codec_value_new(cat, ev, NULL, &v, errstr, errstr_size)))
        return err;
    /* "type" first, then the fields in schema order. */
    if (!(obj = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(obj, "type", dlb_event_type_name(ev->type)) ||
        !(fields = dlb_avro_to_json(&v))) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "cannot build JSON: %s",
                         avro_strerror());
        goto out;
    }
    while ((item = fields->child)) {
        cJSON_DetachItemViaPointer(fields, item);
        cJSON_AddItemToArray(obj, item); /* keeps item->string: an object member */
    }
    if (!(*out = cJSON_PrintUnformatted(obj)))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
out:
    cJSON_Delete(fields);
    cJSON_Delete(obj);
    avro_value_decref(&v);
    return err;
}
