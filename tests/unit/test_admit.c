/* What a consumer admits (pipeline/codec/admit.c), the checks the gateway
 * runs on what it produces before it acknowledges: bytes that decode but
 * hold text that is not UTF-8 (which the encoder writes as given), an event
 * that decodes but does not validate, and an event time too far ahead of
 * its record's timestamp, each with its DLQ stage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admit.h"
#include "catalog_fixture.h"
#include "codec.h"
#include "err.h"
#include "event.h"

#define NOW   1700000000000LL
#define DAY_S 86400

static void job_event(dlb_event_t *ev, const char *uid)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = DLB_EV_JOB;
    snprintf(ev->u.job.event_id, sizeof(ev->u.job.event_id), "ev-1");
    snprintf(ev->u.job.job_uid, sizeof(ev->u.job.job_uid), "%s", uid);
    ev->u.job.event_time_ms = NOW;
    ev->u.job.has_job_type = 1;
    snprintf(ev->u.job.job_type, sizeof(ev->u.job.job_type), "ParameterServerStrategy");
}

/* Encode ev, then admit the bytes as of record_ms. */
static int admit(const dlb_event_t *ev, int64_t record_ms, const char **stage, char *err,
                 size_t size)
{
    dlb_codec_decoder_t *d;
    dlb_event_t back;
    void *buf = NULL;
    size_t len = 0;
    int rc;

    assert_int_equal(dlb_codec_encode(cat, ev, &buf, &len, err, size), 0);
    assert_int_equal(dlb_codec_decoder_new(cat, &d, err, size), 0);
    memset(&back, 0, sizeof(back));
    rc = dlb_codec_admit(d, buf, len, record_ms, DAY_S, &back, stage, err, size);
    if (!rc)
        assert_string_equal(dlb_event_job_uid(&back), dlb_event_job_uid(ev));
    dlb_event_clear(&back);
    dlb_codec_decoder_destroy(d);
    free(buf);
    return rc;
}

static void test_good(void **state)
{
    const char *stage = "x";
    char err[512];
    dlb_event_t ev;

    (void)state;
    job_event(&ev, "job-1");
    assert_int_equal(admit(&ev, NOW, &stage, err, sizeof(err)), 0);
    assert_null(stage);
    /* Behind its record is fine (replays, late reports). */
    ev.u.job.event_time_ms = NOW - 30LL * DAY_S * 1000;
    assert_int_equal(admit(&ev, NOW, &stage, err, sizeof(err)), 0);
}

static void test_not_utf8(void **state)
{
    const char *stage = NULL;
    char err[512];
    dlb_event_t ev;

    (void)state;
    /* The encoder writes what it is given; the decoder refuses it. */
    job_event(&ev, "job-\xff\xfe");
    assert_int_equal(admit(&ev, NOW, &stage, err, sizeof(err)), DLB_ERR_DECODE);
    assert_string_equal(stage, "decode");
    assert_non_null(strstr(err, "job_uid: not UTF-8: byte 5 of 6 is 0xff"));
    job_event(&ev, "job-1");
    snprintf(ev.u.job.job_type, sizeof(ev.u.job.job_type), "PS\xc3\x28");
    assert_int_equal(admit(&ev, NOW, &stage, err, sizeof(err)), DLB_ERR_DECODE);
    assert_non_null(strstr(err, "job_type: not UTF-8"));
}

static void test_invalid(void **state)
{
    const char *stage = NULL;
    char err[512];
    dlb_event_t ev;

    (void)state;
    job_event(&ev, "job-1");
    ev.u.job.event_id[0] = '\0';
    assert_int_equal(admit(&ev, NOW, &stage, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(stage, "validate");
    assert_non_null(strstr(err, "event_id"));
}

static void test_time_ahead(void **state)
{
    const char *stage = NULL;
    char err[512];
    dlb_event_t ev;

    (void)state;
    job_event(&ev, "job-1");
    ev.u.job.event_time_ms = NOW + 10LL * DAY_S * 1000;
    assert_int_equal(admit(&ev, NOW, &stage, err, sizeof(err)), DLB_ERR_INVALID);
    assert_string_equal(stage, "validate");
    assert_non_null(strstr(err, "864000 s ahead of its record's timestamp"));
    assert_non_null(strstr(err, "event.time.skew.s 86400"));
    /* No record time known: not checked. */
    assert_int_equal(admit(&ev, -1, &stage, err, sizeof(err)), 0);
    /* Exactly at the bound is still fine. */
    ev.u.job.event_time_ms = NOW + (int64_t)DAY_S * 1000;
    assert_int_equal(admit(&ev, NOW, &stage, err, sizeof(err)), 0);
    assert_int_equal(dlb_codec_time_check(NOW + 1, NOW, 0, err, sizeof(err)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_not_utf8),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_time_ahead),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
