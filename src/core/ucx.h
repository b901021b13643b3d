/* The UCX context and worker a cohort context runs on (ucx.c). */
#ifndef COHORT_UCX_H
#define COHORT_UCX_H

#include "core/context.h"

/* UCX configured, initialised, the worker made with its address (ctx->ucp, ->worker,
 * ->address, ->event_fd for COHORT_PROGRESS=block) and cohort's message handlers registered;
 * nothing is left behind on failure. */
cohort_status_t cohort_ucx_open(cohort_context_t *ctx);
/* What cohort_ucx_open made, each part when made: also after a failed open. @a keep_worker:
 * the worker and the UCX context are left as they are (finalize: a fetch UCX cannot cancel is
 * still on the worker, cohort_context_destroy). */
void cohort_ucx_close(cohort_context_t *ctx, int keep_worker);

#endif
