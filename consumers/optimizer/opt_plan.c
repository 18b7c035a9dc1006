/* Plan builders shared by the optimizers. */
#include "opt_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dlb_group_resource_t *dlb_plan_add_group(dlb_plan_t *plan, const char *group)
{
    dlb_group_resource_t *groups, *g;

    /* Plans hold a handful of groups (ps, worker, chief, evaluator): growing
     * by one keeps the struct free of a capacity field the codecs would have
     * to know about. */
    groups = realloc(plan->groups, (plan->groups_cnt + 1) * sizeof(*groups));
    if (!groups)
        return NULL;
    plan->groups = groups;
    g = &groups[plan->groups_cnt++];
    memset(g, 0, sizeof(*g));
    snprintf(g->group, sizeof(g->group), "%s", group);
    return g;
}

dlb_pod_resource_t *dlb_plan_add_pod(dlb_plan_t *plan, const char *name)
{
    dlb_pod_resource_t *pods, *p;

    pods = realloc(plan->pods, (plan->pods_cnt + 1) * sizeof(*pods));
    if (!pods)
        return NULL;
    plan->pods = pods;
    p = &pods[plan->pods_cnt++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    return p;
}

dlb_pod_action_t *dlb_plan_add_action(dlb_plan_t *plan, const char *pod, const char *action)
{
    dlb_pod_action_t *acts, *a;

    acts = realloc(plan->actions, (plan->actions_cnt + 1) * sizeof(*acts));
    if (!acts)
        return NULL;
    plan->actions = acts;
    a = &acts[plan->actions_cnt++];
    memset(a, 0, sizeof(*a));
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
