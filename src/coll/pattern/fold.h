/*
 * The fold of recursive doubling and halving (allreduce recursive_doubling and rabenseifner,
 * reduce_scatter recursive_halving): on any group size, the largest power of two p <= n ranks
 * run log2(p) rounds; the first 2(n - p) ranks pair up first.
 */
#ifndef COHORT_COLL_PATTERN_FOLD_H
#define COHORT_COLL_PATTERN_FOLD_H

#include "coll/coll.h"

/* Recursive doubling and halving on any group size: the largest power of two p <= n ranks form
 * the core; each of the first 2r (r = n - p) ranks pairs with its neighbour, the even one
 * folding its data into the odd one, which takes core rank me / 2 (the even one gets -1). The
 * rest take core rank me - r. nrounds = log2(p). */
static inline void cohort_coll_fold(int n, int me, int *p, int *nrounds, int *r, int *newrank)
{
    for (*p = 1, *nrounds = 0; *p * 2 <= n; *p *= 2) {
        (*nrounds)++;
    }
    *r = n - *p;
    *newrank = me < 2 * *r ? (me % 2 ? me / 2 : -1) : me - *r;
}

/* Group rank of core rank @a nr, after cohort_coll_fold: the folded pairs' odd ranks first. */
static inline int cohort_coll_fold_rank(int r, int nr)
{
    return nr < r ? 2 * nr + 1 : nr + r;
}

/* Everyone a fold-then-rounds algorithm sends to: its fold partner, or its partners in the
 * rounds and (for the odd rank of a pair) the even one it hands the result back to. */
static inline int cohort_coll_fold_peers(const cohort_coll_args_t *a, int n, int me, int *out,
                                         int max)
{
    int p, nrounds, r, nr, k = 0;

    if (a->count == 0 || n < 2) {
        return 0;
    }
    cohort_coll_fold(n, me, &p, &nrounds, &r, &nr);
    if (nr < 0) {
        out[k++] = me + 1;
        return k;
    }
    for (int mask = 1; mask < p && k < max; mask *= 2) {
        out[k++] = cohort_coll_fold_rank(r, nr ^ mask);
    }
    if (me < 2 * r && k < max) {
        out[k++] = me - 1;
    }
    return k;
}

#endif
