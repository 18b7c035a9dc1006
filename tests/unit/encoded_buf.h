/* The simulator tests' byte streams: each published event encoded (Avro,
 * Confluent framing) and appended, so two runs compare byte for byte. */
#ifndef DLB_TEST_ENCODED_BUF_H
#define DLB_TEST_ENCODED_BUF_H

#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "codec.h"
#include "err.h"
#include "vec.h"

/* Append ev, encoded, to *buf (*len bytes used of *cap). */
static inline int encoded_append(const dlb_catalog_t *cat, const dlb_event_t *ev,
                                 unsigned char **buf, size_t *len, size_t *cap, char *errstr,
                                 size_t errstr_size)
{
    void *one = NULL;
    size_t n = 0;
    int err;

    if ((err = dlb_codec_encode(cat, ev, &one, &n, errstr, errstr_size)))
        return err;
    if (dlb_vec_reserve((void **)buf, cap, *len + n, 1)) {
        free(one);
        return DLB_ERR_NOMEM;
    }
    memcpy(*buf + *len, one, n);
    *len += n;
    free(one);
    return 0;
}

#endif
