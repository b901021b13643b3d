/* PMIx plumbing shared by the exchange plugins (compiled into each module). */
#ifndef COHORT_PMIX_COMMON_H
#define COHORT_PMIX_COMMON_H

#include <stdlib.h>
#include <pmix.h>
#include "pmix_plugins/plugin.h"

struct cohort_pmix_ctx {
    pmix_proc_t me;
    cohort_pmix_opts_t opts;
    int singleton;
};

#define COHORT_PMIX_ADDR_KEY "cohort.ucx.addr"

void cohort_pmix_log(const cohort_pmix_ctx_t *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cohort_status_t cohort_pmix_status(pmix_status_t rc);

/* PMIx_Init, or a singleton when no server can be reached. */
cohort_status_t cohort_pmix_connect(const cohort_pmix_opts_t *opts, cohort_pmix_ctx_t **pctx,
                                    cohort_pmix_job_t *job);
void cohort_pmix_disconnect(cohort_pmix_ctx_t *p);
cohort_status_t cohort_pmix_put_commit(cohort_pmix_ctx_t *p, const void *addr, size_t len);
cohort_status_t cohort_pmix_lookup_start(cohort_pmix_ctx_t *p, int rank, cohort_pmix_lookup_t **op);
cohort_status_t cohort_pmix_lookup_test(cohort_pmix_lookup_t *op, void **addr, size_t *len);
/* PMIx_Fence over the given ranks (NULL: the whole namespace), collecting data. */
cohort_status_t cohort_pmix_fence_ranks(cohort_pmix_ctx_t *p, const int *ranks, int nranks);

#endif
