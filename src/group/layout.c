/*
 * cohort_layout_*: a rank's own groups of a Megatron-style layout, created member-only. The
 * spec's kinds are built at creation; any other kind (a token such as "expert:tp-ep") on its
 * first request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/context.h"
#include "core/guard.h"
#include "core/handle.h"
#include "core/log.h"
#include "group/group.h"
#include "group/layout_gen.h"

#define LAYOUT_KIND_LEN 48

typedef struct {
    char kind[LAYOUT_KIND_LEN]; /* canonical name */
    cohort_group_t *group;      /* NULL where this rank is in no group of the kind */
} cohort_layout_entry_t;

#define COHORT_LAYOUT_LIVE  0x1a9047feu
#define COHORT_LAYOUT_FREED 0x1a90dead

/* Freed layouts stay in the context's pool until finalize, so a freed handle reads as freed. */
struct cohort_layout {
    uint32_t magic;
    uintptr_t handle; /* what the user holds (core/handle.h) */
    cohort_context_t *ctx;
    cohort_layout_spec_t spec;
    int nkinds, cap;
    cohort_layout_entry_t *kinds; /* the spec's kinds first, then those made on request */
    cohort_list_t link;           /* in the context's layout list */
};

/* The layout a user's handle names, its context taken for this thread (core/guard.h), or NULL
 * (logged). */
static cohort_layout_t *cohort_layout_enter(const cohort_layout_t *handle, const char *what)
{
    cohort_layout_t *layout = cohort_handle_lookup(handle, COHORT_HANDLE_LAYOUT, what);

    if (layout == NULL || cohort_guard_enter(layout->ctx, what) != COHORT_OK) {
        return NULL;
    }
    /* Looked up before the context was taken: another thread may have freed it meanwhile (it
     * stays in the context's pool). */
    return cohort_guard_still_live(layout->ctx,
                                   layout->magic == COHORT_LAYOUT_LIVE &&
                                       layout->handle == (uintptr_t)handle,
                                   what, handle)
               ? layout
               : NULL;
}

/* Whether another thread is inside a call on one of the layout's groups (it waits in it with
 * the context let go): freeing them under it is refused. */
static int cohort_layout_busy(const cohort_layout_t *layout)
{
    for (int k = 0; k < layout->nkinds; k++) {
        if (layout->kinds[k].group != NULL &&
            cohort_guard_comm_busy(layout->kinds[k].group->comm)) {
            return 1;
        }
    }
    return 0;
}

static void cohort_layout_destroy(cohort_layout_t *layout)
{
    for (int k = 0; k < layout->nkinds; k++) {
        if (layout->kinds[k].group != NULL) {
            cohort_group_destroy(layout->kinds[k].group);
        }
    }
    cohort_list_del(&layout->link);
    free(layout->kinds);
    layout->kinds = NULL;
    layout->nkinds = 0;
    cohort_handle_retire(layout->handle);
    layout->handle = 0;
    layout->magic = COHORT_LAYOUT_FREED;
    cohort_list_push(&layout->ctx->layout_pool, &layout->link);
}

