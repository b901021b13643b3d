/*
 * A group's shared segment (shm_seg.h). The memfd is reached with pidfd_getfd, which the
 * kernel allows where it allows reading the peer (single copy): no name in /dev/shm to leak
 * when a rank dies, and the memory goes with the last mapping.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <unistd.h>
#include "coll/shm_seg.h"
#include "core/endpoint.h"
#include "core/log.h"

#define COHORT_SHM_MAGIC 0xc0c05e6du

/* Per data buffer, what its contents are: which call (number << 32 | fingerprint) and how many
 * bytes; written before SEQ is published, read after it is seen. */
enum { SHM_TAG_CALL, SHM_TAG_BYTES, SHM_TAGS };

typedef struct {
    uint64_t word[COHORT_SHM_WORDS];
    uint8_t pad[64 - 8 * COHORT_SHM_WORDS];
    uint64_t tag[2][SHM_TAGS];
    uint8_t pad2[64 - 16 * SHM_TAGS];
    uint8_t data[2][COHORT_SHM_SLOT];
} shm_slot_t;

typedef struct {
    uint32_t magic;
    int32_t n;
    uint8_t pad[56];
    shm_slot_t slot[];
} shm_seg_t;

typedef enum { SEG_NONE, SEG_SETTING_UP, SEG_READY, SEG_FAILED } shm_seg_state_t;

/* Per group, this rank's view (comm->node_shm). */
typedef struct {
    shm_seg_state_t state;
    shm_seg_t *seg;
    size_t bytes;
    int fd;            /* group rank 0: the memfd, until every member has reached it */
    uint64_t calls;    /* calls numbered on the group */
    uint64_t finished; /* the last call that ended here */
} shm_group_t;

enum { SHM_STEP_DESC, SHM_STEP_ATTACHED };

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

size_t cohort_shm_call_extra(int n)
{
    return (size_t)n * (sizeof(cohort_shm_setup_desc_t) + 1) +
           4 * (size_t)n * sizeof(cohort_xfer_t) + 64;
}

cohort_status_t cohort_shm_group_make(cohort_comm_t *comm)
{
    shm_group_t *g = comm->node_shm;

    if (g == NULL) {
        g = calloc(1, sizeof(*g));
        if (g == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        g->fd = -1;
        comm->node_shm = g;
        comm->node_shm_free = shm_group_free;
    }
    return COHORT_OK;
}

uint64_t cohort_shm_call_number(cohort_comm_t *comm)
{
    shm_group_t *g = comm->node_shm;

    return ++g->calls;
}

cohort_status_t cohort_shm_call_start(cohort_request_t *req, cohort_shm_call_t *c, char *p)
{
    cohort_comm_t *comm = req->comm;
    cohort_coll_base_t *b = cohort_coll_base(req);
    shm_group_t *g = comm->node_shm;

    c->descs = (cohort_shm_setup_desc_t *)p;
    p += (size_t)comm->size * sizeof(cohort_shm_setup_desc_t);
    c->oks = (uint8_t *)p;
    p += (size_t)comm->size;
    b->xfers = (cohort_xfer_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
    b->nxfers = 4 * comm->size;
    /* The number taken at post: the first call makes the segment, whichever starts first
     * here; a later one that starts before it waits in cohort_shm_call_begin. */
    c->s = b->seg_call;
    c->wait_word = -1;
    c->setup = c->s == 1;
    if (c->setup) {
        g->state = SEG_SETTING_UP;
    }
    return COHORT_OK;
}

/* Group rank 0: the segment, and what the others need to reach it (fd -1: it failed). */
static void shm_create(cohort_request_t *req, cohort_shm_call_t *c, shm_group_t *g)
{
    int n = req->comm->size;

    g->bytes = shm_seg_bytes(n);
    c->desc.pid = (int32_t)(cohort_fault(req->ctx, COHORT_FAULT_SHM_PID) ? getppid() : getpid());
    g->fd = memfd_create("cohort-group", MFD_CLOEXEC);
    if (g->fd < 0 || ftruncate(g->fd, (off_t)g->bytes) != 0 ||
        (g->seg = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0)) ==
            MAP_FAILED) {
        cohort_error(req->ctx, "%s: shared segment of %zu bytes: %s", req->comm->label, g->bytes,
                     strerror(errno));
        g->seg = NULL;
        c->desc.fd = -1;
        return;
    }
    g->seg->magic = COHORT_SHM_MAGIC;
    g->seg->n = n;
    c->desc.fd = g->fd;
}

/* The others: map rank 0's segment. @a pid_ok: whether the descriptor's pid is the one group
 * rank 0 published (its card): a file descriptor is never taken from another process.
 * @return whether it worked (logged when not). */
static int shm_attach(cohort_request_t *req, shm_group_t *g, const cohort_shm_setup_desc_t *d,
                      cohort_status_t pid_ok)
{
    int n = req->comm->size, pfd, fd = -1;
    const char *why = NULL;
    char what[96];

    g->bytes = shm_seg_bytes(n);
    if (d->fd < 0) {
        why = "group rank 0 could not make it";
    } else if (pid_ok != COHORT_OK) {
        snprintf(what, sizeof(what), "its descriptor names process %d: %s", (int)d->pid,
                 pid_ok == COHORT_ERR_MISMATCH ? "not the one group rank 0 published"
                                               : cohort_strerror(pid_ok));
        why = what;
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
                     req->comm->label, cohort_coll_names[cohort_coll_base(req)->args.coll], why);
        return 0;
    }
    return 1;
}

