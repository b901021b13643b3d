#ifndef COHORT_GROUP_H
#define COHORT_GROUP_H

#include "cohort.h"
#include "core/comm.h"
#include "core/list.h"

typedef enum {
    COHORT_GROUP_USER,  /* cohort_group_create: freed by cohort_group_free */
    COHORT_GROUP_WORLD, /* owned by the context */
    COHORT_GROUP_LAYOUT /* owned by a layout */
} cohort_group_owner_t;

/* A group is a handle around the engine's communicator. Group structs come from a
 * per-context pool and are never given back to malloc before finalize, so a freed handle still
 * reads as freed. */
struct cohort_group {
    uint32_t magic;
    int owner; /* cohort_group_owner_t */
    cohort_context_t *ctx;
    cohort_comm_t *comm;
    char *tag;
    cohort_list_t link; /* in ctx->group_list, or the pool once freed */
};

/* Validate a user-supplied handle without trusting a stale one: INVALID_ARG (logged, naming
 * @a what) for NULL, freed or foreign handles. */
cohort_status_t cohort_group_check(const cohort_group_t *group, const char *what);

/* Internal creation, shared by the public call, the world and layouts. */
cohort_status_t cohort_group_create_owned(cohort_context_t *ctx, const char *tag,
                                          const int *world_ranks, int nranks, int owner,
                                          cohort_group_t **group);
/* The world group: members are implicit (rank i is world rank i), so nothing is sized by the
 * world size. */
cohort_status_t cohort_group_create_world(cohort_context_t *ctx, cohort_group_t **group);
void cohort_group_destroy(cohort_group_t *group);
/* Finalize: every group, then the pool. */
void cohort_group_free_all(cohort_context_t *ctx);

#endif
