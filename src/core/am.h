/* The messaging engine: active-message send, receive matching, rendezvous. */
#ifndef COHORT_AM_H
#define COHORT_AM_H

#include "core/context.h"
#include "core/request.h"

struct cohort_msg {
    cohort_list_t link;
    cohort_am_hdr_t hdr;
    void *data; /* eager: our copy */
    size_t len;
    void *desc; /* rendezvous: UCX data descriptor, fetched when matched */
};

cohort_status_t cohort_am_register(cohort_context_t *ctx);

/* Post one transfer that belongs to @a req. P2P sends number themselves. On error the transfer
 * is not posted and nothing is logged twice: the caller reports. */
cohort_status_t cohort_xfer_send(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fp, const void *buf,
                                 size_t len);
cohort_status_t cohort_xfer_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fp, void *buf, size_t len);
/* Stop a transfer: a posted receive leaves matching; UCX operations in flight are cancelled
 * where UCX allows it (their completion is still awaited before the request is freed). */
void cohort_xfer_cancel(cohort_xfer_t *x, cohort_status_t status);

/* Start rendezvous fetches matched inside the receive callback. @return how many. */
int cohort_am_start_rndv(cohort_context_t *ctx);
/* A group was just created: deliver the messages that arrived for it before. */
void cohort_am_adopt(cohort_group_t *group);
/* Drop a group's queued messages (group free, finalize). */
void cohort_am_group_cleanup(cohort_group_t *group);
void cohort_am_orphans_cleanup(cohort_context_t *ctx);
/* A peer failed: fail receives that wait on it. */
void cohort_am_fail_peer(cohort_context_t *ctx, int world_rank, const char *why);

#endif
