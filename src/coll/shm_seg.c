/*
 * A group's shared segment (shm_seg.h). Its name is derived from what every member knows
 * without a message: group rank 0's pid (its card, which the pid check needs anyway) and the
 * group's id, so reaching it costs no endpoint. Group rank 0 makes it (O_EXCL: never someone
 * else's) and writes its identity in the header last; the others open it when it is there,
 * polled from progress, check that identity and the creator's pid against rank 0's card before
 * they use a byte of it, and say they attached in the header. The name lives only while the
 * members attach: the last one unlinks it, and any member whose setup fails or is given up
 * unlinks it too, so a rank that dies leaves nothing in /dev/shm once any member saw it.
 *
 * A member that fails (rank 0 cannot make it, an attacher refuses it) has no segment to say so
 * in: it sends a one-byte "no" to every member, which each receives in a receive posted at the
 * setup's start (a receive needs no endpoint; only the failing member wires). Those receives
 * are also what waits on the members during setup, so a member that dies meanwhile is watched
 * and found (COHORT_WATCH_S) as for any receive. After a "no" the name stays until every member
 * has answered (attached, or said "no" itself), so that none misses it and waits for ever.
 *
 * Where the setup's call is the group's first collective, it also carries the settings every
 * member must share (settings.c), written in the header as each member attaches and compared
 * once all are in (check.c, cohort_coll_check_settle), with no message. A member whose settings
 * sent it down the message path never attaches: its agreement's first message, to group rank
 * r + 1, lands in a receive posted at the setup's start, and that member joins the agreement by
 * messages, which reaches the next one the same way; a failed setup agrees so too.
 *
 * Under COHORT_SHM_DEFER=K the group's first K calls that would take the segment run on
 * messages (every member counts the same calls, so they agree with no message), and the making
 * and attaching happen beside them, from their progress (cohort_shm_early), once the group's
 * settings are agreed; the segment's first call (the setup) then finds that done and only waits
 * for the members not attached yet. Off by default: it wires endpoints the segment does not need
 * (docs/bench-setup.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "coll/shm_seg.h"
#include "coll/coll_reduce.h"
#include "core/am.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/log.h"
#include "base/time.h"

#define COHORT_SHM_MAGIC 0xc0c05e70u
#define SHM_PAGE         4096u

/* Per data buffer, what its contents are: which call (number << 32 | fingerprint) and how many
 * bytes; written before SEQ is published, read after it is seen. */
enum { SHM_TAG_CALL, SHM_TAG_BYTES, SHM_TAGS };

/* A member's slot: its words, its tags and its two small buffers, 384 bytes, all slots side by
 * side after the header, the members' settings rows after them. A small call (a few floats, a
 * descriptor) touches only these and the header: about 1 KiB for a group of 2, 3.6 KiB for 8,
 * which a member maps in one fault (the kernel maps a present page's neighbours with it; in an
 * arena the heads of other groups share the page), where a slot of its own pages cost each
 * process a page fault per member. Larger calls use the members' large buffers (shm_big): in
 * an arena the block's body, elsewhere the pages after the head. */
typedef struct {
    uint64_t word[COHORT_SHM_WORDS];
    uint8_t pad[64 - 8 * COHORT_SHM_WORDS];
    uint64_t tag[2][SHM_TAGS];
    uint8_t pad2[64 - 16 * SHM_TAGS];
    uint8_t small[2][COHORT_SHM_SMALL];
} shm_slot_t;

/* The header: written by group rank 0 before it publishes ready (release); read by the others
 * after they see it (acquire). */
typedef struct {
    uint32_t magic;
    int32_t n;
    int32_t pid;        /* the creator's process, checked against group rank 0's card */
    uint32_t ready;     /* the rest of the header is there */
    uint64_t gid;       /* the group's id */
    uint64_t members;   /* a hash of its world ranks in group order */
    uint32_t nattached; /* attachers so far: the one that makes it n - 1 unlinks the name */
    uint8_t pad[28];
    uint8_t attached[COHORT_SHM_MAX_N]; /* member k mapped it and checked it */
    /* n slots, then member k's must-match settings (settings.c, COHORT_SETTINGS_FIELDS each),
     * written before attached[k]: the group's first collective agrees on them here when it
     * runs on the segment (shm_settings_row). */
    shm_slot_t slot[];
} shm_seg_t;

typedef enum { SEG_NONE, SEG_SETTING_UP, SEG_READY, SEG_FAILED } shm_seg_state_t;

