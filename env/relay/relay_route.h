/* Whom a record the relay polls is for: the rule apart from the Kafka
 * calls, so it is tested on its own (tests/unit/test_relay_route.c).
 *
 * The front's event topics (<front>.<short> for each of dlb_switch_topics)
 * are copied into every environment, their switch markers moving whom the
 * records after them are for; the environments' answers (<env>.plans,
 * <env>.configs) go to the front when they answer a record stamped for that
 * environment, or, unstamped, when that environment is the real one. */
#ifndef DLB_RELAY_ROUTE_H
#define DLB_RELAY_ROUTE_H

#include <stddef.h>

/* The environments' answer topics, forwarded to the front (short names,
 * NULL-terminated). */
extern const char *const dlb_relay_answer_topics[];

typedef enum dlb_relay_topic_kind {
    DLB_RELAY_FRONT,  /* a front event topic */
    DLB_RELAY_ANSWER, /* an answer topic of a known environment */
    DLB_RELAY_OTHER,  /* neither: consumed, not relayed */
} dlb_relay_topic_kind_t;

/** @returns whether topic is "<prefix>.<short>" for a short name of list
 *           (NULL-terminated). */
int dlb_relay_topic_is(const char *topic, const char *prefix, size_t prefix_len,
                       const char *const *list);

/** @brief What topic is: front names the front environment, envs its
 *         envs_cnt environments (a name that is a prefix of another's is
 *         told apart by the dot after it).
 *  @param env  set to the index in envs of an answer's environment
 *  @param short_name  set to the short topic name within topic (after the
 *         environment's dot), the whole topic for DLB_RELAY_OTHER without one */
dlb_relay_topic_kind_t dlb_relay_topic_kind(const char *topic, const char *front,
                                            const char *const *envs, size_t envs_cnt, size_t *env,
                                            const char **short_name);

/** @returns whether an answer of environment src goes to the front: stamp
 *           (the front record it answers was stamped for, NULL when it has
 *           none) names src, or, unstamped, src is real ("" when none is). */
int dlb_relay_answer_forwarded(const char *src, const char *stamp, const char *real);

#endif
