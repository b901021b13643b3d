/* The exchange over the caller's key-value store (cohort_init_exchange): built in, behind the
 * same ops table as the PMIx plugins, so the rest of the core cannot tell them apart. */
#ifndef COHORT_CORE_EXCHANGE_USER_H
#define COHORT_CORE_EXCHANGE_USER_H

#include "cohort.h"
#include "pmix_plugins/plugin.h"

/* Its ops. No init: the store comes in through cohort_exchange_user_init, which takes its
 * place. */
extern const cohort_pmix_plugin_t cohort_exchange_user;

/* Set up the exchange over @a ex (checked already): *job from ex's rank and size. Nothing is
 * put yet (publish does). */
cohort_status_t cohort_exchange_user_init(const cohort_exchange_t *ex,
                                          const cohort_pmix_opts_t *opts, cohort_pmix_ctx_t **pctx,
                                          cohort_pmix_job_t *job);
/* cohort_init_exchange's input: COHORT_ERR_INVALID_ARG, logged naming the argument, for a
 * NULL @a ex, put or get, or a rank or size out of range. */
cohort_status_t cohort_exchange_user_check(const cohort_exchange_t *ex);

#endif
