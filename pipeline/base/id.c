/* Derived ids (id.h). */
#include "id.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

void dlb_id_derive(const char *prefix, const char *id, char *buf, size_t size)
{
    size_t pre = strlen(prefix), len = strlen(id);
    uint64_t h = 1469598103934665603ULL;

    if (!size)
        return;
    if (pre + len < size) {
        memcpy(buf, prefix, pre);
        memcpy(buf + pre, id, len + 1);
        return;
    }
    if (size < pre + DLB_ID_HASH_LEN + 1) {
        /* No room for a hash (no caller's id buffer is this small): cut. */
        size_t p = dlb_utf8_cut(prefix, pre, size - 1);
        memcpy(buf, prefix, p);
        len = dlb_utf8_cut(id, len, size - 1 - p);
        memcpy(buf + p, id, len);
        buf[p + len] = '\0';
        return;
    }
    for (const unsigned char *u = (const unsigned char *)id; *u; u++) {
        h ^= *u;
        h *= 1099511628211ULL;
    }
    len = dlb_utf8_cut(id, len, size - 1 - pre - DLB_ID_HASH_LEN);
    snprintf(buf, size, "%s%.*s~%016" PRIx64, prefix, (int)len, id, h);
}
