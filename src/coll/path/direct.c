/*
 * Same-node collectives by single copy (the host twin of path/cuda_ipc.c): every member reads the
 * others' buffers straight out of their address spaces, or writes into them (cma.h), so each
 * byte crosses memory once and no rank waits on a chain of steps.
 *
 * Phases: exchange descriptors (pid, the input's and the output's addresses) with every member;
 * copy: allreduce and reduce_scatter combine this rank's block of every input, a cache-sized
 * chunk at a time, so that the reduction takes its operand from cache and not from memory, and
 * allreduce writes each finished chunk into every other output while it is still in cache;
 * allgather likewise writes this rank's block into every output a chunk at a time (read once,
 * written n times); alltoall reads the peers' blocks straight into the receive buffer; bcast's
 * members read most of the root's buffer while the root writes the rest into theirs; signal. A
 * rank completes only once every rank that reads or writes its buffers has signalled, so its
 * buffers stay valid while they are used. The copy phase and what a member exposes are each
 * collective's row's (cohort_direct_row_t, in <collective>/direct.c); the rest is here, once.
 *
 * The rounds go through the group's shared segment (shm_seg.c: a descriptor in each member's
 * buffer, signals in its words) where the group has one, else as messages (COHORT_CHECK=1).
 *
 * Members must choose alike, so this is chosen by placement and settings only (every member on
 * this node, single copy not off), never by this rank's buffers. The signal carries how this
 * rank's copies went: a copy the kernel refuses (a policy that differs between ranks; the
 * ptrace scope is checked at init) fails that call on every member with COHORT_ERR_UNSUPPORTED,
 * and the group takes the network algorithms from then on, alike, since every member saw the
 * same signals. A member that dies fails the copies and receives that wait on it.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>
#include "coll/coll_reduce.h"
#include "coll/path/direct.h"
#include "coll/shm_seg.h"
#include "proto/cma.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "mem/scratch.h"
#include "base/time.h"

typedef enum { D_EXCHANGE, D_DESCS, D_READ, D_SYNC } direct_phase_t;

enum { D_STEP_DESC, D_STEP_SYNC, D_STEPS };

/* What a signal says about the reads of the one that sent it: MISMATCH, that some member's
 * descriptor named another call or other lengths, so nobody copied anything. */
enum { D_READ_OK = 1, D_READ_REFUSED, D_READ_FAILED, D_MISMATCH };

/* What a member exposes, and for which call: every reader or writer checks it before its first
 * copy and never goes past the owner's lengths. */
typedef struct {
    uint64_t in, out; /* addresses in the sender's process */
    cohort_coll_ident_t id;
    int32_t pid;
    uint32_t pad;
} direct_desc_t;

typedef struct {
    cohort_coll_base_t base;
    direct_phase_t phase;
    int posted;         /* the current round's messages are posted */
    size_t one;         /* bytes of one block (per rank, per pair) */
    char *tmp;          /* a chunk of a peer's input, for the reductions */
    char *copy;         /* the row's own scratch (cohort_direct_coll_scratch) */
    uint8_t signal;     /* D_READ_* this rank sends */
    cohort_status_t rc; /* this rank's own read error, returned after the signal */
    direct_desc_t mine;
    direct_desc_t *peers; /* n */
    uint8_t *sig_rx;      /* n */
    int on_shm;           /* descriptors and signals go through the group's segment */
    int left;             /* this rank left the call early (direct_leave) */
    cohort_shm_call_t call;
    /* then xfers: D_STEPS rounds x (n receives + n sends), own rank's slots unused; then the
     * segment call's (cohort_shm_call_extra) */
} direct_state_t;

size_t cohort_direct_coll_state_size(const cohort_coll_args_t *args, int n)
{
    (void)args;
    return sizeof(direct_state_t) + (size_t)n * (sizeof(direct_desc_t) + 1) +
           2 * D_STEPS * (size_t)n * sizeof(cohort_xfer_t) + 64 + cohort_shm_call_extra(n);
}

int cohort_direct_coll_decline(const cohort_coll_algo_t *algo, const cohort_coll_args_t *args,
                               int gsize)
{
    (void)algo;
    return gsize < 2 || args->count == 0;
}

/* The writing ones need the segment, whose words fence a write against its target leaving. */
int cohort_direct_coll_decline_writer(const cohort_coll_algo_t *algo,
                                      const cohort_coll_args_t *args, int gsize)
{
    return cohort_direct_coll_decline(algo, args, gsize) || gsize > COHORT_SHM_MAX_N;
}

