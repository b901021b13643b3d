/*
 * Groups are created by their members alone, with no message: the id is derived from the tag,
 * the ordered members and how many identical groups this rank created before.
 */
#include <stdlib.h>
#include <string.h>
#include "core/context.h"
#include "mem/gpu.h"
#include "core/guard.h"
#include "core/handle.h"
#include "core/log.h"
#include "group/group.h"
#include "group/group_id.h"

#define COHORT_GROUP_LIVE  0x96a0911eu
#define COHORT_GROUP_FREED 0x96a0dead

static cohort_group_t *cohort_group_lookup(const cohort_group_t *handle, const char *what)
{
    return cohort_handle_lookup(handle, COHORT_HANDLE_GROUP, what);
}

cohort_group_t *cohort_group_get(const cohort_group_t *handle, const char *what)
{
    cohort_group_t *g = cohort_group_lookup(handle, what);

    return g != NULL && cohort_guard_check(g->ctx, what) == COHORT_OK ? g : NULL;
}

/* The context taken, then the group taken for this thread (core/guard.h); @a call: a call its
 * members make too, whose refusal revokes the group; -1: the group is not taken (abort, which
 * any thread may call on a group another is inside). */
static cohort_group_t *cohort_group_take(const cohort_group_t *handle, int call, const char *what)
{
    cohort_group_t *g = cohort_group_lookup(handle, what);

    if (g == NULL || cohort_guard_enter(g->ctx, what) != COHORT_OK) {
        return NULL;
    }
    /* Looked up before the context was taken: another thread may have freed it meanwhile (its
     * struct stays, in the context's pool). */
    if (!cohort_guard_still_live(g->ctx,
                                 g->magic == COHORT_GROUP_LIVE && g->handle == (uintptr_t)handle,
                                 what, handle)) {
        return NULL;
    }
    if (call >= 0 && cohort_guard_take_comm(g->comm, call, what) != COHORT_OK) {
        cohort_guard_leave(g->ctx);
        return NULL;
    }
    return g;
}

cohort_group_t *cohort_group_enter(const cohort_group_t *handle, const char *what)
{
    return cohort_group_take(handle, 0, what);
}

cohort_group_t *cohort_group_enter_call(const cohort_group_t *handle, const char *what)
{
    return cohort_group_take(handle, 1, what);
}

cohort_group_t *cohort_group_enter_any(const cohort_group_t *handle, const char *what)
{
    return cohort_group_take(handle, -1, what);
}

void cohort_group_leave(cohort_group_t *g)
{
    cohort_guard_drop_comm(g->comm);
    cohort_guard_leave(g->ctx);
}

cohort_group_t *cohort_group_handle(const cohort_group_t *g)
{
    return g == NULL ? NULL : (cohort_group_t *)g->handle;
}

static int cohort_rank_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

/* Pairwise for small groups; a sorted copy for big ones. */
int cohort_group_duplicate(const int *ranks, int n, cohort_status_t *status)
{
    int *sorted, dup = -1;

    *status = COHORT_OK;
    if (n <= 32) {
        for (int i = 1; i < n && dup < 0; i++) {
            for (int j = 0; j < i && dup < 0; j++) {
                dup = ranks[j] == ranks[i] ? ranks[i] : -1;
            }
        }
        return dup;
    }
    sorted = malloc((size_t)n * sizeof(int));
    if (sorted == NULL) {
        *status = COHORT_ERR_NO_MEMORY;
        return -1;
    }
    memcpy(sorted, ranks, (size_t)n * sizeof(int));
    qsort(sorted, (size_t)n, sizeof(int), cohort_rank_cmp);
    for (int i = 1; i < n && dup < 0; i++) {
        dup = sorted[i] == sorted[i - 1] ? sorted[i] : -1;
    }
    free(sorted);
    return dup;
}

