/* Plan builders shared by the optimizers. */
#include "opt_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

dlb_group_resource_t *dlb_plan_add_group(dlb_plan_t *plan, const char *group)
{
    dlb_group_resource_t *g;

    /* Plans hold a handful of groups (ps, worker, chief, evaluator): growing
     * by one keeps the struct free of a capacity field the codecs would have
     * to know about. */
    if (!(g = dlb_vec_push((void **)&plan->groups, &plan->groups_cnt, sizeof(*g))))
        return NULL;
    snprintf(g->group, sizeof(g->group), "%s", group);
    return g;
}

dlb_pod_resource_t *dlb_plan_add_pod(dlb_plan_t *plan, const char *name)
{
    dlb_pod_resource_t *p;

    if (!(p = dlb_vec_push((void **)&plan->pods, &plan->pods_cnt, sizeof(*p))))
        return NULL;
    snprintf(p->name, sizeof(p->name), "%s", name);
    return p;
}

dlb_pod_action_t *dlb_plan_add_action(dlb_plan_t *plan, const char *pod, const char *action)
{
    dlb_pod_action_t *a;

    if (!(a = dlb_vec_push((void **)&plan->actions, &plan->actions_cnt, sizeof(*a))))
        return NULL;
    snprintf(a->pod, sizeof(a->pod), "%s", pod);
    snprintf(a->action, sizeof(a->action), "%s", action);
    return a;
}

dlb_group_resource_t *dlb_plan_group(dlb_plan_t *plan, const char *group)
{
    size_t i;

    if (!plan || !group)
        return NULL;
    for (i = 0; i < plan->groups_cnt; i++)
        if (!strcmp(plan->groups[i].group, group))
            return &plan->groups[i];
    return NULL;
}

dlb_group_resource_t *dlb_plan_group_get(dlb_plan_t *plan, const char *group)
{
    dlb_group_resource_t *g = dlb_plan_group(plan, group);

    return g ? g : dlb_plan_add_group(plan, group);
}
