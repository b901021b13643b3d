#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "core/cma.h"
#include "core/comm.h"
#include "core/log.h"
#include "mem/gpu.h"
#include "mem/ipc_cache.h"
#include "core/notify.h"

/* An ACK to send from progress (never from inside a UCX callback), and the receive that
 * finishes when UCX has sent it (NULL when none waits on it). In ctx->cma_acks until handed to
 * a wired endpoint, then in ctx->cma_acks_sent until UCX is done with it. */
typedef struct {
    cohort_list_t link;
    int world_rank;
    cohort_am_hdr_t hdr;
    cohort_xfer_t *x;
} cohort_cma_ack_t;

static int cohort_cma_world(const cohort_xfer_t *x)
{
    /* An offered send held for its reader outlives its group (cohort_group_free), so it names
     * its reader itself; before the offer (cohort_cma_ipc_wanted, at post) cma_reader is not
     * set yet, and the group is there. */
    return x->is_send && x->cma_state == COHORT_CMA_SENT
               ? x->cma_reader
               : cohort_comm_world_rank(x->req->comm, x->peer);
}

/* Whether the kernel has pidfd_getfd (5.6): taking a peer's file descriptor, which the kernel
 * allows where it allows reading the peer. Asked of this process itself. */
static int cohort_cma_fd_share_probe(void)
{
    int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0), fd = -1;

    if (pfd >= 0) {
        fd = (int)syscall(SYS_pidfd_getfd, pfd, pfd, 0);
        close(pfd);
    }
    if (fd >= 0) {
        close(fd);
    }
    return fd >= 0;
}

static void cohort_cma_ack_msg(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data,
                               size_t len, int rndv)
{
    cohort_cma_ack(ctx, h);
}

static void cohort_cma_data_msg(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data,
                                size_t len, int rndv)
{
    (void)cohort_cma_data(ctx, h, data, len, rndv);
}

static void cohort_cma_peer_failed(cohort_peer_t *peer, cohort_status_t status, const char *why,
                                   int tell)
{
    cohort_cma_fail_peer(peer->ctx, peer->rank, status);
}

static const cohort_am_kind_t cohort_cma_ack_kind = {.header_only = 1, .ctl = cohort_cma_ack_msg};
static const cohort_am_kind_t cohort_cma_data_kind = {.ctl = cohort_cma_data_msg};
static const cohort_am_offer_t cohort_cma_offer_ops = {.read = cohort_cma_read,
                                                       .unread = cohort_cma_dropped};
static const cohort_peer_observer_t cohort_cma_observer = {.name = "single copy",
                                                           .failed = cohort_cma_peer_failed};

void cohort_cma_init(cohort_context_t *ctx)
{
    FILE *f;
    int scope = 0;

    cohort_am_kind_set(ctx, COHORT_MSG_CMA_ACK, &cohort_cma_ack_kind);
    cohort_am_kind_set(ctx, COHORT_MSG_CMA_DATA, &cohort_cma_data_kind);
    cohort_am_offer_set(ctx, &cohort_cma_offer_ops);
    cohort_peer_observe(ctx, &cohort_cma_observer);

    ctx->cma_usable = ctx->cfg.cma != COHORT_CMA_OFF;
    ctx->cma_direct = ctx->cma_usable;
    ctx->fd_share = cohort_cma_fd_share_probe();
    if (ctx->cfg.cma != COHORT_CMA_AUTO) {
        return;
    }
    /* Yama's scope 1 and up lets a process read only its descendants: not its peers. */
    f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &scope) == 1 && scope > 0) {
            ctx->cma_usable = 0;
            ctx->cma_direct = 0;
            cohort_info(ctx, "single copy off: kernel.yama.ptrace_scope is %d", scope);
        }
        fclose(f);
    }
}

_Static_assert(sizeof(cohort_cma_ipc_desc_t) <= sizeof(((cohort_xfer_t *)0)->cma_desc),
               "cohort_xfer_t.cma_desc holds an IPC descriptor");

