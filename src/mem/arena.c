/* A process's shared arena (arena.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "base/kernel.h"
#include "mem/arena.h"

#define ARENA_MAGIC 0xc0a7e9a6u
/* Address space, not memory: the file is sparse, a page costs only once written. A block's
 * body is a group's large buffers, 128 KiB per member (coll/shm_seg.h), so this holds about
 * 1,000 live groups of 2, 250 of 8 or 60 of 32 (a rank is group rank 0 of at most a few tens
 * in a training layout). Each process of the node that has a group with this one as rank 0
 * maps it too, so it is kept small enough for 32 or more of them under a limit on address
 * space. */
#define ARENA_BYTES ((size_t)256 << 20)
#define ARENA_PAGE  4096u
/* Heads are placed on cache lines, one after another, in the heads' part (after the
 * directory): 8 MiB, room for the heads of more live blocks than the directory allows. */
#define ARENA_LINE        64u
#define ARENA_HEADS_BYTES ((size_t)8 << 20)
#define ARENA_HEADS_STEP  (16u << 10) /* put in memory this much at a time */
/* Directory entries: open addressing on the id, a tombstone where a block was retired. */
#define ARENA_DIR  2048u
#define ARENA_TOMB UINT64_MAX

typedef struct {
    uint64_t id;       /* written last (release), read first (acquire); 0 never used, TOMB retired */
    uint32_t head;     /* the head: its byte offset in the arena, and its length */
    uint32_t head_len;
    uint32_t page;     /* the body: its first page and its pages (0: none) */
    uint32_t pages;
} arena_entry_t;

/* The arena's first pages, read by every process that maps it. */
typedef struct {
    uint32_t magic;
    int32_t pid;
    uint64_t token;
    uint64_t bytes;
    uint8_t pad[40];
    arena_entry_t dir[ARENA_DIR];
} arena_head_t;

#define ARENA_FIRST_PAGE ((uint32_t)((sizeof(arena_head_t) + ARENA_PAGE - 1) / ARENA_PAGE))
#define ARENA_HEADS_AT   ((size_t)ARENA_FIRST_PAGE * ARENA_PAGE)
#define ARENA_BODY_PAGE  ((uint32_t)((ARENA_HEADS_AT + ARENA_HEADS_BYTES) / ARENA_PAGE))

/* The owner's own record of a block (not shared). */
typedef struct {
    uint32_t head, head_len; /* as in its directory entry */
    uint32_t page, pages;
    int live;     /* taken and not retired */
    uint32_t dir; /* its entry, once published (else ARENA_DIR) */
} arena_block_t;

struct cohort_arena {
    int fd;
    arena_head_t *head;
    uint32_t next_head; /* the heads' part is never used from here on (a byte offset) */
    uint32_t populated; /* ... and its pages are in memory up to here */
    uint32_t next_page; /* nor the bodies' from this page */
    uint32_t nblocks, cap;
    uint32_t live; /* blocks taken and not retired: at most half the directory, so that a
                    * lookup's probe stays short and every published block has an entry */
    arena_block_t *blocks;
};

struct cohort_arena_view {
    const arena_head_t *head;
    size_t bytes;
};

/* Whether a process on this node may take our descriptor: pidfd_getfd works, and Yama's scope,
 * which above 0 lets only a parent take from its children, is 0. */
static int arena_takable(char *why, size_t whylen)
{
    int err = 0, scope;

    if (!cohort_kernel_fd_share(&err)) {
        snprintf(why, whylen, "pidfd_getfd: %s", strerror(err));
        return 0;
    }
    scope = cohort_kernel_ptrace_scope();
    if (scope > 0) {
        snprintf(why, whylen, "kernel.yama.ptrace_scope is %d", scope);
        return 0;
    }
    return 1;
}

static uint64_t arena_token(void)
{
    uint64_t t = 0;

    if (getrandom(&t, sizeof(t), GRND_NONBLOCK) != (ssize_t)sizeof(t)) {
        t = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&t ^ (uint64_t)time(NULL);
    }
    return t != 0 ? t : 1;
}

