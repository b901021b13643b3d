/*
 * A process's shared arena: one memory file (memfd) per context, made at init and named in the
 * rank's card by its descriptor number and a random token, which a process on the same node
 * maps once (pidfd_getfd) and then finds blocks in by a 64-bit id, with no file name and no
 * system call per block. A block is a group's shared segment (coll/shm_seg.c): the owner takes
 * one, writes it, publishes it under the group's id; the others look the id up in the arena's
 * directory. Nothing is ever named in /dev/shm, so nothing is left there when a process dies:
 * the memory goes with the last process that maps it.
 *
 * A block has two parts: its head (what every call touches: a group's header and slots, a few
 * hundred bytes to a few KiB), packed with the other blocks' heads on shared pages, and its
 * body (large buffers, whole pages, touched only by the calls that need them). A process that
 * maps the arena then maps the heads of many of its groups in one page fault, and the owner
 * puts a page in memory for several groups instead of one or more for each.
 *
 * Memory here touches no other room: errors come back as a status and a reason in words, which
 * the caller logs.
 */
#ifndef COHORT_MEM_ARENA_H
#define COHORT_MEM_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include "cohort.h"

/* What a card says of its process's arena: its descriptor there (-1: none) and its token. */
typedef struct {
    int32_t fd;
    uint32_t reserved;
    uint64_t token;
} cohort_arena_ref_t;

typedef struct cohort_arena cohort_arena_t;
typedef struct cohort_arena_view cohort_arena_view_t;

/* This process's arena, and its @a ref for the card. Where other processes could not take the
 * descriptor (no pidfd_getfd, kernel.yama.ptrace_scope above 0) or it cannot be made, *a is
 * NULL, ref->fd is -1 and @a why says why: not an error, groups then name their segments. */
void cohort_arena_open(cohort_arena_t **a, cohort_arena_ref_t *ref, char *why, size_t whylen);
void cohort_arena_close(cohort_arena_t *a);

/* A block: its head of at least @a head_bytes (returned; 64-byte aligned) and its body of at
 * least @a body_bytes (*body, page aligned; NULL for none), not findable until published.
 * *fresh: never used before (all zero). A retired block is reused only once @a reusable says
 * nobody reads it any more (it is given the head). NULL when the arena is full. */
void *cohort_arena_take(cohort_arena_t *a, size_t head_bytes, size_t body_bytes,
                        int (*reusable)(const void *head), int *fresh, void **body);
/* The pages under @a bytes at @a p in memory now, in one system call (best effort). */
void cohort_arena_populate(void *p, size_t bytes);
/* Findable under @a id (never 0) by the other processes, from now on. */
void cohort_arena_publish(cohort_arena_t *a, void *head, uint64_t id);
/* Not findable any more; reused by a later take once its reusable() says so. */
void cohort_arena_retire(cohort_arena_t *a, void *head);

/* Process @a pid's arena as its card names it, mapped here. COHORT_ERR_UNSUPPORTED (and
 * @a why) when it cannot be taken or is not what the card says (another process's, a file
 * that is no arena). */
cohort_status_t cohort_arena_view_open(int32_t pid, const cohort_arena_ref_t *ref,
                                       cohort_arena_view_t **v, char *why, size_t whylen);
/* The head of the block published under @a id, and its size, with its body and the body's
 * size; NULL while there is none. Both lie inside the mapping (checked). */
void *cohort_arena_view_find(const cohort_arena_view_t *v, uint64_t id, size_t *head_bytes,
                             void **body, size_t *body_bytes);
void cohort_arena_view_close(cohort_arena_view_t *v);

#endif
