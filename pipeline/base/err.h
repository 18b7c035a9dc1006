/* Error codes shared by every module.
 *
 * Functions return 0 on success or one of these negative codes, and fill an
 * errstr buffer owned by the caller (librdkafka/hiredis style). The class
 * decides what a consumer does next: bad input goes to the dead-letter topic,
 * a transient failure pauses and retries, anything else is a bug or fatal. */
#ifndef DLB_ERR_H
#define DLB_ERR_H

#include <stddef.h>

typedef enum dlb_err {
    DLB_OK = 0,
    DLB_ERR_GENERIC = -1,   /* programming or unexpected error */
    DLB_ERR_NOMEM = -2,     /* allocation failed */
    DLB_ERR_FRAMING = -3,   /* not Confluent framing: too short or wrong magic byte */
    DLB_ERR_SCHEMA_ID = -4, /* schema id not in the catalog */
    DLB_ERR_DECODE = -5,    /* Avro binary or JSON that does not decode */
    DLB_ERR_INVALID = -6,   /* decodes, but a value is out of range or unknown */
    DLB_ERR_TRANSIENT = -7, /* a dependency (PostgreSQL, Redis, Kafka) is unavailable */
    DLB_ERR_NOTFOUND = -8,  /* a looked-up item does not exist */
    DLB_ERR_CONF = -9,      /* bad configuration */
    DLB_ERR_FATAL = -10,    /* a client failed for good (librdkafka's fatal error): replace it or
                               stop; retrying with it gets nowhere */
} dlb_err_t;

/** @returns a stable lower-case name for an error code, e.g. "framing". Used in
 *           DLQ headers and metrics labels. */
const char *dlb_err_name(int err);

/** @brief printf into errstr, never overflowing; returns err so callers can
 *         `return dlb_seterr(errstr, size, DLB_ERR_INVALID, "...", ...)`. */
int dlb_seterr(char *errstr, size_t errstr_size, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** @brief Put a printf-formatted prefix in front of errstr's message, cutting
 *         the message's end if the two do not fit (e.g. a field path
 *         "pods[1]." before "name: too long"). */
void dlb_err_prepend(char *errstr, size_t errstr_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
