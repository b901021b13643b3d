/*
 * Small collectives of same-node members through one shared segment: no message at all once
 * the segment exists. Each member owns a slot (a sequence word, a done word, two data buffers);
 * call s writes this rank's contribution into its buffer s % 2, publishes s, waits for the
 * members it needs to have published s, computes its result straight from their buffers, and
 * publishes done = s. A buffer is written again at call s + 2 only once every member has
 * published done >= s, so nobody reads it while it changes. Every member reduces all inputs in
 * member order, so all end with the same bits and nothing is sent back.
 *
 * The segment (a memfd) is made by group rank 0 at the group's first call here and reached by
 * the others through pidfd_getfd, which the kernel allows where single copy is allowed: two
 * rounds of small messages, once per group (rank 0's pid and fd to every member, then every
 * member's result to every member). Where a member cannot attach, that call fails with
 * COHORT_ERR_UNSUPPORTED on every member, and the group takes the other algorithms from then
 * on, as direct.c does. A member that dies never publishes: its group is revoked when the death
 * is seen (keepalive), which fails the waits here.
 *
 * Chosen by placement only (every member on this node, single copy allowed) for calls whose data
 * fit a buffer (COHORT_SHM_SLOT bytes: for alltoall and reduce_scatter every block, for
 * allgather one member's).
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <unistd.h>
#include "coll/coll_reduce.h"
#include "core/log.h"

#define COHORT_SHM_SLOT  (64 * 1024)
#define COHORT_SHM_MAX_N 64 /* members: the segment is 2 x COHORT_SHM_SLOT per member */
#define COHORT_SHM_MAGIC 0xc0c05e6du

typedef struct {
    uint64_t seq; /* the last call whose contribution is in the buffer */
    uint8_t pad0[56];
    uint64_t done; /* the last call this member has finished reading for */
    uint8_t pad1[56];
    uint8_t data[2][COHORT_SHM_SLOT];
} shm_slot_t;

typedef struct {
    uint32_t magic;
    int32_t n;
    uint8_t pad[56];
    shm_slot_t slot[];
} shm_seg_t;

typedef enum { SHM_NONE, SHM_SETTING_UP, SHM_READY, SHM_FAILED } shm_seg_state_t;

/* Per group, this rank's view (comm->node_shm). */
typedef struct {
    shm_seg_state_t state;
    shm_seg_t *seg;
    size_t bytes;
    int fd;            /* group rank 0: the memfd, until every member attached */
    uint64_t calls;    /* shm calls posted on the group */
    uint64_t written;  /* the last call whose contribution this rank published */
    uint64_t finished; /* the last call this rank published done for */
} shm_group_t;

typedef struct {
    int32_t pid;
    int32_t fd;
} shm_setup_desc_t;

enum { SHM_STEP_DESC, SHM_STEP_ATTACHED };

typedef enum { SHM_SETUP, SHM_WRITE, SHM_WAIT, SHM_FINISH } shm_phase_t;

typedef struct {
    cohort_coll_base_t base;
    shm_phase_t phase;
    int posted;
    int setup;  /* this call makes the segment */
    int sround; /* which of the setup's two rounds is under way */
    uint64_t s;
    uint8_t ok; /* this rank attached (setup) */
    shm_setup_desc_t desc, *descs;
    uint8_t *oks;
    /* then xfers: 2 rounds x 2n */
} shm_state_t;

static void shm_group_free(void *arg)
{
    shm_group_t *g = arg;

    if (g->seg != NULL) {
        munmap(g->seg, g->bytes);
    }
    if (g->fd >= 0) {
        close(g->fd);
    }
    free(g);
}

static size_t shm_seg_bytes(int n)
{
    return sizeof(shm_seg_t) + (size_t)n * sizeof(shm_slot_t);
}