cohort_status_t cohort_direct_coll_start(cohort_request_t *req)
{
    direct_state_t *s = req->state;
    const cohort_direct_row_t *row = s->base.algo->family;
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size;
    const void *in = cohort_coll_input(a);
    char *p = (char *)(s + 1);

    s->peers = (direct_desc_t *)p;
    p += (size_t)n * sizeof(direct_desc_t);
    s->sig_rx = (uint8_t *)p;
    p += (size_t)n;
    s->base.xfers = (cohort_xfer_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
    s->base.nxfers = 2 * D_STEPS * n;
    s->one = a->count * a->esize;
    /* The fault names another live process: a reader that trusted it would copy from it. */
    s->mine.pid = (int32_t)(cohort_fault(req->ctx, COHORT_FAULT_PID) ? getppid() : getpid());
    cohort_coll_pids_know(req);
    s->mine.out = (uint64_t)(uintptr_t)a->rbuf;
    cohort_coll_ident(req, &s->mine.id);
    if (row->prepare != NULL) {
        cohort_status_t status = row->prepare(req, &in);
        if (status != COHORT_OK) {
            return status;
        }
    }
    s->mine.in = (uint64_t)(uintptr_t)in;
    s->phase = D_EXCHANGE;
    /* The group's segment carries descriptors and signals where it can: a few hundred
     * nanoseconds a round, where messages cost microseconds. Alike on every member: decided
     * at post, which numbered the call there. */
    s->on_shm = s->base.seg_call != 0;
    return s->on_shm
               ? cohort_shm_call_start(req, &s->call, (char *)(s->base.xfers + s->base.nxfers))
               : COHORT_OK;
}

/* Round @a step of 2n slots, every member with every other: even bcast's, since its members
 * write as well as read, and a refusal must be known to every member, which then choose
 * alike. */
static cohort_status_t direct_round(cohort_request_t *req, direct_state_t *s, int step, void *rx,
                                    size_t rx_each, const void *tx, size_t tx_len)
{
    int n = req->comm->size;

    return cohort_coll_flat_round(req, s->base.xfers + (size_t)step * 2 * (size_t)n, &s->posted,
                                  step, -1, rx, rx_each, tx, tx_len);
}

/* Read @a len bytes at byte @a off of member @a k's input (@a out: its output) into @a dst;
 * with @a push, write @a len bytes of @a dst there instead (its output). */
static cohort_status_t direct_copy(cohort_request_t *req, direct_state_t *s, int k, int out,
                                   void *dst, size_t off, size_t len, int push)
{
    const direct_desc_t *d = &s->peers[k];
    int world = cohort_comm_world_rank(req->comm, k);
    uint64_t addr = (out ? d->out : d->in) + off;
    const char *why = NULL;
    cohort_status_t status;

    if (len == 0) {
        return COHORT_OK;
    }
    /* Checked against every descriptor before the first copy (direct_check); this keeps a
     * range computed wrongly from going past what the owner exposes. */
    if (off > (out ? d->id.out_len : d->id.in_len) ||
        len > (out ? d->id.out_len : d->id.in_len) - off) {
        cohort_error(req->ctx, "%s %s: %zu bytes at %zu of group rank %d's %s, which has %llu",
                     req->comm->label, cohort_coll_names[s->base.args.coll], len, off, k,
                     out ? "output" : "input",
                     (unsigned long long)(out ? d->id.out_len : d->id.in_len));
        return COHORT_ERR_MISMATCH;
    }
    if (push && cohort_fault(req->ctx, COHORT_FAULT_STALL)) {
        sleep(2); /* as a rank stopped half way through its writes would be */
    }
    if (push && s->on_shm && !cohort_shm_write_begin(req, &s->call, k)) {
        return COHORT_OK; /* it left the call, which fails there and so here too */
    }
    if (push && cohort_fault(req->ctx, COHORT_FAULT_WRITE_GAP)) {
        sleep(3); /* announced, not made yet: the target leaving now must wait for it */
    }
    status = push ? cohort_cma_push(req->ctx, world, d->pid, dst, addr, len, &why)
                  : cohort_cma_pull(req->ctx, world, d->pid, dst, addr, len, &why);
    if (push && s->on_shm) {
        cohort_shm_write_end(req, &s->call);
    }
    if (status == COHORT_ERR_UNSUPPORTED) {
        cohort_error(req->ctx,
                     "%s %s: the kernel refused to let this rank %s group rank %d (%s); this "
                     "call fails on every member, and the group uses the network algorithms "
                     "from now on (COHORT_CMA=off avoids the attempt)",
                     req->comm->label, cohort_coll_names[s->base.args.coll],
                     push ? "write to" : "read", k, why);
    }
    return status;
}

/* dst = the members' @a count elements at byte offset @a off of their inputs, combined: this
 * rank's first, then in ring order from it, so each block is computed once, by its owner, and
 * every member ends with the same bits. With @a push (allreduce) each finished chunk is written
 * at the same offset of every other member's output while it is still in cache, where reading
 * it back out of this rank's output later would take it from memory. Nobody else touches that
 * range of a member's output, even in place: only its owner, this rank, reads it there, and
 * has read it before it writes it. */
static cohort_status_t direct_combine(cohort_request_t *req, direct_state_t *s, char *dst,
                                      size_t off, size_t count, int push)
{
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank;
    size_t es = a->esize,
           chunk = cohort_coll_seg_elems(cohort_coll_knob(req, COHORT_DIRECT_CHUNK), es);
    const char *own = (const char *)cohort_coll_input(a) + off;
    cohort_status_t status = COHORT_OK;

    for (size_t c = 0; c < count && status == COHORT_OK; c += chunk) {
        size_t len = count - c < chunk ? count - c : chunk;
        for (int j = 1; j < n && status == COHORT_OK; j++) {
            status = direct_copy(req, s, (me + j) % n, 0, s->tmp, off + c * es, len * es, 0);
            if (status == COHORT_OK) {
                cohort_reduce_local(dst + c * es, j == 1 ? own + c * es : dst + c * es, s->tmp, len,
                                    a->dt, a->op);
            }
        }
        if (status == COHORT_OK) {
            cohort_reduce_finish(dst + c * es, len, a->dt, a->op, n);
        }
        for (int j = 1; j < n && push && status == COHORT_OK; j++) {
            status = direct_copy(req, s, (me + j) % n, 1, dst + c * es, off + c * es, len * es, 1);
        }
    }
    return status;
}

/* The rows' calls (direct.h): the state is the request's. */
cohort_status_t cohort_direct_coll_pull(cohort_request_t *req, int k, int out, void *dst,
                                        size_t off, size_t len)
{
    return direct_copy(req, req->state, k, out, dst, off, len, 0);
}

cohort_status_t cohort_direct_coll_push(cohort_request_t *req, int k, const void *src, size_t off,
                                        size_t len)
{
    return direct_copy(req, req->state, k, 1, (void *)src, off, len, 1);
}

cohort_status_t cohort_direct_coll_combine(cohort_request_t *req, char *dst, size_t off,
                                           size_t count, int push)
{
    return direct_combine(req, req->state, dst, off, count, push);
}

cohort_status_t cohort_direct_coll_combine_prepare(cohort_request_t *req, const void **in)
{
    direct_state_t *s = req->state;

    (void)in; /* the others read the call's input */
    s->tmp = cohort_scratch_get(req->ctx, cohort_coll_knob(req, COHORT_DIRECT_CHUNK));
    return s->tmp != NULL ? COHORT_OK : COHORT_ERR_NO_MEMORY;
}

void *cohort_direct_coll_scratch(cohort_request_t *req, size_t bytes)
{
    direct_state_t *s = req->state;

    s->copy = cohort_scratch_get(req->ctx, bytes);
    return s->copy;
}

static uint8_t direct_signal_of(cohort_status_t status)
{
    return status == COHORT_OK                ? D_READ_OK
           : status == COHORT_ERR_UNSUPPORTED ? D_READ_REFUSED
           : status == COHORT_ERR_MISMATCH    ? D_MISMATCH
                                              : D_READ_FAILED;
}

/* Every member's descriptor against this rank's (the same call, the same lengths), or nobody
 * copies a byte; the signals tell every member. */
static cohort_status_t direct_check(cohort_request_t *req, direct_state_t *s)
{
    return cohort_coll_ident_check(req, &s->mine.id, s->peers, sizeof(direct_desc_t),
                                   offsetof(direct_desc_t, id))
               ? COHORT_OK
               : COHORT_ERR_MISMATCH;
}

/* After a signal round: this rank's own error, else UNSUPPORTED when some member's reads were
 * refused (the group stops choosing this), else COHORT_ERR_UCX for a failed read elsewhere,
 * else OK. */
static cohort_status_t direct_signals(cohort_request_t *req, direct_state_t *s, const uint8_t *rx)
{
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status = s->rc;

    for (int k = 0; k < n; k++) {
        uint8_t sig = k == me ? s->signal : rx[k];
        if (sig == D_READ_OK) {
            continue;
        }
        if (sig == D_READ_REFUSED) {
            req->comm->node_off = 1;
        }
        if (sig == D_MISMATCH && status != COHORT_ERR_MISMATCH) {
            /* above every other status: no member copied, and the group goes on */
            status = COHORT_ERR_MISMATCH;
        } else if (status == COHORT_OK) {
            status = sig == D_READ_REFUSED ? COHORT_ERR_UNSUPPORTED : COHORT_ERR_UCX;
            if (status == COHORT_ERR_UCX) {
                cohort_error(req->ctx, "%s %s: group rank %d's direct reads failed (see its log)",
                             req->comm->label, cohort_coll_names[s->base.args.coll], k);
            }
        }
    }
    /* Every member saw the same signals, so returns the same: the group stays in step. */
    s->base.agreed = status != COHORT_OK;
    return status;
}

/* Every member's descriptor in s->peers: a message round, or through the segment (this
 * rank's in its buffer, SEQ; then every member's). */
static cohort_status_t direct_exchange(cohort_request_t *req, direct_state_t *s)
{
    cohort_status_t status;

    if (!s->on_shm) {
        return direct_round(req, s, D_STEP_DESC, s->peers, sizeof(direct_desc_t), &s->mine,
                            sizeof(s->mine));
    }
    if (s->phase == D_EXCHANGE) {
        status = cohort_shm_put(req, &s->call, &s->mine, sizeof(s->mine));
        if (status != COHORT_OK) {
            return status;
        }
        s->phase = D_DESCS;
    }
    status = cohort_shm_await(req, &s->call, -1, COHORT_SHM_SEQ);
    for (int k = 0; k < req->comm->size && status == COHORT_OK; k++) {
        memcpy(&s->peers[k], cohort_shm_buf(req, &s->call, k), sizeof(s->peers[k]));
    }
    return status;
}

/* Through the segment the signal is a failure word (call << 3 | signal, only when not OK)
 * and then DONE, the word the others wait on. Every member reads the failure words before it
 * ends the call, and none writes the next call's before every member has begun that call. */
static void direct_announce(cohort_request_t *req, direct_state_t *s)
{
    if (s->signal != D_READ_OK) {
        cohort_shm_publish_value(req, COHORT_SHM_FAIL, s->call.s << 3 | s->signal);
    }
    cohort_shm_publish(req, &s->call, COHORT_SHM_DONE);
}

/* The signals from every member, then what they say (direct_signals). */
static cohort_status_t direct_sync(cohort_request_t *req, direct_state_t *s)
{
    int n = req->comm->size;
    uint8_t *rx = s->sig_rx;
    cohort_status_t status;

    if (!s->on_shm) {
        status = direct_round(req, s, D_STEP_SYNC, rx, 1, &s->signal, 1);
        return status == COHORT_OK ? direct_signals(req, s, rx) : status;
    }
    status = cohort_shm_await(req, &s->call, -1, COHORT_SHM_DONE);
    if (status != COHORT_OK) {
        return status;
    }
    for (int k = 0; k < n; k++) {
        uint64_t v = cohort_shm_word(req, k, COHORT_SHM_FAIL);
        rx[k] = v >> 3 == s->call.s ? (uint8_t)(v & 7) : D_READ_OK;
    }
    return direct_signals(req, s, rx);
}

/* Whether member @a k, inside a write announced for this call, is still alive: its pid is in
 * its descriptor, which it published before it could write (a pidfd says when it exits). */
static int direct_writer_alive(cohort_request_t *req, direct_state_t *s, int k, int *pfd)
{
    const cohort_peer_t *peer = cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, k));
    struct pollfd p;

    if (peer != NULL && peer->state == COHORT_PEER_FAILED) {
        return 0;
    }
    if (*pfd < 0) {
        direct_desc_t d;
        memcpy(&d, cohort_shm_buf(req, &s->call, k), sizeof(d));
        *pfd = pidfd_open((pid_t)d.pid, 0);
        if (*pfd < 0) {
            return errno != ESRCH; /* gone already; any other failure: wait on the word */
        }
    }
    p.fd = *pfd;
    p.events = POLLIN;
    return poll(&p, 1, 0) == 0;
}

