/* Switch markers: how a switch of the real environment takes effect at a
 * position in the front's streams instead of at a moment.
 *
 * After a switch commits in the registry, the promoting process writes one
 * marker into every partition of the front's five event topics: an empty
 * record with header dlb.switch = "<switch id>:<env>" (the switch id is the
 * promote history row's id, so markers order like switches). The relay,
 * reading a partition, stamps every later record of it for the environment
 * of the newest marker it has read there (a marker of an older switch than
 * one already read is ignored), and forwards to the front only the answers
 * whose stamp names the environment that produced them. Where the markers
 * went is a "mark" history row. docs/environments.md, "Exactly once across a
 * switch", has the rule. */
#ifndef DLB_SWITCH_MARK_H
#define DLB_SWITCH_MARK_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

#include "conf.h"
#include "env_registry.h"

#define DLB_SWITCH_HEADER "dlb.switch"
/* Room for a header value shown in a message (dlb_switch_headers_marker). */
#define DLB_SWITCH_RAW_MAX 96

/* The front's topics that carry markers: those the relay copies into the
 * environments (the inputs of their consumers), NULL-terminated. */
extern const char *const dlb_switch_topics[];

/* Whom the records after a marker are for. id 0: no marker read (the
 * environment the relay adopted for a partition it met without one). */
typedef struct dlb_switch_stamp {
    int64_t id;
    char env[DLB_ENV_NAME_MAX + 1]; /* "" = none */
} dlb_switch_stamp_t;

/** @brief "<id>:<env>" into buf.
 *  @returns its length, or -1 when it does not fit or is no stamp
 *           dlb_switch_stamp_parse() takes (id negative, env empty or not a
 *           valid environment name): a marker must never carry one. */
int dlb_switch_stamp_format(const dlb_switch_stamp_t *s, char *buf, size_t size);

/** @brief Parse "<id>:<env>" (len bytes, not NUL-terminated).
 *  @returns 0, or DLB_ERR_INVALID (not that form, id negative, env not a
 *           valid environment name or empty). */
int dlb_switch_stamp_parse(const void *val, size_t len, dlb_switch_stamp_t *out);

/* What a record of a front topic is, by its dlb.switch header: any record
 * with the header is a marker, never an event to copy. */
typedef enum dlb_switch_kind {
    DLB_SWITCH_NONE = 0,      /* no header: an event */
    DLB_SWITCH_MARKER = 1,    /* a marker with a valid stamp */
    DLB_SWITCH_MALFORMED = 2, /* the header, but its value is no stamp */
} dlb_switch_kind_t;

/** @brief Classify by headers hdrs (NULL: none).
 *  @param out  the stamp when DLB_SWITCH_MARKER
 *  @param raw  when not NULL: the header's value as text, bytes outside
 *              printable ASCII as '?', cut to raw_size - 1 ("" when none) */
dlb_switch_kind_t dlb_switch_headers_marker(const rd_kafka_headers_t *hdrs, dlb_switch_stamp_t *out,
                                            char *raw, size_t raw_size);

/** @brief dlb_switch_headers_marker() of m's headers. */
dlb_switch_kind_t dlb_switch_marker_get(const rd_kafka_message_t *m, dlb_switch_stamp_t *out,
                                        char *raw, size_t raw_size);

/** @brief Write the markers of switch id (env became real) into every
 *         partition of the front's marker topics (front->env's prefix),
 *         wait for each to be acknowledged, and record where they went as a
 *         "mark" history row by by_user (detail: switch, front, offsets per
 *         topic and partition). Writing them twice is harmless: the second
 *         is ignored.
 *  @param written  set to the number of markers acknowledged
 *  @returns 0; DLB_ERR_INVALID (id and env make no valid stamp: nothing
 *           written); DLB_ERR_TRANSIENT (Kafka: a marker not acknowledged in
 *           time, or a front topic missing); or the registry's error. */
int dlb_switch_mark(const dlb_conf_t *front, PGconn *pg, int64_t id, const char *env,
                    const char *by_user, int *written, char *errstr, size_t errstr_size);

#endif
