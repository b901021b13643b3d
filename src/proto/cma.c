/*
 * Single copy of host memory between ranks of one node, over the kernel's cross-memory attach
 * (process_vm_readv), behind the single-copy handshake (single_copy.h). UCX 1.13 drops its cma
 * lane under the PEER error mode cohort needs (DESIGN.md), so a large same-node message would
 * be copied twice, into and out of the shared segment. Where the kernel refuses (EPERM,
 * ENOSYS), single copy is off for this context from then on.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "base/kernel.h"
#include "core/log.h"
#include "mem/gpu.h"
#include "proto/cma.h"
#include "proto/msg.h"
#include "proto/protos.h"
#include "proto/single_copy.h"

/* Whether single copy may be tried here (COHORT_CMA, the kernel's ptrace scope); the
 * handshake's kinds and queues, which CUDA IPC shares. */
static void cohort_cma_init(cohort_context_t *ctx)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);
    int scope;

    cohort_sc_init(ctx);
    room->cma_usable = ctx->cfg.cma != COHORT_CMA_OFF;
    room->cma_direct = room->cma_usable;
    /* Taking a peer's file descriptor, which the kernel allows where it allows reading the
     * peer. */
    room->fd_share = cohort_kernel_fd_share(NULL);
    if (ctx->cfg.cma != COHORT_CMA_AUTO) {
        return;
    }
    /* Yama's scope 1 and up lets a process read only its descendants: not its peers. */
    scope = cohort_kernel_ptrace_scope();
    if (scope > 0) {
        room->cma_usable = 0;
        room->cma_direct = 0;
        cohort_info(ctx, "single copy off: kernel.yama.ptrace_scope is %d", scope);
    }
}

/* One side of a single copy: read the peer's memory into ours, or write ours into its. @a fault:
 * COHORT_FAULT=cma counts this one (the first piece of a message, or a whole copy). */
static cohort_status_t cohort_cma_rw(cohort_context_t *ctx, int world_rank, int32_t pid,
                                     void *local_buf, uint64_t addr, size_t len, int write,
                                     int fault, const char **why)
{
    size_t done = 0;

    if (fault && cohort_fault(ctx, COHORT_FAULT_CMA)) {
        *why = "COHORT_FAULT";
        return COHORT_ERR_UNSUPPORTED;
    }
    while (done < len) {
        struct iovec local = {(char *)local_buf + done, len - done};
        struct iovec remote = {(void *)(uintptr_t)(addr + done), len - done};
        ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
                          : process_vm_readv(pid, &local, 1, &remote, 1, 0);

        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EPERM || errno == ENOSYS || errno == EACCES)) {
            *why = strerror(errno);
            return COHORT_ERR_UNSUPPORTED;
        }
        /* Gone (ESRCH), or its buffer went away under us (EFAULT: it gave up on this send). */
        cohort_error(ctx, "single-copy %s of %zu bytes %s world rank %d failed: %s",
                     write ? "write" : "read", len, write ? "to" : "from", world_rank,
                     n < 0 ? strerror(errno) : "no data");
        if (n < 0 && errno == ESRCH) {
            cohort_peer_t *peer = cohort_peer_get(ctx, world_rank);
            if (peer != NULL && peer->state != COHORT_PEER_FAILED) {
                cohort_peer_fail(peer, COHORT_ERR_PEER_FAILED, "its process is gone");
            }
            return COHORT_ERR_PEER_FAILED;
        }
        return COHORT_ERR_UCX;
    }
    ctx->stat_cma++;
    ctx->stat_cma_bytes += len;
    return COHORT_OK;
}

cohort_status_t cohort_cma_pull(cohort_context_t *ctx, int world_rank, int32_t pid, void *dst,
                                uint64_t addr, size_t len, const char **why)
{
    return cohort_cma_rw(ctx, world_rank, pid, dst, addr, len, 0, 1, why);
}

cohort_status_t cohort_cma_push(cohort_context_t *ctx, int world_rank, int32_t pid, const void *src,
                                uint64_t addr, size_t len, const char **why)
{
    return cohort_cma_rw(ctx, world_rank, pid, (void *)src, addr, len, 1, 1, why);
}

int cohort_cma_direct(const cohort_context_t *ctx)
{
    return cohort_sc_room(ctx)->cma_direct;
}

int cohort_cma_fd_share(const cohort_context_t *ctx)
{
    return cohort_sc_room(ctx)->fd_share;
}

/* A receive's read, one piece of COHORT_CMA_CHUNK bytes per step (single_copy.c calls it from
 * progress), so that no call holds its caller for a whole message: 64 MiB read whole took 11 ms
 * warm and 91-114 ms cold inside one call here. A receive whose buffer is device memory that UCX
 * takes (so not staged) reads through one page-locked piece, since process_vm_readv writes host
 * memory only, and each piece goes on to the device asynchronously; the next piece is read once
 * that copy is over (one buffer per transfer). */