void cohort_arena_open(cohort_arena_t **a_p, cohort_arena_ref_t *ref, char *why, size_t whylen)
{
    cohort_arena_t *a;
    void *m;

    *a_p = NULL;
    ref->fd = -1;
    ref->reserved = 0;
    ref->token = 0;
    if (!arena_takable(why, whylen)) {
        return;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        snprintf(why, whylen, "out of memory");
        return;
    }
    a->fd = memfd_create("cohort-arena", MFD_CLOEXEC);
    if (a->fd < 0 || ftruncate(a->fd, (off_t)ARENA_BYTES) != 0) {
        snprintf(why, whylen, "%s: %s", a->fd < 0 ? "memfd_create" : "ftruncate", strerror(errno));
        goto err;
    }
    m = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (m == MAP_FAILED) {
        snprintf(why, whylen, "mmap of %zu bytes: %s", ARENA_BYTES, strerror(errno));
        goto err;
    }
    a->head = m;
    a->head->pid = (int32_t)getpid();
    a->head->token = arena_token();
    a->head->bytes = ARENA_BYTES;
    __atomic_store_n(&a->head->magic, ARENA_MAGIC, __ATOMIC_RELEASE);
    a->next_head = (uint32_t)ARENA_HEADS_AT;
    /* The directory and the first heads in memory now, at init (68 KiB; 12-36 us measured
     * here), not page by page in the first groups' creation and first calls: a publish wrote
     * each into a page of its own (the directory is hashed by id), which the owner allocated
     * and each member mapped in a fault of its own (issue 37: 5% of the ranks' CPU over
     * create + first at 16 ranks). */
    cohort_arena_populate(a->head, ARENA_HEADS_AT + ARENA_HEADS_STEP);
    a->populated = (uint32_t)(ARENA_HEADS_AT + ARENA_HEADS_STEP);
    a->next_page = ARENA_BODY_PAGE;
    ref->fd = a->fd;
    ref->token = a->head->token;
    *a_p = a;
    return;
err:
    if (a->fd >= 0) {
        close(a->fd);
    }
    free(a);
}

void cohort_arena_close(cohort_arena_t *a)
{
    if (a == NULL) {
        return;
    }
    /* The processes that mapped it keep its memory until they let go. */
    munmap(a->head, ARENA_BYTES);
    close(a->fd);
    free(a->blocks);
    free(a);
}

static arena_block_t *arena_block_of(cohort_arena_t *a, const void *head)
{
    size_t off = (size_t)((const uint8_t *)head - (const uint8_t *)a->head);

    for (uint32_t i = 0; i < a->nblocks; i++) {
        if (a->blocks[i].head == off) {
            return &a->blocks[i];
        }
    }
    return NULL;
}

static void *arena_at(const cohort_arena_t *a, size_t off)
{
    return (uint8_t *)a->head + off;
}

/* A retired block nobody reads any more (@a reusable), of exactly the @a head_len and @a pages
 * asked or, with @a larger, of at least both and more of one; NULL when there is none. */
static arena_block_t *arena_retired(cohort_arena_t *a, uint32_t head_len, uint32_t pages,
                                    int larger, int (*reusable)(const void *head))
{
    for (uint32_t i = 0; i < a->nblocks; i++) {
        arena_block_t *r = &a->blocks[i];
        int exact = r->head_len == head_len && r->pages == pages;
        if (!r->live &&
            (larger ? !exact && r->head_len >= head_len && r->pages >= pages : exact) &&
            reusable(arena_at(a, r->head))) {
            return r;
        }
    }
    return NULL;
}

