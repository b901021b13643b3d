/* The context lock (guard.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include "core/comm.h"
#include "core/context.h"
#include "core/guard.h"
#include "core/log.h"

/* Bumped in every fork child, so a context compares a number instead of calling getpid() on
 * each entry. */
static atomic_uint cohort_fork_epoch;
static pthread_once_t cohort_guard_once = PTHREAD_ONCE_INIT;
/* Its address names the calling thread. */
static _Thread_local char cohort_guard_me;

#define COHORT_GUARD_ME ((uintptr_t)&cohort_guard_me)

static void cohort_guard_child(void)
{
    atomic_fetch_add(&cohort_fork_epoch, 1);
}

static void cohort_guard_setup(void)
{
    (void)pthread_atfork(NULL, NULL, cohort_guard_child);
}

void cohort_guard_init(cohort_context_t *ctx)
{
    pthread_once(&cohort_guard_once, cohort_guard_setup);
    ctx->pid = getpid();
    ctx->fork_epoch = atomic_load(&cohort_fork_epoch);
    atomic_store(&ctx->guard_owner, (uintptr_t)0);
    atomic_store(&ctx->guard_next, 0u);
    atomic_store(&ctx->guard_serving, 0u);
    ctx->guard_depth = 0;
    ctx->guard_inside = 0;
    ctx->guard_last = 0;
    ctx->guard_shared = 0;
}

int cohort_guard_forked(const cohort_context_t *ctx)
{
    return ctx->fork_epoch != atomic_load(&cohort_fork_epoch);
}

static cohort_status_t cohort_guard_refuse_fork(const cohort_context_t *ctx, const char *fn)
{
    /* The parent's log settings are plain memory, safe to read; nothing else is used. */
    cohort_error(NULL,
                 "%s: this context belongs to process %d, and this is a fork child (process %d): "
                 "a context is used only by the process that made it",
                 fn, (int)ctx->pid, (int)getpid());
    return COHORT_ERR_INVALID_ARG;
}

unsigned cohort_guard_epoch(void)
{
    return atomic_load(&cohort_fork_epoch);
}

cohort_status_t cohort_guard_check_epoch(unsigned epoch, const char *fn)
{
    if (epoch == atomic_load(&cohort_fork_epoch)) {
        return COHORT_OK;
    }
    cohort_error(NULL, "%s: this handle belongs to the parent of this fork child (process %d)",
                 fn, (int)getpid());
    return COHORT_ERR_INVALID_ARG;
}

cohort_status_t cohort_guard_check(const cohort_context_t *ctx, const char *fn)
{
    return cohort_guard_forked(ctx) ? cohort_guard_refuse_fork(ctx, fn) : COHORT_OK;
}

/* Wait for ticket @a t. The holder lets the lock go between progress passes, within
 * microseconds when it progresses and before each sleep when it idles: spin a little, then yield
 * the core (ranks are often oversubscribed: the holder may need it), then nap, so that a thread
 * queued behind a long pass costs its core little. */
static void cohort_guard_queue(cohort_context_t *ctx, uint32_t t)
{
    struct timespec nap = {0, 20000};
    unsigned i;

    for (i = 0; atomic_load_explicit(&ctx->guard_serving, memory_order_acquire) != t; i++) {
        if (i < 64) {
            continue;
        }
        if (i < 2000) {
            sched_yield();
        } else {
            nanosleep(&nap, NULL);
        }
    }
}

/* Acquire: what the previous holder wrote is seen here. */
static void cohort_guard_lock(cohort_context_t *ctx)
{
    uint32_t t = atomic_fetch_add_explicit(&ctx->guard_next, 1u, memory_order_relaxed);

    if (atomic_load_explicit(&ctx->guard_serving, memory_order_acquire) != t) {
        cohort_guard_queue(ctx, t);
    }
    atomic_store_explicit(&ctx->guard_owner, COHORT_GUARD_ME, memory_order_relaxed);
}

/* Release: what this holder wrote is seen by the next. Only the holder writes guard_serving. */
static void cohort_guard_unlock(cohort_context_t *ctx)
{
    uint32_t t = atomic_load_explicit(&ctx->guard_serving, memory_order_relaxed);

    atomic_store_explicit(&ctx->guard_owner, (uintptr_t)0, memory_order_relaxed);
    atomic_store_explicit(&ctx->guard_serving, t + 1u, memory_order_release);
}

