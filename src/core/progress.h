#ifndef COHORT_PROGRESS_H
#define COHORT_PROGRESS_H

#include "core/context.h"

/* One pass: poll UCX, advance address lookups and first-use steps, progress the requests a
 * completion woke. Never blocks. @return a count of things that happened (0: nothing). */
int cohort_progress(cohort_context_t *ctx);
/* Wait for an event when nothing progressed, as COHORT_PROGRESS says; never longer than
 * @a max_s seconds. @a idle_s: how long nothing has progressed. */
void cohort_progress_idle(cohort_context_t *ctx, double idle_s, double max_s);

#endif
