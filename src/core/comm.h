/*
 * A communicator: what the engine matches on. It has an id, this rank's place, the members,
 * the matching queues and the requests posted on it. A group (src/group) wraps one.
 */
#ifndef COHORT_COMM_H
#define COHORT_COMM_H

#include <stdint.h>
#include <stdlib.h>
#include <stdatomic.h>
#include "core/context.h"
#include "core/request.h"

#define COHORT_COMM_RECENT 16

typedef enum {
    COHORT_COMM_NEW,       /* nothing posted yet */
    COHORT_COMM_PREPARING, /* the exchange plugin's first-use step is in flight */
    COHORT_COMM_READY
} cohort_comm_state_t;

struct cohort_comm {
    cohort_context_t *ctx;
    uint64_t id;
    int rank;
    int size;
    int *members;      /* world ranks in comm order; NULL for the world (rank i is i) */
    const char *label; /* for messages: the group's tag (owned by the group) */
    uint8_t state;     /* cohort_comm_state_t */
    uint8_t prepared;  /* the plugin's first-use step succeeded: release it at the end */
    int8_t node_local; /* every member on this node: 0 not asked yet, 1 yes, -1 no */
    uint8_t node_off;  /* a member could not reach another's memory: node-only algorithms
                        * off (coll/path/direct.c, coll/path/shm.c) */
    void *node_shm;    /* the members' shared segment (coll/shm_seg.c), made at first use */
    void (*node_shm_free)(void *);
    /* What member @a k said in the segment before it let go of it (coll/shm_seg.c): 0 nothing
     * (still in, or the segment cannot say), COHORT_COMM_MEMBER_FREED it freed the group,
     * COHORT_COMM_MEMBER_FINALIZED its process finalized. NULL: no segment. */
    int (*node_shm_left)(void *node_shm, int k);
    void *stream;          /* cohort_group_set_stream: collectives wait for its work first */
    cohort_status_t error; /* COHORT_OK, or what every pending and later operation gets */
    int failed_rank;       /* the member (world rank) whose failure revoked it, or -1 */
    cohort_pmix_prepare_t *prepare;
    uint32_t coll_seq;        /* collectives posted so far */
    const char *last_algo;    /* the algorithm of the last one (src/coll; cohort_group_info) */
    uint32_t *send_seq;       /* [size] P2P messages sent to each member (lazily allocated) */
    uint32_t *recv_seq;       /* [size] P2P messages from each member delivered to matching */
    cohort_list_t posted;     /* receives waiting for a message (cohort_xfer_t) */
    cohort_list_t unexpected; /* messages waiting for a receive (cohort_msg_t) */
    cohort_list_t held;       /* P2P messages that overtook an earlier one from their sender */
    cohort_list_t waiting;    /* sends waiting for the first-use step */
    cohort_list_t cancels;    /* P2P cancels that came before their message (cancel.c) */
    uintptr_t guard_owner;    /* the thread inside a call on it, 0: none (core/guard.h) */
    int guard_depth;          /* its nested calls on it */
    cohort_list_t requests;   /* outstanding requests on this communicator */
    cohort_list_t link;       /* in ctx->comm_list */
    cohort_list_t prep_link;  /* in ctx->preparing */
    /* The fingerprints of the last COHORT_COMM_RECENT collectives posted, collective #s at
     * [s % COHORT_COMM_RECENT]: a message of one of them that carries another is a mismatch
     * even where it matches no receive (am.c). */
    uint32_t recent_fingerprint[COHORT_COMM_RECENT];
};

/* What a member that left said on its way out (node_shm_left). */
enum { COHORT_COMM_MEMBER_IN = 0, COHORT_COMM_MEMBER_FREED = 1, COHORT_COMM_MEMBER_FINALIZED = 2 };

/* A communicator over @a members (copied; NULL: the whole world), where this rank is
 * @a rank. Messages that arrived for @a id before it existed are delivered now. */
cohort_status_t cohort_comm_create(cohort_context_t *ctx, uint64_t id, const int *members, int size,
                                   int rank, const char *label, cohort_comm_t **comm);
/* Cancel what is pending (COHORT_ERR_REVOKED), drop queued messages, free. */
void cohort_comm_destroy(cohort_comm_t *comm);

static inline int cohort_comm_world_rank(const cohort_comm_t *c, int i)
{
    return c->members != NULL ? c->members[i] : i;
}

/* An operation is about to be posted: start the first-use step if this is the first one.
 * @return COHORT_OK, or the status the communicator fails everything with. Inline, the first
 * use through the hook comm.c registered (ctx->comm_hooks): every send and receive asks, the
 * transfers (xfer.c) below the communicators among them, and only the first does more than
 * read the state. */
static inline cohort_status_t cohort_comm_use(cohort_comm_t *c)
{
    if (__builtin_expect(c->state == COHORT_COMM_NEW, 0)) {
        return c->ctx->comm_hooks->first_use(c);
    }
    return c->error;
}
/* The per-member point-to-point numbers, made at the first point-to-point message. Inline:
 * it only allocates two of the communicator's arrays, and the transfers (below the
 * communicators) ask on every point-to-point send. */
static inline cohort_status_t cohort_comm_p2p_seqs(cohort_comm_t *c)
{
    if (c->send_seq == NULL) {
        c->send_seq = calloc((size_t)c->size, sizeof(uint32_t));
        c->recv_seq = calloc((size_t)c->size, sizeof(uint32_t));
        if (c->send_seq == NULL || c->recv_seq == NULL) {
            free(c->send_seq);
            free(c->recv_seq);
            c->send_seq = c->recv_seq = NULL;
            return COHORT_ERR_NO_MEMORY;
        }
    }
    return COHORT_OK;
}
/* Fail every pending and later operation with @a status (the first status sticks), and tell
 * the other members (notify.h). */
void cohort_comm_revoke(cohort_comm_t *comm, cohort_status_t status, const char *why);
/* The same, here only (the members were told by whoever started it). @return 1 when it was
 * not revoked before. */
int cohort_comm_revoke_local(cohort_comm_t *comm, cohort_status_t status, const char *why);
/* A second thread's call on @a comm, refused (cohort_guard_take_comm, core/guard.h): logged
 * naming @a fn, and with @a call (a call its members make too) the group revoked with
 * COHORT_ERR_MISMATCH and its members told. @return COHORT_ERR_INVALID_ARG. */
cohort_status_t cohort_comm_refuse_thread(cohort_comm_t *comm, int call, const char *fn);
/* World rank @a world_rank failed: revoke every communicator that contains it
 * (COHORT_ERR_PEER_FAILED), telling their members when @a tell (this rank saw it first-hand);
 * communicators without it are not touched. */
/* Communicators hear of peer failures (cohort_peer_observe), at context creation. */
void cohort_comm_init(cohort_context_t *ctx);
void cohort_comm_peer_failed(cohort_context_t *ctx, int world_rank, int tell, const char *why);
/* 1 when world rank @a world_rank is a member. */
int cohort_comm_contains(const cohort_comm_t *comm, int world_rank);
/* The most world rank @a world_rank said on its way out of the communicators this rank still
 * holds with it, where only a shared segment links the two (COHORT_COMM_MEMBER_*): a peer
 * that finalized and then exited is no failure, whether or not it had an endpoint to say
 * goodbye on. Never communicates; a walk over this rank's own communicators. */
int cohort_comm_member_left(cohort_context_t *ctx, int world_rank);
/* Advance first-use steps in flight. @return how many finished. */
int cohort_comm_progress(cohort_context_t *ctx);

#endif