/* The first call: make or reach the segment, then agree on whether every member has it. */
static cohort_status_t shm_setup(cohort_request_t *req, cohort_shm_call_t *c, shm_group_t *g)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status;

    if (c->sround == 0) {
        if (me == 0 && c->ok == 0) {
            shm_create(req, c, g);
            c->ok = g->seg != NULL ? 1 : 2;
        }
        status = cohort_coll_flat_round(req, b->xfers, &c->posted, SHM_STEP_DESC, 0, c->descs,
                                        sizeof(cohort_shm_setup_desc_t), &c->desc, sizeof(c->desc));
        if (status != COHORT_OK) {
            return status;
        }
        c->sround = 1;
    }
    if (c->sround == 1) {
        if (me != 0) {
            cohort_status_t pid_ok = cohort_coll_pid_check(req, 0, c->descs[0].pid);
            if (pid_ok == COHORT_INPROGRESS) {
                return cohort_shm_wait(req); /* group rank 0's card is on its way */
            }
            c->ok = shm_attach(req, g, &c->descs[0], pid_ok) ? 1 : 2;
        }
        c->sround = 2;
    }
    status = cohort_coll_flat_round(req, b->xfers + 2 * n, &c->posted, SHM_STEP_ATTACHED, -1,
                                    c->oks, 1, &c->ok, 1);
    if (status != COHORT_OK) {
        return status;
    }
    c->oks[me] = c->ok;
    g->state = SEG_READY;
    for (int k = 0; k < n; k++) {
        if (c->oks[k] != 1) {
            g->state = SEG_FAILED;
        }
    }
    if (g->fd >= 0) {
        close(g->fd); /* every member that could map it has */
        g->fd = -1;
    }
    return COHORT_OK;
}

cohort_status_t cohort_shm_wait(cohort_request_t *req)
{
    cohort_request_poll(req);
    return COHORT_INPROGRESS;
}

cohort_status_t cohort_shm_call_begin(cohort_request_t *req, cohort_shm_call_t *c)
{
    shm_group_t *g = req->comm->node_shm;
    cohort_status_t status;

    if (c->begun) {
        return COHORT_OK;
    }
    if (c->setup && g->state == SEG_SETTING_UP) {
        status = shm_setup(req, c, g);
        if (status != COHORT_OK) {
            return status;
        }
    }
    if (g->state == SEG_NONE || g->state == SEG_SETTING_UP ||
        (g->state == SEG_READY && g->finished != c->s - 1)) {
        return cohort_shm_wait(req); /* an earlier call makes it, or runs */
    }
    if (g->state != SEG_READY) {
        /* Every member saw the same answers: they fail alike and stay in step. */
        req->comm->node_off = 1;
        cohort_coll_base(req)->agreed = 1;
        return COHORT_ERR_UNSUPPORTED;
    }
    c->begun = 1;
    return COHORT_OK;
}

/* Member @a k's tags of this call's buffer. */
static uint64_t *shm_tag(cohort_request_t *req, const cohort_shm_call_t *c, int k)
{
    shm_group_t *g = req->comm->node_shm;

    return g->seg->slot[k].tag[c->s & 1];
}

