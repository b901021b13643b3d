/* The endpoint table: one UCX endpoint per peer, made on the first send to it. */
#ifndef COHORT_ENDPOINT_H
#define COHORT_ENDPOINT_H

#include "core/context.h"

/* The endpoint to world rank @a rank, wiring it now if needed (one plugin lookup). */
cohort_status_t cohort_endpoint_get(cohort_context_t *ctx, int rank, ucp_ep_h *ep);
/* Flush and close every endpoint, bounded by the configured timeout. */
void cohort_endpoint_close_all(cohort_context_t *ctx);
/* Translate a UCX status, at the boundary. */
cohort_status_t cohort_ucs_status(ucs_status_t status);

#endif
