/* What a consumer admits (admit.h). */
#include "admit.h"

#include <inttypes.h>

#include "err.h"

int dlb_codec_time_check(int64_t event_ms, int64_t record_ms, int skew_s, char *errstr, size_t size)
{
    int64_t skew = (int64_t)skew_s * 1000;

    /* Behind is fine: replays and late reports are. */
    if (skew <= 0 || record_ms < 0 || event_ms <= record_ms + skew)
        return 0;
    return dlb_seterr(errstr, size, DLB_ERR_INVALID,
                      "event_time_ms %" PRId64 " is %" PRId64 " s ahead of its record's timestamp "
                      "%" PRId64 " (more than event.time.skew.s %d)",
                      event_ms, (event_ms - record_ms) / 1000, record_ms, skew_s);
}

int dlb_codec_admit(dlb_codec_decoder_t *d, const void *buf, size_t len, int64_t record_ms,
                    int skew_s, dlb_event_t *ev, const char **stage, char *errstr, size_t size)
{
    int err;

    *stage = "decode";
    if ((err = dlb_codec_decoder_decode(d, buf, len, ev, errstr, size)))
        return err;
    *stage = "validate";
    if ((err = dlb_event_validate(ev, errstr, size)) ||
        (err = dlb_codec_time_check(dlb_event_time_ms(ev), record_ms, skew_s, errstr, size)))
        return err;
    *stage = NULL;
    return 0;
}
