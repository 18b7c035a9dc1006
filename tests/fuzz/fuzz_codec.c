/* libFuzzer target: dlb_codec_decode() of arbitrary bytes, what the optimizer
 * does with every message on its input topics.
 *
 * Properties, besides no crash, leak or undefined behaviour:
 *  - a failure is framing, schema_id or decode (the DLQ classes of a decode),
 *    with a message, and leaves no event behind;
 *  - a decoded event validates or fails as invalid with a message;
 *  - a decoded event re-encodes, decodes back to the same event, and encodes
 *    to the same bytes again; checked for every decoded event, valid or not;
 *  - a decoded event renders as JSON (what `dlbrain plans -f json` prints),
 *    and a valid one reads back from that JSON as the same event, unless a
 *    long is beyond the +-2^53 JSON input takes (docs/events.md). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const dlb_catalog_t *cat = fuzz_catalog();
    dlb_event_t ev, back;
    char *json = NULL, err[512] = "";
    int rc;

    if (fuzz_decode(data, size, &ev))
        return 0;
    err[0] = '\0';
    rc = dlb_event_validate(&ev, err, sizeof(err));
    if (rc && (rc != DLB_ERR_INVALID || !err[0]))
        fuzz_fail("validate returned %s: \"%s\"", dlb_err_name(rc), err);
    fuzz_avro_through(rc ? "invalid event" : "valid event", &ev, 1);
    if (dlb_event_to_json(cat, &ev, &json, err, sizeof(err)))
        fuzz_fail("a decoded event does not render as JSON: %s", err);
    if (!rc) {
        rc = dlb_json_to_event(cat, json, strlen(json), 0, &back, err, sizeof(err));
        if (rc && !strstr(err, "JSON integers are exact up to +-2^53"))
            fuzz_fail("a valid event's JSON is refused: %s: %s\n%s", dlb_err_name(rc), err, json);
        if (!rc && !dlb_event_equal(&ev, &back))
            fuzz_fail("Avro -> event -> JSON -> event changed the event:\n%s", json);
        dlb_event_clear(&back);
    }
    free(json);
    dlb_event_clear(&ev);
    return 0;
}
