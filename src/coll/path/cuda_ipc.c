/*
 * Same-node collectives through CUDA IPC (COHORT_CUDA_IPC=on; every one but barrier): every
 * member maps the device buffers of the others it reads (or, allreduce, writes) and works on
 * them directly, device to device.
 *
 * Members must choose an algorithm alike, and a buffer's memory type is local knowledge. With
 * COHORT_CUDA_IPC=on this algorithm is chosen by settings and placement only (a device, every
 * member on this node), and every member takes part whatever its buffers are. With auto (the
 * default) a same-node call of COHORT_CUDA_IPC_MIN bytes per member or more, on a node with a
 * CUDA driver, starts with a vote (check.c's agreement, ceil(log2 n) rounds): this algorithm
 * if every member's buffers are all on the device, else the one selection gives host buffers
 * (device ones staged). Either way a host buffer, or a device buffer that cannot be exported
 * (managed memory, pool or VMM allocations), is copied into device scratch that can. The
 * settings must be the same on every rank, like COHORT_ALGO_*.
 *
 * Phases: exchange descriptors (IPC handle, offset, buffer id of the input and the output) with
 * every member; map theirs; combine: for allreduce rank i computes block i from every member's
 * input (its own first) in one kernel that writes it into every member's output, so each block
 * is computed once (every member ends with the same bits) and every byte of every input is read
 * once and every byte of every output written once, the least a one-GPU allreduce can move;
 * reduce_scatter and reduce (at the root) are the same into this rank's output only;
 * allgather, alltoall and bcast copy what this rank needs of the others' inputs into its
 * output. Before any of that the members tell each other whether they could map what they
 * need; if one could not, all fall back to messages (ipc_fallback). What each collective
 * exports, reads and computes, and its fallback's messages, are its row's
 * (cohort_cuda_ipc_row_t, in <collective>/cuda_ipc.c); the rest is here, once. Then one signal to
 * every member, and completion only once all have signalled: until then they read this rank's input
 * and write into its output.
 */
#include <stddef.h>
#include <string.h>
#include "coll/coll_reduce.h"
#include "coll/path/cuda_ipc.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "mem/gpu.h"
#include "core/log.h"

typedef enum {
    IPC_EXCHANGE,
    IPC_AGREE,
    IPC_COMBINE,
    IPC_COMBINING,
    IPC_SYNC,
    IPC_FALLBACK,
    IPC_FINISHING
} ipc_phase_t;

/* Every device copy and kernel of a call goes on one lane (path/cuda_ipc.h), in order, and is
 * never waited for inside progress: the lane's mark is polled (ipc_work_test). */
#define IPC_LANE COHORT_CUDA_IPC_LANE

enum { IPC_STEP_DESC, IPC_STEP_AGREE, IPC_STEP_SYNC, IPC_STEP_FALLBACK, IPC_STEPS };

typedef cohort_cuda_ipc_desc_t ipc_desc_t;

/* The agreement's byte: whether the member mapped what it needs, or found that some member's
 * descriptor names another call or other lengths (nobody maps or copies then). */
enum { IPC_UNMAPPED, IPC_MAPPED, IPC_MISMATCH };

typedef cohort_cuda_ipc_state_t ipc_state_t;

size_t cohort_cuda_ipc_coll_state_size(const cohort_coll_args_t *args, int n)
{
    return sizeof(ipc_state_t) + (size_t)n * (sizeof(ipc_desc_t) + 4 * sizeof(void *) + 2) +
           2 * IPC_STEPS * (size_t)n * sizeof(cohort_xfer_t) + 64;
}

static const cohort_gpu_module_t *ipc_mod(cohort_request_t *req)
{
    return req->ctx->mem.gpu.mod;
}

/* The call's device work enqueued so far, marked (whatever @a status says: what was enqueued
 * before a failure must be over before cleanup unmaps and gives back what it touches). Every
 * phase that marks comes after the last mark was found finished (s->work 0): one mark at a time. */
static cohort_status_t ipc_work_mark(cohort_request_t *req, ipc_state_t *s, cohort_status_t status)
{
    cohort_status_t mark = cohort_gpu_lane_mark(req->ctx, IPC_LANE, &s->work);

    return status != COHORT_OK ? status : mark;
}

/* @a user as an exportable device buffer of @a bytes: itself, or scratch slot @a k holding a
 * copy of its first @a copy bytes. */
cohort_status_t cohort_cuda_ipc_coll_export(cohort_request_t *req, cohort_cuda_ipc_state_t *s,
                                            const void *user, size_t bytes, size_t copy, int k,
                                            char **dev, cohort_gpu_ipc_t *ipc)
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
    /* enqueued only: cohort_cuda_ipc_coll_start's mark covers it */
    status = copy > 0 ? mod->copy_start(s->scratch[k], user, copy, IPC_LANE, NULL) : COHORT_OK;
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

