/* The messaging engine: transfers, the active-message handler, matching, orphans. */
#ifndef COHORT_AM_H
#define COHORT_AM_H

#include "core/comm.h"
#include "core/context.h"
#include "core/request.h"

struct cohort_msg {
    cohort_list_t link;
    cohort_am_hdr_t hdr;
    void *data; /* eager payload: UCX's persistent copy (ucx_data) or ours */
    size_t len;
    void *desc;    /* rendezvous: UCX data descriptor, fetched when matched */
    int ucx_data;  /* data belongs to UCX: give it back with ucp_am_data_release */
    size_t charge; /* what it counts against COHORT_ORPHAN_LIMIT while an orphan */
    int canceled;  /* its sender freed it (cancel.c): no data; the receive it matches ends
                    * COHORT_ERR_CANCELED */
};

/* The UCX handler of cohort's messages (at worker creation). */
cohort_status_t cohort_am_register(cohort_context_t *ctx);
/* Matching's own handlers: goodbyes, and receives that wait on a peer that failed. */
void cohort_am_init(cohort_context_t *ctx);
/* A layer's handler for message kind @a kind (one per kind), and the protocol that reads
 * descriptor payloads (one), registered at context creation; @a handler stays valid. */
void cohort_am_kind_set(cohort_context_t *ctx, uint8_t kind, const cohort_am_kind_t *handler);
void cohort_am_offer_set(cohort_context_t *ctx, const cohort_am_offer_t *offer);
void cohort_am_fetch_set(cohort_context_t *ctx, cohort_am_fetch_t fetch);

/* Transfers' own observer of peers (sends waiting for an endpoint), at context creation. */
void cohort_xfer_init(cohort_context_t *ctx);
/* Post one transfer that belongs to @a req; peers are comm ranks. P2P sends number
 * themselves. A send to a peer not wired yet waits for it inside progress. On error nothing is
 * posted and nothing is logged twice: the caller reports. */
cohort_status_t cohort_xfer_send(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fingerprint, const void *buf,
                                 size_t len);
/* Post a receive (am.c: it is matched against what came first). */
cohort_status_t cohort_xfer_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, uint8_t kind,
                                 uint32_t seq, int32_t tag, uint32_t fingerprint, void *buf,
                                 size_t len);
/* cohort_xfer_recv's part below the matching (xfer.c): the transfer set up, the communicator's
 * first use started, the device buffer staged, the transfer on its request's list. On error
 * nothing is posted. */
cohort_status_t cohort_xfer_recv_start(cohort_request_t *req, cohort_xfer_t *x, int peer,
                                       uint8_t kind, uint32_t seq, int32_t tag,
                                       uint32_t fingerprint, void *buf, size_t len);
/* A receive the matching refused (its peer is gone): its bounce back. @return @a status. */
cohort_status_t cohort_xfer_recv_refused(cohort_xfer_t *x, cohort_status_t status);
/* Hand a send to UCX on @a peer's endpoint (the peer is wired). */
void cohort_xfer_issue(cohort_xfer_t *x, cohort_peer_t *peer);
/* A send whose communicator just became ready: on to its peer. */
void cohort_xfer_route(cohort_xfer_t *x);
/* A UCX operation for @a x: its common parameters (callback left to the caller), and what
 * its start returned (an error or immediate completion finishes @a x). @return 1 when it is
 * in flight. */
void cohort_xfer_ucx_param(cohort_xfer_t *x, ucp_request_param_t *param);
int cohort_xfer_ucx_started(cohort_xfer_t *x, void *r);
/* A receive found a message that does not fit it (length, fingerprint, descriptor): it ends
 * with COHORT_ERR_MISMATCH, and for a collective's message so does the group on every member
 * (revoked, told). */
void cohort_xfer_mismatch(cohort_xfer_t *x);
/* A UCX operation of @a x completed (send or rendezvous fetch). */
void cohort_xfer_ucx_complete(void *ucx_req, ucs_status_t ucs, cohort_xfer_t *x);
/* The transfer is over with @a status (the first one sticks); wakes its request. */
void cohort_xfer_finish(cohort_xfer_t *x, cohort_status_t status);
/* A transfer whose staging copy runs (x->stage_copy, the protocol layer's staging step) waits
 * for it in ctx->copying (x->link is free then: a send is not queued anywhere else yet, a
 * receive has left matching); that step's progress moves it on. */