int cohort_cma_ipc_wanted(cohort_xfer_t *x)
{
    cohort_context_t *ctx = x->req->ctx;
    cohort_peer_t *peer;

    if (ctx->cfg.cuda_ipc == COHORT_CUDA_IPC_OFF || x->len < ctx->cfg.cma_min ||
        (x->kind != COHORT_MSG_P2P && x->kind != COHORT_MSG_COLL) ||
        ctx->gpu.mod->ptr_kind(x->buf, NULL) != COHORT_GPU_PTR_DEVICE) {
        return 0; /* managed memory cannot be exported */
    }
    peer = cohort_peer_get(ctx, cohort_cma_world(x));
    return peer != NULL && peer->rank != ctx->rank && !peer->ipc_off && cohort_peer_same_node(peer);
}

size_t cohort_cma_offer(cohort_xfer_t *x, cohort_peer_t *peer)
{
    cohort_context_t *ctx = peer->ctx;
    cohort_cma_ipc_desc_t d;

    memset(&d, 0, sizeof(d));
    /* Device memory the peer cannot take, or that cannot be exported: staged after all (a
     * failure leaves x->ipc_offer set, and the caller fails the send). */
    if (x->ipc_offer && (peer->ipc_off || ctx->gpu.mod->ipc_get(x->buf, &d.ipc) != COHORT_OK) &&
        cohort_xfer_stage_now(x) != COHORT_OK) {
        return 0;
    }
    if (!x->ipc_offer &&
        (ctx->cfg.cma == COHORT_CMA_OFF || !ctx->cma_usable || peer->cma_off ||
         x->mem_type != COHORT_MEM_HOST || x->len < ctx->cfg.cma_min || peer->rank == ctx->rank ||
         (x->kind != COHORT_MSG_P2P && x->kind != COHORT_MSG_COLL) ||
         !cohort_peer_same_node(peer))) {
        return 0;
    }
    if (cohort_map_put(&ctx->cma_sends, ctx->cma_next, x) != COHORT_OK) {
        if (x->ipc_offer) {
            (void)cohort_xfer_stage_now(x); /* as data, or (still set) the caller fails it */
        }
        return 0;
    }
    d.base.magic = x->ipc_offer ? COHORT_CMA_IPC_MAGIC : COHORT_CMA_DESC_MAGIC;
    d.base.pid = (int32_t)getpid();
    d.base.addr = (uint64_t)(uintptr_t)x->buf;
    d.base.len = x->len;
    d.base.token = ctx->cma_next++;
    memcpy(x->cma_desc, &d, x->ipc_offer ? sizeof(d) : sizeof(d.base));
    x->cma_token = d.base.token;
    x->cma_state = COHORT_CMA_SENT;
    x->cma_reader = peer->rank;
    x->req->readers++;
    x->hdr[2] |= COHORT_HDR_CMA;
    return x->ipc_offer ? sizeof(d) : sizeof(d.base);
}

/* Send @a x is no longer offered: its reader answered, or the data goes another way. */
static void cohort_cma_unsent(cohort_xfer_t *x)
{
    cohort_map_del(&x->req->ctx->cma_sends, x->cma_token);
    x->cma_token = 0;
    x->cma_state = COHORT_CMA_NONE;
    x->req->readers--;
}

static cohort_cma_ack_t *cohort_cma_answer_to(cohort_context_t *ctx, int world_rank, uint64_t token,
                                              cohort_status_t status, uint32_t rtoken)
{
    cohort_cma_ack_t *a = calloc(1, sizeof(*a));

    if (a == NULL) {
        /* The sender then waits on us until its peer or its timeout fails it. */
        cohort_error(ctx, "out of memory answering a single-copy transfer from world rank %d",
                     world_rank);
        return NULL;
    }
    a->world_rank = world_rank;
    a->hdr.kind = COHORT_MSG_CMA_ACK;
    a->hdr.gid = token;
    a->hdr.fp = (uint32_t)status;
    a->hdr.seq = rtoken;
    a->hdr.src = ctx->rank;
    a->hdr.wsrc = ctx->rank;
    a->hdr.tag = -1;
    cohort_list_push(&ctx->cma_acks, &a->link);
    return a;
}

