/* cohort_layout_*: a rank's own groups of a Megatron-style layout, created member-only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/context.h"
#include "core/log.h"
#include "group/group.h"
#include "group/layout_gen.h"

struct cohort_layout {
    cohort_context_t *ctx;
    cohort_layout_spec_t spec;
    int nkinds;
    cohort_group_t **groups; /* [nkinds], NULL where this rank is in no group of the kind */
    cohort_list_t link;      /* in the context's layout list */
};

static void cohort_layout_destroy(cohort_layout_t *layout)
{
    for (int k = 0; k < layout->nkinds; k++) {
        if (layout->groups[k] != NULL) {
            cohort_group_destroy(layout->groups[k]);
        }
    }
    cohort_list_del(&layout->link);
    free(layout->groups);
    free(layout);
}

cohort_status_t cohort_layout_create(cohort_context_t *ctx, const char *spec,
                                     cohort_layout_t **layout_p)
{
    cohort_layout_t *layout;
    cohort_status_t status;
    char err[256], tag[32];
    int *members;

    if (cohort_context_check(ctx, "cohort_layout_create: ctx") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    if (layout_p == NULL) {
        cohort_error(ctx, "cohort_layout_create: layout is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    layout = calloc(1, sizeof(*layout));
    if (layout == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    cohort_list_init(&layout->link);
    status = cohort_layout_parse(spec, ctx->size, &layout->spec, err, sizeof(err));
    if (status != COHORT_OK) {
        cohort_error(ctx, "cohort_layout_create: \"%s\": %s", spec ? spec : "(null)", err);
        free(layout);
        return status;
    }
    while (cohort_layout_kinds[layout->nkinds] != NULL) {
        layout->nkinds++;
    }
    layout->ctx = ctx;
    layout->groups = calloc((size_t)layout->nkinds, sizeof(*layout->groups));
    members = malloc((size_t)ctx->size * sizeof(int));
    if (layout->groups == NULL || members == NULL) {
        free(members);
        free(layout->groups);
        free(layout);
        return COHORT_ERR_NO_MEMORY;
    }
    cohort_list_push(&ctx->layouts, &layout->link);

    for (int k = 0; k < layout->nkinds; k++) {
        const char *kind = cohort_layout_kinds[k];
        int n = cohort_layout_rank_group(&layout->spec, kind, ctx->rank, members);

        if (n == 0) {
            continue; /* embd / pos-embd: not every rank has one */
        }
        if (n < 0) {
            cohort_error(ctx, "cohort_layout_create: internal error computing kind %s", kind);
            status = COHORT_ERR_INVALID_ARG;
            break;
        }
        /* The tag names the kind, so kinds with the same members stay distinct groups. */
        snprintf(tag, sizeof(tag), "layout:%s", kind);
        status = cohort_group_create_owned(ctx, tag, members, n, COHORT_GROUP_LAYOUT,
                                           &layout->groups[k]);
        if (status != COHORT_OK) {
            cohort_error(ctx, "cohort_layout_create: creating the %s group failed: %s", kind,
                         cohort_strerror(status));
            break;
        }
    }
    free(members);
    if (status != COHORT_OK) {
        cohort_layout_destroy(layout);
        return status;
    }
    *layout_p = layout;
    return COHORT_OK;
}

cohort_group_t *cohort_layout_group(cohort_layout_t *layout, const char *kind)
{
    if (layout == NULL || kind == NULL) {
        cohort_error(layout ? layout->ctx : NULL, "cohort_layout_group: %s is NULL",
                     layout == NULL ? "layout" : "kind");
        return NULL;
    }
    for (int k = 0; k < layout->nkinds; k++) {
        if (strcmp(cohort_layout_kinds[k], kind) == 0) {
            return layout->groups[k];
        }
    }
    cohort_error(layout->ctx, "cohort_layout_group: unknown kind \"%s\"", kind);
    return NULL;
}

cohort_status_t cohort_layout_free(cohort_layout_t *layout)
{
    if (layout != NULL) {
        cohort_layout_destroy(layout);
    }
    return COHORT_OK;
}

void cohort_layout_free_all(cohort_context_t *ctx)
{
    while (!cohort_list_empty(&ctx->layouts)) {
        cohort_layout_destroy(cohort_container_of(ctx->layouts.next, cohort_layout_t, link));
    }
}
