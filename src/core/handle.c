/*
 * The handle table (handle.h). Slots are in blocks that never move, so a lookup reads a block
 * pointer and a slot. Every call of the API looks up its handles, so a lookup takes no lock:
 * a slot's tag (generation and kind) is read before and after its object, and a lookup that
 * saw the tag change under it (a retirement or a reuse on another thread) reads the handle as
 * freed. Making and retiring handles, rarer, take a mutex, which orders them and keeps the
 * free list. The table is the one process-wide structure besides the set of live contexts: it
 * says nothing about how any context works.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "core/handle.h"
#include "core/log.h"

#define COHORT_HANDLE_BLOCK  4096u
#define COHORT_HANDLE_BLOCKS 65536u /* 2^28 slots at most: the index has 28 bits */
#define COHORT_HANDLE_TOP    (UINT64_C(1) << 63)

typedef struct {
    _Atomic(void *) obj; /* NULL: free */
    /* What lookups read: gen << 32 | kind, kind 0 while free. Written (under the lock) after
     * obj when a handle is made, before obj when one is retired. */
    _Atomic uint64_t tag;
    uint32_t gen;  /* 31 bits, never 0 */
    uint32_t kind; /* cohort_handle_kind_t, or 0 while free */
    uint32_t next; /* free list: index + 1 of the next free slot, 0 at the end */
} cohort_handle_slot_t;

static pthread_mutex_t cohort_handle_lock = PTHREAD_MUTEX_INITIALIZER;
static cohort_handle_slot_t *cohort_handle_blocks[COHORT_HANDLE_BLOCKS];
/* Slots ever handed out; raised (release) only once its slot's block is in place. */
static _Atomic uint32_t cohort_handle_used;
static uint32_t cohort_handle_head, cohort_handle_tail; /* free list, index + 1; 0: empty */
static pthread_once_t cohort_handle_once = PTHREAD_ONCE_INIT;

/* A fork while another thread holds the lock would leave the child's copy locked for ever. */
static void cohort_handle_prefork(void)
{
    pthread_mutex_lock(&cohort_handle_lock);
}

static void cohort_handle_postfork(void)
{
    pthread_mutex_unlock(&cohort_handle_lock);
}

static void cohort_handle_init(void)
{
    (void)pthread_atfork(cohort_handle_prefork, cohort_handle_postfork, cohort_handle_postfork);
}

static cohort_handle_slot_t *cohort_handle_slot(uint32_t index)
{
    cohort_handle_slot_t *block = cohort_handle_blocks[index / COHORT_HANDLE_BLOCK];

    return block == NULL ? NULL : &block[index % COHORT_HANDLE_BLOCK];
}

static uintptr_t cohort_handle_encode(uint32_t index, const cohort_handle_slot_t *s)
{
    return (uintptr_t)(COHORT_HANDLE_TOP | (uint64_t)s->gen << 32 | (uint64_t)index << 4 |
                       s->kind);
}

static uint64_t cohort_handle_tag(const cohort_handle_slot_t *s)
{
    return (uint64_t)s->gen << 32 | s->kind;
}

uintptr_t cohort_handle_new(cohort_handle_kind_t kind, void *obj)
{
    cohort_handle_slot_t *s;
    uint32_t index;
    uintptr_t h = 0;

    pthread_once(&cohort_handle_once, cohort_handle_init);
    pthread_mutex_lock(&cohort_handle_lock);
    /* Fresh slots first while there are any in the last block: a freed slot waits as long as
     * possible before its next generation. */
    if (cohort_handle_head != 0 && cohort_handle_used % COHORT_HANDLE_BLOCK == 0) {
        index = cohort_handle_head - 1;
        s = cohort_handle_slot(index);
        cohort_handle_head = s->next;
        if (cohort_handle_head == 0) {
            cohort_handle_tail = 0;
        }
    } else {
        index = atomic_load_explicit(&cohort_handle_used, memory_order_relaxed);
        if (index / COHORT_HANDLE_BLOCK >= COHORT_HANDLE_BLOCKS) {
            goto out;
        }
        if (cohort_handle_blocks[index / COHORT_HANDLE_BLOCK] == NULL) {
            cohort_handle_blocks[index / COHORT_HANDLE_BLOCK] =
                calloc(COHORT_HANDLE_BLOCK, sizeof(cohort_handle_slot_t));
            if (cohort_handle_blocks[index / COHORT_HANDLE_BLOCK] == NULL) {
                goto out;
            }
        }
        s = cohort_handle_slot(index);
        s->gen = 1;
        atomic_store_explicit(&s->tag, cohort_handle_tag(s), memory_order_relaxed);
        atomic_store_explicit(&cohort_handle_used, index + 1, memory_order_release);
    }
    atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
    s->kind = (uint32_t)kind;
    s->next = 0;
    /* release: a lookup that sees the new tag sees obj */
    atomic_store_explicit(&s->tag, cohort_handle_tag(s), memory_order_release);
    h = cohort_handle_encode(index, s);
out:
    pthread_mutex_unlock(&cohort_handle_lock);
    return h;
}