void cohort_xfer_copy_wait(cohort_xfer_t *x);
/* A send ready to go (its data in place): to its peer, or to wait for its communicator. */
void cohort_xfer_post_send(cohort_xfer_t *x);
/* A receive's data, arrived in host memory, into its buffer: a copy, through the module when
 * the buffer is device memory UCX takes (not staged). @return COHORT_OK or COHORT_ERR_CUDA. */
cohort_status_t cohort_xfer_fill(cohort_context_t *ctx, cohort_xfer_t *x, const void *data,
                                 size_t len);
/* Stop a transfer: a posted receive leaves matching, a waiting send is dropped. UCX operations
 * in flight cannot be stopped here; the request waits for them before its block is reused. */
void cohort_xfer_cancel(cohort_xfer_t *x, cohort_status_t status);

/* A communicator was just created: deliver the messages that arrived for it before. */
void cohort_am_adopt(cohort_comm_t *comm);
/* Collective #@a seq was posted here with @a fingerprint: remembered, and a message for it
 * that arrived first with another fingerprint (whatever its step) is a mismatch, which revokes
 * the group (MISMATCH, told). */
void cohort_am_coll_posted(cohort_comm_t *comm, uint32_t seq, uint32_t fingerprint);
/* Drop a communicator's queued messages (revoke)... */
void cohort_am_comm_drop(cohort_comm_t *comm);
/* ...and remember it is gone, so later messages for it are dropped on arrival (destroy). */
void cohort_am_comm_cleanup(cohort_comm_t *comm);
void cohort_am_orphans_cleanup(cohort_context_t *ctx);
/* Deliver message @a m to @a c as the handler does (lent: from UCX's callback, copied if kept;
 * else owned, freed once consumed). @return 1 when a lent message's UCX memory was kept. */
int cohort_am_deliver(cohort_comm_t *c, cohort_msg_t *m, int lent, int persistent);
/* Empty queued message @a m (lent: UCX's callback still owns what it points at): its data or
 * rendezvous descriptor let go of (UCX then ends the sender's send), a single-copy sender told
 * it is not read, and it is marked canceled. */
void cohort_msg_tombstone(cohort_context_t *ctx, cohort_msg_t *m, int lent);
/* The point-to-point message (@a src, @a seq) of group @a gid kept as an orphan, or NULL. */
cohort_msg_t *cohort_am_orphan_find(cohort_context_t *ctx, uint64_t gid, int src, uint32_t seq);
/* Keep header-only message @a h for group @a gid, not created here yet, as an orphan: it is
 * delivered in its place among the group's messages when the group is made. */
void cohort_am_orphan_keep_hdr(cohort_context_t *ctx, const cohort_am_hdr_t *h);
/* Point-to-point cancels (cancel.c): the receiver's handler, at context creation; a message
 * arriving for @a c whose cancel came first (@return 1: tombstone it). */
void cohort_cancel_init(cohort_context_t *ctx);
int cohort_cancel_early(cohort_comm_t *c, const cohort_am_hdr_t *h);
void cohort_cancel_cleanup(cohort_comm_t *c);
/* The sender's side (xfer.c): point-to-point send @a x (not done) is being freed on a group
 * still in order: the receiver is told (COHORT_MSG_CANCEL) and @a x ends COHORT_ERR_CANCELED,
 * once nobody reads its buffer any more. @return 0 when this is not such a send. */
int cohort_xfer_cancel_p2p(cohort_xfer_t *x, cohort_status_t status);

/* The line that says a receive from group rank @a peer of @a c failed, and why, at @a level
 * (base/log.h): at its failure, or (a peer that left) when a wait takes its status. */
void cohort_am_say_recv_failed(cohort_context_t *ctx, int level, const cohort_comm_t *c, int peer,
                               const char *why);
/* A peer failed or left: fail the receives that wait on it and can no longer match. @a left:
 * it finalized (an orderly end), which a point-to-point receive says when a wait takes its
 * status (cohort_request_say_left), not before. */
void cohort_am_fail_peer(cohort_context_t *ctx, int world_rank, cohort_status_t status,
                         const char *why, int left);

#endif
