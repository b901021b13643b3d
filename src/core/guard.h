/*
 * The context lock. Every call that changes or walks a context's state takes the context's lock
 * on entry and gives it back on return, so the engine's shared state (progress, the request
 * pools, endpoints, the communicators, UCX itself) is only ever touched by the one thread that
 * holds it. A blocking call lets it go between two progress passes (cohort_guard_pass,
 * cohort_guard_suspend): another thread's call then comes in and progresses too, and progress
 * made by any thread completes every thread's requests, seen under the lock. The lock is a
 * ticket lock: threads come in in the order they asked, so a thread looping in a wait cannot
 * take it back before a waiting one had its turn.
 *
 * Groups are one thread's at a time: a call on a group records its thread in the group's
 * communicator for the call's length (cohort_guard_take_comm), and a second thread's call on
 * that group meanwhile is refused (INVALID_ARG, logged); when it is a call the members make too
 * (a collective, a send, a receive) the group is revoked with MISMATCH at once and its members
 * told, so they never wait in a call this rank did not make.
 *
 * The same thread may nest (a call made from inside another). A context also remembers the
 * process it was made in: in a fork child every call on it is refused, and nothing of the
 * parent's (UCX, PMIx, memory) is touched.
 */
#ifndef COHORT_GUARD_H
#define COHORT_GUARD_H

#include <stdatomic.h>
#include "cohort.h"
#include "core/comm.h"
#include "core/context.h"

/* The fast paths are inline below (a small collective's whole cost is a few hundred
 * nanoseconds); what refuses or waits is out of line, in guard.c. */

/* Record the making process and a free lock in a new context. */
void cohort_guard_init(cohort_context_t *ctx);
/* Take @a ctx for this thread, waiting for the thread that holds it to let it go: COHORT_OK,
 * or INVALID_ARG (logged, naming @a fn) in a fork child or once finalize has begun on it
 * (cohort_guard_close). */
cohort_status_t cohort_guard_enter(cohort_context_t *ctx, const char *fn);
/* The thread holding @a ctx; with it held, this thread (no thread-local read). */
static inline uintptr_t cohort_guard_holder(const cohort_context_t *ctx)
{
    return atomic_load_explicit(&((cohort_context_t *)ctx)->guard_owner, memory_order_relaxed);
}
/* Release: what this holder wrote is seen by the next. Only the holder writes guard_serving. */
static inline void cohort_guard_unlock(cohort_context_t *ctx)
{
    uint32_t t = atomic_load_explicit(&ctx->guard_serving, memory_order_relaxed);

    atomic_store_explicit(&ctx->guard_owner, (uintptr_t)0, memory_order_relaxed);
    atomic_store_explicit(&ctx->guard_serving, t + 1u, memory_order_release);
}
/* Give back what cohort_guard_enter took. */
static inline void cohort_guard_leave(cohort_context_t *ctx)
{
    if (--ctx->guard_depth == 0) {
        ctx->guard_inside--;
        cohort_guard_unlock(ctx);
    }
}
void cohort_guard_freed(cohort_context_t *ctx, const char *what, const void *handle);
/* For an object looked up (handle.h) before cohort_guard_enter took its context: @a live 0
 * means another thread freed it in between; the context is then given back, logged naming
 * @a what and @a handle. @return @a live. */
static inline int cohort_guard_still_live(cohort_context_t *ctx, int live, const char *what,
                                          const void *handle)
{
    if (__builtin_expect(!live, 0)) {
        cohort_guard_freed(ctx, what, handle);
    }
    return live;
}
/* The fork child's refusal without taking the context: for calls that only read what never
 * changes after init (ranks, sizes, ids). */
cohort_status_t cohort_guard_check(const cohort_context_t *ctx, const char *fn);
/* Forks this process came through; an object made now records it, and a later call that sees
 * another number runs in a fork child. */
unsigned cohort_guard_epoch(void);
/* INVALID_ARG (logged, naming @a fn) when @a epoch is not this process's: a fork child. */
cohort_status_t cohort_guard_check_epoch(unsigned epoch, const char *fn);
/* 1 in a fork child of the process that made @a ctx. */
int cohort_guard_forked(const cohort_context_t *ctx);
/* Threads inside a call on @a ctx other than this one (holding it for its call, or waiting in a
 * blocking call with it let go). With the context held. */
int cohort_guard_others(const cohort_context_t *ctx);
/* Finalize begins, with @a ctx held and no other thread inside: from now on another thread's
 * call is refused (INVALID_ARG), also one that comes in while finalize's waits let the context
 * go; this thread's nested calls go on. */
void cohort_guard_close(cohort_context_t *ctx);

/* 1 while a thread other than this one is inside a call on @a comm. With the context held (its
 * holder is this thread). */
static inline int cohort_guard_comm_busy(const cohort_comm_t *c)
{
    return c->guard_owner != 0 && c->guard_owner != cohort_guard_holder(c->ctx);
}
/* With @a comm's context held: record this thread as inside a call on @a comm. Another thread
 * inside already: INVALID_ARG, logged naming @a fn, and with @a call (a call its members make
 * too) the group is revoked with COHORT_ERR_MISMATCH and its members told. */
static inline cohort_status_t cohort_guard_take_comm(cohort_comm_t *c, int call, const char *fn)
{
    if (__builtin_expect(cohort_guard_comm_busy(c), 0)) {
        return cohort_comm_refuse_thread(c, call, fn); /* core/comm.h */
    }
    c->guard_owner = cohort_guard_holder(c->ctx);
    c->guard_depth++;
    return COHORT_OK;
}
/* Give back what cohort_guard_take_comm took. */
static inline void cohort_guard_drop_comm(cohort_comm_t *c)
{
    if (--c->guard_depth == 0) {
        c->guard_owner = 0;
    }
}

void cohort_guard_pass_on(cohort_context_t *ctx);
/* Between two progress passes of a wait, with the context held: when another thread asks for
 * it, let it go and take it again after that thread (its call comes in, or progresses). Inline:
 * every pass of every wait asks, and alone it costs two loads. */
static inline void cohort_guard_pass(cohort_context_t *ctx)
{
    uint32_t next = atomic_load_explicit(&ctx->guard_next, memory_order_relaxed);

    if (next - atomic_load_explicit(&ctx->guard_serving, memory_order_relaxed) > 1u) {
        cohort_guard_pass_on(ctx); /* a thread has drawn a ticket and waits */
    }
}
/* Around a wait's sleep: let the context go (@return what cohort_guard_resume needs; 0: it was
 * kept, inside a progress pass or with nobody else about) and take it back. */
int cohort_guard_suspend(cohort_context_t *ctx);
void cohort_guard_resume(cohort_context_t *ctx, int depth);

#endif
