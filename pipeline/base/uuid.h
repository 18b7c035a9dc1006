/* Random (version 4) UUIDs, the event ids producers make up. */
#ifndef DLB_UUID_H
#define DLB_UUID_H

/** @brief A random RFC 4122 version 4 UUID, lower-case, 36 characters.
 *  @returns 0, or -1 when the kernel gave no random bytes. */
int dlb_uuid4(char out[37]);

#endif
