/*
 * CUDA IPC point-to-point: a send of device memory to a peer on this node (COHORT_CUDA_IPC not
 * off, COHORT_CMA_MIN bytes or more) is not staged; its descriptor carries the buffer's IPC
 * handle, and the receiver maps it (the IPC mapping cache, src/mem) and copies straight into
 * the receive buffer, device or host: one copy instead of three (to the sender's bounce,
 * across, to the device). A receiver that cannot map it (no device, GPUs without peer access)
 * answers "send it": the sender stages the data then and sends it, and stops offering that
 * peer device memory. The handshake is the single-copy one (single_copy.h); the device calls
 * go through the GPU module (src/mem), never CUDA itself.
 */
#include <stdio.h>
#include <string.h>
#include "core/log.h"
#include "mem/gpu.h"
#include "mem/ipc_cache.h"
#include "proto/msg.h"
#include "proto/protos.h"
#include "proto/single_copy.h"
#include "proto/xfer_stage.h"

/* At post: device memory (not managed memory, which cannot be exported) of a point-to-point or
 * collective send to another rank of this node that has not refused it, COHORT_CMA_MIN bytes
 * or more, is carried as it is. */
static int cohort_cuda_ipc_claim(cohort_xfer_t *x)
{
    cohort_context_t *ctx = x->req->ctx;
    cohort_peer_t *peer;

    if (!x->is_send || ctx->cfg.cuda_ipc == COHORT_CUDA_IPC_OFF || x->len < ctx->cfg.cma_min ||
        (x->kind != COHORT_MSG_P2P && x->kind != COHORT_MSG_COLL) ||
        ctx->mem.gpu.mod->ptr_kind(x->buf, NULL) != COHORT_GPU_PTR_DEVICE) {
        return 0;
    }
    peer = cohort_peer_get(ctx, cohort_sc_world(x));
    if (peer == NULL || peer->rank == ctx->rank || peer->ipc_off || !cohort_peer_same_node(peer)) {
        return 0;
    }
    x->proto = &cohort_proto_cuda_ipc;
    return 1;
}

/* A claimed send, its handle taken now. Device memory the peer cannot take (it refused since),
 * or that cannot be exported, is staged after all and declined (a row below carries the
 * bounce; a failed staging leaves device data no row takes: the send fails). */
static int cohort_cuda_ipc_select(cohort_xfer_t *x, cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;
    cohort_sc_state_t *s;
    cohort_gpu_ipc_t ipc;

    if (x->proto != &cohort_proto_cuda_ipc || x->hdr[1] != x->kind) {
        return 0;
    }
    memset(&ipc, 0, sizeof(ipc));
    /* Its state is taken here, where its handle is: the offer (start) fills the rest, and
     * gives the state back if it cannot be made. */
    if (peer->ipc_off || ctx->mem.gpu.mod->ipc_get(x->buf, &ipc) != COHORT_OK ||
        (s = cohort_sc_state_take(x)) == NULL) {
        if (cohort_xfer_stage_now(x) == COHORT_OK) {
            x->proto = NULL;
        }
        return 0;
    }
    memcpy(s->desc + offsetof(cohort_sc_ipc_desc_t, ipc), &ipc, sizeof(ipc));
    return 1;
}

static void cohort_cuda_ipc_start(cohort_xfer_t *x, cohort_peer_t *peer)
{
    size_t n = cohort_sc_offer(x, peer, COHORT_SC_IPC_MAGIC, sizeof(cohort_sc_ipc_desc_t));

    if (n > 0) {
        cohort_proto_msg_send(x, peer, cohort_sc_state(x)->desc, n, 1);
    } else if (cohort_xfer_stage_now(x) == COHORT_OK) {
        x->proto = &cohort_proto_msg; /* not registered: staged, as a message */
        cohort_proto_msg.start(x, peer);
    } else {
        cohort_xfer_finish(x, COHORT_ERR_CUDA);
    }
}

/* The pull of a sender's device memory, through CUDA IPC (the mapping cache), straight into
 * the receive's own buffer: the caller's device buffer behind a staged receive (whose bounce
 * then has nothing to give the device), or its host or device buffer. From progress, in steps:
 * the first maps the memory and starts the copy on one of the module's lanes (never a
 * synchronous copy, which would hold the progress call, maybe UCX's callback, for the whole
 * message), the next ones poll it. COHORT_ERR_UNSUPPORTED (@a why) when it cannot be mapped
 * here. */