/* Per group, this rank's view (comm->node_shm). */
typedef struct {
    shm_seg_state_t state;
    cohort_context_t *ctx;
    int me; /* this rank's group rank: its slot */
    shm_seg_t *seg;
    uint8_t *big;      /* the members' large buffers (shm_big) */
    size_t bytes;      /* the file mapped, where the segment is one (not in an arena) */
    int named;         /* the name may still be in /dev/shm: unlink it when setup ends here */
    int in_arena;      /* seg is a block of group rank 0's arena (mem/arena.h), not a file */
    int premade;       /* group rank 0 made and published it when the group was created, and
                        * is not in it yet (attached[0] is 0): its first call takes it */
    int due;           /* group rank 0's card is fetched at this rank's next first call on a
                        * segment, of whichever group (cohort_shm_prefetch_due) */
    char name[64];     /* known once group rank 0's pid is: a /dev/shm name ('/' first), or
                        * what the logs call a block of an arena */
    uint64_t calls;    /* calls numbered on the group */
    uint64_t finished; /* the last call that ended here */
    uint32_t deferred; /* calls that ran on messages instead (COHORT_SHM_DEFER) */
    int agreed;        /* the group's settings are agreed here: deferred calls may set it up */
    int early;         /* set up beside a deferred call: 1 made or attached here, -1 refused
                        * (logged; the setup call says "no"), 0 neither yet */
    int late;          /* COHORT_FAULT=shm_late: no setup beside deferred calls here */
} shm_group_t;

/* A member's "no" during setup: a step of its own, below the agreement's (-1 - round, round <
 * 32), so that neither the agreement's messages nor those of the algorithm a call takes instead
 * (cohort_coll_fall_back, from step 0) ever land in a "no" receive still posted on a member that
 * has not seen the verdict yet. */
enum { SHM_STEP_FAIL = -64 };

/* The name goes as soon as nobody needs it (ENOENT: someone else took it away already). */
static void shm_name_drop(shm_group_t *g)
{
    if (g->named) {
        if (!g->in_arena && g->name[0] == '/') {
            shm_unlink(g->name);
        }
        g->named = 0;
    }
}

static void shm_group_free(void *arg)
{
    shm_group_t *g = arg;

    if (g->due) {
        g->ctx->comm_made_due--;
    }
    shm_name_drop(g);
    if (g->seg != NULL) {
        /* The members that stay read this before they wire this rank or take its exit for a
         * death (shm_watch, cohort_comm_member_left): a member that reaches us only through
         * the segment gets no goodbye message at our finalize. guard_closed: finalize has
         * begun (the groups are freed before the context). Release: every word this rank
         * published before is seen first. */
        __atomic_store_n(&g->seg->slot[g->me].word[COHORT_SHM_BYE],
                         g->ctx->guard_closed || g->ctx->finalizing
                             ? (uint64_t)COHORT_COMM_MEMBER_FINALIZED
                             : (uint64_t)COHORT_COMM_MEMBER_FREED,
                         __ATOMIC_RELEASE);
        if (!g->in_arena) {
            munmap(g->seg, g->bytes);
        } else if (g->me == 0) {
            /* Not findable any more; its memory is taken again once every member let go. */
            cohort_arena_retire(g->ctx->arena, g->seg);
        }
    }
    free(g);
}

/* comm->node_shm_left: what member @a k wrote in its BYE word (nothing while not mapped). */
static int shm_group_left(void *arg, int k)
{
    const shm_group_t *g = arg;

    if (g->seg == NULL || k < 0 || k >= g->seg->n) {
        return COHORT_COMM_MEMBER_IN;
    }
    return (int)__atomic_load_n(&g->seg->slot[k].word[COHORT_SHM_BYE], __ATOMIC_ACQUIRE);
}

/* The head: the header, the slots, the settings rows. */
static size_t shm_head_bytes(int n)
{
    return sizeof(shm_seg_t) + (size_t)n * sizeof(shm_slot_t) +
           (size_t)n * COHORT_SETTINGS_FIELDS * sizeof(int64_t);
}

/* The large buffers, two per member. */
static size_t shm_body_bytes(int n)
{
    return (size_t)n * 2 * COHORT_SHM_SLOT;
}

/* A segment that is a file of its own: the large buffers begin on the first page after the
 * head. */
static size_t shm_big_offset(int n)
{
    return (shm_head_bytes(n) + SHM_PAGE - 1) / SHM_PAGE * SHM_PAGE;
}

static size_t shm_seg_bytes(int n)
{
    return shm_big_offset(n) + shm_body_bytes(n);
}

/* Member @a k's large buffer @a parity. */
static uint8_t *shm_big(const shm_group_t *g, int k, int parity)
{
    return g->big + ((size_t)k * 2 + (size_t)parity) * COHORT_SHM_SLOT;
}

/* Member @a k's settings row, after the @a n slots. */
static int64_t *shm_settings_row(shm_seg_t *seg, int n, int k)
{
    return (int64_t *)&seg->slot[n] + (size_t)k * COHORT_SETTINGS_FIELDS;
}

size_t cohort_shm_call_extra(int n)
{
    return (size_t)n + 4 * (size_t)n * sizeof(cohort_xfer_t) + 64;
}

cohort_status_t cohort_shm_group_make(cohort_comm_t *comm)
{
    shm_group_t *g = comm->node_shm;

    if (g == NULL) {
        g = calloc(1, sizeof(*g));
        if (g == NULL) {
            return COHORT_ERR_NO_MEMORY;
        }
        g->ctx = comm->ctx;
        g->me = comm->rank;
        comm->node_shm = g;
        comm->node_shm_free = shm_group_free;
        comm->node_shm_left = shm_group_left;
    }
    return COHORT_OK;
}

