/*
 * Same-node allreduce, reduce_scatter and allgather through CUDA IPC (COHORT_CUDA_IPC=on):
 * every member maps the others' device buffers and reads them directly, device to device.
 *
 * Members must choose an algorithm alike, and a buffer's memory type is local knowledge: so
 * this algorithm is chosen by settings and placement only (the setting on, a device, every
 * member on this node), and every member takes part whatever its buffers are. A host buffer,
 * or a device buffer that cannot be exported (managed memory, pool or VMM allocations), is
 * copied into device scratch that can. That is also why the setting must be the same on every
 * rank, like COHORT_ALGO_*.
 *
 * Phases: exchange descriptors (IPC handle, offset, buffer id of the input and the output) with
 * every member; map theirs; combine: for allreduce rank i computes block i from every member's
 * input (its own first) in one kernel that writes it into every member's output, so each block
 * is computed once (every member ends with the same bits) and every byte of every input is read
 * once and every byte of every output written once, the least a one-GPU allreduce can move;
 * reduce_scatter is the same with this rank's output only; allgather copies every member's
 * input into this rank's output. Then one signal to every member, and completion only once all
 * have signalled: until then they read this rank's input and write into its output.
 */
#include <string.h>
#include "coll/coll_reduce.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/gpu.h"
#include "core/log.h"

typedef enum { IPC_EXCHANGE, IPC_COMBINE, IPC_SYNC } ipc_phase_t;

enum { IPC_STEP_DESC, IPC_STEP_SYNC };

typedef struct {
    cohort_gpu_ipc_t in, out;
} ipc_desc_t;

typedef struct {
    cohort_coll_base_t base;
    ipc_phase_t phase;
    int posted; /* the current phase's messages are posted */
    size_t in_bytes, out_bytes;
    char *din, *dout;   /* device input and output this rank exports */
    void *scratch[2];   /* device scratch standing in for host or unexportable buffers */
    int out_is_scratch; /* the result goes to the caller's rbuf at the end */
    void *final_dst;    /* where: the caller's rbuf */
    uint8_t signal;     /* the byte each signal carries */
    ipc_desc_t mine;
    ipc_desc_t *peers;        /* n descriptors */
    char **in_map, **out_map; /* n: every member's input and output as mapped here */
    void **opened;            /* 2n: bases mapped through the IPC cache, to give back */
    uint8_t *sig_rx;          /* n: the signal's receive bytes */
    /* then xfers: 2 rounds x (n receives + n sends), own rank's slots unused */
} ipc_state_t;

static size_t ipc_state_size(const cohort_coll_args_t *args, int n)
{
    return sizeof(ipc_state_t) + (size_t)n * (sizeof(ipc_desc_t) + 4 * sizeof(void *) + 1) +
           4 * (size_t)n * sizeof(cohort_xfer_t) + 64;
}

static const cohort_gpu_module_t *ipc_mod(cohort_request_t *req)
{
    return req->ctx->gpu.mod;
}

/* @a user as an exportable device buffer of @a bytes: itself, or scratch slot @a k holding a
 * copy of its first @a copy bytes. */
