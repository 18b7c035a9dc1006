/* One check shared by the determinism tests: two plans are equal field by
 * field. Include after <cmocka.h>. */
#ifndef DLB_TEST_PLAN_ASSERT_H
#define DLB_TEST_PLAN_ASSERT_H

#include "event.h"

static inline void assert_plans_equal(const dlb_plan_t *a, const dlb_plan_t *b)
{
    size_t i;

    assert_string_equal(a->plan_id, b->plan_id);
    assert_string_equal(a->optimizer, b->optimizer);
    assert_string_equal(a->reason, b->reason);
    assert_int_equal(a->groups_cnt, b->groups_cnt);
    assert_int_equal(a->pods_cnt, b->pods_cnt);
    assert_int_equal(a->actions_cnt, b->actions_cnt);
    for (i = 0; i < a->groups_cnt; i++)
        assert_memory_equal(&a->groups[i], &b->groups[i], sizeof(a->groups[i]));
    for (i = 0; i < a->pods_cnt; i++)
        assert_memory_equal(&a->pods[i], &b->pods[i], sizeof(a->pods[i]));
    for (i = 0; i < a->actions_cnt; i++)
        assert_memory_equal(&a->actions[i], &b->actions[i], sizeof(a->actions[i]));
}

#endif
