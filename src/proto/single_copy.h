/*
 * What the two single-copy protocols share (single_copy.c): CMA (cma.c, host memory read with
 * process_vm_readv) and CUDA IPC point-to-point (cuda_ipc.c, device memory mapped by the
 * receiver). The sender sends a small descriptor (its pid, the buffer's address or IPC handle,
 * its length, a token) in place of the data; the receiver, once it has matched it, checks that
 * the pid is the one the sender published through PMIx (its card, core/address_card.h; waiting from
 * progress while the card is fetched; CMA only, CUDA IPC names memory by handle: a difference
 * is COHORT_ERR_MISMATCH on the receive, nothing read, the sender answered), then copies the
 * data straight into the receive buffer (CMA: COHORT_CMA_CHUNK bytes per progress call, never
 * more than one piece inside UCX's callback or a post) and answers with an ACK carrying the
 * token, which finishes the send. Where it cannot (the kernel refuses: EPERM, ENOSYS; device memory
 * it cannot map), the receiver answers "send it" instead and the data follows through UCX to the
 * matched receive (SINGLE_COPY_DATA), and the sender stops offering that peer the same again. A
 * peer that dies fails what waits on it, as any transfer.
 *
 * Lifetime. From the moment its descriptor goes out the sender's buffer may be read by the
 * receiver at any time (when it matches the descriptor), so the send is not over, cancelled
 * or freed until the receiver answered: ACK (read), "send it", or "dropped unread" (a receiver
 * that drops the descriptor, its group revoked or freed there, or an orphan over the limit,
 * says so: the offer's unread handler), or until the receiver is declared dead. A cancelled
 * collective revokes its group (which makes the receiver drop what it has not read); a freed
 * point-to-point send tells its receiver (core/cancel.c), which stops reading between two
 * chunks and answers (the offer's cancel handler). Either way the request is held
 * (req->readers) until the answer; cohort_request_free progresses until it comes or the reader
 * dies, bounded by COHORT_TIMEOUT only (never a fixed time), and past that keeps the block,
 * named in the log, until the answer or the death. The alternative, a reader that checks a
 * generation before reading, cannot close the window: the check and the copy are not one step.
 */
#ifndef COHORT_PROTO_SINGLE_COPY_H
#define COHORT_PROTO_SINGLE_COPY_H

#include <stdint.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "reduce/gpu_module.h"

#define COHORT_SC_CMA_MAGIC 0xc0c0cabau
#define COHORT_SC_IPC_MAGIC 0xc0c0c1dau

typedef struct {
    uint32_t magic;
    int32_t pid;
    uint64_t addr;
    uint64_t len;
    uint64_t token; /* the sender's, echoed in the ACK */
} cohort_sc_desc_t;

/* The same for device memory: where it is, as CUDA IPC names it. */
typedef struct {
    cohort_sc_desc_t base; /* addr unused */
    cohort_gpu_ipc_t ipc;
} cohort_sc_ipc_desc_t;

/* A single-copy transfer's own state (x->proto_state): taken from the single-copy pool when
 * the transfer takes one of the two rows (its offer, or a receive matching a descriptor) and
 * given back when it finishes (cohort_sc_forget), so a transfer that never meets single copy
 * carries none of it. */
typedef struct {
    cohort_list_t pool_link; /* in the pool's free or lent list (cohort_sc_room_t) */
    uint8_t state;           /* COHORT_SC_*: where it is in the handshake */
    uint8_t cancel;          /* send: cancelled (x->status) while its reader may read it */
    /* recv (READING): the descriptor's pid is the one its rank published (core/address_card.h);
     * 0 while that card is on its way, nothing read. CUDA IPC: 1 from the start (its offer
     * names the memory by handle, not by pid) */
    uint8_t pid_ok;
    int32_t reader; /* send: the world rank that reads it (its group may be gone); recv
                     * (READING): the world rank it reads */
    uint64_t token; /* its key in the single-copy maps */
    /* recv (READING, cma.c): how far the chunked read is, and for a device buffer the
     * page-locked chunk it reads into and that chunk's copy to the device (0: none);
     * (cuda_ipc.c) ticket: the device copy out of the mapping */
    uint64_t off;
    uint64_t ticket;
    void *pinned;
    void *mapped;   /* recv (READING, cuda_ipc.c): the sender's memory, mapped (its IPC cache) */
    int32_t answer; /* recv (READING): what its sender is told if it is given up on */
    /* send: the descriptor UCX sends in place of the data; recv (READING): the one it reads */
    uint8_t desc[sizeof(cohort_sc_ipc_desc_t)];
} cohort_sc_state_t;

/* What the single-copy rows keep per context (CMA's row holds it, CUDA IPC shares it): the
 * engine has no field of theirs (src/coll asks through proto/cma.h). */
