/* Shared by the libFuzzer targets: the catalog, the round-trip checks and
 * the abort that turns a broken property into a libFuzzer crash report (with
 * the input saved as crash-<sha1>). */
#ifndef DLB_FUZZ_COMMON_H
#define DLB_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "event.h"

#include "fuzz_fail.h"

/* Loaded once per process and never freed: LeakSanitizer sees it through the
 * static pointer, so it does not count as a leak. */
static const dlb_catalog_t *fuzz_catalog(void)
{
    static dlb_catalog_t *cat;
    char err[512];

    if (!cat && dlb_catalog_new(&cat, err, sizeof(err)))
        fuzz_fail("catalog: %s", err);
    return cat;
}

/* A failed call must say why and leave nothing to release. */
static void fuzz_check_failure(const char *what, int rc, const char *err, const dlb_event_t *ev)
{
    if (!err[0])
        fuzz_fail("%s failed (%s) with an empty message", what, dlb_err_name(rc));
    if (ev->type != DLB_EV_NONE)
        fuzz_fail("%s failed (%s: %s) but left an event of type %d", what, dlb_err_name(rc), err,
                  (int)ev->type);
}

/* Decodes data through decoder d, which must give what a fresh decode gave:
 * rc, err and, on success, an event equal to ev. */
static void fuzz_check_kept(dlb_codec_decoder_t *d, const uint8_t *data, size_t size, int rc,
                            const char *err, const dlb_event_t *ev, const char *when)
{
    char err2[512] = "";
    dlb_event_t kept;
    int rc2 = dlb_codec_decoder_decode(d, data, size, &kept, err2, sizeof(err2));

    if (rc != rc2 || (rc && strcmp(err, err2)) || (!rc && !dlb_event_equal(ev, &kept)))
        fuzz_fail("decoded afresh: %s (%s); through a decoder %s: %s (%s)%s", dlb_err_name(rc), err,
                  when, dlb_err_name(rc2), err2, !rc && !rc2 ? ", different events" : "");
    dlb_event_clear(&kept);
}

/* Decode a fuzz input afresh, and through a decoder that first read the
 * input's first half (mostly a failed message of the same schema id), then
 * the input itself: its kept values, reset after a failure and after a
 * success, must give the same result, message and event. The decoder lives
 * for one input and is destroyed after it, so a value it fails to release
 * is a leak LeakSanitizer reports (one kept for the whole process would
 * hide that among what it legitimately holds). @returns 0 with *ev decoded,
 * or -1 when it failed as bad input should (checked here). */
static inline int fuzz_decode(const uint8_t *data, size_t size, dlb_event_t *ev)
{
    char err[512] = "", ignored[512];
    dlb_codec_decoder_t *d = NULL;
    dlb_event_t half;
    int rc = dlb_codec_decode(fuzz_catalog(), data, size, ev, err, sizeof(err));

    if (dlb_codec_decoder_new(fuzz_catalog(), &d, ignored, sizeof(ignored)))
        fuzz_fail("decoder: %s", ignored);
    if (!dlb_codec_decoder_decode(d, data, size / 2, &half, ignored, sizeof(ignored)))
        dlb_event_clear(&half);
    fuzz_check_kept(d, data, size, rc, err, ev, "after the input's first half");
    fuzz_check_kept(d, data, size, rc, err, ev, "after the input itself");
    dlb_codec_decoder_destroy(d);
    if (!rc)
        return 0;
    if (rc != DLB_ERR_FRAMING && rc != DLB_ERR_SCHEMA_ID && rc != DLB_ERR_DECODE)
        fuzz_fail("decode returned %s: %s", dlb_err_name(rc), err);
    fuzz_check_failure("decode", rc, err, ev);
    return -1;
}

/* Encode, decode again, encode again: the same bytes. same_event: the
 * decoded event equals ev too; otherwise (a state's or a plan's strings may
 * keep bytes past their NUL from an earlier value, which no encoding
 * carries) it must be valid. */
static inline void fuzz_avro_through(const char *what, const dlb_event_t *ev, int same_event)
{
    const dlb_catalog_t *cat = fuzz_catalog();
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    dlb_event_t back;
    char err[512] = "";
    int rc;

    if ((rc = dlb_codec_encode(cat, ev, &buf, &len, err, sizeof(err))))
        fuzz_fail("%s does not encode: %s: %s", what, dlb_err_name(rc), err);
    if ((rc = dlb_codec_decode(cat, buf, len, &back, err, sizeof(err))))
        fuzz_fail("%s, encoded, does not decode: %s: %s", what, dlb_err_name(rc), err);
    if (same_event && !dlb_event_equal(ev, &back))
        fuzz_fail("%s: encode -> decode changed the event", what);
    if (!same_event && dlb_event_validate(&back, err, sizeof(err)))
        fuzz_fail("%s, read back, is not valid: %s", what, err);
    if ((rc = dlb_codec_encode(cat, &back, &buf2, &len2, err, sizeof(err))))
        fuzz_fail("%s, read back, does not encode: %s: %s", what, dlb_err_name(rc), err);
    if (len != len2 || memcmp(buf, buf2, len))
        fuzz_fail("%s changed on its way through Avro", what);
    dlb_event_clear(&back);
    free(buf);
    free(buf2);
}

#endif
