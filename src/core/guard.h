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

#include "cohort.h"

typedef struct cohort_comm cohort_comm_t;

/* Record the making process and a free lock in a new context. */
void cohort_guard_init(cohort_context_t *ctx);
/* Take @a ctx for this thread, waiting for the thread that holds it to let it go: COHORT_OK,
 * or INVALID_ARG (logged, naming @a fn) in a fork child or once it is finalized or being
 * finalized. */
cohort_status_t cohort_guard_enter(cohort_context_t *ctx, const char *fn);
/* Give back what cohort_guard_enter took. */
void cohort_guard_leave(cohort_context_t *ctx);
/* For an object looked up (handle.h) before cohort_guard_enter took its context: @a live 0
 * means another thread freed it in between; the context is then given back, logged naming
 * @a what and @a handle. @return @a live. */
int cohort_guard_still_live(cohort_context_t *ctx, int live, const char *what, const void *handle);
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

/* With @a comm's context held: record this thread as inside a call on @a comm. Another thread
 * inside already: INVALID_ARG, logged naming @a fn, and with @a call (a call its members make
 * too) the group is revoked with COHORT_ERR_MISMATCH and its members told. */
cohort_status_t cohort_guard_take_comm(cohort_comm_t *comm, int call, const char *fn);
/* Give back what cohort_guard_take_comm took. */
void cohort_guard_drop_comm(cohort_comm_t *comm);
/* 1 while a thread other than this one is inside a call on @a comm. With the context held. */
int cohort_guard_comm_busy(const cohort_comm_t *comm);

/* Between two progress passes of a wait, with the context held: when another thread asks for
 * it, let it go and take it again after that thread (its call comes in, or progresses). */
void cohort_guard_pass(cohort_context_t *ctx);
/* Around a wait's sleep: let the context go (@return what cohort_guard_resume needs; 0: it was
 * kept, inside a progress pass or with nobody else about) and take it back. */
int cohort_guard_suspend(cohort_context_t *ctx);
void cohort_guard_resume(cohort_context_t *ctx, int depth);

#endif
