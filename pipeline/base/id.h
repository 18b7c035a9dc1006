/* Ids derived from another event's id: a plan's from its request's, a
 * configuration match's from its trigger's. */
#ifndef DLB_ID_H
#define DLB_ID_H

#include <stddef.h>

/* What ends a derived id that had to be shortened: '~' and 16 hex digits. */
#define DLB_ID_HASH_LEN 17

/** @brief prefix + id in buf of size bytes: whole when it fits; else the
 *         longest head of id that fits with DLB_ID_HASH_LEN more bytes and
 *         ends on a character boundary, then '~' and the FNV-1a hash of the
 *         whole id in hex. A plain cut would make two ids that differ only
 *         past it derive the same id (one request answered with another's
 *         stored plan) and could split a UTF-8 character (an id PostgreSQL
 *         and our decoder refuse). Deterministic, so a redelivery derives
 *         the same id; two ids derive one only by a 64-bit hash collision or
 *         an id made to look like another's shortened form. */
void dlb_id_derive(const char *prefix, const char *id, char *buf, size_t size);

#endif
