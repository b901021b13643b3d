/*
 * A failure or a revocation reaches every member of the group. A rank that revokes a group
 * on its own account (it saw a member fail, a collective failed, cohort_group_abort) tells the
 * other members with REVOKE messages along a binomial tree rooted at itself: size - 1
 * messages in all, at most log2(size) sent by any rank; a member known failed or gone is
 * stepped over (its children are told directly). Several ranks may start trees for one
 * revocation; each tree reaches everyone on its own. Messages go out from progress, never
 * from inside a UCX callback.
 *
 * Watching: a receive that has waited COHORT_WATCH_S for a peer this rank holds no endpoint
 * to wires one, so that UCX's keepalive can see the peer die; so does a rendezvous fetch that
 * has run that long (it runs on UCX's endpoint for the sender, which has no keepalive of ours).
 */
#ifndef COHORT_NOTIFY_H
#define COHORT_NOTIFY_H

#include "core/comm.h"
#include "core/ctl.h" /* the control messages the notices go out as */

/* REVOKE messages and the control-message queues of peers, at context creation. */
void cohort_notify_init(cohort_context_t *ctx);
/* @a c was just revoked here: tell the other members (rooted here), at the next progress. */
void cohort_notify_revoke(cohort_comm_t *c);
/* @a c is being destroyed: the notices queued for it go out now, or nobody would tell the
 * members when this rank was the only one to know (a request freed, then its group). */
void cohort_notify_flush(cohort_comm_t *c);
/* A REVOKE message from member h->src of @a c arrived (sender checked): revoke here, pass it
 * down the sender's tree, and mark the failed rank it names. */
void cohort_notify_recv(cohort_comm_t *c, const cohort_am_hdr_t *h);
/* Send what is queued; wire the peers that long waits depend on. @return work done. */
int cohort_notify_progress(cohort_context_t *ctx);
/* Finalize, after the worker is gone: free what UCX never completed. */
void cohort_notify_cleanup(cohort_context_t *ctx);

#endif
