/*
 * Single-copy transfers between ranks of one node, over the kernel's cross-memory attach.
 * UCX 1.13 drops its cma lane under the PEER error mode cohort needs (DESIGN.md), so a large
 * same-node message would be copied twice, into and out of the shared segment. Instead the
 * sender sends a small descriptor (its pid, the buffer's address and length, a token) in place
 * of the data; the receiver, once it has matched it, reads the data straight into the receive
 * buffer with process_vm_readv and answers with an ACK carrying the token, which finishes the
 * send. Where the kernel refuses (EPERM, ENOSYS), the receiver answers "send it" instead and
 * the data follows through UCX to the matched receive (CMA_DATA); single copy is then off for
 * this context. A peer that dies fails what waits on it, as any transfer.
 *
 * Lifetime. From the moment its descriptor goes out the sender's buffer may be read by the
 * receiver at any time (when it matches the descriptor), so the send is not over, cancelled
 * or freed until the receiver answered: ACK (read), "send it", or "dropped unread" (a receiver
 * that drops the descriptor, its group revoked or freed there, or an orphan over the limit,
 * says so: cohort_cma_dropped), or until the receiver is declared dead. A cancel therefore
 * revokes the group (which makes the receiver drop what it has not read) and holds the request
 * (req->readers) until the answer; cohort_request_free waits for it, bounded by COHORT_TIMEOUT
 * (1 s when unset), and past that keeps the block, named in the log, until the answer or the
 * death. The alternative, a reader that checks a generation before reading, cannot close the
 * window: the check and the process_vm_readv are not one step.
 *
 * Device data goes the same way through CUDA IPC: a send of device memory to a peer on this
 * node (COHORT_CUDA_IPC not off, COHORT_CMA_MIN bytes or more) is not staged; its descriptor
 * carries the buffer's IPC handle, and the receiver maps it (the IPC mapping cache) and copies
 * straight into the receive buffer, device or host: one copy instead of three (to the sender's
 * bounce, across, to the device). A receiver that cannot map it (no device, GPUs without peer
 * access) answers "send it": the sender stages the data then and sends it, and stops offering
 * that peer device memory.
 */
#ifndef COHORT_CMA_H
#define COHORT_CMA_H

#include <stdint.h>
#include "core/am.h"
#include "core/endpoint.h"
#include "reduce/gpu_module.h"

#define COHORT_CMA_DESC_MAGIC 0xc0c0cabau
#define COHORT_CMA_IPC_MAGIC  0xc0c0c1dau

typedef struct {
    uint32_t magic;
    int32_t pid;
    uint64_t addr;
    uint64_t len;
    uint64_t token; /* the sender's, echoed in the ACK */
} cohort_cma_desc_t;

/* The same for device memory: where it is, as CUDA IPC names it. */
typedef struct {
    cohort_cma_desc_t base; /* addr unused */
    cohort_gpu_ipc_t ipc;
} cohort_cma_ipc_desc_t;

/* Where a transfer is in the protocol (cohort_xfer_t.cma_state). */
/* ACKING: a receive that has its data, done once its ACK is on a wired endpoint: finished
 * earlier, the receiver could stop calling cohort (its part is done) while the ACK still waits
 * for the sender's address, and the sender would wait for it forever. */
enum {
    COHORT_CMA_NONE = 0,
    COHORT_CMA_SENT,
    COHORT_CMA_WANT_DATA,
    COHORT_CMA_RESEND,
    COHORT_CMA_ACKING
};

/* Decide whether send @a x to @a peer goes by single copy; if so, fill its descriptor and
 * header flag and register it. @return the descriptor's length when it does, else 0. */
size_t cohort_cma_offer(cohort_xfer_t *x, cohort_peer_t *peer);
/* Whether a send of device memory @a x (at post) may skip staging and be offered through CUDA
 * IPC: a peer on this node that has not refused it, COHORT_CMA_MIN bytes or more. */
int cohort_cma_ipc_wanted(cohort_xfer_t *x);
/* Receive @a x matched the descriptor message @a m: read the data, or ask for it. */
void cohort_cma_read(cohort_context_t *ctx, cohort_xfer_t *x, const cohort_msg_t *m);
/* Read @a len bytes at @a addr of process @a pid (world rank @a world_rank, on this node) into
 * @a dst (counted in cohort_stats' single copies). @return COHORT_OK; COHORT_ERR_UNSUPPORTED when
 * the kernel refuses (or COHORT_FAULT says so; @a why says which, nothing logged);
 * COHORT_ERR_PEER_FAILED when the process is gone (the peer is failed); COHORT_ERR_UCX when its
 * buffer is not there (logged). */
cohort_status_t cohort_cma_pull(cohort_context_t *ctx, int world_rank, int32_t pid, void *dst,
                                uint64_t addr, size_t len, const char **why);
/* The same the other way: write @a len bytes of @a src at @a addr of process @a pid. */
cohort_status_t cohort_cma_push(cohort_context_t *ctx, int world_rank, int32_t pid, const void *src,
                                uint64_t addr, size_t len, const char **why);
/* A message of @a h with @a len bytes of @a data is dropped unread (its group revoked or
 * freed here, an orphan over the limit): when it is a single-copy descriptor, its sender is
 * told it will not be read, so that it can give its buffer back. */
void cohort_cma_dropped(cohort_context_t *ctx, const cohort_am_hdr_t *h, const void *data,
                        size_t len);
/* An ACK arrived (sender side). An answer for a send cancelled meanwhile finishes it now. */
void cohort_cma_ack(cohort_context_t *ctx, const cohort_am_hdr_t *h);
/* The data a refused single copy asked for arrived (receiver side). @a data is eager data or,
 * with @a rndv, UCX's descriptor. @return 1 when a rendezvous fetch took the descriptor. */
int cohort_cma_data(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data, size_t len,
                    int rndv);
/* @a x is finishing: forget its token. */
void cohort_cma_forget(cohort_xfer_t *x);
/* World rank @a world_rank failed: fail what waits on it here. */
void cohort_cma_fail_peer(cohort_context_t *ctx, int world_rank, cohort_status_t status);
/* Send queued ACKs and resends. @return how many. */
int cohort_cma_progress(cohort_context_t *ctx);
/* Whether single copy may be tried here (COHORT_CMA, the kernel's ptrace scope). */
void cohort_cma_init(cohort_context_t *ctx);
void cohort_cma_cleanup(cohort_context_t *ctx);

#endif
