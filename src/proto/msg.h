/* The UCX message protocol's send, for the protocols that send through it (proto/). */
#ifndef COHORT_PROTO_MSG_H
#define COHORT_PROTO_MSG_H

#include <stddef.h>
#include "core/request.h"

/* One active message to wired @a peer: x's header and @a len bytes of @a data (host memory
 * with @a host, else of x's memory type). An error or an immediate completion finishes @a x
 * (cohort_xfer_ucx_started); a peer UCX says is gone is failed. */
void cohort_proto_msg_send(cohort_xfer_t *x, cohort_peer_t *peer, const void *data, size_t len,
                           int host);

#endif