cohort_status_t cohort_cuda_ipc_coll_export_both(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    const cohort_coll_args_t *a = &s->base.args;
    cohort_status_t status = cohort_cuda_ipc_coll_export(req, s, cohort_coll_input(a), s->in_bytes,
                                                         s->in_bytes, 0, &s->din, &s->mine.in);

    return status != COHORT_OK ? status
                               : cohort_cuda_ipc_coll_export(req, s, a->rbuf, s->out_bytes, 0, 1,
                                                             &s->dout, &s->mine.out);
}

cohort_status_t cohort_cuda_ipc_coll_export_shared(cohort_request_t *req,
                                                   cohort_cuda_ipc_state_t *s, size_t copy)
{
    cohort_status_t status = cohort_cuda_ipc_coll_export(req, s, s->base.args.rbuf, s->in_bytes,
                                                         copy, 0, &s->din, &s->mine.in);

    s->dout = s->din;
    s->mine.out = s->mine.in;
    return status;
}

cohort_status_t cohort_cuda_ipc_coll_export_apart(cohort_request_t *req, cohort_cuda_ipc_state_t *s)
{
    cohort_status_t status = cohort_cuda_ipc_coll_export(req, s, s->base.args.rbuf, s->in_bytes,
                                                         s->in_bytes, 0, &s->din, &s->mine.in);

    return status != COHORT_OK ? status
                               : cohort_cuda_ipc_coll_export(req, s, NULL, s->out_bytes, 0, 1,
                                                             &s->dout, &s->mine.out);
}

cohort_status_t cohort_cuda_ipc_coll_start(cohort_request_t *req)
{
    ipc_state_t *s = req->state;
    const cohort_cuda_ipc_row_t *row = s->base.algo->family;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size;
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
    p += 2 * (size_t)n;
    s->base.xfers = (cohort_xfer_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
    s->base.nxfers = 2 * IPC_STEPS * n;
    req->ctx->stat_ipc_calls++;
    req->device = 1; /* the fallback's transfers carry device memory */
    status = row->exports(req, s);
    /* Copies into scratch, if any, are over before this rank says it mapped (IPC_AGREE): the
     * others read its input from then on. Marked even after a failure, so that cleanup waits
     * for what was enqueued before it returns the scratch. */
    if (s->scratch[0] != NULL || s->scratch[1] != NULL) {
        status = ipc_work_mark(req, s, status);
    }
    if (status != COHORT_OK) {
        return status;
    }
    s->out_is_scratch = s->dout != NULL && s->dout != a->rbuf;
    s->final_dst = a->rbuf;
    cohort_coll_ident(req, &s->mine.id);
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
        /* said once per context as a warning: a job whose GPUs cannot reach each other would
         * say it in every call */
        int first = req->ctx->mem.gpu.ipc_warned++ == 0;
        cohort_log(cohort_ctx_log(req->ctx), first ? COHORT_LOG_WARN : COHORT_LOG_DEBUG,
                   "CUDA IPC %s: cannot map rank %d's %s (%s): the call goes through staged "
                   "transfers instead%s",
                   cohort_coll_names[s->base.args.coll], k, what,
                   status == COHORT_ERR_CUDA ? ipc_mod(req)->last_error() : "out of memory",
                   first ? " (said once; COHORT_LOG=debug for each call)" : "");
        return status;
    }
    s->opened[2 * k + slot] = base;
    *at = (char *)base + ipc->offset;
    return COHORT_OK;
}

static cohort_status_t ipc_map(cohort_request_t *req, ipc_state_t *s)
{
    const cohort_cuda_ipc_row_t *row = s->base.algo->family;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status = COHORT_OK;

    for (int k = 0; k < n && status == COHORT_OK; k++) {
        if (k == me) {
            s->in_map[k] = s->din;
            s->out_map[k] = s->dout;
            continue;
        }
        if (row->reads == NULL || row->reads(a, me, k)) {
            status = ipc_map_one(req, s, k, 0, &s->peers[k].in, "input", &s->in_map[k]);
        }
        if (status == COHORT_OK && row->writes_outputs) {
            status = ipc_map_one(req, s, k, 1, &s->peers[k].out, "output", &s->out_map[k]);
        }
    }
    return status;
}

/* The members' @a count elements at byte offset @a off of their inputs, combined (this rank's
 * first, then in ring order from it), into every one of @a ndst outputs at byte offset
 * @a dst_off: one pass of one kernel, each input read once. */
