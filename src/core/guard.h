/*
 * The entry guard: cohort.h's rule is one thread at a time per context. A call that changes or
 * walks a context's state takes the context's owner word with one compare-and-swap on entry
 * and gives it back on return; a second thread that comes in meanwhile gets
 * COHORT_ERR_INVALID_ARG and a log line instead of racing the first through the engine. The
 * same thread may nest (a call made from inside another). A context also remembers the process
 * it was made in: in a fork child every call on it is refused the same way, and nothing of the
 * parent's (UCX, PMIx, memory) is touched.
 */
#ifndef COHORT_GUARD_H
#define COHORT_GUARD_H

#include "cohort.h"

/* Record the making process and an empty owner in a new context. */
void cohort_guard_init(cohort_context_t *ctx);
/* Take @a ctx for this thread: COHORT_OK, or INVALID_ARG (logged, naming @a fn) in a fork
 * child or while another thread is inside a call on it. */
cohort_status_t cohort_guard_enter(cohort_context_t *ctx, const char *fn);
/* Give back what cohort_guard_enter took. */
void cohort_guard_leave(cohort_context_t *ctx);
/* The same refusals without taking the context: for calls that only read what never changes
 * after init (ranks, sizes, ids). */
cohort_status_t cohort_guard_check(const cohort_context_t *ctx, const char *fn);
/* Forks this process came through; an object made now records it, and a later call that sees
 * another number runs in a fork child. */
unsigned cohort_guard_epoch(void);
/* INVALID_ARG (logged, naming @a fn) when @a epoch is not this process's: a fork child. */
cohort_status_t cohort_guard_check_epoch(unsigned epoch, const char *fn);
/* 1 in a fork child of the process that made @a ctx. */
int cohort_guard_forked(const cohort_context_t *ctx);

#endif
