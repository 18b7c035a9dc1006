/* Shared by the libFuzzer targets: the catalog, a deep event comparison and
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

/* 1 if a and b hold the same event. Byte comparison: every decoder starts
 * from a zeroed struct and writes each string with its NUL, so equal events
 * have equal bytes, padding and string tails included; doubles compare by
 * their bits (a NaN equals itself, -0.0 differs from 0.0). */
static int fuzz_events_equal(const dlb_event_t *a, const dlb_event_t *b)
{
    dlb_event_t x, y;

    if (a->type != b->type)
        return 0;
    memcpy(&x, a, sizeof(x));
    memcpy(&y, b, sizeof(y));
    switch (a->type) {
    case DLB_EV_RUNTIME:
        if (a->u.rt.pods_cnt != b->u.rt.pods_cnt ||
            (a->u.rt.pods_cnt &&
             memcmp(a->u.rt.pods, b->u.rt.pods, a->u.rt.pods_cnt * sizeof(*a->u.rt.pods))))
            return 0;
        x.u.rt.pods = y.u.rt.pods = NULL;
        break;
    case DLB_EV_PLAN:
        if (a->u.plan.groups_cnt != b->u.plan.groups_cnt ||
            a->u.plan.pods_cnt != b->u.plan.pods_cnt ||
            a->u.plan.actions_cnt != b->u.plan.actions_cnt ||
            (a->u.plan.actions_cnt && memcmp(a->u.plan.actions, b->u.plan.actions,
                                             a->u.plan.actions_cnt * sizeof(*a->u.plan.actions))) ||
            (a->u.plan.groups_cnt && memcmp(a->u.plan.groups, b->u.plan.groups,
                                            a->u.plan.groups_cnt * sizeof(*a->u.plan.groups))) ||
            (a->u.plan.pods_cnt &&
             memcmp(a->u.plan.pods, b->u.plan.pods, a->u.plan.pods_cnt * sizeof(*a->u.plan.pods))))
            return 0;
        x.u.plan.groups = y.u.plan.groups = NULL;
        x.u.plan.pods = y.u.plan.pods = NULL;
        x.u.plan.actions = y.u.plan.actions = NULL;
        break;
    case DLB_EV_CONFIG_MATCH:
        if (a->u.cm.rule_ids_cnt != b->u.cm.rule_ids_cnt ||
            a->u.cm.values_cnt != b->u.cm.values_cnt)
            return 0;
        for (size_t i = 0; i < a->u.cm.rule_ids_cnt; i++)
            if (strcmp(a->u.cm.rule_ids[i], b->u.cm.rule_ids[i]))
                return 0;
        for (size_t i = 0; i < a->u.cm.values_cnt; i++)
            if (strcmp(a->u.cm.values[i].key, b->u.cm.values[i].key) ||
                strcmp(a->u.cm.values[i].json, b->u.cm.values[i].json))
                return 0;
        x.u.cm.rule_ids = y.u.cm.rule_ids = NULL;
        x.u.cm.values = y.u.cm.values = NULL;
        break;
    default:
        break;
    }
    return !memcmp(&x, &y, sizeof(x));
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

/* Encode, decode again: the same event, and encoding that is stable. */
static void fuzz_avro_round_trip(const char *what, const dlb_event_t *ev)
{
    const dlb_catalog_t *cat = fuzz_catalog();
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    dlb_event_t back;
    char err[512] = "";
    int rc;

    if ((rc = dlb_codec_encode(cat, ev, &buf, &len, err, sizeof(err))))
        fuzz_fail("%s: a decoded event does not encode: %s: %s", what, dlb_err_name(rc), err);
    if ((rc = dlb_codec_decode(cat, buf, len, &back, err, sizeof(err))))
        fuzz_fail("%s: our own encoding does not decode: %s: %s", what, dlb_err_name(rc), err);
    if (!fuzz_events_equal(ev, &back))
        fuzz_fail("%s: encode -> decode changed the event", what);
    if ((rc = dlb_codec_encode(cat, &back, &buf2, &len2, err, sizeof(err))))
        fuzz_fail("%s: re-encoding failed: %s: %s", what, dlb_err_name(rc), err);
    if (len != len2 || memcmp(buf, buf2, len))
        fuzz_fail("%s: encoding the same event twice gave different bytes", what);
    dlb_event_clear(&back);
    free(buf);
    free(buf2);
}

#endif