int cohort_shm_group_state(const cohort_comm_t *comm)
{
    const shm_group_t *g = comm->node_shm;

    if (g == NULL) {
        return COHORT_SEGMENT_NONE;
    }
    switch (g->state) {
    case SEG_SETTING_UP:
        return COHORT_SEGMENT_SETTING_UP;
    case SEG_READY:
        return COHORT_SEGMENT_READY;
    case SEG_FAILED:
        return COHORT_SEGMENT_FAILED;
    default:
        return COHORT_SEGMENT_NONE;
    }
}

uint64_t cohort_shm_call_number(cohort_comm_t *comm)
{
    shm_group_t *g = comm->node_shm;

    return ++g->calls;
}

void cohort_shm_prefetch(cohort_comm_t *comm)
{
    cohort_peer_t *peer = cohort_peer_get(comm->ctx, cohort_comm_world_rank(comm, 0));

    /* Group rank 0's pid names the segment: its card is fetched while the call is queued. */
    if (comm->rank != 0 && peer != NULL) {
        cohort_peer_know(peer);
    }
}

void cohort_shm_prefetch_due(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;

    if (ctx->comm_made_due == 0) {
        return;
    }
    cohort_list_for_each(pos, tmp, &ctx->comm_list)
    {
        cohort_comm_t *comm = cohort_container_of(pos, cohort_comm_t, link);
        shm_group_t *g = comm->node_shm;

        if (g != NULL && g->due) {
            g->due = 0;
            ctx->comm_made_due--;
            cohort_shm_prefetch(comm);
        }
    }
}

cohort_status_t cohort_shm_call_start(cohort_request_t *req, cohort_shm_call_t *c, char *p)
{
    cohort_comm_t *comm = req->comm;
    cohort_coll_base_t *b = cohort_coll_base(req);
    shm_group_t *g = comm->node_shm;

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

/* A hash of the members (FNV-1a over their world ranks), which the header carries: a segment
 * of another group with the same id and size is still refused. */
static uint64_t shm_members_hash(const cohort_comm_t *comm)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (int k = 0; k < comm->size; k++) {
        h = (h ^ (uint64_t)(uint32_t)cohort_comm_world_rank(comm, k)) * 0x100000001b3ull;
    }
    return h;
}

static void shm_name(const cohort_comm_t *comm, shm_group_t *g, int32_t pid, int arena)
{
    /* In an arena nothing is named: what the logs call it. */
    if (arena) {
        snprintf(g->name, sizeof(g->name), "block %016llx of process %d's arena",
                 (unsigned long long)comm->id, (int)pid);
        return;
    }
    /* The context's instance as the PMIx key has it: two contexts of one process make groups
     * of the same id, which must not meet in one segment. */
    snprintf(g->name, sizeof(g->name), "/cohort-%d-%d-%016llx", (int)pid, comm->ctx->instance,
             (unsigned long long)comm->id);
}

/* This rank's must-match settings, where the call agrees on them in the setup (else NULL). */
static const int64_t *shm_settings(cohort_request_t *req)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    return b->settle ? b->check->mine + COHORT_CHECK_SETTINGS : NULL;
}

/* Member @a rank's settings into its row of the head (NULL: none ride the setup). */
static void shm_settings_put(const cohort_comm_t *comm, shm_group_t *g, int rank,
                             const int64_t *settings)
{
    if (settings != NULL) {
        memcpy(shm_settings_row(g->seg, comm->size, rank), settings,
               COHORT_SETTINGS_FIELDS * sizeof(int64_t));
    }
}

/* The header, identity last (the others read it once they see ready); @a in: group rank 0 is
 * in it (attached[0]), else it says so at its first call (shm_claim). */
static void shm_header_write(cohort_context_t *ctx, cohort_comm_t *comm, shm_group_t *g,
                             const int64_t *settings, int in)
{
    g->seg->magic = COHORT_SHM_MAGIC;
    g->seg->n = comm->size;
    /* The fault names another live process: the attachers must refuse the segment. */
    g->seg->pid = (int32_t)(cohort_fault(ctx, COHORT_FAULT_SHM_PID) ? getppid() : getpid());
    g->seg->gid = comm->id;
    g->seg->members = shm_members_hash(comm);
    shm_settings_put(comm, g, comm->rank, settings);
    g->seg->attached[0] = (uint8_t)in;
    __atomic_store_n(&g->seg->ready, 1, __ATOMIC_RELEASE);
}

/* Whether nobody reads a retired block any more: every member that attached has said it let
 * go (its BYE word). One that died never says so: its block stays taken until finalize. */
static int shm_block_reusable(const void *blk)
{
    const shm_seg_t *seg = blk;

    for (int k = 1; k < seg->n && k < COHORT_SHM_MAX_N; k++) {
        if (__atomic_load_n(&seg->attached[k], __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&seg->slot[k].word[COHORT_SHM_BYE], __ATOMIC_ACQUIRE) ==
                COHORT_COMM_MEMBER_IN) {
            return 0;
        }
    }
    return 1;
}

