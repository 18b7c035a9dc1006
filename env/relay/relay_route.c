/* Whom a record the relay polls is for (relay_route.h). */
#include "relay_route.h"

#include <string.h>

#include "kafka.h"
#include "switch_mark.h"

const char *const dlb_relay_answer_topics[] = {DLB_TOPIC_PLANS, DLB_TOPIC_CONFIGS, NULL};

int dlb_relay_topic_is(const char *topic, const char *prefix, size_t prefix_len,
                       const char *const *list)
{
    if (strncmp(topic, prefix, prefix_len) || topic[prefix_len] != '.')
        return 0;
    for (const char *const *t = list; *t; t++)
        if (!strcmp(topic + prefix_len + 1, *t))
            return 1;
    return 0;
}

dlb_relay_topic_kind_t dlb_relay_topic_kind(const char *topic, const char *front,
                                            const char *const *envs, size_t envs_cnt, size_t *env,
                                            const char **short_name)
{
    size_t front_len = strlen(front);
    const char *dot = strchr(topic, '.');

    *env = 0;
    *short_name = dot ? dot + 1 : topic;
    if (dlb_relay_topic_is(topic, front, front_len, dlb_switch_topics)) {
        *short_name = topic + front_len + 1;
        return DLB_RELAY_FRONT;
    }
    /* Environment names have no dot (dlb_env_name_check): the answer's
     * environment is what comes before the first. */
    for (size_t i = 0; dot && i < envs_cnt; i++) {
        size_t len = strlen(envs[i]);

        if (len == (size_t)(dot - topic) && !strncmp(envs[i], topic, len) &&
            dlb_relay_topic_is(topic, envs[i], len, dlb_relay_answer_topics)) {
            *env = i;
            return DLB_RELAY_ANSWER;
        }
    }
    return DLB_RELAY_OTHER;
}

int dlb_relay_answer_forwarded(const char *src, const char *stamp, const char *real)
{
    return stamp ? !strcmp(stamp, src) : !strcmp(src, real);
}
