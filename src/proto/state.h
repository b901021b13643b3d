/*
 * A protocol's state inside a transfer (cohort_xfer_t.ps). Which member is live is decided by
 * the protocol the transfer points at (x->proto, proto.h) and read by that protocol alone; the
 * engine only zeroes it when the transfer is set up. The UCX message protocol keeps nothing
 * here: what it has in flight (ucx_req, ucx_peer, the header) is the engine's own bookkeeping,
 * shared by every protocol that sends through UCX.
 */
#ifndef COHORT_PROTO_STATE_H
#define COHORT_PROTO_STATE_H

#include <stdint.h>

/* Single copy (CMA and CUDA IPC point-to-point, single_copy.h). */
typedef struct {
    uint8_t state;     /* COHORT_SC_*: where it is in the handshake */
    uint8_t cancel;    /* send: cancelled (x->status) while its reader may read it */
    uint8_t pid_ok;    /* recv (READING): the descriptor's pid is the one its rank published
                        * (core/address_card.h); 0 while that card is on its way, nothing read. CUDA IPC:
                        * 1 from the start (its offer names the memory by handle, not by pid) */
    int32_t reader;    /* send: the world rank that reads it (its group may be gone); recv
                        * (READING): the world rank it reads */
    uint64_t token;    /* its key in the context's single-copy map */
    uint8_t desc[144]; /* send: the descriptor UCX sends in place of the data; recv (READING):
                        * the descriptor it reads */
    /* recv (READING, cma.c): how far the chunked read is, and for a device buffer the
     * page-locked chunk it reads into and that chunk's copy to the device (0: none);
     * (cuda_ipc.c) ticket: the device copy out of the mapping */
    uint64_t off;
    uint64_t ticket;
    void *pinned;
    void *mapped;   /* recv (READING, cuda_ipc.c): the sender's memory, mapped (its IPC cache) */
    int32_t answer; /* recv (READING): what its sender is told if it is given up on */
} cohort_proto_sc_state_t;

typedef union {
    cohort_proto_sc_state_t sc;
} cohort_proto_state_t;

#endif
