/*
 * Requests, and the transfers (one message sent or received) they are made of. A request is
 * made by the layer that posts it and carries that layer's ops table; the engine calls only
 * the table, so it names no algorithm. Request blocks come from a per-context pool.
 */
#ifndef COHORT_REQUEST_H
#define COHORT_REQUEST_H

#include <stdint.h>
#include <stdalign.h>
#include "cohort.h"
#include "core/am_header.h"
#include "base/list.h"
#include "mem/gpu.h" /* cohort_mem_type_t: where a transfer's buffer lives */

typedef struct cohort_comm cohort_comm_t;
typedef struct cohort_peer cohort_peer_t;

typedef struct cohort_xfer {
    cohort_list_t link;     /* posted receives; a peer's or comm's waiting sends */
    cohort_list_t req_link; /* in req->xfers while posted or in UCX's hands */
    cohort_request_t *req;  /* owner; NULL for a slot never posted */
    int is_send;
    int peer;              /* group rank */
    uint8_t kind;          /* cohort_msg_kind_t */
    uint8_t mem_type;      /* cohort_mem_type_t of buf */
    uint8_t posted;        /* recv: in comm->posted */
    uint8_t waiting;       /* send: queued until the communicator or the peer is ready */
    uint8_t stage_drained; /* recv: its staged copy to the device was started (xfer_stage.c) */
    uint8_t done;
    uint8_t canceling; /* P2P send: freed, its receiver told (cancel.c); ends COHORT_ERR_CANCELED */
    uint32_t seq;      /* recv of P2P: the number of the message it matched */
    int32_t tag;
    uint32_t fingerprint; /* COLL: the call's (am_header.h); P2P: 0 */
    cohort_status_t status;
    void *buf;
    size_t len; /* send: bytes; recv: capacity */
    size_t received;
    double since; /* recv: when it was posted, then when its fetch began (COHORT_WATCH_S) */
    /* The protocol that carries it (src/proto/proto.h): a send's, chosen when its peer is
     * wired (or claimed at post); a receive's, what its matched message said. NULL: none yet,
     * or a plain message received. */
    const struct cohort_proto *proto;
    /* That protocol's own state, if it keeps any: the protocol allocates it when it takes the
     * transfer and gives it back when the transfer ends (its finish); the engine never looks
     * inside, and only zeroes the pointer when the transfer is set up. */
    void *proto_state;
    void *stage; /* device data through page-locked memory (proto/xfer_stage.c): the bounce */
    void *stage_user;        /* the caller's device buffer behind it */
    uint64_t stage_copy;     /* the staging copy in flight (its ticket), 0: none */
    void *ucx_req;           /* UCX request while in flight */
    cohort_peer_t *ucx_peer; /* whose endpoint that request uses */
    uint8_t hdr[COHORT_AM_HDR_BYTES]; /* send: the encoded header UCX may still read */
} cohort_xfer_t;

typedef struct cohort_request_ops {
    const char *name;
    /* Advance after a completion woke the request: COHORT_OK when done, COHORT_INPROGRESS, or
     * an error. NULL: the request is done when its transfer is (point-to-point). */
    cohort_status_t (*progress)(cohort_request_t *req);
    /* Optional: the layer's own part of a cancel (the engine cancels the transfers). */
    void (*cancel)(cohort_request_t *req, cohort_status_t status);
    /* Optional: free what the layer allocated; once, when no UCX operation points into the
     * request any more. */
    void (*release)(cohort_request_t *req);
    /* Say what the request waits for (timeout messages). */
    void (*describe)(const cohort_request_t *req, char *buf, size_t len);
} cohort_request_ops_t;

struct cohort_request {
    uint32_t magic;
    uintptr_t handle;    /* what the user holds (core/handle.h); 0: none handed out */
    unsigned fork_epoch; /* of the process that made it (core/guard.h) */
    uint8_t done;
    uint8_t user_freed;
    uint8_t queued;    /* in ctx->ready */
    uint8_t polling;   /* in ctx->polling */
    uint8_t detached;  /* its context was finalized while the user held it */
    uint8_t timed_out; /* a wait on it hit COHORT_TIMEOUT: freeing it revokes with TIMEOUT */
    uint8_t device;    /* its transfers' buffers may be device memory: each is looked at */
    uint8_t held;      /* finished (held_status) but a reader still reads one of its sends */
    uint8_t dead_let_go; /* let go of with fetches from dead senders still in UCX (request.c) */
    uint8_t peer_left;   /* point-to-point receive failed because its peer finalized (am.c):
                          * said when a wait takes the status */
    cohort_status_t status;
    cohort_status_t held_status;
    cohort_context_t *ctx;
    cohort_comm_t *comm;
    const cohort_request_ops_t *ops;
    int inflight;             /* UCX operations that still point into this request */
    int readers;              /* single-copy sends whose reader has not answered (cma.h) */
    int waiters;              /* threads inside cohort_wait on it: a free meanwhile is refused */
    cohort_list_t xfers;      /* transfers posted and not finished with UCX */
    cohort_list_t ready_link; /* in ctx->ready */
    cohort_list_t poll_link;  /* in ctx->polling */
    cohort_list_t comm_link;  /* in comm->requests */
    cohort_list_t ctx_link;   /* in ctx->requests */
    cohort_list_t free_link;  /* in ctx->req_free */
    void *state;              /* the layer's state: inline, or in state_block */
    size_t state_block_cap;   /* state_block's size (kept across reuses of the request) */
    void *state_block;        /* state too large to be inline, allocated apart */
    cohort_xfer_t xfer; /* point-to-point */
};