static uint64_t shm_call_tag(cohort_request_t *req, const cohort_shm_call_t *c)
{
    return (c->s & 0xffffffffu) << 32 | cohort_coll_base(req)->fp;
}

uint8_t *cohort_shm_buf(cohort_request_t *req, const cohort_shm_call_t *c, int k)
{
    shm_group_t *g = req->comm->node_shm;

    return g->seg->slot[k].data[c->s & 1];
}

static uint64_t *shm_word(cohort_request_t *req, int k, int w)
{
    shm_group_t *g = req->comm->node_shm;

    return &g->seg->slot[k].word[w];
}

void cohort_shm_publish_value(cohort_request_t *req, int w, uint64_t v)
{
    /* Release: what this rank wrote before is seen by whoever sees the number. */
    __atomic_store_n(shm_word(req, req->comm->rank, w), v, __ATOMIC_RELEASE);
}

void cohort_shm_publish(cohort_request_t *req, const cohort_shm_call_t *c, int w)
{
    cohort_shm_publish_value(req, w, c->s);
}

uint64_t cohort_shm_word(cohort_request_t *req, int k, int w)
{
    return __atomic_load_n(shm_word(req, k, w), __ATOMIC_ACQUIRE);
}

static int shm_word_reached(cohort_request_t *req, int k, int w, uint64_t v)
{
    int n = req->comm->size;

    for (int i = k < 0 ? 0 : k; i < (k < 0 ? n : k + 1); i++) {
        if (cohort_shm_word(req, i, w) < v) {
            return 0;
        }
    }
    return 1;
}

/* Member @a k's word (every member's when k < 0) against @a v, noted for a description. */
static int shm_await(cohort_request_t *req, cohort_shm_call_t *c, int k, int w, uint64_t v)
{
    if (shm_word_reached(req, k, w, v)) {
        c->wait_word = -1;
        return 1;
    }
    c->wait_word = w;
    c->wait_value = v;
    c->wait_member = k;
    return 0;
}

int cohort_shm_reached(cohort_request_t *req, cohort_shm_call_t *c, int k, int w)
{
    return shm_await(req, c, k, w, c->s);
}

int cohort_shm_buf_free(cohort_request_t *req, cohort_shm_call_t *c)
{
    return c->s <= 2 || shm_await(req, c, -1, COHORT_SHM_DONE, c->s - 2);
}

size_t cohort_shm_describe(const cohort_request_t *req, const cohort_shm_call_t *c, char *buf,
                           size_t len, size_t used)
{
    cohort_request_t *r = (cohort_request_t *)req;
    const shm_group_t *g = req->comm != NULL ? req->comm->node_shm : NULL;
    int n = req->comm != NULL ? req->comm->size : 0, named = 0;

    if (g == NULL || used >= len) {
        return used;
    }
    if (!c->begun) {
        if (g->state == SEG_READY && g->finished != c->s - 1) {
            used += (size_t)snprintf(buf + used, len - used,
                                     "; behind an earlier call on this group (this rank's)");
        }
        return used;
    }
    for (int k = 0; k < n && c->wait_word >= 0 && used < len; k++) {
        if ((c->wait_member >= 0 && k != c->wait_member) ||
            cohort_shm_word(r, k, c->wait_word) >= c->wait_value) {
            continue;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s group rank %d (world %d)",
                                 named++ == 0 ? "; not yet heard from (shared segment)" : ",", k,
                                 cohort_comm_world_rank(req->comm, k));
    }
    return used;
}

void cohort_shm_abandon(cohort_request_t *req, const cohort_shm_call_t *c, cohort_status_t status)
{
    const shm_group_t *g = req->comm != NULL ? req->comm->node_shm : NULL;

    /* Only a timeout: a failed peer or a revoke reaches the members as a notification that
     * names who failed, which they need (cohort_failed_ranks), and this word cannot carry. */
    if (status == COHORT_ERR_TIMEOUT && g != NULL && g->seg != NULL && c->begun) {
        cohort_shm_publish_value(req, COHORT_SHM_GONE, c->s << 8 | (uint64_t)(-status & 0xff));
    }
}

