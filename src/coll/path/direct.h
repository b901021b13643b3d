/*
 * The direct family: same-node collectives by single copy (path/direct.c runs them all). Each
 * collective's row is a file in that collective's folder (allreduce/direct.c, ...) that
 * fills in COHORT_DIRECT_ROW; what they share is here and in direct.c, once.
 */
#ifndef COHORT_COLL_PATH_DIRECT_H
#define COHORT_COLL_PATH_DIRECT_H

#include "coll/coll.h"

/* What a direct row does that the others do not: its file (<collective>/direct.c) fills one
 * in. The family exchanges the descriptors, checks them, runs the rounds and signals; the row
 * says what this member exposes and what it reads and writes. */
typedef struct {
    /* Optional, at start: where the input the others read is (*in; the call's input by
     * default), and any scratch the row needs (cohort_direct_coll_scratch,
     * cohort_direct_coll_combine_prepare), given back at cleanup. */
    cohort_status_t (*prepare)(cohort_request_t *req, const void **in);
    /* This member's reads of the others' buffers and writes into them, once every descriptor
     * is checked (cohort_direct_coll_pull, _push, _combine). */
    cohort_status_t (*copy)(cohort_request_t *req);
    /* Optional: once every member signalled that the call went well. */
    void (*finish)(cohort_request_t *req);
} cohort_direct_row_t;

/* Read @a len bytes at byte @a off of member @a k's input (@a out: its output) into @a dst. */
cohort_status_t cohort_direct_coll_pull(cohort_request_t *req, int k, int out, void *dst,
                                        size_t off, size_t len);
/* Write @a len bytes of @a src at byte @a off of member @a k's output (through the segment's
 * words, which fence the write against the member leaving). */
cohort_status_t cohort_direct_coll_push(cohort_request_t *req, int k, const void *src, size_t off,
                                        size_t len);
/* dst = the members' @a count elements at byte @a off of their inputs, combined (this member's
 * first, then in ring order from it), a chunk at a time; with @a push each finished chunk is
 * written at the same offset of every other member's output. Needs the scratch of
 * cohort_direct_coll_combine_prepare (a row's prepare). */
cohort_status_t cohort_direct_coll_combine(cohort_request_t *req, char *dst, size_t off,
                                           size_t count, int push);
cohort_status_t cohort_direct_coll_combine_prepare(cohort_request_t *req, const void **in);
/* @a bytes of scratch for the row, held until cleanup; NULL when there is no memory. */
void *cohort_direct_coll_scratch(cohort_request_t *req, size_t bytes);

size_t cohort_direct_coll_state_size(const cohort_coll_args_t *args, int n);
/* Fewer than 2 members or nothing to move: the other rules choose. */
int cohort_direct_coll_decline(const cohort_coll_algo_t *algo, const cohort_coll_args_t *args,
                               int gsize);
/* The same, and more members than the segment holds: the rows that write into the others'
 * buffers need the segment, whose words fence a write against its target leaving. */
int cohort_direct_coll_decline_writer(const cohort_coll_algo_t *algo,
                                      const cohort_coll_args_t *args, int gsize);
cohort_status_t cohort_direct_coll_start(cohort_request_t *req);
cohort_status_t cohort_direct_coll_progress(cohort_request_t *req);
void cohort_direct_coll_cleanup(cohort_request_t *req);
int cohort_direct_coll_peers(const cohort_coll_args_t *args, int n, int me, int *out, int max);
size_t cohort_direct_coll_describe(const cohort_request_t *req, char *buf, size_t len, size_t used);
void cohort_direct_coll_abandon(cohort_request_t *req, cohort_status_t status);

/* A direct row: its id, collective, cohort_direct_row_t, what it does (after "same node: "),
 * its decline and the COHORT_NODE_* bits it needs; then its knobs, if any
 * (COHORT_DIRECT_CHUNK_KNOB). */
#define COHORT_DIRECT_ROW(id_, coll_, row_, what_, decline_, node_, knobs_...)                     \
    {                                                                                              \
        .name = "direct", .description = "same node: " what_ " by single copy", .coll = coll_,     \
        .id = id_, .state_size = cohort_direct_coll_state_size, .start = cohort_direct_coll_start, \
        .progress = cohort_direct_coll_progress, .cleanup = cohort_direct_coll_cleanup,            \
        .peers = cohort_direct_coll_peers, .decline = decline_, .node = node_,                     \
        .describe = cohort_direct_coll_describe, .abandon = cohort_direct_coll_abandon,            \
        .ident = 1, .segment = 1, .family = row_, knobs_                                           \
    }

/* The rows that write into the others' buffers run only on the group's segment. */
#define COHORT_DIRECT_WRITES (COHORT_NODE_DIRECT | COHORT_NODE_SHM)

/* Knob 0 of the rows that combine or write in chunks (COHORT_DIRECT_CHUNK in direct.c). */
#define COHORT_DIRECT_CHUNK 0
#define COHORT_DIRECT_CHUNK_KNOB(env_)                                                             \
    .nknobs = 1, .knobs = {                                                                        \
                     {"chunk", env_, 256 * 1024, 4096, 64u << 20, 1,                               \
                      "bytes read, combined or written at a time (cache-sized)"},                  \
    }

#endif
