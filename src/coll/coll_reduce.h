/*
 * Small helpers shared by the reduction algorithms (allreduce_*, reduce_*, reduce_scatter_*):
 * how a vector is cut into blocks, where a rank's input lives, and the bookkeeping of transfer
 * slots that are reused while a pipeline runs.
 */
#ifndef COHORT_COLL_REDUCE_H
#define COHORT_COLL_REDUCE_H

#include <string.h>
#include "coll/coll.h"
#include "coll/pattern/fold.h"
#include "reduce/reduce.h"

/* Block i of @a count elements cut into @a nblocks near-equal blocks: the first count % nblocks
 * blocks hold one element more. Every member computes the same cut. */
static inline size_t cohort_coll_block_len(size_t count, int nblocks, int i)
{
    return count / (size_t)nblocks + ((size_t)i < count % (size_t)nblocks);
}

static inline size_t cohort_coll_block_off(size_t count, int nblocks, int i)
{
    size_t rem = count % (size_t)nblocks;

    return (size_t)i * (count / (size_t)nblocks) + ((size_t)i < rem ? (size_t)i : rem);
}

/* @a base advanced by @a elems elements. */
static inline char *cohort_coll_at(const void *base, size_t elems, size_t esize)
{
    return (char *)base + elems * esize;
}

/* The caller's contribution: sbuf, or rbuf under COHORT_IN_PLACE. */
static inline const void *cohort_coll_input(const cohort_coll_args_t *a)
{
    return a->sbuf == COHORT_IN_PLACE ? a->rbuf : a->sbuf;
}

/* Segments of at most @a seg_bytes (whole elements, at least one) for @a len elements. */
static inline size_t cohort_coll_seg_elems(size_t seg_bytes, size_t esize)
{
    size_t n = seg_bytes / esize;

    return n > 0 ? n : 1;
}

static inline size_t cohort_coll_nsegs(size_t len, size_t seg_elems)
{
    return len == 0 ? 1 : (len + seg_elems - 1) / seg_elems;
}

/* Segment @a j of a @a len-element range: its first element and its length (0 past the end,
 * so that every member sends the same number of messages whatever its block's length). */
static inline size_t cohort_coll_seg_off(size_t len, size_t seg_elems, size_t j)
{
    size_t off = j * seg_elems;

    return off < len ? off : len;
}

static inline size_t cohort_coll_seg_len(size_t len, size_t seg_elems, size_t j)
{
    size_t off = cohort_coll_seg_off(len, seg_elems, j);

    return len - off < seg_elems ? len - off : seg_elems;
}

/* A transfer slot is free when it was never posted or has finished. */
static inline int cohort_coll_xfer_idle(const cohort_xfer_t *x)
{
    return x->req == NULL || x->done;
}

/* COHORT_INPROGRESS while any posted transfer of xs[0..n) is pending; else the first error of
 * a finished one, or OK. Slots never posted count as finished. */
static inline cohort_status_t cohort_coll_xfers_wait(const cohort_xfer_t *xs, int n)
{
    for (int i = 0; i < n; i++) {
        if (!cohort_coll_xfer_idle(&xs[i])) {
            return COHORT_INPROGRESS;
        }
    }
    for (int i = 0; i < n; i++) {
        if (xs[i].req != NULL && xs[i].status != COHORT_OK) {
            return xs[i].status;
        }
    }
    return COHORT_OK;
}

/* The first error among finished transfers, so a pipeline stops at once; else OK. */
static inline cohort_status_t cohort_coll_xfers_error(const cohort_xfer_t *xs, int n)
{
    for (int i = 0; i < n; i++) {
        if (xs[i].req != NULL && xs[i].done && xs[i].status != COHORT_OK) {
            return xs[i].status;
        }
    }
    return COHORT_OK;
}

/* A group of one, or count 0 anywhere: the result is the input (copied when apart). */
static inline void cohort_coll_copy_input(cohort_request_t *req, const cohort_coll_args_t *a,
                                          size_t count)
{
    if (a->sbuf != COHORT_IN_PLACE && count > 0 && a->sbuf != a->rbuf) {
        cohort_coll_mem_copy(req, a->rbuf, a->sbuf, count * a->esize);
    }
}

#endif