/* This rank gives the call up before its end (an error of its own, a revoke, a cancel): its
 * buffers go back to the caller, so no member may write into them once this returns. A member
 * that announced a write before it saw this rank leave is waited for until that write is over
 * or it is dead, however long that takes: never a fixed time, after which a write could still
 * land (past COHORT_TIMEOUT it is said once). A member that failed writes nothing more. Only the
 * writing collectives need it; they run only with the segment. */
static void direct_leave(cohort_request_t *req, direct_state_t *s)
{
    int n = req->comm->size, me = req->comm->rank;
    double start = cohort_time_now(), limit = req->ctx->cfg.timeout_s;

    if (!s->on_shm || !s->call.begun || s->left) {
        return;
    }
    s->left = 1;
    cohort_shm_leave(req, &s->call);
    /* A leave may come from inside this rank's own write: a target gone (ESRCH) fails the peer
     * there and then, which revokes the group and so cancels this call. That write is over, and
     * must say so before this waits, or two members leaving so would wait on each other
     * forever (tests/mpi/leave_dead). */
    cohort_shm_write_end(req, &s->call);
    for (int k = 0; k < n; k++) {
        int pfd = -1, said = 0;
        while (k != me && cohort_shm_writing(req, &s->call, k) &&
               direct_writer_alive(req, s, k, &pfd)) {
            if (!said && limit > 0 && cohort_time_now() - start > limit) {
                said = 1;
                cohort_warn(req->ctx,
                            "%s %s: group rank %d is still inside a write into this rank's "
                            "buffers after %.1f s (stopped?); the call returns once it is over "
                            "or the rank is dead",
                            req->comm->label, cohort_coll_names[s->base.args.coll], k, limit);
            }
            sched_yield();
        }
        if (pfd >= 0) {
            close(pfd);
        }
    }
}