/* Create this rank's group of @a kind (canonical) into a new entry. */
static cohort_status_t cohort_layout_add(cohort_layout_t *layout, const char *kind)
{
    cohort_layout_entry_t *e;
    cohort_status_t status = COHORT_OK;
    int size = cohort_layout_group_size(&layout->spec, kind), n;
    int *members;
    char tag[LAYOUT_KIND_LEN + 8];

    if (layout->nkinds == layout->cap) {
        int cap = layout->cap ? 2 * layout->cap : 32;
        cohort_layout_entry_t *grown = realloc(layout->kinds, (size_t)cap * sizeof(*grown));

        if (grown == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        layout->kinds = grown;
        layout->cap = cap;
    }
    members = malloc((size_t)(size > 0 ? size : 1) * sizeof(int));
    if (members == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    e = &layout->kinds[layout->nkinds];
    snprintf(e->kind, sizeof(e->kind), "%s", kind);
    e->group = NULL;
    n = cohort_layout_gen_rank_group(&layout->spec, kind, layout->ctx->rank, members);
    if (n < 0 || n > size) {
        cohort_error(layout->ctx, "cohort_layout: internal error computing kind %s", kind);
        status = COHORT_ERR_INVALID_ARG;
    } else if (n > 0) {
        /* The tag names the kind, so kinds with the same members stay distinct groups. */
        snprintf(tag, sizeof(tag), "layout:%s", kind);
        status =
            cohort_group_create_owned(layout->ctx, tag, members, n, COHORT_GROUP_LAYOUT, &e->group);
        if (status != COHORT_OK) {
            cohort_error(layout->ctx, "cohort_layout: creating the %s group failed: %s", kind,
                         cohort_strerror(status));
        }
    }
    free(members);
    if (status == COHORT_OK) {
        layout->nkinds++; /* n == 0: embd / pos-embd, not every rank has one */
    }
    return status;
}

static cohort_status_t cohort_layout_make(cohort_context_t *ctx, const char *spec,
                                          cohort_layout_t **layout_p)
{
    cohort_layout_t *layout;
    cohort_status_t status = COHORT_OK;
    char err[256];
    int nkinds;

    if (layout_p == NULL) {
        cohort_error(ctx, "cohort_layout_create: layout is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    layout = calloc(1, sizeof(*layout));
    if (layout == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    layout->handle = cohort_handle_new(COHORT_HANDLE_LAYOUT, layout);
    if (layout->handle == 0) {
        free(layout);
        return COHORT_ERR_NO_MEMORY;
    }
    cohort_list_init(&layout->link);
    status = cohort_layout_gen_parse(spec, ctx->size, &layout->spec, err, sizeof(err));
    if (status != COHORT_OK) {
        cohort_error(ctx, "cohort_layout_create: \"%s\": %s", spec ? spec : "(null)", err);
        cohort_handle_retire(layout->handle);
        free(layout);
        return status;
    }
    layout->ctx = ctx;
    layout->magic = COHORT_LAYOUT_LIVE;
    cohort_list_push(&ctx->layouts, &layout->link);

    nkinds = cohort_layout_spec_kind_count(&layout->spec);
    for (int k = 0; k < nkinds && status == COHORT_OK; k++) {
        status = cohort_layout_add(layout, cohort_layout_spec_kind_name(&layout->spec, k));
    }
    if (status != COHORT_OK) {
        cohort_layout_destroy(layout);
        return status;
    }
    *layout_p = (cohort_layout_t *)layout->handle;
    return COHORT_OK;
}

cohort_status_t cohort_layout_create(cohort_context_t *ctx, const char *spec,
                                     cohort_layout_t **layout_p)
{
    cohort_status_t status = cohort_context_enter(ctx, "cohort_layout_create: ctx");

    if (status != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_layout_make(ctx, spec, layout_p);
    cohort_guard_leave(ctx);
    return status;
}

static cohort_layout_entry_t *cohort_layout_find(cohort_layout_t *layout, const char *kind)
{
    for (int k = 0; k < layout->nkinds; k++) {
        if (strcmp(layout->kinds[k].kind, kind) == 0) {
            return &layout->kinds[k];
        }
    }
    return NULL;
}

/* A token whose groups are those of a built kind: that kind's name, else NULL. */
static const char *cohort_layout_alias(cohort_layout_t *layout, const char *canonical)
{
    static const char *const plain[] = {"tp",    "pp",     "dp",        "cp",       "dp-cp",
                                        "tp-pp", "tp-cp",  "tp-dp",     "tp-dp-cp", "ep",
                                        "etp",   "etp-ep", "etp-ep-pp", "edp"};
    char name[LAYOUT_KIND_LEN];

    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        const char *token =
            plain[i][0] == 'e' && strcmp(plain[i], "ep") != 0 ? plain[i] + 1 : plain[i];
        char spelled[LAYOUT_KIND_LEN];

        /* etp-ep is the expert token tp-ep, edp the expert dp, ep the expert ep */
        snprintf(spelled, sizeof(spelled), "%s:%s", plain[i][0] == 'e' ? "expert" : "dense", token);
        if (cohort_layout_gen_canonical(&layout->spec, spelled, name, sizeof(name)) == 0 &&
            strcmp(name, canonical) == 0) {
            return plain[i];
        }
    }
    return NULL;
}

static cohort_group_t *cohort_layout_group_find(cohort_layout_t *layout, const char *kind)
{
    cohort_layout_entry_t *e;
    const char *alias;
    char canonical[LAYOUT_KIND_LEN];

    if (kind == NULL) {
        cohort_error(layout->ctx, "cohort_layout_group: kind is NULL");
        return NULL;
    }
    e = cohort_layout_find(layout, kind);
    if (e != NULL) {
        return e->group;
    }
    if (cohort_layout_gen_canonical(&layout->spec, kind, canonical, sizeof(canonical)) != 0 ||
        strlen(canonical) + 1 >= LAYOUT_KIND_LEN) {
        cohort_error(layout->ctx, "cohort_layout_group: unknown kind \"%.*s\"", LAYOUT_KIND_LEN,
                     kind);
        return NULL;
    }
    alias = cohort_layout_alias(layout, canonical);
    e = cohort_layout_find(layout, alias != NULL ? alias : canonical);
    if (e != NULL) {
        return e->group;
    }
    if (cohort_layout_add(layout, canonical) != COHORT_OK) {
        return NULL;
    }
    return layout->kinds[layout->nkinds - 1].group;
}

cohort_group_t *cohort_layout_group(cohort_layout_t *handle, const char *kind)
{
    cohort_layout_t *layout = cohort_layout_enter(handle, "cohort_layout_group: layout");
    cohort_group_t *g;

    if (layout == NULL) {
        return NULL;
    }
    g = cohort_group_handle(cohort_layout_group_find(layout, kind));
    cohort_guard_leave(layout->ctx);
    return g;
}

cohort_status_t cohort_layout_free(cohort_layout_t *handle)
{
    cohort_layout_t *layout;
    cohort_context_t *ctx;

    if (handle == NULL) {
        return COHORT_OK;
    }
    if ((layout = cohort_layout_enter(handle, "cohort_layout_free: layout")) == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    ctx = layout->ctx;
    if (cohort_layout_busy(layout)) {
        cohort_error(ctx, "cohort_layout_free: another thread is inside a call on one of the "
                          "layout's groups; free it once that call returned");
        cohort_guard_leave(ctx);
        return COHORT_ERR_INVALID_ARG;
    }
    cohort_layout_destroy(layout);
    cohort_guard_leave(ctx);
    return COHORT_OK;
}

void cohort_layout_free_all(cohort_context_t *ctx)
{
    while (!cohort_list_empty(&ctx->layouts)) {
        cohort_layout_destroy(cohort_container_of(ctx->layouts.next, cohort_layout_t, link));
    }
    while (!cohort_list_empty(&ctx->layout_pool)) {
        cohort_layout_t *layout = cohort_container_of(ctx->layout_pool.next, cohort_layout_t, link);
        cohort_list_del(&layout->link);
        layout->magic = 0;
        free(layout);
    }
}