/* Group rank 0 with an arena: a block of it, written, then published under the group's id. A
 * block used before is cleared where a member looks before it writes (the header, each slot's
 * words and tags); the data buffers are read only as far as their tags say. */
static int shm_create_in_arena(cohort_context_t *ctx, cohort_comm_t *comm, shm_group_t *g,
                               const int64_t *settings, int in)
{
    int fresh = 0;
    void *body = NULL;
    shm_seg_t *seg = cohort_arena_take(ctx->arena, shm_head_bytes(comm->size),
                                       shm_body_bytes(comm->size), shm_block_reusable, &fresh,
                                       &body);

    if (seg == NULL) {
        if (!in) {
            return 0; /* at creation: the first call tries again, and says so if it fails */
        }
        cohort_error(ctx,
                     "%s: shared segment: this process's arena is full (too many live groups "
                     "on this node); the group runs on messages",
                     comm->label);
        return 0;
    }
    g->seg = seg;
    g->big = body;
    /* A fresh head is all zero, and in memory already (the arena puts its heads' pages there
     * as it grows); a used one is cleared where a member looks before it writes. */
    if (!fresh) {
        memset(seg, 0, sizeof(*seg));
        for (int k = 0; k < comm->size; k++) {
            memset(&seg->slot[k], 0, offsetof(shm_slot_t, small));
        }
    }
    g->in_arena = 1;
    g->named = 1; /* "findable": the setup's failure path waits on it as on a name */
    shm_header_write(ctx, comm, g, settings, in);
    cohort_arena_publish(ctx->arena, seg, comm->id);
    return 1;
}

/* Group rank 0 at its first call on a segment it made at the group's creation: in, with its
 * settings (NULL: none ride it), written before it says so (the others compare them once
 * every member is in). */
static void shm_claim(cohort_comm_t *comm, shm_group_t *g, const int64_t *settings)
{
    shm_settings_put(comm, g, comm->rank, settings);
    g->premade = 0;
    __atomic_store_n(&g->seg->attached[0], 1, __ATOMIC_RELEASE);
}

/* Group rank 0: make it, exclusively, and publish its identity, with this rank's settings
 * (NULL: none ride it). @return whether it worked. */