static cohort_status_t direct_run(cohort_request_t *req)
{
    direct_state_t *s = req->state;
    const cohort_direct_row_t *row = s->base.algo->family;
    cohort_status_t status;

    if (s->phase == D_EXCHANGE || s->phase == D_DESCS) {
        status = direct_exchange(req, s);
        if (status != COHORT_OK) {
            return status;
        }
        s->phase = D_READ;
    }
    if (s->phase == D_READ) {
        s->rc = direct_check(req, s);
        if (s->rc == COHORT_OK) {
            s->rc = cohort_coll_pids_check(req, s->peers, sizeof(direct_desc_t),
                                           offsetof(direct_desc_t, pid));
            if (s->rc == COHORT_INPROGRESS) {
                /* A member's card is on its way, nothing copied yet. A pid-only lookup wires
                 * nothing, so nothing wakes this call when it lands: polled. */
                return cohort_shm_wait(req);
            }
        }
        if (s->rc == COHORT_OK) {
            s->rc = row->copy(req);
        }
        s->signal = direct_signal_of(s->rc);
        if (s->rc == COHORT_ERR_PEER_FAILED) {
            return s->rc; /* no one to wait for: the group is revoked */
        }
        if (s->on_shm) {
            direct_announce(req, s);
        }
        s->phase = D_SYNC;
    }
    status = direct_sync(req, s);
    if (status != COHORT_OK && !s->base.agreed) {
        return status; /* in progress, or a transfer's error (the group is revoked) */
    }
    /* Done, or an error every member returns alike. */
    if (s->on_shm) {
        cohort_shm_call_end(req, &s->call);
    }
    if (status == COHORT_OK && row->finish != NULL) {
        row->finish(req);
    }
    return status;
}

