/* cohort_group_info: which path a group's collectives took here, for the user to print. It
 * reads the group (src/group) and its segment's state (src/coll), so it sits above both. */
#include <string.h>
#include "coll/shm_seg.h"
#include "core/guard.h"
#include "core/log.h"
#include "group/group.h"

/* With the context taken: another thread's call on the group changes what this reads. */
static cohort_status_t cohort_group_info_held(const cohort_group_t *g, cohort_group_info_t *info)
{
    if (info == NULL) {
        cohort_error(g->comm->ctx, "cohort_group_info: info is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    memset(info, 0, sizeof(*info));
    info->node_local = g->comm->node_local > 0 ? 1 : g->comm->node_local < 0 ? 0 : -1;
    info->segment = (cohort_segment_state_t)cohort_shm_group_state(g->comm);
    info->last_algorithm = g->comm->last_algo;
    info->collectives = g->comm->coll_seq;
    return COHORT_OK;
}

cohort_status_t cohort_group_info(const cohort_group_t *handle, cohort_group_info_t *info)
{
    cohort_group_t *g = cohort_group_enter_any(handle, "cohort_group_info: group");
    cohort_status_t status;

    if (g == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_group_info_held(g, info);
    cohort_guard_leave(g->ctx);
    return status;
}
