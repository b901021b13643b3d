/* The UCX message protocol's send and rendezvous fetch, for the protocols that send or receive
 * through it (proto/). */
#ifndef COHORT_PROTO_MSG_H
#define COHORT_PROTO_MSG_H

#include <stddef.h>
#include "core/request.h"

/* One active message to wired @a peer: x's header and @a len bytes of @a data (host memory
 * with @a host, else of x's memory type). An error or an immediate completion finishes @a x
 * (cohort_xfer_ucx_started); a peer UCX says is gone is failed. */
void cohort_proto_msg_send(cohort_xfer_t *x, cohort_peer_t *peer, const void *data, size_t len,
                           int host);
/* The receive side of a rendezvous message: fetch its data into receive @a x (x->received
 * bytes) with UCX's descriptor @a desc, which the fetch consumes; from a sender already failed,
 * nothing is fetched (@a desc released, @a x finished COHORT_ERR_PEER_FAILED). The engine calls
 * it for a plain message it matched (ctx->am_fetch), single copy for data it asked for. */
void cohort_proto_msg_fetch(cohort_context_t *ctx, cohort_xfer_t *x, void *desc);

#endif
