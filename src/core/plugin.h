#ifndef COHORT_CORE_PLUGIN_H
#define COHORT_CORE_PLUGIN_H

#include "core/context.h"

/* Load the plugin named by ctx->cfg (logs what was tried on failure). */
cohort_status_t cohort_plugin_load(cohort_context_t *ctx);
void cohort_plugin_unload(cohort_context_t *ctx);

#endif