static cohort_cma_ack_t *cohort_cma_answer(cohort_context_t *ctx, const cohort_msg_t *m,
                                           uint64_t token, cohort_status_t status, uint32_t rtoken)
{
    return cohort_cma_answer_to(ctx, m->hdr.wsrc, token, status, rtoken);
}

void cohort_cma_dropped(cohort_context_t *ctx, const cohort_am_hdr_t *h, const void *data,
                        size_t len)
{
    cohort_cma_desc_t d;

    if (!(h->flags & COHORT_HDR_CMA) || data == NULL ||
        (len != sizeof(d) && len != sizeof(cohort_cma_ipc_desc_t))) {
        return;
    }
    memcpy(&d, data, sizeof(d));
    if (d.magic == COHORT_CMA_DESC_MAGIC || d.magic == COHORT_CMA_IPC_MAGIC) {
        /* Its sender holds the buffer until a reader answers: this one never will read it. */
        cohort_cma_answer_to(ctx, h->wsrc, d.token, COHORT_ERR_REVOKED, 0);
    }
}

/* The kernel would not let us read the sender: ask for the data instead, and stop trying. Or
 * (@a ipc) its device memory could not be mapped here: ask for the data, and the sender stops
 * offering us device memory. */
static void cohort_cma_refused(cohort_context_t *ctx, cohort_xfer_t *x, const cohort_msg_t *m,
                               uint64_t token, const char *why, int ipc)
{
    uint32_t rtoken = ctx->cma_rnext++;

    if (ipc) {
        int first = ctx->gpu.ipc_warned++ == 0;
        cohort_log(cohort_ctx_log(ctx), first ? COHORT_LOG_WARN : COHORT_LOG_DEBUG,
                   "cannot map world rank %d's device memory (CUDA IPC: %s): its messages come "
                   "staged through host memory instead%s",
                   m->hdr.wsrc, why, first ? " (said once; COHORT_LOG=debug for each)" : "");
    } else if (ctx->cma_usable) {
        cohort_warn(ctx,
                    "single-copy transfers refused by the kernel (%s): large same-node messages "
                    "go through UCX's shared memory from now on",
                    why);
        ctx->cma_usable = 0;
    }
    if (rtoken == 0 || cohort_map_put(&ctx->cma_recvs, rtoken, x) != COHORT_OK) {
        cohort_xfer_finish(x, COHORT_ERR_NO_MEMORY);
        cohort_cma_answer(ctx, m, token, COHORT_ERR_NO_MEMORY, 0);
        return;
    }
    x->cma_token = rtoken;
    x->cma_state = COHORT_CMA_WANT_DATA;
    cohort_cma_answer(ctx, m, token, COHORT_ERR_UNSUPPORTED, rtoken);
}

