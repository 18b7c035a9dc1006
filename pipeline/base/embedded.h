/* Files compiled into the binary by cmake/embed.cmake. */
#ifndef DLB_EMBEDDED_H
#define DLB_EMBEDDED_H

#include <stddef.h>

typedef struct dlb_embedded {
    const char *name; /* file name without directory */
    const char *data; /* contents, NUL-terminated */
    size_t len;       /* without the NUL */
} dlb_embedded_t;

/* schemas/catalog.tsv and schemas/\*.avsc */
extern const dlb_embedded_t dlb_embedded_schemas[];
/* pipeline/store/sql/NNN_*.sql, sorted by name */
extern const dlb_embedded_t dlb_embedded_migrations[];

/** @returns the embedded file by name, or NULL. */
const dlb_embedded_t *dlb_embedded_find(const dlb_embedded_t *table, const char *name);

#endif