static cohort_status_t cohort_cuda_ipc_read_step(cohort_context_t *ctx, cohort_xfer_t *x,
                                                 const char **why)
{
    cohort_sc_state_t *s = cohort_sc_state(x);
    void *dst = x->stage != NULL ? x->stage_user : x->buf;
    cohort_sc_ipc_desc_t d;
    cohort_status_t status;

    memcpy(&d, s->desc, sizeof(d));
    if (s->mapped == NULL) {
        if (cohort_gpu_get(ctx) == NULL) {
            *why = ctx->mem.gpu.why;
            return COHORT_ERR_UNSUPPORTED;
        }
        status = cohort_ipc_map(ctx, s->reader, &d.ipc, &s->mapped);
        if (status != COHORT_OK) {
            s->mapped = NULL;
            *why = status == COHORT_ERR_CUDA ? ctx->mem.gpu.mod->last_error() : "out of memory";
            return COHORT_ERR_UNSUPPORTED;
        }
        status = cohort_gpu_copy_start(ctx, dst, (char *)s->mapped + d.ipc.offset, d.base.len,
                                       cohort_gpu_mem_type(ctx, dst) == COHORT_MEM_CUDA
                                           ? COHORT_GPU_LANE_TO_DEVICE
                                           : COHORT_GPU_LANE_TO_HOST,
                                       &s->ticket);
        if (status != COHORT_OK) {
            return status;
        }
    }
    status = cohort_sc_copy_test(ctx, x);
    if (status != COHORT_OK) {
        return status;
    }
    x->stage_drained = x->stage != NULL;
    ctx->stat_cma++;
    ctx->stat_cma_bytes += d.base.len;
    return COHORT_OK;
}

static void cohort_cuda_ipc_read_stop(cohort_context_t *ctx, cohort_xfer_t *x)
{
    cohort_sc_state_t *s = cohort_sc_state(x);

    cohort_sc_copy_wait(ctx, x);
    if (s->mapped != NULL) {
        cohort_ipc_unmap(ctx, s->mapped);
        s->mapped = NULL;
    }
}

/* Its device memory could not be mapped here: the data is asked for, and the sender stops
 * offering us device memory. */
static void cohort_cuda_ipc_refused(cohort_context_t *ctx, int world_rank, const char *why)
{
    int first = ctx->mem.gpu.ipc_warned++ == 0;

    cohort_log(cohort_ctx_log(ctx), first ? COHORT_LOG_WARN : COHORT_LOG_DEBUG,
               "cannot map world rank %d's device memory (CUDA IPC: %s): its messages come "
               "staged through host memory instead%s",
               world_rank, why, first ? " (said once; COHORT_LOG=debug for each)" : "");
}

static void cohort_cuda_ipc_describe(const cohort_xfer_t *x, char *buf, size_t len)
{
    cohort_sc_desc_t d;

    if (cohort_sc_phase(x) != COHORT_SC_READING) {
        cohort_sc_describe(x, buf, len);
        return;
    }
    memcpy(&d, cohort_sc_state(x)->desc, sizeof(d));
    snprintf(buf, len, "cuda_ipc single copy with world rank %d: %s %llu bytes",
             cohort_sc_state(x)->reader,
             cohort_sc_state(x)->mapped == NULL ? "mapping its memory to copy" : "copying",
             (unsigned long long)d.len);
}

static void cohort_cuda_ipc_abort(cohort_context_t *ctx, int world_rank, cohort_status_t status)
{
    cohort_sc_fail_peer(ctx, &cohort_proto_cuda_ipc, world_rank, status);
}

/* Its handshake's progress, init and cleanup are CMA's row (one queue for both). */
const cohort_proto_t cohort_proto_cuda_ipc = {
    .name = "cuda_ipc",
    .claim = cohort_cuda_ipc_claim,
    .select = cohort_cuda_ipc_select,
    .start = cohort_cuda_ipc_start,
    .sent = cohort_sc_sent,
    .cancel = cohort_sc_cancel,
    .finish = cohort_sc_forget,
    .abort = cohort_cuda_ipc_abort,
    .payload = cohort_sc_payload,
    .read_step = cohort_cuda_ipc_read_step,
    .read_stop = cohort_cuda_ipc_read_stop,
    .read_refused = cohort_cuda_ipc_refused,
    .describe = cohort_cuda_ipc_describe,
};