static cohort_status_t ipc_export(cohort_request_t *req, ipc_state_t *s, const void *user,
                                  size_t bytes, size_t copy, int k, char **dev,
                                  cohort_gpu_ipc_t *ipc)
{
    const cohort_gpu_module_t *mod = ipc_mod(req);
    cohort_status_t status;

    if (user != NULL && mod->ptr_kind(user, NULL) == COHORT_GPU_PTR_DEVICE &&
        mod->ipc_get(user, ipc) == COHORT_OK) {
        *dev = (char *)user;
        return COHORT_OK;
    }
    s->scratch[k] = cohort_gpu_scratch_get(req->ctx, bytes);
    if (s->scratch[k] == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    status = COHORT_OK;
    if (copy > 0) {
        status = mod->copy(s->scratch[k], user, copy);
    }
    if (status == COHORT_OK) {
        status = mod->ipc_get(s->scratch[k], ipc);
    }
    if (status != COHORT_OK) {
        cohort_error(req->ctx, "CUDA IPC %s: %s", cohort_coll_names[s->base.args.coll],
                     mod->last_error());
        return COHORT_ERR_CUDA;
    }
    *dev = s->scratch[k];
    return COHORT_OK;
}

static cohort_status_t ipc_start(cohort_request_t *req)
{
    ipc_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    size_t one = a->count * a->esize, all = one * (size_t)n;
    const char *in = cohort_coll_input(a);
    char *p = (char *)(s + 1);
    cohort_status_t status;

    s->peers = (ipc_desc_t *)p;
    p += (size_t)n * sizeof(ipc_desc_t);
    s->in_map = (char **)p;
    p += (size_t)n * sizeof(char *);
    s->out_map = (char **)p;
    p += (size_t)n * sizeof(char *);
    s->opened = (void **)p;
    p += 2 * (size_t)n * sizeof(void *);
    s->sig_rx = (uint8_t *)p;
    p += (size_t)n;
    s->base.xfers = (cohort_xfer_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
    s->base.nxfers = 4 * n;
    s->in_bytes = a->coll == COHORT_COLL_REDUCE_SCATTER ? all : one;
    s->out_bytes = a->coll == COHORT_COLL_ALLGATHER ? all : one;
    if (a->sbuf != COHORT_IN_PLACE) {
        status = ipc_export(req, s, in, s->in_bytes, s->in_bytes, 0, &s->din, &s->mine.in);
        if (status == COHORT_OK) {
            status = ipc_export(req, s, a->rbuf, s->out_bytes, 0, 1, &s->dout, &s->mine.out);
        }
    } else if (a->coll == COHORT_COLL_ALLREDUCE) {
        /* one buffer: block i is written by rank i only, and read by others only after the
         * first signal */
        status = ipc_export(req, s, a->rbuf, one, one, 0, &s->din, &s->mine.in);
        s->dout = s->din;
        s->mine.out = s->mine.in;
    } else if (a->coll == COHORT_COLL_REDUCE_SCATTER) {
        /* the result (rbuf's start) would overwrite input that others read: scratch */
        status = ipc_export(req, s, a->rbuf, all, all, 0, &s->din, &s->mine.in);
        if (status == COHORT_OK) {
            status = ipc_export(req, s, NULL, one, 0, 1, &s->dout, &s->mine.out);
        }
    } else {
        /* allgather: the input is this rank's block of rbuf */
        status = ipc_export(req, s, a->rbuf, all, all, 1, &s->dout, &s->mine.out);
        s->din = s->dout + (size_t)me * one;
        s->mine.in = s->mine.out;
        s->mine.in.offset += (size_t)me * one;
    }
    if (status != COHORT_OK) {
        return status;
    }
    s->out_is_scratch = s->dout != a->rbuf;
    s->final_dst = a->rbuf;
    s->phase = IPC_EXCHANGE;
    return COHORT_OK;
}

/* This phase's n-1 receives and n-1 sends (step @a step). */
static cohort_status_t ipc_round(cohort_request_t *req, ipc_state_t *s, int step, void *rx,
                                 size_t rx_each, const void *tx, size_t tx_len)
{
    return cohort_coll_flat_round(req, s->base.xfers + (size_t)step * 2 * (size_t)req->comm->size,
                                  &s->posted, step, -1, rx, rx_each, tx, tx_len);
}

/* Member @a k's buffer described by @a ipc, mapped here (through the context's cache: input
 * and output in one allocation share one mapping, which is never opened twice). */
static cohort_status_t ipc_map_one(cohort_request_t *req, ipc_state_t *s, int k, int slot,
                                   const cohort_gpu_ipc_t *ipc, const char *what, char **at)
{
    void *base = NULL;
    cohort_status_t status =
        cohort_ipc_map(req->ctx, cohort_comm_world_rank(req->comm, k), ipc, &base);

    if (status != COHORT_OK) {
        cohort_error(req->ctx, "CUDA IPC: rank %d's %s: %s", k, what,
                     status == COHORT_ERR_CUDA ? ipc_mod(req)->last_error() : "out of memory");
        return status;
    }
    s->opened[2 * k + slot] = base;
    *at = (char *)base + ipc->offset;
    return COHORT_OK;
}

static cohort_status_t ipc_map(cohort_request_t *req, ipc_state_t *s)
{
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status = COHORT_OK;

    for (int k = 0; k < n && status == COHORT_OK; k++) {
        if (k == me) {
            s->in_map[k] = s->din;
            s->out_map[k] = s->dout;
            continue;
        }
        status = ipc_map_one(req, s, k, 0, &s->peers[k].in, "input", &s->in_map[k]);
        if (status == COHORT_OK) {
            status = ipc_map_one(req, s, k, 1, &s->peers[k].out, "output", &s->out_map[k]);
        }
    }
    return status;
}

/* The members' @a count elements at byte offset @a off of their inputs, combined (this rank's
 * first, then in ring order from it), into every one of @a ndst outputs at byte offset
 * @a dst_off: one pass of one kernel, each input read once. */
static cohort_status_t ipc_combine(cohort_request_t *req, ipc_state_t *s, size_t off, size_t count,
                                   char *const *outs, int ndst, size_t dst_off)
{
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    const void *srcs[COHORT_GPU_MULTI_MAX];
    void *dsts[COHORT_GPU_MULTI_MAX];

    if (count == 0) {
        return COHORT_OK;
    }
    for (int j = 0; j < n; j++) {
        srcs[j] = s->in_map[(me + j) % n] + off;
    }
    for (int d = 0; d < ndst; d++) {
        dsts[d] = outs[d] + dst_off;
    }
    return cohort_gpu_reduce_multi(req->ctx, dsts, ndst, srcs, n, count, a->dt, a->op, n);
}

static cohort_status_t ipc_progress(cohort_request_t *req)
{
    ipc_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    size_t es = a->esize, one = a->count * es;
    cohort_status_t status;

    switch (s->phase) {
    case IPC_EXCHANGE:
        status = ipc_round(req, s, IPC_STEP_DESC, s->peers, sizeof(ipc_desc_t), &s->mine,
                           sizeof(s->mine));
        if (status != COHORT_OK) {
            return status;
        }
        status = ipc_map(req, s);
        if (status != COHORT_OK) {
            return status;
        }
        s->phase = IPC_COMBINE;
        /* fall through */
    case IPC_COMBINE:
        if (a->coll == COHORT_COLL_ALLREDUCE) {
            /* block me, written straight into every member's output */
            size_t off = cohort_coll_block_off(a->count, n, me) * es;
            status = ipc_combine(req, s, off, cohort_coll_block_len(a->count, n, me), s->out_map, n,
                                 off);
        } else if (a->coll == COHORT_COLL_REDUCE_SCATTER) {
            status = ipc_combine(req, s, (size_t)me * one, a->count, &s->dout, 1, 0);
        } else {
            /* allgather: every member's input into its block */
            status = COHORT_OK;
            for (int k = 0; k < n && status == COHORT_OK; k++) {
                if (s->dout + (size_t)k * one != s->in_map[k]) {
                    status =
                        cohort_gpu_copy(req->ctx, s->dout + (size_t)k * one, s->in_map[k], one);
                }
            }
        }
        if (status != COHORT_OK) {
            return status;
        }
        s->signal = 1;
        s->phase = IPC_SYNC;
        /* fall through */
    case IPC_SYNC:
        /* every member has read this rank's input and written its part of this rank's output */
        status = ipc_round(req, s, IPC_STEP_SYNC, s->sig_rx, 1, &s->signal, 1);
        if (status != COHORT_OK) {
            return status;
        }
        if (s->out_is_scratch) {
            status = cohort_gpu_copy(req->ctx, s->final_dst, s->dout, s->out_bytes);
            s->out_is_scratch = 0;
            if (status != COHORT_OK) {
                return status;
            }
        }
        return COHORT_OK;
    }
    return COHORT_ERR_INVALID_ARG; /* not reached */
}

static void ipc_cleanup(cohort_request_t *req)
{
    ipc_state_t *s = req->state;
    const cohort_gpu_module_t *mod = ipc_mod(req);
    int n = req->comm != NULL ? req->comm->size : 0;

    if (mod == NULL) {
        return;
    }
    for (int k = 0; s->opened != NULL && k < 2 * n; k++) {
        if (s->opened[k] != NULL) {
            cohort_ipc_unmap(req->ctx, s->opened[k]);
        }
    }
    cohort_gpu_scratch_put(req->ctx, s->scratch[0]);
    cohort_gpu_scratch_put(req->ctx, s->scratch[1]);
}

static const cohort_coll_algo_t cohort_coll_cuda_ipc = {
    .name = "cuda_ipc",
    .description = "same node: members read each other's device buffers through CUDA IPC",
    .coll = COHORT_COLL_LAST, /* any of allreduce, reduce_scatter, allgather */
    .state_size = ipc_state_size,
    .start = ipc_start,
    .progress = ipc_progress,
    .cleanup = ipc_cleanup,
    .device = 1,
};

const cohort_coll_algo_t *cohort_coll_cuda_ipc_pick(cohort_comm_t *g, const cohort_coll_args_t *a)
{
    cohort_context_t *ctx = g->ctx;

    if (ctx->cfg.cuda_ipc != COHORT_CUDA_IPC_ON || a->count == 0 || g->size < 2 ||
        g->size > COHORT_GPU_MULTI_MAX ||
        (a->coll != COHORT_COLL_ALLREDUCE && a->coll != COHORT_COLL_REDUCE_SCATTER &&
         a->coll != COHORT_COLL_ALLGATHER) ||
        cohort_gpu_get(ctx) == NULL) {
        return NULL;
    }
    for (int k = 0; k < g->size; k++) {
        cohort_peer_t *peer = cohort_peer_get(ctx, cohort_comm_world_rank(g, k));
        if (peer == NULL || !cohort_peer_same_node(peer)) {
            return NULL;
        }
    }
    return &cohort_coll_cuda_ipc;
}