/* Range, then duplicates. */
static cohort_status_t cohort_group_check_members(cohort_context_t *ctx, const int *ranks, int n,
                                                  int *my_index)
{
    cohort_status_t status;
    int dup;

    *my_index = -1;
    for (int i = 0; i < n; i++) {
        int r = ranks[i];
        if (r < 0 || r >= ctx->size) {
            cohort_error(ctx, "cohort_group_create: world_ranks[%d] = %d is out of range [0, %d)",
                         i, r, ctx->size);
            return COHORT_ERR_INVALID_ARG;
        }
        if (r == ctx->rank) {
            *my_index = i;
        }
    }
    dup = cohort_group_duplicate(ranks, n, &status);
    if (status != COHORT_OK) {
        cohort_error(ctx, "cohort_group_create: out of memory checking %d world ranks", n);
        return status;
    }
    if (dup >= 0) {
        cohort_error(ctx, "cohort_group_create: world rank %d appears twice in world_ranks", dup);
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

static cohort_group_t *cohort_group_alloc(cohort_context_t *ctx)
{
    cohort_group_t *g;

    /* Oldest freed first: a stale handle reads as freed for as long as possible. */
    if (!cohort_list_empty(&ctx->group_pool)) {
        g = cohort_container_of(ctx->group_pool.next, cohort_group_t, link);
        cohort_list_del(&g->link);
    } else if ((g = malloc(sizeof(*g))) == NULL) {
        return NULL;
    }
    memset(g, 0, sizeof(*g));
    cohort_list_init(&g->link);
    return g;
}

static void cohort_group_recycle(cohort_context_t *ctx, cohort_group_t *g)
{
    cohort_handle_retire(g->handle);
    g->handle = 0;
    free(g->tag);
    g->tag = NULL;
    g->comm = NULL;
    g->magic = COHORT_GROUP_FREED;
    cohort_list_push(&ctx->group_pool, &g->link);
}

/* The instance counter advances only for a group that exists, so after an error this rank's
 * next identical group gets the id its peers derive too. */
static cohort_status_t cohort_group_make(cohort_context_t *ctx, const char *tag, const int *members,
                                         int nranks, int me, int owner, uint64_t key,
                                         cohort_group_t **group_p)
{
    uint64_t instance = (uint64_t)(uintptr_t)cohort_map_get(&ctx->group_instances, key);
    cohort_group_t *g;
    cohort_status_t status;

    /* The next count is stored first (it can fail), then given back if anything below does. */
    status = cohort_map_put(&ctx->group_instances, key, (void *)(uintptr_t)(instance + 1));
    if (status != COHORT_OK) {
        return status;
    }
    g = cohort_group_alloc(ctx);
    if (g == NULL || cohort_fault(ctx, COHORT_FAULT_GROUP_CREATE)) {
        status = COHORT_ERR_NO_MEMORY;
        goto err_undo;
    }
    g->tag = strdup(tag);
    if (g->tag == NULL) {
        status = COHORT_ERR_NO_MEMORY;
        goto err_undo;
    }
    g->ctx = ctx;
    g->owner = owner;
    g->handle = cohort_handle_new(COHORT_HANDLE_GROUP, g);
    if (g->handle == 0) {
        status = COHORT_ERR_NO_MEMORY;
        goto err_undo;
    }
    status = cohort_comm_create(ctx, cohort_group_id_derive(key, instance), members, nranks, me,
                                g->tag, &g->comm);
    if (status != COHORT_OK) {
        goto err_undo;
    }
    if (ctx->comm_made != NULL) {
        ctx->comm_made(g->comm);
    }
    g->magic = COHORT_GROUP_LIVE;
    cohort_list_push(&ctx->group_list, &g->link);
    ctx->stat_groups++;
    cohort_debug(ctx, "group '%s' 0x%016llx: %d members, rank %d", tag,
                 (unsigned long long)g->comm->id, nranks, me);
    *group_p = g;
    return COHORT_OK;

err_undo:
    if (instance == 0) {
        cohort_map_del(&ctx->group_instances, key);
    } else {
        cohort_map_put(&ctx->group_instances, key, (void *)(uintptr_t)instance);
    }
    if (g != NULL) {
        cohort_group_recycle(ctx, g);
    }
    cohort_error(ctx, "cohort_group_create: group '%s' could not be made: %s", tag,
                 cohort_strerror(status));
    return status;
}

cohort_status_t cohort_group_create_owned(cohort_context_t *ctx, const char *tag,
                                          const int *world_ranks, int nranks, int owner,
                                          cohort_group_t **group_p)
{
    cohort_status_t status;
    int me;

    status = cohort_group_check_members(ctx, world_ranks, nranks, &me);
    if (status != COHORT_OK) {
        return status;
    }
    if (me < 0) {
        return COHORT_ERR_NOT_MEMBER;
    }
    return cohort_group_make(ctx, tag, world_ranks, nranks, me, owner,
                             cohort_group_key(tag, world_ranks, nranks), group_p);
}

cohort_status_t cohort_group_create_world(cohort_context_t *ctx, cohort_group_t **group_p)
{
    return cohort_group_make(ctx, "world", NULL, ctx->size, ctx->rank, COHORT_GROUP_WORLD,
                             cohort_group_key("world", NULL, ctx->size), group_p);
}

cohort_status_t cohort_group_create(cohort_context_t *ctx, const char *tag, const int *world_ranks,
                                    int nranks, cohort_group_t **group)
{
    cohort_group_t *g = NULL;
    cohort_status_t status;

    if (group == NULL) {
        cohort_error(NULL, "cohort_group_create: group (the output) is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    *group = NULL;
    status = cohort_context_enter(ctx, "cohort_group_create: ctx");
    if (status != COHORT_OK) {
        return status;
    }
    if (tag == NULL || world_ranks == NULL) {
        cohort_error(ctx, "cohort_group_create: %s is NULL", tag == NULL ? "tag" : "world_ranks");
        status = COHORT_ERR_INVALID_ARG;
    } else if (nranks <= 0 || nranks > ctx->size) {
        cohort_error(ctx, "cohort_group_create: nranks = %d, expected 1..%d", nranks, ctx->size);
        status = COHORT_ERR_INVALID_ARG;
    } else {
        status = cohort_group_create_owned(ctx, tag, world_ranks, nranks, COHORT_GROUP_USER, &g);
    }
    if (status == COHORT_OK) {
        *group = cohort_group_handle(g);
    }
    cohort_guard_leave(ctx);
    return status;
}

void cohort_group_destroy(cohort_group_t *g)
{
    cohort_context_t *ctx = g->ctx;

    cohort_comm_destroy(g->comm);
    cohort_list_del(&g->link);
    cohort_group_recycle(ctx, g);
}

void cohort_group_free_all(cohort_context_t *ctx)
{
    while (!cohort_list_empty(&ctx->group_list)) {
        cohort_group_destroy(cohort_container_of(ctx->group_list.next, cohort_group_t, link));
    }
    while (!cohort_list_empty(&ctx->group_pool)) {
        cohort_group_t *g = cohort_container_of(ctx->group_pool.next, cohort_group_t, link);
        cohort_list_del(&g->link);
        g->magic = 0;
        free(g);
    }
    cohort_map_cleanup(&ctx->group_instances);
    ctx->world = NULL;
}

cohort_status_t cohort_group_free(cohort_group_t *handle)
{
    cohort_status_t status = COHORT_OK;
    cohort_context_t *ctx;
    cohort_group_t *g;

    if (handle == NULL) {
        return COHORT_OK;
    }
    if ((g = cohort_group_enter(handle, "cohort_group_free: group")) == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    ctx = g->ctx;
    if (g->owner != COHORT_GROUP_USER) {
        cohort_error(ctx, "cohort_group_free: group '%s' belongs to %s; it is freed with it",
                     g->tag, g->owner == COHORT_GROUP_WORLD ? "the context" : "its layout");
        status = COHORT_ERR_INVALID_ARG;
    } else {
        cohort_group_destroy(g); /* its communicator, and this thread's mark on it, are gone */
        cohort_guard_leave(ctx);
        return status;
    }
    cohort_group_leave(g);
    return status;
}

cohort_status_t cohort_group_abort(cohort_group_t *handle)
{
    /* Any thread, even while another is inside a call on the group (a watchdog's way out of a
     * hung collective): the group is not taken, only the context. */
    cohort_group_t *g = cohort_group_enter_any(handle, "cohort_group_abort: group");

    if (g == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    cohort_comm_revoke(g->comm, COHORT_ERR_REVOKED, "cohort_group_abort");
    cohort_guard_leave(g->ctx);
    return COHORT_OK;
}

cohort_status_t cohort_group_set_stream(cohort_group_t *handle, void *stream)
{
    cohort_group_t *g = cohort_group_enter(handle, "cohort_group_set_stream: group");
    cohort_status_t status = COHORT_OK;

    if (g == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    if (stream != NULL && cohort_gpu_get(g->comm->ctx) == NULL) {
        cohort_error(g->comm->ctx, "cohort_group_set_stream: a CUDA stream, but %s",
                     g->comm->ctx->mem.gpu.why[0] ? g->comm->ctx->mem.gpu.why : "no CUDA device");
        status = COHORT_ERR_UNSUPPORTED;
    } else {
        g->comm->stream = stream;
    }
    cohort_group_leave(g);
    return status;
}

/* The getters read what never changes after creation: no entry guard, only the checks. */
int cohort_group_rank(const cohort_group_t *handle)
{
    const cohort_group_t *g = cohort_group_get(handle, "cohort_group_rank: group");

    return g == NULL ? -1 : g->comm->rank;
}

int cohort_group_size(const cohort_group_t *handle)
{
    const cohort_group_t *g = cohort_group_get(handle, "cohort_group_size: group");

    return g == NULL ? -1 : g->comm->size;
}

int cohort_group_world_rank(const cohort_group_t *handle, int group_rank)
{
    const cohort_group_t *g = cohort_group_get(handle, "cohort_group_world_rank: group");

    if (g == NULL || group_rank < 0 || group_rank >= g->comm->size) {
        return -1;
    }
    return cohort_comm_world_rank(g->comm, group_rank);
}

uint64_t cohort_group_id(const cohort_group_t *handle)
{
    const cohort_group_t *g = cohort_group_get(handle, "cohort_group_id: group");

    return g == NULL ? 0 : g->comm->id;
}
