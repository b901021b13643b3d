/*
 * A group's shared segment, for members of one node (shm_seg.c): one slot per member, each a
 * few words other members wait on and two small data buffers, all slots together after the
 * header (the head), and two large data buffers per member (the body: in an arena a block of
 * its own, elsewhere the pages after the head); a call uses its members' small or large
 * buffers by its size, number % 2 of them. Group rank 0
 * makes it at the group's first call that needs it, under a name every member derives (group
 * rank 0's pid and the group id), and the others open it when it is there: no message and no
 * endpoint when it works (shm_seg.c). Calls on it are numbered when
 * they are posted (cohort_coll_post), not when they start: an agreement, a vote or the group's
 * stream may start a later call first, and the members must still pair their calls in posting
 * order. They run one at a time on each rank, in that order.
 */
#ifndef COHORT_COLL_SHM_SEG_H
#define COHORT_COLL_SHM_SEG_H

#include "coll/coll.h"

#define COHORT_SHM_SLOT  (64 * 1024) /* bytes of each data buffer */
#define COHORT_SHM_SMALL 128         /* ... of a small one, beside the member's words */
#define COHORT_SHM_MAX_N 64          /* members: the segment holds 2 buffers per member */

/* The words of a slot; each holds the last call number its member published for it. */
enum {
    COHORT_SHM_SEQ,     /* its contribution (or descriptor) for the call is in its buffer */
    COHORT_SHM_DONE,    /* it has finished with everyone's buffers for the call */
    COHORT_SHM_FAIL,    /* its part failed (direct: a read or write refused or failed) */
    COHORT_SHM_GONE,    /* it gave the call up after a timeout (call << 8 | -status) */
    COHORT_SHM_LEFT,    /* it left the call before its end: nobody may write its buffers */
    COHORT_SHM_WRITING, /* call << 1 | 1 while it writes into another member's buffers */
    COHORT_SHM_BYE,     /* it let go of the segment: it freed the group (COHORT_COMM_MEMBER_FREED)
                         * or its process finalized (_FINALIZED); written last, never unset */
    COHORT_SHM_WORDS
};

/* One call's part, in the algorithm's state. */
typedef struct {
    uint64_t s;          /* the call's number on the group, from 1 */
    size_t bytes;        /* what each member puts: which of its buffers the call uses */
    int setup;           /* this call makes the segment */
    int sround;          /* the setup's step: 0 post the "no" receives (and make it: group rank 0),
                          * 1 reach it (the others), 2 wait until every member has, 3 say "no",
                          * 4 it failed: the settings agreed by messages, then the end */
    int posted;          /* the "no" sends are posted */
    int begun;           /* it was this rank's turn, and the segment is there */
    uint8_t ok;          /* this rank reached the segment (setup): 1, or could not: 2 */
    uint8_t *oks;        /* n: a member's "no" lands here (setup) */
    int joined;          /* the settings ride the setup, and this rank joined their agreement
                          * by messages (a member took another path, or the setup failed) */
    int settled;         /* ... they are agreed */
    int wait_word;       /* what it waits for now: a word (-1: nothing in the segment) */
    uint64_t wait_value; /* ... to reach this */
    int wait_member;     /* ... for this member (-1: every member) */
    double since;        /* ... since then (the members waited for are watched past
                          * COHORT_WATCH_S) */
} cohort_shm_call_t;

/* At the creation of a group on this node (ctx->comm_made), with no message: group rank 0
 * makes its segment in its arena and publishes it, so that a member finds it at its own first
 * call instead of waiting for group rank 0's (group rank 0 says it is in at its first call on
 * it; nothing when it cannot be made: that call tries again, and says why it fails). The
 * others mark the group due: group rank 0's card, which their first call on it needs, is
 * fetched at their first call on any group's segment (cohort_shm_prefetch_due), not here:
 * creating a group asks PMIx nothing. */
void cohort_shm_created(cohort_comm_t *comm);
/* At a group's first call on its segment: the cards of group rank 0 of every group marked due,
 * all at once, so that they are there when this rank reaches those groups' first calls; each
 * group once. */
void cohort_shm_prefetch_due(cohort_context_t *ctx);
/* The group's segment as cohort_group_info tells it (a cohort_segment_state_t). */
int cohort_shm_group_state(const cohort_comm_t *comm);
/* At post, for a call that runs on the segment: the group's record (COHORT_ERR_NO_MEMORY),
 * then the call's number, in posting order, from 1. */
cohort_status_t cohort_shm_group_make(cohort_comm_t *comm);
uint64_t cohort_shm_call_number(cohort_comm_t *comm);
/* At post of the group's first call on it: start fetching group rank 0's card (its pid names
 * the segment), without an endpoint. */
void cohort_shm_prefetch(cohort_comm_t *comm);
/* COHORT_SHM_DEFER=K: at post of a call that would run on the segment (the group's record
 * made), whether it is one of the group's first K such calls, which run on messages instead;
 * counted. Every member counts the same calls (they take the segment alike), so every member
 * answers alike for the same call, with no message. */
int cohort_shm_defer(cohort_comm_t *comm);
/* The group's must-match settings were agreed on this rank (its first collective's agreement
 * passed): a deferred call may set the segment up from now on, since every member then runs
 * with the same COHORT_SHM_DEFER. */