/* A block of never used memory, or NULL when it would not fit or memory ran out. */
static arena_block_t *arena_fresh(cohort_arena_t *a, uint32_t head_len, uint32_t pages)
{
    arena_block_t *b;

    if ((size_t)a->next_head + head_len > ARENA_HEADS_AT + ARENA_HEADS_BYTES ||
        (size_t)(a->next_page + pages) * ARENA_PAGE > ARENA_BYTES) {
        return NULL;
    }
    if (a->nblocks == a->cap) {
        uint32_t cap = a->cap ? 2 * a->cap : 16;
        arena_block_t *nb = realloc(a->blocks, cap * sizeof(*nb));
        if (nb == NULL) {
            return NULL;
        }
        a->blocks = nb;
        a->cap = cap;
    }
    b = &a->blocks[a->nblocks++];
    b->head = a->next_head;
    b->head_len = head_len;
    b->page = a->next_page;
    b->pages = pages;
    a->next_head += head_len;
    a->next_page += pages;
    /* The heads' pages in memory a few at a time, ahead of the heads that will use them: the
     * owner allocates them in one system call for several groups, and a process that maps the
     * arena then finds them there and maps them all in its first fault on one of them. */
    if (a->next_head > a->populated) {
        uint32_t to = (a->next_head + ARENA_HEADS_STEP - 1) / ARENA_HEADS_STEP * ARENA_HEADS_STEP;
        if (to > ARENA_HEADS_AT + ARENA_HEADS_BYTES) {
            to = (uint32_t)(ARENA_HEADS_AT + ARENA_HEADS_BYTES);
        }
        cohort_arena_populate(arena_at(a, a->populated), to - a->populated);
        a->populated = to;
    }
    return b;
}

void *cohort_arena_take(cohort_arena_t *a, size_t head_bytes, size_t body_bytes,
                        int (*reusable)(const void *head), int *fresh, void **body)
{
    uint32_t head_len = (uint32_t)((head_bytes + ARENA_LINE - 1) / ARENA_LINE * ARENA_LINE);
    uint32_t pages = (uint32_t)((body_bytes + ARENA_PAGE - 1) / ARENA_PAGE);
    arena_block_t *b;

    *body = NULL;
    if (a->live >= ARENA_DIR / 2 || head_bytes == 0 || head_bytes > ARENA_HEADS_BYTES ||
        body_bytes > ARENA_BYTES) {
        return NULL;
    }
    /* A retired block of the same sizes; then new memory; then a larger retired one. */
    *fresh = 0;
    b = arena_retired(a, head_len, pages, 0, reusable);
    if (b == NULL && (b = arena_fresh(a, head_len, pages)) != NULL) {
        *fresh = 1;
    }
    if (b == NULL) {
        b = arena_retired(a, head_len, pages, 1, reusable);
    }
    if (b == NULL) {
        return NULL;
    }
    b->live = 1;
    b->dir = ARENA_DIR;
    a->live++;
    if (b->pages > 0) {
        *body = arena_at(a, (size_t)b->page * ARENA_PAGE);
    }
    return arena_at(a, b->head);
}

void cohort_arena_populate(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t from = (uintptr_t)p / ARENA_PAGE * ARENA_PAGE;
    uintptr_t to = ((uintptr_t)p + bytes + ARENA_PAGE - 1) / ARENA_PAGE * ARENA_PAGE;

    (void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)bytes;
#endif
}

void cohort_arena_publish(cohort_arena_t *a, void *head, uint64_t id)
{
    arena_block_t *b = arena_block_of(a, head);
    uint32_t h = (uint32_t)(id % ARENA_DIR);

    if (b == NULL || id == 0 || id == ARENA_TOMB) {
        return;
    }
    for (uint32_t i = 0; i < ARENA_DIR; i++) {
        arena_entry_t *e = &a->head->dir[(h + i) % ARENA_DIR];
        uint64_t cur = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
        if (cur == 0 || cur == ARENA_TOMB) {
            e->head = b->head;
            e->head_len = b->head_len;
            e->page = b->page;
            e->pages = b->pages;
            __atomic_store_n(&e->id, id, __ATOMIC_RELEASE);
            b->dir = (h + i) % ARENA_DIR;
            return;
        }
    }
    /* Not reached: take() keeps live blocks at half the directory. */
}

void cohort_arena_retire(cohort_arena_t *a, void *head)
{
    arena_block_t *b = arena_block_of(a, head);

    if (b == NULL || !b->live) {
        return;
    }
    if (b->dir < ARENA_DIR) {
        __atomic_store_n(&a->head->dir[b->dir].id, ARENA_TOMB, __ATOMIC_RELEASE);
        b->dir = ARENA_DIR;
    }
    b->live = 0;
    a->live--;
}