/* Bytes this rank writes into its buffer (its contribution), or SIZE_MAX when none fits. */
static size_t shm_in_bytes(const cohort_coll_args_t *a, int n)
{
    size_t one = a->count * a->esize;

    switch (a->coll) {
    case COHORT_COLL_ALLTOALL:
    case COHORT_COLL_REDUCE_SCATTER:
        return a->count > SIZE_MAX / a->esize / (size_t)n ? SIZE_MAX : one * (size_t)n;
    case COHORT_COLL_BARRIER:
        return 0;
    default:
        return one;
    }
}

static int shm_decline(const cohort_coll_args_t *args, int gsize)
{
    /* count 0 moves nothing: the other algorithms return at once, buffers maybe NULL */
    return gsize < 2 || gsize > COHORT_SHM_MAX_N || shm_in_bytes(args, gsize) > COHORT_SHM_SLOT ||
           (args->count == 0 && args->coll != COHORT_COLL_BARRIER);
}

static size_t shm_state_size(const cohort_coll_args_t *args, int n)
{
    (void)args;
    return sizeof(shm_state_t) + (size_t)n * (sizeof(shm_setup_desc_t) + 1) +
           4 * (size_t)n * sizeof(cohort_xfer_t) + 64;
}

static cohort_status_t shm_start(cohort_request_t *req)
{
    shm_state_t *s = req->state;
    cohort_comm_t *c = req->comm;
    shm_group_t *g = c->node_shm;
    char *p = (char *)(s + 1);

    if (g == NULL) {
        g = calloc(1, sizeof(*g));
        if (g == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        g->fd = -1;
        c->node_shm = g;
        c->node_shm_free = shm_group_free;
    }
    s->descs = (shm_setup_desc_t *)p;
    p += (size_t)c->size * sizeof(shm_setup_desc_t);
    s->oks = (uint8_t *)p;
    p += (size_t)c->size;
    s->base.xfers = (cohort_xfer_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
    s->base.nxfers = 4 * c->size;
    s->s = ++g->calls;
    s->setup = g->state == SHM_NONE;
    if (s->setup) {
        g->state = SHM_SETTING_UP;
    }
    s->phase = SHM_SETUP;
    return COHORT_OK;
}

/* Group rank 0: the segment, and what the others need to reach it. */
static cohort_status_t shm_create(cohort_request_t *req, shm_state_t *s, shm_group_t *g)
{
    int n = req->comm->size;

    g->bytes = shm_seg_bytes(n);
    g->fd = memfd_create("cohort-group", MFD_CLOEXEC);
    if (g->fd < 0 || ftruncate(g->fd, (off_t)g->bytes) != 0 ||
        (g->seg = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0)) ==
            MAP_FAILED) {
        cohort_error(req->ctx, "%s: shared segment of %zu bytes: %s", req->comm->label, g->bytes,
                     strerror(errno));
        g->seg = NULL;
        s->desc.fd = -1;
        return COHORT_OK; /* the others learn it from the descriptor */
    }
    g->seg->magic = COHORT_SHM_MAGIC;
    g->seg->n = n;
    s->desc.pid = (int32_t)getpid();
    s->desc.fd = g->fd;
    return COHORT_OK;
}

/* The others: map rank 0's segment. @return whether it worked (logged when not). */
static int shm_attach(cohort_request_t *req, shm_group_t *g, const shm_setup_desc_t *d,
                      const char *coll)
{
    int n = req->comm->size, pfd, fd = -1;
    const char *why = NULL;

    g->bytes = shm_seg_bytes(n);
    if (d->fd < 0) {
        why = "group rank 0 could not make it";
    } else if (cohort_fault(req->ctx, COHORT_FAULT_SHM)) {
        why = "COHORT_FAULT";
    } else if ((pfd = pidfd_open((pid_t)d->pid, 0)) < 0 ||
               (fd = pidfd_getfd(pfd, d->fd, 0), close(pfd), fd) < 0) {
        why = strerror(errno);
    } else {
        g->seg = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (g->seg == MAP_FAILED) {
            g->seg = NULL;
            why = strerror(errno);
        } else if (g->seg->magic != COHORT_SHM_MAGIC || g->seg->n != n) {
            why = "not the segment expected";
        }
    }
    if (why != NULL) {
        cohort_error(req->ctx,
                     "%s %s: cannot reach group rank 0's shared segment (%s); this call fails "
                     "on every member, and the group uses the other algorithms from now on",
                     req->comm->label, coll, why);
        return 0;
    }
    return 1;
}

/* The first call: make or reach the segment, then agree on whether every member has it. */
static cohort_status_t shm_setup(cohort_request_t *req, shm_state_t *s, shm_group_t *g)
{
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status;

    if (!s->setup) {
        /* An earlier call makes it: wait for that. */
        if (g->state == SHM_SETTING_UP) {
            cohort_request_poll(req);
            return COHORT_INPROGRESS;
        }
        s->base.agreed = g->state != SHM_READY;
        return g->state == SHM_READY ? COHORT_OK : COHORT_ERR_UNSUPPORTED;
    }
    if (s->sround == 0) {
        if (me == 0 && s->ok == 0) {
            shm_create(req, s, g);
            s->ok = g->seg != NULL ? 1 : 2;
        }
        status = cohort_coll_flat_round(req, s->base.xfers, &s->posted, SHM_STEP_DESC, 0, s->descs,
                                        sizeof(shm_setup_desc_t), &s->desc, sizeof(s->desc));
        if (status != COHORT_OK) {
            return status;
        }
        if (me != 0) {
            s->ok = shm_attach(req, g, &s->descs[0], cohort_coll_names[s->base.args.coll]) ? 1 : 2;
        }
        s->sround = 1;
    }
    status = cohort_coll_flat_round(req, s->base.xfers + 2 * n, &s->posted, SHM_STEP_ATTACHED, -1,
                                    s->oks, 1, &s->ok, 1);
    if (status != COHORT_OK) {
        return status;
    }
    s->oks[me] = s->ok;
    g->state = SHM_READY;
    for (int k = 0; k < n; k++) {
        if (s->oks[k] != 1) {
            g->state = SHM_FAILED;
        }
    }
    if (g->fd >= 0) {
        close(g->fd); /* every member that could map it has */
        g->fd = -1;
    }
    if (g->state != SHM_READY) {
        req->comm->node_off = 1;
        s->base.agreed = 1;
        return COHORT_ERR_UNSUPPORTED;
    }
    return COHORT_OK;
}

static uint64_t shm_load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void shm_store(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Whether member @a k's word @a done (else seq) has reached @a v, for every member when k < 0. */
static int shm_reached(const shm_seg_t *seg, int n, int k, int done, uint64_t v)
{
    for (int i = k < 0 ? 0 : k; i < (k < 0 ? n : k + 1); i++) {
        if (shm_load(done ? &seg->slot[i].done : &seg->slot[i].seq) < v) {
            return 0;
        }
    }
    return 1;
}

/* The result from the published buffers of call s. */
static void shm_compute(cohort_request_t *req, shm_state_t *s, const shm_seg_t *seg)
{
    const cohort_coll_args_t *a = &s->base.args;
    int n = req->comm->size, me = req->comm->rank, b = (int)(s->s & 1);
    size_t one = a->count * a->esize;
    char *r = a->rbuf;

    switch (a->coll) {
    case COHORT_COLL_ALLREDUCE:
    case COHORT_COLL_REDUCE:
    case COHORT_COLL_REDUCE_SCATTER: {
        size_t off = a->coll == COHORT_COLL_REDUCE_SCATTER ? (size_t)me * one : 0;
        if (a->coll == COHORT_COLL_REDUCE && me != a->root) {
            return;
        }
        cohort_reduce_local(r, seg->slot[0].data[b] + off, seg->slot[1].data[b] + off, a->count,
                            a->dt, a->op);
        for (int k = 2; k < n; k++) {
            cohort_reduce_local(r, r, seg->slot[k].data[b] + off, a->count, a->dt, a->op);
        }
        cohort_reduce_finish(r, a->count, a->dt, a->op, n);
        return;
    }
    case COHORT_COLL_ALLGATHER:
        for (int k = 0; k < n; k++) {
            memcpy(r + (size_t)k * one, seg->slot[k].data[b], one);
        }
        return;
    case COHORT_COLL_ALLTOALL:
        for (int k = 0; k < n; k++) {
            memcpy(r + (size_t)k * one, seg->slot[k].data[b] + (size_t)me * one, one);
        }
        return;
    case COHORT_COLL_BCAST:
        if (me != a->root) {
            memcpy(r, seg->slot[a->root].data[b], one);
        }
        return;
    default: /* barrier */
        return;
    }
}

static cohort_status_t shm_progress(cohort_request_t *req)
{
    shm_state_t *s = req->state;
    const cohort_coll_args_t *a = &s->base.args;
    shm_group_t *g = req->comm->node_shm;
    int n = req->comm->size, me = req->comm->rank;
    int writes = a->coll != COHORT_COLL_BCAST || me == a->root;
    cohort_status_t status;
    shm_seg_t *seg;

    if (s->phase == SHM_SETUP) {
        status = shm_setup(req, s, g);
        if (status != COHORT_OK) {
            return status;
        }
        s->phase = SHM_WRITE;
    }
    seg = g->seg;
    s->base.step = (int)s->phase;
    if (s->phase == SHM_WRITE) {
        /* In order, and into a buffer every member has finished reading (call s - 2). */
        if (g->written != s->s - 1 ||
            (writes && s->s > 2 && !shm_reached(seg, n, -1, 1, s->s - 2))) {
            cohort_request_poll(req);
            return COHORT_INPROGRESS;
        }
        if (writes) {
            size_t in = shm_in_bytes(a, n);
            const char *src = cohort_coll_input(a);
            if (a->coll == COHORT_COLL_ALLGATHER && a->sbuf == COHORT_IN_PLACE) {
                src += (size_t)me * in;
            }
            if (in > 0) {
                memcpy(seg->slot[me].data[s->s & 1], src, in);
            }
        }
        shm_store(&seg->slot[me].seq, s->s);
        g->written = s->s;
        s->phase = SHM_WAIT;
    }
    if (s->phase == SHM_WAIT) {
        int from = a->coll == COHORT_COLL_BCAST ? a->root : -1;
        if (!shm_reached(seg, n, from, 0, s->s)) {
            cohort_request_poll(req);
            return COHORT_INPROGRESS;
        }
        shm_compute(req, s, seg);
        s->phase = SHM_FINISH;
    }
    if (g->finished != s->s - 1) {
        cohort_request_poll(req);
        return COHORT_INPROGRESS;
    }
    shm_store(&seg->slot[me].done, s->s);
    g->finished = s->s;
    return COHORT_OK;
}

#define SHM_ALGO(coll_)                                                                            \
    {                                                                                              \
        .name = "shm", .description = "same node, small: through one shared segment, no message",  \
        .coll = coll_, .state_size = shm_state_size, .start = shm_start, .progress = shm_progress, \
        .decline = shm_decline, .node = COHORT_NODE_SHM,                                           \
    }

const cohort_coll_algo_t cohort_allreduce_shm = SHM_ALGO(COHORT_COLL_ALLREDUCE);
const cohort_coll_algo_t cohort_reduce_shm = SHM_ALGO(COHORT_COLL_REDUCE);
const cohort_coll_algo_t cohort_reduce_scatter_shm = SHM_ALGO(COHORT_COLL_REDUCE_SCATTER);
const cohort_coll_algo_t cohort_allgather_shm = SHM_ALGO(COHORT_COLL_ALLGATHER);
const cohort_coll_algo_t cohort_alltoall_shm = SHM_ALGO(COHORT_COLL_ALLTOALL);
const cohort_coll_algo_t cohort_bcast_shm = SHM_ALGO(COHORT_COLL_BCAST);
const cohort_coll_algo_t cohort_barrier_shm = SHM_ALGO(COHORT_COLL_BARRIER);
