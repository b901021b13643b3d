#ifndef COHORT_GROUP_H
#define COHORT_GROUP_H

#include "cohort.h"
#include "core/comm.h"
#include "base/list.h"

typedef enum {
    COHORT_GROUP_USER,  /* cohort_group_create: freed by cohort_group_free */
    COHORT_GROUP_WORLD, /* owned by the context */
    COHORT_GROUP_LAYOUT /* owned by a layout */
} cohort_group_owner_t;

/* A group wraps the engine's communicator. The user holds its handle (core/handle.h), never
 * this struct's address; the layers below pass the struct. */
struct cohort_group {
    uint32_t magic;
    int owner;        /* cohort_group_owner_t */
    uintptr_t handle; /* what the user holds */
    cohort_context_t *ctx;
    cohort_comm_t *comm;
    char *tag;
    cohort_list_t link; /* in ctx->group_list, or the pool once freed */
};

/* The group a user's handle names, or NULL (logged, naming @a what) for NULL, stale or foreign
 * handles, or in a fork child. Never reads through a stale handle. */
cohort_group_t *cohort_group_get(const cohort_group_t *handle, const char *what);
/* The same, with the context taken for this thread and the group marked as this thread's for
 * the call (core/guard.h): NULL too while another thread is inside a call on the group. Give
 * both back with cohort_group_leave. */
cohort_group_t *cohort_group_enter(const cohort_group_t *handle, const char *what);
/* The same for a call its members make too (a collective, a send or receive): refused to a
 * second thread while another is inside a call on the group, and the group is then revoked
 * (MISMATCH, told to every member). */
cohort_group_t *cohort_group_enter_call(const cohort_group_t *handle, const char *what);
/* The context taken, the group not: for a call any thread may make while another is inside a
 * call on the group (abort, a read of its state). Give it back with cohort_guard_leave. */
cohort_group_t *cohort_group_enter_any(const cohort_group_t *handle, const char *what);
/* Give back what cohort_group_enter or _enter_call took. */
void cohort_group_leave(cohort_group_t *group);
/* What the user is given for @a group (NULL for NULL). */
cohort_group_t *cohort_group_handle(const cohort_group_t *group);

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
/* A world rank listed twice in @a ranks, or -1; @a status is COHORT_ERR_NO_MEMORY when it could
 * not tell. Costs what the group's size costs, never the world's. */
int cohort_group_duplicate(const int *ranks, int n, cohort_status_t *status);

#endif