/* Another thread has taken a ticket and waits for it. */
static int cohort_guard_queued(const cohort_context_t *ctx)
{
    uint32_t next = atomic_load_explicit(&ctx->guard_next, memory_order_relaxed);
    uint32_t serving = atomic_load_explicit(&ctx->guard_serving, memory_order_relaxed);

    return next - serving > 1u;
}

cohort_status_t cohort_guard_enter(cohort_context_t *ctx, const char *fn)
{
    if (cohort_guard_forked(ctx)) {
        return cohort_guard_refuse_fork(ctx, fn);
    }
    /* Only the holder stores its own name here: another thread never reads it as this one's. */
    if (atomic_load_explicit(&ctx->guard_owner, memory_order_relaxed) == COHORT_GUARD_ME) {
        ctx->guard_depth++;
        return COHORT_OK;
    }
    cohort_guard_lock(ctx);
    if (ctx->magic != COHORT_CTX_MAGIC || ctx->finalizing) {
        /* Finalized (or being finalized) by the thread that held it before this one. */
        cohort_guard_unlock(ctx);
        cohort_error(NULL, "%s: the context was finalized by another thread", fn);
        return COHORT_ERR_INVALID_ARG;
    }
    if (ctx->guard_last != COHORT_GUARD_ME) {
        ctx->guard_shared |= ctx->guard_last != 0; /* a second thread: waits let it go */
        ctx->guard_last = COHORT_GUARD_ME;
    }
    ctx->guard_depth = 1;
    ctx->guard_inside++;
    return COHORT_OK;
}

void cohort_guard_leave(cohort_context_t *ctx)
{
    if (--ctx->guard_depth == 0) {
        ctx->guard_inside--;
        cohort_guard_unlock(ctx);
    }
}

int cohort_guard_still_live(cohort_context_t *ctx, int live, const char *what, const void *handle)
{
    if (!live) {
        cohort_error(ctx, "%s %p was freed by another thread", what, handle);
        cohort_guard_leave(ctx);
    }
    return live;
}

int cohort_guard_others(const cohort_context_t *ctx)
{
    return ctx->guard_inside - 1;
}

cohort_status_t cohort_guard_take_comm(cohort_comm_t *c, int call, const char *fn)
{
    if (cohort_guard_comm_busy(c)) {
        cohort_error(c->ctx,
                     "%s: another thread is inside a call on group '%s' 0x%016llx; a group is "
                     "used by one thread at a time (cohort.h)%s",
                     fn, c->label, (unsigned long long)c->id,
                     call ? ": the group is revoked with COHORT_ERR_MISMATCH, so that its "
                            "members do not wait in a call this rank never made"
                          : "");
        if (call) {
            cohort_comm_revoke(c, COHORT_ERR_MISMATCH, "a call on it came from a second thread");
        }
        return COHORT_ERR_INVALID_ARG;
    }
    c->guard_owner = COHORT_GUARD_ME;
    c->guard_depth++;
    return COHORT_OK;
}

int cohort_guard_comm_busy(const cohort_comm_t *c)
{
    return c->guard_owner != 0 && c->guard_owner != COHORT_GUARD_ME;
}

void cohort_guard_drop_comm(cohort_comm_t *c)
{
    if (--c->guard_depth == 0) {
        c->guard_owner = 0;
    }
}

/* Let the lock go and take a new ticket: whoever queued before comes in first. Never inside a
 * progress pass, whose lists are half walked: only between two. */
static int cohort_guard_release(cohort_context_t *ctx)
{
    int depth = ctx->guard_depth;

    if (ctx->in_progress || depth == 0 ||
        atomic_load_explicit(&ctx->guard_owner, memory_order_relaxed) != COHORT_GUARD_ME) {
        return 0;
    }
    ctx->guard_depth = 0;
    cohort_guard_unlock(ctx);
    return depth;
}

void cohort_guard_resume(cohort_context_t *ctx, int depth)
{
    if (depth > 0) {
        cohort_guard_lock(ctx);
        ctx->guard_depth = depth;
        ctx->guard_last = COHORT_GUARD_ME;
    }
}

void cohort_guard_pass(cohort_context_t *ctx)
{
    if (cohort_guard_queued(ctx)) {
        cohort_guard_resume(ctx, cohort_guard_release(ctx));
    }
}

int cohort_guard_suspend(cohort_context_t *ctx)
{
    return ctx->guard_shared ? cohort_guard_release(ctx) : 0;
}