cohort_status_t cohort_cuda_ipc_coll_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s,
                                             size_t off, size_t count, char *const *outs, int ndst,
                                             size_t dst_off)
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
    return cohort_gpu_reduce_multi_start(req->ctx, dsts, ndst, srcs, n, count, a->dt, a->op, n,
                                         IPC_LANE);
}

/* COHORT_OK once the call's device work is over, COHORT_INPROGRESS (the request polled: no
 * completion announces it) or the device's error. */
static cohort_status_t ipc_work_test(cohort_request_t *req, ipc_state_t *s)
{
    return cohort_gpu_ticket_poll(req, &s->work);
}

/* The result into the caller's rbuf when it was computed in scratch (enqueued after whatever
 * computed it: @a enqueued, whose enqueueing said @a status), then all of it found finished. */
static cohort_status_t ipc_finish(cohort_request_t *req, ipc_state_t *s, cohort_status_t status,
                                  int enqueued)
{
    if (status == COHORT_OK && s->out_is_scratch) {
        status =
            cohort_gpu_copy_start(req->ctx, s->final_dst, s->dout, s->out_bytes, IPC_LANE, NULL);
        s->out_is_scratch = 0;
        enqueued = 1;
    }
    if (enqueued) {
        status = ipc_work_mark(req, s, status);
    }
    s->phase = IPC_FINISHING;
    return status == COHORT_OK ? ipc_work_test(req, s) : status;
}

cohort_status_t cohort_cuda_ipc_coll_fallback_reduce(cohort_request_t *req,
                                                     cohort_cuda_ipc_state_t *s, size_t own_off)
{
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    size_t one = a->count * a->esize;
    const void *srcs[COHORT_GPU_MULTI_MAX];

    for (int k = 0; k < n; k++) {
        srcs[k] = k == me ? s->din + own_off : s->fb_in + (size_t)k * one;
    }
    return cohort_gpu_reduce_multi_start(req->ctx, (void *const *)&s->dout, 1, srcs, n, a->count,
                                         a->dt, a->op, n, IPC_LANE);
}

/* A member could not map the others' buffers: every member sends what the others need of its
 * input as messages (device data staged transfer by transfer) and combines what it receives, in
 * member order, so the bits still agree everywhere. */
static cohort_status_t ipc_fallback(cohort_request_t *req, ipc_state_t *s)
{
    const cohort_cuda_ipc_row_t *row = s->base.algo->family;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    size_t one = a->count * a->esize;
    cohort_xfer_t *x = s->base.xfers + (size_t)IPC_STEP_FALLBACK * 2 * (size_t)n;
    cohort_status_t status = COHORT_OK;

    if (!s->fb_posted) {
        if (row->fallback_reduces != NULL && row->fallback_reduces(a, me)) {
            s->fb_in = cohort_gpu_scratch_get(req->ctx, (size_t)n * one);
            if (s->fb_in == NULL) {
                return COHORT_ERR_NO_MEMORY;
            }
        }
        for (int k = 0; k < n && status == COHORT_OK; k++) {
            char *rx;
            const char *tx;
            if (k == me) {
                continue;
            }
            row->fallback_peer(s, me, k, &rx, &tx);
            if (rx != NULL) {
                status = cohort_coll_recv(req, &x[k], k, IPC_STEP_FALLBACK, rx, one);
            }
            if (tx != NULL && status == COHORT_OK) {
                status = cohort_coll_send(req, &x[n + k], k, IPC_STEP_FALLBACK, tx, one);
            }
        }
        if (status != COHORT_OK) {
            return status;
        }
        s->fb_posted = 1;
    }
    status = cohort_coll_xfers_wait(x, 2 * n);
    if (status != COHORT_OK) {
        return status;
    }
    if (row->fallback_end != NULL) {
        status = row->fallback_end(req, s);
    }
    return ipc_finish(req, s, status, 1);
}

