/* Wire codec: Confluent framing around Avro binary, to and from C structs.
 *
 * Frame = byte 0 (magic, always 0) + 4-byte big-endian schema id + Avro binary
 * of the record, so a schema registry and standard Kafka tooling read it. */
#ifndef DLB_CODEC_H
#define DLB_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "event.h"

#define DLB_FRAME_MAGIC  0
#define DLB_FRAME_HEADER 5

/** @brief Encode ev with the newest schema of its type.
 *  @param out set to a malloc'ed buffer the caller frees.
 *  @returns 0, DLB_ERR_INVALID (a value the schema cannot hold), DLB_ERR_NOMEM. */
int dlb_codec_encode(const dlb_catalog_t *cat, const dlb_event_t *ev, void **out, size_t *out_len,
                     char *errstr, size_t errstr_size);

/** @brief Decode a framed message into ev (which the caller clears later).
 *         Older writer schemas are resolved to the newest one of the type.
 *  @returns 0; DLB_ERR_FRAMING (shorter than 5 bytes, magic != 0);
 *           DLB_ERR_SCHEMA_ID (id not in catalog); DLB_ERR_DECODE (truncated or
 *           bad Avro, trailing bytes, an identifier longer than its field);
 *           errstr says which. Does NOT run dlb_event_validate(). */
int dlb_codec_decode(const dlb_catalog_t *cat, const void *buf, size_t len, dlb_event_t *ev,
                     char *errstr, size_t errstr_size);

/* A decoder keeps, per writer schema id it has decoded, the avro-c values a
 * decode reads into (the newest schema's value, and for an older writer its
 * projection and resolver) and resets them for the next message instead of
 * building them again. It belongs to one thread; a catalog may serve several
 * decoders at once. What it decodes is what dlb_codec_decode() decodes: the
 * same checks, in the same order, on the same path. */
typedef struct dlb_codec_decoder dlb_codec_decoder_t;

/** @brief A decoder of cat's schemas (cat must outlive it).
 *  @returns 0 or DLB_ERR_NOMEM. */
int dlb_codec_decoder_new(const dlb_catalog_t *cat, dlb_codec_decoder_t **out, char *errstr,
                          size_t errstr_size);

void dlb_codec_decoder_destroy(dlb_codec_decoder_t *d);

/** @brief dlb_codec_decode() through d's kept values. A message that failed,
 *         or was larger than DLB_CODEC_KEEP_BYTES, releases its values (the
 *         next one of its schema builds them anew), so a decoder holds at
 *         most the values of messages up to that size, emptied.
 *  @returns what dlb_codec_decode() returns for the same bytes. */
int dlb_codec_decoder_decode(dlb_codec_decoder_t *d, const void *buf, size_t len, dlb_event_t *ev,
                             char *errstr, size_t errstr_size);

/* Messages up to this many bytes keep their schema's values for the next
 * one; a larger message's are freed after it (its items' room would stay
 * held otherwise, and building them is a small part of decoding it). */
#define DLB_CODEC_KEEP_BYTES (64 * 1024)

/** @brief The event time of a framed message, without building the event:
 *         the bytes are checked against the writer schema as a decode checks
 *         them, then the time is read from the head of the record (every
 *         schema leads with event_id and event_time_ms; a writer schema that
 *         does not is decoded in full). What a replay sorts and filters by.
 *  @returns 0 (*ms set), DLB_ERR_FRAMING, DLB_ERR_SCHEMA_ID, DLB_ERR_DECODE,
 *           or what resolving an external registry's id returns
 *           (DLB_ERR_TRANSIENT when it could not be asked). */
int dlb_codec_event_time(const dlb_catalog_t *cat, const void *buf, size_t len, int64_t *ms,
                         char *errstr, size_t errstr_size);

/** @brief Read only the header. @returns 0 or DLB_ERR_FRAMING. */
int dlb_codec_peek(const void *buf, size_t len, int32_t *schema_id, char *errstr,
                   size_t errstr_size);

/** @brief Parse one JSON object (an `emit` input line) into ev.
 *
 * The object has a "type" field naming the event type (job_event,
 * runtime_sample, node_event, plan_request, plan, config_match) and the
 * schema's fields by name. Optional (union with null) fields may be given as
 * plain values or null, or left out; fields with a schema default may be left
 * out. "event_id" and "event_time_ms" may be left out only if gen_defaults is
 * set: a random UUID and the current time are filled in. The value is checked
 * against the schema (types, missing fields, unknown fields) and then with
 * dlb_event_validate().
 *  @returns 0, DLB_ERR_DECODE (not JSON, no/unknown type, a field of the wrong
 *           type, a missing or unknown field) or DLB_ERR_INVALID; errstr names
 *           the field path, e.g. "pods[1].memory_used: expected an integer, got \"a\"". */
int dlb_json_to_event(const dlb_catalog_t *cat, const char *json, size_t len, int gen_defaults,
                      dlb_event_t *ev, char *errstr, size_t errstr_size);

/** @brief Render ev as one line of JSON in the same shape dlb_json_to_event()
 *         reads (with "type"). @param out malloc'ed, NUL-terminated. */
int dlb_event_to_json(const dlb_catalog_t *cat, const dlb_event_t *ev, char **out, char *errstr,
                      size_t errstr_size);

#endif