static int shm_create_as(cohort_context_t *ctx, cohort_comm_t *comm, shm_group_t *g,
                         const int64_t *settings)
{
    int fd;

    if (g->premade) {
        shm_claim(comm, g, settings);
        return 1;
    }
    shm_name(comm, g, (int32_t)getpid(), ctx->arena != NULL);
    if (ctx->arena != NULL) {
        return shm_create_in_arena(ctx, comm, g, settings, 1);
    }
    g->bytes = shm_seg_bytes(comm->size);
    fd = shm_open(g->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        cohort_error(ctx, "%s: shared segment %s: %s%s", comm->label, g->name, strerror(errno),
                     errno == EEXIST ? " (left by a process that died, or another cohort context "
                                       "of this process made the same group)"
                                     : "");
        return 0;
    }
    g->named = 1;
    if (ftruncate(fd, (off_t)g->bytes) != 0 ||
        (g->seg = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        cohort_error(ctx, "%s: shared segment %s of %zu bytes: %s", comm->label, g->name, g->bytes,
                     strerror(errno));
        g->seg = NULL;
        close(fd);
        shm_name_drop(g);
        return 0;
    }
    close(fd);
    g->big = (uint8_t *)g->seg + shm_big_offset(comm->size);
    /* The head in memory at once, in one system call: the members then find its pages there
     * and map them with their first read, instead of each allocating its slot's page in a
     * fault of its own. */
    cohort_arena_populate(g->seg, shm_head_bytes(comm->size));
    shm_header_write(ctx, comm, g, settings, 1);
    return 1;
}

void cohort_shm_created(cohort_comm_t *comm)
{
    cohort_context_t *ctx = comm->ctx;
    shm_group_t *g;

    /* Not the world group, made at init before any other (ctx->world is not set yet): its
     * first call does it all, as before, and init asks nothing of every rank's peers. */
    if (ctx->world == NULL || comm->size < 2 || comm->size > COHORT_SHM_MAX_N ||
        !(cohort_coll_node_local(comm) & COHORT_NODE_SHM)) {
        return;
    }
    if (comm->rank != 0) {
        if (cohort_shm_group_make(comm) == COHORT_OK) {
            ((shm_group_t *)comm->node_shm)->due = 1;
            ctx->comm_made_due++;
        }
        return;
    }
    /* Only a block of the arena: a file per group made at creation would be a name in
     * /dev/shm for every group, used or not, left behind by a process that dies. */
    if (ctx->arena == NULL || cohort_shm_group_make(comm) != COHORT_OK) {
        return;
    }
    g = comm->node_shm;
    shm_name(comm, g, (int32_t)getpid(), 1);
    g->premade = shm_create_in_arena(ctx, comm, g, NULL, 0);
}

static int shm_create(cohort_request_t *req, shm_group_t *g)
{
    return shm_create_as(req->ctx, req->comm, g, shm_settings(req));
}

/* The others: 1 once mapped and checked, 0 while not there yet (polled), -1 refused (logged,
 * for the call named @a what). */
static int shm_attach_as(cohort_context_t *ctx, cohort_comm_t *comm, shm_group_t *g,
                         cohort_peer_t *peer0, const char *what_call)
{
    int32_t pid0 = peer0->pid;
    const char *why = NULL;
    char what[160];
    struct stat st;
    int fd;

    if (g->seg == NULL) {
        shm_name(comm, g, pid0, peer0->arena.fd >= 0);
        if (cohort_fault(ctx, COHORT_FAULT_SHM)) {
            why = "COHORT_FAULT";
            goto refused;
        }
        if (peer0->arena.fd >= 0) {
            size_t len = 0, body_len = 0;
            void *body = NULL;
            /* Its arena is mapped once, by the first of its groups that needs it; where that
             * failed, its later groups do not try again (the same answer, at a system call's
             * cost each) and say so at debug level: the first one's error line said why. */
            if (peer0->view == NULL) {
                cohort_status_t st = COHORT_ERR_UNSUPPORTED;
                if (peer0->view_refused) {
                    cohort_debug(ctx,
                                 "%s %s: group rank 0's arena could not be mapped before; this "
                                 "call runs on messages on every member, and so do the group's "
                                 "later calls",
                                 comm->label, what_call);
                    return -1;
                }
                if (cohort_fault(ctx, COHORT_FAULT_SHM_VIEW)) {
                    snprintf(what, sizeof(what), "COHORT_FAULT=shm_view");
                } else {
                    st = cohort_arena_view_open(pid0, &peer0->arena, &peer0->view, what,
                                                sizeof(what));
                }
                if (st != COHORT_OK) {
                    peer0->view_refused = 1;
                    why = what;
                    goto refused;
                }
            }
            g->seg = cohort_arena_view_find(peer0->view, comm->id, &len, &body, &body_len);
            if (g->seg == NULL) {
                return 0; /* group rank 0 has not published it yet */
            }
            if (len < shm_head_bytes(comm->size) || body_len < shm_body_bytes(comm->size)) {
                g->seg = NULL;
                why = "its block is smaller than the group needs";
                goto refused;
            }
            g->big = body;
            g->in_arena = 1;
            goto mapped;
        }
        g->bytes = shm_seg_bytes(comm->size);
        fd = shm_open(g->name, O_RDWR, 0);
        if (fd < 0) {
            if (errno == ENOENT) {
                return 0; /* group rank 0 has not made it yet */
            }
            why = strerror(errno);
            goto refused;
        }
        /* Made but not sized yet: looked at again at the next pass. */
        if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (size_t)st.st_size < g->bytes) {
            int not_yet = fstat(fd, &st) == 0 && st.st_uid == geteuid();
            close(fd);
            if (not_yet) {
                return 0;
            }
            why = "it belongs to another user";
            goto refused;
        }
        g->seg = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (g->seg == MAP_FAILED) {
            g->seg = NULL;
            why = strerror(errno);
            goto refused;
        }
        g->big = (uint8_t *)g->seg + shm_big_offset(comm->size);
    }
mapped:
    if (__atomic_load_n(&g->seg->ready, __ATOMIC_ACQUIRE) == 0) {
        return 0;
    }
    if (g->seg->magic != COHORT_SHM_MAGIC || g->seg->n != comm->size || g->seg->gid != comm->id ||
        g->seg->members != shm_members_hash(comm)) {
        why = "not the segment expected: another group's or another version's";
    } else if (g->seg->pid != pid0) {
        snprintf(what, sizeof(what), "it names process %d: not the one group rank 0 published",
                 (int)g->seg->pid);
        why = what;
    }
    if (why == NULL) {
        return 1;
    }
    if (!g->in_arena) {
        munmap(g->seg, g->bytes);
    }
    g->seg = NULL;
    g->in_arena = 0;
refused:
    cohort_error(ctx,
                 "%s %s: cannot reach group rank 0's shared segment %s (%s); this call runs "
                 "on messages on every member, and so do the group's later calls",
                 comm->label, what_call, g->name, why);
    return -1;
}

/* This rank mapped and checked it: it says so in the header; the last attacher takes the
 * name away (nobody needs it any more). */
static void shm_attached(cohort_comm_t *comm, shm_group_t *g)
{
    g->named = 1; /* until the last attacher unlinks it, or this setup ends */
    __atomic_store_n(&g->seg->attached[comm->rank], 1, __ATOMIC_RELEASE);
    if (__atomic_add_fetch(&g->seg->nattached, 1, __ATOMIC_ACQ_REL) == (uint32_t)comm->size - 1) {
        shm_name_drop(g);
    }
}

