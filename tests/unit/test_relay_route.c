/* Whom a record the relay polls is for (env/relay/relay_route.h): front
 * event topics copied, answers of known environments forwarded by their
 * stamp or, unstamped, from the real one; anything else dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "relay_route.h"

static const char *const envs[] = {"green", "green_b", "blue"};

static dlb_relay_topic_kind_t kind(const char *topic, size_t *env, const char **short_name)
{
    return dlb_relay_topic_kind(topic, "dlbrain", envs, 3, env, short_name);
}

static void test_front_topics(void **state)
{
    const char *sn;
    size_t env;
    (void)state;

    assert_int_equal(kind("dlbrain.job-events", &env, &sn), DLB_RELAY_FRONT);
    assert_string_equal(sn, "job-events");
    assert_int_equal(kind("dlbrain.metrics", &env, &sn), DLB_RELAY_FRONT);
    assert_int_equal(kind("dlbrain.k8s-events", &env, &sn), DLB_RELAY_FRONT);
    assert_int_equal(kind("dlbrain.plan-requests", &env, &sn), DLB_RELAY_FRONT);
    assert_int_equal(kind("dlbrain.config-requests", &env, &sn), DLB_RELAY_FRONT);
    /* The front's own answers and DLQ are not copied anywhere. */
    assert_int_equal(kind("dlbrain.plans", &env, &sn), DLB_RELAY_OTHER);
    assert_string_equal(sn, "plans");
    assert_int_equal(kind("dlbrain.dlq", &env, &sn), DLB_RELAY_OTHER);
    /* A longer name that starts with the front's is another name. */
    assert_int_equal(kind("dlbrain2.job-events", &env, &sn), DLB_RELAY_OTHER);
    assert_int_equal(kind("dlbrainjob-events", &env, &sn), DLB_RELAY_OTHER);
}

static void test_answer_topics(void **state)
{
    const char *sn;
    size_t env = 99;
    (void)state;

    assert_int_equal(kind("green.plans", &env, &sn), DLB_RELAY_ANSWER);
    assert_int_equal(env, 0);
    assert_string_equal(sn, "plans");
    /* A name that is a prefix of another's is told apart by its dot. */
    assert_int_equal(kind("green_b.configs", &env, &sn), DLB_RELAY_ANSWER);
    assert_int_equal(env, 1);
    assert_string_equal(sn, "configs");
    assert_int_equal(kind("blue.plans", &env, &sn), DLB_RELAY_ANSWER);
    assert_int_equal(env, 2);
    /* An environment's events are its own: not answers. */
    assert_int_equal(kind("green.job-events", &env, &sn), DLB_RELAY_OTHER);
    assert_string_equal(sn, "job-events");
    /* An environment no longer live (dropped since the poll). */
    assert_int_equal(kind("red.plans", &env, &sn), DLB_RELAY_OTHER);
    /* No dot at all: the short name is the topic. */
    assert_int_equal(kind("plans", &env, &sn), DLB_RELAY_OTHER);
    assert_string_equal(sn, "plans");
}

static void test_topic_is(void **state)
{
    static const char *const list[] = {"plans", "configs", NULL};
    (void)state;

    assert_true(dlb_relay_topic_is("a.plans", "a", 1, list));
    assert_false(dlb_relay_topic_is("a.plans2", "a", 1, list));
    assert_false(dlb_relay_topic_is("ab.plans", "a", 1, list));
    assert_false(dlb_relay_topic_is("a", "a", 1, list));
    assert_true(dlb_relay_answer_topics[0] && dlb_relay_answer_topics[1] &&
                !dlb_relay_answer_topics[2]);
}

/* Stamped: the environment the front record was stamped for, whatever is
 * real now (a switch in between). Unstamped: the real one only. */
static void test_answer_forwarded(void **state)
{
    (void)state;

    assert_true(dlb_relay_answer_forwarded("green", "green", "blue"));
    assert_false(dlb_relay_answer_forwarded("blue", "green", "blue"));
    assert_true(dlb_relay_answer_forwarded("blue", NULL, "blue"));
    assert_false(dlb_relay_answer_forwarded("green", NULL, "blue"));
    /* None real: an unstamped answer goes nowhere; a stamped one still does. */
    assert_false(dlb_relay_answer_forwarded("green", NULL, ""));
    assert_true(dlb_relay_answer_forwarded("green", "green", ""));
    /* A stamp naming no environment ("": stamped while none was real). */
    assert_false(dlb_relay_answer_forwarded("green", "", "green"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_front_topics),
        cmocka_unit_test(test_topic_is),
        cmocka_unit_test(test_answer_topics),
        cmocka_unit_test(test_answer_forwarded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