cohort_status_t cohort_arena_view_open(int32_t pid, const cohort_arena_ref_t *ref,
                                       cohort_arena_view_t **v_p, char *why, size_t whylen)
{
    cohort_arena_view_t *v;
    const arena_head_t *h;
    struct stat st;
    int pfd, fd;
    void *m;

    *v_p = NULL;
    if (ref->fd < 0 || pid <= 0) {
        snprintf(why, whylen, "its card names no arena");
        return COHORT_ERR_UNSUPPORTED;
    }
    pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pfd < 0) {
        snprintf(why, whylen, "pidfd_open(%d): %s", (int)pid, strerror(errno));
        return COHORT_ERR_UNSUPPORTED;
    }
    fd = (int)syscall(SYS_pidfd_getfd, pfd, ref->fd, 0);
    close(pfd);
    if (fd < 0) {
        snprintf(why, whylen, "pidfd_getfd(%d, %d): %s", (int)pid, (int)ref->fd, strerror(errno));
        return COHORT_ERR_UNSUPPORTED;
    }
    /* Before a byte is read: a plain file of ours, at least as large as an arena's head. */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (size_t)st.st_size < sizeof(arena_head_t)) {
        close(fd);
        snprintf(why, whylen, "descriptor %d of process %d is not an arena", (int)ref->fd,
                 (int)pid);
        return COHORT_ERR_UNSUPPORTED;
    }
    m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(why, whylen, "mmap: %s", strerror(errno));
        return COHORT_ERR_UNSUPPORTED;
    }
    h = m;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != ARENA_MAGIC || h->pid != pid ||
        h->token != ref->token || h->bytes != (uint64_t)st.st_size) {
        munmap(m, (size_t)st.st_size);
        snprintf(why, whylen, "descriptor %d of process %d is not the arena its card names",
                 (int)ref->fd, (int)pid);
        return COHORT_ERR_UNSUPPORTED;
    }
    v = malloc(sizeof(*v));
    if (v == NULL) {
        munmap(m, (size_t)st.st_size);
        snprintf(why, whylen, "out of memory");
        return COHORT_ERR_NO_MEMORY;
    }
    v->head = h;
    v->bytes = (size_t)st.st_size;
    *v_p = v;
    return COHORT_OK;
}

void *cohort_arena_view_find(const cohort_arena_view_t *v, uint64_t id, size_t *head_bytes,
                             void **body, size_t *body_bytes)
{
    uint32_t h = (uint32_t)(id % ARENA_DIR);

    for (uint32_t i = 0; i < ARENA_DIR; i++) {
        const arena_entry_t *e = &v->head->dir[(h + i) % ARENA_DIR];
        uint64_t cur = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            return NULL;
        }
        if (cur == id) {
            size_t head = e->head, head_len = e->head_len;
            uint32_t page = e->page, pages = e->pages;
            /* The owner's word for where it is, checked against what we mapped: the head in
             * the heads' part, on a line of its own; the body (if any) among the bodies. */
            if (head < ARENA_HEADS_AT || head % ARENA_LINE != 0 || head_len == 0 ||
                head + head_len > ARENA_HEADS_AT + ARENA_HEADS_BYTES || head + head_len > v->bytes ||
                (pages > 0 && (page < ARENA_BODY_PAGE ||
                               (size_t)page + pages > v->bytes / ARENA_PAGE))) {
                return NULL;
            }
            *head_bytes = head_len;
            *body = pages > 0 ? (uint8_t *)v->head + (size_t)page * ARENA_PAGE : NULL;
            *body_bytes = (size_t)pages * ARENA_PAGE;
            return (uint8_t *)v->head + head;
        }
    }
    return NULL;
}

void cohort_arena_view_close(cohort_arena_view_t *v)
{
    if (v != NULL) {
        munmap((void *)v->head, v->bytes);
        free(v);
    }
}
