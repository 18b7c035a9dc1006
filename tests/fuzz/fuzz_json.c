/* libFuzzer target: dlb_json_to_event() of arbitrary text, what `dlbrain emit`
 * does with every input line (with --strict: no generated defaults).
 *
 * Properties, besides no crash, leak or undefined behaviour:
 *  - a failure is decode or invalid, with a message, and leaves no event;
 *  - an accepted line renders to JSON that reads back to the identical event,
 *    and that rendering is stable (event -> JSON -> event -> the same JSON);
 *  - an accepted line travels as Avro unchanged: what emit sends, the
 *    optimizer decodes to the same event. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const dlb_catalog_t *cat = fuzz_catalog();
    dlb_event_t ev, back;
    char *json = NULL, *json2 = NULL, err[512] = "";
    int rc;

    rc = dlb_json_to_event(cat, (const char *)data, size, 0, &ev, err, sizeof(err));
    if (rc) {
        if (rc != DLB_ERR_DECODE && rc != DLB_ERR_INVALID)
            fuzz_fail("json_to_event returned %s: %s", dlb_err_name(rc), err);
        fuzz_check_failure("json_to_event", rc, err, &ev);
        return 0;
    }
    if ((rc = dlb_event_to_json(cat, &ev, &json, err, sizeof(err))))
        fuzz_fail("an accepted event does not render: %s: %s", dlb_err_name(rc), err);
    if ((rc = dlb_json_to_event(cat, json, strlen(json), 0, &back, err, sizeof(err))))
        fuzz_fail("our own rendering is refused: %s: %s\n%s", dlb_err_name(rc), err, json);
    if (!dlb_event_equal(&ev, &back))
        fuzz_fail("event -> JSON -> event changed the event:\n%s", json);
    if ((rc = dlb_event_to_json(cat, &back, &json2, err, sizeof(err))))
        fuzz_fail("re-rendering failed: %s: %s", dlb_err_name(rc), err);
    if (strcmp(json, json2))
        fuzz_fail("rendering is not stable:\n%s\n%s", json, json2);
    fuzz_avro_through("accepted JSON", &ev, 1);
    free(json);
    free(json2);
    dlb_event_clear(&back);
    dlb_event_clear(&ev);
    return 0;
}