void cohort_shm_agreed(cohort_comm_t *comm);
/* From a deferred call's progress: the segment's setup beside it, never waiting. Group rank 0
 * makes the segment, the others attach once group rank 0's pid is known and the name is
 * there; a refusal is logged and kept, and the setup call (the first on the segment) says
 * "no" with it. The setup call then finds its work done, or does the rest as without
 * deferral. */
void cohort_shm_early(cohort_comm_t *comm);
/* A deferred call ended with its group failed (a member died, it was revoked): the segment's
 * name goes now, from whichever member knows it, not when the group is freed, so that a dead
 * member leaves nothing in /dev/shm while the others still hold the group. */
void cohort_shm_early_drop(cohort_comm_t *comm);
/* Bytes cohort_shm_call_start lays out after the state (64-byte aligned xfers included). */
size_t cohort_shm_call_extra(int n);
/* At the call's start: take the number it got at post (cohort_coll_base_t's seg_call); lays
 * out the setup's arrays and its 4n transfer slots at @a p, which become the request's xfers. */
cohort_status_t cohort_shm_call_start(cohort_request_t *req, cohort_shm_call_t *c, char *p);
/* COHORT_OK once the segment is there and the previous call has ended here; COHORT_INPROGRESS
 * (polled, or waiting on the setup's messages); COHORT_ERR_UNSUPPORTED on every member alike
 * when a member cannot reach the segment (logged; the group's node-only algorithms go off). */
cohort_status_t cohort_shm_call_begin(cohort_request_t *req, cohort_shm_call_t *c);
/* Begin the call, then put this rank's @a len bytes at @a src (none: NULL) into its buffer once
 * every member is done with it, and publish SEQ. COHORT_OK once published; COHORT_INPROGRESS
 * (polled) or cohort_shm_call_begin's error otherwise. */
cohort_status_t cohort_shm_put(cohort_request_t *req, cohort_shm_call_t *c, const void *src,
                               size_t len);
/* Whether member @a k's buffer for this call (seen published) holds the same call (number and
 * fingerprint) and as many bytes as this rank's; logged when not. */
int cohort_shm_matches(cohort_request_t *req, const cohort_shm_call_t *c, int k);
/* COHORT_OK once member @a k (every member when k < 0) has published this call in word @a w;
 * COHORT_INPROGRESS (polled) before; or the status a member gave the call up with
 * (cohort_shm_gone). */
cohort_status_t cohort_shm_await(cohort_request_t *req, cohort_shm_call_t *c, int k, int w);
/* Member @a k's data buffer for this call. */
uint8_t *cohort_shm_buf(cohort_request_t *req, const cohort_shm_call_t *c, int k);
/* Whether this call's buffers may be written: every member is done with call s - 2. */
int cohort_shm_buf_free(cohort_request_t *req, cohort_shm_call_t *c);
/* Publish this call's number in this rank's word @a w. */
void cohort_shm_publish(cohort_request_t *req, const cohort_shm_call_t *c, int w);
/* Publish @a v (a value made from this call's number, never below an earlier one) in word @a w;
 * read member @a k's word @a w. */
void cohort_shm_publish_value(cohort_request_t *req, int w, uint64_t v);
uint64_t cohort_shm_word(cohort_request_t *req, int k, int w);
/* Whether member @a k (every member when k < 0) has published this call in word @a w. */
int cohort_shm_reached(cohort_request_t *req, cohort_shm_call_t *c, int k, int w);
/* This rank gives the call up with @a status (it was cancelled, or freed after a timeout):
 * after a timeout the members learn it here, as the call's messages would have told them. */
void cohort_shm_abandon(cohort_request_t *req, const cohort_shm_call_t *c, cohort_status_t status);
/* COHORT_OK, or the status a member gave this call up with: the caller fails with it too (and
 * so revokes the group), as a message would have told it. */
cohort_status_t cohort_shm_gone(cohort_request_t *req, const cohort_shm_call_t *c);
/* Writes into other members' buffers (their own memory, by single copy) are fenced against a
 * member leaving the call early, whose buffers are the caller's again once it returns:
 * cohort_shm_write_begin announces a write and answers whether member @a k is still in the
 * call (0: it left; write nothing there); cohort_shm_write_end ends it. cohort_shm_leave says
 * this rank left; cohort_shm_writing answers whether member @a k may still be inside a write
 * announced before it saw that (one chunk's copy). */
int cohort_shm_write_begin(cohort_request_t *req, const cohort_shm_call_t *c, int k);
void cohort_shm_write_end(cohort_request_t *req, const cohort_shm_call_t *c);
void cohort_shm_leave(cohort_request_t *req, const cohort_shm_call_t *c);
int cohort_shm_writing(cohort_request_t *req, const cohort_shm_call_t *c, int k);
/* The call is over here: the next one may begin. */
void cohort_shm_call_end(cohort_request_t *req, const cohort_shm_call_t *c);
/* Wait on memory: polled at the next pass, and COHORT_INPROGRESS. */
cohort_status_t cohort_shm_wait(cohort_request_t *req);
/* Append to a timeout's description the members the call waits for in the segment ("not yet
 * heard from", as for messages), or the earlier call it waits behind. */
size_t cohort_shm_describe(const cohort_request_t *req, const cohort_shm_call_t *c, char *buf,
                           size_t len, size_t used);

#endif
