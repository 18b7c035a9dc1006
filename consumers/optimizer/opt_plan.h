/* Building a plan: the optimizers' one way to add to dlb_plan_t's arrays. */
#ifndef DLB_OPT_PLAN_H
#define DLB_OPT_PLAN_H

#include "event.h"

/** @brief Append a zeroed group / pod / action entry.
 *  @returns a pointer to the new entry, or NULL when out of memory. */
dlb_group_resource_t *dlb_plan_add_group(dlb_plan_t *plan, const char *group);
dlb_pod_resource_t *dlb_plan_add_pod(dlb_plan_t *plan, const char *name);
dlb_pod_action_t *dlb_plan_add_action(dlb_plan_t *plan, const char *pod, const char *action);

/** @returns the group entry or NULL. */
dlb_group_resource_t *dlb_plan_group(dlb_plan_t *plan, const char *group);

/** @brief The plan's entry for group, appended (zeroed) when absent.
 *  @returns NULL when out of memory. */
dlb_group_resource_t *dlb_plan_group_get(dlb_plan_t *plan, const char *group);

#endif
