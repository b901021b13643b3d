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
    ctx->guard_closed = 0;
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

/* Wait for ticket @a t (out of line: the fast path has no other thread to wait for). The
 * holder lets the lock go between progress passes, within microseconds when it progresses and
 * before each sleep when it idles: spin a little, then yield the core (ranks are often
 * oversubscribed: the holder may need it), then nap, so that a thread queued behind a long pass
 * costs its core little. */
__attribute__((noinline)) static void cohort_guard_queue(cohort_context_t *ctx, uint32_t t)
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

/* Acquire: what the previous holder wrote is seen here. @a me: COHORT_GUARD_ME, found once
 * per call (a thread-local's address costs a call into the loader in a shared library). */
static inline void cohort_guard_lock(cohort_context_t *ctx, uintptr_t me)
{
    uint32_t t = atomic_fetch_add_explicit(&ctx->guard_next, 1u, memory_order_relaxed);

    if (atomic_load_explicit(&ctx->guard_serving, memory_order_acquire) != t) {
        cohort_guard_queue(ctx, t);
    }
    atomic_store_explicit(&ctx->guard_owner, me, memory_order_relaxed);
}

/* The context was finalized (or is being finalized) by the thread that held it before this
 * one: given back, refused. */
__attribute__((noinline, cold)) static cohort_status_t
cohort_guard_refuse_finalized(cohort_context_t *ctx, const char *fn)
{
    cohort_guard_unlock(ctx);
    cohort_error(NULL, "%s: the context was finalized by another thread", fn);
    return COHORT_ERR_INVALID_ARG;
}

cohort_status_t cohort_guard_enter(cohort_context_t *ctx, const char *fn)
{
    uintptr_t me;

    if (__builtin_expect(cohort_guard_forked(ctx), 0)) {
        return cohort_guard_refuse_fork(ctx, fn);
    }
    /* Only the holder stores its own name here: another thread never reads it as this one's. */
    me = COHORT_GUARD_ME;
    if (cohort_guard_holder(ctx) == me) {
        ctx->guard_depth++;
        return COHORT_OK;
    }
    cohort_guard_lock(ctx, me);
    if (__builtin_expect(ctx->magic != COHORT_CTX_MAGIC || ctx->guard_closed, 0)) {
        return cohort_guard_refuse_finalized(ctx, fn);
    }
    if (ctx->guard_last != me) {
        ctx->guard_shared |= ctx->guard_last != 0; /* a second thread: waits let it go */
        ctx->guard_last = me;
    }
    ctx->guard_depth = 1;
    ctx->guard_inside++;
    return COHORT_OK;
}

void cohort_guard_freed(cohort_context_t *ctx, const char *what, const void *handle)
{
    cohort_error(ctx, "%s %p was freed by another thread", what, handle);
    cohort_guard_leave(ctx);
}

int cohort_guard_others(const cohort_context_t *ctx)
{
    return ctx->guard_inside - 1;
}

void cohort_guard_close(cohort_context_t *ctx)
{
    ctx->guard_closed = 1;
}

/* Let the lock go and take a new ticket: whoever queued before comes in first. Never inside a
 * progress pass, whose lists are half walked: only between two. */
static int cohort_guard_release(cohort_context_t *ctx)
{
    int depth = ctx->guard_depth;

    if (ctx->in_progress || depth == 0 || cohort_guard_holder(ctx) != COHORT_GUARD_ME) {
        return 0;
    }
    ctx->guard_depth = 0;
    cohort_guard_unlock(ctx);
    return depth;
}

void cohort_guard_resume(cohort_context_t *ctx, int depth)
{
    if (depth > 0) {
        uintptr_t me = COHORT_GUARD_ME;
        cohort_guard_lock(ctx, me);
        ctx->guard_depth = depth;
        ctx->guard_last = me;
    }
}

void cohort_guard_pass_on(cohort_context_t *ctx)
{
    cohort_guard_resume(ctx, cohort_guard_release(ctx));
}

int cohort_guard_suspend(cohort_context_t *ctx)
{
    return ctx->guard_shared ? cohort_guard_release(ctx) : 0;
}