int cohort_shm_defer(cohort_comm_t *comm)
{
    shm_group_t *g = comm->node_shm;

    /* Only before the segment's first call: calls is counted alike on every member. */
    if (g->calls != 0 || g->deferred >= (uint32_t)comm->ctx->cfg.shm_defer) {
        return 0;
    }
    g->deferred++;
    return 1;
}

void cohort_shm_agreed(cohort_comm_t *comm)
{
    /* A group whose first collective took no segment has no record yet: one is made for the
     * flag (a few words; its segment is made only by a call). */
    if (comm->node_local > 0 && cohort_shm_group_make(comm) == COHORT_OK) {
        ((shm_group_t *)comm->node_shm)->agreed = 1;
    }
}

void cohort_shm_early_drop(cohort_comm_t *comm)
{
    shm_group_t *g = comm->node_shm;

    /* Known once group rank 0's pid is (shm_name): nobody attaches to a failed group's
     * segment, so even a member that never reached it may take the name away. */
    if (g != NULL && g->state != SEG_READY && g->name[0] != '\0') {
        g->named = 1;
        shm_name_drop(g);
    }
}

void cohort_shm_early(cohort_comm_t *comm)
{
    shm_group_t *g = comm->node_shm;
    cohort_peer_t *peer0;
    int got;

    /* Not before the settings are agreed: a member whose COHORT_SHM_DEFER differs runs the
     * setup in its first call, and must find nobody in the segment ahead of it. */
    if (g == NULL || !g->agreed || g->early != 0 || g->calls != 0 || comm->node_off) {
        return;
    }
    /* The fault: this rank leaves it to the setup call, where it is late for the others. */
    if (g->late || cohort_fault(comm->ctx, COHORT_FAULT_SHM_LATE)) {
        g->late = 1;
        return;
    }
    if (comm->rank == 0) {
        g->early = shm_create_as(comm->ctx, comm, g, NULL) ? 1 : -1;
        return;
    }
    peer0 = cohort_peer_get(comm->ctx, cohort_comm_world_rank(comm, 0));
    if (peer0 == NULL) {
        return;
    }
    cohort_peer_know(peer0);
    if (peer0->pid == 0) {
        return; /* its card is on the way, or it failed: the setup call tells */
    }
    got = shm_attach_as(comm->ctx, comm, g, peer0, "a deferred call");
    if (got > 0) {
        shm_attached(comm, g);
    }
    g->early = got;
}

/* The setup's end here: the "no" receives still waiting are taken back (nobody sends them
 * once every member attached), and the name goes. */
static void shm_setup_end(cohort_request_t *req, shm_group_t *g, shm_seg_state_t state)
{
    cohort_xfer_t *x = cohort_coll_base(req)->xfers;

    for (int k = 0; k < req->comm->size; k++) {
        if (x[k].req != NULL && !x[k].done) {
            cohort_xfer_cancel(&x[k], COHORT_OK);
        }
    }
    cohort_coll_base(req)->rx_standby = 0;
    shm_name_drop(g);
    g->state = state;
}

/* Whether a member said "no" (a receive finished; only group rank 0's when @a creator_only);
 * an error there (the member is dead) is the setup's status whoever it was. */
static cohort_status_t shm_setup_heard(cohort_request_t *req, int creator_only)
{
    cohort_xfer_t *x = cohort_coll_base(req)->xfers;

    for (int k = 0; k < req->comm->size; k++) {
        if (x[k].req != NULL && x[k].done && x[k].status != COHORT_OK) {
            return x[k].status;
        }
    }
    for (int k = 0; k < (creator_only ? 1 : req->comm->size); k++) {
        if (x[k].req != NULL && x[k].done) {
            return COHORT_ERR_UNSUPPORTED;
        }
    }
    return COHORT_OK;
}

/* The settings by messages (check.c's agreement, joined), where they ride this setup: a member
 * took the message path (its first message came), or the setup failed and every member says
 * so. COHORT_OK once agreed alike (or nothing to agree), INPROGRESS, MISMATCH (the group
 * revoked) or a transfer's error. */
static cohort_status_t shm_settle_msgs(cohort_request_t *req, cohort_shm_call_t *c)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    cohort_status_t status;

    if (!b->settle || c->settled) {
        return COHORT_OK;
    }
    if (!c->joined) {
        c->joined = 1;
        status = cohort_coll_check_join(req, b->check);
        if (status != COHORT_OK) {
            return status;
        }
    }
    status = cohort_coll_check_progress(req, b->check);
    c->settled = status == COHORT_OK;
    return status;
}

/* During the setup's waits: a member on the message path is joined. */
static cohort_status_t shm_settle_trip(cohort_request_t *req, cohort_shm_call_t *c)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    if (!b->settle || c->settled || (!c->joined && !cohort_coll_check_tripped(b->check))) {
        return COHORT_OK;
    }
    return shm_settle_msgs(req, c);
}

