/*
 * Groups are created by their members alone, with no message: the id is derived from the tag,
 * the ordered members and how many identical groups this rank created before.
 */
#include <stdlib.h>
#include <string.h>
#include "core/am.h"
#include "core/context.h"
#include "core/log.h"
#include "group/group.h"
#include "group/group_id.h"

/* Every live group handle in the process, so that a freed or foreign handle is rejected
 * without being dereferenced. */
static cohort_map_t cohort_live_groups;

cohort_status_t cohort_group_check(const cohort_group_t *group, const char *what)
{
    if (group == NULL) {
        cohort_error("%s is NULL", what);
        return COHORT_ERR_INVALID_ARG;
    }
    if (cohort_map_get(&cohort_live_groups, (uint64_t)(uintptr_t)group) != group) {
        cohort_error("%s %p is not a live cohort group (freed, or never created)", what,
                     (const void *)group);
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

/* Duplicates and range, in O(n) time with a bitmap for big groups, O(n^2) for small ones. */
static cohort_status_t cohort_group_check_members(const cohort_context_t *ctx, const int *ranks,
                                                  int n, int *my_index)
{
    unsigned char *seen = NULL;
    cohort_status_t status = COHORT_OK;

    if (n > 32) {
        seen = calloc((size_t)ctx->size / 8 + 1, 1);
        if (seen == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
    }
    *my_index = -1;
    for (int i = 0; i < n && status == COHORT_OK; i++) {
        int r = ranks[i];
        if (r < 0 || r >= ctx->size) {
            cohort_error("cohort_group_create: world_ranks[%d] = %d is out of range [0, %d)", i, r,
                         ctx->size);
            status = COHORT_ERR_INVALID_ARG;
            break;
        }
        if (seen != NULL) {
            if (seen[r / 8] & (1u << (r % 8))) {
                status = COHORT_ERR_INVALID_ARG;
            }
            seen[r / 8] |= (unsigned char)(1u << (r % 8));
        } else {
            for (int j = 0; j < i; j++) {
                if (ranks[j] == r) {
                    status = COHORT_ERR_INVALID_ARG;
                }
            }
        }
        if (status != COHORT_OK) {
            cohort_error("cohort_group_create: world rank %d appears twice in world_ranks", r);
        }
        if (r == ctx->rank) {
            *my_index = i;
        }
    }
    free(seen);
    return status;
}

cohort_status_t cohort_group_create_owned(cohort_context_t *ctx, const char *tag,
                                          const int *world_ranks, int nranks, int owner,
                                          cohort_group_t **group_p)
{
    cohort_group_t *g;
    cohort_status_t status;
    uint64_t key, instance;
    int me;

    status = cohort_group_check_members(ctx, world_ranks, nranks, &me);
    if (status != COHORT_OK) {
        return status;
    }
    if (me < 0) {
        return COHORT_ERR_NOT_MEMBER;
    }

    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    g->members = malloc((size_t)nranks * sizeof(int));
    g->tag = strdup(tag);
    if (g->members == NULL || g->tag == NULL) {
        status = COHORT_ERR_NO_MEMORY;
        goto err_free;
    }
    memcpy(g->members, world_ranks, (size_t)nranks * sizeof(int));
    g->ctx = ctx;
    g->size = nranks;
    g->rank = me;
    g->owner = owner;
    cohort_list_init(&g->posted);
    cohort_list_init(&g->unexpected);
    cohort_list_init(&g->held);
    cohort_list_init(&g->requests);

    key = cohort_group_key(tag, world_ranks, nranks);
    instance = (uint64_t)(uintptr_t)cohort_map_get(&ctx->instances, key);
    g->gid = cohort_group_id_derive(key, instance);
    if (cohort_map_get(&ctx->groups, g->gid) != NULL) {
        /* 64-bit ids collide with probability ~ groups^2 / 2^65: say so rather than cross
         * two groups' messages. */
        cohort_error("cohort_group_create: id 0x%016llx of group '%s' collides with a live group",
                     (unsigned long long)g->gid, tag);
        status = COHORT_ERR_INVALID_ARG;
        goto err_free;
    }
    status = cohort_map_put(&ctx->instances, key, (void *)(uintptr_t)(instance + 1));
    if (status != COHORT_OK) {
        goto err_free;
    }
    status = cohort_map_put(&ctx->groups, g->gid, g);
    if (status != COHORT_OK) {
        goto err_free;
    }
    status = cohort_map_put(&cohort_live_groups, (uint64_t)(uintptr_t)g, g);
    if (status != COHORT_OK) {
        goto err_unmap;
    }
    cohort_list_push(&ctx->group_list, &g->link);
    ctx->stat_groups++;
    cohort_debug("group '%s' 0x%016llx: %d members, rank %d", tag, (unsigned long long)g->gid,
                 nranks, me);
    cohort_am_adopt(g);
    *group_p = g;
    return COHORT_OK;

err_unmap:
    cohort_map_del(&ctx->groups, g->gid);
err_free:
    free(g->tag);
    free(g->members);
    free(g);
    return status;
}

cohort_status_t cohort_group_create(cohort_context_t *ctx, const char *tag, const int *world_ranks,
                                    int nranks, cohort_group_t **group)
{
    cohort_status_t status;

    if (group == NULL) {
        cohort_error("cohort_group_create: group (the output) is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    *group = NULL;
    if (ctx == NULL || tag == NULL || world_ranks == NULL) {
        cohort_error("cohort_group_create: %s is NULL", ctx == NULL   ? "ctx"
                                                        : tag == NULL ? "tag"
                                                                      : "world_ranks");
        return COHORT_ERR_INVALID_ARG;
    }
    if (nranks <= 0 || nranks > ctx->size) {
        cohort_error("cohort_group_create: nranks = %d, expected 1..%d", nranks, ctx->size);
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_group_create_owned(ctx, tag, world_ranks, nranks, COHORT_GROUP_USER, group);
    if (status != COHORT_OK) {
        *group = NULL;
    }
    return status;
}

void cohort_group_destroy(cohort_group_t *g)
{
    cohort_context_t *ctx = g->ctx;
    cohort_list_t *pos, *tmp;

    /* Outstanding requests stay the user's to free; they finish now, revoked. */
    cohort_list_for_each(pos, tmp, &g->requests)
    {
        cohort_request_t *req = cohort_container_of(pos, cohort_request_t, group_link);
        cohort_request_cancel(req, COHORT_ERR_REVOKED);
        cohort_list_del(&req->group_link);
        req->group = NULL;
    }
    cohort_am_group_cleanup(g);
    cohort_map_del(&ctx->groups, g->gid);
    cohort_map_del(&cohort_live_groups, (uint64_t)(uintptr_t)g);
    if (cohort_live_groups.count == 0) {
        cohort_map_cleanup(&cohort_live_groups);
    }
    cohort_list_del(&g->link);
    free(g->send_seq);
    free(g->recv_seq);
    free(g->tag);
    free(g->members);
    free(g);
}

cohort_status_t cohort_group_free(cohort_group_t *g)
{
    if (g == NULL) {
        return COHORT_OK;
    }
    if (cohort_group_check(g, "cohort_group_free: group") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    if (g->owner != COHORT_GROUP_USER) {
        cohort_error("cohort_group_free: group '%s' belongs to %s; it is freed with it", g->tag,
                     g->owner == COHORT_GROUP_WORLD ? "the context" : "its layout");
        return COHORT_ERR_INVALID_ARG;
    }
    cohort_group_destroy(g);
    return COHORT_OK;
}

cohort_status_t cohort_group_prepare(cohort_group_t *g)
{
    cohort_context_t *ctx = g->ctx;
    cohort_status_t status;

    if (g->prepared || ctx->plugin == NULL || ctx->plugin->group_prepare == NULL) {
        return COHORT_OK;
    }
    status = ctx->plugin->group_prepare(ctx->pmix, g->gid, g->members, g->size);
    if (status != COHORT_OK) {
        cohort_error("group '%s' 0x%016llx: the %s plugin could not prepare it: %s", g->tag,
                     (unsigned long long)g->gid, ctx->plugin->name, cohort_strerror(status));
        return status;
    }
    g->prepared = 1;
    return COHORT_OK;
}

cohort_status_t cohort_group_abort(cohort_group_t *g)
{
    cohort_list_t *pos, *tmp;

    if (cohort_group_check(g, "cohort_group_abort: group") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    g->revoked = 1;
    cohort_list_for_each(pos, tmp, &g->requests)
    {
        cohort_request_t *req = cohort_container_of(pos, cohort_request_t, group_link);
        cohort_request_cancel(req, COHORT_ERR_REVOKED);
    }
    return COHORT_OK;
}

int cohort_group_rank(const cohort_group_t *g)
{
    return g == NULL ? -1 : g->rank;
}

int cohort_group_size(const cohort_group_t *g)
{
    return g == NULL ? -1 : g->size;
}

int cohort_group_world_rank(const cohort_group_t *g, int group_rank)
{
    if (g == NULL || group_rank < 0 || group_rank >= g->size) {
        return -1;
    }
    return g->members[group_rank];
}

uint64_t cohort_group_id(const cohort_group_t *g)
{
    return g == NULL ? 0 : g->gid;
}
