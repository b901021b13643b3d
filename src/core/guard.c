/* The entry guard (guard.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "core/context.h"
#include "core/guard.h"
#include "core/log.h"

/* Bumped in every fork child, so a context compares a number instead of calling getpid() on
 * each entry. */
static atomic_uint cohort_fork_epoch;
static pthread_once_t cohort_guard_once = PTHREAD_ONCE_INIT;
/* Its address names the calling thread. */
static _Thread_local char cohort_guard_me;

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
    ctx->guard_depth = 0;
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

static cohort_status_t cohort_guard_refuse_thread(const cohort_context_t *ctx, const char *fn)
{
    cohort_error(ctx,
                 "%s: another thread is inside a call on this context; a context is used by one "
                 "thread at a time (cohort.h)",
                 fn);
    return COHORT_ERR_INVALID_ARG;
}

cohort_status_t cohort_guard_check(const cohort_context_t *ctx, const char *fn)
{
    uintptr_t owner;

    if (cohort_guard_forked(ctx)) {
        return cohort_guard_refuse_fork(ctx, fn);
    }
    owner = atomic_load(&((cohort_context_t *)ctx)->guard_owner);
    if (owner != 0 && owner != (uintptr_t)&cohort_guard_me) {
        return cohort_guard_refuse_thread(ctx, fn);
    }
    return COHORT_OK;
}

cohort_status_t cohort_guard_enter(cohort_context_t *ctx, const char *fn)
{
    uintptr_t none = 0, me = (uintptr_t)&cohort_guard_me;

    if (cohort_guard_forked(ctx)) {
        return cohort_guard_refuse_fork(ctx, fn);
    }
    if (atomic_compare_exchange_strong(&ctx->guard_owner, &none, me)) {
        ctx->guard_depth = 1;
        return COHORT_OK;
    }
    if (none == me) {
        ctx->guard_depth++;
        return COHORT_OK;
    }
    return cohort_guard_refuse_thread(ctx, fn);
}

void cohort_guard_leave(cohort_context_t *ctx)
{
    if (--ctx->guard_depth == 0) {
        atomic_store(&ctx->guard_owner, (uintptr_t)0);
    }
}