/* Whether every other member attached or said "no" (or its receive failed: it is dead). */
static int shm_all_answered(cohort_request_t *req, const shm_group_t *g)
{
    const cohort_xfer_t *x = cohort_coll_base(req)->xfers;

    for (int k = 0; k < req->comm->size; k++) {
        if (k != req->comm->rank && !(x[k].req != NULL && x[k].done) &&
            !(g->seg != NULL && __atomic_load_n(&g->seg->attached[k], __ATOMIC_ACQUIRE))) {
            return 0;
        }
    }
    return 1;
}

/* The setup failed here with @a status; an agreed one (UNSUPPORTED: a member's "no") waits for
 * the settings first, which every member then agrees on by messages. */
static cohort_status_t shm_setup_failed(cohort_request_t *req, cohort_shm_call_t *c, shm_group_t *g,
                                        cohort_status_t status)
{
    cohort_status_t st;

    c->sround = 4;
    /* The name stays until every member has answered (attached, or said "no"): one still
     * looking for it must find it and give its own verdict, not miss it and hang. */
    if (status == COHORT_ERR_UNSUPPORTED && g->state == SEG_SETTING_UP && g->named &&
        !shm_all_answered(req, g)) {
        return cohort_shm_wait(req);
    }
    if (g->state == SEG_SETTING_UP) {
        shm_setup_end(req, g, SEG_FAILED);
    }
    if (status != COHORT_ERR_UNSUPPORTED) {
        return status;
    }
    st = shm_settle_msgs(req, c);
    if (st == COHORT_INPROGRESS) {
        return cohort_shm_wait(req);
    }
    return st == COHORT_OK ? status : st;
}

/* The first call: make or reach the segment, then wait until every member has it, or one said
 * it cannot. No message when it works. */