/* The slot @a h names, or NULL; without the lock, only for a slot whose block is in place. */
static cohort_handle_slot_t *cohort_handle_find(uintptr_t h, uint32_t *index_p)
{
    uint64_t v = (uint64_t)h;
    uint32_t index = (uint32_t)(v >> 4) & 0x0fffffffu;

    if ((v & COHORT_HANDLE_TOP) == 0 ||
        index >= atomic_load_explicit(&cohort_handle_used, memory_order_acquire)) {
        return NULL;
    }
    *index_p = index;
    return cohort_handle_slot(index);
}

void *cohort_handle_get(const void *handle, cohort_handle_kind_t kind, const char **why)
{
    uintptr_t h = (uintptr_t)handle;
    cohort_handle_slot_t *s;
    uint32_t index, gen = (uint32_t)((uint64_t)h >> 32) & 0x7fffffffu, sgen, skind;
    uint64_t before, after;
    void *obj;

    s = cohort_handle_find(h, &index);
    if (s == NULL) {
        *why = "never made by cohort";
        return NULL;
    }
    before = atomic_load_explicit(&s->tag, memory_order_acquire);
    obj = atomic_load_explicit(&s->obj, memory_order_acquire);
    after = atomic_load_explicit(&s->tag, memory_order_acquire);
    sgen = (uint32_t)(before >> 32);
    skind = (uint32_t)(before & 0xf);
    if (gen == 0 || gen > sgen || (h & 0xf) == 0 || (h & 0xf) > 3) {
        *why = "never made by cohort";
    } else if (gen != sgen || skind == 0 || obj == NULL || after != before) {
        *why = "freed, or its context finalized";
    } else if ((h & 0xf) != kind || skind != kind) {
        *why = "a handle of another kind";
    } else {
        return obj;
    }
    return NULL;
}

void *cohort_handle_lookup(const void *handle, cohort_handle_kind_t kind, const char *what)
{
    static const char *const names[] = {"", "group", "layout", "request"};
    const char *why = NULL;
    void *obj;

    if (handle == NULL) {
        cohort_error(NULL, "%s is NULL", what);
        return NULL;
    }
    obj = cohort_handle_get(handle, kind, &why);
    if (obj == NULL) {
        cohort_error(NULL, "%s %p is not a live cohort %s (%s)", what, handle, names[kind], why);
    }
    return obj;
}

void cohort_handle_retire(uintptr_t h)
{
    cohort_handle_slot_t *s;
    uint32_t index;

    if (h == 0) {
        return;
    }
    pthread_mutex_lock(&cohort_handle_lock);
    s = cohort_handle_find(h, &index);
    if (s != NULL && s->kind != 0 && cohort_handle_encode(index, s) == h) {
        s->kind = 0;
        s->gen = s->gen == 0x7fffffffu ? 1 : s->gen + 1;
        /* the tag first: a lookup that read the old one before and reads this after fails */
        atomic_store_explicit(&s->tag, cohort_handle_tag(s), memory_order_release);
        atomic_store_explicit(&s->obj, NULL, memory_order_release);
        s->next = 0;
        if (cohort_handle_tail != 0) {
            cohort_handle_slot(cohort_handle_tail - 1)->next = index + 1;
        } else {
            cohort_handle_head = index + 1;
        }
        cohort_handle_tail = index + 1;
    }
    pthread_mutex_unlock(&cohort_handle_lock);
}