typedef struct {
    cohort_map_t sends;      /* token -> send waiting for its reader's answer */
    cohort_map_t recvs;      /* token -> receive waiting for the data it asked for */
    uint64_t next_token;     /* the next send's token (0 is never one) */
    uint32_t next_rtoken;    /* the next receive's token */
    cohort_list_t acks;      /* answers to send (cohort_sc_ack_t) */
    cohort_list_t acks_sent; /* answers UCX has not finished sending */
    cohort_list_t resend;    /* sends whose reader asked for the data */
    cohort_list_t reading;   /* receives reading their message chunk by chunk */
    /* The transfers' states: blocks to reuse, and blocks lent to transfers (all freed at
     * cleanup, also those of transfers a finalize left unfinished). */
    cohort_list_t states_free;
    cohort_list_t states_lent;
    /* CMA's (cma.c): whether the kernel lets this process read its peers; the same as found
     * at init and never changed since (what the direct collectives go by, so every member of
     * a node chooses alike); whether pidfd_getfd works (the same-node collectives need it:
     * select.c). */
    int cma_usable;
    int cma_direct;
    int fd_share;
} cohort_sc_room_t;

/* The single-copy rows' per-context state. */
cohort_sc_room_t *cohort_sc_room(const cohort_context_t *ctx);
/* Transfer @a x's single-copy state, taken from the pool (zeroed) if it has none yet: NULL
 * when out of memory (logged). */
cohort_sc_state_t *cohort_sc_state_take(cohort_xfer_t *x);
/* @a x's single-copy state, NULL when it has none. */
static inline cohort_sc_state_t *cohort_sc_state(const cohort_xfer_t *x)
{
    return (cohort_sc_state_t *)x->proto_state;
}

/* Where a transfer is in the handshake (its state's state; none: COHORT_SC_NONE). READING: a
 * receive that matched its descriptor, checks its pid (pid_ok, waiting for the sender's card if
 * need be) and reads the sender's buffer a chunk per progress call (the room's reading, through
 * x->link); given up on (cancelled, freed, its group revoked) it stops reading and tells the
 * sender, whose send then ends (done, or REVOKED with the group). ACKING: a receive that has its
 * data, done once its ACK is on a wired endpoint: finished earlier, the receiver could stop calling
 * cohort (its part is done) while the ACK still waits for the sender's address, and the sender
 * would wait for it forever. */
enum {
    COHORT_SC_NONE = 0,
    COHORT_SC_SENT,
    COHORT_SC_WANT_DATA,
    COHORT_SC_RESEND,
    COHORT_SC_ACKING,
    COHORT_SC_READING
};

/* Where @a x is in the handshake: COHORT_SC_NONE when it has no single-copy state. */
static inline int cohort_sc_phase(const cohort_xfer_t *x)
{
    return x->proto_state != NULL ? cohort_sc_state(x)->state : COHORT_SC_NONE;
}

/* Register send @a x (its protocol chosen) as offered to @a peer: a token, the descriptor's
 * common part with @a magic in its state's desc (a protocol's own part, after it, is filled by
 * its select, which takes the state), the header flag. @return the descriptor's length (@a len), 0
 * when it cannot be registered (out of memory): the data goes another way. */
size_t cohort_sc_offer(cohort_xfer_t *x, cohort_peer_t *peer, uint32_t magic, size_t len);
/* The world rank on the other side of single-copy transfer @a x. */
int cohort_sc_world(const cohort_xfer_t *x);
/* The hooks both rows share (single_copy.c). */
int cohort_sc_sent(cohort_xfer_t *x);
int cohort_sc_cancel(cohort_xfer_t *x, cohort_status_t status);
void cohort_sc_forget(cohort_xfer_t *x);
int cohort_sc_progress(cohort_context_t *ctx);
const void *cohort_sc_payload(const cohort_xfer_t *x, size_t *len);
void cohort_sc_describe(const cohort_xfer_t *x, char *buf, size_t len);
/* World rank @a world_rank failed: fail what waits on it here, of protocol @a proto. */
void cohort_sc_fail_peer(cohort_context_t *ctx, const struct cohort_proto *proto, int world_rank,
                         cohort_status_t status);
/* The handshake's message kinds, its descriptor reader, its queues (once per context: CMA's
 * init and cleanup call them, CUDA IPC rides on them). */
void cohort_sc_init(cohort_context_t *ctx);
void cohort_sc_cleanup(cohort_context_t *ctx);

/* The copies are each row's read_step and read_stop (proto.h): receive x (COHORT_SC_READING)
 * matched the descriptor in its state's desc from world rank reader (checked: its magic,
 * its length fits). CMA reads the next COHORT_CMA_CHUNK bytes per step (off so far);
 * CUDA IPC maps the sender's memory and copies the whole asynchronously, polled by the next
 * steps. COHORT_ERR_UNSUPPORTED (why): this rank cannot read it, the row's read_refused says so
 * (logged once) and the data is asked for. */
/* A read's device copy (its state's ticket, 0: none), for both rows: test, COHORT_OK once over
 * (or none), COHORT_INPROGRESS, or its error; wait, before the receive's buffer is its owner's
 * again (the copy writes it). Either spends the ticket once the copy is over. */
cohort_status_t cohort_sc_copy_test(cohort_context_t *ctx, cohort_xfer_t *x);
void cohort_sc_copy_wait(cohort_context_t *ctx, cohort_xfer_t *x);

#endif