static cohort_status_t cohort_cma_read_step(cohort_context_t *ctx, cohort_xfer_t *x,
                                            const char **why)
{
    cohort_sc_state_t *s = cohort_sc_state(x);
    int device = x->mem_type == COHORT_MEM_CUDA;
    cohort_status_t status;
    cohort_sc_desc_t d;
    size_t n;

    memcpy(&d, s->desc, sizeof(d));
    status = cohort_sc_copy_test(ctx, x);
    if (status != COHORT_OK) {
        return status;
    }
    if (s->off == d.len) {
        return COHORT_OK;
    }
    n = d.len - s->off < ctx->cfg.cma_chunk ? (size_t)(d.len - s->off) : ctx->cfg.cma_chunk;
    if (device && s->pinned == NULL) {
        s->pinned = cohort_gpu_pinned_get(ctx, d.len < ctx->cfg.cma_chunk ? (size_t)d.len
                                                                          : ctx->cfg.cma_chunk);
        if (s->pinned == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
    }
    status = cohort_cma_rw(ctx, s->reader, d.pid, device ? s->pinned : (char *)x->buf + s->off,
                           d.addr + s->off, n, 0, s->off == 0, why);
    if (status != COHORT_OK) {
        return status;
    }
    if (device) {
        status = cohort_gpu_copy_start(ctx, (char *)x->buf + s->off, s->pinned, n,
                                       COHORT_GPU_LANE_TO_DEVICE, &s->ticket);
        if (status != COHORT_OK) {
            return status;
        }
    }
    s->off += n;
    return s->off == d.len && s->ticket == 0 ? COHORT_OK : COHORT_INPROGRESS;
}

static void cohort_cma_read_stop(cohort_context_t *ctx, cohort_xfer_t *x)
{
    cohort_sc_state_t *s = cohort_sc_state(x);

    cohort_sc_copy_wait(ctx, x);
    if (s->pinned != NULL) {
        cohort_gpu_pinned_put(ctx, s->pinned);
        s->pinned = NULL;
    }
}

/* The kernel would not let us read the sender: the data is asked for, and single copy is off
 * here from now on. */
static void cohort_cma_refused(cohort_context_t *ctx, int world_rank, const char *why)
{
    cohort_sc_room_t *room = cohort_sc_room(ctx);

    if (room->cma_usable) {
        cohort_warn(ctx,
                    "single-copy transfers refused by the kernel (%s): large same-node messages "
                    "go through UCX's shared memory from now on",
                    why);
        room->cma_usable = 0;
        cohort_proto_repick(ctx); /* no peer gets single copy now */
    }
}

/* A host send of COHORT_CMA_MIN bytes or more, of a point-to-point or collective message (not
 * a resend of refused data), to another rank of this node that has not refused it. */
static int cohort_cma_select(cohort_xfer_t *x, cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;

    return x->hdr[1] == x->kind && ctx->cfg.cma != COHORT_CMA_OFF &&
           cohort_sc_room(ctx)->cma_usable && !peer->cma_off && x->mem_type == COHORT_MEM_HOST &&
           x->len >= ctx->cfg.cma_min && peer->rank != ctx->rank &&
           (x->kind == COHORT_MSG_P2P || x->kind == COHORT_MSG_COLL) && cohort_peer_same_node(peer);
}

static void cohort_cma_start(cohort_xfer_t *x, cohort_peer_t *peer)
{
    size_t n = cohort_sc_offer(x, peer, COHORT_SC_CMA_MAGIC, sizeof(cohort_sc_desc_t));

    if (n == 0) {
        x->proto = &cohort_proto_msg; /* not registered: the data goes as a message */
        cohort_proto_msg.start(x, peer);
        return;
    }
    cohort_proto_msg_send(x, peer, cohort_sc_state(x)->desc, n, 1);
}

static void cohort_cma_abort(cohort_context_t *ctx, int world_rank, cohort_status_t status)
{
    cohort_sc_fail_peer(ctx, &cohort_proto_cma, world_rank, status);
}

/* The handshake's progress is here for both single-copy rows (one queue of answers). */
const cohort_proto_t cohort_proto_cma = {
    .name = "cma",
    .select = cohort_cma_select,
    .start = cohort_cma_start,
    .progress = cohort_sc_progress,
    .sent = cohort_sc_sent,
    .cancel = cohort_sc_cancel,
    .finish = cohort_sc_forget,
    .abort = cohort_cma_abort,
    .payload = cohort_sc_payload,
    .read_step = cohort_cma_read_step,
    .read_stop = cohort_cma_read_stop,
    .read_refused = cohort_cma_refused,
    .describe = cohort_sc_describe,
    .init = cohort_cma_init,
    .cleanup = cohort_sc_cleanup,
    .ctx_size = sizeof(cohort_sc_room_t), /* the single-copy room, CUDA IPC's too */
};