/* What a request block says it is (request.c, request_wait.c): a handle is checked by it. */
#define COHORT_REQ_LIVE     0x5e9a11feu
#define COHORT_REQ_FREED    0xdeadf5eeu
#define COHORT_REQ_DETACHED 0xdeadc0c0u

/* Inline state per block: the small-message algorithms' state fits (recursive doubling ~500 B
 * with its two transfer slots), so a steady stream of small collectives allocates nothing. */
#define COHORT_REQ_INLINE 1024

typedef struct {
    cohort_request_t req;
    alignas(64) unsigned char inline_state[COHORT_REQ_INLINE];
} cohort_req_block_t;

/* A request on @a comm with @a extra bytes of layer state (zeroed), or NULL (logged). */
cohort_request_t *cohort_request_alloc(cohort_comm_t *comm, const cohort_request_ops_t *ops,
                                       size_t extra);
/* Mark finished with @a status; the first status set sticks. While another process may
 * still read one of its sends (req->readers), it is held: done when the last reader answers. */
void cohort_request_complete(cohort_request_t *req, cohort_status_t status);
/* A transfer of @a req changed: progress it at the next pass. */
void cohort_request_wake(cohort_request_t *req);
/* The request waits on memory, not on a transfer (shared-memory collectives): progress it
 * once in the next pass (not again in this one, which would never end). */
void cohort_request_poll(cohort_request_t *req);
/* Progress, once each, the requests that asked to be polled. @return how many finished. */
int cohort_request_poll_all(cohort_context_t *ctx);
/* The device work *@a ticket names (a copy or kernel's mark, mem/gpu.h), polled for @a req:
 * COHORT_OK once it is over (or with no ticket), COHORT_INPROGRESS (the request is polled
 * again: no completion announces the end of device work), or the device's error; the ticket is
 * used up (set to 0) unless in progress. Here, not in memory, because it marks a request. */
cohort_status_t cohort_gpu_ticket_poll(cohort_request_t *req, uint64_t *ticket);
/* Stop everything the request still waits for and finish it with @a status. */
void cohort_request_cancel(cohort_request_t *req, cohort_status_t status);
/* Give the block back to the pool once UCX no longer points into it and no reader reads it. */
void cohort_request_release(cohort_request_t *req);
/* Hand @a req to the user: *out is its handle. On failure (out of memory) the request is
 * cancelled and freed. */
cohort_status_t cohort_request_publish(cohort_request_t *req, cohort_request_t **out);
/* The request a user's handle names (live, or detached by finalize), without taking its
 * context: for calls that only read it. NULL (logged) for a stale or foreign handle, in a fork
 * child, or while another thread is inside a call on its context. */
cohort_request_t *cohort_request_get(const cohort_request_t *handle, const char *fn);
/* cohort_request_free for a request of the library's own (no handle). */
void cohort_request_free_internal(cohort_request_t *req);
/* Progress until @a req is done, bounded by COHORT_TIMEOUT. */
cohort_status_t cohort_request_wait_internal(cohort_request_t *req);
/* Progress one request the ready list handed us. */
void cohort_request_progress(cohort_request_t *req);
/* Finalize: every request cancelled, UCX drained; user-held ones detached. */
void cohort_request_finalize_all(cohort_context_t *ctx);
/* The rendezvous fetches UCX has not ended yet, each handed to @a each (may be NULL) with
 * @a arg; @a each must not end or free one. @return how many. */
int cohort_request_fetches(cohort_context_t *ctx, void (*each)(cohort_xfer_t *x, void *arg),
                           void *arg);
void cohort_request_pool_cleanup(cohort_context_t *ctx);

#endif
