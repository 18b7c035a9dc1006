/* What a consumer admits: the checks every input message passes before a
 * consumer takes it (the stream's "decode" and "validate" stages; what fails
 * them goes to the DLQ). A producer that acknowledges what it sends (the
 * gateway) runs the same checks on the bytes it is about to produce, so an
 * acknowledged event is one the history keeps. */
#ifndef DLB_ADMIT_H
#define DLB_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "event.h"

/** @brief Decode buf (framing, schema id, Avro, UTF-8 and NUL-free texts,
 *         lengths), validate the event (dlb_event_validate()) and check its
 *         time is at most skew_s ahead of its record's timestamp.
 *  @param record_ms the record's timestamp (ms since the epoch); < 0: not
 *         known, the time is not checked (nor when skew_s <= 0)
 *  @param ev what was decoded; the caller clears it, whatever the result
 *  @param stage set to "decode" or "validate" when a check fails: the DLQ's
 *         stage for it
 *  @returns 0; what dlb_codec_decoder_decode() returns (DLB_ERR_TRANSIENT:
 *           an external registry could not be asked, try again); or
 *           DLB_ERR_INVALID, errstr naming the field. */
int dlb_codec_admit(dlb_codec_decoder_t *d, const void *buf, size_t len, int64_t record_ms,
                    int skew_s, dlb_event_t *ev, const char **stage, char *errstr,
                    size_t errstr_size);

/** @brief The event time check alone: 0, or DLB_ERR_INVALID when event_ms is
 *         more than skew_s ahead of record_ms (an event time far ahead would
 *         hold the ordering barrier and every time window open). */
int dlb_codec_time_check(int64_t event_ms, int64_t record_ms, int skew_s, char *errstr,
                         size_t errstr_size);

#endif