static cohort_status_t shm_setup(cohort_request_t *req, cohort_shm_call_t *c, shm_group_t *g)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    cohort_xfer_t *x = b->xfers;
    int n = req->comm->size, me = req->comm->rank;
    cohort_status_t status = COHORT_OK;

    if (c->sround == 4) {
        return shm_setup_failed(req, c, g, COHORT_ERR_UNSUPPORTED);
    }
    if (c->sround == 0) {
        for (int k = 0; k < n && status == COHORT_OK; k++) {
            if (k != me) {
                status = cohort_coll_recv(req, &x[k], k, SHM_STEP_FAIL, &c->oks[k], 1);
            }
        }
        b->rx_standby = 1;
        if (status == COHORT_OK && b->settle) {
            status = cohort_coll_check_arm(req, b->check);
        }
        if (status != COHORT_OK) {
            return shm_setup_failed(req, c, g, status);
        }
        /* Made or reached beside a deferred call already, or refused there (logged then). */
        if (g->early != 0) {
            c->ok = g->early > 0 ? 1 : 2;
        } else {
            c->ok = me != 0 ? 0 : shm_create(req, g) ? 1 : 2;
        }
        c->sround = 1;
    }
    status = shm_settle_trip(req, c);
    if (status != COHORT_OK && status != COHORT_INPROGRESS) {
        return shm_setup_failed(req, c, g, status);
    }
    if (c->sround == 1 && c->ok == 0) {
        cohort_peer_t *peer0 = cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, 0));
        int got = 0;
        status = COHORT_OK;
        if (peer0 == NULL) {
            status = COHORT_ERR_NO_MEMORY;
        } else {
            cohort_peer_know(peer0);
            if (peer0->pid == 0 && peer0->state != COHORT_PEER_LOOKING_UP) {
                status = peer0->state == COHORT_PEER_FAILED ? peer0->error : COHORT_ERR_PEER_FAILED;
            } else if (peer0->pid != 0) {
                /* Tried even after another member's "no": its own verdict is logged here. */
                got = shm_attach_as(req->ctx, req->comm, g, peer0, cohort_coll_names[b->args.coll]);
                /* Only group rank 0's "no" ends the wait for the name: another's leaves it
                 * there until every member answered (shm_setup_failed), so that this rank
                 * finds it and answers too. */
                if (got == 0) {
                    status = shm_setup_heard(req, 1);
                }
            }
        }
        if (status != COHORT_OK) {
            return shm_setup_failed(req, c, g, status); /* a "no": UNSUPPORTED, alike */
        }
        if (got == 0) {
            return cohort_shm_wait(req);
        }
        c->ok = got > 0 ? 1 : 2;
        if (got > 0) {
            shm_settings_put(req->comm, g, req->comm->rank, shm_settings(req));
            shm_attached(req->comm, g);
        }
    }
    if (c->sround == 1) {
        c->sround = c->ok == 1 ? 2 : 3;
    }
    if (c->sround == 3) {
        /* This rank cannot have it: every member hears so, and fails the call alike. */
        status = COHORT_OK;
        if (!c->posted) {
            for (int k = 0; k < n && status == COHORT_OK; k++) {
                if (k != me) {
                    status = cohort_coll_send(req, &x[n + k], k, SHM_STEP_FAIL, &c->ok, 1);
                }
            }
            c->posted = 1;
        }
        if (status == COHORT_OK) {
            status = cohort_coll_xfers_wait(x + n, n);
        }
        if (status == COHORT_INPROGRESS) {
            return status;
        }
        return shm_setup_failed(req, c, g, status == COHORT_OK ? COHORT_ERR_UNSUPPORTED : status);
    }
    for (int k = 0; k < n; k++) {
        if (__atomic_load_n(&g->seg->attached[k], __ATOMIC_ACQUIRE) == 0) {
            status = shm_setup_heard(req, 0);
            if (status != COHORT_OK) {
                return shm_setup_failed(req, c, g, status);
            }
            return cohort_shm_wait(req);
        }
    }
    /* Every member took this path: the settings are compared here, alike on every member. */
    if (b->settle && !c->settled) {
        status = cohort_coll_check_settle(req, b->check,
                                          shm_settings_row(g->seg, req->comm->size, 0));
        c->settled = 1;
        if (status != COHORT_OK) {
            return shm_setup_failed(req, c, g, status);
        }
    }
    shm_setup_end(req, g, SEG_READY);
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
    /* Calls before it were deferred (COHORT_SHM_DEFER): the group's first one carried the
     * settings by messages, and nobody touches the segment before they are agreed here, so
     * that a member whose COHORT_SHM_DEFER differs (it set the segment up in its first call,
     * with the settings in the header) is answered by messages alike (check.c). */
    if (c->setup && g->deferred > 0 && !g->agreed && c->sround == 0) {
        return cohort_shm_wait(req);
    }
    if (c->setup && (g->state == SEG_SETTING_UP || c->sround == 4)) {
        status = shm_setup(req, c, g);
        if (status != COHORT_OK && status != COHORT_ERR_UNSUPPORTED) {
            return status; /* INPROGRESS, or a member failed: the group is revoked */
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
        cohort_coll_base(req)->seg_refused = 1;
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
    return (c->s & 0xffffffffu) << 32 | cohort_coll_base(req)->fingerprint;
}

uint8_t *cohort_shm_buf(cohort_request_t *req, const cohort_shm_call_t *c, int k)
{
    shm_group_t *g = req->comm->node_shm;

    /* Every member of a call puts as many bytes (the tags say so, checked before anything is
     * read), so every member picks the same buffer for the same call. */
    if (c->bytes <= COHORT_SHM_SMALL) {
        return g->seg->slot[k].small[c->s & 1];
    }
    return shm_big(g, k, (int)(c->s & 1));
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

/* A wait in the segment has no receive that notify.c could watch, and the group may hold no
 * endpoint to the members it waits for (none is needed to reach the segment): once it has
 * lasted COHORT_WATCH_S, the members not heard from are wired, so that a death shows. */
static void shm_watch(cohort_request_t *req, cohort_shm_call_t *c)
{
    double watch = req->ctx->cfg.watch_s;

    if (watch <= 0 || cohort_time_now() - c->since < watch) {
        return;
    }
    for (int k = 0; k < req->comm->size; k++) {
        /* One that let go of the segment published all it ever will: wiring it now could only
         * meet its exit, which is no death. */
        if ((c->wait_member < 0 || k == c->wait_member) && k != req->comm->rank &&
            cohort_shm_word(req, k, c->wait_word) < c->wait_value &&
            cohort_shm_word(req, k, COHORT_SHM_BYE) == COHORT_COMM_MEMBER_IN) {
            cohort_peer_t *peer = cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, k));
            if (cohort_peer_watch(peer)) {
                cohort_debug(req->ctx,
                             "watching world rank %d: %s has waited %.1f s in the "
                             "shared segment (COHORT_WATCH_S)",
                             peer->rank, req->comm->label, cohort_time_now() - c->since);
            }
        }
    }
}

/* Member @a k's word (every member's when k < 0) against @a v, noted for a description. */
static int shm_await(cohort_request_t *req, cohort_shm_call_t *c, int k, int w, uint64_t v)
{
    if (shm_word_reached(req, k, w, v)) {
        c->wait_word = -1;
        return 1;
    }
    if (c->wait_word != w || c->wait_value != v || c->wait_member != k) {
        c->since = cohort_time_now();
    } else {
        shm_watch(req, c);
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
        if (c->setup && g->state == SEG_SETTING_UP) {
            used += (size_t)snprintf(buf + used, len - used, "; setting up the shared segment %s",
                                     g->name[0] != '\0' ? g->name : "(group rank 0's pid unknown)");
            for (int k = 0; k < n && g->seg != NULL && used < len; k++) {
                if (__atomic_load_n(&g->seg->attached[k], __ATOMIC_ACQUIRE) == 0) {
                    used += (size_t)snprintf(buf + used, len - used, "%s group rank %d (world %d)",
                                             named++ == 0 ? ", not attached yet:" : ",", k,
                                             cohort_comm_world_rank(req->comm, k));
                }
            }
        }
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
    shm_group_t *g = req->comm != NULL ? req->comm->node_shm : NULL;

    /* Given up during setup: the name goes now, not when the group is freed. */
    if (g != NULL && c->setup && g->state == SEG_SETTING_UP) {
        shm_name_drop(g);
    }

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
    c->bytes = len;
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