cohort_status_t cohort_direct_coll_progress(cohort_request_t *req)
{
    direct_state_t *s = req->state;
    cohort_status_t status = direct_run(req);

    if (status != COHORT_OK && status != COHORT_INPROGRESS && !s->base.agreed) {
        direct_leave(req, s);
    }
    return status;
}

void cohort_direct_coll_cleanup(cohort_request_t *req)
{
    direct_state_t *s = req->state;

    cohort_scratch_put(req->ctx, s->tmp);
    cohort_scratch_put(req->ctx, s->copy);
}

/* Every member but this one: all of them are read from or told. */
int cohort_direct_coll_peers(const cohort_coll_args_t *args, int n, int me, int *out, int max)
{
    int m = 0;

    for (int j = 1; j < n && m < max && args->count > 0; j++) {
        out[m++] = (me + j) % n;
    }
    return m;
}

size_t cohort_direct_coll_describe(const cohort_request_t *req, char *buf, size_t len, size_t used)
{
    const direct_state_t *s = req->state;

    return s->on_shm ? cohort_shm_describe(req, &s->call, buf, len, used) : used;
}

void cohort_direct_coll_abandon(cohort_request_t *req, cohort_status_t status)
{
    direct_state_t *s = req->state;

    if (s->on_shm) {
        cohort_shm_abandon(req, &s->call, status);
        direct_leave(req, s);
    }
}
