#ifndef COHORT_CORE_PLUGIN_H
#define COHORT_CORE_PLUGIN_H

#include "core/context.h"

/* Load the plugin named by ctx->cfg (logs what was tried on failure). */
cohort_status_t cohort_plugin_load(cohort_context_t *ctx);
void cohort_plugin_unload(cohort_context_t *ctx);
/* dlopen @a file from COHORT_PLUGIN_PATH, beside libcohort, then the install directory; NULL
 * when none loads, with the paths tried appended to @a tried (details at debug level). */
void *cohort_plugin_open(cohort_context_t *ctx, const char *file, char *tried, size_t triedlen);

#endif
