/*
 * Control messages (ctl.c): a header-only message to a world rank, sent from progress, never
 * from inside a UCX callback; queued while the peer is wired, dropped when it failed.
 */
#ifndef COHORT_CTL_H
#define COHORT_CTL_H

#include "core/am_header.h"
#include "core/context.h"

/* Send a header-only control message to @a world_rank (from progress, not a callback).
 * @return 0 when sent or queued for the endpoint; -1 when the peer cannot take it. */
int cohort_ctl_send(cohort_context_t *ctx, int world_rank, const cohort_am_hdr_t *h);
/* The same, calling @a done exactly once when the message has left (UCX completed it), failed,
 * or was dropped — never at finalize's cleanup. It may run inside a UCX callback. */
int cohort_ctl_send_then(cohort_context_t *ctx, int world_rank, const cohort_am_hdr_t *h,
                         void (*done)(void *arg), void *arg);
/* Control messages waiting for @a peer's endpoint: out now that it exists / dropped. */
void cohort_ctl_flush(cohort_peer_t *peer);
void cohort_ctl_drop(cohort_peer_t *peer);
/* Progress: send again what UCX cancelled when an endpoint closed under it. @return how many. */
int cohort_ctl_progress(cohort_context_t *ctx);
/* The control-message queues hear of peers being wired, failing and freed (cohort_peer_observe),
 * at context creation (from cohort_notify_init, in the order they always were registered). */
void cohort_ctl_init(cohort_context_t *ctx);
/* Finalize, after the worker is gone: free what UCX never completed. */
void cohort_ctl_cleanup(cohort_context_t *ctx);

#endif
