/* Random (version 4) UUIDs: event ids that producers make up. */
#include "uuid.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

static int random_bytes(uint8_t *buf, size_t n)
{
    ssize_t got = getrandom(buf, n, 0);
    int fd;

    if (got == (ssize_t)n)
        return 0;
    /* Kernels before 3.17 lack getrandom(). */
    if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    got = read(fd, buf, n);
    close(fd);
    return got == (ssize_t)n ? 0 : -1;
}

int dlb_uuid4(char out[37])
{
    uint8_t b[16];

    if (random_bytes(b, sizeof(b)))
        return -1;
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* RFC 4122 version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return 0;
}