/* One side of a single copy: read the peer's memory into ours, or write ours into its. */
static cohort_status_t cohort_cma_rw(cohort_context_t *ctx, int world_rank, int32_t pid,
                                     void *local_buf, uint64_t addr, size_t len, int write,
                                     const char **why)
{
    size_t done = 0;

    if (cohort_fault(ctx, COHORT_FAULT_CMA)) {
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
    return cohort_cma_rw(ctx, world_rank, pid, dst, addr, len, 0, why);
}

cohort_status_t cohort_cma_push(cohort_context_t *ctx, int world_rank, int32_t pid, const void *src,
                                uint64_t addr, size_t len, const char **why)
{
    return cohort_cma_rw(ctx, world_rank, pid, (void *)src, addr, len, 1, why);
}

/* The pull into a receive whose buffer is device memory that UCX takes (so not staged): through
 * a page-locked buffer, since process_vm_readv writes host memory only. */
static cohort_status_t cohort_cma_pull_device(cohort_context_t *ctx, int world_rank, int pid,
                                              cohort_xfer_t *x, uint64_t addr, size_t len,
                                              const char **why)
{
    void *tmp = cohort_gpu_pinned_get(ctx, len);
    cohort_status_t status;

    if (tmp == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    status = cohort_cma_pull(ctx, world_rank, pid, tmp, addr, len, why);
    if (status == COHORT_OK) {
        status = cohort_gpu_copy(ctx, x->buf, tmp, len);
    }
    cohort_gpu_pinned_put(ctx, tmp);
    return status;
}

/* The pull of a sender's device memory, through CUDA IPC (the mapping cache), straight into
 * the receive's own buffer: the caller's device buffer behind a staged receive (whose bounce
 * then has nothing to give the device), or its host or device buffer. COHORT_ERR_UNSUPPORTED
 * (@a why) when it cannot be mapped here. */
static cohort_status_t cohort_cma_pull_ipc(cohort_context_t *ctx, int world_rank, cohort_xfer_t *x,
                                           const cohort_cma_ipc_desc_t *d, const char **why)
{
    void *dst = x->stage != NULL ? x->stage_user : x->buf, *base = NULL;
    cohort_status_t status;

    if (cohort_gpu_get(ctx) == NULL) {
        *why = ctx->gpu.why;
        return COHORT_ERR_UNSUPPORTED;
    }
    status = cohort_ipc_map(ctx, world_rank, &d->ipc, &base);
    if (status != COHORT_OK) {
        *why = status == COHORT_ERR_CUDA ? ctx->gpu.mod->last_error() : "out of memory";
        return COHORT_ERR_UNSUPPORTED;
    }
    status = cohort_gpu_copy(ctx, dst, (char *)base + d->ipc.offset, d->base.len);
    cohort_ipc_unmap(ctx, base);
    if (status == COHORT_OK) {
        x->stage_drained = x->stage != NULL;
        ctx->stat_cma++;
        ctx->stat_cma_bytes += d->base.len;
    }
    return status;
}

void cohort_cma_read(cohort_context_t *ctx, cohort_xfer_t *x, const cohort_msg_t *m)
{
    cohort_cma_ack_t *a;
    cohort_cma_ipc_desc_t full;
    cohort_cma_desc_t d;
    cohort_status_t status;
    const char *why = NULL;
    int ipc = m->len == sizeof(full);

    if (m->desc != NULL || (m->len != sizeof(d) && !ipc)) {
        ctx->stat_rejected++;
        cohort_error(ctx, "a single-copy descriptor of %zu bytes from world rank %d dropped",
                     m->len, m->hdr.wsrc);
        cohort_xfer_mismatch(x);
        return;
    }
    memcpy(&full, m->data, m->len);
    d = full.base;
    if (d.magic != (ipc ? COHORT_CMA_IPC_MAGIC : COHORT_CMA_DESC_MAGIC) || d.len > x->len) {
        cohort_error(ctx,
                     "group 0x%016llx: %llu bytes offered by world rank %d (tag/step %d) for a "
                     "receive of %zu bytes",
                     (unsigned long long)m->hdr.gid, (unsigned long long)d.len, m->hdr.wsrc,
                     m->hdr.tag, x->len);
        cohort_xfer_mismatch(x);
        /* The sender finishes; the revocation tells it what went wrong. */
        cohort_cma_answer(ctx, m, d.token, COHORT_OK, 0);
        return;
    }
    status = ipc ? cohort_cma_pull_ipc(ctx, m->hdr.wsrc, x, &full, &why)
             : x->mem_type == COHORT_MEM_CUDA
                 ? cohort_cma_pull_device(ctx, m->hdr.wsrc, d.pid, x, d.addr, d.len, &why)
                 : cohort_cma_pull(ctx, m->hdr.wsrc, d.pid, x->buf, d.addr, d.len, &why);
    if (status == COHORT_ERR_UNSUPPORTED) {
        cohort_cma_refused(ctx, x, m, d.token, why, ipc);
        return;
    }
    if (status != COHORT_OK) {
        cohort_xfer_finish(x, status);
        if (status != COHORT_ERR_PEER_FAILED) {
            cohort_cma_answer(ctx, m, d.token, status, 0);
        }
        return;
    }
    x->received = d.len;
    a = cohort_cma_answer(ctx, m, d.token, COHORT_OK, 0);
    if (a == NULL) {
        cohort_xfer_finish(x, COHORT_OK);
        return;
    }
    a->x = x;
    x->cma_state = COHORT_CMA_ACKING;
}

void cohort_cma_ack(cohort_context_t *ctx, const cohort_am_hdr_t *h)
{
    cohort_xfer_t *x = cohort_map_get(&ctx->cma_sends, h->gid);
    cohort_status_t status = (cohort_status_t)(int32_t)h->fp;

    cohort_request_t *req;

    if (x == NULL || x->cma_state != COHORT_CMA_SENT || cohort_cma_world(x) != h->wsrc) {
        ctx->orphans_dropped++; /* for a send given up on meanwhile */
        return;
    }
    req = x->req;
    if (x->cma_cancel) {
        /* cancelled while it could be read: now it is over, whatever the reader did */
        cohort_xfer_finish(x, x->status);
    } else if (status == COHORT_ERR_UNSUPPORTED && h->seq != 0) {
        cohort_peer_t *peer = cohort_peer_get(ctx, h->wsrc);
        if (peer != NULL && x->ipc_offer) {
            peer->ipc_off = 1;
        } else if (peer != NULL) {
            peer->cma_off = 1;
        }
        if (x->ipc_offer) {
            /* it could not map our device memory: the data goes staged */
            cohort_status_t staged = cohort_xfer_stage_now(x);
            if (staged != COHORT_OK) {
                cohort_cma_unsent(x);
                cohort_xfer_finish(x, staged);
                return;
            }
        }
        /* The data follows to the receive it matched, named by the receiver's token. */
        cohort_cma_unsent(x);
        x->cma_state = COHORT_CMA_RESEND;
        x->hdr[1] = COHORT_MSG_CMA_DATA;
        x->hdr[2] = 0;
        for (int i = 0; i < 8; i++) {
            x->hdr[8 + i] = (uint8_t)((uint64_t)h->seq >> (8 * i));
        }
        cohort_list_push(&ctx->cma_resend, &x->link);
        return;
    } else {
        cohort_xfer_finish(x, status);
    }
    if (req->user_freed && req->inflight == 0 && req->readers == 0) {
        cohort_request_release(req); /* freed while its reader had not answered */
    }
}

int cohort_cma_data(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data, size_t len,
                    int rndv)
{
    cohort_xfer_t *x = cohort_map_get(&ctx->cma_recvs, h->gid);

    if (x == NULL || x->cma_state != COHORT_CMA_WANT_DATA || cohort_cma_world(x) != h->wsrc ||
        len > x->len) {
        ctx->orphans_dropped++; /* for a receive given up on meanwhile */
        return 0;
    }
    cohort_map_del(&ctx->cma_recvs, x->cma_token);
    x->cma_token = 0;
    x->cma_state = COHORT_CMA_NONE;
    x->received = len;
    if (rndv) {
        cohort_rndv_start(ctx, x, data);
        return 1;
    }
    cohort_xfer_finish(x, cohort_xfer_fill(ctx, x, data, len));
    return 0;
}

void cohort_cma_forget(cohort_xfer_t *x)
{
    cohort_context_t *ctx = x->req->ctx;

    if (x->cma_state == COHORT_CMA_SENT) {
        cohort_cma_unsent(x);
    } else if (x->cma_state == COHORT_CMA_WANT_DATA) {
        cohort_map_del(&ctx->cma_recvs, x->cma_token);
    } else if (x->cma_state == COHORT_CMA_RESEND) {
        cohort_list_del(&x->link);
    } else if (x->cma_state == COHORT_CMA_ACKING) {
        cohort_list_t *pos, *tmp;
        cohort_list_t *lists[] = {&ctx->cma_acks, &ctx->cma_acks_sent};
        /* Given up on (cancelled, freed): its ACK still goes, the sender waits for it. */
        for (int i = 0; i < 2; i++) {
            cohort_list_for_each(pos, tmp, lists[i])
            {
                cohort_cma_ack_t *a = cohort_container_of(pos, cohort_cma_ack_t, link);
                if (a->x == x) {
                    a->x = NULL;
                }
            }
        }
    }
    x->cma_state = COHORT_CMA_NONE;
    x->cma_token = 0;
}

static void cohort_cma_fail_map(cohort_context_t *ctx, cohort_map_t *map, int world_rank,
                                cohort_status_t status)
{
    cohort_xfer_t *victims[64];
    int n;

    /* Collected first: finishing a transfer deletes it from the map being walked. */
    do {
        n = 0;
        for (size_t i = 0; i < map->cap && n < 64; i++) {
            cohort_xfer_t *x = map->vals[i];
            if (map->keys[i] != 0 && x != NULL && cohort_cma_world(x) == world_rank) {
                victims[n++] = x;
            }
        }
        cohort_request_t *reqs[64];
        int nreqs = 0;
        for (int i = 0; i < n; i++) {
            int j = 0;
            while (j < nreqs && reqs[j] != victims[i]->req) {
                j++;
            }
            if (j == nreqs) {
                reqs[nreqs++] = victims[i]->req;
            }
        }
        for (int i = 0; i < n; i++) {
            cohort_xfer_finish(victims[i], status);
        }
        /* A send freed while its reader had not answered: the reader is dead, so it is over. */
        for (int j = 0; j < nreqs; j++) {
            if (reqs[j]->user_freed && reqs[j]->inflight == 0 && reqs[j]->readers == 0) {
                cohort_request_release(reqs[j]);
            }
        }
    } while (n == 64);
}

void cohort_cma_fail_peer(cohort_context_t *ctx, int world_rank, cohort_status_t status)
{
    cohort_cma_fail_map(ctx, &ctx->cma_sends, world_rank, status);
    cohort_cma_fail_map(ctx, &ctx->cma_recvs, world_rank, status);
}

/* The ACK has left (or cannot go): its receive, if still wanted, is done. */
static void cohort_cma_ack_sent(void *arg)
{
    cohort_cma_ack_t *a = arg;
    cohort_xfer_t *x = a->x;

    cohort_list_del(&a->link);
    if (x != NULL) {
        x->cma_state = COHORT_CMA_NONE;
        cohort_xfer_finish(x, COHORT_OK);
    }
    free(a);
}

int cohort_cma_progress(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    int n = 0;

    cohort_list_for_each(pos, tmp, &ctx->cma_acks)
    {
        cohort_cma_ack_t *a = cohort_container_of(pos, cohort_cma_ack_t, link);
        cohort_peer_t *peer = cohort_peer_get(ctx, a->world_rank);

        if (peer != NULL && !ctx->finalizing) {
            cohort_peer_want(peer);
        }
        if (peer != NULL && peer->state == COHORT_PEER_LOOKING_UP) {
            continue; /* its receive stays unfinished, so that whoever waits on it progresses */
        }
        n++;
        if (peer != NULL && peer->state == COHORT_PEER_WIRED) {
            /* Finished only when UCX has sent it: a new endpoint's first message may wait for
             * its wireup, which needs this rank's progress. */
            cohort_list_del(&a->link);
            cohort_list_push(&ctx->cma_acks_sent, &a->link);
            cohort_ctl_send_then(ctx, a->world_rank, &a->hdr, cohort_cma_ack_sent, a);
        } else {
            cohort_cma_ack_sent(a); /* nobody to tell: the data is here all the same */
        }
    }
    while (!cohort_list_empty(&ctx->cma_resend)) {
        cohort_xfer_t *x = cohort_container_of(ctx->cma_resend.next, cohort_xfer_t, link);
        cohort_list_del(&x->link);
        x->cma_state = COHORT_CMA_NONE;
        cohort_xfer_route(x);
        n++;
    }
    return n;
}

void cohort_cma_cleanup(cohort_context_t *ctx)
{
    cohort_list_t *lists[] = {&ctx->cma_acks, &ctx->cma_acks_sent};

    for (int i = 0; i < 2; i++) {
        while (!cohort_list_empty(lists[i])) {
            cohort_cma_ack_t *a = cohort_container_of(lists[i]->next, cohort_cma_ack_t, link);
            cohort_list_del(&a->link);
            free(a);
        }
    }
    cohort_map_cleanup(&ctx->cma_sends);
    cohort_map_cleanup(&ctx->cma_recvs);
}