cohort_status_t cohort_cuda_ipc_coll_progress(cohort_request_t *req)
{
    ipc_state_t *s = req->state;
    const cohort_cuda_ipc_row_t *row = s->base.algo->family;
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status;

    switch (s->phase) {
    case IPC_EXCHANGE:
        status = ipc_round(req, s, IPC_STEP_DESC, s->peers, sizeof(ipc_desc_t), &s->mine,
                           sizeof(s->mine));
        if (status != COHORT_OK) {
            return status;
        }
        s->mapped = !cohort_coll_ident_check(req, &s->mine.id, s->peers, sizeof(ipc_desc_t),
                                             offsetof(ipc_desc_t, id))
                        ? IPC_MISMATCH
                    : ipc_map(req, s) == COHORT_OK ? IPC_MAPPED
                                                   : IPC_UNMAPPED;
        s->phase = IPC_AGREE;
        /* fall through */
    case IPC_AGREE:
        /* Every member must know that every other could map: one that could not would leave
         * its block uncomputed and its output unwritten. This rank's input is in its scratch
         * before it says so: the others read it from then on. */
        status = s->posted ? COHORT_OK : ipc_work_test(req, s);
        if (status != COHORT_OK) {
            return status;
        }
        status = ipc_round(req, s, IPC_STEP_AGREE, s->sig_rx + n, 1, &s->mapped, 1);
        if (status != COHORT_OK) {
            return status;
        }
        for (int k = 0; k < n; k++) {
            if (k != me && s->sig_rx[n + k] != IPC_MAPPED && s->mapped != IPC_MISMATCH) {
                s->mapped = s->sig_rx[n + k];
            }
        }
        if (s->mapped == IPC_MISMATCH) {
            s->base.agreed = 1; /* every member saw the same bytes: they stay in step */
            return COHORT_ERR_MISMATCH;
        }
        if (s->mapped != IPC_MAPPED) {
            s->phase = IPC_FALLBACK;
            return ipc_fallback(req, s);
        }
        s->phase = IPC_COMBINE;
        /* fall through */
    case IPC_COMBINE:
        status = row->combine(req, s);
        status = ipc_work_mark(req, s, status);
        if (status != COHORT_OK) {
            return status;
        }
        s->phase = IPC_COMBINING;
        /* fall through */
    case IPC_COMBINING:
        /* the others are told only once this rank's reads and writes of their memory are over */
        status = ipc_work_test(req, s);
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
        return ipc_finish(req, s, COHORT_OK, 0);
    case IPC_FALLBACK:
        return ipc_fallback(req, s);
    case IPC_FINISHING:
        return ipc_work_test(req, s);
    }
    return COHORT_ERR_INVALID_ARG; /* not reached */
}

void cohort_cuda_ipc_coll_cleanup(cohort_request_t *req)
{
    ipc_state_t *s = req->state;
    const cohort_gpu_module_t *mod = ipc_mod(req);
    int n = req->comm != NULL ? req->comm->size : 0;

    if (mod == NULL) {
        return;
    }
    if (s->work != 0) {
        /* the device may still read or write the mappings and scratch given back below */
        (void)cohort_gpu_copy_finish(req->ctx, s->work);
        s->work = 0;
    }
    for (int k = 0; s->opened != NULL && k < 2 * n; k++) {
        if (s->opened[k] != NULL) {
            cohort_ipc_unmap(req->ctx, s->opened[k]);
        }
    }
    cohort_gpu_scratch_put(req->ctx, s->scratch[0]);
    cohort_gpu_scratch_put(req->ctx, s->scratch[1]);
    cohort_gpu_scratch_put(req->ctx, s->fb_in);
}

/* Whether this row may run the call: by settings and the node only, never by this rank's
 * buffers, so every member answers alike. COHORT_CUDA_IPC=on: taken wherever there is a device;
 * auto: a vote from COHORT_CUDA_IPC_MIN bytes per member (from any size where the user's
 * COHORT_ALGO_* names it) on a node with a CUDA driver: the driver, not a device, so that a rank
 * shown none (CUDA_VISIBLE_DEVICES="") still votes (no), where one that skipped the vote would
 * leave the others waiting for it. Every member on this node is the row's node bit. */
int cohort_cuda_ipc_coll_usable(cohort_context_t *ctx, const cohort_coll_args_t *a, int gsize,
                                int forced, const char **why)
{
    int auto_mode = ctx->cfg.cuda_ipc == COHORT_CUDA_IPC_AUTO;

    if (ctx->cfg.cuda_ipc == COHORT_CUDA_IPC_OFF) {
        *why = "COHORT_CUDA_IPC=off";
        return COHORT_COLL_NO;
    }
    if (gsize > COHORT_GPU_MULTI_MAX) {
        *why = "more members than it combines in one kernel";
        return COHORT_COLL_NO;
    }
    if (a->count == 0 || gsize < 2 ||
        (auto_mode && !forced && a->count * a->esize < ctx->cfg.cuda_ipc_min)) {
        return COHORT_COLL_NO;
    }
    if (auto_mode ? !cohort_gpu_driver(ctx) : cohort_gpu_get(ctx) == NULL) {
        *why = auto_mode ? "no CUDA driver on this node" : "no CUDA device here";
        return COHORT_COLL_NO;
    }
    return auto_mode ? COHORT_COLL_VOTE : COHORT_COLL_TAKE;
}