cohort_status_t cohort_shm_gone(cohort_request_t *req, const cohort_shm_call_t *c)
{
    for (int k = 0; k < req->comm->size; k++) {
        uint64_t v = cohort_shm_word(req, k, COHORT_SHM_GONE);
        if (v >> 8 == c->s) {
            return (cohort_status_t) - (int)(v & 0xff); /* the group is revoked on return */
        }
    }
    return COHORT_OK;
}

/* A store then a load on each side, both sequentially consistent (Dekker): either the writer
 * sees LEFT and writes nothing, or the one leaving sees WRITING and waits for its end. */
int cohort_shm_write_begin(cohort_request_t *req, const cohort_shm_call_t *c, int k)
{
    __atomic_store_n(shm_word(req, req->comm->rank, COHORT_SHM_WRITING), c->s << 1 | 1,
                     __ATOMIC_SEQ_CST);
    if (__atomic_load_n(shm_word(req, k, COHORT_SHM_LEFT), __ATOMIC_SEQ_CST) == c->s) {
        cohort_shm_write_end(req, c);
        return 0;
    }
    return 1;
}

void cohort_shm_write_end(cohort_request_t *req, const cohort_shm_call_t *c)
{
    cohort_shm_publish_value(req, COHORT_SHM_WRITING, c->s << 1);
}

void cohort_shm_leave(cohort_request_t *req, const cohort_shm_call_t *c)
{
    __atomic_store_n(shm_word(req, req->comm->rank, COHORT_SHM_LEFT), c->s, __ATOMIC_SEQ_CST);
}

int cohort_shm_writing(cohort_request_t *req, const cohort_shm_call_t *c, int k)
{
    return __atomic_load_n(shm_word(req, k, COHORT_SHM_WRITING), __ATOMIC_SEQ_CST) ==
           (c->s << 1 | 1);
}

void cohort_shm_call_end(cohort_request_t *req, const cohort_shm_call_t *c)
{
    shm_group_t *g = req->comm->node_shm;

    g->finished = c->s;
}

cohort_status_t cohort_shm_put(cohort_request_t *req, cohort_shm_call_t *c, const void *src,
                               size_t len)
{
    cohort_status_t status = cohort_shm_call_begin(req, c);

    if (status != COHORT_OK) {
        return status;
    }
    /* Even with nothing to put: the tags are read until every member is done with s - 2. */
    if (!cohort_shm_buf_free(req, c)) {
        return cohort_shm_wait(req);
    }
    if (src != NULL && len > 0) {
        memcpy(cohort_shm_buf(req, c, req->comm->rank), src, len);
    }
    shm_tag(req, c, req->comm->rank)[SHM_TAG_CALL] = shm_call_tag(req, c);
    shm_tag(req, c, req->comm->rank)[SHM_TAG_BYTES] = len;
    cohort_shm_publish(req, c, COHORT_SHM_SEQ);
    return COHORT_OK;
}

int cohort_shm_matches(cohort_request_t *req, const cohort_shm_call_t *c, int k)
{
    const uint64_t *mine = shm_tag(req, c, req->comm->rank), *its = shm_tag(req, c, k);

    if (its[SHM_TAG_CALL] == mine[SHM_TAG_CALL] && its[SHM_TAG_BYTES] == mine[SHM_TAG_BYTES]) {
        return 1;
    }
    cohort_error(req->ctx,
                 "%s %s: group rank %d put call %llu (fingerprint 0x%08x) of %llu bytes, this "
                 "rank call %llu (0x%08x) of %llu: a different count, root, type or operation; "
                 "COHORT_ERR_MISMATCH on every member",
                 req->comm->label, cohort_coll_names[cohort_coll_base(req)->args.coll], k,
                 (unsigned long long)(its[SHM_TAG_CALL] >> 32), (unsigned)its[SHM_TAG_CALL],
                 (unsigned long long)its[SHM_TAG_BYTES],
                 (unsigned long long)(mine[SHM_TAG_CALL] >> 32), (unsigned)mine[SHM_TAG_CALL],
                 (unsigned long long)mine[SHM_TAG_BYTES]);
    return 0;
}

cohort_status_t cohort_shm_await(cohort_request_t *req, cohort_shm_call_t *c, int k, int w)
{
    cohort_status_t status = cohort_shm_gone(req, c);

    if (status != COHORT_OK) {
        return status;
    }
    return cohort_shm_reached(req, c, k, w) ? COHORT_OK : cohort_shm_wait(req);
}
